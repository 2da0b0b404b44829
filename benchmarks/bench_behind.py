"""The check that each fact bead serves is still its key's newest file (Memory.behind): prints figures, asserts
nothing.

    python benchmarks/bench_behind.py               # 5 facts (a cue block's) and 40 (a pinned block's), 500 rounds
    python benchmarks/bench_behind.py --rounds 2000

Writes one project's facts as `bead write` does, then times, round by round, the check over 5 and over 40 of their
index rows, beside the baseline of the same run: reading those rows from the index by id (what serving them costs
already). The ratio says what the check adds to that.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bead.config import Config  # noqa: E402
from bead.core.memory import Memory  # noqa: E402
from bead.paths import Home  # noqa: E402


def _p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(Home(Path(tmp) / "home").ensure(), Config(owner="bench"))
        ids = [mem.write(f"project/shop/fact-{i}", f"value {i} of the shop", "project").fact.id for i in range(40)]
        rows = mem.index.facts_by_id(ids)
        for n in (5, 40):
            check: list[float] = []
            read: list[float] = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                mem.index.facts_by_id(ids[:n])
                t1 = time.perf_counter()
                mem.behind(rows[:n])
                t2 = time.perf_counter()
                read.append(t1 - t0)
                check.append(t2 - t1)
            print(
                f"{n:>2} facts  check p50 {_p(check, 0.5):.3f} ms  p95 {_p(check, 0.95):.3f} ms   "
                f"index read (baseline) p50 {_p(read, 0.5):.3f} ms  p95 {_p(read, 0.95):.3f} ms   "
                f"ratio p50 x{statistics.median(check) / statistics.median(read):.2f}"
            )
        mem.close()


if __name__ == "__main__":
    main()
