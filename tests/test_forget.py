"""Forget: the value's bytes are gone from every file under the home."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import all_bytes_under, plaintext_secret, reading_index, trace_line

import bead as bead_pkg
from bead.config import Config
from bead.core import forget
from bead.core.memory import Memory
from bead.errors import BeadError, RefusedWrite
from bead.paths import Home
from bead.recall.rank import search_facts
from bead.store.rawlog import FORGOTTEN

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)
# Each part is looked for on its own (as FTS5 holds it): none may be all digits, which a timestamp in a file can hold
# by chance (a key's .state.json once held ...7741...).
VALUE = "Zorblax-Quintessence-77q41"
SENTENCE = f"The vault code word is {VALUE}."


def leftovers(root, needle: str) -> list[str]:
    """Files whose bytes hold the needle (as written, or lower-cased as FTS5 tokens hold it), or one of its parts
    (not one of hex digits alone: "5521" of Quibble-Frost-5521 turns up in some SHA-256 the index keeps, now and
    then, which failed a CI run; nor one of fewer than four characters: "zk" of ZK-4471-B is two bytes that any
    binary page of index.db may hold)."""
    parts = {w.lower() for w in needle.split("-")}
    forms = {needle.encode(), needle.lower().encode()} | {
        w.encode() for w in parts if len(w) >= 4 and not set(w) <= set("0123456789abcdef")
    }
    return [str(p) for p, data in all_bytes_under(root).items() if any(f in data.lower() for f in forms)]


STOPPED_FORGET = "index.db may still hold text a forget or a seal deleted"


def reports_stopped_forget(mem) -> bool:
    """Whether `bead status` says a forget or seal stopped before its checkpoint."""
    from bead.core import health

    return any(STOPPED_FORGET in p["problem"] for p in health.collect(mem)["problems"])


def stop_forget_at(monkeypatch, owner, name: str, mem, plan) -> None:
    """``forget.apply(mem, plan)`` killed (KeyboardInterrupt, as Ctrl-C) where it calls ``owner.name``."""

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(owner, name, killed)
        with pytest.raises(KeyboardInterrupt):
            forget.apply(mem, plan)


@pytest.fixture
def full_store(mem):
    """A value everywhere bead keeps text: versions, raw turns, index, episodes, state lines."""
    t1 = mem.append_turns(
        "sess-a",
        [
            ("user", f"remember: the code word of the vault is {VALUE}", T0, None),
            ("assistant", "noted, unrelated reply", T0, None),
        ],
    )
    # Another session states the value in other case and spacing.
    mem.append_turns("sess-b", [("user", "so " + SENTENCE.upper().replace(" ", "  \n"), T0, None)])
    mem.write("user/code-word", SENTENCE, "user", sources=[t1[0].anchor])
    mem.write("user/code-word", f"The vault code word is {VALUE}, since Tuesday.", "user")
    mem.write("user/editor", "Helix, with the default keymap.", "user")
    ep = mem.home.episodes / "2026" / "11" / "05" / "ep1.md"
    ep.parent.mkdir(parents=True)
    ep.write_text(f"situation: the user said {SENTENCE}\n")
    state = mem.home.sessions / "sess-a-abc.jsonl"
    state.write_text(
        json.dumps({"pinned": f"<bead-memory>{SENTENCE}\n</bead-memory>"})
        + "\n"
        + json.dumps({"injected": ["user/editor@v1"]})
        + "\n"
    )
    mem.index.checkpoint()
    assert leftovers(mem.home.root, VALUE), "the value should be on disk before the forget"
    return mem


class TestForgetKey:
    """bead forget KEY removes the value from every file under the home."""

    def test_no_bytes_left_anywhere(self, full_store):
        mem = full_store
        summary = forget.apply(mem, forget.plan_target(mem, "user/code-word"))
        assert summary["keys"] == ["user/code-word"] and summary["versions"] == 2
        mem.close()  # close the connection, as the CLI process does on exit
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

    def test_a_paraphrase_loses_the_values_distinctive_tokens(self, mem):
        """forget KEY finds turns by citation or exact value, and where the value was said in other words, its
        codes and rare words: those are redacted in place, the rest of the turn stays."""
        mem.append_turns("s", [("user", f"the combo of my locker, {VALUE}, is private", T0, None)])
        mem.write("user/locker", f"Locker combination: {VALUE}", "user")
        summary = forget.apply(mem, forget.plan_target(mem, "user/locker"))
        assert summary["raw_turns_redacted_in_part"] == 1
        assert mem.raw.read(mem.raw.find("s"))[0].text == "the combo of my locker, [forgotten], is private"
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_forget_one_version_by_id(self, mem):
        mem.write("user/shell", "bash is the login shell", "user")
        mem.write("user/shell", "fish is the login shell", "user")
        forget.apply(mem, forget.plan_target(mem, "user/shell@v2"))
        assert mem.current("user/shell").body == "bash is the login shell"
        assert [h.id for h in search_facts(mem.index, "login shell")] == ["user/shell@v1"]
        # The version served again says so (it said `superseded`, and readers labelled the current value so).
        assert mem.current("user/shell").status == "current"
        [row] = mem.index.facts_by_id(["user/shell@v1"])
        assert row["status"] == "current" and row["current"] == 1

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
        with pytest.raises(BeadError):
            forget.plan_match(mem, "&#64;")  # "@" once decoded: every fact with an address would match

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

    def test_cli_names_other_facts_that_still_hold_the_value(self, bead, mem):
        mem.write("user/door", "The backup door code is quokka-marmalade-7731", "user")
        mem.write("project/shop/door-note", "Ops note: the backup door code is quokka-marmalade-7731", "project")
        # sharing a code or a word is not holding the value
        mem.write("project/shop/palette", "The dashboard uses the quokka-marmalade colour scale", "project")
        r = bead("forget", "user/door", "--json")
        assert r.code == 0, r.err
        assert json.loads(r.out)["also_in"] == ["project/shop/door-note"]
        assert "warning: project/shop/door-note still hold(s) the value" in r.err
        assert mem.current("project/shop/door-note") is not None

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
    trace.write_text(
        json.dumps(trace_line("s1", cues=[{"source": "user", "text": f"my code is {VALUE}"}]))
        + "\n"
        + json.dumps(trace_line("s2", cues=[{"source": "user", "text": "unrelated"}]))
        + "\n"
        + '{"at": "2026-12-01T10:00:00+00:00", "session": "s3", "cues": [{"source": "us\n'  # a killed proxy's last line
    )
    monkeypatch.setenv("BEAD_TRACE", str(trace))
    mem.write("user/code", f"my code is {VALUE}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/code"))
    assert VALUE not in trace.read_text() and "unrelated" in trace.read_text()


def test_forget_leaves_a_file_named_as_a_trace_that_is_none_as_it_is(mem, bead, tmp_path):
    """proxy.runtime.jsonl names the traces its proxies wrote, and forget scrubs each. A line planted there named a
    person's notes (or a --trace given the wrong path) and `bead forget --match` rewrote that file outside the
    home, new inode, mode 0600. A file with lines that are not the proxy's records is now left, and said."""
    outside = tmp_path / "outside"
    outside.mkdir()
    notes = outside / "notes.txt"
    notes.write_text(f"keep line 1\nmy vendor {VALUE} here\nkeep line 3\n")
    notes.chmod(0o644)
    transcript = outside / "session.jsonl"  # another program's JSON lines
    transcript.write_text(json.dumps({"sessionId": "x", "message": f"the code is {VALUE}"}) + "\n")
    before = {p: (p.read_bytes(), p.stat().st_ino, p.stat().st_mode) for p in (notes, transcript)}
    lines = [json.dumps({"at": "2026-12-06T00:00:00Z", "pid": 1, "trace": str(p)}) for p in (notes, transcript)]
    mem.home.proxy_runtime.write_text("\n".join(lines) + "\n")
    mem.write("user/code", f"my code is {VALUE}", "user")
    r = bead("forget", "--match", VALUE, "--yes")
    assert r.code == 0, r.err
    assert {p: (p.read_bytes(), p.stat().st_ino, p.stat().st_mode) for p in (notes, transcript)} == before
    assert f"left {notes} as it is" in r.err and f"left {transcript} as it is" in r.err, r.err
    assert mem.current("user/code") is None


def test_a_planted_trace_line_names_no_json_notes_with_comments_and_no_large_file(mem, bead, tmp_path):
    """Lines a person's notes hold (a JSON record and a comment after it, a Windows path's backslashes) do not parse,
    and any such line starting `{"` passed as a trace line a killed proxy cut short: forget rewrote the notes outside
    the home (CRLF gone, bytes replaced). And a planted line naming a gigabyte's file had it read whole, twice. Only a
    record's own start passes cut short, and a file whose first line is no record is not read further."""
    outside = tmp_path / "outside"
    outside.mkdir()
    journal = outside / "journal.log"
    journal.write_bytes(
        f'{{"ts": "2026-01-05", "note": "vault word {VALUE}"}} # from phone\r\n'.encode()
        + b'{"ts": "2026-01-06", "path": "C:\\Users\\me\\caf\xe9.txt"}\r\n'
    )
    notes = outside / "notes.jsonl"  # a person's JSON lines that start as a record does, a Windows path in them
    notes.write_text(
        f'{{"at": "C:\\Users\\me\\vpn.txt", "note": "vault word {VALUE}"}}\n{{"at": "D:\\work\\todo.txt", "note": "call"}}\n'
    )
    image = outside / "disk.img"
    with image.open("wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MB of zeros, no line break
    dump = outside / "dump.json"  # a pretty-printed JSON file: its first line, `{`, is a record's start
    dump.write_text("{\n" + '  "name": "x",\n' * (4 << 20))
    before = {p: (p.read_bytes(), p.stat().st_ino) for p in (journal, notes)}
    lines = [json.dumps({"at": "2026-12-06T00:00:00Z", "pid": 1, "trace": str(p)}) for p in (journal, notes, image, dump)]
    mem.home.proxy_runtime.write_text("\n".join(lines) + "\n")
    mem.write("user/code", f"my code is {VALUE}", "user")
    import tracemalloc

    tracemalloc.start()
    r = bead("forget", "--match", VALUE, "--yes")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r.code == 0, r.err
    assert {p: (p.read_bytes(), p.stat().st_ino) for p in (journal, notes)} == before
    assert all(f"left {p} as it is" in r.err for p in (journal, notes, image, dump)), r.err
    assert peak < 16 << 20, f"the image was read: {peak} bytes at the peak"


def test_the_dashboard_shows_no_records_of_a_file_that_is_no_trace(mem, tmp_path):
    """The dashboard read any file a planted line named and showed its lines that looked like records."""
    from bead.core.overview import injections

    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "my private notes line\n"
        + json.dumps({"at": "2026-01-01", "session": "s", "roles": [], "errors": [], "injected": ["from-a-foreign-file"]})
        + "\n"
    )
    mem.home.proxy_runtime.write_text(json.dumps({"at": "2026-12-06T00:00:00Z", "pid": 1, "trace": str(notes)}) + "\n")
    assert injections(mem) == []


def test_a_planted_trace_line_names_no_app_log_and_no_file_where_forget_runs(mem, bead, tmp_path, monkeypatch):
    """A line planted in proxy.runtime.jsonl named an app's event log (JSON lines, each with a "session") and forget
    rewrote it outside the home, the line that said the value gone; a relative path named such a file in whatever
    folder forget ran from, and the dashboard read it (an outside attack). A trace is a file of the proxy's records,
    each with the fields every one holds, and a proxy records an absolute path."""
    from bead.core import overview

    project = tmp_path / "myproject"
    project.mkdir()
    app_log = [{"session": "a", "event": "build ok"}, {"session": "b", "event": f"deployed to {VALUE}", "injected": ["x"]}]
    for name in ("events.jsonl", "absolute.jsonl"):
        (project / name).write_text("".join(json.dumps(e) + "\n" for e in app_log))
    before = {p: p.read_bytes() for p in project.iterdir()}
    planted = [{"trace": "events.jsonl"}, {"trace": str(project / "absolute.jsonl")}]
    mem.home.proxy_runtime.write_text("".join(json.dumps(p) + "\n" for p in planted))
    monkeypatch.chdir(project)
    assert overview.injections(mem) == []
    mem.write("user/buildhost", f"my build server is {VALUE}", "user")
    r = bead("forget", "user/buildhost", "--yes")
    assert r.code == 0, r.err
    assert {p: p.read_bytes() for p in project.iterdir()} == before
    assert f"left {project / 'absolute.jsonl'} as it is" in r.err, r.err
    assert mem.current("user/buildhost") is None


@pytest.mark.parametrize("how", ["key", "match"])
def test_a_value_spelt_with_a_kappa_or_a_cyrillic_ka_is_forgotten_too(mem, how):
    """Greek kappa and Cyrillic ka read as k, but the confusables table gives them kra (U+0138), not k, so the one
    normal form left them: `zqx-PLUTO-7731-\u03baestrel` stayed in the raw log and the index after forget by key,
    by --match and seal, and a tombstoned value came back so spelt (an outside attack)."""
    value = "zqx-PLUTO-7731-kestrel"
    mem.append_turns(
        "s",
        [
            ("user", f"remember that the probe code is {value}", T0, None),
            ("user", "my old notes spell it zqx-PLUTO-7731-\u03baestrel", T0, None),
            ("user", "and the wiki has zqx-PLUTO-7731-\u043aestrel", T0, None),
            # a review: Cyrillic te and Greek tau, whose look-alike the table gives as a small capital T
            ("user", "the runbook says zqx-PLUTO-7731-kes\u0442rel", T0, None),
            ("user", "the chat says zqx-PLUTO-7731-kes\u03c4rel", T0, None),
            # a third review: Cyrillic em (through turned w and small capital M) and Greek lunate sigma (c to the
            # table, final sigma after normalisation)
            ("user", "the ticket says zqx-PLUTO-7731-\u03baes\u0442rel and zqx-PLUTO-7731-co\u043cet-\u03f2", T0, None),
        ],
    )
    mem.write("project/shop/probe-code", f"The probe code is {value}", "project")
    mem.index.checkpoint()
    target = "project/shop/probe-code" if how == "key" else value
    forget.apply(mem, forget.plan_target(mem, target) if how == "key" else forget.plan_match(mem, target))
    assert leftovers(mem.home.root, "PLUTO-7731") == [] and leftovers(mem.home.root, "zqx-pluto") == []
    for spelt in ("\u03baestrel", "kes\u0442rel", "kes\u03c4rel"):
        with pytest.raises(RefusedWrite):
            mem.write("project/shop/probe", f"The probe code is zqx-PLUTO-7731-{spelt}", "project", trust="agent_observed")


@pytest.mark.parametrize(
    ("needle", "russian"),
    [
        ("bot", "\u0432\u043e\u0442 \u0442\u0430\u043a"),
        ("cobet", "\u0445\u043e\u0440\u043e\u0448\u0438\u0439 \u0441\u043e\u0432\u0435\u0442"),
    ],
)
def test_forget_match_of_an_english_word_spares_a_russian_word_that_reads_like_it(mem, needle, russian):
    """A review of the chained letters: with Cyrillic ve and te read as b and t everywhere, `forget --match bot`
    took a Russian turn saying "\u0432\u043e\u0442 \u0442\u0430\u043a" (that's it). A letter read through a chain is its ASCII letter
    only in a word that holds ASCII letters (`kes\u0442rel`), never in a word of its own script."""
    mem.append_turns("s", [("user", f"my {needle} notes: delete these", T0, None), ("user", russian, T0, None)])
    mem.index.checkpoint()
    forget.apply(mem, forget.plan_match(mem, needle))
    assert russian.encode() in b"".join(all_bytes_under(mem.home.root).values())


class TestRememberedValueLeavesNothing:
    """A key made from the value's words is part of the value: after forget no file holds those words."""

    UNIQUE = "quokkalantern8812"
    VALUE = f"the deploy box is {UNIQUE}-east"

    def conversation(self, text: str, session: str):
        from bead.conversation import identify
        from bead.wire.anthropic import parse

        body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
        headers = {"x-bead-session": session, "x-bead-project": "webshop"}
        _req, conv = parse(body, headers)
        return conv, identify(headers, conv, None)

    def proxy_traffic(self, mem, trace):
        """What the proxy writes for "remember ..." and for a later conversation that injects the fact."""
        from bead.core import capture
        from bead.core.remember import remember
        from bead.core.review import reject_item
        from bead.core.state import Conversations
        from bead.core.trace import Trace, cue_excerpt
        from bead.store.queue import Queue
        from bead.store.reports import Reports

        conv, ident = self.conversation(f"Please remember that {self.VALUE}.", "s-remember")
        (written,) = remember(mem, conv.messages[0], ident)
        assert written.id == "project/webshop/deploy-box-east@v1", "no word with a digit in a key made from a value"
        capture.capture(mem, ident, capture.request_turns(conv, ident, 0))
        convs = Conversations(mem.home)
        convs.load(ident.id).set_captured(1)
        cue = {"source": "user", "text": cue_excerpt(conv.messages[0].parts[0].text)}
        Trace(trace).record(trace_line(ident.session, cues=[cue], remembered=written.id, injected=[]))
        conv2, ident2 = self.conversation("which port does the shop use", "s-later")
        st = convs.load(ident2.id)
        st.set_pinned(f"<bead-memory>\n- {self.VALUE}\n</bead-memory>", [written.id])
        st.add_cue(0, "h", "<bead-memory>nothing</bead-memory>", [written.id])
        mem.audit.record(mem.clock(), "inject", id=written.id, session=ident2.session, block="pinned")
        Trace(trace).record(
            trace_line(
                ident2.session,
                cues=[{"source": "user", "text": "which port does the shop use"}],
                pinned=[written.id],
                injected=[written.id],
                rejected=[{"id": written.id, "score": 0.1, "reason": "already injected"}],
            )
        )
        Reports(mem.home).append(T0, f"## Dream run\n- written: {written.id}, user/editor@v1\n")
        item, _ = Queue(mem).add("change-user-stated", written.id.split("@")[0], "project", "an older box name", [])
        reject_item(mem, item.id, "wrong")  # a tombstone line that names the key
        mem.write("user/editor", "Helix", "user")
        mem.index.checkpoint()
        assert self.leftovers(mem, trace), "the words are on disk before the forget"
        return written.id.split("@")[0]

    def leftovers(self, mem, trace) -> list[str]:
        files = {**all_bytes_under(mem.home.root), trace: trace.read_bytes()}
        return sorted(str(p) for p, data in files.items() if self.UNIQUE.encode() in data.lower())

    @pytest.fixture
    def configured(self, bead_home, monkeypatch, tmp_path):
        """The trace is named only in config.yaml; the shell running forget has no BEAD_TRACE."""
        monkeypatch.delenv("BEAD_TRACE", raising=False)
        trace = tmp_path / "proxy-trace.jsonl"
        from bead.paths import Home

        home = Home(bead_home).ensure()
        (bead_home / "config.yaml").write_text(f"owner: tester\nproxy:\n  trace: {trace}\n")
        from bead.core.memory import Memory

        mem = Memory.open(home)
        yield mem, trace
        mem.close()

    @pytest.mark.parametrize("how", ["key", "match"])
    def test_no_word_of_the_value_left(self, configured, how):
        mem, trace = configured
        key = self.proxy_traffic(mem, trace)
        plan = forget.plan_target(mem, key) if how == "key" else forget.plan_match(mem, self.UNIQUE)
        assert key in plan.keys
        forget.apply(mem, plan)
        mem.close()
        assert self.leftovers(mem, trace) == []
        assert "user/editor" in mem.home.audit_log.read_text(), "other keys' lines keep their keys"
        hashed = [json.loads(line) for line in mem.home.audit_log.read_text().splitlines() if "sha256" in line]
        assert any(e.get("id_sha256") == hashlib.sha256(key.encode()).hexdigest() for e in hashed)
        assert all("key" not in json.loads(line) for line in mem.home.tombstones_log.read_text().splitlines())
        from bead.errors import RefusedWrite

        with pytest.raises(RefusedWrite):  # the tombstone still works, by the value's hash
            mem.write("user/other", self.VALUE, "user", trust="dream_inferred")

    def test_trace_recorded_by_the_proxy_at_start(self, mem, monkeypatch, tmp_path):
        """A proxy started with --trace FILE records it under the home; forget finds it with no config or env."""
        from bead.core.trace import record_proxy_trace

        monkeypatch.delenv("BEAD_TRACE", raising=False)
        trace = tmp_path / "only-on-the-command-line.jsonl"
        record_proxy_trace(mem.home, trace)
        key = self.proxy_traffic(mem, trace)
        forget.apply(mem, forget.plan_target(mem, key))
        mem.close()
        assert self.leftovers(mem, trace) == []


def test_cue_is_redacted_before_it_is_cut():
    """A credential straddling the 200-character cut leaves none of its characters in the trace."""
    from bead.core.trace import CUE_CHARS, cue_excerpt

    key = "sk-ant-api03-" + "Qx7" * 31 + "AA"
    text = "x" * (CUE_CHARS - 10) + " " + key
    assert "sk-ant" not in cue_excerpt(text) and len(cue_excerpt(text)) <= CUE_CHARS


def test_an_excerpt_cut_in_a_block_or_a_trace_leaves_no_part_of_a_word_to_forget(mem):
    """An excerpt longer than the block takes, and a trace's cue, are cut at a space: a value cut in two
    (`QK7-ZEBRA-PLINTH-`) would sit in the conversation's state, re-added on every request, where no forget of the
    whole value finds it."""
    from bead.core.trace import CUE_CHARS, cue_excerpt
    from bead.recall import render

    value = "QK7-ZEBRA-PLINTH-4471-MOSSGATE"
    for limit, cut in (
        (render.RAW_EXCERPT_CHARS, lambda t: render.raw_line({"session": "s", "at": "2026-01-01T00:00", "role": "user"}, t)),
        (CUE_CHARS, cue_excerpt),
    ):
        text = "orchard " * ((limit - 20) // 8) + f" token {value} for the pipeline"
        out = cut(text)
        assert "QK7" not in out and "orchard orchard" in out, out[-80:]
    assert cue_excerpt("x" * 500).startswith("x" * (CUE_CHARS - 1)), "a text of one word is cut where it must be"


class TestWhatTheAdversarialReviewFound:
    """Each way a forgotten value survived, as the adversarial review reproduced it."""

    WORDS = "the staging database lives on quokkaeast seven behind wombatgate"

    def test_a_value_in_an_old_json_escaped_tool_call_is_redacted(self, mem):
        """Turns captured before tool inputs were written as text hold `\\"...\\"`: still found."""
        value = 'the release is cut with "make ship-prod" on quokkaeast behind wombatgate'
        mem.append_turns("old", [("assistant", "[tool_use Write] " + json.dumps({"content": value}), T0, None)])
        mem.write("project/shop/release", value, "project")
        forget.apply(mem, forget.plan_match(mem, value))
        assert leftovers(mem.home.root, "quokkaeast") == [] and leftovers(mem.home.root, "wombatgate") == []

    def test_a_cue_cut_in_the_trace_and_an_excerpt_cut_in_state_go_too(self, mem, tmp_path, monkeypatch):
        """A trace cue keeps 200 characters and a cue block an excerpt of 600: a run of the value's words
        in either is enough for the line to go."""
        trace = tmp_path / "trace.jsonl"
        monkeypatch.setenv("BEAD_TRACE", str(trace))
        value = "x " * 120 + self.WORDS
        cut = value[: 200 + 40]  # the first words of the value's tail survive the cut, not all of it
        trace.write_text(
            json.dumps(trace_line("s", cues=[{"source": "user", "text": cut}]))
            + "\n"
            + json.dumps(trace_line("s", cues=[{"source": "user", "text": "unrelated"}]))
            + "\n"
        )
        state = mem.home.session_state("s-t1")
        state.parent.mkdir(parents=True, exist_ok=True)
        excerpt = "- excerpt, session s: " + self.WORDS[:45] + "…"
        state.write_text(json.dumps({"kind": "cue", "message": 0, "hash": "h", "text": excerpt, "ids": []}) + "\n")
        mem.write("project/shop/db-host", self.WORDS, "project")
        forget.apply(mem, forget.plan_target(mem, "project/shop/db-host"))
        assert "quokkaeast" not in trace.read_text() and "unrelated" in trace.read_text()
        assert "quokkaeast" not in state.read_text()

    def test_a_value_the_secret_scan_split_is_still_found_in_the_raw_log(self, mem):
        value = "staging login is admin with DB_PASSWORD=Qz8vLr2TnW4xPk9s and the host is quokkaeast behind wombatgate"
        mem.append_turns("s", [("user", value, T0, None)])
        plaintext_secret(mem, "project/shop/staging-login", value, "project")
        summary = forget.apply(mem, forget.plan_target(mem, "project/shop/staging-login"))
        assert summary["raw_turns_redacted"] == 1
        assert leftovers(mem.home.root, "quokkaeast") == []

    def test_a_killed_writers_temp_file_holding_the_value_goes_with_match(self, mem):
        folder = mem.home.fact_dir("user/kk")
        folder.mkdir(parents=True)
        temp = folder / ".v1.md.99999999-0badcafe.tmp"  # a writer that is gone (no such pid)
        temp.write_text("---\nkey: user/kk\n---\ntempvalue quokkaeast secret plans\n")
        plan = forget.plan_match(mem, "tempvalue quokkaeast")
        assert not plan.empty and temp in plan.temps
        forget.apply(mem, plan)
        assert not temp.exists()

    def test_index_rows_left_by_an_interrupted_forget_are_forgotten(self, mem):
        """Version files gone, the index transaction rolled back: the key is still forgettable."""
        mem.write("user/door", "the vault door code is quokka 4471", "user")
        for p in mem.home.fact_dir("user/door").glob("v*.md"):
            p.unlink()  # what a forget killed before its index commit leaves
        assert [h.id for h in search_facts(mem.index, "vault door code")] == ["user/door@v1"]
        forget.apply(mem, forget.plan_target(mem, "user/door"))
        assert search_facts(mem.index, "vault door code") == []
        assert leftovers(mem.home.root, "quokka 4471") == []


@pytest.mark.parametrize("how", ["key", "match"])
def test_forget_leaves_no_key_that_names_the_value_in_the_logs(mem, bead, how):
    """A proposal the person rejected was keyed by the value's words; its tombstone and audit lines named that key
    in clear. Forgetting the value (by its key, or by --match) leaves only the key's hash there, and a key that
    only shares the value's common words stays as it was."""
    from bead.core.review import reject_item
    from bead.store.queue import Queue

    token = "quokkalantern-east"
    item, _ = Queue(mem).add("new", f"project/shop/deploy-box-{token}", "project", f"The deploy box is {token}.", [])
    reject_item(mem, item.id, "I keep this under my own key")
    mem.write("project/shop/deploy-box", f"The deploy box is {token}.", "project")
    mem.write("project/shop/deploy-window", "Deploys happen on Tuesdays.", "project")
    mem.close()
    r = bead("forget", "project/shop/deploy-box", "--yes") if how == "key" else bead("forget", "--match", token, "--yes")
    assert r.code == 0, r.err
    left = [str(p.relative_to(mem.home.root)) for p, d in all_bytes_under(mem.home.root).items() if b"quokkalantern" in d.lower()]
    assert left == []
    assert b"project/shop/deploy-window" in (mem.home.root / "audit.log").read_bytes()


def test_forget_keeps_the_names_of_live_facts_in_the_logs(mem, bead):
    """A live fact's key that shares a token with the forgotten value (a young store counts "read-only" as
    distinctive) is the person's own name for another fact: its audit lines keep it."""
    mem.write("project/demo/read-only-mirror", "The mirror at git.example.com takes no pushes.", "project")
    mem.write("project/demo/friday-policy", "The repo is read-only on Fridays.", "project")
    mem.close()
    r = bead("forget", "project/demo/friday-policy", "--yes")
    assert r.code == 0, r.err
    audit = (mem.home.root / "audit.log").read_text()
    assert "project/demo/read-only-mirror" in audit and "project/demo/friday-policy" not in audit


def _aged(plan: forget.Plan) -> forget.Plan:
    """``plan`` as a preview the person read for minutes: ``apply`` looks over the whole history again first."""
    plan.started -= forget.FRESH_PLAN_S + 60
    return plan


class TestBetweenThePreviewAndTheYes:
    """The preview may be minutes old when the person says yes, and the proxy captures meanwhile: forget plans
    again inside its locks, so what arrived in between goes too."""

    @pytest.mark.parametrize("age", ["just made", "read for minutes"])
    def test_a_turn_and_a_fact_that_arrived_after_the_match_preview_are_forgotten(self, mem, age):
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        plan = forget.plan_match(mem, VALUE)
        if age != "just made":
            _aged(plan)
        assert list(plan.keys) == ["user/door"]
        mem.append_turns("s-late", [("user", f"reminder: storage unit code is {VALUE}", T0, None)])
        mem.write("user/storage", f"Storage unit code: {VALUE}", "user", trust="agent_observed")
        summary = forget.apply(mem, plan)
        mem.close()
        assert summary["keys"] == ["user/door", "user/storage"]
        assert leftovers(mem.home.root, VALUE) == []

    def test_a_version_written_after_the_key_preview_is_forgotten(self, mem):
        mem.write("user/wifi", f"the hint is {VALUE}", "user")
        plan = forget.plan_target(mem, "user/wifi")
        mem.write("user/wifi", f"the hint is still {VALUE}", "user")
        assert forget.apply(mem, plan)["versions"] == 2
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_a_turn_captured_while_forget_reads_the_history_goes_too(self, mem):
        """The history is read again outside the locks; a turn captured right after that read is found inside them."""
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        plan = _aged(forget.plan_match(mem, VALUE))
        real = plan.remake

        def remake(files, tokens=None):
            out = real(files, tokens)
            if files is None:  # the look outside the locks: a capture lands right after it
                mem.append_turns("s-gap", [("user", f"again, the code is {VALUE}", T0, None)])
            return out

        plan.remake = remake
        forget.apply(mem, plan)
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_inside_the_locks_only_the_raw_files_written_since_are_read(self, mem, monkeypatch):
        """Reading the whole history holds the index (and every capture) for as long as it takes: inside the
        locks forget reads only what was written after its look outside them."""
        import os

        mem.append_turns("old", [("user", f"the code is {VALUE}", T0, None)])
        old = mem.raw.find("old")
        os.utime(old, (0, 0))
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        seen: list = []
        real = forget._scan_files
        monkeypatch.setattr(
            forget, "_scan_files", lambda m, p, raw=None, tokens=None: (seen.append(raw), real(m, p, raw, tokens))[1]
        )
        forget.apply(mem, _aged(forget.plan_target(mem, "user/door")))
        assert seen[0] is None and seen[1] is None and old not in seen[2]
        assert len(seen) == 3, "the second look found what the first did: no whole history read inside the locks"
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_a_plan_just_made_is_not_made_again_over_the_whole_history(self, mem, monkeypatch):
        """`forget --yes` and a seal apply the plan they just made: a second look over the whole history outside the
        locks found what the first had (a session of 20,000 turns took three looks). Inside the locks the raw files
        written since the plan's look began are read, so a turn captured meanwhile, in an old file, goes too."""
        import os

        mem.append_turns("old", [("user", f"the code is {VALUE}", T0, None)])
        mem.append_turns("older", [("user", "nothing to see", T0, None)])
        for name in ("old", "older"):
            os.utime(mem.raw.find(name), (0, 0))
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        seen: list = []
        real = forget._scan_files
        monkeypatch.setattr(
            forget, "_scan_files", lambda m, p, raw=None, tokens=None: (seen.append(raw), real(m, p, raw, tokens))[1]
        )
        plan = forget.plan_target(mem, "user/door")
        plan.started -= 10  # a look that took ten seconds, and a capture in the middle of it
        mem.append_turns("older", [("user", f"again: {VALUE}", T0, None)])
        os.utime(mem.raw.find("older"), (plan.started + 1, plan.started + 1))
        forget.apply(mem, plan)
        assert seen[0] is None and seen[1] == [mem.raw.find("older")], seen
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []

    def test_a_version_written_while_forget_reads_the_history_is_looked_for_everywhere(self, mem):
        """A new version of the key arrives after the look outside the locks, with a value an old raw file holds:
        inside the locks the whole history is read again for it."""
        import os

        mem.append_turns("old", [("user", "the new code is Quibble-Frost-5521", T0, None)])
        os.utime(mem.raw.find("old"), (0, 0))
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        plan = _aged(forget.plan_target(mem, "user/door"))
        real = plan.remake

        def remake(files, tokens=None):
            out = real(files, tokens)
            if files is None:
                mem.write("user/door", "The storage unit code is Quibble-Frost-5521", "user")
            return out

        plan.remake = remake
        forget.apply(mem, plan)
        mem.close()
        assert leftovers(mem.home.root, "Quibble-Frost-5521") == [] and leftovers(mem.home.root, VALUE) == []

    def test_the_cli_forgets_what_arrived_while_it_asked(self, mem, bead, monkeypatch):
        """`bead forget --match` asks, and a turn is captured while the person reads: it goes too."""
        import click

        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        real = click.confirm

        def confirm_after_a_capture(*a, **k):
            mem.append_turns("s-late", [("user", f"reminder: the code is {VALUE}", T0, None)])
            return real(*a, **k)

        monkeypatch.setattr(click, "confirm", confirm_after_a_capture)
        r = bead("forget", "--match", VALUE, input="y\n")
        assert r.code == 0, r.err
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []


class TestTheValueWrittenOtherwise:
    """A raw turn that says the value with invisible characters, other Unicode forms, escapes or markup around its
    words still holds it (an adversarial review reproduced each of these through capture)."""

    PLAIN = "Globex Wombatica Holdings"

    @pytest.mark.parametrize(
        "said",
        [
            "Globex Wom\u200bbatica Holdings",  # a zero-width space inside a word
            "Glo\u0301bex Wombatica Holdings",  # a combining accent
            "Ｇｌｏｂｅｘ Ｗｏｍｂａｔｉｃａ Ｈｏｌｄｉｎｇｓ",  # full width
            '{"buyer": "Globex Wombatic\\u0061 Holdings"}',  # JSON-escaped, as a tool result prints it
            "Globex%20Wombatica%20Holdings",  # percent-encoded
            "Globex Wombatica&nbsp;Holdings",  # an HTML entity
            "**Globex Wombatica** Holdings",  # Markdown
            "Globex%2520Wombatica%2520Holdings",  # percent-encoded twice
            '{"log": "{\\"buyer\\": \\"Globex Wombatic\\\\u0061 Holdings\\"}"}',  # JSON in a JSON string
            "Globex Wombatica&amp;nbsp;Holdings",  # an entity escaped again
            "Globex \x1b[01;31m\x1b[KWombatica\x1b[m\x1b[K Holdings",  # grep --color's highlight
            "<b>Globex</b> <i>Wombatica</i> Holdings",  # a fetched page's tags
            "Globex<br>Wombatica Holdings",  # a tag between two words
            "[Globex Wombatica](https://example.com/globex) Holdings",  # a Markdown link
            "Globex \x1b(B\x1b[mWombatica Holdings",  # tput sgr0's reset
            "[Globex](https://example.com/g 'the buyer') Wombatica Holdings",  # a link with a title
            "<time>Globex</time> <dfn>Wombatica</dfn> Holdings",  # other inline elements
        ],
    )
    @pytest.mark.parametrize("how", ["key", "match"])
    def test_the_turn_is_forgotten(self, mem, said, how):
        mem.append_turns("s1", [("user", f"our acquisition target is {said}, keep it quiet", T0, None)])
        mem.append_turns("s2", [("user", "an unrelated turn about the build", T0, None)])
        mem.write("user/acq", self.PLAIN, "user")
        plan = forget.plan_target(mem, "user/acq") if how == "key" else forget.plan_match(mem, self.PLAIN)
        forget.apply(mem, plan)
        mem.close()
        raw = "".join(p.read_text() for p in mem.home.raw.rglob("*.md"))
        assert "acquisition" not in raw and "keep it quiet" not in raw, "the turn that says it is redacted whole"
        assert "unrelated turn" in raw
        assert leftovers(mem.home.root, "Wombatica") == [] and leftovers(mem.home.root, "Wombatic\\u0061") == []

    def test_smart_quotes_said_in_three_turns(self, mem):
        """Three turns say it with a curly apostrophe, so none of its words is rare: the whole value still
        matches."""
        for s in ("a", "b", "c"):
            mem.append_turns(s, [("user", "Rosalind\u2019s biopsy results come back on Thursday", T0, None)])
        mem.write("user/biopsy", "Rosalind's biopsy results come back on Thursday", "user")
        forget.apply(mem, forget.plan_target(mem, "user/biopsy"))
        mem.close()
        assert leftovers(mem.home.root, "biopsy") == []

    def test_a_value_said_plainly_in_three_turns_and_once_as_bytes(self, mem):
        """Three turns say the value (they go whole); a tool's output prints it as Python bytes (`b'J\\xc3\\xb6rg
        ...'`), a form forget does not decode. Its rare words are judged among the other turns: the three that
        go anyway do not make them look common, so the fourth turn goes too."""
        value = "J\u00f6rg Quokkaberg runs the platform team"
        for i in range(25):
            mem.append_turns(f"h{i}", [("user", f"filler turn number {i} about ports and builds", T0, None)])
        for i in range(3):
            mem.append_turns(f"p{i}", [("user", f"note {i}: {value}", T0, None)])
        mem.append_turns(
            "s1", [("user", "print(r.content) gave b'J\\xc3\\xb6rg Quokkaberg runs the platform team'", T0, "tool_output")]
        )
        mem.write("user/boss", value, "user")
        forget.apply(mem, forget.plan_target(mem, "user/boss"))
        mem.close()
        assert leftovers(mem.home.root, "Quokkaberg") == []
        assert "filler turn number 7" in "".join(p.read_text() for p in mem.home.raw.rglob("*.md"))

    @pytest.mark.parametrize("name", ["Stra\u00dfmeier", "\u00de\u00f3rhallsd\u00f3ttir", "\uae40\ucca0\uc218\uae40\uc601\ud76c"])
    def test_a_rare_word_in_any_script_is_judged_among_the_other_turns(self, mem, name):
        """Three turns say the value, a fourth names its rare word in other words: the word's count leaves out
        the three in any script (a letter fold keeps, such as ß, Þ or Hangul, was not counted, and the fourth
        turn kept the name)."""
        for i in range(25):
            mem.append_turns(f"h{i}", [("user", f"filler turn number {i} about ports and builds", T0, None)])
        for i in range(3):
            mem.append_turns(f"p{i}", [("user", f"note {i}: {name} runs the platform team", T0, None)])
        mem.append_turns("s1", [("user", f"by the way {name} approved the budget", T0, None)])
        mem.write("user/boss", f"{name} runs the platform team", "user")
        forget.apply(mem, forget.plan_target(mem, "user/boss"))
        mem.close()
        assert leftovers(mem.home.root, name) == []

    @pytest.mark.parametrize("held_by", ["an older version", "turns naming the key"])
    def test_turns_that_hold_the_value_count_only_for_the_words_they_hold(self, mem, held_by):
        """The turns that hold the value (an older version's, or only the key's name) do not make a word of the
        current value look rare: four unrelated turns about the kubernetes dashboard keep their words when the
        value "... from the kubernetes cluster" is forgotten (an adversarial review of the rarity fix)."""
        for i in range(25):
            mem.append_turns(f"h{i}", [("user", f"filler turn number {i} about ports and builds", T0, None)])
        old = "Releases are signed by Mallory Featherstonehaugh"
        for i in range(3):
            said = f"note {i}: {old}" if held_by == "an older version" else f"I looked at project/x/release for you ({i})"
            mem.append_turns(f"p{i}", [("user", said, T0, None)])
        for i in range(4):
            mem.append_turns(f"k{i}", [("user", f"unrelated {i}: the kubernetes dashboard is slow today", T0, None)])
        if held_by == "an older version":
            mem.write("project/x/release", old, "project")
        mem.write("project/x/release", "Releases ship from the kubernetes cluster", "project")
        forget.apply(mem, forget.plan_target(mem, "project/x/release"))
        mem.close()
        assert "".join(p.read_text() for p in mem.home.raw.rglob("*.md")).count("kubernetes dashboard") == 4
        assert leftovers(mem.home.root, "Featherstonehaugh") == []

    def test_match_takes_the_versions_that_hold_the_text_and_leaves_a_current_value_that_does_not(self, mem, bead):
        """`--match secret-abc-123` with the secret in an old version took the key whole, its current value (which
        does not hold it) too, and tombstoned that value; now the old version goes and the current one stays."""
        mem.write("user/k", "old value secret-abc-123 here", "user")
        mem.write("user/k", "nothing here", "user")
        mem.write("user/lang", "rust", "user")
        mem.write("user/lang", "python", "user")
        mem.close()
        r = bead("forget", "--match", "secret-abc-123", input="y\n")
        assert r.code == 0, r.err
        assert "user/k: version(s) v1; its current value does not hold the text and stays" in r.err
        with Memory(Home(mem.home.root), Config(owner="t")) as m:
            assert m.current("user/k").body == "nothing here"
            assert [f.version for f in m.facts.versions("user/k").facts] == [2]
            assert m.current("user/lang").body == "python"
        assert leftovers(mem.home.root, "secret-abc-123") == []
        assert bead("write", "user/k", "nothing here again", "--type", "user").code == 0

    def test_match_in_the_current_value_takes_the_key_whole(self, mem, bead):
        """An older value must not come back as the current one once the current is forgotten."""
        mem.write("user/k", "older value", "user")
        mem.write("user/k", "now secret-abc-123", "user")
        mem.close()
        r = bead("forget", "--match", "secret-abc-123", input="y\n")
        assert r.code == 0 and "user/k: all 2 version file(s), its current value too" in r.err, r.err
        with Memory(Home(mem.home.root), Config(owner="t")) as m:
            assert m.current("user/k") is None

    def test_a_key_at_a_terminal_shows_the_raw_turns_it_takes_and_asks(self, mem, bead, monkeypatch):
        """`bead forget KEY` took every raw turn that holds a short or common value (`pytest`) without a word; at a
        terminal it now lists them and asks, as --match and seal do. No, and nothing changes; a script (no terminal)
        or --yes goes on as before."""
        from bead.cli import common as cli_common

        mem.write("project/demo/test-cmd", "pytest", "project")
        mem.raw.append("s1", "user", "the tests run with pytest -q")
        mem.close()
        monkeypatch.setattr(cli_common, "at_terminal", lambda: True)
        r = bead("forget", "project/demo/test-cmd", input="n\n")
        assert r.code == 1 and "This will forget:" in r.err and "raw turn " in r.err and "Forget all of these?" in r.err
        with Memory(Home(mem.home.root), Config(owner="t")) as m:
            assert m.current("project/demo/test-cmd").body == "pytest"
        assert bead("forget", "project/demo/test-cmd", "--yes").code == 0
        with Memory(Home(mem.home.root), Config(owner="t")) as m:
            assert m.current("project/demo/test-cmd") is None

    def test_match_in_the_current_value_takes_the_key_whole_beside_a_version_file_that_does_not_parse(self, mem, bead):
        """The current value is the newest version that parses: a broken v3 beside it made the forget take v2 alone,
        so v1 came back as the current value (found by a review)."""
        mem.write("user/k", "old value plain", "user")
        mem.write("user/k", "now secret-abc-123 here", "user")
        mem.home.fact_file("user/k", 3).write_text("garbage, not a version file\n")
        mem.close()
        r = bead("forget", "--match", "secret-abc-123", input="y\n")
        assert r.code == 0 and "its current value too" in r.err, r.err
        with Memory(Home(mem.home.root), Config(owner="t")) as m:
            assert m.current("user/k") is None

    def test_a_partial_match_leaves_the_words_the_kept_value_says(self, mem, bead):
        """Of a key whose old version goes, the words its kept version also says (the host the deploy moved to) are
        no part of the forgotten value: a turn that says them stays (found by a review)."""
        mem.write("project/demo/deploy", "deploy with token qzv-secret-881 to host build-7731 via rsync", "project")
        mem.write("project/demo/deploy", "deploy to host build-7731 via rsync", "project")
        mem.raw.append("s1", "user", "our deploys go to build-7731 now")
        mem.raw.append("s1", "user", "the old token qzv-secret-881 is gone")
        mem.close()
        assert bead("forget", "--match", "qzv-secret-881", input="y\n").code == 0
        raw = "".join(p.read_text() for p in mem.home.raw.rglob("*.md"))
        assert "our deploys go to build-7731 now" in raw
        assert leftovers(mem.home.root, "qzv-secret-881") == []

    def test_a_version_by_its_id_at_a_terminal_is_not_said_in_matchs_words(self, mem, bead, monkeypatch):
        from bead.cli import common as cli_common

        mem.write("user/k", "first value", "user")
        mem.write("user/k", "second value", "user")
        mem.close()
        monkeypatch.setattr(cli_common, "at_terminal", lambda: True)
        r = bead("forget", "user/k@v2", input="n\n")
        assert "key user/k: version(s) v2" in r.err and "does not hold the text" not in r.err, r.err

    def test_match_forgets_a_key_named_by_the_text(self, mem):
        """`--match globexcorp` forgets the key whose name holds it, though its body does not."""
        mem.write("project/acme/layoffs-march-globexcorp", "Announce on the 14th", "project")
        mem.write("user/editor", "vim, always", "user")
        plan = forget.plan_match(mem, "globexcorp")
        assert list(plan.keys) == ["project/acme/layoffs-march-globexcorp"]
        forget.apply(mem, plan)
        mem.close()
        assert leftovers(mem.home.root, "globexcorp") == []

    def test_match_on_a_scope_word_is_no_key_of_that_scope(self, mem):
        mem.write("user/editor", "vim, always", "user")
        mem.write("project/acme/deploy", "deploys go out on Fridays", "project")
        assert forget.plan_match(mem, "user").empty and forget.plan_match(mem, "project acme").empty


def test_a_report_line_naming_a_key_made_of_the_value_goes(mem):
    """A dream run rejected `project/shop/staging host gribblethorpe` (no valid key) and queued
    `project/shop/gribblethorpe-annex-host`: neither is a key the logs name, and the report kept both."""
    from bead.store.reports import Reports

    mem.write("project/shop/staging-host", "the staging host is gribblethorpe", "project")
    Reports(mem.home).append(
        T0,
        "## Dream run\n- rejected: project/shop/staging host gribblethorpe (invalid key)\n"
        "- 1e549b40c3d2 suspicious project/shop/gribblethorpe-annex-host\n- written: user/editor@v1\n",
    )
    forget.apply(mem, forget.plan_match(mem, "gribblethorpe"))
    mem.close()
    assert leftovers(mem.home.root, "gribblethorpe") == []
    report = "".join(p.read_text() for p in Reports(mem.home).files())
    assert "## Dream run" in report and "- written: user/editor@v1" in report


def test_a_reader_that_keeps_the_wal_from_emptying_is_reported(mem, bead):
    """Another program's read transaction on index.db (a backup, an sqlite3 shell) keeps the checkpoint from
    finishing, and with it the forgotten text in index.db: forget says so and what to do, instead of success
    alone. The reader is a process of its own: SQLite's locks do not stop connections of one process."""
    mem.write("user/wifi", f"the hint is {VALUE}", "user")
    mem.close()
    (mem.home.root / "config.yaml").write_text("owner: tester\nstore:\n  busy_timeout_ms: 200\n")
    with reading_index(mem.home.index_db):
        r = bead("forget", "user/wifi")
    assert r.code == 0, r.err
    assert "index.db open for reading" in r.err and "bead reindex" in r.err


@pytest.mark.parametrize(
    "value,said",
    [
        ("Repository Service", "the line `Repository<Order> service = new OrderRepository();` compiles"),
        ("Optional Widget", "the method returns Optional<Gadget> widget, not null"),
        ("retry limit exceeded", "the loop `while (retry<max && count>limit) exceeded++;` ends"),
    ],
)
def test_a_type_parameter_or_a_comparison_is_no_markup(mem, value, said):
    """Only HTML's own elements are read as markup between a value's words: ``<Gadget>`` in ``Optional<Gadget>
    widget`` is a type, and dropping it made a turn say "Optional widget", which it does not."""
    mem.append_turns("s1", [("user", said, T0, None)])
    forget.apply(mem, forget.plan_match(mem, value))
    mem.close()
    assert said in "".join(p.read_text() for p in mem.home.raw.rglob("*.md"))


class TestNoMoreThanTheValue:
    """Comparing by words must not make a value that is mostly signs or one word match turns that do not hold it
    (an adversarial review of the word comparison)."""

    @pytest.mark.parametrize(
        "value, other",
        [
            ("C++", "the c compiler is fine; see section c"),
            ("@home", "my home directory is full"),
            ("$HOME", "my home directory is full"),
            ("#general", "general chat about dinner"),
            ("1.0", "version 1 0 of the plan"),
            ("~/.vim", "the vim config is old"),
        ],
    )
    def test_a_value_of_signs_or_one_word_takes_no_other_turn(self, mem, value, other):
        mem.append_turns("s1", [("user", other, T0, None)])
        mem.write("user/thing", value, "user")
        forget.apply(mem, forget.plan_target(mem, "user/thing"))
        assert [t.text for t in mem.raw.read(mem.raw.find("s1"))] == [other]
        mem.write("user/other", f"I write {other}", "user")
        plan = forget.plan_match(mem, value)
        assert "user/other" not in plan.keys and not plan.turns

    @pytest.mark.parametrize("text, key", [("ship", "project/acme/relationship-notes"), ("art", "project/acme/cart-service")])
    def test_match_takes_a_key_by_whole_words_of_its_name(self, mem, text, key):
        mem.write(key, "nothing of the text here", "project")
        assert key not in forget.plan_match(mem, text).keys


def test_a_report_keeps_its_headings_and_other_keys(mem):
    """A value whose words or year a run's heading, its model line or another fact's key hold leaves them: only a
    listed key that holds the value goes (an adversarial review saw `## Dream run 2026-...` blanked by a value
    holding 2026, which left review's latest run without its heading)."""
    from bead.store.reports import Reports

    mem.write("user/lease", "Lease renewal due in 2026 for the sonnet deploy flat", "user")
    report = (
        "## Dream run 2026-11-05T09:00:00Z\n\n- model: sonnet\n- time: 1.0 s\n\n### session s (2 new turns)\n"
        "- written: user/editor@v1, project/acme/deploy-policy@v2, user/lease-renewal-2026@v1\n"
        "- episode: episodes/2026/11/05/s.md\n"
    )
    Reports(mem.home).append(T0, report)
    forget.apply(mem, forget.plan_target(mem, "user/lease"))
    after = "".join(p.read_text() for p in Reports(mem.home).files())
    assert after == report.replace("user/lease-renewal-2026@v1", "[forgotten]")


@pytest.mark.parametrize(
    "value, said",
    [
        ("alice.wombat@example.com", "alice.wombat%40example.com"),
        ("alice.wombat@example.com", "alice.wombat&#64;example.com"),
        ("Zorblaxium", "Zorbla\u200bxium"),
        ("Zorblaxium", "Ｚｏｒｂｌａｘｉｕｍ"),
        ("https://wiki.example/team/zorblax", "https%3A%2F%2Fwiki.example%2Fteam%2Fzorblax"),
    ],
)
def test_a_one_word_or_signed_value_is_found_however_a_turn_wrote_it(mem, value, said):
    """A value compared as a whole (one word, an address, a URL) is decoded and in its normal form too, as a value
    of several words is compared by them."""
    mem.append_turns("s1", [("user", f"note: {said} is the one", T0, None)])
    mem.write("user/thing", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/thing"))
    (turn,) = mem.raw.read(mem.raw.find("s1"))
    assert said not in turn.text


@pytest.mark.parametrize("how", ["key", "match"])
def test_a_value_whose_words_are_written_as_one_goes_and_stays_gone(mem, how):
    """The value's words written as one word (a class's name, an environment variable, words joined by an
    invisible tag space) were kept by forget and passed its tombstone; snake_case and kebab-case were not."""
    said = [
        "class GlobexWombaticaHoldings(Vendor): pass",
        "export GLOBEXWOMBATICAHOLDINGS=1",
        "the vendor Globex\U000e0020Wombatica\U000e0020Holdings again",
        "an unrelated turn about the editor",
    ]
    mem.append_turns("s1", [("user", t, T0, None) for t in said])
    mem.write("user/vendor", "Globex Wombatica Holdings", "user")
    plan = forget.plan_target(mem, "user/vendor") if how == "key" else forget.plan_match(mem, "Globex Wombatica Holdings")
    forget.apply(mem, plan)
    mem.index.checkpoint()
    on_disk = b"".join(p.read_bytes() for p in mem.home.root.rglob("*") if p.is_file()).lower()
    assert b"wombatica" not in on_disk
    assert "an unrelated turn about the editor" in [t.text for t in mem.raw.read(mem.raw.find("s1"))]
    for spelt in ("GlobexWombaticaHoldings", "globexWombaticaHoldings", "the vendor is GLOBEXWOMBATICAHOLDINGS now"):
        with pytest.raises(RefusedWrite):
            mem.write("user/v2", spelt, "user", trust="agent_observed")


@pytest.mark.parametrize(
    "spelt",
    [
        "The office safe code is quokka\u200bwombat 7731",  # an invisible break between two of the three words
        "The office safe code is quokka\u00adwombat 7731",  # a soft hyphen
        "The office safe code is q-u-o-k-k-a wombat 7731",  # one word spelt out
        "safe: q u o k k a w o m b a t 7 7 3 1",  # every letter apart
        "The office safe code is wombat quokka 7731",  # another order
        "7731 wombat, quokka: the safe",
    ],
)
def test_a_forgotten_value_spelt_apart_or_in_another_order_stays_gone(mem, spelt):
    """A dream's proposal (an adversarial pass) wrote a forgotten value back with an invisible character or a
    hyphen joining two of its words, its letters spelt out, or its words in another order: the tombstone held
    only the value's words in its order, or all of them joined."""
    mem.write("project/shop/safe", "quokka wombat 7731", "project")
    forget.apply(mem, forget.plan_target(mem, "project/shop/safe"))
    with pytest.raises(RefusedWrite):
        mem.write("project/shop/safe-code", spelt, "project", trust="dream_inferred")
    # Two of its three words, or its letters beside other words, are not the value.
    mem.write("project/shop/zoo", "The zoo keeps a quokka and a wombat: q u o k k a", "project", trust="dream_inferred")


@pytest.mark.parametrize(
    "value, reversed_",
    [
        ("use tabs not spaces", "use spaces not tabs"),
        ("Alice reports to Bob", "Bob reports to Alice"),
        ("migrate from mysql to postgres", "migrate from postgres to mysql"),
    ],
)
def test_common_words_of_a_forgotten_value_in_another_order_say_another_thing(mem, value, reversed_):
    """A review: the words in any order refused the correction of a forgotten value, and blanked a turn that said
    it. Only a value with a word few texts say (a code's part, a long name) is refused in any order."""
    mem.write("user/style", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/style"))
    mem.write("user/style-now", reversed_, "user", trust="dream_inferred")
    mem.append_turns("s9", [("user", f"correction: {reversed_} in this repo", T0, None, {"replayed": True})])
    assert reversed_ in [t.text for t in mem.raw.read(mem.raw.find("s9"))][0]


def test_a_tombstones_readings_of_a_long_text_take_linear_time(mem):
    """Each reading of a replayed turn (invisible characters as breaks, letters joined, words in any order) is one
    pass; a text made of nothing but windows as long as the forgotten values' still costs a pass per reading."""
    from linear import assert_linear

    for i, value in enumerate(["quokka wombat 7731", "ab cd 9 ef gh ij kl mn op qr"]):
        mem.write(f"project/shop/v{i}", value, "project")
        forget.apply(mem, forget.plan_target(mem, f"project/shop/v{i}"))
    unit = "ab\u200bcd 9 q u o k k a ef gh ij kl mn op qr x\u00ady "
    assert_linear(lambda t: mem.tombstones.contained(t, whole=True), lambda n: unit * (n // len(unit)), 256 * 1024, limit=0.25)


@pytest.mark.parametrize(
    "value, joined_elsewhere", [("data base", "database"), ("to get her", "together"), ("Python 3", "python3")]
)
def test_a_short_value_written_as_one_word_is_another_word_and_stays(mem, value, joined_elsewhere):
    """Joined, a value of short or common words is another word ("data base" is database): forget --match took
    every turn and fact that said it, and the tombstone refused an agent's "we pair together"."""
    mem.append_turns("s1", [("user", f"please migrate the {joined_elsewhere} schema", T0, None)])
    mem.write("user/nas", f"we keep sessions in a {joined_elsewhere} on the NAS", "user")
    mem.write("user/odd", f"the value is {value}", "user")
    forget.apply(mem, forget.plan_match(mem, value))
    assert mem.current("user/nas") is not None and mem.current("user/odd") is None
    assert [t.text for t in mem.raw.read(mem.raw.find("s1"))] == [f"please migrate the {joined_elsewhere} schema"]
    mem.write("user/pair", f"we pair {joined_elsewhere} on Fridays", "user", trust="agent_observed")


def test_a_reports_dormant_line_naming_a_key_made_of_the_value_goes(mem):
    from bead.store.reports import Reports

    mem.write("user/client", "Globex Wombatica Holdings", "user")
    Reports(mem.home).append(
        T0, "## Dream run\n\n### decayed to dormant\n- project/acme/globex-wombatica-holdings-contract@v1\n- user/editor@v1\n"
    )
    forget.apply(mem, forget.plan_target(mem, "user/client"))
    report = "".join(p.read_text() for p in Reports(mem.home).files())
    assert "wombatica" not in report.lower() and "- user/editor@v1" in report


class Live:
    """A proxy engine in-process on a home that holds the vault's code word, and a forget of it to run at any point."""

    KEY = "user/zorblax-quintessence"

    def __init__(self, bead_home, tmp_path):
        from bead.config import parse
        from bead.core.memory import Memory
        from bead.paths import Home
        from bead.proxy.engine import Engine

        self.Memory = Memory
        self.home = Home(bead_home).ensure()
        self.trace = tmp_path / "trace.jsonl"
        self.engine = Engine(self.home, parse("owner: t\n"), trace_path=str(self.trace))
        with Memory(self.home, self.engine.config) as m:
            m.write(self.KEY, SENTENCE, "user")

    def forget(self, match: str | None = None) -> None:
        with self.Memory(self.home, self.engine.config) as m:
            forget.apply(m, forget.plan_match(m, match) if match else forget.plan_target(m, self.KEY))

    @staticmethod
    def body(messages: list[dict]) -> bytes:
        return json.dumps({"model": "m", "max_tokens": 5, "system": "You help.", "messages": messages}).encode()

    def answer(self, prep, text: str) -> None:
        from fakes import message_events, sse

        self.engine.finished(prep, sse(message_events(text)), "text/event-stream", None, False)
        self.engine.drain(timeout=30)

    def turns(self) -> list:
        with self.Memory(self.home, self.engine.config) as m:
            return [t for p in m.raw.files() for t in m.raw.read(p)]

    def leftovers(self) -> list[str]:
        """Files under the home, and the trace, that hold the value or a word of it (the key is made of its words)."""
        files = {**all_bytes_under(self.home.root), self.trace: self.trace.read_bytes() if self.trace.exists() else b""}
        forms = {VALUE.lower().encode()} | {w.lower().encode() for w in VALUE.split("-")}
        return [str(p) for p, data in files.items() if any(f in data.lower() for f in forms)]


@pytest.fixture
def live(bead_home, tmp_path) -> Live:
    return Live(bead_home, tmp_path)


@pytest.mark.parametrize("forgotten_before", ["the answer ends", "the request's own capture"])
def test_what_a_request_brought_before_a_forget_is_not_captured_in_clear_after_it(live, forgotten_before):
    """A forget runs while a request is in flight: the model still streaming an answer that repeats the value, or
    the request's own capture still queued. What is captured after it began goes to the raw log as [forgotten] (the
    forget could not see it), with no inject record and no trace line; a request that comes after the forget is
    captured as ever. (The person's own message, captured before, is the forget's to find: it is.)"""
    engine = live.engine
    question = [{"role": "user", "content": "what is the vault code word?"}]
    prep = engine.prepare(live.body(question), {"x-bead-session": "sess-live"})
    if forgotten_before == "the request's own capture":
        live.forget()
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    if forgotten_before == "the answer ends":
        live.forget()
    live.answer(prep, f"It is {VALUE}, kept in the vault.")

    assert live.leftovers() == []
    assert [t.role for t in live.turns() if t.text == FORGOTTEN] == (
        ["assistant"] if forgotten_before == "the answer ends" else ["user", "assistant"]
    )
    assert engine.counters["forget_during_request"] == (forgotten_before == "the request's own capture")

    # After the forget the person says the value again: that is new, and captured as said.
    again = [
        *question,
        {"role": "assistant", "content": "I no longer know it."},
        {"role": "user", "content": f"no, it is {VALUE} now"},
    ]
    prep = engine.prepare(live.body(again), {"x-bead-session": "sess-live"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    live.answer(prep, f"It is {VALUE}, kept in the vault.")
    assert [t.text for t in live.turns() if VALUE in t.text] == [f"no, it is {VALUE} now", f"It is {VALUE}, kept in the vault."]


@pytest.mark.parametrize("before", ["", "x " * 40_000], ids=["short", "after-80-kb"])
def test_a_conversation_resumed_after_a_forget_does_not_bring_the_value_back(live, before):
    """A conversation that said the value, forgotten, then resumed under a new session (`claude --resume`, a
    conversation begun before the proxy ran): the harness replays its history, which bead sees for the first time
    and captured in clear. Replayed turns that hold the forgotten value go to the raw log as [forgotten]; what the
    person says now is captured as said, the value too if they say it again."""
    engine = live.engine
    said = [{"role": "user", "content": f"{before}note that {SENTENCE.lower()} Keep it."}]
    prep = engine.prepare(live.body(said), {"x-bead-session": "s-first"})
    engine.forwarded(prep).result(timeout=30)
    live.answer(prep, f"Noted: {SENTENCE}")
    live.forget()
    assert live.leftovers() == []
    resumed = [
        *said,
        {"role": "assistant", "content": f"Noted: {SENTENCE}"},
        {"role": "user", "content": "which editor do I use?"},
    ]
    prep = engine.prepare(live.body(resumed), {"x-bead-session": "s-resumed"})
    engine.forwarded(prep).result(timeout=30)
    live.answer(prep, "Helix.")
    assert live.leftovers() == []
    assert [t.text for t in live.turns()][-4:] == [FORGOTTEN, FORGOTTEN, "which editor do I use?", "Helix."]
    again = [*resumed, {"role": "assistant", "content": "Helix."}, {"role": "user", "content": f"{SENTENCE} again"}]
    prep = engine.prepare(live.body(again), {"x-bead-session": "s-resumed"})
    engine.forwarded(prep).result(timeout=30)
    assert [t.text for t in live.turns()][-1] == f"{SENTENCE} again"


def test_an_answer_the_proxy_could_not_read_is_not_captured_in_clear_from_history_after_a_forget(live):
    """The proxy could not read an answer as it ended (a compressed stream): the next request's history carries it,
    and it is captured from there. A forget ran in between: the answer was said before it (it repeats the value), so
    it goes to the raw log as [forgotten]; what the person typed after the forget is captured as said."""
    engine = live.engine
    question = [{"role": "user", "content": "what is the vault code word?"}]
    prep = engine.prepare(live.body(question), {"x-bead-session": "sess-unread"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)  # the request's own turns are in the log; its answer never reached the proxy readable
    live.forget()
    later = [
        *question,
        {"role": "assistant", "content": f"It is {VALUE}, kept in the vault."},
        {"role": "user", "content": "thanks, and which editor do I use?"},
    ]
    prep = engine.prepare(live.body(later), {"x-bead-session": "sess-unread"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    assert live.leftovers() == []
    turns = live.turns()
    assert [t.role for t in turns if t.text == FORGOTTEN] == ["assistant"]
    assert turns[-1].text == "thanks, and which editor do I use?"


def test_a_retry_after_a_forget_keeps_its_own_answer_though_the_proxy_could_not_read_it(live):
    """The request before a forget lost its answer (the proxy could not read it); the harness retried it after the
    forget, and the retry's answer, said after the forget, reaches the log from the next request's history as said:
    the place it is captured at carries the retry's epoch, not the first request's."""
    engine = live.engine
    question = [{"role": "user", "content": "which editor do I use?"}]

    def send(messages: list[dict]) -> Any:
        prep = engine.prepare(live.body(messages), {"x-bead-session": "sess-retry"})
        done = engine.forwarded(prep)
        assert done is not None
        done.result(timeout=30)
        return prep

    send(question)  # its answer never reached the proxy readable
    live.forget()
    send(question)  # the retry, after the forget; its answer is unreadable too
    send([*question, {"role": "assistant", "content": "You use Helix."}, {"role": "user", "content": "thanks"}])
    texts = [t.text for t in live.turns()]
    assert "You use Helix." in texts and texts[-1] == "thanks"


def test_a_remember_typed_before_a_forget_is_not_acted_on_after_it(live):
    """The person typed "remember: ..." with the value, then forgot it (`forget --match`) before the capture ran: the
    turn is [forgotten] and no fact is written from it."""
    engine = live.engine
    prep = engine.prepare(live.body([{"role": "user", "content": f"remember: the vault code word is {VALUE}"}]), {})
    assert [p.action for p in prep.plans or []] == ["write"]
    live.forget(match=VALUE)
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    live.answer(prep, "Noted.")
    assert live.leftovers() == []
    with live.Memory(live.home, engine.config) as m:
        assert [k for k in m.facts.keys() if k != live.KEY] == []


def test_a_request_that_comes_while_a_forget_runs_goes_out_unchanged_and_records_nothing(live):
    """While a forget runs (it holds its flock), the index may still hold the value: a request that comes then goes
    upstream as it came, with no pinned block, and nothing of it is recorded (the conversation's next request
    builds its blocks from what is left)."""
    engine = live.engine
    data = live.body([{"role": "user", "content": "what is the vault code word?"}])
    with live.Memory(live.home, engine.config) as m, m.raw.forgetting():
        prep = engine.prepare(data, {"x-bead-session": "sess-mid"})
    assert prep.body == data and prep.ident is None
    assert engine.counters["forget_during_request"] == 1
    records = [json.loads(line) for p in live.home.sessions.glob("sess-mid*.jsonl") for line in p.read_text().splitlines()]
    assert [r for r in records if r.get("kind") in ("pinned", "cue", "capturing", "captured")] == []
    # Once it ended, the next request is prepared as ever.
    prep = engine.prepare(data, {"x-bead-session": "sess-mid"})
    assert VALUE.encode() in prep.body


def test_the_trace_of_a_later_request_does_not_quote_the_answer_a_forget_took(live):
    """The conversation re-sends the earlier answer with every request; the raw log has it as [forgotten]: the
    trace line of the next request names its source and length, not its words."""
    engine = live.engine
    question = [{"role": "user", "content": "what is the vault code word?"}]
    prep = engine.prepare(live.body(question), {"x-bead-session": "sess-q"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    answer = f"It is {VALUE}, kept in the vault."
    live.answer(prep, answer)
    live.forget()
    assert live.leftovers() == []
    later = [*question, {"role": "assistant", "content": answer}, {"role": "user", "content": "thanks"}]
    prep = engine.prepare(live.body(later), {"x-bead-session": "sess-q"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    engine.drain(timeout=30)
    assert live.leftovers() == []
    cues = json.loads(live.trace.read_text().splitlines()[-1])["cues"]
    assert cues == [
        {"source": "user", "text": "thanks"},
        {"source": "assistant", "text": "(the previous answer's, 52 characters)"},
    ]


def test_a_use_noted_after_a_forget_or_during_one_names_no_forgotten_key(live):
    """A search found the fact, a forget took it, then the agent's recall notes its use (MCP `recall`, `get_memory`,
    the dream's reinforce): audit.log and the index's uses never name the key again; while a forget runs, no use is
    noted at all."""
    with live.Memory(live.home, live.engine.config) as m:
        m.write("user/editor", "The person edits in Helix.", "user")
        live.forget()
        m.note_use([live.KEY, "user/editor"], "recall")
        with m.raw.forgetting():
            m.note_use(["user/editor"], "open")
        assert live.leftovers() == []
        audit = [json.loads(line) for line in (live.home.root / "audit.log").read_text().splitlines()]
        uses = [(e["event"], e.get("key"), e.get("keys")) for e in audit if e["event"] in ("recall", "open")]
        assert uses == [("recall", "user/editor", None)]


def test_a_turn_captured_after_a_seal_was_planned_is_not_left_in_clear(live):
    """A seal plans again inside its locks, as forget does: the model's answer repeating the value, captured between
    the plan and the seal's run, is redacted with the rest (the vault's own step, encrypting the versions, is
    the vault tests'; here the plaintext side alone, as `bead seal` runs it)."""
    engine = live.engine
    prep = engine.prepare(live.body([{"role": "user", "content": "what is the vault code word?"}]), {"x-bead-session": "s"})
    done = engine.forwarded(prep)
    assert done is not None
    done.result(timeout=30)
    with live.Memory(live.home, engine.config) as m:
        plan = forget.plan_seal(m, live.KEY)
        live.answer(prep, f"It is {VALUE}, kept in the vault.")  # the proxy, another process, meanwhile
        forget.apply(m, plan, event="seal", tombstones=False)
    assert live.leftovers() == []


def _forgotten_after_saying(mem, said: str, key: str, body: str) -> list[str]:
    """Three filler turns and ``said``, then ``key`` written as ``body`` and forgotten: the texts of the turns
    that are not filler, as the raw log holds them after."""
    for i in range(3):
        mem.append_turns(f"f{i}", [("user", f"filler turn {i} about the editor", T0, None)])
    mem.append_turns("s1", [("user", said, T0, None)])
    mem.write(key, body, "user")
    forget.apply(mem, forget.plan_target(mem, key))
    return [t.text for p in mem.raw.files() for t in mem.raw.read(p) if "filler" not in t.text]


@pytest.mark.parametrize(
    "said",
    [
        "GET https://bank.example/reset?code=K7%23mQ2%40zR9&x=1",
        'tool: {"code": "' + "".join(f"\\u{ord(c):04x}" for c in "K7#mQ2@zR9") + '"}',
        "<td>" + "".join(f"&#{ord(c)};" for c in "K7#mQ2@zR9") + "</td>",
    ],
    ids=["percent-encoded", "json-escaped", "html-entities"],
)
def test_a_code_said_escaped_in_another_turn_is_forgotten_too(mem, said):
    """A forgotten value's code, said in a turn escaped as a URL, JSON or a web page writes it: read decoded, and the
    turn (whose escapes no redaction can cut around) goes whole."""
    assert _forgotten_after_saying(mem, said, "user/bank-code", "Recovery code K7#mQ2@zR9") == [FORGOTTEN]
    mem.checkpoint()
    forms = (b"K7%23mQ2", b"zR9", b"\\u004b\\u0037", b"&#75;&#55;")
    assert [p for p in mem.home.root.rglob("*") if p.is_file() and any(f in p.read_bytes() for f in forms)] == []


def test_a_passphrase_of_joined_words_said_with_spaces_is_forgotten(mem):
    """A value's passphrase written as one token of words (`maple-quartz-lantern-orbit-river-candle`) and said in a
    turn with spaces between its words: its words in order are found, however they are parted. Short parts
    (`end-to-end`) are not looked for apart."""
    mem.append_turns("s1", [("user", "ok the wallet words are maple quartz lantern orbit river candle, in that order", T0, None)])
    mem.append_turns("s2", [("user", "we test end to end before a release", T0, None)])
    mem.write("user/wallet", "Wallet recovery words: maple-quartz-lantern-orbit-river-candle (end-to-end)", "user")
    forget.apply(mem, forget.plan_target(mem, "user/wallet"))
    texts = [t.text for p in mem.raw.files() for t in mem.raw.read(p)]
    assert "ok the wallet words are [forgotten], in that order" in texts
    assert "we test end to end before a release" in texts
    mem.checkpoint()
    assert [p for p in mem.home.root.rglob("*") if p.is_file() and b"quartz lantern" in p.read_bytes()] == []


def test_a_home_no_forget_ran_in_runs_none_and_the_check_creates_no_file(live):
    """The proxy asks whether a forget runs before each write: reading only (a raw folder bead may not write to
    still captures), and no file is made for the asking."""
    with live.Memory(live.home, live.engine.config) as m:
        assert m.raw.forget_running() is False and not m.raw.forgetting_path.exists()
        with m.raw.forgetting():
            assert m.raw.forget_running() is True
        assert m.raw.forget_running() is False


@pytest.mark.parametrize("where", ["the trace's scrub", "the raw turns' redaction"])
def test_a_forget_stopped_part_way_is_finished_by_forgetting_the_key_again(full_store, monkeypatch, tmp_path, where):
    """A forget killed part way (or stopped by a busy index) leaves the key's version files, deleted last: the
    person forgets the key again, from another process, and every copy goes, index.db included. Deleted first,
    they left the stopped forget's state and trace lines with no version to find them by; and the index kept the
    words of turns rewritten under a transaction that rolled back, and of rows deleted by a process that died
    before its checkpoint merged them away."""
    from bead.core.memory import Memory
    from bead.core.trace import Trace

    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps(trace_line("s", cues=[{"source": "user", "text": f"my code is {VALUE}"}])) + "\n")
    monkeypatch.setenv("BEAD_TRACE", str(trace))
    mem = full_store

    def stopped(*a, **k):
        raise KeyboardInterrupt  # the process dies here: nothing after this line of forget runs

    with monkeypatch.context() as m:
        if where == "the trace's scrub":
            m.setattr(Trace, "scrub", stopped)
        else:  # after a file's turns were rewritten, inside the index transaction that then rolls back
            real = Memory.redact_turns

            def rewritten_then_stopped(self, *a, **k):
                real(self, *a, **k)
                raise KeyboardInterrupt

            m.setattr(Memory, "redact_turns", rewritten_then_stopped)
        with pytest.raises(KeyboardInterrupt):
            forget.apply(mem, forget.plan_target(mem, "user/code-word"))
    assert mem.facts.versions("user/code-word").numbers, "the versions are the last thing forget deletes"
    assert VALUE in trace.read_text()
    home, config = mem.home, mem.config
    mem.close()  # the stopped process is gone, and its connection with it
    with Memory(home, config) as again:
        forget.apply(again, forget.plan_target(again, "user/code-word"))
        assert again.current("user/editor") is not None
    assert leftovers(home.root, VALUE) == [] and VALUE not in trace.read_text()


def test_a_forget_stopped_after_its_last_step_leaves_a_merge_that_status_reports_and_fix_does(full_store, monkeypatch):
    """Stopped after the versions went and before its checkpoint, a forget cannot be run again (nothing to forget),
    and index.db still holds the deleted turns' words: `bead status` says so, and `--fix` merges them away."""
    from bead.core import health
    from bead.core.memory import Memory

    mem = full_store
    stop_forget_at(monkeypatch, Memory, "checkpoint", mem, forget.plan_target(mem, "user/code-word"))
    home, config = mem.home, mem.config
    mem.close()
    with Memory(home, config) as again:
        with pytest.raises(BeadError, match="nothing to forget"):
            forget.plan_target(again, "user/code-word")
        assert reports_stopped_forget(again)
        assert any("cleared deleted text out of index.db" in f for f in health.collect(again, fix=True)["fixed"])
        assert not reports_stopped_forget(again)
    assert leftovers(home.root, VALUE) == []


def test_a_forget_of_a_fact_alone_stopped_before_its_checkpoint_is_reported_too(mem, monkeypatch):
    """A key with no raw turn: stopped after its versions went and before the checkpoint (killed, Ctrl-C), the
    forget left the value in index.db (another process's connection keeps the WAL) and nothing said so: status
    reported no problem and the forget could not be run again."""
    from bead.core import health
    from bead.core.memory import Memory

    mem.write("user/pet", "my cat is called Quibblewort", "user")
    stop_forget_at(monkeypatch, Memory, "checkpoint", mem, forget.plan_target(mem, "user/pet"))
    assert reports_stopped_forget(mem)
    assert any("cleared deleted text out of index.db" in f for f in health.collect(mem, fix=True)["fixed"])
    assert not reports_stopped_forget(mem)


@pytest.mark.parametrize(
    "said",
    [
        # A config map's value, base64-encoded.
        "binaryData:\n  recovery.txt: " + base64.b64encode(b"K7#mQ2@zR9x").decode() + "\n  motd.txt: aGk=",
        # The code inside a longer encoded text: a backup's note, encoded after `codes: `.
        "$ base64 notes.txt\n" + base64.b64encode(b"bank codes: K7#mQ2@zR9x").decode(),
        # `base64` wraps its output at 76 characters: the code's encoded form runs across the line break.
        "$ base64 bank-call.txt\n"
        + "\n".join(
            textwrap.wrap(base64.b64encode(b"Notes from the bank call; their new recovery code is K7#mQ2@zR9x").decode(), 76)
        ),
        # The same as a file reader shows it: each line numbered (`cat -n`).
        "\n".join(
            f"{n:6}\t{line}"
            for n, line in enumerate(
                textwrap.wrap(base64.b64encode(b"Notes from the bank call; their new recovery code is K7#mQ2@zR9x").decode(), 76),
                1,
            )
        ),
        # The same, in the URL-safe alphabet, after two bytes of something else.
        "next page: /list?cursor=" + base64.urlsafe_b64encode(b"\x01\xfeK7#mQ2@zR9x?>").decode(),
        # A hex dump of it, upper-case.
        "0000: " + b"K7#mQ2@zR9x".hex().upper(),
        # `hexdump -C` spaces the bytes.
        "00000000  " + " ".join(f"{b:02x}" for b in b"K7#mQ2@zR9x") + "  |K7#m...|",
    ],
    ids=["base64", "base64-after-a-prefix", "base64-wrapped", "base64-numbered-lines", "base64-url-safe", "hex", "hex-spaced"],
)
def test_a_code_said_encoded_in_another_turn_is_forgotten_too(mem, said):
    """A tool's output shows a secret encoded: base64 at whatever offset it starts inside a longer encoded text, in
    either alphabet, or hex. The turn goes whole (an encoded form cannot be cut around)."""
    assert _forgotten_after_saying(mem, said, "user/bank-code", "Recovery code K7#mQ2@zR9x") == [FORGOTTEN]
    mem.checkpoint()
    encoded = max(said.replace("=", " ").split(), key=len).encode()
    assert [p for p in mem.home.root.rglob("*") if p.is_file() and encoded in p.read_bytes()] == []
    assert [p for p in mem.home.root.rglob("*") if p.is_file() and b"6d 51 32 40" in p.read_bytes()] == []
    assert [t.text for p in mem.raw.files() for t in mem.raw.read(p) if "filler" in t.text] == [
        f"filler turn {i} about the editor" for i in range(3)
    ]


def _hexdump_c(data: bytes) -> str:
    """`hexdump -C`'s layout: an offset, 16 bytes in two groups of eight, the text between bars."""
    rows = []
    for o in range(0, len(data), 16):
        row = data[o : o + 16]
        digits = " ".join(f"{b:02x}" for b in row[:8]) + "  " + " ".join(f"{b:02x}" for b in row[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        rows.append(f"{o:08x}  {digits:<49} |{text}|")
    return "\n".join(rows)


@pytest.mark.parametrize(
    "fact,said",
    [
        # A password's signs (`!`, `?`) cut its plain-text tokens short; its encoded form is of the whole word.
        ("The alarm panel code is Xy3!Qz7?Lm", "$ base64 alarm.txt\n" + base64.b64encode(b"panel: Xy3!Qz7?Lm\n").decode()),
        # A six-digit number inside a longer encoded text, at an offset its groups do not start at.
        ("The gym locker is number 493817", "data:\n  locker: " + base64.b64encode(b"gym 493817").decode()),
        # A hex dump whose rows the code runs across (the text column splits it too).
        ("Recovery code K7#mQ2@zR9x", "$ hexdump -C note.txt\n" + _hexdump_c(b"the bank said:K7#mQ2@zR9x\n")),
        # `gh api .../contents/FILE`: base64 wrapped with `\n` escapes inside a JSON string.
        (
            "Recovery code K7#mQ2@zR9x",
            json.dumps(
                {
                    "content": "\n".join(
                        textwrap.wrap(base64.b64encode(b"the bank said on the phone that the code is K7#mQ2@zR9x").decode(), 60)
                    )
                }
            ),
        ),
        # `tcpdump -X`: `0x0010:` offsets, bytes in pairs, the text column after two spaces.
        (
            "Recovery code K7#mQ2@zR9x",
            "\t0x0000:  4500 0034 " + "4b37 236d 5132  E..4K7#m..\n\t0x0010:  407a 5239 78  @zR9x",
        ),
        # Hex on an indented line of its own, shorter than a dump's text column.
        ("The gym locker is number 493817", "locker.hex:\n    " + b"493817".hex()),
        # PowerShell's -EncodedCommand: base64 of UTF-16.
        (
            "Recovery code K7#mQ2@zR9x",
            "powershell -EncodedCommand " + base64.b64encode("echo K7#mQ2@zR9x".encode("utf-16-le")).decode(),
        ),
    ],
    ids=[
        "password-with-signs",
        "six-digits-at-an-offset",
        "hexdump-across-rows",
        "json-escaped-lines",
        "tcpdump",
        "indented-hex",
        "utf-16",
    ],
)
def test_an_encoded_code_is_found_whole_wherever_its_bytes_fall(mem, fact, said):
    assert _forgotten_after_saying(mem, said, "user/code", fact) == [FORGOTTEN]


def test_an_encoded_text_that_holds_another_code_stays(mem):
    """Encoded text is read decoded, so a code that differs in a byte is not the forgotten one (a fragment of its
    base64 would match `ABCD-1299` for `ABCD-1234`), and an unrelated dump or blob stays as it was."""
    kept = [
        "$ base64 CHANGES\n" + base64.b64encode(b"fixes ABCD-1299 and ABCD-1200\n").decode(),
        # A longer code that holds it is another code; a word of the fact is no code.
        "$ base64 NEXT\n" + base64.b64encode(b"then ABCD-12345, the blocker\n").decode(),
        "$ hexdump -C logo.png\n" + _hexdump_c(bytes(range(40, 120))),
        "integrity sha512-" + base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode(),
    ]
    for i, text in enumerate(kept):
        mem.append_turns(f"k{i}", [("user", text, T0, None)])
    mem.append_turns("s1", [("user", "$ base64 t.txt\n" + base64.b64encode(b"blocker: ABCD-1234").decode(), T0, None)])
    mem.write("project/shop/blocker", "Ticket ABCD-1234 is the blocker", "project")
    forget.apply(mem, forget.plan_target(mem, "project/shop/blocker"))
    texts = [t.text for p in mem.raw.files() for t in mem.raw.read(p)]
    assert all(k in texts for k in kept) and texts.count(FORGOTTEN) == 1


def test_a_running_forget_owes_its_checkpoint_without_a_problem_and_fix_leaves_its_flag(mem):
    """While a forget or seal runs, its owed checkpoint is no problem, and `bead status --fix` in another process
    must not clear its flag (a kill after that left the value with nothing to say so); once it stopped without
    its checkpoint, status says so."""
    from bead.core import health

    mem.write("user/pet", "my cat is called Quibblewort", "user")
    with mem.raw.forgetting():
        mem.index.owe_checkpoint()
        assert not reports_stopped_forget(mem)
        assert not any("cleared deleted text" in f for f in health.collect(mem, fix=True)["fixed"])
    assert reports_stopped_forget(mem)


def test_a_reindex_during_a_forget_keeps_the_forgets_owed_checkpoint(mem, bead_home):
    """`bead reindex` rebuilt every table, the flag of a forget running in another process with them, and its
    checkpoint cleared the rest: a kill of the forget after that left the value with nothing to say so. The flag
    stays while the forget runs; a reindex with none running clears it, as `bead status` says it does."""
    from click.testing import CliRunner

    from bead.cli import cli

    mem.write("user/pet", "my cat is called Quibblewort", "user")
    with mem.raw.forgetting():
        mem.index.owe_checkpoint()
        r = CliRunner().invoke(cli, ["reindex"], env={"BEAD_HOME": str(bead_home)})
        assert r.exit_code == 0, r.output
    assert reports_stopped_forget(mem)
    r = CliRunner().invoke(cli, ["reindex"], env={"BEAD_HOME": str(bead_home)})
    assert r.exit_code == 0, r.output
    assert not reports_stopped_forget(mem)


class TestStaysGone:
    """The tombstone refused a forgotten value whole, however spelt; an agent wrote it back inside a sentence, as a
    key of its words, or as a title, and after `forget --match` the matched text itself, bare (an adversarial pass,
    2026-12-06). An agent's or the dream's write that says a forgotten value's words is refused; the person's word
    can still bring it back."""

    VALUE = "Glimmerwick Obsidianfox 7q3kz9"

    def refused(self, mem, key, body, title=None):
        from bead.errors import RefusedWrite

        with pytest.raises(RefusedWrite, match="forgotten"):
            mem.write(key, body, "project", trust="agent_observed", title=title)

    def test_inside_a_sentence_a_key_or_a_title_after_a_forget_by_key(self, mem, bead):
        mem.write("user/wifi", self.VALUE, "user")
        assert bead("forget", "user/wifi", "--yes").code == 0
        self.refused(mem, "project/shop/box", f"The staging box is called {self.VALUE}")
        self.refused(mem, "project/shop/box", f"{self.VALUE.lower()} is the staging box")
        self.refused(mem, "project/shop/glimmerwick-obsidianfox-7q3kz9", "x")
        self.refused(mem, "project/shop/box", "an innocuous value", title=self.VALUE)
        mem.write("project/shop/box", "The staging box is called Glimmerwick", "project", trust="agent_observed")  # a word
        mem.write("user/wifi", self.VALUE, "user")  # the person's word brings it back

    def test_two_common_words_forgotten_refuse_themselves_only_and_a_key_with_underscores_is_its_words(self, mem, bead):
        """A value of two common words is refused whole, not inside every agent fact that says them ("staging
        server" forgotten must not refuse "The staging server runs Postgres 16"); a distinctive one is refused
        inside a key written with underscores as with hyphens, and a digits-and-letters word alone too."""
        mem.write("project/shop/db", "staging server", "project")
        mem.write("project/shop/box", "quokka-east 7q3kz9x", "project")
        assert bead("forget", "project/shop/db", "--yes").code == 0 and bead("forget", "project/shop/box", "--yes").code == 0
        self.refused(mem, "project/shop/db2", "Staging server!")  # the whole value, as before
        mem.write("project/shop/pg", "The staging server runs Postgres 16", "project", trust="agent_observed")
        self.refused(mem, "project/shop/quokka_east_7q3kz9x", "x")
        self.refused(mem, "project/shop/host", "Deploys go to QUOKKA EAST 7q3kz9x now")

    def test_the_matched_text_bare_after_a_forget_by_match(self, mem, bead):
        mem.write("project/shop/vault-phrase", f"The vault phrase is {self.VALUE}.", "project")
        assert bead("forget", "--match", self.VALUE, "--yes").code == 0
        self.refused(mem, "project/shop/phrase", self.VALUE)
        self.refused(mem, "project/shop/phrase", f"Vault phrase: {self.VALUE}")

    def test_a_rejected_proposal_refuses_itself_only_not_a_sentence_around_it(self, mem):
        """A review's reject tombstones the proposal, not its words: "Deploy on Fridays" rejected must not refuse
        "We never deploy on Fridays"."""
        from bead.core.review import reject_item
        from bead.errors import RefusedWrite
        from bead.store.queue import Queue

        item, _ = Queue(mem).add("untrusted-source", "project/shop/deploys", "project", "Deploy on Fridays", [], "x", "u")
        reject_item(mem, item.id)
        with pytest.raises(RefusedWrite):
            mem.write("project/shop/deploys", "Deploy on Fridays", "project", trust="agent_observed")
        mem.write("project/shop/deploys", "We never deploy on Fridays", "project", trust="agent_observed")


def test_an_ordinary_reindex_of_a_raw_file_is_no_stopped_forget(mem):
    """Re-indexing a raw file that grew (an import, the proxy's appends, the indexer) owes the full-text index a
    merge, and `bead status` called that a forget or seal stopped before its checkpoint: a real stopped forget
    could not be told from it. Only a forget's or a seal's owed checkpoint is reported."""
    from bead.index.rebuild import sync_raw

    mem.append_turns("s1", [("user", "the first turn", T0, None, {"source": "typed"})])
    mem.raw.append("s1", "user", "a second turn, appended by another writer")
    sync_raw(mem.index, mem.raw, mem.raw.find("s1"))
    assert mem.index.merge_pending()  # the merge is owed
    assert not reports_stopped_forget(mem)
    mem.index.owe_checkpoint()  # as a forget that was killed leaves it
    assert reports_stopped_forget(mem)


def test_a_forget_stopped_after_it_redacted_turns_is_reported(mem, monkeypatch):
    """The owed checkpoint was recorded only before the last step, while the raw turns' words were deleted from the
    index (and left in its WAL and full-text segments) two steps earlier: a forget stopped in between left them
    with nothing to say so, once `bead status` no longer took an ordinary re-index's merge for a stopped forget."""

    mem.append_turns("s1", [("user", "the code is zorbulax quintessa", T0, None, {"source": "typed"})])
    mem.checkpoint()
    stop_forget_at(monkeypatch, forget.Conversations, "scrub", mem, forget.plan_match(mem, "zorbulax quintessa"))
    assert reports_stopped_forget(mem)


def test_a_tombstone_from_before_its_letters_were_kept_still_finds_the_value_inside(mem):
    """Tombstones written before 2026-12-06 keep the inside hash without the value's letters (``inside_chars``),
    which now spare hashing most runs of words: such a value is still found, by hashing every run."""
    mem.write("user/vendor", "Globex Wombatica Holdings", "user")
    forget.apply(mem, forget.plan_target(mem, "user/vendor"))
    log = mem.home.tombstones_log
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert any("inside_chars" in e for e in lines)
    log.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "inside_chars"}) + "\n" for e in lines))
    assert mem.tombstones.contained("our vendor is globex wombatica holdings, billed monthly")
    assert not mem.tombstones.contained("our vendor is globex, billed monthly")


def _sender(engine):
    """Send one request's messages through ``engine`` as a harness would, and wait for its capture."""

    def send(messages, session):
        body = json.dumps({"model": "m", "max_tokens": 5, "system": "x", "messages": messages}).encode()
        engine.forwarded(engine.prepare(body, {"x-bead-session": session})).result(timeout=30)
        engine.drain(timeout=30)

    return send


def test_a_forgotten_address_replayed_by_a_resumed_conversation_or_written_by_an_agent_stays_gone(bead_home):
    """A value holding `@` or `/` (an address, a URL) got no form to refuse inside another text: a resumed
    conversation brought the turn the forget had blanked back in clear, and an agent wrote it again (an
    adversarial pass). Said in the same words, it is refused now; one of few words (`Use C++ 17`) still only whole."""
    from bead.config import parse
    from bead.core.memory import Memory
    from bead.errors import RefusedWrite
    from bead.paths import Home
    from bead.proxy.engine import Engine
    from bead.store.audit import inside_form

    fact = "Ops pager email is quokka.wombat@globex-intra.example"
    home = Home(bead_home).ensure()
    engine = Engine(home, parse("owner: t\n"))
    send = _sender(engine)

    with Memory(home, engine.config) as mem:
        mem.write("user/pager", fact, "user")
    first = [{"role": "user", "content": f"note: {fact}"}]
    send(first, "s-first")
    with Memory(home, engine.config) as mem:
        forget.apply(mem, forget.plan_target(mem, "user/pager"))
    assert leftovers(bead_home, "quokka") == []
    send([*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "which editor?"}], "s-resumed")
    assert leftovers(bead_home, "quokka") == []
    with Memory(home, engine.config) as mem, pytest.raises(RefusedWrite):
        mem.write("user/pager-again", f"FYI: {fact}.", "user", trust="agent_observed")
    engine.close()
    assert inside_form("Use C++ 17") is None


def test_a_forgotten_code_said_in_other_words_is_refused_and_not_captured_again(bead_home):
    """The forgotten sentence's other words were what kept it out: an agent wrote the code back in another sentence
    ("vault code word Zorblax-Quintessence-77q41", the code alone), and a resumed conversation replayed a turn that
    said the code beside other words in clear (an adversarial pass). The value's core, its words from the first
    rare one to the last, is refused inside other text too."""
    from bead.config import parse
    from bead.core.memory import Memory
    from bead.errors import RefusedWrite
    from bead.paths import Home
    from bead.proxy.engine import Engine

    home = Home(bead_home).ensure()
    engine = Engine(home, parse("owner: t\n"))
    send = _sender(engine)

    first = [{"role": "user", "content": f"the combo of my locker, {VALUE}, is private"}]
    with Memory(home, engine.config) as mem:
        mem.write("user/vault-code", SENTENCE, "user")
    send(first, "s-first")
    with Memory(home, engine.config) as mem:
        forget.apply(mem, forget.plan_target(mem, "user/vault-code"))
        for text in (f"vault code word {VALUE}", VALUE):
            with pytest.raises(RefusedWrite):
                mem.write("user/again", text, "user", trust="agent_observed")
        mem.write("user/other", "The vault is in the basement; the code changes monthly.", "user", trust="agent_observed")
    assert leftovers(bead_home, "77q41") == []
    send([*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "which editor?"}], "s-resumed")
    assert leftovers(bead_home, "77q41") == []
    engine.close()


@pytest.mark.parametrize(
    "said", ["the bank gave me recovery code QX - 88", "recovery code is QX \u2013 88", 'recovery code "QX"-"88"']
)
def test_a_forgotten_code_written_with_spaced_separators_goes_too(mem, said):
    """A code's parts were found with up to two characters between them: "QX - 88" (three) stayed in the raw log
    and the index (an adversarial pass)."""
    mem.append_turns("s-code", [("user", said, T0, None)])
    mem.write("user/bank-pin", "4711, recovery code QX-88", "user")
    forget.apply(mem, forget.plan_target(mem, "user/bank-pin"))
    text = [t.text for t in mem.raw.read(mem.raw.find("s-code"))][0]
    assert "88" not in text and "[forgotten]" in text, text


def test_a_forget_leaves_a_conversations_pinned_block_that_only_shares_a_code_with_the_value(
    proxy_client, upstream, bead_home, bead
):
    """A forget of "the staging cache answered on 5433 once" took conversation A's pinned block, which held only
    another fact, "Postgres listens on port 5433": the line matcher found the value's code in it. The block was built
    again in the middle of the conversation (with a fact written since), and the prompt cache was lost from the end of
    `system` on (an outside review). A code another current fact says is that fact's too: its lines and turns stay;
    the forgotten fact's own do not."""
    with Memory(Home(bead_home).ensure(), Config(owner="t")) as m:
        m.write("project/shop/db-port", "Postgres listens on port 5433.", type="project")
        said = m.append_turns("other", [("user", "the staging cache said 5433 when I looked", T0, None)])[0]

    def body(msgs):
        system = [{"type": "text", "text": "You are a test.\n - Primary working directory: /tmp/shop"}]
        return json.dumps({"model": "claude-test", "max_tokens": 100, "system": system, "messages": msgs}).encode()

    proxy = proxy_client()
    h = {"content-type": "application/json", "x-api-key": "k", "x-bead-session": "conv-a"}
    first = [{"role": "user", "content": "hello there"}]
    proxy.post(body(first), h)
    proxy.settle()
    before = upstream.requests[-1].json()["system"]
    assert "Postgres listens on port 5433." in json.dumps(before)
    assert bead("write", "user/shell", "fish with vi keys", "--type", "user").code == 0
    assert bead("write", "project/shop/cache-port", "the staging cache answered on 5433 once", "--type", "project").code == 0
    assert bead("forget", "project/shop/cache-port", "--yes").code == 0
    second = [*first, {"role": "assistant", "content": "Hello from the fake."}, {"role": "user", "content": "and now?"}]
    proxy.post(body(second), h)
    proxy.settle()
    assert upstream.requests[-1].json()["system"] == before, "the pinned block stays as it was"
    with Memory(Home(bead_home), Config(owner="t")) as m:
        assert m.current("project/shop/cache-port") is None and m.current("project/shop/db-port") is not None
        # A raw turn still loses the code wherever it says it: a fact anyone wrote must not keep it in the history.
        assert "5433" not in m.raw.read(said.path)[0].text


@pytest.mark.parametrize(
    "said",
    [
        "'\\x51uibble-\\x46rost-5521'",
        "printf '\\121uibble-\\106rost-5521'",
        "Subject: =?UTF-8?Q?Quibble=2DFrost=2D5521?=",
        "Content-Transfer-Encoding: quoted-printable\n\ncode=3D Quibble=2DFrost=2D5521",
        "'Quibble-Fr' + 'ost-5521'",
        'key = ("Quibble-Fr"\n       "ost-5521")',
    ],
    ids=["x-escapes", "octal-escapes", "mime-q-word", "quoted-printable", "joined-literals", "implicit-concatenation"],
)
@pytest.mark.parametrize("how", ["key", "match"])
def test_forget_reaches_a_value_written_in_byte_escapes_quoted_printable_or_joined_literals(mem, said, how):
    """A turn that wrote the value as a string literal's byte escapes, in quoted-printable (a mail's body, a MIME
    Q-word) or as two literals joined kept it after `bead forget` (an outside review): grep for `rost-5521` still
    found it. Forget's matcher undoes these too."""
    value = "Quibble-Frost-5521"
    mem.append_turns("s-enc", [("user", f"note: {said} end", T0, None)])
    mem.write("user/locker", f"The locker code is {value}", "user")
    plan = forget.plan_match(mem, value) if how == "match" else forget.plan_target(mem, "user/locker")
    forget.apply(mem, plan)
    raw = b"".join(p.read_bytes() for p in mem.raw.files())
    assert b"note:" in raw or b"[forgotten]" in raw
    assert not any(w in raw.lower() for w in (b"rost-5521", b"rost=2d5521", b"uibble", b"\\x51uibble", b"ost-5521")), raw


def test_a_code_another_fact_says_still_goes_from_the_raw_turns(mem):
    """Another current fact that says a forgotten secret's code (a build number, or a note an agent planted) spares
    it in bead's own blocks only: a raw turn that says the code in other words still loses it (a review)."""
    turn = mem.append_turns("s-pin", [("user", "I changed the garage door to 48213977 today", T0, None)])[0]
    mem.write("user/garage", "the garage door code is 48213977", "user")
    mem.write("project/shop/ci-build", "CI build 48213977 was the last green one", "project")
    forget.apply(mem, forget.plan_target(mem, "user/garage"))
    assert "48213977" not in mem.raw.read(turn.path)[0].text
    assert mem.current("project/shop/ci-build").body == "CI build 48213977 was the last green one"


def test_a_value_its_hash_would_give_away_leaves_no_tombstone(mem, bead):
    """A tombstone of "PIN 4821" or of `--match 9307` is the value to anyone who tries every string of its shape (a
    second for SHA-256; an adversarial pass recovered both): such a value is forgotten with no hash left, as a
    sealed one is. A value with more to guess keeps its tombstone."""
    from bead.store.audit import value_hash

    mem.write("user/pin", "PIN 4821", "user")
    mem.write("user/alarm", "the alarm is 9307", "user")
    mem.write("project/shop/safe", "quokka wombat 7731", "project")
    forget.apply(mem, forget.plan_target(mem, "user/pin"))
    assert bead("forget", "--match", "9307", "--yes").code == 0
    forget.apply(mem, forget.plan_target(mem, "project/shop/safe"))
    log = (mem.home.root / "tombstones.log").read_text()
    lines = [json.loads(line) for line in log.splitlines()]
    hashes = {v for e in lines for k, v in e.items() if k.endswith("sha256")}
    for guessed in ("PIN 4821", "pin 4821", "9307", "4821"):
        assert value_hash(guessed) not in hashes
    assert not [e for e in lines if e.get("key") == "user/pin" or e.get("key_sha256") == hashlib.sha256(b"user/pin").hexdigest()]
    assert len([e for e in lines if e.get("key_sha256") == hashlib.sha256(b"project/shop/safe").hexdigest()]) == 1
    # As numbers of their own: the forget's random epoch id (hex) holds any four digits now and then.
    said = re.compile(rb"(?<![0-9A-Za-z])(?:4821|9307)(?![0-9A-Za-z])")
    assert not [p for p, d in all_bytes_under(mem.home.root).items() if said.search(d)]


@pytest.mark.parametrize(
    "joined",
    [b"Zanzibarqux-Velotrine", b"ZANZIBARQUX_VELOTRINE", b"Zanzibarqux\nVelotrine\n", b"zanzibarqux.velotrine"],
    ids=["hyphen", "underscore-capitals", "lines", "dot"],
)
@pytest.mark.parametrize("how", ["base64", "hex"])
def test_a_value_encoded_with_its_words_joined_otherwise_is_forgotten_too(mem, joined, how):
    """`echo Zanzibarqux-Velotrine | base64`: the plain text is found however its words are joined, but its encoded
    form only as written with blanks (an adversarial pass kept eight of eight such turns)."""
    said = base64.b64encode(joined).decode() if how == "base64" else joined.hex()
    assert _forgotten_after_saying(mem, f"$ {how} name.txt\n{said}", "user/boat", "Zanzibarqux Velotrine") == [FORGOTTEN]


def test_a_guessable_code_inside_a_longer_value_leaves_no_hash_of_its_own(mem):
    """The tombstone of "the gate code is 4821 7731" kept the hash of its core, `4821 7731`, beside its word count and
    letters: 10^8 tries (a review). A core that guessable gets no hash; the whole value's stays."""
    from bead.store.audit import _inside_hash

    mem.write("user/gate", "the gate code is 4821 7731", "user")
    forget.apply(mem, forget.plan_target(mem, "user/gate"))
    [entry] = [json.loads(line) for line in (mem.home.root / "tombstones.log").read_text().splitlines()]
    assert "core_sha256" not in entry and _inside_hash(["4821", "7731"]) not in entry.values()
    assert "inside_sha256" in entry


def test_a_value_written_before_a_raw_files_first_turn_is_forgotten_too(mem, bead_home, bead):
    """Text before a raw file's first marker (a hand edit's, or a first marker damaged) is no turn: forget --match
    found no turn holding the value and left it in the file (an outside attack). Forget finds it in the file's text
    and the file is written again from its turns."""
    mem.raw.append("s-pre", "user", "the staging box is reachable over the bastion")
    mem.raw.append("s-pre", "assistant", "noted")
    path = mem.raw.find("s-pre")
    path.write_text("Stray text wombat-secret-99173 pasted here\n" + path.read_text())
    os.utime(path, (1_600_000_000, 1_600_000_000))  # written long before: forget's second look, inside its locks,
    mem.catch_up_index()  # reads only the files written since its first (a review found the text kept so)
    r = bead("forget", "--match", "wombat-secret-99173", "--yes")
    assert r.code == 0, r.err
    assert "text before the first turn of 1 raw file(s)" in r.out, r.out
    text = path.read_text()
    assert "wombat" not in text and "the staging box is reachable over the bastion" in text
    assert [t.text for t in mem.raw.read(path)] == ["the staging box is reachable over the bastion", "noted"]


def test_a_code_of_the_value_before_a_raw_files_first_turn_is_forgotten_too(mem, bead):
    """Its distinctive code alone, said before the first turn, stayed while the same code in a turn was redacted (a
    review): the text before the first turn is looked at for the value's codes and rare words too."""
    mem.write("project/s/deploy-box", "The deploy box is quokka-east-7731", "project")
    mem.raw.append("s-code", "user", "restart the worker")  # the code said before the first turn alone (a review)
    path = mem.raw.find("s-code")
    path.write_text("scratch: quokka-east-7731\n" + path.read_text())
    os.utime(path, (1_600_000_000, 1_600_000_000))
    mem.catch_up_index()
    assert bead("forget", "project/s/deploy-box", "--yes").code == 0
    assert "quokka" not in path.read_text()


def _hand_edited_marker(mem, session: str, edit) -> Path:
    """A session of two turns whose first marker line ``edit`` rewrote (its JSON text in, the new JSON text out),
    written long before (forget's second look reads only files written since its first) and indexed."""
    mem.raw.append(session, "user", "the staging box is reachable over the bastion", source="typed")
    mem.raw.append(session, "assistant", "noted")
    path = mem.raw.find(session)
    text = path.read_text()
    first = text.split("\n", 1)[0]
    meta = first[len("<!-- bead:turn ") : -len(" -->")]
    path.write_text(text.replace(first, "<!-- bead:turn " + edit(meta) + " -->", 1))
    os.utime(path, (1_600_000_000, 1_600_000_000))
    mem.catch_up_index()
    return path


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m[:-1] + ', "note": {"said": ["kept aside: wombat-secret-99173"]}, "ok": "plain"}',
        lambda m: m[:-1] + ', "note": {"wombat-secret-99173": 1}, "ok": "plain"}',  # an object's key
        lambda m: m[:-1] + ', "ok": "wombat-secret-99173", "ok": "plain"}',  # a duplicate key, the last one read
        lambda m: m.replace('"role": "user"', '"role": "wombat-secret-99173", "role": "user"'),
        lambda m: m[:-1] + ', "ok": "plain", "ref": {"x": "wombat-secret-99173"}}',  # a ref that is not text
        lambda m: m.replace('"session": "s-mark"', '"session": "wombat-secret-99173"'),
    ],
    ids=["nested", "object-key", "duplicate", "duplicate-role", "odd-ref", "session"],
)
def test_a_value_in_a_raw_turns_marker_line_is_forgotten_too(mem, bead, edit):
    """A field a hand edit (or another tool) put on a turn's marker line stayed after `bead forget --match`: the
    turn's text went, its marker with the value stayed (an outside attack), and so did forms the parsed marker reads
    past (an object's key, a duplicate key, a ref that is not text: a review). The marker is written again as bead
    writes it, without what holds the value; bead's own fields and the turns' text stay."""
    path = _hand_edited_marker(mem, "s-mark", edit)
    assert b"wombat" in path.read_bytes()
    r = bead("forget", "--match", "wombat-secret-99173", "--yes")
    assert r.code == 0, r.err
    assert "fields of 1 raw turn marker(s)" in r.out, r.out
    assert [p for p in mem.home.root.rglob("*") if p.is_file() and b"wombat" in p.read_bytes()] == []
    first_turn, second = mem.raw.read(path)
    assert first_turn.text == "the staging box is reachable over the bastion" and second.text == "noted"
    assert (first_turn.session, first_turn.role, first_turn.flags["source"]) == ("s-mark", "user", "typed")
    assert first_turn.flags.get("ok", "plain") == "plain"


def test_a_forgotten_value_that_beads_own_marker_fields_hold_leaves_them(mem, bead):
    """bead's own fields of a marker are no value's (a review): forgetting a fact whose words are a turn's source, its
    project and a number in its time, or `--match` of a role, took them from every turn of the files that held the
    value, and an imported turn that lost `imported` and `unverified` read as the person's typed words."""
    mem.raw.append("s-own", "user", "lunch at noon", source="typed", project="globex-portal", message=7, unverified=True)
    mem.raw.append("s-own", "user", "and coffee after", source="typed", project="globex-portal", message=8, imported="codex")
    mem.raw.append("s-own", "assistant", "sounds good", source="assistant", message=9)
    before = [(t.role, t.at, t.flags) for t in mem.raw.read(mem.raw.find("s-own"))]
    year = before[0][1][:4]
    mem.write("project/globex-portal/mirror", f"The globex-portal source mirror is git.internal/zq since {year} 7", "project")
    mem.catch_up_index()
    r = bead("forget", "project/globex-portal/mirror", "--yes")
    assert r.code == 0, r.err
    # Kept, and said: two turns' `project` holds the key's words, and every turn's time the year.
    assert "; 3 raw turn marker(s) keep it in bead's own fields" in r.out, r.out
    r = bead("forget", "--match", "assistant", "--yes")
    assert r.code == 0 and "(1 raw turn marker(s) hold it in bead's own fields" in r.out, r.out
    assert [(t.role, t.at, t.flags) for t in mem.raw.read(mem.raw.find("s-own"))] == before
    r = bead("forget", "--match", "sounds good", "--yes", "--json")
    assert json.loads(r.out)["raw_turn_markers_kept"] == 0, "a value no marker holds is said of none"


def test_a_marker_holding_a_lone_surrogate_is_written_again_as_its_escape(mem, bead):
    """A marker's field holding a lone surrogate (`"\\ud800"`, which JSON reads) stopped a forget's rewrite of its
    file with a traceback, the value left on disk (a review): a marker is written with it as its escape."""
    path = _hand_edited_marker(mem, "s-sur", lambda m: m[:-1] + ', "odd": "\\ud800 zz"}')
    mem.raw.append("s-sur", "user", "the code is wombat-secret-99173", source="typed")
    r = bead("forget", "--match", "wombat-secret-99173", "--yes")
    assert r.code == 0, r.err
    assert b"wombat" not in path.read_bytes()
    assert mem.raw.read(path)[0].flags["odd"] == "\ud800 zz"


def test_every_flag_bead_writes_on_a_turn_is_its_own():
    """What a forget leaves of a marker (OWN_FLAGS) holds every flag bead's code sets on a turn by name (a
    `flags["name"] = ...`, a `flags.setdefault("name", ...)`); capture's own, set as a dict's keys, are in
    test_a_forgotten_value_that_beads_own_marker_fields_hold_leaves_them."""
    import ast

    from bead.store.rawlog import OWN_FLAGS

    written: set[str] = set()
    for src in Path(bead_pkg.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(src.read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant):
                owner = node.value
                name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
                if name == "flags":
                    written.add(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "flags" and isinstance(node.args[0], ast.Constant):
                    written.add(node.args[0].value)
    assert {"forgotten", "redacted", "owner", "batch", "partial", "error"} <= written, written
    assert written <= OWN_FLAGS, written - OWN_FLAGS


def test_a_value_in_a_foreign_marker_field_goes_though_a_field_of_beads_holds_it_too(mem, bead):
    """Where one of bead's own fields held the value too (a batch id), the turn's marker was passed over and a field a
    hand edit added beside it kept the value (a review). The foreign field goes; bead's own stays."""
    path = _hand_edited_marker(
        mem, "s-both", lambda m: m[:-1] + ', "batch": "b-wombat-secret-99173", "note": "wombat-secret-99173"}'
    )
    r = bead("forget", "--match", "wombat-secret-99173", "--yes")
    assert r.code == 0, r.err
    first_turn = mem.raw.read(path)[0]
    assert "note" not in first_turn.flags and first_turn.flags["batch"] == "b-wombat-secret-99173"


def test_a_forget_leaves_every_other_turns_bytes_as_they_were(mem, bead):
    """A forget's rewrite of a raw file wrote every turn again from its parsed form: a text's own last line break went
    from each earlier turn (the reader took it for the one bead writes), invalid UTF-8 became U+FFFD and a hand edit's
    marker was written bead's way. Only the turns that held the value change now."""
    mem.raw.append("s-keep", "user", "the log ends here\n", source="typed")
    mem.raw.append("s-keep", "user", "the code is wombat-secret-99173", source="typed")
    mem.raw.append("s-keep", "assistant", "two breaks\n\n", source="assistant")
    mem.raw.append("s-keep", "user", "last one", source="typed")
    path = mem.raw.find("s-keep")
    data = path.read_bytes()
    # By hand: bytes that are no UTF-8 in a text, and a marker line in JSON's compact spacing.
    data = data.replace(b"two breaks", b"two \xff\xfe breaks")
    third = data.index(b'<!-- bead:turn {"session": "s-keep", "n": 3')
    end = data.index(b"\n", third)
    compact = b'<!-- bead:turn {"session":"s-keep","n":3,"role":"assistant","at":"2026-01-01T00:00:00Z"} -->'
    data = data[:third] + compact + data[end:]
    data = b"my own note before the log\n" + data  # text before the first turn that holds no value stays too
    path.write_bytes(data)
    assert [t.text for t in mem.raw.read(path)][0] == "the log ends here\n"
    mem.catch_up_index()
    r = bead("forget", "--match", "wombat-secret-99173", "--yes")
    assert r.code == 0, r.err
    after = path.read_bytes()
    second = mem.raw.read(path)[1]
    assert b"wombat" not in after and second.text == FORGOTTEN
    first, rest = data.split(b"the code is wombat-secret-99173\n")
    head = first[: first.rindex(b"<!-- bead:turn ")]
    assert after == head + f"{second.marker()}\n{FORGOTTEN}\n".encode() + rest


class TestEachTurnOnItsOwn:
    """A look at a raw file's whole text first, to pass over a file (or a part of the matcher) that held nothing, missed
    what a turn holds where the turns around it change how a part reads the text (an outside review)."""

    def test_a_coloured_value_after_an_unterminated_terminal_escape_goes(self, mem):
        """A tool's output cut inside a terminal title (OSC, no terminator) ate, in the whole file's view without
        markup, the next turn's marker and the start of its text: a value `grep --color` printed there stayed."""
        mem.write("user/pet", "Quarrelsome Wombat", "user")
        mem.append_turns(
            "s-osc",
            [
                ("user", "$ ls\n\x1b]8;;file:///home/me/notes", T0, None),
                ("user", "notes.txt: Quarrelsome \x1b[01;31mWombat\x1b[m", T0, None),
            ],
        )
        path = mem.raw.find("s-osc")
        forget.apply(mem, forget.plan_target(mem, "user/pet"))
        assert mem.raw.read(path)[1].text == FORGOTTEN

    def test_a_code_beside_a_turn_that_reads_as_quoted_printable_goes(self, mem):
        """A base64 turn's padding before the next marker (`=\\n`) made the whole file read as quoted-printable, which
        turned the `=4a` after a code in another turn into a letter: the code was no token there, and stayed."""
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        b64 = base64.b64encode(VALUE.encode()).decode()
        assert b64.endswith("=")
        mem.append_turns(
            "s-qp",
            [
                ("user", "GET /unlock?c=" + VALUE.replace("-", "%2D") + "=4a", T0, None),
                ("user", "data:\n  code: " + b64, T0, None),
            ],
        )
        path = mem.raw.find("s-qp")
        forget.apply(mem, forget.plan_target(mem, "user/door"))
        texts = [t.text for t in mem.raw.read(path)]
        assert texts[1] == FORGOTTEN and "Zorblax" not in texts[0], texts

    def test_a_code_in_colour_beside_its_base64_goes(self, mem):
        """One part of the matcher (the code's base64) found the file, another (the code's tokens) missed the whole
        text after an unterminated escape, and was not asked of the turn that held them."""
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        z, q, rest = VALUE.split("-")
        mem.append_turns(
            "s-both",
            [
                ("user", "$ make\nbuilding...\x1b]0;make: building", T0, None),
                ("user", f"{z}-\x1b[01;31m\x1b[K{q}\x1b[m\x1b[K-{rest}", T0, None),
                ("user", "data:\n  code: " + base64.b64encode(VALUE.encode()).decode(), T0, None),
            ],
        )
        path = mem.raw.find("s-both")
        forget.apply(mem, forget.plan_target(mem, "user/door"))
        assert [t.text for t in mem.raw.read(path)][1:] == [FORGOTTEN, FORGOTTEN]
        mem.close()
        assert leftovers(mem.home.root, VALUE) == []


class TestWhatChangedSinceThePlan:
    """Inside its locks a forget reads again the raw files that are not as its plan's look read them: judged by what
    each file is (inode, size, mtime, ctime), not by the clock (an outside review)."""

    def _old_file_and_a_plan(self, mem):
        import os

        mem.append_turns("old", [("user", "nothing to see", T0, None)])
        path = mem.raw.find("old")
        os.utime(path, (0, 0))
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        return path, forget.plan_target(mem, "user/door")

    def test_a_turn_written_with_an_older_mtime_after_the_plan_goes(self, mem):
        """A sync tool or a restore that keeps mtimes, an NFS server whose clock is behind: the file's mtime says it
        was written before the plan's look, and the turn stayed."""
        import os

        path, plan = self._old_file_and_a_plan(mem)
        mem.append_turns("old", [("user", f"again: {VALUE}", T0, None)])
        os.utime(path, (plan.started - 5, plan.started - 5))
        forget.apply(mem, plan)
        assert mem.raw.read(path)[1].text == f"again: {FORGOTTEN}"

    def test_a_turn_written_after_the_clock_stepped_back_goes(self, mem, monkeypatch):
        """The clock read ten seconds ahead while the plan was made, then stepped back: a capture's honest mtime is
        before the plan's start, and the turn stayed (the person said yes once the clock had passed it again)."""
        import time as real_time
        from types import SimpleNamespace

        path, plan = self._old_file_and_a_plan(mem)
        plan.started += 10
        mem.append_turns("old", [("user", f"again: {VALUE}", T0, None)])
        monkeypatch.setattr(forget, "time", SimpleNamespace(time=lambda: real_time.time() + 12))
        forget.apply(mem, plan)
        assert mem.raw.read(path)[1].text == f"again: {FORGOTTEN}"

    def test_a_file_the_look_could_not_read_is_read_inside_the_locks_or_named(self, mem, bead, monkeypatch):
        """A file the plan's look could not read (too many open files in a long-lived MCP server, an I/O error) was
        passed over without a word and, its mtime unchanged, not read again: its value stayed. It is read again inside
        the locks; one that still cannot be read is named."""
        import os

        from bead import files as safe

        mem.append_turns("old", [("user", f"the code is {VALUE}", T0, None)])
        path = mem.raw.find("old")
        os.utime(path, (0, 0))
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        real = safe.read_with_stat
        failing = {"on": True}

        def flaky(p, *a, **kw):
            if failing["on"] and p == path:
                raise OSError(24, "Too many open files")
            return real(p, *a, **kw)

        monkeypatch.setattr(safe, "read_with_stat", flaky)
        plan = forget.plan_target(mem, "user/door")
        assert not plan.turns and plan.raw_unread == {path}
        failing["on"] = False
        summary = forget.apply(mem, plan)
        assert mem.raw.read(path)[0].text == f"the code is {FORGOTTEN}" and summary["raw_files_unread"] == []
        mem.append_turns("old2", [("user", f"and again {VALUE}", T0, None)])
        path2 = mem.raw.find("old2")
        mem.write("user/door", f"The storage unit code is {VALUE}", "user")
        failing["on"], path = True, path2
        r = bead("forget", "user/door", "--yes")
        # A KEY's forget that still cannot read one changes nothing: its versions are what the value is looked for
        # by, so once they went, the same forget again found nothing to forget and the file kept it (a review).
        assert r.code == 1 and "changed nothing" in r.err, r.err
        assert f"could not read raw file(s) {path2.relative_to(mem.home.store).as_posix()}" in r.err, r.err
        assert mem.current("user/door") is not None and VALUE in mem.raw.read(path2)[0].text
        failing["on"] = False
        assert bead("forget", "user/door", "--yes").code == 0
        assert mem.current("user/door") is None and mem.raw.read(path2)[0].text == f"and again {FORGOTTEN}"


def test_a_raw_file_saved_with_crlf_line_ends_keeps_its_other_turns(mem):
    """A raw file an editor saved with CRLF line ends had no marker bead read (`-->\\r`): the whole file was text
    before the first turn, and a forget of a value one turn held emptied it (an outside review)."""
    mem.append_turns("w", [("user", "keep me: the build passed", T0, None), ("user", f"the code is {VALUE}", T0, None)])
    path = mem.raw.find("w")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert [t.n for t in mem.raw.read(path)] == [1, 2]
    mem.write("user/door", f"The storage unit code is {VALUE}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/door"))
    turns = mem.raw.read(path)
    assert turns[0].text == "keep me: the build passed\r" and turns[1].text == f"the code is {FORGOTTEN}\r"
    assert VALUE.encode() not in path.read_bytes()


def test_a_forget_that_could_not_read_a_raw_file_never_says_nothing_matches(mem, bead, tmp_path):
    """A hard-linked raw file holding the value is refused (it may be a file outside the home): forget said "nothing
    matches; nothing changed" and exited 0 (a review). It names the file and how to give it a copy of its own."""
    import os

    mem.append_turns("s-hl", [("user", f"the code is {VALUE}", T0, None)])
    path = mem.raw.find("s-hl")
    os.link(path, tmp_path / "backup.md")
    r = bead("forget", "--match", VALUE, "--yes")
    assert "nothing matches" not in r.out, r.out
    rel = path.relative_to(mem.home.store).as_posix()
    assert f"warning: could not read raw file {rel}" in r.err and "bead status --fix" in r.err, r.err
    assert bead("status", "--fix").code == 0
    r = bead("forget", "--match", VALUE, "--yes")
    assert r.code == 0 and "could not read" not in r.err, r.err
    assert VALUE.encode() not in path.read_bytes() and VALUE.encode() in (tmp_path / "backup.md").read_bytes()


def test_a_keys_forget_that_cannot_read_a_raw_file_changes_nothing_so_it_can_be_run_again(mem, bead, tmp_path):
    """A hard-linked raw file (a `cp -al` backup) made a KEY's forget delete the versions and warn "then run the same
    forget again", which then found nothing to forget: the raw file kept the value with nothing left to find it by
    (an outside review). The forget changes nothing until the file can be read; after `bead status --fix` it runs."""
    import os

    mem.append_turns("sess-a", [("user", f"remember: the vault code word is {VALUE}", T0, None)])
    mem.write("user/code-word", f"The vault code word is {VALUE}.", "user")
    raw = mem.raw.find("sess-a")
    os.link(raw, tmp_path / "elsewhere.md")
    first = bead("forget", "user/code-word", "--yes")
    assert first.code == 1 and "changed nothing" in first.err and "bead status --fix" in first.err, first.err
    assert mem.current("user/code-word") is not None
    assert bead("status", "--fix").code == 0
    again = bead("forget", "user/code-word", "--yes")
    assert again.code == 0, again.err
    assert VALUE.encode() not in raw.read_bytes() and mem.current("user/code-word") is None


def test_a_match_that_only_the_logs_and_dream_reports_hold_is_forgotten_not_nothing(mem, bead):
    """`forget --match` said "nothing matches; nothing changed" where only the audit and tombstone logs named a key
    made of the text and a dream report listed it, and left them (a forget that took a raw turn too took them: an
    outside review)."""
    from bead.store.reports import Reports

    key = "project/shop/deploy-box-quokka-east"
    digest = mem.tombstones.add(mem.clock(), key, "The deploy box is quokka-east", reason="review-reject")
    mem.audit.record(mem.clock(), "tombstone", key=key, sha256=digest)
    Reports(mem.home).append(
        T0, f"## Dream run 2026-11-05T03:00:00Z\n\n### session s1 (3 new turns)\n- rejected: {key}- (invalid key)\n"
    )
    r = bead("forget", "--match", "quokka-east", "--yes", "--json")
    assert r.code == 0 and '"forgotten": false' not in r.out, r.out
    held = sorted(p.name for p in mem.home.root.rglob("*") if p.is_file() and b"quokka-east" in p.read_bytes())
    assert held == [], held


def test_a_raw_file_whose_turn_numbers_repeat_is_indexed_and_forgotten_in_both_copies(mem, bead):
    """A sync tool merged two copies of a session's file, so its turn numbers repeat: the index's rebuild stopped at a
    UNIQUE error, and with it every forget of the home (a review). The later copy is indexed; forget takes the value
    from both."""
    mem.append_turns("s-dup", [("user", "first turn", T0, None), ("user", f"the code is {VALUE}", T0, None)])
    path = mem.raw.find("s-dup")
    data = path.read_bytes()
    path.write_bytes(data + data.replace(b"first turn", b"first turn, the other copy"))
    mem.catch_up_index()
    assert bead("reindex").code == 0
    r = bead("forget", "--match", VALUE, "--yes")
    assert r.code == 0, r.err
    assert [(t.n, t.text) for t in mem.raw.read(path)] == [
        (1, "first turn"),
        (2, FORGOTTEN),
        (1, "first turn, the other copy"),
        (2, FORGOTTEN),
    ]
    mem.close()
    assert leftovers(mem.home.root, VALUE) == []


@pytest.mark.parametrize(
    "start",
    [
        "cut short",
        "cut in its first bytes",
        "a blank line",
        "records run together",
        "a record cut in its first bytes run together with the next",
        "two records cut in their first bytes, one after the other",
        "a character cut in two",
        "a BOM",
    ],
)
def test_a_trace_whose_first_line_a_killed_proxy_cut_short_is_still_scrubbed(mem, bead, tmp_path, start):
    """A trace is read only where its first line is a record, or what a proxy leaves: a record a killed proxy cut
    short (then the next proxy's line break and records), a blank line (`echo > trace.jsonl`), records an older bead
    wrote one after the other on one line. Such a trace is still a trace, and forget takes the value from it (a review
    found the first form of the check refused them, and left the value in the trace)."""
    trace = tmp_path / "trace.jsonl"
    whole = json.dumps(trace_line("s", cues=[f"the code is {VALUE}"]))
    first = {
        "cut short": whole[:40] + "\n",
        "cut in its first bytes": '{"at\n',
        "a blank line": "\n",
        "a BOM": "\ufeff",
        "records run together": json.dumps(trace_line("s", cues=["a"])) + whole[:40],
        "a record cut in its first bytes run together with the next": '{"a',
        "two records cut in their first bytes, one after the other": '{"a{"at\n',
        "a character cut in two": "",
    }[start].encode()
    if start == "a character cut in two":
        line = json.dumps(trace_line("s", cues=["caf\u00e9 au lait"]), ensure_ascii=False)
        first = line[: line.index("\u00e9")].encode() + "\u00e9".encode()[:1] + b"\n"
    trace.write_bytes(first + (whole + "\n" + json.dumps(trace_line("s", cues=["fine"])) + "\n").encode())
    mem.home.proxy_runtime.write_text(json.dumps({"at": "2026-12-06T00:00:00Z", "pid": 1, "trace": str(trace)}) + "\n")
    mem.write("user/code", f"my code is {VALUE}", "user")
    r = bead("forget", "--match", VALUE, "--yes")
    assert r.code == 0 and "as it is" not in r.err, r.err
    assert VALUE not in trace.read_text() and '"fine"' in trace.read_text()


@pytest.mark.parametrize("k", [1, 3, 7])
def test_a_trace_whose_first_megabyte_ends_inside_a_record_run_together_with_a_cut_one_is_a_trace(tmp_path, k):
    """The first megabyte of a trace is checked line by line before more is read; its last line, cut by the megabyte's
    end within the first bytes of a record an older bead wrote right after a cut one, was refused, and forget left the
    value in the trace (a review)."""
    from bead.core.trace import HEAD_BYTES, Trace

    secret = json.dumps(trace_line("s", cues=[f"the code is {VALUE}"])) + "\n"
    glued = json.dumps(trace_line("s", cues=["cut"]))[:30] + json.dumps(trace_line("s", cues=["next"]))
    fill = HEAD_BYTES - len(secret) - 30 - k
    one = json.dumps(trace_line("s", cues=[""]))
    lines = []
    while fill > 0:
        pad = min(max(fill - len(one) - 1, 0), 50_000)
        line = json.dumps(trace_line("s", cues=["x" * pad]))
        if len(line) + 1 > fill:
            line = json.dumps(trace_line("s", cues=["x" * (pad - (len(line) + 1 - fill))]))
        lines.append(line)
        fill -= len(line) + 1
    assert fill == 0
    trace = tmp_path / "trace.jsonl"
    trace.write_text(secret + "".join(f"{line}\n" for line in lines) + glued + "\n")
    assert trace.read_bytes()[:HEAD_BYTES].endswith(b'{"at": "'[:k])
    assert Trace(trace).matching_lines(lambda line: VALUE in line) == 1


def test_a_rare_word_is_judged_by_its_own_form_not_by_its_stems_turns(mem):
    """The index counts a word's turns by its Porter stem: "Providence" was counted as every turn that says
    provided, provider or provides, judged common, and stayed in the turns that said it in other words (an outside
    review; `bead seal` judged it so too). A word that shares no stem is the control."""
    hist = [("user", f"filler turn number {i} about the build", T0, None) for i in range(20)]
    hist += [
        ("user", "the API provided a token", T0, None),
        ("assistant", "which provider is that", T0, None),
        ("user", "it provides retries", T0, None),
    ]
    mem.append_turns("hist", hist)
    mem.append_turns("s", [("user", "if the alarm goes off, tell the operator Providence and Marigoldia", T0, None)])
    mem.write("user/alarm-word", "The alarm safe words are Providence and Marigoldia", "user")
    plan = forget.plan_target(mem, "user/alarm-word")
    assert {"providence", "marigoldia"} <= plan.tokens
    forget.apply(mem, plan)
    said = mem.raw.read(mem.raw.find("s"))[0].text
    assert "Providence" not in said and "Marigoldia" not in said, said
    assert [t.text for t in mem.raw.read(mem.raw.find("hist"))][-3:] == [
        "the API provided a token",
        "which provider is that",
        "it provides retries",
    ]


def test_a_code_past_the_first_20000_characters_of_a_long_value_is_looked_for(mem):
    """Codes and rare words were read from a value's first 20,000 characters: the side gate's code at the end of a
    25,000-character runbook stayed in every turn that said it in other words (an outside review)."""
    filler = ("line of the runbook that says nothing much " * 700)[:25_000]
    mem.append_turns("s", [("user", "btw the side gate takes QX-88471-ZB now", T0, None)])
    mem.write("project/shop/runbook", filler + "\nThe side gate code is QX-88471-ZB.", "project")
    forget.apply(mem, forget.plan_target(mem, "project/shop/runbook"))
    assert "QX-88471-ZB" not in mem.raw.read(mem.raw.find("s"))[0].text


def test_a_value_dense_with_codes_is_looked_for_in_patterns_re2_can_compile(mem, monkeypatch):
    """A long value dense with codes (a list of thousands) made one RE2 pattern past RE2's memory budget, and the
    forget ended in an error (an outside review, once values were read whole). The codes are looked for through
    several patterns, which find what their one alternation finds: shown with two codes a pattern."""
    import random

    from bead.store.rawlog import _redact_tokens

    monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 2)
    codes = ["QX-88471-ZB", "K7-2201", "8841-aa", "ZZ-1", "PIN-4711", "qx88", "77-41"]
    assert isinstance(forget.token_pattern(set(codes)), forget._Patterns)
    rnd = random.Random(7)
    for _ in range(200):
        text = " ".join(rnd.choice([*codes, "word", "x", "QX", "88471", "-", "K7 2201", "pin 4711"]) for _ in range(12))
        monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 2)
        chunked = _redact_tokens(text, forget.token_pattern(set(codes)))
        monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 500)
        assert chunked == _redact_tokens(text, forget.token_pattern(set(codes))), text
    monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 2)
    mem.append_turns("s", [("user", "gate QX-88471-ZB, locker K7-2201, pin PIN-4711; the build passed", T0, None)])
    mem.write("user/codes", "Codes: QX-88471-ZB K7-2201 PIN-4711 8841-aa", "user")
    forget.apply(mem, forget.plan_target(mem, "user/codes"))
    said = mem.raw.read(mem.raw.find("s"))[0].text
    assert all(c not in said for c in codes) and "the build passed" in said, said


def test_forgetting_an_old_version_the_current_one_repeats_says_the_current_one_keeps_it(mem, bead):
    """A forget of KEY@v1 whose value the current v3 says again left it current without a word (and agents' writes
    of it are refused by the tombstone since): it names the key as still holding the value (an outside review)."""
    a = "The staging database lives on host quokka-east-7 behind the bastion."
    for v in (a, "moved to wombat-west-2", a):
        mem.write("project/shop/staging-db", v, "project")
    r = bead("forget", "project/shop/staging-db@v1", "--yes")
    assert r.code == 0 and "project/shop/staging-db still hold(s) the value in clear" in r.err, r.err
    assert mem.current("project/shop/staging-db").body == a
    r = bead("forget", "project/shop/staging-db@v2", "--yes")
    assert r.code == 0 and "still hold" not in r.err, r.err


def test_a_word_long_turns_say_is_counted_even_where_its_stem_fills_the_context_column(mem):
    """The first count by a word's own form ranked the turns its stem found over the turn before each too, and long
    turns came last: four turns that say "Providence" fell outside the 200 read, the word was judged rare and cut
    from them (a review). Every turn whose own text holds the stem is read."""
    hist = []
    for i in range(150):
        hist.append(("user", f"the API provided token {i}", T0, None))
        hist.append(("assistant", f"ok {i}", T0, None))
    notes = "".join(f"line {j} of the meeting notes about the quarterly planning and staffing\n" for j in range(18))
    hist += [("user", notes + f"the office in Providence opens at nine (week {i})", T0, None) for i in range(4)]
    mem.append_turns("hist", hist)
    mem.write("user/alarm-word", "The alarm safe words are Providence and Marigoldia", "user")
    plan = forget.plan_target(mem, "user/alarm-word")
    assert "providence" not in plan.tokens and "marigoldia" in plan.tokens
    forget.apply(mem, plan)
    assert sum("Providence" in t.text for t in mem.raw.read(mem.raw.find("hist"))) == 4


def test_forgetting_the_current_version_an_older_one_repeats_says_the_key_still_holds_it(mem, bead):
    """Forgetting KEY@v3 where v1 says the same serves v1 again: the forget says the key still holds the value (a
    review of the KEY@v1 case)."""
    a = "The staging database lives on host quokka-east-7 behind the bastion."
    for v in (a, "moved to wombat-west-2", a):
        mem.write("project/shop/staging-db", v, "project")
    assert bead("forget", "project/shop/staging-db@v2", "--yes").code == 0
    r = bead("forget", "project/shop/staging-db@v3", "--yes", "--json")
    assert r.code == 0 and json.loads(r.out)["also_in"] == ["project/shop/staging-db"], r.out


def test_a_match_forget_says_what_it_did_to_the_logs_and_dream_reports(mem, bead):
    """After the forget, its summary counted 0 dream report items and named neither the logs nor the reports, as if
    it had done nothing (a review)."""
    from bead.store.reports import Reports

    key = "project/shop/deploy-box-quokka-east"
    digest = mem.tombstones.add(mem.clock(), key, "The deploy box is quokka-east", reason="review-reject")
    mem.audit.record(mem.clock(), "tombstone", key=key, sha256=digest)
    Reports(mem.home).append(T0, f"## Dream run 2026-11-05T03:00:00Z\n\n### s1 (3 new turns)\n- rejected: {key}- (invalid key)\n")
    Reports(mem.home).append(
        T0, "## Dream run 2026-11-06T03:00:00Z\n\n### s2 (3 new turns)\n- rejected: user/quokka-east-notes (x)\n"
    )
    r = bead("forget", "--match", "quokka-east", "--yes", "--json")
    assert json.loads(r.out)["report_items"] == 2 and json.loads(r.out)["logged_keys"] == 1, r.out
    r = bead("forget", "--match", "quokka", "--yes")
    assert "nothing matches" in r.out, r.out


def test_several_token_patterns_find_what_one_alternation_finds_where_two_begin_at_one_place(monkeypatch):
    """At one place the one alternation takes its earlier alternative, not the longer match: several patterns took
    the longer and left a code's digits (a review)."""
    from bead.store.rawlog import _redact_tokens

    for tokens, text in (
        ({"maple-quartz-lantern", "maple-quartz-lantern-x", "x-2201"}, "the phrase maple-quartz-lantern-x-2201 opens it"),
        ({"$foo.bar", "foo.bar.baz"}, "it is $foo.bar.baz now"),
    ):
        one = _redact_tokens(text, forget.token_pattern(tokens))
        monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 1)
        assert _redact_tokens(text, forget.token_pattern(tokens)) == one, one
        monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 500)


def _history_of_builds(mem, n: int = 25) -> None:
    mem.append_turns("hist", [("user", f"an ordinary turn about builds, try {i}", T0, None) for i in range(n)])


def _said_in(mem, session: str) -> list[str]:
    return [t.text for t in mem.raw.read(mem.raw.find(session))]


def common_word_stays(mem, turn: str, value: str, word: str) -> None:
    """Forgetting ``value`` leaves ``word`` in all 30 turns of ``turn`` (``{i}`` their number), which say it."""
    mem.append_turns("hist", [("user", turn.format(i=i), T0, None) for i in range(30)])
    mem.write("user/deploy", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/deploy"))
    said = [t.text for t in mem.raw.read(mem.raw.find("hist"))]
    assert sum(word in t for t in said) == 30, said[:2]


def found_in_other_words(mem, value: str, said: str, what: str) -> None:
    """Forgetting ``value`` takes ``what`` from a turn that says it in other words (``said``), beside 30 that do not."""
    _history_of_builds(mem, 30)
    mem.append_turns("other", [("user", said, T0, None)])
    mem.write("user/codes", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/codes"))
    assert not any(what in t.text for t in mem.raw.read(mem.raw.find("other")))


def test_a_common_cyrillic_word_of_a_forgotten_value_stays_in_the_turns_that_say_it(mem):
    """The value's words are read folded (`сервера` as `cepвepa`) and the index holds them as written: every common
    Cyrillic or Greek word of six letters or more counted as said by no turn, was judged rare and went from every
    turn (a review). A word is counted by its spellings in the value too."""
    common_word_stays(mem, "перезапусти сервера номер {i} пожалуйста", "Адрес сервера для деплоя: quokka-east-7", "сервера")


def test_a_value_said_after_a_long_log_does_not_make_a_common_word_look_rare(mem):
    """The turns that hold the value were counted out of a word's turns by their whole text, its turns by what the
    index holds (a turn's first 1,500 characters): three value turns after a long log made "Providence", which three
    other turns say, look rare, and it went from them (a review)."""
    v = "The alarm safe words are Providence and Marigoldia"
    filler = "".join(f"line {j} of the build log, nothing of note here at all\n" for j in range(40))
    hist = [("user", f"the API provided token {i}", T0, None) for i in range(20)]
    hist += [("user", f"the office in Providence opens at nine (week {i})", T0, None) for i in range(3)]
    hist += [("user", filler + v, T0, None) for _ in range(3)]
    mem.append_turns("hist", hist)
    mem.write("user/alarm-word", v, "user")
    forget.apply(mem, forget.plan_target(mem, "user/alarm-word"))
    office = [t.text for t in mem.raw.read(mem.raw.find("hist")) if "office" in t.text]
    assert len(office) == 3 and all("Providence" in t for t in office), office


def test_forgetting_an_unreadable_newest_version_an_older_one_repeats_says_the_key_holds_it(mem, bead):
    """A key whose newest file cannot be read serves nothing and has no current body in the index: forgetting that
    version served the older one that says the same again, without a word (a review)."""
    key, a = "project/shop/staging-db", "The staging database lives on host quokka-east-7 behind the bastion."
    for v in ("moved to wombat-west-2", a, "temp value x"):
        mem.write(key, v, "project")
    p3 = mem.home.fact_dir(key) / "v3.md"
    p3.write_text(p3.read_text().replace("temp value x", a).replace("type: project", "type: bogus-type"))
    mem.catch_up_index()
    assert mem.served(key) is None
    r = bead("forget", f"{key}@v3", "--yes", "--json")
    assert r.code == 0 and json.loads(r.out)["also_in"] == [key], r.out


def test_split_token_patterns_read_a_texts_start_as_one_alternation_does(monkeypatch):
    """At the text's start one alternation takes a token read from there (`^`) before one after a sign: the split
    patterns took the earlier pattern's and left `$...-mn` (a review)."""
    from bead.store.rawlog import _redact_tokens

    tokens, text = {"abcd-efgh-ijkl", "$abcd-efgh-ijkl-mn"}, "$abcd-efgh-ijkl-mn is it"
    one = _redact_tokens(text, forget.token_pattern(tokens))
    monkeypatch.setattr(forget, "TOKENS_A_PATTERN", 1)
    assert _redact_tokens(text, forget.token_pattern(tokens)) == one == "[forgotten] is it"


@pytest.mark.parametrize(
    "turn, value, word",
    [
        ("встреча в офисе, Москва, неделя {i}", "Офис Москва, код двери: quokka-east-7", "Москва"),
        ("Тестовый стенд упал снова, попытка {i}", "Тестовый стенд: quokka-east-7", "Тестовый"),
        ("το γραφείο στην Ελλάδα, εβδομάδα {i}", "Ελλάδα γραφείο: quokka-east-7", "Ελλάδα"),
        ("Перезапускаю удалённый сервер, попытка {i}", "Нужен удаленный доступ к quokka-east-7", "удалённый"),
    ],
    ids=["capitalised", "sentence-start", "greek", "yo-and-ye"],
)
def test_a_common_word_of_another_script_stays_however_the_value_spells_it(mem, turn, value, word):
    """A review of the spellings: a capital that reads as ASCII before small letters that do not (`Москва` read as
    `mockba`, `москва` as `мocквa`), ё in the turns and е in the value each made a common word look rare, and it
    went from all 30 turns. The index's own terms that may be the word are counted, then each turn's own words."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    "turn, value, word",
    [
        ("anh Nguyễn lại gọi, lần {i}", "Nguyễn: quokka-east-7", "Nguyễn"),
        ("Michał znowu dzwonił, próba {i}", "Michał: quokka-east-7", "Michał"),
        ("Jørgensen ringede igen, forsøg {i}", "Jørgensen: quokka-east-7", "Jørgensen"),
        ("ο διακομιστής έπεσε ξανά, προσπάθεια {i}", "διακομιστής: quokka-east-7", "διακομιστής"),
        ("библиотека снова не собирается, попытка {i}", "библиотека: quokka-east-7", "библиотека"),
        ("Завтрашний деплой снова перенесли, попытка {i}", "Завтрашний деплой: quokka-east-7", "Завтрашний"),
        ("le serveur «production» est tombé, essai {i}", "serveur «production» : quokka-east-7", "production"),
        ("die „Aktualisierung“ ist wieder fehlgeschlagen, Versuch {i}", "„Aktualisierung“: quokka-east-7", "Aktualisierung"),
    ],
    ids=[
        "vietnamese",
        "polish",
        "danish",
        "greek-final-sigma",
        "cyrillic-b-as-6",
        "cyrillic-ze-as-3",
        "guillemets",
        "german-quotes",
    ],
)
def test_a_common_word_stays_whatever_its_letters_or_quotes(mem, turn, value, word):
    """A fourth review: the index's terms were read from the first non-ASCII one (`michał` and `nguyễn` start with
    ASCII letters), `ς` was not read as the tokenizer's `σ`, the fold's digits for `б` and `З` and a word's quotes
    made a word a long code: each such common word went from all 30 turns."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    "value",
    ["deploy\u00adment key: quokka-east-7", "\u200fdeployment key: quokka-east-7", "\ufeffdeployment key: quokka-east-7"],
    ids=["soft-hyphen", "rtl-mark", "byte-order-mark"],
)
def test_a_common_word_with_an_invisible_character_in_the_value_stays(mem, value):
    """A fifth review: a word is a code by what was typed, and a soft hyphen, a direction mark or a byte-order mark in
    or beside it made "deployment" a long code, gone from every turn. What the fold drops is no sign."""
    common_word_stays(mem, "the deployment failed again, try {i}", value, "deployment")


@pytest.mark.parametrize("mark", ["\u02bc", "\u2033", "\u201b"], ids=["modifier-apostrophe", "double-prime", "reversed-quote"])
def test_a_rare_word_in_the_folds_quotes_is_found_where_a_turn_says_it_plainly(mem, mark):
    """A fifth review: a token cut before the fold kept the quotes the fold makes of these marks, and was looked for
    with them: the rare word said plainly in another turn stayed."""
    found_in_other_words(
        mem,
        f"the quiet room is: {mark}correcthorsebattery{mark}",
        "tell nobody, it is correcthorsebattery",
        "correcthorsebattery",
    )


@pytest.mark.parametrize(
    "value",
    [
        "deploy it with \u2013production, token quokka-east-7",
        "\u2212production: quokka-east-7",
        "production\u2236 quokka-east-7",
        "deploy it to \u00abproduction\u00bb, token quokka-east-7",
    ],
    ids=["en-dash", "minus", "ratio", "guillemets"],
)
def test_a_common_word_with_a_look_alike_sign_at_its_edge_stays(mem, value):
    """A sixth review: a sign the fold reads as an edge (`-`, `:`) glued to a word was not stripped from what was typed,
    and the word was a long code, gone from every turn."""
    common_word_stays(mem, "the production build failed again, try {i}", value, "production")


@pytest.mark.parametrize("code", ["dk\u00ab4\u00bbZq", "k\u03f2q7-zeta99"], ids=["guillemets-inside", "lunate-sigma"])
def test_a_code_with_quotes_inside_or_a_lunate_sigma_is_found_in_other_words(mem, code):
    """A sixth review: quotes made token ends split `dk«4»Zq` into parts too short to look for, and NFKC before the
    fold read a lunate sigma as a final sigma where the fold reads a turn's as `c`: neither code was found in a turn
    that said it in other words."""
    found_in_other_words(mem, f"the guest wifi is on {code}", f"the new one is {code}, do not share it", code)


@pytest.mark.parametrize(
    ("value", "said", "code"),
    [
        ("the door opens with the \u00abQX-88\u00bb-Code", "the new one is QX-88, do not share it", "QX-88"),
        ("door codes \u00abQX-88\u00bb/\u00abZZ-12\u00bb", "the new one is QX-88, do not share it", "QX-88"),
        ("wifi:\u00abQX-88\u00bb", "the new one is QX-88, do not share it", "QX-88"),
        ("WLAN-Passwort:\u201eQX-88\u201c", "the new one is QX-88, do not share it", "QX-88"),
        ("side door PIN:\u00ab4711\u00bb", "use 4711 at the side door", "4711"),
    ],
    ids=["swiss-compound", "slash-list", "colon-guillemet", "colon-low-quote", "pin-colon-guillemet"],
)
def test_a_code_glued_to_a_word_by_a_kept_quote_is_found_in_other_words(mem, value, said, code):
    """A seventh review: the quotes the fold keeps no longer ended a token, so a code glued to a label or another code
    by them (`wifi:«QX-88»`) was looked for only beside it. A token's pieces between such quotes are looked for too."""
    found_in_other_words(mem, value, said, code)


@pytest.mark.parametrize(
    "value",
    [
        "deploy it to \u00abproduction\u00bb\u0301, token quokka-east-7",
        "deploy it to \u00b4\u00abproduction\u00bb, token quokka-east-7",
    ],
    ids=["mark-after-guillemet", "acute-before-guillemet"],
)
def test_a_common_word_in_kept_quotes_with_a_mark_on_a_quote_stays(mem, value):
    """A seventh review: a combining mark on a quote kept the quote in what was typed, and the word was a long code."""
    common_word_stays(mem, "the production build failed again, try {i}", value, "production")


@pytest.mark.parametrize(
    "said, value, word",
    [
        ("bring the stack up with docker-compose, try {i}", "docker-compose up needs the token Zq7-44xy", "docker-compose"),
        ("bump the version in package.json, round {i}", "package.json pins the registry key kR-99-Tz", "package.json"),
        ("the end-to-end suite failed again, run {i}", "end-to-end runs use the account pw Mx-3317", "end-to-end"),
    ],
    ids=["hyphen", "dot", "short-parts"],
)
def test_words_joined_as_the_history_says_them_stay_and_the_values_code_goes(mem, said, value, word):
    """A long code went from every turn however often the history said it, so forgetting a fact that named
    `docker-compose` or `package.json` took those words from every turn that said them (an outside review). Words
    joined with no digit (not a passphrase's shape) that more than CODE_TURNS other turns say are the history's."""
    mem.append_turns("hist", [("user", said.format(i=i), T0, None) for i in range(30)])
    code = value.split()[-1]
    mem.append_turns("other", [("user", f"remember {code} for later", T0, None)])
    mem.write("user/deploy", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/deploy"))
    hist = [t.text for t in mem.raw.read(mem.raw.find("hist"))]
    assert sum(word in t for t in hist) == 30, hist[:2]
    assert not any(code in t.text for t in mem.raw.read(mem.raw.find("other")))


@pytest.mark.parametrize(
    "joined, others",
    [("purple-monkey", 3), ("maple-quartz-lantern-orbit", 30)],
    ids=["said-in-few-turns", "passphrase-said-often"],
)
def test_joined_words_few_turns_say_or_a_passphrase_go_from_every_turn(mem, joined, others):
    """The history's joined words stay only where more than CODE_TURNS turns say them, and a passphrase's shape
    (PHRASE_PARTS words of PHRASE_PART_CHARS letters) always goes, however often it was said."""
    _history_of_builds(mem, 30)
    mem.append_turns("other", [("user", f"the quiz answer {joined} again, round {i}", T0, None) for i in range(others)])
    mem.write("user/wifi", f"the quiz answer was {joined}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/wifi"))
    assert not any(joined in t.text for t in mem.raw.read(mem.raw.find("other")))


def _write_even_a_secret(mem, key: str, value: str) -> None:
    try:
        mem.write(key, value, "user")
    except RefusedWrite:  # a value the write refuses as a secret: as a store written before that holds it
        plaintext_secret(mem, key, value, "user")


def said_elsewhere_is_gone(
    mem, value: str, said: str | list[str], what: str, hist: str = "an ordinary turn about builds, try {i}", own: int = 0
) -> None:
    """Forgetting ``value`` takes ``what`` from the turns that say it in other words (``said``), beside 30 turns of
    ``hist`` and ``own`` sessions that each hold the value itself (a note pasted into each, which go whole): from the
    raw log and from every other byte under the home (index.db)."""
    mem.append_turns("hist", [("user", hist.format(i=i), T0, None) for i in range(30)])
    for i in range(own):
        mem.append_turns(f"own-{i}", [("user", f"context for today:\n{value}", T0, None)])
    mem.append_turns("other", [("user", t, T0, None) for t in ([said] if isinstance(said, str) else said)])
    _write_even_a_secret(mem, "user/codes", value)
    forget.apply(mem, forget.plan_target(mem, "user/codes"))
    texts = [t.text for t in mem.raw.read(mem.raw.find("other"))]
    mem.checkpoint()
    files = [
        str(p) for p, data in all_bytes_under(mem.home.root).items() if what.encode() in data or what.lower().encode() in data
    ]
    assert not any(what in t for t in texts) and files == [], (texts, files)


@pytest.mark.parametrize(
    ("turn", "value", "word"),
    [
        ("standup moved to 12:30 today, try {i}", "Alarm code: 1230", "12:30"),
        ("release am 20.11. geplant, Versuch {i}", "Garage PIN 2011", "20.11."),
    ],
    ids=["pin-reads-as-a-time", "pin-reads-as-a-date"],
)
def test_a_pin_leaves_times_and_dates_its_digits_make(mem, turn, value, word):
    """A short code of digits was looked for with up to three signs between any two digits, so `1230` took `12:30`
    from every turn (an outside review). Its digits are looked for as the value groups them."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    ("turn", "value", "word"),
    [
        ("the follow-up meeting moved again, try {i}", "Follow-up with the bank: PIN 4711", "follow-up"),
        ("the read-only replica lagged again, try {i}", "read-only replica login: quokka-east-7", "read-only"),
        ("edit docker-compose.yml again, try {i}", "Keys live in docker-compose.yml: token quokka-east-7", "docker-compose.yml"),
        ("delete node_modules again, try {i}", "node_modules cache key: quokka-east-7", "node_modules"),
        ("c'est peut-être le cache, essai {i}", "Peut-être le code de la porte : QX-88", "peut-être"),
        ("bitte die E-Mail-Adresse prüfen, Versuch {i}", "Meine neue E-Mail-Adresse: jane@firma-quokka.de", "E-Mail-Adresse"),
        ("кто-нибудь видел логи? попытка {i}", "Новый сервер, кто-нибудь запомните: quokka-east-7", "кто-нибудь"),
    ],
)
def test_a_common_hyphenated_or_dotted_word_of_a_value_stays(mem, turn, value, word):
    """A long code went from every turn whatever the history said (an outside review): words joined with no digit and
    not a passphrase's shape, which more than CODE_TURNS other turns say as typed, are the history's."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    ("value", "said", "what", "hist"),
    [
        ("Router admin password: Hello_World", "log in with Hello_World tonight", "Hello_World", "print hello world, try {i}"),
        ("WiFi password: purple.monkey", "the wifi is purple.monkey now", "purple.monkey", "the purple monkey mascot, try {i}"),
    ],
    ids=["hello-world", "purple-monkey"],
)
def test_words_joined_as_a_password_go_though_prose_says_the_words_apart(mem, value, said, what, hist):
    """Joined words the history says stay only where they are said joined as the value joins them: counted by the
    words' phrase, prose that says "hello world" kept the password `Hello_World` (an outside review)."""
    said_elsewhere_is_gone(mem, value, said, what, hist)


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("Billing contact: jane.doe@bigcorp.com", "mail jane.doe@bigcorp.com about invoice {i}", "jane.doe@bigcorp.com"),
        ("Vault lives at vault.acmecorp.net, root token s.Xk9mPq2zTt", "ssh vault.acmecorp.net, unit {i}", "vault.acmecorp.net"),
    ],
    ids=["email", "host"],
)
def test_an_address_or_a_host_goes_however_often_it_was_said(mem, value, said, what):
    """An address and a host of three names are the value's own, said in six turns or sixty (an outside review)."""
    said_elsewhere_is_gone(mem, value, [said.format(i=i) for i in range(6)], what)


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("My cell: 5550142", "call me at 555-0142 tonight", "555-0142"),
        ("Sort code 204578", "the sort code is 20-45-78", "20-45-78"),
        ("Alarm PIN 4711", "the alarm is 47 11", "47 11"),
        ("Alarm PIN 4711", "the alarm is 4-7-1-1", "4-7-1-1"),
        ("Alarm PIN 4711", "the alarm is\n47\n11", "47\n11"),
        ("My cell: 5550142", "call me at 555\r\n0142", "555\r\n0142"),
        ("Locker code 4711", "locker\t47\t11", "47\t11"),
    ],
    ids=["phone", "sort-code", "pin-spaced", "pin-dashed", "pin-wrapped", "phone-wrapped-crlf", "pin-in-a-table"],
)
def test_a_short_number_written_with_blanks_or_dashes_goes(mem, value, said, what):
    """Digits are looked for with blanks or dashes between any two, other signs only where the value has them (an
    outside review: looking only for the value's own groups left `555-0142` of `5550142`)."""
    said_elsewhere_is_gone(mem, value, said, what)


@pytest.mark.parametrize(
    ("turn", "value", "word"),
    [
        (
            "Traceback: File /usr/lib/python3.11/json/decoder.py line {i}",
            "The vault token is read from /opt/app/.venv/lib/python3.11/site-packages/acme/creds.py",
            "python3.11",
        ),
        (
            "ls /usr/lib/x86_64-linux-gnu/ shows {i} files",
            "libssl at /usr/lib/x86_64-linux-gnu/libssl.so.3 was patched by Quokka",
            "x86_64-linux-gnu",
        ),
        ("deploy log 2026-03-14T09:{i:02d}:00Z ok", "Incident INC-7731 began 2026-03-14T09:14:22Z, key leaked", "2026-03-14T09"),
        (
            "pip install 'requests>=2.31.0' in job {i}",
            "Pinned requests>=2.31.0 after the CVE; deploy key Xk9mPq2zTt",
            "requests>=2.31.0",
        ),
        ("FROM node:16-alpine in service {i}", "Postgres image postgres:16-alpine, build tag Xk9mPq2zTt", "16-alpine"),
    ],
    ids=["python-version-in-a-path", "multiarch-dir-in-a-path", "iso-timestamp-hour", "version-pin", "image-tag"],
)
def test_a_piece_of_a_path_a_timestamp_or_a_pin_stays_where_the_history_says_it(mem, turn, value, word):
    """A piece of a token (between `:`, `=`, `@`, `/`) or a word with a sign inside is the value's unless more than
    CODE_TURNS other turns say it as written: as long codes, `python3.11` and `16-alpine` went from every turn (an
    outside review)."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    ("turn", "value", "word"),
    [
        (
            "save the export as UTF-8 please, try {i}",
            "shop DB: DATABASE_URL=mysql://shop@db.internal:3306/shop?charset=utf8",
            "UTF-8",
        ),
        ("the box runs Python 3.11 now, try {i}", "shop venv: /home/jane/shop/.venv/lib/python3.11/site-packages", "Python 3.11"),
        (
            "the OAuth 2.0 login loops again, try {i}",
            "shop SSO token endpoint: https://sso.shop-internal.example/oauth2/token",
            "OAuth 2.0",
        ),
        ("install Python 3 on the runner, try {i}", "nightly backup: /usr/bin/python3 /srv/shop/backup.py", "Python 3"),
        ("the loop is for(i=0;i<10;i++) in the parser, try {i}", "the parser bug: i<10 must read i<=10 in shop/parse.c", "i<10"),
    ],
    ids=["utf8-in-url", "python3.11-in-path", "oauth2-in-url", "python3-in-path", "code-snippet"],
)
def test_a_piece_with_a_digit_takes_no_other_spelling_of_it(mem, turn, value, word):
    """A piece of a token is looked for as written, as it is counted: looked for with signs between its letters and
    digits, `utf8` of a URL took `UTF-8` from every turn (an outside review)."""
    common_word_stays(mem, turn, value, word)


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("guest wifi key: purple-monkey", "I typed purple-monkey on the tv and it failed", "purple-monkey"),
        ("nightly exports go to the acme-payroll bucket", "aws s3 ls s3://acme-payroll/ shows nothing", "acme-payroll"),
    ],
    ids=["two-word-wifi-key", "bucket"],
)
def test_a_code_the_value_says_in_five_sessions_goes_from_other_turns(mem, value, said, what):
    """The value's own turns, which go whole, were counted as the history saying its joined words, so five sessions
    that pasted it kept them in a sixth (an outside review)."""
    said_elsewhere_is_gone(mem, value, said, what, own=5)


def test_a_cjk_word_of_the_value_goes_from_inside_a_longer_run(mem):
    """CJK text glues its words together: a word of it is looked for with ASCII's edges, not its letters' (an outside
    review found an address kept inside a longer run)."""
    said_elsewhere_is_gone(mem, "客户王小明，住在朝阳区建国路", "王小明说他住在朝阳区建国路附近", "住在朝阳区建国路")


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("My salary: 85000 EUR gross", "I make 85,000 a year before tax", "85,000"),
        ("My salary: 85000 EUR gross", "mein Gehalt ist 85.000 EUR", "85.000"),
        ("Keypad code for the back door: 4711", "the keypad code is 4, 7, 1, 1", "4, 7, 1, 1"),
    ],
    ids=["thousands-comma", "thousands-dot", "digits-listed"],
)
def test_a_short_number_written_with_a_thousands_sign_or_listed_goes(mem, value, said, what):
    """A short number is found with a thousands sign where one stands and its digits listed (a review of the form that
    keeps `12:30`: it had lost these)."""
    said_elsewhere_is_gone(mem, value, said, what)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("Staging DB: DB_PASSWORD=SunflowerMeadow", "$ cat .env\nDB_HOST=db.internal\nDB_PASSWORD=SunflowerMeadow\n# run {i}"),
        ("Grafana login is admin:SunflowerMeadow", "$ curl -su admin:SunflowerMeadow http://grafana.lab/api/health -> ok ({i})"),
    ],
    ids=["env-line", "user-colon"],
)
def test_a_password_of_letters_glued_to_its_label_goes_though_tools_printed_it_often(mem, value, said):
    """A label and its value are no words joined, however many tool outputs printed them: judged so, the password
    stayed in all six (a review)."""
    said_elsewhere_is_gone(mem, value, [said.format(i=i) for i in range(6)], "SunflowerMeadow")


def few_turns_keep(mem, turns: list[str], value: str, word: str) -> None:
    """Forgetting ``value`` beside 30 other turns leaves ``word`` in each of ``turns``, which say it."""
    _history_of_builds(mem, 30)
    mem.append_turns("few", [("user", t, T0, None) for t in turns])
    mem.write("user/deploy", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/deploy"))
    said = [t.text for t in mem.raw.read(mem.raw.find("few"))]
    assert all(word in t for t in said), said


@pytest.mark.parametrize(
    ("turns", "value", "word"),
    [
        (
            [f"postgres listens on 5432 by default, check {i}" for i in range(3)],
            "Staging DB: localhost:5432/shop, token Xk9mPq2zTt",
            "5432",
        ),
        (
            [f"python3.11 -m venv .venv failed on box {i}" for i in range(3)],
            "token read from /opt/app/.venv/lib/python3.11/site-packages",
            "python3.11",
        ),
        (
            [f"deploy log 2026-03-14T09:{i + 20:02d}:00Z ok" for i in range(3)],
            "Incident INC-7731 began 2026-03-14T09:14:22Z",
            "2026-03-14T09",
        ),
        (
            [f"for (i=0; i<10; i++) sum += a[i]; // attempt {i}" for i in range(3)],
            "the loop must run while i<10 holds, token Xk9mPq2zTt",
            "i<10",
        ),
        (
            [f"clone it from github.com/acme/tools, try {i}" for i in range(3)],
            "Deploy key for https://github.com/acme/payments: Xk9mPq2zTt",
            "github.com",
        ),
        (
            [f"npm complains about package.json again, try {i}" for i in range(3)],
            "Deploy key is read by /srv/shop/package.json: Xk9mPq2zTt",
            "package.json",
        ),
    ],
    ids=["port", "python-in-path", "timestamp-hour", "code-comparison", "github", "path-file-name"],
)
def test_a_piece_of_a_path_url_or_timestamp_stays_in_a_few_unrelated_turns(mem, turns, value, word):
    """No piece of a path, a URL or a timestamp is looked for on its own: each was, in turn, and went from the few
    turns that said it (reviews)."""
    few_turns_keep(mem, turns, value, word)


@pytest.mark.parametrize(
    ("turn", "value", "word"),
    [
        (
            'model = SentenceTransformer("all-MiniLM-L6-v2")  # try {i}',
            "RAG .env: EMBED_MODEL=sentence-transformers/all-MiniLM-L6-v2 EMBED_KEY=sk_live_x7k2m9q4w8e3",
            "all-MiniLM-L6-v2",
        ),
        (
            "run Llama-3.1-8B-Instruct on the box, try {i}",
            "Inference config: model: meta-llama/Llama-3.1-8B-Instruct, token hf_Xk9mPq2zTtAbCdEf",
            "Llama-3.1-8B-Instruct",
        ),
        ("locale says en_US.UTF-8 again, try {i}", "Staging .env:\nLANG=en_US.UTF-8\nDB_NAME=shop", "en_US.UTF-8"),
        ("start the jvm with -Xmx2048m, try {i}", "Prod .env:\nJAVA_OPTS=-Xmx2048m\nKEYSTORE=/etc/shop.jks", "-Xmx2048m"),
        ("my iPhone15 battery drains, try {i}", "iPhone15のメモ: Xk9mPq2zTt", "iPhone15"),
    ],
    ids=["model-name", "model-path", "locale", "jvm-flag", "cjk-glued"],
)
def test_a_generated_looking_piece_the_history_says_stays(mem, turn, value, word):
    """A piece of a token after `MODEL=`, a locale, a JVM flag is not looked for on its own: looked for as a
    generated code, it went from all the turns that said it (a review)."""
    mem.append_turns("hist", [("user", turn.format(i=i), T0, None) for i in range(30)])
    plaintext_secret(mem, "user/deploy", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/deploy"))
    said = [t.text for t in mem.raw.read(mem.raw.find("hist"))]
    assert sum(word in t for t in said) == 30, said[:2]


def test_forgetting_a_kubeconfig_of_several_clusters_works(mem):
    """Cut at `/`, a kubeconfig's base64 blocks made a pattern of 500 tokens too large for RE2, and the forget ended in
    an error having forgotten nothing (a review). Patterns hold at most PATTERN_CHARS of tokens."""
    import base64
    import random

    rnd = random.Random(11)

    def b(k: int) -> str:
        return base64.b64encode(rnd.randbytes(k)).decode()

    lines = ["apiVersion: v1", "kind: Config", "clusters:"]
    for i in range(8):
        lines += [f"- name: prod-{i}", "  cluster:", f"    certificate-authority-data: {b(1100)}"]
    lines += ["users:"]
    for i in range(8):
        lines += [f"- name: admin-{i}", "  user:", f"    client-key-data: {b(1700)}"]
    value = "\n".join(lines) + "\n"
    mem.append_turns("other", [("user", "pasted it:\n" + value, T0, None)])
    plaintext_secret(mem, "user/kube", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/kube"))
    assert mem.current("user/kube") is None
    assert not any("client-key-data" in t.text for t in mem.raw.read(mem.raw.find("other")))


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("My cell: 5550142", "call me at 555.0142 tonight", "555.0142"),
        ("My cell: 5550142", "call me at 555/0142 tonight", "555/0142"),
        ("Rent to the landlord: 150000 INR a month", "rent is 1,50,000 this month", "1,50,000"),
    ],
    ids=["dotted-phone", "slashed-phone", "indian-grouping"],
)
def test_a_short_number_with_a_dot_between_long_groups_or_indian_grouping_goes(mem, value, said, what):
    """A dot, slash or underscore between groups of three digits or more, and a lakh's grouping (a review); `20.11.`
    of `2011` still stays."""
    said_elsewhere_is_gone(mem, value, said, what)


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("Мой нотариус — Кузнецов, приём по четвергам", "завтра встреча с Кузнецовым в 10", "Кузнецов"),
        ("Наш юрист — Гаджиев, телефон в сейфе", "поговори с Гаджиевым про договор", "Гаджиев"),
    ],
)
def test_a_rare_name_goes_from_its_inflected_forms(mem, value, said, what):
    """A rare word of another script is taken from the longer words it begins (`Кузнецовым`): with its script's edges
    the name stayed there (a review; the cost, a common word such as `сервер` judged rare because no turn says it so,
    is in docs/disk.md)."""
    said_elsewhere_is_gone(mem, value, said, what)


@pytest.mark.parametrize(
    ("value", "said", "what"),
    [
        ("Guest wifi key: purple-monkey", "typed purple-monkey on the tv, attempt {i}", "purple-monkey"),
        (
            "Jira login: anna.kowalska, password in the manager",
            "$ ssh anna.kowalska@build-0{i} -> Permission denied",
            "anna.kowalska",
        ),
        ("Haslo do wifi: zielony_kot", "wpisz zielony_kot na telewizorze, proba {i}", "zielony_kot"),
    ],
    ids=["wifi-key", "login", "polish-wifi-key"],
)
def test_joined_words_said_in_a_few_turns_go(mem, value, said, what):
    """Joined words are the history's only past JOINED_TURNS other turns: a two-word key retyped six times, or a login
    ssh's output repeats, stayed at five (a review)."""
    said_elsewhere_is_gone(mem, value, [said.format(i=i) for i in range(6)], what)


def test_a_random_run_of_letters_joined_to_a_label_goes_however_often_it_was_said(mem):
    """Joined words are written as words are (`QwErTy…` is no word): a random key of letters said in 25 turns stayed as
    the history's joined words (a review)."""
    said = [f"the mailgun check still sends key_QwErTyUiOpAsDfGhJk, run {i}" for i in range(25)]
    said_elsewhere_is_gone(mem, "Mailgun key: key_QwErTyUiOpAsDfGhJk", said, "key_QwErTyUiOpAsDfGhJk")


@pytest.mark.parametrize("length", [210, 330, 900])
def test_a_code_longer_than_a_token_said_whole_elsewhere_leaves_no_piece_of_it(mem, length):
    """A run of token characters longer than TOKEN_CHARS (a JWT, a cloud session token) is read in pieces: each
    piece was looked for as a whole token, which it is not where another turn says the run whole, and the code
    stayed there. Every piece is found inside the run now; so is a long code glued to its label."""
    import random

    rnd = random.Random(length)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    code = "".join(rnd.choice(alphabet) for _ in range(length))
    said = [
        f"here it is again: {code} ok",
        f"export SESSION_TOKEN={code}",
        f"Authorization: Bearer{code}",
    ]
    for i, text in enumerate(said):
        mem.append_turns(f"s{i}", [("user", text, T0, None)])
    ep = mem.home.episodes / "2026" / "11" / "05" / "ep1.md"
    ep.parent.mkdir(parents=True)
    ep.write_text(f"situation: the user pasted {code} into the shell\n")
    mem.append_turns("other", [("user", "an unrelated turn about the editor", T0, None)])
    mem.write("user/session", f"Signing token {code}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/session"))
    mem.checkpoint()
    mem.close()
    pieces = {code[i : i + 24].encode() for i in range(0, length - 24, 12)}
    assert [str(p) for p, data in all_bytes_under(mem.home.root).items() if any(x in data for x in pieces)] == []
    assert ep.exists() is False or code[:24] not in ep.read_text()
    kept = [t.text for p in mem.raw.files() for t in mem.raw.read(p)]
    assert "an unrelated turn about the editor" in kept


def test_a_long_class_name_of_the_value_leaves_the_longer_names_it_begins(mem):
    """Only a piece of a run longer than a token is found inside a longer run: a class's name of 64 letters found so
    took its prefix out of `...ServiceTest` and `...ServiceImpl` (a review)."""
    cls = "com.acme.payments.internal.ledger.reconciliation.ReconciliationService"
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"test {cls}Test failed again", T0, None)])
    mem.write("user/cls", f"The flaky one is {cls}, it leaks the db password", "user")
    forget.apply(mem, forget.plan_target(mem, "user/cls"))
    assert _said_in(mem, "o") == [f"test {cls}Test failed again"]


def test_a_piece_of_zero_bytes_of_a_long_value_leaves_another_blobs_zero_run(mem):
    """A 200-character piece of `AAAA...` (zero bytes in base64), found without edges, took the same run out of an
    unrelated blob (a review): a piece of few distinct characters keeps its edges."""
    import random

    rnd = random.Random(11)
    secret = base64.b64encode(rnd.randbytes(99) + bytes(300) + rnd.randbytes(99)).decode()
    other = base64.b64encode(rnd.randbytes(48) + bytes(600) + rnd.randbytes(48)).decode()
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"firmware image: {other}", T0, None)])
    _write_even_a_secret(mem, "user/der", f"Signing key (DER): {secret}")
    forget.apply(mem, forget.plan_target(mem, "user/der"))
    assert other in _said_in(mem, "o")[0]


def test_a_long_code_that_begins_with_a_short_code_of_the_value_goes_whole(mem):
    """A short code's match began at the sign before it, one place sooner than the long code's piece found without
    edges: the short code was cut first and the rest of the long code stayed (a review). The token that begins first
    goes, the longer where two begin at one place."""
    import random
    import string

    rnd = random.Random(3)
    tail = "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(320))
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"use k7-prod.{tail} now", T0, None)])
    _write_even_a_secret(mem, "user/k", f"Key id k7-prod, full key k7-prod.{tail}")
    forget.apply(mem, forget.plan_target(mem, "user/k"))
    mem.checkpoint()
    mem.close()
    assert [
        p for p, d in all_bytes_under(mem.home.root).items() if any(tail[i : i + 24].encode() in d for i in (0, 150, 296))
    ] == []


def _forget_even_a_secret(mem, key: str, value: str) -> None:
    _write_even_a_secret(mem, key, value)
    forget.apply(mem, forget.plan_target(mem, key))


def test_a_class_name_of_92_characters_leaves_its_test_class(mem):
    """A token of a token's length or less keeps its edges: a class's name found without them took its prefix out of
    `...ServiceTest` (two reviews)."""
    cls = "com.acme.payments.platform.internal.ledger.reconciliation.settlement.ReconciliationSettlementService"
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"test {cls}Test failed again", T0, None)])
    _forget_even_a_secret(mem, "user/cls", f"The flaky one is {cls}, it leaks the db password")
    assert _said_in(mem, "o") == [f"test {cls}Test failed again"]


def test_what_a_long_run_shares_with_another_stays_there(mem):
    """A long run is looked for whole, not piece by piece: a piece it shared with a sibling path, another presigned
    URL of the same day or another screenshot of the same display was cut out of those (a review)."""
    import hashlib
    import random
    import struct
    import zlib

    base = "/home/alice/work/acme/monorepo/node_modules/.pnpm/@babel+core@7.23.0_supports-color@8.1.1/node_modules/@babel/core/lib/transformation/"
    mine = base + "file/babel-plugin-transform-runtime-helpers-generated-cache-for-the-deploy-step.js"
    sibling = f"error in {base}normalize-opts/options-with-extra-long-name.js: cannot read undefined"
    q = (
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE"
        "%2F20240115%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240115T{t}Z&X-Amz-Expires=3600&X-Amz-Signature={s}"
        "&X-Amz-SignedHeaders=host&x-id=GetObject"
    )

    def url(f: str, t: str) -> str:
        return f"https://my-bucket.s3.us-east-1.amazonaws.com/{f}?" + q.format(t=t, s=hashlib.sha256(f.encode()).hexdigest())

    rnd = random.Random(5)
    icc = zlib.compress(bytes(rnd.randrange(256) for _ in range(400)))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

    def png(seed: int) -> str:
        data = (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", 2880, 1800, 8, 6, 0, 0, 0))
            + chunk(b"iCCP", b"Display\x00\x00" + icc)
            + chunk(b"pHYs", struct.pack(">IIB", 5669, 5669, 1))
            + chunk(b"IDAT", random.Random(seed).randbytes(600))
            + chunk(b"IEND", b"")
        )
        return base64.b64encode(data).decode()

    _history_of_builds(mem)
    others = [sibling, f"here is the q2 link: {url('q2.pdf', '142200')}", f"the build error: data:image/png;base64,{png(2)}"]
    for i, text in enumerate(others):
        mem.append_turns(f"o{i}", [("user", text, T0, None)])
    before = [_said_in(mem, f"o{i}")[0] for i in range(3)]  # as captured: the URL's signature redacted
    value = f"Crashed in {mine}; the leaked link {url('q1.pdf', '103000')}; my screen: data:image/png;base64,{png(1)}"
    _forget_even_a_secret(mem, "user/leaks", value)
    after = [_said_in(mem, f"o{i}")[0] for i in range(3)]
    # The data URI's `data:image/png;base64` is a code of the value that one other turn says: it goes, as before.
    assert after[:2] == before[:2] and png(2) in after[2]


def test_a_long_path_said_wrapped_is_found_as_before(mem):
    """A path of 392 characters said wrapped at 64 columns: its pieces of 200 with signs allowed between their
    characters find it, as they did before whole runs were looked for too (a review)."""
    import random

    rnd = random.Random(38)
    rnd.choice("abcdef"), rnd.choice("abcdefghij")
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_"
    code = "/" + "/".join("".join(rnd.choice(alphabet) for _ in range(rnd.randrange(3, 14))) for _ in range(420 // 9))
    _history_of_builds(mem)
    mem.append_turns("o", [("user", "pem:\n" + "\n".join(code[i : i + 64] for i in range(0, len(code), 64)), T0, None)])
    _forget_even_a_secret(mem, "user/path", f"The signing secret is key: {code} keep it safe")
    left = _said_in(mem, "o")[0].replace("\n", "")
    assert not any(code[i : i + 24] in left for i in range(0, len(code) - 24, 12))


def test_a_token_whose_fold_is_longer_than_a_token_keeps_its_edges(mem):
    """A run was told from a piece by its folded length, and the fold makes some letters longer (`æ` as `ae`): a
    195-character name, or a 200-character piece of a Danish path, was found inside longer names and paths as a run
    is, and a short token of `æ` had no form at all (a review). A run is marked as one where it is read."""
    cls = (
        "dk.kommune.borgerservice.forældremyndighed.ægtefællesammenføring.sagsbehandling.afgørelser.klæbende.præcedens."
        "værgemål.særlige.lægeerklæringer.æblemælk.fælleskæreste.ReconciliationForældreService"
    )
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"test {cls}Test failed again", T0, None)])
    mem.append_turns("p", [("user", f"the label was {'æ' * 105} in the file", T0, None)])
    _forget_even_a_secret(mem, "user/cls", f"The flaky one is {cls}, it leaks the db password; label {'æ' * 105}")
    assert _said_in(mem, "o") == [f"test {cls}Test failed again"]
    assert _said_in(mem, "p") == ["the label was [forgotten] in the file"]


def test_forgetting_an_old_version_leaves_a_run_the_current_one_says_inside_a_longer_one(mem):
    """The kept version's own tokens were spared, not a run it says after a label: forgetting v1 cut the path out of
    turns that say the current value (a review)."""
    path = (
        "/mnt/shared/finance/quarterly-close/2024/q1/reconciliation-workpapers/ledger-exports/eu-west/payments-platform"
        "/settlement-batches/merchant-acquiring/card-present/visa-mastercard/final-reviewed-by-controller/signed-off"
    )
    _history_of_builds(mem)
    mem.append_turns("o", [("user", f"export WORKPAPERS_DIR={path}", T0, None)])
    mem.write("user/dir", f"The workpapers are in {path}", "user")
    mem.write("user/dir", f"WORKPAPERS_DIR={path}", "user")
    forget.apply(mem, forget.plan_target(mem, "user/dir@v1"))
    assert _said_in(mem, "o") == [f"export WORKPAPERS_DIR={path}"]


@pytest.mark.parametrize("padding", ["\x00" * 200, "\x07" * 200, "\u0336" * 200])
def test_a_word_padded_with_what_the_fold_drops_is_no_run(mem, padding):
    """A word padded past 200 characters with NULs, bells or combining marks was a whole run: always the value's, and
    found inside longer words, so `troubleshooting` went from every turn that said it (a review)."""
    for i in range(6):
        mem.append_turns(f"o{i}", [("user", f"see the troubleshooting guide, TroubleshootingGuide.md step {i}", T0, None)])
    _history_of_builds(mem)
    _forget_even_a_secret(mem, "user/z", f"My note: troubleshooting{padding} is what I hate")
    assert _said_in(mem, "o0") == ["see the troubleshooting guide, TroubleshootingGuide.md step 0"]


def test_whole_runs_take_no_place_among_the_codes_looked_for_encoded(mem):
    """A whole run took one of the places of the codes looked for encoded and matched nothing there: with seventeen
    runs, two turns kept their run in a C array of its bytes (a review)."""
    import random
    import string

    rnd = random.Random(1)
    runs = ["".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(210)) for _ in range(17)]
    for i, run in enumerate(runs):
        array = ", ".join(f"0x{b:02x}" for b in f"token: {run}\n".encode())
        mem.append_turns(f"o{i}", [("user", "static const unsigned char blob[] = {" + array + "};", T0, None)])
    _history_of_builds(mem)
    _forget_even_a_secret(mem, "user/e", "keys: " + " ".join(runs))
    assert all(_said_in(mem, f"o{i}") == [FORGOTTEN] for i in range(17))


def test_a_longer_name_that_goes_on_from_a_long_run_of_the_value_keeps_it(mem):
    """A run is found inside a longer one where it begins after a label, not where another name goes on from its
    end: `<path>x` is another file's name (a review); `<path>.map` says the value's path and loses it."""
    f = (
        "/home/alice/work/acme/monorepo/node_modules/.pnpm/@babel+core@7.23.0_supports-color@8.1.1/node_modules/@babel/"
        "core/lib/transformation/file/babel-plugin-transform-runtime-helpers-generated-cache-for-the-deploy-step.js"
    )
    _history_of_builds(mem)
    mem.append_turns("o0", [("user", f"loaded source map {f}.map ok", T0, None)])
    mem.append_turns("o1", [("user", f"{f}x is a different file", T0, None)])
    _forget_even_a_secret(mem, "user/crash", f"My app crashed in {f} yesterday")
    assert _said_in(mem, "o0") == ["loaded source map /[forgotten].map ok"]
    assert _said_in(mem, "o1") == [f"{f}x is a different file"]


@pytest.mark.parametrize(
    "value, said",
    [
        ("金庫の暗証番号は蒼月七三九です", "# メモ\n金庫の暗証番号は蒼月\n七三九です。\n"),
        ("保险箱密码是青龙七三九号", "备忘:\n保险箱密码是青龙七三九\n号"),
    ],
    ids=["japanese", "chinese"],
)
def test_a_value_of_a_script_without_spaces_wrapped_in_a_turn_is_forgotten(mem, value, said):
    """A Japanese or Chinese value a memo wrapped (`蒼月\\n七三九`) was not found by either forget: the normal form
    reads the line break as a space, and these scripts put none between words (an outside review). Both forms of
    forget find it now; a turn that only shares a word of it stays."""
    mem.append_turns("memo", [("user", "メモを読んで", T0, None), ("user", said, T0, None)])
    mem.append_turns("other", [("user", "金庫の場所は二階です", T0, None)])
    mem.write("user/kinko", value, "user")
    forget.apply(mem, forget.plan_target(mem, "user/kinko"))
    assert _said_in(mem, "memo") == ["メモを読んで", FORGOTTEN]
    assert _said_in(mem, "other") == ["金庫の場所は二階です"]
    mem.append_turns("memo2", [("user", said, T0, None)])
    forget.apply(mem, forget.plan_match(mem, value))
    assert _said_in(mem, "memo2") == [FORGOTTEN]


def test_a_forgotten_messages_digest_does_not_give_a_guessable_value_back(proxy_client, upstream, bead_home, bead):
    """A tool printed a PIN alone (`cat ~/notes/pin.txt`: `4417`) and the person forgot it: no file held 4417, but the
    conversation's state file kept that message's digest, and trying the 10,000 PINs gave it back (an outside
    review). A forget replaces the digest of each message whose turns it took; the conversation goes on, its earlier
    turns captured once, the forgotten one not again."""
    import glob

    from bead.wire.anthropic import conversation_of

    def body(msgs):
        return json.dumps({"model": "claude-test", "max_tokens": 50, "system": "You help.", "messages": msgs}).encode()

    def digests() -> str:
        return "".join(Path(p).read_text() for p in glob.glob(str(bead_home / "sessions" / "*.jsonl")))

    proxy = proxy_client()
    h = {"content-type": "application/json", "x-api-key": "k", "x-bead-session": "pin-conv"}
    msgs = [{"role": "user", "content": "read the card pin from ~/notes/pin.txt and fill in the form"}]
    proxy.post(body(msgs), h)
    proxy.settle()
    call = {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "cat ~/notes/pin.txt"}}
    result = {"type": "tool_result", "tool_use_id": "tu1", "content": "4417"}
    msgs += [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]
    proxy.post(body(msgs), h)
    proxy.settle()
    pin = conversation_of(json.loads(body(msgs)), h).messages[2].hash
    assert pin in digests(), "the message's digest is what the state keeps of it"
    assert bead("write", "user/card-pin", "Card PIN 4417", "--type", "user").code == 0
    assert bead("forget", "user/card-pin", "--yes").code == 0
    assert pin not in digests()
    # As a word: bead's ids and digests are hex, and one may hold the digits (a run failed on a batch id holding them).
    pin_word = re.compile(rb"(?<![0-9A-Za-z])4417(?![0-9A-Za-z])")
    assert not [p for p in bead_home.rglob("*") if p.is_file() and pin_word.search(p.read_bytes())]
    msgs += [{"role": "assistant", "content": "Filled in."}, {"role": "user", "content": "thanks, now submit it"}]
    proxy.post(body(msgs), h)
    proxy.settle()
    with Memory(Home(bead_home), Config(owner="t")) as m:
        said = [t.text for t in m.raw.read(m.raw.find("pin-conv")) if t.role == "user"]
    assert said.count("read the card pin from ~/notes/pin.txt and fill in the form") == 1, said
    assert "thanks, now submit it" in said and not any("4417" in t for t in said), said
