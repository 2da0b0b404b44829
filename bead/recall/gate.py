"""The reference design's default gate (docs/design.md): evidence, not similarity alone.

BM25 finds candidates; the evidence score weights each term a candidate
shares with the cues by its IDF among the stored facts (scaled so a term only
one fact has weighs 1), by who said it (cue weight) and down to 0.2 for
generic development words. The score is the strongest shared term plus a
quarter of the rest; the project name does not count. At most 2 facts pass,
on a strong match only. Raw excerpts from other sessions pass a term
coverage check of 0.25, up to 2.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..config import RecallSettings
from ..index.db import Index
from ..index.query import STOPWORDS, terms
from .cues import Cue
from .rank import search_facts, search_raw
from .render import text_id

GENERIC = frozenset(
    """
add added app application args bash build builds call change changes check class cli client code command
commands config configuration create data debug default dependency dependencies dev dir directory docs error
errors example fail failed failing file files fix function get install issue lib line lines list log logs
main make module need new npm output package path pip project python read readme repo return run running
script server set setup src start string test tests true false type update use used using value values
version work write yes
""".split()
)

RAW_COVERAGE = 0.25
CANDIDATES = 20
# The search's factor for the conversation's project's facts over the person's (user/) and global ones; another
# project's are not searched. bead.recall.rank.SCOPE_BOOST (1.5) was there first. Chosen by cross-validation
# (evals/grids/scope.yaml, docs/results.md): over the three invoicing suites, each left out in turn, every fold chose
# none (later turns reach 0.70 / 0.61 at 300 / 2,000 facts, against 0.66 / 0.59); on the first suite alone the two tie.
SCOPE_BOOST = 1.0
# The search's CANDIDATES are of facts the conversation does not carry yet: a fact already shown to it (its pinned
# block, an earlier cue block) or pointed to is searched for as before (the trace says why it is left out) but takes
# none of the CANDIDATES' places, so that the pointers' pool does not run dry as a conversation goes on, nor on its
# first request, whose pinned block holds the opening's best matches. The search reads at most SEEN_MAX more rows for
# them (a pinned block's forty facts and a few turns' pointers; 60 more cost about 1 ms at 8,000 facts). False: the
# first CANDIDATES hits, whatever was shown (before; the same figures on the dev suites' single turns).
FRESH_CANDIDATES = True
SEEN_MAX = 60
QUERY_TERMS = 64  # the turn's most telling words the fact search ORs (by cue weight, then rarity)
# Raw excerpts only for a turn whose typed words ask about something: a question, or a pointer to earlier
# work. A turn that only carries tool output (most of a coding session) gets none. Bounded: linear time.
ASKS = re.compile(
    r"\?|\b(?:last time|earlier|before|previous(?:ly)?|yesterday|last (?:week|month|session|sprint)"
    r"|remember|recall|again|already|did (?:we|i|you)|have (?:we|i|you)|we (?:did|had|used|decided|tried"
    r"|agreed|said)|the other day|how did|what did|why did|when did)\b",
    re.I,
)


def other_project(fact_scope: str, scope: str | None) -> bool:
    """Whether a fact of ``fact_scope`` belongs to a project other than a conversation's ``scope`` (``project/<name>``,
    None for none): such a fact never reaches the conversation, neither as a body nor as a pointer."""
    return fact_scope.startswith("project/") and fact_scope != scope


@dataclass
class Candidate:
    id: str
    key: str
    body: str
    score: float
    shared: list[str]
    reason: str = ""
    row: dict = field(default_factory=dict)


@dataclass
class Recall:
    facts: list[Candidate] = field(default_factory=list)
    raw: list[Candidate] = field(default_factory=list)
    rejected: list[Candidate] = field(default_factory=list)


class FactStats:
    """Document frequency of terms over current facts (body + last key segment) and raw turns.

    IDF over facts alone is noisy while there are few facts; raw history is
    the steadier background corpus. A term's weight is
    log(1 + N/df) / log(1 + N) over N = facts + raw turns, so a term only one
    document has weighs 1. Raw frequencies come from the index (FTS5's
    vocabulary, looked up by the porter stem) for the few terms a request
    needs, and are cached until the raw corpus grows by a tenth.
    """

    def __init__(
        self, rows: list[tuple[str, str]], raw_df=None, n_raw: int = 0, term_sets: Iterable[Iterable[str]] | None = None
    ):
        """``rows`` are (key, body) of the current facts; or ``term_sets``, each fact's terms already
        taken, each without repeats (the proxy keeps them per fact between rebuilds)."""
        self.df: Counter[str] = Counter()
        n = 0
        for ts in term_sets if term_sets is not None else (frozenset(fact_terms(k, b)) for k, b in rows):
            self.df.update(ts)
            n += 1
        self.n_facts = n
        self.n_raw = n_raw
        self.raw_df = raw_df  # callable: list[str] -> {term: doc count}
        self._raw: dict[str, int] = {}
        self._own: frozenset[str] = frozenset()

    @property
    def n(self) -> int:
        return max(self.n_facts + self.n_raw, 1)

    def for_request(self, terms_needed: Iterable[str], own: Iterable[str] = ()) -> FactStats:
        """A view for one request, with raw frequencies fetched for its terms (one query).

        ``own`` holds the terms of the turn being answered: the proxy captured
        it before recall, and a turn must not lower the weight of its own
        words. The view shares the counts; only ``own`` is its own, so
        concurrent requests never see each other's.
        """
        if self.raw_df is not None:
            missing = [t for t in set(terms_needed) if t not in self._raw and t in self.df]
            if missing:
                fetched = {t: 0 for t in missing}
                fetched.update(self.raw_df(missing))
                self._raw.update(fetched)
        view = object.__new__(FactStats)
        view.__dict__.update(self.__dict__)
        view._own = frozenset(own)
        return view

    def weight(self, term: str) -> float:
        df = self.df.get(term, 0)
        if df == 0:
            return 0.0
        raw = self._raw.get(term, 0)
        if raw and term in self._own:
            raw -= 1
        return math.log(1 + self.n / (df + raw)) / math.log(1 + self.n)


def fact_terms(key: str, body: str) -> list[str]:
    last = re.split(r"[-_.]+", key.rsplit("/", 1)[-1])
    return terms(body + " " + " ".join(last))


def cue_weights(cues: list[Cue], project: str | None) -> dict[str, float]:
    skip = set(re.split(r"[-_.]+", project)) if project else set()
    out: dict[str, float] = {}
    for c in cues:
        for t in terms(c.text):
            if t in skip or t in STOPWORDS or len(t) < 2:
                continue
            out[t] = max(out.get(t, 0.0), c.weight)
    return out


def evidence(weights: dict[str, float], stats: FactStats, key: str, body: str) -> tuple[float, list[str]]:
    shared = []
    for t in set(fact_terms(key, body)):
        if t in weights:
            w = stats.weight(t) * weights[t] * (0.2 if t in GENERIC else 1.0)
            shared.append((w, t))
    if not shared:
        return 0.0, []
    shared.sort(reverse=True)
    top = shared[0][0]
    return top + 0.25 * sum(w for w, _ in shared[1:]), [t for _, t in shared]


def asks_about_past_work(cues: list[Cue]) -> bool:
    """Whether the person's typed words of this turn ask something (raw excerpts answer only those)."""
    return any(c.typed and ASKS.search(c.text[:20_000]) for c in cues)


def coverage(cue_terms: set[str], text: str) -> float:
    if not cue_terms:
        return 0.0
    return len(cue_terms & set(terms(text))) / len(cue_terms)


ALREADY = "already injected in this conversation"


def _admit(cand: Candidate, passed: list[Candidate], rejected: list[Candidate], reasons: tuple[tuple[bool, str], ...]) -> bool:
    """The first reason that holds rejects ``cand`` (kept with the reason, for the trace); else it passes."""
    cand.reason = next((why for holds, why in reasons if holds), "")
    (rejected if cand.reason else passed).append(cand)
    return not cand.reason


def recall(
    index: Index,
    stats: FactStats,
    cues: list[Cue],
    project: str | None,
    exclude_ids: set[str],
    exclude_sessions: list[str],
    exclude_raw_texts: set[str],
    settings: RecallSettings,
    pointed: set[str] | frozenset[str] = frozenset(),
) -> Recall:
    """``exclude_raw_texts`` holds text ids (render.text_id) injected earlier in the conversation; ``pointed`` the
    keys it was pointed to (their bodies may still pass, but they take no place among the CANDIDATES).

    ``settings`` gives the evidence threshold and how many facts and excerpts may pass.
    """
    threshold, max_facts, max_raw = settings.evidence_threshold, settings.max_facts, settings.max_excerpts
    out = Recall()
    weights = cue_weights(cues, project)
    if not weights:
        return out
    own = {t for c in cues if c.source in ("user", "tool_output") for t in terms(c.text)}
    stats = stats.for_request(weights, own)
    query = " ".join(sorted(weights, key=lambda t: (-weights[t], -stats.weight(t), t))[:QUERY_TERMS])
    scope = f"project/{project}" if project else None
    # Another project's facts are left out in the search, not after it, where they would take the candidates' places.
    carried = min(sum(1 for i in exclude_ids if not i.startswith("raw:")) + len(pointed), SEEN_MAX) if FRESH_CANDIDATES else 0
    fresh = 0
    for hit in search_facts(
        index,
        query,
        limit=CANDIDATES + carried,
        scope=scope,
        include_dormant=False,
        in_project=scope or "",
        scope_boost=SCOPE_BOOST,
    ):
        if fresh >= CANDIDATES:
            break
        row = {**hit.row, "search_score": hit.score}  # BM25 with the boosts (the pointers' order)
        if not (FRESH_CANDIDATES and (row["id"] in exclude_ids or row["key"] in pointed)):
            fresh += 1
        if row["sensitivity"] == "secret":
            continue
        if other_project(row["scope"], scope):
            continue  # another project's facts never leak into this one
        score, shared = evidence(weights, stats, row["key"], row["body"])
        cand = Candidate(row["id"], row["key"], row["body"], round(score, 3), shared, row=row)
        _admit(
            cand,
            out.facts,
            out.rejected,
            (
                (row["id"] in exclude_ids, ALREADY),
                (score < threshold, f"evidence {score:.2f} < {threshold}"),
                (len(out.facts) >= max_facts, f"more than {max_facts} facts passed"),
            ),
        )
    out.facts.sort(key=lambda c: -c.score)
    strong = {t for t, w in weights.items() if w >= 0.6}
    if strong and asks_about_past_work(cues):
        seen = set(exclude_raw_texts)
        # The cue's strong terms, sorted, are no sentence: BM25 alone (the rescoring by meaning was chosen on questions).
        # The conversation's project's turns and turns of none: another project's words never reach it (an outside
        # attack: one client's SFTP host in another client's conversation), as another project's facts do not.
        found = search_raw(
            index, " ".join(sorted(strong)), limit=10, exclude_sessions=exclude_sessions, by_meaning=False, project=project
        )
        for hit in found:
            cov = coverage(strong, hit.text)
            cand = Candidate(hit.id, "", hit.text, round(cov, 3), [], row=hit.row)
            tid = text_id(hit.text)
            if _admit(
                cand,
                out.raw,
                out.rejected,
                (
                    (tid in seen, "the same text is already injected in this conversation"),
                    (cov < RAW_COVERAGE, f"coverage {cov:.2f} < {RAW_COVERAGE}"),
                    (len(out.raw) >= max_raw, f"more than {max_raw} excerpts passed"),
                ),
            ):
                seen.add(tid)
    return out
