"""Choosing the raw search's settings by cross-validation over conversations: `bead eval SUITES... --grid GRID`
with raw-recall suites (each suite is one conversation: a LoCoMo conversation, a BEAM chat).

Every candidate of the grid (``evals/grids/raw.yaml``: module constants, the simplest first, plain FTS5 first of
all) runs over every conversation once. Then each conversation in turn is held out: the candidate with the best
objective on all the others is chosen and scored on the held-out one. The cross-validated figure of a dataset
pools the held-out queries of its conversations; the fit figure is the candidate the whole set would choose,
scored on the same set. A figure that differs between the two by more than MAX_GAP says the choice fits the
dev conversations' phrasing: the simpler candidate wins then (docs/design.md).

The objective: the mean over datasets of recall@10, less STALE_WEIGHT for each point of stale_first above
STALE_CAP (the older of two turns that state different values ranked first). A dataset counts once whatever
its number of questions, so a setting that helps one dataset and hurts another does not win on size.
"""

from __future__ import annotations

from typing import Any

from ..errors import BeadError
from . import rawrecall
from .suite import Setting

STALE_CAP = 0.15
STALE_WEIGHT = 1.0
MAX_GAP = 0.05
FIGURES = ("recall_at_5", "recall_at_10", "stale_first")


def dataset(name: str) -> str:
    """The dataset a suite belongs to: its name up to the last ``-`` (``beam500k-3`` -> ``beam500k``)."""
    return name.rsplit("-", 1)[0] if "-" in name else name


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """recall@5, recall@10 (pooled over the questions) and stale_first (over the questions that have a stale
    turn) of per-query rows."""
    n = len(rows) or 1
    stale = [r["stale_first"] for r in rows if r["stale_first"] is not None]
    return {
        "queries": len(rows),
        "recall_at_5": round(sum(r["recall_at_5"] for r in rows) / n, 3),
        "recall_at_10": round(sum(r["recall_at_10"] for r in rows) / n, 3),
        "stale_first": round(sum(stale) / len(stale), 3) if stale else None,
        "stale_queries": len(stale),
    }


def by_dataset(runs: dict[str, list[dict[str, Any]]], names: list[str]) -> dict[str, dict[str, Any]]:
    """Figures per dataset over the conversations ``names`` (their per-query rows in ``runs``)."""
    pooled: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        pooled.setdefault(dataset(name), []).extend(runs[name])
    return {d: figures(rows) for d, rows in sorted(pooled.items())}


def objective(per_dataset: dict[str, dict[str, Any]]) -> float:
    if not per_dataset:
        return 0.0
    score = 0.0
    for f in per_dataset.values():
        score += f["recall_at_10"] - STALE_WEIGHT * max(0.0, (f["stale_first"] or 0.0) - STALE_CAP)
    return round(score / len(per_dataset), 4)


def measure(suites: list[dict[str, Any]], settings: list[Setting]) -> list[dict[str, list[dict[str, Any]]]]:
    """Per setting: each conversation's per-query rows (the index built anew under the setting's constants)."""
    out = []
    for s in settings:
        with s.applied():
            out.append({suite["name"]: rawrecall.run(suite)["details"] for suite in suites})
    return out


def run(suites: list[dict[str, Any]], settings: list[Setting]) -> dict[str, Any]:
    if len(suites) < 2 or any(s.get("kind") != "raw-recall" for s in suites):
        raise BeadError(
            "cross-validating the raw search needs two or more raw-recall suites (conversations)",
            "give the dev conversations, e.g. ../shared/evals/locomo/*.yaml ../shared/evals/beam/*.yaml",
        )
    names = [s["name"] for s in suites]
    if len(set(names)) != len(names):
        raise BeadError("two suites share a name", "each conversation is a suite with its own name")
    return cross_validate(names, measure(suites, settings), [s.name for s in settings])


def cross_validate(names: list[str], runs: list[dict[str, list[dict[str, Any]]]], labels: list[str]) -> dict[str, Any]:
    """Leave one conversation out over ``runs`` (per candidate, in ``labels``' order, the simplest first: each
    conversation's per-query rows). Any ranking that gives per-query rows can be judged here
    (benchmarks/sweep_semantic.py --cv judges embedding fusions with it)."""
    fit = [by_dataset(r, names) for r in runs]
    scores = [objective(f) for f in fit]
    best = max(range(len(labels)), key=lambda i: (scores[i], -i))
    held: dict[str, list[dict[str, Any]]] = {}
    folds = []
    for out in names:
        rest = [n for n in names if n != out]
        train = [objective(by_dataset(r, rest)) for r in runs]
        chosen = max(range(len(labels)), key=lambda i: (train[i], -i))
        held[out] = runs[chosen][out]
        folds.append({"held_out": out, "chosen": labels[chosen]})
    cv = by_dataset(held, names)
    baseline = fit[0]
    return {
        "kind": "raw-cv",
        "conversations": names,
        "settings": [{"name": n, "fit": f, "objective": o} for n, f, o in zip(labels, fit, scores, strict=True)],
        "baseline": labels[0],
        "chosen": labels[best],
        "fit": fit[best],
        "cv": cv,
        "cv_objective": objective(cv),
        "gap": {d: round(fit[best][d]["recall_at_10"] - cv[d]["recall_at_10"], 3) for d in cv},
        "below_baseline": [d for d in cv if cv[d]["recall_at_10"] < baseline[d]["recall_at_10"]],
        "folds": folds,
    }


def table(result: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    datasets = list(result["cv"])
    head = f"  {'setting':<32} {'objective':>9}" + "".join(f" {d + ' r@10':>15} {'stale':>6}" for d in datasets)
    lines = [f"raw search, cross-validated by conversation ({len(result['conversations'])} conversations, leave one out)", head]

    def row(label: str, figs: dict[str, Any], obj: float) -> str:
        return f"  {label:<32} {obj:>9.4f}" + "".join(
            f" {f(figs[d]['recall_at_10']):>15} {f(figs[d]['stale_first']):>6}" for d in datasets
        )

    for s in result["settings"]:
        lines.append(row(s["name"] + (" (plain FTS5)" if s["name"] == result["baseline"] else ""), s["fit"], s["objective"]))
    lines.append(row(f"fit: {result['chosen']}", result["fit"], objective(result["fit"])))
    lines.append(row("cross-validated", result["cv"], result["cv_objective"]))
    chosen: dict[str, int] = {}
    for fold in result["folds"]:
        chosen[fold["chosen"]] = chosen.get(fold["chosen"], 0) + 1
    lines.append("  folds chose: " + ", ".join(f"{n} ({c})" for n, c in sorted(chosen.items(), key=lambda x: -x[1])))
    wide = [d for d, g in result["gap"].items() if abs(g) > MAX_GAP]
    if wide:
        lines.append(
            f"  fit and cross-validated recall@10 differ by more than {MAX_GAP} on {', '.join(wide)}: the simpler setting wins"
        )
    if result["below_baseline"]:
        lines.append(f"  below plain FTS5 (cross-validated) on {', '.join(result['below_baseline'])}")
    return "\n".join(lines)
