"""Text of Messages API content, shared by capture, cues and the proxy.

Own tags are stripped (injected memory must never come back as evidence) and
harness reminders are dropped.
"""

from __future__ import annotations

import json
import re

OWN = re.compile(r"<bead-memory[\s>].*?</bead-memory>\s*", re.S)
REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)


def strip_own(text: str) -> str:
    return OWN.sub("", text)


def clean(text: str) -> str:
    return REMINDER.sub("", strip_own(text)).strip()


def content_blocks(message) -> list:
    c = message.get("content", "") if isinstance(message, dict) else ""
    return [c] if isinstance(c, str) else list(c or [])


def block_text(block) -> str:
    """The text a content block carries, without markers or field names."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        c = block.get("content", "")
        return c if isinstance(c, str) else "\n".join(block_text(x) for x in c or [])
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), sort_keys=True, ensure_ascii=False)}"
    return ""
