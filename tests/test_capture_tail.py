"""The proxy's capture off the next request's path (#27): a conversation's next request never waits for the
previous request's secret scan, append and index; the raw append is the commit, so a capture that stops between
recording its batch and recording it done neither loses nor doubles a turn."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import eventually
from fakes import message_events, sse

from bead.config import Config, parse
from bead.core.memory import Memory
from bead.core.state import ConversationState
from bead.paths import Home
from bead.proxy.engine import Engine
from bead.store import rawlog

HEADERS = {"x-bead-session": "tail"}
# The log after a stopped capture and the next request: each turn once, in order.
ONCE = [("user", "which database does the shop use?"), ("assistant", "Postgres 16."), ("user", "thanks")]


def body(messages) -> bytes:
    system = "You help.\n - Primary working directory: /home/dev/src/shop"
    return json.dumps({"model": "m", "max_tokens": 5, "system": system, "messages": messages}).encode()


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


@pytest.fixture
def engine(bead_home):
    eng = Engine(Home(bead_home).ensure(), parse("owner: t\n"))
    with Memory(eng.home, eng.config) as m:
        m.write("project/shop/db", "The shop's database is Postgres 16 on db.internal", "project")
    yield eng
    eng.close()


def logged(engine, session: str = "tail") -> list[tuple[str, str]]:
    with Memory(engine.home, engine.config) as m:
        path = m.raw.find(session)
        return [] if path is None else [(t.role, t.text) for t in m.raw.read(path)]


def stop_at(monkeypatch, owner, name: str, at: int = 1) -> None:
    """``owner.name`` raises on its ``at``-th call, as if the process stopped there; every other call runs."""
    real = getattr(owner, name)
    calls = {"n": 0}

    def stopped(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            raise OSError("the process stopped here")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, stopped)


def test_the_next_request_does_not_wait_for_the_previous_capture(engine, monkeypatch):
    """A slow secret scan (a stand-in that blocks until released) holds the first request's capture; the
    second request of the same conversation is prepared meanwhile, with its memory, not failed open past its
    deadline; then both captures land in order."""
    entered, release = threading.Event(), threading.Event()
    real = rawlog.redact_messages

    def slow_scan(groups: list[list[str]], known=None):
        if any("SLOWSCAN" in t for texts in groups for t in texts):
            entered.set()
            release.wait(60)
        return real(groups, known)

    monkeypatch.setattr(rawlog, "redact_messages", slow_scan)
    first = [user("SLOWSCAN which database does the shop use?")]
    p1 = engine.prepare(body(first), HEADERS)
    job = engine.forwarded(p1)
    assert job is not None and entered.wait(30)  # the capture is inside its scan, and stays there
    second = [*first, assistant("Postgres."), user("and which version of postgres is it?")]
    p2 = engine.prepare(body(second), HEADERS)
    try:
        assert not release.is_set() and not job.done()  # prepared while the first capture still scans
        assert p2.ident is not None and "deadline" not in p2.trace["errors"], p2.trace  # not failed open
        # no partial wait either: under the product's own deadline (the tests give an engine ten seconds)
        assert p2.trace["pending_ms"] < Config().proxy.recall_deadline_ms
    finally:
        release.set()
    job.result(30)
    engine.forwarded(p2).result(30)
    assert logged(engine) == [
        ("user", "SLOWSCAN which database does the shop use?"),
        ("assistant", "Postgres."),
        ("user", "and which version of postgres is it?"),
    ]


@pytest.mark.parametrize("where", ["request", "answer"])
def test_a_capture_stopped_after_its_append_doubles_nothing(engine, monkeypatch, where):
    """The turns were appended but "captured" was never recorded (the process stopped in between): the next
    capture finds the batch in the raw log and does not append those turns again."""
    stop_at(
        monkeypatch, ConversationState, "set_captured", 1 if where == "request" else 2
    )  # the request's record, or the answer's
    first = [user("which database does the shop use?")]
    p1 = engine.prepare(body(first), HEADERS)
    engine.forwarded(p1).result(30)
    if where == "answer":  # else the answer is captured from the next request's messages
        done = engine.finished(p1, sse(message_events("Postgres 16.")), "text/event-stream", None, False)
        assert done is not None
        done.result(30)
    assert engine.counters["error.capture"] == 1  # the stop was reported, and the log has the turns once
    second = [*first, assistant("Postgres 16."), user("thanks")]
    engine.forwarded(engine.prepare(body(second), HEADERS)).result(30)
    assert logged(engine) == ONCE


def test_a_capture_stopped_before_its_append_loses_nothing(engine, monkeypatch):
    """The batch was recorded but the append never happened: the next request's capture appends those turns."""
    stop_at(monkeypatch, rawlog.RawLog, "append_many")
    first = [user("which database does the shop use?")]
    engine.forwarded(engine.prepare(body(first), HEADERS)).result(30)
    assert eventually(lambda: engine.counters["error.capture"] == 1) and logged(engine) == []
    second = [*first, assistant("Postgres 16."), user("thanks")]
    engine.forwarded(engine.prepare(body(second), HEADERS)).result(30)
    assert logged(engine) == ONCE


def answer(engine, prep, text: str, truncated: bool = False) -> None:
    done = engine.finished(prep, sse(message_events(text)), "text/event-stream", None, truncated)
    assert done is not None
    done.result(30)


def test_two_proxies_on_one_home_never_capture_a_turn_twice(bead_home, monkeypatch):
    """A capture under way in one proxy (held in its scan) is no stopped capture to the other, which gets the
    same request (a retry that reached the other process): the capture lock makes it wait, then it finds the turn
    captured."""
    home = Home(bead_home).ensure()
    a, b = Engine(home, parse("owner: t\n")), Engine(home, parse("owner: t\n"))
    entered, release, b_waits = threading.Event(), threading.Event(), threading.Event()
    real = rawlog.redact_messages

    def slow_scan(groups: list[list[str]], known=None):
        if any("SLOWSCAN" in t for texts in groups for t in texts) and not release.is_set():
            entered.set()
            release.wait(60)
        return real(groups, known)

    monkeypatch.setattr(rawlog, "redact_messages", slow_scan)
    real_lock = b.conversations.capture_lock

    def b_lock(conversation_id: str):
        b_waits.set()  # b's capture is at the lock a's capture holds
        return real_lock(conversation_id)

    monkeypatch.setattr(b.conversations, "capture_lock", b_lock)
    first = [user("SLOWSCAN which database does the shop use?")]
    pa, pb = a.prepare(body(first), HEADERS), b.prepare(body(first), HEADERS)
    ja = a.forwarded(pa)
    assert entered.wait(30)
    jb = b.forwarded(pb)
    assert b_waits.wait(30)
    release.set()
    ja.result(30)
    jb.result(30)
    a.close()
    b.close()
    assert logged(a) == [("user", "SLOWSCAN which database does the shop use?")]


def test_a_remember_a_stopped_capture_never_ran_runs_with_the_next_capture(engine, monkeypatch):
    """The turn was appended, then the process stopped before "remember": the retry's capture finds the batch and
    runs the "remember" it missed (the turn is still not logged twice)."""
    stop_at(monkeypatch, Engine, "_remember")
    first = [user("remember that the staging database is on port 6543.")]
    engine.forwarded(engine.prepare(body(first), HEADERS)).result(30)

    def noted() -> list[str]:
        with Memory(engine.home, engine.config) as m:
            return [kv.current.body for kv in m.facts.scan()[0] if kv.current and "6543" in kv.current.body]

    assert noted() == []  # not yet
    engine.forwarded(engine.prepare(body(first), HEADERS)).result(30)  # the client's retry
    assert len(noted()) == 1
    assert logged(engine) == [("user", "remember that the staging database is on port 6543.")]


def test_an_answer_after_a_failed_request_capture_brings_the_request_first(engine, monkeypatch):
    """The request's append failed; its answer's capture logs the request's turns first, then the answer."""
    stop_at(monkeypatch, rawlog.RawLog, "append_many")
    first = [user("which database does the shop use?")]
    p1 = engine.prepare(body(first), HEADERS)
    engine.forwarded(p1).result(30)
    answer(engine, p1, "Postgres 16.")
    second = [*first, assistant("Postgres 16."), user("thanks")]
    engine.forwarded(engine.prepare(body(second), HEADERS)).result(30)
    assert logged(engine) == ONCE


def test_a_late_stream_end_never_logs_an_earlier_answer_again(engine):
    """Request N+1 (which carries answer N) and its partial answer are logged before answer N's stream end is
    reported: answer N is not logged a second time, out of order."""
    first = [user("q1")]
    p1 = engine.prepare(body(first), HEADERS)
    engine.forwarded(p1)
    second = [*first, assistant("a1"), user("q2")]
    p2 = engine.prepare(body(second), HEADERS)
    engine.forwarded(p2)
    answer(engine, p2, "a2 partial", truncated=True)
    answer(engine, p1, "a1")
    assert logged(engine) == [("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2 partial")]


def test_two_proxies_keep_a_conversations_order_and_inject_a_fact_once(bead_home):
    """What several proxy processes on one home would share (#27's workers): the conversation's requests go to
    either, alternately; a fact injected by one is never injected again by the other, and the raw log keeps the
    conversation's order."""
    home = Home(bead_home).ensure()
    a, b = Engine(home, parse("owner: t\n")), Engine(home, parse("owner: t\n"))
    with Memory(home, a.config) as m:
        m.write("project/shop/db", "The shop's database is Postgres 16 on db.internal", "project")
    msgs = [user("which postgres database host does the shop use?")]
    shown: list[str] = []
    for i, eng in enumerate([a, b, a, b]):
        prep = eng.prepare(body(msgs), HEADERS)
        assert prep.ident is not None, prep.trace
        shown += [*prep.pinned_new, *prep.injected]
        eng.forwarded(prep).result(30)
        answer(eng, prep, f"answer {i}: db.internal")
        msgs = [*msgs, assistant(f"answer {i}: db.internal"), user(f"and the postgres database host again, step {i}?")]
    a.close()
    b.close()
    assert shown.count("project/shop/db@v1") == 1, shown  # pinned or recalled once, whichever process served it
    said = [text for role, text in logged(a) if role == "user"]
    assert said == [
        "which postgres database host does the shop use?",
        *[f"and the postgres database host again, step {i}?" for i in range(3)],
    ]
    assert [text for role, text in logged(a) if role == "assistant"] == [f"answer {i}: db.internal" for i in range(4)]
