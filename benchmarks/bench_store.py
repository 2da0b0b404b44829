"""Store and index benchmark: prints figures, asserts nothing.

    python benchmarks/bench_store.py                 # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_store.py --facts 1000 --turns 20000   # a quick run
    python benchmarks/bench_store.py --turns 1000000 --store /var/tmp/bead-1m   # generate once, reuse after

With ``--store DIR`` the generated store is kept in DIR and reused by later
runs with the same sizes and seed (the 1,000,000-turn store takes minutes to
generate); every run still times its own reindex from the files.

Figures:
- write latency: `Memory.write` (flock, tombstone check, atomic write + fsync,
  supersede, audit, index update) against a baseline measured in the same run:
  the same bytes written with temp file + fsync + rename and nothing else;
- reindex throughput: `bead reindex`'s rebuild over the whole store;
- search p50/p95 over facts and over raw turns, against a baseline of the
  bare FTS5 MATCH ... ORDER BY rank query on the same tables;
- with ``--semantic`` (bead[semantic] installed): every raw turn gets a vector (random unit vectors, written
  straight into ``raw_vec``: this measures time and size, not quality, and embedding a million turns would take
  hours), then the raw search again with the rescoring on (the query's embedding included), beside BM25 alone
  from the same run; and the model's throughput on the store's own turns (what the indexer's background pass
  does per turn).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bead.config import Config  # noqa: E402
from bead.core.memory import Memory  # noqa: E402
from bead.files import atomic_write  # noqa: E402
from bead.index import sqlite as sqlite_check  # noqa: E402
from bead.index.query import fts_or_query  # noqa: E402
from bead.index.rebuild import rebuild  # noqa: E402
from bead.paths import Home  # noqa: E402
from bead.recall.rank import search_facts, search_raw  # noqa: E402
from bead.store.audit import iso  # noqa: E402
from bead.store.facts import Fact  # noqa: E402

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def vocabulary(rng: random.Random, n: int = 6000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


_CUM: dict[tuple[int, float, float], list[float]] = {}


def sentence(rng: random.Random, vocab: list[str], weights: list[float], k: int) -> str:
    # The same draws as choices(weights=...), without summing the weights again on every call.
    key = (len(weights), weights[0], weights[-1])
    cum = _CUM.get(key)
    if cum is None:
        cum = _CUM[key] = list(itertools.accumulate(weights))
    return " ".join(rng.choices(vocab, cum_weights=cum, k=k))


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def fmt(values: list[float]) -> str:
    return f"p50 {statistics.median(values):8.3f} ms   p95 {pct(values, 95):8.3f} ms"


def populate(mem: Memory, rng, vocab, weights, n_facts: int, n_turns: int) -> dict:
    """Fact files written directly (the bulk), raw turns through the append path."""
    t = time.perf_counter()
    kinds = ("user", "feedback", "project", "reference")
    for i in range(n_facts):
        key = f"project/p{i % 50}/fact-{i}" if i % 5 else f"user/fact-{i}"
        body = sentence(rng, vocab, weights, rng.randint(8, 30))
        f = Fact(key=key, version=1, type=kinds[i % 4], body=body, owner="bench", valid_from=iso(T0))
        path = mem.facts.key_dir(key) / "v1.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.render())
    facts_s = time.perf_counter() - t
    t = time.perf_counter()
    per_session = 100
    for s in range(max(1, n_turns // per_session)):
        start = T0 + timedelta(hours=s)
        items = [
            (
                "user" if j % 2 == 0 else "assistant",
                sentence(rng, vocab, weights, rng.randint(10, 80)),
                start + timedelta(seconds=j),
                None,
            )
            for j in range(per_session)
        ]
        mem.raw.append_many(f"sess-{s:05d}", items)
    raw_s = time.perf_counter() - t
    return {
        "facts_generated_s": round(facts_s, 2),
        "raw_appended_s": round(raw_s, 2),
        "raw_append_turns_per_s": round(n_turns / raw_s),
    }


def generated(root: Path, n_facts: int, n_turns: int, seed: int = 7, index: bool = True):
    """(memory, rng, vocab, weights) over a generated store under ``root``, indexed when asked."""
    from bead.index.rebuild import rebuild as rebuild_index

    rng = random.Random(seed)
    vocab = vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    mem = Memory(Home(root / "home").ensure(), Config(owner="bench"))
    mem.index  # noqa: B018 - the empty index first, so that populating does not index twice
    populate(mem, rng, vocab, weights, n_facts, n_turns)
    if index:
        rebuild_index(mem.index, mem.facts, mem.raw)
    return mem, rng, vocab, weights


def bench_writes(mem: Memory, rng, vocab, weights, n: int, scratch: Path) -> dict:
    bead_ms, base_ms = [], []
    run = int(time.time())  # a reused store already holds the values an earlier run wrote
    for i in range(n):
        body = sentence(rng, vocab, weights, 20)
        key = f"project/bench/write-{run}-{i % 50}"
        t = time.perf_counter()
        res = mem.write(key, body, "project")
        bead_ms.append((time.perf_counter() - t) * 1000)
        data = res.fact.render()
        t = time.perf_counter()
        atomic_write(scratch / f"w{i}.md", data, root=scratch)
        base_ms.append((time.perf_counter() - t) * 1000)
    return {"bead_ms": bead_ms, "baseline_ms": base_ms}


def fill_vectors(mem: Memory, seed: int) -> dict:
    """A random unit vector for every raw turn (timing and size only), and the model's throughput on 512 of the
    store's turns."""
    import numpy as np

    from bead.index import semantic

    model = semantic.model()
    if model is None:
        raise SystemExit(f"--semantic needs bead[semantic]: pip install -e '.[semantic]' ({semantic.failure() or 'missing'})")
    rng = np.random.default_rng(seed)
    conn = mem.index._conn
    rowids = [r for (r,) in conn.execute("SELECT rowid FROM raw ORDER BY rowid")]
    t = time.perf_counter()
    with mem.index.write_tx():
        for i in range(0, len(rowids), 10_000):
            chunk = rowids[i : i + 10_000]
            v = rng.standard_normal((len(chunk), semantic.DIM)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            conn.executemany("INSERT INTO raw_vec(rowid, vec) VALUES (?, ?)", zip(chunk, map(model.blob, v), strict=True))
    fill_s = time.perf_counter() - t
    # The facts' vectors are real (a few thousand short texts: seconds), as the pointers' order reads them.
    built = mem.index.built_at()
    while rows := mem.index.facts_unembedded(256):
        vecs = model.embed([semantic.fact_text(r["key"], r["body"]) for r in rows])
        mem.index.put_fact_vectors(
            [(r["id"], model.blob(v), r["key"], r["body"]) for r, v in zip(rows, vecs, strict=True)], built
        )
    sample = mem.index.fill_raw_text(
        mem.index._rows(
            "SELECT f.path AS path, r.off, r.len FROM raw r JOIN raw_files f ON f.id = r.file ORDER BY r.rowid DESC LIMIT 512", []
        )
    )
    t = time.perf_counter()
    model.embed([r["text"] for r in sample])
    embed_s = time.perf_counter() - t
    return {
        "vectors": len(rowids),
        "fact_vectors": mem.index.fact_vector_count(),
        "fill_s": round(fill_s, 1),
        "embed_turns_per_s": round(len(sample) / embed_s),
    }


def bench_search(mem: Memory, rng, vocab, weights, n: int, semantic_on: bool = False) -> dict:
    # The baseline runs the bare FTS5 query on a connection of its own.
    conn = sqlite_check.module().connect(str(mem.home.index_db))
    out = {k: [] for k in ("facts", "facts_base", "raw", "raw_base", *(("raw_semantic",) if semantic_on else ()))}
    mem.index.semantic = False  # BM25 alone first; the rescoring beside it with --semantic
    # Queries skip the 100 most frequent words: in real text those are the
    # stopwords that bead's query builder drops before FTS5 sees them.
    for _ in range(n):
        q = sentence(rng, vocab[100:], weights[100:], rng.randint(3, 8))
        fts = fts_or_query(q)
        t = time.perf_counter()
        search_facts(mem.index, q, limit=10)
        out["facts"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        conn.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? ORDER BY rank LIMIT 10", [fts]).fetchall()
        out["facts_base"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        search_raw(mem.index, q, limit=10)
        out["raw"].append((time.perf_counter() - t) * 1000)
        if semantic_on:
            mem.index.semantic = True
            t = time.perf_counter()
            search_raw(mem.index, q, limit=10)
            out["raw_semantic"].append((time.perf_counter() - t) * 1000)
            mem.index.semantic = False
        t = time.perf_counter()
        conn.execute("SELECT rowid FROM raw_fts WHERE raw_fts MATCH ? ORDER BY rank LIMIT 10", [fts]).fetchall()
        out["raw_base"].append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--store", type=Path, help="keep the generated store here and reuse it on later runs")
    ap.add_argument("--semantic", action="store_true", help="also time the raw search with bead[semantic]'s rescoring")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    vocab = vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like, as words are
    root = args.store or Path(tempfile.mkdtemp(prefix="bead-bench-"))
    marker = root / "generated.json"
    wanted = {"facts": args.facts, "turns": args.turns, "seed": args.seed}
    try:
        stored = json.loads(marker.read_text()) if args.store is not None and marker.exists() else {}
        reuse = {k: stored.get(k) for k in wanted} == wanted
        mem = Memory(Home(root / "home").ensure(), Config(owner="bench"))
        if reuse:
            gen = stored["gen"]
            # A fresh, empty index (an old one may be of another schema, which opening would rebuild
            # untimed): only the timed rebuild below fills it.
            for p in (root / "home").glob("index.db*"):
                p.unlink()
            from bead.index.db import Index

            mem._index = Index(mem.home.index_db, mem.home.store)
            # The generator's draws, replayed, so the queries below are the same as in a fresh run.
            populate_draws(rng, vocab, weights, args.facts, args.turns)
        else:
            mem.index  # noqa: B018 - create the empty index now, so that only the timed rebuild below fills it
            gen = populate(mem, rng, vocab, weights, args.facts, args.turns)
            if args.store is not None:
                marker.write_text(json.dumps({**wanted, "gen": gen}))
        t = time.perf_counter()
        counts, problems = rebuild(mem.index, mem.facts, mem.raw)
        reindex_s = time.perf_counter() - t
        writes = bench_writes(mem, rng, vocab, weights, args.writes, root / "scratch")
        vectors = fill_vectors(mem, args.seed) if args.semantic else None
        search = bench_search(mem, rng, vocab, weights, args.queries, args.semantic)
        db_mb = sum(p.stat().st_size for p in (root / "home").glob("index.db*")) / 1e6
        raw_mb = sum(p.stat().st_size for p in mem.raw.files()) / 1e6
        result = {
            "store": {
                "facts": args.facts,
                "raw_turns": args.turns,
                **gen,
                "index_mb": round(db_mb, 1),
                "raw_files_mb": round(raw_mb, 1),
            },
            "reindex": {
                "seconds": round(reindex_s, 2),
                **counts,
                "facts_per_s": round(counts["fact_versions"] / reindex_s),
                "turns_per_s": round(counts["raw_turns"] / reindex_s),
            },
            "write_ms": {
                "p50": statistics.median(writes["bead_ms"]),
                "p95": pct(writes["bead_ms"], 95),
                "baseline_p50": statistics.median(writes["baseline_ms"]),
                "ratio_p50": statistics.median(writes["bead_ms"]) / statistics.median(writes["baseline_ms"]),
            },
            "search_ms": {k: {"p50": statistics.median(v), "p95": pct(v, 95)} for k, v in search.items()},
            "semantic": vectors,
            "cpus": os.cpu_count(),
        }
        if args.json:
            print(json.dumps(result, indent=2))
            return
        s = result["store"]
        print(
            f"store: {s['facts']:,} facts, {s['raw_turns']:,} raw turns ({s['raw_files_mb']} MB of raw files); "
            f"index.db {s['index_mb']} MB; "
            f"raw append {s['raw_append_turns_per_s']:,} turns/s (secret scan included)"
        )
        r = result["reindex"]
        print(
            f"reindex: {r['seconds']} s for {r['fact_versions']:,} fact versions + {r['raw_turns']:,} turns "
            f"({r['turns_per_s']:,} turns/s)"
        )
        print(f"write      {fmt(writes['bead_ms'])}")
        print(
            f"  baseline {fmt(writes['baseline_ms'])}   (atomic write + fsync alone)   "
            f"ratio p50 {result['write_ms']['ratio_p50']:.1f}x"
        )
        for corpus in ("facts", "raw"):
            a, b = search[corpus], search[corpus + "_base"]
            print(f"search {corpus:<5} {fmt(a)}")
            print(f"  baseline   {fmt(b)}   (bare FTS5 MATCH)   ratio p50 {statistics.median(a) / statistics.median(b):.2f}x")
        if vectors:
            a, b = search["raw_semantic"], search["raw"]
            print(f"search raw + semantic rescoring {fmt(a)}")
            print(f"  baseline   {fmt(b)}   (BM25 alone, above)   ratio p50 {statistics.median(a) / statistics.median(b):.2f}x")
            print(
                f"  {vectors['vectors']:,} vectors written in {vectors['fill_s']} s (random: time and size only); "
                f"the model embeds {vectors['embed_turns_per_s']:,} of the store's turns a second (one thread)"
            )
        mem.close()
    finally:
        if args.store is None:
            shutil.rmtree(root, ignore_errors=True)


def populate_draws(rng, vocab, weights, n_facts: int, n_turns: int) -> None:
    """Advance ``rng`` exactly as ``populate`` does, without writing anything."""
    for _ in range(n_facts):
        sentence(rng, vocab, weights, rng.randint(8, 30))
    for _ in range(max(1, n_turns // 100)):
        for _ in range(100):
            sentence(rng, vocab, weights, rng.randint(10, 80))


if __name__ == "__main__":
    main()
