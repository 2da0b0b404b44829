"""The pinned block: standing memory at the end of a conversation's system prompt.

The person's own facts (user, feedback) and the active project's, only those
the person stated, accepted or pinned (a model's inference never stands in
every conversation unaccepted; ``opening_facts`` gives the opening's strong
inferred matches to the first request's cue block instead), chosen by
what predicts use (bead.recall.standing: the pinned flag, what the
conversation opens with, the person's word and the type, recent use, recency
last), under a token budget. The proxy builds it on a conversation's first
request and freezes it, so the prompt cache holds.
"""

from __future__ import annotations

from typing import Any

from ..recall import render, standing
from .conversation import Conversation
from .memory import Memory


def pinned_block(mem: Memory, project: str | None, budget_tokens: int, conv: Conversation | None = None,
                 policy: str | None = None) -> tuple[str | None, list[str]]:
    """(the rendered block or None when nothing fits, the ids it holds); ``conv`` is the conversation's
    first request, whose opening steers the choice."""
    policy = policy or mem.config.proxy.pinned_select
    rows = standing.choose(mem.index, project, standing.opening_of(conv), policy=policy,
                           uses=mem.recent_uses() if policy != "recency" else None, budget_tokens=budget_tokens)
    text, n = render.block("pinned", render.PINNED_HEADER, [render.fact_line(r) for r in rows], budget_tokens)
    return text, [r["id"] for r in rows[:n]]


def opening_facts(mem: Memory, project: str | None, conv: Conversation | None) -> list[dict[str, Any]]:
    """Inferred facts the conversation's opening matches strongly, for its first cue block (fact rows)."""
    if conv is None or mem.config.proxy.pinned_select == "recency":
        return []
    return standing.opening_inferred(mem.index, project, standing.opening_of(conv))
