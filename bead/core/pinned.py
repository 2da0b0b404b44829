"""The pinned block: standing memory at the end of a conversation's system prompt.

The person's own facts (user, feedback) and the active project's, pinned
first, then the person's word, then the newest, under a token budget. The
proxy builds it on a conversation's first request and freezes it, so the
prompt cache holds.
"""

from __future__ import annotations

from ..recall import render
from .memory import Memory


def pinned_block(mem: Memory, project: str | None, budget_tokens: int) -> tuple[str | None, list[str]]:
    """(the rendered block or None when nothing fits, the ids it holds)."""
    rows = mem.index.pinned_candidates(project)
    text, n = render.block("pinned", render.PINNED_HEADER, [render.fact_line(r) for r in rows], budget_tokens)
    return text, [r["id"] for r in rows[:n]]
