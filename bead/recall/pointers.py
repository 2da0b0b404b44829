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

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import islice
from typing import Any, cast

from ..config import RecallSettings
from ..index import semantic
from ..index.db import Index
from ..index.query import terms
from ..store.keys import PERSON_TRUSTS, members_own
from . import rank
from .cues import Cue
from .gate import Candidate, Recall, other_project

# Chosen by cross-validation (docs/results.md; evals/grids/pointers.yaml): over the three invoicing suites, each left
# out in turn (`bead eval ... --cv 3 --by-suite`), every fold chose no minimum and two of three the skip at 0.3; on
# the first suite alone (`--cv 5`) four folds of five chose both. With a minimum of 0.3 and the skip at 0.5 (chosen
# before, on the first suite alone) the first two suites reach the same and the third three keys fewer at each size.
MIN_EVIDENCE = 0.0  # the evidence score (bead.recall.gate.evidence) a candidate needs
# The most of a turn's pointers that may name facts no person vouched for (an agent's observation, the dream's
# inference: trust outside PERSON_TRUSTS). An agent steered by pasted text can `remember` facts stuffed with the
# project's words, which BM25 ranks first on any topic: five such took every pointer of every conversation. 1: two
# folds of three chose it, each suite left out in turn (evals/grids/pointer-agents.yaml, docs/tuning.md).
AGENTS_MAX = 1
ORDER = "search"  # search: the BM25 order of the gate's search; evidence: the evidence score
# A candidate whose words overlap a chosen pointer's this much (Jaccard) says nearly the same thing
# (the same rule for another module, a fact written twice): it would spend the budget on no news.
SAME = 0.3
# bead[semantic]: the gate's fact candidates, in BM25 order, rescored by meaning before the pointers take the first
# unseen ones: BM25 / the best + SEMANTIC_ALPHA × cosine(the turn's user text, the fact's stored vector). Chosen by
# cross-validation (evals/grids/pointers-semantic.yaml, docs/results.md); 0 is BM25's order.
SEMANTIC_ALPHA = 2.0
# Of the turn's user text (its end), embedded as the question: 120, 250, 500 and 1,000 characters gave the same
# figures (evals/grids/pointers-semantic.yaml; 60 did worse), and 120 costs the least on the request path.
QUERY_CHARS = 120
# bead[semantic]: facts the words did not find but the meaning does: the best MEANING_EXTRA of the conversation's
# project's (and the person's and global) fact vectors by cosine, not among the search's candidates, join them
# scored MEANING_EXTRA_WEIGHT × SEMANTIC_ALPHA × cosine (no words: no search score). At 2,000 facts the needed
# fact is beyond the search's first 20 on about one later turn in five. Chosen by cross-validation
# (evals/grids/pointers-meaning-extra.yaml, docs/results.md); 0 turns it off.
MEANING_EXTRA = 10
MEANING_EXTRA_WEIGHT: float | str = 1.6
# Of a fact found by meaning alone: 0.1 and 0.2 reach what none reaches on the suite, 0.3 one key less. 0.1 keeps
# facts unrelated to the turn out (most facts are near 0 to "thanks, that works"), while a related one can score
# 0.2 with this model; the grid lists the lowest floor first for that.
MEANING_MIN_COSINE = 0.1
BUILD_MIN_S = 0.2  # of a request's deadline left, to read every fact vector again on its path
BY_MEANING = "by meaning"  # the reason of a candidate only the meaning found (no evidence score to ask for)


def pointable(row: dict[str, Any]) -> bool:
    """Whether a fact row may be named by a pointer at all: current, not dormant, not secret, and no team member's
    own user fact (bead.store.keys.members_own)."""
    return (
        bool(row.get("current", 1))
        and row.get("status") != "dormant"
        and row.get("sensitivity") != "secret"
        and not members_own(row.get("key"), row.get("owner"))
    )


def question(cues: list[Cue]) -> str:
    """The words asked by meaning: the end (QUERY_CHARS) of the person's words in the newest user message. The
    pinned block's opening asks the same (bead.recall.standing), so a first request computes one vector."""
    return " ".join(c.text for c in cues if c.source == "user")[-QUERY_CHARS:]


def by_meaning(
    pool: list[Candidate],
    index: Index | None,
    pending: Future[Any] | None,
    deadline: float | None = None,
    scope: str | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
) -> list[Candidate]:
    """``pool`` reordered by meaning too: each fact's search score (BM25 with its boosts) over the best fact's, plus
    SEMANTIC_ALPHA × cosine; a fact the indexer has not embedded yet scores the mean cosine of those it has. The
    search's order without the extra, a query vector (by ``deadline``, a ``time.monotonic()`` instant) or any
    stored vector. With MEANING_EXTRA, the facts of ``scope`` (the conversation's ``project/<name>``) nearest in
    meaning that the search did not find join them (``meaning_extra``)."""
    if pending is None:
        return pool
    if index is None or not SEMANTIC_ALPHA:
        rank.forget_vector(pending)
        return pool
    stored = index.fact_vectors([c.id for c in pool if c.key]) if len(pool) > 1 else {}
    if not stored and MEANING_EXTRA <= 0:
        rank.forget_vector(pending)
        return pool
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    q = rank.wait_vector(pending, wait=index.semantic_wait, timeout=left)  # a command or an eval waits; the proxy not
    if q is None:
        return pool
    try:
        cos = {i: float(semantic.decode(blob) @ q) for i, blob in stored.items()}
        spare = None if deadline is None or index.semantic_wait else deadline - time.monotonic()
        extra = meaning_extra(index, q, scope, {c.id for c in pool}, skip, spare)
    except ValueError:  # a stored vector of another shape (a model changed under a running proxy): BM25's order
        return pool
    neutral = sum(cos.values()) / len(cos) if cos else 0.0
    # Over the best fact's (a raw excerpt's score is of another table, and a raw candidate is never pointed to).
    search = [float(c.row.get("search_score", c.row.get("bm25")) or 0.0) for c in pool]
    top = max((x for x, c in zip(search, pool, strict=True) if c.key), default=0.0) or 1.0
    score = [x / top + SEMANTIC_ALPHA * cos.get(c.id, neutral) for x, c in zip(search, pool, strict=True)]
    # "mean" (a form the grid measured): the candidates' mean search score instead of none, at weight 1.
    base = sum(x / top for x in search) / len(search) if MEANING_EXTRA_WEIGHT == "mean" and search else 0.0
    weight = 1.0 if MEANING_EXTRA_WEIGHT == "mean" else float(MEANING_EXTRA_WEIGHT)
    for c, near in extra:
        pool = [*pool, c]
        score.append(base + weight * SEMANTIC_ALPHA * near)
    order = sorted(range(len(pool)), key=lambda i: (-score[i], i))
    return [pool[i] for i in order]


@dataclass(frozen=True)
class _Vectors:
    """Every pointable fact's vector as one float32 matrix, with its id, key and scope (an index into ``scopes``)."""

    ids: list[str]
    keys: list[str]
    scope_of: Any  # int32 per row: its scope's place in ``scopes``
    scopes: dict[str, int]
    personal: Any  # bool per row: a user/ or global/ fact (any conversation may be pointed to it)
    matrix: Any


_BUILDING = threading.Lock()


def _vectors(index: Index, left: float | None) -> _Vectors | None:
    """The pointable facts' vectors (Index.pointable_fact_vectors), kept for the index (every connection of the
    process) until a fact or a fact vector changes, so a request pays one matrix product. Reading them again
    takes about 30 ms at 10,000 facts: on the request path (``left``: seconds to its deadline; None waits) only
    with BUILD_MIN_S to spare and by one thread at a time; meanwhile the last matrix serves (each row it names
    is read again, current, before it is pointed to), or none."""
    import numpy as np

    state, mark = index.facts_state(), index.fact_vector_mark()
    cached = index.memo.get("pointer_vectors")
    if cached is not None and cached[0] == state and cached[1][0] == mark:
        return cast(_Vectors, cached[1][1])
    old = cast(_Vectors, cached[1][1]) if cached is not None else None
    if (left is not None and left < BUILD_MIN_S) or not _BUILDING.acquire(blocking=left is None):
        return old
    try:
        rows = index.pointable_fact_vectors()
        widths = Counter(len(v) for *_, v in rows)
        width = widths.most_common(1)[0][0] if widths else 0
        rows = [r for r in rows if len(r[3]) == width] if width and width % 2 == 0 else []  # one model's vectors
        scopes: dict[str, int] = {}
        matrix = semantic.decode(b"".join(r[3] for r in rows)).reshape(len(rows), -1) if rows else np.zeros((0, 0), np.float32)
        built = _Vectors(
            [r[0] for r in rows],
            [r[1] for r in rows],
            np.array([scopes.setdefault(r[2], len(scopes)) for r in rows], dtype=np.int32),
            scopes,
            np.array([not other_project(r[2], None) for r in rows], dtype=bool),
            np.nan_to_num(matrix, nan=0.0, posinf=0.0, neginf=0.0),
        )
        index.memo["pointer_vectors"] = (state, (mark, built))
        return built
    finally:
        _BUILDING.release()


def meaning_extra(
    index: Index,
    q: Any,
    scope: str | None,
    found: set[str],
    skip: set[str] | frozenset[str] = frozenset(),
    left: float | None = None,
) -> list[tuple[Candidate, float]]:
    """The MEANING_EXTRA facts a conversation of ``scope`` (``project/<name>``) may be pointed to (its project's,
    the person's, global ones) nearest to ``q`` in meaning, at MEANING_MIN_COSINE at least, that are not in
    ``found`` (the search's candidates' ids) nor ``skip`` (keys shown or pointed to), with their cosines, best
    first; each row read again and current, not dormant, not secret."""
    if MEANING_EXTRA <= 0:
        return []
    import numpy as np

    vec = _vectors(index, left)
    if vec is None or not vec.ids or vec.matrix.shape[1] != q.shape[-1]:  # none, or another model's vectors
        return []
    mask = vec.personal.copy()
    if scope is not None and scope in vec.scopes:
        mask |= vec.scope_of == vec.scopes[scope]
    near = np.where(mask, vec.matrix @ q, -np.inf)
    k = min(len(near), MEANING_EXTRA + len(found) + len(skip) + MEANING_EXTRA)
    top = np.argpartition(-near, k - 1)[:k]
    best = [
        int(i)
        for i in top[np.argsort(-near[top], kind="stable")]
        if near[i] >= MEANING_MIN_COSINE and vec.ids[i] not in found and vec.keys[i] not in skip
    ]
    rows = {r["id"]: r for r in index.facts_by_id([vec.ids[i] for i in best[: 2 * MEANING_EXTRA]])}
    out = []
    for i in best[: 2 * MEANING_EXTRA]:
        row = rows.get(vec.ids[i])
        if row is None or not pointable(row):
            continue  # changed since the matrix was read
        out.append((Candidate(row["id"], row["key"], row["body"], 0.0, [], BY_MEANING, row), float(near[i])))
        if len(out) >= MEANING_EXTRA:
            break
    return out


def key_of(fact_id: str) -> str:
    return fact_id.rsplit("@v", 1)[0]


def shown_keys(injected: Iterable[str]) -> set[str]:
    """The keys of the fact ids a conversation carries (a key's body shown once is never pointed to)."""
    return {key_of(i) for i in injected if not i.startswith("raw:")}


def choose(
    result: Recall,
    shown: set[str],
    settings: RecallSettings,
    first: list[Candidate] | None = None,
    index: Index | None = None,
    pending: Future[Any] | None = None,
    deadline: float | None = None,
    scope: str | None = None,
    behind: Callable[[list[dict[str, Any]]], set[str]] | None = None,
) -> list[Candidate]:
    """The candidates to point to, best first: ``first`` (facts that passed the gate but did not fit the
    block), then the search's candidates that the gate did not pass and the conversation was not shown
    or pointed to (``shown``: keys), with MIN_EVIDENCE at least, none nearly the same as one before it; with
    bead[semantic], the search's candidates by meaning too (``pending``: the turn's vector, being computed), and
    the facts of ``scope`` (the conversation's project) nearest in meaning that the search did not find.
    ``behind``: the ids of rows that are no longer their key's current version on disk (a pointer's title is its
    value's first words), asked of the rows about to be taken, as many at a time as pointers are still wanted (one
    walk to their folders, not one a row)."""
    if settings.pointers <= 0 or ORDER == "evidence":
        rank.forget_vector(pending)
    if settings.pointers <= 0:
        return []
    taken = shown | {c.key for c in result.facts if c not in (first or [])}
    out: list[Candidate] = []
    words: list[set[str]] = []
    if ORDER == "evidence":
        pool = sorted(result.rejected, key=lambda c: -c.score)
    else:
        pool = by_meaning(result.rejected, index, pending, deadline, scope, taken)
    ordered = [*(first or []), *pool]
    stale: dict[str, bool] = {}  # row id -> behind the files

    def eligible(c: Candidate) -> bool:
        return bool(c.key) and c.key not in taken and (c.score >= MIN_EVIDENCE or c.reason == BY_MEANING)

    for i, c in enumerate(ordered):
        if not eligible(c) or not pointable(c.row):
            continue
        agents = c.row.get("trust") not in PERSON_TRUSTS
        if agents and sum(1 for o in out if o.row.get("trust") not in PERSON_TRUSTS) >= AGENTS_MAX:
            continue
        mine = set(terms(c.body))
        if any(len(mine & w) >= SAME * len(mine | w) for w in words):
            continue
        if behind is not None and c.id not in stale:
            wanted = settings.pointers - len(out)
            batch = list(islice((d for d in ordered[i:] if d.id not in stale and eligible(d) and pointable(d.row)), wanted))
            found = behind([d.row for d in batch])
            stale.update((d.id, d.id in found) for d in batch)
        if stale.get(c.id):
            continue
        out.append(c)
        words.append(mine)
        taken.add(c.key)
        if len(out) >= settings.pointers:
            break
    return out
