"""Stored text, safe to show: on a terminal, in a file a person opens, in a value bead writes.

Everything bead stores may come from an attacker (a README the agent read,
a tool's output, a web page), and a terminal acts on what it is sent: an
escape sequence can move the cursor, clear the screen, retitle the window,
write to the clipboard (OSC 52), or hide text; a carriage return or
backspaces can overwrite what was printed; bidirectional overrides reorder
what the eye reads. ``visible`` shows every control character (C0, DEL, C1)
and every invisible character (bidi controls, zero-width characters, line
and paragraph separators, variation selectors, Hangul fillers) as its escape
(``\\x1b``, ``\\u202e``);
``one_line`` does the same on one line; ``json_text`` writes JSON with
those characters as ``\\u`` escapes; ``CONTROL`` finds the control characters
a written value may not hold.
Every layer uses these; this module imports nothing of bead's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from .textform import _ignorable, emoji_selector, stream_safe

# C0 controls but tab, line feed and carriage return; DEL; C1 controls.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})


def escaped_char(ch: str) -> str:
    """A character as the escape `visible` writes it (\\x1b, \\u202e, \\U000e0041)."""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, multiline: bool = False, tab: str = "    ") -> str:
    """``text`` with every control and invisible character shown as an escape (format characters, and those that
    show as nothing or blank space: variation selectors, Hangul fillers, the braille blank, the grapheme joiner),
    and combining marks past MAX_MARKS in a row (a stack of them smears over what it sits on); line breaks pass
    when ``multiline``, tabs as ``tab``."""
    out = []
    marks = 0
    prev = ""
    for ch in str(text):
        code = ord(ch)
        if emoji_selector(prev, ch):  # ❤️, 1️⃣; any other selector hides text and is shown escaped
            out.append(ch)
            prev = ch
            continue
        prev = ch
        if ch == "\n" and multiline:
            out.append(ch)
            marks = 0
        elif ch == "\t":
            out.append(tab)
            marks = 0
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(escaped_char(ch))
        elif code < 0x300 and code != 0xAD:  # Latin-1 and Latin letters; the soft hyphen is a format character
            out.append(ch)
            marks = 0
        else:
            cat = unicodedata.category(ch)
            if cat in _HIDDEN or _unseen(code):
                out.append(escaped_char(ch))
            elif cat in _MARKS:
                marks += 1
                out.append(escaped_char(ch) if marks > MAX_MARKS else ch)
            else:
                out.append(ch)
                marks = 0
    return "".join(out)


_SPACING = re.compile(r"(?:[ \t\n]|\r\n)+")


def cut_at_word(text: str, limit: int, mark: str = "") -> str:
    """``text`` cut to at most ``limit`` characters (``mark`` included, after the cut) at the last space before the
    limit, not inside a word: a cut token (`QK7-ZEBRA-PLINTH-`) is part of a value no forget could find again. A
    text with no space in its first ``limit`` characters is cut where it must be."""
    if len(text) <= limit:
        return text
    head = text[: limit - len(mark)]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return (head[:space].rstrip() if space > 0 else head) + mark


def one_line(text: str, width: int | None = None) -> str:
    """``text`` on one terminal line: runs of spaces, tabs and line breaks as one space, every other control and
    invisible format character (a lone carriage return, U+2028 included) as its escape (``visible``), cut to
    ``width`` characters with an ellipsis."""
    flat = visible(_SPACING.sub(" ", str(text)).strip(" "))  # str.strip() would drop U+2028, U+001C-001F, U+0085
    return flat if width is None or len(flat) <= width else flat[: width - 1] + "…"


def visible_data(data: Any) -> Any:
    """``data`` (JSON-like: dicts, lists, strings, numbers) with every string, keys included, as ``visible`` shows
    it (line breaks and tabs kept): a structured result a harness parses and may print holds no control or
    invisible format character as itself, as ``json_text`` writes none in its text."""
    if isinstance(data, str):
        return visible(data, multiline=True, tab="\t")
    if isinstance(data, dict):
        return {visible_data(k): visible_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [visible_data(v) for v in data]
    return data


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0xA0 or unicodedata.category(ch) in _HIDDEN or _unseen(code):
        if code < 0x10000:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return ch


def json_text(data: object, indent: int | None = None) -> str:
    """``data`` as JSON for a terminal or a file a person opens: readable non-ASCII text stays as it is, but DEL,
    the C1 controls and every invisible format character (bidi controls, zero-width characters, line and paragraph
    separators) are written as ``\\uXXXX`` escapes, as json.dumps already writes C0 controls: the same JSON value,
    with nothing in it a terminal acts on."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    # Outside its strings JSON is ASCII, so every character matched here is inside a string, where an escape
    # stands for the same character.
    return re.sub(r"[^\x00-\x7e]", _json_escape, text)


# Characters that show as nothing, or as blank space, without being a control or format character:
# variation selectors (a known way to hide text in plain sight), Hangul fillers, the braille blank.
_BLANK = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800})
_MARKS = frozenset({"Mn", "Me"})
MAX_MARKS = 2  # combining marks in a row (more stack into a smear, or hide what they sit on)


def _blank(code: int) -> bool:
    return code in _BLANK or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _unseen(code: int) -> bool:
    """Shown as nothing or blank space though no control or format character: ``_blank``, and what the rules'
    normal form drops as ignorable (the combining grapheme joiner, Khmer inherent vowels, Mongolian variation
    selectors, unassigned format and tag code points: ``bead.textform._IGNORABLE``)."""
    return _blank(code) or (code >= 0x34F and _ignorable(code))


_BREAKS = str.maketrans("\t\n\r", "   ")


def plain_words(text: str) -> list[str]:
    """The words of ``text`` as one line of what a reader sees: NFC, control, format and invisible
    characters dropped (a tab or line break separates words), at most MAX_MARKS combining marks in a row."""
    text = str(text)
    if text.isascii() and (text.isprintable() or text.translate(_BREAKS).isprintable()):
        return text.split()  # nothing to drop: ASCII without a control character (but tab and line breaks)
    out: list[str] = []
    marks = 0
    # NFC reorders a run of combining characters in time quadratic in the run: cut each run first.
    for ch in unicodedata.normalize("NFC", stream_safe(text)):
        cat = unicodedata.category(ch)
        if ch in "\t\n\r" or cat in ("Zl", "Zp"):
            out.append(" ")
            marks = 0
            continue
        if cat in _HIDDEN or _blank(ord(ch)):
            continue
        if cat in _MARKS:
            marks += 1
            if marks > MAX_MARKS:
                continue
        else:
            marks = 0
        out.append(ch)
    return "".join(out).split()


def hidden_characters(text: str) -> bool:
    """Whether ``text`` holds a character ``plain_words`` would drop (a control, format or invisible one,
    or a run of combining marks), other than spaces."""
    return " ".join(plain_words(text)) != " ".join(str(text).split())
