"""Replaying what the real Aider sent (tests/fixtures/aider, recorded by its record.py) through the proxy, with the
X-Bead-Project header each checkout's `.aider.model.settings.yml` adds (docs/harnesses.md; checked with Aider 0.86.2).

Aider names no session and opens every chat with the same example exchange; bead reads that exchange, Aider's file
listings and the reminder it appends as the harness's (bead.wire.openai.aider_context), so each chat is a
conversation of its own, keyed by the person's first words."""

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
from bead.recall.rank import search_facts

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
            headers["X-Bead-Project"] = "other" if rec["tag"].startswith("other") else "demo"
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


def raw_sessions(home) -> dict[str, list[tuple[str, str]]]:
    with Memory(Home(home), Config(owner="dev")) as mem:
        return {p.stem: [(t.role, t.text) for t in mem.raw.read(p)] for p in mem.raw.files()}


def test_each_chat_is_a_conversation_of_its_own_and_a_restored_one_continues(replayed):
    """ask, edit, other-ask and interactive are four chats (other-ask in another checkout, with the same question as
    ask); interactive's second request, where Aider has re-rendered the first question without its reminder, goes on
    in its own conversation; restore reloads ask's and edit's history and opens with ask's question, so it goes on in
    ask's conversation."""
    home, _ = replayed
    logs = sorted(raw_sessions(home).values())
    assert logs == sorted(
        [
            [
                ("user", "What does README.md say?"),
                ("assistant", "The README says this is a demo project."),
                ("user", "What did we change?"),
                ("assistant", "We added a line saying the project uses Go."),
            ],
            [
                ("user", "Add a line saying the project uses Go. Remember that deploys need a second reviewer."),
                ("assistant", "README.md\n```\n# Demo\n\nA demo project.\nIt uses Go.\n```"),
            ],
            [("user", "What does README.md say?"), ("assistant", "The README says this is another project.")],
            [
                ("user", "How long is the README?"),
                ("assistant", "It is a one-line README."),
                ("user", "Say that the project is in Rust."),
                ("assistant", "README.md\n```\n# Other\n\nAn other project, in Rust.\n```"),
            ],
        ]
    ), "the example exchange, the file listings and the format reminder are Aider's, never the person's turns"


def test_every_new_chat_gets_its_pinned_block(replayed):
    _, sent = replayed
    seen = set()
    for rec, got in sent:
        if rec["tag"] != "restore" and rec["tag"] not in seen:  # a continued conversation keeps the block it had
            assert "<bead-memory" in json.loads(got.body)["messages"][0]["content"], rec["tag"]
        seen.add(rec["tag"])


def test_remember_in_the_persons_words_writes_the_fact(replayed):
    home, _ = replayed
    with Memory(Home(home), Config(owner="dev")) as mem:
        hits = search_facts(mem.index, "deploys second reviewer", limit=3)
        facts = [mem.current(h.id.rsplit("@v", 1)[0]) for h in hits]
    found = [f for f in facts if f is not None and "second reviewer" in f.body]
    assert found and found[0].trust == "user_stated", [f.key for f in facts if f]
    assert found[0].key.startswith(("user/", "project/demo/")), found[0].key  # the person's, or demo's: never other's


def test_the_fixture_is_aiders_own(replayed):
    _, sent = replayed
    assert [rec["tag"] for rec, _ in sent] == ["ask", "edit", "restore", "other-ask", "interactive", "interactive"]
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


def test_other_harnesses_messages_are_left_as_they_were():
    """Only Aider's own opening marks anything as the harness's: a chat that quotes Aider's words later, or one
    whose question repeats its system prompt's end without that opening, is read as before."""
    from bead.wire.openai import chat_conversation

    system = "You help. " + "Always answer in English and keep it short, with code in fences. " * 3
    plain = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi\n\n" + system[-150:]}]}
    quoting = {
        "messages": [
            {"role": "system", "content": system},
            *[{"role": r, "content": f"turn {i}"} for i, r in zip(range(20), ["user", "assistant"] * 10, strict=True)],
            {
                "role": "user",
                "content": "I switched to a new code base. Please don't consider the above files or try to edit them any longer.",
            },
            {"role": "assistant", "content": "Ok."},
            {"role": "user", "content": "and now?"},
        ]
    }
    for data in (plain, quoting):
        conv, _ = chat_conversation(data, {})
        assert not any(p.source.value == "harness" for m in conv.messages if m.role != "system" for p in m.parts)
