"""Turning agent or person text into a valid FTS5 query.

Agent text is never a valid FTS5 query (quotes, colons, parentheses, AND/OR
words): every term is quoted, and the terms are OR-ed so that BM25 ranks by
how many rare terms a row shares with the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Question words, pronouns, auxiliaries and fillers. Dropping these matters
# more for BM25 over conversation than the BM25 variant does (see
# ../shared/evals/BASELINES.md).
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let ll me more most my myself no nor not now of off on once only
or other ought our ours ourselves out over own re s same she should shouldn so some such t than that
the their theirs them themselves then there these they this those through to too under until up us ve
very was wasn we were weren what when where which while who whom why will with won would wouldn you
your yours yourself yourselves d m o y ain ma mightn mustn needn shan
tell know think thing things really get got go going gonna like kind sort way ever
""".split()
)

# Words dropped from raw searches only, on top of STOPWORDS. Empty: the list once held the words two
# benchmarks' questions use to point at the conversation ("mentioned", "summarize", "in order"), which is
# their phrasing, not the person's; cross-validation over conversations found it worth nothing
# (evals/grids/raw.yaml keeps it for the ranking before issue #25; docs/results.md).
RAW_QUERY_STOPWORDS: frozenset[str] = frozenset()

_TERM = re.compile(r"\w+", re.UNICODE)

# Scripts written without spaces between words: Han, kana and Hangul syllables. FTS5's unicode61 tokenizer reads a
# run of them as one word ("日本語のテキスト"), so a search for a part of it ("日本語") found nothing. The index gets
# each such character as a word of its own (``cjk_spaced``) and a query's run is the pairs of its neighbouring
# characters, each a phrase (``fts_terms``): a search finds a part of a run. One character class, so linear time.
CJK_CHARS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
_CJK = re.compile(f"[{CJK_CHARS}]+")


def cjk_spaced(text: str | None) -> str | None:
    """``text`` with each CJK character set apart by spaces (what the index's words are made of; None stays None)."""
    if text is None or text.isascii():
        return text
    return _CJK.sub(lambda m: " " + " ".join(m.group()) + " ", text)  # a run at a time: the join is C


# At most this many quoted terms in one query: FTS5's work grows with them (a CJK run gives a term for each pair of
# its characters, and a tool output's run may be hundreds of thousands of them).
MAX_TERMS = 64
# Of a long run, the pairs of its first characters (a run of a few distinct pairs repeated would be read whole), and
# at most RUN_TERMS of them, so that a long run leaves the query's other words their place.
PAIRS_READ = 4 * MAX_TERMS
RUN_TERMS = 16


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts_terms(word: str) -> list[str]:
    """A query word as FTS5 reads it, quoted: the word, or, where it holds CJK characters, its other letters as a word
    and each pair of neighbouring CJK characters as a phrase (one character alone as itself), each once, at most
    MAX_TERMS. Pairs are how CJK text is searched without a dictionary: a part of a run shares its pairs with it."""
    if word.isascii() or not _CJK.search(word):
        return [_quoted(word)]
    out: dict[str, None] = {}
    last = 0
    for m in _CJK.finditer(word):
        if m.start() > last:
            out[_quoted(word[last : m.start()])] = None
        run, had = m.group()[: PAIRS_READ + 1], len(out)
        for k in range(max(len(run) - 1, 1)):
            out[f'"{run[k]} {run[k + 1]}"' if len(run) > 1 else f'"{run}"'] = None
            if len(out) >= MAX_TERMS:
                return list(out)
            if len(out) - had >= RUN_TERMS:
                break
        last = m.end()
    if last < len(word):
        out[_quoted(word[last:])] = None
    return list(out)[:MAX_TERMS]


def fts_or(words: list[str]) -> str:
    """``"a" OR "b" OR ...`` of ``words`` (``fts_terms`` each), each term once, at most MAX_TERMS."""
    out: dict[str, None] = {}
    for w in words:
        for t in fts_terms(w):
            out[t] = None
            if len(out) >= MAX_TERMS:
                return " OR ".join(out)
    return " OR ".join(out)


def terms(text: str, keep_stopwords: bool = False, extra: frozenset[str] = frozenset()) -> list[str]:
    """Lower-cased word terms, stopwords (and ``extra``) dropped, first occurrence order."""
    seen: dict[str, None] = {}
    for t in _TERM.findall(text.lower()):
        if keep_stopwords or (t not in STOPWORDS and t not in extra):
            seen.setdefault(t, None)
    return list(seen)


def fts_or_query(text: str, extra_stopwords: frozenset[str] = frozenset()) -> str:
    """``"a" OR "b" OR ...``; empty when the text has no usable term (``extra_stopwords`` go too, unless
    nothing else is left)."""
    words = terms(text, extra=extra_stopwords) or terms(text) or terms(text, keep_stopwords=True)
    return fts_or(words[:64])


@dataclass(frozen=True)
class Visibility:
    """Which fact rows one member of a team host may read.

    Their own ``user/`` facts (written under their name, in their part of the
    key space: keys that start with ``user_prefix``) and the ``project/``
    facts of the projects they are allowed (``projects``; None: every
    project). Nothing else: no other member's facts, no ``global/`` facts.
    """

    owner: str
    user_prefix: str
    projects: tuple[str, ...] | None = ()
