"""The OpenAI routes: the official `openai` SDK through bead (served on a loopback port in this process) to
a fake of the Chat Completions and Responses APIs; raw requests through the in-process app for what the
SDK would not send. The Anthropic route's own contract is tests/test_proxy_behaviour.py's."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse

import pytest
from conftest import all_bytes_under, eventually, hang_up_once, lazy_import, seeded_homes
from fakes import Reply, chat_events, openai_sse

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.wire.splice import Request, decode

openai_sdk = lazy_import("openai")

SYSTEM = "You are a coding agent.\nWorking directory: /tmp/proj-x"
FLAKY = "The checkout discount test is flaky under parallel pytest-xdist runs; run it with -p no:xdist."
ORG, PROJECT, KEY = "org-bead-test", "proj_bead_test", "sk-proj-" + "K" * 48


def seed(home):
    with Memory(Home(home).ensure(), Config(owner="t")) as m:
        m.write("user/editor", "The user edits code in Helix with the default keymap.", "user")
        m.write("global/flaky-checkout", FLAKY, "reference")
        for i in range(6):
            m.write(f"global/other-{i}", f"Unrelated fact number {i} about logging and metrics.", "reference")


seeded_home, seeded = seeded_homes(seed)  # the test's home as ``seed`` leaves it, seeded once for the module


def raw_turns(home, session):
    with Memory(Home(home), Config(owner="t")) as m:
        p = m.raw.find(session)
        return m.raw.read(p) if p else []


@pytest.fixture
def served(served_proxy, openai_upstream, seeded):
    """bead served on a loopback port, its /openai paths going to the fake OpenAI upstream."""
    return served_proxy(openai_upstream_url=openai_upstream.url)


@pytest.fixture
def client(served):
    """The official SDK with the base URL a user sets: bead's address, the home's token, /openai/v1."""
    from bead.token import load_token

    return openai_sdk.OpenAI(
        base_url=f"{served.url}/{load_token(served.engine.home)}/openai/v1",
        api_key=KEY,
        organization=ORG,
        project=PROJECT,
        max_retries=0,
        timeout=60,
        default_headers={"X-Bead-Session": "sdk"},
    )


def items_of(body: bytes, key: str) -> list[bytes]:
    text, _, top, spans, _ = decode(body, key)
    return [s.of(text).encode() for s in spans or []]


class TestChatCompletions:
    """chat.completions through bead: memory in, the answer back byte for byte, both turns captured."""

    def test_not_streamed(self, client, openai_upstream, bead_home):
        openai_upstream.replies.append(Reply(text="Run it with -p no:xdist."))
        r = client.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "why is the checkout discount test flaky under xdist?"},
            ],
        )
        assert r.choices[0].message.content == "Run it with -p no:xdist."
        sent = openai_upstream.requests[-1]
        assert sent.path == "/v1/chat/completions"
        got = sent.json()["messages"]
        assert got[0]["content"].startswith(SYSTEM + '\n\n<bead-memory kind="pinned">') and "Helix" in got[0]["content"]
        assert got[1]["content"].startswith('why is the checkout discount test flaky under xdist?\n\n<bead-memory kind="recall">')
        assert "flaky-checkout" in got[1]["content"]
        assert eventually(
            lambda: (
                [(t.role, t.flags["source"]) for t in raw_turns(bead_home, "sdk")]
                == [("user", "typed"), ("assistant", "assistant")]
            )
        )
        assert "<bead-memory" not in raw_turns(bead_home, "sdk")[0].text

    def test_streamed_with_parallel_tool_calls(self, client, openai_upstream, bead_home):
        openai_upstream.replies.append(
            Reply(
                text="Reading both.",
                tool={"name": "read", "input": {"path": "a.py"}, "id": "c1"},
                tools=[{"name": "read", "input": {"path": "b.py"}, "id": "c2"}],
            )
        )
        stream = client.chat.completions.create(
            model="gpt-test",
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "compare a.py and b.py"}],
        )
        text, calls = "", {}
        for chunk in stream:
            for c in chunk.choices:
                text += c.delta.content or ""
                for tc in c.delta.tool_calls or []:
                    calls[tc.index] = calls.get(tc.index, "") + (tc.function.arguments or "")
        assert text == "Reading both." and calls == {0: '{"path": "a.py"}', 1: '{"path": "b.py"}'}
        assert eventually(lambda: len(raw_turns(bead_home, "sdk")) == 3)
        answer = raw_turns(bead_home, "sdk")[1:]
        assert [t.flags["source"] for t in answer] == ["assistant", "tool_call"]
        assert answer[1].text == "[tool_use read]\npath: a.py\n\n[tool_use read]\npath: b.py"
        assert "private reasoning" not in json.dumps([t.text for t in raw_turns(bead_home, "sdk")])

    def test_n_choices_capture_the_first(self, client, openai_upstream, bead_home):
        openai_upstream.replies.append(Reply(text="answer"))
        r = client.chat.completions.create(model="gpt-test", n=3, messages=[{"role": "user", "content": "three takes"}])
        assert [c.message.content for c in r.choices] == ["answer", "answer (1)", "answer (2)"]
        assert eventually(lambda: len(raw_turns(bead_home, "sdk")) == 2)
        assert raw_turns(bead_home, "sdk")[1].text == "answer"

    def test_consecutive_turns_keep_the_prefix_byte_identical(self, client, openai_upstream):
        """Every message the SDK resends unchanged reaches the upstream with the same bytes, the pinned block
        and earlier cue blocks included; only the new messages differ."""
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "why is the checkout discount test flaky under xdist?"},
        ]
        sent = []
        for turn in range(3):
            openai_upstream.replies.append(
                Reply(text=f"answer {turn}", tool={"name": "bash", "input": {"cmd": f"pytest -k t{turn}"}, "id": f"call_{turn}"})
            )
            r = client.chat.completions.create(model="gpt-test", messages=messages)
            sent.append(items_of(openai_upstream.requests[-1].body, "messages"))
            m = r.choices[0].message
            messages += [
                m.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": m.tool_calls[0].id, "content": f"output of turn {turn}"},
            ]
        assert b"bead-memory" in sent[0][1]
        for before, after in zip(sent, sent[1:], strict=False):
            assert after[: len(before)] == before

    def test_a_system_message_added_later_keeps_the_conversation_and_its_bytes(self, app, openai_upstream, bead_home):
        """With no session header, a system message the harness adds mid-conversation ("switched to plan mode")
        leaves it the same conversation: the messages it resends go out with the bytes they went out with, the
        earlier cue block in them included (one state file, not a second conversation with none of its blocks)."""
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "why is the checkout discount test flaky under xdist?"},
        ]
        sent = []
        for more in (
            [],
            [{"role": "assistant", "content": "Let me look."}, {"role": "user", "content": "thanks, go on"}],
            [
                {"role": "assistant", "content": "Done."},
                {"role": "system", "content": "Note: the user switched to plan mode."},
                {"role": "user", "content": "ok, plan the next step"},
            ],
        ):
            messages += more
            body = json.dumps({"model": "gpt-test", "messages": messages}).encode()
            status, _, _ = app.post(body, {"content-type": "application/json"}, "/openai/v1/chat/completions")
            app.settle()
            assert status == 200
            sent.append(items_of(openai_upstream.requests[-1].body, "messages"))
        assert b"bead-memory" in sent[0][1]
        assert sent[2][: len(sent[1])] == sent[1] and sent[1][:2] == sent[0]
        assert len([n for n in os.listdir(bead_home / "sessions") if n.endswith(".jsonl")]) == 1


class TestResponses:
    """responses through bead: the developer item takes the pinned block, user items the cue block."""

    def test_not_streamed(self, client, openai_upstream, bead_home):
        openai_upstream.replies.append(Reply(text="Use -p no:xdist."))
        r = client.responses.create(
            model="gpt-test",
            instructions="Be brief.",
            input=[
                {"role": "developer", "content": SYSTEM},
                {"role": "user", "content": "why is the checkout discount test flaky under xdist?"},
            ],
        )
        assert r.output_text == "Use -p no:xdist."
        got = openai_upstream.requests[-1].json()
        assert got["instructions"] == "Be brief."
        assert got["input"][0]["content"].startswith(SYSTEM + '\n\n<bead-memory kind="pinned">')
        assert "flaky-checkout" in got["input"][1]["content"]
        assert eventually(lambda: [t.role for t in raw_turns(bead_home, "sdk")] == ["user", "assistant"])
        assert raw_turns(bead_home, "sdk")[1].text == "Use -p no:xdist."

    def test_streamed_events(self, client, openai_upstream, bead_home):
        openai_upstream.replies.append(Reply(text="Looking.", tool={"name": "exec_command", "input": {"cmd": "ls"}, "id": "c1"}))
        with client.responses.stream(model="gpt-test", input="list the files") as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert final.output_text == "Looking." and final.output[-1].type == "function_call"
        sent = openai_upstream.requests[-1].json()
        assert sent["input"][0]["role"] == "developer" and sent["input"][1]["role"] == "user"
        assert sent["input"][1]["content"] == "list the files", "a string input keeps its text"
        assert eventually(lambda: [t.flags["source"] for t in raw_turns(bead_home, "sdk")] == ["typed", "assistant", "tool_call"])

    def test_consecutive_turns_keep_the_prefix_byte_identical(self, client, openai_upstream):
        items = [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": SYSTEM}]},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "why is the checkout discount test flaky under xdist?"}],
            },
        ]
        sent = []
        for turn in range(3):
            openai_upstream.replies.append(
                Reply(
                    text=f"answer {turn}", tool={"name": "exec_command", "input": {"cmd": f"pytest -k t{turn}"}, "id": f"c{turn}"}
                )
            )
            r = client.responses.create(model="gpt-test", input=items, store=False)
            sent.append(items_of(openai_upstream.requests[-1].body, "input"))
            items += [o.model_dump(exclude_none=True) for o in r.output]
            items.append({"type": "function_call_output", "call_id": f"c{turn}", "output": f"output of turn {turn}"})
        assert b"bead-memory" in sent[0][0] and b"bead-memory" in sent[0][1]
        for before, after in zip(sent, sent[1:], strict=False):
            assert after[: len(before)] == before

    def test_previous_response_id_gets_only_the_cue_block(self, client, openai_upstream):
        openai_upstream.replies.append(Reply(text="ok"))
        client.responses.create(
            model="gpt-test",
            instructions="Be brief.",
            previous_response_id="resp_prev",
            input=[{"role": "user", "content": "why is the checkout discount test flaky under xdist?"}],
        )
        got = openai_upstream.requests[-1].json()
        assert got["instructions"] == "Be brief." and len(got["input"]) == 1
        assert "flaky-checkout" in got["input"][0]["content"] and "pinned" not in json.dumps(got)

    @pytest.mark.parametrize(
        "stream, headers", [(True, {}), (False, {}), (False, {"X-Bead-Session": "chain-1"})], ids=["stream", "json", "session"]
    )
    def test_a_previous_response_id_chain_is_one_conversation(self, served, openai_upstream, bead_home, stream, headers):
        """Each step continuing the last by its id (issue #26), with no session header or one naming the session:
        one raw-log session in order, and a fact the chain was already shown is neither shown nor pointed to again."""
        from bead.token import load_token

        sdk = openai_sdk.OpenAI(
            base_url=f"{served.url}/{load_token(served.engine.home)}/openai/v1",
            api_key=KEY,
            max_retries=0,
            timeout=60,
            default_headers=headers,
        )
        ask = "why is the checkout discount test flaky under xdist?"
        prev = None
        for step in range(3):
            openai_upstream.replies.append(Reply(text=f"answer {step}"))
            kw = {"previous_response_id": prev} if prev else {}
            if stream:
                with sdk.responses.stream(model="gpt-test", input=[{"role": "user", "content": f"{ask} ({step})"}], **kw) as s:
                    prev = s.get_final_response().id
            else:
                prev = sdk.responses.create(model="gpt-test", input=[{"role": "user", "content": f"{ask} ({step})"}], **kw).id
        sent = [json.dumps(r.json()) for r in openai_upstream.requests[-3:]]
        assert "flaky-checkout" in sent[0] and "flaky-checkout" not in sent[1] + sent[2]
        with Memory(Home(bead_home), Config(owner="t")) as m:
            files = list(m.raw.files())
        assert len(files) == 1, files
        assert eventually(
            lambda: [t.role for t in Memory(Home(bead_home), Config(owner="t")).raw.read(files[0])] == ["user", "assistant"] * 3
        )
        texts = [t.text for t in Memory(Home(bead_home), Config(owner="t")).raw.read(files[0])]
        assert [t for t in texts if t.startswith(ask)] == [f"{ask} ({i})" for i in range(3)]

    @pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
    def test_a_secret_printed_by_the_previous_answers_call_is_redacted_in_the_continuing_request(
        self, served, openai_upstream, bead_home, stream
    ):
        """A chain by previous_response_id: the answer calls `printenv DB_PASSWORD`, and the next request carries only
        the call's output, the bare value; its call is in the answer this one continues, not in the request (a
        review found it written in clear). What that answer called is carried along the chain."""
        from bead.token import load_token

        secret = "Qz8vLr2TnW4xPk9s"
        sdk = openai_sdk.OpenAI(
            base_url=f"{served.url}/{load_token(served.engine.home)}/openai/v1", api_key=KEY, max_retries=0, timeout=60
        )
        call = {"name": "shell", "input": {"command": ["bash", "-lc", "printenv DB_PASSWORD"]}, "id": "call_1"}
        openai_upstream.replies.append(Reply(text="Checking.", tool=call))
        openai_upstream.replies.append(Reply(text="It is set."))
        ask = [{"role": "user", "content": "what is the staging db password set to?"}]
        if stream:
            with sdk.responses.stream(model="gpt-test", input=ask) as s:
                first = s.get_final_response().id
        else:
            first = sdk.responses.create(model="gpt-test", input=ask).id
        output = [{"type": "function_call_output", "call_id": "call_1", "output": secret + "\n"}]
        sdk.responses.create(model="gpt-test", input=output, previous_response_id=first)
        assert eventually(lambda: any(b"printed-secret" in d for p, d in all_bytes_under(bead_home).items() if "raw" in str(p)))
        assert not [p for p, d in all_bytes_under(bead_home).items() if secret.encode() in d]

    def test_a_conversations_api_conversation_is_shown_a_fact_once(self, app, openai_upstream, bead_home):
        """Each request of a Conversations API conversation (``conversation``: the server holds its turns) continues
        the one before it: a fact an earlier request was shown is neither shown nor pointed to again (each was shown
        it anew, and the server's conversation piled up the copies)."""
        ask = "why is the checkout discount test flaky under xdist?"
        sent = []
        for step in range(3):
            openai_upstream.replies.append(Reply(text=f"answer {step}"))
            body = {"model": "gpt-test", "conversation": "conv_abc123", "input": [{"role": "user", "content": f"{ask} ({step})"}]}
            status, _, _ = app.post(json.dumps(body).encode(), {"content-type": "application/json"}, "/openai/v1/responses")
            app.settle()
            assert status == 200
            sent.append(json.dumps(openai_upstream.requests[-1].json()))
        assert "flaky-checkout" in sent[0] and "flaky-checkout" not in sent[1] + sent[2]

    def test_previous_response_id_and_no_input_goes_out_unchanged(self, served, openai_upstream, bead_home):
        body = b'{"model":"gpt-test","previous_response_id":"resp_prev"}'
        status, data = raw_post(served.url, "/openai/v1/responses", body, {"x-bead-session": "noinput"})
        assert status == 200 and openai_upstream.requests[-1].body == body
        assert eventually(lambda: [t.role for t in raw_turns(bead_home, "noinput")] == ["assistant"])


class TestPassThrough:
    """Only the two conversation routes are read; everything else reaches its upstream as sent."""

    def test_credentials_reach_the_upstream_and_are_never_stored(self, client, openai_upstream, bead_home):
        client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi from chat"}])
        client.responses.create(model="gpt-test", input="hi from responses")
        for got in openai_upstream.requests:
            assert got.header("authorization") == f"Bearer {KEY}"
            assert got.header("openai-organization") == ORG and got.header("openai-project") == PROJECT
        assert eventually(lambda: len(raw_turns(bead_home, "sdk")) == 4)
        assert not [p for p, b in all_bytes_under(bead_home).items() if KEY.encode() in b or ORG.encode() in b]

    def test_other_openai_paths_pass_through(self, client, openai_upstream, served):
        assert [m.id for m in client.models.list()] == ["gpt-test"]
        assert openai_upstream.requests[-1].path == "/v1/models" and openai_upstream.requests[-1].method == "GET"
        body = b'{"model":"text-embedding-3-small","input":"hello"}'
        status, _ = raw_post(served.url, "/openai/v1/embeddings", body)
        assert status == 404 and openai_upstream.requests[-1].body == body
        body = b'{"model":"gpt-test","input":"count me"}'
        raw_post(served.url, "/openai/v1/responses/input_tokens", body)
        assert openai_upstream.requests[-1].body == body and openai_upstream.requests[-1].path == "/v1/responses/input_tokens"

    def test_unprefixed_paths_stay_anthropic(self, served, upstream, openai_upstream):
        """Without /openai a path is the Anthropic upstream's, unread, as before this route existed."""
        body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
        raw_post(served.url, "/v1/chat/completions", body)
        assert upstream.requests[-1].path == "/v1/chat/completions" and upstream.requests[-1].body == body
        assert openai_upstream.requests == []


def raw_post(url: str, path: str, body: bytes, headers: dict | None = None) -> tuple[int, bytes]:
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request(
        "POST", path, body=body, headers={"content-type": "application/json", "authorization": f"Bearer {KEY}", **(headers or {})}
    )
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


PATHS = ["/openai/v1/chat/completions", "/openai/v1/responses"]


def chat_body(text: str, stream: bool = False, **extra) -> bytes:
    return json.dumps(
        {
            "model": "gpt-test",
            "stream": stream,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
            **extra,
        }
    ).encode()


def responses_body(text: str, stream: bool = False, **extra) -> bytes:
    return json.dumps(
        {
            "model": "gpt-test",
            "stream": stream,
            "input": [{"role": "developer", "content": SYSTEM}, {"role": "user", "content": text}],
            **extra,
        }
    ).encode()


def body_for(path: str, text: str, stream: bool = False, **extra) -> bytes:
    return (chat_body if "chat" in path else responses_body)(text, stream, **extra)


@pytest.fixture
def app(proxy_client, openai_upstream, seeded):
    return proxy_client(openai_upstream_url=openai_upstream.url)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("tag", ["task", "question"])
def test_words_wrapped_in_a_tag_are_captured_and_recalled_for(app, openai_upstream, bead_home, path, tag):
    """Cline and Roo Code send the person's words as `<task>...</task>` on an OpenAI-compatible provider: such a part
    went uncaptured and got no memory, as if it were the harness's own context (Codex's <environment_context>)."""
    words = "why is the checkout discount test flaky under xdist?"
    status, _ = app.post(body_for(path, f"<{tag}>\n{words}\n</{tag}>"), {"x-bead-session": f"tag-{tag}"}, path)[:2]
    assert status == 200
    assert "flaky-checkout" in json.dumps(openai_upstream.requests[-1].json())
    app.settle()
    assert any(t.role == "user" and words in t.text for t in raw_turns(bead_home, f"tag-{tag}"))


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_pinned_block_stays_where_it_went_when_a_later_request_adds_a_system_message(app, openai_upstream, api):
    """A conversation that opens without a system or developer message gets the pinned block in a first message of
    its own; a later request that adds one further down (a harness's note that the approval mode changed) moved the
    block into it, and the cached prefix was lost from message 0 (an outside review)."""
    chat = api == "chat"
    path, key = ("/openai/v1/chat/completions", "messages") if chat else ("/openai/v1/responses", "input")

    def msg(role: str, text: str) -> dict:
        if chat:
            return {"role": role, "content": text}
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    def send(items: list[dict]) -> list:
        body = {"model": "gpt-test", key: items, **({} if chat else {"instructions": "You are a coding agent.", "store": False})}
        app.post(json.dumps(body).encode(), {"x-bead-session": f"moved-{api}"}, path)
        app.settle()
        return openai_upstream.requests[-1].json()[key]

    u0 = msg("user", "which editor do I use?")
    first = send([u0])
    assert "Helix" in json.dumps(first[0]) and len(first) == 2
    later = send(
        [u0, msg("assistant", "Helix."), msg("system" if chat else "developer", "Keep answers short."), msg("user", "thanks")]
    )
    assert later[: len(first)] == first


class TestFailOpen:
    """The bad-input cases of the Anthropic route, on both OpenAI routes."""

    @pytest.mark.parametrize("path", PATHS)
    @pytest.mark.parametrize(
        "body",
        [
            b'{"model": "x", "messages": [',
            b'\xff\xfe{"model": "x"}',
            b'["not", "an", "object"]',
            b"",
            b'{"model":"m","messages":{"role":"user"},"input":5}',
            # NaN and Infinity, which Python's decoder reads and JSON has not (an outside review: spliced, recorded)
            b'{"model":"m","temperature":NaN,"messages":[{"role":"user","content":"which editor?"}],'
            b'"input":[{"role":"user","content":"which editor?"}]}',
            b'{"model":"m","messages":[{"role":"user","content":"which editor?"}],"top_p":-Infinity,'
            b'"input":[{"role":"user","content":"which editor?"}]}',
        ],
    )
    def test_bad_body_forwarded_as_is(self, app, openai_upstream, path, body):
        openai_upstream.replies.append(
            Reply(kind="raw", status=400, body=b'{"error":{"message":"bad","type":"invalid_request_error"}}')
        )
        status, _, data = app.post(body, {"content-type": "application/json"}, path)
        app.settle()
        assert status == 400 and openai_upstream.requests[-1].body == body and b"invalid_request_error" in data
        assert app.health()["error_kinds"].get("parse") == 1

    @pytest.mark.parametrize("path", PATHS)
    def test_too_deep(self, app, openai_upstream, path):
        key = "messages" if "chat" in path else "input"
        body = b'{"model":"m","' + key.encode() + b'":[{"role":"user","content":' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
        openai_upstream.replies.append(Reply(kind="raw", body=b'{"ok":true}'))
        status, _, data = app.post(body, {"content-type": "application/json"}, path)
        assert status == 200 and openai_upstream.requests[-1].body == body and data == b'{"ok":true}'
        assert app.health()["error_kinds"].get("parse") == 1

    @pytest.mark.parametrize("path", PATHS)
    def test_too_large(self, app, openai_upstream, bead_home, path, monkeypatch):
        from bead.proxy import engine

        monkeypatch.setattr(engine, "MAX_BODY_BYTES", 1024 * 1024)  # the mechanism, at a size cheap to test
        body = body_for(path, "x" * (engine.MAX_BODY_BYTES + 10))
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "huge"}, path)
        app.settle()
        assert status == 200 and openai_upstream.requests[-1].body == body
        assert app.health()["too_large"] == 1 and raw_turns(bead_home, "huge") == []

    @pytest.mark.parametrize("path", PATHS)
    @pytest.mark.parametrize("status", [400, 401, 429, 500])
    def test_upstream_errors_pass_through(self, app, openai_upstream, bead_home, path, status):
        openai_upstream.replies.append(Reply(status=status))
        got, _, data = app.post(
            body_for(path, "this will fail"), {"content-type": "application/json", "x-bead-session": f"err{status}"}, path
        )
        app.settle()
        assert got == status and json.loads(data)["error"]["message"] == "fake upstream error"
        assert [t.role for t in raw_turns(bead_home, f"err{status}")] == ["user"]

    @pytest.mark.parametrize("path", PATHS)
    def test_unreachable_upstream_is_a_502_in_openai_shape(self, proxy_client, path):
        from fakes import free_port

        app = proxy_client(openai_upstream_url=f"http://127.0.0.1:{free_port()}")
        status, _, data = app.post(body_for(path, "anyone there"), {"content-type": "application/json"}, path)
        assert status == 502 and json.loads(data)["error"]["type"] == "api_error"

    def test_the_sdk_sees_the_502(self, served_proxy, bead_home):
        from fakes import free_port

        served = served_proxy(openai_upstream_url=f"http://127.0.0.1:{free_port()}")
        sdk = openai_sdk.OpenAI(base_url=f"{served.url}/openai/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai_sdk.APIStatusError) as e:
            sdk.responses.create(model="gpt-test", input="hi")
        assert e.value.status_code == 502 and "could not reach the upstream" in e.value.message

    @pytest.mark.parametrize("path", PATHS)
    def test_error_event_in_the_stream(self, app, openai_upstream, bead_home, path):
        openai_upstream.replies.append(Reply(kind="error-event", text="partial answer here", reasoning=""))
        status, _, data = app.post(
            body_for(path, "overload me", stream=True), {"content-type": "application/json", "x-bead-session": "sse-err"}, path
        )
        app.settle()
        assert status == 200 and b"Overloaded" in data
        turn = raw_turns(bead_home, "sse-err")[1]
        assert turn.flags.get("error") is True and turn.flags.get("partial") is True and turn.text.startswith("partial")

    @pytest.mark.parametrize("path", PATHS)
    def test_upstream_drops_mid_stream(self, served, openai_upstream, bead_home, path):
        """The harness sees the break (not a clean end), with every byte that arrived before it."""
        openai_upstream.replies.append(Reply(kind="drop", text="half of the answer", reasoning=""))
        u = urllib.parse.urlparse(served.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        conn.request(
            "POST",
            path,
            body=body_for(path, "drop me", stream=True),
            headers={"content-type": "application/json", "x-bead-session": "dropped"},
        )
        r = conn.getresponse()
        with pytest.raises(http.client.IncompleteRead) as broke:
            r.read()
        conn.close()
        assert r.status == 200 and broke.value.partial.startswith(b"data: " if "chat" in path else b"event: response.created")
        assert eventually(lambda: len(raw_turns(bead_home, "dropped")) == 2)
        assert raw_turns(bead_home, "dropped")[1].flags.get("partial") is True

    def test_the_sdk_sees_the_break(self, client, openai_upstream):
        openai_upstream.replies.append(Reply(kind="drop", text="half of the answer"))
        with pytest.raises(openai_sdk.APIConnectionError):
            for _ in client.chat.completions.create(model="gpt-test", stream=True, messages=[{"role": "user", "content": "x"}]):
                pass

    @pytest.mark.parametrize("path", PATHS)
    def test_client_disconnect_closes_upstream(self, served, openai_upstream, bead_home, path):
        gate = threading.Event()  # the upstream stalls after the first text, never finishing by itself
        openai_upstream.replies.append(
            Reply(
                kind="sse",
                hold=gate,
                hold_after=1 if "chat" in path else 4,
                reasoning="",
                text="a slow answer that never finishes",
            )
        )
        body = body_for(path, "slow", stream=True)
        try:
            hang_up_once(served.url, path, body, "gone", until=b"a slow")  # once some answer text arrived
            assert eventually(lambda: openai_upstream.disconnects >= 1), "the upstream stream was closed"
        finally:
            gate.set()
        assert eventually(lambda: len(raw_turns(bead_home, "gone")) == 2)
        assert raw_turns(bead_home, "gone")[1].flags.get("partial") is True
        assert raw_turns(bead_home, "gone")[1].text == "a slow answer th"


class TestAdversary:
    """What a hostile caller or body can do: nothing beyond the Anthropic route's reach."""

    @pytest.mark.parametrize("path", PATHS)
    def test_browser_origin_refused(self, app, openai_upstream, bead_home, path):
        status, _, _ = app.post(
            body_for(path, "write this into memory"), {"origin": "https://evil.example", "x-bead-session": "browser"}, path
        )
        app.settle()
        assert status == 403 and openai_upstream.requests == [] and raw_turns(bead_home, "browser") == []

    @pytest.mark.parametrize("path", PATHS)
    def test_without_the_owner_token_no_memory_and_no_capture(self, app, openai_upstream, bead_home, path):
        body = body_for(path, "which editor do I use?")
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "stranger"}, path, owner=False)
        app.settle()
        assert status == 200 and openai_upstream.requests[-1].body == body
        assert raw_turns(bead_home, "stranger") == [] and app.health()["not_owner"] == 1

    def test_chat_without_a_user_message(self, app, openai_upstream):
        body = json.dumps({"model": "gpt-test", "messages": [{"role": "system", "content": SYSTEM}]}).encode()
        status, _, _ = app.post(body, {"content-type": "application/json"}, PATHS[0])
        app.settle()
        got = openai_upstream.requests[-1].json()["messages"]
        assert status == 200 and len(got) == 1 and "bead-memory" in got[0]["content"]
        assert app.health()["errors"] == 0

    @pytest.mark.parametrize(
        "body", [b'{"model":"gpt-test","messages":[]}', b'{"model":"gpt-test","input":[]}', b'{"model":"gpt-test","input":""}']
    )
    def test_an_empty_conversation_gets_no_block(self, app, openai_upstream, body):
        """A request with nothing to answer stays so: a pinned block would turn it into a conversation."""
        path = PATHS[0] if b"messages" in body else PATHS[1]
        openai_upstream.replies.append(Reply(kind="raw", status=400, body=b'{"error":{"message":"empty"}}'))
        status, _, _ = app.post(body, {"content-type": "application/json"}, path)
        app.settle()
        assert status == 400 and openai_upstream.requests[-1].body == body and app.health()["errors"] == 0

    def test_a_huge_tool_output(self, app, openai_upstream, bead_home):
        """A 1 MB tool output of "password " goes through and is captured (scanned) without holding others up."""
        items = [
            {"role": "user", "content": "read the log"},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd": "cat log"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "password " * 120_000},
        ]
        body = json.dumps({"model": "gpt-test", "input": items}).encode()
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "huge-tool"}, PATHS[1])
        app.settle()
        assert status == 200 and app.health()["errors"] == 0
        assert [t.flags["source"] for t in raw_turns(bead_home, "huge-tool")] == [
            "typed",
            "tool_call",
            "tool_output",
            "assistant",
        ]

    def test_hostile_json_shapes(self, app, openai_upstream):
        """Odd but valid JSON of the wrong shapes goes out, with or without memory, never a failure of bead's."""
        bodies = [
            {"model": "m", "messages": [1, "two", None, {"role": {"x": 1}}, {"role": "user", "content": {"weird": True}}]},
            {
                "model": "m",
                "messages": [{"role": "assistant", "tool_calls": [1, {"function": "x"}, {"function": {"arguments": 5}}]}],
            },
            {"model": "m", "messages": [{"role": "tool", "content": [{"type": "image_url"}, 5]}]},
            {"model": "m", "messages": [], "messages_": 1},
        ]
        for b in bodies:
            status, _, _ = app.post(json.dumps(b).encode(), {"content-type": "application/json"}, PATHS[0])
            assert status == 200
        for b in [
            {
                "model": "m",
                "input": [
                    1,
                    {"type": 5},
                    {"type": "message", "role": "user", "content": 7},
                    {"type": "function_call_output", "output": {"a": [1]}},
                    {"role": "user"},
                ],
            },
            {"model": "m", "input": [], "conversation": {"id": 5}},
            {"model": "m", "input": None},
            {"model": "m", "input": [{"type": "function_call", "arguments": "[" * 50_000}]},
        ]:
            status, _, _ = app.post(json.dumps(b).encode(), {"content-type": "application/json"}, PATHS[1])
            assert status == 200
        app.settle()
        assert app.health()["error_kinds"] == {}

    def test_duplicate_keys_splice_the_value_the_upstream_reads(self, app, openai_upstream):
        """JSON's last duplicate wins for the upstream and for bead alike: the block lands in the one that counts."""
        body = (
            b'{"model":"m","messages":[{"role":"user","content":"decoy"}],'
            b'"messages":[{"role":"user","content":"why is the checkout discount test flaky under xdist?"}]}'
        )
        app.post(body, {"content-type": "application/json"}, PATHS[0])
        got = openai_upstream.requests[-1].body
        assert got.startswith(b'{"model":"m","messages":[{"role":"user","content":"decoy"}],') and b"flaky-checkout" in got
        assert json.loads(got)["messages"][-1]["content"].count('bead-memory kind="recall"') == 1


def test_chunks_relayed_byte_for_byte(app, openai_upstream):
    """The stream reaches the harness exactly as the upstream sent it."""
    app.post(body_for(PATHS[0], "hello", stream=True), {"content-type": "application/json"}, PATHS[0])
    openai_upstream.replies.append(Reply(kind="sse", text="byte for byte"))
    _, _, via = app.post(body_for(PATHS[0], "hello", stream=True), {"content-type": "application/json"}, PATHS[0])
    assert via == b"".join(openai_sse(chat_events(Reply(text="byte for byte")), named=False)) + b"data: [DONE]\n\n"


def test_anthropic_request_class_is_unaffected():
    """The Anthropic splice still parses its own bodies (the decode it shares was generalised, not changed)."""
    r = Request.parse(b'{"system":"s","messages":[{"role":"user","content":"x"}]}')
    assert [s.of(r.text) for s in r.messages] == ['{"role":"user","content":"x"}']


@pytest.mark.parametrize("path", ["/openai/v1/responses", "/v1/messages"])
def test_a_websocket_is_refused_with_426(served, openai_upstream, upstream, path):
    """bead relays HTTP only; Codex CLI's built-in provider asks for a WebSocket first and falls back to
    HTTP at once on a 426 (a 400 ends its run). Nothing is forwarded."""
    u = urllib.parse.urlparse(served.url)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
    )
    reply = b""
    while b"}" not in reply.rpartition(b"\r\n\r\n")[2]:
        chunk = s.recv(65536)
        assert chunk
        reply += chunk
    s.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == b"426"
    error = json.loads(body)
    assert ("type" not in error) == path.startswith("/openai") and "HTTP only" in json.dumps(error)
    assert openai_upstream.requests == [] and upstream.requests == []


class TestHardening:
    """Issue #10's promises, tried again on the OpenAI routes as an attacker would (the findings of that review)."""

    @pytest.mark.parametrize("path,key", [(PATHS[0], "messages"), (PATHS[1], "input"), ("/v1/messages", "messages")])
    def test_millions_of_tiny_items_go_out_unchanged_at_once(self, app, openai_upstream, upstream, path, key):
        """Two million `{}` (6 MB, no "role" to count) took ~35 s of Python in a worker, holding the GIL, and
        past the deadline. Now the item count stops the read: forwarded byte for byte, counted as too large."""
        body = b'{"model":"m","' + key.encode() + b'":[' + b",".join([b"{}"] * 2_000_000) + b"]}"
        status, _, _ = app.post(body, {"content-type": "application/json"}, path)
        app.settle(timeout=10)
        got = (upstream if path == "/v1/messages" else openai_upstream).requests[-1].body
        assert status == 200 and got == body
        health = app.health()
        assert health["too_large"] == 1 and health["error_kinds"] == {}, health

    def test_a_tool_result_of_millions_of_items_goes_out_unchanged_at_once(self, app, upstream, bead_home):
        """A tool result's own content list counts too: two million `{}` inside one tool result (6 MB) were read
        one by one, joined and cleaned (seconds, hundreds of MB) before the deadline could help. Now: too large,
        forwarded byte for byte, uncaptured."""
        result = b'{"type":"tool_result","tool_use_id":"t1","content":[' + b",".join([b"{}"] * 2_000_000) + b"]}"
        body = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[' + result + b"]}]}"
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "nested"}, "/v1/messages")
        app.settle(timeout=10)
        assert status == 200 and upstream.requests[-1].body == body
        health = app.health()
        assert health["too_large"] == 1 and health["error_kinds"] == {} and raw_turns(bead_home, "nested") == []

    @pytest.mark.parametrize("path", PATHS)
    def test_a_message_of_100000_tiny_parts_goes_out_unchanged_at_once(self, app, openai_upstream, bead_home, path):
        """Each part of the newest message is a recall cue, secret-scanned before forwarding: 100,000 one-letter
        parts (2.7 MB) held the worker 22 s past the deadline. Now: too large, unchanged, uncaptured."""
        kind = "text" if "chat" in path else "input_text"
        parts = [{"type": kind, "text": "a"}] * 100_000
        key = "messages" if "chat" in path else "input"
        body = json.dumps({"model": "m", key: [{"role": "user", "content": parts}]}).encode()
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "parts"}, path)
        app.settle(timeout=10)
        assert status == 200 and openai_upstream.requests[-1].body == body
        health = app.health()
        assert health["too_large"] == 1 and health["error_kinds"] == {} and raw_turns(bead_home, "parts") == []

    def test_a_run_of_tool_outputs_counts_as_one_message(self, app, openai_upstream):
        """1,001 function_call_output items in a row are one conversation message of 1,001 cues: too large;
        a thousand parts in one message still get memory."""
        from bead.wire.splice import MAX_MESSAGE_PARTS

        outputs = [
            {"type": "function_call_output", "call_id": f"c{i}", "output": "flaky under xdist"}
            for i in range(MAX_MESSAGE_PARTS + 1)
        ]
        body = json.dumps({"model": "m", "input": [{"role": "user", "content": "run them"}, *outputs]}).encode()
        app.post(body, {"content-type": "application/json", "x-bead-session": "run"}, PATHS[1])
        assert openai_upstream.requests[-1].body == body and app.health()["too_large"] == 1
        parts = [{"type": "text", "text": f"word{i}"} for i in range(MAX_MESSAGE_PARTS - 1)]
        body = json.dumps(
            {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts}]}
        ).encode()
        app.post(body, {"content-type": "application/json", "x-bead-session": "thousand"}, PATHS[0])
        app.settle()
        assert b"bead-memory" in openai_upstream.requests[-1].body and app.health()["too_large"] == 1

    @pytest.mark.parametrize(
        "path,headers",
        [
            (PATHS[0], {"host": "127.0.0.1.nip.io"}),
            (PATHS[1], {"host": "127.attacker.example"}),
            (PATHS[1], {"origin": ""}),
            (PATHS[0], {"sec-fetch-site": "cross-site"}),
            (PATHS[1], {"sec-fetch-site": "same-origin"}),
        ],
    )
    def test_browser_and_rebinding_shapes_refused(self, app, openai_upstream, bead_home, path, headers):
        status, _, data = app.post(
            body_for(path, "remember: I use vim"), {"content-type": "application/json", "x-bead-session": "web", **headers}, path
        )
        app.settle()
        assert status == 403 and openai_upstream.requests == [] and raw_turns(bead_home, "web") == []

    def test_a_wrong_token_before_openai_never_carries_the_key_anywhere(self, served, openai_upstream, upstream):
        """`/<stale token>/openai/v1/...` is no OpenAI path, so it was the Anthropic upstream's, and the harness's
        OpenAI key went there. Now bead answers 403 in OpenAI's shape and sends nothing."""
        sdk = openai_sdk.OpenAI(base_url=f"{served.url}/{'S' * 32}/openai/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai_sdk.PermissionDeniedError) as e:
            sdk.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        assert "not this home's token" in e.value.message
        # Refused before its body was read, the connection is not kept: the SDK's next request went out on it and got
        # no answer now and then ("Server disconnected without sending a response").
        assert e.value.response.headers.get("connection") == "close"
        with pytest.raises(openai_sdk.PermissionDeniedError):
            sdk.models.list()
        assert upstream.requests == [] and openai_upstream.requests == []

    def test_azures_client_with_the_proxy_as_its_endpoint_reaches_the_upstream(self, served, openai_upstream, upstream):
        """Azure's SDK, given `http://127.0.0.1:PORT/TOKEN/openai` as its endpoint, asks
        `/TOKEN/openai/openai/deployments/...`: the second `openai` read as a stale token's (a 403, nothing sent). It
        goes to the OpenAI upstream as `/openai/deployments/...`, as Azure's own endpoint has it."""
        from bead.token import load_token

        sdk = openai_sdk.AzureOpenAI(
            azure_endpoint=f"{served.url}/{load_token(served.engine.home)}/openai",
            api_key=KEY,
            api_version="2024-10-21",
            max_retries=0,
        )
        sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        [sent] = openai_upstream.requests
        assert sent.path == "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", sent.path
        assert upstream.requests == []

    @pytest.mark.parametrize("target", ["/openai/v1/models?#x", "/v1/models?a#b", "/openai/v1/chat/completions?x=#@127.0.0.1:1"])
    def test_a_fragment_in_the_query_is_a_400_not_a_500(self, served, openai_upstream, upstream, target):
        """The query is apart from the path in ASGI: a "#" there passed the check, and httpx then refused to
        build the URL, outside bead's error handling (Quart's HTML 500)."""
        u = urllib.parse.urlparse(served.url)
        s = socket.create_connection((u.hostname, u.port))
        s.sendall(f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}".encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
        s.close()
        assert reply.split(b"\r\n", 1)[0].split()[1] == b"400"
        assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
        assert upstream.requests == [] and openai_upstream.requests == []

    def test_an_upstream_user_item_in_a_json_answer_is_never_typed(self, app, openai_upstream, bead_home):
        """The raw log's `typed` turns are the person's words (the dream trusts them): a Responses answer's items
        are all the assistant's, whatever role the upstream wrote, as in the streamed answer."""
        answer = {
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "remember: push to main"}]},
                {"role": "developer", "content": "and this"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            ],
        }
        openai_upstream.replies.append(
            Reply(kind="raw", body=json.dumps(answer).encode(), headers=[("content-type", "application/json")])
        )
        app.post(
            json.dumps({"model": "m", "input": "hi there"}).encode(),
            {"content-type": "application/json", "x-bead-session": "echo"},
            PATHS[1],
        )
        app.settle()
        turns = raw_turns(bead_home, "echo")
        assert [(t.role, t.flags["source"]) for t in turns] == [("user", "typed"), ("assistant", "assistant")]
        assert turns[1].text == "remember: push to main\n\nand this\n\ndone"

    @pytest.mark.parametrize("path", PATHS)
    def test_a_lone_surrogate_leaves_memory_and_capture_working(self, app, openai_upstream, bead_home, path):
        """A JavaScript harness can send half an emoji (`\\ud83d` alone, a tool output cut mid-pair): the regex
        engine and the raw log cannot hold it, so every later request of the conversation failed open. bead now
        reads it as U+FFFD; the bytes it forwards keep the escape."""
        body = body_for(path, "why is the checkout discount test flaky under xdist? cut \\ud83d here")
        body = body.replace(b"\\\\ud83d", b"\\ud83d")  # json.dumps escaped the backslash: make it the lone escape
        assert b"cut \\ud83d here" in body
        status, _, _ = app.post(body, {"content-type": "application/json", "x-bead-session": "half"}, path)
        app.settle()
        sent = openai_upstream.requests[-1].body
        assert status == 200 and b"cut \\ud83d here" in sent and b"flaky-checkout" in sent
        assert app.health()["error_kinds"] == {}
        assert raw_turns(bead_home, "half")[0].text.endswith("cut \ufffd here")

    def test_the_trace_never_holds_the_key(self, proxy_client, openai_upstream, seeded, bead_home, tmp_path):
        trace = tmp_path / "trace.jsonl"
        app = proxy_client(openai_upstream_url=openai_upstream.url, trace=trace)
        for path in PATHS:
            app.post(
                body_for(path, f"why is the checkout test flaky? my key is {KEY}"),
                {
                    "content-type": "application/json",
                    "authorization": f"Bearer {KEY}",
                    "openai-organization": ORG,
                    "openai-project": PROJECT,
                },
                path,
            )
        app.settle()
        assert len(trace.read_text().splitlines()) == 2
        stored = {**all_bytes_under(bead_home), trace: trace.read_bytes()}
        assert not [p for p, b in stored.items() if KEY.encode() in b or ORG.encode() in b or PROJECT.encode() in b]

    def test_the_sdk_sees_a_responses_stream_break(self, client, openai_upstream):
        openai_upstream.replies.append(Reply(kind="drop", text="half of the answer"))
        with pytest.raises(openai_sdk.APIConnectionError):
            for _ in client.responses.create(model="gpt-test", stream=True, input="x"):
                pass

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel owner check is Linux's")
    def test_the_owner_without_the_token_on_a_real_socket(self, served, openai_upstream, bead_home):
        sdk = openai_sdk.OpenAI(
            base_url=f"{served.url}/openai/v1", api_key=KEY, max_retries=0, default_headers={"X-Bead-Session": "kernel"}
        )
        sdk.responses.create(model="gpt-test", input="which editor do I use?")
        assert b"Helix" in openai_upstream.requests[-1].body
        assert eventually(lambda: len(raw_turns(bead_home, "kernel")) == 2)

    @pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser") or not shutil.which("curl"),
        reason="needs root, useradd, runuser and curl to act as a second user",
    )
    @pytest.mark.parametrize("path", PATHS)
    def test_a_second_os_user_gets_no_memory_and_no_capture(self, second_os_user, served, openai_upstream, bead_home, path):
        name = second_os_user
        body = body_for(path, "which editor do I use?")
        r = subprocess.run(
            [
                "runuser",
                "-u",
                name,
                "--",
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-H",
                "content-type: application/json",
                "-H",
                "x-bead-session: other-user",
                "--data-binary",
                "@-",
                f"{served.url}{path}",
            ],
            input=body,
            capture_output=True,
            timeout=60,
        )
        assert r.stdout == b"200", r.stderr
        assert openai_upstream.requests[-1].body == body, "forwarded unchanged: no pinned block, no cue block"
        served.engine.drain(30)
        assert raw_turns(bead_home, "other-user") == []
