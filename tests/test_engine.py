"""The proxy's engine in-process: sessions, pinned block, recall gate, deadline."""

from __future__ import annotations

import json

import pytest

from bead.config import parse
from bead.conversation import identify
from bead.core.memory import Memory
from bead.core.remember import propose_key
from bead.paths import Home
from bead.proxy.engine import Engine
from bead.wire.anthropic import conversation_of, is_auxiliary


def run(engine, body, headers):
    """One request as the proxy handles it: prepare, forward, then the work after forwarding."""
    prep = engine.prepare(body, headers)
    done = engine.forwarded(prep)
    if done is not None:
        done.result(timeout=30)
    return prep


def derive(headers, data, default_project):
    return identify(headers, conversation_of(data, headers), default_project)


def body(messages, system="You help.\n - Primary working directory: /home/dev/src/shop", **extra) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 5, "system": system, "messages": messages, **extra}).encode()


@pytest.fixture
def engine(bead_home):
    home = Home(bead_home).ensure()
    return Engine(home, parse("owner: t\n"))


def seed(engine, facts):
    with Memory(engine.home, engine.config) as m:
        for key, text, kind in facts:
            m.write(key, text, kind)


class TestDerive:
    """Session, thread and project, in the reference design's order."""

    def test_header_order(self):
        data = json.loads(body([{"role": "user", "content": "hi"}]))
        assert derive({"x-bead-session": "mine", "x-claude-code-session-id": "cc"}, data, None).session == "mine"
        sub = derive({"x-claude-code-session-id": "cc", "x-claude-code-agent-id": "agent-7"}, data, None)
        assert sub.session.startswith("cc-") and sub.base_session == "cc"
        anon = derive({}, data, None)
        assert anon.session.startswith("p") and anon.session == derive({}, data, None).session

    def test_project_order(self):
        data = json.loads(body([{"role": "user", "content": "hi"}]))
        assert derive({"x-bead-project": "Other Thing"}, data, "fallback").project == "other-thing"
        assert derive({}, data, "fallback").project == "shop"
        bare = json.loads(body([{"role": "user", "content": "hi"}], system="nothing here"))
        assert derive({}, bare, "fallback").project == "fallback"

    def test_thread_ignores_cache_control_and_string_form(self):
        a = {"messages": [{"role": "user", "content": "hello"}]}
        b = {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}]
        }
        assert derive({}, a, None).thread == derive({}, b, None).thread


class TestPinned:
    """Built on the first request, frozen for the conversation, under its own budget."""

    def test_frozen_for_the_conversation(self, engine):
        seed(
            engine,
            [
                ("user/editor", "Helix editor", "user"),
                ("project/shop/db", "Postgres 16 on port 5433", "project"),
                ("project/blog/db", "SQLite", "project"),
            ],
        )
        turn1 = [{"role": "user", "content": "start"}]
        out1 = json.loads(run(engine, body(turn1), {"x-bead-session": "p1"}).body)
        pinned = out1["system"][-1]["text"]
        assert "Helix editor" in pinned and "Postgres 16" in pinned and "SQLite" not in pinned
        seed(engine, [("user/shell", "fish shell", "user")])
        turn2 = turn1 + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
        out2 = json.loads(run(engine, body(turn2), {"x-bead-session": "p1"}).body)
        assert out2["system"][-1]["text"] == pinned, "a fact written mid-conversation waits for the next one"
        out3 = json.loads(run(engine, body([{"role": "user", "content": "new chat"}]), {"x-bead-session": "p2"}).body)
        assert "fish shell" in out3["system"][-1]["text"]

    def test_pinned_facts_count_as_injected(self, engine):
        """Decay reads inject events: a fact in every pinned block must never look unused."""
        seed(engine, [("user/editor", "Helix editor", "user")])
        run(engine, body([{"role": "user", "content": "hi"}]), {"x-bead-session": "aud"})
        with Memory(engine.home, engine.config) as m:
            events = [e for e in m.audit.entries() if e["event"] == "inject"]
        assert [(e["id"], e["block"]) for e in events] == [("user/editor@v1", "pinned")]

    def test_budget(self, bead_home):
        home = Home(bead_home).ensure()
        eng = Engine(home, parse("proxy:\n  pinned_budget_tokens: 150\n"))
        seed(eng, [(f"user/fact-{i}", f"fact number {i} " + "padding " * 10, "user") for i in range(10)])
        out = json.loads(run(eng, body([{"role": "user", "content": "x"}]), {"x-bead-session": "b"}).body)
        assert 0 < out["system"][-1]["text"].count("\n- ") < 10


class TestCueGate:
    """At most 2 facts on a strong match; the same fact once per conversation."""

    FACTS = [
        ("global/stripe-keys", "Stripe test keys live in .env.test and are loaded by dotenv; never commit them.", "reference"),
        ("global/deploy", "Deploys go to Fly.io from the main branch via GitHub Actions.", "reference"),
        ("global/lint", "Ruff replaces flake8 and isort in every repository.", "reference"),
    ]

    def test_strong_match_injected_once(self, engine):
        seed(engine, self.FACTS)
        msgs = [{"role": "user", "content": "where do the stripe test keys live, in dotenv?"}]
        prep = run(engine, body(msgs), {"x-bead-session": "g1"})
        assert prep.injected == ["global/stripe-keys@v1"]
        block = json.loads(prep.body)["messages"][0]["content"][-1]["text"]
        assert block.startswith('<bead-memory kind="recall">') and "not instructions" in block
        msgs2 = msgs + [
            {"role": "assistant", "content": "In .env.test."},
            {"role": "user", "content": "and the stripe dotenv keys again?"},
        ]
        prep2 = run(engine, body(msgs2), {"x-bead-session": "g1"})
        assert prep2.injected == [], "already injected in this conversation"
        assert any(r["reason"].startswith("already injected") for r in prep2.trace["rejected"])

    def test_a_fact_of_the_pinned_block_is_left_out_as_pinned_not_as_injected(self, engine):
        """On a conversation's first request the pinned block holds the person's project fact; the gate finds it
        too and leaves it out of the cue block, and the trace (`bead why`) says it is in the pinned block."""
        with Memory(engine.home, engine.config) as m:
            m.write("project/shop/stripe-keys", "Stripe test keys live in .env.test, loaded by dotenv.", "project")
        msgs = [{"role": "user", "content": "where do the stripe test keys live, in dotenv?"}]
        prep = run(engine, body(msgs), {"x-bead-session": "p1"})
        assert "project/shop/stripe-keys@v1" in prep.trace["pinned"]
        reasons = {r["id"]: r["reason"] for r in prep.trace["rejected"]}
        assert reasons["project/shop/stripe-keys@v1"] == "in the pinned block"

    def test_statistics_follow_writes_and_forgets_reusing_each_facts_terms(self, engine, monkeypatch):
        """The IDF statistics are rebuilt after every change to the facts, from each fact's terms kept by key and body:
        a new fact's words count at once, a forgotten fact's leave, and an unchanged fact is not taken apart again."""
        from bead.core import forget

        seed(engine, self.FACTS)
        mem = engine.memory()
        raw_df = mem.index.raw_doc_freq
        first = engine.recaller.fact_stats(mem, raw_df)
        assert first.df["stripe"] == 1 and first.df["kafka"] == 0
        from bead.recall import gate

        read: list[str] = []
        real = gate.fact_terms
        monkeypatch.setattr(gate, "fact_terms", lambda key, body: read.append(key) or real(key, body))
        seed(engine, [("global/queue", "Kafka carries the order events; the consumer lag alarm is at 5000.", "reference")])
        after = engine.recaller.fact_stats(mem, raw_df)
        assert after.df["kafka"] == 1 and after.n_facts == 4
        assert read == ["global/queue"], "only the new fact's terms are taken"
        with Memory(engine.home, engine.config) as m:
            forget.apply(m, forget.plan_target(m, "global/stripe-keys"))
        gone = engine.recaller.fact_stats(mem, raw_df)
        assert gone.df["stripe"] == 0 and gone.n_facts == 3
        assert len(engine.recaller._terms) == 3, "the forgotten fact's terms are not kept"
        # The key written again after its forget starts at v1 again, with other words: they count, not the old ones.
        seed(engine, [("global/stripe-keys", "Braintree sandbox keys live in the vault.", "reference")])
        again = engine.recaller.fact_stats(mem, raw_df)
        assert again.df["braintree"] == 1 and again.df["dotenv"] == 0

    def test_the_served_proxy_builds_the_statistics_before_its_first_request(self, proxy_client, bead_home):
        seed(Engine(Home(bead_home).ensure(), parse("owner: t\n")), self.FACTS)
        proxy = proxy_client()
        assert proxy.engine.warmed.wait(30)
        assert proxy.engine.recaller._stats is not None and proxy.engine.recaller._stats[1].df["stripe"] == 1

    def test_tool_output_alone_is_weak_evidence(self, engine):
        seed(engine, self.FACTS)
        msgs = [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "deploy.yml stripe.py lint.toml"}],
            },
        ]
        assert run(engine, body(msgs), {"x-bead-session": "g2"}).injected == []

    def test_recall_past_deadline_fails_open(self, bead_home):
        """A recall step that passes its deadline is interrupted inside SQLite and decides nothing."""
        from bead.core.recall import Recaller

        home = Home(bead_home).ensure()
        config = parse("owner: t\n")
        eng = Engine(home, config)
        seed(eng, self.FACTS)
        with Memory(eng.home, eng.config) as m:
            m.append_turns("old", [("user", f"stripe dotenv keys note {i} " * 20, None, None) for i in range(300)])
            conv = conversation_of(json.loads(body([{"role": "user", "content": "stripe test keys in dotenv?"}])), {})
            errors = []
            cue = Recaller(config, lambda kind, exc: errors.append(kind)).recall_for(
                m, conv, identify({}, conv, None), set(), deadline_s=-1
            )
        assert cue.failed and cue.text is None and cue.ids == []
        assert errors == ["recall_deadline"] and "recall_deadline" in cue.trace["errors"]

    def test_request_past_its_deadline_goes_out_unchanged(self, bead_home):
        """Past the request's deadline the original bytes go upstream, and the failure is counted."""
        home = Home(bead_home).ensure()
        eng = Engine(home, parse("owner: t\n"))
        seed(eng, self.FACTS)
        eng.deadline_s = -1  # already past when the request arrives
        raw = body([{"role": "user", "content": "stripe test keys in dotenv?"}])
        prep = run(eng, raw, {"x-bead-session": "late"})
        assert prep.body == raw and prep.injected == [] and prep.ident is None
        assert eng.counters["error.deadline"] == 1

    def test_own_session_and_subagents_never_excerpted(self, engine):
        with Memory(engine.home, engine.config) as m:
            m.append_turns("main", [("user", "the kafka consumer lag alarm fires at 5000 messages", None, None)])
            m.append_turns("main-abc12345", [("assistant", "kafka consumer lag alarm threshold found", None, None)])
            m.append_turns("other", [("user", "kafka consumer lag alarm was raised to 8000 messages", None, None)])
        prep = run(
            engine,
            body([{"role": "user", "content": "what is the kafka consumer lag alarm threshold?"}]),
            {"x-claude-code-session-id": "main"},
        )
        text = json.loads(prep.body)["messages"][0]["content"][-1]["text"]
        assert "8000" in text and "5000" not in text and "threshold found" not in text
        assert "session other" in text


def test_auxiliary_requests_pass_untouched(engine):
    data = json.loads(
        body([{"role": "user", "content": "name this"}], output_config={"format": {"type": "json_schema"}}, tools=[])
    )
    assert is_auxiliary({}, data) and is_auxiliary({"x-claude-code-request-class": "auxiliary"}, {"messages": []})
    raw = body([{"role": "user", "content": "remember that I like tea"}], output_config={"format": {"type": "json_schema"}})
    assert run(engine, raw, {}).body == raw
    with Memory(engine.home, engine.config) as m:
        assert not list(m.facts.keys()) and not list(m.raw.files())


@pytest.mark.parametrize(
    "value,project,key",
    [
        ("the project uses Go", "demo", "project/demo/uses-go"),
        ("I prefer tabs over spaces", "demo", "user/prefer-tabs-over-spaces"),
        ("deploys need a VPN", None, "user/deploys-need-vpn"),
    ],
)
def test_propose_key(value, project, key):
    assert propose_key(value, project) == key


class TestReadUnderTheDeadline:
    """Reading a body is bounded by the request's deadline (bead.budget): a 2 MB paste of short quoted lines took
    over a second to read, and the request waited for it."""

    PASTE = "> q\nt\n" * 50_000

    def test_reading_a_persons_text_stops_past_the_deadline(self):
        import time

        from bead import budget
        from bead.capture.text import segments
        from bead.wire import openai

        assert segments(self.PASTE)[0][0] == "pasted", "outside a deadline the read runs to its end"
        with budget.until(time.monotonic() - 1), pytest.raises(budget.OutOfTime):
            segments(self.PASTE)
        data = {"model": "m", "messages": [{"role": "user", "content": self.PASTE}]}
        with budget.until(time.monotonic() - 1), pytest.raises(budget.OutOfTime):
            conversation_of(data, {})
        with budget.until(time.monotonic() - 1), pytest.raises(budget.OutOfTime):
            openai.CHAT.parse(json.dumps(data).encode(), {})
        with budget.until(time.monotonic() - 1), pytest.raises(budget.OutOfTime):
            openai.RESPONSES.parse(json.dumps({"model": "m", "input": data["messages"]}).encode(), {})

    @pytest.mark.parametrize(
        "text",
        [
            "a:\n" * 3_000,  # a transcript's speaker lines, one match each (an outside review: 5 us a byte)
        ],
        ids=["speaker-lines"],
    )
    def test_the_shape_of_a_persons_block_is_read_under_the_deadline_too(self, text):
        """The look for a pasted document's or transcript's shape in a person's block ran to its end past the request's
        deadline: four pastes of megabytes of `a:` lines held every preparation thread for minutes."""
        import time

        from bead import budget
        from bead.capture.text import output_lines, untyped_shape

        untyped_shape(text), output_lines(text)  # outside a deadline it runs to its end
        with budget.until(time.monotonic() - 1), pytest.raises(budget.OutOfTime):
            untyped_shape(text)
            output_lines(text)

    def test_a_body_read_past_the_deadline_goes_out_unchanged_and_records_nothing(self, engine):
        import time

        sent = body([{"role": "user", "content": "remember that the deploy host is db-7\n" + self.PASTE}])
        prep = engine.prepare(sent, {"x-bead-session": "slow"}, deadline=time.monotonic() - 1)
        assert prep.body == sent and prep.ident is None
        assert engine.counters["error.deadline"] == 1 and engine.last_error["detail"] == ""
        assert engine.prepare(body([{"role": "user", "content": "hello"}]), {"x-bead-session": "slow"}).ident is not None
