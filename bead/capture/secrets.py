"""The secret scan: credentials become ``[REDACTED:<rule>]`` before any write.

The rules are data (``rules.yaml``): gitleaks' default rules, pinned to a
release, for the detectors that exist, and bead's own for what a developer
pastes into a conversation that gitleaks (which scans files) lacks: prose
("the AWS secret key is ..."), ``.env`` assignments quoted or not, longer
keys. The scan follows gitleaks' semantics: a rule runs only when one of its
keywords occurs; the secret is the rule's group (or the first non-empty
group, or the whole match); a secret at or below the rule's entropy, or one
that an allowlist (gitleaks' global one, the rule's own) or a placeholder
pattern accepts, is not a finding.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

import re2

from .. import yamlsafe
from ..textform import LONE_SURROGATE, TERMINAL_ESCAPES, fold_char

# Every pattern runs on text an attacker may have written (a pasted README,
# a tool's output), so every one runs on RE2: time linear in the text, never
# the backtracking blow-up of Python's `re` on a crafted input.
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20

# Values that look like assignments of a secret but name one instead.
_PLACEHOLDER = re2.compile(
    # a variable's name in one case (`$DB_PASSWORD`, `${db_pass}`), not a value that starts with `$` (`$Xk9vQ2mZp`)
    r"(?i)^(?:x{4,}|\*{3,}|<[^>]*>|(?-i:\$\{?(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\}?)|changeme|redacted.*|example.*"
    r"|your[_\-].*|dummy.*"
    r"|placeholder.*|null|none|true|false"
    # an SPDX licence identifier (`licenseKey: 'GPL-3.0-or-later'`): a name every project's metadata holds, never a key
    r"|(?-i:(?:A|L)?GPL-[123]\.0(?:-only|-or-later|\+)?|Apache-[12]\.[01]|MIT(?:-0)?|BSD-[0234]-Clause(?:-Clear)?"
    r"|MPL-[12]\.[01]|ISC|Unlicense|CC0-1\.0|CC-BY(?:-SA)?-[1-4]\.0|EPL-[12]\.0|0BSD|BSL-1\.0|Zlib|WTFPL))$",
    _OPTIONS,
)
# Filler that marks an example, not a key: sk_live_xxxxxxxx, ********, <your key> or a type (`<string>]}`; or the
# part of it a value class takes, `<your`, `key>`, `<50+ random chars>`), a closing tag (`...</code>`). Only words
# in the brackets, and no digit in brackets at the end: a password may start with `<` or end with `>` (about one in
# fifty that a generator draws from all printable ASCII; `...<4v>` ended one).
_FILLER = re2.compile(r"(?i)x{6,}|\*{4,}|\.{4,}|^<[a-z0-9_\- .|+:]*(?:>|$)|(?:^|<)/?[a-z_\- .|+:]*>$", _OPTIONS)
# A redaction ends where the token ends: a rule that matches a fixed length
# must not leave the tail of a longer key in the text.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_CLASSES = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789")


def compile_linear(pattern: str) -> Any:
    """A pattern compiled for RE2 (linear time); an error names the pattern."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise ValueError(f"pattern {pattern[:60]!r} is not valid RE2 syntax: {exc}") from None


class LazyPattern:
    """A pattern compiled for RE2 on its first use: one that costs much to compile (``_PRINTS_SECRET``: 80 ms, most
    of this module's import) and that most processes never run (`bead show`, `bead status`, the MCP server)."""

    def __init__(self, source: str):
        self.source = source
        self._compiled: Any = None

    @property
    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = compile_linear(self.source)  # two threads may both compile it: the same pattern
        return self._compiled

    def search(self, text: str) -> Any:
        return self.compiled.search(text)

    def finditer(self, text: str) -> Any:
        return self.compiled.finditer(text)


@dataclass(frozen=True)
class Allow:
    """An allowlist: a finding is dropped when a regex matches its target, or the secret holds a stopword."""

    regexes: tuple[Any, ...] = ()
    target: str = "secret"  # secret | match | line
    stopwords: tuple[str, ...] = ()
    # The stopwords as one RE2 alternation: a finding costs one pass over the
    # secret, not one substring test per stopword (gitleaks has ~1,500).
    stopword_re: Any = None

    def accepts(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        if self.regexes and self.regexes[0].search(text):
            return True
        return self.stopword_re is not None and self.stopword_re.search(secret.lower()) is not None


@dataclass(frozen=True)
class Rule:
    id: str
    source_pattern: str  # RE2 syntax; compiled on first use (most rules never run in a process)
    group: int | None = None  # None: the first non-empty group, else the whole match (gitleaks)
    entropy: float = 0.0  # the secret needs more bits per character than this
    min_len: int = 0
    classes: int = 0  # the secret needs this many of: lower, upper, digit, other
    keywords: tuple[str, ...] = ()
    allow: tuple[Allow, ...] = ()
    source: str = "bead"  # bead | gitleaks
    generic: bool = False  # names a secret by its context, not its shape: a provider's rule wins a tie
    # The finding is a container of several values (a Cookie header's): the checks made for one value (a
    # placeholder, a filler, the global allowlist) would let one harmless value keep the whole header in clear, so
    # only the rule's own allowlist applies, to the whole
    container: bool = False

    @cached_property
    def pattern(self) -> Any:
        return compile_linear(self.source_pattern)


@dataclass(frozen=True)
class Finding:
    rule: str
    start: int
    end: int


@dataclass(frozen=True)
class Ruleset:
    rules: tuple[Rule, ...]
    allow: Allow  # gitleaks' global allowlist
    keywords: Any  # an RE2 set over every keyword: one pass finds which occur
    keyword_list: tuple[str, ...]
    gitleaks_version: str
    # keyword -> the positions in ``rules`` of the rules it wakes, and the positions of the rules without keywords:
    # a scan visits only the rules whose keywords occur, not all of them (most texts hold none)
    by_keyword: dict[str, tuple[int, ...]] = field(default_factory=dict)
    keywordless: tuple[int, ...] = ()


def shannon(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(value: str) -> int:
    n = sum(1 for chars in _CLASSES if any(c in chars for c in value))
    return n + (1 if any(not c.isalnum() for c in value) else 0)


def _stopwords(words: list[str] | tuple[str, ...]) -> Any:
    return compile_linear("|".join(re2.escape(w.lower()) for w in words)) if words else None


def _any_of(patterns: list[str]) -> tuple[Any, ...]:
    """The patterns as one RE2 alternation (each keeps its own flags): one search per finding, not one each."""
    return (compile_linear("|".join(f"(?:{p})" for p in patterns)),) if patterns else ()


def _allow(entries: list[dict] | None) -> tuple[Allow, ...]:
    return tuple(
        Allow(
            _any_of(a.get("regexes", [])),
            a.get("target", "secret"),
            tuple(a.get("stopwords", [])),
            _stopwords(a.get("stopwords", [])),
        )
        for a in entries or []
    )


def _rule(r: dict, source: str) -> Rule:
    return Rule(
        id=r["id"],
        source_pattern=r["pattern"],
        group=r.get("group"),
        entropy=float(r.get("entropy", 0.0)),
        min_len=r.get("min_len", 0),
        classes=r.get("classes", 0),
        keywords=tuple(k.lower() for k in r.get("keywords", [])),
        allow=_allow(r.get("allow")),
        source=source,
        generic=bool(r.get("generic", r["id"].startswith("generic-"))),
        container=bool(r.get("container", False)),
    )


@lru_cache(maxsize=1)
def ruleset() -> Ruleset:
    text = resources.files("bead.capture").joinpath("rules.yaml").read_text(encoding="utf-8")
    data = yamlsafe.load(text)
    gl = data["gitleaks"]
    # gitleaks' rules first: where one of bead's matches the same span, the provider's name wins.
    rules_ = tuple(_rule(r, "gitleaks") for r in gl["rules"]) + tuple(_rule(r, "bead") for r in data["rules"])
    ids = [r.id for r in rules_]
    if len(ids) != len(set(ids)):
        raise ValueError(f"rules.yaml has duplicate rule ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    words = tuple(sorted({k for r in rules_ for k in r.keywords}))
    kw_set = re2.Set.SearchSet(_OPTIONS)
    for w in words:
        kw_set.Add(re2.escape(w))
    kw_set.Compile()
    glob = gl.get("allow", {})
    allow = Allow(
        _any_of(glob.get("regexes", [])), "secret", tuple(glob.get("stopwords", [])), _stopwords(glob.get("stopwords", []))
    )
    by_keyword: dict[str, list[int]] = {}
    for i, r in enumerate(rules_):
        for k in set(r.keywords):
            by_keyword.setdefault(k, []).append(i)
    return Ruleset(
        rules_,
        allow,
        kw_set,
        words,
        str(gl["version"]),
        {k: tuple(v) for k, v in by_keyword.items()},
        tuple(i for i, r in enumerate(rules_) if not r.keywords),
    )


def rules() -> tuple[Rule, ...]:
    return ruleset().rules


def _span(rule: Rule, m: Any) -> tuple[int, int] | None:
    if rule.group is not None:
        return (m.start(rule.group), m.end(rule.group)) if m.group(rule.group) else None
    # google-re2's match holds every group's span in one list (a rule of many alternatives has dozens of groups, and a
    # call per group cost more than the match); an unmatched group's span is (-1, -1)
    spans = getattr(m, "_spans", None) or [m.span(g) for g in range(m.re.groups + 1)]
    for a, b in spans[1:]:
        if b > a:
            return a, b
    return m.start(), m.end()


LINE_WINDOW = 1024  # of a long line, the allowlists see this much either side of a match
TOKEN_TAIL = 1024  # a key runs on past its match by at most this much
QUOTED_TAIL = 256  # a quoted value runs on to its closing quote, at most this much further


def _line(text: str, start: int, end: int) -> str:
    """The match's line, cut to a window around it: a finding costs the same on a 1 MB line."""
    lo = max(0, start - LINE_WINDOW)
    hi = min(len(text), end + LINE_WINDOW)
    a = text.rfind("\n", lo, start) + 1 or lo
    b = text.find("\n", end, hi)
    return text[max(a, lo) : hi if b == -1 else b]


MARKER = "[REDACTED:"


def _in_marker(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies within a ``[REDACTED:rule]`` marker that a scan wrote (``dsn-password]``
    read as a value): the brackets must hold a rule's id, so a key someone put in such brackets is still found."""
    lo = text.rfind(MARKER, max(0, start - 80), start + len(MARKER))
    if lo == -1 or lo > start:
        return False
    close = text.find("]", lo + len(MARKER), lo + 80)
    if close == -1 or end > close + 1:
        return False
    rule = text[lo + len(MARKER) : close]
    return rule.removeprefix("base64-").removeprefix("hex-") in _rule_ids() or rule in ("bead-token", PRINTED, SEED, KUBECTL)


@lru_cache(maxsize=1)
def _rule_ids() -> frozenset[str]:
    return frozenset(r.id for r in ruleset().rules)


# A name and its `=` at a value's start, and the value's first character (no `==`: base64's padding is no name).
_NAMED_VALUE = compile_linear(r"[A-Za-z_][A-Za-z0-9_.-]{0,40}=[^=]")
NAMED_VALUE_MIN = 10  # characters the value after it needs, as the generic rule's value does

_Asked = dict[tuple[str, str, str, str], bool]  # (rule, value, match, line) -> whether an allowlist lets it be


def _kept(rs: Ruleset, rule: Rule, secret: str, text: str, m: Any, seen: _Asked | None) -> bool:
    """Whether ``secret`` (of ``rule``'s match ``m`` in ``text``) reads as a secret: its length, entropy and kinds of
    character as the rule asks, and no allowlist lets it be."""
    if rule.min_len and len(secret) < rule.min_len:
        return False
    if rule.entropy and shannon(secret) <= rule.entropy:
        return False
    if rule.classes and _classes(secret) < rule.classes:
        return False
    match = m.group(0)
    line = _line(text, m.start(), m.end())
    # The same value in the same line, found again by the same rule (a log that repeats a line thousands of times):
    # its allowlists answered once (each a few regex searches of the line: most of a finding's cost).
    asked = (rule.id, secret, match, line)
    allowed = seen.get(asked) if seen is not None else None
    if allowed is None:
        allowed = (
            (not rule.container and (bool(_PLACEHOLDER.match(secret)) or bool(_FILLER.search(secret))))
            or (not rule.container and rs.allow.accepts(secret, match, line))
            or any(a.accepts(secret, match, line) for a in rule.allow)
        )
        if seen is not None:
            seen[asked] = allowed
    return not allowed


def _finding(rs: Ruleset, rule: Rule, text: str, m: Any, seen: _Asked | None = None, tail: bool = True) -> Finding | None:
    span = _span(rule, m)
    if span is None:
        return None
    start, end = span
    begin = start  # where the value starts as matched (a quote before it is looked for there)
    secret = text[start:end]
    if _in_marker(text, start, end):  # an earlier scan's marker (a text redacted already), not a value
        return None
    if not _kept(rs, rule, secret, text, m, seen):
        # A name and its `=` at the value's start (`--from-literal=token=...`, `API: token=...`, `GIT_AUTH=token=...`):
        # read whole, the name's word (`token`, `session`) is a stopword and the allowlist let the whole value be (an
        # outside attack). What follows the `=` is read as the value too, and found if it reads as a secret: never
        # fewer findings than the whole alone gives (a password may hold an `=`).
        named = _NAMED_VALUE.match(secret) if rule.generic else None
        if named is None or len(secret) - named.end() + 1 < NAMED_VALUE_MIN:
            return None
        start += named.end() - 1
        secret = text[start:end]
        if not _kept(rs, rule, secret, text, m, seen):
            return None
    if rule.generic and begin and text[begin - 1] in "'\"" and text[begin - 2 : begin - 1] != "\\" and end < len(text):
        # A quoted value runs to its closing quote on the line, whatever a rule's value class stops at (a password's
        # `&`, `;` or space: `htpasswd -b f admin 'Tr0ub4dor&3xQ!'`, `sshpass -p 'two words'`); a rule that names a
        # secret by its context only: a provider's key has its own shape, and the string may go on after it. An
        # escaped quote's value is read where the escapes are (`_in_escaped`).
        close = text.find(text[begin - 1], end, min(len(text), end + QUOTED_TAIL))
        if close > end and text.find("\n", end, close) == -1:
            end = close
    if tail and secret and secret[-1] in _TOKEN_CHARS:
        stop = min(len(text), end + TOKEN_TAIL)
        while end < stop and text[end] in _TOKEN_CHARS:
            end += 1
    return Finding(rule.id, start, end)


def candidates(text: str, shaped: bool = False) -> list[Finding]:
    """Every rule's findings, overlapping ones included, in the order ``scan`` prefers them. ``shaped``: no
    ``generic`` rule (one that knows a secret by the words around it), each finding ending where its rule's match
    does (no ``TOKEN_TAIL``): what ``_in_broken`` reads its joined parts with, before ``_by_its_prefix``."""
    rs = ruleset()
    if not text:
        return []
    if "\r" in text:
        # A carriage return ends a line as a line feed does (a Windows file's CRLF, a lone CR): RE2's `$` and the
        # rules' one-line classes see it as one. One for one, so every span stays where it is.
        text = text.replace("\r", "\n")
    # gitleaks' prefilter: a rule's regex runs only when one of its keywords
    # occurs. One RE2 set pass over the text finds every keyword at once.
    woken = set(rs.keywordless)
    for i in rs.keywords.Match(text.lower()) or ():
        woken.update(rs.by_keyword[rs.keyword_list[i]])
    found: list[tuple[int, int, int, Finding]] = []
    seen: _Asked = {}
    for order in sorted(woken):
        rule = rs.rules[order]
        if shaped and rule.generic:
            continue
        for m in rule.pattern.finditer(text):
            f = _finding(rs, rule, text, m, seen, tail=not shaped)
            if f is not None:
                found.append((f.start, -(f.end - f.start), rule.generic * len(rs.rules) + order, f))
    found.sort(key=lambda t: t[:3])
    return [f for *_, f in found]


def scan(text: str, shaped: bool = False) -> list[Finding]:
    """Non-overlapping findings, earliest first (the longer wins a tie, then a provider's rule, then the earlier; a
    finding that overlaps an earlier one extends it); ``shaped`` as ``candidates``'."""
    return _merged(candidates(text, shaped))


def _merged(found: list[Finding]) -> list[Finding]:
    """``found`` (sorted by start, the longer first) as spans that do not overlap: one that starts inside an earlier
    one extends it (a JWT whose header a recovery code's rule took), so no part of either secret is left."""
    out: list[Finding] = []
    for f in found:
        if out and f.start < out[-1].end:
            if f.end > out[-1].end:
                out[-1] = Finding(out[-1].rule, out[-1].start, f.end)
            continue
        out.append(f)
    return out


def credential_rules(text: str) -> list[str]:
    """The rules that find a credential in ``text`` as written or in its normal form (a key split by a zero-width
    space, written in full-width letters): what every write that refuses a plain-text credential asks, and what
    the capture redacts (one scan, ``redact``, so the two never disagree)."""
    return redact(text)[1]


_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) | frozenset("\t\n\r")
# Any other character: a class of a few ranges. Not a class of the changed characters themselves: Python's engine
# looks a character above U+FFFF up in a list, one by one, so a text of many distinct such characters (private-use
# planes fold to nothing) cost its length times their number.
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")


def _in_fold(text: str) -> list[Finding]:
    """The findings in ``text``'s normal form (each character as bead.textform reads it: invisible characters and
    combining marks dropped, full-width, circled, look-alike and other compatibility forms as ASCII), each placed
    on the characters of ``text`` it came from: what the write path (``credential_rules``) refuses, the capture
    redacts. Each distinct character is looked up once and the fold is one ``str.translate``, so a text no
    character of which changes (the usual case, any script) costs a set of its characters; the map back is built
    only when the fold finds something the text as written did not have."""
    if _NOT_PLAIN.search(text) is None:  # printable ASCII, tabs and line breaks alone: nothing folds (a C loop)
        return []
    # A replacement character (a lone surrogate's, or a decoding error's) is dropped too: a key split by one is whole.
    table: dict[int, str] = {0xFFFD: ""} if "\ufffd" in text else {}
    chars: set[str] = set()
    for i in range(0, len(text), SCAN_CHUNK):  # a chunk at a time: set() of megabytes holds the GIL throughout
        chars.update(text[i : i + SCAN_CHUNK])
    for ch in chars - _PLAIN - {"\ufffd"}:
        folded = fold_char(ch)
        if folded != ch:
            table[ord(ch)] = folded
    if not table:
        return []
    found = [f for f in scan(text.translate(table)) if f.end > f.start]
    if not found:
        return []
    # Each changed character of ``text``: where it stands, and where and how long its fold is.
    edits: list[tuple[int, int, int, int]] = []
    shift = 0
    for m in _NOT_PLAIN.finditer(text):
        into = table.get(ord(m.group()))
        if into is None:
            continue
        edits.append((m.start(), 1, m.start() + shift, len(into)))
        shift += len(into) - 1
    return _placed(found, edits)


def _placed(found: list[Finding], edits: list[tuple[int, int, int, int]]) -> list[Finding]:
    """``found`` (positions in a view of a text) placed on the text's own characters. ``edits`` are the view's
    changes in order, each (where in the text, how many characters there, where in the view, how many there): a
    finding that starts or ends inside a change takes the whole of it."""
    at_view = [e[2] for e in edits]

    def origin(pos: int, end: bool = False) -> int:
        """Where the view's character ``pos`` came from in the text: the start of the change it lies in, or with
        ``end`` the position after that change (an escape of six characters that the view reads as one is
        covered whole, none of it left beside the redaction)."""
        k = bisect.bisect_right(at_view, pos) - 1
        if k < 0:
            return pos + end
        at_text, size_text, at, size = edits[k]
        if pos < at + size:
            return at_text + size_text if end else at_text
        return at_text + size_text + (pos - at - size) + end

    return [Finding(f.rule, origin(f.start), origin(f.end - 1, end=True)) for f in found]


# What an escape hides: a run of backslashes before a quote (JSON in a JSON string, `"SecretString": "{\\"password\\":
# \\"...\\"}"`, as the AWS CLI, a log line or a serialised request body write it, or a quote escaped in a shell or
# Python string) or before a slash (PHP's json_encode writes `postgres:\/\/app:X@db`); an escaped line break or tab;
# a character written as `\uXXXX` or `\xHH` (JSON, JavaScript, Python), as `%HH` (a URL's percent-encoding, printable
# ASCII only: a byte of a longer UTF-8 character is no character alone) or as an HTML entity (`&#61;`, `&#x3d;`,
# `&quot;`, `&amp;`). Python's engine, as RE2's finditer costs microseconds a match in Python; the lookbehind starts a
# backslash match only where a run starts, so a long run of backslashes is walked once, and every other branch is
# fixed-length: linear time. Every branch starts with its character (the lookbehind comes after the first backslash,
# where it asks the same: no backslash before the run), so the engine skips to a `\`, `%` or `&` in C instead of
# trying each position of the text.
_ESCAPE = re.compile(
    r"""\\(?<!\\\\)\\*(?:(["'/])|([ntr])|u([dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|[0-9a-fA-F]{4})"""
    r"""|x([0-9a-fA-F]{2}))"""
    r"|%([2-7][0-9a-fA-F])|&#(?:([0-9]{2,5})|[xX]([0-9a-fA-F]{2,4}));?|&(quot|amp|lt|gt|apos);"
)
_CONTROL_OF = {"n": "\n", "t": "\t", "r": "\r"}
_ENTITY = {"quot": '"', "amp": "&", "lt": "<", "gt": ">", "apos": "'"}


def _unescaped(m: re.Match[str]) -> str | None:
    """What the escape ``m`` of ``_ESCAPE`` stands for: the quote or slash alone (its backslashes dropped), the line
    break, tab or character it writes; None where it writes no character a text holds (a surrogate, a control other
    than a line break or tab, DEL)."""
    quote, control, u, x, pct, dec, hexa, name = m.groups()
    if quote:
        return quote
    if control:
        return _CONTROL_OF[control]
    if name:
        return _ENTITY[name]
    if u and len(u) == 10:  # a surrogate pair, \\uD83D\\uDE00 (JSON's way to write a character beyond the BMP)
        return chr(0x10000 + ((int(u[:4], 16) - 0xD800) << 10) + (int(u[6:], 16) - 0xDC00))
    code = int(u or x or pct or hexa, 16) if not dec else int(dec)
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF or (code < 0x20 and code not in (9, 10, 13)) or code == 0x7F:
        return None
    return chr(code)


def _in_escaped(text: str, depth: int = 2, deep: bool = True) -> list[Finding]:
    """The findings in ``text`` with its escapes read (``_ESCAPE``: ``{\\"password\\": \\"...\\"}`` as
    ``{"password": "..."}``, ``\\nJWT_SECRET=...`` with a line break, ``pass\\u0077ord``, ``postgres%3A%2F%2F...``,
    ``password&#61;...``), written as it is or in its normal form, each placed on the characters of ``text`` it came
    from (a finding that covers part of an escape takes all of it). Nothing is scanned again unless the text has such
    an escape."""
    if "\\" not in text and "%" not in text and "&" not in text:
        return []
    pieces: list[str] = []
    edits: list[tuple[int, int, int, int]] = []  # each change: where, how long, where in the view, how long there
    last = gone = 0
    for m in _ESCAPE.finditer(text):
        into = _unescaped(m)
        if into is None:
            continue
        pieces.append(text[last : m.start()])
        pieces.append(into)
        size = m.end() - m.start()
        edits.append((m.start(), size, m.start() - gone, len(into)))
        gone += size - len(into)
        last = m.end()
    if not edits:
        return []
    pieces.append(text[last:])
    view = "".join(pieces)
    # Escaped twice (`%253D`, `&amp;#61;`: a URL encoded again in a redirect's, an entity in an escaped page), read
    # once more: the view's own escapes, a bounded depth.
    again = _in_escaped(view, depth - 1, deep) if depth > 1 else []
    # A tool's input as JSON (an edit's new text inside a list of edits): the view's tables and base64 are read as
    # the text's own are (``deep``: not again inside base64 this was decoded from).
    inner = [*_in_markup(view), *_in_base64(view)] if deep else []
    return _placed([f for f in [*scan(view), *_in_fold(view), *again, *inner] if f.end > f.start], edits)


# How a model restates a .env file when asked what it holds: a Markdown table whose value column the header names
# (`| Variable | Value |`) or a lone row (`| NAME | value |`), a list item with an arrow from a variable's name to its
# value (`- JWT_SECRET → ...`), inline code or bold around one word (`` `NAME` ``, `**NAME**`). A code span with a space
# in it (a command: JWT_SECRET=`openssl rand -base64 48`) keeps its marks. Python's engine: every repeat is bounded,
# and a line is read once.
_ROW = re.compile(r"(?m)^[ \t]{0,16}\|[ \t]{0,16}")
_DELIMITER_CHARS = frozenset("|:- \t")  # a header's delimiter row (`|---|:--:|`): these only, and a `-`
# (The first backquote apart from the others: a pattern whose branches start with a character lets the engine skip
# to a backquote or an asterisk in C.)
_ONE_WORD = re.compile(r"\x60\x60{0,2}([^\x60\s]{1,256})\x60{1,3}|\*\*([^*\s]{1,256})\*\*")
_ARROW = re.compile(
    r"(?m)^[ \t]{0,16}(?:[-*+][ \t]{1,4})?(?:\x60{1,3}|\*\*)?[A-Z][A-Z0-9_]{1,80}(?:\x60{1,3}|\*\*)?"
    r"([ \t]{0,16}(?:\u2192|->|=>)[ \t]{0,16})"
)
_NAME_CELL = re.compile(r"(?:\x60{1,3}|\*\*)?[A-Za-z_][\w.\-]{0,80}(?:\x60{1,3}|\*\*)?")
# A header's second cell that names the values below it.
_VALUE_HEADER = re.compile(r"(?i)\b(?:values?|defaults?|examples?|secrets?|passwords?|tokens?|keys?|contents?|current|set to)\b")
# A header cell past the first that says its column holds a secret (`| user | password |`, `| service | API key |`).
_SECRET_HEADER = re.compile(
    r"(?i)^[ \t*\x60]{0,8}(?:[\w\- ]{0,40}[ _\-])?"
    r"(?:passwords?|passwd|passphrases?|secrets?|tokens?|api[ _\-]?keys?|private[ _\-]?keys?)[ \t*\x60]{0,8}$"
)


def _value_like(cell: str) -> bool:
    """Whether a table cell or the rest of a line after an arrow reads as a value, not a description ("Password for
    the database", "refreshed every hour"): inline code first, or one word."""
    cell = cell.strip()
    return cell.startswith("\x60") or (bool(cell) and not any(c in cell for c in " \t"))


def _separators(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cell separators of the table row ``text[start:end]`` (a ``|`` and the spaces around it): not one inside
    inline code or escaped (``\\|``), which is a value's."""
    out: list[tuple[int, int]] = []
    code = False
    for m in re.finditer(r"[|\x60]", text[start:end]):
        at = start + m.start()
        if m.group() == "\x60":
            code = not code
        elif not code and text[at - 1 : at] != "\\":
            a, b = at, at + 1
            while a > start and at - a < 16 and text[a - 1] in " \t":
                a -= 1
            while b < end and b - at < 17 and text[b] in " \t":
                b += 1
            out.append((a, b))
    return out


def _table_changes(text: str) -> list[tuple[int, int, str]]:
    """A table's data rows as ``NAME=value``: the row's leading ``|`` goes, its first separator reads as ``=`` and
    the others as a space, when its first cell is one name and the header names a value column (or, a row with no
    header, its second cell reads as a value)."""
    rows: list[list[tuple[int, int, int]]] = []  # blocks of rows: (line start, after the leading |, line end)
    for m in _ROW.finditer(text):
        end = text.find("\n", m.end())
        end = len(text) if end == -1 else end
        if rows and rows[-1][-1][2] + 1 == m.start():
            rows[-1].append((m.start(), m.end(), end))
        else:
            rows.append([(m.start(), m.end(), end)])
    changes: list[tuple[int, int, str]] = []
    for block in rows:
        data, values = block, None  # values: what the header says of the second column (None: no header)
        delimiter = text[block[1][0] : block[1][2]] if len(block) > 1 else ""
        if "-" in delimiter and set(delimiter) <= _DELIMITER_CHARS:
            head = block[0]
            seps = _separators(text, head[1], head[2])
            second = text[seps[0][1] : seps[1][0] if len(seps) > 1 else head[2]] if seps else ""
            values, data = bool(_VALUE_HEADER.search(second)), block[2:]
            cells = [text[a:b] for a, b in zip([head[1], *(b for _, b in seps)], [a for a, _ in seps], strict=False)]
            secret = [i for i, cell in enumerate(cells) if i >= 1 and _SECRET_HEADER.match(cell)]
            if secret:
                # Each row's cell in that column reads as `password=cell`, whatever its first cell says.
                for start, inner, end in data:
                    seps = _separators(text, inner, end)
                    if len(seps) < secret[0]:
                        continue
                    changes.append((start, inner - start, ""))
                    changes += [(a, b - a, " password=" if k + 1 in secret else " ") for k, (a, b) in enumerate(seps)]
                continue
        for start, inner, end in data:
            seps = _separators(text, inner, end)
            if not seps or not _NAME_CELL.fullmatch(text, inner, seps[0][0]):
                continue
            value = text[seps[0][1] : seps[1][0] if len(seps) > 1 else end]
            if not (values if values is not None else _value_like(value)):
                continue
            changes.append((start, inner - start, ""))
            changes += [(a, b - a, "=" if k == 0 else " ") for k, (a, b) in enumerate(seps)]
    return changes


def _in_markup(text: str) -> list[Finding]:
    """The findings in ``text`` read without the markup that parts a secret's name from its value: a terminal's
    escape sequences (``DB_\x1b[01;31mPASSWORD\x1b[m=...`` from grep --color, jq -C), inline code and bold marks
    around one word, a table row's cells as ``NAME=value`` and a name's arrow as ``=``; each placed on the characters
    of ``text`` it came from. Nothing is scanned again unless the text has such markup."""
    if not any(m in text for m in ("\x1b", "\x9b", "\x60", "**", "|", "\u2192", "->", "=>")):
        return []
    changes: list[tuple[int, int, str]] = []  # (where, how long, what the view reads there)
    if "\x1b" in text or "\x9b" in text:
        changes += [(m.start(), m.end() - m.start(), "") for m in TERMINAL_ESCAPES.finditer(text)]
    if "|" in text:
        changes += _table_changes(text)
    if "\u2192" in text or "->" in text or "=>" in text:
        for m in _ARROW.finditer(text):
            end = text.find("\n", m.end())
            if _value_like(text[m.end() : len(text) if end == -1 else end]):
                changes.append((m.start(1), m.end(1) - m.start(1), "="))
    for m in _ONE_WORD.finditer(text):
        word = 1 if m.group(1) is not None else 2
        changes += [(m.start(), m.start(word) - m.start(), ""), (m.end(word), m.end() - m.end(word), "")]
    if not changes:
        return []
    changes.sort()
    pieces: list[str] = []
    edits: list[tuple[int, int, int, int]] = []
    last = gone = 0
    for at, size, into in changes:
        if at < last:  # inside an earlier change (a pipe in an escape sequence's run)
            continue
        pieces += [text[last:at], into]
        edits.append((at, size, at - gone, len(into)))
        gone += size - len(into)
        last = at + size
    pieces.append(text[last:])
    view = "".join(pieces)
    return _placed([f for f in [*scan(view), *_in_fold(view)] if f.end > f.start], edits)


# A run of base64's characters long enough to hide a secret (a Kubernetes Secret's `data:`, `kubectl -o json`, a
# basic-auth header): decoded, and if it reads as text, scanned as that text under the name it is given (`NAME:` or
# `"NAME": "` just before it). Python's engine: one pass, no backtracking across runs.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{12,}={0,2}(?![A-Za-z0-9+/=_\-])")
# A run, or GNU base64's lines of 76 (its default wrapping) or OpenSSL's and PEM's of 64 joined with the last, shorter
# one. A run may follow "=": a variable's value (`DATABASE_URL_B64=...`, `--from-literal=url=...`) was never read.
# Its first character is matched before the lookbehind (which then asks the same: no such character before the run),
# so the engine skips what no run starts with in C; each branch takes one character fewer after it.
_BASE64_BLOCK = re.compile(
    r"[A-Za-z0-9+/](?<![A-Za-z0-9+/_\-][A-Za-z0-9+/])"
    r"(?:[A-Za-z0-9+/]{75}\r?\n(?:[A-Za-z0-9+/]{76}\r?\n)*[A-Za-z0-9+/]{1,76}={0,2}"
    r"|[A-Za-z0-9+/]{63}\r?\n(?:[A-Za-z0-9+/]{64}\r?\n)*[A-Za-z0-9+/]{1,64}={0,2}|[A-Za-z0-9+/]{11,}={0,2})"
    r"(?![A-Za-z0-9+/=_\-])"
)
_WRAP_WIDTHS = (64, 76)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_STARTS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


# Python's engine holds the GIL for a whole scan (1.3 s for 30 MB, the proxy's other requests waiting): the text is
# scanned a chunk at a time, each ending at a line break no run can cross.
SCAN_CHUNK = 256 * 1024
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _wrapped(text: str, nl: int) -> bool:
    """Whether the line that ends at ``text[nl]`` (a line break) is one of base64's wrapped lines (76 of its characters,
    GNU's, or 64, OpenSSL's), which a block goes on after."""
    for width in _WRAP_WIDTHS:
        start = nl - width - (nl > 0 and text[nl - 1] == "\r")
        line = text[start:nl].rstrip("\r")
        if start >= 0 and (start == 0 or text[start - 1] == "\n") and len(line) == width and set(line) <= _BASE64_CHARS:
            return True
    return False


def _chunks(text: str, crossed: Callable[[str, int], bool] | None = None) -> Iterator[tuple[int, int]]:
    """(pos, endpos) spans that cover ``text``, each about SCAN_CHUNK long and ending just after a line break that
    no match crosses (``crossed``: one that a match may go on after). Scanned apart, they find what one scan of the
    whole finds: the patterns chunked are of one line, or say when they go on (a look-behind still sees the line
    break before a span, and ``^`` matches after it)."""
    pos, n = 0, len(text)
    while n - pos > SCAN_CHUNK:
        nl = text.find("\n", pos + SCAN_CHUNK)
        while nl != -1 and crossed is not None and crossed(text, nl):
            nl = text.find("\n", nl + 1)
        if nl == -1:
            break
        yield pos, nl + 1
        pos = nl + 1
    yield pos, n


def _chunked(pattern: re.Pattern[str], text: str, crossed: Callable[[str, int], bool] | None = None) -> Iterator[Any]:
    """``pattern.finditer(text)``, a chunk at a time (``_chunks``)."""
    for pos, end in _chunks(text, crossed):
        yield from pattern.finditer(text, pos, end)


def _given_name(text: str, end: int) -> str | None:
    """The name ``text`` gives the value that begins at ``end``, within the 100 characters before it: ``NAME: value``,
    ``"NAME": "value"`` (a name of at most 81 letters, digits and ``_.-`` that starts with a letter or ``_``; spaces
    and one quote each side of the colon; a line break may end it). Read backwards from ``end``: a few steps, not a
    search of the 100 characters, which every base64 run of a namespace's Secrets dump asks for."""
    lo, i = max(0, end - 100), end
    if i > lo and text[i - 1] == "\n":  # as the pattern's $ reads: the end, or before a line break that ends it
        i -= 1
    if i > lo and text[i - 1] in "\"'":
        i -= 1
    while i > lo and text[i - 1] in " \t":
        i -= 1
    if i <= lo or text[i - 1] != ":":
        return None
    i -= 1
    while i > lo and text[i - 1] in " \t":
        i -= 1
    if i > lo and text[i - 1] in "\"'":
        i -= 1
    j = i
    while j > lo and i - j < 81 and text[j - 1] in _NAME_CHARS:
        j -= 1
    while j < i and text[j] not in _NAME_STARTS:  # the name's first character is a letter or "_"
        j += 1
    return text[j:i] or None


# Between two decoded runs where they are scanned as one text: a line break, a NUL and a line break, which no value
# class of a rule takes whole (a value stops at a line break or whitespace, a name at a NUL), so no match runs from
# one run into the next; one that does anyway (a key cut off before its END line, `[\s\S]*?` to the text's end) is
# read again run by run.
_BETWEEN = "\n\x00\n"


def _printable(plain: str) -> bool:
    """Text, invisible characters included (a key split by a zero-width space is found in its normal form)."""
    return all(c.isprintable() or c in "\n\r\t" or unicodedata.category(c) == "Cf" for c in plain)


def _text_of_bytes(raw: bytes) -> str | None:
    """``raw`` as text: UTF-8, or UTF-16LE where every other byte is NUL (PowerShell's -EncodedCommand is base64 of
    UTF-16LE: read as UTF-8 it was NULs between letters, no text, and a key in it went through whole)."""
    try:
        plain = raw.decode("utf-8")
        if _printable(plain):
            return plain
    except UnicodeDecodeError:
        pass
    if len(raw) >= 8 and len(raw) % 2 == 0 and raw[1::2].count(0) * 10 >= len(raw) // 2 * 9:
        try:
            plain = raw.decode("utf-16-le")
        except UnicodeDecodeError:
            return None
        return plain if _printable(plain) else None
    return None


def _base64_text(run: str) -> str | None:
    run = run.replace("\n", "").replace("\r", "")
    if len(run) % 4 == 1:
        return None
    try:  # unpadded too (a JWT's parts, `base64 -w0 | tr -d =`)
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
    except binascii.Error:
        return None
    plain = _text_of_bytes(raw)
    inner = _BASE64.fullmatch(plain.strip()) if plain is not None else None
    if inner is not None:  # base64 in base64 (a Secret's data that holds an encoded value)
        run = inner.group()
        if len(run) % 4 != 1:
            try:
                plain = _text_of_bytes(base64.b64decode(run + "=" * (-len(run) % 4), validate=True)) or plain
            except binascii.Error:
                pass
    return plain


# A run of hex digits long enough to hide a key (`xxd -p .env`, a value stored hex-encoded): read as the bytes it
# spells, when they are text. A hash (a commit's, a file's) spells no text and is passed over. Linear: a run is
# taken whole, and never starts inside another.
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){20,}(?![0-9A-Fa-f])")
# A line of hex digits alone (`xxd -p` wraps at 60): consecutive ones are read as one run. Disjoint classes, anchored
# at each line: linear.
_HEX_LINE = re.compile(r"(?m)^[ \t]*[0-9A-Fa-f]{16,}[ \t]*\r?$")
# A block's last line may be short (`xxd -p` of a file of 30k+1 to 30k+7 bytes): read with it, once a block.
_HEX_LAST_LINE = re.compile(r"(?m)^[ \t]*(?:[0-9A-Fa-f]{2})+[ \t]*\r?$")


# Either kind of run holds 16 hex digits in a row: a text without them (nearly every one) has none, found in one RE2
# pass (a DFA, no per-position work in Python's engine; Python's where RE2 cannot read the text, a lone surrogate).
_HEX_16 = re2.compile(r"[0-9A-Fa-f]{16}", _OPTIONS)
_HEX_16_PY = re.compile(r"[0-9A-Fa-f]{16}")


def _has_hex_16(text: str) -> bool:
    try:
        return _HEX_16.search(text) is not None
    except UnicodeEncodeError:
        return _HEX_16_PY.search(text) is not None


def _hex_runs(text: str) -> Iterator[tuple[int, int]]:
    """Spans of hex runs: consecutive lines of hex digits alone as one, and a long run inside a line."""
    if not _has_hex_16(text):
        return
    blocks: list[list[int]] = []
    for m in _chunked(_HEX_LINE, text):
        if blocks and m.start() <= blocks[-1][1] + 1:  # the line right after the last one
            blocks[-1][1] = m.end()
        else:
            blocks.append([m.start(), m.end()])
    for b in blocks:
        if (last := _HEX_LAST_LINE.match(text, b[1] + 1)) is not None:
            b[1] = last.end()
    i = 0
    for m in _chunked(_HEX_RUN, text):
        while i < len(blocks) and blocks[i][1] <= m.start():
            yield blocks[i][0], blocks[i][1]
            i += 1
        if i < len(blocks) and blocks[i][0] <= m.start() < blocks[i][1]:
            continue  # inside a block, read with it
        yield m.span()
    for b in blocks[i:]:
        yield b[0], b[1]


def _hex_text(run: str) -> str | None:
    try:
        return _text_of_bytes(bytes.fromhex(run))  # whitespace between the digits (line breaks) is skipped
    except ValueError:
        return None


# A line of a hex dump (`xxd`, `hexdump -C`): an offset, then up to 16 bytes as hex (xxd's pairs in groups of two,
# hexdump's one by one), then the bytes as characters. A secret there is split across the lines' character columns,
# so the dump's lines are read as the bytes their hex spells. Each line is matched from its start and its repeat is
# bounded (16): linear.
_DUMP_LINE = re.compile(r"(?m)^[0-9A-Fa-f]{7,8}:?[ \t]{1,2}((?:[0-9A-Fa-f]{2}[ ]{0,2}){1,16})(?:[ \t]+[|]?[^\n]*)?$")


def _dump_line(text: str, nl: int) -> bool:
    start = text.rfind("\n", 0, nl) + 1
    return _DUMP_LINE.match(text[start:nl]) is not None


def _dump_blocks(text: str) -> Iterator[tuple[int, int]]:
    """Spans of consecutive hex dump lines."""
    if ":" not in text and "|" not in text:
        return
    block: list[int] | None = None
    for m in _chunked(_DUMP_LINE, text, _dump_line):
        if block is not None and m.start() <= block[1] + 1:
            block[1] = m.end()
            continue
        if block is not None:
            yield block[0], block[1]
        block = [m.start(), m.end()]
    if block is not None:
        yield block[0], block[1]


def _dump_text(run: str) -> str | None:
    """The text a hex dump's lines spell (their hex columns read as bytes), or None."""
    digits = []
    for line in run.split("\n"):
        m = _DUMP_LINE.match(line.rstrip("\r"))
        if m is not None:
            digits.append(m.group(1))
    try:
        return _text_of_bytes(bytes.fromhex("".join(digits)))
    except ValueError:
        return None


def _in_base64(text: str) -> list[Finding]:
    """Findings in the text that base64 runs of ``text`` decode to (printable UTF-8, or UTF-16LE), each the whole
    run, and in the text hex runs and hex dumps spell (``hex-`` rules)."""
    base64_runs = (m.span() for m in _chunked(_BASE64_BLOCK, text, _wrapped))
    return [
        *_in_encoded(text, base64_runs, _base64_text, "base64-"),
        *_in_encoded(text, _hex_runs(text), _hex_text, "hex-"),
        *_in_encoded(text, _dump_blocks(text), _dump_text, "hex-"),
    ]


def _in_encoded(text: str, spans: Iterable[tuple[int, int]], decoded: Any, prefix: str) -> list[Finding]:
    """Findings in the text that runs of ``text`` (``spans``) decode to (``decoded``: the text, or None), each the
    whole run. Every run that decodes to text is read, however many (a dump of a namespace's Secrets holds
    thousands, and the one with the database URL may come last): they are scanned together, as one text, so a run
    costs what its characters cost, not a scan of its own. A finding across two runs' join marks both."""
    views: list[str] = []
    starts: list[int] = []  # where each view begins in the joined text
    runs: list[tuple[int, int]] = []  # the run of ``text`` each view came from
    at = 0
    for start, end in spans:
        plain = decoded(text[start:end])
        if plain is None:
            continue
        named = _given_name(text, start)
        view = f"{named}={plain}" if named else plain
        views.append(view)
        starts.append(at)
        runs.append((start, end))
        at += len(view) + len(_BETWEEN)
    if not views:
        return []

    def findings(view: str) -> list[Finding]:
        return sorted([*scan(view), *_in_fold(view), *_in_escaped(view, deep=False)], key=lambda f: f.start)

    rule_of: dict[int, str] = {}
    alone: set[int] = set()  # runs a finding ran across: read again each on its own
    for f in findings(_BETWEEN.join(views)):
        first = max(0, bisect.bisect_right(starts, f.start) - 1)
        last = max(0, bisect.bisect_right(starts, max(f.start, f.end - 1)) - 1)
        if first == last:
            rule_of.setdefault(first, f.rule)
        else:
            alone.update(range(first, min(last + 2, len(views))))
    for i in sorted(alone - set(rule_of)):
        found = findings(views[i])
        if found:
            rule_of[i] = found[0].rule
    return [Finding(f"{prefix}{rule_of[i]}", *runs[i]) for i in sorted(rule_of)]


def _readable(text: str) -> str:
    """``text`` with a lone surrogate (valid in JSON, no character: RE2 cannot read it) as U+FFFD, one for one."""
    if text.isascii():  # known without a scan: most captured text
        return text
    held = any(LONE_SURROGATE.search(text, i, i + SCAN_CHUNK) for i in range(0, len(text), SCAN_CHUNK))
    return LONE_SURROGATE.sub("\ufffd", text) if held else text


# One string literal closed and the next opened, to be read as one: `'sk-proj-' + '...'`, Python's `"..." "..."`
# (across a line break too). No two runs of blanks side by side: each is closed by the `+`, the line break or the
# quote that must follow it, so a quote before a long run of blanks is read once (Python's engine, linear).
# One literal's closing quote and the next one's opening, either quote each (`'sk-ant-...' + "..."` in JavaScript).
JOINED_LITERALS = re.compile(r"""['"][ \t]*(?:\+[ \t]*)?(?:\r?\n[ \t]*(?:\+[ \t]*)?)?['"]""")


def _in_joined(text: str) -> list[Finding]:
    """The findings in ``text`` with its string literals joined where one closes and the next opens (a key split
    in two for a line's length: the first half was redacted, the second left), each placed on the characters of
    ``text`` it came from, the joins inside it too. Nothing is scanned again unless the text has such a join."""
    if "'" not in text and '"' not in text:
        return []
    pieces: list[str] = []
    edits: list[tuple[int, int, int, int]] = []
    last = gone = 0
    for m in JOINED_LITERALS.finditer(text):
        size = m.end() - m.start()
        if size == 2:
            continue  # an empty string ("" or ''), not a join
        pieces.append(text[last : m.start()])
        edits.append((m.start(), size, m.start() - gone, 0))
        gone += size
        last = m.end()
    if not edits:
        return []
    pieces.append(text[last:])
    view = "".join(pieces)
    return _placed([f for f in [*scan(view), *_in_fold(view)] if f.end > f.start], edits)


SEED = "seed-phrase"  # the rule id of a wallet's recovery phrase (``_in_seed_phrase``)
SEED_WORDS = 12  # BIP39's shortest phrase
SEED_DISTINCT = 9  # of each twelve words of a phrase, how many different ones at least
_WORD_RUN = re.compile(r"[A-Za-z]+")
# What may stand between two words of a phrase as it is written down: blanks (a no-break or ideographic space too, a
# column's padding), a line break, a hyphen ("legal-winner-..."), or a list's quotes and comma (`["legal", "winner"]`,
# cardano-wallet's form).
_SEED_GAP = re.compile(r"[ \t\u00a0\u3000]{1,12}|[ \t]{0,12}\r?\n[ \t]{0,12}|-|[\"'][ \t]{0,2},[ \t\r\n]{0,8}[\"']")
# Any other short run of signs and digits, a line break among them: a list's numbers or bullets ("1. legal 2. winner",
# "- legal"), a bare comma, `;` or `/`. A list of twelve common nouns is written so too ("cat, dog, horse, ...",
# "1. Milk 2. Bread ..."), so a run with such a gap, or in Title Case, counts only where its words carry BIP39's
# checksum (a review found both the lists and the phrases).
_SEED_MARKED_GAP = re.compile(r"[^A-Za-z\n]{0,12}(?:\n[^A-Za-z\n]{0,12})?")
SEED_LENGTHS = (24, 21, 18, 15, 12)  # BIP39's phrases, in words


@lru_cache(maxsize=1)
def _bip39() -> Any:
    """BIP39's English word list and checksum (trezor's `mnemonic` package, which wallets' own tooling uses)."""
    from mnemonic import Mnemonic

    return Mnemonic("english")


@lru_cache(maxsize=1)
def _bip39_words() -> frozenset[str]:
    return frozenset(_bip39().wordlist)


def _checksummed(run: list[str]) -> bool:
    """Whether a phrase of BIP39's lengths in ``run`` carries its checksum (a window of each length at each place)."""
    checker = _bip39()
    for n in SEED_LENGTHS:
        for i in range(0, len(run) - n + 1):
            try:
                if checker.check(" ".join(run[i : i + n])):
                    return True
            except (ValueError, LookupError):
                continue
    return False


KUBECTL = "kubectl-secret-literal"  # the rule id of a literal of `kubectl create secret` (``_in_kubectl_literals``)
# A `kubectl create secret ...` command's line, and each of its literals: every value there is a secret's, whatever
# its name (`--from-literal=value=...`) and however many the line holds (a review: the generic rule knew a literal by
# a secret's word before it, and only the first).
_KUBECTL_SECRET = compile_linear(r"\bkubectl\b[^\n]{0,300}?\bcreate[ \t]+secret\b[^\n]*")
_LITERAL_NAME = r"[A-Za-z0-9_.-]{1,253}="
_LITERAL = compile_linear(
    r"--from-literal[= ](?:"
    + r"'"
    + _LITERAL_NAME
    + r"([^'\n]{1,1000})'"  # --from-literal='NAME=VALUE'
    + r'|"'
    + _LITERAL_NAME
    + r'([^"\n]{1,1000})"'  # --from-literal="NAME=VALUE"
    + r"|"
    + _LITERAL_NAME
    + r"(?:'([^'\n]{1,1000})'"
    + r'|"([^"\n]{1,1000})"'
    + r"|([^\s'"
    + r'"]{1,1000})))'
)
KUBECTL_LITERAL_MIN = 4  # characters of a literal's value, at least (`--from-literal=debug=1` holds no secret)


def _in_kubectl_literals(text: str) -> list[Finding]:
    """The values of each `kubectl create secret` line's `--from-literal` options."""
    if "kubectl" not in text or "from-literal" not in text:
        return []
    out = []
    for line in _KUBECTL_SECRET.finditer(text):
        for m in _LITERAL.finditer(line.group(0)):
            i = next(g for g in range(1, 6) if m.group(g) is not None)
            value = m.group(i)
            if len(value) >= KUBECTL_LITERAL_MIN and not value.startswith("$"):
                out.append(Finding(KUBECTL, line.start() + m.start(i), line.start() + m.end(i)))
    return out


def _in_seed_phrase(text: str) -> list[Finding]:
    """A wallet's recovery phrase however it is given (a .env line quoted or not, a JavaScript config, JSON, a
    call's argument, prose, one word a line, a numbered list): SEED_WORDS or more words in a row, each in BIP39's
    English list, not mostly the same few (SEED_DISTINCT). Written as a phrase is (``_SEED_GAP``, the words in lower
    or in upper case) it needs nothing more: twelve such words in a row occur in no text of 12,500 files looked at
    (site-packages, /usr/share/doc, /usr/lib/python3, the LoCoMo and BEAM conversations), as the list holds no "the",
    "and", "is", "to", "of" or "a". Written as a list may be (``_SEED_MARKED_GAP``, or in Title Case) its words must
    carry BIP39's checksum. No name is needed, so `MNEMONIC = "invokevirtual"` (a CPU's or a JVM's instruction) is no
    secret. One pass over the words, a few checksums a word at most: linear."""
    if len(text) < SEED_WORDS * 4:
        return []
    words = _bip39_words()
    # A phrase is SEED_WORDS listed words in a row among the text's words, whatever stands between them: a text
    # with no such streak holds none, told by one pass in C and a set lookup a word (the walk below took 40% of a
    # capture's secret scan).
    if "1" * SEED_WORDS not in "".join(["1" if w.lower() in words else "0" for w in _WORD_RUN.findall(text)]):
        return []
    out: list[Finding] = []
    run: list[str] = []
    start = prev = 0
    plain = True  # every gap of the run a phrase's, its words in one case

    def seed() -> bool:
        # A phrase's words are drawn at random from 2,048: twelve hold eleven or twelve different ones. A run of
        # one word or a few said again ("word word word", a test's filler) is no phrase.
        if len(run) < SEED_WORDS or len(set(run)) < SEED_DISTINCT * min(len(run), 24) // SEED_WORDS:
            return False
        # Written as a list: a phrase is at most 24 words (a word or two of the text around it may join), and its
        # words carry the checksum. A longer list of nouns held a window that did, by chance, one in sixteen.
        return plain or (len(run) <= SEED_LENGTHS[0] + 2 and _checksummed(run))

    for m in _WORD_RUN.finditer(text):
        written = m.group()
        word = written.lower()
        listed = word in words
        one_case = written.islower() or written.isupper()
        phrase_gap = bool(listed and run) and _SEED_GAP.fullmatch(text, prev, m.start()) is not None
        list_gap = bool(listed and run) and not phrase_gap and _SEED_MARKED_GAP.fullmatch(text, prev, m.start()) is not None
        if phrase_gap or list_gap:
            plain = plain and phrase_gap and one_case
            run.append(word)
        else:
            if seed():
                out.append(Finding(SEED, start, prev))
            run, start, plain = ([word], m.start(), one_case) if listed else ([], 0, True)
        prev = m.end()
    if seed():
        out.append(Finding(SEED, start, prev))
    return out


# A key broken where no rule sees it whole: a terminal, a mail or an editor wrapped it (the first line's part too short
# for its rule, `ghp_Zq8v` at a line's end and the rest below), or a no-break space (U+00A0, U+2007, U+202F) sits in
# it, as a web page or a word processor puts one. A run of a key's characters that starts where no such character
# stands before it, then up to four breaks each followed by another run: possessive, and each run bounded, so each
# position is read a bounded number of times (Python's engine, linear); the lookbehind fails at once inside a run.
_KEY_CLASS = "A-Za-z0-9_+/=.-"
_BROKEN_KEY = re.compile(
    rf"(?<![{_KEY_CLASS}])[{_KEY_CLASS}]{{1,200}}+"
    rf"(?:(?:\r?\n[ \t]{{0,40}}+|[\u00a0\u2007\u202f])[{_KEY_CLASS}]{{4,200}}+){{1,4}}+"
)
_KEY_BREAK = re.compile(r"\r?\n[ \t]*|[\u00a0\u2007\u202f]")


def _key_like_rest(rest: str) -> bool:
    """Whether what follows a break reads as more of a key: letters and digits, or both cases over 8 characters (a
    key's rest without a digit: a sixth of base62 rests of ten characters), not a word (`Thanks`, `foo_bar`) or a
    number alone."""
    letters = any(c.isalpha() for c in rest)
    if letters and any(c.isdigit() for c in rest):
        return True
    return len(rest) >= 8 and any(c.islower() for c in rest) and any(c.isupper() for c in rest)


def _more_of_a_found_key(rest: str, after: str) -> bool:
    """Whether what follows a break after a key a rule found whole reads as more of it, as ``_wrapped_on`` reads
    a next line: 8 characters or more, with lower-case and capital letters and digits all three; and 16 or more, or
    nothing after it but the line's end or a closing quote or bracket (`OAuth2Client is ...`, `Int32Array buffers`
    are words of the text: a review)."""
    kinds = any(c.islower() for c in rest) + any(c.isupper() for c in rest) + any(c.isdigit() for c in rest)
    alone = after[:1] in ("", "\n", "\r", '"', "'", "`", ")", "]", "}", ",", ";")
    return len(rest) >= 8 and kinds == 3 and (alone or len(rest) >= 16)


def _key_parts(text: str, cuts: list[re.Match[str]], end: int) -> tuple[list[re.Match[str]], int]:
    """Of a run's breaks (``cuts``, the run ending at ``end``), those each followed by more of a key
    (``_key_like_rest``), up to the first that is not, and where the last of them ends; a `NAME=value` (an `=` but
    base64's padding at its end) is no more of a key."""
    kept: list[re.Match[str]] = []
    stop = cuts[0].start()
    for i, cut in enumerate(cuts):
        run_end = cuts[i + 1].start() if i + 1 < len(cuts) else end
        run = text[cut.end() : run_end]
        if "=" in run.rstrip("=") or not _key_like_rest(run):
            break
        kept.append(cut)
        stop = run_end
    return kept, stop


@lru_cache(maxsize=1)
def _shaped_ids() -> frozenset[str]:
    return frozenset(r.id for r in ruleset().rules if not r.generic)


@lru_cache(maxsize=1)
def _prefixes() -> dict[str, tuple[str, ...]]:
    """Each rule's keywords: a key that begins with its rule's own (`ghp_`, `sk-ant-`, `xoxb`, `AKIA`) is known by
    its shape; one a rule finds after them (`Authorization: Bearer ...`, `LINKEDIN_SECRET=...`) by the words
    around it."""
    return {r.id: tuple(k for k in r.keywords if len(k) >= 2) for r in ruleset().rules}


def _by_its_prefix(f: Finding, view: str, start: int, first_break: int) -> bool:
    """Whether the finding ``f`` of ``view`` (in the candidate that starts at ``start``) begins a token with one of
    its rule's keywords (``_prefixes``), and what follows the keyword before the first break ``first_break`` is no
    plain word: `BOOT.DSK` holds no Twilio key's `SK`, nor `fw_boot` or `hf_hub` a key's start (a hash on the next
    line completed them: a review)."""
    if f.start > start and view[f.start - 1].isalnum():
        return False
    head = view[f.start : f.start + 16].lower()
    kept = next((k for k in _prefixes().get(f.rule, ()) if head.startswith(k)), None)
    if kept is None:
        return False
    word = view[f.start + len(kept) : first_break]
    return not (word.isascii() and word.isalpha() and word.islower())


def _in_broken(text: str, found: list[Finding]) -> list[Finding]:
    """The findings of keys broken by a line break or a no-break space (``_BROKEN_KEY``), each placed on the
    characters of ``text`` it came from, its breaks too. Only a key that begins with its rule's own prefix counts
    (``_by_its_prefix``: `ghp_`, `sk-ant-`, not what follows `Authorization: Bearer` or a secret's name), ending where
    its rule's match does, and only where it crosses a break: a rule that knows a secret by the words around it
    would make one of a line's last word and the next line's first, and a key's run past its match would take the
    next line's word. After a key a rule found whole (16 characters or more), a next part must read as more of it
    as strictly as ``_wrapped_on`` reads a next line. Each run of a chain is tried as the key's start (the run
    before may be the previous line's last word). The runs are read together as one view, one scan for all."""
    if "\n" not in text and not any(c in text for c in "\u00a0\u2007\u202f"):
        return []
    shaped = _shaped_ids()
    starts = [f.start for f in found]
    parts: list[str] = []
    edits: list[tuple[int, int, int, int]] = []  # (where in the text, its size, where in the view, its size)
    spans: list[tuple[int, int, list[int]]] = []  # each candidate's start and end in the view, and its breaks there
    at = 0
    for m in _BROKEN_KEY.finditer(text):
        start, end = m.span()
        cuts, end = _key_parts(text, list(_KEY_BREAK.finditer(text, start, end)), end)
        if not cuts:
            continue
        k = bisect.bisect_left(starts, cuts[0].start())
        f = found[k - 1] if k else None
        if f is not None and f.end > start and f.rule in shaped and f.end - f.start >= 16:
            # A key found whole: its next part only if it reads as more of it as strictly as _wrapped_on reads a
            # next line (which takes a line of key characters alone; this, one that a quote or words follow).
            rest_end = cuts[1].start() if len(cuts) > 1 else end
            if not _more_of_a_found_key(text[cuts[0].end() : rest_end], text[rest_end : rest_end + 1]):
                continue
        for first in range(len(cuts)):
            at_run = start if first == 0 else cuts[first - 1].end()
            if end - at_run - sum(c.end() - c.start() for c in cuts[first:]) < 16:
                break
            if parts:
                parts.append("\n")  # between two candidates: stands for nothing of the text
                at += 1
            # A key known by its own prefix begins in the run: nothing before it is read.
            edits.append((at_run, 0, at, 0))
            view_start, pos, breaks = at, at_run, []
            for cut in cuts[first:]:
                parts.append(text[pos : cut.start()])
                at += cut.start() - pos
                edits.append((cut.start(), cut.end() - cut.start(), at, 0))
                breaks.append(at)
                pos = cut.end()
            parts.append(text[pos:end])
            at += end - pos
            spans.append((view_start, at, breaks))
    if not spans:
        return []
    starts_in_view = [s[0] for s in spans]
    crossing = []
    view = "".join(parts)
    for f in scan(view, shaped=True):
        k = bisect.bisect_right(starts_in_view, f.start) - 1
        if k < 0 or f.end > spans[k][1]:
            continue
        after = [b for b in spans[k][2] if f.start < b]
        if after and after[0] < f.end and _by_its_prefix(f, view, spans[k][0], after[0]):
            crossing.append(f)
    return _placed(crossing, edits) if crossing else []


def _findings(text: str) -> list[Finding]:
    """What ``redact`` replaces in ``text`` (``_readable``): found as written, in its normal form, with its escapes
    read, its string literals joined, or base64-decoded, and a wallet's recovery phrase; spans that do not overlap."""
    findings = scan(text)
    other = [
        *_in_broken(text, findings),
        *_in_fold(text),
        *_in_escaped(text),
        *_in_joined(text),
        *_in_markup(text),
        *_in_base64(text),
        *_in_seed_phrase(text),
        *_in_kubectl_literals(text),
    ]
    if other:
        findings = _merged(sorted([*findings, *other], key=lambda f: (f.start, -(f.end - f.start))))
    return _wrapped_on(text, findings) if "\n" in text else findings


WRAPPED_LINES = 4  # of a secret that ends its line, the next lines that are its rest, at most
_TOKEN_LINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _wrapped_on(text: str, findings: list[Finding]) -> list[Finding]:
    """``findings`` with a secret that runs to its line's end taken on through the next lines that hold nothing but
    a key's characters (8 to 200 of them): a key a terminal or a mail wrapped (`sk-ant-api03-...` and its rest on
    the next line), whose rest no rule finds alone. A line with a space or another sign in it (`NAME=value`), or
    without lower-case and capital letters and digits all three (`Installation`, `ALLOWED_HOSTS`, a UUID, a hash), is
    text of its own."""
    out = []
    for f in findings:
        end = f.end
        for _ in range(WRAPPED_LINES):
            # A shell's line continuation (`export DB_PASSWORD=Zq8v\` and the rest below) goes on whatever its length.
            continued = text[end - 1 : end] == "\\" and end > f.start + 1
            if (f.end - f.start < 16 and not continued) or text[end : end + 1] not in ("\n", "\r"):
                break
            start = end + (2 if text[end : end + 2] == "\r\n" else 1)
            stop = text.find("\n", start, start + 202)
            stop = len(text) if stop == -1 and len(text) - start <= 201 else stop
            if stop == -1:
                break
            line = text[start:stop].rstrip("\r")
            if continued:
                rest = len(line) - len(line.lstrip(" \t"))
                token = line[rest:].split(" ", 1)[0].split("\t", 1)[0]
                if not 1 <= len(token) <= 200:
                    break
                end = start + rest + len(token)
                continue
            body = line[: len(line) - min(2, len(line) - len(line.rstrip("=")))]  # base64's padding: two at most
            kinds = any(c.islower() for c in body) + any(c.isupper() for c in body) + any(c.isdigit() for c in body)
            if not 8 <= len(line) <= 200 or not set(body) <= _TOKEN_LINE or kinds < 3:
                break
            end = start + len(line)
        out.append(f if end == f.end else Finding(f.rule, f.start, end))
    return _merged(out) if len(out) > 1 else out


def redact(text: str) -> tuple[str, list[str]]:
    """(text with every finding replaced, rule ids found): found as written, in its normal form (a key split by a
    zero-width space, written in full-width letters) or with its escaped quotes read as quotes (JSON in a JSON
    string), the first where they overlap."""
    text = _readable(text)
    return _replaced(text, _findings(text))


# A command whose output is a secret alone, with no name beside it in the output for a rule to find it by: a
# variable that names a secret printed (`printenv DB_PASSWORD`, `echo "$API_TOKEN"`), or a secret store's or a CLI's
# read of one (`gh auth token`, `aws configure get aws_secret_access_key`, `vault kv get -field=password`, `op read`,
# `pass show`, `security find-generic-password -w`, `kubectl get secret ... -o jsonpath=...`). RE2: linear.
# Where a command starts: a line's start, after `;`, `&`, `|`, `(`, a backquote, a quote, `$(`, or a shell's `-c`
# (`bash -lc gh auth token`, an argument vector joined), sudo and its options before it.
_CMD = (
    r"(?:^|[;&|(\x60\n'\"]|\$\(|[ \t]-[a-z]{0,3}c[ \t])[ \t]*(?:sudo(?:[ \t]+-\S+)*[ \t]+)?"
    # what may stand before the command: a variable set for it, env, time, timeout N, command, exec, nice, nohup
    r"(?:(?:[A-Za-z_][A-Za-z0-9_]{0,60}=\S{0,200}|env|time|command|exec|nice|nohup|timeout[ \t]+\S{1,20})[ \t]+){0,4}"
)
_SECRET_VAR = (
    r"[A-Za-z0-9_]{0,60}(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|_PWD|_PASS|API_?KEY|_KEY|CREDENTIAL|_PAT|_SALT"
    r"|MNEMONIC|SEED_PHRASE|BW_SESSION)"
    # a suffix of a variant (`SECRET_KEY_BASE`, `OPENAI_API_KEY_2`, `DB_PASSWORD_DEV`), then the name's end; a default
    # (`${X_TOKEN:-unset}`) prints the value, an alternative (`${X_TOKEN:+set}`) does not, nor does a name that goes
    # on (`$MAX_TOKENS`, `$TOKEN_FILE`, `$OAUTH_TOKEN_URL`)
    r"(?:_(?:[0-9]{1,4}|BASE|DEV|PROD|PRODUCTION|STAGING|STAGE|TEST|CI|LOCAL|QA|V[0-9]{1,3}|[A-Z0-9]{1,2}))*"
    r"(?:[^A-Za-z0-9_:]|:[-=?]|$)"
)
_PRINTS_SECRET = LazyPattern(
    r"(?i)(?:\b(?:echo|printf|print)\b[^\n|;&]{0,200}?\$\{?"
    r"|\bprintenv(?:[ \t]+--?[0A-Za-z]{0,8})*(?:[ \t]+[A-Za-z0-9_]{1,60}){0,8}?[ \t]+)"
    + _SECRET_VAR
    + r"|(?i)\b(?:os\.environ|os\.getenv|process\.env|ENV\[|getenv\()[^\n]{0,80}?"
    + _SECRET_VAR
    + r"|(?i)"
    + _CMD
    + r"(?:"
    r"(?:gh|glab)[ \t]+auth[ \t]+token\b|aws[ \t]+configure[ \t]+get[ \t]+[\w.]{0,60}(?:secret|token)"
    r"|aws[ \t]+secretsmanager[ \t]+get-secret-value\b|aws[ \t]+ssm[ \t]+get-parameters?\b[^\n]{0,300}--with-decryption"
    r"|gcloud[ \t]+(?:auth[ \t]+(?:application-default[ \t]+)?print-(?:access|identity)-token"
    r"|secrets[ \t]+versions[ \t]+access)|az[ \t]+(?:account[ \t]+get-access-token|keyvault[ \t]+secret[ \t]+show)\b"
    r"|vault[ \t]+(?:kv[ \t]+get|read)\b[^\n]{0,200}-field|op[ \t]+read\b"
    r"|op[ \t]+item[ \t]+get\b[^\n]{0,200}(?:--reveal|password)"
    r"|(?:go)?pass[ \t]+show\b|lpass[ \t]+show\b[^\n]{0,200}--password|bw[ \t]+get[ \t]+password\b|keyring[ \t]+get\b"
    # more secret stores' reads that print the value alone (an outside attack)
    r"|keepassxc-cli[ \t]+show\b[^\n|;&]{0,200}(?:[ \t]-s\b|--show-protected|(?:-a|--attributes?)[ \t=]+['\"]?password\b)"
    r"|infisical[ \t]+secrets[ \t]+get\b|chamber[ \t]+read\b|systemd-creds[ \t]+(?:cat|decrypt)\b"
    r"|bw[ \t]+(?:unlock|login)\b[^\n|;&]{0,200}--raw\b"
    r"|security[ \t]+find-(?:generic|internet)-password\b[^\n]{0,200}[ \t]-[a-z]{0,3}w\b|secret-tool[ \t]+lookup\b"
    r"|doppler[ \t]+secrets[ \t]+get\b|heroku[ \t]+config:get\b|terraform[ \t]+output\b[^\n]{0,200}(?:-raw|-json)"
    r"|argocd[ \t]+admin[ \t]+initial-password\b"
    # a token or a key printed alone (an outside attack): Heroku's token, WireGuard's private key, Elasticsearch's
    # new password
    r"|heroku[ \t]+auth:token\b|wg[ \t]+genkey\b|(?:[^\s;|&]{0,100}/)?elasticsearch-reset-password\b"
    r"|pulumi[ \t]+config[ \t]+get\b|sops[ \t]+(?:-d|--decrypt)\b|gpg2?[ \t]+(?:[^\n|;&]{0,100}[ \t])?(?:-d|--decrypt)\b"
    r"|openssl[ \t]+rand\b|(?:bin/)?rails[ \t]+secret\b|mix[ \t]+phx\.gen\.secret\b|pwgen\b"
    r"|(?:php[ \t]+)?artisan[ \t]+key:generate\b[^\n|;&]{0,100}--show"
    # a file read inside a container too (`docker exec app cat /run/secrets/db_password`, `kubectl exec pod -- cat`)
    r"|(?:(?:docker(?:-compose)?|podman|nerdctl|kubectl|oc|crictl|lxc|incus)(?:[ \t]+\S{1,100}){0,6}?[ \t]+(?:exec|run)"
    r"(?:[ \t]+\S{1,100}){1,8}?[ \t]+)?(?:/(?:usr/)?bin/)?(?:cat|head|tail)[ \t]+[^\n|;&]{0,200}"
    r"(?:/run/secrets/|/vault/secrets/|\.pgpass|\.netrc|\.git-credentials|master\.key|\.docker/config\.json"
    r"|(?:token|secret|password|passwd|credentials)s?(?:\.(?:txt|json))?(?:[\s;|&)]|$))"
    r"|kubectl\b[^\n]{0,200}\bsecrets?\b[^\n]{0,300}(?:\.data\b|base64[ \t]+(?:-d|--decode))"
    r")"
    # a secret made up on the spot: a generator's call in code that runs (a quoted argument after -c, -e, -p,
    # `runner` or `shell -c`; a heredoc; code piped into an interpreter; a code field that opens with it), however
    # the interpreter is reached (`uv run python -c`, `./manage.py shell -c`, `bin/rails runner`, `npx tsx -e`). A
    # search for the call (`grep -rn "randomBytes(32)" src/`, `git log -S`) runs none
     + r"|(?:[ \t]-[A-Za-z]*[ceEp]|\brunner|\bshell[ \t]+-c|<<-?[ \t]*['\"]?\w+['\"]?\n"
    r"|^(?:import|from|require|const|puts|print)\b)"
    r"(?s:.){0,1000}?"
    r"(?:\btoken_(?:hex|urlsafe|bytes)\(|\bget_random_secret_key\b|\bos\.urandom\(|\brandomBytes\(|\brandom_bytes\("
    r"|\bSecureRandom\.(?:hex|base64|urlsafe_base64|alphanumeric|random_bytes|base58|base36)\b)"
    r"|(?:\btoken_(?:hex|urlsafe|bytes)\(|\bget_random_secret_key\b|\brandomBytes\(|\bSecureRandom\.(?:hex|base64"
    r"|urlsafe_base64|alphanumeric|base58))[^\n]{0,200}['\"][ \t]*\|[ \t]*(?:python[0-9.]*|pypy3?|ipython|node|nodejs|irb"
    r"|ruby|php|perl)\b"
    # bytes of /dev/urandom made into text (`head -c 32 /dev/urandom | base64`, `< /dev/urandom tr -dc A-Za-z0-9`)
     + r"|\b(?:head|dd|tr|od|xxd|hexdump|base64|openssl)\b[^\n|;&]{0,200}/dev/u?random\b"
    r"|/dev/u?random\b[^\n]{0,40}(?:\|[ \t]*|[ \t])(?:head|tr|base64|xxd|od|hexdump)\b"
    # a base64 decoding where a command starts (a Kubernetes secret's value, copied from one call into the next)
    + r"|(?i)"
    + _CMD
    + r"(?:base64[ \t]+(?:[^\n|;&]{0,100}[ \t])?(?:-d|--decode|-D)\b|python[0-9.]*[ \t]+-m[ \t]+base64[ \t]+-d\b)"
    # jq or yq reading a key that names a secret (`.password`, `.data.GEMINI_API_KEY`, `.clientSecret`,
    # `.data["db-password"]`, `.accessToken`, `.oauth_token`; not `.max_tokens`, `.next_token`, a tokenizer's
    # `.eos_token`, `.token.expires_at`, `.password.minLength` or a file named app.secret.json)
    + r"|(?i)\b(?:jq|yq)\b[^\n|;&]{0,200}(?:\.|\[[\"'])[\"']?(?:[A-Za-z0-9_-]*"
    r"(?:password|passwd|secret|api_?key|access_?key|secret_?key|private_?key)"
    r"|(?:access|refresh|id|auth|api|bearer|session|client|bot|app|oauth|hf|csrf|jwt|github|gh|gitlab|slack|npm|pypi"
    r"|deploy|service|vault)?[_-]?token)(?:[\]\"'\s|,}]|$)"
    # a secret's line of .env cut to its value: sed's substitution of NAME= (its script may hold | or ;), grep -o or
    # rg -o of NAME=, and a sed, cut or awk after a grep of the name in .env
     + r"|(?i)\bsed\b[^\n]{0,200}(?:PASSWORD|SECRET|TOKEN|_KEY)=[^\n]{0,200}\.env\b"
    r"|\b(?:grep|rg)\b(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*o[A-Za-z]*\b[^\n|;&]{0,200}(?:PASSWORD|SECRET|TOKEN|_KEY)="
    r"|(?:PASSWORD|SECRET|TOKEN|_KEY)[^\n|]{0,100}\.env\b[^\n|]{0,50}\|[ \t]*(?:sed[ \t]+(?:-[A-Za-z]+[ \t]+)*['\"]?s"
    r"|awk\b[^\n|]{0,80}(?:split\(|-F[ \t]*['\"]?=))"
    r"|(?:PASSWORD|SECRET|TOKEN|_KEY)[^\n]{0,100}\|[ \t]*sed\b[^\n|]{0,60}s[/|#,:]\^?(?:\.\*|\[\^=\]\*)="
    + r"|(?i)\b(?:cut|awk)\b[^\n]{0,200}(?:-d|-F)[ \t]*['\"]?=[^\n]{0,200}(?:\.env|\.netrc|credentials|secrets?)\b"
    + r"|(?i)(?:\.env|credentials)\b[^\n]{0,200}\|[^\n]{0,100}\b(?:cut|awk)\b[^\n]{0,100}(?:-d|-F)[ \t]*['\"]?="
    + r"|(?i)(?:PASSWORD|SECRET|TOKEN|_KEY)[^\n]{0,100}\|[ \t]*(?:cut|awk)\b[^\n|]{0,40}(?:-d|-F)[ \t]*['\"]?="
)
PRINTED = "printed-secret"  # the rule id a word of such an output is redacted as
_WORD = re.compile(r"\S{8,}")
PRINTED_SCAN = 64 * 1024  # of a command, the characters looked at


# `pass NAME` (and gopass's), pass's own short form of `pass show NAME`, as a command of a one-line command: its
# name quoted or not, its errors sent away. Not a word of code or a config (`pass` in Python, pf's `pass all`), which a
# command of several lines (a heredoc) holds, nor a shell function of that name (`pass() {...}; ... && pass health`),
# nor pass's other commands or extensions, nor a name without a letter (`(pass 2)`): a review found each redacted.
_PASS_SHORT = LazyPattern(
    r"(?:^[ \t]*|[;&|(][ \t]*)(?:sudo[ \t]+)?(?:go)?pass[ \t]+"
    r"(?:'([^'\s]{1,100})'|\"([^\"\s]{1,100})\"|([A-Za-z0-9_@][A-Za-z0-9_./@+-]{0,100}))"
    r"[ \t]*(?:2>(?:&1|/dev/null)[ \t]*)?(?:$|#|[;&|)])"
)
_PASS_COMMANDS = frozenset(
    "init ls list find search show grep insert add edit generate rm remove delete mv rename cp copy git help version "
    "otp audit import tomb tessen ext update clip".split()
)
_PASS_FUNCTION = compile_linear(r"(?:^|[;&|\s])(?:function[ \t]+pass\b|pass[ \t]*\(\))")


def _pass_reads(command: str) -> bool:
    """Whether a one-line ``command`` runs `pass NAME` (``_PASS_SHORT``)."""
    if "\n" in command.strip() or "pass" not in command or _PASS_FUNCTION.search(command):
        return False
    for m in _PASS_SHORT.finditer(command):
        name = next(g for g in m.groups() if g is not None)
        if name not in _PASS_COMMANDS and any(c.isalpha() for c in name):
            return True
    return False


def prints_secret(command: str) -> bool:
    """Whether ``command`` (a tool call's input, as text) prints a secret on its own (``_PRINTS_SECRET``, and
    pass's `pass NAME`)."""
    head = command[:PRINTED_SCAN]
    return bool(_PRINTS_SECRET.search(head)) or _pass_reads(head)


def _printed_like(word: str) -> bool:
    """Whether a word of a printed secret's output reads as a secret: 8 characters or more once the quotes and
    brackets around it are left out, of two kinds of letter or digit at least (lower case, upper case, digits), or of
    16 or more; never a path or a URL (`/home/dev`, `https://...`), a date or a name in capitals (`DATABASE_URL`)."""
    core = word.strip("\"'`()[]{}<>,.;:!?")
    if len(core) < 8 or core.startswith(("/", "./", "~/")) or "://" in core or core.lower() in ERROR_WORDS:
        return False
    kinds = any(c.islower() for c in core) + any(c.isupper() for c in core) + any(c.isdigit() for c in core)
    return kinds >= 2 or (kinds == 1 and len(core) >= 16 and not core.isdigit() and not core.isupper())


PRINTED_ALONE_MIN = 4  # an output that is one word alone of at least this many characters (quotes aside) is the value
# An output that is one line of two to twelve words of letters, joined by a space or a hyphen each: a passphrase
# (diceware, a seed phrase), unless a word of it is one an error says.
_PASSPHRASE = re.compile(r"[A-Za-z]{3,20}(?:[ -][A-Za-z]{3,20}){1,11}")
PASSPHRASE_CHARS = 256
ERROR_WORDS = frozenset(
    """not found no such denied permission error errors unbound variable command file directory invalid usage
    failed fail cannot unable missing unknown unset undefined null none empty option options argument arguments
    required refused timeout timed out exist exists does supported allowed access forbidden unauthorized expired
    warning fatal abort aborted nothing help try see set bad fault segmentation killed core dumped terminated exited
    exception traceback panic unauthenticated notfound""".split()
)
# A harness's lines before a command's output, ending in `Output:` alone on its line (Codex's exec_command: `Chunk
# ID`, `Wall time`, `Process exited with code 0`, `Original token count`): ``_harness_header``.
PRINTED_HEADER_CHARS = 1024
PRINTED_HEADER_LINE = 200


def shaped_as_no_word(value: str) -> bool:
    """Letters and digits mixed, or a sign among them (`Qz8vLr2T`, `Tr0ub4dor&3`): no word of any language is so."""
    letters = any(c.isalpha() for c in value)
    return (letters and any(c.isdigit() for c in value)) or any(not c.isalnum() for c in value)


def redact_printed(text: str, found: list[str] | None = None) -> tuple[str, bool]:
    """The output of a command that prints a secret (``prints_secret``) with each word that reads as one
    (``_printed_like``) as [REDACTED:printed-secret]; and whether it redacted one. A lower-case word shorter than 16
    (`ECONNREFUSED`, `goreleaser`) stays: an error's words, as a lower-case password stays everywhere in the rules.
    An output that is one word alone (`printenv DB_PASSWORD` printing `sunshinesky`, `48213977`, `hunter2`) is the
    value itself, whatever its shape: it goes whole, unless it is a path or a URL, a redaction already, or shorter
    than PRINTED_ALONE_MIN. ``found``: each word redacted is appended to it. A harness's header before the output
    (Codex's `Chunk ID: ...`, `Process exited with code 0`, ... `Output:` lines) is left as it is, and the output
    after it read as the whole output."""
    head = _harness_header(text)
    if head:
        body, hit = _printed_body(text[head:], found)
        return text[:head] + body, hit
    return _printed_body(text, found)


def _harness_header(text: str) -> int:
    """Where a harness's header before a command's output ends (after its `Output:` line), or 0: at most eight
    lines of the harness's (``_header_line``), then `Output:` alone on its line. One look at the text's start, no
    pattern: linear, and one header only."""
    at = text.find("\nOutput:", 0, PRINTED_HEADER_CHARS)
    if at <= 0:
        return 0
    end = text.find("\n", at + 1)
    if text[at + 8 : len(text) if end == -1 else end].strip() != "":
        return 0
    lines = [line.rstrip("\r") for line in text[:at].split("\n")]
    if len(lines) > 8 or not all(_header_line(line) for line in lines):
        return 0
    return len(text) if end == -1 else end + 1


def _header_line(line: str) -> bool:
    """A harness's line about the command, not its output: `Name: value` (`Chunk ID: cd5a91`, `Wall time: 0.45
    seconds`, `Exit code: 0`) or `Process exited with code 0`, `Process running with session ID 3`."""
    if not line[:1].isupper() or len(line) > PRINTED_HEADER_LINE:
        return False
    name, colon, _ = line.partition(": ")
    return (bool(colon) and len(name) <= 40 and all(c.isalpha() or c == " " for c in name)) or line.startswith("Process ")


def _printed_body(text: str, found: list[str] | None) -> tuple[str, bool]:
    """``redact_printed`` of a command's output itself (no harness header before it)."""
    alone = text.strip()
    core = alone.strip("\"'`")
    one_word = (
        bool(alone)
        and len(core) >= PRINTED_ALONE_MIN
        and len(alone.split(None, 1)) == 1
        and not alone.startswith(MARKER)
        and not core.startswith(("/", "./", "~/"))
        and "://" not in core
    )
    # A passphrase printed alone (`pass show wifi`: "correct horse battery staple"): one line of words and nothing
    # else, none of them an error's ("secret not found", "Permission denied" stay).
    passphrase = (
        not one_word
        and len(alone) <= PASSPHRASE_CHARS
        and _PASSPHRASE.fullmatch(core) is not None
        and not set(core.lower().split()) & ERROR_WORDS
    )
    if one_word or passphrase:
        start = len(text) - len(text.lstrip())
        if found is not None:
            found.append(core)
        return f"{text[:start]}[REDACTED:{PRINTED}]{text[start + len(alone) :]}", True
    hit = False

    def one(m: Any) -> str:
        nonlocal hit
        word = m.group(0)
        if word.startswith(MARKER) or not _printed_like(word):
            return word
        hit = True
        core = word.strip("\"'`()[]{}<>,.;:!?")  # the value, as _printed_like reads it
        if found is not None and shaped_as_no_word(core):
            # Among other words only a value no word is shaped as is looked for again (an error's `NotFound`,
            # `AccessDeniedException` or SSM's `SecureString` would take the person's words)
            found.append(core)
        return f"[REDACTED:{PRINTED}]"

    out = _WORD.sub(one, text)
    return out, hit


# How the runs of one message are read as one text: as a line break joined them where the harness sent them.
RUN_JOIN = "\n"


def redact_runs(
    texts: list[str], values: dict[str, str] | None = None, named: set[str] | None = None
) -> list[tuple[str, list[str]]]:
    """``redact`` for each run of one message (its typed words, a paste, a tool's output, in order), which the raw
    log keeps apart: each is redacted as it reads alone, and also where a finding in the runs read as one text
    reaches into it. A secret named in the person's words ("the webhook signing secret for staging:") and pasted
    below them in a code fence is a value with no name once the runs are apart. ``values``: each finding's text is
    added to it, with its rule; ``named``: those a secret's name stands right before (``redact_messages``)."""
    texts = [_readable(t) for t in texts]
    if len(texts) < 2:
        found = [(t, _findings(t)) for t in texts]
        if values is not None:
            for t, fs in found:
                _note(t, [f for f in fs if f.end > f.start], values, named)
        return [_replaced(t, fs) for t, fs in found]
    joined = _findings(RUN_JOIN.join(texts))  # spans in order that do not overlap: their ends are in order too
    ends = [f.end for f in joined]
    out, at = [], 0
    for t in texts:
        end = at + len(t)
        inside = []
        for k in range(bisect.bisect_right(ends, at), len(joined)):  # not a slice: a copy per run costs quadratic time
            f = joined[k]
            if f.start >= end:
                break
            inside.append(Finding(f.rule, max(f.start, at) - at, min(f.end, end) - at))
        own = _findings(t)
        if inside:
            own = _merged(sorted([*own, *inside], key=lambda f: (f.start, -(f.end - f.start))))
        own = [f for f in own if f.end > f.start]
        if values is not None:
            _note(t, own, values, named)
        out.append(_replaced(t, own))
        at = end + len(RUN_JOIN)
    return out


REPEAT_MIN = 8  # a value a rule found this long or longer is redacted wherever the conversation says it again
NAMED_MIN = 6  # the same for a value a secret's name stands right before (`DB_PASSWORD=...`)
BASE64_REPEAT_MIN = 20  # a value holding `/` is looked for again from this long, where it reads as base64 (``repeatable``)
_BASE64_VALUE = re.compile(r"[A-Za-z0-9+/]+=*")
_HEX_CHARS = frozenset("0123456789abcdef")
REPEAT_MAX = 256  # a longer finding (a private key's block) is redacted where it stands, not looked for again
REPEATS_KEPT = 64  # values looked for, at most (the newest)


def _note(text: str, findings: list[Finding], values: dict[str, str], named: set[str] | None) -> None:
    for f in findings:
        value = text[f.start : f.end]
        values[value] = f.rule
        if named is not None and _named_before(text, f.start):
            named.add(value)


# A name and its `=` or `:` right before a value (`DB_PASSWORD=`, `"api_key": "`, `password: `), or a flag (`-p `,
# `--password=`). Python's engine on at most 80 characters, every repeat bounded.
_NAME_BEFORE = re.compile(r"(?:([A-Za-z][\w.\-]{0,60})[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?|--?(password|pass|p)[ =]?)$")
_NAME_HUMP = re.compile(r"([a-z0-9])([A-Z])")
SECRET_NOUNS = frozenset(
    "password passwd pwd pw pass passphrase passcode secret token key apikey credential credentials auth".split()
)


def _named_before(text: str, start: int) -> bool:
    """Whether the name right before ``text[start:]`` ends in one of SECRET_NOUNS (`DB_PASSWORD`, `client_secret`,
    `apiKey`, `-p`): the value is that secret's, not a setting a rule misread (`PASSWORD_HASHER`, `AWS_SECRET_NAME`)."""
    m = _NAME_BEFORE.search(text, max(0, start - 80), start)
    if m is None:
        return False
    if m.group(2):
        return True
    words = [w for w in re.split(r"[_.\-]+", _NAME_HUMP.sub(r"\1_\2", m.group(1)).lower()) if w]
    return bool(words) and words[-1] in SECRET_NOUNS


def repeatable(value: str, named: bool = False) -> bool:
    """Whether a value a rule found is looked for again in the rest of the conversation. Of REPEAT_MAX characters at
    most, with no blank, quote or backslash. A value a secret's name stands right before (``named``: `DB_PASSWORD=`,
    a field labelled as a password) from NAMED_MIN characters, with a digit or a sign, no `/` (a file's path), no
    call (`dirname(`) and at most NAMED_WORDY of it in runs of four or more letters of one case: `Summer2024!`,
    `hunter22`, `Xk9.mP2#vL7q`. Any other from REPEAT_MIN characters, with letters and digits or both cases, no `/`
    or `(`, and random in its letters (at most WORDY in such runs). A rule that reads a setting as a secret
    (`PASSWORD_HASHER=argon2id`, `SECRET_MANAGER_PROJECT=my-gcp-project-123`, `postgres://postgres:postgres@db`,
    `SPAN_KEY = "current-span"`) finds words, which looked for again would take them from every later turn."""
    if len(value) > REPEAT_MAX or any(c.isspace() or c in _NOT_IN_REPEATS for c in value):
        return False
    wordy = sum(len(run) for run in _CASE_RUN.findall(value)) / max(len(value), 1)
    if "/" in value:
        # A path's `/`, unless the value reads as base64 does: long, of its alphabet alone, not from the root, random
        # in its letters and with digits (an AWS secret key, `wJalrXUtnFEMI/K7MDENG/...`, was redacted where its name
        # stood and kept where the conversation said it again). `prod/myapp/Database1` is words.
        # A path of words and ids ("prod/db/2f9c81b7e4a5d6c3", "v2/<id>/items", a Vault path) is not base64: each
        # part between `/` of random base64 has capitals, small letters or digits mixed, never a word or hex alone (a
        # review found such paths erased from later turns and every other conversation).
        pieces = value.rstrip("=").split("/")
        mixed = all(any(f(c) for c in value) for f in (str.isdigit, str.islower, str.isupper))
        # (a part of random base64 is often short, `et` or `9f`: only a word of 4 letters or more, or hex of 8 digits or
        # more, reads as a path's)
        if (
            len(value) < BASE64_REPEAT_MIN
            or _BASE64_VALUE.fullmatch(value) is None
            or not mixed
            or wordy > WORDY
            or any(
                (len(p) >= 4 and p.isalpha() and p.islower()) or (len(p) >= 8 and all(c in _HEX_CHARS for c in p.lower()))
                for p in pieces
            )
        ):
            return False
        if not value.startswith("/") and "//" not in value and all(pieces):
            return True
        # After a secret's name a key may also start with `/` or hold `//` (a review: one AWS key in thirteen), where a
        # path's parts are short or words (`/mnt/Vol2/Backup/Keys`): one part of 16 characters or more mixes capitals,
        # small letters and digits, as random base64 does.
        return named and any(
            len(p) >= 16 and all(any(f(c) for c in p) for f in (str.isdigit, str.islower, str.isupper)) for p in pieces
        )
    if named:
        if set(value) <= _ADDRESS_CHARS and "." in value:
            return False  # an address or a version (`SECRET=127.0.0.1:8080`): what a rule misread
        signs = any(c.isdigit() or not c.isalnum() for c in value)
        return len(value) >= NAMED_MIN and signs and wordy <= NAMED_WORDY and not _CALL.search(value)
    if len(value) < REPEAT_MIN or "(" in value:
        return False
    lower, upper, digit = (any(f(c) for c in value) for f in (str.islower, str.isupper, str.isdigit))
    return (lower or upper) and (digit or (lower and upper)) and wordy <= WORDY


def shared_across(value: str) -> bool:
    """Whether a value one conversation's capture found is looked for in every other's: one no common word is
    (``repeatable`` as for a value no name stands before: random letters and digits), or one a secret's name stood
    before that holds a sign no name or version holds (`S3cret!`, `Spring#Rain`), or of eight characters or more
    with capitals, small letters and digits and no dot (`Welcome1-Staging`). Not `x86_64`, `gpt-4o-mini`, `GPT-4o`,
    `Llama-3.1-8B` or `localhost:5432` after `DB_PASSWORD=` in a README the agent read, which would then be taken
    from every conversation's log (reviews); nor `hunter22`, which reads as they do."""
    if repeatable(value):
        return True
    if not repeatable(value, named=True):
        return False
    kinds = all(any(f(c) for c in value) for f in (str.isupper, str.islower, str.isdigit))
    return any(c in "!#$%&*+=?@^~" for c in value) or (len(value) >= 8 and kinds and "." not in value)


WORDY = 0.3  # of a value looked for again, the share in runs of 4+ letters of one case (a random key: about a tenth)
NAMED_WORDY = 0.8  # the same for a named one (`hunter22`: 0.75; `current-span`: 0.92)
_CASE_RUN = re.compile(r"[a-z]{4,}|[A-Z]{4,}")
_ADDRESS_CHARS = frozenset("0123456789.:")
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,60}\(")
_NOT_IN_REPEATS = frozenset("'\"`\\")


def _replace_whole(text: str, value: str, marker: str) -> tuple[str, bool]:
    """``text`` with each occurrence of ``value`` that no ASCII letter or digit stands beside replaced by ``marker``
    (a found `app-dev-2024` is not cut out of `s3://app-dev-20245`; beside a word of another script, as Japanese
    writes one, it goes). A value of hex digits is the same value in either case (a webhook secret found in lower
    case, quoted back as `0x7C4E...`): it is looked for in the text with its hex letters in lower case (one
    translation, then str.find: linear), and may stand behind C's `0x`. Past REPEATS_CHECKED occurrences (a text
    made of the value), every one goes with no look at its neighbours."""
    hex_value = _HEX_VALUE.fullmatch(value) is not None
    hay, needle = (_hex_lower(text), value.translate(_HEX_LOWER)) if hex_value else (text, value)
    if hay.count(needle) > REPEATS_CHECKED:
        if not hex_value:
            return text.replace(value, marker), True
        out, last = [], 0
        for piece in hay.split(needle)[:-1]:  # the text's own characters between the occurrences
            out += [text[last : last + len(piece)], marker]
            last += len(piece) + len(needle)
        return "".join(out) + text[last:], True
    out, last, at, hit = [], 0, hay.find(needle), False
    while at != -1:
        after = at + len(value)
        before = at and _ascii_word(text[at - 1]) and not (hex_value and text[at - 2 : at] in ("0x", "0X"))
        if not before and not (after < len(text) and _ascii_word(text[after])):
            out += [text[last:at], marker]
            last, hit = after, True
        at = hay.find(needle, max(at + 1, last))
    return ("".join(out) + text[last:], True) if hit else (text, False)


# A value of 16 or more hex digits with a letter among them: found in either case (``_replace_whole``).
_HEX_VALUE = re.compile(r"(?=[0-9]*[a-fA-F])[0-9a-fA-F]{16,}")
_HEX_LOWER = str.maketrans("ABCDEF", "abcdef")


def _hex_lower(text: str) -> str:
    """``text`` with A-F as a-f and every other character as it is (the same length: positions carry over)."""
    return text.lower() if text.isascii() else text.translate(_HEX_LOWER)


def _says(text: str, value: str) -> bool:
    """Whether ``value`` stands in ``text``: as written, or in any case where it is hex digits (``_HEX_VALUE``)."""
    if value in text:
        return True
    return _HEX_VALUE.fullmatch(value) is not None and value.translate(_HEX_LOWER) in _hex_lower(text)


REPEATS_CHECKED = 1000  # occurrences of one value in one text checked for their neighbours


def _ascii_word(c: str) -> bool:
    return c.isascii() and c.isalnum()


def holds_whole(text: str, value: str) -> bool:
    """Whether ``text`` says ``value`` as a whole token (``_replace_whole``'s test)."""
    return _replace_whole(text, value, "")[1] if _says(text, value) else False


def keep_found(known: dict[str, str], value: str, rule: str) -> None:
    """``value`` noted in ``known`` (value to rule) as the newest; the newest REPEATS_KEPT kept."""
    known.pop(value, None)
    known[value] = rule
    while len(known) > REPEATS_KEPT:
        known.pop(next(iter(known)))


def redact_known(text: str, known: dict[str, str]) -> str:
    """``text`` with each of ``known`` (a value a rule found elsewhere in the conversation, to its rule) redacted where
    it stands whole, the longest first (``_replace_whole``): a password the person pasted in a `.env` and then says
    bare."""
    for v in sorted(known, key=len, reverse=True):
        if _says(text, v):
            text = _replace_whole(text, v, f"[REDACTED:{known[v]}]")[0]
    return text


def redact_messages(groups: list[list[str]], known: dict[str, str] | None = None) -> list[tuple[str, list[str]]]:
    """``redact_runs`` for each message's runs, in order, and each value a rule found (``repeatable``) redacted
    wherever a later run, or another run of the same message, says it again: a password the person pasted in a
    `.env` that the model's answer repeats ("paste `...` when asked"), or the same message saying it twice.
    ``known``: values found before (the conversation's earlier requests; value to rule), looked for too; the values
    found here are added to it, the newest REPEATS_KEPT kept. Linear: each text is searched once per value."""
    carried = known if known is not None else {}
    # First every message's own findings, then the values looked for in all of them: a value found in a later
    # message of the batch (a resumed session's history, a whole file imported) is taken from the earlier ones too.
    done = []
    for texts in groups:
        found: dict[str, str] = {}
        named: set[str] = set()
        done += redact_runs(texts, found, named)
        for value, rule in found.items():
            if repeatable(value, value in named):
                keep_found(carried, value, rule)
    looked = sorted(carried, key=len, reverse=True)  # one that holds another goes whole
    out: list[tuple[str, list[str]]] = []
    for text, rules in done:
        again = []
        for v in looked:
            if _says(text, v):
                text, hit = _replace_whole(text, v, f"[REDACTED:{carried[v]}]")
                again += [carried[v]] if hit else []
        out.append((text, [*rules, *again]))
    return out


def _replaced(text: str, findings: list[Finding]) -> tuple[str, list[str]]:
    if not findings:
        return text, []
    parts, last = [], 0
    for f in findings:
        parts.append(text[last : f.start])
        parts.append(f"[REDACTED:{f.rule}]")
        last = f.end
    parts.append(text[last:])
    return "".join(parts), [f.rule for f in findings]
