"""Fact write benchmark: prints figures, asserts nothing.

    python benchmarks/bench_writes.py                  # 10 and 10,000 versions, 8 writers x 200
    python benchmarks/bench_writes.py --writes 50 --writers 4 --per-writer 50   # a quick run

Figures:
- write latency (`Memory.write`: lock, tombstone check, file, status of the
  previous version, key state, audit, index row) on one key that already has
  10 versions and on one that has 10,000, against a baseline measured in the
  same run: the same bytes written with temp file + fsync + rename alone;
- 8 processes writing 200 values each to one key at once: wall time, and
  whether every value landed (contiguous versions, one current, index rows).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bead.config import Config  # noqa: E402
from bead.core.memory import Memory  # noqa: E402
from bead.files import atomic_write  # noqa: E402
from bead.index.rebuild import sync_key  # noqa: E402
from bead.paths import Home  # noqa: E402
from bead.store.audit import iso  # noqa: E402
from bead.store.facts import Fact  # noqa: E402


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def fmt(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.2f} ms   p95 {pct(values, 95):7.2f} ms"


def seed_versions(mem: Memory, key: str, n: int) -> None:
    """``n`` superseded versions written straight to disk (as years of writes would leave them), then indexed."""
    d = mem.home.fact_dir(key)
    d.mkdir(parents=True, exist_ok=True)
    for v in range(1, n + 1):
        f = Fact(
            key=key,
            version=v,
            type="project",
            body=f"value number {v} of a busy key",
            owner="bench",
            status="current" if v == n else "superseded",
            supersedes=f"{key}@v{v - 1}" if v > 1 else None,
            valid_from=iso(mem.clock()),
        )
        (d / f"v{v}.md").write_bytes(f.render())
    sync_key(mem.index, mem.facts, key)


def timed_writes(mem: Memory, key: str, n: int, scratch: Path) -> tuple[list[float], list[float]]:
    bead_ms, base_ms = [], []
    for i in range(n):
        t = time.perf_counter()
        res = mem.write(key, f"value {i} written under load", "project")
        bead_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        atomic_write(scratch / f"w{i}.md", res.fact.render(), root=scratch)
        base_ms.append((time.perf_counter() - t) * 1000)
    return bead_ms, base_ms


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from bead.config import Config
    from bead.core.memory import Memory
    from bead.paths import Home
    home, who, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    with Memory(Home(home), Config(owner="bench")) as m:
        for j in range(n):
            m.write("project/race/counter", f"writer {who} value {j}", "project")
""")


def race(root: Path, writers: int, per_writer: int) -> dict:
    home = Home(root / "race").ensure()
    Memory(home, Config(owner="bench")).close()
    repo = str(Path(__file__).resolve().parent.parent)
    t = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home.root), str(i), str(per_writer)], cwd=repo)
        for i in range(writers)
    ]
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - t
    with Memory(home, Config(owner="bench")) as m:
        kv = m.versions("project/race/counter")
        want = {f"writer {i} value {j}" for i in range(writers) for j in range(per_writer)}
        got = {f.body for f in kv.facts}
        rows = m.index.counts()["fact_versions"]
    return {
        "wall_s": wall,
        "exit_codes": codes,
        "versions": len(kv.numbers),
        "contiguous": kv.numbers == tuple(range(1, writers * per_writer + 1)),
        "lost": len(want - got),
        "current": [f.status for f in kv.facts].count("current"),
        "index_rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writes", type=int, default=200, help="timed writes per key")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--per-writer", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bead-bench-writes-") as tmp:
        root = Path(tmp)
        (root / "scratch").mkdir()
        mem = Memory(Home(root / "home").ensure(), Config(owner="bench"))
        print(
            f"write latency, {args.writes} writes per key (file + fsync, status of the previous version, "
            "key state, audit, index row):"
        )
        for n in (10, 10_000):
            key = f"project/bench/key-{n}"
            t = time.perf_counter()
            seed_versions(mem, key, n)
            seeded = time.perf_counter() - t
            bead_ms, base_ms = timed_writes(mem, key, args.writes, root / "scratch")
            print(f"  key with {n:>6,} versions  {fmt(bead_ms)}   (seeded in {seeded:.1f} s)")
            print(
                f"    baseline              {fmt(base_ms)}   (atomic write + fsync alone)   "
                f"ratio p50 {statistics.median(bead_ms) / statistics.median(base_ms):.1f}x"
            )
        mem.close()
        r = race(root, args.writers, args.per_writer)
        total = args.writers * args.per_writer
        print(
            f"{args.writers} writers x {args.per_writer} writes to one key: wall {r['wall_s']:.1f} s "
            f"({total / r['wall_s']:.0f} writes/s); exit codes {sorted(set(r['exit_codes']))}; "
            f"{r['versions']} versions, contiguous {r['contiguous']}, {r['lost']} values lost, "
            f"{r['current']} current, {r['index_rows']} index rows"
        )


if __name__ == "__main__":
    main()
