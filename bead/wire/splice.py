"""Byte-preserving edits of a JSON request body.

The proxy never re-serialises a request: it finds the spans of the values it
needs (``system``, ``messages[i].content``; the OpenAI APIs' ``messages`` or
``input`` items) and inserts new blocks next to them, so every existing byte,
``cache_control`` marker and the attribution block stay exactly where the
harness put them.

Spans are found on the decoded text with the json module's C scanner
(``raw_decode`` skips a value at C speed); a valid UTF-8 body decodes and
encodes back to the same bytes, so editing the text is editing the bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..conversation import MAX_MESSAGE_PARTS, MAX_PARTS, Unreadable
from ..textform import readable_json

_WS = re.compile(r"[ \t\r\n]*")


def _no_constant(name: str) -> Any:
    """NaN, Infinity and -Infinity, which Python's decoder reads and JSON has not: a body holding one is not JSON, so
    it goes out as it came (an API refuses it anyway), not spliced and recorded as a request the model saw."""
    raise SpliceError(f"body is not JSON ({name} is no JSON value)")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _number(digits: str) -> int | float:
    """A JSON integer as read where Python's int() refuses it (over 4,300 digits: converting more takes quadratic
    time): a float (inf past its range). bead never writes such a value back: the splice edits the text as sent."""
    return int(digits) if len(digits) <= 4000 else float(digits)


# Used only after the plain decoder refused a body (a tool call's input can hold any number): calling back into
# Python for every integer costs about 0.2 s a million.
_LENIENT = json.JSONDecoder(parse_int=_number, parse_constant=_no_constant)
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # the C scanner, not in the stubs
# Each element of ``messages`` / ``input`` costs a step of Python on top of the C
# scanner (~1 us; the conversation built from it, ~10 us): three million tiny
# elements fit in 16 MiB and took a minute of CPU, holding the GIL against
# every other request. Past this many, the body is too large to read cheaply.
MAX_ITEMS = 20_000


class SpliceError(Unreadable):
    """The body is not JSON of the shape the proxy can edit."""


class TooLarge(SpliceError):
    """Valid JSON, but of more elements or parts than bead reads before forwarding (sent unchanged, counted)."""


def check_parts(items: Any, lists: tuple[str, ...], per_item: bool = False, nested: str | None = None) -> None:
    """TooLarge when the items' lists (``content``, ``tool_calls``, ``output``) hold more than MAX_PARTS
    elements in all, or (``per_item``) one item more than MAX_MESSAGE_PARTS: a len() each, before any
    element is read. With ``nested`` (a tool result's ``content``), the lists their elements hold under that
    name count towards MAX_PARTS too, once the elements are known to be few enough to look at."""
    valid = [item for item in (items if isinstance(items, list) else []) if isinstance(item, dict)]
    sizes = [sum(len(v) for k in lists if isinstance(v := item.get(k), list)) for item in valid]
    total = sum(sizes)
    if total > MAX_PARTS:
        raise TooLarge(f"more than {MAX_PARTS} content parts")
    if per_item and any(n > MAX_MESSAGE_PARTS for n in sizes):
        raise TooLarge(f"a message of more than {MAX_MESSAGE_PARTS} parts")
    if nested is not None:
        for item in valid:
            for k in lists:
                elements = item.get(k)
                for el in elements if isinstance(elements, list) else ():
                    if isinstance(el, dict) and isinstance(inner := el.get(nested), list):
                        total += len(inner)
        if total > MAX_PARTS:
            raise TooLarge(f"more than {MAX_PARTS} content parts, counting those inside tool results")


def _ws(s: str, i: int) -> int:
    m = _WS.match(s, i)
    return m.end() if m else i


def skip_value(s: str, i: int) -> int:
    """End offset of the JSON value starting at (or after whitespace from) ``i``."""
    try:
        return _DECODER.raw_decode(s, _ws(s, i))[1]
    except json.JSONDecodeError as exc:
        raise SpliceError(f"invalid JSON at offset {exc.pos}") from None
    except ValueError:  # an integer of more digits than int() converts
        return _LENIENT.raw_decode(s, _ws(s, i))[1]


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def of(self, s: str) -> str:
        return s[self.start : self.end]


def members(s: str, span: Span) -> dict[str, Span]:
    """Key -> value span of the JSON object at ``span`` (last key wins, as in json.loads)."""
    i = _ws(s, span.start)
    if s[i : i + 1] != "{":
        raise SpliceError("not a JSON object")
    out: dict[str, Span] = {}
    i = _ws(s, i + 1)
    if s[i : i + 1] == "}":
        return out
    while True:
        if s[i : i + 1] != '"':
            raise SpliceError("object key is not a string")
        key, i = _scanstring(s, i + 1)
        i = _ws(s, i)
        if s[i : i + 1] != ":":
            raise SpliceError("missing ':' in object")
        vstart = _ws(s, i + 1)
        vend = skip_value(s, vstart)
        out[key] = Span(vstart, vend)
        i = _ws(s, vend)
        c = s[i : i + 1]
        if c == "}":
            return out
        if c != ",":
            raise SpliceError("missing ',' in object")
        i = _ws(s, i + 1)


def elements(s: str, span: Span) -> list[Span]:
    i = _ws(s, span.start)
    if s[i : i + 1] != "[":
        raise SpliceError("not a JSON array")
    out: list[Span] = []
    i = _ws(s, i + 1)
    if s[i : i + 1] == "]":
        return out
    while True:
        start = _ws(s, i)
        end = skip_value(s, start)
        out.append(Span(start, end))
        i = _ws(s, end)
        c = s[i : i + 1]
        if c == "]":
            return out
        if c != ",":
            raise SpliceError("missing ',' in array")
        i = _ws(s, i + 1)


def _decode_top(
    s: str, items: str = "messages", decoder: json.JSONDecoder = _DECODER
) -> tuple[dict[str, Any], dict[str, Span], list[Span] | None, int]:
    """(the decoded object, key -> value span, the spans of the ``items`` array's elements, the closing brace)."""
    i = _ws(s, 0)
    if s[i : i + 1] != "{":
        raise SpliceError("body is not a JSON object")
    data: dict[str, Any] = {}
    top: dict[str, Span] = {}
    msgs: list[Span] | None = None
    i = _ws(s, i + 1)
    if s[i : i + 1] != "}":
        while True:
            if s[i : i + 1] != '"':
                raise SpliceError("object key is not a string")
            key, i = _scanstring(s, i + 1)
            i = _ws(s, i)
            if s[i : i + 1] != ":":
                raise SpliceError("missing ':' in object")
            vstart = _ws(s, i + 1)
            if key == items and s[vstart : vstart + 1] == "[":
                value, msgs, vend = _decode_array(s, vstart, decoder)
            else:
                value, vend = decoder.raw_decode(s, vstart)
                if key == items:
                    msgs = None
            data[key] = value  # the last duplicate wins, as in json.loads
            top[key] = Span(vstart, vend)
            i = _ws(s, vend)
            c = s[i : i + 1]
            if c == "}":
                break
            if c != ",":
                raise SpliceError("missing ',' in object")
            i = _ws(s, i + 1)
    end = i
    if _ws(s, end + 1) != len(s):
        raise SpliceError("extra data after the JSON object")
    return data, top, msgs, end


def _decode_array(s: str, start: int, decoder: json.JSONDecoder) -> tuple[list[Any], list[Span], int]:
    values: list[Any] = []
    spans: list[Span] = []
    i = _ws(s, start + 1)
    if s[i : i + 1] == "]":
        return values, spans, i + 1
    while True:
        begin = _ws(s, i)
        value, end = decoder.raw_decode(s, begin)
        values.append(value)
        spans.append(Span(begin, end))
        if len(spans) > MAX_ITEMS:
            raise TooLarge(f"more than {MAX_ITEMS} elements")
        i = _ws(s, end)
        c = s[i : i + 1]
        if c == "]":
            return values, spans, i + 1
        if c != ",":
            raise SpliceError("missing ',' in array")
        i = _ws(s, i + 1)


def text_block(text: str) -> str:
    """A text content block, compact, non-ASCII raw: the form Claude Code writes."""
    return json.dumps({"type": "text", "text": text}, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    data: str


def append_to_string(s: str, value: Span, text: str) -> Edit:
    """An edit that appends a blank line and ``text`` inside the JSON string at ``value``.

    Every byte of the string stays; the new text goes before its closing
    quote, escaped as json.dumps escapes it (non-ASCII raw).
    """
    raw = value.of(s)
    if not (raw.startswith('"') and raw.endswith('"')):
        raise SpliceError("not a JSON string")
    close = value.end - 1
    return Edit(close, close, json.dumps("\n\n" + text, ensure_ascii=False)[1:-1])


# A JSON string literal of blank space only: spaces, and tabs and line breaks as JSON writes them (escaped). One
# alternative per first character (a space, or a backslash and what follows it): linear, and it stops at the first
# other character. A text that is a backslash and a letter (`\\n` in the literal) is no line break, and matches not.
_BLANK_LITERAL = re.compile(r'"(?:[ ]|\\[ntr]|\\u00(?:20|0[9aAdD]))*"')


def _blank_literal(raw: str) -> bool:
    """Whether a JSON string literal holds nothing but blank space."""
    return _BLANK_LITERAL.fullmatch(raw) is not None


def append_blocks(s: str, value: Span, blocks: list[str]) -> Edit:
    """An edit that appends ``blocks`` to a content value (array or string).

    A string value becomes ``[{"type":"text","text":<the same string>}, ...]``
    with the original string text kept verbatim, so the same input always
    gives the same output; an empty or blank one (``"system": ""``) becomes the
    blocks alone: the Messages API refuses a text block without text, which
    the string alone was not.
    """
    joined = ",".join(blocks)
    raw = value.of(s)
    if raw.startswith('"'):
        if _blank_literal(raw):
            return Edit(value.start, value.end, "[" + joined + "]")
        return Edit(value.start, value.end, '[{"type":"text","text":' + raw + "}," + joined + "]")
    if not raw.startswith("["):
        raise SpliceError("content is neither a string nor an array")
    close = value.end - 1  # the closing ]
    empty = _ws(s, value.start + 1) == close
    return Edit(close, close, ("" if empty else ",") + joined)


def decode(body: bytes, items: str) -> tuple[str, dict[str, Any], dict[str, Span], list[Span] | None, int]:
    """The text of a JSON object body, decoded once: (text, object, key -> value span, the spans of the
    ``items`` array's elements or None, the closing brace). SpliceError for a body that is not one.

    A lone surrogate escape is read as U+FFFD (the same six characters long, so every span holds for
    the text as sent, which is what the splice edits and what goes out)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise SpliceError("body is not UTF-8") from None
    readable = readable_json(text)
    try:
        data, top, spans, end = _decode_top(readable, items)
    except json.JSONDecodeError as exc:
        raise SpliceError(f"body is not JSON ({exc.msg} at offset {exc.pos})") from None
    except ValueError:  # an integer of more digits than int() converts (a tool call's input): read it again
        try:
            data, top, spans, end = _decode_top(readable, items, _LENIENT)
        except json.JSONDecodeError as exc:
            raise SpliceError(f"body is not JSON ({exc.msg} at offset {exc.pos})") from None
    return text, data, top, spans, end


def apply(s: str, edits: list[Edit]) -> str:
    """``s`` with ``edits`` (spans that do not overlap) made, in one pass: a copy of the body per edit cost a long
    conversation's requests edits x body (20 MB and 200 cue blocks: 1.9 s). Edits at one place land in the order
    the one-by-one splice from the end gave them (the later-listed first)."""
    out: list[str] = []
    last = 0
    for _, e in sorted(enumerate(edits), key=lambda t: (t[1].start, -t[0])):
        out += [s[last : e.start], e.data]
        last = max(last, e.end)
    out.append(s[last:])
    return "".join(out)


@dataclass
class Request:
    """The spans of one Messages API body that the proxy reads or edits."""

    text: str
    data: dict[str, Any]
    top: dict[str, Span]
    end: int
    messages: list[Span]
    roles: list[str]

    @classmethod
    def parse(cls, body: bytes) -> Request:
        """Decode the body and find its spans in one pass of the C scanner.

        Each top-level value, and each message, is decoded by ``raw_decode``
        where it starts, which also gives its end: the body is read once,
        not once to decode and again to find the spans.
        """
        text, data, top, msgs, end = decode(body, "messages")
        if not isinstance(data.get("messages"), list) or msgs is None:
            raise SpliceError("body is not a Messages API request (no messages array)")
        roles = [m.get("role", "") if isinstance(m, dict) else "" for m in data["messages"]]
        return cls(text, data, top, end, msgs, roles)

    def message(self, i: int) -> dict:
        return self.data["messages"][i]

    def content_span(self, i: int) -> Span:
        mm = members(self.text, self.messages[i])
        if "content" not in mm:
            raise SpliceError(f"messages[{i}] has no content")
        return mm["content"]

    def system_edit(self, block: str) -> Edit:
        """Append ``block`` at the end of ``system`` (created when absent or ``null``, which stands for none)."""
        if "system" in self.top and self.data.get("system") is None:
            return Edit(self.top["system"].start, self.top["system"].end, "[" + block + "]")
        if "system" in self.top:
            return append_blocks(self.text, self.top["system"], [block])
        return Edit(self.end, self.end, ("," if self.top else "") + '"system":[' + block + "]")

    def edited(self, edits: list[Edit]) -> bytes:
        return apply(self.text, edits).encode("utf-8")
