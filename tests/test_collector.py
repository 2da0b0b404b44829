"""Rebuilding the assistant turn from the response bytes (bead.wire.anthropic.ResponseCollector)."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from fakes import message_events, message_json, sse

from bead.conversation import Source
from bead.wire.anthropic import ResponseCollector

SSE = "text/event-stream; charset=utf-8"
TEXT = "The ledger lock is taken in migrate.py — ünïcödé too."
TOOL = {"name": "Bash", "id": "toolu_9", "input": {"command": "pytest -x -q", "nested": {"paths": ["a.py", "b.py"]}}}


def stream(text: str = TEXT, tool: dict | None = TOOL) -> bytes:
    return b"".join(sse(message_events(text, tool)))


def chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def collect(parts: list[bytes], content_type: str = SSE, encoding: str | None = None, index: int = 3):
    c = ResponseCollector(content_type, encoding)
    for part in parts:
        c.feed(part)
    return c.result(index)


def summary(result) -> list[tuple]:
    message, _flags = result
    return [(p.source, p.kind, p.text, p.name, p.data) for p in message.parts]


EXPECTED = [
    (Source.ASSISTANT, "text", TEXT, "", None),
    (Source.TOOL_CALL, "tool_use", json.dumps(TOOL["input"], ensure_ascii=False), "Bash", TOOL["input"]),
]


def test_whole_stream_gives_text_and_tool_call():
    """A complete SSE stream gives the assistant's text and its tool call with the input rebuilt from input_json_delta."""
    result = collect([stream()])
    message, flags = result
    assert (message.index, message.role) == (3, "assistant")
    assert summary(result) == EXPECTED
    assert flags == {}


def test_thinking_is_skipped():
    """The thinking block of the stream gives no part and none of its text."""
    message, _ = collect([stream()])
    assert all("private reasoning" not in p.text for p in message.parts)
    assert [p.kind for p in message.parts] == ["text", "tool_use"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1000])
def test_any_chunk_split_gives_the_same_message(size):
    """Fed in chunks of any size, one byte at a time included, the stream gives the same message."""
    whole = collect([stream()])
    split = collect(chunks(stream(), size))
    assert summary(split) == summary(whole) == EXPECTED
    assert split[0].hash == whole[0].hash
    assert split[1] == whole[1] == {}


def test_splits_at_every_offset_give_the_same_message():
    """Cutting the stream in two at every byte offset never changes the message."""
    data = stream("short ü", {"name": "Read", "input": {"file_path": "x.py"}})
    expected = summary(collect([data]))
    assert expected[0][2] == "short ü"
    for i in range(len(data) + 1):
        assert summary(collect([data[:i], data[i:]])) == expected, i


def test_crlf_separators():
    """Events separated by `\\r\\n\\r\\n` (lines ending `\\r\\n`) give the same message."""
    crlf = stream().replace(b"\n", b"\r\n")
    assert b"\r\n\r\n" in crlf and b"\n\n" not in crlf
    assert summary(collect(chunks(crlf, 5))) == EXPECTED
    assert collect([crlf])[1] == {}


def test_gzip_stream_in_small_chunks():
    """The stream gzip-compressed (content-encoding gzip), fed in small chunks, gives the same message."""
    comp = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    data = comp.compress(stream()) + comp.flush()
    assert data[:2] == b"\x1f\x8b"
    result = collect(chunks(data, 7), encoding="gzip")
    assert summary(result) == EXPECTED and result[1] == {}


def test_deflate_stream_in_small_chunks():
    """The stream deflate-compressed (content-encoding deflate), fed in small chunks, gives the same message."""
    comp = zlib.compressobj()
    data = comp.compress(stream()) + comp.flush()
    result = collect(chunks(data, 5), encoding="deflate")
    assert summary(result) == EXPECTED and result[1] == {}


def test_encoding_name_is_case_insensitive():
    """`Content-Encoding: GZIP` is gzip."""
    result = collect([gzip.compress(stream())], encoding="GZIP")
    assert summary(result) == EXPECTED


def test_json_body():
    """A non-SSE JSON message body gives its assistant message with no flags."""
    body = json.dumps(message_json("Plain JSON answer.")).encode()
    message, flags = collect(chunks(body, 9), content_type="application/json")
    assert [(p.source, p.text) for p in message.parts] == [(Source.ASSISTANT, "Plain JSON answer.")]
    assert flags == {}


def test_json_body_gzip():
    """A gzip-compressed JSON body, fed in small chunks, gives the same message as the plain one."""
    body = json.dumps(message_json("Plain JSON answer.")).encode()
    plain = collect([body], content_type="application/json")
    zipped = collect(chunks(gzip.compress(body), 4), content_type="application/json", encoding="gzip")
    assert [p.text for p in zipped[0].parts] == ["Plain JSON answer."]
    assert zipped[0].hash == plain[0].hash


def test_json_body_that_is_not_a_message_gives_none():
    """A JSON error body, or bytes that are not JSON, give no message."""
    err = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}).encode()
    assert collect([err], content_type="application/json") is None
    assert collect([b"<html>bad gateway</html>"], content_type="text/html") is None


def test_unsupported_encoding_gives_none_without_raising():
    """A brotli-encoded response is not decoded: feeding it raises nothing and the result is None."""
    c = ResponseCollector(SSE, "br")
    for part in chunks(b"\x8b\x7f\x80" + stream()[:200], 16):
        c.feed(part)
    assert c.result(0) is None


def test_stream_without_message_stop_is_partial():
    """A stream that ends before message_stop gives what arrived, flagged partial."""
    events = message_events(TEXT, None)
    cut = b"".join(sse(events[:-3]))  # drop the text block's stop, message_delta and message_stop
    message, flags = collect(chunks(cut, 11))
    assert flags == {"partial": True}
    assert [p.text for p in message.parts] == [TEXT]


def test_stream_cut_inside_tool_input_keeps_the_partial_json():
    """A tool call whose input JSON was cut off keeps the partial JSON text instead of failing."""
    events = message_events("x", TOOL)
    cut_at = next(i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "input_json_delta") + 1
    message, flags = collect([b"".join(sse(events[:cut_at]))])
    assert flags.get("partial") is True
    (call,) = [p for p in message.parts if p.kind == "tool_use"]
    assert call.data == {"partial_json": json.dumps(TOOL["input"])[:5]}


def test_error_event_is_flagged():
    """An `error` event in the stream flags the result as an error (and partial when no message_stop follows)."""
    events = message_events(TEXT, None)[:7] + [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    message, flags = collect(chunks(b"".join(sse(events)), 13))
    assert flags == {"error": True, "partial": True}
    assert message.parts[0].text == TEXT[: len(TEXT) // 2]


def test_garbage_event_is_skipped():
    """An event whose data is not JSON is skipped; the events around it still count, and the capture says partial
    (what the event held is not known: a text delta's, perhaps). A comment line is no event."""
    events = sse(message_events(TEXT, None))
    data = b"".join(events[:5]) + b"event: junk\ndata: {not json\n\n" + b": a comment line\n\n" + b"".join(events[5:])
    result = collect(chunks(data, 3))
    assert [p.text for p in result[0].parts] == [TEXT] and result[1] == {"partial": True}
    commented = b"".join(events[:5]) + b": a comment line\n\n" + b"".join(events[5:])
    assert collect(chunks(commented, 3))[1] == {}


@pytest.mark.parametrize(
    "odd",
    [
        b"data: [1]\n\n",  # valid JSON, no object
        b'data: {"type": "content_block_start", "content_block": {"type": "text", "text": ""}}\n\n',  # no index
        b'data: {"type": "content_block_delta", "index": "1", "delta": {"type": "text_delta", "text": "x"}}\n\n',
        b'data: {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use"}}\n\n',  # index taken
        b"data: {\xff\xfe not utf-8}\n\n",
    ],
    ids=["a-list", "no-index", "string-index", "index-started-twice", "not-utf-8"],
)
def test_an_event_of_another_shape_is_passed_over_and_the_capture_says_partial(odd):
    """An event of an odd shape raised out of the collector and the whole answer was lost; one it passed over
    (unreadable, too large) left a hole in the text with nothing to say so; a second start at a used index
    overwrote the text. Each is passed over, the rest of the answer kept, and the capture is marked partial."""
    events = sse(message_events(TEXT, None))
    body = b"".join(events)
    at = body.index(b'"text_delta"')  # after the text block's start: its index is taken
    at = body.rindex(b"\n\n", 0, at) + 2
    message, flags = collect([body[:at] + odd + body[at:]])
    assert flags == {"partial": True}
    assert [p.text for p in message.parts] == [TEXT]


def test_a_text_block_that_starts_with_text_of_another_type_keeps_its_deltas():
    """A start whose text is null (or a number) raised when its deltas were joined, and the whole answer was lost."""
    events = message_events(TEXT, None)
    for ev in events:
        if ev.get("type") == "content_block_start" and ev["content_block"].get("type") == "text":
            ev["content_block"]["text"] = None
    message, _flags = collect([b"".join(sse(events))])
    assert [p.text for p in message.parts] == [TEXT]
