"""Ranking policy over the index's BM25 candidates.

The index finds and scores candidates (BM25); what counts for more than the
words is decided here: the reference design's boosts for facts (the
person's own word, the active scope) and a recency tilt for raw turns, so
that of two turns about the same thing the newer one wins a near tie.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..index.db import Index
from ..index.query import Visibility
from ..store.keys import PERSON_TRUSTS

USER_STATED_BOOST = 1.2
SCOPE_BOOST = 1.5
RECENCY = 0.2       # chosen on the dev suites (README, "Raw recall")
RECENCY_POOL = 3    # candidates per result that the recency tilt may reorder


@dataclass(frozen=True)
class Hit:
    corpus: str            # "fact" | "raw"
    id: str
    score: float           # higher is better
    text: str
    row: dict[str, Any]


def search_facts(index: Index, query: str, limit: int = 10, current_only: bool = True,
                 scope: str | None = None, include_dormant: bool = True,
                 visible: Visibility | None = None) -> list[Hit]:
    """Facts by BM25 (key words count double), then the boosts (``visible``: one team member's facts only)."""
    hits = []
    for row in index.fact_candidates(query, max(limit * 3, 20), current_only, include_dormant, visible):
        score = row["bm25"]
        if row["trust"] in PERSON_TRUSTS:
            score *= USER_STATED_BOOST
        if scope and row["scope"] == scope:
            score *= SCOPE_BOOST
        hits.append(Hit("fact", row["id"], score, row["body"], row))
    hits.sort(key=lambda h: -h.score)
    return hits[:limit]


def search_raw(index: Index, query: str, limit: int = 10, exclude_sessions: Iterable[str] = (),
               recency: float | None = None) -> list[Hit]:
    """Raw turns by BM25, then a recency tilt among the strongest candidates.

    A turn that states a changed value usually shares the old turn's words;
    among candidates of comparable BM25 score the newer one should win, so
    each candidate's score is multiplied by ``1 + recency * r`` where r runs
    from 0 (oldest candidate) to 1 (newest).
    """
    recency = RECENCY if recency is None else recency
    kept = index.raw_candidates(query, max(limit * RECENCY_POOL, limit), exclude_sessions)
    if recency and len(kept) > 1:
        # Rank of (time, turn number) among the candidates: 0 oldest, 1 newest.
        order = sorted(range(len(kept)), key=lambda i: (kept[i]["at"], kept[i]["session"], kept[i]["n"]))
        r = {i: pos / (len(kept) - 1) for pos, i in enumerate(order)}
        scored = sorted((row["bm25"] * (1 + recency * r[i]), -i) for i, row in enumerate(kept))
        kept = [kept[-i] for _, i in reversed(scored)]
    return [Hit("raw", r["id"], r["bm25"], r["text"], r) for r in kept[:limit]]


def search(index: Index, query: str, limit: int = 10, corpus: str = "all", current_only: bool = True,
           scope: str | None = None) -> tuple[list[Hit], list[Hit]]:
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
