"""Stored text, safe to print on a terminal.

Everything bead stores may come from an attacker (a README the agent read,
a tool's output, a web page), and a terminal acts on what it is sent: an
escape sequence can move the cursor, clear the screen, retitle the window,
write to the clipboard (OSC 52), or hide text; a carriage return or
backspaces can overwrite what was printed; bidirectional overrides reorder
what the eye reads. So every control character (C0, DEL, C1) and every
invisible format character (bidi controls, zero-width characters, line and
paragraph separators) is shown as a visible escape (``\\x1b``, ``\\u202e``)
instead of being sent; only line breaks (where a multi-line value is shown)
and tabs (as spaces) pass as themselves.
"""

from __future__ import annotations

import unicodedata

_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe(text: str, multiline: bool = False) -> str:
    """``text`` with every control and invisible format character shown as an escape."""
    out = []
    for ch in str(text):
        if ch == "\n" and multiline:
            out.append(ch)
        elif ch == "\t":
            out.append("    ")
        elif ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0 or unicodedata.category(ch) in _HIDDEN:
            out.append(_visible(ch))
        else:
            out.append(ch)
    return "".join(out)


def one_line(text: str, limit: int | None = None) -> str:
    """``safe`` on one line (line breaks shown as ``\\n``), cut to ``limit`` characters."""
    flat = safe(str(text).replace("\r\n", "\n")).replace("\\x0a", "\\n")
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"
