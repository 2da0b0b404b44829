"""Replaying what the real Aider sent (tests/fixtures/aider, recorded by its record.py) through the proxy.

What holds today is tested here. What does not (issue #28): Aider names no session and opens every chat with the
same few-shot exchange, so bead's fallback identity (the system prompt and the first message) makes all Aider
chats one conversation; the fixture's README says what Aider sends."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from conftest import ProxyClient, make_proxy_app
from fakes import FakeAnthropic, FakeOpenAI, Reply

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home

FIXTURE = Path(__file__).parent / "fixtures" / "aider" / "requests.jsonl"


def records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Every recorded request through one proxy app, with the answer Aider got; (record, what the upstream got)."""
    home = tmp_path_factory.mktemp("aider") / "home"
    with Memory(Home(home).ensure(), Config(owner="dev")) as mem:
        mem.write("user/editor", "The user edits code in Helix with the default keymap.", "user")
    fake, anthropic = FakeOpenAI(), FakeAnthropic()
    proxy = ProxyClient(make_proxy_app(home, anthropic.url, openai_upstream_url=fake.url))
    try:
        sent = []
        for rec in records():
            fake.replies.append(Reply(kind="sse", text=rec["response"]["text"]))
            headers = {k: v for k, v in rec["headers"] if k.lower() not in ("host", "content-length", "connection")}
            status, _, data = proxy.post(base64.b64decode(rec["body_b64"]), headers, "/openai" + rec["path"])
            assert status == 200, data[:300]
            assert data.rstrip().endswith(b"data: [DONE]")
            sent.append((rec, fake.requests[-1]))
        proxy.settle()
        assert anthropic.requests == [], "nothing went to the Anthropic upstream"
    finally:
        proxy.close()
        fake.close()
        anthropic.close()
    return home, sent


def test_the_fixture_is_aiders_own(replayed):
    _, sent = replayed
    assert [rec["tag"] for rec, _ in sent] == ["ask", "edit", "restore", "other-ask"]
    assert {rec["aider"] for rec, _ in sent} == {"aider 0.86.2"}


def test_headers_and_credentials_pass_through(replayed):
    _, sent = replayed
    for rec, got in sent:
        for k, v in rec["headers"]:
            if k.lower() not in ("host", "content-length", "connection", "accept-encoding"):
                assert got.header(k) == v, k
        assert got.header("authorization") == "Bearer REDACTED"


def test_the_pinned_block_reaches_the_model_in_the_system_message(replayed):
    _, sent = replayed
    first = json.loads(sent[0][1].body)["messages"][0]
    assert first["role"] == "system"
    assert "<bead-memory" in first["content"] and "Helix" in first["content"]
    original = json.loads(base64.b64decode(sent[0][0]["body_b64"]))["messages"][0]["content"]
    assert first["content"].startswith(original)  # bead appends; Aider's system prompt is untouched


def test_every_message_but_the_system_and_the_newest_goes_out_as_aider_sent_it(replayed):
    _, sent = replayed
    for rec, got in sent:
        mine = json.loads(base64.b64decode(rec["body_b64"]))["messages"]
        out = json.loads(got.body)["messages"]
        assert len(out) == len(mine)
        assert out[1:-1] == mine[1:-1]
        assert out[-1]["content"].startswith(mine[-1]["content"])  # the question, then what bead adds, if anything
