"""One normal form of text for every rule that judges it.

Text bead judges may come from an attacker, who writes it so that a rule
reading raw code points misses it: "cu\u200brl" with a zero-width space,
"\u0455end" with a Cyrillic dze, "ｃｕｒｌ" in full-width letters,
"\u202eelpmaxe.live" with a right-to-left override. ``fold`` is what every rule
reads (the instruction prefilter, "remember", the dream's rules, provenance,
keys): invisible characters dropped, NFKC (full-width and mathematical
letters become plain ones), and each letter that Unicode's confusables table
(UTS #39's data, as the maintained ``confusable_homoglyphs`` package ships
it) lists as a look-alike of an ASCII one replaced by that ASCII letter. Text
that is plain ASCII folds to itself, so the rules keep their figures on it.

``invisible`` says whether a text holds characters that show as nothing or
reorder what is shown (format characters such as zero-width spaces and bidi
controls, controls other than tab and line breaks, variation selectors,
fillers): a value whose visible form differs from what is stored is refused
or queued, with that reason, by the code that would store it.

``skeleton`` compares keys: two keys with the same skeleton look the same to
a reader (``user/edit0r`` beside ``user/editor``).

Every function here is one pass over its input, character by character.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Characters that show as nothing or as blank space without being a format or control character: Unicode's
# Default_Ignorable_Code_Point ranges that are not format characters already (the combining grapheme joiner,
# Khmer inherent vowels, Mongolian variation selectors, Hangul fillers, reserved noncharacter-like ranges,
# musical formatting, tags and variation selectors supplement), the braille blank, and format characters of a Unicode
# later than this Python's.
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2065, 0x2065),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    # Egyptian hieroglyph format controls: U+13430..U+13438 since Unicode 12, U+13439..U+1343F since Unicode 15,
    # which Python 3.11 (Unicode 14) does not know: by range, so an older Python screens them too.
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Zl", "Zp"})
_KEPT_CONTROLS = frozenset("\t\n\r")
_ASCII_UNSEEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # the ASCII characters ``fold`` drops: one C scan
_MARKS = frozenset({"Mn", "Me"})
# Characters that stand for a vertical bar (a shell's pipe) rather than the letter the confusables table
# gives them ("l"): a rule that looks for "| sh" must see them as "|".
_BARS = frozenset("\u01c0\u05c0\u2223\u2225\u2502\u2503\u23d0\u2758\u2759\u275a\u2f01\u3021\uffe8\U0001d100")
MAX_MARKS = 30  # combining marks in a row before normalisation (UAX #15's stream-safe limit): bounded work


_IGNORABLE_STARTS = tuple(lo for lo, _ in _IGNORABLE)  # the ranges are sorted and apart: one bisection


def _ignorable(code: int) -> bool:
    i = bisect.bisect_right(_IGNORABLE_STARTS, code) - 1
    return i >= 0 and code <= _IGNORABLE[i][1]


@lru_cache(maxsize=65536)
def _unseen(ch: str) -> bool:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return ch not in _KEPT_CONTROLS
    if code >= 0x34F and _ignorable(code):
        return True
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


# The emoji whose base is no symbol (Unicode's emoji-variation-sequences.txt): a keycap's digit, # and *, and
# ‼ ⁉ ℹ 〰 〽 (punctuation and a letter, written with U+FE0F as emoji).
_EMOJI_BASES = frozenset("0123456789#*\u203c\u2049\u2139\u3030\u303d")


def emoji_selector(prev: str, ch: str) -> bool:
    """Whether ``ch`` is the one presentation selector an emoji is written with: U+FE0E or U+FE0F right after a
    symbol, a keycap's digit or one of the few other emoji bases (❤️, 1️⃣, ‼️). After a letter, or a second in a row,
    a selector hides text. The one rule for what is shown (bead.display) and what is screened (``invisible``)."""
    return ch in "\ufe0e\ufe0f" and bool(prev) and (prev in _EMOJI_BASES or unicodedata.category(prev)[0] == "S")


# The three tag-sequence flags Unicode names (England's, Scotland's, Wales's): U+1F3F4, gbeng, gbsct or gbwls in tag
# letters, the cancel tag. Any other run of tag characters, flag-shaped or not, is hidden text a model reads.
TAG_FLAGS = re.compile(
    "\U0001f3f4\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    "|\U000e0077\U000e006c\U000e0073)\U000e007f"
)
# What joins letters or emoji: part of what the person sees (Persian spells words with U+200C);
# the direction marks right-to-left text needs (LRM, RLM, Arabic's ALM: no override, they reorder nothing past a
# run), a soft hyphen (a web page's word break), the combining grapheme joiner and the Mongolian vowel separator
# (parts of the scripts that use them).
_JOINERS = frozenset({"U+200C", "U+200D", "U+200E", "U+200F", "U+061C", "U+00AD", "U+034F", "U+180E"})


# Ideographic variation selectors a text may hold: a person's or a place's name in its registered glyph (渡邊󠄁, 葛󠄀城)
# takes one or two. Each of the 240 can stand for a byte, so one after every ideograph of a sentence spells a hidden
# command in plain sight: past this many in one text, every one counts as hidden.
MAX_IDEOGRAPH_SELECTORS = 3


def ideograph_selector(prev: str, ch: str) -> bool:
    """Whether ``ch`` is the one ideographic variation selector (U+E0100-E01EF) a CJK glyph's form is written with:
    right after a CJK ideograph (葛󠄀). After a letter, or a second in a row, the supplement's 240 selectors spell
    bytes a model reads and the person does not see (text hidden in plain sight)."""
    return (
        "\U000e0100" <= ch <= "\U000e01ef"
        and bool(prev)
        and unicodedata.name(prev, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH"))
    )


_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")


def kept_selectors(text: str) -> frozenset[int]:
    """Where ``text`` holds a variation selector that draws what the person sees: an emoji's (``emoji_selector``),
    and an ideograph's (``ideograph_selector``) while the text holds no more than MAX_IDEOGRAPH_SELECTORS of them.
    The one rule for what is screened (``invisible``) and what a block keeps as written (bead.recall.render)."""
    emoji: list[int] = []
    ideographic: list[int] = []
    for m in _SELECTOR.finditer(text):
        i = m.start()
        prev, ch = text[i - 1 : i], m.group()
        if emoji_selector(prev, ch):
            emoji.append(i)
        elif ideograph_selector(prev, ch):
            ideographic.append(i)
    return frozenset(emoji + (ideographic if len(ideographic) <= MAX_IDEOGRAPH_SELECTORS else []))


def hidden(text: str) -> list[str]:
    """The characters of ``text`` a reader does not see but a model reads (tag characters outside the three flags,
    bidi overrides and isolates, zero-width spaces, variation selectors after a letter), as ``U+XXXX`` names;
    joiners, direction marks and the selectors that shape what the reader sees (an emoji's, an ideograph's) are
    not."""
    return [c for c in invisible(TAG_FLAGS.sub("", text)) if c not in _JOINERS]


def invisible(text: str) -> list[str]:
    """The invisible or reordering characters ``text`` holds, as ``U+XXXX`` names (empty when none); the one
    selector an emoji or a CJK ideograph is written with is not."""
    text = str(text)
    keep = kept_selectors(text)
    seen: dict[str, None] = {}
    for i, ch in enumerate(text):
        if (ch >= "\x7f" or (ch < " " and ch not in _KEPT_CONTROLS)) and i not in keep and _unseen(ch):
            seen[ch] = None
    return [f"U+{ord(ch):04X}" for ch in seen]


def _disguised(ch: str) -> bool:
    """A character that reads as one ASCII letter or digit without being it: a look-alike of another script
    (Cyrillic р), a Latin form (IPA ɡ, small capital ᴘ), a mathematical or letterlike one (𝚙, ℎ), a digit of
    another script (०). Accented letters are not (their name says WITH), nor Turkish dotless ı, nor full-width
    forms (a Japanese or Chinese writer's letters, visibly wide)."""
    if ch < "\x80" or ch in "\u0131\u0130" or "\uff01" <= ch <= "\uff5e":
        return False
    if ch in _BARS:  # a letter that reads as l (ǀ, 〡), which the rules read as a shell's pipe
        return unicodedata.category(ch)[0] in "LN"
    if ch in _chained():
        return False  # judged by the run it stands in (``_runs``)
    mapped = _ascii_lookalikes().get(ch)
    if mapped is not None:
        return len(mapped) == 1 and mapped.isalnum()
    name = unicodedata.name(ch, "")
    return _by_name(ch) is not None and " WITH " not in name


# Characters that read as "." or "/" (Unicode's confusables); the ideographic full stop and the full-width dot and
# slash are not among them: CJK text uses them, and IDNA reads them as "." and "/" anyway.
_LOOKALIKE_SEPARATORS = frozenset(
    "\u2024\u2044\u2215\u29f8\u2571\u0701\ua4f8\ua60e\u27cb\u2041\u1735\u3033\u31d3\u4e3f\u2f03\u30ce\u2cc6"
    "\U0001d16d\U0001d23a\u0660\u06f0\u0702"
)


def lookalikes(text: str) -> list[str]:
    """The words of ``text`` (between spaces) that read as something they are not: a run of letters and digits that
    mixes ASCII with characters that only look like ASCII (``раураl`` with Cyrillic р, а, у; ``ɡooɡle``; ``g०ogle``);
    a look-alike dot or slash beside ASCII letters (``paypal․com``); or, in an address (a URL, a handle, an e-mail
    address, or parts of letters joined by a dot), a part made wholly of such characters beside ASCII letters
    (``https://раура.com``, ``ｐｒｏｄ.example.com``, ``х.com``), or every part (``аррӏе.со``, ``@раураӏ``). A word in
    one script, accents, CJK beside Latin, full-width letters beside Latin words, Russian endings after a Latin word
    (``main-ветку``), numbers (``v1.2.3``, ``ρ0``) are none. One pass."""
    if text.isascii():
        return []
    out: list[str] = []
    for word in text.split():
        if word.isascii() or len(out) >= 4:
            continue
        runs = _runs(word)
        parts = [r for r in runs if r.text]
        # An address: a URL, a handle or an e-mail address, or parts joined by a dot (a host name, a file name).
        dotted = any(
            a.sep_after == "." and not a.text.isdigit() and b.text and not b.text.isdigit()
            for a, b in zip(runs, runs[1:], strict=False)
            if a.text
        )
        address = "://" in word or "@" in word or dotted
        ascii_letters = any(r.ascii_letters for r in parts)
        # A run that mixes ASCII letters (or, for a look-alike digit, ASCII digits) with look-alikes: раураl, g०ogle.
        flagged = any(r.disguised and (r.ascii_letters or (r.ascii_digits and r.disguised_digits)) for r in parts)
        flagged = flagged or (ascii_letters and any(c in _LOOKALIKE_SEPARATORS for c in word))
        whole = [r for r in parts if r.disguised + r.wide == len(r.text)]
        if address and whole:
            # a part wholly of look-alikes beside ASCII (https://раура.com, х.com), or every part (аррӏе.со, @раураӏ)
            flagged = flagged or ascii_letters or (len(whole) == len(parts) and (len(parts) >= 2 or "@" in word))
        if flagged:
            out.append(word)
    return out


@dataclass
class _Run:
    text: str = ""
    ascii_letters: int = 0
    ascii_digits: int = 0
    disguised: int = 0
    disguised_digits: int = 0
    chained: int = 0  # letters fold reads through a chain (``_chained``)
    wide: int = 0
    sep_after: str = ""


def _runs(word: str) -> list[_Run]:
    """The runs of letters and digits of ``word`` (marks stay with theirs), each with what it holds and the
    character that ends it."""
    runs: list[_Run] = []
    cur = _Run()
    chars: list[str] = []
    for ch in word:
        # A negative circled or squared letter (🅰) is a symbol to Unicode, a letter to a reader.
        if ch.isalnum() or unicodedata.category(ch) in _MARKS or ("\U0001f150" <= ch <= "\U0001f189" and _by_name(ch)):
            chars.append(ch)
            if ch < "\x80":
                if ch.isalpha():
                    cur.ascii_letters += 1
                else:
                    cur.ascii_digits += 1
            elif "\uff10" <= ch <= "\uff5a":
                cur.wide += 1  # full-width letters count only wholly, in an address: beside Latin, a CJK writer's
            elif ch in _chained():
                cur.chained += 1  # a disguise only beside ASCII letters (`кraken`), never in a word of its own script
            elif _disguised(ch):
                cur.disguised += 1
                if ch.isdigit() or (_ascii_lookalikes().get(ch) or "x").isdigit():
                    cur.disguised_digits += 1
            continue
        cur.text, cur.sep_after = "".join(chars), ch
        runs.append(cur)
        cur, chars = _Run(), []
    cur.text = "".join(chars)
    runs.append(cur)
    for r in runs:
        if r.ascii_letters:
            r.disguised += r.chained
    return runs


def _ascii_lookalikes() -> dict[str, str]:
    """Each non-ASCII character Unicode's confusables table maps to an ASCII look-alike, and that look-alike;
    then letters whose Unicode name says which Latin letter they are (small capitals, turned and modifier
    forms the table leaves out), and decimal digits of every script."""
    return _tables()[0]


def _chained() -> frozenset[str]:
    """The characters the table gives another non-ASCII letter for, read through it (``_chained_to``): their ASCII
    letter only beside ASCII letters (``fold``, ``_runs``), never in a word of their own script (`Москва`)."""
    return _tables()[1]


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, str], frozenset[str]]:
    """``_ascii_lookalikes`` and ``_chained``, read from the table in one pass."""
    from confusable_homoglyphs import confusables

    out: dict[str, str] = {}
    chained = set(_THROUGH)
    for ch, entries in confusables.confusables_data.items():
        if len(ch) != 1 or ord(ch) < 0x80:
            continue
        for e in entries:
            target = e.get("c", "")
            if target and all(ord(x) < 0x80 for x in target):
                out[ch] = target
                break
            if (letter := _chained_to(ch, target)) is not None:
                out[ch] = letter
                chained.add(ch)
                break
    out.update(_THROUGH)
    for ch in _BARS:
        out[ch] = "|"
    return out, frozenset(chained)


# Letters the confusables table gives as the look-alike of others, which read as an ASCII letter themselves: its
# kra (U+0138) is its target for Greek kappa, Cyrillic ka and a small capital K, which read as k. A value spelt with
# one (`kestrel` with a kappa) escaped forget, seal and the tombstones.
_THROUGH = {"\u0138": "k"}


_CHAIN_SCRIPTS = ("LATIN ", "GREEK ", "CYRILLIC ", "COPTIC ", "CHEROKEE ", "MATHEMATICAL ")


def _chained_to(ch: str, target: str) -> str | None:
    """The ASCII letter a letter ``ch`` reads as where the confusables table gives another non-ASCII letter as its
    look-alike, followed through the table (three steps at most; a target's combining marks aside) to kra (k: Greek
    kappa, Cyrillic ka; an outside attack), a Latin small capital (Cyrillic te and ve, Greek tau) or an ASCII letter
    (Cyrillic em, through turned w and small capital M; Greek eta, n with a mark): two reviews after it. None for any
    other, and for a character of another script (Tamil letters the table gives as digits)."""
    if not unicodedata.category(ch).startswith("L") or not unicodedata.name(ch, "").startswith(_CHAIN_SCRIPTS):
        return None
    if _by_name(ch) is not None:
        return None  # its name says its letter (a small capital): read so already, and judged a disguise as before
    from confusable_homoglyphs import confusables

    for _ in range(3):
        if not target or any(unicodedata.category(c) not in _MARKS for c in target[1:]):
            return None
        base = target[0]
        if base in _THROUGH:
            return _THROUGH[base]
        if base < "\x80":
            return base.lower() if base.isalpha() else None
        if (letter := _small_capital(base)) is not None:
            return letter
        entries = confusables.confusables_data.get(base) or [{}]
        target = entries[0].get("c", "")
    return None


def _small_capital(ch: str) -> str | None:
    """The letter a Latin small capital is (``ᴛ``: t); None for any other character."""
    return _by_name(ch) if unicodedata.name(ch, "").startswith("LATIN LETTER SMALL CAPITAL ") else None


def _by_name(ch: str) -> str | None:
    """The Latin letter a character's name says it is ("LATIN LETTER SMALL CAPITAL E" -> e; "NEGATIVE SQUARED LATIN
    CAPITAL LETTER A", 🅰, which no normal form maps, as the circled and squared ones are), or its digit."""
    if unicodedata.category(ch) == "Nd":
        return str(unicodedata.digit(ch))
    name = unicodedata.name(ch, "")
    if not name.startswith(("LATIN ", "NEGATIVE CIRCLED LATIN ", "NEGATIVE SQUARED LATIN ")) or " LETTER " not in name:
        return None
    tail = name.split(" LETTER ", 1)[1].replace("SMALL CAPITAL ", "").split(" WITH ")[0]
    return tail.lower() if len(tail) == 1 and "A" <= tail <= "Z" else None


@lru_cache(maxsize=65536)
def _non_starters(ch: str) -> tuple[int, int, bool]:
    """What ``ch`` adds to a run of combining characters (UAX #15's stream-safe count): the non-starters its
    compatibility decomposition begins with, those it ends with, and whether it is non-starters only. A spacing
    mark of canonical class above 0 (musical symbols' stems, U+1D165) counts as an accent does, and a character
    that decomposes into marks alone (Tibetan U+0F73) as its marks: normalisation reorders a run of any of
    them, in time quadratic in the run. A mark of class 0 counts too (fold drops it all the same)."""
    parts = unicodedata.normalize("NFKD", ch)

    def non_starter(c: str) -> bool:
        return unicodedata.combining(c) != 0 or unicodedata.category(c) in _MARKS

    lead = next((i for i, c in enumerate(parts) if not non_starter(c)), len(parts))
    if lead == len(parts):
        return lead, lead, True
    trail = next((i for i, c in enumerate(reversed(parts)) if not non_starter(c)), 0)
    return lead, trail, False


def stream_safe(text: str) -> str:
    """``text`` with every run of combining characters (``_non_starters``) cut to MAX_MARKS: what Unicode's
    normalisation then reads in linear time. One pass; ASCII text is returned as it is."""
    if text.isascii():
        return text
    # Only a character of non-starters alone is ever cut: a text with none (most text, any script) is returned as it
    # is after one look at each of its distinct characters, not one at each character.
    if not any(_non_starters(ch)[2] for ch in set(text) if ch >= "\x80"):
        return text
    kept: list[str] = []
    run = 0
    for ch in text:
        if ch < "\x80":
            kept.append(ch)
            run = 0
            continue
        lead, trail, whole = _non_starters(ch)
        if whole:
            run += lead
            if run > MAX_MARKS:
                continue
        else:
            run = trail
        kept.append(ch)
    return "".join(kept)


def fold(text: str) -> str:
    """``text`` as the rules read it: invisible characters dropped, combining marks dropped (``cúrl`` reads
    as ``curl``), NFKC, ASCII look-alikes for confusable letters, ASCII digits for every script's. For display
    never: a fold mixes scripts (UTS #39 says the same of its skeletons). One pass; runs of combining characters
    (``_non_starters``) are cut to MAX_MARKS before Unicode's normalisation, whose reordering of a run is
    quadratic."""
    text = str(text)
    if text.isascii() and not _ASCII_UNSEEN.search(text):
        return text
    # Each step looks each distinct character up once and rewrites the text in C (``_rewrite``), not with a Python
    # step per character: a long text costs the set of its characters and a few passes.
    seen = stream_safe(_rewrite(text, {ch: "" for ch in set(text) if not " " <= ch < "\x7f" and _unseen(ch)}))
    # A look-alike that normalisation would turn into a letter that is none (Greek lunate sigma, c to the table,
    # becomes final sigma): read as the table says first (a review).
    seen = _rewrite(seen, _before_normalising())  # two characters: a str.replace each, in C
    decomposed = unicodedata.normalize("NFKD", seen)
    marks = {c: "" for c in set(decomposed) if c >= "\x80" and unicodedata.category(c) in _MARKS}
    normal = unicodedata.normalize("NFKC", _rewrite(decomposed, marks))
    if normal.isascii():
        return normal
    table = _ascii_lookalikes()
    chained = _chained()
    ascii_for: dict[str, str] = {}
    through: dict[str, str] = {}
    for ch in set(normal):
        if ch >= "\x80":
            mapped = table.get(ch)
            if ch in chained and mapped is not None:
                through[ch] = mapped
                continue
            ascii_for[ch] = mapped if mapped is not None else (_by_name(ch) or ch)
    if through:
        # A letter read through a chain (Cyrillic te, Greek kappa) is its ASCII letter only in a word that holds
        # ASCII letters (`kesтrel`): a word of its own script stays as it is, so that `вот` is no `bot` for a
        # forget of "bot" (a review). Each word once: linear.
        def word(m: re.Match[str]) -> str:
            w = m.group(0)
            if w.isascii() or through.keys().isdisjoint(w) or _ASCII_LETTER.search(w) is None:
                return w
            return _rewrite(w, through)

        normal = _WORD.sub(word, normal)
    return _rewrite(normal, {ch: to for ch, to in ascii_for.items() if to != ch})


@lru_cache(maxsize=1)
def _before_normalising() -> dict[str, str]:
    """The characters the confusables table reads as one ASCII letter whose compatibility form reads as none."""
    out = {}
    for ch, to in _ascii_lookalikes().items():
        if len(to) == 1 and to.isascii() and to.isalpha():
            normal = unicodedata.normalize("NFKC", ch)
            single = len(normal) == 1
            if single and normal != ch and normal >= "\x80" and normal not in _ascii_lookalikes() and _by_name(normal) is None:
                out[ch] = to
    return out


def compatible(text: str) -> str:
    """``text`` in its compatibility form (NFKC) as ``fold`` makes it before its own steps: runs of marks cut, and the
    look-alikes normalisation would turn into letters that read as no ASCII one read first (a lunate sigma as `c`,
    where NFKC gives a final sigma). What is cut from this reads, once folded, as the same cut from the fold does."""
    return unicodedata.normalize("NFKC", _rewrite(stream_safe(str(text)), _before_normalising()))


_WORD = re.compile(r"[^\W_]+")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def unseen_as_space(text: str) -> str:
    """``text`` with each character ``fold`` drops as unseen (a zero-width space, a soft hyphen, a control) read as a
    space instead: where such a character stands between words, the words stay apart ("quokka\u200bwombat" is two
    words here, one after ``fold``). One rewrite in C, as ``fold``'s first step."""
    text = str(text)
    if text.isascii() and not _ASCII_UNSEEN.search(text):
        return text
    return _rewrite(text, {ch: " " for ch in set(text) if not " " <= ch < "\x7f" and _unseen(ch)})


# What shows as a blank but ``fold`` drops as unseen (a braille blank, Hangul fillers): a space to the frame rules,
# where a frame's words stand apart (`Claude:\u2800the lockfile ...`).
_BLANK_LOOKING = frozenset("\u2800\u3164\u115f\u1160\uffa0")
# Of a colon's look-alikes (UTS #39's, and the colons of scripts a frame may be spoofed in), not another script's full
# stop or word space (Armenian U+0589, a Devanagari or Gujarati visarga, Ethiopic U+1361), which end a person's own
# sentences and divide their words.
_COLON_LOOKING_EXTRA = frozenset("\u02d0\u02f8\u05c3\u0703\u1804\u2236\u2982\ua6f4\ua789\ufe13\ufe55")
_NOT_COLONS = frozenset("\u0589\u0903\u0a83\u1361\u1803\u1809")  # and the Mongolian and Manchu full stops


@lru_cache(maxsize=1)
def _colon_looking() -> frozenset[str]:
    table = _ascii_lookalikes()
    return frozenset({ch for ch, to in table.items() if to == ":"} | _COLON_LOOKING_EXTRA) - _NOT_COLONS


@lru_cache(maxsize=8192)
def _frame_char(ch: str) -> str:
    if ch in _BLANK_LOOKING or unicodedata.category(ch) == "Zs":
        return " "
    if _unseen(ch):
        return ""
    category = unicodedata.category(ch)
    if category in _MARKS:
        return ""  # a combining mark: `wrọte` is read as `wrote` (another script's letters stay its own)
    code = ord(ch)
    if 0xFF01 <= code <= 0xFF5E:
        return chr(code - 0xFEE0)  # full-width ASCII
    if ch in _colon_looking():
        return ":"
    if category[0] == "L" or category == "Nl":
        # A letter's compatibility form without its marks where that is an ASCII letter (mathematical letters, Roman
        # numerals: `ⅿ`; an accented capital: `Ç` as `C`, as `C` and a combining cedilla are); else the table's
        # look-alike; else the Latin letter its name says (small capitals: `ʟ`). The table reads every capital I
        # look-alike as `l`: a capital stays a capital (`AІ:` with a Cyrillic І is `AI:`).
        compat = "".join(c for c in unicodedata.normalize("NFKD", ch) if unicodedata.category(c) not in _MARKS)
        if len(compat) == 1 and compat.isascii() and compat.isalpha():
            return compat
        table = _ascii_lookalikes()
        # the table's look-alike of the letter, or of its letter without marks (`ό`, `ё`: a review)
        mapped = table.get(ch) or (table.get(compat) if len(compat) == 1 else None) or _by_name(ch)
        if mapped is not None and mapped.isascii() and mapped.isalpha():
            return "I" if ch.isupper() and mapped == "l" else mapped
    return ch


def frame_form(text: str) -> str:
    """``text`` as the rules that tell a frame or a pasted document's shape read it (bead.core.remember,
    bead.capture.text): a character ``fold`` drops as unseen removed (a zero-width space), and a combining mark, a
    blank that shows as one a space, full-width ASCII as ASCII, a letter that looks like an ASCII letter as that
    letter (`wrоte` with a Cyrillic o, `ʟ`, `ⅿ`, `𝐦`), a colon's look-alike as a colon (``_frame_char``); nothing
    else. ``fold`` whole read another script's punctuation and dashes as ASCII (an Armenian full stop, a Devanagari
    visarga as ':', an en dash as '-'), so a person's own words looked quoted, and took seconds on a paste of
    megabytes of Cyrillic (a review). One character at a time (a text cut anywhere reads as its parts do), each
    distinct one looked up once, the text rewritten in C."""
    text = str(text)
    if text.isascii() and not _ASCII_UNSEEN.search(text):
        return text
    table = {ch: to for ch in set(text) if not " " <= ch < "\x7f" and (to := _frame_char(ch)) != ch}
    return _rewrite(text, table) if table else text


def _rewrite(text: str, table: dict[str, str]) -> str:
    """``text`` with each character that ``table`` holds replaced by its value (non-ASCII characters only, or
    deletions: no value holds a character another replacement looks for). A few by str.replace, a pass each; more
    by one str.translate (a dictionary lookup per character, many times a pass's cost per character)."""
    if len(table) <= 8:
        for ch, to in table.items():
            text = text.replace(ch, to)
        return text
    return text.translate({ord(ch): to for ch, to in table.items()})


@lru_cache(maxsize=65536)
def fold_char(ch: str) -> str:
    """One character as ``fold`` reads it (empty for one it drops). The same as ``fold`` on a text but where
    Unicode's normalisation joins characters (a letter and a combining mark, which the fold drops anyway)."""
    if " " <= ch < "\x7f":
        return ch
    if _unseen(ch) or unicodedata.category(ch) in _MARKS:
        return ""
    if not unicodedata.decomposition(ch) and ch not in _ascii_lookalikes() and _by_name(ch) is None:
        return ch  # most letters of most scripts (CJK ideographs, kana, Hangul): a fold keeps them as they are
    return fold(ch)


# ASCII look-alikes within ASCII (UTS #39 maps these too): what a key reader confuses.
_KEY_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))
_KEY_SINGLES = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})
_KEY_SEPARATORS = frozenset("._-")
_SEPARATORS_OUT = str.maketrans("", "", "._-")
SKELETON_FORM = "4"  # what the index's stored skeletons were made by: 4 leaves every separator out (bead.index.db)


def skeleton(text: str) -> str:
    """What two keys that look alike share: the fold, case-folded, without the separators . _ - (``deploy-host``,
    ``deploy--host``, ``deploy_host`` and ``deployhost`` read alike, as ``e-d-i-t-o-r`` and ``editor`` do), with the
    ASCII look-alikes read as one (0 as o; 1, i and | as l; rn as m, vv as w, cl as d). Two keys of one skeleton
    that ``versions_differ`` are not look-alikes."""
    out = fold(text).casefold().translate(_SEPARATORS_OUT)
    for pair, single in _KEY_PAIRS:
        out = out.replace(pair, single)
    return out.translate(_KEY_SINGLES)


def _digit_gaps(text: str) -> tuple[str, tuple[bool, ...]]:
    """``text`` case-folded without its separators, and for each place where two digits meet in it whether a
    separator stood there. One pass: linear."""
    kept: list[str] = []
    gaps: list[bool] = []
    sep = False
    for c in text.casefold():
        if c in _KEY_SEPARATORS:
            sep = True
            continue
        if kept and kept[-1].isdigit() and c.isdigit():
            gaps.append(sep)
        kept.append(c)
        sep = False
    return "".join(kept), tuple(gaps)


def versions_differ(a: str, b: str) -> bool:
    """Whether two keys of one skeleton are the same letters and digits told apart only by where separators stand
    between two digits: versions (``release-1.10``, ``release-1.1.0``, ``release-11.0``; ``step-1-2`` and
    ``step-12``), which a reader tells apart. A letter read as a digit (``release-l.0``), a separator beside a
    letter (``api-2``, ``api2``) or a doubled one (``release-1..10``) is no such difference."""
    ka, ga = _digit_gaps(a)
    kb, gb = _digit_gaps(b)
    return ka == kb and ga != gb


def strings_in(value: Any) -> list[str]:
    """Every string in a decoded JSON value, in order (an object's values, not its keys). A walk with a stack of its
    own, not Python's: a tool call nested 500 deep, which the JSON parser reads, ended a recursive walk in a
    RecursionError, and the conversation's request went out without its memory (an outside attack)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return out


# A lone surrogate as a decoded string holds it (from JSON's "\\ud83d", or a non-UTF-8 argument): no character, so
# UTF-8 cannot write it and RE2 cannot read it.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A terminal's control sequence, as a tool's coloured output holds them (grep --color, jq -C, a test runner's): CSI
# (ESC [ or its 8-bit form), OSC (ESC ], to its BEL or ST, or at most 1,000 characters), and the other ESC
# sequences. Each branch is bounded: linear time.
TERMINAL_ESCAPES = re.compile(
    r"\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]|\x9b[0-?]{0,64}[ -/]{0,16}[@-~]|\x1b\][^\x07\x1b]{0,1000}(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]{1,16}[0-~]|\x1b[@-_]"
)


# A UTF-16 surrogate escape as JSON writes it. One left-to-right pass takes an
# escaped backslash ("\\\\ud800" is a backslash, then "ud800"), a high and low
# pair (a character beyond the BMP), or a lone surrogate of either kind, in that
# order, so each escape is read where it starts. JavaScript strings may carry
# lone ones (a tool output cut inside an emoji, a transcript Node wrote); UTF-8
# cannot, and the regex engine and the raw log then fail on the text.
# Alternatives of fixed width: linear time.
_SURROGATE_ESCAPE = re.compile(
    r"(\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _replacement(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) else "\\ufffd"


def readable_json(text: str) -> str:
    """JSON ``text`` with each lone surrogate escape written as U+FFFD's (the same six characters long, so every
    offset holds), so what it decodes to is text UTF-8 and RE2 can read."""
    if "\\ud" in text or "\\uD" in text:
        return _SURROGATE_ESCAPE.sub(_replacement, text)
    return text
