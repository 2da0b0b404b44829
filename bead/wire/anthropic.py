"""The Anthropic Messages API as bead reads and edits it.

- ``parse``: a request body, once, into the spans the splice needs and the
  typed ``Conversation`` everything else reads (the only place that walks
  Messages API content blocks);
- ``splice``: the pinned block at the end of ``system``, cue blocks at the
  end of their user messages, every other byte as it was;
- ``ResponseCollector``: the assistant turn rebuilt from the bytes the
  harness received (SSE events or a JSON body, gzip or deflate).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import re
import sys
import threading
import zlib
from typing import Any

from .. import budget
from ..capture.text import (
    COMPACTION_PREFIXES,
    CUT,
    block_shape,
    clean,
    harness_element,
    is_compaction,
    is_relayed,
    output_lines,
    own_blocks,
    own_tail,
    reminders,
    segments,
    strip_own,
)
from ..conversation import Conversation, Message, Part, Source, call_id, context_elements, reported_cwd
from . import aider
from .splice import Request, append_blocks, check_parts, text_block


def _blocks(c: Any) -> list[Any]:
    """A content field's blocks: a text is one, a list its items; anything else (a number, an object: a transcript
    line no client writes) none, so that one bad line costs its own text and no more (an outside attack: a
    tool result's content of ``5`` ended a whole `bead import`)."""
    if isinstance(c, str):
        return [c]
    return list(c) if isinstance(c, list) else []


def content_blocks(message: Any) -> list[Any]:
    return _blocks(message.get("content", "") if isinstance(message, dict) else "")


def block_text(block: Any) -> str:
    """The text a content block carries, without markers or field names (for hashes and the cwd)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        c = block.get("content", "")
        return c if isinstance(c, str) else "\n".join(block_text(x) for x in _blocks(c))
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), sort_keys=True, ensure_ascii=False)}"
    return ""


def _tool_result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "\n".join(
        x.get("text") or ""
        if isinstance(x, dict) and x.get("type") == "text" and isinstance(x.get("text"), str)
        else ("[image]" if isinstance(x, dict) and x.get("type") == "image" else "")
        for x in _blocks(c)
    )


_SEGMENT_SOURCE = {"typed": Source.TYPED, "lazy": Source.TYPED, "pasted": Source.PASTED, "tool_output": Source.TOOL_OUTPUT}


# A conversation sends every earlier message again with each request, and the walk that splits a person's block
# (``segments``) costs about 0.35 s a megabyte of pasted JSON or a traceback: one large paste made every later request
# of its conversation miss the proxy's deadline and go out without its blocks (an outside attack), and so did 220
# pastes of 8 KB (a review). A block's parts depend on its text alone, so those of any but a short one are kept, by a
# digest of it, the most recently asked first, up to PARTS_CACHE_BYTES of memory in all (as ``_footprint`` reckons it:
# a character of a JSON paste cost about nine bytes in Part objects); a short block is split again (cheaper than its
# digest's upkeep), and one whose parts alone pass a quarter of the room is not kept.
PARTS_CACHE_MIN_CHARS = 512
PARTS_CACHE_BYTES = 64_000_000
PART_OVERHEAD_BYTES = 200  # a Part object and its tuple slot, about
_parts_cache: collections.OrderedDict[tuple[bytes, Source], tuple[int, tuple[Part, ...]]] = collections.OrderedDict()
_parts_cache_bytes = 0  # the bytes the kept parts take, as ``_footprint`` reckons them
_parts_lock = threading.Lock()


def _footprint(parts: tuple[Part, ...]) -> int:
    return sum(sys.getsizeof(p.text) + PART_OVERHEAD_BYTES for p in parts)


MAX_TEXT_RUNS = 200  # typed and pasted runs of one text block, at most (more: the block is one paste)


def text_parts(text: str, source: Source) -> list[Part]:
    """``_text_parts``, kept for a long block of the person's (``PARTS_CACHE_MIN_CHARS``): a later request of the
    conversation sends it again."""
    global _parts_cache_bytes
    if source is not Source.TYPED or len(text) < PARTS_CACHE_MIN_CHARS:
        return _text_parts(text, source)  # another's text is not walked: nothing to keep
    key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), source)
    with _parts_lock:
        hit = _parts_cache.get(key)
        if hit is not None:
            _parts_cache.move_to_end(key)
            return list(hit[1])
    parts = tuple(_text_parts(text, source))
    size = _footprint(parts)
    with _parts_lock:
        if key not in _parts_cache and size <= PARTS_CACHE_BYTES // 4:
            _parts_cache[key] = (size, parts)
            _parts_cache_bytes += size
            while _parts_cache_bytes > PARTS_CACHE_BYTES:
                _, (gone, _parts) = _parts_cache.popitem(last=False)
                _parts_cache_bytes -= gone
    return list(parts)


def _text_parts(text: str, source: Source) -> list[Part]:
    """One text block's parts: its own words, then the harness's reminders.

    A person's block is split further (``bead.capture.text.segments``): what
    sits in code fences, quotes, expanded pastes, documents and command
    output is not typed. The OpenAI wire (``bead.wire.openai``) splits a
    person's text with this same function.
    """
    if source is not Source.TYPED:
        return [Part(source, clean(text)), *(Part(Source.HARNESS, r) for r in reminders(text))]
    # bead's own cue blocks end a text it appended them to; a <bead-memory> block anywhere else is someone's text
    # dressed as bead's: kept, as pasted. Either way they count towards the block's length as sent: bead appends
    # its blocks to what it forwards, never to what it receives, so a request's person's block that holds one holds
    # text someone put there (a page that ends in one must not make the words before it look short).
    body = text[: own_tail(text)]
    # As lines: the first line's indent is kept (a block that opens with code indented four columns is a paste, which
    # clean()'s strip made look typed), and a cut block leaves its line break (an empty reminder's cut joined the
    # person's closing fence onto a pasted line).
    cleaned = clean(body, as_lines=True)
    sent = len(text.strip())
    runs = segments(cleaned) if cleaned else []
    if len(runs) > MAX_TEXT_RUNS:
        # A block that comes apart into this many typed and pasted runs is someone else's text, a structure whose
        # lines only look typed by turns (a JSON object or a YAML file pasted without a fence: 60,000 runs, each a
        # raw turn marked typed: a review). One paste: a "remember" in it waits for review.
        runs = [("pasted", cleaned.strip())]
    # Typed words a paste may reach into (bead.conversation.Part.near_paste): right after a quote with no blank line
    # between, or with someone's text on both sides in the block (a cut block counts: bead.capture.text.CUT).
    others = [i for i, (s, _) in enumerate(runs) if s in ("pasted", "tool_output")]
    # A block holding what a pasted document carries and the walk does not read as pasted (HTML, a table, a
    # heading's underline, an odd line break: bead.capture.text.untyped_shape): its typed words are near a paste too,
    # as are typed words in a run that holds a tool's output lines (`npm ERR!`, a traceback: output_lines).
    # A run's frame form only where the block's differs from it (a block of one script's letters read once, not once
    # a run more: a review measured the parse of long CJK messages at four times before).
    odd, folds = block_shape(cleaned)
    parts = [
        Part(
            _SEGMENT_SOURCE[s],
            kept,
            sent=sent,
            near_paste=s == "lazy"
            or (s == "typed" and (odd or output_lines(t, folds) or (bool(others) and others[0] < i < others[-1]))),
        )
        for i, (s, t) in enumerate(runs)
        if (kept := "\n".join(line for line in t.split("\n") if line != CUT).strip() if CUT in t else t)
    ]
    parts = parts or [Part(source, "", sent=sent)]
    parts += [Part(Source.PASTED, p) for p in own_blocks(body)]
    parts += [Part(Source.HARNESS, r) for r in reminders(body)]
    return parts


# OpenCode reads a file, a folder or an MCP resource the person attached (an @-mention, `opencode run -f`) before
# the turn and sends what it read as text parts of the person's message, each marked synthetic in its own store but
# not on the wire: a part naming the read, then what was read (a resource may come in several parts). The read's
# output is a tool's text, never the person's words, whichever side of them OpenCode puts it (its TUI sends the
# person's text first, `opencode run` last). What OpenCode 1.18.33 sends
# (its OpenAI-compatible provider): tests/fixtures/opencode/file.jsonl.
_READ_CALL = "Called the Read tool with the following input: "
_RESOURCE_READ = "Reading MCP resource: "
_OPENCODE_SYNTHETIC = (
    _READ_CALL,
    _RESOURCE_READ,
    "Read tool failed to read ",
    "Failed to read MCP resource ",
    "[Binary MCP resource ",
    " Use the above message and context to generate a prompt and call the task tool with subagent: ",
)


# Cline's and Roo Code's tool result, sent as text blocks of a user message: a block `[read_file for 'NOTES.md']
# Result:` (`[name]` alone for some tools; a command's may span lines, a heredoc), then what the tool returned, in the
# blocks after it or after the colon. Anchored and bounded: at most 4,000 characters looked at.
_TOOL_RESULT_HEAD = re.compile(r"(?s)\[[A-Za-z_][A-Za-z0-9_-]{0,63}(?: for '.{0,4000}?')?\] Result:")
# What the person typed beside a tool's result (an approval's or a denial's note, their answer to a finished task):
# Cline puts it in the result, in one <feedback> element.
_FEEDBACK, _FEEDBACK_END = "<feedback>", "</feedback>"


def tool_result_head(text: str) -> bool:
    """Whether a text block opens with Cline's or Roo Code's head of a tool's result (``_TOOL_RESULT_HEAD``)."""
    return text.startswith("[") and _TOOL_RESULT_HEAD.match(text) is not None


def read_blocks(texts: list[str | None]) -> dict[int, Source]:
    """Which text blocks of a person's message (``texts``: each block's text, None for one without) are OpenCode's
    reads: the block naming a read (HARNESS) and what was read (TOOL_OUTPUT). A file's or folder's read is the one
    block after it, text or not (an image's or a PDF's read is a file part, not text); a resource's read is every
    text block after it, to the end of the message, whatever those say (a resource's text may itself look like
    another read, or OpenCode's note on a binary item): the person's words after one (in `opencode run`'s order)
    then count as the resource's, never the other way round. Empty for any other message. The same on the
    Anthropic route and the OpenAI ones (OpenCode speaks both).

    Cline's and Roo Code's tool results are read the same way: a block opening with `[name for '...'] Result:`
    is the tool's (HARNESS when it holds the head alone), and so is every block after it up to the harness's own
    context (`<environment_details>`): what a tool read (a README saying "remember that ...") is never typed. A
    block of it that holds the person's note (`<feedback>`) is marked TYPED: ``read_parts`` splits it."""
    out: dict[int, Source] = {}
    reading = 0  # blocks still to count as read output: 1 after a file's read, -1 (all) after a resource's
    tool = False  # in a Cline tool result: blocks are the tool's up to the harness's context
    asked = False  # ... of `ask_followup_question`, whose result is the person's answer (<answer>)
    for i, t in enumerate(texts):
        head = _TOOL_RESULT_HEAD.match(t) if t is not None and t.startswith("[") else None
        if t is not None and head is not None:
            rest = t[head.end() :]
            # Cline asks one question a message, and only its own head opens the message's first result: a head
            # inside a result is the tool's output imitating one.
            tool, asked = True, t.startswith(_ASKED) and not tool
            out[i] = Source.HARNESS if not rest.strip() else _tool_block(t, asked)
            continue
        if tool:
            if t is not None and not (asked and t.lstrip().startswith(_ANSWER)) and harness_element(clean(t)):
                tool = False  # the harness's own context (an <answer> block is the person's, not the harness's)
            elif t is not None:
                out[i] = _tool_block(t, asked)
            continue
        if reading < 0:
            if t is not None:
                out[i] = Source.TOOL_OUTPUT
            continue
        if t is None:
            reading = 0  # the read's output was this block (a file part)
            continue
        if t.startswith(_OPENCODE_SYNTHETIC):
            out[i] = Source.HARNESS
            reading = 1 if t.startswith(_READ_CALL) else -1 if t.startswith(_RESOURCE_READ) else 0
        elif reading:
            out[i] = Source.TOOL_OUTPUT
            reading = 0
    return out


_ASKED = "[ask_followup_question"
_ANSWER, _ANSWER_END = "<answer>", "</answer>"


def _tool_block(text: str, asked: bool) -> Source:
    """A block of a Cline tool result, as ``read_parts`` reads it: PASTED where it holds the person's answer to the
    question Cline asked them (<answer>), TYPED where it may hold their note (<feedback>), else TOOL_OUTPUT."""
    if asked and _ANSWER in text:
        return Source.PASTED
    return Source.TYPED if _FEEDBACK in text else Source.TOOL_OUTPUT


def _led_feedback(text: str) -> int:
    """Where the last <feedback> element that Cline's own sentence leads in (a line starting "The user " right before
    it) opens in ``text``, or -1. The person's note may itself name the element; a tool's output may hold one."""
    at = len(text)
    while (at := text.rfind("\n" + _FEEDBACK, 0, at)) >= 0:
        if text[text.rfind("\n", 0, at) + 1 : at].startswith("The user "):
            return at + 1
    return -1


def _note_parts(text: str, start: int, end: int, opening: str, closing: str) -> list[Part]:
    """The person's words between ``opening`` at ``start`` and ``closing`` at ``end`` (typed, beside a tool's output:
    a "remember" there waits for review), and the rest the tool's; all of it the tool's where there is no such span."""
    if start < 0 or end < start:
        return [Part(Source.TOOL_OUTPUT, clean(text), kind="tool_result")]
    note = clean(text[start + len(opening) : end])
    rest = clean(text[:start] + "\n" + text[end + len(closing) :])
    parts = [Part(Source.TYPED, note, near_paste=True)] if note else []
    return parts + ([Part(Source.TOOL_OUTPUT, rest, kind="tool_result")] if rest else [])


def read_parts(source: Source, text: str) -> list[Part]:
    """The parts of a block ``read_blocks`` marked ``source``: the read's name (HARNESS), what was read
    (TOOL_OUTPUT), or a Cline tool result holding the person's words: their note (TYPED: from the last <feedback>
    that Cline's own sentence leads in to the last </feedback>) or their answer to its question (PASTED: the
    <answer> element). Those are theirs, beside a tool's output (a "remember" there waits for review); the rest is
    the tool's."""
    if source is Source.PASTED:
        # The answer Cline writes last, on a line of its own (`<answer>` opening the block, or after the head): the
        # question before it is the model's and may itself hold the element.
        lead = len(text) - len(text.lstrip())
        at = text.rfind("\n" + _ANSWER)
        start = lead if text.startswith(_ANSWER, lead) else at + 1 if at >= 0 else -1
        return _note_parts(text, start, text.rfind(_ANSWER_END), _ANSWER, _ANSWER_END)
    if source is Source.TYPED:
        # Cline writes the note last, after its own sentence (`The user provided the following feedback:`, `The user
        # denied this operation and ...`, `The user has provided feedback on the results. ...`) on the line before:
        # the last <feedback> element, so led in and closed, is the note; a tool's output that writes one of its
        # own earlier (or without the sentence) stays the tool's.
        return _note_parts(text, _led_feedback(text), text.rfind(_FEEDBACK_END), _FEEDBACK, _FEEDBACK_END)
    if source is Source.TOOL_OUTPUT:
        return [Part(Source.TOOL_OUTPUT, clean(text), kind="tool_result")]
    return [Part(Source.HARNESS, text.strip())]


def _block_text_of(b: Any) -> str | None:
    return str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text" else None


_LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>")
# Command output elements: segments reads them as tool output, not as an attachment.
_OUTPUT_ELEMENTS = (*_LOCAL_OUTPUT, "<bash-stdout>", "<bash-stderr>")


def _local_output(text: str) -> bool:
    """Whether a block is wholly one local command's output element (`/model`'s answer), nothing around it."""
    if "<local-command-" not in text:
        return False
    cleaned = clean(text)
    return cleaned.startswith(_LOCAL_OUTPUT) and harness_element(cleaned)


def _mcp_prompt(text: str) -> bool:
    """Whether a command block may run an MCP server's prompt: its markup anywhere names one, ``mcp__`` (Claude
    Code's ``/mcp__server__prompt``) or ``(MCP)`` (the name as its menu shows it, ``/server:prompt (MCP)``), in any
    case. A server chooses its prompt's name, so no one ``<command-name>`` element is trusted to be the one; a
    person's command that names one too has the blocks after it read as the server's (the safe side). Plain finds
    over the block's first MCP_MARKUP_CHARS: linear."""
    body = clean(text)[:MCP_MARKUP_CHARS].casefold()
    return "mcp__" in body or "(mcp)" in body


MCP_MARKUP_CHARS = 20_000


def is_command(text: str) -> bool:
    """Whether a block runs a slash command: Claude Code's markup opens it (a mention of the tag in prose or
    code further on is not one). Every block of every message is asked, so a plain find comes first."""
    return "<command-" in text and clean(text).startswith(("<command-name>", "<command-message>"))


def attached_or_summary(text: str) -> bool:
    """Whether a person's block is a harness element (an <ide_selection>, an attachment marker; not command output,
    which segments reads as a tool's) or a compaction summary: never typed. Plain finds first, then one clean."""
    if "<" not in text and "[" not in text and not any(p in text for p in COMPACTION_PREFIXES):
        return False
    cleaned = clean(text)
    return (harness_element(cleaned) and not cleaned.startswith(_OUTPUT_ELEMENTS)) or is_compaction(cleaned)


_COMMAND_ELEMENTS = ("command-message", "command-name", "command-args")


def command_parts(text: str) -> list[Part]:
    """A block that runs a slash command (Claude Code's ``<command-name>`` markup): the person typed only what
    ``<command-args>`` holds; what follows the markup is the command file's text (``.claude/commands/*.md``,
    a plugin's, a cloned repository's), pasted; the markup is the harness's. The markup is the run of those
    elements that opens the block: a ``<command-args>`` further on is the file's text. Plain finds: linear."""
    i, args = 0, None
    body = clean(text)
    while True:
        while i < len(body) and body[i].isspace():
            i += 1
        name = next((n for n in _COMMAND_ELEMENTS if body.startswith(f"<{n}>", i)), None)
        end = body.find(f"</{name}>", i) if name is not None else -1
        if name is None or end == -1:
            break
        if name == "command-args" and args is None:
            args = body[i + len(name) + 2 : end]
        i = end + len(name) + 3
    parts: list[Part] = []
    if args is not None and clean(args):
        parts += text_parts(clean(args), Source.TYPED)
    rest = body[i:]
    if clean(rest):
        parts.append(Part(Source.PASTED, clean(rest)))
    return parts + [Part(Source.HARNESS, r) for r in reminders(text)] if parts else [Part(Source.HARNESS, "")]


def own_block(blocks: list[Any]) -> int | None:
    """Which text block of a person's message holds their own words when several do: the last one that says
    anything once the harness's reminders and markup are out (Claude Code sends its context first and the
    prompt last; an <ide_opened_file> element or an "[Image #1]" marker after it is the harness's).
    Any other text block beside it is what the harness or the person attached, however it reads: a CLAUDE.md
    excerpt, a colleague's note. None when at most one block has words."""

    def words(b: Any) -> bool:
        text = b if isinstance(b, str) else str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text" else ""
        cleaned = clean(text) if text else ""
        return bool(cleaned) and not harness_element(cleaned)

    with_words = [i for i, b in enumerate(blocks) if words(b)]
    return with_words[-1] if len(with_words) > 1 else None


def parts_of(role: str, blocks: list[Any]) -> list[Part]:
    """Typed parts of one message's content blocks (thinking is skipped on purpose).

    Text sent beside a tool result in the same user message is not the
    person's: harnesses put tool and hook output there, so it counts as tool
    output (the person's own words arrive in a message of their own). Of
    several text blocks, only the person's own (``own_block``) counts as
    typed; the others are pasted.
    """
    out: list[Part] = []
    text_source = _role_source(role)
    if text_source is Source.TYPED and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
        text_source = Source.TOOL_OUTPUT
    texts = [b if isinstance(b, str) else _block_text_of(b) for b in blocks]
    several = len(blocks) > 1 or any(t is not None and tool_result_head(t) for t in texts)
    reads = read_blocks(texts) if text_source is Source.TYPED and several else {}
    # A slash command (Claude Code's markup opening a block; each one of several): only its arguments are typed
    # (command_parts). A command file's text is the first text block after it (after an image the person sent with
    # the command, which Claude Code puts first), unless that block is wholly a local command's output (`/model`'s:
    # the blocks after it are read as any message's, the person's next prompt among them). An MCP server's prompt
    # (`/mcp__server__prompt`) may come as several blocks, each the server's to write (a local command's output
    # or a command's markup among them): every block after it is the server's, pasted; a prompt the person sent
    # after it that Claude Code merged into the same message is pasted with it (its "remember" waits for review).
    commands: set[int] = set()
    expansions: set[int] = set()
    for i, t in enumerate(texts):
        if text_source is not Source.TYPED or t is None or i in expansions or not is_command(t):
            continue
        commands.add(i)
        following = [j for j in range(i + 1, len(texts)) if texts[j] is not None]
        if _mcp_prompt(t):
            expansions.update(following)
        elif following and not _local_output(texts[following[0]] or ""):
            expansions.add(following[0])
    skip = set(reads) | commands | expansions
    own = own_block([None if i in skip else b for i, b in enumerate(blocks)]) if text_source is Source.TYPED else None
    for i, b in enumerate(blocks):
        source = Source.PASTED if own is not None and i != own and text_source is Source.TYPED else text_source
        # Of several blocks with words, the last is read as the person's; the block before it may be theirs and
        # this one a paste the harness sent apart (a mail, a fence's second half): its words are near a paste.
        beside = own is not None and i == own
        if i in reads:
            out += read_parts(reads[i], texts[i] or "")
            continue
        text = texts[i]
        if text is not None and text_source is Source.TYPED:
            if i in commands:
                out += command_parts(text)
                continue
            if i in expansions:
                out += text_parts(text, Source.PASTED)
                continue
            if is_relayed(text):
                # A Stop hook's stderr, or another agent's message in an agent team, which Claude Code sends as a user
                # message: a tool's output, to its end.
                out += text_parts(text, Source.TOOL_OUTPUT)
                continue
            if attached_or_summary(text):
                # An <ide_selection> (lines of a file) or <ide_opened_file> beside the prompt, however many
                # blocks have words (as own_block reads it beside two), or a compaction summary: pasted.
                out += text_parts(text, Source.PASTED)
                continue
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"):
            got = text_parts(b if isinstance(b, str) else str(b.get("text", "")), source)
            out += [dataclasses.replace(p, near_paste=True) if beside and p.source is Source.TYPED else p for p in got]
            continue
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "tool_result":
            out.append(
                Part(
                    Source.TOOL_OUTPUT,
                    clean(_tool_result_text(b)),
                    kind="tool_result",
                    error=bool(b.get("is_error")),
                    call=call_id(b.get("tool_use_id")),
                )
            )
        elif kind in ("image", "document"):
            out.append(Part(Source.PASTED, "", kind=kind))
        elif kind in ("tool_use", "server_tool_use"):
            # The assistant may copy injected memory into a tool call (a note it
            # writes): bead's own blocks leave its input too.
            data = strip_own_deep(b.get("input", {}))
            out.append(
                Part(
                    Source.TOOL_CALL,
                    json.dumps(data, ensure_ascii=False),
                    kind="tool_use",
                    name=str(b.get("name", "")),
                    data=data,
                    call=call_id(b.get("id")),
                )
            )
    return out


STRIP_DEPTH = 64  # a tool input nested deeper is kept as it is below this depth (two frames a level: no recursion limit)


def strip_own_deep(value: Any, depth: int = 0) -> Any:
    """``value`` (a tool's input) with bead's own blocks taken out of every string in it, to STRIP_DEPTH levels."""
    if isinstance(value, str):
        return strip_own(value)
    if depth >= STRIP_DEPTH:
        return value
    if isinstance(value, dict):
        return {k: strip_own_deep(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_own_deep(v, depth + 1) for v in value]
    return value


def _role_source(role: str) -> Source:
    return {"user": Source.TYPED, "assistant": Source.ASSISTANT}.get(role, Source.HARNESS)


def message_of(index: int, m: Any) -> Message:
    budget.check()  # a request's read stops at its deadline (bead.budget)
    role = m.get("role", "") if isinstance(m, dict) else ""
    blocks = content_blocks(m)
    # Claude Code resends the previous last message without its cache_control
    # and, if it was a string, as a string again; the hash must not change.
    texts = [strip_own(block_text(b)).strip() for b in blocks]
    normalised = str(role) + "\x00" + "\x00".join(t for t in texts if t)
    return Message(index, str(role), tuple(parts_of(str(role), blocks)), normalised)


def system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "\n".join(block_text(b) for b in system or []) if isinstance(system, list) else ""


def is_auxiliary(headers: dict[str, str], data: dict[str, Any]) -> bool:
    """A harness side request (session title, summaries): not conversation.

    Claude Code marks them with ``x-claude-code-request-class: auxiliary`` when
    hint headers are on; without them they are structured-output calls with
    no tools. They quote the user's words as data, so capturing them would
    log every prompt twice and "remember" would fire twice.
    """
    if headers.get("x-claude-code-request-class", "").lower() == "auxiliary":
        return True
    oc = data.get("output_config")
    fmt = oc.get("format") if isinstance(oc, dict) else None
    return bool(fmt) and not data.get("tools")


def parse(body: bytes, headers: dict[str, str]) -> tuple[Request, Conversation]:
    """The splice's spans and the typed conversation; SpliceError (a ValueError) for a body bead cannot read."""
    req = Request.parse(body)
    return req, conversation_of(req.data, headers)


def conversation_of(data: dict[str, Any], headers: dict[str, str]) -> Conversation:
    """The typed conversation of a decoded Messages API request (TooLarge past the limits on blocks)."""
    raw = data.get("messages") or []
    check_parts(raw, ("content",), per_item=True, nested="content")  # counted before any block is read
    messages = tuple(message_of(i, m) for i, m in enumerate(raw))
    system = system_text(data.get("system"))
    places = [system]
    places += [
        "\n".join(block_text(b) for b in content_blocks(m)) for m in raw if isinstance(m, dict) and m.get("role") == "system"
    ]
    first_user = next((m for m in raw if isinstance(m, dict) and m.get("role") == "user"), None)
    opening = [block_text(b) for b in content_blocks(first_user)] if first_user else []
    cwd, reported = reported_cwd(places, context_elements(opening), context_elements(opening, ("system-reminder",)))
    # Aider pointed here (a Claude model through litellm) writes as it does on the OpenAI routes (bead.wire.aider).
    newest = next((m.index for m in reversed(messages) if m.role == "user"), -1)
    messages, opener = aider.context(messages, _one_text(raw[newest]) if newest >= 0 else None, system, _AIDER_SPLIT)
    side = not data.get("tools") and aider.commit_request(system) and not any(m.role == "assistant" for m in messages)
    conv = Conversation(
        messages, system=system, cwd=cwd, cwd_reported=reported, auxiliary=side or is_auxiliary(headers, data), opener=opener
    )
    # Aider's architect mode: the editor model is sent the architect model's answer as its user message.
    return conv.delegated() if opener >= 0 and aider.editor(messages, system) else conv


def _one_text(m: Any) -> str | None:
    """A message's text where its content is one text (a string, or a list of one text block): where Aider's
    reminder is looked for."""
    content = m.get("content") if isinstance(m, dict) else None
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        content = content[0].get("text")
    return content if isinstance(content, str) else None


# How a person's text becomes parts on this route, for what Aider wrote around it (bead.wire.aider).
_AIDER_SPLIT = aider.Split(words=lambda text: text_parts(text, Source.TYPED), content=lambda text: parts_of("user", [text]))


def splice(req: Request, pinned: str | None, blocks: dict[int, list[str]]) -> bytes:
    """The body with the pinned block ending ``system`` and each message's cue blocks appended."""
    edits = []
    if pinned:
        edits.append(req.system_edit(text_block(pinned)))
    for i, texts in blocks.items():
        edits.append(append_blocks(req.text, req.content_span(i), [text_block(t) for t in texts]))
    return req.edited(edits) if edits else req.text.encode("utf-8")


EVENT_CAP = 1024 * 1024  # an SSE event larger than this is skipped, never buffered whole
DECODED_CAP = 16 * 1024 * 1024  # a compressed response is read up to this much once expanded


def collector(content_type: str, content_encoding: str | None) -> ResponseCollector:
    """A collector for one response (the engine's wire interface, ``bead.wire.Wire``)."""
    return ResponseCollector(content_type, content_encoding)


class ResponseCollector:
    """Rebuilds the assistant turn from the bytes the harness received.

    SSE is parsed line by line as bytes arrive: each byte is looked at a
    bounded number of times, whatever the chunking, and an event past
    ``EVENT_CAP`` is dropped rather than buffered.
    """

    def __init__(self, content_type: str, content_encoding: str | None):
        self.sse = "text/event-stream" in (content_type or "")
        enc = (content_encoding or "identity").lower()
        self.decoder: Any = None
        self.supported = enc in ("identity", "gzip", "deflate")
        if enc == "gzip":
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self.decoder = zlib.decompressobj()
        self.body = bytearray()  # a JSON (non-SSE) body
        self._line = bytearray()  # the current, unfinished SSE line
        self._skip_line = False  # the current line is past the cap
        self._data: list[bytes] = []  # data lines of the current event
        self._size = 0
        self._skip_event = False
        self.skipped_events = 0
        self.blocks: dict[int, dict[str, Any]] = {}
        self.texts: dict[int, list[str]] = {}
        self.json_chunks: dict[int, list[str]] = {}
        self.decoded = 0  # bytes a compressed response has expanded to
        self.overflow = False  # it expanded past DECODED_CAP: the rest is not read
        self.done = False
        self.error = False

    def feed(self, chunk: bytes) -> None:
        if not self.supported or self.overflow:
            return
        if self.decoder:
            # A compressed response may expand a thousandfold: never past DECODED_CAP.
            data = self.decoder.decompress(chunk, DECODED_CAP - self.decoded)
            self.decoded += len(data)
            if self.decoder.unconsumed_tail or self.decoded >= DECODED_CAP:
                self.overflow = True
        else:
            data = chunk
        if not self.sse:
            self.body += data
            return
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl == -1:
                rest = data[start:]
                if not self._skip_line:
                    if len(self._line) + len(rest) > EVENT_CAP:
                        self._skip_line = True
                        self._line.clear()
                    else:
                        self._line += rest
                return
            if self._skip_line:
                self._skip_line = False
                self._skip_event = True
                self._line.clear()
            else:
                self._line += data[start:nl]
                self._on_line(bytes(self._line).rstrip(b"\r"))
                self._line.clear()
            start = nl + 1

    def _on_line(self, line: bytes) -> None:
        if not line:
            data, skip = self._data, self._skip_event
            self._data, self._size, self._skip_event = [], 0, False
            if skip:
                self.skipped_events += 1
            elif data:
                try:
                    self._event(json.loads(b"\n".join(data)))
                except (ValueError, UnicodeDecodeError, RecursionError):
                    self.skipped_events += 1
            return
        if line.startswith(b"data:") and not self._skip_event:
            self._size += len(line)
            if self._size > EVENT_CAP:
                self._skip_event = True
                self._data = []
            else:
                self._data.append(line[5:].lstrip())

    def _event(self, ev: Any) -> None:
        """One event of the stream. One of another shape (no whole-number index, a block started twice at one index,
        a block or a delta that is no object) is skipped and counted: the capture is then marked partial, never
        lost whole nor silently missing a piece."""
        if not isinstance(ev, dict):
            self.skipped_events += 1
            return
        kind = ev.get("type")
        if kind == "message_stop":
            self.done = True
            return
        if kind == "error":
            self.error = True
            return
        if kind not in ("content_block_start", "content_block_delta"):
            return
        i = ev.get("index")
        part = ev.get("content_block" if kind == "content_block_start" else "delta")
        if (
            not isinstance(i, int)
            or isinstance(i, bool)
            or not isinstance(part, dict)
            or (kind == "content_block_start" and i in self.blocks)
        ):
            self.skipped_events += 1
            return
        if kind == "content_block_start":
            self.blocks[i] = dict(part)
            if self.blocks[i].get("type") in ("tool_use", "server_tool_use"):
                self.json_chunks[i] = []
            return
        self.blocks.setdefault(i, {"type": "text", "text": ""})
        if part.get("type") == "text_delta":
            # Deltas are joined once, at the end: appending to a string
            # in a dict copies it each time (quadratic in the answer).
            self.texts.setdefault(i, []).append(str(part.get("text", "")))
        elif part.get("type") == "input_json_delta":
            self.json_chunks.setdefault(i, []).append(str(part.get("partial_json", "")))

    def result(self, index: int) -> tuple[Message, dict[str, Any]] | None:
        """(the assistant message at position ``index``, its flags), or None when nothing usable arrived."""
        if not self.supported:
            return None
        if not self.sse:
            try:
                body = json.loads(self.body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                return None
            if not isinstance(body, dict) or body.get("type") != "message":
                return None
            return message_of(index, {"role": "assistant", "content": body.get("content") or []}), {}
        for i, chunks in self.json_chunks.items():
            try:
                self.blocks[i]["input"] = json.loads("".join(chunks)) if chunks else {}
            except ValueError:
                self.blocks[i]["input"] = {"partial_json": "".join(chunks)}
        for i, parts in self.texts.items():
            start = self.blocks[i].get("text")  # a block may start with text of another type (null, a number)
            self.blocks[i]["text"] = (start if isinstance(start, str) else "") + "".join(parts)
        self.texts.clear()
        flags: dict[str, Any] = {}
        if self.error:
            flags["error"] = True
        if not self.done or self.overflow or self.skipped_events:
            flags["partial"] = True  # cut short, or an event passed over (too large, unreadable, of another shape)
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        return message_of(index, {"role": "assistant", "content": blocks}), flags
