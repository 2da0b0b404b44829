"""Choosing the raw search by leaving one conversation out (bead.evals.rawcv): a conversation's own figures
never choose the setting it is scored with."""

from __future__ import annotations

import pytest

from bead.errors import BeadError
from bead.evals import rawcv
from bead.evals.suite import Setting


def rows(recall: float, n: int = 4, stale: bool | None = None) -> list[dict]:
    return [{"recall_at_5": recall, "recall_at_10": recall, "stale_first": stale} for _ in range(n)]


def suites(*names: str) -> list[dict]:
    return [{"kind": "raw-recall", "name": n} for n in names]


def test_each_dataset_counts_once_whatever_its_size():
    runs = {"big-1": rows(1.0, n=100), "small-1": rows(0.0, n=2)}
    assert rawcv.objective(rawcv.by_dataset(runs, ["big-1", "small-1"])) == 0.5


def test_stale_values_first_cost_above_the_cap():
    ok = rawcv.by_dataset({"d-1": rows(0.5, stale=False) + rows(0.5, n=1, stale=True)}, ["d-1"])
    assert ok["d"]["stale_first"] == 0.2
    assert rawcv.objective(ok) == pytest.approx(0.5 - (0.2 - rawcv.STALE_CAP))


def test_the_held_out_conversation_never_chooses_its_own_setting(monkeypatch):
    """B is best only on c-3; holding c-3 out, the others choose A, so c-3 is scored with A and the
    cross-validated figure is below the fit one: the leak would show as equal figures."""
    a, b = Setting("A"), Setting("B")
    fake = [
        {"c-1": rows(0.6), "c-2": rows(0.6), "c-3": rows(0.1)},
        {"c-1": rows(0.5), "c-2": rows(0.5), "c-3": rows(1.0)},
    ]
    monkeypatch.setattr(rawcv, "measure", lambda s, settings: fake)
    result = rawcv.run(suites("c-1", "c-2", "c-3"), [a, b])
    assert result["chosen"] == "B"  # on all three: B 0.667, A 0.433
    assert {f["held_out"]: f["chosen"] for f in result["folds"]} == {"c-1": "B", "c-2": "B", "c-3": "A"}
    assert result["cv"]["c"]["recall_at_10"] == pytest.approx((0.5 + 0.5 + 0.1) / 3, abs=0.001)
    assert result["gap"]["c"] == pytest.approx(0.667 - 0.367, abs=0.002)


def test_one_conversation_is_refused():
    with pytest.raises(BeadError):
        rawcv.run(suites("c-1"), [Setting("A")])
