"""Choosing settings by cross-validation (bead.evals.cv): folds by conversation, fit and held-out figures."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from bead.errors import BeadError
from bead.evals import cv, suite
from bead.evals.suite import Setting

# What an agent observed: never in the pinned block, so a later turn gets them through the cue block only.
FACTS = [
    {
        "key": "project/shop/payments",
        "type": "project",
        "body": "Payments go through Stripe; test keys live in .env.test.",
        "trust": "agent_observed",
    },
    {
        "key": "project/shop/deploys",
        "type": "project",
        "body": "Deploys go out on Tuesdays through the blue-green script.",
        "trust": "agent_observed",
    },
    {
        "key": "project/shop/cache",
        "type": "project",
        "body": "The cache lives in Redis database 2 and expires hourly.",
        "trust": "agent_observed",
    },
    {"key": "user/editor", "type": "user", "body": "The person edits in Helix with the default keymap."},
]
NO_BODIES = "recall:\n  evidence_threshold: 50\n"


def tiny_suite() -> dict:
    asks = [
        ("why does stripe checkout fail with test keys", ["project/shop/payments"]),
        ("when do deploys go out, blue-green?", ["project/shop/deploys"]),
        ("is the redis cache expiring hourly?", ["project/shop/cache"]),
        ("thanks, looks good", []),
        ("stripe payments again: the test keys", ["project/shop/payments"]),
        ("deploy on tuesday with the blue-green script", ["project/shop/deploys"]),
    ]
    return {
        "kind": "injection",
        "name": "tiny",
        "project": "shop",
        "cwd": "/tmp/shop",
        "facts": FACTS,
        "turns": [
            {"id": f"t{i}", "messages": [{"role": "user", "content": text}], "needs": needs}
            for i, (text, needs) in enumerate(asks)
        ],
    }


def test_folds_are_disjoint_cover_every_turn_and_do_not_depend_on_the_order():
    ids = [f"t{i}" for i in range(23)]
    parts = cv.folds(ids, 5)
    assert len(parts) == 5 and set().union(*parts) == set(ids) and sum(len(p) for p in parts) == 23
    assert parts == cv.folds(list(reversed(ids)), 5)
    with pytest.raises(BeadError):
        cv.folds(ids, 1)


def test_each_fold_is_scored_with_the_setting_the_other_folds_chose():
    settings = [Setting("pointers-off", NO_BODIES + "  pointers: 0\n"), Setting("default", NO_BODIES)]
    r = cv.run(tiny_suite(), settings, [0], k=3)
    fit = {s["name"]: s["fit"] for s in r["settings"]}
    assert fit["default"]["scales"][0]["later_reachable"] > fit["pointers-off"]["scales"][0]["later_reachable"]
    assert r["chosen"] == "default" and [f["chosen"] for f in r["folds"]] == ["default"] * 3
    held = [f["figures"]["scales"][0]["later_reachable"] for f in r["folds"]]
    got = [h for h in held if h is not None]
    assert r["cv"]["scales"][0]["later_reachable"] == round(sum(got) / len(got), 3)
    assert r["gap"] == cv.gap(r["fit"], r["cv"])
    json.dumps(r)  # the --json output


def test_a_grid_file_is_read_strictly(tmp_path):
    good = tmp_path / "g.yaml"
    good.write_text(
        'settings:\n  - name: a\n  - name: b\n    config: "recall:\\n  pointers: 3\\n"\n'
        "    constants: {bead.recall.pointers.SAME: 0.3}\n"
    )
    a, b = cv.load_grid(str(good))
    assert (a.name, b.name) == ("a", "b") and b.constants == (("bead.recall.pointers.SAME", 0.3),)
    for text in ("settings: []\n", "settings:\n  - name: a\n    typo: 1\n", "settings:\n  - name: a\n  - name: a\n"):
        good.write_text(text)
        with pytest.raises(BeadError):
            cv.load_grid(str(good))


@pytest.mark.parametrize(
    ("config", "named"),
    [
        (
            "rerank:\n  enabled: true\n  provider: openai\n  model: m\n  base_url: {url}\n  api_key_command: touch {ran}\n",
            "rerank.",
        ),
        ("dream:\n  provider: openai\n  model: m\n  base_url: {url}\n  api_key_command: touch {ran}\n", "dream."),
        # No command, but the suite and a key from any variable sent to an address the grid chose (a review)
        (
            "rerank:\n  enabled: true\n  provider: openai\n  model: m\n  base_url: {url}\n  api_key_env: BEAD_GRID_KEY\n",
            "rerank.",
        ),
        ("proxy:\n  trace: {ran}\n", "proxy.trace"),
    ],
    ids=["rerank-command", "dream-command", "rerank-key-to-any-address", "a-trace-anywhere"],
)
def test_a_grid_candidate_sets_the_rankings_settings_only(bead, tmp_path, monkeypatch, config, named):
    """A candidate's config set `api_key_command`, and the eval ran it when the recall step called the model (an
    outside attack: a grid is a file a person may copy from anywhere); with `api_key_env` instead, the suite and
    the variable's value went to the grid's address (a review of the first mend). A candidate may set the recall
    step's settings and the pinned block's size and choice; anything else is refused before anything runs."""
    import socket

    ran = tmp_path / "ran"
    listener = socket.create_server(("127.0.0.1", 0))  # the grid's address: nothing may reach it
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    monkeypatch.setenv("BEAD_GRID_KEY", "ghp_not_for_a_grid")
    grid = tmp_path / "g.yaml"
    text = config.format(url=url, ran=ran)
    grid.write_text("settings:\n  - name: plain\n  - name: tuned\n    config: " + json.dumps(text) + "\n")
    try:
        r = bead("eval", str(REPO / "evals" / "injection.yaml"), "--cv", "2", "--grid", str(grid), "--scale", "0")
        assert r.code != 0 and named in r.err and "recall settings" in r.err, r.err
        assert not ran.exists()
        listener.settimeout(0)
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection is waiting: the eval never reached the address
    finally:
        listener.close()


@pytest.mark.parametrize("dotted", ["bead.paths.STATE_DIR", "bead.llm.TIMEOUT_S", "os.sep"])
def test_a_setting_changes_only_the_rankings_constants(dotted):
    """A grid's constants could set any upper-case name of any bead module (a path's, a command's) while an eval
    ran; only bead.recall's and bead.index's are the ranking's."""
    with pytest.raises(BeadError, match="bead.recall or bead.index"), Setting("x", "", ((dotted, 1),)).applied():
        pass


def test_a_setting_restores_the_constants_it_changed():
    from bead.recall import pointers

    before = pointers.SAME
    with Setting("x", "", (("bead.recall.pointers.SAME", 0.9),)).applied():
        assert pointers.SAME == 0.9
    assert pointers.SAME == before
    with pytest.raises(BeadError), Setting("x", "", (("bead.recall.pointers.NO_SUCH", 1),)).applied():
        pass


def test_cli_runs_a_grid(bead, tmp_path):
    path = tmp_path / "tiny.yaml"
    import yaml

    path.write_text(yaml.safe_dump(tiny_suite()))
    grid = tmp_path / "g.yaml"
    grid.write_text(
        'settings:\n  - name: off\n    config: "recall:\\n  evidence_threshold: 50\\n  pointers: 0\\n"\n'
        '  - name: default\n    config: "recall:\\n  evidence_threshold: 50\\n"\n'
    )
    out = bead("eval", str(path), "--cv", "3", "--grid", str(grid), "--scale", "0", "--json")
    assert out.code == 0, out.err
    r = json.loads(out.out.splitlines()[0])
    assert r["kind"] == "cv" and r["chosen"] == "default" and "folds" not in r
    table = bead("eval", str(path), "--cv", "3", "--grid", str(grid), "--scale", "0")
    assert "cross-validated" in table.out and "folds chose" in table.out
    missing = bead("eval", str(path), "--cv", "3")
    assert missing.code == 1 and "--grid" in missing.err


def test_by_suite_leaves_each_suite_out_in_turn(bead, tmp_path, monkeypatch):
    """Several suites of one project and facts pool their turns; each suite is one fold, scored with the setting the
    other suites chose. Suites over other facts, or sharing turn ids, are refused with what to do."""
    import yaml

    whole = tiny_suite()
    first = {**whole, "name": "one", "turns": whole["turns"][:3]}
    second = {**whole, "name": "two", "turns": whole["turns"][3:]}
    pooled, parts = cv.pool([first, second])
    assert parts == [{"t0", "t1", "t2"}, {"t3", "t4", "t5"}] and len(pooled["turns"]) == 6
    with pytest.raises(BeadError, match="do not share"):
        cv.pool([first, {**second, "facts": FACTS[:1]}])
    with pytest.raises(BeadError, match="repeats turn ids"):
        cv.pool([first, {**first, "name": "again"}])

    seen: list[list[set[str]]] = []
    real = cv.run
    monkeypatch.setattr(cv, "run", lambda *a, **kw: seen.append(kw["parts"]) or real(*a, **kw))
    paths = []
    for s in (first, second):
        paths.append(tmp_path / f"{s['name']}.yaml")
        paths[-1].write_text(yaml.safe_dump(s))
    grid = tmp_path / "g.yaml"
    grid.write_text(
        'settings:\n  - name: off\n    config: "recall:\\n  evidence_threshold: 50\\n  pointers: 0\\n"\n'
        '  - name: default\n    config: "recall:\\n  evidence_threshold: 50\\n"\n'
    )
    out = bead("eval", *map(str, paths), "--cv", "2", "--by-suite", "--grid", str(grid), "--scale", "0", "--json")
    assert out.code == 0, out.err
    r = json.loads(out.out)
    assert seen == [parts] and r["by_suite"] and r["k"] == 2 and r["name"] == "one+two"
    table = bead("eval", *map(str, paths), "--cv", "2", "--by-suite", "--grid", str(grid), "--scale", "0")
    assert "each suite left out in turn" in table.out
    alone = bead("eval", str(paths[0]), "--by-suite")
    assert alone.code == 1 and "--cv" in alone.err


def test_suite_loads_strictly():
    with pytest.raises(BeadError):
        suite.load("/nonexistent/suite.yaml")


def test_a_fold_never_chooses_with_its_own_turns(monkeypatch):
    """Each fold chooses on the other folds' turns only: setting A scores on folds 0 and 1, B (more, in all)
    on fold 2 alone; the whole set chooses B, the fold that holds B's turns out must choose A."""
    ids = [f"t{i}" for i in range(6)]
    parts = cv.folds(ids, 3)
    points = {"A": {t: 1 for t in parts[0] | parts[1]}, "B": {t: 3 for t in parts[2]}}

    def measure(run, keep):
        score = sum(v for t, v in points[run].items() if keep({"id": t}))
        return {"false_injection_turns": 0.0, "plain_recall": None, "plain_reachable": None, "objective": score, "scales": {}}

    monkeypatch.setattr(cv, "_runs", lambda suite, settings, scales, kind: ["A", "B"])
    monkeypatch.setattr(cv, "measure", measure)
    suite_ = {"kind": "injection", "name": "x", "turns": [{"id": t} for t in ids]}
    r = cv.run(suite_, [Setting("A"), Setting("B")], [0], k=3)
    assert r["chosen"] == "B"
    assert [f["chosen"] for f in r["folds"]] == ["B", "B", "A"]
    # Each fold is scored on its own turns with the choice of the others, which is never its own best: the
    # held-out figure shows the choice's cost (0 points each), where the fit figure claims 6.
    assert [f["figures"]["objective"] for f in r["folds"]] == [0, 0, 0] and r["fit"]["objective"] == 6


def test_pointer_figures_are_what_their_names_say():
    from bead.evals.injection import pointer_figures

    rows = [
        {"needs": ["a", "b"], "pointed": ["a", "x", "y"], "pointer_tokens": 60, "shown": ["b"]},
        {"needs": ["c"], "pointed": ["z"], "pointer_tokens": 30, "shown": []},
        {"needs": [], "pointed": [], "pointer_tokens": 0, "shown": []},
    ]
    f = pointer_figures(rows, 3, lambda r: set(r["shown"]))
    assert f == {
        "reachable": round(2 / 3, 3),
        "pointers_per_turn": round(4 / 3, 2),
        "pointer_tokens_mean": 30.0,
        "pointer_precision": 0.25,
    }
