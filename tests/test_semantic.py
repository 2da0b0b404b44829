"""bead[semantic]: the raw search weighs meaning too, with vectors the indexer computes in the background, stored in
the derived index and removed with the turn (issue #25). The real model runs here (the test extra installs it)."""

from __future__ import annotations

import os
import stat
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import all_bytes_under, eventually, launch_indexer

from bead.config import Config
from bead.core import forget
from bead.core.memory import Memory
from bead.index import semantic
from bead.index.rebuild import rebuild, sync_raw
from bead.paths import Home
from bead.recall import rank

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)
QUERY = "What does Anna drink in the morning?"
BUS = "Anna, this morning: the bus was late."
COFFEE = "Anna, every morning: black coffee, two cups."
FILLER = [f"Ticket {i}: the {w} job failed on the build machine." for i, w in enumerate(["lint", "deploy", "backup", "docs"])]


@pytest.fixture(autouse=True)
def _on(semantic_on):
    """Every test here runs with the extra on, as a default install has it; no question's vector is shared
    from an earlier test (rank.embed_query keeps them a few seconds)."""
    rank._recent.clear()


@pytest.fixture
def model():
    m = semantic.model()
    assert m is not None, f"the semantic extra should be installed for the tests: {semantic.failure()}"
    return m


def turns(mem, texts, session="sess-a"):
    return mem.append_turns(session, [("user", t, T0, None) for t in texts])


def texts(mem, query=QUERY):
    return [h.text for h in rank.search_raw(mem.index, query)]


class TestRescore:
    def test_meaning_breaks_what_words_alone_get_wrong(self, mem, model):
        """Both turns hold the question's words; BM25 ranks the shorter one first, meaning ranks the answer."""
        turns(mem, [BUS, COFFEE, *FILLER])
        assert mem.index.semantic
        assert semantic.Backfill(mem.index, model).run() == 2 + len(FILLER)
        assert texts(mem)[:2] == [COFFEE, BUS]
        mem.index.semantic = False  # recall.semantic: false
        assert texts(mem)[:2] == [BUS, COFFEE]

    def test_config_off_is_bm25_alone(self, bead_home, model):
        mem = Memory(Home(bead_home).ensure(), Config(owner="t", recall=Config().recall.__class__(semantic=False)))
        try:
            assert mem.index.semantic is False
        finally:
            mem.close()

    def test_without_the_extra_nothing_loads_and_search_is_bm25(self, mem, monkeypatch):
        turns(mem, [BUS, COFFEE, *FILLER])
        monkeypatch.setattr(semantic, "_PACKAGES", (*semantic._PACKAGES, "bead_no_such_package"))
        assert not semantic.available() and not semantic.installed()
        mem.close()  # the next open reads the extra's presence again
        assert mem.index.semantic is False
        assert texts(mem)[:2] == [BUS, COFFEE]

    def test_a_turn_without_its_vector_yet_keeps_a_neutral_place(self, mem, model):
        turns(mem, [BUS, COFFEE, *FILLER])
        semantic.Backfill(mem.index, model).run()
        (extra,) = turns(mem, ["Anna, in the morning: never tea."])
        rows = mem.index.raw_candidates(QUERY, 30)
        assert any(r["id"] == f"{extra.session}#{extra.n}" for r in rows)
        assert not mem.index.raw_vectors([mem.index.raw_size()])  # the indexer has not reached it
        found = [h.id for h in rank.search_raw(mem.index, QUERY)]
        assert f"{extra.session}#{extra.n}" in found and texts(mem)[0] == COFFEE


class TestVectors:
    def test_rowids_are_never_used_twice(self, mem):
        """A vector computed for a turn that forget then rewrote can never be taken for the new row's text."""
        turns(mem, ["one", "two", "three"])
        high = mem.index.raw_size()
        mem.index._delete_raw_rows("rowid = ?", [high])  # the newest row goes
        turns(mem, ["four"])
        assert mem.index.raw_size() == high + 1

    def test_a_vector_for_a_row_deleted_meanwhile_is_not_stored(self, mem, model):
        turns(mem, ["one", "two"])
        built = mem.index.built_at()
        rows = mem.index.raw_unembedded(10)
        assert [r["text"] for r in rows] == ["two", "one"]  # newest first
        mem.index._delete_raw_rows("rowid = ?", [rows[0]["rowid"]])
        vecs = model.embed([r["text"] for r in rows])
        stored = mem.index.put_vectors([(r["rowid"], model.blob(v)) for r, v in zip(rows, vecs, strict=True)], built)
        assert stored == 1 and mem.index.vector_count() == 1

    def test_a_batch_read_before_a_rebuild_is_not_stored_after_it(self, mem, model):
        """The embedder read a turn, forget removed it and the index was rebuilt while the model ran: the old
        vector must not land on whatever row holds that number now."""
        secret = "Zorblax-Quintessence-7741"
        turns(mem, [f"the vault code word is {secret}", "unrelated reply"])
        built = mem.index.built_at()
        rows = mem.index.raw_unembedded(10)
        forget.apply(mem, forget.plan_match(mem, secret))
        turns(mem, ["what is for dinner tonight", "pasta"], session="sess-b")
        rebuild(mem.index, mem.facts, mem.raw)
        assert min(r["rowid"] for r in rows) > 0 and mem.index.raw_size() > max(r["rowid"] for r in rows)  # numbers go on
        vecs = model.embed([r["text"] for r in rows])
        assert mem.index.put_vectors([(r["rowid"], model.blob(v)) for r, v in zip(rows, vecs, strict=True)], built) == 0
        assert mem.index.vector_count() == 0

    def test_reading_a_file_again_keeps_its_unchanged_rows_and_their_vectors(self, mem, model):
        """The indexer re-reads a session's file after every append: only the new turn is new (no re-embedding of
        the whole session per captured turn), and a redacted turn gets a new row without the old vector."""
        (first, second) = turns(mem, ["the staging host is db-blue-2", "noted, and a long reply " + "x" * 300])
        fill = semantic.Backfill(mem.index, model)
        assert fill.run() == 2
        before = mem.index.raw_size()
        (third,) = turns(mem, ["and the cache host is redis-3"])
        sync_raw(mem.index, mem.raw, third.path)  # what the indexer does on the file's modify event
        assert mem.index.raw_size() == before + 1 and fill.run() == 1 and mem.index.vector_count() == 3
        mem.redact_turns(first.path, {first.n})
        # The redacted turn and the one after it (its context column held the start of the redacted one) are new
        # rows; the third, moved in the file, keeps its row and vector.
        assert fill.run() == 2 and mem.index.vector_count() == 3
        assert not mem.index.raw_candidates("staging", 5)
        assert [h.text for h in rank.search_raw(mem.index, "cache host redis")][:1] == ["and the cache host is redis-3"]

    def test_an_odd_query_falls_back_to_words(self, mem, model):
        turns(mem, [BUS, COFFEE, *FILLER])
        semantic.Backfill(mem.index, model).run()
        assert texts(mem, "Anna morning \udcff")[:2] == [COFFEE, BUS]  # a lone surrogate is replaced, not fatal

    def test_backfill_takes_new_turns_before_the_rest_of_a_long_sweep(self, mem, model):
        turns(mem, [f"old turn {i}" for i in range(10)])
        fill = semantic.Backfill(mem.index, model, batch=3)
        assert fill.step() == 3
        (new,) = turns(mem, ["a turn captured during the backfill"])
        assert fill.step() == 1  # the new range first
        assert mem.index.raw_vectors([mem.index.raw_size()])
        assert fill.run() == 7
        assert mem.index.vector_count() == 11 and fill.step() == 0

    def test_a_rebuild_starts_the_backfill_over(self, mem, model):
        turns(mem, ["one", "two"])
        fill = semantic.Backfill(mem.index, model)
        assert fill.run() == 2
        rebuild(mem.index, mem.facts, mem.raw)  # `bead reindex`
        assert mem.index.vector_count() == 0
        assert fill.run() == 2

    def test_forget_leaves_no_vector_of_the_turn(self, mem, model):
        secret = "Zorblax-Quintessence-7741"
        turns(mem, [f"the vault code word is {secret}", "unrelated reply"])
        semantic.Backfill(mem.index, model).run()
        (row,) = mem.index.raw_candidates("zorblax", 1)
        blob = mem.index.raw_vectors([row["rowid"]])[row["rowid"]]
        mem.index.checkpoint()
        assert any(blob in data for data in all_bytes_under(mem.home.root).values())
        forget.apply(mem, forget.plan_match(mem, secret))
        mem.close()
        assert not any(blob in data for data in all_bytes_under(mem.home.root).values())
        assert not [p for p, d in all_bytes_under(mem.home.root).items() if secret.lower().encode() in d.lower()]

    def test_a_tampered_model_file_is_refused_and_search_stays_bm25(self, mem, monkeypatch):
        monkeypatch.setattr(semantic, "_model", None)
        monkeypatch.setattr(semantic, "_failed", None)
        monkeypatch.setattr(semantic, "MODEL_SHA256", "0" * 64)
        assert semantic.model() is None
        assert "reinstall" in (semantic.failure() or "")
        turns(mem, [BUS, COFFEE, *FILLER])
        assert texts(mem)[:2] == [BUS, COFFEE]


def test_bead_search_shows_the_order_it_ranks_by(mem, model, bead):
    """With the rescoring, the relevance printed is of the score the list is ranked by: it falls down the list."""
    import json

    turns(mem, [BUS, COFFEE, *FILLER])
    semantic.Backfill(mem.index, model).run()
    out = json.loads(bead("search", QUERY, "--raw", "--json").out)["raw"]
    assert out[0]["text"] == COFFEE and out[0]["bm25"] < out[1]["bm25"]  # meaning moved it above a better BM25
    rel = [r["relevance"] for r in out]
    assert rel == sorted(rel, reverse=True) and rel[0] == 1.0


def test_switched_off_by_the_environment(mem, monkeypatch, bead):
    monkeypatch.setenv("BEAD_SEMANTIC", "0")
    mem.close()
    assert mem.index.semantic is False
    assert "semantic    off (BEAD_SEMANTIC=0 in this environment)" in bead("status").out


def test_status_says_how_many_turns_have_their_vector(mem, model, bead):
    turns(mem, [BUS, COFFEE, *FILLER])
    fill = semantic.Backfill(mem.index, model, batch=2)
    fill.step()
    out = bead("status").out
    assert f"2 of {2 + len(FILLER)} raw turns have a vector; the indexer computes the other {len(FILLER)}" in out
    fill.run()
    assert f"{2 + len(FILLER)} of {2 + len(FILLER)} raw turns have a vector\n" in bead("status").out
    assert bead("status", "--json").out.count('"vectors"') == 1


def test_the_indexer_computes_vectors_in_the_background(bead_home, tmp_path):
    """The indexer service gives each new turn its vector (never the request path)."""
    mem = Memory(Home(bead_home).ensure(), Config(owner="t"))
    turns(mem, [BUS, COFFEE])
    p = launch_indexer(bead_home, tmp_path / "indexer.log")
    try:
        assert eventually(lambda: mem.index.vector_count() == 2, 60), (tmp_path / "indexer.log").read_text()
        turns(mem, FILLER, session="sess-b")
        assert eventually(lambda: mem.index.vector_count() == 2 + len(FILLER), 60), (tmp_path / "indexer.log").read_text()
        assert b"vectors in the background" in (tmp_path / "indexer.log").read_bytes()
    finally:
        p.terminate()
        p.wait(10)
        mem.close()


class TestFactVectors:
    """The pointers' candidates (the gate's fact search) rescored by meaning, from vectors the indexer stores."""

    def facts(self, mem):
        mem.write("user/anna-bus", "Anna, this morning: the bus was late.", "user")
        mem.write("user/anna-coffee", "Anna, every morning: black coffee, two cups.", "user")
        for i, w in enumerate(["lint", "deploy", "backup", "docs"]):
            mem.write(f"project/x/ticket-{i}", f"Ticket {i}: the {w} job failed on the build machine.", "project")

    def pool(self, mem):
        from bead.recall.gate import Candidate

        rows = mem.index.fact_candidates(QUERY, 20)
        return [Candidate(r["id"], r["key"], r["body"], 1.0, [], row=r) for r in rows]

    def test_backfill_embeds_current_facts_first(self, mem, model):
        self.facts(mem)
        turns(mem, [BUS])
        fill = semantic.Backfill(mem.index, model)
        assert fill.step() == 6 and mem.index.fact_vector_count() == 6 and mem.index.vector_count() == 0
        assert fill.run() == 1 and mem.index.vector_count() == 1

    def test_the_pointers_take_the_fact_that_means_the_turn_first(self, mem, model):
        from bead.recall import pointers

        self.facts(mem)
        semantic.Backfill(mem.index, model).run()
        pool = self.pool(mem)
        assert [c.key for c in pool[:2]] == ["user/anna-bus", "user/anna-coffee"]  # BM25: the shorter first
        pending = rank.embed_query(mem.index, QUERY)
        assert [c.key for c in pointers.by_meaning(pool, mem.index, pending)[:2]] == ["user/anna-coffee", "user/anna-bus"]
        mem.index.semantic = False  # recall.semantic: false, or no extra: no query vector, BM25's order
        assert rank.embed_query(mem.index, QUERY) is None
        assert pointers.by_meaning(pool, mem.index, None) == pool

    def test_the_pointers_find_by_meaning_what_no_word_of_the_turn_finds(self, mem, model, monkeypatch):
        """MEANING_EXTRA: the conversation's project's facts nearest in meaning join the search's candidates, even
        where no word is shared (an empty pool); another project's never, and a fact written later once the
        indexer has stored its vector."""
        from bead.config import RecallSettings
        from bead.recall import pointers
        from bead.recall.gate import Recall

        ask = "where do I look when the site breaks for a customer in the UI?"
        mem.write("project/x/crash-reports", "Browser crashes are collected by Sentry under web-admin.", "project")
        mem.write("project/y/crash-reports", "Browser crashes are collected by Sentry under shop-web.", "project")
        for i, w in enumerate(["invoice numbering", "database backups", "release notes"]):
            mem.write(f"project/x/note-{i}", f"The {w} follow the usual checklist.", "project")
        semantic.Backfill(mem.index, model).run()
        assert "project/x/crash-reports" not in {r["key"] for r in mem.index.fact_candidates(ask, 20)}, "no shared word"
        got = pointers.choose(
            Recall(), set(), RecallSettings(), index=mem.index, pending=rank.embed_query(mem.index, ask), scope="project/x"
        )
        keys = [c.key for c in got]
        assert keys[0] == "project/x/crash-reports" and all(c.reason == pointers.BY_MEANING for c in got)
        assert "project/y/crash-reports" not in keys, "another project's fact is never pointed to"
        mem.write("project/x/frontend-errors", "Errors thrown in the web frontend show up in Sentry's web-admin.", "project")
        semantic.Backfill(mem.index, model).run()
        again = pointers.by_meaning([], mem.index, rank.embed_query(mem.index, ask), scope="project/x")
        assert {"project/x/frontend-errors", "project/x/crash-reports"} <= {c.key for c in again[:2]}, "a new fact's vector"
        monkeypatch.setattr(pointers, "MEANING_MIN_COSINE", 0.99)  # nothing is that near: the floor holds them all
        assert pointers.by_meaning([], mem.index, rank.embed_query(mem.index, ask), scope="project/x") == []
        monkeypatch.setattr(pointers, "MEANING_MIN_COSINE", 0.1)
        monkeypatch.setattr(pointers, "MEANING_EXTRA", 0)
        assert pointers.by_meaning([], mem.index, rank.embed_query(mem.index, ask), scope="project/x") == []

    def test_the_proxy_reads_every_fact_vector_again_only_with_time_to_spare(self, mem, model):
        """Reading the matrix again is tens of milliseconds at 10,000 facts: on the request path only with
        BUILD_MIN_S of the deadline left; meanwhile the last matrix serves (none the first time)."""
        from bead.recall import pointers

        q = model.embed(["where do I look when the site breaks for a customer in the UI?"])[0]
        mem.write("project/x/crash-reports", "Browser crashes are collected by Sentry under web-admin.", "project")
        semantic.Backfill(mem.index, model).run()
        short, ample = pointers.BUILD_MIN_S / 2, pointers.BUILD_MIN_S * 2
        assert pointers.meaning_extra(mem.index, q, "project/x", set(), left=short) == []
        first = [c.key for c, _ in pointers.meaning_extra(mem.index, q, "project/x", set(), left=ample)]
        assert first == ["project/x/crash-reports"]
        mem.write("project/x/frontend-errors", "Errors thrown in the web frontend show up in Sentry's web-admin.", "project")
        semantic.Backfill(mem.index, model).run()
        assert [c.key for c, _ in pointers.meaning_extra(mem.index, q, "project/x", set(), left=short)] == first
        again = {c.key for c, _ in pointers.meaning_extra(mem.index, q, "project/x", set(), left=ample)}
        assert again == {"project/x/crash-reports", "project/x/frontend-errors"}

    def test_a_turn_is_pointed_by_meaning_only_to_what_it_may_be_shown(self, mem, model):
        """Through the proxy's own recall step: the facts nearest the turn in meaning that no word finds are
        pointed to, of the conversation's project only; a dormant or a forgotten fact never, not even from a
        matrix read before it changed; a key already shown never, while the next nearest still is; a fact whose
        vector the indexer has not stored yet once it has. (A secret is sealed in the vault: it has no row.)"""
        from bead.config import parse
        from bead.conversation import identify
        from bead.core.recall import Recaller
        from bead.recall import pointers
        from bead.wire.anthropic import conversation_of

        def pointed(text: str) -> list[str]:
            data = {
                "model": "m",
                "max_tokens": 1,
                "system": "x\n - Primary working directory: /src/shop",
                "messages": [{"role": "user", "content": text}],
            }
            conv = conversation_of(data, {})
            ident = identify({}, conv, None)
            assert ident.project == "shop"
            cue = Recaller(parse("recall:\n  evidence_threshold: 50\n  pointers: 8\n  pointer_budget_tokens: 400\n")).recall_for(
                mem, conv, ident, set(), 5.0
            )
            return [i.rsplit("@v", 1)[0] for i in cue.pointers]

        def extra(**kw) -> list[str]:
            return [c.key for c, _ in pointers.meaning_extra(mem.index, q, "project/shop", set(), **kw)]

        ask = "where do I look when the site breaks for a customer in the UI?"
        q = model.embed([ask])[0]
        near = {
            "project/shop/crash-reports": "Browser crashes are collected by Sentry under web-admin.",
            "project/other/ui-failures": "Shopper-facing interface failures are tracked on the incident board.",
            "project/shop/old-breakages": "Frontend breakages reported by shoppers go to the bug tracker.",
            "project/shop/gone-storefront": "When the storefront page errors out, check the Rollbar dashboard.",
        }
        for key, body in near.items():
            mem.write(key, body, "project")
        mem.write("project/shop/invoice-numbers", "Invoice numbers follow the usual checklist.", "project")
        semantic.Backfill(mem.index, model).run()
        keys = pointed(ask)
        assert {"project/shop/crash-reports", "project/shop/old-breakages", "project/shop/gone-storefront"} <= set(keys)
        assert "project/other/ui-failures" not in keys, "another project's fact, near as it is, is never pointed to"
        assert "project/other/ui-failures" in [c.key for c, _ in pointers.meaning_extra(mem.index, q, "project/other", set())]
        old = mem.current("project/shop/old-breakages")
        assert old is not None and mem.set_status(old, "dormant")
        forget.apply(mem, forget.plan_target(mem, "project/shop/gone-storefront"))
        stale = extra(left=pointers.BUILD_MIN_S / 2)  # no time to read the matrix again: the last one serves
        assert "project/shop/crash-reports" in stale
        assert not {"project/shop/old-breakages", "project/shop/gone-storefront"} & set(stale), "each row read again"
        assert not {"project/shop/old-breakages", "project/shop/gone-storefront"} & set(pointed(ask))
        shown = extra(skip={"project/shop/crash-reports"})
        assert "project/shop/crash-reports" not in shown and shown, "a key shown is skipped, the next nearest is not"
        # In words of its own (a fact that shares a third of its words with one pointed before it is skipped as
        # saying nearly the same: pointers.SAME).
        mem.write("project/shop/frontend-errors", "Exceptions on shopper-facing pages land in the GlitchTip inbox.", "project")
        assert "project/shop/frontend-errors" not in pointed(ask), "no vector yet"
        semantic.Backfill(mem.index, model).run()
        assert "project/shop/frontend-errors" in pointed(ask)

    def test_the_pinned_block_takes_the_fact_that_means_the_opening_first(self, mem, model, monkeypatch):
        """The opening's meaning joins its BM25 relevance (standing.OPENING_MEANING): of two facts the opening
        matches, the one that answers it comes first; by BM25 alone the one that repeats its words did."""
        from bead.recall import standing

        mem.write("user/anna-coffee", "Every morning Anna has black coffee, two cups.", "user")
        mem.write("user/anna-bus", "Anna in the morning: the bus was late, Anna said; late this morning again.", "user")
        for i, w in enumerate(["lint", "deploy", "backup", "docs"]):
            mem.write(f"project/x/ticket-{i}", f"Ticket {i}: the {w} job failed on the build machine.", "project")
        semantic.Backfill(mem.index, model).run()
        opening = standing.Opening(QUERY, None, QUERY)

        def first() -> str:
            return standing.select(mem.index, "x", opening, budget_tokens=8).rows[0]["key"]

        assert first() == "user/anna-coffee"
        monkeypatch.setattr(standing, "OPENING_MEANING", 0.0)
        assert first() == "user/anna-bus"
        monkeypatch.setattr(standing, "OPENING_MEANING", 1.0)
        mem.index.semantic = False  # no extra: BM25 alone
        assert first() == "user/anna-bus"

    def test_a_question_asked_twice_is_embedded_once(self, mem, model, monkeypatch):
        """A conversation's first request asks the pinned block's question and then the pointers' (the same
        words): one vector, for a few seconds, whether it came or failed (a request never waits twice)."""
        first = rank.embed_query(mem.index, QUERY)
        assert first is not None and rank.embed_query(mem.index, QUERY) is first
        assert rank.wait_vector(first, wait=True) is not None
        assert rank.embed_query(mem.index, QUERY) is first
        monkeypatch.setattr(rank, "RECENT_S", 0.0)  # past it, asked anew
        assert rank.embed_query(mem.index, QUERY) is not first
        monkeypatch.setattr(rank, "RECENT_S", 60.0)
        mem.index.semantic_socket = mem.home.embed_socket  # nobody answers there
        failed = rank.embed_query(mem.index, BUS)
        assert failed is not None and rank.wait_vector(failed, wait=True) is None
        assert rank.embed_query(mem.index, BUS) is failed
        assert all(QUERY not in str(k) and BUS not in str(k) for k in rank._recent)  # digests, not the words

    def test_a_shared_question_is_given_up_only_by_its_last_holder(self, mem, model):
        """Two callers hold one pending vector: the first giving up does not take it from the second; a vector
        no one holds is not computed (cancelled before it starts)."""
        import threading

        gate = threading.Event()
        rank.embed_query(mem.index, "warm the pool")  # the pool exists
        blockers = [rank._query_pool.submit(gate.wait) for _ in range(2)]  # both workers busy: questions queue
        try:
            a = rank.embed_query(mem.index, QUERY)
            b = rank.embed_query(mem.index, QUERY)
            assert a is b
            rank.forget_vector(a)
            assert not a.cancelled()
            rank.forget_vector(b)
            assert a.cancelled()
            assert rank.embed_query(mem.index, QUERY) is not a  # a cancelled one is asked anew
        finally:
            gate.set()
            for f in blockers:
                f.result()

    def test_the_opening_and_the_pointers_ask_the_same_words(self):
        """The pinned block's question is the pointers' (bead.recall.pointers.question), so a first request
        computes one vector for both."""
        from bead.recall import pointers, standing
        from bead.recall.cues import extract
        from bead.wire.anthropic import conversation_of

        words = "x" * 300 + " What does Anna drink in the morning?"
        conv = conversation_of({"model": "m", "messages": [{"role": "user", "content": words}]}, {})
        said = standing.opening_of(conv).said
        assert said == pointers.question(extract(conv)) and said.endswith("morning?") and len(said) == pointers.QUERY_CHARS

    def test_cosines_that_barely_differ_are_not_made_a_full_point(self, mem, model, monkeypatch):
        """The meaning's scale has a floor (MEANING_SPREAD): two facts whose cosines differ by float noise get
        almost nothing, not the whole OPENING_MEANING; equal ones get nothing."""
        import numpy as np

        from bead.recall import standing

        mem.write("user/a", "alpha one", "user")
        mem.write("user/b", "beta two", "user")
        q = np.zeros(semantic.DIM, dtype=np.float32)
        q[0] = 1.0
        ids = ["user/a@v1", "user/b@v1"]

        def with_cosines(x: float, y: float) -> dict[str, float]:
            rows = []
            for i, c in zip(ids, (x, y), strict=True):
                v = np.zeros(semantic.DIM, dtype=np.float32)
                v[0], v[1] = c, (1 - c * c) ** 0.5
                rows.append((i, v.astype(np.float16).tobytes()))
            mem.index._conn.executemany("INSERT OR REPLACE INTO fact_vec(id, vec) VALUES (?, ?)", rows)
            done = rank._query_pool.submit(lambda: q) if rank._query_pool else None
            return standing._meaning(mem.index, done, ids, None)

        rank.embed_query(mem.index, "warm the pool")
        got = with_cosines(0.400, 0.401)
        assert set(got) == {"user/b@v1"} and got["user/b@v1"] < 0.05
        assert with_cosines(0.5, 0.5) == {}
        assert with_cosines(0.2, 0.6)["user/b@v1"] == pytest.approx(1.0, abs=0.01)

    def test_the_proxy_orders_by_meaning_with_the_indexers_model(self, mem, model, tmp_path):
        """The proxy loads no model (about 200 MB): its question's vector comes from the indexer's QueryServer, and
        orders the pointers as the model in-process does; with no indexer answering, the search's order."""
        from bead.recall import pointers

        self.facts(mem)
        semantic.Backfill(mem.index, model).run()
        pool = self.pool(mem)
        mem.index.semantic_socket = mem.home.embed_socket
        assert pointers.by_meaning(pool, mem.index, rank.embed_query(mem.index, QUERY)) == pool  # nobody answers
        server = semantic.QueryServer(model, mem.home.embed_socket)
        assert server.start()
        rank._recent.clear()  # the unanswered question is remembered for a few seconds (RECENT_S): ask anew
        try:
            assert oct(mem.home.embed_socket.stat().st_mode & 0o777) == "0o600"
            got = pointers.by_meaning(pool, mem.index, rank.embed_query(mem.index, QUERY))
            assert [c.key for c in got[:2]] == ["user/anna-coffee", "user/anna-bus"]
        finally:
            server.close()
        assert not mem.home.embed_socket.exists()

    def test_the_query_server_answers_as_the_model_and_survives_odd_peers(self, mem, model):
        import socket

        server = semantic.QueryServer(model, mem.home.embed_socket)
        assert server.start()
        try:
            path = mem.home.embed_socket
            for peer in (b"\xff\xff\xff\xff" + b"x" * 10, b"\x00\x00", b"\x00\x00\x00\x05\xff\xfe"):  # too long, cut, not UTF-8
                with socket.socket(socket.AF_UNIX) as c:
                    c.settimeout(10)
                    c.connect(str(path))
                    c.sendall(peer)
                    c.shutdown(socket.SHUT_WR)
                    c.recv(4096)  # an answer of no vector, or a closed connection
            got = semantic.ask(path, QUERY, timeout=10)
            assert got is not None and float(abs(got - model.embed([QUERY])[0]).max()) < 1e-5
        finally:
            server.close()

    def test_the_query_server_touches_nothing_through_a_link_and_asks_only_its_own_socket(self, mem, model, tmp_path):
        """A `.run` planted as a link out of the home: the server does not bind there. A socket planted at the
        path (another process's): the question is never sent to it. A second indexer leaves the first's alone."""
        import socket

        outside = tmp_path / "outside"
        outside.mkdir()
        run = mem.home.embed_socket.parent
        run.symlink_to(outside)
        server = semantic.QueryServer(model, mem.home.embed_socket)
        assert not server.start() and list(outside.iterdir()) == []
        run.unlink()
        run.mkdir(mode=0o700)
        foreign = socket.socket(socket.AF_UNIX)
        foreign.bind(str(tmp_path / "foreign.sock"))
        foreign.listen(1)
        foreign.setblocking(False)
        try:
            mem.home.embed_socket.symlink_to(tmp_path / "foreign.sock")
            assert semantic.ask(mem.home.embed_socket, QUERY, timeout=5) is None
            with pytest.raises(BlockingIOError):
                foreign.accept()  # nobody connected: the prompt went nowhere
        finally:
            foreign.close()
        mem.home.embed_socket.unlink()
        first, second = semantic.QueryServer(model, mem.home.embed_socket), semantic.QueryServer(model, mem.home.embed_socket)
        assert first.start()
        try:
            assert not second.start()  # the first answers there
            second.close()
            assert semantic.ask(mem.home.embed_socket, QUERY, timeout=10) is not None
        finally:
            first.close()

    def test_a_run_folder_swapped_for_a_link_after_its_check_leads_nowhere(self, mem, model, tmp_path, monkeypatch):
        """`.run` replaced by a link out of the home right after the server checked it (another process racing
        it): the socket is made, its mode set and at the end removed in the folder that was checked, and nothing
        is made or changed where the link points."""
        outside = tmp_path / "outside"
        outside.mkdir()
        run = mem.home.embed_socket.parent
        moved = run.parent / "run-checked"
        real_fchmod, swapped = os.fchmod, []

        def fchmod_then_swap(fd, mode):  # the server's check of the folder, then the swap
            real_fchmod(fd, mode)
            if not swapped:
                swapped.append(True)
                run.rename(moved)
                run.symlink_to(outside)

        monkeypatch.setattr(os, "fchmod", fchmod_then_swap)
        server = semantic.QueryServer(model, mem.home.embed_socket)
        started = server.start()
        try:
            assert swapped and list(outside.iterdir()) == []
            assert started and stat.S_ISSOCK((moved / "embed.sock").lstat().st_mode)
            assert oct((moved / "embed.sock").lstat().st_mode & 0o777) == "0o600"
        finally:
            server.close()
        assert list(outside.iterdir()) == [] and not (moved / "embed.sock").exists()

    def test_without_a_no_follow_chmod_the_socket_is_still_set_0600_and_served(self, mem, model, monkeypatch):
        """glibc before 2.32 (Debian 11, Ubuntu 20.04, RHEL 8) has no chmod that refuses a link, and Python says
        so with a ValueError: the server checks that the name is still the socket it bound and sets it, instead of
        giving up (a review found the indexer answered no question there)."""
        real_chmod = os.chmod

        def old_glibc_chmod(path, mode, *, dir_fd=None, follow_symlinks=True):
            if not follow_symlinks and dir_fd is not None:
                raise ValueError("chmod: cannot use dir_fd and follow_symlinks together")
            return real_chmod(path, mode, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

        monkeypatch.setattr(os, "chmod", old_glibc_chmod)
        server = semantic.QueryServer(model, mem.home.embed_socket)
        assert server.start()
        try:
            assert oct(mem.home.embed_socket.lstat().st_mode & 0o777) == "0o600"
            assert semantic.ask(mem.home.embed_socket, QUERY, timeout=10) is not None
        finally:
            server.close()

    def test_a_socket_path_too_long_to_reach_starts_no_server(self, model, tmp_path):
        """The server binds through its folder's descriptor, which any path fits, but askers connect by the path:
        a path longer than a socket's address holds starts nothing (and says so) rather than a server no one
        reaches."""
        home = tmp_path / ("h" * 120)
        path = home / ".run" / "embed.sock"
        server = semantic.QueryServer(model, path, home)
        assert not server.start()
        assert not path.exists()

    def test_a_facts_vector_goes_with_its_row_and_with_a_changed_text(self, mem, model):
        self.facts(mem)
        semantic.Backfill(mem.index, model).run()
        forget.apply(mem, forget.plan_target(mem, "user/anna-coffee"))
        assert not mem.index.fact_vectors(["user/anna-coffee@v1"]) and mem.index.fact_vector_count() == 5
        f = mem.home.fact_dir("user/anna-bus") / "v1.md"
        f.write_text(f.read_text().replace("the bus was late", "the tram was early"))
        from bead.index.rebuild import sync_key

        sync_key(mem.index, mem.facts, "user/anna-bus")  # what the indexer does with a hand edit
        assert not mem.index.fact_vectors(["user/anna-bus@v1"])
        assert semantic.Backfill(mem.index, model).run() == 1

    def test_a_vector_read_before_the_text_changed_is_not_stored(self, mem, model):
        """The backfill read a fact, then its text changed (a hand edit; a forget and a new write under the same id)
        while the model ran: the old text's vector must not be stored for the new text."""
        mem.write("user/door", "Front door code is 4471, ring twice.", "user")
        built = mem.index.built_at()
        (row,) = mem.index.facts_unembedded(10)
        forget.apply(mem, forget.plan_target(mem, "user/door"))
        mem.write("user/door", "The door is painted green.", "user")
        (vec,) = model.embed([semantic.fact_text(row["key"], row["body"])])
        assert mem.index.put_fact_vectors([(row["id"], model.blob(vec), row["key"], row["body"])], built) == 0
        assert not mem.index.fact_vectors(["user/door@v1"])
        assert semantic.Backfill(mem.index, model).run() == 1  # the new text gets its own

    def test_the_search_boosts_stand_where_meaning_says_nothing(self, mem, model):
        """by_meaning normalises the search's own score (BM25 with the scope and person's-word boosts), not the bare
        BM25: candidates that all score the same cosine keep the boosted order, even where it reverses BM25's."""
        from bead.recall import pointers
        from bead.recall.gate import Candidate

        self.facts(mem)
        semantic.Backfill(mem.index, model).run()
        by_bm25 = self.pool(mem)
        pool = [Candidate(c.id, c.key, c.body, 1.0, [], row={**c.row, "search_score": float(i)}) for i, c in enumerate(by_bm25)]
        blob = model.blob(model.embed(["the same text"])[0])
        with mem.index.write_tx():
            mem.index._conn.executemany("UPDATE fact_vec SET vec = ? WHERE id = ?", [(blob, c.id) for c in pool])
        pending = rank.embed_query(mem.index, QUERY)
        assert [c.id for c in pointers.by_meaning(pool, mem.index, pending)] == [c.id for c in reversed(by_bm25)]


def test_a_grid_that_needs_the_model_refuses_to_run_without_it(tmp_path, monkeypatch):
    """Its figures would be BM25's under a label that says meaning."""
    from bead.errors import BeadError
    from bead.evals import cv

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "settings:\n  - name: words\n    constants: {bead.recall.pointers.SEMANTIC_ALPHA: 0.0}\n"
        "  - name: meaning\n    constants: {bead.recall.pointers.SEMANTIC_ALPHA: 2.0}\n"
    )
    assert len(cv.load_grid(str(grid))) == 2
    monkeypatch.setenv("BEAD_SEMANTIC", "0")
    with pytest.raises(BeadError, match="off here"):
        cv.load_grid(str(grid))


def test_the_cue_gates_bag_of_terms_is_searched_by_words_alone(mem, model, monkeypatch):
    """The gate searches raw turns with the cue's strong terms, sorted: no sentence, and the rescoring was chosen on
    questions, so it stays BM25 (one embedding per turn, the pointers' question, not two)."""
    from bead.config import Config
    from bead.conversation import identify
    from bead.core.recall import Recaller
    from bead.wire.anthropic import conversation_of

    turns(mem, [BUS, COFFEE, *FILLER], session="old")
    semantic.Backfill(mem.index, model).run()
    assert [h.text for h in rank.search_raw(mem.index, QUERY, by_meaning=False)][:2] == [BUS, COFFEE]
    asked: list[str] = []
    real = rank.embed_query
    monkeypatch.setattr(rank, "embed_query", lambda index, text: asked.append(text) or real(index, text))
    data = {
        "model": "m",
        "max_tokens": 5,
        "system": "You help.",
        "messages": [{"role": "user", "content": "What did Anna drink every morning, do you remember?"}],
    }
    conv = conversation_of(data, {})
    Recaller(Config()).recall_for(mem, conv, identify({}, conv, None), set(), 5.0)
    assert asked == ["What did Anna drink every morning, do you remember?"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps")
def test_the_proxy_process_loads_no_model(start_proxy, upstream, mem, model):
    """The embedding model stays out of the proxy's process (about 200 MB each): a request with pointers to order,
    bead[semantic] on, and no onnxruntime mapped in the proxy afterwards."""
    import json
    import urllib.request

    TestFactVectors().facts(mem)
    semantic.Backfill(mem.index, model).run()
    url = start_proxy()
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": QUERY}]}
    req = urllib.request.Request(
        url + "/v1/messages", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
    assert eventually(lambda: len(upstream.requests) == 1)
    (proc,) = start_proxy.procs
    # The process started and its workers (with more than one, a worker serves the request): each a process whose
    # parent it is, as /proc/PID/stat says (its fourth field, after the command name in parentheses).
    pids = [str(proc.pid)]
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and (d / "stat").read_text().rpartition(")")[2].split()[1] == str(proc.pid):
                pids.append(d.name)
        except OSError:
            continue
    for pid in pids:
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "libonnxruntime" not in maps and "onnxruntime" not in maps, pid


def test_a_hung_indexer_costs_a_first_request_one_wait_and_no_memory(mem, model):
    """An indexer that takes every question and never answers: the first request's pinned block and pointers ask
    one question between them and wait for it once (QUERY_VECTOR_WAIT_S from when it was asked, and on the pinned
    block's side at most half of what is left), so with 0.4 s of the deadline left both the pinned block and the
    cue block still go out (before, the two waits took 0.5 s and the cue block was dropped, or with less left the
    pinned block too)."""
    import json
    import socket
    import threading

    from bead.config import parse
    from bead.proxy.engine import Engine

    mem.write("user/anna-coffee", "Every morning Anna has black coffee, two cups.", "user")
    mem.write("user/anna-bus", "Anna in the morning: the bus was late, Anna said; late this morning again.", "user")
    for i, w in enumerate(["lint", "deploy", "backup", "docs"]):
        mem.write(f"project/shop/ticket-{i}", f"Ticket {i}: the {w} job failed on the build machine.", "project")
    said = "Anna drinks black coffee in the morning, remember that for the shop order."
    mem.append_turns("older-session", [("user", said, T0, None), ("assistant", "Noted: Anna, black coffee.", T0, None)])
    semantic.Backfill(mem.index, model).run()
    path = mem.home.embed_socket
    path.parent.mkdir(mode=0o700, exist_ok=True)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    os.chmod(path, 0o600)
    srv.listen(16)
    asked: list[socket.socket] = []
    stop = threading.Event()

    def take() -> None:  # accept and read every question, answer none
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            asked.append(conn)

    taker = threading.Thread(target=take, daemon=True)
    taker.start()
    engine = Engine(mem.home, parse("owner: tester\n"))
    try:
        engine.recaller.fact_stats(engine.memory(), lambda t: engine.memory().index.raw_doc_freq(t))  # warm
        system = "You help.\n - Primary working directory: /home/dev/src/shop"
        body = {"model": "m", "max_tokens": 5, "system": system, "messages": [{"role": "user", "content": QUERY}]}
        prep = engine.prepare(json.dumps(body).encode(), {"x-bead-session": "s1"}, deadline=time.monotonic() + 0.4)
        assert prep.pinned_text and "user/anna-coffee" in prep.pinned_text
        assert prep.blocks, "the cue block (the earlier session's excerpt) went out"
        assert not [k for k in engine.counters if k.startswith("error")], dict(engine.counters)
        assert len(asked) == 1
    finally:
        stop.set()
        taker.join()
        srv.close()
        for c in asked:
            c.close()
        engine.close()


def test_the_embedder_never_leaves_an_empty_index_that_reads_as_built(bead_home):
    """index.db deleted under the indexer: its vector thread opened the path again, which made an empty index whose
    schema read as built, so no process rebuilt it and every search found nothing (a review). It lets the worker's
    Memory build it, and opens it only once built."""
    import threading

    from bead.indexer.watch import Indexer

    home = Home(bead_home).ensure()
    with Memory(home, Config(owner="t")) as writer:
        writer.write("user/pet", "The walrus is called Wally", "user")
        turns(writer, [BUS, COFFEE])
    served = Memory(home, Config(owner="t"))
    idx = Indexer(served)
    thread = threading.Thread(target=idx.embed, daemon=True)
    thread.start()
    try:
        assert eventually(lambda: served.index.vector_count() == 2, 60)
        for p in home.root.glob("index.db*"):
            p.unlink()
        idx.embed_wake.set()
        assert eventually(lambda: idx._full, 30), "the embedder asks the worker to take the new file"
        with Memory(home, Config(owner="t")) as cli:
            assert [h.id for h in rank.search_facts(cli.index, "walrus")] == ["user/pet@v1"]
    finally:
        idx.stop()
        thread.join(10)
        served.close()
