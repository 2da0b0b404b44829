"""Forget: the value's bytes leave every file under the home.

Order matters: tombstones first (a crash after them cannot bring the value
back through a later dream run), then the version files, the raw turns, the
index rows, episodes, review items, per-conversation state lines and trace
lines; then the index's WAL is truncated. Each of those files belongs to a
component, and forget calls that component's own operation.

Sealing a key (bead.core.seal) is a forget of its plaintext: it plans with
``plan_seal`` and calls ``apply`` with ``under_lock``, which writes the
encrypted copies inside forget's locks, before anything is deleted. A seal
writes no tombstone: a value's hash is the value to whoever can enumerate
it (a PIN). Forgetting a sealed key deletes its age files as they are: no
passphrase, no decryption, no tombstone.

A key is part of its value: "remember" and the dream make keys from the
value's words. So once a key has no version left, every line that names it
goes too (state and trace lines that carry its ids, turns that quote it),
and audit, tombstone and dream-report lines keep only a hash of it.
"""

from __future__ import annotations

import binascii
import functools
import html
import json
import os
import re
import time
import unicodedata
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import files as safe
from ..capture.secrets import JOINED_LITERALS, compile_linear, redact
from ..errors import BeadError
from ..index.db import INDEXED_CHARS
from ..index.query import STOPWORDS
from ..paths import enclosing_git, version_number
from ..store.audit import guessable, joined_words, key_hash, normalise, word_form, words_of
from ..store.episodes import Episodes
from ..store.facts import is_version_of, split_frontmatter
from ..store.keys import key_mentions, parse_id, scope_of, validate_key
from ..store.queue import Queue
from ..store.rawlog import FORGOTTEN, Turn, marker_holds, own_marker, parse_bytes, redact_tokens_in
from ..store.reports import Reports
from ..textform import TERMINAL_ESCAPES, compatible, fold, fold_char, strings_in
from . import skill_files
from .memory import Memory, busy_errors
from .state import Conversations
from .trace import NotATrace, Trace, configured_paths


@dataclass
class Plan:
    """Everything one forget will touch."""

    keys: dict[str, list[int]] = field(default_factory=dict)  # key -> version numbers to delete
    values: dict[str, list[str]] = field(default_factory=dict)  # key -> values (for tombstones)
    match_text: str | None = None
    turns: dict[Path, set[int]] = field(default_factory=dict)  # raw file -> turn numbers
    # raw files whose text before the first turn's marker holds it (a hand edit's, or a damaged first marker: no
    # turn of bead's, so no turn found it): that text goes
    preambles: list[Path] = field(default_factory=list)
    # raw file -> turns whose marker line holds it (a hand edit's extra field; the marker stays when the text goes):
    # those fields go
    markers: dict[Path, set[int]] = field(default_factory=dict)
    # raw file -> turns whose marker holds it in bead's own fields (its project, a batch id: ``rawlog.OWN_FLAGS``),
    # which a forget keeps as bead's record of where the turn came from: said, not changed
    own_markers: dict[Path, set[int]] = field(default_factory=dict)
    episodes: list[Path] = field(default_factory=list)
    session_lines: dict[Path, int] = field(default_factory=dict)  # state file -> lines to drop
    trace_lines: dict[Path, int] = field(default_factory=dict)  # trace file -> lines to drop
    not_traces: list[Path] = field(default_factory=list)  # named as a trace, holding other lines: left as they are
    queue_items: list[Path] = field(default_factory=list)
    whole: set[str] = field(default_factory=set)  # keys losing every version
    # the values of the versions that stay of a key that loses some (--match): their words and runs of words are
    # not the forgotten value's, so a turn or line that says them stays
    kept: list[str] = field(default_factory=list)
    sealed_not_searched: int = 0  # --match: sealed keys it cannot look into
    temps: list[Path] = field(default_factory=list)  # a killed writer's temp files holding it
    sealed: dict[str, list[int]] = field(default_factory=dict)  # key -> sealed versions to delete (no decrypt)
    ids: set[str] = field(default_factory=set)  # the plaintext versions' ids (key@vN)
    tokens: set[str] = field(default_factory=set)  # the values' distinctive tokens (codes, PINs)
    # of those, the ones a current fact the forget does not take says too (``_said_by_other_facts``): a state or
    # trace line (bead's own blocks) that holds one is that fact's, and stays; a raw turn that says one still loses it
    spared: set[str] = field(default_factory=set)
    token_turns: dict[Path, set[int]] = field(default_factory=dict)  # raw turns holding a token, not the whole value
    # keys the audit and tombstone logs name whose name holds the value (a rejected proposal's key made of its
    # words): they keep only their hash there, like the keys that lose every version
    named: set[str] = field(default_factory=set)
    report_items: int = 0  # the keys and ids dream reports list that hold the value (made of its words)
    # other keys whose current version holds the value in clear: a forget or seal of one key leaves them (they are
    # the person's other facts), so the preview names them
    also_in: list[str] = field(default_factory=list)
    # skill files `bead skills install` wrote that hold the value (or name a key that goes): removed, in the project
    skills: list[skill_files.Installed] = field(default_factory=list)
    # skill files that hold it but are not as install wrote them (the person's edit, a --force's .bak): named, left
    skills_left: list[Path] = field(default_factory=list)
    skills_unread: str | None = None  # why the log of installed skill files could not be read
    # a killed install's temp files beside a logged skill file that hold the value (or of a key that goes whole):
    # (the project folder, the temp file), removed
    skill_temps: list[tuple[Path, Path]] = field(default_factory=list)
    # How the plan was made (the key or the text): ``apply`` makes it again (the history outside its locks, what was
    # written since inside them), so what reached the store between the preview and the person's yes (a turn the
    # proxy captured, a fact written) goes too.
    # ``remake(raw, tokens)``: ``raw`` (a list of raw files) limits the raw log's scan to those and skips the trace's
    # count; ``tokens``: the distinctive tokens to look for there (the whole history's look found them).
    remake: Callable[[list[Path] | None, set[str] | None], Plan] | None = field(default=None, repr=False, compare=False)
    # When its look began (time.time()): ``apply`` takes a plan this fresh as the history's look (``FRESH_PLAN_S``).
    started: float = field(default_factory=time.time, repr=False, compare=False)
    # raw file -> what it was when the look read it (``_stamp``), None where it could not be read: ``apply`` reads
    # again inside its locks every raw file not as it was (no clock or mtime trusted: a file a sync tool wrote with
    # an older mtime, a clock stepped back)
    raw_seen: dict[Path, tuple[int, int, int, int] | None] = field(default_factory=dict, repr=False, compare=False)
    # raw files the look could not read (EMFILE, EIO): named by the forget if they still cannot be read inside its locks
    raw_unread: set[Path] = field(default_factory=set, repr=False, compare=False)
    # ``encoded``'s patterns, for the tokens they were made of (kept with the plan, not in a process-wide cache: they
    # hold the value, which a long-lived process must not keep after the forget).
    _encoded: tuple[tuple[tuple[str, ...], frozenset[str]], Encoded] | None = field(default=None, repr=False, compare=False)

    @property
    def texts(self) -> list[str]:
        out = [v for vs in self.values.values() for v in vs]
        if self.match_text:
            out.append(self.match_text)
        return out

    @property
    def needles(self) -> list[str]:
        """Each value as text is compared (normalised), and also as the secret scan left it in the raw
        log (a credential inside the value was redacted there, which splits the value)."""
        out: list[str] = []
        for v in self.texts:
            for form in (v, redact(v)[0]):
                n = normalise(form)
                if n and n not in out:
                    out.append(n)
        return out

    @property
    def encoded(self) -> Encoded:
        """The values' distinctive codes (``tokens``) and each short value whole, as a tool's output may show them
        base64- or hex-encoded (``encoded_forms``), made once for the plan's values and tokens."""
        made_of = (tuple(self.texts), frozenset(self.tokens))
        if self._encoded is None or self._encoded[0] != made_of:
            self._encoded = (made_of, encoded_forms(*made_of))
        return self._encoded[1]

    @property
    def shingles(self) -> set[tuple[str, ...]]:
        """Every run of SHINGLE words of each value (at least two of them not stopwords): a derived
        line (trace, state, episode, queue item) holding any of them holds part of the value."""
        return _shingles(self.texts) - _shingles(self.kept) if self.kept else _shingles(self.texts)

    @property
    def empty(self) -> bool:
        return not (
            self.keys
            or self.turns
            or self.token_turns
            or self.preambles
            or self.markers
            or self.episodes
            or self.session_lines
            or self.trace_lines
            or self.queue_items
            or self.temps
            or self.sealed
            or self.skills
            or self.skill_temps
            # A raw file it could not read may hold it: "nothing matches" would be a claim it cannot make (a review).
            or self.raw_unread
            # The audit and tombstone logs' lines that name a key made of it, and the dream reports' items that hold
            # it: "nothing matches; nothing changed" left them where a forget that took a raw turn too took them.
            or self.named
            or self.report_items
        )

    def summary(self, home_store: Path) -> dict[str, Any]:
        return {
            "keys": sorted({*self.keys, *self.sealed}),
            "versions": sum(len(v) for v in self.keys.values()),
            "sealed_versions": sum(len(v) for v in self.sealed.values()),
            "raw_turns": sorted(f"{p.relative_to(home_store).as_posix()}#turn-{n}" for p, ns in self.turns.items() for n in ns),
            # Turns where the value's codes, PINs and rare words were said in other words: those are
            # redacted in place (never listed here: a token is part of the secret).
            "raw_turns_in_part": sum(len(ns) for ns in self.token_turns.values()),
            # Raw files whose text before their first turn (no turn's: a hand edit's, a damaged marker) holds it.
            "raw_text_outside_turns": sorted(p.relative_to(home_store).as_posix() for p in self.preambles),
            # Turns whose marker line (not their text) holds it: a field a hand edit or another tool added.
            "raw_turn_markers": sorted(
                f"{p.relative_to(home_store).as_posix()}#turn-{n}" for p, ns in self.markers.items() for n in ns
            ),
            # Turns whose marker holds it in bead's own fields (its project, a batch id), which stay.
            "raw_turn_markers_kept": sum(len(ns) for ns in self.own_markers.values()),
            # Raw files it could not read (a forget names them: they may still hold it).
            "raw_files_unread": sorted(p.relative_to(home_store).as_posix() for p in self.raw_unread),
            "distinctive_tokens": sum(1 for t in self.tokens if not t.startswith(RUN)),
            "episodes": len(self.episodes),
            "session_lines": sum(self.session_lines.values()) + sum(self.trace_lines.values()),
            "review_items": len(self.queue_items),
            "logged_keys": len(self.named),
            "report_items": self.report_items,
            "also_in": list(self.also_in),
            "not_traces": [str(p) for p in self.not_traces],
            "skill_files": [str(r.path) for r in self.skills] + [str(p) for _, p in self.skill_temps],
            "skill_files_left": [str(p) for p in self.skills_left],
            "skill_files_unread": self.skills_unread,
        }


def refuse_git(mem: Memory) -> None:
    repo = enclosing_git(mem.home.root)
    if repo is not None:
        raise BeadError(
            f"refusing to forget: the bead home is inside a git repository ({repo})",
            "git history keeps deleted content, so forget cannot keep its promise there; "
            "move the home out of the repository (set BEAD_HOME) and run forget again",
        )


def _version_value(mem: Memory, key: str, path: Path) -> str | None:
    """The body of a version file that does not parse as a fact but says it is this key's version."""
    n = version_number(path.name)
    try:
        data = safe.read_bytes(path, root=mem.home.root)
        if n is None or not is_version_of(data, key, n):
            return None
        _meta, body = split_frontmatter(data.decode("utf-8", errors="replace"))
        return body.strip() or None
    except (ValueError, OSError, safe.UnsafePath):  # a link is never read through
        return None


def _add_key(
    mem: Memory, plan: Plan, key: str, only_version: int | None = None, versions: AbstractSet[int] | None = None
) -> None:
    """Plan forgetting ``key``: every version, or ``only_version``, or those of ``versions``."""
    kv = mem.facts.versions(key)
    numbers = [n for n in kv.numbers if (only_version is None or n == only_version) and (versions is None or n in versions)]
    if not numbers and only_version is None and not kv.numbers:
        # No file left, but the index may still hold the key (a forget killed after deleting the
        # files and before its index transaction committed): forget the rows and their values.
        bodies = mem.index.fact_bodies(key)
        if bodies:
            plan.keys[key] = []
            plan.values[key] = bodies
            plan.whole.add(key)
        return
    if not numbers:
        return
    facts = [f for f in kv.facts if f.version in numbers]
    values = [f.body for f in facts]
    for p in kv.problems:
        if only_version is None or version_number(p.path.name) == only_version:
            v = _version_value(mem, key, p.path)
            if v:
                values.append(v)
    plan.keys[key] = numbers
    plan.values[key] = values
    plan.kept += [f.body for f in kv.facts if f.version not in numbers]
    # A state or trace line that names a forgotten version (its body injected, its key and title pointed to)
    # goes too: a pointer holds the title, which may be the value's first words or the person's own.
    plan.ids.update(f"{key}@v{n}" for n in numbers)
    if set(numbers) == set(kv.numbers):
        plan.whole.add(key)
    for f in facts:
        for src in f.sources:
            path_part, _, anchor = src.partition("#turn-")
            rel = Path(path_part[4:] if path_part.startswith("raw/") else path_part)
            if anchor.isdigit() and not rel.is_absolute() and ".." not in rel.parts:
                plan.turns.setdefault(mem.home.raw / rel, set()).add(int(anchor))


SHINGLE = 4
# What to say when another program's read of index.db kept forget from emptying its WAL (summary "index_emptied").
INDEX_BUSY = (
    "another program has index.db open for reading (a backup, an sqlite3 shell), so the forgotten text stays in "
    "index.db until the index is checkpointed; close that program, then run `bead reindex`"
)
_words = words_of  # the words a value is compared by (bead.store.audit, with tombstones)


def _shingles(texts: list[str]) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for t in texts:
        words = _words(t)
        for i in range(len(words) - SHINGLE + 1):
            run = tuple(words[i : i + SHINGLE])
            if sum(1 for w in run if w not in STOPWORDS) >= 2:
                out.add(run)
    return out


def _holds_shingle(text: str, shingles: AbstractSet[tuple[str, ...]]) -> bool:
    if not shingles:
        return False
    for view in _views(text):
        words = _words(view)
        if any(tuple(words[i : i + SHINGLE]) in shingles for i in range(len(words) - SHINGLE + 1)):
            return True
    return False


# Markup a tool's output wraps words in, which is no word of what it says: a terminal's colour and other escape
# sequences (grep --color, a test runner's output: nothing), HTML tags of the elements a page's text runs through and
# a Markdown link's target (a fetched page: a space). ``Quarrelsome \x1b[01;31mWombat\x1b[m`` and ``<b>Quarrelsome</b>
# <i>Wombat</i>`` say the value ``Quarrelsome Wombat`` to whoever reads them, so forget must find it there. Only those
# elements: a type's parameter (``Optional<Gadget>``) or a comparison (``retry<max && count>limit``) is no markup,
# and reading it as such joined words that were apart. Python's engine: each repeat is bounded and a tag ends at the
# next ``<`` or ``>``, so a text is walked a bounded number of times.
_ESCAPES = TERMINAL_ESCAPES
_ELEMENTS = (
    "a|abbr|acronym|address|article|aside|b|bdi|bdo|big|blockquote|body|br|button|caption|center|cite|code|data|dd"
    "|del|details|dfn|div|dl|dt|em|figcaption|figure|font|footer|h[1-6]|head|header|hr|html|i|img|ins|kbd|label"
    "|legend|li|main|mark|nav|nobr|ol|option|output|p|pre|q|s|samp|section|small|span|strike|strong|sub|summary|sup"
    "|table|tbody|td|tfoot|th|thead|time|title|tr|tt|u|ul|var|wbr"
)
_TAGS = re.compile(
    rf"</?(?i:{_ELEMENTS})(?:\s[^<>]{{0,1000}})?/?>|\]\([^()\s]{{0,1000}}(?:\s+(?:\"[^\"\n]{{0,200}}\"|'[^'\n]{{0,200}}'))?\)"
)


@functools.lru_cache(maxsize=8)
def _markup_free(text: str) -> str:
    """``text`` without the markup a tool's output wraps words in (``_ESCAPES``, ``_TAGS``), or ``text`` itself when
    it has none. Each matcher asks for the turn it reads (a few texts, asked several times each: kept)."""
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text)
    if "<" in text or "](" in text:
        text = _TAGS.sub(" ", text)
    return text


def _views(text: str) -> list[str]:
    """``text``, and ``text`` without its markup where it has some: what forget looks for a value in."""
    bare = _markup_free(text)
    return [text] if bare == text else [text, bare]


def _token_in(tokens: Any, text: str) -> bool:
    """Whether the pattern ``tokens`` (``token_pattern``) finds a token in ``text``, as written or without markup,
    in its normal form, and with its escapes undone (``_decoded``: `?code=K7%23mQ2`, `&#75;&#55;`, `\\u004b`)."""
    if tokens is None:
        return False
    for view in _views(text):
        if tokens.search(fold(view)):
            return True
        if _encoded_somehow(view) and tokens.search(fold(_decoded(view))):
            return True
    return False


_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": " ", "r": " ", "t": " "}


def _unescaped(text: str) -> str:
    """JSON's escapes undone (a tool call captured before bead wrote inputs as text kept them; a tool result
    that prints JSON holds ``J\\u00f6rg``), a surrogate pair as its one character. Linear: one pass."""
    if "\\" not in text:
        return text
    out = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE[m.group(2)], text)
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


DECODE_ROUNDS = 2  # JSON in a JSON string, a percent sign encoded again, an entity's & escaped once more
# A string literal's byte escapes (`'\x51uibble'`, printf's and C's `\121`), a run at a time as UTF-8 bytes.
_BYTE_ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2})+|(?:\\[0-7]{3})+")
_QUOTED_PRINTABLE = re.compile(r"=(?:[0-9A-F]{2}|\r?\n)")  # a mail's body or a MIME Q-word (`=2D`, a soft break)


def _encoded_somehow(text: str) -> bool:
    """Whether ``text`` may hold something ``_decoded`` undoes (else the text is its own decoding)."""
    return any(c in text for c in "\\%&=\"'")


def _bytes_of(m: re.Match[str]) -> str:
    run = m.group(0)
    if run[1] == "x":
        data = bytes(int(run[i + 2 : i + 4], 16) for i in range(0, len(run), 4))
    else:
        data = bytes(int(run[i + 1 : i + 4], 8) & 0xFF for i in range(0, len(run), 4))
    return data.decode("utf-8", "replace")


def _decoded(text: str) -> str:
    """``text`` with its JSON escapes, byte escapes, percent-encoding, quoted-printable, HTML entities and string
    literals joined by ``+`` undone, each where it has any, up to DECODE_ROUNDS times (each round is linear)."""
    for _ in range(DECODE_ROUNDS):
        before = text
        text = _unescaped(text)
        if "\\" in text:
            text = _BYTE_ESCAPES.sub(_bytes_of, text)
        if "%" in text:
            text = urllib.parse.unquote(text)
        if "=" in text and _QUOTED_PRINTABLE.search(text):
            text = binascii.a2b_qp(text.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")
        if "&" in text:
            text = html.unescape(text)
        if "'" in text or '"' in text:  # `'Quibble-Fr' + 'ost-5521'`: the capture's pattern for such joins
            text = JOINED_LITERALS.sub("", text)
        if text == before:
            break
    return text


def _folded(text: str) -> str:
    """``text`` decoded (``_decoded``) and in its normal form (bead.textform.fold: no invisible character or
    combining accent, full-width and look-alike letters as ASCII): what ``_plain`` and ``_word_form`` read."""
    return fold(_decoded(text))


def _plain(text: str, folded: str | None = None) -> str:
    """``text`` decoded and in its normal form (``_folded``, or ``folded`` when given), case and spacing evened out:
    a value as a whole, signs kept (``alice%40example.com`` and ``alice&#64;example.com`` are ``alice@example.com``)."""
    return normalise(_folded(text) if folded is None else folded)


def _word_form(text: str, folded: str | None = None) -> str:
    """The words of ``text`` (decoded, in its normal form: ``_folded``, or ``folded`` when given) as forget compares
    them: lower-cased, one space between and around them. Punctuation is no word: ``**Globex Wombatica** Holdings``
    and ``Rosalind’s`` hold ``globex wombatica holdings`` and ``rosalind s`` as the value's own words do."""
    return " " + " ".join(_words(_folded(text) if folded is None else folded)) + " "


def _names_key(text: str, keys: AbstractSet[str]) -> bool:
    """Whether ``text`` names one of ``keys`` as a whole key."""
    return any(key_mentions(text, key) for key in keys)


SHORT_NEEDLE = 6


def _holds(text: str, needle: str) -> bool:
    """Whether ``text`` holds ``needle``; a short one (a 3-digit code) only as a whole token, so that it does
    not match inside "a1234" or "port 8123"."""
    if len(needle) >= SHORT_NEEDLE:
        return needle in text
    i = text.find(needle)
    while i != -1:
        before = text[i - 1] if i else ""
        after = text[i + len(needle)] if i + len(needle) < len(text) else ""
        if not (before.isalnum() or after.isalnum()):
            return True
        i = text.find(needle, i + 1)
    return False


def _word_needle(text: str) -> str:
    """The word form a value is also looked for by (``_word_form``), or "" when its words alone do not say it
    (bead.store.audit.word_form: the rule tombstones judge a value's words by too)."""
    return word_form(_folded(text))


def _word_needles(text: str) -> list[str]:
    """``_word_needle`` and, for a distinctive value (bead.store.audit.joined_words: "data base" is not, nor is
    "Python 3"), the same words written as one whole word (``GlobexWombaticaHoldings``, a class or an environment
    variable's name; words joined by an invisible character, which the normal form drops)."""
    form = _word_needle(text)
    joined = joined_words(_folded(text)) if form else None
    return [form, f" {joined} "] if form and joined else [form] if form else []


def _holds_decoded(text: str, folded: list[str], words: list[str]) -> bool:
    """Whether ``text``, decoded and in its normal form (read once), as written or without its markup
    (``_markup_free``), holds one of ``folded`` (values as ``_plain`` writes them) or, as a run of whole words, one
    of ``words`` (``_word_needle``'s)."""
    if not folded and not words:
        return False
    for view in _views(text):
        once = _folded(view)
        if folded:
            plain = _plain(view, once)
            if any(_holds(plain, f) for f in folded):
                return True
        form = _word_form(view, once) if words else ""
        if any(w in form for w in words):
            return True
    return False


ENCODED_MIN_BYTES = 6  # a code shorter than this could be in any decoded blob by chance
ENCODED_WHOLE_CHARS = 256  # a value up to this long is looked for encoded as a whole too
# Of a plan's codes, the longest this many (and this many whole values): one pattern over every decoded blob, so a
# pasted page of codes costs what a few do.
ENCODED_MAX_SOURCES = 32
# Runs of base64 (either alphabet), across the line breaks `base64` and PEM wrap them with. A hex dump's offset
# column, its text column (`hexdump -C`'s `|...|`, `xxd`'s after two spaces) and C's `0x4b, ` / `\x4b` spelling,
# taken out before its digits are read as one run. RE2: linear.
# A wrapped line may be indented (YAML, a plist) or numbered (`cat -n`, an agent's file reader: `12→`).
_B64_RUN = compile_linear(r"[A-Za-z0-9+/_=-]{8,}(?:\r?\n[ \t]*(?:[0-9]+(?:\t|→))?[A-Za-z0-9+/_=-]{4,})*")
_B64_LINE_START = compile_linear(r"\r?\n[ \t]*(?:[0-9]+(?:\t|→))?")
_HEX_OFFSET = compile_linear(r"(?m)^[ \t]*(?:0x)?[0-9A-Fa-f]{4,16}:?[ \t]+")
_HEX_TEXT_COLUMN = compile_linear(
    r"(?m)(?:[ \t]+\|[^|\n]{1,16}\|[ \t]*$|[ \t]+>[^<\n]{1,16}<[ \t]*$|([0-9A-Fa-f])[ \t]{2,}[^ \t\n][^\n]{0,15}$)"
)
_HEX_ESCAPED = compile_linear(r"(?:0[xX]|\\x)([0-9A-Fa-f]{2})(?:, ?)?")
_B64_URL = str.maketrans("-_", "+/", "=")
_HEX_SPACING = str.maketrans("", "", " \t\r\n:-")  # `-`: .NET's BitConverter spelling (`4B-37-23`)
_HEX_DIGITS = "0123456789abcdefABCDEF"
_WORD_JOINS = str.maketrans("", "", "_-")


def _base64_blobs(text: str) -> Iterator[str]:
    """What ``text`` says in base64, decoded at each of the four offsets a run may start at (inside a longer
    encoded text), its bytes lower-cased (ASCII) and read as Latin-1 (one character a byte). A run of hex digits
    alone, or of a word's letters (snake_case, kebab-case), is passed over: eight characters or more of base64
    almost never read so, and a tool's output is full of both. Linear in ``text``."""
    for m in _B64_RUN.finditer(text):
        run = m.group(0)
        if not run.strip(_HEX_DIGITS):
            continue
        letters = run.translate(_WORD_JOINS)
        if letters.isalpha() and (letters.islower() or letters[1:].islower()):
            continue
        run = (_B64_LINE_START.sub("", run) if "\n" in run else run).translate(_B64_URL)
        for off in range(4):
            chunk = run[off:]
            if len(chunk) % 4 == 1:
                chunk = chunk[:-1]  # no byte ends there
            chunk += "=" * (-len(chunk) % 4)  # the last group's bytes count (its padding was taken out above)
            if len(chunk) >= 8:
                try:
                    yield binascii.a2b_base64(chunk).lower().decode("latin-1")
                except binascii.Error:
                    continue


def _hex_view(text: str) -> str:
    """``text``'s hex digits as one lower-case run: a hex dump's offsets and text column taken out, C's
    ``0x``/``\\x`` spellings undone, spaces, line breaks and colons between bytes dropped (a code across two rows
    of a dump is one run). Linear."""
    view = _HEX_TEXT_COLUMN.sub(r"\1", _HEX_OFFSET.sub("", text))
    if "0x" in view or "0X" in view or "\\x" in view:
        view = _HEX_ESCAPED.sub(r"\1", view)
    return view.translate(_HEX_SPACING).lower()


def _literal(text: str) -> str:
    """``text`` as an RE2 pattern that matches it alone."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


@dataclass(frozen=True)
class Encoded:
    """A plan's codes as a tool's output may show them encoded: base64 read decoded (``_base64_blobs``), so a
    code is found whole at any offset and nothing but the code matches; hex by the codes' own hex digits in the
    text's hex (``_hex_view``)."""

    pattern: Any = None  # RE2 over the sources' lower-cased bytes read as Latin-1, or None (nothing to find)
    hexes: Any = None  # RE2 over the sources' bytes in lower-case hex

    def found(self, text: str) -> bool:
        if self.pattern is None or len(text) < 8:
            return False
        views = [text]
        if "%" in text or "\\" in text or "&" in text:
            views.append(_decoded(text))  # percent-encoded base64, JSON's `\/`
        if "\\n" in text:
            views.append(text.replace("\\r\\n", "\n").replace("\\n", "\n"))  # wrapped base64 in a JSON string
        for view in views:
            # One search a view: the blobs (Latin-1, every character below U+0100) joined by one no code holds.
            if self.pattern.search("\u0100".join(_base64_blobs(view))) or self.hexes.search(_hex_view(view)):
                return True
        return False


def _code_sources(text: str, codes: Any) -> set[str]:
    """The words of ``text`` (and their parts between ``= : / , ;``), without the quotes and brackets around
    them, that hold one of the plan's distinctive codes (``codes``: a pattern of them; a word of letters alone is
    no code here: a rare word of the plain text is common inside decoded files), at least ENCODED_MIN_BYTES
    long. A password keeps its signs (``Xy3!Qz7?Lm``), which the plain search's tokens are cut at. Linear."""
    out: set[str] = set()
    for word in text[:VALUE_CHARS].split():
        parts = {word}
        for sep in "=:/,;":
            parts |= {p for w in list(parts) for p in w.split(sep)}
        for part in parts:
            part = part.strip("'\"`()[]{}<>.,;:")
            if len(part.encode("utf-8")) >= ENCODED_MIN_BYTES and codes.search(fold(part).lower()):
                out.add(part)
    return out


def encoded_forms(texts: tuple[str, ...], tokens: frozenset[str]) -> Encoded:
    """The plan's values' codes (``_code_sources``: the ENCODED_MAX_SOURCES longest) and its values of up to
    ENCODED_WHOLE_CHARS as a whole, as ``Encoded`` finds them, as whole tokens: a tool's output shows a value so (a
    config map's data, `base64` of a note, a hex dump), where no word of it is left to find. A turn holding one
    goes whole."""
    # Not a whole run (``RUN``): its pieces are the tokens encoded; marked, it took a place of the ENCODED_MAX_SOURCES
    # and matched nothing (a review).
    code_tokens = sorted((t for t in tokens if not t.isalpha() and not t.startswith(RUN)), key=len, reverse=True)
    codes: set[str] = {t for t in code_tokens if len(t.encode("utf-8")) >= ENCODED_MIN_BYTES}
    if code_tokens:
        pattern = compile_linear("|".join(_literal(t) for t in code_tokens))
        codes |= set().union(*(_code_sources(t, pattern) for t in texts))
    # Each value as written, and its words joined as a name, a path or a list would join them: `echo
    # Zanzibarqux-Velotrine | base64` holds no value as written (the plain search reads punctuation as a break).
    short = sorted({t for t in texts if len(t) <= ENCODED_WHOLE_CHARS}, key=lambda t: (-len(t), t))[:ENCODED_MAX_SOURCES]
    wholes = list(dict.fromkeys(v for t in short for v in (t, *_joined_variants(t))))
    chosen = sorted(codes, key=lambda t: (-len(t), t))[:ENCODED_MAX_SOURCES] + wholes
    # UTF-8, and UTF-16 as Windows encodes text (PowerShell's -EncodedCommand).
    raw = sorted({c.encode(codec).lower() for c in chosen for codec in ("utf-8", "utf-16-le")}, key=len, reverse=True)
    if not raw:
        return Encoded()
    text_alts = "|".join(_literal(b.decode("latin-1")) for b in raw)
    hex_alts = "|".join(_hex_either_case(b) for b in raw)
    return Encoded(
        # A whole token, as the plain search finds codes: no letter or digit beside it (`v2.10.1` is not `v2.10.15`).
        compile_linear(f"(?:^|[^a-z0-9])(?:{text_alts})(?:$|[^a-z0-9])"),
        # Hex as it is: a dump's rows joined, the digits around a code are not always its neighbours' bytes.
        compile_linear(hex_alts),
    )


WORD_JOINS = ("-", "_", ".", "", "\n", "\r\n", "/")


def _joined_variants(text: str) -> list[str]:
    """``text``'s words (2 to 12 of them) joined by each of WORD_JOINS instead of its blanks."""
    words = text.split()
    return [j.join(words) for j in WORD_JOINS] if 2 <= len(words) <= 12 else []


def _hex_either_case(data: bytes) -> str:
    """An RE2 pattern of ``data``'s bytes in lower-case hex, each ASCII letter in either case (its bytes were
    lower-cased; the hex of the text's bytes is not)."""
    return "".join(f"(?:{b:02x}|{ord(chr(b).upper()):02x})" if 0x61 <= b <= 0x7A else f"{b:02x}" for b in data)


# Scripts written without spaces between words (Chinese and Japanese: kana, ideographs, half-width katakana; Thai): a
# line break inside a value there (`蒼月\n七三九`, a wrapped memo) is no word's end, and the space the normal form
# puts in its place is none either. Possessive, and the lookbehind fails at once after a blank: linear.
_NO_SPACES = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_UNSPACED_CHAR = re.compile(f"[{_NO_SPACES}]")
_UNSPACED_GAP = re.compile(f"(?<=[{_NO_SPACES}])\\s++(?=[{_NO_SPACES}])")


def _unspaced(text: str) -> str:
    """``text`` without the blanks between two characters of a script written without spaces."""
    return _UNSPACED_GAP.sub("", text) if _UNSPACED_CHAR.search(text) else text


def _holds_unspaced(text: str, needles: list[str]) -> bool:
    return any(c in text for c in needles)


def _matcher(
    needles: list[str],
    keys: AbstractSet[str] = frozenset(),
    shingles: AbstractSet[tuple[str, ...]] = frozenset(),
    tokens: Any = None,
    encoded: Encoded | None = None,
) -> Callable[[str], bool]:
    """Raw turns: the whole value (``shingles`` empty), or its codes encoded (``encoded``). Derived files: also any
    run of its words, and any of its distinctive tokens (``tokens``: a compiled pattern, or None)."""

    words = [w for n in needles for w in _word_needles(n)]
    folded = [f for n in needles if (f := _plain(n))]
    unspaced = [c for n in needles if _UNSPACED_CHAR.search(n) and len(c := _unspaced(n)) >= MIN_TOKEN]

    def matches(text: str) -> bool:
        t = normalise(text)
        u = normalise(_unescaped(text))
        return (
            any(_holds(t, n) or _holds(u, n) for n in needles)
            or bool(unspaced and _holds_unspaced(_unspaced(t), unspaced))
            or _holds_decoded(text, folded, words)
            or bool(keys and _names_key(t, keys))
            or _holds_shingle(text, shingles)
            or _token_in(tokens, text)
            or bool(encoded and encoded.found(text))
        )

    return matches


# The parts of a value that identify it by themselves, so that it can be found where it was said in other
# words ("the bank gave me recovery code QX-88 and the PIN is 4711" beside the fact "4711, recovery code
# QX-88"): a token with a digit or a sign in it (a code, a PIN, a key, a number), and a rare word (one at
# most RARE_TURNS raw turns hold, once the history has RARE_HISTORY turns to judge by). Not its common words.
TOKEN_CHARS = 200  # a run of token characters longer than this is read in pieces of this length
_TOKEN = re.compile(rf"[^\s\\\"'`()\[\]{{}}<>,;!?]{{1,{TOKEN_CHARS}}}")
_EDGE = ".:-_/@+#=*~"
# And the quotes the fold keeps as they are (`«production»` is a word; `dk«4»Zq` one code: a review)
_EDGES = _EDGE + "\u00ab\u00bb\u201a\u201e\u2039\u203a"
MIN_TOKEN = 3
RARE_TURNS = 2
CODE_TURNS = 5  # a code said in more raw turns than this is the history's (a year, a common port)
# Words joined (`docker-compose`) said in more raw turns than this are the history's: more than a short code's, as a
# two-word password typed again and again (`purple-monkey`), or a login ssh's output repeats, must still go (a review).
# A policy, not a figure fitted to data: `package.json` and `docker-compose` are said in hundreds of a coding history's
# turns, a secret retyped in a few.
JOINED_TURNS = 20
LONG_CODE = 8  # letters and digits: a code this long is the value's however often it was said
PHRASE_PARTS = 3  # words joined into one token (a passphrase) that are looked for apart too: at least this many,
PHRASE_PART_CHARS = 4  # each at least this long
RARE_HISTORY = 20
RARE_MIN_LETTERS = 6
# The index counts a word's turns by its Porter stem ("providence" by every turn that says provided, provider or
# provides). A word its stem makes look common is counted again by its own form in the turns its stem finds, where
# those are at most STEM_TURNS; at most STEM_BUDGET turns are read so for one forget (a long value's many words).
STEM_TURNS = 200
STEM_BUDGET = 2_000


_PARTS = re.compile(r"[\W_]+")
# Of a value, the characters its codes and words are read from: all a version file holds (bead.store.facts' 64 KB; a
# code past the first 20,000 characters of a long runbook stayed in every turn that said it: an outside review).
VALUE_CHARS = 65_536


def _token_forms(texts: list[str], spelt: dict[str, set[str]] | None = None) -> tuple[set[str], dict[str, list[str]]]:
    """The candidate words of ``texts`` (letters only, long enough, not stop words) and its codes (a digit or a
    sign in them), each code with its letter-and-digit parts, lower-cased, in their normal form. ``spelt``: filled
    with each code's forms as typed, which the index holds (`кто-нибудь`, where the fold reads
    `kтo-нибyдь`)."""
    codes: set[str] = set()
    words: set[str] = set()
    for text in texts:
        # A word or a code as typed, each read in its normal form: the fold reads some letters as digits (`б` as 6,
        # `З` as 3), and a Russian word of eight letters or more was a long code, gone from every turn (a review).
        for raw in _cut(_as_typed(compatible(text[:VALUE_CHARS]))):
            tok = fold(raw).strip(_EDGES).lower()
            if len(tok) < MIN_TOKEN:
                continue
            typed = _typed_edges(raw)
            if any(c.isdigit() for c in typed) or not all(c.isalpha() or unicodedata.category(c)[0] == "M" for c in typed):
                codes.add(tok)
                if spelt is not None:
                    spelt.setdefault(tok, set()).add(typed)
            elif len(tok) >= RARE_MIN_LETTERS and tok not in STOPWORDS:
                words.add(tok)
        # The whole runs, marked (``RUN``) where they are read: told by their folded length, a piece of 200 characters
        # that folds longer (`æ` as `ae`) was taken for a run (a review).
        for whole in _runs(_as_typed(compatible(text[:VALUE_CHARS]))):
            # Longer than a token as the fold reads it too: a word padded with what it drops (NULs, combining marks)
            # was a run, always the value's and found inside longer words (a review).
            if len(run := fold(whole).strip(_EDGES).lower()) > TOKEN_CHARS:
                codes.add(RUN + run)
    return words, {t: _parts_of(t) for t in codes}


# What ends a token (``_TOKEN``'s excluded characters and blanks): a character the fold reads as one of these ends it
# too (a modifier apostrophe, a prime, an ornament bracket), as where tokens were cut from the folded text.
_TOKEN_ENDS = frozenset(" \t\n\r\\\"'`()[]{}<>,;!?")


@functools.lru_cache(maxsize=8192)
def _typed_char(ch: str) -> str:
    if ch.isascii():
        return ch
    folded = fold_char(ch)
    if not folded:
        return ch if unicodedata.category(ch)[0] == "M" else ""  # a mark stays the letter's; what the fold drops goes
    return " " if all(c in _TOKEN_ENDS or c.isspace() for c in folded) else ch


_KEPT_QUOTES = re.compile("[\u00ab\u00bb\u201a\u201e\u2039\u203a]+")


def _cut(text: str) -> Iterator[str]:
    """The tokens of ``text`` (``_TOKEN``), and where one holds a quote the fold keeps, its pieces between them too: a
    code in quotes is one token with what the quotes join (`dk«4»Zq`) and stands alone as well (`wifi:«QX-88»`, the
    «QX-88»-Code: a review). A code glued to its label (`WIFI_PSK=Xk9…`) is not cut out of it: five review rounds
    found every rule for which pieces to look for on their own took the history's words (`python3.11`, `UTF-8`,
    `OAuth2Client.java`, a model's name) from turns that said them."""
    for raw in _TOKEN.findall(text):
        yield raw
        if _KEPT_QUOTES.search(raw):
            yield from (p for p in _KEPT_QUOTES.split(raw) if p)


def _runs(text: str) -> Iterator[str]:
    """The runs of token characters in ``text`` longer than a token (TOKEN_CHARS: a JWT, a cloud session token),
    whole: ``_cut`` reads them in pieces, each looked for as a whole token, which it is not where another turn says
    the run whole, and the code stayed there."""
    start = end = -1
    for m in _TOKEN.finditer(text):
        if m.start() != end:
            if end - start > TOKEN_CHARS:
                yield text[start:end]
            start = m.start()
        end = m.end()
    if end - start > TOKEN_CHARS:
        yield text[start:end]


def _typed_edges(raw: str) -> str:
    """``raw`` without what the fold reads as an edge at either end (an en dash, a minus, a ratio colon glued to a
    word made it a long code: a review)."""
    i, j = 0, len(raw)
    while i < j and all(c in _EDGES for c in fold_char(raw[i])):  # a mark the fold drops too (on a quote: a review)
        i += 1
    while j > i and all(c in _EDGES for c in fold_char(raw[j - 1])):
        j -= 1
    return raw[i:j]


def _as_typed(text: str) -> str:
    """``text`` as its tokens are cut from it, before each is folded: what the fold drops as unseen dropped (a soft
    hyphen, a right-to-left mark, a byte-order mark inside or beside a word made it a long code: a review), and what it
    reads as a quote, a bracket or a blank read as a blank (`ʼsecretʼ`, `″word″`: a token of the fold's quotes was
    looked for as written: a review)."""
    if text.isascii():
        return text
    table = {ord(ch): to for ch in set(text) if (to := _typed_char(ch)) != ch}
    return text.translate(table) if table else text


def _parts_of(code: str) -> list[str]:
    """A code's letter-and-digit parts, of any script (`по-русски`: its two words; an ASCII-only cut read the Cyrillic
    letters as separators, and its parts as `o` and `pycc`: a review)."""
    return [p for p in _PARTS.split(code) if p]


def _terms(words: set[str], parts: dict[str, list[str]]) -> set[str]:
    """The words and the codes' parts: what raw turns are counted by."""
    return words | {p for ps in parts.values() for p in ps}


def _held_forms(text: str) -> set[str]:
    """The words and code parts of ``text`` in the forms ``_token_forms`` gives them (letters of every script
    kept), for counting a turn that holds the value among the turns that hold each of its words."""
    words, parts = _token_forms([text])
    return _terms(words, parts) | set(parts)


def _said_by_other_facts(mem: Memory, plan: Plan) -> set[str]:
    """Of the plan's distinctive tokens, those a current fact it does not take says too: that fact's word or code
    (`5433` of "Postgres listens on port 5433"), which stays in bead's blocks that hold that fact (``Plan.spared``).
    Before, a forget of "the cache answered on 5433 once" took every conversation's pinned block that held the
    Postgres fact, so each was built again in the middle of its conversation and its prompt cache was lost (an
    outside review). Raw turns still lose the token wherever they say it: a fact anyone wrote (an agent's) that
    says a secret's code must not keep it in the person's history."""
    out: set[str] = set()
    try:
        bodies = mem.index.current_bodies()
    except Exception:  # noqa: BLE001 - the index is derived: without it no token is spared
        return out
    for key, body in bodies:
        if key in plan.keys or key in plan.whole:
            continue
        lower = body.lower()
        maybe = {t for t in plan.tokens - out if t in lower}
        if maybe:
            out |= maybe & _held_forms(body)
        runs = {t for t in plan.tokens - out if t.startswith(RUN)}
        if runs:  # a run said in the fact, inside a longer one or not
            folded = fold(body).lower()
            out |= {t for t in runs if t[1:] in folded}
    return out


def distinctive_tokens(mem: Memory, texts: list[str], held: Mapping[str, int] | None = None) -> set[str]:
    """The distinctive tokens of ``texts``, lower-cased, in their normal form (bead.textform.fold). Once the
    history has RARE_HISTORY turns to judge by, a short code or number that more than CODE_TURNS raw turns
    hold (a year, a common port) is the history's, not the value's, and stays; a long code always goes.
    ``held``: for a word, how many of the turns that hold the value itself (they go anyway) hold it too: those
    are not counted among the turns that hold it."""
    typed: dict[str, set[str]] = {}
    words, parts = _token_forms(texts, typed)
    had = held or {}
    # The index holds each word as it was written; the forms here are folded (`сервера` reads `cepвepa`): a word is
    # counted by its spellings in the value too, or every common Cyrillic or Greek word read as held by no turn, was
    # judged rare and went from every turn (a review).
    lookup: list[str] = []
    try:
        judged = mem.index.raw_size() >= RARE_HISTORY
        lookup = sorted(_terms(words, parts)) if judged else []
        found = mem.index.raw_doc_freq(lookup) if lookup else {}
        spelled = _spellings(mem, texts, set(lookup)) if judged else {}
    except Exception:  # noqa: BLE001 - the index is derived: without it every code counts, no word does
        judged, found, spelled = False, {}, {}
    # At most the turns that hold it as read here or in another script's spelling (checked again, word by word, below)
    df = {w: found.get(w, 0) + sum(spelled.get(w, {}).values()) for w in lookup}

    def others(w: str) -> int:
        return df.get(w, 0) - had.get(w, 0)

    out = {w for w in words if judged and others(w) <= RARE_TURNS}
    budget = STEM_BUDGET
    for w in sorted(words - out, key=lambda w: (df.get(w, 0), w)) if judged else ():
        if df.get(w, 0) > min(STEM_TURNS, budget):
            break  # the rest are commoner still: judged by their stems
        budget -= df[w]
        if _turns_saying(mem, w, RARE_TURNS + had.get(w, 0) + 1, set(spelled.get(w, {}))) - had.get(w, 0) <= RARE_TURNS:
            out.add(w)  # rare by its own form: "Providence" beside turns that say "provided" (an outside review)
    written = WRITTEN_BUDGET
    # The value's codes that go whatever the history says (long, not words joined): a turn that says joined words
    # only inside one of them loses them with it, so it does not count for them.
    certain = token_pattern(
        {t for t in parts if sum(c.isalnum() for c in t) >= LONG_CODE and not _joined_words(typed.get(t, {t}))}
    )
    for tok, ps in sorted(parts.items()):
        long_code = sum(c.isalnum() for c in tok) >= LONG_CODE
        spellings = typed.get(tok, {tok})
        if judged and long_code and _joined_words(spellings) and written > 0:
            # Words joined (`docker-compose`): the value's unless more than JOINED_TURNS other turns say them as
            # written (an outside review found them taken from every turn as a long code; the words' phrase in prose,
            # the value's own turns counted too: reviews).
            said, read = _said_as_written(
                mem, token_pattern({tok}), spellings, JOINED_TURNS + had.get(tok, 0) + 1, written, certain
            )
            written -= read
            if said - had.get(tok, 0) <= JOINED_TURNS:
                out.add(tok)
            continue
        if long_code or not judged or min((others(p) for p in ps), default=0) <= CODE_TURNS:
            out.add(tok)
    return out


def _passphrase(parts: list[str]) -> bool:
    """Whether a token's parts are words joined as a passphrase joins them (PHRASE_PARTS words of PHRASE_PART_CHARS
    letters at least: `maple-quartz-lantern-orbit`)."""
    return len(parts) >= PHRASE_PARTS and all(len(p) >= PHRASE_PART_CHARS for p in parts)


def _compound(parts: list[str]) -> bool:
    """Whether a code is words joined, with no digit and not a passphrase's shape: `docker-compose`, `package.json`,
    `end-to-end`, each part written as a word is (small letters, a capital first, or all capitals; not a random run
    such as `QwErTyUiOp`: a review). As a long code it went from every turn that said it, whatever the history (an
    outside review)."""
    return (
        len(parts) >= 2
        and all(p.isalpha() and (p.islower() or p.isupper() or p.istitle()) for p in parts)
        and not _passphrase(parts)
    )


def _joined_words(spellings: AbstractSet[str]) -> bool:
    """Whether a code, as typed, is words joined by `-`, `_` or `.` (``_compound``; the fold reads `б` as 6), not a
    host of three names or more (`vault.acmecorp.net`), which a value names as its own, nor a label and its value
    (`DB_PASSWORD=SunflowerMeadow`: a review)."""
    return any(_compound(_parts_of(f)) and set(_JOINERS.findall(f)) <= {"-", "_", "."} and f.count(".") < 2 for f in spellings)


_JOINERS = re.compile(r"[^\w]|_")


WRITTEN_ROWS = 200  # of the turns that say a code's words in a row, those read to count the code as written
WRITTEN_BUDGET = 1_000  # and at most these for one forget; past them joined words go as every long code does


def _said_as_written(
    mem: Memory, alone: Any, spellings: AbstractSet[str], enough: int, budget: int, certain: Any
) -> tuple[int, int]:
    """(How many raw turns say a code as it would be taken from them, ``alone`` (its ``token_pattern``), up to
    ``enough``; how many turns were read to tell): of the turns whose own text holds one of its ``spellings``' words
    in a row (at most WRITTEN_ROWS, within ``budget``), those where the pattern finds it once the codes that go anyway
    (``certain``) are taken out. None, where the index cannot tell: the code goes."""
    phrases = {tuple(w) for f in sorted(spellings) if (w := _parts_of(f))}
    try:
        rows = [r for w in sorted(phrases) for r in mem.index.raw_rows_with_phrase(list(w), min(WRITTEN_ROWS, budget))]
    except Exception:  # noqa: BLE001 - the index is derived
        return 0, 0
    rows = list({(r["path"], r["off"]): r for r in rows}.values())[:budget]
    n = 0
    for i, row in enumerate(rows, 1):
        text = mem.index.fill_raw_text([row], labels=False)[0]["text"][:INDEXED_CHARS]
        if certain is not None and _token_in(certain, text):
            text = redact_tokens_in(text, certain)
        if _token_in(alone, text):
            n += 1
            if n >= enough:
                return n, i
    return n, len(rows)


def _spellings(mem: Memory, texts: list[str], forms: set[str]) -> dict[str, dict[str, int]]:
    """For each of ``forms`` (the value's words and code parts as ``_token_forms`` reads them: folded, then lower-cased)
    that the value spells with letters of another script, the index's terms that may be the same word, with the turns
    that hold each: the terms whose fold, lower-cased first as the tokenizer does, is the value's spelling's. The
    index keeps `москва` and `ёлка` as written; the forms here read `Москва` as `mockba` (and `москва` as `мocквa`):
    looked up as they are, every common Cyrillic or Greek word of a value was held by no turn, judged rare and went
    from every turn (reviews). What the turns say in these spellings is counted again by each turn's own words
    (``_turns_saying``)."""
    keys: dict[str, set[str]] = {}  # the tokenizer's reading of a spelling -> the forms it is one of
    for text in texts:
        if text.isascii():
            continue
        for raw in _cut(_as_typed(compatible(text[:VALUE_CHARS]))):
            if raw.isascii():
                continue
            # The tokenizer case-folds (`ς` as `σ`: a review found every Greek word that ends in it still cut)
            form, key = fold(raw).strip(_EDGES).lower(), fold(raw.casefold()).strip(_EDGES).lower()
            pairs = [(form, key)]
            if not form.isalpha():  # a code's parts, each its own (`по-русски`)
                parts, key_parts = _parts_of(form), _parts_of(key)
                pairs += list(zip(parts, key_parts, strict=False)) if len(parts) == len(key_parts) else []
            for f, k in pairs:
                if f in forms:
                    keys.setdefault(k, set()).add(f)
    if not keys:
        return {}
    terms = mem.index.raw_terms_beyond_ascii()
    read = fold("\n".join(t.casefold() for t, _ in terms)).split("\n")  # one fold of all: a line break stays one
    out: dict[str, dict[str, int]] = {}
    for (term, doc), k in zip(terms, read if len(read) == len(terms) else [fold(t.casefold()) for t, _ in terms], strict=True):
        for f in keys.get(k.strip(_EDGES).lower(), ()):
            out.setdefault(f, {})[term] = doc
    return out


def _turns_saying(mem: Memory, word: str, enough: int, spellings: AbstractSet[str] = frozenset()) -> int:
    """How many raw turns say ``word`` (or one of its ``spellings``) in its own form (``_held_forms``) among those its
    stem finds, counted up to ``enough``. Of each turn, what the index holds (its first INDEXED_CHARS characters) is
    read, as the counts of the turns that hold the value are."""
    try:
        # Every turn whose own text holds the stem (at most STEM_TURNS, what its count was checked against): a
        # ranked search over the turn before it too left turns that say the word out, and the word was judged rare
        # and cut from them (a review).
        rows = [r for w in sorted({word, *spellings}) for r in mem.index.raw_rows_saying(w, STEM_TURNS)]
    except Exception:  # noqa: BLE001 - the index is derived: without it the stem's count stands
        return enough
    rows = list({(r["path"], r["off"]): r for r in rows}.values())  # a turn found by two spellings, once
    n = 0
    for row in rows:
        if word in _held_forms(mem.index.fill_raw_text([row], labels=False)[0]["text"][:INDEXED_CHARS]):
            n += 1
            if n >= enough:
                break
    return n


def token_pattern(tokens: AbstractSet[str]) -> Any:
    """One linear-time pattern that finds any of ``tokens`` as a whole token (case-insensitive), or None. A
    token with a digit in it is found however it is written apart (``QX-88``, ``QX 88``, ``qx88``): its letters
    and digits in order, up to three other characters between each two (`QX - 88`); so are the words of a passphrase joined
    into one token (PHRASE_PARTS words of PHRASE_PART_CHARS letters at least)."""
    if not tokens:
        return None

    def form(tok: str) -> str:
        alnum = [c for c in tok if c.isalnum()]
        if MIN_TOKEN <= len(alnum) < LONG_CODE and all(c.isdigit() for c in alnum):
            # A PIN, a phone number, a sum: its digits with blanks, line breaks or dashes between any two (`555-0142`,
            # `47 11`), a comma and a blank (`4, 7, 1, 1`), a thousands sign where one stands (`85,000`, `85.000`,
            # `1,50,000`), a dot, slash or underscore with three digits at least on each side (`555.0142`), and other
            # signs only where the value has them: `1230` is no `12:30`, `2011` no `20.11.`, which the history says
            # (reviews).
            digits = sum(c.isdigit() for c in tok)
            out: list[str] = []
            gap, seen = False, 0
            for c in tok:
                if c.isdigit():
                    if out:
                        after = digits - seen
                        signs = "[,.'\u2019\u00a0]" if after in (3, 5) or after % 3 == 0 else ""
                        if min(seen, after) >= 3:
                            signs = "[,.'\u2019\u00a0/_]"
                        out.append(r"[\W_]{0,3}" if gap else f"(?:[\\s-]{{0,3}}|, {'|' + signs if signs else ''})")
                    out.append(re.escape(c))
                    gap, seen = False, seen + 1
                else:
                    gap = True
            return "".join(out)
        if any(c.isdigit() for c in tok) and len(alnum) >= MIN_TOKEN:
            return r"[\W_]{0,3}".join(re.escape(c) for c in alnum)
        parts = [p for p in re.split(r"[\W_]+", tok) if p]
        if _passphrase(parts):
            # A passphrase of words joined (`maple-quartz-lantern-orbit`) is said with spaces too: its words in
            # order, up to three other characters between each two. Short parts (`end-to-end`) stay as written.
            return r"[\W_]{0,3}".join(re.escape(p) for p in parts)
        return re.escape(tok)

    # A whole run (``_runs``) is found as written, after a longer run's start too: said whole, or glued to its label
    # (`Bearer<key>`). Not with signs allowed between its characters (a search several times slower on a history
    # of base64), not piece by piece (a piece it shares with another URL, path or image took that piece from it), nor
    # a run of a few characters repeated (zero bytes' `AAAA...` in another blob: reviews).
    patterns = []
    for unbounded in (False, True):
        forms = sorted(
            {re.escape(t[1:]) for t in tokens if _run(t)} if unbounded else {form(t) for t in tokens if not t.startswith(RUN)},
            key=lambda f: (len(f), f),  # longest first below; forms of one length in one order, not a set's
        )
        chunks: list[list[str]] = [[]]
        size = 0
        for f in reversed(forms):
            if chunks[-1] and (len(chunks[-1]) >= TOKENS_A_PATTERN or size + len(f) > PATTERN_CHARS):
                chunks.append([])
                size = 0
            chunks[-1].append(f)
            size += len(f)
        # A run's end keeps its edge: glued to its label (`Bearer<key>`) it is found, and another file whose name goes on
        # from it (`<path>x`) keeps its name (a review).
        edge = ("", "(?:$|[^A-Za-z0-9])") if unbounded else ("(?:^|[^A-Za-z0-9])", "(?:$|[^A-Za-z0-9])")
        patterns += [(compile_linear(rf"(?i){edge[0]}({'|'.join(c)}){edge[1]}"), unbounded) for c in chunks if c]
    return patterns[0][0] if len(patterns) == 1 else _Patterns([p for p, _ in patterns], [u for _, u in patterns])


def _run(tok: str) -> bool:
    """Whether ``tok`` is a whole run longer than a token (``_runs``), varied enough to be found as written."""
    return tok.startswith(RUN) and len({c for c in tok if c.isalnum()}) >= RUN_VARIETY


RUN = "\x00"  # what marks a token that is a whole run (``_runs``): no folded token holds it
RUN_VARIETY = 12  # distinct letters and digits of a run found as written (hex has 16, base64 some 60)

# Tokens in one RE2 pattern: a long value dense with codes (a 64 KB list of them) made one pattern RE2 cannot compile
# in its memory budget, and the forget ended in an error.
TOKENS_A_PATTERN = 500
# and at most this much of their forms: a kubeconfig's base64 blocks (a few hundred long tokens) made a pattern of 500
# too large as well (a review).
PATTERN_CHARS = 60_000


class _Patterns:
    """Several patterns of the form ``token_pattern`` builds, searched as their one alternation would be: the leftmost
    match, the earlier pattern's where two begin at one place (their tokens in the alternation's order). A pattern's
    match is kept for the next search of the same text from a later position it does not pass (the redaction's walk
    searches on from each match), so a walk over a text stays linear in each pattern."""

    def __init__(self, patterns: list[Any], unbounded: list[bool] | None = None):
        self.patterns = patterns
        self.unbounded = unbounded or [False] * len(patterns)
        self._text: Any = None
        self._found: list[tuple[int, Any]] = []  # each pattern's: the position searched from, and its match or None

    def search(self, text: Any, pos: int = 0) -> Any:
        if text is not self._text:
            self._text, self._found = text, [(-1, None)] * len(self.patterns)
        best, best_order = None, (0, False, 0)
        for i, p in enumerate(self.patterns):
            since, m = self._found[i]
            if not (0 <= since <= pos and (m is None or m.start() >= pos)):
                m = p.search(text, pos)
                self._found[i] = (pos, m)
            # At one place the one alternation takes the text's start (`^`) before a separator, then its earlier
            # alternative: so do these, the earlier pattern's where both read the same (reviews).
            # A run's pattern (``_run``: no edge before it) begins its match at the token, one with edges at the sign
            # before it: compared by where the token begins, a run first (a review: a short code's
            # edged match began one place sooner and cut the start of the long run it began, which then stayed).
            if m is not None:
                order = (m.start(1), not self.unbounded[i], m.start())
                if best is None or order < best_order:
                    best, best_order = m, order
        return best


def _scan_files(mem: Memory, plan: Plan, raw: list[Path] | None = None, tokens_found: set[str] | None = None) -> None:
    """Raw turns, episodes, review items, state and trace lines that contain a needle (or name a gone key);
    ``raw``: only these raw files, and no trace, with ``tokens_found`` the distinctive tokens the look over the
    whole history found (``apply``'s second look, inside its locks)."""
    needles = plan.needles
    if not needles and not plan.whole:
        return
    matches = _matcher(needles, plan.whole)
    files = list(mem.raw.files() if raw is None else raw)

    markers_seen: dict[Path, tuple[tuple[int, int, int, int], dict[int, list[str]], str]] = {}

    def turns_of(path: Path, *parts: Callable[[str], bool]) -> Iterator[Turn]:
        """The turns of ``path`` whose text one of ``parts`` finds the value in (and its markers and text before the
        first turn, noted in the plan). Each turn is looked at on its own: a look at the whole file first, to pass
        over a file or a part, missed what a turn holds where its neighbours change how a part reads it (an
        unterminated terminal escape in one turn ate the next one's coloured code; a quoted-printable `=\\n` in one
        turn made the whole file read as quoted-printable: an outside review), and cost as much. What the file was
        when read is noted (``raw_seen``), so that ``apply`` reads again what changed since; a file that could not be
        read is noted too, read again inside the locks, and named if it still cannot be."""
        try:
            data, st = safe.read_with_stat(path, root=mem.home.root)
        except (OSError, safe.UnsafePath):
            plan.raw_seen[path] = None
            plan.raw_unread.add(path)
            return
        plan.raw_seen.setdefault(path, _stamp(st))

        def holds(s: str) -> bool:
            return any(part(s) for part in parts)

        turns = parse_bytes(data, path)
        if turns and turns[0].head > 0 and path not in plan.preambles:
            if holds(data[: turns[0].head].decode("utf-8", "replace")):  # the value, or its codes and rare words
                plan.preambles.append(path)
        elif not turns and data and path not in plan.preambles and holds(data.decode("utf-8", "replace")):
            plan.preambles.append(path)
        known = markers_seen.get(path)
        if known is None or known[0] != _stamp(st):
            # Each turn's marker line as written (its bytes before its text), and bead's own fields of each as one
            # text: noted once a file for both looks (a look a turn at them cost the preview of a long history as
            # much as its text did: a review).
            odd: dict[int, list[str]] = {}
            own_lines = []
            for t in turns:
                nl = data.find(b"\n", t.head, t.offset)
                line = data[t.head : nl if nl >= 0 else t.offset].decode("utf-8", "replace")
                mine = own_marker(t)
                own_lines.append(mine)
                if line != mine:
                    odd.setdefault(t.n, []).append(line)
            known = markers_seen[path] = (_stamp(st), odd, "\n".join(own_lines))
        _, odd, own_text = known
        # bead's own fields that hold it stay: counted for the person (one look at them all, then turn by turn).
        if own_text and holds(own_text):
            kept = {t.n for t in turns if holds(own_marker(t))}
            if kept:
                plan.own_markers.setdefault(path, set()).update(kept)
        for t in turns:
            # A marker as bead writes it holds nothing but bead's own fields, which a forget leaves: its line is not
            # looked at again.
            if t.n in odd and marker_holds(odd[t.n], t, holds):  # a field a hand edit or another tool put there
                plan.markers.setdefault(path, set()).add(t.n)
            if t.text != FORGOTTEN and holds(t.text):
                yield t

    # First the turns that hold the value itself; then its distinctive words and codes, each judged rare among the
    # turns that do not hold the value (a turn that says it goes anyway: three such turns made its words look
    # common, which kept a fourth that wrote it some other way, `b'J\xc3\xb6rg ...'`); then the turns that hold
    # those. A held turn counts only for the words it holds itself (one that names the key holds none of them).
    # The codes themselves too: joined words the value's own turns say counted as the history's (an outside review:
    # `purple-monkey` pasted into five sessions stayed in a sixth).
    value_words, value_codes = _token_forms(plan.texts)
    wanted = _terms(value_words, value_codes) | set(value_codes)
    held: Counter[str] = Counter()
    for path in files:
        for t in turns_of(path, matches):
            plan.turns.setdefault(path, set()).add(t.n)
            if wanted and tokens_found is None:
                # What the index holds of it (its first INDEXED_CHARS characters), as the counts it is taken from
                # are: a value said after a long log counted here and not there made a common word look rare (a review).
                held.update(wanted & _held_forms(t.text[:INDEXED_CHARS]))
    plan.tokens = distinctive_tokens(mem, plan.texts, held) if tokens_found is None else set(tokens_found)
    if plan.kept:  # a word the kept versions say is theirs too (the host a value moved to stays)
        plan.tokens -= set().union(*map(_held_forms, plan.kept))
        # and a run they say inside a longer one (`WORKPAPERS_DIR=` and the path: a review)
        kept = [fold(k).lower() for k in plan.kept]
        plan.tokens -= {t for t in plan.tokens if t.startswith(RUN) and any(t[1:] in k for k in kept)}
    plan.spared = _said_by_other_facts(mem, plan) if plan.tokens else set()
    tokens = token_pattern(plan.tokens)
    encoded = plan.encoded
    if tokens is not None or encoded.pattern is not None:
        for path in files:
            for t in turns_of(path, lambda text: _token_in(tokens, text), encoded.found):
                if t.n in plan.turns.get(path, ()):
                    continue
                # A code said encoded cannot be cut out of its blob: that turn goes whole.
                where = plan.turns if encoded.found(t.text) else plan.token_turns
                where.setdefault(path, set()).add(t.n)
    in_name = _matcher(needles, set(), frozenset(), tokens)
    logged = mem.audit.named_keys() | mem.tombstones.named_keys()
    plan.named = {
        k for k in logged - plan.whole if (in_name(k) or in_name(k.replace("-", " ").replace("_", " "))) and not _live(mem, k)
    }
    derived = _matcher(needles, plan.whole, plan.shingles, tokens, encoded)
    if raw is None and (plan.keys or plan.values):  # a secret written to a new key has a value and no version yet
        quoting = _matcher(needles)  # the value itself (not a code or word of it another fact may share)
        bodies = dict(mem.index.current_bodies())  # a key whose newest file cannot be read has none: the plan's too
        plan.also_in = sorted(
            {k for k in set(bodies) | set(plan.keys) if (after := _after(mem, plan, k, bodies.get(k))) and quoting(after)}
        )
    plan.episodes = Episodes(mem.home).holding(derived)
    plan.queue_items = Queue(mem).holding(set(plan.keys), derived)
    for p in mem.orphan_temps():
        try:
            if derived(safe.read_text(p, root=mem.home.root, errors="replace")):
                plan.temps.append(p)
        except (OSError, safe.UnsafePath):
            continue
    if raw is None:
        _scan_skills(mem, plan, _matcher(needles))
        plan.report_items = Reports(mem.home).scrub(_report_matcher(plan), write=False)
    line_matches = _line_matcher(needles, plan.whole | plan.ids, plan.shingles, token_pattern(plan.tokens - plan.spared), encoded)
    plan.session_lines = Conversations(mem.home).matching_lines(line_matches)
    for p in configured_paths(mem.config, home=mem.home) if raw is None else ():
        try:
            n = Trace(p).matching_lines(line_matches)
        except NotATrace:
            plan.not_traces.append(p)
            continue
        except (OSError, safe.UnsafePath):
            continue
        if n:
            plan.trace_lines[p] = n


def _note_messages(gone: dict[str, set[int]], turns: list[Turn]) -> None:
    """Note in ``gone`` (session -> message indexes) the wire messages ``turns`` were captured from."""
    for t in turns:
        if type(t.flags.get("message")) is int:
            gone.setdefault(t.session, set()).add(int(t.flags["message"]))


def _after(mem: Memory, plan: Plan, key: str, body: str | None) -> str | None:
    """What ``key`` serves once the plan is carried out: its current ``body`` where no version of it goes, the newest
    version left where only some do (`KEY@v3` forgotten where v1 says the same: v1 is served again; `KEY@v1` where
    the current v3 repeats it: v3 stays; either stayed without a word: an outside review and its review), None where
    it goes whole."""
    if key not in plan.keys:
        return body
    if key in plan.whole:
        return None
    left = [f for f in mem.facts.versions(key).facts if f.version not in plan.keys[key]]
    return left[-1].body if left else None


def _report_matcher(plan: Plan) -> Callable[[str], bool]:
    """What a dream report's listed key or id is scrubbed for: the value, its runs of words, codes and encodings."""
    return _matcher(plan.needles, frozenset(), plan.shingles, token_pattern(plan.tokens), plan.encoded)


def _scan_skills(mem: Memory, plan: Plan, holds: Callable[[str], bool]) -> None:
    """The skill files install wrote (bead.core.skill_files) that hold the value itself (``holds``), or that were made
    from a key that goes whole: those still as bead wrote them are removed; one changed since, a ``--force``'s backup
    (that holds the value, or of a key that goes whole) and a file of the key that cannot be read are named."""
    recs, plan.skills_unread = skill_files.installed(mem)
    for rec in recs:
        whole = rec.key in plan.whole
        _scan_backups(rec, plan, holds, whole)
        for temp in skill_files.temps_beside(rec):
            kept, _ = skill_files.read_installed(skill_files.Installed(temp, rec.root, rec.key, ""))
            # Only bead's own making (the frontmatter install writes, in a `bead-` folder): a line anyone can add to
            # the log names a skill folder, and a person's own file beside their own skill is theirs (a review).
            if kept is None or not skill_files.made_by_bead(rec, kept):
                continue
            if whole or holds(kept.decode("utf-8", errors="replace")):
                plan.skill_temps.append((rec.root, temp))
        data, problem = skill_files.read_installed(rec)
        if data is None:
            if problem and rec.key in plan.keys:
                plan.skills_left.append(rec.path)
            continue
        text = data.decode("utf-8", errors="replace")
        if skill_files.as_written(rec, data) and skill_files.made_by_bead(rec, data) and (whole or holds(text)):
            plan.skills.append(rec)
        elif holds(text) or (whole and skill_files.made_by_bead(rec, data)):
            # Changed since install (the person's edit), or not bead's: named, never touched. A skill bead made from
            # a key that goes whole is named even where the value itself is not found in it (an edit that kept part
            # of it); another file a log line names only if it holds the value.
            plan.skills_left.append(rec.path)


def _scan_backups(rec: skill_files.Installed, plan: Plan, holds: Callable[[str], bool], whole: bool) -> None:
    """``install --force``'s backups of ``rec``'s file (every name, past a gap a person's removal left, and with the
    file itself gone): one that holds the value, or any of a key that goes whole, and one that cannot be read, are
    named."""
    for backup in skill_files.backup_names(rec.path):
        kept, problem = skill_files.read_installed(skill_files.Installed(backup, rec.root, rec.key, ""))
        if kept is None:
            if problem and (whole or rec.key in plan.keys):
                plan.skills_left.append(backup)
            continue
        if whole or holds(kept.decode("utf-8", errors="replace")):
            plan.skills_left.append(backup)


def _live(mem: Memory, key: str) -> bool:
    """Whether ``key`` still has a version, plain or sealed: its name is the person's and stays in the logs."""
    try:
        return mem.current(key) is not None or mem.is_sealed(key)
    except BeadError:
        return False  # not a key bead could store: none of its lines are a live fact's


def _line_matcher(
    needles: list[str],
    keys: AbstractSet[str] = frozenset(),
    shingles: AbstractSet[tuple[str, ...]] = frozenset(),
    tokens: Any = None,
    encoded: Encoded | None = None,
) -> Callable[[str], bool]:
    """A JSON line matches when its text does, or its decoded strings do (values inside JSON are escaped),
    when it names a key that is gone (an injected id, a remembered id), or when it holds a run of the
    value's words (a cue cut at 200 characters, an excerpt cut at 600)."""

    words = [w for n in needles for w in _word_needles(n)]
    folded = [f for n in needles if (f := _plain(n))]

    def matches(line: str) -> bool:
        texts = [line]
        try:
            obj = json.loads(line)
            texts.append(json.dumps(obj, ensure_ascii=False))
            texts.append(" ".join(strings_in(obj)))
        except (ValueError, TypeError, RecursionError):
            pass
        normalised = [normalise(t) for t in texts]
        return (
            any(_holds(t, n) for t in normalised for n in needles)
            or any(_holds_decoded(t, folded, words) for t in texts)
            or bool(keys and any(_names_key(t, keys) for t in normalised))
            or any(_holds_shingle(t, shingles) for t in texts)
            or any(_token_in(tokens, t) for t in texts)
            or bool(encoded and any(encoded.found(t) for t in texts))
        )

    return matches


def plan_target(
    mem: Memory, target: str, sealed: bool = False, raw: list[Path] | None = None, tokens: set[str] | None = None
) -> Plan:
    """Plan ``bead forget <id-or-key>``. ``sealed`` (the CLI: the person) lets it delete sealed versions;
    an agent's forget (MCP) is refused a key that has any, so no agent can destroy a sealed secret."""
    plan = Plan()
    parsed = parse_id(target)
    key, version = parsed if parsed else (target, None)
    validate_key(key)
    _add_key(mem, plan, key, version)
    if not sealed and mem.sealed.has(key):
        raise BeadError(f"{key} is sealed in the vault: only the person can forget it", f"run `bead forget {key}` at a terminal")
    _add_sealed(mem, plan, key, version)
    if not plan.keys and not plan.sealed:
        raise BeadError(
            f"nothing to forget: {target} has no version files", "check the key with `bead search` or `bead history KEY`"
        )
    _scan_files(mem, plan, raw, tokens)
    plan.remake = lambda files, found=None: plan_target(mem, target, sealed, files, found)
    return plan


def _add_sealed(mem: Memory, plan: Plan, key: str, only_version: int | None = None) -> None:
    """The sealed versions of ``key`` (all, or ``only_version``): their files go, undecrypted.

    Forget needs no passphrase for them: a sealed value gets no tombstone (its hash would give it away), and
    what held it in clear was scrubbed when it was sealed. A key that loses every version, sealed and plain,
    is gone: lines that name it keep only its hash, as for any forgotten key.
    """
    numbers = mem.sealed.numbers(key)
    chosen = [n for n in numbers if only_version is None or n == only_version]
    if not chosen:
        return
    plan.sealed[key] = chosen
    if set(chosen) == set(numbers) and set(plan.keys.get(key, [])) == set(mem.facts.versions(key).numbers):
        plan.whole.add(key)
    elif key in plan.whole:
        plan.whole.discard(key)  # its plaintext goes, a sealed version stays: the key is not gone


_KEY_TEXT = re.compile(r"[a-z0-9 _-]+")


def plan_match(mem: Memory, text: str, raw: list[Path] | None = None, tokens: set[str] | None = None) -> Plan:
    """Plan ``bead forget --match TEXT``: every key with a version containing it, every turn."""
    needle, plain = normalise(text), _plain(text)
    if len(needle) < 3 or len(plain) < 3:  # "&#64;" is one character once decoded
        raise BeadError("--match needs 3 or more characters", "give a longer piece of the text to forget")
    # Sealed values are encrypted and forget does not decrypt them: it says how many it left unsearched.
    plan = Plan(match_text=text, sealed_not_searched=sum(1 for _ in mem.sealed.keys()))
    words = _word_needles(text)
    # A key's name is matched by whole words, and only by a text a key could hold (letters, digits, - and _).
    as_key = _word_form(text) if _KEY_TEXT.fullmatch(needle) else ""

    def holds(b: str) -> bool:
        if needle in normalise(b):
            return True
        once = _folded(b)
        form = _word_form(b, once) if words else ""
        return plain in _plain(b, once) or any(w in form for w in words)

    kvs, _problems = mem.facts.scan()
    for kv in kvs:
        bodies = [f.body for f in kv.facts] + [v for p in kv.problems if (v := _version_value(mem, kv.key, p.path))]
        bodies += [f.title for f in kv.facts if f.title]  # a title is the person's text too
        # A key is part of its value ("remember" and the dream make keys from its words): its name, not its
        # scope (``--match user`` is not every user/ key), word by word (``--match ship`` is not relationship).
        named = bool(as_key.strip()) and as_key in _word_form(kv.key[len(scope_of(kv.key)) + 1 :].replace("_", " "))
        if not (named or any(holds(b) for b in bodies)):
            continue
        # The versions that hold the text go; the key goes whole when its current value holds it (an older value
        # must not come back as the current one), when its name is the text, or when a version file bead cannot
        # read holds it. Before, a text in an old version took the current value, which does not hold it, too.
        holding = {f.version for f in kv.facts if holds(f.body) or (f.title and holds(f.title))}
        unread = any(holds(v) for p in kv.problems if (v := _version_value(mem, kv.key, p.path)))
        if named or unread or kv.current is None or kv.current.version in holding:
            _add_key(mem, plan, kv.key)
        else:
            _add_key(mem, plan, kv.key, versions=holding)
    # Rows whose files are gone (an interrupted forget) hold values too.
    for key, body in mem.index.all_fact_bodies():
        if key not in plan.keys and holds(body):
            _add_key(mem, plan, key)
    _scan_files(mem, plan, raw, tokens)
    plan.remake = lambda files, found=None: plan_match(mem, text, files, found)
    return plan


def plan_seal(
    mem: Memory, key: str, new_value: str | None = None, raw: list[Path] | None = None, tokens: set[str] | None = None
) -> Plan:
    """Plan the plaintext side of sealing ``key``: every plaintext version goes as in forget, and so does
    what holds their values or ``new_value`` (a secret being written), so no copy stays in clear. Planned again
    when it runs, inside its locks, as forget's plans are (``remake``): a turn captured meanwhile goes too."""
    plan = Plan()
    validate_key(key)
    _add_key(mem, plan, key)
    if new_value:
        plan.values.setdefault(key, []).append(new_value)
    _scan_files(mem, plan, raw, tokens)
    plan.remake = lambda files, found=None: plan_seal(mem, key, new_value, files, found)
    return plan


# A plan whose look began at most this long before ``apply`` (`forget --yes`, a seal) is not made again over the whole
# history outside the locks: inside them, the raw files not as its look read them are (a session of 20,000 turns took
# three looks, 12 s). An older one (a preview the person read) is made again first, so that few files have changed
# since and the look inside the locks stays short.
FRESH_PLAN_S = 30.0


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What a file is, as far as a look needs to know it is unchanged: a rewrite is a new inode, an append a new size,
    and any write a new ctime, which no tool can set."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _not_as_seen(path: Path, seen: Mapping[Path, tuple[int, int, int, int] | None]) -> bool:
    """Whether raw file ``path`` is not as the plan's look read it (or the look did not read it)."""
    try:
        return _stamp(os.lstat(path)) != seen.get(path)
    except OSError:
        return False  # gone meanwhile: nothing to redact in it


def _joined(inner: Plan, outer: Plan, changed: list[Path]) -> Plan:
    """``inner`` (planned inside the locks, over ``changed`` raw files only) with ``outer``'s raw turns of the other
    files, which nothing wrote since, and its trace count."""
    done = set(changed)
    for mine, theirs in ((inner.turns, outer.turns), (inner.token_turns, outer.token_turns)):
        for path, numbers in theirs.items():
            if path not in done:
                mine.setdefault(path, set()).update(numbers)
    inner.preambles += [p for p in outer.preambles if p not in done and p not in inner.preambles]
    for held, theirs in ((inner.markers, outer.markers), (inner.own_markers, outer.own_markers)):
        for path, numbers in theirs.items():
            if path not in done:
                held.setdefault(path, set()).update(numbers)
    inner.trace_lines = outer.trace_lines
    inner.not_traces = outer.not_traces
    inner.also_in = outer.also_in
    inner.skills, inner.skills_left, inner.skills_unread = outer.skills, outer.skills_left, outer.skills_unread
    inner.skill_temps = outer.skill_temps
    return inner


def apply(
    mem: Memory,
    plan: Plan,
    *,
    under_lock: Callable[[], None] | None = None,
    event: str = "forget",
    tombstones: bool = True,
    sealed: str | None = None,
    blind: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Carry a plan out. ``under_lock`` runs first, inside the index transaction and the store lock (a seal
    writes its encrypted copies there); if it raises, nothing has changed. ``event`` names the audit line
    and the tombstones' reason. ``tombstones=False`` (a seal) writes no value hash anywhere: a SHA-256 of a
    value is a plaintext copy of it to anyone who can guess it, and a sealed value may be a 4-digit PIN. ``sealed``: the key a
    seal or a secret write sealed into, named by the audit line that says it finished (`bead status` tells a
    finished secret write from one stopped before its scrub by it). ``blind``: the keys that go leave no hash either,
    its token instead (``blinder``'s: `seal --as`, whose key is made of the value's words)."""
    refuse_git(mem)
    # The review queue's lock for the whole of it: an accept of an item that holds the value either finishes first
    # (and its fact is planned again below) or finds the item gone, never writes the value back after it.
    with Queue(mem).deciding():
        return _apply(mem, plan, under_lock, event, tombstones, sealed, blind)


def _apply(
    mem: Memory,
    plan: Plan,
    under_lock: Callable[[], None] | None,
    event: str,
    tombstones: bool,
    sealed: str | None = None,
    blind: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    now = mem.clock()
    started = time.time()
    fresh = started - FRESH_PLAN_S <= plan.started <= started
    if plan.remake is not None and not fresh:
        # Planned again: the preview may be minutes old (the person read it), and a forget must not leave what
        # arrived meanwhile. The whole history is read outside the locks (captures go on meanwhile); inside them,
        # the facts again and only the raw files written since. A key forgotten meanwhile by another forget
        # raises, before anything changed.
        plan = plan.remake(None, None)
    # A capture of text that came before the forget ends (an answer the model is still streaming) is either in a
    # raw file before the look at what was written since, or goes to the log as [forgotten]; what a proxy writes
    # beside it (a conversation's state, the trace, inject records) is here before the scrubs of step 3, or not
    # written.
    with mem.raw.forgetting():
        return _apply_forgetting(mem, plan, under_lock, event, tombstones, now, sealed, blind)


def _apply_forgetting(
    mem: Memory,
    plan: Plan,
    under_lock: Callable[[], None] | None,
    event: str,
    tombstones: bool,
    now: Any,
    sealed: str | None = None,
    blind: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """``_apply``'s part while the forget is seen to run (RawLog.forgetting): a proxy writes nothing of a request
    that came before it, from its first lock to its last scrub."""
    kept: list[Path] = []
    redacted = in_part = 0
    # The index's write lock first: if another process holds it past the
    # busy timeout, forget stops here, before it has changed anything.
    with mem.together(), mem.facts.lock():
        if plan.remake is not None:
            changed = [p for p in mem.raw.files() if _not_as_seen(p, plan.raw_seen)]
            inner = plan.remake(changed, plan.tokens)
            if set(inner.needles) != set(plan.needles) or inner.whole != plan.whole:
                # A version written meanwhile holds a value the look outside did not look for: any turn may hold it.
                plan = plan.remake(None, None)
            else:
                plan = _joined(inner, plan, changed)
        for key, numbers in plan.sealed.items():
            now_sealed = set(mem.sealed.numbers(key))
            if not set(numbers) <= now_sealed or (key in plan.whole and now_sealed != set(numbers)):
                raise BeadError(f"{key} changed while it was being forgotten; nothing was changed", "run the command again")
        if plan.raw_unread and not plan.match_text and plan.keys:
            # The value is looked for by the versions it deletes: once they are gone, running the same forget again
            # finds nothing to forget, and a raw file it could not read kept the value with no way to find it (an
            # outside review). `--match` is given the text again, and a secret written to a new key deletes no
            # version (a review): those take what they can and name the rest.
            unread = ", ".join(sorted(p.relative_to(mem.home.store).as_posix() for p in plan.raw_unread))
            raise BeadError(
                f"{event} changed nothing: bead could not read raw file(s) {unread}, which may hold the value",
                "if `bead status` calls one a hard link, `bead status --fix` gives it a copy of its own; else check "
                "that bead can read it; then run the same command again",
            )
        if under_lock is not None:
            under_lock()
        # A FIFO or a link at either log refuses here, before anything is changed: not with the tombstones written and
        # the value still everywhere else.
        mem.tombstones.ready()
        mem.audit.ready()
        # Owed from the first deletion on (step 2 re-indexes the raw turns it redacts: their words stay in raw_fts and
        # the WAL until the checkpoint), so a forget stopped anywhere after here is reported by `bead status`.
        try:
            mem.index.owe_checkpoint()
        except busy_errors():
            raise BeadError(
                f"{event} changed nothing: the index stayed busy (another bead process)", "run the same command again"
            ) from None
        # 1. Tombstones first: a crash after this cannot lose them. A key that
        # loses every version is part of the value: its lines keep a hash.
        # A value whose hashes would give it away (a door code: every number tried in a second) gets none, as a
        # sealed one gets none: it is gone, but nothing refuses it if it is said again.
        for key, values in plan.values.items() if tombstones else ():
            whole = key in plan.whole
            for v in dict.fromkeys(values):
                if guessable(v):
                    continue
                digest = mem.tombstones.add(now, key, v, reason=event, hash_key=whole)
                who = {"key_sha256": key_hash(key)} if whole else {"key": key}
                mem.audit.record(now, "tombstone", **who, sha256=digest)
        if tombstones and plan.match_text and not guessable(plan.match_text):
            # The text the person asked to forget is itself a value that must not come back (an agent wrote it bare
            # after a --match forget, whose tombstones held only the whole values of the keys it found).
            digest = mem.tombstones.add(now, "", plan.match_text, reason=event, hash_key=True)
            mem.audit.record(now, "tombstone", sha256=digest)
        # 2. Raw turns: the marker stays, the text becomes [forgotten]; where only the value's distinctive
        # tokens were said, those become [forgotten] in place.
        gone: dict[str, set[int]] = {}  # session -> the indexes of the messages whose turns went
        for path, turn_numbers in plan.turns.items():
            try:
                went = mem.redact_turns(path, turn_numbers)
            except FileNotFoundError:
                continue
            redacted += len(went)
            _note_messages(gone, went)
        for path in plan.preambles:  # text before a file's first turn: no turn's, so no marker to keep
            try:
                mem.drop_preamble(path)
            except FileNotFoundError:
                continue
        pattern = token_pattern(plan.tokens)
        if plan.markers:  # the fields of a turn's marker that hold the value, or its codes and rare words
            in_marker = _matcher(plan.needles, plan.whole, frozenset(), pattern, plan.encoded)
            for path, turn_numbers in plan.markers.items():
                try:
                    mem.scrub_markers(path, turn_numbers, in_marker)
                except FileNotFoundError:
                    continue
        for path, turn_numbers in plan.token_turns.items():
            try:
                went = mem.redact_tokens(path, turn_numbers, pattern, still=lambda t: _token_in(pattern, t))
                in_part += len(went)
                _note_messages(gone, went)
            except FileNotFoundError:
                continue
    # 3. Episodes, review items, per-conversation state, the trace, and what names a gone key.
    Episodes(mem.home).delete(plan.episodes)
    Queue(mem).delete(plan.queue_items)
    lines_tokens = token_pattern(plan.tokens - plan.spared)
    line_matches = _line_matcher(plan.needles, plan.whole | plan.ids, plan.shingles, lines_tokens, plan.encoded)
    # Every state file and trace, not only those the plan found: a request that came before the forget may have
    # written one since (each is read under its conversation's lock, which a proxy holds while it writes).
    conversations = Conversations(mem.home)
    conversations.scrub(sorted(set(plan.session_lines) | set(conversations.files())), line_matches)
    # and the digests of the messages whose turns went: one of a guessable value alone (a PIN a tool printed) gave
    # the value back to whoever tried them all
    if gone:
        conversations.forget_digests(gone)
    for p in dict.fromkeys([*plan.trace_lines, *configured_paths(mem.config, home=mem.home)]):
        try:
            Trace(p).scrub(line_matches)
        except (OSError, safe.UnsafePath, NotATrace):
            continue  # as the plan passed it over
    mark = blind or key_hash
    mem.audit.forget_keys(plan.whole | plan.named, mark)
    mem.tombstones.forget_keys(plan.whole | plan.named, mark)
    # The skill files in the person's projects that bead wrote from it (each checked again before it goes).
    skills_gone, skills_left, log_problem = skill_files.remove_installed(mem, plan.skills, plan.whole | plan.named)
    for project_root, temp in plan.skill_temps:  # a killed install's, in the project: what it held goes too
        try:
            if safe.unlink(temp, root=project_root):
                skills_gone.append(temp)
        except (OSError, safe.UnsafePath):
            skills_left.append(temp)
    reports = Reports(mem.home)
    # A key or id a run's line lists that holds the value (one it rejected or queued, made of the value's words).
    plan.report_items = reports.scrub(_report_matcher(plan))
    reports.forget_keys(plan.whole | plan.named, blind is not None)
    # 4. Last, the version files and their index rows (sealed versions: ciphertext only, deleted as they are, no
    # decryption, no tombstone). A forget stopped before here (killed, or the index busy) leaves the key's versions,
    # so `bead forget KEY` plans it again and finishes; deleted first, they left a stopped forget's raw turns, state
    # and trace lines naming the value with nothing to find them by.
    try:
        mem.index.owe_checkpoint()  # from here until the checkpoint below, index.db may hold the deleted text
        kept += _delete_last(mem, plan)
    except busy_errors() as exc:
        raise BeadError(
            f"{event} did all but its last step: the index stayed busy (another bead process), so the version files "
            f"of {', '.join(sorted(plan.keys)) or 'the key'} are still there",
            "run the same command again to finish it",
        ) from exc
    # 5. What a killed writer left (a temp file may hold the value: its temp file; rows of a raw file a stopped
    # forget rewrote while its index change rolled back: the index brought up to the files), then the WAL.
    mem.remove_orphan_temps()
    mem.catch_up_index()
    checkpointed = mem.checkpoint()
    summary = plan.summary(mem.home.store)
    summary["index_emptied"] = checkpointed
    summary["raw_turns_redacted"] = redacted
    summary["raw_turns_redacted_in_part"] = in_part
    summary["kept"] = [str(p) for p in kept]
    summary["skill_files"] = [str(p) for p in skills_gone]
    summary["skill_files_left"] = [*summary["skill_files_left"], *map(str, skills_left)]
    summary["skill_files_unread"] = summary["skill_files_unread"] or log_problem
    mem.audit.record(
        now,
        event,
        keys=[mark(k) if k in plan.whole else k for k in summary["keys"]],
        versions=summary["versions"],
        raw_turns=redacted,
        raw_turns_in_part=in_part,
        episodes=summary["episodes"],
        session_lines=summary["session_lines"],
        match=bool(plan.match_text),
        **({"key": sealed} if sealed is not None else {}),
    )
    return summary


def _delete_last(mem: Memory, plan: Plan) -> list[Path]:
    """Forget's last step: the version files and their index rows, and sealed versions, where they are still as
    planned (the files it would not delete come back). An unseal waits for the whole forget or seal (the review
    queue's lock), so a seal's sealed copies are there when its plaintext goes."""
    kept: list[Path] = []
    with mem.together(), mem.facts.lock():
        for key, numbers in plan.keys.items():
            if not set(numbers) <= set(mem.facts.versions(key).numbers):
                raise BeadError(f"{key} changed while it was being forgotten", f"run the command again for {key}")
        for key, numbers in plan.keys.items():
            kept += mem.delete_versions(key, numbers)[1]
        for key, numbers in plan.sealed.items():
            mem.sealed.delete(key, numbers)
    return kept
