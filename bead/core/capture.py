"""Capture: turns of a conversation into the raw log.

The text of a turn is rendered from its typed parts: the person's text,
tool results marked ``[tool_result]``, attachments as ``[image]`` or
``[document]``, the assistant's text and tool calls. Harness text is left
out; thinking never reaches the model's parts. A message becomes one raw turn
per run of parts with the same source, each marked with that ``source``
(typed, pasted, tool_output, tool_call, assistant), so whatever later cites a
turn (a dream proposal) knows who produced it. The raw log's append path
then runs the secret scan and takes its lock; the indexer indexes what it appended.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Callable, Iterable

from ..capture.secrets import (
    ERROR_WORDS,
    PRINTED,
    SECRET_NOUNS,
    keep_found,
    prints_secret,
    redact_printed,
    repeatable,
    shaped_as_no_word,
)
from ..conversation import Conversation, Identity, Message, Part, Source, Turn
from ..store.rawlog import Turn as RawTurn
from .memory import Memory


def part_text(p: Part) -> str:
    if p.kind == "tool_result":
        return f"[tool_result{' error' if p.error else ''}]\n{p.text}"
    if p.kind in ("image", "document"):
        return f"[{p.kind}]"
    if p.kind == "tool_use":
        return f"[tool_use {p.name}]" + tool_input_text(p.data)
    return p.text


def tool_input_text(data: object) -> str:
    """A tool call's input as a person would read it: one ``name: value`` line per field, strings as written.

    Not JSON: an escaped string (``\"`` for a quote, ``\n`` for a line
    break) hides a credential from the secret scan's patterns and a value
    from forget's matching. Nested values stay compact JSON. A command given
    as an argument vector (``["redis-cli", "-a", "..."]``) is written as a
    shell reads it, so the scan reads `redis-cli -a ...` as it does in a
    string; a value typed into a field a sibling field names as a secret (a
    browser tool's ``{"element": "Password textbox", "text": "..."}``, a
    settings API's ``{"key": "STRIPE_SECRET_KEY", "value": "..."}``) is
    redacted here, as no rule reads two fields apart.
    """
    data = _typed_secrets_masked(data)
    if isinstance(data, dict):
        if not data:
            return ""
        lines = [f"{k}: {_field_text(k, v)}" for k, v in data.items()]
        return "\n" + "\n".join(lines)
    if data is None:
        return ""
    return " " + (data if isinstance(data, str) else json.dumps(data, ensure_ascii=False))


def _field_text(name: object, value: object) -> str:
    if isinstance(value, str):
        return value
    if name in COMMAND_FIELDS and isinstance(value, list) and value and all(isinstance(x, str | int) for x in value):
        # Joined by blanks, as ``command_text`` reads it: a shell's quoting would split an argument holding a quote.
        return " ".join(str(x) for x in value)
    return json.dumps(value, ensure_ascii=False)


# A field that says what another field of the same object is (a form field's label, a variable's name), and the field
# that holds what is typed or set there; a label naming a secret (SECRET_WORDS, SECRET_PAIRS) makes that value one.
LABEL_FIELDS = frozenset(
    "element selector name key label field placeholder locator target id title parameter param setting variable var".split()
)
VALUE_FIELDS = ("text", "value", "keys", "input", "content", "data", "newvalue", "new_value", "val", "string")
# The words of a label that make the value set beside it a secret (its words read apart: `STRIPE_SECRET_KEY`,
# `Password textbox`, `apiKey`; not `max_tokens` or `tokenizer`): the secret scan's nouns that end a secret's name
# (bead.capture.secrets.SECRET_NOUNS), less those a label says of other things ("Primary key", "Pass rate", "Auth
# method"), and a one-time code's.
SECRET_WORDS = (SECRET_NOUNS - {"key", "pass", "auth"}) | {"otp"}
# Words that make a label a secret's setting, not the secret (`PASSWORD_MIN_LENGTH`, `TOKEN_EXPIRY_SECONDS`, a "Forgot
# password?" link).
NOT_THE_SECRET = frozenset(
    "length min max minimum maximum expiry expires expiration ttl timeout seconds policy reset forgot hint strength "
    "rotation count age size refresh link button".split()
)
SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"), ("one", "time")})
_HUMP = re.compile(r"([a-z0-9])([A-Z])")
_NOT_WORD = re.compile(r"[^a-z0-9]+")
TYPED_SECRET = "[REDACTED:typed-secret]"
_MASK_DEPTH = 16  # of nested objects looked into (a tool's input nested deeper is rendered as it is)


def _names_a_secret(label: str) -> bool:
    """Whether a label (its first 200 characters) names a secret: one of SECRET_WORDS, or two words of SECRET_PAIRS in
    a row, its words read apart at signs and camel-case humps. Linear: two passes of one character class each."""
    words = _NOT_WORD.split(_HUMP.sub(r"\1 \2", label[:200]).lower())
    if any(w in NOT_THE_SECRET for w in words):
        return False
    return any(w in SECRET_WORDS for w in words) or any(pair in SECRET_PAIRS for pair in zip(words, words[1:], strict=False))


def typed_secrets(message: Message) -> list[str]:
    """The values a message's tool calls type or set beside a field named as a secret (``_typed_secrets_masked``):
    the model's answer that says one again ("I typed ... into the password field") is redacted there too."""
    out: list[str] = []
    for p in message.parts:
        if p.kind == "tool_use":
            _typed_secrets_masked(p.data, found=out)
    return out


def note_typed(messages: Iterable[Message], found: dict[str, str]) -> None:
    """The values the messages' tool calls typed into a field named as a secret (``typed_secrets``), noted in
    ``found`` (the conversation's found values: redacted wherever a later turn says them again)."""
    for m in messages:
        if m.role == "assistant":
            for value in typed_secrets(m):
                if repeatable(value, named=True):  # its field's label names it a secret
                    keep_found(found, value, "typed-secret")


def _typed_secrets_masked(data: object, depth: int = 0, found: list[str] | None = None) -> object:
    """``data`` with each value typed into a field named as a secret (``LABEL_FIELDS``, ``_names_a_secret``) replaced
    by TYPED_SECRET, in objects nested in lists and objects too; the same object where nothing is."""
    if depth > _MASK_DEPTH:
        return data
    if isinstance(data, list):
        items = [_typed_secrets_masked(x, depth + 1, found) for x in data]
        return items if any(a is not b for a, b in zip(items, data, strict=True)) else data
    if not isinstance(data, dict):
        return data
    out = {k: _typed_secrets_masked(v, depth + 1, found) for k, v in data.items()}
    fields = {k.lower(): k for k in data if isinstance(k, str)}  # `Name` and `Value` (AWS's parameter store) too
    if any(_names_a_secret(data[k]) for f, k in fields.items() if f in LABEL_FIELDS and isinstance(data[k], str)):
        for f in VALUE_FIELDS:
            k = fields.get(f)
            value = out.get(k) if k is not None else None
            if k is not None and isinstance(value, str) and value:
                if found is not None:
                    found.append(value)
                out[k] = TYPED_SECRET
    return out if any(out[k] is not data[k] for k in data) else data


def _runs(message: Message) -> list[tuple[Source, bool, str]]:
    """(source, near a paste, text) for each run of the message's parts with the same source and the same
    ``Part.near_paste``; harness text left out."""
    out: list[tuple[Source, bool, list[str]]] = []
    for p in message.parts:
        if p.source is Source.HARNESS:
            continue
        text = part_text(p)
        if not text:
            continue
        near = p.near_paste and p.source is Source.TYPED
        if out and out[-1][0] is p.source and out[-1][1] == near:
            out[-1][2].append(text)
        else:
            out.append((p.source, near, [text]))
    return [(source, near, "\n\n".join(texts)) for source, near, texts in out]


def runs(message: Message) -> list[tuple[Source, str]]:
    """(source, text) for each run of the message's parts with the same source; harness text left out (typed words a
    paste may reach into are a run of their own: ``message_turns``)."""
    return [(source, text) for source, _, text in _runs(message)]


def turn_text(message: Message) -> str:
    """The whole message as one text (every source), as a reader sees it."""
    return "\n\n".join(text for _, text in runs(message))


def message_turns(message: Message, ident: Identity, flags: dict[str, object] | None = None) -> list[Turn]:
    """One turn per run (``_runs``). Typed words a paste may reach into (``Part.near_paste``: between two pastes in
    one block, or a quote's lazy continuation) keep their source and say ``near_paste``: they may be someone else's
    words, so they back no dream proposal (bead.dream.decide), as a "remember" there waits for review."""
    return [
        Turn(
            message.role,
            text,
            {
                "message": message.index,
                "source": source.value,
                **({"near_paste": True} if near else {}),
                **_project(ident),
                **(flags or {}),
            },
        )
        for source, near, text in _runs(message)
    ]


def request_turns(
    conv: Conversation, ident: Identity, start: int, prints_before: bool = False, known: list[str] | None = None
) -> list[Turn]:
    """The turns of messages ``start``.. that have text (harness system messages are context, not turns); a tool's
    output that is a printed secret redacted (``_printed_redacted``), and the value it held wherever the request says
    it again (``without_values``: the assistant's "it is set to ...", a later call's argument). ``prints_before``: the
    answer this request continues (a Responses ``previous_response_id``, which the request does not repeat) called a
    command that prints a secret, so the tool results that open the request are its output. ``known``: the values
    earlier requests of the conversation found printed (a later answer says one again: "Again: ..."), redacted too;
    this request's are added to it (``remember_values``)."""
    out = []
    window, found = _redacted_window(conv, start, prints_before)
    for i, m in window:
        if i >= start:
            out += message_turns(m, ident)
    # The turns as they will be written (a tool call's input rendered from its data too)
    return without_values(out, remember_values(known, found))


def printed_values(conv: Conversation, prints_before: bool = False, known: list[str] | None = None) -> list[str]:
    """The values the printed secrets among the request's newest messages held (since its last assistant message),
    and ``known`` (the conversation's, ``request_turns``): what the answer to the request may say again
    (``without_values``)."""
    return remember_values(known, _redacted_window(conv, len(conv.messages), prints_before)[1])


def remember_values(known: list[str] | None, found: list[str]) -> list[str]:
    """``found`` added to ``known`` (in place; the newest KNOWN_MAX kept), and the values to look for: both, longest
    first (one that holds another goes whole)."""
    if known is None:
        return found
    for v in found:
        if v in known:
            known.remove(v)
        known.append(v)
    del known[:-KNOWN_MAX]
    return sorted(known, key=len, reverse=True)


def without_values(turns: list[Turn], values: list[str]) -> list[Turn]:
    """``turns`` with each of ``values`` (a printed secret's, ``printed_values``) redacted wherever it stands."""
    if not values:
        return turns
    return [dataclasses.replace(t, text=_without(t.text, values)) for t in turns]


KNOWN_MIN = 6  # a printed value this long or longer is redacted wherever the request says it again
KNOWN_MAX = 64  # values looked for, at most


def _redacted_window(conv: Conversation, start: int, prints_before: bool) -> tuple[list[tuple[int, Message]], list[str]]:
    """The user and assistant messages from the last assistant message before ``start`` on, each with the printed
    secrets redacted, and the values those held. Both readings start over at an assistant message, so a request pays
    for the messages it captures, not for the conversation's whole history. (Where ``start`` is an assistant message,
    an answer the proxy could not read, the window opens at the one before it: the prints it may repeat.)"""
    since = min(start, len(conv.messages)) - 1
    while since > 0 and conv.messages[since].role != "assistant":
        since -= 1
    since = max(since, 0)
    window = conv.messages[since:]
    printed = {since + i: quiet for i, quiet in _printed_secrets(window, prints_before).items()}
    bash_mode = {since + i for i in _bash_mode_prints(window)}
    found: list[str] = []
    out = []
    for i in range(since, len(conv.messages)):
        m = conv.messages[i]
        if m.role not in ("user", "assistant"):
            continue
        if i in printed:
            m = _printed_redacted(m, printed[i], found)
        if i in bash_mode:
            m = _bash_stdout_redacted(m, found)
        if m.role == "user" and i > 0 and conv.messages[i - 1].role == "assistant" and asks_for_secret(conv.messages[i - 1]):
            m = _answer_redacted(m, found)
        out.append((i, m))
    return out, found


# The assistant asked for a secret by name at the end of its answer ("What's the sudo password?", "Which PIN?",
# "Paste the API token:"): the person's reply of one word is its value, which no rule finds by a name or a shape (an
# outside attack: `Summer2024!x` and `804613` were kept in the raw log, the index and the trace). Bounded: linear.
_NOUN = (
    r"(?:password|passphrase|passcode|passwd|pin|otp|token|secret|api[ -]?key|access key|private key"
    r"|(?:2fa|mfa|totp|sms|verification|one[ -]time|auth(?:entication)?|security|recovery|backup) code)s?"
)
# A question for the value itself (a review: "Which token type do you want?", "What's the name of the PIN field?"
# and "How should the token be stored?" ask for no secret): a verb that asks for it and the secret's name, a word or
# two between ("What's the sudo password?", "Enter your PIN:", "Paste the deploy token:"), or "Which PIN?" alone;
# the question's mark or colon right after the name, a short remark after it ("(I'll use it once.)").
_ASKS_SECRET = re.compile(
    r"(?i)(?:\b(?:what(?:'s|\u2019s|[ \t]+is|[ \t]+are)|enter|paste|type[ \t]+in|send|give[ \t]+me|provide|share|tell[ \t]+me)"
    r"[ \t]+(?:(?:the|your|a|an|my|its)[ \t]+)?(?:[\w\-]{1,20}[ \t]+){0,2}"
    + _NOUN
    + r"|\bwhich[ \t]+"
    + _NOUN
    + r")[ \t]*(?:for[ \t]+[\w.\-@]{1,40}[ \t]*)?[?:][ \t\"'`)*_]*(?:\([^)\n]{0,60}\)[ \t.]*)?$"
)
ASKED_TAIL = 300  # of the answer's text, the end read for the question
ANSWERED = "answered-secret"  # the rule id such a reply is redacted as
_ONE_WORD = re.compile(r"\S{4,256}")
# Replies of one word that are no secret ("no", "skip"): kept.
_NOT_A_SECRET = frozenset("yes no ok okay sure cancel skip later none nope nah stop wait why what done thanks n/a".split())


def asks_for_secret(m: Message) -> bool:
    """Whether an assistant message ends by asking for a secret by name (``_ASKS_SECRET``)."""
    text = "\n".join(p.text for p in m.parts if p.source is Source.ASSISTANT and p.text).rstrip()
    return bool(text) and _ASKS_SECRET.search(text[-ASKED_TAIL:]) is not None


def _answer_word(p: Part) -> str:
    """The person's typed text ``p`` when it is one word that may be a secret's value, else ""."""
    word = p.text.strip() if p.source is Source.TYPED and p.kind == "text" and p.text else ""
    return word if word and _ONE_WORD.fullmatch(word) and word.lower().rstrip(".!") not in _NOT_A_SECRET else ""


def _answer_words(m: Message) -> list[str]:
    return [w for p in m.parts if (w := _answer_word(p))]


def _answer_redacted(m: Message, found: list[str] | None) -> Message:
    """Message ``m`` with each of the person's typed texts that is one word (a reply to a question for a secret)
    redacted; one shaped as no word of any language (letters and digits, a sign among them) is noted in ``found`` to
    be redacted wherever the conversation says it again (a plain word, `bearer`, is not looked for: a review)."""
    parts = []
    for p in m.parts:
        if word := _answer_word(p):
            if _looked_for_again(word):
                _keep(found, [word])
            p = dataclasses.replace(p, text=p.text.replace(word, f"[REDACTED:{ANSWERED}]"))
        parts.append(p)
    return dataclasses.replace(m, parts=tuple(parts))


def _looked_for_again(word: str) -> bool:
    """Whether a reply's value is looked for again: shaped as no word of any language, or six digits or more."""
    return _spreadable(word) and (shaped_as_no_word(word) or word.isdigit())


def _without(text: str, values: list[str]) -> str:
    for v in values:
        if v in text:
            text = text.replace(v, f"[REDACTED:{PRINTED}]")
    return text


def _keep(found: list[str] | None, words: list[str]) -> None:
    """Note in ``found`` the printed values long enough to look for again, longest first (one that holds another
    goes whole), at most KNOWN_MAX."""
    if found is None:
        return
    for w in words:
        if _spreadable(w) and w not in found and len(found) < KNOWN_MAX:
            found.append(w)
    found.sort(key=len, reverse=True)


KNOWN_VALUE_CHARS = 256  # a longer output (a file's whole text) is redacted where it was printed, not looked for again


def _spreadable(value: str) -> bool:
    """Whether a printed value is looked for in the rest of the conversation: of KNOWN_MIN to KNOWN_VALUE_CHARS
    characters, and no word a printing command prints where there is no value or a word everyone's code says
    (NO_VALUE: `undefined`, `string`, `production`), which looked for again would take the person's own words
    (`Cannot read properties of undefined`). Among other printed words only a value no word is shaped as is noted at
    all (bead.capture.secrets: `NotFound` in an error is not)."""
    return KNOWN_MIN <= len(value) <= KNOWN_VALUE_CHARS and value.lower() not in NO_VALUE


# What a printing command prints where there is no value (an unset variable in JavaScript, Python, Ruby, a shell), or
# an environment's name: redacted where it was printed, never looked for in the rest of the conversation, where the
# word is everyone's (`undefined` in a stack trace).
NO_VALUE = (
    frozenset(
        """undefined (null) (none) <none> (empty) <empty> unset missing default changeme placeholder
    production development staging testing localhost string number boolean object function symbol bigint
    enabled disabled configured success succeeded""".split()
    )
    | ERROR_WORDS
)


# The fields of a tool call's input that hold a command to run: Claude Code's Bash `command`, Codex's `shell`
# `command` (a list) and `exec_command` `cmd`, a local shell call's `action`, a script tool's `script` or `code`. Other
# fields (a Grep pattern, a file's content, a sub-agent's prompt) may mention such a command without running it.
COMMAND_FIELDS = frozenset({"command", "cmd", "script", "code", "args", "argv", "action", "chars"})
COMMAND_CHARS = 64 * 1024  # of one call's command, what is looked at


def command_text(data: object, depth: int = 0) -> str:
    """The commands a tool call's input runs, as a shell reads them: a string as written, a list of strings (an
    argument vector) joined by spaces, a nested input (a local shell call's ``action``) looked into; at most
    COMMAND_CHARS characters."""
    if isinstance(data, str):
        return data[:COMMAND_CHARS]
    if isinstance(data, list):
        return " ".join(x for x in data[:1000] if isinstance(x, str))[:COMMAND_CHARS]
    if isinstance(data, dict) and depth < 3:
        return "\n".join(command_text(v, depth + 1) for k, v in list(data.items())[:100] if k in COMMAND_FIELDS)[:COMMAND_CHARS]
    return ""


def calls_print_secret(m: Message) -> bool:
    """Whether an assistant message calls a command that prints a secret on its own (``prints_secret``); a call
    whose input is a string (a freeform tool, arguments that are no JSON) is read as its command."""
    return any(p.kind == "tool_use" and prints_secret(command_text(p.data)) for p in m.parts)


def _printed_secrets(messages: tuple[Message, ...], prints_before: bool = False) -> dict[int, frozenset[str]]:
    """The positions of the user messages whose tool results are the output of a call that prints a secret on its
    own (``prints_secret``: `printenv DB_PASSWORD`, `gh auth token`): such an output is the bare value, which no rule
    finds by a name or a shape. The calls are those of the assistant's message before; messages of tool results alone
    in a row (OpenAI's `tool` messages) look back to the same one. One pass, each call read once.

    Each position maps to the ids of that message's calls that print nothing: a result paired with one of them by
    its id is its own call's output, not a secret's (``_printed_redacted``)."""
    out: dict[int, frozenset[str]] = {}
    prints = prints_before  # whether the last assistant message, with only tool results since, has such a call
    quiet: frozenset[str] = frozenset()  # of its calls, the ids of those that print none
    for i, m in enumerate(messages):
        if m.role == "assistant":
            calls = [(p.call, prints_secret(command_text(p.data))) for p in m.parts if p.kind == "tool_use"]
            prints = any(printing for _, printing in calls)
            # An id that two calls share is no proof of which one a result is: its results are read as a print's.
            count = collections.Counter(c for c, _ in calls)
            quiet = frozenset(c for c, printing in calls if c and not printing and count[c] == 1)
            continue
        if m.role == "user" and prints and any(p.kind == "tool_result" for p in m.parts):
            out[i] = quiet
        if not (m.role == "user" and m.parts and all(p.kind == "tool_result" for p in m.parts)):
            prints, quiet = False, frozenset()
    return out


def prints_at_end(messages: tuple[Message, ...], prints_before: bool = False) -> bool:
    """Whether tool results that come after ``messages`` (in a later batch of an imported file) are the output of a
    call that prints a secret: the last assistant message calls one, with only tool results since (``prints_before``
    where ``messages`` hold tool results alone). Walks back from the end only."""
    for m in reversed(messages):
        if m.role == "assistant":
            return calls_print_secret(m)
        if not (m.role == "user" and m.parts and all(p.kind == "tool_result" for p in m.parts)):
            return False
    return prints_before


def _printed_redacted(m: Message, quiet: frozenset[str] = frozenset(), found: list[str] | None = None) -> Message:
    """Message ``m`` with its tool results redacted word by word (bead.capture.secrets.redact_printed), but for a
    result paired by its id with a call in ``quiet`` (one that prints no secret): a result with no id, or with an id
    no call of the answer before has (a chain's, whose answer the request does not repeat), is read so (the safe
    side)."""
    parts = []
    for p in m.parts:
        if p.kind == "tool_result" and not (p.call and p.call in quiet):
            words: list[str] = []
            p = dataclasses.replace(p, text=redact_printed(p.text, words)[0])
            _keep(found, words)
        parts.append(p)
    return dataclasses.replace(m, parts=tuple(parts))


# Claude Code's bash mode: the person runs `! printenv DB_PASSWORD`, and the harness sends the command and its output
# as the person's message (or two): `<bash-input>...</bash-input>`, then `<bash-stdout>...</bash-stdout>`.
BASH_INPUT, BASH_INPUT_END = "<bash-input>", "</bash-input>"
BASH_STDOUT, BASH_STDOUT_END = "<bash-stdout>", "</bash-stdout>"


def _bash_mode_prints(messages: tuple[Message, ...]) -> set[int]:
    """The positions of the user messages holding the output of a bash-mode command that prints a secret
    (``prints_secret``): the message of the command and the user messages right after it, up to the assistant's."""
    out: set[int] = set()
    prints = False
    for i, m in enumerate(messages):
        if m.role != "user":
            prints = False
            continue
        commands = [
            p.text[at + len(BASH_INPUT) : end if (end := p.text.find(BASH_INPUT_END, at)) != -1 else at + COMMAND_CHARS]
            for p in m.parts
            if (at := p.text.find(BASH_INPUT)) != -1
        ]
        if commands:  # the message's own commands decide for it: any one that prints a secret (the safe side)
            prints = any(prints_secret(c) for c in commands)
        if prints:
            out.add(i)
    return out


def _bash_stdout_text(text: str, found: list[str] | None = None) -> str:
    """``text`` with what each ``<bash-stdout>`` element holds redacted word by word (redact_printed); the tags and
    the rest as they were. One walk with ``str.find``: linear."""
    pieces: list[str] = []
    pos = 0
    while (at := text.find(BASH_STDOUT, pos)) != -1:
        inner = at + len(BASH_STDOUT)
        end = text.find(BASH_STDOUT_END, inner)
        end = len(text) if end == -1 else end
        words: list[str] = []
        pieces += [text[pos:inner], redact_printed(text[inner:end], words)[0]]
        _keep(found, words)
        pos = end
    return "".join(pieces) + text[pos:] if pieces else text


def _bash_stdout_redacted(m: Message, found: list[str] | None = None) -> Message:
    """Message ``m`` with its ``<bash-stdout>`` elements redacted (``_bash_stdout_text``)."""
    return dataclasses.replace(m, parts=tuple(dataclasses.replace(p, text=_bash_stdout_text(p.text, found)) for p in m.parts))


def printed_redactor(conv: Conversation) -> Callable[[str, str], str] | None:
    """For what quotes a request's text elsewhere (a trace's cues, by their source): a function that redacts a
    printed secret as capture does, or None where the request holds none. On the safe side, as a trace is for
    reading: every tool output where any tool result of the request is a printed secret's, or where the request
    continues an answer it does not repeat (a Responses chain); every `<bash-stdout>` where a bash-mode command
    prints one."""
    results = bool(_printed_secrets(conv.messages, conv.continues is not None))
    bash = bool(_bash_mode_prints(conv.messages))
    replies = [  # the person's replies of one word to a question for a secret (``_answer_redacted``)
        w
        for i, m in enumerate(conv.messages)
        if m.role == "user" and i > 0 and conv.messages[i - 1].role == "assistant" and asks_for_secret(conv.messages[i - 1])
        for w in _answer_words(m)
    ]
    answered = [w for w in replies if _looked_for_again(w)]  # those looked for wherever the conversation says them
    if not results and not bash and not replies:
        return None

    def redact(source: str, text: str) -> str:
        if bash and BASH_STDOUT in text:
            text = _bash_stdout_text(text)
        if results and source == "tool_output":
            text = redact_printed(text)[0]
        if text.strip() in replies:  # the reply itself, whatever its shape
            return text.replace(text.strip(), f"[REDACTED:{ANSWERED}]")
        return _without(text, answered) if answered else text

    return redact


def _project(ident: Identity) -> dict[str, str]:
    return {"project": ident.project} if ident.project else {}


def capture(
    mem: Memory, ident: Identity, turns: list[Turn], epoch: str | None = None, found: dict[str, str] | None = None
) -> list[RawTurn]:
    """Append ``turns`` to the conversation's raw log (secret scan, lock) at the memory's clock. The proxy only
    appends: the indexer, which watches the raw log, indexes them (and gives them their vectors), in its own
    process. ``epoch``: the raw log's forget epoch when the turns arrived; ``found``: the values the secret scan
    found in the conversation so far, redacted wherever these turns say them again, and added to (both
    RawLog.append_many)."""
    now = mem.clock()
    items = [(t.role, t.text, now, None, t.flags) for t in turns]
    return mem.raw.append_many(ident.session, items, epoch=epoch, known=found)


def assistant_turns(message: Message, ident: Identity, flags: dict[str, object]) -> list[Turn]:
    """The assistant's answer as turns (its text, its tool calls); none when it carried no text (only thinking)."""
    return message_turns(message, ident, flags)
