"""What `bead mcp` reads on stdin before the MCP SDK's stdio transport does (the CLI's: bead/mcp does no file or fd work).

The SDK parses each line as a JSON-RPC message and silently drops one it cannot parse: the client's call then waits
for an answer that never comes. Two cases, handled here line by line:

- A lone UTF-16 surrogate escape (``"\\ud800"``), which JSON's grammar allows and a JavaScript client writes when it
  cuts a string inside an emoji: the SDK's parser refuses the whole line. It is read as U+FFFD instead
  (bead.textform.readable_json, as the proxy reads bodies), so the call goes through.
- A line that is not JSON at all: the SDK still drops it (stdout is its own), but bead says so on stderr, which MCP
  clients show in their server log, so the hang has a cause one can find. Its length only, never its text (a
  request holds values, and a client's log is a file forget does not reach), and at most once a second (a client
  that writes JSON over several lines sends many such lines).

stdin is claimed as the SDK claims it: fd 0 then reads the null device (a handler or child process that reads stdin
gets end of file) and the wire is read through a private descriptor, which is never closed (a worker thread may still
be reading it when the transport ends).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from ..textform import readable_json

log = logging.getLogger("bead.mcp")

CHUNK = 64 * 1024
SAY_EVERY_S = 1.0  # the warning about lines that are not JSON, at most this often


class _NotJson:
    """Counts the lines that are not JSON and says so, at most once every SAY_EVERY_S."""

    def __init__(self) -> None:
        self.count = 0
        self.size = 0
        self.said = -SAY_EVERY_S

    def saw(self, size: int) -> None:
        """One more such line, ``size`` bytes long."""
        self.count, self.size = self.count + 1, size
        self._say(time.monotonic() - self.said >= SAY_EVERY_S)

    def end(self) -> None:
        """No more lines: say what is counted and not said yet."""
        self._say(True)

    def _say(self, now: bool) -> None:
        if self.count and now:
            log.warning(
                "%d line(s) on stdin were not JSON, so they get no answer (the last one %d bytes); an MCP client "
                "sends one JSON-RPC message a line",
                self.count,
                self.size,
            )
            self.count, self.said = 0, time.monotonic()


def _line(raw: bytes, bad: _NotJson) -> bytes:
    """One line of the wire (with its line break), as the SDK should read it."""
    text = raw.decode("utf-8", errors="replace")  # as the SDK reads it
    if ("\\ud" in text or "\\uD" in text) and (fixed := readable_json(text)) != text:
        raw, text = fixed.encode("utf-8"), fixed
    if text.strip():
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            bad.saw(len(raw))
    return raw


class _Lines(io.RawIOBase):
    """The wire's bytes, a whole line at a time through ``_line``. Linear in what arrives: a line's chunks are joined
    once, when its line break comes, and what is handed on is read through a view, never copied again."""

    def __init__(self, fd: int):
        self._fd = fd
        self._parts: list[bytes] = []  # the line being received
        self._out = memoryview(b"")
        self._eof = False
        self._bad = _NotJson()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not len(self._out):
            if self._eof:
                return 0
            chunk = os.read(self._fd, CHUNK)
            if not chunk:
                self._eof = True
                rest, self._parts = b"".join(self._parts), []
                self._out = memoryview(_line(rest, self._bad) if rest else b"")
                self._bad.end()
                continue
            if b"\n" not in chunk:
                self._parts.append(chunk)
                continue
            head, _, tail = chunk.rpartition(b"\n")
            lines = b"".join([*self._parts, head]).split(b"\n")
            self._parts = [tail] if tail else []
            self._out = memoryview(b"".join(_line(one + b"\n", self._bad) for one in lines))
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n


@contextlib.contextmanager
def read_lines() -> Iterator[None]:
    """While it lasts, ``sys.stdin`` reads the wire through ``_Lines`` and fd 0 reads the null device."""
    saved = sys.stdin
    try:
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        yield  # nothing to put in stdin's place: the SDK reads it as before
        return
    try:
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(null)
        yield  # no stdin to claim (closed): the SDK reads what there is, as before
        return
    try:
        os.dup2(null, 0)
        moved = True
    except OSError:
        moved = False
    os.close(null)
    if not moved:
        os.close(wire)
        yield
        return
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_Lines(wire)), encoding="utf-8", errors="replace")
    try:
        yield
    finally:
        sys.stdin = saved
        with contextlib.suppress(OSError):
            os.dup2(wire, 0)
