"""Forget: the value's bytes are gone from every file under the home."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime

import pytest
from conftest import all_bytes_under

from bead import forget
from bead.errors import BeadError
from bead.recall.rank import search_facts
from bead.store.rawlog import FORGOTTEN

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)
VALUE = "Zorblax-Quintessence-7741"
SENTENCE = f"The vault code word is {VALUE}."


def leftovers(root, needle: str) -> list[str]:
    """Files whose bytes hold the needle (as written, or lower-cased as FTS5 tokens hold it)."""
    forms = {needle.encode(), needle.lower().encode()} | {w.lower().encode() for w in needle.split("-")}
    return [str(p) for p, data in all_bytes_under(root).items() if any(f in data.lower() for f in forms)]


@pytest.fixture
def full_store(mem):
    """A value everywhere bead keeps text: versions, raw turns, index, episodes, state lines."""
    t1 = mem.append_turns("sess-a", [("user", f"remember: the code word of the vault is {VALUE}", T0, None),
                                      ("assistant", "noted, unrelated reply", T0, None)])
    # Another session states the value in other case and spacing.
    mem.append_turns("sess-b", [("user", "so " + SENTENCE.upper().replace(" ", "  \n"), T0, None)])
    mem.write("user/code-word", SENTENCE, "user", sources=[t1[0].anchor])
    mem.write("user/code-word", f"The vault code word is {VALUE}, since Tuesday.", "user")
    mem.write("user/editor", "Helix, with the default keymap.", "user")
    ep = mem.home.episodes / "2026" / "11" / "05" / "ep1.md"
    ep.parent.mkdir(parents=True)
    ep.write_text(f"situation: the user said {SENTENCE}\n")
    state = mem.home.sessions / "sess-a-abc.jsonl"
    state.write_text(json.dumps({"pinned": f"<bead-memory>{SENTENCE}\n</bead-memory>"}) + "\n" + json.dumps({"injected": ["user/editor@v1"]}) + "\n")
    mem.index.checkpoint()
    assert leftovers(mem.home.root, VALUE), "the value should be on disk before the forget"
    return mem


class TestForgetKey:
    """bead forget KEY removes the value from every file under the home."""

    def test_no_bytes_left_anywhere(self, full_store):
        mem = full_store
        summary = forget.apply(mem, forget.plan_target(mem, "user/code-word"))
        assert summary["keys"] == ["user/code-word"] and summary["versions"] == 2
        mem.close()   # close the connection, as the CLI process does on exit
        assert leftovers(mem.home.root, VALUE) == []
        assert (mem.home.root / "index.db").exists()

    def test_raw_turns_keep_markers(self, full_store):
        mem = full_store
        forget.apply(mem, forget.plan_target(mem, "user/code-word"))
        a = mem.raw.read(mem.raw.find("sess-a"))
        assert [(t.n, t.text) for t in a] == [(1, FORGOTTEN), (2, "noted, unrelated reply")]
        assert a[0].flags["forgotten"] is True
        b = mem.raw.read(mem.raw.find("sess-b"))
        assert b[0].text == FORGOTTEN, "a turn containing the value (any case) is redacted too"

    def test_other_facts_state_lines_and_index_stay(self, full_store):
        mem = full_store
        forget.apply(mem, forget.plan_target(mem, "user/code-word"))
        assert mem.current("user/editor").body.startswith("Helix")
        assert [h.id for h in search_facts(mem.index, "helix keymap")] == ["user/editor@v1"]
        assert search_facts(mem.index, "vault code word") == []
        lines = (mem.home.sessions / "sess-a-abc.jsonl").read_text().splitlines()
        assert lines == [json.dumps({"injected": ["user/editor@v1"]})]
        assert not (mem.home.episodes / "2026" / "11" / "05" / "ep1.md").exists()
        assert not (mem.home.facts / "user" / "code-word").exists()

    def test_paraphrase_stays_until_match(self, mem):
        """forget KEY finds turns by citation or exact value; --match finds the rest."""
        mem.append_turns("s", [("user", f"my locker combination, {VALUE}, is private", T0, None)])
        mem.write("user/locker", f"Locker combination: {VALUE}", "user")
        forget.apply(mem, forget.plan_target(mem, "user/locker"))
        assert VALUE in mem.raw.read(mem.raw.find("s"))[0].text
        forget.apply(mem, forget.plan_match(mem, VALUE))
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_forget_one_version_by_id(self, mem):
        mem.write("user/shell", "bash is the login shell", "user")
        mem.write("user/shell", "fish is the login shell", "user")
        forget.apply(mem, forget.plan_target(mem, "user/shell@v2"))
        assert mem.current("user/shell").body == "bash is the login shell"
        assert [h.id for h in search_facts(mem.index, "login shell")] == ["user/shell@v1"]

    def test_unknown_key(self, mem):
        with pytest.raises(BeadError):
            forget.plan_target(mem, "user/nothing-here")

    def test_refuses_inside_git_repository(self, mem):
        mem.write("user/x", "some value", "user")
        subprocess.run(["git", "init", "-q", str(mem.home.root)], check=True)
        with pytest.raises(BeadError) as e:
            forget.apply(mem, forget.plan_target(mem, "user/x"))
        assert "git" in e.value.message and "BEAD_HOME" in e.value.hint
        assert mem.current("user/x") is not None


class TestForgetMatch:
    """--match forgets every key and raw turn containing the text, after confirmation."""

    def test_match_is_case_and_whitespace_insensitive(self, full_store):
        mem = full_store
        plan = forget.plan_match(mem, "vault   CODE word")
        assert sorted(plan.keys) == ["user/code-word"]
        assert {n for ns in plan.turns.values() for n in ns} == {1}

    def test_short_match_refused(self, mem):
        with pytest.raises(BeadError):
            forget.plan_match(mem, " a ")

    def test_cli_lists_and_asks(self, full_store, bead):
        mem = full_store
        mem.close()
        r = bead("forget", "--match", VALUE.lower(), input="n\n")
        assert r.code == 1 and "aborted" in r.err
        assert "key user/code-word" in r.err and "raw turn" in r.err
        assert "sess-a.md#turn-1" in r.err and "sess-b.md#turn-1" in r.err
        assert mem.current("user/code-word") is not None, "declining changes nothing"
        r = bead("forget", "--match", VALUE.lower(), "--yes", "--json")
        assert r.code == 0, r.err
        out = json.loads(r.out)
        assert out["keys"] == ["user/code-word"] and out["raw_turns_redacted"] == 2
        assert leftovers(mem.home.root, VALUE) == []

    def test_cli_forget_key(self, bead):
        assert bead("write", "user/pet", "A cat named Biscotti-Wobble", "--type", "user").code == 0
        r = bead("forget", "user/pet")
        assert r.code == 0 and "forgot 1 key" in r.out
        assert bead("show", "user/pet").code == 1
        r = bead("write", "user/pet", "A cat named Biscotti-Wobble", "--type", "user", "--trust", "agent_observed")
        assert r.code == 1 and "tombstone" in r.err


def test_forget_scrubs_the_proxy_trace(mem, monkeypatch, tmp_path):
    """The trace quotes cue text; a forgotten value leaves it too."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps({"cues": [{"source": "user", "text": f"my code is {VALUE}"}]}) + "\n"
                     + json.dumps({"cues": [{"source": "user", "text": "unrelated"}]}) + "\n")
    monkeypatch.setenv("BEAD_TRACE", str(trace))
    mem.write("user/code", f"my code is {VALUE}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/code"))
    assert VALUE not in trace.read_text() and "unrelated" in trace.read_text()
