"""Pointers: the keys of facts the conversation has not been shown, for the model to open.

No local gate tells well which fact bodies a turn needs (docs/results.md); the
model that reads the prompt can, given a short index. After the facts that
pass the gate, the cue block lists up to ``recall.pointers`` more candidates
of the same search, each as its key, a title and the trust mark, within
``recall.pointer_budget_tokens`` (the how-to line included). A key is
pointed to at most once per conversation and never once its body was
injected; a sealed fact has no index row and a queued proposal is no fact,
so neither can be pointed to; a dormant one is not searched.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..config import RecallSettings
from ..index.query import terms
from .gate import Candidate, Recall

# Chosen by cross-validation over the injection suite's turns (docs/results.md; `bead eval --cv`).
MIN_EVIDENCE = 0.3  # the evidence score (bead.recall.gate.evidence) a candidate needs
ORDER = "search"  # search: the BM25 order of the gate's search; evidence: the evidence score
# A candidate whose words overlap a chosen pointer's this much (Jaccard) says nearly the same thing
# (the same rule for another module, a fact written twice): it would spend the budget on no news.
SAME = 0.5


def key_of(fact_id: str) -> str:
    return fact_id.rsplit("@v", 1)[0]


def shown_keys(injected: Iterable[str]) -> set[str]:
    """The keys of the fact ids a conversation carries (a key's body shown once is never pointed to)."""
    return {key_of(i) for i in injected if not i.startswith("raw:")}


def choose(result: Recall, shown: set[str], settings: RecallSettings, first: list[Candidate] | None = None) -> list[Candidate]:
    """The candidates to point to, best first: ``first`` (facts that passed the gate but did not fit the
    block), then the search's candidates that the gate did not pass and the conversation was not shown
    or pointed to (``shown``: keys), with enough evidence, none nearly the same as one before it."""
    if settings.pointers <= 0:
        return []
    taken = shown | {c.key for c in result.facts if c not in (first or [])}
    out: list[Candidate] = []
    words: list[set[str]] = []
    pool = sorted(result.rejected, key=lambda c: -c.score) if ORDER == "evidence" else result.rejected
    for c in [*(first or []), *pool]:
        if not c.key or c.key in taken or c.score < MIN_EVIDENCE:
            continue
        row = c.row
        if row.get("sensitivity") == "secret" or row.get("status") == "dormant" or not row.get("current", 1):
            continue
        mine = set(terms(c.body))
        if any(len(mine & w) >= SAME * len(mine | w) for w in words):
            continue
        out.append(c)
        words.append(mine)
        taken.add(c.key)
        if len(out) >= settings.pointers:
            break
    return out
