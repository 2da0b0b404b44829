"""Capture: turns of a conversation into the raw log.

The text of a turn is rendered from its typed parts: the person's text,
tool results marked ``[tool_result]``, attachments as ``[image]`` or
``[document]``, the assistant's text and tool calls. Harness text is left
out; thinking never reaches the model's parts. The raw log's append path
then runs the secret scan and takes its lock.
"""

from __future__ import annotations

import json

from ..store.rawlog import Turn as RawTurn
from .conversation import Conversation, Identity, Message, Source, Turn
from .memory import Memory


def turn_text(message: Message) -> str:
    parts = []
    for p in message.parts:
        if p.source is Source.HARNESS:
            continue
        if p.kind == "tool_result":
            parts.append(f"[tool_result{' error' if p.error else ''}]\n{p.text}")
        elif p.kind in ("image", "document"):
            parts.append(f"[{p.kind}]")
        elif p.kind == "tool_use":
            parts.append(f"[tool_use {p.name}] {json.dumps(p.data if p.data is not None else {}, ensure_ascii=False)}")
        else:
            parts.append(p.text)
    return "\n\n".join(p for p in parts if p)


def request_turns(conv: Conversation, ident: Identity, start: int) -> list[Turn]:
    """The turns of messages ``start``.. that have text (harness system messages are context, not turns)."""
    out = []
    for m in conv.messages[start:]:
        if m.role not in ("user", "assistant"):
            continue
        text = turn_text(m)
        if text:
            out.append(Turn(m.role, text, {"message": m.index, **_project(ident)}))
    return out


def _project(ident: Identity) -> dict[str, str]:
    return {"project": ident.project} if ident.project else {}


def capture(mem: Memory, ident: Identity, turns: list[Turn]) -> list[RawTurn]:
    """Append ``turns`` to the conversation's raw log (secret scan, lock, index) at the memory's clock."""
    now = mem.clock()
    return mem.append_turns(ident.session, [(t.role, t.text, now, None, t.flags) for t in turns])


def assistant_turn(message: Message, ident: Identity, flags: dict[str, object]) -> Turn | None:
    """The assistant's answer as a turn, or None when it carried no text (only thinking, say)."""
    text = turn_text(message)
    if not text:
        return None
    return Turn("assistant", text, {"message": message.index, **_project(ident), **flags})
