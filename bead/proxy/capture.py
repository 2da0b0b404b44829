"""Turning requests and responses into raw-log turns.

Own tags are stripped (injected memory must never come back as evidence),
harness reminders are dropped, thinking is skipped. The raw log's append path
then runs the secret scan and takes the lock.
"""

from __future__ import annotations

import json
import re
import zlib

from ..capture.text import clean, content_blocks, strip_own


def _tool_result_text(block: dict) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "\n".join(x.get("text", "") if isinstance(x, dict) and x.get("type") == "text" else
                     ("[image]" if isinstance(x, dict) and x.get("type") == "image" else "") for x in c or [])


def user_text(message: dict) -> str:
    parts = []
    for b in content_blocks(message):
        if isinstance(b, str):
            parts.append(clean(b))
        elif isinstance(b, dict):
            kind = b.get("type")
            if kind == "text":
                parts.append(clean(b.get("text", "")))
            elif kind == "tool_result":
                flag = " error" if b.get("is_error") else ""
                parts.append(f"[tool_result{flag}]\n{clean(_tool_result_text(b))}")
            elif kind in ("image", "document"):
                parts.append(f"[{kind}]")
    return "\n\n".join(p for p in parts if p)


def assistant_text(blocks: list) -> str:
    parts = []
    for b in blocks:
        if isinstance(b, str):
            parts.append(strip_own(b).strip())
        elif isinstance(b, dict):
            if b.get("type") == "text":
                parts.append(strip_own(b.get("text", "")).strip())
            elif b.get("type") in ("tool_use", "server_tool_use"):
                parts.append(f"[tool_use {b.get('name', '')}] {json.dumps(b.get('input', {}), ensure_ascii=False)}")
            # thinking and redacted_thinking are skipped on purpose
    return "\n\n".join(p for p in parts if p)


class ResponseCollector:
    """Rebuilds the assistant turn from the bytes the harness received."""

    def __init__(self, content_type: str, content_encoding: str | None):
        self.sse = "text/event-stream" in (content_type or "")
        enc = (content_encoding or "identity").lower()
        self.decoder = None
        self.supported = enc in ("identity", "gzip", "deflate")
        if enc == "gzip":
            self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self.decoder = zlib.decompressobj()
        self.buf = b""
        self.blocks: dict[int, dict] = {}
        self.json_chunks: dict[int, list[str]] = {}
        self.done = False
        self.error = False

    def feed(self, chunk: bytes) -> None:
        if not self.supported:
            return
        data = self.decoder.decompress(chunk) if self.decoder else chunk
        self.buf += data
        if self.sse:
            self._drain_events()

    def _drain_events(self) -> None:
        while True:
            m = re.search(rb"\r?\n\r?\n", self.buf)
            if not m:
                return
            raw, self.buf = self.buf[:m.start()], self.buf[m.end():]
            data_lines = [ln[5:].lstrip() for ln in raw.splitlines() if ln.startswith(b"data:")]
            if not data_lines:
                continue
            try:
                self._event(json.loads(b"\n".join(data_lines)))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue

    def _event(self, ev: dict) -> None:
        kind = ev.get("type")
        if kind == "content_block_start":
            self.blocks[ev["index"]] = dict(ev.get("content_block") or {})
            if self.blocks[ev["index"]].get("type") in ("tool_use", "server_tool_use"):
                self.json_chunks[ev["index"]] = []
        elif kind == "content_block_delta":
            b = self.blocks.setdefault(ev["index"], {"type": "text", "text": ""})
            d = ev.get("delta") or {}
            if d.get("type") == "text_delta":
                b["text"] = b.get("text", "") + d.get("text", "")
            elif d.get("type") == "input_json_delta":
                self.json_chunks.setdefault(ev["index"], []).append(d.get("partial_json", ""))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            self.error = True

    def result(self) -> tuple[str, dict] | None:
        """(text, flags) of the assistant turn, or None when nothing usable arrived."""
        if not self.supported:
            return None
        if not self.sse:
            try:
                body = json.loads(self.buf.decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                return None
            if not isinstance(body, dict) or body.get("type") != "message":
                return None
            text = assistant_text(body.get("content") or [])
            return (text, {}) if text else None
        for i, chunks in self.json_chunks.items():
            try:
                self.blocks[i]["input"] = json.loads("".join(chunks)) if chunks else {}
            except json.JSONDecodeError:
                self.blocks[i]["input"] = {"partial_json": "".join(chunks)}
        text = assistant_text([self.blocks[i] for i in sorted(self.blocks)])
        flags: dict = {}
        if self.error:
            flags["error"] = True
        if not self.done:
            flags["partial"] = True
        return (text, flags) if text else None
