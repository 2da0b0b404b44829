"""flock-based locks shared by every bead process: the one lock helper."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..display import one_line
from ..files import open_file

# A wait this long for a lock held elsewhere is said once on stderr (a terminal, or a service's log), naming the
# process that holds it where the system tells (Linux: /proc/locks): a hung or stopped process would otherwise make
# a command wait for ever without a word. The wait itself has no limit (a forget of a large store holds the lock
# for as long as it takes).
WAIT_NOTICE_S = 1.0


class LockBusy(OSError):
    """A non-blocking lock is held by another process."""


@contextlib.contextmanager
def flocked(
    path: Path, exclusive: bool = True, blocking: bool = True, timeout: float | None = None, *, root: Path | None = None
) -> Iterator[None]:
    """Hold ``flock`` on ``path`` (created 0600 if missing) for the block.

    ``root`` is the bead home: the lock file and its folders are reached from
    it without following a link (and created 0700). Without it, only the
    lock file itself must not be a link.

    flock locks belong to the open file description, so two threads of one
    process that each open the file also exclude each other. With
    ``blocking=False`` a lock held elsewhere raises LockBusy at once; with a
    ``timeout`` (seconds) it raises LockBusy once that has passed.
    """
    fd = open_file(path, os.O_RDWR | os.O_CREAT, root=root if root is not None else path.parent)
    try:
        flags = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        if blocking and timeout is None:
            try:
                fcntl.flock(fd, flags | fcntl.LOCK_NB)
            except BlockingIOError:
                notice = threading.Timer(WAIT_NOTICE_S, _say_waiting, (path, fd))
                notice.daemon = True
                try:
                    notice.start()
                    started = True
                except RuntimeError:  # no thread to spare: the wait goes on unannounced
                    started = False
                try:
                    fcntl.flock(fd, flags)
                finally:
                    if started:
                        notice.cancel()
                        notice.join()  # a notice being written ends before the file closes (its fd is read there)
        else:
            end = time.monotonic() + (timeout or 0.0)
            while True:
                try:
                    fcntl.flock(fd, flags | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not blocking or time.monotonic() >= end:
                        raise LockBusy(f"{path} is locked by another process") from None
                    time.sleep(0.002)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def holder(fd: int) -> tuple[int, str] | None:
    """The process holding a flock on the file open at ``fd``: its pid and command line (at most 120 characters,
    one line, nothing a terminal would act on), from Linux's /proc/locks; None where the system does not say."""
    try:
        st = os.fstat(fd)
        ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 00:2e:1234 0 EOF"; a waiter's line has "->" before FLOCK
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == ident and parts[4].isdigit():
            pid = int(parts[4])
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = [a.decode("utf-8", "replace") for a in f.read(4096).split(b"\0") if a]
            except OSError:
                args = []
            if len(args) > 1 and os.path.basename(args[0]).startswith("python"):
                args = args[1:]  # "python3 /home/me/.local/bin/bead dream worker": the script and its arguments
            if args:
                args[0] = os.path.basename(args[0])
            return pid, one_line(" ".join(args), 120)
    return None


def _say_waiting(path: Path, fd: int) -> None:
    who = holder(fd)
    if who and who[0] == os.getpid():
        # another thread of this process (a flock is the open file's): nothing to stop but this process's own work
        held, hint = "held by another thread of this process", "stop this process"
    else:
        held = f"held by pid {who[0]} ({who[1] or 'command unknown'})" if who else "held by another process"
        hint = f"stop that process (kill {who[0]})" if who else "stop the bead process that holds it"
    try:
        sys.stderr.write(
            f"bead: waiting for {one_line(str(path), 200)}, {held}; this goes on once it is let go. If that process "
            f"hangs, {hint}.\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr closed: the wait goes on unannounced
