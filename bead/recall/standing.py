"""Which facts the pinned block holds: what predicts use, within the budget.

The pinned block is built once, on a conversation's first request, and
frozen. With a store of a few dozen facts everything fits; with hundreds it
must choose. What predicts that a fact will be used in this conversation, in
order of weight:

1. the pinned flag (the person asked for it);
2. what the conversation opens with: its first request's text (the person's
   words at full weight, the assistant's and the tools' at the cue weights),
   the branch the harness reports, as a BM25 query over the project's facts
   (with bead[semantic], what the person's words mean reorders its matches);
3. the type: feedback and the person's own facts over project facts over
   references (only the person's word stands here: facts the person stated,
   accepted or pinned; what a model inferred goes to the first cue block
   instead when the opening matches it strongly, ``select``);
4. recent use: facts the agent recalled through MCP, or that were
   reinforced, lately;
5. recency, last;

and, among the facts the opening does not match, what a fact's line costs
the block (LENGTH_POWER).

A candidate the opening does not match scores ``prior * length``, one it
matches ``prior * max(length, 1 + OPENING_WEIGHT * relevance)`` (so a match
never ranks a fact below where it stood unmatched), where ``prior``
multiplies the type, trust and use weights and adds a small recency tilt,
``length`` is what the fact's line costs (``length_factor``), and
``relevance`` is the fact's BM25 score against the opening over the best
one's. Pinned facts
come first whatever their score. The candidates and the search are two
index reads (bead/index); the scoring is here, in Python, over at most a few
thousand rows, well within the proxy's deadline.
"""

from __future__ import annotations

import heapq
import re
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from ..conversation import Conversation
from ..index import semantic
from ..index.db import Index
from ..index.query import Visibility, terms
from ..store.keys import PERSON_TRUSTS
from . import pointers, rank, render
from .cues import extract
from .gate import FactStats, cue_weights
from .rank import search_facts

# Chosen by cross-validation over the injection suite's turns at 300 and 2,000 near-miss facts
# (docs/results.md; evals/grids/pinned.yaml).
OPENING_WEIGHT = 8.0
OPENING_CANDIDATES = 60
# The opening's search's factor for the project's facts over the person's (user/) and global ones; another project's
# are not searched. Measured by cross-validation (evals/grids/scope.yaml, docs/results.md): on the first invoicing suite
# every fold chose it (the opening delivers 0.85 of its needs at 2,000 facts, against 0.78 without); over the three
# suites each left out in turn it ties with none, so the default that was there (bead.recall.rank.SCOPE_BOOST) stays.
SCOPE_BOOST = 1.5
# How the opening's relevance joins the prior: "product" (prior x (1 + weight x relevance)) or "sum"
# (prior + weight x relevance: a fact the opening matches well stands above any it does not, whatever its
# type). They tied under cross-validation; the product was there first.
OPENING_COMBINE = "product"
# The opening's query: its QUERY_TERMS most telling words, the person's first, then the rarest among the
# facts ("rarest"); or, before issue #22, its first words in the order said ("first").
OPENING_TERMS = "rarest"
QUERY_TERMS = 64
TYPE_WEIGHT = {"feedback": 1.0, "user": 1.0, "project": 0.7, "reference": 0.5}
INFERRED_WEIGHT = 0.7
USE_WEIGHT = 0.5  # per recent recall or reinforcement, up to USE_CAP of them
USE_CAP = 3
RECENCY_TILT = 0.1
# What a fact costs the block: a fact the opening does not match is chosen by its prior over its line's tokens to
# this power (the body's, as render.tokens counts them, and LINE_TOKENS for the line's own part, over LENGTH_UNIT),
# so that a block of fixed size holds more of the facts that nothing in the opening tells apart (the knapsack's
# value per weight); a fact the opening matches keeps at least its whole prior. 0: length does not count (before).
# Chosen by cross-validation (evals/grids/pinned-length.yaml, docs/tuning.md).
LENGTH_POWER = 0.5
LINE_TOKENS = 8  # a line's own part beside the body: "- name (stated, 2026-01-01): "
LENGTH_UNIT = 38  # tokens: a body of about 120 ASCII characters and its line's part weigh 1
MIN_LINE_TOKENS = 7  # "- a (stated, 2026-01-01): b" (a bare name) is never shorter
# An inferred fact the opening matches at least this share of its best match joins the first
# request's cue block (at most OPENING_CUE_MAX of them); chosen on the injection suite's dev split.
OPENING_CUE_SHARE = 0.85
OPENING_CUE_MAX = 1
# bead[semantic]: the opening's meaning joins its relevance: + OPENING_MEANING x the cosine of the person's words and
# each of the opening's BM25 candidates' stored vector, scaled so that the best candidate's is 1 and the mean 0 (none
# below). 0: BM25 alone. Chosen by cross-validation (evals/grids/pinned-meaning.yaml, docs/results.md).
OPENING_MEANING = 1.0
# The question is the pointers' (bead.recall.pointers.question: the end of the person's words), so a first request
# computes one vector for both; 120, 500 and 1,000 characters of them tied here.
MEANING_SPREAD = 0.05  # a cosine this far above the mean, or more, is worth the whole OPENING_MEANING
MEMO_ENTRIES = 16  # cached candidate lists per index connection (projects x members)
POLICIES = ("opening", "recency")

_BRANCH = re.compile(r"(?m)^[ \t]{0,8}Current branch:[ \t]{0,8}([^\s]{1,200})[ \t]{0,8}$")
_BRANCH_SCAN_CHARS = 20_000


@dataclass(frozen=True)
class Opening:
    """What a conversation opens with: the first request's words, by who said them, and the branch."""

    text: str = ""
    branch: str | None = None
    said: str = ""  # the person's own words, the end of them: the question by meaning (bead[semantic])

    @property
    def query(self) -> str:
        words = [self.text]
        if self.branch and self.branch not in ("main", "master", "trunk", "develop"):
            words.append(" ".join(re.split(r"[-_./]+", self.branch)))
        return " ".join(w for w in words if w)


def opening_of(conv: Conversation | None, stats: FactStats | None = None, project: str | None = None) -> Opening:
    """The opening of ``conv`` (its newest user message and the assistant's turn before it: on a first
    request, the person's prompt), and the branch a harness reminder names.

    With ``stats`` (the recall gate's term statistics) the query is the opening's QUERY_TERMS most
    telling words: by who said them (the person's first, as cues are weighted), then the rarest among the
    facts, the project's name left out; a long tool output's first words are mostly noise. Without, its
    first words, the person's first."""
    if conv is None:
        return Opening()
    cues = extract(conv)
    if stats is not None and OPENING_TERMS == "rarest":
        weights = cue_weights(cues, project)
        view = stats.for_request(weights)
        text = " ".join(sorted(weights, key=lambda t: (-weights[t], -view.weight(t), t))[:QUERY_TERMS])
    else:
        # The person's words first: the query keeps the first 64 terms.
        order = {"user": 0, "assistant": 1, "tool_input": 1, "tool_output": 2}
        text = " ".join(c.text for c in sorted(cues, key=lambda c: order.get(c.source, 3)))
    branch = None
    for m in conv.messages[:3]:
        for p in m.parts:
            if p.source.value == "harness" and "Current branch:" in p.text:
                found = _BRANCH.search(p.text[:_BRANCH_SCAN_CHARS])
                if found:
                    branch = found.group(1)
                    break
        if branch:
            break
    return Opening(text, branch, pointers.question(cues))


def prior(row: dict[str, Any], uses: int, recency: float) -> float:
    w = TYPE_WEIGHT.get(row["type"], 0.5)
    if row["trust"] not in PERSON_TRUSTS:
        w *= INFERRED_WEIGHT
    w *= 1 + USE_WEIGHT * min(uses, USE_CAP)
    return w * (1 + RECENCY_TILT * recency)


@dataclass(frozen=True)
class Choice:
    rows: list[dict[str, Any]]  # the pinned block's candidates, best first (whole rows)
    inferred: list[dict[str, Any]]  # the opening's strong matches that only a model vouched for


def choose(
    index: Index,
    project: str | None,
    opening: Opening | None = None,
    policy: str = "opening",
    uses: dict[str, int] | None = None,
    visible: Visibility | None = None,
    limit: int = 5000,
    budget_tokens: int = 2000,
) -> list[dict[str, Any]]:
    """The pinned block's candidates, best first (``select``'s rows)."""
    return select(index, project, opening, policy, uses, visible, limit, budget_tokens).rows


def select(
    index: Index,
    project: str | None,
    opening: Opening | None = None,
    policy: str = "opening",
    uses: dict[str, int] | None = None,
    visible: Visibility | None = None,
    limit: int = 5000,
    budget_tokens: int = 2000,
    deadline: float | None = None,
) -> Choice:
    """The pinned block's candidates, best first (the caller fills ``budget_tokens`` in this order; no
    more rows come back whole than a block of that size could hold), and, from the same search of the
    opening, the inferred facts it matches strongly.

    Only the person's word stands in the pinned block (the index's candidates: stated, accepted or
    pinned). A fact only a model vouched for (an agent's observation, the dream's inference) that the
    opening matches at least OPENING_CUE_SHARE of its best match goes to the first request's cue block
    instead, labelled inferred, in this conversation only (at most OPENING_CUE_MAX of them).

    ``uses`` counts recent recalls and reinforcements per key. ``policy``
    ``recency`` is the block before issue #17: pinned, the person's word, newest; no opening. With
    bead[semantic], the opening's relevance weighs meaning too (OPENING_MEANING), where the person's words'
    vector comes by ``deadline`` (a ``time.monotonic()`` instant; a command or an eval waits for it).
    """
    if policy == "recency":
        return Choice(
            index.pinned_candidates(project, limit=min(limit, budget_tokens // MIN_LINE_TOKENS + 1), visible=visible), []
        )
    scope = f"project/{project}" if project else None
    query = opening.query if opening else ""
    said = opening.said if opening and OPENING_MEANING else ""
    pending = rank.embed_query(index, said) if said.strip() and query and terms(query) else None  # beside the search
    hits = (
        search_facts(
            index,
            query,
            limit=OPENING_CANDIDATES,
            scope=scope,
            include_dormant=False,
            visible=visible,
            in_project=scope or "",
            scope_boost=SCOPE_BOOST,
        )
        if query and terms(query)
        else []
    )
    top = max((h.score for h in hits), default=0.0)
    inferred = [
        h.row
        for h in hits
        if project
        and top > 0
        and h.score >= OPENING_CUE_SHARE * top
        and h.row["trust"] not in PERSON_TRUSTS
        and not h.row["pinned"]
        and (h.row["type"] in ("user", "feedback") or h.row["scope"] == scope)
    ][:OPENING_CUE_MAX]
    ranked, position, length = _ranked_priors(index, project, uses or {}, visible, limit)
    if not ranked:
        return Choice([], inferred)
    relevance = {h.id: h.score / top for h in hits if h.id in position} if top > 0 else {}
    for i, m in _meaning(index, pending, [h.id for h in hits if h.id in position], deadline).items():
        relevance[i] = relevance.get(i, 0.0) + OPENING_MEANING * m
    # A fact line costs a few tokens at least: fetch no more whole rows than could fit.
    n = budget_tokens // MIN_LINE_TOKENS + 1
    # A fact the opening does not match keeps its prior as its score, so the best n of those are the
    # first n of the cached order that are not boosted; the boosted ones are rescored.
    if OPENING_COMBINE == "sum":
        boosted = [
            (e[0], min(e[1], e[1] / length[e[3]] - OPENING_WEIGHT * relevance[e[3]]), e[2], e[3])  # e[1]: -prior x length
            for e in (ranked[position[i]] for i in relevance)
        ]
    else:
        boosted = [
            (e[0], min(e[1], e[1] / length[e[3]] * (1 + OPENING_WEIGHT * relevance[e[3]])), e[2], e[3])
            for e in (ranked[position[i]] for i in relevance)
        ]
    plain = [e for e in ranked[: n + len(relevance)] if e[3] not in relevance]
    best = heapq.nsmallest(n, boosted + plain)
    return Choice(index.facts_by_id([e[3] for e in best]), inferred)


def _meaning(index: Index, pending: Future[Any] | None, ids: list[str], deadline: float | None) -> dict[str, float]:
    """Each of ``ids``' cosine with the question ``pending`` (rank.embed_query), scaled: the best 1 (or less where
    the cosines differ by less than MEANING_SPREAD: noise is not made a full point), the mean 0, none below; {}
    without a vector in time or with fewer than two stored. On the proxy's path it waits at most half of what is
    left before ``deadline``: the rest of the request's work keeps the other half."""
    stored = index.fact_vectors(ids) if pending is not None and len(ids) > 1 else {}
    left = None if deadline is None else max(0.0, deadline - time.monotonic()) / 2
    # Not given up when unread: the first request's pointers ask the same words (rank.embed_query shares it).
    q = rank.wait_vector(pending, wait=index.semantic_wait, timeout=left) if len(stored) > 1 else None
    if q is None:
        return {}
    try:
        cos = {i: float(semantic.decode(b) @ q) for i, b in stored.items()}
    except ValueError:  # a stored vector of another shape (a model changed under a running proxy): BM25 alone
        return {}
    mean = sum(cos.values()) / len(cos)
    spread = max(cos.values()) - mean
    if not spread > 1e-6:  # flat (or NaN): nothing to tell them apart
        return {}
    return {i: (c - mean) / max(spread, MEANING_SPREAD) for i, c in cos.items() if c > mean}


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def length_factor(tokens: int) -> float:
    """What a fact's length does to its prior where the opening does not match it (LENGTH_POWER), by its body's
    ``tokens``: 1 for LENGTH_UNIT - LINE_TOKENS of them, more for a shorter one, less for a longer one."""
    return (LENGTH_UNIT / (max(tokens, 0) + LINE_TOKENS)) ** LENGTH_POWER if LENGTH_POWER else 1.0


def body_tokens(row: dict[str, Any]) -> int:
    """A candidate's body's tokens, about as the block counts them (render.tokens: four ASCII characters a token,
    a token for each other, ASTRAL_TOKENS for one beyond the Basic Multilingual Plane): from its length in
    characters (``chars``) where it is ASCII, else from its first characters (``sample``), counted at C's speed
    and scaled to the whole, so that a store of long non-ASCII facts is not read whole each time the candidates are
    scored again (after every write). Exact for a body of up to TOKEN_SAMPLE_CHARS characters."""
    chars, sample = int(row.get("chars") or 0), row.get("sample")
    if not sample:
        return chars // render.CHARS_PER_TOKEN + 1
    text = str(sample)
    ascii_n = len(text.encode("ascii", "ignore"))
    astral = len(_ASTRAL.findall(text))
    part = (ascii_n // render.CHARS_PER_TOKEN) + (len(text) - ascii_n) + (render.ASTRAL_TOKENS - 1) * astral
    return round(part * max(chars, len(text)) / max(len(text), 1)) + 1


def _ranked_priors(
    index: Index, project: str | None, uses: dict[str, int], visible: Visibility | None, limit: int
) -> tuple[list[tuple[int, float, str, str]], dict[str, int], dict[str, float]]:
    """The candidates as (0 if pinned else 1, -prior x length factor, key, id), best first, each id's position, and
    each id's length factor (``length_factor``: a fact the opening matches is rescored by its prior alone).

    Scoring thousands of candidates costs tens of milliseconds at 10,000 facts, and the result
    depends only on the index's rows and ``uses``: kept for the index (every connection of the process) until its
    ``facts_state`` changes, so a new conversation pays only for its opening's search.
    """
    memo_key = ("pinned_priors", project, visible, limit, tuple(sorted(uses.items())), LENGTH_POWER, LENGTH_UNIT, LINE_TOKENS)
    generation = index.facts_state()
    cached = index.memo.get(memo_key)
    if cached is not None and cached[0] == generation:
        result: tuple[list[tuple[int, float, str, str]], dict[str, int], dict[str, float]] = cached[1]
        return result
    rows = index.pinned_priors(project, limit=limit, visible=visible)
    # Recency as a rank among the candidates: 0 the oldest, 1 the newest.
    by_age = sorted(range(len(rows)), key=lambda i: (rows[i]["valid_from"] or "", rows[i]["key"]))
    age = {i: pos / max(len(rows) - 1, 1) for pos, i in enumerate(by_age)}
    length = {r["id"]: length_factor(body_tokens(r)) for r in rows}
    ranked = sorted(
        (0 if r["pinned"] else 1, -prior(r, uses.get(r["key"], 0), age[i]) * length[r["id"]], r["key"], r["id"])
        for i, r in enumerate(rows)
    )
    position = {e[3]: pos for pos, e in enumerate(ranked)}
    if len(index.memo) >= MEMO_ENTRIES:
        index.memo.clear()
    index.memo[memo_key] = (generation, (ranked, position, length))
    return ranked, position, length
