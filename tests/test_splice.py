"""Byte-preserving splicing of JSON bodies."""

from __future__ import annotations

import json

import pytest

from bead.wire.splice import Request, SpliceError, append_blocks, text_block

BODY = (
    '{"model":"m","system":[{"type":"text","text":"x-anthropic-billing-header: a;"},'
    '{"type":"text","text":"S ]} \\" [{","cache_control":{"type":"ephemeral"}}],'
    '"messages":[{"role":"user","content":"héllo \\"q\\" ]"},'
    '{"role":"assistant","content":[{"type":"text","text":"a"}]},'
    '{"role":"user","content":[]}],"stream":true}'
).encode()


def test_appends_keep_every_existing_byte():
    r = Request.parse(BODY)
    out = r.edited(
        [
            r.system_edit(text_block("PIN")),
            append_blocks(r.text, r.content_span(0), [text_block("C0")]),
            append_blocks(r.text, r.content_span(2), [text_block("C2 ünï")]),
        ]
    )
    data = json.loads(out)
    assert data["system"][-1] == {"type": "text", "text": "PIN"}
    assert data["messages"][0]["content"] == [{"type": "text", "text": 'héllo "q" ]'}, {"type": "text", "text": "C0"}]
    assert data["messages"][2]["content"] == [{"type": "text", "text": "C2 ünï"}]
    # Everything that was there is still there, byte for byte, in order.
    original = BODY.decode()
    assert original.split('"messages"')[0] in out.decode().replace(',{"type":"text","text":"PIN"}', "")
    assert b'{"role":"assistant","content":[{"type":"text","text":"a"}]}' in out
    assert "ünï".encode() in out, "non-ASCII is written raw, as Claude Code does"


def test_string_content_keeps_its_exact_escapes():
    r = Request.parse(BODY)
    out = r.edited([append_blocks(r.text, r.content_span(0), [text_block("C")])]).decode()
    assert '[{"type":"text","text":"héllo \\"q\\" ]"},{"type":"text","text":"C"}]' in out


def test_same_input_same_output():
    a = Request.parse(BODY)
    b = Request.parse(BODY)
    ea = a.edited([append_blocks(a.text, a.content_span(0), [text_block("C")])])
    eb = b.edited([append_blocks(b.text, b.content_span(0), [text_block("C")])])
    assert ea == eb


def test_system_created_when_absent():
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    r = Request.parse(body)
    out = r.edited([r.system_edit(text_block("PIN"))])
    assert out == b'{"model":"m","messages":[{"role":"user","content":"hi"}],"system":[{"type":"text","text":"PIN"}]}'


def test_system_string_becomes_blocks():
    body = b'{"system":"be brief","messages":[{"role":"user","content":"hi"}]}'
    r = Request.parse(body)
    assert json.loads(r.edited([r.system_edit(text_block("P"))]))["system"] == [
        {"type": "text", "text": "be brief"},
        {"type": "text", "text": "P"},
    ]


def test_whitespace_and_pretty_json():
    body = json.dumps({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, indent=2).encode()
    r = Request.parse(body)
    out = r.edited([append_blocks(r.text, r.content_span(0), [text_block("C")])])
    assert json.loads(out)["messages"][0]["content"][-1]["text"] == "C"
    assert out.startswith(body[:40])


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"messages": 5}', b"\xff", b'{"messages":[]} x'])
def test_bad_bodies_raise(body):
    with pytest.raises(SpliceError):
        Request.parse(body)
