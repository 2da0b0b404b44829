"""Contention never fails a write: the file is the commit, the index catches up; a write's cost does not grow with versions."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from click.testing import CliRunner

from bead.cli import cli
from bead.config import Config
from bead.core import forget, pinned, query
from bead.core.memory import Memory
from bead.errors import BeadError
from bead.index import sqlite as sqlite_mod
from bead.index.rebuild import reconcile, sync_key
from bead.paths import Home
from bead.recall.rank import search_facts
from bead.store import facts as facts_mod
from bead.store.audit import iso
from bead.store.facts import Fact


@pytest.fixture
def held_index(bead_home):
    """Another process's write transaction on index.db, held until the test lets go."""
    with Memory(Home(bead_home).ensure(), Config(owner="t")) as m:
        m.index  # noqa: B018 - the index exists before another process holds it
    conn = sqlite_mod.module().connect(str(bead_home / "index.db"), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta(name, value) VALUES('hold', '1')")
    yield conn
    if conn.in_transaction:
        conn.rollback()
    conn.close()


class TestLockedIndex:
    """A writer facing a locked index for longer than its busy timeout still succeeds, without a traceback."""

    def test_write_succeeds_and_the_index_catches_up(self, bead_home, held_index):
        mem = Memory(Home(bead_home), Config(owner="t"), busy_timeout_ms=150)
        t0 = time.monotonic()
        res = mem.write("user/editor", "Helix with the default keymap", "user")
        assert time.monotonic() - t0 < 5
        assert res.written and not res.indexed and res.fact.path.exists()
        assert mem.current("user/editor").body.startswith("Helix")
        held_index.rollback()
        reconcile(mem.index, mem.facts, mem.raw)  # what `bead indexer` does on its next pass
        assert [h.id for h in search_facts(mem.index, "helix keymap")] == ["user/editor@v1"]
        mem.close()

    def test_a_write_above_a_forgotten_version_is_never_served_as_the_old_value(self, bead_home):
        """After `forget KEY@v2` the next write is v3 (a forgotten number is not given out again). Where that write
        met a locked index, the index still called v1 current, and the check that a row is behind the files looked
        for v2 alone: every reader of the index served the replaced value (an outside attack)."""
        Home(bead_home).ensure()
        (bead_home / "config.yaml").write_text("store:\n  busy_timeout_ms: 150\n")
        with Memory.open(Home(bead_home)) as mem:
            mem.write("project/shop/editor", "The team edits with Neovim and lazy.nvim", "project")
            mem.write("project/shop/editor", "The team edits with Emacs and evil-mode", "project")
            forget.apply(mem, forget.plan_target(mem, "project/shop/editor@v2"))
            conn = sqlite_mod.module().connect(str(bead_home / "index.db"), isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            res = mem.write("project/shop/editor", "The team edits with Helix and its default keymap", "project")
            conn.rollback()
            conn.close()
            assert res.fact.version == 3 and not res.indexed
            assert [h.id for h in search_facts(mem.index, "team edits")] == ["project/shop/editor@v1"], "the index lags"
            served = [
                " ".join(item.value for item in query.search_memory(mem, "team edits")),
                query.recall(mem, "which editor does the team use", project="shop").text or "",
                query.memory_context(mem, "set up the team's editor", "shop").text,
                pinned.pinned_block(mem, "shop", 2000)[0] or "",
            ]
        for text in served:
            assert "Neovim" not in text, text

    def test_cli_exits_0_with_one_line_on_stderr(self, bead_home, held_index):
        (bead_home / "config.yaml").write_text("store:\n  busy_timeout_ms: 150\n")
        r = CliRunner().invoke(cli, ["write", "user/shell", "fish", "--type", "user"])
        assert r.exit_code == 0, r.output
        assert r.stdout.strip() == "wrote user/shell@v1"
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "index" in lines[0] and "bead reindex" in lines[0]
        assert "Traceback" not in r.output and r.exception is None

    def test_forget_reports_a_locked_index_as_an_error(self, bead_home, held_index):
        (bead_home / "config.yaml").write_text("store:\n  busy_timeout_ms: 150\n")
        mem = Memory.open(Home(bead_home))
        mem.write("user/pet", "a cat named Biscotti", "user")
        with pytest.raises(BeadError) as e:
            forget.apply(mem, forget.plan_target(mem, "user/pet"))
        assert "locked" in e.value.message and e.value.hint
        assert mem.current("user/pet") is not None and mem.tombstones.count() == 0, "nothing changed"
        mem.close()
        r = CliRunner().invoke(cli, ["forget", "user/pet"])
        assert r.exit_code == 1 and "locked" in r.stderr and "Traceback" not in r.output
        held_index.rollback()
        assert CliRunner().invoke(cli, ["forget", "user/pet"]).exit_code == 0


def test_eight_writers_sixty_values_each_lose_nothing(mem, bead_home):
    """8 processes x 60 writes to one key, all at once: every value lands, versions contiguous, one current, index
    in step. (200 each took 10 s of the suite and found nothing 60 does not: the writers overlap from first to
    last either way.)"""
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from bead.config import Config
        from bead.core.memory import Memory
        from bead.paths import Home
        with Memory(Home(Path({str(bead_home)!r})), Config(owner="t")) as m:
            for j in range(60):
                m.write("project/race/counter", f"writer {{sys.argv[1]}} value {{j}}", "project")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], stderr=subprocess.PIPE, text=True) for i in range(8)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0] * 8, [err for _, err in results]
    assert not any("Traceback" in err for _, err in results)
    kv = mem.versions("project/race/counter")
    assert kv.numbers == tuple(range(1, 481))
    assert sorted(f.body for f in kv.facts) == sorted(f"writer {i} value {j}" for i in range(8) for j in range(60))
    assert [f.version for f in kv.facts if f.status == "current"] == [480]
    assert mem.index.counts()["fact_versions"] == 480, [err for _, err in results]
    assert [h.id for h in search_facts(mem.index, "writer value", limit=5)] == ["project/race/counter@v480"]


class TestFlatCost:
    """The next number and the current version come from names and the key state, not from reading every version."""

    def seed(self, mem, key: str, n: int) -> None:
        d = mem.home.fact_dir(key)
        d.mkdir(parents=True)
        for v in range(1, n + 1):
            f = Fact(
                key=key,
                version=v,
                type="user",
                body=f"value {v}",
                owner="t",
                status="current" if v == n else "superseded",
                valid_from=iso(mem.clock()),
            )
            (d / f"v{v}.md").write_bytes(f.render())
        sync_key(mem.index, mem.facts, key)

    def test_a_write_reads_one_version_and_lists_nothing(self, mem, monkeypatch):
        self.seed(mem, "user/busy", 300)
        mem.write("user/busy", "first write lists the folder once", "user")
        reads, lists = [], []
        real_read, real_listdir = facts_mod.FactStore._read, os.listdir
        monkeypatch.setattr(facts_mod.FactStore, "_read", lambda self, fd, key, n: reads.append(n) or real_read(self, fd, key, n))
        monkeypatch.setattr(os, "listdir", lambda *a: lists.append(a) or real_listdir(*a))
        res = mem.write("user/busy", "second write", "user")
        assert res.fact.version == 302 and reads == [301] and lists == []
        assert [f.version for f in mem.versions("user/busy").facts if f.status == "current"] == [302]

    def test_the_check_that_the_index_is_behind_lists_no_folder_bead_left_as_it_was(self, mem, monkeypatch):
        """Every served row is checked against its key's folder (FactStore.behind); listing a folder of 300
        versions for each row of each request cost the proxy's path milliseconds a row (a review). Where the key's
        state says bead's last write left the folder as it is, no listing; after a forget it lists, and finds v3
        above the forgotten v2."""
        self.seed(mem, "user/busy", 300)
        mem.write("user/busy", "the write that records the key's state", "user")
        lists: list[tuple] = []
        real_listdir = os.listdir
        monkeypatch.setattr(os, "listdir", lambda *a: lists.append(a) or real_listdir(*a))
        assert mem.facts.behind([("user/busy", 301)]) == set() and lists == []
        assert mem.facts.behind([("user/busy", 300)]) == {("user/busy", 300)}
        monkeypatch.setattr(os, "listdir", real_listdir)
        mem.write("user/gap", "one", "user")
        mem.write("user/gap", "two", "user")
        forget.apply(mem, forget.plan_target(mem, "user/gap@v2"))
        mem.write("user/gap", "three", "user")
        assert mem.current("user/gap").version == 3
        assert mem.facts.behind([("user/gap", 1), ("user/gap", 3)]) == {("user/gap", 1)}

    def test_a_file_added_by_hand_is_seen(self, mem, tmp_path):
        """A version dropped into the folder by hand changes its time: the next write lists and goes above it."""
        mem.write("user/shell", "bash", "user")
        d = mem.home.fact_dir("user/shell")
        recorded = d.stat().st_mtime_ns
        probe = tmp_path / "probe"
        while True:  # until the file system's clock has moved on from bead's last write
            probe.write_text("x")
            if probe.stat().st_mtime_ns > recorded:
                break
        (d / "v40.md").write_text("---\nid: user/shell@v40\nkey: user/shell\ntype: user\nversion: 40\n---\nzsh\n")
        res = mem.write("user/shell", "fish", "user")
        assert res.fact.version == 41 and mem.current("user/shell").body == "fish"

    def test_crash_between_steps_heals_from_the_state(self, mem):
        """A write whose second step never ran leaves `settled` behind; the next write marks what it missed."""
        mem.write("user/tz", "UTC", "user")
        mem.write("user/tz", "CET", "user")
        state = mem.home.fact_state("user/tz")
        state.write_text('{"last": 2, "settled": 0, "dir_mtime_ns": 0}')  # as if step two of v2 never ran
        mem.home.fact_file("user/tz", 1).write_text(
            mem.home.fact_file("user/tz", 1).read_text().replace("status: superseded", "status: current")
        )
        mem.write("user/tz", "EET", "user")
        assert [f.status for f in mem.versions("user/tz").facts] == ["superseded", "superseded", "current"]

    def test_index_rows_match_a_full_sync(self, mem):
        for i in range(5):
            mem.write("project/app/port", f"port {8080 + i}", "project")
        incremental = search_facts(mem.index, "port", current_only=False, limit=10)
        sync_key(mem.index, mem.facts, "project/app/port")
        full = search_facts(mem.index, "port", current_only=False, limit=10)
        assert sorted((h.id, h.row["current"], h.row["status"]) for h in incremental) == sorted(
            (h.id, h.row["current"], h.row["status"]) for h in full
        )

    def test_out_of_order_index_updates_keep_the_newest_current(self, mem):
        """Two writers of one key whose index updates commit in the other order still leave the newest current."""
        a = mem.facts.write("user/lang", "English", "user").fact
        b = mem.facts.write("user/lang", "German", "user").fact
        mem.index.add_version(b)
        mem.index.add_version(a)
        assert [h.id for h in search_facts(mem.index, "english german")] == ["user/lang@v2"]


def test_a_write_waiting_on_a_held_lock_names_the_holder_and_goes_on_once_it_lets_go(bead_home):
    """A process that holds the store's lock (hung, or stopped) no longer makes a command wait without a word: after
    a second the command says on stderr which lock it waits for and which process holds it, and it writes once the
    lock is let go. Two real processes: a flock is per process."""
    home = Home(bead_home).ensure()
    hold = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from bead.store.locks import flocked
        with flocked(Path({str(home.store_lock)!r}), root=Path({str(home.root)!r})):
            print("held", flush=True)
            sys.stdin.readline()
        """
    )
    env = {**os.environ, "BEAD_HOME": str(bead_home)}
    holder = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        writer = subprocess.Popen(
            [sys.executable, "-m", "bead", "write", "user/shell", "fish", "--type", "user"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stderr is not None
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.append(writer.stderr.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        if not said:
            writer.kill()
            pytest.fail("the waiting writer said nothing in 60 s")
        line = said[0]  # the notice, the first thing the writer says
        assert line.startswith(f"bead: waiting for {home.store_lock}, held by pid {holder.pid} ("), line
        assert f"kill {holder.pid}" in line and line.count("\n") == 1
        assert writer.poll() is None, "still waiting, not failed"
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert out.strip() == "wrote user/shell@v1" and err == ""
    finally:
        holder.kill()
        holder.wait()
