"""A thread's deadline for work that takes none as an argument: reading a request's body before it is forwarded.

The proxy's engine reads a body (bead.wire) under ``until(deadline)``; the loops whose cost grows with what a
person or a tool wrote (a text block's lines, a request's messages) call ``check`` now and then, and past the
deadline the read stops with ``OutOfTime``: the request goes out unchanged at the deadline, not when a 2 MB paste of
short lines has been read. Outside ``until`` (a command, an import, the tests) ``check`` never stops anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


class OutOfTime(Exception):
    """The thread's deadline (``until``) passed."""


@contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Within the block, ``check`` raises OutOfTime once ``time.monotonic()`` passes ``deadline`` (None: never)."""
    before = getattr(_local, "deadline", None)
    _local.deadline = deadline
    try:
        yield
    finally:
        _local.deadline = before


def check() -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTime
