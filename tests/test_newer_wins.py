"""Newer wins in raw history: of two retrieved turns that state a value for the same thing, the newer comes first
and the older is labelled in what the agent sees."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from linear import assert_linear

from bead.core import query
from bead.recall import rank, render
from bead.recall.rank import search_raw

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def seed(mem):
    mem.append_turns("s-old", [("user", "The dashboard API response time is 400ms on average, measured with locust.", T0, None)])
    mem.append_turns("s-mid", [("user", "I moved the CI runners to the new cluster today.", T0 + timedelta(days=3), None)])
    mem.append_turns(
        "s-new",
        [
            (
                "user",
                "After the caching change the dashboard API average response time is down to 250ms.",
                T0 + timedelta(days=9),
                None,
            )
        ],
    )


def test_the_newer_value_ranks_first_and_the_older_is_labelled(mem):
    seed(mem)
    before = mem.index.raw_candidates("What is the average response time of the dashboard API measured with locust?", 10)
    assert before[0]["session"] == "s-old"  # BM25 alone puts the stale value first (it shares more words)
    hits = search_raw(mem.index, "What is the average response time of the dashboard API measured with locust?")
    assert [h.row["session"] for h in hits][:2] == ["s-new", "s-old"]
    old = hits[1].row
    assert old["newer_id"] == hits[0].id and old["newer_at"].startswith("2026-03-10")
    line = render.raw_line(old, old["text"])
    assert "[older: the excerpt of 2026-03-10" in line
    assert "newer" not in hits[0].row


def test_the_recall_tool_says_which_excerpt_is_older(mem):
    seed(mem)
    found = query.recall(mem, "What is the average response time of the dashboard API measured with locust?")
    assert [e.session for e in found.excerpts][:2] == ["s-new", "s-old"]
    assert found.excerpts[1].newer == found.excerpts[0].id
    assert "[older:" in (found.text or "")


def test_only_questions_that_ask_for_a_value(mem):
    seed(mem)
    hits = search_raw(mem.index, "dashboard API response time measured with locust")
    assert hits[0].row["session"] == "s-old" and "newer_at" not in hits[0].row


def test_turns_without_a_number_are_not_restatements(mem):
    mem.append_turns("a", [("user", "The deploy script lives in ops/deploy.sh and runs on Fridays.", T0, None)])
    mem.append_turns("b", [("user", "Where does the deploy script live? I forgot.", T0 + timedelta(days=1), None)])
    hits = search_raw(mem.index, "Where is the deploy script and when does it run?")
    assert all("newer_at" not in h.row for h in hits)


def test_value_question_pattern_is_linear():
    assert_linear(rank.VALUE_QUESTION.search, lambda n: " " * (n // 5) + "how many" * (n // 10), 500_000)
