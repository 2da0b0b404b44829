"""Indexer benchmark: prints figures, asserts nothing.

    python benchmarks/bench_indexer.py                  # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_indexer.py --facts 1000 --turns 20000

Figures: the start-up reconcile (a checksum diff of the whole store against
the index) when nothing changed and when the index is empty, and the time
from a hand edit (an editor's atomic save) to the new words being searchable
through a running `bead indexer`, against a baseline measured in the same
run: the same edit followed by `bead reindex`-style sync of that one key in
process (what bead's own commands do).

    python benchmarks/bench_indexer.py --session-only   # the long session alone (under 10 s)

And the indexer's work for each turn the proxy captures in one long session (2,000 turns of a coding session's
sizes, `--session-turns`): the proxy appends and indexes the turn itself, and the indexer, woken by the append,
checks the file; the baseline, timed on the same appends, is reading the session's whole file again (what the
indexer did for each turn before 2026-12-07).
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
from bead.index.rebuild import reconcile, sync_key, sync_raw  # noqa: E402
from bead.indexer.watch import Indexer  # noqa: E402
from bead.paths import Home  # noqa: E402
from bead.recall.rank import search_facts  # noqa: E402


def pct(v, q):
    return statistics.quantiles(v, n=100, method="inclusive")[q - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--session-turns", type=int, default=2_000)
    ap.add_argument("--session-only", action="store_true")
    args = ap.parse_args()
    if not args.session_only:
        store(args)
    if args.session_turns:
        session(args.session_turns)


def session(turns: int) -> None:
    """The indexer's work per captured turn of one long session, against reading the whole file again."""
    import random

    rng = random.Random(5)
    words = bench_store.vocabulary(rng, 2000)
    with tempfile.TemporaryDirectory(prefix="bead-bench-session-") as tmp:
        mem = Memory(Home(Path(tmp) / "home").ensure(), Config(owner="bench"))
        idx = Indexer(mem)
        new, old = [], []
        for i in range(turns):
            # A coding session's turns: a line of the person's, an answer, a tool's output of a few KB.
            size = (20, 60, 600)[i % 3]
            role = ("user", "assistant", "tool_output")[i % 3]
            got = mem.append_turns("bench-long", [(role, " ".join(rng.choice(words) for _ in range(size)), None, None, {})])
            path = got[0].path
            if i % 50 == 49 or i == turns - 1:
                t = time.perf_counter()
                idx.apply({path})
                new.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                sync_raw(mem.index, mem.raw, path)
                old.append((time.perf_counter() - t) * 1000)
        size_mb = path.stat().st_size / 1e6
        mem.close()
    print(f"one session of {turns:,} turns ({size_mb:.1f} MB), the indexer's work for a captured turn, sampled every 50:")
    print(f"  now (the index holds the file as it is): p50 {statistics.median(new):.2f} ms  p95 {pct(new, 95):.2f} ms")
    print(f"  baseline, the whole file read again:      p50 {statistics.median(old):.1f} ms  p95 {pct(old, 95):.1f} ms")
    print(f"  ratio at the last turn: {old[-1] / max(new[-1], 1e-6):.0f} x")


def store(args: argparse.Namespace) -> None:
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
