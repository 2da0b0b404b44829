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
