"""The dashboard's data (bead.core.overview), without a browser."""

from __future__ import annotations

from bead.paths import Home


def test_the_dashboard_shows_an_injection_suites_split_figures(bead_home):
    """An injection suite's figures nest under `splits`: the dashboard's recall-figures row has them."""
    from conftest import REPO

    from bead.core.overview import eval_rows, last_eval, record_eval
    from bead.evals import injection, suite

    home = Home(bead_home).ensure()
    result = injection.run(suite.load(REPO / "evals" / "injection.yaml"), split="dev")
    record_eval(home, [result], ["evals/injection.yaml"])
    (row,) = eval_rows(last_eval(home))
    assert row["kind"] == "injection"
    assert row["figures"]["dev recall"] == result["splits"]["dev"]["recall"]
    assert "dev precision" in row["figures"] and "dev false_injection_turns" in row["figures"]
