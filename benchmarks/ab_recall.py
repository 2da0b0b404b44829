"""The proxy's recall step of two checkouts side by side, request by request: prints figures, asserts nothing.

    git worktree add /tmp/old 50c6694
    python benchmarks/ab_recall.py /tmp/old                 # that commit against this checkout
    python benchmarks/ab_recall.py /tmp/old --config 'recall: {pointers: 0}'

This machine's speed moves by half from one minute to the next (a fixed Python loop: 0.36 to 0.66 s over half a
minute, idle), so two runs of ``bench_recall.py`` one after the other do not tell a change of a fifth from drift.
Here each checkout runs in its own process (its own ``bead``, the same Python), each over its own copy of the same
generated store (``bench_store.generated``, 10,000 facts and 20,000 raw turns, and 300 near misses of the recorded
requests' project); the two take turns on every recorded Claude Code request, in alternating order, so both see
the same moments of the machine. The first round warms up (IDF statistics, caches) and is not counted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def worker(facts: int, turns: int, project_facts: int, config: str) -> None:
    """One checkout's side (the current directory's): builds the store, then serves ``ROUND INDEX`` lines from stdin
    with one request each, answering the recall step's and the whole step's milliseconds as JSON."""
    root = Path.cwd()
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    import bench_proxy
    import bench_store

    from bead.config import parse
    from bead.evals import nearmiss
    from bead.proxy.engine import Engine
    from bead.recall import rank

    tmp = Path(tempfile.mkdtemp(prefix="bead-ab-"))
    try:
        mem, *_ = bench_store.generated(tmp, facts, turns)
        for f in nearmiss.facts(project_facts, "demo", ["user_stated", "agent_observed"]):
            mem.write(f["key"], f["body"], f["type"], trust=f["trust"])
        home = mem.home
        mem.close()
        engine = Engine(home, parse(config))
        reqs = bench_proxy.load_requests()
        print(json.dumps({"requests": len(reqs)}), flush=True)
        for line in sys.stdin:
            rnd, j = map(int, line.split())
            rank._recent.clear()  # every round asks anew, as a new question would
            p = engine.prepare(reqs[j][2], {"x-bead-session": f"round-{rnd}"})
            print(json.dumps([p.trace.get("recall_ms"), p.trace.get("prepare_ms")]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("other", help="another checkout of bead (a git worktree of the commit to compare with)")
    ap.add_argument("--rounds", type=int, default=10, help="rounds over the recorded requests (the first warms up)")
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--project-facts", type=int, default=300)
    ap.add_argument("--config", default="", help="bead's configuration (YAML) for both sides")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.facts, args.turns, args.project_facts, args.config)
        return
    sides = {"other": Path(args.other).resolve(), "this": HERE.parent.parent}
    for name, path in sides.items():
        if not (path / "bead" / "__init__.py").is_file():
            sys.exit(f"{path} holds no bead checkout ({name})")
    cmd = [sys.executable, str(HERE), ".", "--worker", "--facts", str(args.facts), "--turns", str(args.turns)]
    cmd += ["--project-facts", str(args.project_facts), "--config", args.config]
    procs = {
        name: subprocess.Popen(cmd, cwd=path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for name, path in sides.items()
    }
    try:
        ready = {name: json.loads(p.stdout.readline())["requests"] for name, p in procs.items()}  # type: ignore[union-attr]
        n = min(ready.values())
        recall: dict[str, list[float]] = {name: [] for name in procs}
        prepare: dict[str, list[float]] = {name: [] for name in procs}
        t0 = time.monotonic()
        for rnd in range(args.rounds):
            for j in range(n):
                order = list(procs) if (rnd + j) % 2 == 0 else list(procs)[::-1]
                for name in order:
                    p = procs[name]
                    p.stdin.write(f"{rnd} {j}\n")  # type: ignore[union-attr]
                    p.stdin.flush()  # type: ignore[union-attr]
                    r_ms, p_ms = json.loads(p.stdout.readline())  # type: ignore[union-attr]
                    if rnd and r_ms is not None:
                        recall[name].append(r_ms)
                        prepare[name].append(p_ms)
    finally:
        for p in procs.values():
            p.stdin.close()  # type: ignore[union-attr]
            p.wait()
    q = lambda v: statistics.quantiles(v, n=20)[-1]  # noqa: E731
    print(
        f"store: {args.facts:,} facts + {args.project_facts} of the requests' project, {args.turns:,} raw turns; "
        f"{len(recall['this'])} recall steps a side, taking turns ({time.monotonic() - t0:.0f} s)"
    )
    for name in procs:
        print(
            f"{name:<5} {str(sides[name])[-40:]:<40} recall step p50 {statistics.median(recall[name]):6.2f} ms  "
            f"p95 {q(recall[name]):6.2f} ms   prepare p50 {statistics.median(prepare[name]):6.2f} ms"
        )
    a, b = recall["other"], recall["this"]
    print(f"this / other: recall step p50 x{statistics.median(b) / statistics.median(a):.2f}, p95 x{q(b) / q(a):.2f}")


if __name__ == "__main__":
    main()
