"""Byte-preserving edits of a JSON request body.

The proxy never re-serialises a request: it finds the byte spans of the
values it needs (``system``, ``messages[i].content``) and inserts new blocks
next to them, so every existing byte, ``cache_control`` marker and the
attribution block stay exactly where the harness put them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"[^,\]}\s]+")
_STRUCT = re.compile(rb'["\[\]{}]')


class SpliceError(ValueError):
    """The body is not JSON of the shape the proxy can edit."""


def _ws(b: bytes, i: int) -> int:
    return _WS.match(b, i).end()


def skip_value(b: bytes, i: int) -> int:
    """End offset of the JSON value starting at (or after whitespace from) ``i``."""
    i = _ws(b, i)
    if i >= len(b):
        raise SpliceError("unexpected end of JSON")
    c = b[i:i + 1]
    if c == b'"':
        m = _STRING.match(b, i)
        if not m:
            raise SpliceError("unterminated string")
        return m.end()
    if c in (b"{", b"["):
        depth, j = 0, i
        while True:
            m = _STRUCT.search(b, j)
            if not m:
                raise SpliceError("unterminated object or array")
            ch = m.group()
            if ch == b'"':
                s = _STRING.match(b, m.start())
                if not s:
                    raise SpliceError("unterminated string")
                j = s.end()
                continue
            depth += 1 if ch in (b"{", b"[") else -1
            j = m.end()
            if depth == 0:
                return j
    m = _SCALAR.match(b, i)
    if not m:
        raise SpliceError(f"unexpected byte at offset {i}")
    return m.end()


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def of(self, b: bytes) -> bytes:
        return b[self.start:self.end]


def members(b: bytes, span: Span) -> dict[str, Span]:
    """Key -> value span of the JSON object at ``span`` (last key wins, as in json.loads)."""
    i = _ws(b, span.start)
    if b[i:i + 1] != b"{":
        raise SpliceError("not a JSON object")
    out: dict[str, Span] = {}
    i = _ws(b, i + 1)
    if b[i:i + 1] == b"}":
        return out
    while True:
        m = _STRING.match(b, i)
        if not m:
            raise SpliceError("object key is not a string")
        key = json.loads(m.group())
        i = _ws(b, m.end())
        if b[i:i + 1] != b":":
            raise SpliceError("missing ':' in object")
        vstart = _ws(b, i + 1)
        vend = skip_value(b, vstart)
        out[key] = Span(vstart, vend)
        i = _ws(b, vend)
        c = b[i:i + 1]
        if c == b"}":
            return out
        if c != b",":
            raise SpliceError("missing ',' in object")
        i = _ws(b, i + 1)


def elements(b: bytes, span: Span) -> list[Span]:
    i = _ws(b, span.start)
    if b[i:i + 1] != b"[":
        raise SpliceError("not a JSON array")
    out: list[Span] = []
    i = _ws(b, i + 1)
    if b[i:i + 1] == b"]":
        return out
    while True:
        end = skip_value(b, i)
        out.append(Span(_ws(b, i), end))
        i = _ws(b, end)
        c = b[i:i + 1]
        if c == b"]":
            return out
        if c != b",":
            raise SpliceError("missing ',' in array")
        i = _ws(b, i + 1)


def text_block(text: str) -> bytes:
    """A text content block, compact, non-ASCII raw: the form Claude Code writes."""
    return json.dumps({"type": "text", "text": text}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    data: bytes


def append_blocks(b: bytes, value: Span, blocks: list[bytes]) -> Edit:
    """An edit that appends ``blocks`` to a content value (array or string).

    A string value becomes ``[{"type":"text","text":<the same string bytes>}, ...]``:
    the original string bytes are kept verbatim inside the new block, so the
    same input always gives the same output.
    """
    joined = b",".join(blocks)
    raw = value.of(b)
    if raw.startswith(b'"'):
        return Edit(value.start, value.end, b'[{"type":"text","text":' + raw + b"}," + joined + b"]")
    if not raw.startswith(b"["):
        raise SpliceError("content is neither a string nor an array")
    close = value.end - 1  # the closing ]
    empty = not elements(b, value)
    return Edit(close, close, (b"" if empty else b",") + joined)


def apply(b: bytes, edits: list[Edit]) -> bytes:
    out = b
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[:e.start] + e.data + out[e.end:]
    return out


@dataclass
class Request:
    """The spans of one Messages API body that the proxy reads or edits."""

    body: bytes
    data: dict
    top: dict[str, Span]
    messages: list[Span]
    roles: list[str]

    @classmethod
    def parse(cls, body: bytes) -> "Request":
        try:
            data = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise SpliceError("body is not UTF-8") from None
        except json.JSONDecodeError as exc:
            raise SpliceError(f"body is not JSON ({exc.msg} at offset {exc.pos})") from None
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise SpliceError("body is not a Messages API request (no messages array)")
        whole = Span(_ws(body, 0), skip_value(body, 0))
        if body[whole.end:].strip():
            raise SpliceError("trailing bytes after the JSON body")
        top = members(body, whole)
        top["__body__"] = whole
        msgs = elements(body, top["messages"])
        roles = [m.get("role", "") if isinstance(m, dict) else "" for m in data["messages"]]
        return cls(body, data, top, msgs, roles)

    def message(self, i: int) -> dict:
        return self.data["messages"][i]

    def content_span(self, i: int) -> Span:
        mm = members(self.body, self.messages[i])
        if "content" not in mm:
            raise SpliceError(f"messages[{i}] has no content")
        return mm["content"]

    def system_edit(self, block: bytes) -> Edit:
        """Append ``block`` at the end of ``system`` (created when absent)."""
        if "system" in self.top:
            return append_blocks(self.body, self.top["system"], [block])
        close = self.top["__body__"].end - 1
        empty = not self.top.keys() - {"__body__"}
        return Edit(close, close, (b"" if empty else b",") + b'"system":[' + block + b"]")
