"""Cues: what the turn is about, by who said it.

The newest user message (skipping trailing ``role: system`` messages) plus
the text and tool calls of the assistant message before it. Harness
reminders, bead's own blocks, tool labels and JSON field names are removed;
tool results are cut to 1,500 characters. Weights follow the reference
design: the person's text 1, the assistant's text and tool input 0.6, tool
output 0.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..capture.text import clean, content_blocks

TOOL_RESULT_CHARS = 1500
WEIGHTS = {"user": 1.0, "assistant": 0.6, "tool_input": 0.6, "tool_output": 0.3}


@dataclass(frozen=True)
class Cue:
    source: str   # user | assistant | tool_input | tool_output
    text: str

    @property
    def weight(self) -> float:
        return WEIGHTS[self.source]


def newest_user_index(messages: list) -> int | None:
    """The newest user message, skipping trailing system messages (and an assistant prefill)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        role = m.get("role") if isinstance(m, dict) else None
        if role == "user":
            return i
        if role not in ("system", "assistant"):
            return None
    return None


def _strings(value) -> list[str]:
    """String values of a tool input, without its field names."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def extract(messages: list, index: int | None = None) -> list[Cue]:
    index = newest_user_index(messages) if index is None else index
    if index is None:
        return []
    cues: list[Cue] = []
    for b in content_blocks(messages[index]):
        if isinstance(b, str):
            text = clean(b)
            if text:
                cues.append(Cue("user", text))
        elif isinstance(b, dict) and b.get("type") == "text":
            text = clean(b.get("text", ""))
            if text:
                cues.append(Cue("user", text))
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            c = b.get("content", "")
            text = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [] if isinstance(x, dict))
            text = clean(text)[:TOOL_RESULT_CHARS]
            if text:
                cues.append(Cue("tool_output", text))
    j = index - 1
    while j >= 0 and isinstance(messages[j], dict) and messages[j].get("role") == "system":
        j -= 1
    if j >= 0 and isinstance(messages[j], dict) and messages[j].get("role") == "assistant":
        for b in content_blocks(messages[j]):
            if isinstance(b, str) and clean(b):
                cues.append(Cue("assistant", clean(b)))
            elif isinstance(b, dict) and b.get("type") == "text" and clean(b.get("text", "")):
                cues.append(Cue("assistant", clean(b.get("text", ""))))
            elif isinstance(b, dict) and b.get("type") == "tool_use":
                text = " ".join(_strings(b.get("input", {})))
                if text.strip():
                    cues.append(Cue("tool_input", text))
    return cues


def person_text(cues: list[Cue]) -> str:
    return "\n".join(c.text for c in cues if c.source == "user")
