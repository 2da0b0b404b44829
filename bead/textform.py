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

import unicodedata
from functools import lru_cache

# Characters that show as nothing or as blank space without being a format or control character.
_BLANK = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800})
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs", "Co", "Zl", "Zp"})
_KEPT_CONTROLS = frozenset("\t\n\r")


def _unseen(ch: str) -> bool:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return ch not in _KEPT_CONTROLS
    if code in _BLANK or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def invisible(text: str) -> list[str]:
    """The invisible or reordering characters ``text`` holds, as ``U+XXXX`` names (empty when none)."""
    seen: dict[str, None] = {}
    for ch in str(text):
        if ord(ch) >= 0x7F or (ord(ch) < 0x20 and ch not in _KEPT_CONTROLS):
            if _unseen(ch):
                seen.setdefault(f"U+{ord(ch):04X}", None)
    return list(seen)


@lru_cache(maxsize=1)
def _ascii_lookalikes() -> dict[str, str]:
    """Each non-ASCII character Unicode's confusables table maps to an ASCII look-alike, and that look-alike."""
    from confusable_homoglyphs import confusables

    out: dict[str, str] = {}
    for ch, entries in confusables.confusables_data.items():
        if len(ch) != 1 or ord(ch) < 0x80:
            continue
        for e in entries:
            target = e.get("c", "")
            if target and all(ord(x) < 0x80 for x in target):
                out[ch] = target
                break
    return out


def fold(text: str) -> str:
    """``text`` as the rules read it: invisible characters dropped, NFKC, ASCII look-alikes for confusable
    letters. For display never: a fold mixes scripts (UTS #39 says the same of its skeletons)."""
    text = str(text)
    if text.isascii() and not any(ch < " " and ch not in _KEPT_CONTROLS or ch == "\x7f" for ch in text):
        return text
    kept = "".join(ch for ch in text if not _unseen(ch))
    normal = unicodedata.normalize("NFKC", kept)
    if normal.isascii():
        return normal
    table = _ascii_lookalikes()
    return "".join(table.get(ch, ch) for ch in normal)


def skeleton(text: str) -> str:
    """What two strings that look alike share: the fold, case-folded, with 0 read as o and 1 as l (the
    digits UTS #39 maps to letters)."""
    return fold(text).casefold().translate(_DIGIT_LOOKALIKES)


_DIGIT_LOOKALIKES = str.maketrans({"0": "o", "1": "l"})
