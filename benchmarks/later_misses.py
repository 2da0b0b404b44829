"""Where each needed fact of the injection suite stands on a later turn, at a given scale (issue #22).

For every turn of ``evals/injection.yaml`` that needs a fact, run the later-turn path exactly as ``bead eval --scale
N`` does (the pinned block by the priors alone, then the recall step with its pointers), and print for each needed
key: its rank among the fact search's candidates (the gate's BM25 order), its rank after the pointers' reordering
by meaning (with bead[semantic]), its rank by BM25 alone among every fact that matches the turn's query, and what
the turn was pointed to. Turns whose needs all reached the model print with ``ok``; the last line says how many needs
any order of the pointers' pool could reach (the ceiling of a better reordering). No figure is asserted::

    .venv-test/bin/python benchmarks/later_misses.py --scale 2000 [--turns t08,t28]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bead.config import parse as parse_config
from bead.conversation import identify
from bead.core.pinned import standing_memory
from bead.core.recall import Recaller
from bead.evals import generated, scaled
from bead.evals.suite import embed_store, load, temp_memory
from bead.evals.suite import write as write_fact
from bead.recall import gate, pointers
from bead.wire.anthropic import conversation_of


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=2000)
    ap.add_argument("--turns", default="", help="comma-separated turn ids (default: every turn that needs a fact)")
    ap.add_argument("--suite", default=str(Path(__file__).parent.parent / "evals" / "injection.yaml"))
    args = ap.parse_args()
    suite = load(args.suite)
    want = {t for t in args.turns.split(",") if t}
    real = list(suite["facts"])
    made = scaled.distractors("near-miss", args.scale, str(suite["project"]), real)
    seen: dict[str, Any] = {}
    by_meaning, search_facts = pointers.by_meaning, gate.search_facts

    def spy_meaning(pool: list[gate.Candidate], *a: Any, **k: Any) -> list[gate.Candidate]:
        out = by_meaning(pool, *a, **k)
        seen["search"], seen["final"] = [c.key for c in pool], [c.key for c in out]
        return out

    def spy_search(index: Any, query: str, **k: Any) -> Any:
        seen["query"] = query
        return search_facts(index, query, **k)

    pointers.by_meaning = spy_meaning  # type: ignore[assignment]
    gate.search_facts = spy_search  # type: ignore[assignment]
    config = parse_config("")
    recaller = Recaller(config)
    system = f"You are a coding agent.\n - Primary working directory: {suite.get('cwd')}"
    with temp_memory() as mem:
        for f in generated.interleave(real, made):
            write_fact(mem, f)
        embed_store(mem)
        needs = reached_n = ceiling = 0
        for t in suite["turns"]:
            if not t.get("needs") or (want and t["id"] not in want):
                continue
            conv = conversation_of({"model": "eval", "max_tokens": 1, "system": system, "messages": t["messages"]}, {})
            ident = identify({}, conv, str(suite["project"]))
            stats = recaller.fact_stats(mem, mem.index.raw_doc_freq)
            _, pinned, ahead = standing_memory(
                mem, ident.project, config.proxy.pinned_budget_tokens, None, config.proxy.pinned_select, stats=stats
            )
            seen.clear()
            cue = recaller.recall_for(mem, conv, ident, set(pinned), 10.0, ahead=ahead)
            reached = {i.rsplit("@v", 1)[0] for i in [*pinned, *cue.ids, *cue.pointers]}
            every = [r["key"] for r in mem.index.fact_candidates(seen.get("query", ""), 5000)] if seen.get("query") else []
            pointed = [p.rsplit("@v", 1)[0].rsplit("/", 1)[-1] for p in cue.pointers]
            for need in t["needs"]:

                def rank(keys: list[str], need: str = need) -> str:
                    return str(keys.index(need) + 1) if need in keys else "-"

                state = "ok" if need in reached else "MISSED"
                needs += 1
                reached_n += need in reached
                ceiling += need in reached or need in seen.get("final", []) or need in seen.get("search", [])
                print(
                    f"{t['id']} {state:6} {need}: search {rank(seen.get('search', []))}, after meaning "
                    f"{rank(seen.get('final', []))}, BM25 of all {rank(every)} of {len(every)}; pointed to {pointed}"
                )
        # The ceiling: what any order of the pointers' pool could reach (the needs delivered, or among the candidates
        # the pointers choose from: the search's and the meaning's), against what the five reach.
        print(
            f"{needs} needs: {reached_n} reached ({reached_n / max(needs, 1):.2f}); in the pool or delivered {ceiling} "
            f"({ceiling / max(needs, 1):.2f}), the most any order of the pool could reach"
        )


if __name__ == "__main__":
    main()
