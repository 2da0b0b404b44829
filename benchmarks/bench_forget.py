"""What `bead forget --match --yes` costs in a home with one long session (in process: plan, then apply).

A home whose raw log holds one session of N turns (30 words each) with the value said twice, beside the same with a
session of 200 turns (the baseline, in the same run). Two cases each round: the session's file last written long ago,
and the session still being written (a turn holding another value appended just before the forget, as when the
person forgets something from the conversation they are in: its file is among those written since the plan's look,
which apply reads again inside its locks). Figures are seconds from the plan to the end of apply, median and p95
over the rounds, and the ratio to the baseline's median. Figures only, nothing asserted::

    .venv-test/bin/python benchmarks/bench_forget.py [--turns 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bead.config import Config
from bead.core import forget
from bead.core.memory import Memory
from bead.paths import Home

WORDS = "the build failed again on the staging box so I restarted the worker and checked the logs for errors".split()


def one_round(turns: int, seed: int) -> tuple[float, float]:
    """Seconds for a forget in an old session's file, then in the session being written."""
    tmp = "/dev/shm" if os.path.isdir("/dev/shm") else None
    mem = Memory(Home(Path(tempfile.mkdtemp(dir=tmp)) / "home"), Config(owner="bench"))
    rng = random.Random(seed)
    items = []
    for i in range(turns):
        text = " ".join(rng.choice(WORDS) for _ in range(30))
        if i in (turns // 2, turns - turns // 5):
            text += f" the code is wombat-{seed}-99173"
        role, source = ("user", "typed") if i % 2 == 0 else ("assistant", "assistant")
        items.append((role, text, None, None, {"source": source}))
    for start in range(0, turns, 500):
        mem.raw.append_many("long", items[start : start + 500])
    mem.catch_up_index()
    path = mem.raw.find("long")
    assert path is not None
    os.utime(path, (0, 0))  # last written long ago
    took = []
    for value, write in ((f"wombat-{seed}-99173", False), (f"zebra-{seed}-77102", True)):
        if write:
            mem.raw.append("long", "user", f"and the other code is {value}")
        t0 = time.perf_counter()
        summary = forget.apply(mem, forget.plan_match(mem, value))
        took.append(time.perf_counter() - t0)
        assert summary["raw_turns_redacted"] >= 1
    mem.close()
    return took[0], took[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = {}
    for turns in (200, args.turns):
        runs = [one_round(turns, seed) for seed in range(args.rounds)]
        rows[turns] = ([r[0] for r in runs], [r[1] for r in runs])
    base = statistics.median(rows[200][0])

    def p95(xs: list[float]) -> float:
        return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]

    print(f"forget --match --yes, {args.rounds} rounds (seconds)")
    print(f"{'session':<36} {'median':>8} {'p95':>8} {'x baseline':>11}")
    for turns, (old, active) in rows.items():
        for label, xs in (("file written long ago", old), ("file being written", active)):
            name = f"{turns} turns, {label}"
            print(f"{name:<36} {statistics.median(xs):8.2f} {p95(xs):8.2f} {statistics.median(xs) / base:11.1f}")


if __name__ == "__main__":
    main()
