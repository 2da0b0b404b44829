""" "remember X": the person asks for a fact to be kept, in their own words.

Only the person's typed text counts: the phrase must open the typed text or
one of its sentences or clauses (after ``. ! ?``, a comma, a semicolon or a
dash, or at the start of a typed line), so
nothing in a code fence, a quote, an expanded paste, a pasted document,
command output, a tool result, the assistant's text, the system prompt or a
harness reminder can ask for it (the parser sets those apart:
``bead.wire.anthropic.parts_of``). A value the secret scan flags is not
stored. A value that reads like an instruction to an AI agent (the dream's
prefilter, ``bead.capture.instructions``) is not written but queued for review
(kind ``suspicious``): the person accepts it with ``bead queue accept ID``,
and the reply's cue block says so in one line. The key is proposed from the
value's first words: ``user/<words>`` when it speaks of the person, else the
project's.

``plan`` decides before forwarding (a regex on a short value; the queue
item's id is a hash), so the cue block can carry the line; ``remember``
writes after forwarding, with the rest of capture.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..capture.secrets import compile_linear, credential_rules, holds_whole, redact, redact_known
from ..capture.text import output_lines
from ..conversation import UNTYPED_REASONS, Identity, Message, Source
from ..display import CONTROL, visible
from ..errors import BeadError, InvalidArgument, KeySealed, RefusedWrite, VersionConflict
from ..recall.render import escape
from ..store.facts import Fact
from ..store.keys import MAX_SEGMENT_BYTES, PERSON_TRUSTS, TRUSTS, TYPES
from ..store.queue import item_id
from ..textform import fold, frame_form
from . import propose
from .memory import Memory
from .propose import SECRET, screen
from .viewer import LOCAL, Viewer

# "remember X" where a sentence starts: "remember that ...", "Then remember: ...".
# Every run is bounded, so the scan stays linear on hostile text.
# On RE2 (linear time): the lazy value followed by a run of blanks backtracked
# quadratically in Python's engine on a long run of spaces.
# At most eight filler words before "remember" (``_asked_for`` strips them one by one: a run of thousands was quadratic).
# A clause starts one too: after a comma, a semicolon, a colon or a dash ("one more thing: remember
# that ...", "fix the login; remember that ...", "btw remember that ..."): the person's own request was not read at
# all there. What follows a colon is still read as quoted text's, and waits for review (``_QUOTES_BEFORE``).
_REMEMBER = compile_linear(
    r"(?im)(?:^(?:[ \t]{0,8}[-*+][ \t]{1,4})?|[.!?,;:][ \t]{1,8}|[ \t][-\x{2013}\x{2014}][ \t]{1,4})"
    r"(?:(?:then|and|also|please|pls|btw|oh|ok|okay|so|thanks|thx)[, \t]{1,4}){0,8}remember"
    r"(?:[ \t]{1,4}that)?[ \t]{0,4}"
    r"[:,\-]?[ \t]{1,4}([^\n]{3,600}?)[ \t]*(?:[.!?](?:\s|$)|$)"
)
_KEY_SKIP = frozenset(
    """a an the is are was were be been am i i'm my me mine we our you your it its this that
these those to of in on at for with and or but so that project repo please always""".split()
)
_FIRST_PERSON = re.compile(r"(?i)\b(i|i'm|i've|my|me|mine)\b")
NOTICE_VALUE_CHARS = 160
# What a value written through a tool may not hold: a NUL, a terminal escape (ESC), other C0 controls but
# tab and line breaks, DEL. A person reads these files in an editor and a terminal.


@dataclass(frozen=True)
class Plan:
    """What "remember" will do with one value."""

    value: str
    key: str
    type: str
    action: str  # write | queue | refuse
    reason: str = ""  # why it is queued or refused
    item: str | None = None  # the review item's id, when queued


@dataclass(frozen=True)
class Remembered:
    id: str | None  # the fact written, or None
    refused: str | None = None  # why nothing was written
    queued: str | None = None  # the review item, when the value waits for the person


# A request is plainly the person's own when the text around it is theirs too: the message's block as sent (what
# was pasted into it included) is short, or all but the request is (the rest at most OWN_REST characters); and
# nothing before it frames what follows as someone else's text (a header line, "Contents of X:", "Bob wrote:", a
# line ending in ":" over a long block).
# Else it may be a pasted document's sentence that looks typed: it waits for review, and the cue block says so.
SHORT_MESSAGE = 300
OWN_REST = 150
# Of a remember's own length, what counts as the request when the rest of a long message is weighed: a pasted mail
# whose "remember" is most of it made the rest look short.
OWN_REQUEST = 300
REMEMBER_SCAN = 16 * 1024  # of a typed part, the characters a "remember" is looked for in
_FRAMING = compile_linear(
    r"(?im)^[ \t]{0,8}(?:from|subject|to|cc|date|quote)[ \t]{0,4}:|^[ \t]{0,8}contents?[ \t]of\b"
    r"|\bcontents?[ \t]of\b[^\n]{0,200}:"
    r"|\b(?:wrote|writes|said|says|posted|forwarded|excerpt|copied|pasted|transcript)\b[^\n]{0,80}:"
    # What someone answered, its colon ending its line ("Bob replied:", then their words); a tool's output the person
    # pasted under their own colon is theirs ("make test printed:", "got this:": reviews).
    # (its line's end: any blank, CR or invisible character after the colon, which a review found let it through)
    r"|\b(?:replied|answered|responded)\b[^\n]{0,80}:[^\n\w]{0,8}$"
)
_COLON_LINE = compile_linear(r"(?m):[ \t]{0,8}$")
# What introduces quoted text on a line: a colon with text after it ("it prints: npm ERR! 404 ..."; not a time's
# "10:30", a URL's "https://" nor an "ok:" right before the request), a verb that reports what someone wrote
# ("the README says ..."), or a tool's own mark of its output ("npm ERR!", "ERROR", "Traceback").
_QUOTES_BEFORE = compile_linear(
    r":[ \t]+\S|(?i:\b(?:says|said|prints|printed|wrote|writes|replied|answered)\b)"
    r"|\b(?:ERR!|ERROR\b|FATAL\b|WARN(?:ING)?\b|Traceback\b)"  # a tool's output, as it marks itself
)
FRAMED_BLOCK = 120  # characters after a line ending in ":" that make it a frame


@dataclass(frozen=True)
class Request:
    value: str
    plain: bool  # plainly the person's own request (see SHORT_MESSAGE, _FRAMING)
    why: str = ""  # why not, where it is not the usual (``QUOTED``)


QUOTED = "it follows quoted text on its line: after a colon, or what something says or printed"
AFTER_OUTPUT = "it follows a tool's output in the same message: a log's or a traceback's lines"


_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb"}


def _unquoted(message: Message, text: str) -> str:
    """A one-line message wrapped whole in one pair of quotes, without them (OpenCode's `opencode run` sends the
    person's words so); any other text, or a message of several parts (a quote after framing text stays a quote),
    as it is."""
    t = text.strip()
    if (
        len(message.parts) == 1
        and "\n" not in t
        and len(t) >= 2
        and _QUOTES.get(t[0]) == t[-1]
        and t[0] not in t[1:-1]
        and t[-1] not in t[1:-1]
    ):
        return t[1:-1]
    return text


_FILLER_AT_END = re.compile(r"(?i)(?:^|[^A-Za-z])(then|and|also|please|pls|btw|oh|ok|okay|so|thanks|thx)[, \t]*$")
_ASKS = re.compile(r"(?i)(?:when|what|how|where|why|which|who|whom|whose|if|whether|the one)\b")


def _asked_for(m: Any) -> bool:
    """Whether a match is a request. Where the sentence starts (its filler words aside: "Also, remember we use
    tabs"), as before, unless it asks ("thanks, remember when it broke?"). Where a clause starts (after a comma,
    a semicolon, a colon or a dash), only said as one ("..., remember that ..." or "...: remember: ...") and not as
    a question: "hmm, remember when it broke?" and "if it fails, remember to run make clean" are a recollection and
    a condition."""
    whole = m.group(0)
    k = whole.lower().find("remember")
    lead, rest = whole[:k].rstrip(" \t"), whole[k + len("remember") :].lstrip(" \t")
    while (f := _FILLER_AT_END.search(lead)) is not None:
        lead = lead[: f.start(1)].rstrip(" \t")
    question = whole.rstrip().endswith("?")
    if lead.endswith((",", ";", ":", "-", "\u2013", "\u2014")):
        return not question and (rest[:4].lower() == "that" or rest.startswith(":"))
    return not (question and _ASKS.match(rest))


def _views(text: str) -> tuple[str, ...]:
    """``text`` as it stands, and in its frame form (``frame_form``) where that differs."""
    form = frame_form(text)
    return (text,) if form == text else (text, form)


def request_list(message: Message) -> list[Request]:
    """The values "remember ..." asks for in the person's typed text of ``message``, and whether each is
    plainly the person's own request."""
    out = []
    # The text of the block's parts before this one (typed and pasted alike): a framing line stops counting nowhere
    # in its block ("Bob wrote:", a fence, then "Remember that ...": the request's own part began after the fence, and
    # was written as the person's word: an outside attack). The parts of one block share ``sent`` (0: a block alone).
    block_before, block = "", -1
    for part in message.parts:
        if part.kind != "text" or not part.sent or part.sent != block:
            block_before, block = "", part.sent if part.kind == "text" else -1
        earlier = block_before
        if part.kind == "text":
            block_before = (block_before + part.text + "\n")[-REMEMBER_SCAN:]  # a part ends its line
        if part.source is Source.TYPED and part.kind == "text":
            text = _unquoted(message, part.text)
            # The first and the last REMEMBER_SCAN characters: a scan of megabytes of clause starts held the request
            # past its deadline. A request in the last of a part that long waits for review (it is never plainly the
            # person's); one in between is not looked for.
            at, m = 0, next((x for x in _REMEMBER.finditer(text[:REMEMBER_SCAN]) if _asked_for(x)), None)
            if m is None and len(text) > REMEMBER_SCAN:
                at = len(text) - REMEMBER_SCAN
                m = next((x for x in _REMEMBER.finditer(text[at:]) if _asked_for(x)), None)
            if m:
                # The punctuation that opened the clause is the text before it too ("wiki: remember ..." is framed by
                # its colon; a remember right after a colon is read as what was quoted).
                lead = m.group(0)[: m.group(0).lower().find("remember")].rstrip(" \t")
                before = text[: at + m.start()] + lead
                # Measured on the block as the harness sent it: a pasted page closing its own code fence, or
                # wrapped in a reminder or bead's tags, leaves a short typed part but is still the block's.
                size = max(part.sent, len(text.strip()))
                rest = size - min(len(m.group(0).strip()), OWN_REQUEST)
                # Where the request may be plainly the person's (a short block; else it never is, whatever frames
                # it), every frame is looked for in the text as it stands and in its frame form (``frame_form``): one
                # look-alike letter, a zero-width space or a full-width colon ("Bob wrоte:", "Subject：") hid a frame,
                # and a pasted mail's "remember" was written as the person's word (an outside attack). Not over a
                # long block, which the person's yes was never going to be read from (a review: seconds on megabytes).
                may_be_plain = (size <= SHORT_MESSAGE or rest <= OWN_REST) and not part.near_paste and at == 0
                views = _views(before) if may_be_plain else (before,)
                # A line ending in ":" at least FRAMED_BLOCK characters before the request: the first such line ends
                # first, so one search tells (a list of every one held a match object per line: 100 MB per MB).
                long_colon = any((c := _COLON_LINE.search(v)) is not None and len(v) - c.end() >= FRAMED_BLOCK for v in views)
                # The block's earlier parts frame it through a frame's own words alone ("Bob wrote:", "Contents of
                # X:"), not a colon over a long paste nor output lines: a person's own "getting this:", a traceback and
                # their "remember" is theirs (a review).
                framed = (
                    any(_FRAMING.search(v) for v in views)
                    or (at == 0 and any(_FRAMING.search(v) for v in (_views(earlier) if may_be_plain else (earlier,))))
                    or long_colon
                )
                # A request after quoted text on its line is not plainly the person's, however short the message:
                # after a colon or a verb that quotes ("it prints: npm ERR! 404 ... Remember that the registry is
                # ...", "the README says setup is manual. Remember that ..."), the sentence may be the quote's own.
                quoted = any(_QUOTES_BEFORE.search(v[v.rfind("\n") + 1 :]) for v in views)
                quoted = quoted or frame_form(lead).endswith(":")
                after_output = not quoted and output_lines(before, folded=may_be_plain)
                plain = (size <= SHORT_MESSAGE or rest <= OWN_REST) and not framed and not quoted and not part.near_paste
                plain = plain and at == 0 and not after_output
                if (quoted and not framed and not part.near_paste) or (after_output and not framed):
                    out.append(Request(m.group(1).strip(), False, QUOTED if quoted else AFTER_OUTPUT))
                    continue
                out.append(Request(m.group(1).strip(), plain))
    return out


def requests(message: Message) -> list[str]:
    """The values "remember ..." asks for in the person's typed text of ``message``."""
    return [r.value for r in request_list(message)]


def propose_key(value: str, project: str | None) -> str:
    """A key for a remembered value: user/... for the person, else the project's."""
    skip = _KEY_SKIP | set(re.split(r"[-_.]", project or ""))
    # No word with a digit: a key is a folder name that sealing leaves in place, and a code in it would stay.
    words = [t for t in re.findall(r"[a-z0-9]+", value.lower()) if t not in skip and not any(c.isdigit() for c in t)]
    words = words[:4] or ["note"]
    slug = "-".join(re.sub(r"[^a-z0-9]", "", w) for w in words).strip("-")
    # A long word (a pasted hash, a path) must not make a key the store refuses.
    slug = slug[:MAX_SEGMENT_BYTES].strip("-") or "note"
    if _FIRST_PERSON.search(value) or not project:
        return f"user/{slug}"
    return f"project/{project}/{slug}"


def looks_secret(value: str) -> bool:
    """The secret scan's finding on the value or on its normal form (a key split by a zero-width space)."""
    return bool(credential_rules(value))


FORGOTTEN_REASON = "a value the person forgot is not queued"


def plan(message: Message, ident: Identity, untyped: str = "", forgotten: Callable[[str, str], bool] | None = None) -> list[Plan]:
    """What to do with each value the person asked to remember in ``message`` (no IO): the rule of
    ``bead.core.propose.screen``, and a request that is not plainly the person's own waits for review, as does
    every one where ``untyped`` says why the person's words cannot be told apart (Conversation.untyped).
    ``forgotten(value, key)``: whether a tombstone holds it; such a value, which would wait for review, is refused as the
    queue refuses it (bead.core.propose.queue), so that the notice says so rather than "queued"."""
    out = []
    for req in request_list(message):
        value = req.value
        key = propose_key(fold(value), ident.project)
        type_ = "user" if key.startswith("user/") else "project"
        found = screen(value)  # the key is made of the value's words: the value is what the person said
        waits = found is not None or bool(untyped) or not req.plain
        if found is not None and found.kind == SECRET:
            out.append(Plan(value, key, type_, "refuse", "a value that looks like a credential is not stored"))
        elif waits and forgotten is not None and forgotten(value, key):
            out.append(Plan(value, key, type_, "refuse", FORGOTTEN_REASON))
        elif found is not None:
            out.append(Plan(value, key, type_, "queue", f"remember: {found.reason}", item_id("suspicious", key, value)))
        elif untyped:
            out.append(Plan(value, key, type_, "queue", f"remember: {untyped}", item_id("suspicious", key, value)))
        elif not req.plain:
            why = req.why or "it sits inside a longer or framed text, which may be pasted"
            reason = f"remember: not plainly the person's own request ({why})"
            out.append(Plan(value, key, type_, "queue", reason, item_id("suspicious", key, value)))
        else:
            out.append(Plan(value, key, type_, "write"))
    return out


def needs_notice(plans: Iterable[Plan]) -> bool:
    """Whether any of ``plans`` gets a line of ``notice_lines``."""
    return any(p.action in ("queue", "refuse") for p in plans)


def _quoted(value: str) -> str:
    """A value as bead's note quotes it: its own quotes and backslashes escaped, so that it cannot close bead's quote and
    go on in bead's voice (`...| sh" and it was stored`: an outside attack)."""
    value = value.replace("\\", "\\\\").replace('"', '\\"')
    # Quotes of other kinds a model may read as closing bead's, and the backtick bead's own commands stand in, as
    # their escapes (a review).
    value = "".join(f"\\u{ord(c):04x}" if c in _QUOTE_LIKE else c for c in value)
    return visible(escape(value))


_QUOTE_LIKE = frozenset("`\u201c\u201d\u201e\u201f\u2033\u2036\uff02\u02ba\u02dd\u275d\u275e\u301d\u301e\u301f")


def _remembered(value: str, unread: bool) -> str:
    return '"remember" (its value not repeated here)' if unread else f'"remember {_quoted(value)}"'


def notice_lines(plans: Iterable[Plan], known: dict[str, str] | None = None, unread: bool = False) -> list[str]:
    """One cue-block line per value not written: what happened, and what the person can do.

    A value is shown as the secret scan leaves it, and without any of ``known`` (values the scan found elsewhere in
    the conversation, to their rules: a password pasted in a `.env` the "remember" says bare): the secret itself
    never reaches the model (or the cue block's bytes, which the conversation's state file keeps). ``unread``: part
    of the conversation was not read for ``known`` (too much to read before forwarding): no value is shown (masking
    the words that look like secrets let a short password the scan knows by its name through: a review)."""
    out = []
    for p in plans:
        if p.action not in ("queue", "refuse"):
            continue
        value = " ".join(redact_known(redact(p.value)[0], known or {}).split())
        cut = len(value) > NOTICE_VALUE_CHARS
        if cut:
            value = value[: NOTICE_VALUE_CHARS - 1] + "…"
        if p.action == "refuse" and p.reason == FORGOTTEN_REASON:
            out.append(
                f"- note from bead: a {_remembered(value, unread)} in the user's message was not queued for review, "
                "because the user had bead forget that value and these words may not be plainly their own; the user can "
                f"write it again themselves with `bead write KEY - --type {p.type}` (a key of their choosing, the value on "
                "stdin; one made of the value's words would say them again)"
            )
            continue
        if p.action == "refuse":
            out.append(
                f"- note from bead: a {_remembered(value, unread)} in the user's message was not stored, because it "
                f"holds a secret, which bead keeps only sealed; the user can seal it under a neutral key "
                f"with `bead write user/secret-1 - --type user --sensitivity secret` (the value on stdin)"
            )
            continue
        why = (
            "it holds invisible or reordering characters"
            if "invisible" in p.reason
            else f"it may not be the user's own words ({QUOTED})"
            if QUOTED in p.reason
            else f"it may not be the user's own words ({AFTER_OUTPUT})"
            if AFTER_OUTPUT in p.reason
            else "it may not be the user's own words (it sits inside a longer or framed text)"
            if "not plainly" in p.reason
            else f"it may not be the user's own words: {p.reason.removeprefix('remember: ')}"
            if p.reason.removeprefix("remember: ") in UNTYPED_REASONS
            else "it reads like an instruction to an AI agent"
        )
        # No item id and no accept command for the model to run: an agent's shell ran the command a pasted page's
        # "remember" had queued, and the value reached the pinned block as accepted (an outside attack).
        out.append(
            f"- note from bead: a {_remembered(value, unread)} in the user's message was queued for review, not "
            f"stored, because {why}; the user can keep it by reviewing it with `bead review` at their own terminal "
            "(an agent does not run it for them: accepting makes it their word)"
            + ("; it is longer than shown here, and the review shows all of it" if cut else "")
        )
    return out


def remember(
    mem: Memory,
    message: Message,
    ident: Identity,
    sources: Iterable[str] = (),
    plans: list[Plan] | None = None,
    untyped: str = "",
    secrets: Iterable[str] = (),
) -> list[Remembered]:
    """Write each value the person asked to remember as a ``user_stated`` fact, or queue it (see ``plan``).

    ``sources`` are the raw-log anchors of the message's typed turns; ``plans``, ``plan``'s answer when
    the caller has it already (the proxy decides before forwarding, to say so in the cue block). ``secrets``: values
    the conversation's secret scan found or a command printed ("remember that staging logs in with ..." after a
    `.env` named it): a value or key holding one is refused as a credential is.
    """
    out = []
    sources = list(sources)
    secrets = [v for v in secrets if v]
    for p in plans if plans is not None else plan(message, ident, untyped):
        if p.action != "refuse" and any(holds_whole(p.value, v) or holds_whole(p.key, v) for v in secrets):
            p = dataclasses.replace(p, action="refuse", reason="a value that looks like a credential is not stored")
        if p.action == "refuse":
            out.append(Remembered(None, p.reason))
        elif p.action == "queue":
            try:
                queued = propose.queue(mem, "suspicious", p.key, p.type, p.value, p.reason, sources, source="typed")
            except RefusedWrite as exc:
                out.append(Remembered(None, exc.message))  # a forgotten value, a credential: said, not queued
                continue
            out.append(Remembered(None, queued=queued.item.id if queued.item else None))
        else:
            res = mem.write(p.key, p.value, p.type, trust="user_stated", sources=sources)
            out.append(Remembered(res.fact.id))
    return out


# ----- remember as a tool: an agent (or a curator) names the fact -------------------------------


@dataclass(frozen=True)
class Saved:
    """What ``remember_fact`` did: wrote a version, found the value already current, or queued it for review."""

    status: str  # written | unchanged | queued
    key: str  # as the caller knows it
    id: str | None = None  # the current version's id (written or unchanged)
    version: int | None = None
    superseded: str | None = None
    item: str | None = None  # the review item, when queued
    reason: str = ""  # why it was queued
    indexed: bool = True  # False: written, the index catches up later
    lookalikes: tuple[str, ...] = ()  # the person's new key: keys that read like it that only an agent or the dream wrote
    undone: bool = False  # written, with a step after the version's file left (WriteResult.undone; no path here)


def remember_fact(
    mem: Memory,
    value: str,
    type: str,
    key: str | None = None,
    trust: str = "agent_observed",
    expected_version: int | None = None,
    viewer: Viewer = LOCAL,
    project: str | None = None,
    source: str = "untrusted",
    any_project: bool = False,
) -> Saved:
    """Write ``value`` under ``key`` (proposed from the value when None), with the checks "remember" and the
    dream apply: a value the secret scan flags is refused; one that reads like an instruction to an AI agent
    is queued for review (``suspicious``), not written; a change by an agent to a value the person stated,
    accepted or pinned is queued (``change-user-stated``); a tombstoned value is refused unless ``trust`` is the
    person's. ``expected_version`` makes the write a compare-and-swap (0: the key must be new), checked
    under the store's lock: VersionConflict when the key moved on. ``viewer`` decides the stored key and
    the ``owner`` written; ``source`` goes into a review item (who backs the value)."""
    shown, stored, value, found = vet(mem, value, type, key, trust, expected_version, viewer, project)
    owner = viewer.owner or ""
    if found is not None:
        reason = f"remember: {found.reason}"
        queued = propose.queue(mem, "suspicious", stored, type, value, reason, source=source, owner=owner)
        return Saved("queued", shown, item=queued.item.id if queued.item else None, reason=reason)
    if stored.startswith("global/") and trust not in PERSON_TRUSTS:
        # A global fact is given to every project's conversations: an agent's waits for the person, as the dream's
        # does (a review: an agent in one project wrote `global/deploy-target` and billing's conversations got it).
        reason = "remember: a fact for every project, written by an agent"
        queued = propose.queue(mem, "untrusted-source", stored, type, value, reason, source=source, owner=owner)
        return Saved("queued", shown, item=queued.item.id if queued.item else None, reason=reason)
    other = _other_project(stored, project, any_project)
    if other is not None and trust not in PERSON_TRUSTS:
        # What an agent reads in one project (a README, a web page) must not reach another project's conversations
        # unseen: a fact it writes there waits for the person, who sees which project wrote it. A server that knows
        # no project of its own (started in `/`, or `bead mcp --http` without --project) is no project's: every
        # project's facts wait so.
        where = f"a conversation of project {project}" if project else "a server with no project of its own"
        reason = f"remember: written from {where}, into project {other}"
        queued = propose.queue(mem, "untrusted-source", stored, type, value, reason, source=source, owner=owner)
        return Saved("queued", shown, item=queued.item.id if queued.item else None, reason=reason)

    def cas(cur: Fact | None) -> None:
        if expected_version is not None:
            now = cur.version if cur is not None else 0
            if now != expected_version:
                raise VersionConflict(shown, expected_version, now or None)

    done = propose.write_or_queue(
        mem, stored, value, type, trust, source=source, owner=viewer.owner, check=cas, shown=viewer.shown_id
    )
    if done.status == "queued":
        return Saved("queued", shown, item=done.item.id if done.item else None, reason=done.reason)
    if done.current is not None:  # the person's version says the same
        return Saved("unchanged", shown, viewer.shown_id(done.current.id), done.current.version)
    assert done.result is not None
    res, fact = done.result, done.result.fact
    return Saved(
        "written" if res.written else "unchanged",
        shown,
        viewer.shown_id(fact.id),
        fact.version,
        viewer.shown_id(res.superseded.id) if res.written and res.superseded else None,
        indexed=res.indexed,
        lookalikes=tuple(viewer.shown_key(k) for k in res.lookalikes),
        undone=bool(res.undone),
    )


def _other_project(key: str, project: str | None, any_project: bool = False) -> str | None:
    """The project a ``project/<name>/...`` key is of, when it is not ``project`` (the conversation's); else None.
    With no ``project`` every project is another's, unless ``any_project`` (a team member, whose projects the host
    lists)."""
    parts = key.split("/")
    if len(parts) < 3 or parts[0] != "project" or parts[1] == project or (project is None and any_project):
        return None
    return parts[1]


def vet(
    mem: Memory,
    value: str,
    type: str,
    key: str | None = None,
    trust: str = "agent_observed",
    expected_version: int | None = None,
    viewer: Viewer = LOCAL,
    project: str | None = None,
) -> tuple[str, str, str, propose.Finding | None]:
    """What remember_fact would do before it writes: (the key as shown, as stored, the value as it would be
    written, the screen's finding: not None when it would be queued), or the error it would raise."""
    if type not in TYPES:
        raise InvalidArgument(f"type {type!r} is not one of {', '.join(TYPES)}", f"use one of: {', '.join(TYPES)}")
    if trust not in TRUSTS:
        raise InvalidArgument(f"trust {trust!r} is not one of {', '.join(TRUSTS)}")
    if expected_version is not None and expected_version < 0:
        raise InvalidArgument("expected_version must be 0 (a new key) or a version number")
    value = (value or "").strip()
    shown = key if key is not None else propose_key(value, project if project and viewer.allows_project(project) else None)
    stored = viewer.stored_key(shown)
    try:
        value = mem.facts.check_body(shown, value)
    except BeadError as exc:  # empty, or over store.max_fact_bytes
        raise InvalidArgument(exc.message, exc.hint) from None
    if CONTROL.search(value):
        raise InvalidArgument(
            f"refusing to remember {shown}: the value holds control characters (a NUL, a terminal escape)",
            "send plain text: tabs and line breaks are fine",
        )
    found = propose.screen(value, stored)
    if found is not None and found.kind == propose.SECRET:
        raise RefusedWrite(
            f"refusing to remember {shown}: the value looks like a credential, and bead never stores one in plain text",
            "leave the secret out; the person can seal it with `bead write KEY - --sensitivity secret`",
        )
    if found is not None and found.kind == propose.HIDDEN:
        # The caller wrote this text and can send it as it reads (a person's "remember" is queued instead).
        raise InvalidArgument(
            f"refusing to remember {shown}: the value {found.reason}",
            "send the text as it reads, without zero-width, bidi or other invisible characters",
        )
    if mem.is_sealed(stored):
        raise KeySealed(shown)
    return shown, stored, value, found
