"""What `bead forget --match --yes` costs in a home with one long session (in process: plan, then apply).

A home whose raw log holds one session of N turns (30 words each) with the value said twice, beside the same with a
session of 200 turns (the baseline, in the same run). Two cases each round: the session's file last written long ago,
and the session still being written (a turn holding another value appended just before the forget, as when the
person forgets something from the conversation they are in: its file is among those written since the plan's look,
which apply reads again inside its locks). Figures are seconds from the plan to the end of apply, median and p95
over the rounds, and the ratio to the baseline's median. Figures only, nothing asserted::

    .venv-test/bin/python benchmarks/bench_forget.py [--turns 20000] [--rounds 3] [--sessions 1]

``--sessions N`` spreads the turns over N sessions (files) of equal length, the value in two of them, the turn before
the second forget appended to the last: a long history of short conversations rather than one long one.
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


def one_round(turns: int, seed: int, sessions: int = 1) -> tuple[float, float]:
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
    each = max(1, turns // sessions)
    names = [f"long-{i}" for i in range(sessions)] if sessions > 1 else ["long"]
    for i, name in enumerate(names):
        part = items[i * each : (i + 1) * each] if sessions > 1 else items
        for start in range(0, len(part), 500):
            mem.raw.append_many(name, part[start : start + 500])
    mem.catch_up_index()
    for name in names:
        found = mem.raw.find(name)
        assert found is not None
        os.utime(found, (0, 0))  # last written long ago
    took = []
    for value, write in ((f"wombat-{seed}-99173", False), (f"zebra-{seed}-77102", True)):
        if write:
            mem.raw.append(names[-1], "user", f"and the other code is {value}")
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
    ap.add_argument("--sessions", type=int, default=1)
    args = ap.parse_args()
    rows = {}
    for turns in (200, args.turns):
        runs = [one_round(turns, seed, args.sessions if turns == args.turns else 1) for seed in range(args.rounds)]
        rows[turns] = ([r[0] for r in runs], [r[1] for r in runs])
    base = statistics.median(rows[200][0])

    def p95(xs: list[float]) -> float:
        return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]

    print(f"forget --match --yes, {args.rounds} rounds (seconds); {args.turns} turns in {args.sessions} session(s)")
    print(f"{'session':<36} {'median':>8} {'p95':>8} {'x baseline':>11}")
    for turns, (old, active) in rows.items():
        for label, xs in (("file written long ago", old), ("file being written", active)):
            name = f"{turns} turns, {label}"
            print(f"{name:<36} {statistics.median(xs):8.2f} {p95(xs):8.2f} {statistics.median(xs) / base:11.1f}")


if __name__ == "__main__":
    main()
