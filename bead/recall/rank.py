"""Ranking policy over the index's BM25 candidates.

The index finds and scores candidates (BM25); what counts for more than the
words is decided here: the reference design's (docs/design.md) boosts for facts (the
person's own word, the active scope) and a recency tilt for raw turns, so
that of two turns about the same thing the newer one wins a near tie.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ..index import semantic
from ..index.db import ANY_PROJECT, RAW_CHARS, AnyProject, Index, stem
from ..index.query import RAW_QUERY_STOPWORDS, Visibility, terms
from ..store.keys import PERSON_TRUSTS

log = logging.getLogger("bead.recall")

USER_STATED_BOOST = 1.2
SCOPE_BOOST = 1.5
RECENCY = 0.0  # a tilt towards newer turns: cross-validation over conversations chose none (docs/results.md)
RECENCY_POOL = 3  # candidates per result that the recency tilt may reorder
# bead[semantic]: a raw candidate's score is its BM25 over the best candidate's plus SEMANTIC_ALPHA times the cosine
# of its vector and the query's (BM25's own candidates only, so no other vector is read). Chosen by
# cross-validation over conversations (evals/grids/raw.yaml, docs/results.md); 0 is BM25 alone.
SEMANTIC_ALPHA = 2.0
QUERY_VECTOR_WAIT_S = 0.25  # past this (a machine too busy to embed a question), BM25's order stands
NEWER_FIRST = True  # of two retrieved turns that state a value for the same thing, the newer ranks first
NEWER_SHARE = 0.6  # of the older turn's matched query terms a newer one must match to restate it
NEWER_OWN = 0.8  # and of its own matched query terms, the older turn must match (it is about the same)
# A question that asks for a value ("how many", "what is", "when"): its answer may have changed.
VALUE_QUESTION = re.compile(
    r"^[ \t]{0,16}(?:how (?:many|much|long|often|fast|big)|what(?:'s| is| was| are| were)"
    r"|when|which)\b",
    re.I,
)
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Hit:
    corpus: str  # "fact" | "raw"
    id: str
    score: float  # higher is better
    text: str
    row: dict[str, Any]


def search_facts(
    index: Index,
    query: str,
    limit: int = 10,
    current_only: bool = True,
    scope: str | None = None,
    include_dormant: bool = True,
    visible: Visibility | None = None,
    in_project: str | None = None,
    scope_boost: float | None = None,
    only_scope: str | None = None,
) -> list[Hit]:
    """Facts by BM25 (key words count double), then the boosts (``visible``: one team member's facts only;
    ``in_project``: only what a conversation of that ``project/<name>`` may be given, Index.fact_candidates;
    ``scope_boost``: the factor of ``scope``'s own facts, SCOPE_BOOST unless given; ``only_scope``: that scope's
    facts alone)."""
    boost = SCOPE_BOOST if scope_boost is None else scope_boost
    hits = []
    for row in index.fact_candidates(query, max(limit * 3, 20), current_only, include_dormant, visible, in_project, only_scope):
        score = row["bm25"]
        if row["trust"] in PERSON_TRUSTS:
            score *= USER_STATED_BOOST
        if scope and row["scope"] == scope:
            score *= boost
        hits.append(Hit("fact", row["id"], score, row["body"], row))
    hits.sort(key=lambda h: -h.score)
    return hits[:limit]


def search_raw(
    index: Index,
    query: str,
    limit: int = 10,
    exclude_sessions: Iterable[str] = (),
    recency: float | None = None,
    by_meaning: bool = True,
    project: str | None | AnyProject = ANY_PROJECT,
) -> list[Hit]:
    """Raw turns by BM25, then a recency tilt among the strongest candidates; ``project``: only turns said in it
    or in none (Index.raw_candidates).

    A turn that states a changed value usually shares the old turn's words;
    among candidates of comparable BM25 score the newer one should win, so
    each candidate's score is multiplied by ``1 + recency * r`` where r runs
    from 0 (oldest candidate) to 1 (newest).
    """
    recency = RECENCY if recency is None else recency
    # On another core while BM25 runs. ``by_meaning=False``: a query that is no question (the cue gate's bag of
    # terms), where the rescoring was never measured.
    pending = embed_query(index, query) if SEMANTIC_ALPHA and by_meaning else None
    kept = index.raw_candidates(query, max(limit * RECENCY_POOL, limit), exclude_sessions, with_text=False, project=project)
    if recency and len(kept) > 1:
        # Rank of (time, turn number) among the candidates: 0 oldest, 1 newest.
        order = sorted(range(len(kept)), key=lambda i: (kept[i]["at"], kept[i]["session"], kept[i]["n"]))
        r = {i: pos / (len(kept) - 1) for pos, i in enumerate(order)}
        scored = sorted((row["bm25"] * (1 + recency * r[i]), -i) for i, row in enumerate(kept))
        kept = [kept[-i] for _, i in reversed(scored)]
    kept = rescore(index, kept, pending)
    # The score the list is ranked by: BM25, or with the rescoring BM25 over the best plus the meaning term.
    hits = [Hit("raw", r["id"], r.get("rank_score", r["bm25"]), r["text"], r) for r in index.fill_raw_text(kept[:limit])]
    return newer_first(hits, query)


_query_pool: ThreadPoolExecutor | None = None
# A question's vector is shared for a few seconds: a conversation's first request asks the same words for the pinned
# block and for the pointers. Kept under a digest of the words (not the words), at most RECENT_QUERIES of them.
RECENT_QUERIES = 8
RECENT_S = 5.0
_recent: dict[str, tuple[float, Future[Any]]] = {}
_query_pool_lock = threading.Lock()


def embed_query(index: Index, query: str) -> Future[Any] | None:
    """The query's vector, being computed in a worker thread (the model and SQLite both let go of the GIL, so it
    runs beside a search); None where bead[semantic] is off or the model not ready.

    The same words asked again within RECENT_S get the same future, whether it is still being computed, holds
    the vector, or failed (a request does not ask, and wait, twice). Every waiter waits against one instant,
    QUERY_VECTOR_WAIT_S after the question was first asked, so waits never add up."""
    global _query_pool
    if not index.semantic or not query.strip():
        return None
    sock = index.semantic_socket
    key = hashlib.sha256(f"{sock}\0{query}".encode("utf-8", "surrogatepass")).hexdigest()
    with _query_pool_lock:
        if _query_pool is None:
            _query_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bead-query-vector")
        now = time.monotonic()
        for k in [k for k, (at, _) in _recent.items() if now - at > RECENT_S]:
            del _recent[k]
        same = _recent.get(key)
        if same is not None and not same[1].cancelled():
            setattr(same[1], "bead_holders", getattr(same[1], "bead_holders", 1) + 1)  # noqa: B010
            return same[1]
    if sock is not None:  # the proxy: the indexer's model answers (none of this process's own)
        future = _query_pool.submit(semantic.ask, sock, query, QUERY_VECTOR_WAIT_S)
    else:
        model = semantic.model(wait=index.semantic_wait)
        if model is None:
            return None
        future = _query_pool.submit(lambda: model.embed([query])[0])
    setattr(future, "bead_due", time.monotonic() + QUERY_VECTOR_WAIT_S)  # noqa: B010
    setattr(future, "bead_holders", 1)  # noqa: B010
    with _query_pool_lock:
        if len(_recent) >= RECENT_QUERIES:
            _recent.pop(next(iter(_recent)))
        _recent[key] = (time.monotonic(), future)
    return future


def wait_vector(future: Future[Any] | None, wait: bool = False, timeout: float | None = None) -> Any:
    """The vector ``embed_query`` computed, or None (no future, the model failed, or, unless ``wait``, not there
    by QUERY_VECTOR_WAIT_S after the question was first asked, or within ``timeout`` if sooner: the proxy's path;
    a command or an eval waits for it)."""
    if future is None:
        return None
    due = getattr(future, "bead_due", None)
    limit = QUERY_VECTOR_WAIT_S if due is None else due - time.monotonic()
    if timeout is not None:
        limit = min(limit, timeout)
    try:
        return future.result(timeout=None if wait else max(0.0, limit))
    except Exception as exc:  # noqa: BLE001 - the words' order stands whatever the model says of an odd query
        forget_vector(future)
        global _late
        _late += 1
        if _late in (1, 10, 100) or _late % 1000 == 0:
            log.warning("no vector for a query (%s; %d so far); BM25's order stands", type(exc).__name__, _late)
        return None


def forget_vector(future: Future[Any] | None) -> None:
    """The caller will not read it: when no other caller holds it, it need not be computed (not run at all if it
    had not started: a busy machine is not made busier)."""
    if future is None:
        return
    with _query_pool_lock:
        holders = getattr(future, "bead_holders", 1) - 1
        setattr(future, "bead_holders", holders)  # noqa: B010
    if holders <= 0:
        future.cancel()


_late = 0


def rescore(index: Index, kept: list[dict[str, Any]], pending: Future[Any] | None) -> list[dict[str, Any]]:
    """BM25's candidates reordered by meaning too, where bead[semantic] is on (``index.semantic``): each one's
    BM25 / the best BM25 + SEMANTIC_ALPHA × cosine(query, turn). A candidate the indexer has not embedded yet
    scores the mean cosine of those it has (neither raised nor sunk); with no vector at all, no model (not
    installed, not loaded yet on the proxy's path), or a query vector later than QUERY_VECTOR_WAIT_S, the order
    is BM25's."""
    if pending is None:
        return kept
    stored = index.raw_vectors([r["rowid"] for r in kept if "rowid" in r]) if len(kept) > 1 else {}
    if not stored:
        forget_vector(pending)
        return kept
    q = wait_vector(pending, wait=index.semantic_wait)
    if q is None:
        return kept
    cos = {rid: float(semantic.decode(blob) @ q) for rid, blob in stored.items()}
    neutral = sum(cos.values()) / len(cos)
    top = max(r["bm25"] for r in kept) or 1.0
    score = [r["bm25"] / top + SEMANTIC_ALPHA * cos.get(r.get("rowid", -1), neutral) for r in kept]
    order = sorted(range(len(kept)), key=lambda i: (-score[i], i))
    return [{**kept[i], "rank_score": score[i]} for i in order]


def _matched(query: set[str], prefixes: set[str], text: str) -> set[str]:
    """The query's stems that ``text`` holds (only words that could stem to one are stemmed)."""
    words = set(_WORD.findall(text[:RAW_CHARS].lower()))
    return {s for w in words if w[:3] in prefixes and (s := stem(w)) in query}


def newer_first(hits: list[Hit], query: str) -> list[Hit]:
    """Newer wins in raw history: of two retrieved turns that state a value for the same thing, the newer
    ranks first, and the older is labelled (``newer_at``, ``newer_id`` in its row).

    Only for a question that asks for a value. Two turns state a value for the same thing when both
    hold a number, the newer one matches at least ``NEWER_SHARE`` of the query terms the older one
    matches (two at least), and the older one at least ``NEWER_OWN`` of the newer one's. Every newer
    restatement moves above the older turn, the newest first; nothing outside ``hits`` comes in and
    nothing leaves, so recall at the list's length is unchanged (docs/results.md).
    """
    if not NEWER_FIRST or len(hits) < 2 or not VALUE_QUESTION.search(query):
        return hits
    q = {stem(t) for t in terms(query, extra=RAW_QUERY_STOPWORDS)}
    prefixes = {s[:3] for s in q}
    matched = [_matched(q, prefixes, h.text) if _DIGIT.search(h.text) else set() for h in hits]
    when = [(h.row["at"], h.row["session"], h.row["n"]) for h in hits]
    order = list(range(len(hits)))
    newer: dict[int, int] = {}
    for a in range(len(hits)):
        if len(matched[a]) < 2:
            continue
        later = [
            b
            for b in range(len(hits))
            if b != a
            and matched[b]
            and when[b] > when[a]
            and len(matched[a] & matched[b]) >= NEWER_SHARE * len(matched[a])
            and len(matched[a] & matched[b]) >= NEWER_OWN * len(matched[b])
        ]
        if not later:
            continue
        newer[a] = max(later, key=lambda i: when[i])
        # Every newer restatement goes above the older turn, the newest first.
        for b in sorted(later, key=lambda i: when[i]):
            if order.index(b) > order.index(a):
                order.remove(b)
                order.insert(order.index(a), b)
    out = []
    for i in order:
        h = hits[i]
        if i in newer:
            h = replace(h, row={**h.row, "newer_at": hits[newer[i]].row["at"], "newer_id": hits[newer[i]].id})
        out.append(h)
    return out


def search(
    index: Index, query: str, limit: int = 10, corpus: str = "all", current_only: bool = True, scope: str | None = None
) -> tuple[list[Hit], list[Hit]]:
    """(fact hits, raw hits), each ranked on its own.

    The two corpora are ranked separately: their BM25 scores come from
    different tables and are not comparable.
    """
    facts: list[Hit] = []
    raw: list[Hit] = []
    if corpus in ("all", "facts"):
        facts = search_facts(index, query, limit=limit, current_only=current_only, scope=scope)
    if corpus in ("all", "raw"):
        raw = search_raw(index, query, limit=limit)
    return facts, raw
