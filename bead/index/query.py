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
# each such character as a word of its own (``cjk_spaced``) and a query term holding them is the phrase of those
# characters, in order: a search finds any part of a run. One character class, so linear time.
_CJK = re.compile(
    "([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f])"
)


def cjk_spaced(text: str | None) -> str | None:
    """``text`` with each CJK character set apart by spaces (what the index's words are made of; None stays None)."""
    if text is None or text.isascii():
        return text
    return _CJK.sub(r" \1 ", text)


def fts_term(word: str) -> str:
    """A query term as FTS5 reads it, quoted: a word, or the phrase of a CJK run's characters."""
    spaced = cjk_spaced(word) or ""
    return '"' + " ".join(spaced.split()).replace('"', '""') + '"'


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
    return " OR ".join(fts_term(w) for w in words[:64])


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
