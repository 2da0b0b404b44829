"""The derived index: rebuilt from the files, current after every command."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime

import pytest

from bead.errors import BeadError
from bead.index import db as dbmod
from bead.index import sqlite as sqlite_check
from bead.index.query import fts_or_query
from bead.index.rebuild import diff, reconcile
from bead.recall.rank import search_facts, search_raw

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)


class TestDerived:
    """index.db can be deleted at any time and comes back from the files."""

    def test_deleted_index_rebuilds_on_next_use(self, mem):
        mem.write("project/shop/payments", "Payments go through Stripe.", "project")
        mem.append_turns("s1", [("user", "the stripe webhook secret rotates monthly", T0, None)])
        mem.close()
        for suffix in ("", "-wal", "-shm"):
            (mem.home.root / f"index.db{suffix}").unlink(missing_ok=True)
        assert [h.id for h in search_facts(mem.index, "stripe")] == ["project/shop/payments@v1"]
        assert [h.id for h in search_raw(mem.index, "webhook")] == ["s1#1"]

    def test_schema_version_change_rebuilds(self, mem, monkeypatch):
        mem.write("user/editor", "helix", "user")
        mem.close()
        monkeypatch.setattr(dbmod, "SCHEMA_VERSION", dbmod.SCHEMA_VERSION + 1)
        assert [h.id for h in search_facts(mem.index, "helix")] == ["user/editor@v1"]
        assert mem.index.schema_version() == dbmod.SCHEMA_VERSION

    def test_a_changed_table_statement_rebuilds_without_a_version_bump(self, mem, monkeypatch):
        """A fact field added to the one declaration changes the facts table's statement: an index built by the
        old statements is rebuilt by itself (its stored digest differs), and finds the facts again."""
        mem.write("user/editor", "helix", "user")
        mem.close()
        monkeypatch.setattr(dbmod, "SCHEMA_DIGEST", "0" * 16)
        assert mem.index.fresh, "the old index was dropped and built again"
        assert [h.id for h in search_facts(mem.index, "helix")] == ["user/editor@v1"]

    def test_the_index_columns_follow_the_fact_declaration(self, mem):
        """Every field the declaration marks as indexed is a column of the facts table, with its type."""
        from bead.store.facts import FACT_FIELDS, Fact

        mem.write("user/editor", "helix", "user")
        columns = mem.index.fact_columns()
        for spec in FACT_FIELDS:
            assert spec.name == "id" or spec.name in Fact.__dataclass_fields__, spec.name
            if spec.index is not None:
                assert columns[spec.name] == ("INTEGER" if spec.integer else "TEXT"), spec.name
            else:
                assert spec.name not in columns, spec.name

    def test_connections_open_and_close_one_at_a_time(self, mem, monkeypatch):
        """SQLite's unix VFS deadlocks two threads for good when one opens the index while another closes a WAL
        connection to it (a lock-order inversion inside SQLite: a proxy's request hung so). Every connect, with
        the statements that open the WAL and its shared memory, and every close hold dbmod.OPEN_CLOSE, whoever
        closes: Index.close, or the collector (a thread's Memory freed when the thread ends)."""
        import gc
        import threading

        # Only this thread's opens and closes count: under load a server thread of an earlier test on the same
        # worker may still open or close its own index, and its garbage is collected before the count starts.
        gc.collect()
        me = threading.get_ident()
        seen: list[str] = []
        real = dbmod.OPEN_CLOSE

        class Recording:
            def __enter__(self):
                real.acquire()
                if threading.get_ident() == me:
                    seen.append("in")

            def __exit__(self, *exc):
                if threading.get_ident() == me:
                    seen.append("out")
                real.release()

        monkeypatch.setattr(dbmod, "OPEN_CLOSE", Recording())
        index = dbmod.Index(mem.home.index_db, mem.home.store)
        assert seen == ["in", "out"]
        index.close()
        assert seen == ["in", "out"] * 2
        dropped = dbmod.Index(mem.home.index_db, mem.home.store)
        del dropped
        gc.collect()
        assert seen == ["in", "out"] * 4  # opened, and closed by the collector under the lock

    @pytest.mark.parametrize("writer", ["none", "this connection", "another connection"])
    def test_a_new_index_is_built_once_and_a_reset_after_any_write_drops_it(self, bead_home, monkeypatch, writer):
        """A new index's rebuild keeps the empty tables the open just created instead of building them a second
        time; once anything was written to the file, by this connection or another, a reset drops it."""
        from bead.paths import Home

        home = Home(bead_home).ensure()
        creates: list[int] = []
        real_create = dbmod.Index._create
        monkeypatch.setattr(dbmod.Index, "_create", lambda self: (creates.append(1), real_create(self))[1])
        index = dbmod.Index(home.index_db, home.store)
        other = dbmod.Index(home.index_db, home.store)
        try:
            assert index.fresh and not other.fresh and len(creates) == 1
            if writer != "none":
                w = index if writer == "this connection" else other
                with w.write_tx():
                    w._conn.execute("INSERT INTO meta(name, value) VALUES ('left', 'over')")
            index.reset()
            assert len(creates) == (1 if writer == "none" else 2)
            assert index._conn.execute("SELECT value FROM meta WHERE name = 'left'").fetchone() is None
        finally:
            other.close()
            index.close()

    def test_wal_and_secure_delete_are_on(self, mem):
        pragmas = mem.index.pragmas()
        assert pragmas["journal_mode"] == "wal"
        assert pragmas["secure_delete"] == 1
        assert pragmas["busy_timeout"] >= 5000

    def test_index_files_are_private(self, mem):
        mem.write("user/a", "alpha", "user")
        for p in mem.home.root.glob("index.db*"):
            assert p.stat().st_mode & 0o077 == 0, p

    def test_hand_edit_seen_by_reconcile(self, mem):
        v1 = mem.write("user/editor", "helix editor", "user").fact
        v1.path.write_text(v1.path.read_text().replace("helix", "kakoune"))
        d = diff(mem.index, mem.facts, mem.raw)
        assert d.modified == ["facts/user/editor/v1.md"]
        reconcile(mem.index, mem.facts, mem.raw)
        assert [h.id for h in search_facts(mem.index, "kakoune")] == ["user/editor@v1"]
        assert diff(mem.index, mem.facts, mem.raw).clean

    def test_an_edit_that_keeps_size_and_time_is_seen_by_reconcile_and_status(self, mem, bead):
        """`cp -p` or `rsync -a` restoring another value of the same length keeps the file's size and modification
        time: the index kept the old value (search, the pinned block) and `bead status` said fresh."""
        mem.write("user/editor", "Neovim old", "user")
        v2 = mem.write("user/editor", "Helix new", "user").fact
        reconcile(mem.index, mem.facts, mem.raw)  # the indexer's start: everything seen
        st = v2.path.stat()
        v2.path.write_text(v2.path.read_text().replace("Helix new", "Emacs new"))
        os.utime(v2.path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert (v2.path.stat().st_size, v2.path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
        r = bead("status", "--json")
        assert json.loads(r.out)["index"]["fresh"] is False, r.out
        d, _ = reconcile(mem.index, mem.facts, mem.raw)
        assert d.modified == ["facts/user/editor/v2.md"]
        assert [h.id for h in search_facts(mem.index, "emacs")] == ["user/editor@v2"]
        assert search_facts(mem.index, "helix") == []
        assert diff(mem.index, mem.facts, mem.raw).clean

    def test_deleted_file_seen_by_reconcile(self, mem):
        f = mem.write("user/editor", "helix editor", "user").fact
        f.path.unlink()
        d, _ = reconcile(mem.index, mem.facts, mem.raw)
        assert d.deleted == ["facts/user/editor/v1.md"]
        assert search_facts(mem.index, "helix") == []

    def test_reindex_prints_counts(self, mem, bead):
        mem.write("user/a", "alpha", "user")
        mem.write("user/a", "alpha two", "user")
        mem.append_turns("s", [("user", "one", T0, None), ("assistant", "two", T0, None)])
        mem.close()
        r = bead("reindex", "--json")
        assert r.code == 0, r.err
        assert json.loads(r.out) == {"keys": 1, "fact_versions": 2, "raw_files": 1, "raw_turns": 2, "problems": 0}
        r = bead("reindex")
        assert "indexed 1 keys (2 versions) and 2 raw turns in 1 files" in r.out


class TestSearch:
    """Raw agent text is always quoted into a valid FTS5 query."""

    @pytest.mark.parametrize(
        "text",
        [
            "AND OR NOT",
            '"unbalanced',
            "NEAR(a b)",
            "col:value",
            "foo*",
            "(",
            "it's a -flag --x",
            "^start",
            "E   stripe.error.AuthenticationError: No API key provided",
            "🙂 emoji ümlaut",
            '"',
            '""',
            "NOT",
            "x AND",
            "OR y",
            "NEAR/3",
            "- - -",
            "{key_text body}: stripe",
            "'; DROP TABLE facts; --",
            "a\x00b",
            "\\",
            "+plus @at #hash $dollar %s",
            "foo_bar",
            "日本語のテキスト",
            "\u200b zero\u200bwidth",
            "",
            " \n\t ",
            "x" * 1000,
            " ".join(f"w{i}" for i in range(100)),
        ],
        ids=lambda t: f"{t[:12]}...{len(t)} chars" if len(t) > 60 else None,
    )
    def test_any_text_is_a_valid_query(self, mem, text):
        """Every text becomes a query FTS5 accepts: both searches return a list, and find a row holding one of its words."""
        words = re.findall(r"\w+", text)
        probe = "probe " + " ".join(words)
        mem.write("user/x", probe, "user")
        mem.write("user/other", "Deploys run on Fly.io every Friday", "user")
        mem.append_turns("s", [("user", probe, T0, None)])
        mem.append_turns("other", [("user", "Deploys run on Fly.io every Friday", T0, None)])
        facts = search_facts(mem.index, text)
        raw = search_raw(mem.index, text)
        assert isinstance(facts, list) and isinstance(raw, list)
        if words:
            assert [h.id for h in facts] == ["user/x@v1"]
            assert [h.id for h in raw] == ["s#1"]
        else:  # nothing to search for: no row, and no error
            assert facts == [] and raw == []

    def test_terms_are_or_ed_and_quoted(self):
        assert fts_or_query('What is the "flaky" test?') == '"flaky" OR "test"'
        assert fts_or_query("the and of") == '"the" OR "and" OR "of"'
        assert fts_or_query("  ") == ""

    def test_boosts_active_scope(self, mem):
        mem.write("project/a/db", "the database is postgres", "project")
        mem.write("project/b/db", "the database is postgres too", "project")
        assert search_facts(mem.index, "database postgres", scope="project/b")[0].id == "project/b/db@v1"
        assert search_facts(mem.index, "database postgres", scope="project/a")[0].id == "project/a/db@v1"

    def test_dormant_fact_is_searchable(self, mem):
        f = mem.write("user/old-habit", "uses tabs for indentation", "user").fact
        mem.facts.set_status(f, "dormant")
        mem.sync_key("user/old-habit")
        (hit,) = search_facts(mem.index, "tabs indentation")
        assert hit.row["status"] == "dormant"

    def test_cli_search_json_ranks_both_corpora(self, mem, bead):
        mem.write("project/shop/payments", "Payments go through Stripe; test keys in .env.test", "project")
        mem.write("project/shop/deploy", "Deploys run on Fly.io", "project")
        mem.append_turns("s", [("user", "why does stripe reject the test keys", T0, None, {"source": "tool_output"})])
        mem.close()
        r = bead("search", "stripe test keys", "--json")
        assert r.code == 0, r.err
        out = json.loads(r.out)
        assert [h["id"] for h in out["facts"]] == ["project/shop/payments@v1"]
        assert [h["id"] for h in out["raw"]] == ["s#1"]
        assert out["facts"][0]["score"] > 0
        # Who produced the turn, as its marker says: a tool's output came in a user message.
        assert out["raw"][0]["role"] == "user" and out["raw"][0]["source"] == "user (tool output)"
        assert " s#1 user (tool output) " in bead("search", "stripe test keys").out


def test_old_sqlite_is_refused_with_a_fix(monkeypatch):
    """The interpreter's own SQLite (3.40 here) lacks secure-delete: a clear error, not a crash."""
    import sqlite3 as stdlib_sqlite3

    if tuple(map(int, stdlib_sqlite3.sqlite_version.split("."))) >= (3, 43):
        pytest.skip("this interpreter's own SQLite is new enough")
    sqlite_check.check.cache_clear()
    monkeypatch.setattr(sqlite_check, "module", lambda: stdlib_sqlite3)
    try:
        with pytest.raises(BeadError) as e:
            sqlite_check.check()
        assert "3.43" in e.value.message and "pysqlite3" in e.value.hint
    finally:
        sqlite_check.check.cache_clear()


def test_sqlite_in_use_is_new_enough():
    assert tuple(map(int, sqlite_check.check().split("."))) >= (3, 43)


def test_raw_search_can_leave_out_sessions(mem):
    """The proxy never injects excerpts of the current session: the index can exclude it."""
    mem.append_turns("current", [("user", "the migration failed on the orders table", T0, None)])
    mem.append_turns("older", [("user", "orders table migration needs a lock timeout", T0, None)])
    assert {h.row["session"] for h in search_raw(mem.index, "orders migration")} == {"current", "older"}
    assert [h.row["session"] for h in search_raw(mem.index, "orders migration", exclude_sessions=["current"])] == ["older"]


def test_exclusion_falls_back_when_the_excluded_session_fills_the_top(mem):
    """Many matching turns in the excluded session never crowd out the others."""
    mem.append_turns("noisy", [("user", "redis eviction policy allkeys lru", T0, None) for _ in range(60)])
    mem.append_turns("quiet", [("user", "redis eviction policy was changed to volatile lru", T0, None)])
    hits = search_raw(mem.index, "redis eviction policy lru", limit=5, exclude_sessions=["noisy"])
    assert [h.row["session"] for h in hits] == ["quiet"]


def test_sessions_like_finds_subagents_only(mem):
    for s in ("abc", "abc-1234", "abc-99", "abcd", "ab"):
        mem.append_turns(s, [("user", "x", T0, None)])
    assert sorted(mem.index.sessions_like("abc")) == ["abc", "abc-1234", "abc-99"]


def test_raw_doc_freq_matches_porter_stems(mem):
    """The gate reads raw term frequencies through FTS5's vocabulary, by the same porter stem."""
    mem.append_turns(
        "s",
        [("user", "running migrations", T0, None), ("user", "the migration runs", T0, None), ("user", "nothing here", T0, None)],
    )
    assert mem.index.raw_doc_freq(["migrations", "running", "absent"]) == {"migrations": 2, "running": 2, "absent": 0}


class TestRawAtScale:
    """The raw index keeps no text (it is read back from the files) and caps what a search scores."""

    def test_index_holds_no_raw_text(self, mem):
        mem.append_turns("s1", [("user", "the zanzibarquokka migration ran at noon", None, None)])
        mem.close()
        assert b"zanzibarquokka migration ran" not in (mem.home.root / "index.db").read_bytes()

    def test_capped_search_scores_the_newest_rows_and_rare_words_everywhere(self, mem, monkeypatch):
        from datetime import UTC, datetime, timedelta

        from bead.index import db
        from bead.recall.rank import search_raw

        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        mem.append_turns("old", [("user", "the quokkaflux deploy broke the common build", t0, None)])
        mem.append_turns("mid", [("user", f"common build note {i}", t0 + timedelta(days=1), None) for i in range(60)])
        mem.append_turns("new", [("user", f"common build again {i}", t0 + timedelta(days=2), None) for i in range(60)])
        monkeypatch.setattr(db, "RAW_POSTINGS_BUDGET", 20)
        monkeypatch.setattr(db, "RAW_MIN_WINDOW", 30)
        hits = search_raw(mem.index, "common build", limit=10)
        assert {h.row["session"] for h in hits} == {"new"}  # only the newest window is scored
        hits = search_raw(mem.index, "quokkaflux common build", limit=10)
        assert "old" in {h.row["session"] for h in hits}  # a rare word reaches back
        assert all(h.text for h in hits)


@pytest.mark.parametrize(
    "body, part",
    [
        ("日本語のテキスト、絵文字👍🏽も", "日本語"),
        ("日本語のテキスト、絵文字👍🏽も", "テキスト"),
        ("数据库在端口6543上运行", "端口"),
        ("데이터베이스는 포트 6543에서 실행됩니다", "데이터베이스"),
        ("Deploys go through ステージング first", "ステージング"),
    ],
)
def test_a_part_of_a_cjk_run_finds_its_fact_and_turn(mem, body, part):
    """Chinese, Japanese and Korean are written without spaces between words, and FTS5 read a whole run as one
    word: a search for a part of it ("日本語" in "日本語のテキスト") found nothing (found by a newcomer's walkthrough).
    Each character is its own word in the index and a query's run is the phrase of them, so the part is found, in
    order only, in facts, in the new version of one and in raw turns."""
    mem.write("user/note", body, "user")
    mem.write("user/other", "Something else entirely, in English.", "user")
    assert [h.row["key"] for h in search_facts(mem.index, part)] == ["user/note"]
    assert search_facts(mem.index, part[::-1]) == [] or part == part[::-1]
    mem.write("user/note", "新しい値です", "user")
    assert search_facts(mem.index, part) == [] and [h.row["key"] for h in search_facts(mem.index, "新しい")] == ["user/note"]
    mem.append_turns("s1", [("user", body, T0, None)])
    assert [h.row["session"] for h in search_raw(mem.index, part)] == ["s1"]


def test_a_long_cjk_run_asks_a_bounded_number_of_pairs(mem):
    """A run is searched by the pairs of its neighbouring characters, at most RUN_TERMS of a run and MAX_TERMS of a
    query: one phrase of a tool output's 200,000-character run took minutes to search, and a run of many pairs took
    every place from the query's other words (both found by reviews)."""
    from bead.index.query import MAX_TERMS, RUN_TERMS, cjk_spaced, fts_or, fts_terms

    run = "日本語のテキスト" + "漢字" * 100_000
    assert fts_terms("日本語") == ['"日 本"', '"本 語"'] and len(fts_terms(run)) == 10  # pairs, each once
    assert fts_or([run, run, "staging"]).endswith(' OR "staging"')
    many = "".join(chr(0x4E00 + k) for k in range(5000))  # one run, no pair twice
    assert len(fts_terms(many)) == RUN_TERMS and fts_or([many, "staging"]).endswith(' OR "staging"')
    runs = "，".join(many[k * 100 : k * 100 + 100] for k in range(10))  # ten runs: the query stops at MAX_TERMS
    assert fts_or([runs, "staging"]).count(" OR ") == MAX_TERMS - 1
    mem.write("user/note", "日本語のテキストです", "user")
    mem.write("user/other", "The staging host is stage-2.", "user")
    assert [h.row["key"] for h in search_facts(mem.index, run)] == ["user/note"]
    assert cjk_spaced("plain ascii") == "plain ascii" and cjk_spaced("a日b") == "a 日 b"
    assert fts_terms("abc日本def") == ['"abc"', '"日 本"', '"def"'] and fts_terms("x日") == ['"x"', '"日"']


def test_a_version_indexed_after_a_newer_one_is_indexed_as_superseded(mem):
    """Two writers whose index updates commit in the other order: the older version's row kept `current` as its
    status while its file said `superseded` (the current flag itself was right; an adversarial pass)."""
    from bead.store.facts import Fact

    v1 = mem.write("user/shell", "bash is the login shell", "user").fact
    v2 = mem.facts.write("user/shell", "zsh is the login shell", "user").fact  # the file only, as a slow writer's
    v3 = mem.write("user/shell", "fish is the login shell", "user").fact  # its update commits first
    assert isinstance(v1, Fact) and mem.index.add_version(v2)
    rows = {r["id"]: r for r in mem.index.facts_by_id([v1.id, v2.id, v3.id])}
    assert rows[v2.id]["status"] == "superseded" and rows[v2.id]["current"] == 0 and rows[v3.id]["current"] == 1


@pytest.mark.parametrize("project", [None, "clientb"])
def test_a_conversations_raw_search_finds_turns_of_no_project_past_another_projects_many(mem, project):
    """A conversation's raw search keeps to its project's turns and those of none. Where another project's turns
    filled the over-fetch, the search asked again without them; for a conversation of no project that second search
    still held them (SQL's `project != NULL`) and the turns of none were never found (a review)."""
    from bead.recall.rank import search_raw

    mem.raw.append("shared", "user", "The deploy key for the staging box lives in the vault under ops/staging.")
    for i in range(120):
        mem.raw.append(f"a{i}", "user", f"deploy key staging: step {i}", project="clienta")
    mem.catch_up_index()
    found = [h.row["session"] for h in search_raw(mem.index, "deploy key staging", limit=10, by_meaning=False, project=project)]
    assert found == ["shared"], found
    every = search_raw(mem.index, "deploy key staging", limit=10, by_meaning=False)
    assert len(every) == 10 and "shared" not in [h.row["session"] for h in every]  # the person's own search: all


def test_a_project_filtered_raw_search_reads_the_full_text_matches_first(mem):
    """Without statistics SQLite walked the project's rows and asked FTS5 once for each (11 s at 40,000 turns against
    0.1 s: a review). The filtered search takes the matches first and looks each one's row up by its rowid."""
    for i in range(30):
        mem.raw.append(f"s{i}", "user", f"deploy staging timeout {i}", project="webshop" if i % 3 else "other")
    mem.catch_up_index()
    seen: list[str] = []
    mem.index._conn.set_trace_callback(seen.append)
    try:
        mem.index._raw_top('"deploy"', 10, 0, project="webshop")
    finally:
        mem.index._conn.set_trace_callback(None)
    [query] = [q for q in seen if "raw_fts MATCH" in q]
    plan = [row[3] for row in mem.index._conn.execute("EXPLAIN QUERY PLAN " + query)]
    assert plan[0].startswith("SCAN raw_fts VIRTUAL TABLE") and "USING INTEGER PRIMARY KEY" in plan[1], plan


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="reads the kernel's lock table (Linux)")
def test_a_second_connection_leaves_the_first_ones_lock_and_another_programs_close_leaves_the_wal(tmp_path):
    """Opening an index opened and closed its file to create it 0600; closing any descriptor of a file drops every
    POSIX lock the process holds on it. The indexer's second connection (the embedding pass) so left its first
    unlocked, and another program's SQLite closing last (an `sqlite3` shell, Python's own sqlite3) took itself for
    the last one and deleted the WAL the indexer still wrote to: its writes lost, the index corrupted, a sealed
    value kept in the deleted WAL (an outside attack). An existing file is no longer opened but by SQLite."""
    import subprocess
    import sys

    store = tmp_path / "store"
    store.mkdir()
    path = tmp_path / "index.db"

    def locks() -> int:
        ino = os.stat(path).st_ino
        with open("/proc/locks") as f:
            return sum(1 for line in f if f" {os.getpid()} " in line and f":{ino} " in line)

    first = dbmod.Index(path, store)
    try:
        first.counts()  # a read: the connection holds its lock on the file
        held = locks()
        assert held >= 1
        second = dbmod.Index(path, store)
        try:
            assert locks() == held, "opening a second connection dropped the first one's lock"
            # Another program reads the index and closes: the stdlib's sqlite3, whatever SQLite it was built with.
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import sqlite3; c = sqlite3.connect({str(path)!r}); c.execute('select 1 from meta').fetchall(); c.close()",
                ],
                check=True,
                timeout=60,
            )
            assert os.path.exists(f"{path}-wal"), "another program's close deleted the WAL this process writes to"
        finally:
            second.close()
    finally:
        first.close()
    assert (os.stat(path).st_mode & 0o777) == 0o600


def test_a_link_put_in_the_index_files_place_after_the_check_is_refused(tmp_path, monkeypatch):
    """The index is opened by SQLite alone once it exists; a link planted between the check of the index's files and
    the open was followed, and the index with its WAL written beside the link's target (a review)."""
    store = tmp_path / "store"
    store.mkdir()
    path = tmp_path / "index.db"
    target = tmp_path / "elsewhere.db"
    real = dbmod.index_files

    def planted(p):
        yield from real(p)  # every file checked, then the link planted, before the index is opened
        if not path.is_symlink():
            path.symlink_to(target)

    monkeypatch.setattr(dbmod, "index_files", planted)
    with pytest.raises(BeadError, match="symbolic link"):
        dbmod.Index(path, store)
    assert not target.exists()
