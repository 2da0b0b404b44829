"""Stored text, safe to print on a terminal (bead.display says why and how)."""

from __future__ import annotations

from ..display import visible


def safe(text: str, multiline: bool = False) -> str:
    """``text`` with every control and invisible format character shown as an escape (tabs as spaces)."""
    return visible(text, multiline)


def one_line(text: str, limit: int | None = None) -> str:
    """``safe`` on one line (line breaks shown as ``\\n``), cut to ``limit`` characters."""
    flat = safe(str(text).replace("\r\n", "\n")).replace("\\x0a", "\\n")
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"
