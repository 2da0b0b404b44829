"""The raw turn log: one append-only Markdown file per session.

``store/raw/YYYY/MM/DD/<session>.md`` (the date of the session's first turn).
Each turn is a marker line, then its text::

    <!-- bead:turn {"session": "3f2a", "n": 14, "role": "user", "at": "2026-11-05T09:12:00Z"} -->
    the text of the turn

A text line that itself starts like a marker gets one more leading backslash
on disk, so a pasted log can never forge turns. Appends and redactions hold
``flock`` on ``store/raw/.lock``; the secret scan runs before any byte is
written.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import files as safe
from ..capture.secrets import redact_messages
from ..errors import BeadError
from ..paths import Home
from ..textform import LONE_SURROGATE, fold
from ..token import without_token
from .audit import iso
from .locks import flocked

MARKER_PREFIX = "<!-- bead:turn "
_MARKER = re.compile(r"^<!-- bead:turn (\{.*\}) -->$")
MAX_TURN = 2**63 - 1  # SQLite's largest integer


def turn_number(value: object) -> int:
    """A marker's ``n`` as a turn number: a whole number from 1 to MAX_TURN (not a bool, a float or a string); else
    ValueError, and the marker's line is text (a hand-edited ``1e300`` crashed the indexer, ``true`` was turn 1)."""
    if type(value) is not int or not 1 <= value <= MAX_TURN:
        raise ValueError("not a turn number")
    return value


_FORGED = re.compile(r"^(\\*)(<!-- bead:turn )", re.M)
_UNESCAPE = re.compile(r"^\\(\\*<!-- bead:turn )", re.M)
_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # fullmatch: `$` allows a final newline
FORGOTTEN = "[forgotten]"
UNSCREENED = "unscreened"  # the flag of a turn captured across a forget, written as FORGOTTEN (RawLog.append_many)
# A turn's own forget epoch (RawLog.append_many), where it was said before the request that brings it (the answer the
# proxy could not read as it ended, carried by the next request's history); popped, never written.
SAID_AT_EPOCH = "said_at_epoch"
# A turn the harness replays rather than says now (a conversation's earlier messages bead sees for the first time: a
# resumed session, a rewind; every turn `bead import` reads): one that holds a forgotten value (RawLog.forgotten_in)
# is written as FORGOTTEN, flagged ``forgotten`` as a forget's rewrite is. Popped, never written.
REPLAYED = "replayed"
# A turn `bead import` read from a folder that is not the harness's own (`--from`): a transcript that may have come
# from anywhere, whose typed words are not taken as the person's (the dream's facts from them wait for review).
UNVERIFIED = "unverified"


@dataclass
class Turn:
    session: str
    n: int
    role: str
    at: str
    text: str
    ref: str | None = None
    path: Path | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    offset: int = -1  # where the text starts in its file (bytes; -1: not known)
    size: int = 0  # its length on disk (bytes, escaped as written)
    head: int = -1  # where its marker line starts in its file (bytes; -1: not known)

    @property
    def anchor(self) -> str:
        """The form fact ``sources`` use: ``raw/YYYY/MM/DD/<session>.md#turn-N``."""
        rel = "/".join(self.path.parts[-5:]) if self.path else f"{self.session}.md"
        return f"{rel}#turn-{self.n}"

    def marker(self) -> str:
        meta = {"session": self.session, "n": self.n, "role": self.role, "at": self.at}
        if self.ref is not None:
            meta["ref"] = self.ref
        meta.update(self.flags)
        # A lone surrogate (a hand edit's "\\ud800", read back as such) written as its JSON escape: UTF-8 cannot
        # write it as itself, and a forget's rewrite of the file stopped at it (an outside review).
        return MARKER_PREFIX + LONE_SURROGATE.sub(_json_escape, json.dumps(meta, ensure_ascii=False)) + " -->"


_ROLES = frozenset({"user", "assistant", "system", "tool"})
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # audit.iso's form, the one bead writes
# The flags bead itself writes on a turn's marker (bead.core.capture, bead.wire, bead.core.history, RawLog.append_many
# and a forget's rewrite): bead's own account of where the turn came from, which a forget leaves as it is. Forgetting
# a value that one of them holds ("typed", a project's name, a turn's number) took it from every turn of the files
# that held the value (an outside review): an imported turn that lost `imported` and `unverified` read as the
# person's typed words. tests/test_forget.py checks that every flag a captured and an imported turn carry is here.
OWN_FLAGS = frozenset(
    {
        "message",
        "source",
        "near_paste",
        "project",
        "partial",
        "error",
        "batch",
        "redacted",
        "forgotten",
        "owner",
        "imported",
        UNSCREENED,
        UNVERIFIED,
    }
)


def marker_lines(text: str) -> dict[int, list[str]]:
    """Each turn's marker line as a raw file's ``text`` has it, by the turn's number (a hand edit may have given
    two turns one number)."""
    out: dict[int, list[str]] = {}
    for line in text.split("\n"):
        if line.startswith(MARKER_PREFIX) and (t := _opened(line)) is not None:
            out.setdefault(t.n, []).append(line)
    return out


def own_marker(t: Turn) -> str:
    """The marker line of ``t`` with bead's own fields alone: its session (its file's), number, a role and time of
    the forms bead writes, and bead's flags (OWN_FLAGS). What a forget leaves of a marker, so what it looks past."""
    session = t.path.stem if t.path is not None else t.session
    kept = Turn(session, t.n, t.role if t.role in _ROLES else "", t.at if _ISO_TIME.fullmatch(t.at) else "", "")
    kept.flags = {k: v for k, v in t.flags.items() if k in OWN_FLAGS}
    return kept.marker()


def marker_holds(lines: list[str], t: Turn, held: Callable[[str], bool]) -> bool:
    """Whether ``t``'s marker ``lines`` as its file has them (``marker_lines``) hold what ``held`` finds, where bead's
    own fields (``own_marker``) do not: a field a hand edit or another tool put there (an extra flag, a ref, a
    duplicate key the parser reads past, an object's key), which the marker keeps when the turn's text goes."""
    if not any(held(line) for line in lines):
        return False
    # Where bead's own fields hold it too (a batch id, a project's name), a field of another's may as well: each is
    # looked at (a review: a note beside a batch id that held the value stayed).
    return not held(own_marker(t)) or any(held(s) for s in _foreign_strings(t))


def _foreign_strings(t: Turn) -> Iterator[str]:
    """The strings of ``t``'s marker that are not bead's own (``_scrub_marker`` drops those that hold a value)."""
    for name in t.flags:
        if name not in OWN_FLAGS:
            yield str(name)
            yield from _leaves(t.flags[name])
    if t.ref is not None:
        yield t.ref
    if t.role and t.role not in _ROLES:
        yield t.role
    if t.at and not _ISO_TIME.fullmatch(t.at):
        yield t.at
    if t.path is not None and t.session != t.path.stem:
        yield t.session


def _leaves(value: Any) -> Iterator[str]:
    """Every key and scalar of a decoded JSON value, as text (a walk with a stack of its own)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, inner in v.items():
                yield str(k)
                stack.append(inner)
        elif isinstance(v, list):
            stack.extend(v)
        elif v is not None:
            yield str(v)


def _scrub_marker(t: Turn, held: Callable[[str], bool]) -> bool:
    """Drop from ``t``'s marker what ``held`` finds a value in, bead's own fields apart (``own_marker``): a flag not
    bead's whose name, keys or values hold it; a ref; a role or time not of bead's forms (emptied: every marker has
    them); a session other than its file's (its file's). Whether any went."""
    gone = False
    for name in [k for k in t.flags if k not in OWN_FLAGS]:
        if held(str(name)) or any(held(s) for s in _leaves(t.flags[name])):
            del t.flags[name]
            gone = True
    if t.ref is not None and held(t.ref):
        t.ref, gone = None, True
    if t.role and t.role not in _ROLES and held(t.role):
        t.role, gone = "", True
    if t.at and not _ISO_TIME.fullmatch(t.at) and held(t.at):
        t.at, gone = "", True
    if t.path is not None and t.session != t.path.stem and held(t.session):
        t.session, gone = t.path.stem, True
    return gone


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def escape(text: str) -> str:
    return _FORGED.sub(lambda m: "\\" + m.group(1) + m.group(2), text)


def unescape(text: str) -> str:
    return _UNESCAPE.sub(r"\1", text)


def render(turns: Iterable[Turn]) -> str:
    return "".join(f"{t.marker()}\n{escape(t.text)}\n" for t in turns)


def spliced(data: bytes, turns: list[Turn], changed: list[Turn]) -> bytes:
    """A raw file's bytes ``data``, whose turns ``parse_bytes`` read as ``turns``, with the turns ``changed`` written
    again (``render``) and every other turn's bytes kept as they were: its text's invalid UTF-8 and a hand edit's
    marker line are not the forget's to change (a rewrite from the parsed turns wrote U+FFFD for them). The text
    before the first marker stays too: a forget drops it where it holds the value (``drop_preamble``;
    a review found a person's own note there gone after a forget of something else)."""
    again = {id(t) for t in changed}
    out: list[bytes] = [data[: turns[0].head]] if turns and turns[0].head > 0 else []
    for i, t in enumerate(turns):
        if id(t) in again or t.head < 0:
            out.append(render([t]).encode("utf-8"))
        else:
            out.append(data[t.head : turns[i + 1].head if i + 1 < len(turns) else len(data)])
    return b"".join(out)


def parse(text: str, path: Path | None = None) -> list[Turn]:
    """Every turn in a raw file's text; text before the first marker is ignored."""
    turns: list[Turn] = []
    lines: list[str] = []

    def close(last: bool = False) -> None:
        if turns:
            body = "\n".join(lines)
            # The line break bead writes after a turn's text is the one before the next marker, which the split takes;
            # only at the end of the file is it left on the text. A text of its own ending in a line break keeps it
            # (it was dropped, and a forget's rewrite of the file took it from every earlier turn).
            turns[-1].text = unescape(body[:-1] if last and body.endswith("\n") else body)

    for line in text.split("\n"):
        t = _opened(line, path)
        if t is None:
            lines.append(line)
            continue
        close()
        lines = []
        turns.append(t)
    close(last=True)
    return turns


def _opened(line: str, path: Path | None = None) -> Turn | None:
    """The turn a marker line opens (its text still empty), or None where the line is text (no marker, or one
    whose JSON or turn number does not read: a hand edit's)."""
    if line.endswith("\r"):  # a file an editor saved with CRLF line ends: its markers are still markers
        line = line[:-1]
    m = _MARKER.match(line) if line.startswith(MARKER_PREFIX) else None
    if not m:
        return None
    try:
        meta = json.loads(m.group(1))
        n = turn_number(meta.pop("n"))
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
        return None
    return Turn(
        session=str(meta.pop("session", "")),
        n=n,
        role=str(meta.pop("role", "")),
        at=str(meta.pop("at", "")),
        text="",
        ref=_ref(meta.pop("ref", None)),
        path=path,
        flags=meta,
    )


def parse_bytes(data: bytes, path: Path | None = None) -> list[Turn]:
    """``parse`` over a file's bytes, with each turn's ``offset`` and ``size`` in the file.

    The index keeps those instead of the text, and reads a turn's text back
    from its file (``read_turn_text``): the files are the source of truth.
    """
    turns: list[Turn] = []
    prefix = MARKER_PREFIX.encode()
    pos = 0
    start = -1

    def close(end: int) -> None:
        if turns and start >= 0:
            size = max(end - start, 0)
            # The line break bead writes after the text (``render``), before the next marker or at the end of the
            # file; a text's own last line break is its own (``parse`` reads it so).
            if size and data[start + size - 1 : start + size] == b"\n":
                size -= 1
            turns[-1].offset, turns[-1].size = start, size
            turns[-1].text = unescape(data[start : start + size].decode("utf-8", "replace"))

    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl == -1 else nl
        t = _opened(data[pos:end].decode("utf-8", "replace"), path) if data.startswith(prefix, pos) else None
        if t is not None:
            close(pos)
            t.head = pos
            turns.append(t)
            start = min(end + 1, n)
        pos = end + 1
    close(n)
    return turns


def _ref(value: object) -> str | None:
    """A marker's ``ref`` as a turn's: a string or None. A hand-edited marker's number or object (``{"id": 1}``) is
    no ref: bound as one it crashed the index's insert, and so every reindex and forget of the home."""
    return value if isinstance(value, str) else None


def read_turn_text(data: bytes) -> str:
    """A turn's text from its bytes as they are on disk."""
    return unescape(data.decode("utf-8", "replace"))


MARKER_READ = 4096  # bytes before a turn's text that hold its marker line (a marker is one short JSON line)


def marker_flags(before: bytes, from_start: bool) -> dict[str, Any]:
    """The flags of the turn whose marker line ends ``before`` (the bytes just before the turn's text, its line
    break included; ``from_start``: they start the file): who produced it (``source``) and the like. Empty where
    that line is no marker (the file changed since it was indexed, or the line is longer than what was read)."""
    lines = before.split(b"\n")
    # The marker's own line break ends it, and the line must be whole: a line break before it, or the file's start.
    if len(lines) < 2 or lines[-1] or (len(lines) < 3 and not from_start):
        return {}
    t = _opened(lines[-2].decode("utf-8", "replace"))
    return t.flags if t is not None else {}


def check_session(session: str) -> str:
    if not isinstance(session, str) or not _SESSION.fullmatch(session):
        raise BeadError(
            f"session id {session!r} is not usable as a file name",
            "use letters, digits, '.', '_' and '-' (up to 128 characters)",
        )
    return session


# One turn to append: (role, text, at, ref[, flags]).
TurnItem = tuple[Any, ...]


class RawLog:
    def __init__(self, home: Home, clock: Callable[[], datetime], owner: str, forgotten_in: Callable[[str], bool] | None = None):
        self.home = home
        self.root = home.raw
        self.owner = owner
        # Whether a text says a value a forget took (bead.store.audit.Tombstones.contained); asked of REPLAYED turns.
        self.forgotten_in = forgotten_in
        self.lock_path = home.raw_lock
        self.clock = clock
        self._paths: dict[str, Path] = {}

    def find(self, session: str) -> Path | None:
        """The file of an existing session, wherever its first day put it."""
        check_session(session)
        cached = self._paths.get(session)
        if cached is not None and cached.exists():
            return cached
        # Folder by folder, never through a link (glob followed one planted under raw/ and listed what it led to).
        name = f"{session}.md"
        for year in sorted(_names(self.root, self.home.root)):
            for month in sorted(_names(self.root / year, self.home.root)):
                for day in sorted(_names(self.root / year / month, self.home.root)):
                    folder = self.root / year / month / day
                    if name in _names(folder, self.home.root):
                        p = folder / name
                        self._paths[session] = p
                        return p
        return None

    def _path_for(self, session: str, at: datetime) -> Path:
        existing = self.find(session)
        if existing is not None:
            return existing
        p = self.home.raw_file(session, at)
        self._paths[session] = p
        return p

    def append(
        self, session: str, role: str, text: str, at: datetime | None = None, ref: str | None = None, **flags: object
    ) -> Turn:
        return self.append_many(session, [(role, text, at, ref, flags)])[0]

    @property
    def epoch_path(self) -> Path:
        return self.root / ".forget-epoch"

    @property
    def forgetting_path(self) -> Path:
        return self.root / ".forget-running"

    def forget_epoch(self) -> str:
        """A random id each forget or seal writes as it begins and as it ends (``forgetting``); "" before any."""
        try:
            return safe.read_bytes(self.epoch_path, root=self.home.root)[:64].decode("ascii", "replace")
        except OSError:
            return ""

    def settled(self, epoch: str | None) -> bool:
        """Whether no forget or seal began since ``epoch`` was read (``forget_epoch``) and none runs now: what text
        that came at ``epoch`` brought may be written in clear. None (the epoch could not be read): yes."""
        if epoch is None:
            return True
        return self.forget_epoch() == epoch and not self.forget_running()

    def forget_running(self) -> bool:
        """Whether a forget or seal runs now (it holds ``forgetting``'s flock). Opened to read only: a raw folder
        bead may not write to (or a home no forget ever ran in) runs none."""
        try:
            fd = safe.open_file(self.forgetting_path, os.O_RDONLY, root=self.home.root)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The raw log's lock (appends and redactions hold it; a forget takes it as it begins)."""
        return flocked(self.lock_path, root=self.home.root)

    def _new_epoch(self) -> None:
        with self.locked():
            safe.atomic_write(self.epoch_path, uuid.uuid4().hex.encode(), root=self.home.root)

    @contextlib.contextmanager
    def forgetting(self) -> Iterator[None]:
        """Held by a forget or seal for its whole run: a new epoch as it begins (under the raw lock, so an append
        that checked ``settled`` before it is in the file before the forget looks) and as it ends, and its flock
        meanwhile (a crashed forget lets go of it). A capture of text that came before the end, appended after the
        beginning, is written as [forgotten] (``append_many``): it may hold what the forget took, where it could not
        look (an answer the model was still streaming)."""
        with flocked(self.forgetting_path, root=self.home.root):
            self._new_epoch()
            try:
                yield
            finally:
                self._new_epoch()

    def append_many(
        self,
        session: str,
        items: Iterable[TurnItem],
        scanned: bool = False,
        epoch: str | None = None,
        known: dict[str, str] | None = None,
    ) -> list[Turn]:
        """Append turns ``(role, text, at, ref[, flags])`` in order, under the raw lock. ``scanned``: their texts
        were redacted by the caller (``redact_messages`` over whole messages, as ``bead import`` must to know which
        turns the log holds): a redacted text is not scanned again, which could read a marker as a value.
        ``epoch``: ``forget_epoch()`` when the texts arrived (the proxy's request); unless ``settled`` (a forget or
        seal began since, or runs), each text is written as ``[forgotten]``: it may hold what that forget took (an
        answer the model streamed while it ran), which it could not see. ``known``: the values the secret scan found
        in the conversation before (value to rule), redacted wherever these turns say them again; those it finds
        here are added (``redact_messages``)."""
        check_session(session)
        items = list(items)
        if not items:
            return []
        first_at = items[0][2] or self.clock()
        # The scan runs before the lock: a large turn never holds up other writers. The turns of one message (its
        # runs: typed words, a paste, a tool's output) are scanned together too, and a value found in one is redacted
        # wherever another says it again (redact_messages).
        redacted: list[tuple[str, list[str]]]
        if scanned:
            redacted = [(item[1] or "", []) for item in items]
        else:
            redacted = redact_messages([[item[1] or "" for item in group] for group in by_message(items)], known)
        ready = []
        for item, (clean, found) in zip(items, redacted, strict=True):
            role, text, at, ref = item[:4]
            flags = dict(item[4]) if len(item) > 4 and item[4] else {}
            said_at = flags.pop(SAID_AT_EPOCH, None)
            if flags.pop(REPLAYED, False) and self.forgotten_in is not None and self.forgotten_in(clean):
                # Said before and forgotten since: the harness's history or a transcript brings it back, not the person.
                clean, found = FORGOTTEN, []
                flags["forgotten"] = True
            clean, had_token = without_token(self.home, clean)
            if had_token:
                found = [*found, "bead-token"]
            if found:
                flags.setdefault("redacted", sorted(set(found)))
            flags.setdefault("owner", self.owner)
            ready.append((role, clean, iso(at or self.clock()), ref, flags, said_at if isinstance(said_at, str) else None))
        with flocked(self.lock_path, root=self.home.root):
            whole = self.settled(epoch)
            said_ok = {said: self.settled(said) for said in {r[5] for r in ready if r[5] is not None}}
            # Flagged apart from what a forget rewrote: a forget of something else blanks it too, and an import of
            # the harness's transcript may bring it back (bead.core.history reads only a forget's flags). A turn said
            # before its request came (``SAID_AT_EPOCH``) is judged by the epoch it was said at.
            writing = [
                (role, clean, at_text, ref, flags)
                if whole and (said is None or said_ok[said])
                else (role, FORGOTTEN, at_text, ref, {**flags, UNSCREENED: True})
                for role, clean, at_text, ref, flags, said in ready
            ]
            path = self._path_for(session, first_at.astimezone(UTC))
            fd = safe.open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, root=self.home.root)
            try:
                n = _last_turn_number(fd)
                pos = os.fstat(fd).st_size
                turns, chunks = [], []
                if pos and os.pread(fd, 1, pos - 1) != b"\n":
                    # A file cut short (a full disk, a crash, a hand edit) ends inside a turn: a marker written
                    # right after it would be that turn's text, not a turn of its own (and its number given again).
                    chunks.append(b"\n")
                    pos += 1
                for role, clean, at_text, ref, flags in writing:
                    n += 1
                    t = Turn(session, n, role, at_text, clean, ref, path, flags)
                    head = (t.marker() + "\n").encode("utf-8")
                    body = escape(clean).encode("utf-8")
                    t.offset, t.size = pos + len(head), len(body)
                    pos += len(head) + len(body) + 1
                    chunks += [head, body, b"\n"]
                    turns.append(t)
                safe.write_all(fd, b"".join(chunks))  # a short write is written on (it was dropped)
            finally:
                os.close(fd)
        return turns

    def as_appended(self, turns: list[Turn]) -> bool:
        """Whether each of ``turns`` (as ``append_many`` gave them back) still stands in its file where and as it was
        written: no forget or seal rewrote the file since (it would have moved or changed them)."""
        by_path: dict[Path, list[Turn]] = {}
        for t in turns:
            if t.path is None or t.offset < 0:
                return False
            by_path.setdefault(t.path, []).append(t)
        for path, mine in by_path.items():
            try:
                fd = safe.open_file(path, os.O_RDONLY, root=self.home.root)
            except OSError:
                return False
            try:
                for t in mine:
                    want = escape(t.text).encode("utf-8")
                    if len(want) != t.size or os.pread(fd, t.size, t.offset) != want:
                        return False
            finally:
                os.close(fd)
        return True

    def read(self, path: Path) -> list[Turn]:
        return parse_bytes(safe.read_bytes(path, root=self.home.root), path)

    def read_seen(self, path: Path) -> tuple[list[Turn], tuple[int, int, str]]:
        """``read``, and what was read: (its size, the file's mtime, the sha256 of those bytes). The index records
        that, not the file as it is after the read: a turn appended meanwhile makes the file differ from it, so the
        next reconcile reads the file again (before, it matched, and the turn was never indexed)."""
        data, st = safe.read_with_stat(path, root=self.home.root)
        return parse_bytes(data, path), (len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest())

    def has_batch(self, session: str, batch: str) -> bool:
        """Whether a turn of ``session`` carries the batch id ``batch`` (its capture's append happened)."""
        path = self.find(session)
        if path is None or not batch:
            return False
        data = safe.read_bytes(path, root=self.home.root)
        # The id's bytes first (a session of 20,000 turns parses in most of a second): only a file that holds them
        # is parsed, to tell a marker's flag from text that quotes the id.
        if batch.encode() not in data:
            return False
        return any(t.flags.get("batch") == batch for t in parse_bytes(data, path))

    def files(self) -> Iterator[Path]:
        """The raw log's files; not one whose name is not UTF-8 (``odd_names``): bead never names one so, and the
        index cannot hold its path (it stopped `bead reindex` and a forget half way)."""
        for folder, _dirs, names in safe.walk(self.root, root=self.home.root):
            for name in names:
                if name.endswith(".md") and not name.startswith(".") and _utf8(str(folder / name)):
                    yield folder / name

    def odd_names(self) -> list[Path]:
        """Files of the raw log whose names are not UTF-8, which ``files`` leaves out (`bead status` names them)."""
        return [
            folder / name
            for folder, _dirs, names in safe.walk(self.root, root=self.home.root)
            for name in names
            if not _utf8(str(folder / name))
        ]

    def redact_turns(self, path: Path, numbers: set[int]) -> list[Turn]:
        """Replace the text of turns ``numbers`` with ``[forgotten]``; markers stay."""
        return self._rewrite(path, numbers, lambda text: FORGOTTEN, "forgotten")

    def drop_preamble(self, path: Path) -> bool:
        """Write the file again without the text before the first marker, under the raw log's lock; whether there was
        any."""
        with flocked(self.lock_path, root=self.home.root):
            data = safe.read_bytes(path, root=self.home.root)
            turns = parse_bytes(data, path)
            start = turns[0].head if turns else len(data)
            if start <= 0:
                return False
            safe.atomic_write(path, data[start:], root=self.home.root)
            return True

    def scrub_markers(self, path: Path, numbers: set[int], held: Callable[[str], bool]) -> list[Turn]:
        """Drop from the markers of turns ``numbers`` every field a string of which ``held`` finds a forgotten value
        in (``marker_strings``: a hand edit's extra field, a ref), under the raw log's lock; the turns changed. Their
        text is left as it is (a turn whose text holds the value is ``redact_turns``'s)."""
        with flocked(self.lock_path, root=self.home.root):
            data = safe.read_bytes(path, root=self.home.root)
            turns = parse_bytes(data, path)
            lines = marker_lines(data.decode("utf-8", "replace"))
            # Written again from its turns where a marker's line is not as bead writes it, too: a duplicate key, an
            # object's key or a ref that is not text hold the value where the parsed turn does not.
            changed = [t for t in turns if t.n in numbers and (_scrub_marker(t, held) or lines.get(t.n, []) != [t.marker()])]
            if changed:
                safe.atomic_write(path, spliced(data, turns, changed), root=self.home.root)
            return changed

    def redact_tokens(
        self, path: Path, numbers: set[int], pattern: Any, still: Callable[[str], bool] | None = None
    ) -> list[Turn]:
        """In turns ``numbers``, replace what ``pattern``'s first group finds (a forgotten value's codes and
        rare words, said in other words) with ``[forgotten]``, read in the text's normal form; markers stay. A
        turn that ``still`` holds one after (escaped: the caller reads it decoded) goes whole."""
        return self._rewrite(path, numbers, lambda text: _redact_tokens(text, pattern, still), "redacted")

    def _rewrite(self, path: Path, numbers: set[int], change: Callable[[str], str], flag: str) -> list[Turn]:
        """Apply ``change`` to the text of turns ``numbers`` (not already forgotten) under the raw log's lock,
        mark each changed turn with ``flag`` and write the file once; the turns changed."""
        with flocked(self.lock_path, root=self.home.root):
            data = safe.read_bytes(path, root=self.home.root)
            turns = parse_bytes(data, path)
            changed = []
            for t in turns:
                if t.n in numbers and t.text != FORGOTTEN:
                    new = change(t.text)
                    if new != t.text:
                        t.text = new
                        t.flags[flag] = True
                        changed.append(t)
            if changed:
                safe.atomic_write(path, spliced(data, turns, changed), root=self.home.root)
            return changed


def by_message(items: list[TurnItem]) -> list[list[TurnItem]]:
    """``items`` in runs of consecutive turns of one message (the same role and ``message`` flag), in order."""
    out: list[list[TurnItem]] = []
    last: tuple[object, object] | None = None
    for item in items:
        flags = item[4] if len(item) > 4 and item[4] else {}
        message = flags.get("message") if isinstance(flags, dict) else None
        mark = (item[0], message)
        if out and message is not None and mark == last:
            out[-1].append(item)
        else:
            out.append([item])
        last = mark
    return out


def redact_tokens_in(text: str, pattern: Any) -> str:
    """``text`` with every token ``pattern`` finds replaced (as a forget redacts them in place)."""
    return _redact_tokens(text, pattern)


def _redact_tokens(text: str, pattern: Any, still: Callable[[str], bool] | None = None) -> str:
    """``text`` with every token ``pattern`` finds (read in the text's normal form) replaced. Each character is
    folded on its own, so every match maps back to the characters it came from; if a token can still be read
    in the result (one the per-character fold split, such as a ligature's half), the whole text goes."""
    pieces = [ch if " " <= ch < "\x7f" else fold(ch) for ch in text]
    # Searched as UTF-8 bytes: RE2's search from a position in a str encodes the whole text again each time,
    # so one search per token was quadratic in a text of many tokens.
    encoded = bytearray()
    owner: list[int] = []  # folded byte -> the original character it came from
    starts: list[int] = []  # original character -> its first folded byte
    for i, piece in enumerate(pieces):
        starts.append(len(encoded))
        data = piece.encode("utf-8", "surrogatepass")
        encoded += data
        owner += [i] * len(data)
    starts.append(len(encoded))
    folded = bytes(encoded)
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := pattern.search(folded, pos)) is not None:
        start, end = m.span(1)
        if end > start:
            spans.append((owner[start], owner[end - 1] + 1))
        # On from the character after the one the match began with: the separator before a token may be the one
        # after the last.
        pos = max(end, starts[owner[m.start()] + 1])
    out, last = [], 0
    for start, end in spans:
        if start < last:
            continue
        out += [text[last:start], FORGOTTEN]
        last = end
    new = "".join(out) + text[last:]
    return FORGOTTEN if pattern.search(fold(new)) or (still is not None and still(new)) else new


def _last_turn_number(fd: int) -> int:
    """The highest turn number in an open raw file, reading backwards from its end."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    chunk = 1 << 16
    prefix = MARKER_PREFIX.encode()
    needle = b"\n" + prefix
    pos = size
    after: list[bytes] = []  # the chunks read so far, the last one first in the file last
    while pos > 0:
        step = min(chunk, pos)
        pos -= step
        data = os.pread(fd, step, pos)
        # A marker starts a line: at the very start of the file or after \n. Each chunk is searched once, with
        # the next one's first bytes (a marker may start in one and end in the next): linear in what is read.
        window = data + (after[-1][: len(needle) - 1] if after else b"")
        idx = window.rfind(needle)
        if idx != -1:
            start = idx + 1
        elif pos == 0 and window.startswith(prefix):
            start = 0
        else:
            after.append(data)
            continue
        pieces = [data[start:]]
        for later in reversed(after):  # the marker's line, read on to its end
            if b"\n" in pieces[-1]:
                break
            pieces.append(later)
        m = _MARKER.match(b"".join(pieces).split(b"\n", 1)[0].decode("utf-8", "replace"))
        if m:
            try:
                return turn_number(json.loads(m.group(1))["n"])
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
                pass
        break
    text = os.pread(fd, size, 0).decode("utf-8", errors="replace")
    return max((t.n for t in parse(text)), default=0)


_LABELS = {
    "typed": "user (typed)",
    "pasted": "user (pasted)",
    "tool_output": "user (tool output)",
    "assistant": "assistant",
    "tool_call": "assistant (tool call)",
}


def label(t: Turn) -> str:
    """Who produced a turn, as the transcript names it (turns captured before sources: "source unknown")."""
    return label_of(t.role, t.flags)


def label_of(role: str, flags: dict[str, Any]) -> str:
    """``label`` of a turn of ``role`` with ``flags`` (its marker's)."""
    source = flags.get("source")
    if source == "typed" and flags.get("near_paste"):
        return "user (typed beside a paste: maybe the paste's)"
    return _LABELS.get(str(source), f"{role} (source unknown)") if source else f"{role} (source unknown)"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a name's undecodable bytes, as the file system handed them over
        return False
    return True


def _names(folder: Path, root: Path) -> list[str]:
    """The names in ``folder``, never through a link ([] for a link, a file or nothing there)."""
    try:
        return safe.listdir(folder, root=root)
    except (OSError, safe.UnsafePath):
        return []
