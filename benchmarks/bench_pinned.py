"""The pinned block's choice on a conversation's first request, with and without the opening's meaning: prints
figures, asserts nothing.

    python benchmarks/bench_pinned.py                 # the injection suite's 60 turns x 3 rounds, 2,000 near misses
    python benchmarks/bench_pinned.py --scale 300

Builds the store of ``bead eval evals/injection.yaml --scale N`` (the suite's facts and N near-miss facts, each
with its real vector), then times ``standing_memory`` for each turn as a conversation's opening, turn by turn with
``OPENING_MEANING`` 0 (BM25 alone: the baseline, same run) and the default, the model in-process (the proxy asks
the indexer's instead). Each timed call asks its question anew (no vector shared from the other).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bead.config import parse as parse_config  # noqa: E402
from bead.conversation import identify  # noqa: E402
from bead.core.pinned import standing_memory  # noqa: E402
from bead.core.recall import Recaller  # noqa: E402
from bead.evals import generated, scaled  # noqa: E402
from bead.evals.suite import embed_store, temp_memory, write  # noqa: E402
from bead.index import semantic  # noqa: E402
from bead.recall import rank, standing  # noqa: E402
from bead.wire.anthropic import conversation_of  # noqa: E402


def figures(ms: list[float]) -> str:
    return f"p50 {statistics.median(ms):.2f} / p95 {sorted(ms)[int(len(ms) * 0.95)]:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not semantic.available():
        sys.exit("bench_pinned: needs bead[semantic] (pip install 'bead[semantic]')")
    suite = yaml.safe_load((ROOT / "evals" / "injection.yaml").read_text())
    real = suite["facts"]
    made = scaled.distractors("near-miss", args.scale, str(suite["project"]), real)
    meaning = standing.OPENING_MEANING
    system = f"You are a coding agent.\n - Primary working directory: {suite['cwd']}"
    with temp_memory() as mem:
        for f in generated.interleave(real, made):
            write(mem, f)
        embed_store(mem)
        stats = Recaller(parse_config("")).fact_stats(mem, mem.index.raw_doc_freq)
        timed: dict[float, list[float]] = {0.0: [], meaning: []}
        for _ in range(args.rounds):
            for t in suite["turns"]:
                conv = conversation_of({"model": "m", "max_tokens": 1, "system": system, "messages": t["messages"]}, {})
                project = identify({}, conv, str(suite["project"])).project
                for weight, out in timed.items():
                    standing.OPENING_MEANING = weight
                    rank._recent.clear()
                    t0 = time.perf_counter()
                    standing_memory(mem, project, 2000, conv, stats=stats)
                    out.append((time.perf_counter() - t0) * 1000)
        standing.OPENING_MEANING = meaning
    base, own = timed[0.0], timed[meaning]
    print(f"pinned block, {len(real) + len(made)} facts, {len(own)} openings:")
    print(f"  BM25 alone (baseline)        {figures(base)}")
    print(f"  with the opening's meaning   {figures(own)}  ({statistics.median(own) / statistics.median(base):.2f}x p50)")


if __name__ == "__main__":
    main()
