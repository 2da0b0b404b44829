"""Near-miss distractors for the scaled injection eval (bead.evals.nearmiss)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from bead.capture import secrets
from bead.evals import generated, nearmiss
from bead.store.keys import validate_key

SUITE = Path(__file__).resolve().parents[1] / "evals" / "injection.yaml"
TRUSTS = ["user_stated", "accepted", "agent_observed", "dream_inferred"]
# Roughly 10% user, 20% feedback, 55% project, 15% reference.
MIX = {"user": (0.06, 0.14), "feedback": (0.15, 0.25), "project": (0.48, 0.62), "reference": (0.10, 0.20)}


@pytest.fixture(scope="module")
def suite_facts() -> list[dict]:
    return yaml.safe_load(SUITE.read_text())["facts"]


@pytest.fixture(scope="module")
def made(suite_facts) -> list[dict]:
    return nearmiss.facts(300, "invoicing", TRUSTS, avoid=[f["body"] for f in suite_facts])


def test_deterministic():
    assert nearmiss.facts(120, "invoicing", TRUSTS) == nearmiss.facts(120, "invoicing", TRUSTS)
    assert nearmiss.facts(120, "invoicing", TRUSTS, seed=5) != nearmiss.facts(120, "invoicing", TRUSTS)


def test_interleave_is_the_generated_one():
    assert nearmiss.interleave is generated.interleave


@pytest.mark.parametrize("n", [0, 1, 37, 300, 1500])
def test_n_facts_with_unique_valid_keys(n):
    out = nearmiss.facts(n, "invoicing", TRUSTS)
    assert len(out) == n
    assert len({f["key"] for f in out}) == n
    assert len({f["body"] for f in out}) == n
    for f in out:
        assert set(f) == {"key", "type", "body", "trust"}
        assert validate_key(f["key"]) == f["key"]
        assert f["key"].startswith(("user/", "project/invoicing/"))
        assert f["trust"] in TRUSTS
        assert not any(ord(c) < 32 for c in f["body"])


def test_user_facts_have_user_keys(made):
    for f in made:
        if f["type"] == "user":
            assert f["key"].startswith("user/")


def test_templates():
    assert len(nearmiss.TEMPLATES) >= 320
    assert len({t.body for t in nearmiss.TEMPLATES}) == len(nearmiss.TEMPLATES)
    assert len({t.slug for t in nearmiss.TEMPLATES}) == len(nearmiss.TEMPLATES)
    counts = Counter(t.type for t in nearmiss.TEMPLATES)
    for typ, (lo, hi) in MIX.items():
        assert lo <= counts[typ] / len(nearmiss.TEMPLATES) <= hi, typ


@pytest.mark.parametrize("n", [300, 2000])
def test_type_mix(n):
    counts = Counter(f["type"] for f in nearmiss.facts(n, "invoicing", TRUSTS))
    for typ, (lo, hi) in MIX.items():
        assert lo <= counts[typ] / n <= hi, (typ, counts)


def test_body_lengths(made):
    lengths = [len(f["body"]) for f in made]
    assert min(lengths) >= 50 and max(lengths) <= 320
    assert sum(60 <= n <= 300 for n in lengths) >= 0.95 * len(lengths)


def test_no_body_is_flagged_by_the_secret_scan(made):
    flagged = [f["body"] for f in made if secrets.scan(f["body"])]
    assert flagged == []


def test_suite_keys_are_not_reused(suite_facts, made):
    assert not {f["key"] for f in suite_facts} & {f["key"] for f in made}


def test_avoid_keeps_away_from_the_suite(suite_facts, made):
    avoid = [nearmiss.words(f["body"]) for f in suite_facts]
    for f in made:
        w = nearmiss.words(f["body"])
        assert all(nearmiss.jaccard(w, a) < 0.5 for a in avoid), f["body"]


def test_avoid_drops_an_equal_body():
    first = nearmiss.facts(40, "invoicing", TRUSTS)
    target = first[7]["body"]
    again = nearmiss.facts(40, "invoicing", TRUSTS, avoid=[target])
    assert len(again) == 40
    assert target not in {f["body"] for f in again}
    assert nearmiss.drop_near(first, [target]) == [f for f in first if f["body"] != target]


def test_too_close():
    avoid = [nearmiss.words("Local ports: API on 8000, admin on 5173.")]
    assert nearmiss.too_close("local ports: api on 8000, admin on 5173", avoid)
    assert not nearmiss.too_close("Storybook runs on localhost:6006 from the storybook script.", avoid)
