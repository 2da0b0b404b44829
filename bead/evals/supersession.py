"""kind: supersession: does retrieval serve the current value or a stale one?"""

from __future__ import annotations

from ..recall.rank import search_facts
from .suite import temp_memory
from .suite import write as write_suite_fact

MODES = ("supersession-rule", "similarity-only")


def run(suite: dict) -> dict:
    results = {m: {"hit_at_1": 0, "stale_at_1": 0, "queries": 0} for m in MODES}
    details = []
    for scenario in suite.get("scenarios") or []:
        with temp_memory() as mem:
            for w in scenario.get("writes") or []:
                write_suite_fact(mem, w)
            for q in scenario.get("queries") or []:
                for mode in MODES:
                    hits = search_facts(
                        mem.index, q["query"], limit=1, current_only=(mode == MODES[0]), scope=scenario.get("scope")
                    )
                    top = hits[0].text.lower() if hits else ""
                    hit = bool(hits) and q["expect"].lower() in top
                    stale = bool(hits) and any(s.lower() in top for s in q.get("stale") or [])
                    r = results[mode]
                    r["queries"] += 1
                    r["hit_at_1"] += hit
                    r["stale_at_1"] += stale
                    details.append(
                        {
                            "scenario": scenario.get("name"),
                            "query": q["query"],
                            "mode": mode,
                            "top": hits[0].id if hits else None,
                            "hit": hit,
                            "stale": stale,
                        }
                    )
    out = {"kind": "supersession", "name": suite["name"], "modes": {}}
    for mode, r in results.items():
        n = r["queries"] or 1
        out["modes"][mode] = {
            "hit_at_1": round(r["hit_at_1"] / n, 3),
            "stale_at_1": round(r["stale_at_1"] / n, 3),
            "queries": r["queries"],
        }
    out["details"] = details
    return out


def table(result: dict) -> str:
    lines = [f"{result['name']} (supersession)", f"  {'mode':<20} {'hit@1':>7} {'stale@1':>8} {'queries':>8}"]
    for mode, r in result["modes"].items():
        lines.append(f"  {mode:<20} {r['hit_at_1']:>7.1%} {r['stale_at_1']:>8.1%} {r['queries']:>8}")
    return "\n".join(lines)
