"""Fact versions and the supersession rule."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from bead.core.seal import write_secret
from bead.errors import BeadError, RefusedWrite
from bead.recall.rank import search_facts
from bead.store.facts import FIELDS, OPTIONAL_FIELDS, split_frontmatter


def frontmatter(path):
    return split_frontmatter(path.read_text())[0]


class TestRule:
    """The current version is the highest number; the old one is marked superseded."""

    def test_second_write_supersedes_first(self, mem):
        a = mem.write("project/bead/language", "The project is written in Python.", "project")
        b = mem.write("project/bead/language", "The project is written in Go.", "project")
        assert (a.fact.version, b.fact.version) == (1, 2)
        assert mem.current("project/bead/language").body == "The project is written in Go."
        assert frontmatter(a.fact.path)["status"] == "superseded"
        assert frontmatter(b.fact.path)["status"] == "current"
        assert frontmatter(b.fact.path)["supersedes"] == "project/bead/language@v1"

    def test_file_has_exactly_the_reference_frontmatter(self, mem):
        res = mem.write("user/editor", "Neovim with the LazyVim config.", "user")
        assert res.fact.path == mem.home.facts / "user" / "editor" / "v1.md"
        meta, body = split_frontmatter(res.fact.path.read_text())
        assert tuple(meta) == tuple(f for f in FIELDS if f not in OPTIONAL_FIELDS), "no title given: no title line"
        assert meta["id"] == "user/editor@v1" and meta["trust"] == "user_stated"
        assert body.strip() == "Neovim with the LazyVim config."
        titled = mem.write("user/shell", "fish, with set -x NAME value", "user", title="The person's shell")
        meta, _ = split_frontmatter(titled.fact.path.read_text())
        assert tuple(meta) == FIELDS and meta["title"] == "The person's shell"
        assert mem.current("user/shell").title == "The person's shell"

    def test_same_body_and_type_writes_nothing(self, mem):
        mem.write("user/editor", "vim", "user")
        again = mem.write("user/editor", "  vim\n", "user")
        assert not again.written and again.fact.version == 1
        files = sorted(p.name for p in (mem.home.facts / "user" / "editor").iterdir())
        assert files == [".state.json", "v1.md"], "no second version (the hidden file is the key's write state)"

    def test_same_body_other_type_is_a_new_version(self, mem):
        mem.write("user/editor", "vim", "user")
        assert mem.write("user/editor", "vim", "feedback").fact.version == 2

    def test_rule_ignores_status_field(self, mem):
        """A hand edit that marks v2 superseded does not make v1 current."""
        mem.write("user/shell", "bash", "user")
        v2 = mem.write("user/shell", "zsh", "user").fact
        v2.path.write_text(v2.path.read_text().replace("status: current", "status: superseded"))
        assert mem.current("user/shell").body == "zsh"

    def test_pinned_is_inherited_unless_changed(self, mem):
        mem.write("user/tz", "UTC", "user", pinned=True)
        assert mem.write("user/tz", "CET", "user").fact.pinned is True
        assert mem.write("user/tz", "EET", "user", pinned=False).fact.pinned is False

    def test_secret_sensitivity_never_written_in_plaintext(self, mem):
        with pytest.raises(RefusedWrite):
            write_secret(mem, "user/pin", "1234", "user")
        assert not (mem.home.facts / "user" / "pin").exists()

    @pytest.mark.parametrize(
        "key, body, extra",
        [
            ("user/emoji", "the build broke \ud83d", {}),
            ("user/cut\udc00", "x", {}),
            ("user/src", "x", {"sources": ["raw/s\ud800.md#turn-1"]}),
            ("user/own", "x", {"owner": "me\udfff"}),
        ],
    )
    def test_half_a_character_is_refused_with_what_to_do(self, mem, key, body, extra):
        """A lone surrogate (an emoji cut in two, from MCP's JSON or a non-UTF-8 argument) cannot be written as
        UTF-8: the write says so and what to do, and leaves no file."""
        with pytest.raises(BeadError) as e:
            mem.write(key, body, "user", **extra)
        assert "half of a character" in str(e.value) and "again without it" in (e.value.hint or "")
        assert not (mem.home.facts / "user").exists() or not any((mem.home.facts / "user").iterdir())

    def test_hand_edited_file_is_read(self, mem):
        v1 = mem.write("global/editor", "emacs", "reference").fact
        v1.path.write_text(v1.path.read_text().replace("emacs", "helix"))
        assert mem.current("global/editor").body == "helix"


class TestCrash:
    """A crash between writing v<N+1> and marking v<N> still leaves v<N+1> current."""

    def test_killed_between_steps(self, mem, bead_home):
        mem.write("project/app/db", "PostgreSQL 15", "project")
        script = textwrap.dedent(f"""
            import os
            import bead.store.facts as facts
            from bead.core.memory import Memory
            from bead.paths import Home
            from bead.config import Config
            from pathlib import Path
            facts._mark_superseded = lambda *args: os._exit(9)   # die mid-write
            m = Memory(Home(Path({str(bead_home)!r})), Config(owner="tester"))
            m.write("project/app/db", "PostgreSQL 16", "project")
        """)
        p = subprocess.run([sys.executable, "-c", script], capture_output=True)
        assert p.returncode == 9
        d = bead_home / "store" / "facts" / "project" / "app" / "db"
        assert frontmatter(d / "v1.md")["status"] == "current"  # step two never ran
        assert frontmatter(d / "v2.md")["status"] == "current"
        assert mem.current("project/app/db").body == "PostgreSQL 16"
        assert not [p for p in d.iterdir() if p.name.endswith(".tmp")], "no temp file left behind"
        # The next write heals the status of every older version.
        mem.write("project/app/db", "PostgreSQL 17", "project")
        assert frontmatter(d / "v1.md")["status"] == "superseded"
        assert frontmatter(d / "v2.md")["status"] == "superseded"


class TestMalformedFiles:
    """A file that does not parse is reported and skipped, never rewritten."""

    def test_broken_highest_version_is_reported_never_rewritten_and_the_next_write_goes_above_it(self, mem):
        mem.write("user/lang", "English", "user")
        bad = mem.home.facts / "user" / "lang" / "v2.md"
        bad.write_text("---\nkey: user/lang\nversion: [oops\n---\nGerman\n")
        kv = mem.versions("user/lang")
        assert kv.current.body == "English", "a write still checks against the newest version it can read"
        assert kv.served is None and kv.unreadable.path == bad
        assert len(kv.problems) == 1 and kv.problems[0].path == bad
        assert "YAML" in kv.problems[0].reason
        before = bad.read_bytes()
        res = mem.write("user/lang", "French", "user")
        assert res.fact.version == 3, "never reuse the number of a file that exists"
        assert bad.read_bytes() == before
        assert mem.served("user/lang").body == "French"

    def test_a_key_given_twice_in_the_frontmatter_is_unreadable_not_read_as_its_last_value(self, mem, bead):
        """YAML reads a key given twice as its last value, while a person reading the file sees the first: a
        line added at the end of a hand-edited file (`trust: user_stated` below the agent's `trust:`) made an agent's
        observation the person's word. Such a file is reported and served nowhere, as any other that cannot be read."""
        v1 = mem.write("project/shop/ci", "CI runs on GitHub Actions.", "project", trust="agent_observed").fact
        text = v1.path.read_text()
        head, _, body = text[4:].partition("\n---\n")
        v1.path.write_text("---\n" + head + "\ntrust: user_stated\n---\n" + body)
        mem.sync_key("project/shop/ci")
        kv = mem.versions("project/shop/ci")
        assert kv.served is None and "given twice" in kv.problems[0].reason and "'trust'" in kv.problems[0].reason
        r = bead("show", "project/shop/ci")
        assert r.code == 1 and "cannot be read" in r.err and "given twice" in r.err

    def test_a_newest_version_that_cannot_be_read_withholds_the_key_instead_of_serving_the_one_it_replaced(self, mem, bead):
        """The rule picks the highest number. Serving the version below an unreadable one serves a value the
        person replaced: the key is served nowhere until the file is mended or the value written again."""
        from bead.core.pinned import pinned_block
        from bead.core.query import get_memory, list_keys
        from bead.errors import Unreadable

        old_value = "The staging database is db-old.internal, port 5432."
        mem.write("project/shop/staging-db", old_value, "project", pinned=True)
        assert "db-old" in pinned_block(mem, "shop", 2000, None, "opening")[0]
        bad = mem.home.facts / "project" / "shop" / "staging-db" / "v2.md"
        bad.write_text("---\nkey: project/shop/staging-db\nversion: [oops\n---\nThe staging database is db-new.\n")
        mem.sync_key("project/shop/staging-db")  # what the indexer does when it sees the file
        assert not [h for h in search_facts(mem.index, "staging database") if h.row["key"] == "project/shop/staging-db"]
        assert "db-old" not in (pinned_block(mem, "shop", 2000, None, "opening")[0] or "")
        with pytest.raises(Unreadable) as err:
            get_memory(mem, "project/shop/staging-db")
        assert "v2" in err.value.message and "db-old" not in str(err.value)
        [listed] = list_keys(mem, "project/shop")
        assert (listed.status, listed.id) == ("unreadable", "project/shop/staging-db@v2")
        r = bead("show", "project/shop/staging-db")
        assert r.code == 1 and "db-old" not in r.out + r.err
        assert "v2, cannot be read" in r.err and str(bad) in r.err and r.out == ""
        assert "unreadable" in bead("list", "project/shop").out
        status = bead("status", "--json")
        problems = " ".join(p["problem"] for p in json.loads(status.out)["problems"])
        assert "no value of project/shop/staging-db is served" in problems
        # The older version stays readable on purpose, marked as not current.
        shown = json.loads(bead("show", "project/shop/staging-db", "--all", "--json").out)
        assert [(v["version"], v["current"]) for v in shown] == [(1, False)]
        # An agent or the dream does not write over it: the broken file is most likely the person's hand edit.
        with pytest.raises(RefusedWrite, match="v2, cannot be read"):
            mem.write("project/shop/staging-db", "db-agent.internal", "project", trust="agent_observed")
        assert not (bad.parent / "v3.md").exists()
        # Writing the same value again mends it (no "unchanged"): v3 is above the broken file.
        again = mem.write("project/shop/staging-db", old_value, "project")
        assert again.written and again.fact.version == 3
        assert get_memory(mem, "project/shop/staging-db").value == old_value
        assert "db-old" in pinned_block(mem, "shop", 2000, None, "opening")[0], "the pin carried over"

    @pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
    def test_reconcile_sees_a_newest_version_name_that_is_no_file_come_and_go(self, mem, kind):
        """The indexer's catch-up (at start, when it polls, after a forget) finds the key withheld while its newest
        version name is a link, a FIFO or a folder, and served again once that is gone."""
        from bead.core.health import collect
        from bead.index.rebuild import reconcile

        mem.write("project/shop/staging-db", "The staging database is db-old.internal.", "project")
        odd = mem.home.facts / "project" / "shop" / "staging-db" / "v2.md"
        {"link": lambda: odd.symlink_to(mem.home.root / "config.yaml"), "fifo": lambda: os.mkfifo(odd), "folder": odd.mkdir}[
            kind
        ]()

        def served():
            return [h.id for h in search_facts(mem.index, "staging database")]

        assert served() == ["project/shop/staging-db@v1"], "not yet reconciled"
        reconcile(mem.index, mem.facts, mem.raw)
        assert served() == []
        problems = [p["problem"] for p in collect(mem)["problems"]]
        assert any("no value of project/shop/staging-db is served" in p for p in problems), problems
        reconcile(mem.index, mem.facts, mem.raw)
        assert served() == [], "unchanged: not synced again as if new"
        odd.rmdir() if kind == "folder" else odd.unlink()
        reconcile(mem.index, mem.facts, mem.raw)
        assert served() == ["project/shop/staging-db@v1"]

    def test_a_version_removed_between_the_listing_and_its_read_is_no_problem(self, mem, monkeypatch):
        """A forget of the newest version between a reader's listing and its read: that version is gone, not
        unreadable (a reader was told to mend a file a forget had just removed)."""
        import bead.store.facts as facts_mod

        mem.write("user/lang", "English", "user")
        listdir = os.listdir
        monkeypatch.setattr(facts_mod.os, "listdir", lambda fd: [*listdir(fd), "v2.md"])  # listed, then removed
        kv = mem.versions("user/lang")
        assert kv.numbers == (1,) and not kv.problems and kv.served.body == "English"

    def test_a_key_whose_only_version_cannot_be_read_is_unreadable_not_missing(self, mem, bead):
        from bead.core.query import get_memory
        from bead.errors import Unreadable

        d = mem.home.facts / "user" / "shell"
        d.mkdir(parents=True)
        (d / "v1.md").write_text("---\nkey: [\n---\nzsh\n")
        with pytest.raises(Unreadable):
            get_memory(mem, "user/shell")
        r = bead("show", "user/shell")
        assert r.code == 1 and "v1, cannot be read" in r.err

    @pytest.mark.parametrize(
        "text,reason",
        [
            ("no frontmatter\n", "frontmatter"),
            ("---\nkey: user/x\nversion: 1\ntype: user\n---\n\n", "empty"),
            ("---\nkey: user/y\nversion: 1\ntype: user\n---\nvalue\n", "does not match"),
            ("---\nkey: user/x\nversion: 1\ntype: opinion\n---\nvalue\n", "type"),
            (b"---\nkey: user/x\nversion: 1\ntype: user\n---\n\xff\xfe\n", "UTF-8"),
        ],
    )
    def test_reasons(self, mem, text, reason):
        d = mem.home.facts / "user" / "x"
        d.mkdir(parents=True)
        (d / "v1.md").write_bytes(text if isinstance(text, bytes) else text.encode())
        kv = mem.versions("user/x")
        assert kv.current is None and reason in kv.problems[0].reason

    def test_one_bad_file_does_not_stop_others(self, mem, bead):
        mem.write("user/a", "alpha value", "user")
        mem.write("user/b", "beta value", "user")
        (mem.home.facts / "user" / "a" / "v1.md").write_text("garbage")
        r = bead("reindex")
        assert r.code == 0 and "1 problem" in r.out
        assert "user/a/v1.md" in r.err
        r = bead("search", "beta", "--json")
        assert '"user/b@v1"' in r.out

    def test_a_state_past_the_highest_version_is_no_hint_and_a_write_past_it_is_refused(self, mem, bead):
        """A version's file name carries at most nine digits. A .state.json that said its last number was
        999,999,999 (a hand edit, a damaged file) made every later write v1000000000.md, which no reader takes for
        a version: `bead write` said written, `bead show` kept the old value, and forget left the new ones on disk.
        Such a state is no hint (the folder is listed); a version file at the highest number refuses the write."""
        mem.write("user/x", "one", "user")
        d = mem.home.facts / "user" / "x"
        (d / ".state.json").write_text('{"last": 999999999, "settled": 0, "dir_mtime_ns": 0}')
        assert mem.write("user/x", "two", "user").fact.version == 2
        assert mem.current("user/x").body == "two"
        top = d / "v999999999.md"
        top.write_text((d / "v2.md").read_text().replace("version: 2", "version: 999999999").replace("two", "three"))
        assert mem.current("user/x").body == "three"
        r = bead("write", "user/x", "four", "--type", "user")
        assert r.code == 1 and "every version number" in r.err and "bead forget user/x" in r.err, r.err
        assert "Traceback" not in r.err
        assert sorted(p.name for p in d.glob("v*.md")) == ["v1.md", "v2.md", "v999999999.md"]
        assert mem.current("user/x").body == "three"

    def test_a_file_named_like_a_version_that_no_reader_takes_is_reported_and_named_by_forget(self, mem, bead):
        """`v02.md` or `v1234567890.md` placed by hand: no reader takes it for a version, and it was said nowhere,
        while forget of the key left it, and the value in it, on disk with no warning."""
        mem.write("user/vendor", "Globex Wombatica Holdings", "user")
        d = mem.home.facts / "user" / "vendor"
        text = (d / "v1.md").read_text()
        for name in ("v02.md", "v1234567890.md"):
            (d / name).write_text(text)
        kv = mem.versions("user/vendor")
        assert kv.current.body == "Globex Wombatica Holdings"
        assert sorted(p.path.name for p in kv.problems) == ["v02.md", "v1234567890.md"]
        assert all("no reader takes it" in p.reason for p in kv.problems)
        r = bead("status")
        assert "v02.md" in r.out + r.err and "v1234567890.md" in r.out + r.err, r.out + r.err
        r = bead("forget", "user/vendor", "--yes")
        assert r.code == 0, r.err
        assert f"kept {d / 'v02.md'}" in r.err and f"kept {d / 'v1234567890.md'}" in r.err, r.err
        assert not (d / "v1.md").exists()


class TestKeys:
    """Keys that could escape the store, or are malformed, are refused."""

    @pytest.mark.parametrize(
        "key",
        [
            "../etc/passwd",
            "user/../../x",
            "/abs/key",
            "user//x",
            "user/",
            "",
            "User/Editor",
            "project/app",
            "user/a/b",
            "team/x",
            "user/.hidden",
            "project/app/x/y",
            "user/a\\b",
        ],
    )
    def test_bad_keys(self, mem, key):
        with pytest.raises(BeadError) as e:
            mem.write(key, "v", "user")
        assert "user/<name>" in e.value.hint
        assert not list(mem.home.root.parent.glob("**/v1.md"))

    def test_cli_bad_key_exit_1_with_hint(self, bead):
        r = bead("write", "../x", "value", "--type", "user")
        assert r.code == 1 and "escape" in r.err and "hint:" in r.err


class TestTombstones:
    """A forgotten value comes back only when a person states it."""

    def test_non_user_write_of_tombstoned_value_refused(self, mem):
        mem.write("user/editor", "Sublime Text 4", "user")
        from bead.core import forget

        forget.apply(mem, forget.plan_target(mem, "user/editor"))
        for trust in ("agent_observed", "dream_inferred"):
            with pytest.raises(RefusedWrite) as e:
                mem.write("user/editor", "sublime   TEXT 4", "user", trust=trust)
            assert "user_stated" in e.value.hint
        with pytest.raises(RefusedWrite):
            mem.write("user/other-key", "Sublime Text 4", "user", trust="dream_inferred")
        assert mem.write("user/editor", "Sublime Text 4", "user", trust="user_stated").written

    @pytest.mark.parametrize(
        "spelt",
        [
            "Helix with default keymap.",
            "helix, with default keymap!",
            "Ｈelix with default keymap",
            "Helix with default keymap &",
            "> Helix with default keymap",
        ],
    )
    def test_a_tombstoned_value_spelt_otherwise_is_refused(self, mem, spelt):
        """Other punctuation or look-alike letters make no new value: an agent's full stop brought a forgotten one
        back. A value its words alone do not say (``C++``) is compared as written."""
        from bead.core import forget

        mem.write("user/editor", "Helix with default keymap", "user")
        mem.write("user/lang", "Use C++ 17", "user")
        forget.apply(mem, forget.plan_target(mem, "user/editor"))
        forget.apply(mem, forget.plan_target(mem, "user/lang"))
        with pytest.raises(RefusedWrite):
            mem.write("user/editor", spelt, "user", trust="agent_observed")
        assert mem.write("user/editor", "Helix with default keymaps", "user", trust="agent_observed").written
        assert mem.write("user/lang", "Use C 17", "user", trust="agent_observed").written

    def test_tombstone_holds_hash_not_value(self, mem):
        mem.write("user/secret-word", "Quokkaberry", "user")
        from bead.core import forget

        forget.apply(mem, forget.plan_target(mem, "user/secret-word"))
        text = mem.home.tombstones_log.read_text()
        assert "quokkaberry" not in text.lower()
        assert "secret-word" not in text, "a forgotten key keeps only its hash (keys carry the value's words)"
        line = yaml.safe_load(text.splitlines()[0])
        assert line["key_sha256"] == hashlib.sha256(b"user/secret-word").hexdigest() and len(line["sha256"]) == 64
        assert line["owner"] == "tester"


class TestAudit:
    """Every write, supersede, forget and tombstone is one JSON line, never a value."""

    def test_events(self, mem):
        mem.write("user/x", "first value", "user")
        mem.write("user/x", "second value", "user")
        from bead.core import forget

        forget.apply(mem, forget.plan_target(mem, "user/x"))
        events = [e["event"] for e in mem.audit.entries()]
        assert events == ["write", "write", "supersede", "tombstone", "tombstone", "forget"]
        assert "value" not in mem.home.audit_log.read_text()


def test_index_follows_writes(mem):
    """After a write returns, search sees it; the old version leaves the current corpus."""
    mem.write("project/app/port", "The dev server listens on port 8080.", "project")
    mem.write("project/app/port", "The dev server listens on port 9090.", "project")
    hits = search_facts(mem.index, "dev server port")
    assert [h.id for h in hits] == ["project/app/port@v2"]
    all_hits = search_facts(mem.index, "dev server port", current_only=False)
    assert {h.id for h in all_hits} == {"project/app/port@v1", "project/app/port@v2"}


def test_keys_lists_every_key(mem):
    for k in ("user/a", "global/b", "project/p/c"):
        mem.write(k, f"value {k}", "reference")
    assert list(mem.facts.keys()) == ["global/b", "project/p/c", "user/a"]
    assert os.path.isdir(mem.home.facts / "project" / "p" / "c")


class TestWhatAKeyAndBodyMayNotHold:
    """A key is shown in every list, pointer and log line and never sealed; the home's token makes its reader the
    owner to the proxy. An adversarial review wrote both through MCP's remember."""

    def test_a_credential_in_the_key_is_refused_as_in_the_body(self, mem):
        from bead.errors import RefusedWrite

        key = "user/xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx"
        with pytest.raises(RefusedWrite) as e:
            mem.write(key, "the slack bot posts to #deploys", "user")
        assert "slack-bot-token" in e.value.message and "name the fact without the secret" in e.value.hint
        assert not (mem.home.facts / "user").exists() or not any((mem.home.facts / "user").iterdir())

    @pytest.mark.parametrize("where", ["body", "title"])
    def test_the_homes_token_is_refused(self, mem, where):
        from bead.errors import RefusedWrite
        from bead.token import load_token

        token = load_token(mem.home)
        body, title = ("my proxy token is " + token, None) if where == "body" else ("the proxy's token", token)
        with pytest.raises(RefusedWrite) as e:
            mem.write("user/proxy", body, "user", title=title)
        assert "proxy token" in e.value.message
        assert mem.current("user/proxy") is None


def test_a_version_is_never_dated_before_the_one_it_replaces(mem):
    """v1 written by a process whose clock ran a day ahead: v2 was dated before it, and a block showing both told the
    model the replaced value was the newer (an adversarial pass)."""
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    mem.facts.clock = lambda: now + timedelta(days=1)
    mem.write("project/shop/db-port", "Postgres listens on 5432.", "project")
    mem.facts.clock = lambda: now
    v2 = mem.write("project/shop/db-port", "Postgres listens on 6543.", "project").fact
    assert v2.valid_from == "2026-12-07T12:00:00Z"
    kv = mem.versions("project/shop/db-port")
    assert kv.facts[1].valid_from >= kv.facts[0].valid_from
    # A date far ahead is a hand edit's, not a clock's: it is not carried on to every later version.
    mem.facts.clock = lambda: now + timedelta(days=30)
    mem.write("project/shop/db-port", "Postgres listens on 7000.", "project")
    mem.facts.clock = lambda: now
    assert mem.write("project/shop/db-port", "Postgres listens on 7001.", "project").fact.valid_from == "2026-12-06T12:00:00Z"
