"""Responses API chains (previous_response_id, no session header) as one conversation: the engine's mapping and the
reader of an answer's id, against what an upstream may send (issue #26)."""

from __future__ import annotations

import gzip
import json
import threading
import time

from fakes import Reply, openai_sse, responses_events

from bead.config import parse
from bead.core.memory import Memory
from bead.paths import Home
from bead.proxy.engine import Engine
from bead.wire import formats, openai

SYSTEM = "You are a coding agent.\nWorking directory: /tmp/proj-x"


def step(text: str, prev: str | None = None) -> bytes:
    data = {"model": "gpt-test", "instructions": SYSTEM, "input": [{"role": "user", "content": text}]}
    if prev:
        data["previous_response_id"] = prev
    return json.dumps(data).encode()


def answer(request: bytes, text: str) -> tuple[str, list[bytes]]:
    events = responses_events(Reply(text=text), json.loads(request))
    return events[0]["response"]["id"], openai_sse(events, True)


class TestSniffer:
    """The relay reads an answer's id on the event loop: each byte once, the first event only, never raising."""

    def test_the_first_event_names_it_even_split_across_chunks(self):
        rid, chunks = answer(step("hi"), "hello")
        sniff = openai.ResponseIdSniffer()
        for b in b"".join(chunks):
            sniff.feed(bytes([b]))  # one byte at a time: the blank line straddles chunks
            if sniff.done:
                break
        assert sniff.found == rid

    def test_many_tiny_events_before_it_end_the_sniffing_at_the_first(self):
        sniff = openai.ResponseIdSniffer()
        t0 = time.perf_counter()
        for _ in range(6000):
            sniff.feed(b"data: {}\n\n")
        assert sniff.done and sniff.found is None
        assert time.perf_counter() - t0 < 5  # linear: it stopped looking at the first event

    def test_hostile_bytes_never_raise(self):
        for first in (b"data: " + b"[" * 5000 + b"\n\n", b"data: \xff\xfe\n\n", b'data: {"response": {"id": 7}}\n\n'):
            sniff = openai.ResponseIdSniffer()
            sniff.feed(first)
            assert sniff.done and sniff.found is None
        deep = openai.ResponseIdSniffer()
        deep.feed(b"{" + b'"a":[' * 3000)
        assert deep.end() is None
        whole = openai.ResponseIdSniffer()
        whole.feed(b'{"object": "response", "id": "resp_json1", "output": []}')
        assert whole.end() == "resp_json1"

    def test_a_compressed_answer_names_it_to_the_capture(self):
        rid, chunks = answer(step("hi"), "hello")
        collector = openai.RESPONSES.collector("text/event-stream", "gzip")
        collector.feed(gzip.compress(b"".join(chunks)))
        collector.result(1)
        assert collector.response_id == rid


def test_an_id_two_answers_claimed_joins_neither(bead_home):
    """An upstream that reuses ids (as this suite's fake once did) must not send one conversation's next step into
    another's session or project."""
    engine = Engine(Home(bead_home).ensure(), parse("owner: t\n"))
    a = engine.prepare(step("alpha step one"), {}, wire=formats.by_name("responses").wire)
    b = engine.prepare(step("beta step one"), {}, wire=formats.by_name("responses").wire)
    engine.chained(a, "resp_same")
    engine.chained(b, "resp_same")
    nxt = engine.prepare(step("alpha step two", "resp_same"), {}, wire=formats.by_name("responses").wire)
    assert nxt.ident.session not in (a.ident.session, b.ident.session)


def test_a_continuation_waits_for_the_answer_it_continues(bead_home):
    """The client may send the next step the moment it reads the answer's last event, before the stream closes:
    its user turn still lands after that answer in the raw log."""
    engine = Engine(Home(bead_home).ensure(), parse("owner: t\n"))
    responses = formats.by_name("responses").wire
    first = step("why is the checkout test flaky?")
    p1 = engine.prepare(first, {}, wire=responses)
    engine.forwarded(p1)
    rid, chunks = answer(first, "because of xdist")
    engine.chained(p1, rid)  # the relay read response.created
    # Until the stream closes, the continuation waits (here past its deadline: it fails open, nothing captured).
    early = engine.prepare(step("and how do I fix it?", rid), {}, deadline=time.monotonic() + 0.3, wire=responses)
    assert early.ident is None and early.body == step("and how do I fix it?", rid)
    out: dict = {}

    def second() -> None:
        out["p2"] = engine.prepare(step("and how do I fix it?", rid), {}, wire=responses)
        engine.forwarded(out["p2"])

    t = threading.Thread(target=second)
    t.start()
    engine.finished(p1, chunks, "text/event-stream", None, False)  # the stream closes
    t.join(30)
    p2 = out["p2"]
    engine.drain(30)
    assert p2.ident.session == p1.ident.session
    with Memory(engine.home, engine.config) as m:
        got = [(x.role, x.text) for x in m.raw.read(m.raw.find(p1.ident.session))]
    assert got == [
        ("user", "why is the checkout test flaky?"),
        ("assistant", "because of xdist"),
        ("user", "and how do I fix it?"),
    ]


def two_workers(home: Home) -> tuple[Engine, Engine]:
    """Two engines on one home sharing a health board, as two proxy workers are (proxy.workers: 2)."""
    from bead.proxy.workers import Board

    board = Board(2)
    a, b = Engine(home, parse("owner: t\n")), Engine(home, parse("owner: t\n"))
    a.share(board, 0)
    b.share(board, 1)
    return a, b


def test_a_chain_continued_in_another_worker_is_the_same_conversation(bead_home):
    """proxy.workers > 1: the next step of a Responses chain may come to another worker, which finds the chain in
    the store; its turn waits (off the request path) for the first worker to log the answer it continues, and a
    fact the first step got is not injected again."""
    home = Home(bead_home).ensure()
    with Memory(home, parse("owner: t\n")) as m:
        m.write("project/proj-x/flaky", "The checkout test is flaky under pytest-xdist: run it with -p no:xdist", "project")
    a, b = two_workers(home)
    responses = formats.by_name("responses").wire
    first = step("why is the checkout test flaky under xdist?")
    p1 = a.prepare(first, {}, wire=responses)
    a.forwarded(p1).result(30)
    rid, chunks = answer(first, "because of xdist")
    a.chained(p1, rid)
    shown_first = {*p1.pinned_new, *p1.injected}
    assert "project/proj-x/flaky@v1" in shown_first, p1.trace  # the first step got the fact
    # The second step comes to the other worker before the first worker has logged its answer.
    p2 = b.prepare(step("and why is the checkout test flaky under xdist again?", rid), {}, wire=responses)
    assert p2.ident is not None and p2.ident.session == p1.ident.session and p2.after is not None
    assert "project/proj-x/flaky@v1" not in p2.injected

    def logged() -> list[tuple[str, str]]:
        with Memory(home, a.config) as m:
            return [(x.role, x.text) for x in m.raw.read(m.raw.find(p1.ident.session))]

    waiting, seen = threading.Event(), {}
    real = b._wait_for_answer_elsewhere

    def wait(conversation_id: str, n: int) -> None:
        waiting.set()
        real(conversation_id, n)
        seen["log"] = logged()  # what the log holds when the second worker goes on

    b._wait_for_answer_elsewhere = wait
    job = b.forwarded(p2)
    assert waiting.wait(30)  # the second worker's capture is waiting for the first worker's answer
    a.finished(p1, chunks, "text/event-stream", None, False)  # which the first worker logs now
    job.result(30)
    a.drain(30)
    assert ("assistant", "because of xdist") in seen["log"]
    got = logged()
    assert got == [
        ("user", "why is the checkout test flaky under xdist?"),
        ("assistant", "because of xdist"),
        ("user", "and why is the checkout test flaky under xdist again?"),
    ]
    a.close()
    b.close()


def test_chain_records_are_pruned_after_a_day(bead_home):
    from bead.conversation import Identity
    from bead.core.state import CHAIN_KEEP_S, Conversations

    conversations = Conversations(Home(bead_home).ensure())
    # A process's first record asks for a prune (a proxy restarted before its 256th record pruned none; a review).
    assert conversations.record_chain("resp_old", Identity("s", "s", "t", None), 3)
    assert not conversations.record_chain("resp_two", None, 1)
    assert conversations.chain("resp_old") == (Identity("s", "s", "t", None), 3)
    assert conversations.chain("resp_two") == (None, 1) and conversations.chain("resp_none") is None
    assert conversations.prune_chains(now=time.time() + CHAIN_KEEP_S + 60) == 2
    assert conversations.chain("resp_old") is None


def test_an_id_two_answers_claimed_in_two_workers_joins_neither(bead_home):
    """The one-process rule holds across workers: an upstream that gave one id to two conversations' answers, each
    in its own worker, sends the continuation into neither, whichever worker serves it."""
    home = Home(bead_home).ensure()
    a, b = two_workers(home)
    responses = formats.by_name("responses").wire
    pa = a.prepare(step("alpha step one"), {}, wire=responses)
    pb = b.prepare(step("beta step one"), {}, wire=responses)
    a.chained(pa, "resp_same")
    b.chained(pb, "resp_same")
    for eng in (a, b):
        nxt = eng.prepare(step("alpha step two", "resp_same"), {}, wire=responses)
        assert nxt.ident.session not in (pa.ident.session, pb.ident.session)
    a.close()
    b.close()


def test_a_chain_step_after_an_answer_without_text_does_not_wait_for_it(bead_home):
    """An answer with nothing to log (no text) still takes its place in the conversation's capture, so the next
    step in another worker goes on at once instead of waiting out CHAIN_ANSWER_WAIT_S."""
    home = Home(bead_home).ensure()
    a, b = two_workers(home)
    responses = formats.by_name("responses").wire
    first = step("think about the flaky checkout test")
    p1 = a.prepare(first, {}, wire=responses)
    a.forwarded(p1).result(30)
    rid, chunks = answer(first, "")
    a.chained(p1, rid)
    a.finished(p1, chunks, "text/event-stream", None, False)
    a.drain(30)
    p2 = b.prepare(step("and now fix it", rid), {}, wire=responses)
    assert p2.after is not None
    b.forwarded(p2).result(30)
    assert b.counters["chain_answer_late"] == 0
    with Memory(home, a.config) as m:
        got = [(x.role, x.text) for x in m.raw.read(m.raw.find(p1.ident.session))]
    assert got == [("user", "think about the flaky checkout test"), ("user", "and now fix it")]
    a.close()
    b.close()


def test_a_chain_step_that_names_another_project_names_its_facts_in_full(bead_home):
    """A step that says it is another project's is not joined to the chain (its earlier steps' blocks, held by the
    server, named the first project's facts by their bare names): its blocks name every fact by its full key."""
    with Memory(Home(bead_home).ensure(), parse("owner: t\n")) as mem:
        mem.write("project/shop/db-port", "Postgres listens on port 5433 for the shop.", "project", trust="agent_observed")
        mem.write("project/blog/db-port", "Postgres listens on port 6543 for the blog.", "project", trust="agent_observed")
    engine = Engine(Home(bead_home).ensure(), parse("owner: t\n"))
    wire = formats.by_name("responses").wire
    ask = "which port does postgres db-port listen on?"
    first = step(ask)
    p1 = engine.prepare(first, {"x-bead-project": "shop"}, wire=wire)
    engine.forwarded(p1)
    rid, chunks = answer(first, "5433")
    engine.chained(p1, rid)
    engine.finished(p1, chunks, "text/event-stream", None, False)
    engine.drain(30)
    p2 = engine.prepare(step(f"{ask} now for the blog", rid), {"x-bead-project": "blog"}, wire=wire)

    def lines(body: bytes) -> list[str]:
        return [ln for ln in json.dumps(json.loads(body)).split("\\n") if "db-port" in ln]

    assert any(ln.startswith("- db-port (") for ln in lines(p1.body)), lines(p1.body)
    later = lines(p2.body)
    assert any("project/blog/db-port" in ln for ln in later) and not any(ln.startswith("- db-port ") for ln in later), later


def test_a_chains_next_step_is_told_of_a_fact_edited_in_place_since_the_first(bead_home):
    """A Responses chain's next step carries what the steps before it were shown, and what they were shown of each
    fact (a review: without it, a value edited in place after the first step was never told to the chain)."""
    home = Home(bead_home).ensure()
    with Memory(home, parse("owner: t\n")) as m:
        m.write("project/proj-x/db-port", "Postgres listens on 5432.", "project")
        path = m.facts.current("project/proj-x/db-port").path
    engine = Engine(home, parse("owner: t\n"))
    responses = formats.by_name("responses").wire
    first = step("hello there, start")
    p1 = engine.prepare(first, {}, wire=responses)
    assert "5432" in p1.body.decode()
    engine.forwarded(p1).result(30)
    rid, chunks = answer(first, "ok")
    engine.chained(p1, rid)
    engine.finished(p1, chunks, "text/event-stream", None, False)
    engine.drain(30)
    path.write_text(path.read_text().replace("5432", "6543"))
    with Memory(home, parse("owner: t\n")) as m:
        m.catch_up_index()
    p2 = engine.prepare(step("run the tests please", rid), {}, wire=responses)
    told = [ln for ln in p2.body.decode().split("\\n") if "replaces the value shown earlier" in ln]
    assert len(told) == 1 and "6543" in told[0], p2.body.decode()[-2000:]
    engine.close()
