"""The proxy's recall step alone, in-process: prints figures, asserts nothing.

    python benchmarks/bench_recall.py                  # 10,000 facts (+300 of the project), 200,000 raw turns
    python benchmarks/bench_recall.py --turns 2000     # facts-heavy store

Runs the recorded Claude Code requests (3 rounds, each a new conversation)
through the proxy engine's prepare step against a generated store and prints
p50/p95 of the recall step (cue extraction, fact and raw search, the gate,
pointers, rendering) and of the whole prepare step (capture, pinned block,
splicing). Two engines take turns over the same store, round by round: the
default one (pointers on) and one with ``recall.pointers: 0``, the baseline
measured in the same run; the ratios compare them.

With ``--semantic`` (bead[semantic] installed) every raw turn gets a vector first (random ones: time, not
quality; ``bench_store.fill_vectors``) and the two engines are the default (rescoring on, the model loaded as
the proxy's warm-up loads it) and one with ``recall.semantic: false``, the baseline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_proxy  # noqa: E402
import bench_store  # noqa: E402

from bead.config import parse  # noqa: E402
from bead.proxy.engine import Engine  # noqa: E402
from bead.recall import rank  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument(
        "--project-facts",
        type=int,
        default=300,
        help="near-miss facts (bead.evals.nearmiss) of the recorded requests' project, so that the "
        "requests' words find candidates to point to",
    )
    ap.add_argument("--semantic", action="store_true", help="compare bead[semantic]'s rescoring on and off instead")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bead-bench-recall-"))
    try:
        mem, *_ = bench_store.generated(root, args.facts, args.turns)
        from bead.evals import nearmiss

        for f in nearmiss.facts(args.project_facts, "demo", ["user_stated", "agent_observed"]):
            mem.write(f["key"], f["body"], f["type"], trust=f["trust"])
        if args.semantic:
            from bead.index import semantic

            print(bench_store.fill_vectors(mem, 7))
            semantic.model()  # loaded, as the proxy's warm-up has it a second after the start
        home = mem.home
        mem.close()
        engines = {
            "pointers on (default)": Engine(home, parse("")),
            "pointers off (baseline)": Engine(home, parse("recall:\n  pointers: 0\n")),
        }
        if args.semantic:
            engines = {
                "semantic on (default)": engines["pointers on (default)"],
                "semantic off (baseline)": Engine(home, parse("recall:\n  semantic: false\n")),
            }
        reqs = bench_proxy.load_requests()
        recall: dict[str, list[float]] = {name: [] for name in engines}
        prepare: dict[str, list[float]] = {name: [] for name in engines}
        pointed = 0
        for i in range(4):
            for e, (name, engine) in enumerate(engines.items()):
                for _path, _headers, body in reqs:
                    # Each round asks the same words: forget their vectors, so every request embeds its question
                    # as a new one would (bead.recall.rank keeps the last few for RECENT_S).
                    rank._recent.clear()
                    p = engine.prepare(body, {"x-bead-session": f"engine-{e}-round-{i}"})
                    if i == 0 or "prepare_ms" not in p.trace:
                        continue  # warm-up round (IDF statistics, caches) and side requests
                    prepare[name].append(p.trace["prepare_ms"])
                    if "recall_ms" in p.trace:
                        recall[name].append(p.trace["recall_ms"])
                    pointed += bool(p.trace.get("pointers"))
        q = lambda v: statistics.quantiles(v, n=20)[-1]  # noqa: E731
        on_name, off_name = list(engines)
        n = len(prepare[on_name])
        print(
            f"store: {args.facts:,} facts + {args.project_facts} of the requests' project, {args.turns:,} raw turns; "
            f"{n} requests per engine, "
            f"{pointed} of them with pointers"
        )
        for name in engines:
            print(
                f"{name:<24} recall step  p50 {statistics.median(recall[name]):6.2f} ms  p95 {q(recall[name]):6.2f} ms"
                f"   prepare  p50 {statistics.median(prepare[name]):6.2f} ms  p95 {q(prepare[name]):6.2f} ms"
            )
        on, off = recall[on_name], recall[off_name]
        print(
            f"{on_name.split(' (')[0]} / {off_name.split(' (')[0]}: recall step "
            f"p50 x{statistics.median(on) / statistics.median(off):.2f}, p95 x{q(on) / q(off):.2f}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
