"""The indexer service as a real process: hand edits become searchable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import deep_tree, eventually, launch_indexer, remove_deep

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
        procs.append(launch_indexer(bead_home, tmp_path / f"indexer-{len(procs)}.log"))
        return procs[-1]

    yield start
    for p in procs:
        p.terminate()
        # It stops within a batch's time; a whole suite on two busy cores once took more than 10 s (an error at
        # teardown, the test itself passed).
        p.wait(60)


@pytest.fixture
def mem(bead_home):
    m = Memory(Home(bead_home).ensure(), Config(owner="t"))
    yield m
    m.close()


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """One indexer process, started once, watching one home for the tests of what reaches the index while it runs:
    each test works on keys and words of its own there. (home, the indexer's log)."""
    root = tmp_path_factory.mktemp("watched")
    home = Home(root / "home").ensure().root
    log_path = root / "indexer.log"
    p = launch_indexer(home, log_path)
    try:
        yield home, log_path
        assert p.poll() is None, log_path.read_text()  # it ran through every test
        assert b"the watch on" not in log_path.read_bytes()  # its probes were heard: it never fell back to polling
    finally:
        p.terminate()
        p.wait(10)


@pytest.fixture
def wmem(watched):
    """A Memory on the watched home, as the CLI or the proxy opens one beside the indexer."""
    m = Memory(Home(watched[0]), Config(owner="t"))
    yield m
    m.close()


def atomic_save(path, text):
    """What editors do: write a hidden temp file, then rename it over the target."""
    tmp = path.parent / f".{path.name}.swp"
    tmp.write_text(text)
    os.replace(tmp, path)


class TestIndexer:
    """Hand edits, deletes, moves and appends reach the index while it runs."""

    def test_hand_edit_atomic_save(self, wmem, watched):
        mem, (bead_home, _log) = wmem, watched
        f = mem.write("user/editor", "The editor is helix.", "user").fact
        atomic_save(f.path, f.path.read_text().replace("helix", "kakoune"))
        assert eventually(lambda: search_ids(bead_home, "kakoune") == ["user/editor@v1"])
        assert search_ids(bead_home, "helix") == []

    def test_new_file_delete_and_move(self, wmem, watched):
        mem, (bead_home, _log) = wmem, watched
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

    def test_malformed_file_is_skipped_and_not_rewritten(self, wmem, watched):
        mem, (bead_home, log) = wmem, watched
        f = mem.write("user/lang", "English", "user").fact
        f.path.write_text("---\nkey: [broken\n---\nGerman\n")
        before = f.path.read_bytes()
        mem.write("user/other", "still indexed after the broken file", "user")
        assert eventually(lambda: search_ids(bead_home, "still indexed") == ["user/other@v1"])
        assert eventually(lambda: search_ids(bead_home, "english") == [])
        assert f.path.read_bytes() == before
        assert eventually(lambda: f"skipped {f.path}".encode() in log.read_bytes()), log.read_text()

    def test_key_directory_renamed(self, wmem, watched):
        mem, (bead_home, _log) = wmem, watched
        mem.write("user/old-name", "value under the old key name", "user")
        assert eventually(lambda: search_ids(bead_home, "old key name") == ["user/old-name@v1"])
        src = bead_home / "store" / "facts" / "user" / "old-name"
        # Renaming a key directory by hand: its file still says the old key, so it is
        # reported as malformed, and the old key's rows leave the index.
        os.replace(src, src.parent / "new-name")
        assert eventually(lambda: search_ids(bead_home, "old key name") == [])

    def test_raw_append_from_another_writer(self, wmem, watched):
        mem, (bead_home, _log) = wmem, watched
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


class TestWithoutAWatch:
    """The watch can fail: watchdog walks a folder tree recursively to watch it, so one deeper than Python's stack
    (someone's doing, under the store or moved in later) ended the indexer at its start, or silently stopped its
    watch while it ran; the user's inotify watches can run out. The indexer then reconciles the store every few
    seconds, and what the proxy captured or a person edited is still indexed. Shown in-process with a stack limit
    of 300 and a tree 400 deep (Python's default limit is 1,000; a tree that deep is one rmtree cannot remove)."""

    @pytest.fixture
    def served(self, bead_home, monkeypatch, caplog):
        import logging
        import sys
        import threading

        from bead.indexer import watch

        monkeypatch.setattr(watch, "POLL_S", 0.2)  # above the debounce: each reconcile starts
        monkeypatch.setattr(watch, "PROBE_S", 0.5)
        caplog.set_level(logging.INFO, logger="bead.indexer")
        mem = Memory(Home(bead_home).ensure(), Config(owner="t"))
        # The indexer's own Memory, as in its own process: a connection shared with the test's writes raced the
        # indexer's first reconcile ("cannot start a transaction within a transaction").
        served_mem = Memory(Home(bead_home), Config(owner="t"))
        stop = threading.Event()
        thread = threading.Thread(target=watch.serve, args=(served_mem, stop), daemon=True)
        trees = [bead_home / "store" / "raw" / "deep", bead_home / "outside-tree"]
        limit = sys.getrecursionlimit()

        def start():
            sys.setrecursionlimit(300)
            thread.start()

        try:
            yield mem, start, caplog
            assert thread.is_alive()  # it ran through the test
        finally:
            stop.set()
            thread.join(10)
            sys.setrecursionlimit(limit)
            for t in trees:
                remove_deep(t)
            mem.close()
            served_mem.close()

    def test_a_store_it_cannot_watch_is_reconciled_every_few_seconds(self, served, bead_home):
        mem, start, caplog = served
        deep_tree(bead_home / "store" / "raw" / "deep", 400)
        start()
        assert eventually(lambda: "cannot watch" in caplog.text)
        assert "deeper than the watch can walk" in caplog.text and "restart the indexer" in caplog.text
        mem.raw.append("captured", "user", "the zookeeper ensemble needs three nodes")  # the proxy's way: no index
        assert eventually(lambda: raw_ids(bead_home, "zookeeper ensemble") == ["captured#1"])

    @pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # watchdog's thread dies
    def test_a_watch_that_stops_hearing_gives_way_to_reconciling(self, served, bead_home):
        mem, start, caplog = served
        start()
        assert eventually(lambda: "watching" in caplog.text)
        mem.raw.append("first", "user", "the kafka brokers need rack awareness")
        assert eventually(lambda: raw_ids(bead_home, "kafka rack awareness") == ["first#1"])  # heard
        outside = bead_home / "outside-tree"
        deep_tree(outside, 400)
        os.rename(outside, bead_home / "store" / "raw" / "deep")  # watchdog walks it to watch it, and its thread dies
        assert eventually(lambda: "stopped; reconciling it every" in caplog.text)
        mem.raw.append("second", "user", "the zookeeper ensemble needs three nodes")
        assert eventually(lambda: raw_ids(bead_home, "zookeeper ensemble") == ["second#1"]), caplog.text[-3000:]

    @pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # watchdog's thread dies
    def test_a_watch_lost_once_is_set_up_again_once_it_can_be(self, served, bead_home, monkeypatch):
        """A watch lost once left the indexer reconciling every few seconds for good, a tenth of a core on a large
        store (an adversarial pass): it tries to watch again now and then, and watches once it can."""
        from bead.indexer import watch

        monkeypatch.setattr(watch, "REWATCH_S", 0.5, raising=False)
        mem, start, caplog = served
        start()
        assert eventually(lambda: "watching" in caplog.text)
        outside = bead_home / "outside-tree"
        deep_tree(outside, 400)
        os.rename(outside, bead_home / "store" / "raw" / "deep")
        assert eventually(lambda: "stopped; reconciling it every" in caplog.text)
        remove_deep(bead_home / "store" / "raw" / "deep")
        assert eventually(lambda: "again" in caplog.text), caplog.text[-2000:]
        mem.raw.append("third", "user", "the flink checkpoints go to object storage")
        assert eventually(lambda: raw_ids(bead_home, "flink checkpoints") == ["third#1"])

    @pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # watchdog's thread dies
    def test_a_probe_it_cannot_touch_is_said_once_and_the_store_is_reconciled(self, served, bead_home):
        """A folder at the probe's name defeated the check: the watch then died unnoticed and nothing more was
        indexed. A probe that cannot be touched is said once, and the store is reconciled as well as watched."""
        mem, start, caplog = served
        (bead_home / "store" / ".indexer-probe").mkdir(parents=True)
        start()
        assert eventually(lambda: "cannot check the watch" in caplog.text)
        outside = bead_home / "outside-tree"
        deep_tree(outside, 400)
        os.rename(outside, bead_home / "store" / "raw" / "deep")  # the watch dies; no probe can tell
        mem.raw.append("after", "user", "the zookeeper ensemble needs three nodes")
        assert eventually(lambda: raw_ids(bead_home, "zookeeper ensemble") == ["after#1"])
        assert caplog.text.count("cannot check the watch") == 1

    def test_polling_says_a_file_it_cannot_index_once_not_at_every_reconcile(self, served, bead_home):
        import logging

        mem, start, caplog = served
        caplog.set_level(logging.DEBUG, logger="bead.indexer")
        deep_tree(bead_home / "store" / "raw" / "deep", 400)
        start()
        assert eventually(lambda: "cannot watch" in caplog.text)
        f = mem.write("user/lang", "English", "user").fact
        odd = bead_home / "store" / "facts" / "Notes" / "x"  # no key: "Notes" is not lower-case; every diff lists it
        odd.mkdir(parents=True)
        (odd / "v1.md").write_text(f.path.read_text())
        assert eventually(lambda: "skipped " in caplog.text)
        seen = caplog.text.count("reconciled in")
        assert eventually(lambda: caplog.text.count("reconciled in") >= seen + 3)  # three more polls
        assert caplog.text.count("skipped ") == 1, caplog.text
        # A diff the reconcile cannot settle (the broken file stays "new" to it) is said once too, at its change.
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "reconciled in" in r.getMessage()]
        assert len(said) <= 2 and len(set(m.split(": ", 1)[1] for m in said)) == len(said), said

    def test_a_backend_that_reports_no_close_hears_the_probe(self, served, bead_home, monkeypatch):
        """The probe was a file opened and closed unwritten: only inotify reports that. Under macOS's FSEvents, or
        polling, the indexer took its watch for deaf 30 s after it started and polled from then on. The probe now
        writes a byte; shown with watchdog's polling backend, whose events come from sizes and times alone."""
        import watchdog.observers
        from watchdog.observers.polling import PollingObserver

        from bead.indexer import watch

        monkeypatch.setattr(watchdog.observers, "Observer", lambda: PollingObserver(timeout=0.05))
        touched = []
        real = watch._touch
        monkeypatch.setattr(watch, "_touch", lambda path, root: touched.append(path) or real(path, root))
        _mem, start, caplog = served
        start()
        assert eventually(lambda: len(touched) >= 4)  # three probes judged since the first
        assert "stopped" not in caplog.text and "watching" in caplog.text


def test_an_edit_the_index_was_too_busy_to_take_is_tried_again(bead_home):
    """A long forget or reindex held the index past the indexer's wait: the edit was logged as skipped and never
    indexed, and its key went on serving the old value (an adversarial pass). It goes back in line."""
    from bead.config import parse
    from bead.index.sqlite import module
    from bead.indexer.watch import Indexer

    home = Home(bead_home).ensure()
    with Memory(home, parse("store:\n  busy_timeout_ms: 100\n")) as m:
        m.write("user/pet", "The walrus is called Wally", "user")
        idx = Indexer(m)
        path = home.store / "facts" / "user" / "pet" / "v1.md"
        path.write_text(path.read_text().replace("walrus is called Wally", "platypus is called Pip"))
        holder = module().connect(str(home.index_db), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            idx.apply({path})
            assert path in idx._dirty, "back in line"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        batch, idx._dirty = idx._dirty, set()
        idx.apply(batch)
        assert [h.id for h in search_facts(m.index, "platypus")] == ["user/pet@v1"]


def test_a_memory_whose_index_file_was_deleted_and_built_again_writes_to_the_new_one(bead_home, monkeypatch):
    """`rm index.db*` while the indexer ran, then any bead command built a new one: the indexer kept writing into
    the deleted file (its edits never searchable) and held a forgotten value's bytes in its WAL until it exited (an
    adversarial pass). A long-lived Memory looks that its index file is still the one at its path."""
    from bead.core import memory

    monkeypatch.setattr(memory, "INDEX_CHECK_S", 0.0, raising=False)
    home = Home(bead_home).ensure()
    with Memory(home, Config(owner="t")) as long_lived:
        long_lived.write("user/pet", "The walrus is called Wally", "user")
        for p in home.root.glob("index.db*"):
            p.unlink()
        with Memory(home, Config(owner="t")) as cli:
            assert [h.id for h in search_facts(cli.index, "walrus")] == ["user/pet@v1"]  # built again from the files
        long_lived.write("user/boat", "The platypus sails the boat", "user")
        with Memory(home, Config(owner="t")) as cli:
            assert [h.id for h in search_facts(cli.index, "platypus")] == ["user/boat@v1"]
        held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")]
        assert not [t for t in held if "index.db" in t and t.endswith("(deleted)")], held


def test_a_turn_the_writer_indexed_is_not_read_again_and_one_it_did_not_is(bead_home, monkeypatch):
    """The proxy indexes each turn it appends; the indexer, woken by the same append, read the session's whole file
    again, so its work grew with the square of a session's length (120 ms a turn at 2,000 turns). A file the index
    holds as it is now is left alone; one appended to by a writer that could not index is read."""
    from bead.indexer.watch import Indexer
    from bead.store.rawlog import RawLog

    reads: list[Path] = []
    read_seen = RawLog.read_seen
    monkeypatch.setattr(RawLog, "read_seen", lambda self, path: reads.append(path) or read_seen(self, path))
    home = Home(bead_home).ensure()
    with Memory(home, Config(owner="t")) as m:
        first = m.append_turns("s-long", [("user", "the gazebo needs paint", None, None, {})])
        path = first[0].path
        idx = Indexer(m)
        reads.clear()
        idx.apply({path})
        assert (reads, idx.unchanged) == ([], 1)
        m.raw.append_many("s-long", [("assistant", "the pergola too", None, None, {})])  # not indexed by its writer
        idx.apply({path})
        assert (reads, idx.unchanged) == ([path], 1)
        assert [h.text for h in search_raw(m.index, "pergola")] == ["the pergola too"]
        idx.apply({path})  # the indexer's own sync recorded the file as it read it
        assert (reads, idx.unchanged) == ([path], 2)


def scrubbed_in_place(m: Memory) -> tuple[Path, Path]:
    """A raw log holding `Xk9mPq2zTt`, then a scrubbed copy of it put in its place with the same size and modification
    time (`cp -p`, `rsync -a`, a script's `os.replace`): (the copy's former path, the log's path)."""
    path = m.append_turns("s1", [("user", "the wifi key is Xk9mPq2zTt", None, None, {})])[0].path
    st = os.stat(path)
    tmp = path.with_name(".scrub.tmp")
    tmp.write_bytes(path.read_bytes().replace(b"Xk9mPq2zTt", b"xxxxxxxxxx"))
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)
    return tmp, path


def test_a_raw_log_put_in_place_with_the_same_size_and_time_is_read_again(bead_home):
    """A scrubbed copy put in place of a raw log (`cp -p`, `rsync -a`, a script's `os.replace`) may keep the size and
    modification time the index saw: the file put in place is read, not taken for the one the index holds (an
    outside review of the skip above)."""
    from bead.indexer.watch import Indexer

    home = Home(bead_home).ensure()
    with Memory(home, Config(owner="t")) as m:
        tmp, path = scrubbed_in_place(m)
        idx = Indexer(m)
        idx.note(str(tmp), str(path), replaced=True)  # the moved event watchdog reports
        batch, idx._dirty = idx._dirty, set()
        idx.apply(batch)
        assert search_raw(m.index, "Xk9mPq2zTt") == []


def test_a_raw_log_put_in_place_while_the_index_was_busy_is_still_read_when_tried_again(bead_home):
    """A file put in place that the index was too busy to take goes back in line as one put in place: tried again as
    a plain change, its size and time the index saw made it look held, and the old text stayed searchable."""
    from bead.config import parse
    from bead.index.sqlite import module
    from bead.indexer.watch import Indexer

    home = Home(bead_home).ensure()
    with Memory(home, parse("store:\n  busy_timeout_ms: 100\n")) as m:
        tmp, path = scrubbed_in_place(m)
        idx = Indexer(m)
        idx.note(str(tmp), str(path), replaced=True)
        holder = module().connect(str(home.index_db), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            batch, idx._dirty = idx._dirty, set()
            idx.apply(batch)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        batch, idx._dirty = idx._dirty, set()
        idx.apply(batch)
        assert search_raw(m.index, "Xk9mPq2zTt") == []
