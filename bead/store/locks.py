"""flock-based locks shared by every bead process: the one lock helper."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..files import open_file


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
            fcntl.flock(fd, flags)
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
