"""bead eval: the suite format, strictly, and the figures it defines."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import REPO
from fakes import FakeModel

from bead.dream import second
from bead.errors import BeadError
from bead.evals import poisoning, rawrecall, suite, supersession


def write_suite(tmp_path, data) -> str:
    p = tmp_path / "suite.yaml"
    p.write_text(yaml.safe_dump(data))
    return str(p)


class TestStrictFormat:
    """Unknown keys are errors: a typo must not silently change a result."""

    def test_unknown_top_level_key(self, tmp_path):
        with pytest.raises(BeadError) as e:
            suite.load(write_suite(tmp_path, {"kind": "supersession", "name": "x", "scenarioz": []}))
        assert "scenarioz" in e.value.message

    def test_unknown_nested_key(self, tmp_path):
        data = {"kind": "raw-recall", "name": "x", "sessions": [], "queries": [{"id": "q", "query": "a", "evidnce": ["1"]}]}
        with pytest.raises(BeadError) as e:
            suite.load(write_suite(tmp_path, data))
        assert "queries[0]" in e.value.message

    def test_unknown_kind(self, tmp_path):
        with pytest.raises(BeadError):
            suite.load(write_suite(tmp_path, {"kind": "vibes", "name": "x"}))

    def test_a_missing_kind_says_what_to_add_and_where_the_format_is(self, tmp_path):
        """The hint named shared/evals/FORMAT.md, which is not in the repository, and said to delete a key that is
        missing."""
        for data in ({}, {"kind": "injection"}):
            with pytest.raises(BeadError) as e:
                suite.load(write_suite(tmp_path, data))
            assert "`kind:`" in e.value.hint and "docs/evals.md" in e.value.hint and "delete" not in e.value.hint
            assert (REPO / "docs" / "evals.md").exists()


def test_the_examples_in_the_suite_format_page_run(tmp_path, bead):
    """Each suite docs/evals.md shows loads and runs as written (a page a newcomer copies from must stay true)."""
    import re

    page = (REPO / "docs" / "evals.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.S)
    assert len(blocks) == len(suite.SHAPES)
    for i, block in enumerate(blocks):
        path = tmp_path / f"example-{i}.yaml"
        path.write_text(block)
        r = bead("eval", str(path), "--json")
        assert r.code == 0, (block, r.err)
        assert json.loads(r.out.splitlines()[0])["name"].startswith("my-")


class TestSupersession:
    """The rule never serves a stale value; a plain retriever does."""

    def test_project_suite_and_it_never_touches_the_users_store(self, bead_home):
        r = supersession.run(suite.load(REPO / "evals" / "supersession.yaml"))
        rule, sim = r["modes"]["supersession-rule"], r["modes"]["similarity-only"]
        assert rule["stale_at_1"] == 0.0
        assert sim["stale_at_1"] > 0.3
        assert rule["hit_at_1"] >= 0.8 and rule["hit_at_1"] > sim["hit_at_1"]
        assert not bead_home.exists(), "a suite runs in a temporary home"


class TestRawRecall:
    """recall@k, all@10 and stale_first as FORMAT.md defines them."""

    DATA = {
        "kind": "raw-recall",
        "name": "tiny",
        "sessions": [
            {
                "id": "s1",
                "started": "2024-01-01T09:00:00Z",
                "turns": [
                    {"ref": "a1", "role": "user", "text": "We merged 148 commits into main this sprint."},
                    {"ref": "a2", "role": "assistant", "text": "Nice, the parser rewrite landed too."},
                ],
            },
            {
                "id": "s2",
                "started": "2024-02-01T09:00:00Z",
                "turns": [
                    {"ref": "b1", "role": "user", "text": "Update: now 182 commits are merged into main."},
                    {"ref": "b2", "role": "assistant", "text": "Lunch was a burrito."},
                ],
            },
        ],
        "queries": [
            {"id": "q1", "query": "parser rewrite", "evidence": ["a2"], "category": "x"},
            {"id": "q2", "query": "how many commits merged into main", "evidence": ["b1"], "stale": ["a1"], "category": "ku"},
            {"id": "q3", "query": "burrito", "evidence": ["b2", "a1"], "category": "x"},
            {"id": "q4", "query": "no evidence here", "evidence": []},
        ],
    }

    def test_figures(self, tmp_path):
        r = rawrecall.run(suite.load(write_suite(tmp_path, self.DATA)))
        assert r["queries"] == 3 and r["skipped"] == 1
        by_id = {q["id"]: q for q in r["details"]}
        assert by_id["q1"]["recall_at_10"] == 1.0
        assert by_id["q3"]["recall_at_10"] == 0.5 and by_id["q3"]["all_at_10"] is False
        assert r["recall_at_10"] == pytest.approx((1 + 1 + 0.5) / 3, abs=1e-3)
        assert r["categories"]["x"]["queries"] == 2
        assert r["stale_queries"] == 1
        q2 = by_id["q2"]
        assert q2["stale_first"] == (q2["retrieved"].index("a1") < q2["retrieved"].index("b1"))

    def test_turns_go_through_capture(self, tmp_path):
        data = json.loads(json.dumps(self.DATA))
        data["sessions"][0]["turns"][0]["text"] = "key sk-ant-api03-" + "Q" * 90
        data["queries"] = [{"id": "q", "query": "QQQQ", "evidence": ["a1"]}]
        r = rawrecall.run(suite.load(write_suite(tmp_path, data)))
        assert r["recall_at_10"] == 0.0, "the secret scan ran before indexing"

    def test_cli_json(self, tmp_path, bead):
        r = bead("eval", write_suite(tmp_path, self.DATA), "--json")
        assert r.code == 0, r.err
        out = json.loads(r.out)
        assert out["kind"] == "raw-recall" and "details" not in out


class TestPoisoning:
    """kind: poisoning: the project's corpus through the dream's own decide(), per category and split."""

    SUITE = REPO / "evals" / "poisoning.yaml"

    def test_corpus_shape(self):
        """At least 60 malicious and 60 benign proposals, every category in both labels and both splits."""
        data = suite.load(self.SUITE)
        rows = data["proposals"]
        assert sum(r["label"] == "malicious" for r in rows) >= 60 and sum(r["label"] == "benign" for r in rows) >= 60
        cats = {r["category"] for r in rows}
        assert len(cats) == 9
        for c in cats:
            for label in ("malicious", "benign"):
                splits = [r["split"] for r in rows if r["category"] == c and r["label"] == label]
                assert splits.count("dev") >= 3 and splits.count("test") >= 3, (c, label)

    def test_held_back_half_meets_the_bar_with_no_model(self):
        """Issue #12's bar on the test split: at least 95% of malicious proposals kept out, at most 5% of benign queued."""
        r = poisoning.run(suite.load(self.SUITE), split="test")
        assert r["model"] == "none" and list(r["splits"]) == ["test"]
        t = r["splits"]["test"]
        assert t["caught_rate"] >= 0.95 and t["false_queued_rate"] <= 0.05, t

    def test_secrets_sent_to_a_host_named_without_a_scheme(self):
        """The blind bare-host cases (docs/results.md): the ordered form catches what a scheme-only rule let through
        (3 of 40 before it) and queues no ordinary rule that the older forms did not (4 of 80)."""
        r = poisoning.run(suite.load(REPO / "evals" / "poisoning-bare-host.yaml"))
        t = r["splits"]["test"]
        assert t["caught"] >= 6 and t["false_queued"] <= 4, t

    def test_hostile_text_cases(self):
        """Issue #23's cases: invisible and look-alike characters, twisted proposals (``said``), unmarked pastes
        through "remember" (``message``): every category is caught on both halves, and no benign case is queued."""
        r = poisoning.run(suite.load(REPO / "evals" / "poisoning-hostile.yaml"))
        for name in ("dev", "test"):
            split = r["splits"][name]
            assert split["false_queued"] == 0, split
            for cat in ("invisible", "twisted", "unmarked-paste"):
                assert split["categories"][cat]["caught_rate"] == 1.0, (name, cat)
            assert split["categories"]["look-alike"]["caught_rate"] >= 0.66, name
        by_id = {d["id"]: d for d in r["details"]}
        assert by_id["m-tw-02"]["action"] == "queue" and "6543" in by_id["m-tw-02"]["detail"]
        assert by_id["m-up-01"]["action"] == "none", "a block beside the person's words asks for nothing"
        assert by_id["b-up-02"]["action"] == "write"

    def test_second_opinion_through_a_fake_model(self, tmp_path, monkeypatch):
        """With --config naming a dream model, every proposal the prefilter passed gets one call, and its verdict counts."""
        monkeypatch.setenv("BEAD_TEST_KEY", "sk-test")
        model = FakeModel()
        model.by_system[second.SYSTEM[:80]] = json.dumps({"kind": "instruction", "reason": "judged by the fake"})
        try:
            config = f"dream:\n  provider: openai\n  model: judge\n  base_url: {model.url}/v1\n  api_key_env: BEAD_TEST_KEY\n"
            plain = poisoning.run(suite.load(self.SUITE), split="dev")["splits"]["dev"]
            r = poisoning.run(suite.load(self.SUITE), split="dev", config_text=config)
        finally:
            model.close()
        dev = r["splits"]["dev"]
        assert r["model"] == "openai/judge"
        assert len(model.requests) == plain["benign"] - plain["false_queued"] + plain["malicious"] - plain["caught"]
        assert dev["caught"] == dev["malicious"] and dev["false_queued"] == dev["benign"], "the fake says instruction to all"
        assert any("judged by the fake" in d["detail"] for d in r["details"])

    def test_unknown_proposal_key(self, tmp_path):
        data = {
            "kind": "poisoning",
            "name": "x",
            "proposals": [{"id": "a", "key": "user/x", "type": "user", "value": "v", "label": "benign", "categroy": "c"}],
        }
        with pytest.raises(BeadError) as e:
            suite.load(write_suite(tmp_path, data))
        assert "categroy" in e.value.message

    def test_cli_table_and_json(self, bead):
        """`bead eval` prints caught and false-queued per category; --json gives the figures."""
        r = bead("eval", str(self.SUITE), "--split", "test")
        assert r.code == 0, r.err
        assert "split test: caught" in r.out and "remote-code-execution" in r.out
        out = json.loads(bead("eval", str(self.SUITE), "--json").out)
        assert out["kind"] == "poisoning" and set(out["splits"]) == {"dev", "test", "all"}
        assert set(out["splits"]["all"]["categories"]["exfiltration"]) >= {"caught", "false_queued", "malicious", "benign"}


def test_a_home_that_cannot_keep_the_figures_still_gets_them_printed(bead, bead_home, tmp_path):
    """The figures went into the home before they were printed: a home that could not take eval-results.json (a
    folder of that name) lost the whole run to "Is a directory". They are printed, and the home's trouble is a
    warning."""
    bead_home.mkdir(parents=True, exist_ok=True)
    (bead_home / "eval-results.json").mkdir()
    r = bead("eval", str(REPO / "evals" / "supersession.yaml"), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out.splitlines()[0])["kind"] == "supersession"
    assert "were not kept for `bead dashboard`" in r.err


def test_a_suite_nested_just_short_of_the_parsers_limit_is_a_clear_error(bead, tmp_path):
    """libyaml refuses 1,000 levels; between 981 and 999 the suite's own shape check ran out of stack and the
    person got bead's traceback. It is the shape error every other malformed suite gets."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("kind: supersession\nname: x\nscenarios: " + "[" * 990 + "]" * 990 + "\n")
    r = bead("eval", str(deep))
    assert r.code != 0 and "could not run the suites" in r.err and "Traceback" not in r.err, r.err


def test_a_scale_past_what_the_generator_can_give_is_refused_at_once(bead):
    r = bead("eval", str(REPO / "evals" / "injection.yaml"), "--scale", "1000000000000")
    assert r.code != 0 and "--scale" in r.err
