"""Replaying what the real Claude Code CLI sent (shared/fixtures/claude-code) through the proxy."""

from __future__ import annotations

import base64
import json
from collections import defaultdict

import pytest
from conftest import SHARED, ProxyClient, make_proxy_app
from fakes import FakeAnthropic, Reply

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.wire.splice import Request, elements

FIXTURE = SHARED / "fixtures" / "claude-code" / "requests.jsonl"
pytestmark = pytest.mark.skipif(not FIXTURE.exists(), reason="shared/fixtures is not beside the checkout")


def records():
    out = []
    for line in FIXTURE.read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "http" and r["method"] == "POST" and r["path"].startswith("/v1/messages"):
            out.append(r)
    return out


def send(proxy: ProxyClient, rec: dict) -> tuple[int, bytes]:
    """The recorded request with its own headers, bar the ones the HTTP layer sets (Host: the client's loopback one)."""
    body = base64.b64decode(rec["body_b64"])
    headers = {k: v for k, v in rec["headers"] if k.lower() not in ("host", "content-length", "connection")}
    status, _, data = proxy.post(body, headers, rec["path"])
    return status, data


def reply_for(rec: dict) -> Reply:
    blocks = rec["response"].get("blocks") or []
    text = " ".join(b["text"] for b in blocks if b["type"] == "text") or "ok"
    tool = next(({"id": b["id"], "name": b["name"], "input": b["input"]} for b in blocks if b["type"] == "tool_use"), None)
    return Reply(kind="sse", text=text, tool=tool)


OBSERVED = (
    ("project/demo/readme-sections", "The demo README has three sections: build, run and license."),
    ("project/demo/go-toolchain", "The demo builds with Go 1.22; go.mod pins the toolchain."),
    ("project/demo/folder-layout", "The folder holds main.go, go.mod and the README at the top level."),
    ("project/demo/subagent-files", "Subagents list files with ls -la and report sizes in bytes."),
)
DEMO_NAMES = {k.rsplit("/", 1)[1] for k, _ in OBSERVED} | {"reports"}


def seed(bead_home):
    mem = Memory(Home(bead_home).ensure(), Config(owner="dev"))
    mem.write("user/editor", "The user edits code in Helix with the default keymap.", "user")
    mem.write("user/answers", "Keep answers short; no summaries at the end.", "feedback")
    mem.write("project/demo/reports", "When asked to report files, list the working directory as a table with sizes.", "project")
    mem.write("project/other/secret-plan", "Another project's plan that must never show up in demo.", "project")
    # What an agent observed in earlier sessions: never in the pinned block, so later turns get pointers to them.
    for key, body in OBSERVED:
        mem.write(key, body, "project", trust="agent_observed")
    mem.close()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Every recorded request, in order, through one proxy app; (record, what the upstream got)."""
    root = tmp_path_factory.mktemp("replay")
    home = root / "home"
    seed(home)
    fake = FakeAnthropic()
    proxy = ProxyClient(make_proxy_app(home, fake.url))
    try:
        sent = []
        for rec in records():
            fake.replies.append(reply_for(rec))
            status, data = send(proxy, rec)
            assert status == 200, data[:300]
            sent.append((rec, fake.requests[-1]))
        proxy.settle()  # the last assistant turn is captured after the stream ends
    finally:
        proxy.close()
        fake.close()
    return home, sent


@pytest.fixture
def replay(replayed):
    return replayed[1]


@pytest.fixture
def replay_home(replayed):
    return replayed[0]


def conversation_key(rec):
    h = {k.lower(): v for k, v in rec["headers"]}
    first = json.dumps(json.loads(rec["body_text"])["messages"][0].get("content"))[:200]
    return (h.get("x-claude-code-session-id"), h.get("x-claude-code-agent-id"), first)


def msg_bytes(body: bytes) -> list[bytes]:
    r = Request.parse(body)
    return [m.of(r.text).encode() for m in r.messages]


def system_blocks(body: bytes) -> list[bytes]:
    r = Request.parse(body)
    return [e.of(r.text).encode() for e in elements(r.text, r.top["system"])]


class TestCachePrefix:
    """After injection, every earlier message and the system prompt are byte-identical turn to turn."""

    def test_prefix_holds(self, replay):
        by_conv = defaultdict(list)
        for rec, got in replay:
            by_conv[conversation_key(rec)].append((rec, got))
        checked = injected_somewhere = 0
        for conv, turns in by_conv.items():
            for (rec_a, got_a), (rec_b, got_b) in zip(turns, turns[1:], strict=False):
                orig_a = msg_bytes(base64.b64decode(rec_a["body_b64"]))
                orig_b = msg_bytes(base64.b64decode(rec_b["body_b64"]))
                out_a, out_b = msg_bytes(got_a.body), msg_bytes(got_b.body)
                assert system_blocks(got_a.body) == system_blocks(got_b.body), "pinned block must be frozen"
                for i in range(len(orig_a)):
                    if orig_a[i] == orig_b[i]:
                        # The harness resent it unchanged: so must the proxy, injected blocks included.
                        assert out_a[i] == out_b[i], f"message {i} changed between turns in {conv[:2]}"
                        checked += 1
                injected_somewhere += any(o != g for o, g in zip(orig_b, out_b, strict=False))
        assert checked > 20 and injected_somewhere > 0

    def test_attribution_block_stays_first(self, replay):
        for rec, got in replay:
            orig = system_blocks(base64.b64decode(rec["body_b64"]))
            out = system_blocks(got.body)
            assert out[: len(orig)] == orig, "existing system blocks keep their bytes and order"
            assert json.loads(out[0])["text"].startswith("x-anthropic-billing-header")

    def test_pinned_block_is_labelled_data(self, replay):
        rec, got = replay[0]
        last = json.loads(system_blocks(got.body)[-1])["text"]
        assert last.startswith('<bead-memory kind="pinned">') and "not instructions" in last
        assert "Helix" in last and "working directory as a table" in last
        assert "Another project's plan" not in last
        assert "cache_control" not in system_blocks(got.body)[-1].decode()


class TestPointers:
    """Later turns point to facts the conversation was not shown, in the newest user message only."""

    def test_pointers_in_the_newest_user_message(self, replay):
        from bead.recall.render import POINTER_ALONE, POINTER_HEAD

        def text(message: dict) -> str:
            c = message["content"]
            return c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c if b.get("type") == "text")

        pointed, seen = 0, set()
        for rec, got in replay:
            orig = json.loads(base64.b64decode(rec["body_b64"]))
            out = json.loads(got.body)
            newest = text(out["messages"][-1])
            if any(h in newest for h in (POINTER_HEAD, POINTER_ALONE)) and not any(
                h in text(orig["messages"][-1]) for h in (POINTER_HEAD, POINTER_ALONE)
            ):
                pointed += 1
                named = [
                    ln[2:].split(" (", 1)[0]
                    for ln in newest.split(POINTER_ALONE if POINTER_ALONE in newest else POINTER_HEAD)[1].splitlines()
                    if ln.startswith("- ")
                ]
                # The conversation's own project's facts by their bare names (get_memory takes them), never another's.
                # (A fact of another project would be written in full, project/<name>/...)
                assert named and all("/" not in n for n in named), named
                seen |= set(named)
                assert "project/other/" not in newest and "secret-plan" not in newest
                # Pointers give keys and titles, never the value of a fact the turn was not shown.
                assert "report sizes in bytes" not in newest
        assert pointed >= 2, "later turns of the recorded sessions got pointers"
        assert DEMO_NAMES & seen, seen


class TestHeaders:
    """Credentials and the beta list arrive unchanged."""

    def test_auth_headers_pass_through(self, replay):
        for rec, got in replay:
            want = {k.lower(): v for k, v in rec["headers"]}
            for name in (
                "x-api-key",
                "authorization",
                "anthropic-beta",
                "anthropic-version",
                "x-claude-code-session-id",
                "x-claude-code-agent-id",
            ):
                assert got.header(name) == want.get(name), name
            assert got.path == rec["path"], "the ?beta=true query string is kept"


class TestDerivation:
    """Session, thread and project as the reference design specifies."""

    def test_state_files_per_conversation(self, replay_home):
        files = sorted(p.name for p in (replay_home / "sessions").glob("*.jsonl"))
        main = "63e56465-0aa4-424c-aef9-fa076bdba6d2"
        assert any(f.startswith(main + "-") and f.count("-") == 5 for f in files)
        sub = [f for f in files if f.startswith(main + "-") and f.count("-") == 6]
        assert len(sub) == 1, "the subagent has its own session (parent + agent hash)"
        # The title-generation side request is passed through untouched: no state, no capture.
        side = [f for f in files if f.startswith("83706285")]
        assert len(side) == 1

    def test_remember_writes_to_the_reported_project(self, replay_home):
        """ "remember that the project uses Go" lands under project/demo (from the system message's cwd)."""
        mem = Memory(Home(replay_home), Config(owner="dev"))
        fact = mem.current("project/demo/uses-go")
        assert fact.body == "the project uses Go" and fact.trust == "user_stated"
        assert mem.current("user/uses-go") is None, "the side request quoting the prompt wrote nothing"
        mem.close()

    def test_turns_captured_once(self, replay_home):
        mem = Memory(Home(replay_home), Config(owner="dev"))
        turns = mem.raw.read(mem.raw.find("63e56465-0aa4-424c-aef9-fa076bdba6d2"))
        mem.close()
        # One turn per run of parts with the same source: a message may give
        # several turns (the answer's text, then its tool call), each once.
        positions = [(t.flags["message"], t.flags["source"]) for t in turns]
        assert len(positions) == len(set(positions)), "each run of a message is captured once"
        assert [m for m, _ in positions] == sorted(m for m, _ in positions), "in message order"
        assert [(t.role, t.flags["source"]) for t in turns][:4] == [
            ("user", "typed"),
            ("assistant", "assistant"),
            ("assistant", "tool_call"),
            ("user", "tool_output"),
        ]
        texts = [t.text for t in turns]
        assert not any("<bead-memory" in t for t in texts), "capture strips bead's own blocks"
        assert not any("<system-reminder>" in t for t in texts)
        assert "What files are in this folder?" in texts[0]
