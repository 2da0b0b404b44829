"""History from day one: Claude Code's saved transcripts into the raw log.

Claude Code keeps every conversation as JSON lines under
``~/.claude/projects/<dir>/<session>.jsonl`` (a subagent's under
``<session>/subagents/agent-<id>.jsonl``). The lines that matter are
``type: user`` and ``type: assistant``; their ``message`` holds Messages API
content (an assistant answer is written one content block per line, the
lines sharing ``message.id``). Every other line (queue operations,
attachments, system notes, the last prompt, harness meta messages, compact
summaries, synthetic API errors) is harness bookkeeping and is skipped.

An import goes through the same path as live capture: the messages become
a typed ``Conversation`` (the Messages API parser the proxy uses), each
message becomes one turn per run of parts with the same source
(``capture.request_turns``), and the raw log's append runs the secret scan.
Session ids are the ones the proxy gives the same conversation (the
session's id; a subagent's is the parent's plus a hash of its agent id), and
the project comes from the working directory each line records, as the
proxy takes it from the one the harness reports.

Idempotent: a turn whose role, source and (scanned) text the session's raw
file already holds, as many times as the transcript has it, is not written
again, so a second import adds nothing and a session the proxy captured live
is completed, not doubled.

Memory stays bounded whatever a file holds: a file is read in binary chunks;
a line longer than ``import.max_line_bytes`` is counted and its bytes dropped
as they arrive (never held whole), and so is one that would take more than
twice that once parsed (``_weight``); a file's messages go to the raw log in
batches of about ``BATCH_BYTES``, each cut where the wire parser starts a new
message anyway, so the turns are the ones the whole file gives at once.
"""

from __future__ import annotations

import collections
import errno
import fnmatch
import hashlib
import json
import logging
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..capture.secrets import keep_found, prints_secret, redact_messages, redact_printed
from ..capture.text import HARNESS_NOTICES
from ..conversation import (
    CODEX_EXEC,
    HEADLESS_CLAUDE_CODE,
    MAX_MESSAGE_PARTS,
    Conversation,
    Identity,
    Unreadable,
    _h,
    codex_unattended,
    project_from_cwd,
    project_slug,
    safe_name,
)
from ..errors import BeadError
from ..store.audit import iso
from ..store.locks import flocked
from ..store.rawlog import REPLAYED, UNVERIFIED, by_message
from ..textform import readable_json
from ..token import without_token
from .capture import command_text, note_typed, prints_at_end, remember_values, request_turns
from .memory import Memory

IMPORTED = {"anthropic": "claude-code", "responses": "codex"}
SKIPPED_TYPES = frozenset({"queue-operation", "attachment", "system", "last-prompt", "mode", "summary", "file-history-snapshot"})
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024  # import.max_line_bytes
CHUNK_BYTES = 1024 * 1024  # a file is read this much at a time
BATCH_BYTES = 8 * 1024 * 1024  # a batch of a file's messages ends before a message that would take it past this
# much (``_weight``: what the messages take in memory, about)
BATCH_PARTS = 2_000  # ... or this many content parts (the wire parsers refuse more than 20,000)
HOLD_BYTES = 32 * 1024 * 1024  # a batch is cut past this much even inside a run of Codex items the parser would
# merge, and lines before the one that names the session are dropped (never seen)
RUN_ITEMS = 500  # a run of Codex items the parser would merge is cut at this many (never seen either)

log = logging.getLogger("bead.import")


@dataclass
class Transcript:
    """One batch of the conversation of a transcript file: a session, or a subagent of one."""

    path: Path
    session: str  # the raw log's session id (what the proxy names this conversation)
    base_session: str  # the parent session's (a subagent's session starts with it)
    project: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)  # Messages API messages, or Responses items
    times: list[datetime] = field(default_factory=list)  # one per message (or item)
    first: datetime | None = None
    wire: str = "anthropic"  # anthropic | responses (Codex CLI)
    untyped: str = ""  # why its person's words cannot be told from piped text (Conversation.untyped), or ""
    delegated: bool = False  # another agent wrote its prompts (a `codex mcp-server` session's): none is the person's
    # The values the tool results of calls the import did not read held (``_Batches.unread_output``): a later
    # answer that says one again is redacted too (FileState.known).
    printed: list[str] = field(default_factory=list)
    # The values the secret scan found in the file's lines before --since (value to rule): a later turn that says one
    # again is redacted (FileState.found).
    found: dict[str, str] = field(default_factory=dict)


@dataclass
class ImportCounts:
    files: int = 0
    sessions: int = 0
    turns_added: int = 0
    turns_present: int = 0  # already in the raw log (an earlier import, or live capture)
    redacted: int = 0  # added turns the secret scan changed
    skipped_lines: int = 0  # harness bookkeeping and lines that do not parse
    unreadable_lines: int = 0  # of those, lines that are no JSON object (damaged, another encoding, hostile)
    skipped_long_lines: int = 0  # lines longer than import.max_line_bytes (their bytes were never held)
    skipped_project: int = 0  # files of other projects (--project)
    skipped_old: int = 0  # messages before --since
    skipped_files: int = 0  # transcripts gone or unreadable by the time they were read
    unverified: int = 0  # added turns read from a folder other than the harness's own (rawlog.UNVERIFIED)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is inside ``folder`` (links resolved; False where either cannot be resolved)."""
    try:
        return path.resolve(strict=True).is_relative_to(folder.resolve(strict=True))
    except (OSError, RuntimeError):
        return False


def _harness_root(env: str, default: str, sub: str) -> Path:
    """``$env/sub``, else ``~/default/sub``: where a harness keeps its sessions."""
    base = os.environ.get(env)
    return (Path(base) if base else Path.home() / default) / sub


class NotATranscript(OSError):
    """A path listed as a transcript that is, when opened, a link, a FIFO, a device or outside the folder read."""


def _open_transcript(path: Path) -> BinaryIO:
    """``path`` opened for reading as the regular file it was when the folder was listed: never through a link (a
    file swapped for one to /dev/zero or outside --from after the listing), never waiting on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotATranscript(errno.ELOOP, "a link, not a transcript", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotATranscript(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def _within(path: Path, root: Path) -> bool:
    """Whether ``path``'s real place is under ``root``'s (a folder on the way swapped for a link leads elsewhere)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _session_files(root: Path, pattern: str, missing: str, hint: str) -> list[Path]:
    """Every regular file matching ``pattern`` below ``root`` (never a link), in a stable order."""
    if not root.is_dir():
        raise BeadError(f"no {missing} at {root}", hint)
    found: list[Path] = []
    # A walk with a list of the folders still to read, not Path.rglob, which recurses a level a folder: a folder
    # nested 1,500 deep ended the import in a RecursionError (an outside attack). A link is never followed.
    folders = [str(root)]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and fnmatch.fnmatchcase(entry.name, pattern):
                        found.append(Path(entry.path))
        except OSError:
            continue  # a folder that cannot be read (its permissions), as rglob passed over it
    return sorted(found)


def default_root() -> Path:
    """Where Claude Code keeps its transcripts (``CLAUDE_CONFIG_DIR`` moves it)."""
    return _harness_root("CLAUDE_CONFIG_DIR", ".claude", "projects")


def transcript_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` below ``root`` (sessions and their subagents), in a stable order."""
    return _session_files(
        root, "*.jsonl", "Claude Code transcripts", "give the folder with --from (Claude Code keeps them in ~/.claude/projects)"
    )


# The years a message's time may say: a raw log's folder is its day's (four digits of year), and no harness wrote a
# conversation before 1970. A time outside (0001-01-01+05:00 overflowed as it became UTC) is no time: the line is
# skipped, not the import.
YEARS = (1970, 9998)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value)
        t = (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return t if YEARS[0] <= t.year <= YEARS[1] else None


def _raw_lines(path: Path, limit: int, counts: ImportCounts) -> Iterator[bytes]:
    """The file's lines (without their line break), read in binary chunks. A line longer than ``limit`` bytes is
    counted in ``skipped_long_lines`` and its bytes are dropped as they arrive: at most ``limit`` plus one chunk
    is ever held."""
    with _open_transcript(path) as f:
        line = bytearray()
        skipping = False  # inside a line already past the limit
        while chunk := f.read(CHUNK_BYTES):
            view = memoryview(chunk)
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                if not skipping:
                    line += view[start:] if end < 0 else view[start:end]
                    if len(line) > limit:
                        skipping, line = True, bytearray()
                if end < 0:
                    break
                if skipping:
                    counts.skipped_long_lines += 1
                    skipping = False
                else:
                    yield bytes(line)
                    line = bytearray()
                start = end + 1
            del view
        if skipping:
            counts.skipped_long_lines += 1
        elif line:
            yield bytes(line)


# A JSON string: to its closing quote, or to the line's end when it has none, without backtracking (linear on any line).
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.DOTALL)


def _structure(data: bytes) -> int:
    """About what a line's JSON values, objects and lists take as Python objects (beyond their text)."""
    return 200 * data.count(b"{") + 64 * data.count(b"[") + 56 * (data.count(b",") + data.count(b":"))


def _weight(raw: bytes, text: str, heavy: int) -> int:
    """About how many bytes a line takes once parsed: its text as Python holds it (1, 2 or 4 bytes a character:
    one emoji makes a whole text 4) plus its structure.

    The structure is counted on the whole line first (a comma inside a string counts too). Only a line that this
    says weighs more than ``heavy`` is counted again with its strings left out, and only when it has few enough
    strings that what they alone take (some 50 bytes each) keeps it under ``heavy``: leaving out a line's strings
    holds a piece per string."""
    text_size = sys.getsizeof(text)
    weight = text_size + _structure(raw)
    if weight <= heavy:
        return weight
    strings = (raw.count(b'"') - raw.count(b'\\"')) // 2
    if text_size + 50 * strings > heavy:
        return text_size + 50 * strings
    return text_size + _structure(_STRING.sub(b'""', raw))


def _lines(path: Path, limit: int, counts: ImportCounts) -> Iterator[tuple[dict[str, Any] | None, int]]:
    """Each non-blank line's JSON object (None for one that is not an object) and its weight (``_weight``).

    A line longer than ``limit`` bytes is dropped unread (``_raw_lines``); one that is not but would take more
    than twice ``limit`` once parsed (4-byte characters throughout, very many small values) is counted with them
    and not parsed."""
    for raw in _raw_lines(path, limit, counts):
        text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")  # a file saved with a byte order mark
        if not text or text.isspace():
            continue
        weight = _weight(raw, text, 2 * limit)
        del raw
        if weight > 2 * limit:
            counts.skipped_long_lines += 1
            continue
        try:
            d = json.loads(readable_json(text))
        except (ValueError, RecursionError):  # ValueError: not JSON, or a number of over 4,300 digits
            d = None
        del text
        if not isinstance(d, dict):
            counts.unreadable_lines += 1
        yield (d if isinstance(d, dict) else None), weight


SIDECHAIN = "bead_sidechain"  # marks a message read from an isSidechain line (read_transcript)
MAX_CALLS = 200_000  # call ids a file's reader keeps (``_Batches.calls``); past it, every later result is read as unread


def _headless(entrypoint: object) -> bool:
    """Claude Code's entry point for a run with no terminal (``claude -p``: sdk-cli, sdk-ts, ...)."""
    return isinstance(entrypoint, str) and entrypoint.startswith("sdk-")


class _Batches:
    """A file's messages (or Codex items), handed out in batches of bounded weight as the file is read.

    The file's session, subagent and project are fixed when the first batch is handed out (from the first lines
    that name them, as a file's first line does): every batch of a file goes to the same session."""

    def __init__(self, path: Path, wire: str, walk: bool = True):
        self.path, self.wire, self.walk = path, wire, walk
        self.session_id: Any = None
        self.agent_id: Any = None
        self.cwd: Any = None
        # Claude Code's, of the batch's lines: cli, or sdk-cli for a run with no terminal (claude -p). Each line says
        # its own, and a batch ends where it changes: `claude -p --continue` appends a headless run to a session.
        self.entrypoint: Any = None
        self.untyped = ""  # why the person's words cannot be told from piped text, where the file says so (codex exec)
        self.delegated = False  # the file says another agent wrote its prompts (Codex run as an MCP server)
        self.ident: tuple[str, str, str | None] | None = None
        # The file's tool calls read so far, by id: True for one read into a batch, else (a line before --since)
        # whether it prints a secret. A result whose call is not here answers a line the import could not read.
        self.calls: dict[str, bool] = {}
        # The texts of the lines before --since, read for the values the secret scan finds once a line after it
        # comes (``seed``): a `.env` pasted there, whose password a later answer says bare. At most BEFORE_CHARS of
        # them, the newest kept: a file with no line after --since costs no scan.
        self.before: collections.deque[str] = collections.deque()
        self.before_chars = 0
        self.found: dict[str, str] = {}
        self._begin()

    def saw_before(self, data: object) -> None:
        """A line before --since: its strings kept for ``seed``."""
        for text in _strings(data):
            self.before.append(text)
            self.before_chars += len(text)
        while self.before_chars > BEFORE_CHARS and self.before:
            self.before_chars -= len(self.before.popleft())

    def seed(self) -> None:
        """At the first line after --since: the kept texts read for the values the secret scan finds."""
        if self.before:
            redact_messages([[t] for t in self.before], self.found)
            self.before.clear()
            self.before_chars = 0

    def _begin(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.times: list[datetime] = []
        self.weight = 0
        self.parts = 0
        self.printed: list[str] = []

    def called(self, call_id: object, command: object, read: bool) -> None:
        """A tool call the file holds: ``read`` into a batch, or (a line before --since) not, and then whether its
        ``command`` (its input) prints a secret."""
        if isinstance(call_id, str) and call_id and len(self.calls) < MAX_CALLS:
            self.calls[call_id] = True if read else not prints_secret(command_text(command))

    def unread(self, call_id: object) -> bool:
        """Whether a tool result answers a call the import did not read: a line too long or unreadable, or one before
        --since that prints a secret. Its output is then read as a printed secret's (the safe side); with a call
        read, or one before --since that prints none, the conversation reads it as a whole run would."""
        return isinstance(call_id, str) and bool(call_id) and not self.calls.get(call_id, False)

    def unread_output(self, output: Any, counts: ImportCounts) -> Any:
        """A result's output (a string, or a list of text blocks) redacted as a printed secret's."""
        if isinstance(output, str):
            text, hit = redact_printed(output, self.printed)
            counts.redacted += hit
            return text
        if isinstance(output, list):
            out = []
            for part in output:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    part = {**part, "text": self.unread_output(part["text"], counts)}
                out.append(part)
            return out
        return output

    def add(self, message: dict[str, Any], at: datetime, weight: int, parts: int) -> None:
        self.messages.append(message)
        self.times.append(at)
        self.weight += weight
        self.parts += parts

    def fits(self, weight: int, parts: int) -> bool:
        """Whether a message of this weight and number of parts may join the batch (always, when it is empty)."""
        return not self.messages or (self.weight + weight <= BATCH_BYTES and self.parts + parts <= BATCH_PARTS)

    def take(self, counts: ImportCounts) -> Transcript | None:
        """The batch so far (None when it is empty or no line has named the session yet), and a new one begun."""
        if not self.messages:
            return None
        if self.ident is None:
            if not self.session_id:
                if self.weight < HOLD_BYTES:
                    return None  # kept until a line names the session
                counts.skipped_lines += len(self.messages)  # a file whose lines name no session is not imported
                self._begin()
                return None
            base = safe_name(str(self.session_id))
            session = f"{base}-{_h(str(self.agent_id), 8)}" if self.agent_id else base
            # A transcript from a folder other than the harness's own names its project by its cwd's last folder,
            # unwalked, unless the cwd is inside the person's home directory: that cwd may be anyone's, and the walk
            # up to its .git stats every folder it names (a network mount's, an automounter's: an outside attack).
            cwd = str(self.cwd) if self.cwd else ""
            walk = self.walk or _in_home_directory(cwd)
            project = (project_from_cwd(cwd) if walk else project_slug(Path(cwd).name)) if cwd else None
            self.ident = (session, base, project)
        headless = _headless(self.entrypoint)
        t = Transcript(
            self.path,
            *self.ident,
            self.messages,
            self.times,
            self.times[0],
            wire=self.wire,
            untyped=HEADLESS_CLAUDE_CODE if headless else self.untyped,
            delegated=self.delegated,
            printed=self.printed,
            found=dict(self.found),
        )
        self._begin()
        return t


def _in_home_directory(cwd: str) -> bool:
    """Whether ``cwd`` (absolute, its ``..`` read as written) lies inside the person's home directory."""
    try:
        home = os.path.normpath(str(Path.home()))
    except (RuntimeError, KeyError):  # no home directory known
        return False
    return os.path.isabs(cwd) and home != "/" and os.path.normpath(cwd).startswith(home + os.sep)


def read_transcript(
    path: Path,
    since: datetime | None,
    counts: ImportCounts,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    walk: bool = True,
) -> Iterator[Transcript]:
    """The conversation one file holds, in batches (none when it holds none); ``walk``: a cwd's project is its
    repository's (bead.conversation.project_from_cwd), else its last folder's."""
    b = _Batches(path, "anthropic", walk)
    # Claude Code writes a sub-agent's lines to `<session>/subagents/agent-<id>.jsonl`: the folder says whose they
    # are, whether or not each line carries `isSidechain` (a file without it was read as the parent's, typed).
    subagent_file = path.parent.name == "subagents"
    last_id: str | None = None
    last_weight = 0  # of the last message (an answer written one block per line grows)
    first_line = True  # of the file's user and assistant lines
    for d, weight in _lines(path, max_line_bytes, counts):
        if d is None:
            counts.skipped_lines += 1
            continue
        kind = d.get("type")
        msg = d.get("message")
        if (
            kind not in ("user", "assistant")
            or not isinstance(msg, dict)
            or d.get("isMeta")
            or d.get("isCompactSummary")
            or d.get("isApiErrorMessage")
        ):
            counts.skipped_lines += 1
            continue
        # Claude Code says who sent a user line: `turnOrigin` "human" where the person typed it, "sdk", "scheduled"
        # (a cron or /loop prompt the model or a repository's scheduled_tasks.json set), "task_notification" where
        # not; older versions an `origin` object of a kind. A line that says another is read as a sub-agent's prompt
        # is: never the person's word (an outside attack: a scheduled prompt's "remember" was imported as typed).
        origin = d.get("origin")
        not_persons = kind == "user" and (
            (isinstance(d.get("turnOrigin"), str) and d["turnOrigin"] != "human")
            or (isinstance(origin, dict) and isinstance(origin.get("kind"), str) and origin["kind"] != "human")
        )
        b.session_id = b.session_id or d.get("sessionId")
        # A file whose first line is a sub-agent's is that sub-agent's; a sub-agent's line further on, inside its
        # parent's file, names no session for the file (it moved the whole parent, the person's turns pasted, to the
        # sub-agent's: an outside attack), and is read as the sub-agent's where it stands (below).
        sidechain_file = subagent_file or (first_line and bool(d.get("isSidechain")))
        first_line = False
        b.agent_id = b.agent_id or (d.get("agentId") if sidechain_file else None)
        if subagent_file and not b.agent_id:
            b.agent_id = path.stem.removeprefix("agent-")
        b.cwd = b.cwd or d.get("cwd")
        at = _time(d.get("timestamp"))
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
        old = since is not None and at is not None and at < since
        if at is None or old:
            counts.skipped_old += old
            counts.skipped_lines += not old
            if old:
                last_id = None
                for blk in blocks:
                    if isinstance(blk, dict) and blk.get("type") == "tool_use":
                        b.called(blk.get("id"), blk.get("input"), read=False)
                b.saw_before(blocks)
            continue
        b.seed()
        if kind == "assistant":
            for blk in blocks:
                if isinstance(blk, dict) and blk.get("type") == "tool_use":
                    b.called(blk.get("id"), None, read=True)
        elif any(isinstance(blk, dict) and blk.get("type") == "tool_result" for blk in blocks):
            blocks = [
                {**blk, "content": b.unread_output(blk.get("content"), counts)}
                if isinstance(blk, dict) and blk.get("type") == "tool_result" and b.unread(blk.get("tool_use_id"))
                else blk
                for blk in blocks
            ]
        if isinstance(ep := d.get("entrypoint"), str):
            if b.messages and _headless(ep) != _headless(b.entrypoint) and (t := b.take(counts)) is not None:
                yield t
            b.entrypoint = ep
        mid = msg.get("id") if kind == "assistant" else None
        if (
            mid
            and mid == last_id
            and b.messages
            and b.messages[-1]["role"] == "assistant"
            and last_weight + weight <= 2 * max_line_bytes
            and len(b.messages[-1]["content"]) + len(blocks) <= MAX_MESSAGE_PARTS
        ):
            # One API answer, written one content block per line (past the line limit or the parser's limit on
            # parts, it goes on as a message of its own).
            b.messages[-1]["content"].extend(blocks)
            b.weight += weight
            b.parts += len(blocks)
            last_weight += weight
            continue
        last_id = mid
        # A message of more blocks than the parser takes in one becomes several.
        for i in range(0, max(len(blocks), 1), MAX_MESSAGE_PARTS):
            part = blocks[i : i + MAX_MESSAGE_PARTS]
            share = weight * len(part) // len(blocks) if blocks else weight
            if not b.fits(share, len(part)) and (t := b.take(counts)) is not None:
                yield t
            # A sub-agent's line inside its parent's file (older Claude Code wrote them there, marked only
            # isSidechain): the main model wrote its prompt, never the person. So too a line Claude Code says no
            # person sent (below).
            mark = {SIDECHAIN: True} if d.get("isSidechain") or not_persons else {}
            b.add({"role": kind, "content": part, **mark}, at, share, len(part))
            last_weight = share
    if (t := b.take(counts)) is not None:
        yield t


_SPACE = re.compile(r"\s+")
_WINDOW = 1 << 20


def _key(role: str, source: str, text: str) -> tuple[str, str, str]:
    """What makes two turns the same: role, source and a digest of the text's words (how they are spaced aside).

    The digest is of ``" ".join(text.split())``, computed a window at a time: no list of the words and no second
    whole copy of a long text (a 400 MB line's words once took gigabytes). A harness's notice is the same turn
    whichever source an earlier bead gave it (one that read "[Request interrupted by user]" as typed)."""
    if source == "typed" and len(text) < 64 and text.strip() in HARNESS_NOTICES:
        source = "pasted"
    h = hashlib.blake2b(digest_size=20)
    started = owed = False
    for a in range(0, len(text), _WINDOW):
        spaced = _SPACE.sub(" ", text[a : a + _WINDOW])
        words = spaced.strip(" ")
        if not words:
            owed = owed or bool(spaced)
            continue
        if started and (owed or spaced[0] == " "):
            h.update(b" ")
        h.update(words.encode("utf-8", "surrogatepass"))
        started, owed = True, spaced[-1] == " "
    return role, source, h.hexdigest()


# How the caller reads a transcript's request items in its wire format (``Transcript.wire``): the typed
# conversation and, for each message, the request item it starts at. The entry point passes
# ``bead.wire.formats.read_items`` (the proxy's own parsers); core imports no wire format.
Parse = Callable[[str, list[dict[str, Any]]], tuple[Conversation, list[int]]]


def _conversation(t: Transcript, parse: Parse) -> tuple[Conversation, list[datetime]]:
    """The typed conversation of a transcript and each message's time."""
    conv, first = parse(t.wire, t.messages)
    if t.session != t.base_session or t.delegated:
        conv = conv.delegated()  # a subagent's: the main model wrote its prompt, as the proxy reads it
    elif t.wire == "anthropic" and any(m.get(SIDECHAIN) for m in t.messages):
        conv = conv.delegated(only={i for i, m in enumerate(t.messages) if m.get(SIDECHAIN)})
    if t.untyped:
        conv = conv.marked_untyped(t.untyped)  # as the proxy reads a headless run's requests
    return conv, [t.times[i] for i in first] if t.wire != "anthropic" else t.times


@dataclass
class FileState:
    """What the batches of one file share: the turns the session's raw file held before, and how many
    conversation messages the batches before this one had (a turn's ``message`` counts from the file's first)."""

    present: Counter[tuple[str, str, str]]
    messages: int = 0
    # Turns an import wrote that a forget or a seal rewrote since (their text is gone, so no key finds them): (role,
    # source, time, message), each as often as it is there. A turn of the transcript in such a place is the one
    # forgotten: never written again. The message number counts the messages a run reads, so a run that reads
    # other lines (another --since, a long line now read) numbers them otherwise and finds none of these places.
    gone: Counter[tuple[str, str, str, object]] = field(default_factory=Counter)
    # The same for turns a proxy captured (their places are numbered otherwise): a rewritten turn by the turn before
    # it (its ``_key``; None at the file's start), its role and source, with the time it was captured. A transcript's
    # turn not in the log whose turn before it is that one, of that role and source, written within NEAR_S of it,
    # is the one forgotten or sealed: never written again.
    gone_after: dict[tuple[object, str, str], list[datetime]] = field(default_factory=dict)
    last: object = None  # the ``_key`` of the transcript's turn before the next one (across the file's batches)
    # The batch before ended with an answer calling a command that prints a secret (capture.prints_at_end): the tool
    # results opening the next batch are its output.
    prints: bool = False
    # The values the file's printed secrets held so far (capture.request_turns' ``known``): a later batch's answer
    # that says one again is redacted too. In memory only, for this import.
    known: list[str] = field(default_factory=list)
    # The values the secret scan found in the file's turns so far (value to rule): redacted wherever a later turn says
    # one again (bead.capture.secrets.redact_messages). Kept in memory only.
    found: dict[str, str] = field(default_factory=dict)


GONE = "gone"  # the turn before was one a forget or a seal rewrote (FileState.gone_after)
NEAR_S = 600  # how far a proxy's capture of a turn and the transcript's time of it may lie apart (FileState.gone_after)


def present_turns(mem: Memory, session: str) -> FileState:
    """The turns the session's raw file holds, as ``_key``s, each as often as it is there, and the places of those
    a forget or a seal rewrote."""
    state = FileState(Counter())
    path = mem.raw.find(session)
    if path is not None:
        before: object = None
        for old in mem.raw.read(path):
            source = str(old.flags.get("source", ""))
            key = _key(old.role, source, old.text)
            state.present[key] += 1
            rewritten = old.flags.get("forgotten") is True or old.flags.get("redacted") is True
            if rewritten and old.flags.get("imported"):
                state.gone[(old.role, source, old.at, old.flags.get("message"))] += 1
            elif rewritten and (at := _time(old.at)) is not None:
                state.gone_after.setdefault((before, old.role, source), []).append(at)
            # A rewritten turn's text is gone: the one after it is known by following a rewritten turn (GONE), as
            # the transcript's turn after a forgotten one is (import_transcript).
            before = GONE if rewritten else key
    return state


def import_transcript(
    mem: Memory,
    t: Transcript,
    counts: ImportCounts,
    parse: Parse,
    state: FileState | None = None,
    epoch: str | None = None,
    own: bool = True,
) -> int:
    """Append the transcript's turns that the session's raw file does not hold yet; how many were added.

    The batches of one file share ``state`` (made from the raw file at the first when not given), so a text the
    file has twice is written twice. The batch's messages are released once its conversation is built."""
    if state is None:
        state = present_turns(mem, t.session)
    try:
        conv, times = _conversation(t, parse)
    except (Unreadable, RecursionError, TypeError, ValueError, AttributeError, KeyError):
        # More parts than the parser takes (the batches are cut so that this never happens), a message nested past
        # what it reads (a tool input of hundreds of levels), or a shape the parser does not expect (a field of
        # another type): its lines are skipped, the rest goes on.
        counts.skipped_lines += len(t.messages)
        t.messages.clear()
        return 0
    t.messages.clear()
    ident = Identity(session=t.session, base_session=t.base_session, thread="", project=t.project)
    remember_values(state.known, t.printed)
    for value, rule in t.found.items():
        keep_found(state.found, value, rule)
    note_typed(conv.messages, state.found)  # what a tool typed into a password field, which an answer may repeat
    turns = request_turns(conv, ident, 0, state.prints, state.known)
    state.prints = prints_at_end(conv.messages, state.prints)
    offset, state.messages = state.messages, state.messages + len(conv.messages)
    del conv
    items = []
    # as the raw log scans them: a message's runs together, a value found redacted wherever the session says it again
    groups = by_message([(t.role, t.text, None, None, t.flags) for t in turns])
    redacted = redact_messages([[i[1] for i in group] for group in groups], state.found)
    for turn, (clean, found) in zip(turns, redacted, strict=True):
        # as the raw log stores it (the home's proxy token taken out too): what a re-import compares
        clean = without_token(mem.home, clean)[0]
        key = _key(turn.role, str(turn.flags.get("source", "")), clean)
        index = int(turn.flags.get("message", 0))
        at = times[index]
        place = (turn.role, str(turn.flags.get("source", "")), iso(at) if at is not None else "", offset + index)
        after = (state.last, turn.role, str(turn.flags.get("source", "")))
        state.last = key
        near = [
            i for i, g in enumerate(state.gone_after.get(after, ())) if at is not None and abs((g - at).total_seconds()) <= NEAR_S
        ]
        if state.present[key] > 0 or state.gone[place] > 0 or near:
            if state.present[key] > 0:
                state.present[key] -= 1
            elif state.gone[place] > 0:
                state.gone[place] -= 1
                state.last = GONE
            else:
                del state.gone_after[after][near[0]]
                state.last = GONE
            counts.turns_present += 1
            continue
        counts.redacted += bool(found)
        # Every imported turn was said before: one that holds a forgotten value stays forgotten (RawLog.append_many).
        flags = {**turn.flags, "message": offset + index, "imported": IMPORTED[t.wire], REPLAYED: True}
        if not own:  # a folder other than the harness's own: its typed words may be anyone's
            flags[UNVERIFIED] = True
        if found:
            flags["redacted"] = sorted(set(found))
        # the text as scanned with its message's other runs: the raw log may be given this run alone (the others
        # were imported before)
        items.append((turn.role, clean, times[index], None, flags))
    del turns
    if items:
        mem.append_turns(t.session, items, scanned=True, epoch=epoch)
    counts.turns_added += len(items)
    counts.unverified += 0 if own else len(items)
    return len(items)


Reader = Callable[[Path, datetime | None, ImportCounts, int, bool], Iterator[Transcript]]


def import_claude_code(
    mem: Memory,
    parse: Parse,
    root: Path | None = None,
    since: datetime | None = None,
    project: str | None = None,
    progress: Callable[[Path], None] | None = None,
) -> ImportCounts:
    """Import every transcript under ``root`` (default: Claude Code's folder); ``progress`` is told each file."""
    top = root or default_root()
    return _import(mem, parse, transcript_files(top), read_transcript, since, project, progress, top, default_root())


def _import(
    mem: Memory,
    parse: Parse,
    files: list[Path],
    read: Reader,
    since: datetime | None,
    project: str | None,
    progress: Callable[[Path], None] | None,
    root: Path | None = None,
    harness_root: Path | None = None,
) -> ImportCounts:
    """Import ``files`` (listed below ``root``: each is read only if it is still there when opened), one import at a
    time in a home: two at once each read the turns a session held before either wrote, and wrote them all (a
    session doubled, which no later run takes away). A second waits for the first (and says so after a second)."""
    with flocked(mem.home.import_lock, root=mem.home.root):
        counts = ImportCounts()
        want = project_slug(project) if project else None
        limit = mem.config.import_.max_line_bytes
        sessions: set[str] = set()
        for path in files:
            counts.files += 1
            state: FileState | None = None
            # Before the file is read: a forget or seal that begins while it is (its value in the transcript, which is
            # by design) cannot see these turns, which go to the raw log as [forgotten] (RawLog.append_many).
            epoch = mem.raw.forget_epoch()
            try:
                if root is not None and not _within(path, root):
                    raise NotATranscript(errno.EXDEV, "outside the folder read", str(path))
                # The harness's own folder (a file inside it, however the folder was named) holds the person's
                # history; a transcript from anywhere else may be anyone's.
                own = harness_root is None or _inside(path, harness_root)
                for t in read(path, since, counts, limit, own):
                    if want is not None and t.project != want:
                        counts.skipped_project += 1
                        break
                    state = state or present_turns(mem, t.session)
                    import_transcript(mem, t, counts, parse, state, epoch, own)
                    sessions.add(t.session)
            except (FileNotFoundError, IsADirectoryError, NotATranscript, PermissionError) as exc:
                if exc.filename is not None and Path(exc.filename) != path:
                    raise  # not the transcript: bead's own store, whose error must be seen
                # A transcript the harness removed meanwhile (Claude Code deletes old ones): that file is skipped and
                # said, the others are imported.
                counts.skipped_files += 1
                log.warning("import: skipped %s: %s", path, exc.strerror or type(exc).__name__)
            if progress is not None:
                progress(path)
        counts.sessions = len(sessions)
        return counts


# ----- Codex CLI ----------------------------------------------------------------------------------
#
# Codex keeps each session as ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: a
# ``session_meta`` line (the session's id and working directory), then ``response_item`` lines whose
# payload is a Responses API input item (messages of the developer, the user and the assistant,
# reasoning, function calls and their outputs), among events and settings that are bookkeeping.


def codex_root() -> Path:
    """Where Codex CLI keeps its sessions (``CODEX_HOME``, default ``~/.codex``)."""
    return _harness_root("CODEX_HOME", ".codex", "sessions")


def codex_files(root: Path) -> list[Path]:
    return _session_files(
        root,
        "rollout-*.jsonl",
        "Codex CLI sessions",
        "give the folder with --from (Codex keeps them in ~/.codex/sessions, or $CODEX_HOME/sessions)",
    )


def _output(item: dict[str, Any]) -> bool:
    """Whether the Responses parser puts this item in a run of tool outputs (else a run of the assistant's items,
    or a message of its own)."""
    kind = item.get("type", "message" if "role" in item else "")
    return isinstance(kind, str) and (kind.endswith("_call_output") or kind == "tool_search_output")


BEFORE_CHARS = 4 << 20  # of the lines before --since, the text kept to read for found values (the newest)


def _strings(data: object) -> list[str]:
    """The strings of a line's content (text blocks, tool inputs and outputs), no key's, at most 32 levels down; a
    string of JSON (a function call's arguments) as written."""
    out: list[str] = []
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if len(item) >= 6:
                out.append(item)
        elif depth < 32 and isinstance(item, dict):
            stack += [(v, depth + 1) for k, v in item.items() if k not in ("type", "id", "signature", "call_id")]
        elif depth < 32 and isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    out.reverse()
    return out


def _call(item: dict[str, Any]) -> bool:
    """Whether a Responses item is a tool call (``function_call``, ``custom_tool_call``, ``local_shell_call``, ...)."""
    kind = item.get("type")
    return isinstance(kind, str) and kind.endswith("_call")


def _arguments(item: dict[str, Any]) -> object:
    """A tool call item's input, as ``command_text`` reads it: a function's JSON arguments parsed (else as written),
    a custom tool's input, a local shell call's action."""
    args = item.get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args[:COMMAND_JSON_CHARS])
        except (ValueError, RecursionError):
            return args
    return item.get("input", item.get("action"))


COMMAND_JSON_CHARS = 65536  # of a skipped call's arguments read for its command


def _own_message(item: dict[str, Any]) -> bool:
    """Whether the parser always starts a new message at this item (a user, system or developer message)."""
    return item.get("type", "message" if "role" in item else "") == "message" and item.get("role") != "assistant"


def _codex_subagent(meta: dict[str, Any]) -> bool:
    """Whether a rollout's ``session_meta`` is a sub-agent's thread: ``source: {"subagent": ...}``,
    ``thread_source: "subagent"`` or a ``parent_thread_id``."""
    source = meta.get("source")
    return (
        (isinstance(source, dict) and "subagent" in source)
        or meta.get("thread_source") == "subagent"
        or bool(meta.get("parent_thread_id"))
    )


def read_codex(
    path: Path,
    since: datetime | None,
    counts: ImportCounts,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    walk: bool = True,
) -> Iterator[Transcript]:
    """The conversation one Codex rollout file holds, in batches (none when it holds none).

    A batch ends only where the parser starts a new message anyway (a user message, or tool outputs after the
    assistant's items and back), so the runs it merges stay whole (one of hundreds of items is cut)."""
    b = _Batches(path, "responses", walk)
    run = run_parts = 0  # items and parts of the run the parser would merge
    unattended = False  # the file's session is a codex exec run's (its session_meta says so)
    for d, weight in _lines(path, max_line_bytes, counts):
        payload = d.get("payload") if d is not None else None
        if d is None or not isinstance(payload, dict):
            counts.skipped_lines += 1
            continue
        kind = d.get("type")
        if kind == "event_msg" and payload.get("type") == "task_started":
            # Each turn says what started it: `codex exec resume` appends exec turns to an interactive session's
            # file, whose session_meta says nothing of them (an outside attack: an issue body piped in was read as
            # typed). A batch ends where that changes, as a Claude Code file's does at its entry point.
            by = payload.get("turn_attribution")
            trigger = by.get("turn_trigger") if isinstance(by, dict) else None
            untyped = CODEX_EXEC if unattended or trigger == "exec" else ""
            if untyped != b.untyped:
                if b.messages and (t := b.take(counts)) is not None:
                    yield t
                    run = run_parts = 0
                b.untyped = untyped
            counts.skipped_lines += 1
            continue
        if kind == "session_meta":
            b.session_id = b.session_id or payload.get("session_id") or payload.get("parent_thread_id") or payload.get("id")
            b.cwd = b.cwd or payload.get("cwd")
            if _codex_subagent(payload):
                # A sub-agent's thread: the main model wrote its prompt, never the person. A session of its own
                # under the parent's, read as delegated, as the proxy reads a thread other than its session's.
                b.agent_id = b.agent_id or payload.get("id") or "subagent"
            if codex_unattended(payload.get("originator")) or payload.get("source") == "exec":
                unattended = True
                b.untyped = CODEX_EXEC  # as the proxy reads a codex exec run's requests (conversation.untyped)
            if payload.get("source") == "mcp":
                # `codex mcp-server`: its MCP client, another agent, wrote each prompt (the `codex` tool's argument).
                b.delegated = True
            continue
        if kind == "turn_context":
            b.cwd = b.cwd or payload.get("cwd")
            continue
        if kind != "response_item":
            counts.skipped_lines += 1
            continue
        at = _time(d.get("timestamp"))
        if at is None:
            counts.skipped_lines += 1
            continue
        item = {k: v for k, v in payload.items() if k != "internal_chat_message_metadata_passthrough"}
        if since is not None and at < since:
            counts.skipped_old += 1
            if _call(item):
                b.called(item.get("call_id"), _arguments(item), read=False)
                b.called(item.get("id"), _arguments(item), read=False)
            b.saw_before(item)
            continue
        b.seed()
        parts = max(1, sum(len(v) for k in ("content", "output") if isinstance(v := item.get(k), list)))
        if parts > MAX_MESSAGE_PARTS:
            counts.skipped_lines += 1  # the parser takes no message of more parts
            continue
        if _call(item):
            b.called(item.get("call_id"), None, read=True)
            b.called(item.get("id"), None, read=True)  # a local shell call's output may name it by its id
        elif _output(item) and b.unread(item.get("call_id")):
            item["output"] = b.unread_output(item.get("output"), counts)
        prev = b.messages[-1] if b.messages else None
        new_run = prev is None or _own_message(item) or _own_message(prev) or _output(item) != _output(prev)
        if new_run:
            run = run_parts = 0
        if (
            (new_run and not b.fits(weight, parts))
            or run >= RUN_ITEMS
            or run_parts + parts > MAX_MESSAGE_PARTS
            or b.weight + weight > HOLD_BYTES
        ):
            if (t := b.take(counts)) is not None:
                yield t
                run = run_parts = 0
        run += 1
        run_parts += parts
        b.add(item, at, weight, parts)
    if (t := b.take(counts)) is not None:
        yield t


def import_codex(
    mem: Memory,
    parse: Parse,
    root: Path | None = None,
    since: datetime | None = None,
    project: str | None = None,
    progress: Callable[[Path], None] | None = None,
) -> ImportCounts:
    """Import every Codex CLI session under ``root`` (default: Codex's folder)."""
    top = root or codex_root()
    return _import(mem, parse, codex_files(top), read_codex, since, project, progress, top, codex_root())
