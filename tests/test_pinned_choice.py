"""The pinned block chooses by what predicts use; evals give the same figures on every run."""

from __future__ import annotations

import pytest
from conftest import REPO
from linear import assert_linear

from bead.config import Config
from bead.conversation import Conversation
from bead.core.memory import Memory
from bead.core.pinned import pinned_block, standing_memory
from bead.evals import injection, scaled, suite
from bead.evals.suite import TickingClock
from bead.index.rebuild import rebuild
from bead.paths import Home
from bead.recall import render, standing
from bead.wire.anthropic import conversation_of

SUITE = REPO / "evals" / "injection.yaml"


@pytest.fixture
def mem(bead_home):
    """A memory whose every write has its own second (ties on valid_from would hide the order under test)."""
    m = Memory(Home(bead_home).ensure(), Config(owner="tester"), TickingClock())
    yield m
    m.close()


def opening(text: str, branch: str | None = None) -> Conversation:
    blocks = []
    if branch:
        blocks.append(
            {
                "type": "text",
                "text": f"<system-reminder>\n# gitStatus\nCurrent branch: {branch}\n\nStatus:\n(clean)\n</system-reminder>",
            }
        )
    blocks.append({"type": "text", "text": text})
    return conversation_of({"system": "x", "messages": [{"role": "user", "content": blocks}]}, {})


def filler(mem, n: int, project: str = "shop") -> None:
    for i in range(n):
        mem.write(
            f"project/{project}/note-{i}",
            f"Module {i} keeps its settings in config/module_{i}.toml and "
            f"logs to the module_{i} logger; its tests live in tests/test_module_{i}.py.",
            "project",
        )


class TestChoice:
    @pytest.mark.parametrize("policy", ["opening", "recency"])
    def test_another_projects_rules_are_never_pinned(self, mem, policy):
        """A feedback or user fact kept under another project's scope is that project's: the pinned block of this
        project's conversation, or of one with no project, leaves it out, on priors alone and when the opening
        names it, and so does the first cue block's inferred fact; the person's own (user/) rules are pinned
        everywhere."""
        mem.write("project/alpha/no-friday-deploys", "Never deploy alpha on Fridays.", "feedback")
        mem.write("project/alpha/style", "Alpha wants tabs in every file.", "user")
        mem.write("project/alpha/deploy-check", "Friday deploys need the tabs check.", "feedback", trust="agent_observed")
        mem.write("user/commits", "Write commit messages in the imperative.", "feedback")
        mem.write("project/beta/port", "beta runs on port 8000.", "project")
        for project, want in (("beta", ["project/beta/port@v1", "user/commits@v1"]), (None, ["user/commits@v1"])):
            for conv in (None, opening("can we deploy on friday? and tabs in every file? the tabs check?")):
                _, ids, ahead = standing_memory(mem, project, 2000, conv, policy)
                assert sorted(ids) == want
                assert not [r["key"] for r in ahead if r["key"].startswith("project/alpha/")]
        _, ids = pinned_block(mem, "alpha", 2000, None, policy)
        assert "project/alpha/no-friday-deploys@v1" in ids and "project/beta/port@v1" not in ids
        # The same opening in alpha's own conversation brings the observed rule in as its first cue block's.
        _, _, ahead = standing_memory(mem, "alpha", 2000, opening("the tabs check for friday deploys?"), "opening")
        if policy == "opening":
            assert [r["key"] for r in ahead] == ["project/alpha/deploy-check"]

    def test_the_opening_brings_its_fact_in(self, mem, monkeypatch):
        monkeypatch.setattr(standing, "LENGTH_POWER", 0.0)  # length apart: a shorter fact stands first (below)
        mem.write("project/shop/payments", "Payments go through Stripe; test keys live in .env.test.", "project")
        filler(mem, 120)
        _, before = pinned_block(mem, "shop", 600, None, "opening")
        assert "project/shop/payments@v1" not in before
        _, ids = pinned_block(mem, "shop", 600, opening("why does the stripe checkout fail with a 401?"), "opening")
        assert ids[0] == "project/shop/payments@v1"

    def test_the_projects_facts_go_by_their_bare_names_so_more_fit(self, mem):
        """The pinned block writes a fact of the conversation's project without `project/<name>/` (as the pointers
        do; get_memory and `bead show` take the bare name), any other scope's in full, and the budget holds more."""
        mem.write("user/shell", "fish with vi keys", "user")
        mem.write("project/shop/db-port", "Postgres listens on 5433.", "project")
        text, ids = pinned_block(mem, "shop", 2000, None, "opening")
        assert text is not None and len(ids) == 2
        lines = [ln for ln in text.splitlines() if ln.startswith("- ")]
        assert sorted(ln.split(" (")[0] for ln in lines) == ["- db-port", "- user/shell"]
        assert "project/shop/" not in text
        # The same budget holds more of the project's facts than their full keys would let in.
        filler(mem, 40, project="a-long-project-name")
        text, ids = pinned_block(mem, "a-long-project-name", 400, None, "opening")
        assert text is not None and "project/a-long-project-name/" not in text
        rows = standing.choose(mem.index, "a-long-project-name", None, "opening", budget_tokens=400)
        _, with_full_keys = render.block("pinned", render.PINNED_HEADER, [render.fact_line(r) for r in rows], 400)
        assert len(ids) > with_full_keys

    def test_pinned_flag_first_then_feedback_over_project_over_reference(self, mem):
        mem.write("project/shop/ref", "Docs live at docs/index.md.", "reference")
        mem.write("project/shop/proj", "The API listens on 8000.", "project")
        mem.write("project/shop/fb", "Never push to main.", "feedback")
        mem.write("project/shop/pin", "Staging is staging.shop.test.", "reference", pinned=True)
        _, ids = pinned_block(mem, "shop", 2000, None, "opening")
        assert ids == ["project/shop/pin@v1", "project/shop/fb@v1", "project/shop/proj@v1", "project/shop/ref@v1"]

    def test_only_the_persons_word_or_pin_stands_in_the_block(self, mem):
        """What an agent observed or the dream inferred never stands in every conversation unless the
        person accepted or pinned it; each policy, and get_memory_context, hold to that."""
        from bead.core import query

        mem.write("project/shop/a", "The worker runs with concurrency 4.", "project", trust="agent_observed")
        mem.write("user/tabs", "The person indents with tabs.", "user", trust="dream_inferred")
        mem.write("project/shop/b", "The cache lives in Redis db 2.", "project")
        mem.write("project/shop/c", "Deploys go through the blue-green script.", "project", trust="accepted")
        mem.write("project/shop/d", "The admin runs on port 8001.", "project", trust="dream_inferred", pinned=True)
        for policy in ("opening", "recency"):
            _, ids = pinned_block(mem, "shop", 2000, opening("worker concurrency tabs cache"), policy)
            assert sorted(ids) == ["project/shop/b@v1", "project/shop/c@v1", "project/shop/d@v1"], policy
        assert query.memory_context(mem, "worker concurrency", project="shop").pinned[0] == "project/shop/d@v1"
        assert "project/shop/a@v1" not in query.memory_context(mem, "worker concurrency", project="shop").pinned

    def test_a_strongly_matched_inferred_fact_goes_to_the_first_cue_block_instead(self, mem):
        from bead.core.pinned import standing_memory

        mem.write(
            "project/shop/worker", "The celery worker runs with concurrency 4 on the box.", "project", trust="agent_observed"
        )
        mem.write("project/shop/other", "Invoices are numbered per tenant.", "project", trust="dream_inferred")
        filler(mem, 20)
        conv = opening("why is the celery worker concurrency so low?")
        assert [r["id"] for r in standing_memory(mem, "shop", 2000, conv)[2]] == ["project/shop/worker@v1"]
        # A weak match (the opening's best match is a stated fact, this one far below it) stays out.
        mem.write(
            "project/shop/celery",
            "Celery worker concurrency is set in the celery worker config, celery worker concurrency 8.",
            "project",
        )
        assert standing_memory(mem, "shop", 2000, conv)[2] == []

    def test_recent_recall_and_reinforcement_count(self, mem, monkeypatch):
        from bead.core import query

        monkeypatch.setattr(standing, "LENGTH_POWER", 0.0)  # length apart (below)

        mem.write("project/shop/old", "Invoices are numbered per tenant.", "project")
        filler(mem, 3)
        _, before = pinned_block(mem, "shop", 2000, None, "opening")
        assert before.index("project/shop/old@v1") == 3  # the oldest project fact comes last
        query.recall(mem, "invoices numbered tenant", note=True)
        assert mem.recent_uses() == {"project/shop/old": 1}
        _, after = pinned_block(mem, "shop", 2000, None, "opening")
        assert after[0] == "project/shop/old@v1"
        # Derived from audit.log: a rebuild keeps it.
        rebuild(mem.index, mem.facts, mem.raw)
        assert mem.recent_uses() == {"project/shop/old": 1}

    def test_a_shorter_fact_stands_first_unless_the_opening_matches_the_longer(self, mem):
        """Among facts the opening does not match, the block holds more of the short ones (a fact's prior over its
        line's length to LENGTH_POWER); a fact the opening matches keeps its whole prior, however long."""
        for i in range(6):
            mem.write(f"project/shop/short-{i}", f"Service {i} listens on port 80{i}0.", "project")
        long_body = "Invoices are numbered per tenant, " + "with the tenant's prefix and a running counter, " * 12
        mem.write("project/shop/long", long_body.strip(), "project")
        _, ids = pinned_block(mem, "shop", 2000, None, "opening")
        assert ids[-1] == "project/shop/long@v1", "the newest, but the longest: last"
        _, budget_ids = pinned_block(mem, "shop", 200, None, "opening")
        assert "project/shop/long@v1" not in budget_ids and len(budget_ids) >= 3
        _, ids = pinned_block(mem, "shop", 2000, opening("how are invoices numbered for a tenant?"), "opening")
        assert ids[0] == "project/shop/long@v1"
        assert standing.length_factor(10) > standing.length_factor(100) > standing.length_factor(1000)

    def test_a_weak_match_never_ranks_a_fact_below_where_it_stood_unmatched(self, mem):
        """A review: a short rule the opening matched weakly (a shared common word, relevance 0.002) scored its prior
        x 1.02 against x 1.9 unmatched, so "... after the deploy" pushed every short deploy rule out of the block."""
        for i in range(30):
            mem.write(f"user/rule-{i}", f"Rulex {i:02d}.", "feedback")
        for i in range(30):
            mem.write(f"user/deploy-{i}", f"Deploy {i:02d}.", "feedback")
        mem.write(
            "project/shop/invoices",
            "Invoices are numbered per tenant, with the tenant prefix and a running counter; the invoice export job "
            "runs nightly and writes csv files to the reports bucket.",
            "project",
        )
        plain = "the invoice export job failed for tenant acme: invoices numbered per tenant are missing from the bucket"
        counts = []
        for text in (plain, plain + " after the deploy"):
            _, ids = pinned_block(mem, "shop", 300, opening(text), "opening")
            counts.append(sum(1 for i in ids if i.startswith("user/deploy-")))
        assert counts[0] > 0 and counts[1] >= counts[0], counts

    def test_length_is_counted_in_tokens_not_characters(self, mem):
        """A review: 120 CJK characters cost the block 128 tokens, 60 emoji 188, while 395 ASCII characters cost 107;
        by characters the wide ones were weighed as the shortest. The count comes from the body's characters and
        bytes (no body is read to score): exact for ASCII and CJK, short for an emoji."""
        mem.write("project/shop/ascii", "Invoices are numbered per tenant. " * 11, "project")
        mem.write("project/shop/cjk", "\u8acb\u6c42\u66f8\u306f\u30c6\u30ca\u30f3\u30c8\u3054\u3068" * 12, "project")
        mem.write("project/shop/emoji", "\U0001f680" * 60, "project")
        rows = {r["key"]: r for r in mem.index.pinned_priors("shop")}
        tokens = {k: standing.body_tokens(r) for k, r in rows.items()}
        assert (
            tokens["project/shop/cjk"] > tokens["project/shop/ascii"]
            and tokens["project/shop/emoji"] > tokens["project/shop/cjk"]
        )
        for key in ("project/shop/ascii", "project/shop/cjk", "project/shop/emoji"):
            assert tokens[key] == render.tokens(mem.current(key).body), key
        # a third review's: a body in a two-byte script was counted a third short
        mem.write("project/shop/cyrillic", "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440 " * 20, "project")
        # a fourth review's: a rule in Chinese with ASCII code in it was counted half again too long
        mem.write("project/shop/mixed", "\u90e8\u7f72\u524d\u8fd0\u884c make test \u7136\u540e " * 10, "project")
        rows = {r["key"]: r for r in mem.index.pinned_priors("shop")}
        for key in ("project/shop/cyrillic", "project/shop/mixed"):
            assert standing.body_tokens(rows[key]) == render.tokens(mem.current(key).body), key

    def test_forget_drops_the_use_rows(self, mem):
        from bead.core import forget, query

        mem.write("project/shop/old", "Invoices are numbered per tenant.", "project")
        query.recall(mem, "invoices numbered", note=True)
        forget.apply(mem, forget.plan_target(mem, "project/shop/old"))
        assert mem.recent_uses() == {}
        rebuild(mem.index, mem.facts, mem.raw)
        assert mem.recent_uses() == {}

    def test_cached_candidates_follow_changes_made_elsewhere(self, mem):
        """The scored candidates are kept between conversations; any change to a fact row, made
        through another connection (another process: the CLI, the dream), makes the next block see it."""
        filler(mem, 5)
        _, first = pinned_block(mem, "shop", 2000, None, "opening")
        assert ("pinned_priors", "shop", None, 5000, (), standing.LENGTH_POWER, standing.LENGTH_UNIT, standing.LINE_TOKENS) in {
            k for k in mem.index.memo
        }
        other = Memory(mem.home, Config(owner="tester"), TickingClock())
        try:
            other.write("project/shop/new-rule", "Releases go out on Tuesdays only.", "feedback")
            _, second = pinned_block(mem, "shop", 2000, None, "opening")
            assert second[0] == "project/shop/new-rule@v1" and second[1:] == first
            # A status change (the dream putting a fact to sleep) is a change too.
            assert other.set_status(other.current("project/shop/note-0"), "dormant")
        finally:
            other.close()
        _, third = pinned_block(mem, "shop", 2000, None, "opening")
        assert "project/shop/note-0@v1" not in third

    def test_the_branch_is_part_of_the_opening(self, mem):
        assert standing.opening_of(opening("hi", "feature/invoice-pdf")).branch == "feature/invoice-pdf"
        assert "invoice pdf" in standing.opening_of(opening("hi", "feature/invoice-pdf")).query
        assert standing.opening_of(opening("hi", "main")).query == "hi"
        mem.write("project/shop/pdf", "PDFs are rendered by WeasyPrint from templates/pdf.", "project")
        filler(mem, 120)
        _, ids = pinned_block(mem, "shop", 600, opening("let's continue", "feature/pdf-rendering"), "opening")
        assert ids[0] == "project/shop/pdf@v1"

    def test_branch_pattern_is_linear(self):

        assert_linear(
            lambda t: standing.opening_of(opening(t)),
            lambda n: "Current branch:" + " " * (n * 2 // 5) + "x" * (n * 3 // 5),
            500_000,
        )

    def test_recency_policy_is_the_old_block(self, mem):
        mem.write("project/shop/a", "First.", "project")
        mem.write("project/shop/b", "Second.", "project")
        _, ids = pinned_block(mem, "shop", 2000, opening("first"), "recency")
        assert ids == ["project/shop/b@v1", "project/shop/a@v1"]


class TestDeterministic:
    def test_ticking_clock_orders_every_write(self):
        clock = TickingClock()
        times = [clock() for _ in range(5)]
        assert times == sorted(times) and len(set(times)) == 5

    def test_a_suite_gives_the_same_figures_twice(self, scaled_dev, injection_dev):
        """A second run of the scaled suite (the guard below runs the first) and a second injection run (the
        module's first is ``injection_dev``) agree."""
        s = suite.load(SUITE)
        strip = lambda r: [{k: v for k, v in d.items() if not k.endswith("ms")} for d in r["details"]]  # noqa: E731
        again = scaled.run(s, 300, split="dev")
        assert strip(again) == strip(scaled_dev)
        assert again["splits"]["dev"]["delivered"] == scaled_dev["splits"]["dev"]["delivered"]
        c, d = injection_dev, injection.run(s, split="dev")
        assert [x["pinned"] for x in c["details"]] == [x["pinned"] for x in d["details"]]

    def test_the_figures_do_not_depend_on_the_proxys_deadline(self, injection_dev):
        """An eval's recall step is not cut by the proxy's deadline: on a busy machine a search past it failed open
        and the turn counted as given nothing. With a deadline of 1 ms every decision is the same."""
        s = suite.load(SUITE)
        tight = injection.run(s, split="dev", config_text="proxy:\n  recall_deadline_ms: 1\n")
        strip = lambda r: [{k: v for k, v in d.items() if k != "ms"} for d in r["details"]]  # noqa: E731
        assert strip(tight) == strip(injection_dev)


@pytest.fixture(scope="module")
def scaled_both() -> list[dict]:
    """The scaled injection suite's dev split at 300 near-miss facts, with the default pinned block and with the
    one before issue #17 (recency), over one store: built once for this module."""
    recency = suite.Setting("recency", "proxy:\n  pinned_select: recency\n")
    return scaled.run_settings(suite.load(SUITE), 300, [suite.Setting(), recency], split="dev")


@pytest.fixture(scope="module")
def scaled_dev(scaled_both) -> dict:
    return scaled_both[0]


@pytest.fixture(scope="module")
def injection_dev() -> dict:
    """The injection suite's dev split with the default settings: one run for this module."""
    return injection.run(suite.load(SUITE), split="dev")


def test_scaled_injection_guard_on_dev(scaled_both):
    """The chosen pinned block at 300 near-miss facts: the target is 0.9 of needed facts within 2,000 tokens,
    far above the block before issue #17."""
    r, old = (x["splits"]["dev"] for x in scaled_both)
    assert scaled_both[0]["policy"] == "opening" and scaled_both[1]["policy"] == "recency"
    assert r["delivered"] >= 0.88 and r["pinned_tokens_max"] <= 2000
    assert r["delivered"] >= old["delivered"] + 0.3


POINTER_FIGURES = {
    "delivered",
    "reachable",
    "pointers_per_turn",
    "pointer_tokens_mean",
    "pointer_precision",
    "false_injection_turns",
}


def test_later_turns_reach_what_they_need_through_pointers(scaled_dev):
    """Issue #22's figures, under these names (other tools read them), per split and for the later case;
    a later turn reaches far more through pointers than through fact bodies alone, within 80 tokens."""
    r = scaled_dev["splits"]["dev"]
    assert POINTER_FIGURES <= set(r) and POINTER_FIGURES <= set(r["later"])
    later = r["later"]
    assert later["reachable"] >= later["delivered"] + 0.3
    assert later["pointer_tokens_mean"] <= 80 and later["pointers_per_turn"] >= 2
    assert all(row["later_pointer_tokens"] <= 80 for row in scaled_dev["details"])
    # A key pointed to is never one the turn was shown (pinned or cue body).
    for row in scaled_dev["details"]:
        assert not set(row["later_pointed"]) & (set(row["later_pinned"]) | set(row["later_cue"]))


def test_pointers_off_is_the_old_cue_block(injection_dev):
    s = suite.load(SUITE)
    off = injection.run(s, split="dev", config_text="recall:\n  pointers: 0\n")
    on = injection_dev
    assert (
        off["splits"]["dev"]["pointers_per_turn"] == 0 and off["splits"]["dev"]["reachable"] == off["splits"]["dev"]["delivered"]
    )
    assert on["splits"]["dev"]["pointers_per_turn"] > 0.5
    # Pointers never change which fact bodies pass the gate.
    assert [d["injected"] for d in on["details"]] == [d["injected"] for d in off["details"]]


def test_a_store_of_long_facts_renders_only_what_the_block_can_hold(mem, monkeypatch):
    """Every candidate was rendered (its escape pass reads each character) before the budget cut: 300 of the
    person's facts of 64 KB held the proxy's first request past its deadline (an adversarial pass). A row is
    rendered only while the block has room, and a body whose characters alone pass the room is not rendered."""
    for i in range(40):
        mem.write(f"user/short-{i}", f"Short fact number {i} about the deploy", "user")
    for i in range(40):
        mem.write(f"user/long-{i}", f"Long fact {i} about the deploy " + "word " * 4000, "user")
    read: list[int] = []
    real = render.shown
    monkeypatch.setattr(render, "shown", lambda body: read.append(len(body)) or real(body))
    text, ids, _ = standing_memory(mem, None, 2000, opening("the deploy"), "opening")
    assert text is not None and ids and all("/short-" in i for i in ids)
    assert len(read) == len(ids) and max(read) < 100, "no long body is rendered"
