"""The default evidence gate (bead/recall/gate.py), directly: statistics, weights, evidence and recall
against a real index built from facts and turns written through Memory."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from linear import assert_linear

from bead.config import Config, parse
from bead.recall.cues import Cue
from bead.recall.gate import GENERIC, FactStats, cue_weights, evidence, recall

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)

# Facts that share no words with each other, so every term below is held by one fact only.
BACKGROUND = [
    ("global/editor", "The editor is neovim with the lazy plugin manager.", "reference"),
    ("global/shell", "The login shell is fish; aliases live in conf.d.", "reference"),
    ("global/coffee", "Tea at four, espresso before standups.", "user"),
]


# ----- FactStats.weight ---------------------------------------------------------------------------


def test_term_only_one_fact_has_weighs_one():
    """A term that only one fact holds weighs exactly 1.0."""
    stats = FactStats([("global/a", "kafka consumer"), ("global/b", "redis cache"), ("global/c", "nginx proxy")])
    assert stats.weight("kafka") == pytest.approx(1.0)


def test_common_term_weighs_less_than_a_rare_one():
    """A term many facts hold weighs less than 1 and less than a term fewer facts hold."""
    stats = FactStats(
        [
            ("global/a", "kafka broker"),
            ("global/b", "kafka topic"),
            ("global/c", "kafka lag"),
            ("global/d", "redis broker"),
            ("global/e", "nginx"),
        ]
    )
    assert 0 < stats.weight("kafka") < stats.weight("broker") < stats.weight("nginx") == pytest.approx(1.0)


def test_unknown_term_weighs_zero():
    """A term no fact holds weighs 0, even if it were common elsewhere."""
    stats = FactStats([("global/a", "kafka consumer")], raw_df=lambda ts: {t: 50 for t in ts}, n_raw=100)
    assert stats.for_request(["zookeeper"]).weight("zookeeper") == 0.0


def test_last_key_segment_counts_as_fact_terms():
    """The words of a fact key's last segment count as terms of the fact, the scope does not."""
    stats = FactStats([("project/acme/kafka-lag_alarm", "fires at 5000")])
    assert stats.weight("kafka") > 0 and stats.weight("lag") > 0 and stats.weight("alarm") > 0
    assert stats.weight("acme") == 0.0


def test_raw_frequencies_lower_the_weight():
    """Raw turns holding a term lower its weight below that of a term no raw turn holds."""
    asked: list[list[str]] = []

    def raw_df(ts: list[str]) -> dict[str, int]:
        asked.append(sorted(ts))
        return {t: (40 if t == "kafka" else 0) for t in ts}

    rows = [("global/a", "kafka consumer"), ("global/b", "redis cache")]
    view = FactStats(rows, raw_df=raw_df, n_raw=200).for_request(["kafka", "redis"])
    assert asked == [["kafka", "redis"]]
    assert view.weight("kafka") < view.weight("redis") == pytest.approx(1.0)
    n = 2 + 200
    assert view.weight("kafka") == pytest.approx(math.log(1 + n / 41) / math.log(1 + n))


def test_raw_frequencies_are_fetched_only_for_fact_terms_and_once():
    """`for_request` asks the index only for terms some fact has, and only once per term."""
    asked: list[list[str]] = []

    def raw_df(ts):
        asked.append(sorted(ts))
        return {t: 3 for t in ts}

    stats = FactStats([("global/a", "kafka consumer")], raw_df=raw_df, n_raw=10)
    stats.for_request(["kafka", "unheard"])
    stats.for_request(["kafka", "consumer"])
    assert asked == [["kafka"], ["consumer"]]


def test_own_terms_do_not_count_against_themselves():
    """A request's own terms (`own=`) discount the one raw turn that is the request itself."""
    rows = [("global/a", "kafka consumer"), ("global/b", "redis cache")]
    stats = FactStats(rows, raw_df=lambda ts: {t: 1 for t in ts}, n_raw=50)
    plain = stats.for_request(["kafka"])
    own = stats.for_request(["kafka"], own={"kafka"})
    assert plain.weight("kafka") < 1.0
    assert own.weight("kafka") == pytest.approx(1.0)


def test_own_terms_stay_in_their_own_view():
    """One request's own terms do not change the weights another request's view (or the shared stats) sees."""
    stats = FactStats([("global/a", "kafka consumer")], raw_df=lambda ts: {t: 2 for t in ts}, n_raw=50)
    before = stats.for_request(["kafka"]).weight("kafka")
    stats.for_request(["kafka"], own={"kafka"})
    assert stats.for_request(["kafka"]).weight("kafka") == before
    assert stats.weight("kafka") == before


# ----- cue_weights --------------------------------------------------------------------------------


def test_cue_weights_drop_project_name_words():
    """The words of the project name are no evidence: cue_weights leaves them out."""
    w = cue_weights([Cue("user", "the acme billing ledger drifts")], "acme-billing")
    assert "acme" not in w and "billing" not in w
    assert w["ledger"] == 1.0 and w["drifts"] == 1.0
    assert "billing" in cue_weights([Cue("user", "the acme billing ledger drifts")], None)


def test_cue_weights_drop_stopwords_and_single_characters():
    """Stopwords and one-character terms are no cue terms."""
    w = cue_weights([Cue("user", "what is the x of ledger")], None)
    assert set(w) == {"ledger"}


@pytest.mark.parametrize("order", [("tool_output", "user"), ("user", "tool_output")])
def test_term_keeps_its_strongest_source_weight(order):
    """A term said by several sources keeps the strongest source's weight, whatever the order."""
    said = {"tool_output": Cue("tool_output", "ledger drift"), "user": Cue("user", "ledger audit")}
    assert cue_weights([said[s] for s in order], None) == {"ledger": 1.0, "drift": 0.3, "audit": 1.0}


# ----- evidence -----------------------------------------------------------------------------------


def test_generic_development_words_weigh_one_fifth():
    """A shared generic development word counts 0.2 of its weight; a specific word counts fully."""
    assert "server" in GENERIC and "kafka" not in GENERIC
    stats = FactStats([("global/a", "kafka server"), ("global/b", "redis cache")])
    generic, shared = evidence({"server": 1.0}, stats, "global/a", "kafka server")
    assert shared == ["server"] and generic == pytest.approx(0.2)
    specific, _ = evidence({"kafka": 1.0}, stats, "global/a", "kafka server")
    assert specific == pytest.approx(1.0)


def test_evidence_is_top_term_plus_a_quarter_of_the_rest():
    """The score is the strongest shared term plus a quarter of the others, listed strongest first."""
    body = "kafka zookeeper broker"
    stats = FactStats([("global/a", body), ("global/b", "redis cache")])
    weights = {"kafka": 1.0, "zookeeper": 0.6, "broker": 0.3, "unrelated": 1.0}
    score, shared = evidence(weights, stats, "global/a", body)
    assert shared == ["kafka", "zookeeper", "broker"]
    assert score == pytest.approx(1.0 + 0.25 * (0.6 + 0.3))


def test_evidence_without_shared_terms_is_zero():
    """A fact that shares no term with the cues has evidence 0 and no shared terms."""
    stats = FactStats([("global/a", "kafka broker")])
    assert evidence({"redis": 1.0}, stats, "global/a", "kafka broker") == (0.0, [])


# ----- recall against a real index ----------------------------------------------------------------


def stats_of(mem) -> FactStats:
    return FactStats(mem.index.current_bodies(), mem.index.raw_doc_freq, mem.index.raw_size())


def run(mem, text: str, project: str | None = "acme", settings=None, exclude_ids=(), exclude_sessions=(), exclude_raw=()):
    return recall(
        mem.index,
        stats_of(mem),
        [Cue("user", text, typed=True)],
        project,
        set(exclude_ids),
        list(exclude_sessions),
        set(exclude_raw),
        settings or Config(owner="tester").recall,
    )


@pytest.fixture
def facts(mem):
    for k, b, t in BACKGROUND:
        mem.write(k, b, t)
    return mem


def test_strong_match_passes(facts):
    """A fact sharing several rare terms with the person's words passes the gate."""
    facts.write("project/acme/kafka-alarm", "The kafka consumer lag alarm fires at 5000 messages.", "project")
    out = run(facts, "why does the kafka consumer lag alarm page us at night?")
    assert [c.id for c in out.facts] == ["project/acme/kafka-alarm@v1"]
    assert out.facts[0].score >= Config(owner="t").recall.evidence_threshold
    assert {"kafka", "consumer", "lag", "alarm"} <= set(out.facts[0].shared)


def test_weak_match_is_rejected_with_the_threshold_named(facts):
    """A fact sharing one term only is a candidate but is rejected, the reason naming the threshold."""
    facts.write("global/grafana", "Grafana dashboards are provisioned from the ops repo.", "reference")
    settings = Config(owner="t").recall
    out = run(facts, "grafana feels slow today", settings=settings)
    assert out.facts == []
    (cand,) = [c for c in out.rejected if c.id == "global/grafana@v1"]
    assert cand.score < settings.evidence_threshold
    assert cand.reason == f"evidence {cand.score:.2f} < {settings.evidence_threshold}"


def test_lower_threshold_lets_the_weak_match_pass(facts):
    """The threshold comes from the settings: lowered below the score, the same fact passes."""
    facts.write("global/grafana", "Grafana dashboards are provisioned from the ops repo.", "reference")
    out = run(facts, "grafana feels slow today", settings=parse("recall:\n  evidence_threshold: 0.5\n").recall)
    assert [c.id for c in out.facts] == ["global/grafana@v1"]


@pytest.mark.parametrize("max_facts", [1, 2])
def test_at_most_max_facts_pass(facts, max_facts):
    """However many facts match strongly, at most `max_facts` pass; the rest are rejected as over the limit."""
    facts.write("global/queue", "kafka zookeeper broker settings live in infra.", "reference")
    facts.write("global/cache", "redis sentinel failover settings live in infra.", "reference")
    facts.write("global/edge", "nginx envoy ingress settings live in infra.", "reference")
    settings = parse(f"recall:\n  max_facts: {max_facts}\n").recall
    out = run(facts, "kafka zookeeper broker redis sentinel failover nginx envoy ingress", settings=settings)
    assert len(out.facts) == max_facts
    over = [c for c in out.rejected if c.reason == f"more than {max_facts} facts passed"]
    assert len(over) == 3 - max_facts
    assert all(c.score >= settings.evidence_threshold for c in out.facts + over)


def test_another_projects_facts_never_pass(facts):
    """A strongly matching fact of another project is neither passed nor offered as a rejected candidate."""
    facts.write("project/other/kafka-alarm", "The kafka consumer lag alarm fires at 5000 messages.", "project")
    question = "why does the kafka consumer lag alarm page us at night?"
    out = run(facts, question, project="acme")
    assert all(c.id != "project/other/kafka-alarm@v1" for c in out.facts + out.rejected)
    assert [c.id for c in run(facts, question, project="other").facts] == ["project/other/kafka-alarm@v1"]


def test_another_projects_facts_do_not_crowd_out_this_ones(facts):
    """Facts of another project that match better than this project's are left out by the search itself, so this
    project's fact is still among the candidates however many of them there are (the search keeps a few dozen)."""
    for i in range(80):
        facts.write(f"project/other/kafka-{i}", f"Kafka consumer lag alarm {i}: the kafka consumer lag pages.", "project")
    facts.write("project/acme/lag-runbook", "When the consumer lag alarm fires, read the lag runbook first.", "project")
    out = run(facts, "kafka consumer lag alarm again", project="acme")
    candidates = [c.id for c in out.facts + out.rejected]
    assert "project/acme/lag-runbook@v1" in candidates
    assert not any(i.startswith("project/other/") for i in candidates)


def test_global_facts_pass_in_any_project(facts):
    """A global fact is not another project's: it passes on a strong match within a project."""
    facts.write("global/kafka-alarm", "The kafka consumer lag alarm fires at 5000 messages.", "reference")
    out = run(facts, "why does the kafka consumer lag alarm page us at night?", project="acme")
    assert [c.id for c in out.facts] == ["global/kafka-alarm@v1"]


def test_already_injected_fact_is_rejected(facts):
    """A fact whose id the conversation already carries is rejected as already injected."""
    facts.write("project/acme/kafka-alarm", "The kafka consumer lag alarm fires at 5000 messages.", "project")
    question = "why does the kafka consumer lag alarm page us at night?"
    assert [c.id for c in run(facts, question).facts] == ["project/acme/kafka-alarm@v1"]
    out = run(facts, question, exclude_ids={"project/acme/kafka-alarm@v1"})
    assert out.facts == []
    (cand,) = [c for c in out.rejected if c.id == "project/acme/kafka-alarm@v1"]
    assert cand.reason == "already injected in this conversation"


def test_raw_excerpt_from_another_session_passes(mem):
    """A raw turn of another session that covers the person's strong terms passes as an excerpt."""
    mem.append_turns("sess-old", [("user", "the kafka consumer lag alarm was raised to 8000 messages", T0, None)])
    out = run(mem, "what is the kafka consumer lag alarm threshold now?")
    assert [c.row["session"] for c in out.raw] == ["sess-old"]
    assert out.raw[0].score >= 0.25


def test_raw_excerpts_only_for_turns_that_ask(mem):
    """A statement, or a turn that only carries tool output, gets no excerpt; a question or a pointer to earlier
    work does."""
    mem.append_turns("sess-old", [("user", "the kafka consumer lag alarm was raised to 8000 messages", T0, None)])
    told = run(mem, "bump the kafka consumer lag alarm in the helm chart")
    assert told.raw == [] and not [c for c in told.rejected if c.row.get("session")]
    tool = recall(
        mem.index,
        stats_of(mem),
        [Cue("user", "kafka consumer lag alarm: 9120 messages behind")],
        "acme",
        set(),
        [],
        set(),
        Config(owner="tester").recall,
    )
    assert tool.raw == []
    assert [c.row["session"] for c in run(mem, "set the kafka consumer lag alarm like last time").raw] == ["sess-old"]


def test_ask_pattern_is_linear():

    from bead.recall.gate import ASKS

    assert_linear(ASKS.search, lambda n: "did " * (n // 4) + "we", 800_000)


def test_raw_excerpts_from_excluded_sessions_never_pass(mem):
    """Turns of excluded sessions are never excerpts, even when they outnumber the index's over-fetch."""
    mem.append_turns("sess-now", [("user", f"kafka consumer lag alarm note {i}", T0, None) for i in range(120)])
    mem.append_turns("sess-now-abc12345", [("assistant", "kafka consumer lag alarm seen by the subagent", T0, None)])
    mem.append_turns("sess-old", [("user", "the kafka consumer lag alarm was raised to 8000 messages", T0, None)])
    out = run(mem, "what is the kafka consumer lag alarm threshold now?", exclude_sessions=["sess-now", "sess-now-abc12345"])
    sessions = {c.row["session"] for c in out.raw + out.rejected if c.row.get("session")}
    assert sessions == {"sess-old"}
    assert [c.row["session"] for c in out.raw] == ["sess-old"]


def test_raw_excerpt_already_injected_is_rejected(mem):
    """A raw turn whose text id the conversation already carries is rejected, not injected again."""
    from bead.recall.render import text_id

    text = "the kafka consumer lag alarm was raised to 8000 messages"
    mem.append_turns("sess-old", [("user", text, T0, None)])
    out = run(mem, "what is the kafka consumer lag alarm threshold now?", exclude_raw={text_id(text)})
    assert out.raw == []
    assert [c.reason for c in out.rejected] == ["the same text is already injected in this conversation"]


def test_no_usable_cue_terms_gives_nothing(facts):
    """Cues made of stopwords and project words only give an empty recall."""
    out = run(facts, "what is this about acme", project="acme")
    assert out.facts == [] and out.raw == [] and out.rejected == []
