"""The proxy's trace: one JSON line per request, for ``bead why``.

Where it is: ``proxy.trace`` in config.yaml, or ``BEAD_TRACE``, or the
proxy's ``--trace``. It quotes cue text (secret-scanned, then cut), so
forget scrubs it like every other file that can hold a value. A proxy
started with ``--trace FILE`` (or a ``BEAD_TRACE`` that the shell running
forget does not have) records that file under the home when it starts
(``record_proxy_trace``), so forget finds it whatever its own environment.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import files as safe
from ..capture.secrets import compile_linear, redact
from ..config import Config
from ..display import cut_at_word, json_text
from ..paths import Home

CUE_CHARS = 200
SCAN_MARGIN = 4096  # a credential that starts before the cut and is longer than this is rare beyond reason


def record_proxy_trace(home: Home, path: Path | str | None) -> None:
    """A starting proxy notes the trace file it writes (nothing when it writes none)."""
    if not path:
        return
    entry = {
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "pid": os.getpid(),
        "trace": str(Path(path).expanduser().absolute()),
    }
    safe.append_line(home.proxy_runtime, json_text(entry), root=home.root)


def recorded_paths(home: Home) -> list[Path]:
    """Every trace file a proxy of this home was started with."""
    try:
        text = safe.read_text(home.proxy_runtime, root=home.root, errors="replace")
    except FileNotFoundError:
        return []
    out: list[Path] = []
    for line in safe.lines_of(text):
        try:
            value = json.loads(line).get("trace")
        except (ValueError, AttributeError, RecursionError):
            continue
        # A proxy records its trace's absolute path; a relative one is no line of bead's, and would name a file in
        # whatever folder a command runs from.
        if isinstance(value, str) and Path(value).is_absolute() and Path(value) not in out:
            out.append(Path(value))
    return out


def configured_paths(config: Config, override: str | None = None, home: Home | None = None) -> list[Path]:
    """Every trace file this home may have written: ``--trace``, config, ``BEAD_TRACE``, and those
    its proxies recorded when they started (``home``)."""
    out: list[Path] = []
    for value in (override, config.proxy.trace, os.environ.get("BEAD_TRACE")):
        if value:
            p = Path(value).expanduser().absolute()
            if p not in out:
                out.append(p)
    for p in recorded_paths(home) if home is not None else []:
        if p not in out:
            out.append(p)
    return out


def cue_excerpt(text: str) -> str:
    """A cue as the trace keeps it: credentials redacted first, then cut (never cut a secret in half).

    The scan sees a window past the cut as long as the longest key bead
    redacts to its end, not the whole cue: this runs before forwarding, and
    a cue can be a megabyte of tool output.
    """
    return cut_at_word(redact(text[: CUE_CHARS + SCAN_MARGIN])[0], CUE_CHARS)


class Trace:
    def __init__(self, path: Path):
        self.path = path

    def record(self, entry: dict[str, Any]) -> None:
        # The trace may live anywhere the person chose, their own named pipe too (read as it is written); only the file
        # itself must not be a link, nor another user's.
        safe.append_line(self.path, json_text(entry), root=self.path.parent, pipe_ok=True)

    def _head(self) -> None:
        """Refuse (NotATrace) a file whose first line is no trace record, before more of it is read: the path may come
        from proxy.runtime.jsonl, where a planted line can name any file (a disk image of a gigabyte was read whole,
        twice a forget, and at every dashboard page: an outside attack), or another user's file (/etc/passwd)."""
        with safe.opened_dir(self.path.parent, self.path.parent) as d:
            fd = safe.open_at(d, self.path, os.O_RDONLY)
            try:
                st = os.fstat(fd)
                head = os.pread(fd, HEAD_BYTES, 0) if stat.S_ISREG(st.st_mode) else b""
            finally:
                os.close(fd)
        if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
            raise NotATrace(self.path)
        # A file cleared with `echo > trace.jsonl` starts with a blank line; one an editor saved, with a BOM.
        rest = head.removeprefix(b"\xef\xbb\xbf").lstrip()
        if not rest:
            if len(head) == HEAD_BYTES:
                raise NotATrace(self.path)  # a megabyte of blanks: no trace's start
            return
        lines = rest.split(b"\n")
        if len(lines) == 1 and len(head) == HEAD_BYTES:
            raise NotATrace(self.path)  # no record is a megabyte long
        # Every line of the first megabyte, the last one as far as it was read (a record cut there is a record's
        # start): a record, or one a killed proxy left cut short (then a line break the next proxy wrote first, and
        # its records; a multi-byte character cut in two reads as U+FFFD). Only the first was looked at, and a JSON
        # file of gigabytes whose first line is `{` was read whole (a review).
        for line in lines:
            _check_line(self.path, line.removesuffix(b"\r").decode("utf-8", "replace"))

    def _text(self) -> str:
        self._head()
        data, st = safe.read_with_stat(self.path, root=self.path.parent)
        if st.st_uid != os.getuid():
            raise NotATrace(self.path)
        return data.decode("utf-8", errors="replace")

    def entries(self) -> list[dict[str, Any]]:
        """The file's records; NotATrace where a line is none of a trace's (the dashboard read any file a planted line
        named, and showed its lines that looked like records: an outside attack)."""
        out = []
        for line in safe.lines_of(self._text()):
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                entry = None
            if isinstance(entry, dict) and _TRACE_FIELDS <= entry.keys() and "\r" not in line:
                out.append(entry)
            else:
                _check_line(self.path, line)  # a blank line, or one a killed proxy cut short; else NotATrace
        return out

    def matching_lines(self, matches: Callable[[str], bool]) -> int:
        """How many lines ``matches``; NotATrace where a line is none of a trace's."""
        try:
            text = self._text()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return 0
        lines = safe.lines_of(text)
        for line in lines:
            _check_line(self.path, line)
        return sum(1 for line in lines if matches(line))

    def scrub(self, matches: Callable[[str], bool]) -> int:
        """Drop the lines that ``matches`` (forget); a proxy appending meanwhile waits and loses nothing. A file
        with a line no trace holds is left as it is (NotATrace, raised before anything is written): the path
        came from proxy.runtime.jsonl or a setting, and may name any file, a person's notes or another program's log."""

        def edit(line: str) -> str | None:
            _check_line(self.path, line)
            return None if matches(line) else line

        try:
            self._head()
            return safe.rewrite_lines(self.path, edit, root=self.path.parent, keep_mode=True)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return 0


class NotATrace(ValueError):
    """A file named as a trace holds a line that is not one of the proxy's trace records."""

    def __init__(self, path: Path):
        super().__init__(f"{path} is named as the proxy's trace but holds lines that are not its records")
        self.path = path


# The fields every trace line the proxy has written holds (each from bead's first proxy on): another program's JSON
# lines with a "session" (an app's event log a planted line named) are not a trace's.
_TRACE_FIELDS = frozenset({"at", "session", "roles", "errors"})


# Of a file named as a trace, what is read before the rest: its first line must be a record (``Trace._head``).
HEAD_BYTES = 1 << 20
# How every record the proxy writes begins (its first field, as ``json_text`` writes it): a line cut short by a killed
# proxy begins so too.
_RECORD_START = '{"at": "'


def _check_line(path: Path, line: str) -> None:
    """A trace line is a JSON object with the fields the proxy writes in every one (``_TRACE_FIELDS``), or one a killed
    proxy left cut short: a record's start and no end (not `{"ts": ...} # a comment`, nor a Windows path's backslashes
    in a person's JSON notes, which a forget rewrote as a trace: an outside attack), or such records run together on
    one line (a bead before 2026-12-06 wrote the next record right after a cut one); a blank line passes."""
    stripped = line.removeprefix("\ufeff").strip()
    if not stripped:
        return
    if "\r" in line or not _trace_line(stripped):
        raise NotATrace(path)


def _trace_line(text: str) -> bool:
    """Whether ``text`` (a non-blank line) is a trace record, one cut short (a prefix of a record: a review found a mere
    record's start let a person's notes through, `{"at": "C:\\Users\\me", ...}` with a Windows path's backslashes,
    which forget rewrote), or such records and cut ones run together (a bead before 2026-12-06 wrote the next record
    right after a cut one, on its line; a cut may be a record's first bytes alone)."""
    if _record_or_cut(text):
        return True
    starts = []
    at = text.find(_RECORD_START)
    while at >= 0:
        starts.append(at)
        at = text.find(_RECORD_START, at + len(_RECORD_START))
    lead = text[: starts[0]] if starts else text
    if lead and not _cut_starts(lead):
        return False
    if not starts:
        return True  # cut starts alone
    pieces = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return all(_record_or_cut(p) or _ends_in_cut_starts(p) for p in pieces)


def _cut_starts(text: str) -> bool:
    """Whether ``text`` is records' starts cut in their first bytes, one after the other (`{"a{"at`: records a crash
    cut there, each written right after the one before by an older bead)."""
    return text.startswith("{") and all(_RECORD_START.startswith("{" + part) for part in text[1:].split("{"))


def _ends_in_cut_starts(piece: str) -> bool:
    """Whether ``piece`` is a record, or one cut short, followed by records' starts cut in their first bytes."""
    tail = piece.rfind("{", max(0, len(piece) - 3 * len(_RECORD_START)))
    while tail > 0:
        if _cut_starts(piece[tail:]) and _record_or_cut(piece[:tail]):
            return True
        tail = piece.rfind("{", max(0, len(piece) - 3 * len(_RECORD_START)), tail)
    return False


def _record_or_cut(text: str) -> bool:
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg != "Extra data" and _cut_short(text, exc)
    except (ValueError, RecursionError):
        return False
    return isinstance(entry, dict) and _TRACE_FIELDS <= entry.keys()


# What may be left of a token where a line was cut: part of a literal, a number's sign or its exponent, a `\uXXXX`.
_CUT_TOKEN = compile_linear(
    r"t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?"
    r"|-|-?\d+(?:\.\d*)?(?:[eE][+-]?\d*)?|\.\d*(?:[eE][+-]?\d*)?|[eE][+-]?\d*"
)


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether ``text``, which JSON could not read (``exc``), is the start of a record that a crash or a full disk cut
    off: a prefix of ``_RECORD_START``, or it begins so and JSON found nothing wrong until its end (a string, an escape,
    a literal or a number unfinished there), never an error in its middle."""
    if len(text) <= len(_RECORD_START):
        return _RECORD_START.startswith(text)
    if not text.startswith(_RECORD_START):
        return False
    if exc.pos >= len(text) or exc.msg.startswith("Unterminated string"):
        return True
    rest = text[exc.pos :]
    return bool(_CUT_TOKEN.fullmatch(rest)) or (exc.msg.startswith("Invalid \\uXXXX") and _U_ESCAPE.fullmatch(rest) is not None)


_U_ESCAPE = compile_linear(r"\\?u[0-9a-fA-F]{0,4}")


def listed(entry: dict[str, Any], name: str) -> list[Any]:
    """A trace line's list ``name``, or none: a trace is a file anyone with the path may have written to (an odd
    line's number where a list belongs must not take a page or a command down)."""
    value = entry.get(name)
    return value if isinstance(value, list) else []
