"""The optional chat-model rerank, against a fake model server."""

from __future__ import annotations

import json
import time

import pytest
from conftest import make_proxy_app
from fakes import FakeModel

from bead.config import parse
from bead.core.memory import Memory
from bead.paths import Home

FACTS = [
    ("global/money", "Amounts are Decimal; round each line item to cents with ROUND_HALF_UP, then sum.", "reference"),
    ("global/pytest", "Run pytest with -x -q and report the failing test and its one error line.", "reference"),
    ("global/deploy", "Deploys go to Fly.io from main.", "reference"),
]
TURN = [
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Running the pricing tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest tests/test_pricing.py -x -q"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "E AssertionError: assert Decimal('154.35') == Decimal('154.36') line item rounding",
            }
        ],
    },
]


@pytest.fixture
def model():
    m = FakeModel()
    yield m
    m.close()


def engine(bead_home, model, provider="openai", timeout_ms=4000, monkeypatch=None):
    home = Home(bead_home).ensure()
    cfg = parse(
        f"rerank:\n  enabled: true\n  timeout_ms: {timeout_ms}\n  min_evidence: 0.1\n"
        f"dream:\n  provider: {provider}\n  model: test-model\n  base_url: {model.url}{'/v1' if provider == 'openai' else ''}\n"
        f"  api_key_env: BEAD_TEST_KEY\n"
    )
    eng = make_proxy_app(bead_home, "http://127.0.0.1:9", config=cfg).extensions["bead.engine"]  # nothing is forwarded here
    with Memory(home, cfg) as m:
        for k, b, t in FACTS:
            m.write(k, b, t)
    return eng


def body():
    return json.dumps({"model": "m", "max_tokens": 5, "messages": TURN}).encode()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_model_choice_is_injected(bead_home, model, provider, monkeypatch):
    """Below the strict gate, but the model says it helps: injected."""
    monkeypatch.setenv("BEAD_TEST_KEY", "sk-test-key")
    eng = engine(bead_home, model, provider)

    def choose(req):
        # The memories are numbered in the prompt; pick the money rule.
        prompt = req["messages"][-1]["content"] if provider != "anthropic" else req["messages"][0]["content"]
        line = next(x for x in prompt.splitlines() if "global/money" in x)
        return json.dumps({"helpful": [int(line.split(".")[0])]})

    model.answers.append(choose)
    prep = eng.prepare(body(), {"x-bead-session": f"rr-{provider}"})
    assert prep.injected == ["global/money@v1"]
    path, headers, req = model.requests[-1]
    assert "not instructions" in json.dumps(req) and "<memories>" in json.dumps(req)
    if provider == "openai":
        assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test-key"
    if provider == "anthropic":
        assert path == "/v1/messages" and headers["x-api-key"] == "sk-test-key"
    if provider == "ollama":
        assert path == "/api/chat"
    assert any(r["reason"].startswith("rerank: not helpful") for r in prep.trace["rejected"])


def test_model_says_none(bead_home, model, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = engine(bead_home, model)
    model.answers.append('{"helpful": []}')
    assert eng.prepare(body(), {"x-bead-session": "none"}).injected == []


@pytest.mark.parametrize("failure", ["slow", "garbage", "status"])
def test_failure_falls_back_to_the_default_gate(bead_home, model, failure, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = engine(bead_home, model, timeout_ms=300)
    if failure == "slow":
        model.delay = 1.0
    elif failure == "garbage":
        model.answers.append("I think the first one, maybe?")
    else:
        model.status = 500
    prep = eng.prepare(body(), {"x-bead-session": f"fail-{failure}"})
    assert "rerank" in prep.trace["errors"]
    assert prep.injected == []  # the strict gate finds no strong match in this turn
    assert eng.counters["error.rerank"] == 1
    if failure == "slow":
        assert prep.trace["rerank_ms"] < 900


def test_no_key_is_an_error_not_a_call(bead_home, model, monkeypatch):
    monkeypatch.delenv("BEAD_TEST_KEY", raising=False)
    eng = engine(bead_home, model)
    prep = eng.prepare(body(), {"x-bead-session": "nokey"})
    assert "rerank" in prep.trace["errors"] and not model.requests


def async_engine(bead_home, model):
    home = Home(bead_home).ensure()
    cfg = parse(
        f"rerank:\n  enabled: true\n  mode: async\n  min_evidence: 0.1\n"
        f"dream:\n  provider: openai\n  model: test-model\n  base_url: {model.url}/v1\n  api_key_env: BEAD_TEST_KEY\n"
    )
    eng = make_proxy_app(bead_home, "http://127.0.0.1:9", config=cfg).extensions["bead.engine"]
    with Memory(home, cfg) as m:
        for k, b, t in FACTS:
            m.write(k, b, t)
    return eng


def pick_money(req):
    line = next(x for x in req["messages"][-1]["content"].splitlines() if "global/money" in x)
    return json.dumps({"helpful": [int(line.split(".")[0])]})


def test_async_judge_runs_after_forwarding_and_its_pick_joins_the_next_request(bead_home, model, monkeypatch):
    """rerank.mode async: no model call before forwarding; the judge's pick is in the next request's cue block,
    appended to its newest user message and re-added with the same bytes."""
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)
    model.answers.append(pick_money)
    headers = {"x-bead-session": "ahead"}
    first = eng.prepare(body(), headers)
    assert first.injected == [] and not model.requests  # the judge costs this request nothing
    eng.forwarded(first).result(timeout=30)
    assert len(model.requests) == 1
    assert first.trace["judged"] == ["global/money@v1"]
    messages = TURN + [
        {"role": "assistant", "content": [{"type": "text", "text": "The rounding is off by a cent."}]},
        {"role": "user", "content": [{"type": "text", "text": "ok, fix it"}]},
    ]
    nxt = json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode()
    second = eng.prepare(nxt, headers)
    assert second.injected[0] == "global/money@v1"
    sent = json.loads(second.body)
    last = sent["messages"][-1]["content"]
    assert "global/money" in last[-1]["text"] and "<bead-memory" in last[-1]["text"]
    # No earlier byte moved: the first request's messages as they went out (its cue block, with its
    # pointers, re-added as it was), then the assistant's answer as sent.
    assert sent["messages"][: len(TURN)] == json.loads(first.body)["messages"]
    assert sent["messages"][len(TURN) : -1] == messages[len(TURN) : -1]
    again = eng.prepare(nxt, headers)  # a retry: the same bytes, nothing new
    assert again.body == second.body and again.injected == []
    eng.forwarded(second).result(timeout=30)
    eng.forwarded(again).result(timeout=30)
    # The judge is never asked about a fact the conversation already carries.
    assert all("global/money" not in json.dumps(r[2]) for r in model.requests[1:])


def test_a_pick_of_the_projects_fact_is_not_given_once_the_conversation_names_another_project(bead_home, model, monkeypatch):
    """The judge picks a fact of the project the conversation named; a later request of the same conversation names
    another project (a header): the pick is that first project's and does not join it."""
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)
    with Memory(Home(bead_home), eng.config) as m:
        # Observed, not stated: never pinned, so only the judge can bring it.
        m.write(
            "project/alpha/rounding",
            "Pricing tests: assert each line item rounding in Decimal cents.",
            "reference",
            trust="agent_observed",
        )

    def pick_rounding(req):
        line = next(x for x in req["messages"][-1]["content"].splitlines() if "alpha/rounding:" in x)
        return json.dumps({"helpful": [int(line.split(".")[0])]})

    model.answers.append(pick_rounding)
    first = eng.prepare(body(), {"x-bead-session": "ahead-moved", "x-bead-project": "alpha"})
    eng.forwarded(first).result(timeout=30)
    assert first.trace["judged"] == ["project/alpha/rounding@v1"]
    messages = TURN + [
        {"role": "assistant", "content": [{"type": "text", "text": "The rounding is off by a cent."}]},
        {"role": "user", "content": [{"type": "text", "text": "ok, fix it"}]},
    ]
    nxt = json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode()
    second = eng.prepare(nxt, {"x-bead-session": "ahead-moved", "x-bead-project": "beta"})
    assert "project/alpha/rounding@v1" not in second.injected
    assert "Alpha rounds" not in second.body.decode()
    eng.forwarded(second).result(timeout=30)


def test_a_pick_the_judge_made_while_a_forget_ran_is_not_kept(bead_home, model, monkeypatch):
    """The person forgets the fact while the judge (a model call after forwarding) decides on it: its pick is not
    written to the conversation's state after the forget scrubbed it, so no file names the forgotten key."""
    from bead.core import forget

    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)

    def forgotten_meanwhile(req):
        with Memory(Home(bead_home), eng.config) as m:  # the person's `bead forget`, in its own memory
            forget.apply(m, forget.plan_target(m, "global/money"))
        return pick_money(req)

    model.answers.append(forgotten_meanwhile)
    first = eng.prepare(body(), {"x-bead-session": "ahead-forgotten"})
    eng.forwarded(first).result(timeout=30)
    assert first.trace["judged"] == ["global/money@v1"]
    states = b"".join(p.read_bytes() for p in Home(bead_home).sessions.glob("*.jsonl"))
    assert b"global/money" not in states and b'"ahead"' not in states


def test_a_slow_judges_pick_still_joins_the_next_request(bead_home, model, monkeypatch):
    """The next request no longer waits for the previous capture, but it does wait (within its deadline) for the
    previous request's judge: a pick that takes a quarter of a second still joins it."""
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)
    model.answers.append(lambda req: (time.sleep(0.25), pick_money(req))[1])  # a model that takes its time
    headers = {"x-bead-session": "ahead"}
    first = eng.prepare(body(), headers)
    job = eng.forwarded(first)
    messages = TURN + [
        {"role": "assistant", "content": [{"type": "text", "text": "The rounding is off by a cent."}]},
        {"role": "user", "content": [{"type": "text", "text": "ok, fix it"}]},
    ]
    second = eng.prepare(json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode(), headers)
    job.result(30)
    assert second.injected[:1] == ["global/money@v1"], second.trace


def test_the_judges_pick_follows_a_responses_chain(bead_home, model, monkeypatch):
    """A Responses API chain (previous_response_id, no session header) is one conversation: the judge's pick after
    one step joins the next step, though that step has a state file of its own."""
    from fakes import Reply, openai_sse, responses_events

    from bead.wire import formats

    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)
    model.answers.append(pick_money)
    wire = formats.by_name("responses").wire
    ran = {"command": "pytest tests/test_pricing.py -x -q"}
    items = [  # as TURN above: a test run's output, which the gate alone does not inject
        {"role": "user", "content": "run the pricing tests"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": json.dumps(ran)},
        {"type": "function_call_output", "call_id": "c1", "output": TURN[1]["content"][0]["content"]},
    ]
    first = json.dumps({"model": "gpt-test", "input": items}).encode()
    p1 = eng.prepare(first, {}, wire=wire)
    assert p1.ident is not None and p1.judge is not None, p1.trace
    eng.forwarded(p1)
    events = responses_events(Reply(text="The rounding is off by a cent."), json.loads(first))
    rid = events[0]["response"]["id"]
    eng.chained(p1, rid)
    eng.finished(p1, openai_sse(events, True), "text/event-stream", None, False)
    nxt = {"model": "gpt-test", "previous_response_id": rid, "input": [{"role": "user", "content": "ok, fix it"}]}
    p2 = eng.prepare(json.dumps(nxt).encode(), {}, wire=wire)
    eng.drain(30)
    assert p2.ident is not None and p2.ident.session == p1.ident.session
    assert p2.injected[:1] == ["global/money@v1"], p2.trace


def test_async_judge_failure_changes_nothing(bead_home, model, monkeypatch):
    monkeypatch.setenv("BEAD_TEST_KEY", "k")
    eng = async_engine(bead_home, model)
    model.status = 500
    first = eng.prepare(body(), {"x-bead-session": "ahead-fail"})
    eng.forwarded(first).result(timeout=30)
    assert "rerank" in first.trace["errors"] and eng.counters["error.rerank"] == 1
    messages = TURN + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    second = eng.prepare(
        json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode(), {"x-bead-session": "ahead-fail"}
    )
    assert "global/money@v1" not in second.injected


@pytest.mark.parametrize(
    "answer",
    [
        '{"helpful": [2]}',
        'Sure. {"helpful": [1, 3]} done',
        "[2, 1]",
        'picks: [3] and {"helpful": [1]}',
        "{ no close [1]",
        "] [2] {",
        "nothing here",
        "{}{}[]",
        '{"a": {"b": [1]}} tail }',
    ],
)
def test_the_answer_scan_finds_what_the_old_regex_found(answer):
    import re

    from bead.recall.rerank import _outermost_json

    m = re.search(r"\{.*\}|\[.*\]", answer, re.S)
    assert _outermost_json(answer) == (m.group(0) if m else None)


def test_an_answer_of_unclosed_braces_is_no_json_in_one_pass():
    """A model's answer is text bead did not write: a megabyte of "{" (quadratic for the old regex) is refused."""
    from bead.recall.rerank import parse as parse_answer

    with pytest.raises(ValueError, match="no JSON"):
        parse_answer("{" * 1_000_000, 3)


def test_the_judge_sees_a_long_tool_outputs_end():
    """The judge's prompt holds a long tool output's start and its end (what failed), as the cue keeps them, within
    TOOL_OUTPUT_CHARS and a line break."""
    from bead.recall import rerank
    from bead.recall.cues import extract
    from bead.wire.anthropic import conversation_of

    passed = "\n".join(f"tests/test_api.py::test_list_page_{i} PASSED" for i in range(80))
    run = passed + "\nFAILED tests/test_pricing.py::test_rounding - line item rounding off by a cent"
    turn = [TURN[0], {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": run}]}]
    cues = extract(conversation_of({"model": "m", "max_tokens": 5, "messages": turn}, {}))
    text = rerank.prompt(cues, [{"key": "global/money", "body": FACTS[0][1]}])
    output = text.split("[tool output] ", 1)[1].split("\n[", 1)[0]
    assert output.startswith("tests/test_api.py::test_list_page_0 PASSED")
    assert output.endswith("FAILED tests/test_pricing.py::test_rounding - line item rounding off by a cent")
    assert len(output) <= rerank.TOOL_OUTPUT_CHARS + 1
