"""The pinned block: standing memory at the end of a conversation's system prompt.

The person's own facts (user, feedback) and the active project's, only those
the person stated, accepted or pinned (a model's inference never stands in
every conversation unaccepted; ``standing_memory`` gives the opening's strong
inferred matches to the first request's cue block instead), chosen by
what predicts use (bead.recall.standing: the pinned flag, what the
conversation opens with, the person's word and the type, recent use, recency
last), under a token budget. The proxy builds it on a conversation's first
request and freezes it, so the prompt cache holds.
"""

from __future__ import annotations

from typing import Any

from ..conversation import Conversation
from ..recall import render, standing
from ..recall.gate import FactStats
from .memory import Memory


def standing_memory(
    mem: Memory,
    project: str | None,
    budget_tokens: int,
    conv: Conversation | None = None,
    policy: str | None = None,
    stats: FactStats | None = None,
    deadline: float | None = None,
    bare_names: bool = True,
    digests: dict[str, str] | None = None,
) -> tuple[str | None, list[str], list[dict[str, Any]]]:
    """(the rendered pinned block or None when nothing fits, the ids it holds, the inferred facts the
    opening matches strongly, for the first request's cue block); ``conv`` is the conversation's first
    request, whose opening steers the choice; ``deadline`` (``time.monotonic()``) bounds the wait for the
    opening's vector (bead[semantic]) on the proxy's path. The block names ``project``'s facts by their bare
    names unless ``bare_names`` is off (bead.core.state.ConversationState.claim_names). ``digests``, where given, is
    filled with what the block shows of each fact (render.shown_digest), for the conversation's state."""
    policy = policy or mem.config.proxy.pinned_select
    choice = standing.select(
        mem.index,
        project,
        standing.opening_of(conv, stats, project),
        policy=policy,
        uses=mem.recent_uses() if policy != "recency" else None,
        budget_tokens=budget_tokens,
        deadline=deadline,
    )
    names = project if bare_names else None
    # A row whose key moved on since the index last saw it, or whose file is gone (the index behind the files), holds
    # a value the person replaced: left out, and the next candidate takes its place. Only the rows that fit are
    # looked at (a pass more where one was left out).
    rows = choice.rows
    while True:
        lines = render.lines_within(render.PINNED_HEADER, rows, lambda r: render.fact_line(r, names), budget_tokens)
        text, n = render.block("pinned", render.PINNED_HEADER, lines, budget_tokens)
        stale = mem.behind(rows[:n])
        if not stale:
            break
        rows = [r for r in rows if r["id"] not in stale]
    gone = mem.behind(choice.inferred) if choice.inferred else set()
    inferred = [r for r in choice.inferred if r["id"] not in gone]
    if digests is not None:
        digests.update((r["id"], render.shown_digest(r)) for r in rows[:n])
    return text, [r["id"] for r in rows[:n]], inferred


def pinned_block(
    mem: Memory, project: str | None, budget_tokens: int, conv: Conversation | None = None, policy: str | None = None
) -> tuple[str | None, list[str]]:
    """(the rendered block or None when nothing fits, the ids it holds): ``standing_memory`` without the
    inferred facts."""
    text, ids, _ = standing_memory(mem, project, budget_tokens, conv, policy)
    return text, ids
