"""Indexer benchmark: prints figures, asserts nothing.

    python benchmarks/bench_indexer.py                  # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_indexer.py --facts 1000 --turns 20000

Figures: the start-up reconcile (a checksum diff of the whole store against
the index) when nothing changed and when the index is empty, and the time
from a hand edit (an editor's atomic save) to the new words being searchable
through a running `bead indexer`, against a baseline measured in the same
run: the same edit followed by `bead reindex`-style sync of that one key in
process (what bead's own commands do).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_store  # noqa: E402

from bead.config import Config  # noqa: E402
from bead.core.memory import Memory  # noqa: E402
from bead.index.rebuild import reconcile, sync_key  # noqa: E402
from bead.recall.rank import search_facts  # noqa: E402


def pct(v, q):
    return statistics.quantiles(v, n=100, method="inclusive")[q - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--edits", type=int, default=40)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bead-bench-indexer-"))
    proc = None
    try:
        mem, rng, _, _ = bench_store.generated(root, args.facts, args.turns, seed=11, index=False)
        home = mem.home
        t = time.perf_counter()
        d, _ = reconcile(mem.index, mem.facts, mem.raw)
        empty_s = time.perf_counter() - t
        t = time.perf_counter()
        d2, _ = reconcile(mem.index, mem.facts, mem.raw)
        clean_s = time.perf_counter() - t
        keys = list(mem.facts.keys())
        # Baseline: edit, then sync the key in process.
        base = []
        for i in range(args.edits):
            key = rng.choice(keys)
            path = mem.facts.key_dir(key) / "v1.md"
            text = path.read_text()
            t = time.perf_counter()
            tmp = path.parent / ".v1.md.swp"
            tmp.write_text(text.rstrip("\n") + f" baselineword{i}\n")
            os.replace(tmp, path)
            sync_key(mem.index, mem.facts, key)
            search_facts(mem.index, f"baselineword{i}")
            base.append((time.perf_counter() - t) * 1000)
        mem.close()
        log = open(root / "indexer.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "bead", "indexer"],
            env={**os.environ, "BEAD_HOME": str(home.root)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        while b"watching" not in (root / "indexer.log").read_bytes():
            time.sleep(0.05)
        reader = Memory(home, Config(owner="bench"))
        lat = []
        for i in range(args.edits):
            key = rng.choice(keys)
            path = reader.facts.key_dir(key) / "v1.md"
            text = path.read_text()
            word = f"editword{i}x"
            t = time.perf_counter()
            tmp = path.parent / ".v1.md.swp"
            tmp.write_text(text.rstrip("\n") + f" {word}\n")
            os.replace(tmp, path)
            while not search_facts(reader.index, word):
                time.sleep(0.002)
            lat.append((time.perf_counter() - t) * 1000)
        reader.close()
        print(f"store: {args.facts:,} facts, {args.turns:,} raw turns")
        print(f"reconcile at start: {empty_s:.1f} s with an empty index ({d.as_dict()}), {clean_s:.2f} s when nothing changed")
        print(
            f"hand edit -> searchable via bead indexer: p50 {statistics.median(lat):.0f} ms  p95 {pct(lat, 95):.0f} ms "
            f"(includes the {150} ms quiet period)"
        )
        print(f"  baseline, same edit + in-process sync:  p50 {statistics.median(base):.1f} ms  p95 {pct(base, 95):.1f} ms")
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
