"""kind: raw-recall: retrieval over raw turn history."""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from ..index.rebuild import rebuild
from ..recall import rank
from ..recall.rank import search_raw
from .suite import embed_store, percentile, temp_memory

_SYNTHETIC_START = datetime(2020, 1, 1, 9, 0, tzinfo=UTC)


def _session_id(raw_id: str) -> str:
    from ..store.rawlog import _SESSION

    return raw_id if _SESSION.match(raw_id) else "s-" + hashlib.sha256(raw_id.encode()).hexdigest()[:16]


def _start(session: dict, i: int) -> datetime:
    started = session.get("started")
    if isinstance(started, datetime):
        return started if started.tzinfo else started.replace(tzinfo=UTC)
    if started:
        return datetime.fromisoformat(str(started))
    return _SYNTHETIC_START + timedelta(days=i)


def populate(mem, suite: dict) -> dict[str, str]:
    """The suite's sessions into the raw log and the index; {``<session>#<n>``: the turn's ref}."""
    refs: dict[str, str] = {}
    for i, session in enumerate(suite.get("sessions") or []):
        start = _start(session, i)
        items = [
            (t.get("role", "user"), str(t.get("text", "")), start + timedelta(minutes=j), str(t["ref"]))
            for j, t in enumerate(session.get("turns") or [])
        ]
        for turn in mem.raw.append_many(_session_id(str(session["id"])), items):
            refs[f"{turn.session}#{turn.n}"] = str(turn.ref)
    rebuild(mem.index, mem.facts, mem.raw)
    if rank.SEMANTIC_ALPHA:
        embed_store(mem)
    return refs


def score(q: dict, refs: list[str], k_small: int = 5, k: int = 10) -> dict:
    """One query's figures from the refs retrieved, best first."""
    evidence = list(dict.fromkeys(str(e) for e in q.get("evidence") or []))
    stale = [str(s) for s in q.get("stale") or []]
    r_small = sum(e in refs[:k_small] for e in evidence) / len(evidence)
    r_k = sum(e in refs[:k] for e in evidence) / len(evidence)
    first_ev = min((i for i, r in enumerate(refs) if r in evidence), default=None)
    first_stale = min((i for i, r in enumerate(refs) if r in stale), default=None)
    stale_first = None
    if stale:
        stale_first = first_stale is not None and (first_ev is None or first_stale < first_ev)
    return {
        "id": q.get("id"),
        "category": str(q.get("category", "")),
        "recall_at_5": r_small,
        "recall_at_10": r_k,
        "all_at_10": r_k == 1.0,
        "stale_first": stale_first,
        "retrieved": refs,
    }


def run(suite: dict, k_small: int = 5, k: int = 10) -> dict:
    with temp_memory() as mem:
        populate(mem, suite)
        per_query, latencies, skipped = [], [], 0
        for q in suite.get("queries") or []:
            if not q.get("evidence"):
                skipped += 1
                continue
            t0 = time.perf_counter()
            hits = search_raw(mem.index, q["query"], limit=k)
            latencies.append((time.perf_counter() - t0) * 1000)
            per_query.append(score(q, [h.row["ref"] for h in hits], k_small, k))
    return summarise(suite["name"], per_query, latencies, skipped)


def summarise(name: str, per_query: list[dict], latencies: list[float], skipped: int) -> dict:
    n = len(per_query) or 1
    with_stale = [q for q in per_query if q["stale_first"] is not None]
    cats: dict[str, list[dict]] = defaultdict(list)
    for q in per_query:
        cats[q["category"]].append(q)
    return {
        "kind": "raw-recall",
        "name": name,
        "queries": len(per_query),
        "skipped": skipped,
        "recall_at_5": round(sum(q["recall_at_5"] for q in per_query) / n, 3),
        "recall_at_10": round(sum(q["recall_at_10"] for q in per_query) / n, 3),
        "all_at_10": round(sum(q["all_at_10"] for q in per_query) / n, 3),
        "stale_first": round(sum(q["stale_first"] for q in with_stale) / len(with_stale), 3) if with_stale else None,
        "stale_queries": len(with_stale),
        "categories": {
            c: {
                "queries": len(qs),
                "recall_at_5": round(sum(q["recall_at_5"] for q in qs) / len(qs), 3),
                "recall_at_10": round(sum(q["recall_at_10"] for q in qs) / len(qs), 3),
            }
            for c, qs in sorted(cats.items())
        },
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "details": per_query,
    }


def combine(results: list[dict], name: str) -> dict:
    """Pool several suites' queries into one figure (weighted by query count)."""
    per_query = [q for r in results for q in r["details"]]
    return summarise(name, per_query, [], sum(r["skipped"] for r in results)) | {
        "p50_ms": round(max(r["p50_ms"] for r in results), 2),
        "p95_ms": round(max(r["p95_ms"] for r in results), 2),
    }


def table(result: dict) -> str:
    sf = "-" if result["stale_first"] is None else f"{result['stale_first']:.2f} ({result['stale_queries']} q)"
    lines = [
        f"{result['name']} (raw-recall, {result['queries']} queries, {result['skipped']} skipped)",
        f"  recall@5 {result['recall_at_5']:.3f}  recall@10 {result['recall_at_10']:.3f}  "
        f"all@10 {result['all_at_10']:.3f}  stale_first {sf}  p50 {result['p50_ms']:.2f} ms  p95 {result['p95_ms']:.2f} ms",
    ]
    for c, r in result["categories"].items():
        lines.append(
            f"    category {c:<28} {r['queries']:>4} q  recall@5 {r['recall_at_5']:.3f}  recall@10 {r['recall_at_10']:.3f}"
        )
    return "\n".join(lines)
