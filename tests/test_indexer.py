"""The indexer service as a real process: hand edits become searchable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import eventually

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.recall.rank import search_facts, search_raw


def search_ids(home, q):
    with Memory(Home(home), Config(owner="t")) as m:
        return [h.id for h in search_facts(m.index, q)]


def raw_ids(home, q):
    with Memory(Home(home), Config(owner="t")) as m:
        return [h.id for h in search_raw(m.index, q)]


@pytest.fixture
def indexer(bead_home, tmp_path):
    procs = []

    def start():
        log = open(tmp_path / f"indexer-{len(procs)}.log", "wb")
        p = subprocess.Popen(
            [sys.executable, "-m", "bead", "indexer"],
            env={**os.environ, "BEAD_HOME": str(bead_home)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append(p)
        assert eventually(lambda: b"watching" in (tmp_path / f"indexer-{len(procs) - 1}.log").read_bytes(), 20)
        return p

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


@pytest.fixture
def mem(bead_home):
    m = Memory(Home(bead_home).ensure(), Config(owner="t"))
    yield m
    m.close()


def atomic_save(path, text):
    """What editors do: write a hidden temp file, then rename it over the target."""
    tmp = path.parent / f".{path.name}.swp"
    tmp.write_text(text)
    os.replace(tmp, path)


class TestIndexer:
    """Hand edits, deletes, moves and appends reach the index while it runs."""

    def test_hand_edit_atomic_save(self, mem, indexer, bead_home):
        f = mem.write("user/editor", "The editor is helix.", "user").fact
        indexer()
        atomic_save(f.path, f.path.read_text().replace("helix", "kakoune"))
        assert eventually(lambda: search_ids(bead_home, "kakoune") == ["user/editor@v1"])
        assert search_ids(bead_home, "helix") == []

    def test_new_file_delete_and_move(self, mem, indexer, bead_home):
        indexer()
        f = mem.write("user/shell", "The shell is fish.", "user").fact
        # A version file written by hand in a new key directory.
        d = bead_home / "store" / "facts" / "global" / "tz"
        d.mkdir(parents=True)
        (d / "v1.md").write_text(
            f.path.read_text().replace("user/shell", "global/tz").replace("The shell is fish.", "Timezone is Europe/Berlin.")
        )
        assert eventually(lambda: search_ids(bead_home, "europe berlin") == ["global/tz@v1"])
        (d / "v1.md").unlink()
        assert eventually(lambda: search_ids(bead_home, "europe berlin") == [])
        moved = d.parent / "tz2"
        moved.mkdir()
        os.replace(f.path, moved / "v1.md")  # moved into another key: malformed there (key mismatch)
        assert eventually(lambda: search_ids(bead_home, "fish") == [])

    def test_malformed_file_is_skipped_and_not_rewritten(self, mem, indexer, bead_home, tmp_path):
        f = mem.write("user/lang", "English", "user").fact
        indexer()
        f.path.write_text("---\nkey: [broken\n---\nGerman\n")
        before = f.path.read_bytes()
        mem.write("user/other", "still indexed after the broken file", "user")
        assert eventually(lambda: search_ids(bead_home, "still indexed") == ["user/other@v1"])
        assert eventually(lambda: search_ids(bead_home, "english") == [])
        assert f.path.read_bytes() == before
        assert eventually(lambda: b"skipped" in b"".join(p.read_bytes() for p in tmp_path.glob("indexer-*.log")))

    def test_key_directory_renamed(self, mem, indexer, bead_home):
        mem.write("user/old-name", "value under the old key name", "user")
        indexer()
        src = bead_home / "store" / "facts" / "user" / "old-name"
        # Renaming a key directory by hand: its file still says the old key, so it is
        # reported as malformed, and the old key's rows leave the index.
        os.replace(src, src.parent / "new-name")
        assert eventually(lambda: search_ids(bead_home, "old key name") == [])

    def test_raw_append_from_another_writer(self, mem, indexer, bead_home):
        indexer()
        # Appended by hand-rolled code that does not update the index itself.
        mem.raw.append("outside", "user", "the zookeeper ensemble needs three nodes")
        assert eventually(lambda: raw_ids(bead_home, "zookeeper ensemble") == ["outside#1"])

    def test_the_proxys_captured_turns_are_indexed_by_the_indexer(self, mem, indexer, bead_home):
        """The proxy only appends (#27: no index work in the process the agent waits on); the indexer indexes
        what it captured."""
        import json

        from bead.config import parse
        from bead.proxy.engine import Engine

        engine = Engine(Home(bead_home), parse("owner: t\n"))
        said = {"role": "user", "content": "the kafka brokers need rack awareness turned on"}
        data = {"model": "m", "max_tokens": 5, "messages": [said]}
        prep = engine.prepare(json.dumps(data).encode(), {"x-bead-session": "proxied"})
        engine.forwarded(prep).result(30)
        engine.close()
        assert mem.raw.find("proxied") is not None and raw_ids(bead_home, "kafka rack awareness") == []
        indexer()
        assert eventually(lambda: raw_ids(bead_home, "kafka rack awareness") == ["proxied#1"])

    def test_restart_reconciles_edits_made_while_down(self, mem, indexer, bead_home):
        f = mem.write("user/editor", "The editor is helix.", "user").fact
        p = indexer()
        p.terminate()
        p.wait(10)
        f.path.write_text(f.path.read_text().replace("helix", "zed"))
        (bead_home / "store" / "facts" / "user" / "gone").mkdir()
        indexer()
        assert eventually(lambda: search_ids(bead_home, "zed") == ["user/editor@v1"])
