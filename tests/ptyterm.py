"""A program under a pseudo-terminal, as a person's terminal runs it: the test types keys and reads what it shows.

The child gets a new session with the pty as its controlling terminal and
stdin, stdout and stderr on it, at 100x40. A reader thread keeps every byte
the child writes (``output``); ``expect`` waits for text to appear after the
last match. The terminal answers a cursor position request (``ESC [ 6 n``,
which prompt_toolkit sends to learn how much room is below the cursor) as a
real terminal does, with the row and column.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time

CPR = b"\x1b[6n"
ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]")


class Pty:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None, rows: int = 40, cols: int = 100):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color"},
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.output = bytearray()
        self.seen = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.output += data
            for _ in range(data.count(CPR)):
                os.write(self.master, b"\x1b[20;1R")

    def text(self, start: int = 0) -> str:
        """What the child wrote since ``start``, escape sequences removed."""
        with self._lock:
            raw = bytes(self.output[start:])
        return ANSI.sub(b"", raw).decode("utf-8", "replace")

    def expect(self, needle: str, timeout: float = 30.0) -> str:
        """Wait until ``needle`` appears in the text after the last match; the text up to it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                raw = bytes(self.output[self.seen :])
            text = ANSI.sub(b"", raw).decode("utf-8", "replace")
            i = text.find(needle)
            if i != -1:
                # Advance past the match in the raw bytes: find the needle's last character's raw position.
                with self._lock:
                    self.seen = len(self.output)
                return text[: i + len(needle)]
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"{needle!r} did not appear; the screen so far:\n{self.text()[-3000:]}")

    def send(self, data: str | bytes) -> None:
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        try:
            os.close(self.master)
        except OSError:
            pass
        self._reader.join(5)
