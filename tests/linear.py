"""Linear time, checked so that a slow or busy machine does not fail it and a quadratic scan still does.

One run of the full input under ``limit`` CPU seconds passes at once (the usual case). Otherwise the input is
run at a quarter of its size and at full size, best of two each: linear work grows about 4 times, a quadratic
scan 16 times, so more than 8 fails. CPU time of this process: other test processes on the same cores do not
count, and a ratio measured in one test does not depend on how fast the machine is.

Sizes have no meaning of their own unless a test says so (a product limit): a check runs a few hundred KB, where
the quadratic scans found so far took seconds to minutes (4-60 s on 50 KB, 40 s on 200 KB), with a ``limit`` in
proportion to its size (a quarter of a second for a quarter megabyte: the same CPU per character as a second for a
megabyte), so a quadratic slip as cheap as a copy of the text per match still fails it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
GROWTH = 8.0


def _took(run: Callable[[T], Any], arg: T) -> float:
    # The cyclic collector off while the clock runs: a full collection of the pytest worker's heap (millions of
    # objects other tests left) can land in any run and cost more than the run itself, which failed a linear scan
    # as quadratic on a busy machine. Work the run itself does is still counted whole.
    gc.disable()
    try:
        t0 = time.process_time()
        run(arg)
        return time.process_time() - t0
    finally:
        gc.enable()


def assert_linear(run: Callable[[T], Any], make: Callable[[int], T], size: int, limit: float = 1.0, what: str = "") -> None:
    """``run(make(size))`` takes time linear in ``size`` (see the module's docstring)."""
    full = make(size)
    took = _took(run, full)
    if took < limit:
        return
    quarter = make(size // 4)
    small = min(_took(run, quarter) for _ in range(2))
    # The best of two full runs, the second only where the first fails: the same verdict, one run fewer.
    big = took if took <= GROWTH * max(small, 1e-3) else min(took, _took(run, full))
    assert big <= GROWTH * max(small, 1e-3), f"{what}: {big:.2f} s at {size} against {small:.2f} s at {size // 4}"
