"""flock-based locks shared by every bead process."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def flocked(path: Path, exclusive: bool = True) -> Iterator[None]:
    """Hold ``flock`` on ``path`` (created 0600 if missing) for the block.

    flock locks belong to the open file description, so two threads of one
    process that each open the file also exclude each other.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock
