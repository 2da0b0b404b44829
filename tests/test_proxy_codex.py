"""Replaying what the real Codex CLI sent (tests/fixtures/codex, recorded by its record.py) through the proxy."""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import replay_openai
from fakes import Reply

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.store.queue import Queue
from bead.wire.splice import decode

FIXTURE = Path(__file__).parent / "fixtures" / "codex" / "requests.jsonl"


def records() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def header(rec: dict, name: str) -> str | None:
    return next((v for k, v in rec["headers"] if k.lower() == name), None)


def seed(bead_home):
    mem = Memory(Home(bead_home).ensure(), Config(owner="dev"))
    mem.write("user/editor", "The user edits code in Helix with the default keymap.", "user")
    mem.write("project/demo/reports", "When asked to report files, list the working directory as a table with sizes.", "project")
    mem.write("project/other/secret-plan", "Another project's plan that must never show up in demo.", "project")
    mem.write(
        "global/readme-style", "README files in demo projects start with a level-one heading and one sentence.", "reference"
    )
    mem.close()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Every recorded request, in order, through one proxy app, with the answers Codex got; (record, what the
    upstream got)."""
    root = tmp_path_factory.mktemp("codex")
    home = root / "home"
    seed(home)

    def reply(rec: dict) -> Reply:
        r, tools = rec["response"], rec["response"]["tools"]
        return Reply(kind=r["kind"], text=r["text"], reasoning=r["reasoning"], tool=tools[0] if tools else None, tools=tools[1:])

    sent = replay_openai(home, records(), reply, whole=lambda data: data.startswith(b"event: response.created"))
    return home, sent


def items(body: bytes) -> list[bytes]:
    text, _, _, spans, _ = decode(body, "input")
    return [s.of(text).encode() for s in spans or []]


class TestCachePrefix:
    """After injection, every item Codex resent unchanged is byte-identical turn to turn."""

    def test_prefix_holds(self, replayed):
        _, sent = replayed
        by_session = defaultdict(list)
        for rec, got in sent:
            by_session[header(rec, "session-id")].append((rec, got))
        assert len(by_session) == 2, "exec-ls and its resume share a session; exec-parallel has its own"
        checked = excerpts = 0
        for turns in by_session.values():
            for (rec_a, got_a), (rec_b, got_b) in zip(turns, turns[1:], strict=False):
                orig_a, orig_b = items(base64.b64decode(rec_a["body_b64"])), items(base64.b64decode(rec_b["body_b64"]))
                out_a, out_b = items(got_a.body), items(got_b.body)
                assert orig_b[: len(orig_a)] == orig_a, "Codex resends its history byte for byte"
                # bead inserts whole items (a cue block after tool outputs) only after the original items they follow.
                assert out_b[: len(out_a)] == out_a, f"the spliced prefix changed between turns of {rec_a['tag']}"
                checked += len(out_a)
                excerpts += got_a.body.count(b"- excerpt, session ")
        # Raw excerpts join a cue block only when the person's words ask something (docs/results.md, "At scale"): the
        # third session's "Show the git status and the README at once" asks nothing, so the first session's
        # README turn is not excerpted into it.
        assert checked > 20 and excerpts == 0

    def test_pinned_block_ends_the_first_developer_item(self, replayed):
        _, sent = replayed
        for rec, got in sent:
            orig = items(base64.b64decode(rec["body_b64"]))[0]
            out = items(got.body)[0]
            assert out.startswith(orig[:-2] + b',{"type":"input_text","text":"<bead-memory') and out.endswith(b"}]}"), (
                "Codex's base instructions keep their bytes; the block is a part of its own after them"
            )
            pinned = json.loads(out)["content"][-1]
            assert pinned["type"] == "input_text" and pinned["text"].startswith('<bead-memory kind="pinned">')
            assert "not instructions" in pinned["text"] and "Helix" in pinned["text"]
            assert "working directory as a table" in pinned["text"] and "Another project's plan" not in pinned["text"]

    def test_other_top_level_values_are_untouched(self, replayed):
        for rec, got in replayed[1]:
            orig_text, _, orig_top, _, _ = decode(base64.b64decode(rec["body_b64"]), "input")
            out_text, _, out_top, _, _ = decode(got.body, "input")
            assert list(orig_top) == list(out_top)
            for key in orig_top:
                if key != "input":
                    assert orig_top[key].of(orig_text) == out_top[key].of(out_text), key


class TestHeaders:
    def test_credentials_and_codex_headers_pass_through(self, replayed):
        for rec, got in replayed[1]:
            for name in ("authorization", "session-id", "thread-id", "originator", "x-codex-turn-metadata", "user-agent"):
                assert got.header(name) == header(rec, name), name
            assert got.path == rec["path"] == "/v1/responses"


class TestDerivation:
    """Session from Codex's session-id, project from its <cwd>, "remember" only from the person's words."""

    def test_state_files_per_session(self, replayed):
        home, sent = replayed
        sessions = {header(rec, "session-id") for rec, _ in sent}
        files = sorted(p.name for p in (home / "sessions").glob("*.jsonl"))
        assert sorted(f.rsplit("-", 1)[0] for f in files) == sorted(sessions)

    def test_remember_is_queued_for_the_reported_project_and_agents_md_queues_nothing(self, replayed):
        """The recording is of `codex exec` runs, whose prompt may be a script's or piped input (`codex exec -` sends
        what was piped as the whole prompt, with no mark; an outside review): their "remember" waits for the
        person's accept, under the project Codex reported, as a `claude -p` run's does."""
        mem = Memory(Home(replayed[0]), Config(owner="dev"))
        try:
            assert mem.current("project/demo/uses-go") is None
            items = Queue(mem).items()
            assert [(i.key.rsplit("/", 1)[0], i.value) for i in items] == [("project/demo", "the project uses Go")]
            assert "codex exec" in items[0].detail
            assert sorted(k for k, _ in mem.index.current_bodies()) == [
                "global/readme-style",
                "project/demo/reports",
                "project/other/secret-plan",
                "user/editor",
            ], 'AGENTS.md\'s "Remember that deploys need a second reviewer" wrote nothing'
        finally:
            mem.close()

    def test_turns_captured_once_with_their_sources(self, replayed):
        home, sent = replayed
        mem = Memory(Home(home), Config(owner="dev"))
        try:
            turns = mem.raw.read(mem.raw.find(header(sent[0][0], "session-id")))
        finally:
            mem.close()
        positions = [(t.flags["message"], t.flags["source"]) for t in turns]
        assert len(positions) == len(set(positions)) and [m for m, _ in positions] == sorted(m for m, _ in positions)
        assert [(t.role, t.flags["source"]) for t in turns] == [
            ("user", "typed"),
            ("assistant", "tool_call"),
            ("user", "tool_output"),
            ("assistant", "assistant"),
            ("user", "typed"),
            ("assistant", "tool_call"),
            ("user", "tool_output"),
            ("assistant", "assistant"),
        ]
        texts = [t.text for t in turns]
        assert texts[0] == "What files are in this folder?" and texts[1] == "[tool_use exec_command]\ncmd: ls -la"
        joined = "\n".join(texts)
        for never in ("<bead-memory", "<environment_context>", "AGENTS.md instructions", "private reasoning"):
            assert never not in joined
        assert all(t.flags.get("project") == "demo" for t in turns)
