"""Tags that never count as conversation: bead's own blocks and harness reminders.

Injected memory must never come back as evidence, so ``<bead-memory>``
blocks are removed from captured text; ``<system-reminder>`` blocks are the
harness talking, not the person. Both are found with ``str.find`` in one
pass: an opening tag that is never closed cannot make the scan quadratic, as
a ``.*?`` regex to a missing closing tag would.
"""

from __future__ import annotations

import re

_WS = re.compile(r"\s*")
_OWN_OPEN = "<bead-memory"
_OWN_CLOSE = "</bead-memory>"
_REMINDER_OPEN = "<system-reminder>"
_REMINDER_CLOSE = "</system-reminder>"


def _spans(text: str, opening: str, closing: str, need_boundary: bool) -> list[tuple[int, int]]:
    """(start, end) of each ``opening ... closing`` block plus the whitespace after it."""
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        start = text.find(opening, pos)
        if start == -1:
            return out
        after = start + len(opening)
        if need_boundary and not (after < len(text) and (text[after] == ">" or text[after].isspace())):
            pos = after
            continue
        close = text.find(closing, after)
        if close == -1:
            return out  # no closing tag anywhere after: nothing further can match
        end = _WS.match(text, close + len(closing))
        out.append((start, end.end() if end else close + len(closing)))
        pos = out[-1][1]


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts.append(text[last:start])
        last = end
    parts.append(text[last:])
    return "".join(parts)


def strip_own(text: str) -> str:
    """``text`` without bead's own ``<bead-memory>`` blocks."""
    if _OWN_OPEN not in text:
        return text
    return _cut(text, _spans(text, _OWN_OPEN, _OWN_CLOSE, need_boundary=True))


def reminders(text: str) -> list[str]:
    """The harness's ``<system-reminder>`` blocks in ``text``."""
    if _REMINDER_OPEN not in text:
        return []
    return [text[s:e].strip() for s, e in _spans(text, _REMINDER_OPEN, _REMINDER_CLOSE, need_boundary=False)]


def clean(text: str) -> str:
    """The conversation's own words: own blocks and harness reminders removed, ends stripped."""
    text = strip_own(text)
    if _REMINDER_OPEN in text:
        text = _cut(text, _spans(text, _REMINDER_OPEN, _REMINDER_CLOSE, need_boundary=False))
    return text.strip()
