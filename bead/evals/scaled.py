"""The scaled injection eval: what reaches the model when the store holds many more facts.

``bead eval evals/injection.yaml --scale 300 --scale 2000``: the injection
suite's facts plus N distractors that no turn needs, interleaved in write
order, as a store written over months would hold them: near misses by default
(bead.evals.nearmiss: the project's vocabulary, other subjects), or with
``--distractors generated`` the older per-module templates
(bead.evals.generated), which turned out easier to tell apart than real
facts. Each turn is the first request of a
fresh conversation, so the proxy builds its pinned block from that request
(the opening steers the choice) and then runs recall with the pinned ids
already injected, exactly as the engine does. Figures per split:

- ``delivered``: needed keys in the pinned block or the cue block / needed keys
  (what reaches the model);
- ``pinned_delivered``: needed keys in the pinned block alone;
- ``cue_added``: needed keys only the cue block brought;
- ``cue_facts`` and ``cue_false``: facts the cue block added, and of them the
  ones the turn did not need;
- ``pinned_tokens`` (mean, max) of the block as rendered, and the time to build
  it (``pinned_p95_ms``);
- ``false_injection_turns``: turns whose cue block carried a fact body they did
  not need;
- the pointers' figures (bead.evals.injection.pointer_figures): ``reachable``
  (needed keys delivered or pointed to), ``pointers_per_turn``,
  ``pointer_tokens_mean``, ``pointer_precision``.

``later`` holds the same figures for a turn later in a conversation whose
opening said nothing about it: the pinned block is built without an opening
(by the priors alone), and the cue block has to bring what the turn needs.
"""

from __future__ import annotations

import time
from typing import Any

from ..config import Config
from ..config import parse as parse_config
from ..conversation import identify
from ..core.memory import Memory
from ..core.pinned import standing_memory
from ..core.recall import Recaller
from ..recall import render
from ..wire.anthropic import conversation_of
from . import generated
from .injection import pointer_figures
from .suite import RECALL_DEADLINE_S, Setting, embed_store, percentile, temp_memory
from .suite import write as write_suite_fact


def _key(fact_id: str) -> str:
    return fact_id.rsplit("@v", 1)[0]


DISTRACTORS = ("near-miss", "generated")


def distractors(kind: str, n: int, project: str, real: list[dict]) -> list[dict]:
    """``n`` facts no turn needs: near misses (bead.evals.nearmiss: the project's words, other subjects, as a
    person writes facts; the default) or the older generated ones (bead.evals.generated), for comparison."""
    if not n:
        return []
    trusts = [f.get("trust", "user_stated") for f in real]
    if kind == "generated":
        return generated.facts(n, project, trusts)
    from . import nearmiss

    return nearmiss.facts(n, project, trusts, avoid=[str(f["body"]) for f in real])


def run(
    suite: dict, scale: int, split: str | None = None, config_text: str = "", policy: str | None = None, kind: str = "near-miss"
) -> dict:
    return run_settings(suite, scale, [Setting("default", config_text)], split, policy, kind)[0]


def run_settings(
    suite: dict, scale: int, settings: list[Setting], split: str | None = None, policy: str | None = None, kind: str = "near-miss"
) -> list[dict]:
    """One result per setting, all over one store of the suite's facts and ``scale`` distractors."""
    project = str(suite.get("project"))
    real = list(suite.get("facts") or [])
    made = distractors(kind, scale, project, real)
    turns = [t for t in suite.get("turns") or [] if split is None or t.get("split", "dev") == split]
    results = []
    with temp_memory() as mem:
        for f in generated.interleave(real, made):
            write_suite_fact(mem, f)
        embed_store(mem)
        for setting in settings:
            config = parse_config(setting.config)
            chosen_policy = policy or config.proxy.pinned_select
            with setting.applied():
                rows = _rows(mem, suite, turns, config, chosen_policy)
            out: dict[str, Any] = {
                "kind": "injection-scaled",
                "name": suite["name"],
                "scale": scale,
                "distractors": kind,
                "policy": chosen_policy,
                "setting": setting.name,
                "facts": len(real) + len(made),
                "splits": {},
            }
            for name in sorted({r["split"] for r in rows}) + ["all"]:
                out["splits"][name] = figures([r for r in rows if name == "all" or r["split"] == name])
            out["details"] = rows
            results.append(out)
    return results


def _rows(mem: Memory, suite: dict, turns: list[dict], config: Config, policy: str) -> list[dict[str, Any]]:
    project = str(suite.get("project"))
    recaller = Recaller(config)
    system = f"You are a coding agent.\n - Primary working directory: {suite.get('cwd', '/tmp/' + project)}"
    rows: list[dict[str, Any]] = []
    for t in turns:
        data = {"model": "eval", "max_tokens": 1, "system": system, "messages": t["messages"]}
        conv = conversation_of(data, {})
        ident = identify({}, conv, project)
        row: dict[str, Any] = {"id": t["id"], "split": t.get("split", "dev"), "needs": list(t.get("needs") or [])}
        # The turn as the conversation's opening, and a conversation whose opening said nothing of it
        # (it moved on since): the pinned block then chooses by the priors alone.
        for mode, opening in (("", conv), ("later_", None)):
            t0 = time.perf_counter()
            text, pinned_ids, ahead = standing_memory(
                mem,
                ident.project,
                config.proxy.pinned_budget_tokens,
                opening,
                policy,
                stats=recaller.fact_stats(mem, mem.index.raw_doc_freq),
            )
            pin_ms = (time.perf_counter() - t0) * 1000
            cue = recaller.recall_for(mem, conv, ident, set(pinned_ids), RECALL_DEADLINE_S, ahead=ahead)
            row |= {
                mode + "pinned": [_key(i) for i in pinned_ids],
                mode + "cue": [_key(i) for i in cue.ids if not i.startswith("raw:")],
                mode + "pointed": [_key(i) for i in cue.pointers],
                mode + "pointer_tokens": cue.pointer_tokens,
                mode + "pinned_tokens": render.tokens(text) if text else 0,
                mode + "pinned_ms": pin_ms,
            }
        rows.append(row)
    return rows


def figures(rows: list[dict]) -> dict:
    return _figures(rows, "") | {"later": _figures(rows, "later_")}


def _figures(rows: list[dict], mode: str) -> dict:
    needed = sum(len(r["needs"]) for r in rows)

    def share(n: int) -> float | None:
        return round(n / needed, 3) if needed else None

    delivered = sum(len(set(r["needs"]) & (set(r[mode + "pinned"]) | set(r[mode + "cue"]))) for r in rows)
    pinned = sum(len(set(r["needs"]) & set(r[mode + "pinned"])) for r in rows)
    cue_facts = sum(len(r[mode + "cue"]) for r in rows)
    cue_false = sum(len(set(r[mode + "cue"]) - set(r["needs"])) for r in rows)
    tokens = [r[mode + "pinned_tokens"] for r in rows]
    false_turns = sum(1 for r in rows if set(r[mode + "cue"]) - set(r["needs"]))
    return {
        "turns": len(rows),
        "needed": needed,
        "delivered": share(delivered),
        "pinned_delivered": share(pinned),
        "cue_added": share(delivered - pinned),
        "cue_facts": cue_facts,
        "cue_false": cue_false,
        # Turns whose cue block carried a fact body they did not need (the pinned block is the same for all).
        "false_injection_turns": round(false_turns / len(rows), 3) if rows else None,
        "pinned_tokens_mean": round(sum(tokens) / len(tokens)) if tokens else 0,
        "pinned_tokens_max": max(tokens, default=0),
        "pinned_p95_ms": round(percentile([r[mode + "pinned_ms"] for r in rows], 95), 2),
    } | pointer_figures(rows, needed, lambda r: set(r[mode + "pinned"]) | set(r[mode + "cue"]), mode)


def table(result: dict) -> str:
    lines = [
        f"{result['name']} (injection, scaled: {result['facts']} facts, {result['scale']} "
        f"{result.get('distractors', 'generated')} distractors; pinned block by {result['policy']})",
        f"  {'split':<6} {'turns':>5} {'delivered':>9} {'pinned':>7} {'cue adds':>8} {'cue facts':>9} "
        f"{'cue false':>9} {'pinned tokens mean/max':>22} {'pinned p95 ms':>13} {'reachable':>9} "
        f"{'pointers/turn':>13} {'ptr tokens':>10} {'ptr precision':>13}",
    ]

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for label, pick in (
        ("the turn opens the conversation", lambda r: r),
        ("later in a conversation that opened with something else", lambda r: r["later"]),
    ):
        lines.append(f"  {label}:")
        for name, full in result["splits"].items():
            r = pick(full)
            lines.append(
                f"  {name:<6} {r['turns']:>5} {f(r['delivered']):>9} {f(r['pinned_delivered']):>7} "
                f"{f(r['cue_added']):>8} {r['cue_facts']:>9} {r['cue_false']:>9} "
                f"{str(r['pinned_tokens_mean']) + ' / ' + str(r['pinned_tokens_max']):>22} "
                f"{r['pinned_p95_ms']:>13.2f} {f(r['reachable']):>9} {r['pointers_per_turn']:>13.2f} "
                f"{r['pointer_tokens_mean']:>10.1f} {f(r['pointer_precision']):>13}"
            )
    return "\n".join(lines)
