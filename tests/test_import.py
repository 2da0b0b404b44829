"""bead import claude-code, on transcripts the real Claude Code CLI wrote (tests/fixtures/claude-code-transcripts)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pytest
from conftest import REPO

from bead.core import capture, history
from bead.core.conversation import identify
from bead.wire.anthropic import conversation_of

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-transcripts" / "projects"
MAIN = "b2ac7813-7910-4e32-bac0-838708ad98d9"
OTHER = "e291106f-b274-459f-8084-1319ebbfa94d"
AGENT = "a34541e321dcfdd6b"
SECRET = "ghp_4f8Kq2LmN7pR3sT9vW1xY5zA6bC0dE2gH8jK"


def raw_turns(mem):
    return {p.name: mem.raw.read(p) for p in mem.raw.files()}


def test_fixtures_hold_no_machine_paths_or_keys():
    for p in FIXTURES.rglob("*"):
        if p.is_file():
            text = p.read_text()
            assert "/tmp/" not in text and "sk-ant" not in text and "ccrec" not in text, p


def test_imports_sessions_subagents_and_projects(mem):
    counts = history.import_claude_code(mem, FIXTURES)
    assert counts.files == 3 and counts.sessions == 3 and counts.turns_added > 15
    files = raw_turns(mem)
    subagent = identify({"x-claude-code-session-id": MAIN, "x-claude-code-agent-id": AGENT},
                        conversation_of({"messages": []}, {}), None).session
    assert set(files) == {f"{MAIN}.md", f"{OTHER}.md", f"{subagent}.md"}
    main = files[f"{MAIN}.md"]
    # The person's words, the assistant's text, its tool calls and their output, each with its source.
    assert [t.flags["source"] for t in main[:5]] == ["typed", "assistant", "tool_call", "tool_output", "assistant"]
    assert main[0].text == "List the files in this project please"
    assert main[0].role == "user" and main[1].role == "assistant"
    assert all(t.flags["project"] == "demo" for t in main)
    assert all(t.flags["project"] == "other" for t in files[f"{OTHER}.md"])
    # Times are the transcript's, not the import's.
    assert main[0].at == "2026-11-30T12:44:50Z"
    # Thinking never becomes a turn; the subagent's Bash call is in its own session.
    assert not any("private reasoning" in t.text for ts in files.values() for t in ts)
    assert any("wc -l app.py" in t.text for t in files[f"{subagent}.md"])


def test_secret_scan_runs_as_in_live_capture(mem):
    history.import_claude_code(mem, FIXTURES)
    texts = [t.text for ts in raw_turns(mem).values() for t in ts]
    assert not any(SECRET in t for t in texts)
    flagged = [t for ts in raw_turns(mem).values() for t in ts if t.flags.get("redacted")]
    assert len(flagged) == 1 and "[REDACTED:" in flagged[0].text
    assert not any(SECRET in p.read_text() for p in mem.home.root.rglob("*") if p.is_file() and p.suffix in (".md", ""))


def test_second_run_adds_nothing(mem):
    first = history.import_claude_code(mem, FIXTURES)
    before = {p: p.read_bytes() for p in mem.raw.files()}
    second = history.import_claude_code(mem, FIXTURES)
    assert second.turns_added == 0 and second.turns_present == first.turns_added
    assert {p: p.read_bytes() for p in mem.raw.files()} == before


def test_imported_turns_are_searchable(mem):
    from bead.recall.rank import search_raw

    history.import_claude_code(mem, FIXTURES)
    hits = search_raw(mem.index, "deploy thursdays", limit=5)
    assert hits and hits[0].row["session"] == OTHER


def test_live_capture_then_import_completes_without_doubling(mem):
    """A session the proxy captured live gets only what it lacks."""
    lines = [json.loads(x) for x in (FIXTURES / "-home-dev-src-demo" / f"{MAIN}.jsonl").read_text().splitlines()]
    first_prompt = next(d for d in lines if d.get("type") == "user")["message"]["content"]
    body = {"system": "x\n - Primary working directory: /home/dev/src/demo",
            "messages": [{"role": "user", "content": [{"type": "text", "text": first_prompt}]}]}
    conv = conversation_of(body, {})
    ident = identify({"x-claude-code-session-id": MAIN}, conv, None)
    capture.capture(mem, ident, capture.request_turns(conv, ident, 0))
    counts = history.import_claude_code(mem, FIXTURES)
    assert counts.turns_present == 1
    main = raw_turns(mem)[f"{MAIN}.md"]
    assert [t.text for t in main].count(first_prompt) == 1


def test_project_and_since_filters(mem, tmp_path):
    counts = history.import_claude_code(mem, FIXTURES, project="other")
    assert counts.sessions == 1 and counts.skipped_project == 2
    assert set(raw_turns(mem)) == {f"{OTHER}.md"}
    later = history.import_claude_code(mem, FIXTURES, since=datetime(2027, 1, 1, tzinfo=UTC))
    assert later.turns_added == 0 and later.skipped_old > 0


def test_cli_progress_counts_and_idempotence(bead, tmp_path):
    src = tmp_path / "claude" / "projects"
    shutil.copytree(FIXTURES, src)
    r = bead("import", "claude-code", "--from", str(src))
    assert r.code == 0, r.err
    assert "3 session(s)" in r.out and "added" in r.out
    r2 = bead("import", "claude-code", "--json", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    assert r2.code == 0, r2.err
    data = json.loads(r2.out)
    assert data["turns_added"] == 0 and data["turns_present"] > 15


def test_cli_bad_date(bead):
    r = bead("import", "claude-code", "--since", "last tuesday", "--from", str(FIXTURES))
    assert r.code == 1 and "not a date" in r.err


CODEX = REPO / "tests" / "fixtures" / "codex-sessions" / "sessions"
CODEX_IDS = ["01a22ca3-d242-73c3-b039-42a085e00ac7", "01a22ca3-d89e-7703-a20b-448ba92ce0cd"]


class TestCodex:
    """bead import codex, on rollout files the real Codex CLI wrote (tests/fixtures/codex-sessions)."""

    def test_imports_sessions_with_the_proxys_ids_and_projects(self, mem):
        counts = history.import_codex(mem, CODEX)
        assert counts.files == 2 and counts.sessions == 2 and counts.turns_added == 12
        files = raw_turns(mem)
        # The live proxy names a Codex conversation by its session-id header (the same id as the rollout's,
        # and thread-id equal to it in these recordings).
        live = identify({"session-id": CODEX_IDS[0], "thread-id": CODEX_IDS[0]}, conversation_of({"messages": []}, {}),
                        None).session
        assert sorted(files) == sorted(f"{i}.md" for i in CODEX_IDS) and f"{live}.md" in files
        first = files[f"{CODEX_IDS[0]}.md"]
        assert [t.flags["source"] for t in first[:4]] == ["typed", "tool_call", "tool_output", "assistant"]
        assert first[0].text == "What files are in this folder?" and first[0].at == "2026-11-30T13:27:43Z"
        assert all(t.flags["project"] == "demo" and t.flags["imported"] == "codex" for t in first)
        # The developer prompt and the AGENTS.md block are the harness's; reasoning never becomes a turn.
        text = "\n".join(t.text for ts in files.values() for t in ts)
        assert "AGENTS.md instructions" not in text and "second reviewer" not in text and "private reasoning" not in text

    def test_second_run_adds_nothing(self, mem):
        first = history.import_codex(mem, CODEX)
        before = {p: p.read_bytes() for p in mem.raw.files()}
        again = history.import_codex(mem, CODEX)
        assert again.turns_added == 0 and again.turns_present == first.turns_added
        assert {p: p.read_bytes() for p in mem.raw.files()} == before

    def test_cli(self, bead, tmp_path):
        r = bead("import", "codex", "--from", str(CODEX))
        assert r.code == 0 and "2 session(s)" in r.out, r.err
        r = bead("import", "codex", "--json", env={"CODEX_HOME": str(CODEX.parent)})
        assert json.loads(r.out)["turns_added"] == 0


@pytest.mark.parametrize("line", ["not json", "[1, 2]", '{"type": "user", "message": "x"}'])
def test_lines_that_do_not_parse_are_skipped(mem, tmp_path, line):
    d = tmp_path / "p" / "-x"
    d.mkdir(parents=True)
    good = {"type": "user", "sessionId": "s1", "cwd": "/w/proj", "timestamp": "2026-01-02T03:04:05Z",
            "message": {"role": "user", "content": "hello there"}}
    (d / "s1.jsonl").write_text(line + "\n" + json.dumps(good) + "\n")
    counts = history.import_claude_code(mem, tmp_path / "p")
    assert counts.turns_added == 1 and counts.skipped_lines == 1
