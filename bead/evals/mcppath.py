"""`bead eval --path mcp`: the pull path, measured as an agent's call of the `recall` tool.

The agent asks ``recall(query)`` with the question (raw-recall suites) or the
turn's newest user text, tool output included (injection suites), at the
tool's defaults: limit 10, ``mcp.recall_budget_tokens``. The runner calls the
function the tool calls (``bead.core.query.recall``), so the figures are the
tool's, budget and all. The proxy path's figures are computed in the same run,
from the same store, next to them:

- raw-recall: recall@5 / recall@10 of the excerpts the tool returns, against
  the proxy path's raw ranking (``search_raw``, what `bead eval` reports).
- injection: recall@5 / recall@10 of the facts the tool returns (a need is
  met when its key is among the first k facts), and what
  ``get_memory_context`` delivers for the same text (pinned block plus
  matches), against the proxy's cue block (at most 2 facts) and its pinned
  block ("with pinned").
"""

from __future__ import annotations

import time
from typing import Any

from ..config import Config
from ..config import parse as parse_config
from ..core import query as reads
from ..wire.anthropic import conversation_of
from . import injection, rawrecall
from .suite import percentile, temp_memory
from .suite import write as write_suite_fact

QUERY_CHARS = 2000


def run_raw(suite: dict, config: Config | None = None, k_small: int = 5, k: int = 10) -> dict:
    config = config or Config(owner="eval")
    proxy_rows, mcp_rows, ms, skipped = [], [], [], 0
    with temp_memory() as mem:
        ref_of = rawrecall.populate(mem, suite)
        for q in suite.get("queries") or []:
            if not q.get("evidence"):
                skipped += 1
                continue
            hits = rawrecall.search_raw(mem.index, q["query"], limit=k)
            proxy_rows.append(rawrecall.score(q, [h.row["ref"] for h in hits], k_small, k))
            t0 = time.perf_counter()
            found = reads.recall(mem, q["query"], limit=k, budget_tokens=config.mcp.recall_budget_tokens)
            ms.append((time.perf_counter() - t0) * 1000)
            mcp_rows.append(rawrecall.score(q, [ref_of[e.id] for e in found.excerpts], k_small, k) | {"left_out": found.left_out})
    return {
        "kind": "raw-recall",
        "path": "mcp",
        "name": suite["name"],
        "proxy": rawrecall.summarise(suite["name"], proxy_rows, [], skipped),
        "mcp": rawrecall.summarise(suite["name"], mcp_rows, ms, skipped),
        "cut_by_budget": sum(1 for r in mcp_rows if r["left_out"]),
        "budget_tokens": config.mcp.recall_budget_tokens,
    }


def combine_raw(results: list[dict], name: str) -> dict:
    return {
        "kind": "raw-recall",
        "path": "mcp",
        "name": name,
        "proxy": rawrecall.combine([r["proxy"] for r in results], name),
        "mcp": rawrecall.combine([r["mcp"] for r in results], name),
        "cut_by_budget": sum(r["cut_by_budget"] for r in results),
        "budget_tokens": results[0]["budget_tokens"],
    }


def newest_user_text(messages: list[dict]) -> str:
    """What an agent has in hand at this turn: the newest user message's text and tool output."""
    conv = conversation_of({"messages": messages}, {})
    if conv.newest_user is None:
        return ""
    parts = [p.text for p in conv.messages[conv.newest_user].parts if p.kind in ("text", "tool_result") and p.text]
    return " ".join(" ".join(parts).split())[:QUERY_CHARS]


def run_injection(suite: dict, split: str | None = None, config_text: str = "") -> dict:
    config = parse_config(config_text)
    proxy = injection.run(suite, split=split, config_text=config_text)
    turns = [t for t in suite.get("turns") or [] if split is None or t.get("split", "dev") == split]
    project = suite.get("project")
    rows: list[dict[str, Any]] = []
    with temp_memory() as mem:
        for f in suite.get("facts") or []:
            write_suite_fact(mem, f)
        for t in turns:
            text = newest_user_text(t["messages"])
            t0 = time.perf_counter()
            found = reads.recall(mem, text, limit=10, budget_tokens=config.mcp.recall_budget_tokens)
            ms = (time.perf_counter() - t0) * 1000
            bundle = reads.memory_context(mem, text, project, config.mcp.context_budget_tokens, config.proxy.pinned_budget_tokens)
            keys = [f.key for f in found.facts]
            delivered = {i.rsplit("@v", 1)[0] for i in bundle.pinned + bundle.matches}
            rows.append(
                {
                    "id": t["id"],
                    "split": t.get("split", "dev"),
                    "needs": list(t.get("needs") or []),
                    "ranked": keys,
                    "context": sorted(delivered),
                    "ms": ms,
                }
            )
    out: dict[str, Any] = {"kind": "injection", "path": "mcp", "name": suite["name"], "splits": {}}
    for name in sorted({r["split"] for r in rows}) + ["all"]:
        sel = [r for r in rows if name == "all" or r["split"] == name]
        out["splits"][name] = {"mcp": _figures(sel), "proxy": proxy["splits"].get(name)}
    out["details"] = rows
    return out


def _figures(rows: list[dict]) -> dict:
    needed = sum(len(r["needs"]) for r in rows)

    def met(k: int | None, field: str = "ranked") -> float | None:
        if not needed:
            return None
        return round(sum(len(set(r["needs"]) & set(r[field][:k] if k else r[field])) for r in rows) / needed, 3)

    def precision(k: int) -> float | None:
        given = sum(len(r["ranked"][:k]) for r in rows)
        hits = sum(len(set(r["needs"]) & set(r["ranked"][:k])) for r in rows)
        return round(hits / given, 3) if given else None

    return {
        "turns": len(rows),
        "recall_at_5": met(5),
        "recall_at_10": met(10),
        "precision_at_5": precision(5),
        "precision_at_10": precision(10),
        "context_delivers": met(None, "context"),
        "p50_ms": round(percentile([r["ms"] for r in rows], 50), 2),
        "p95_ms": round(percentile([r["ms"] for r in rows], 95), 2),
    }


def table(result: dict) -> str:
    if result["kind"] == "raw-recall":
        p, m = result["proxy"], result["mcp"]
        return "\n".join(
            [
                f"{result['name']} (raw-recall, {m['queries']} queries): proxy path vs the recall tool",
                f"  {'path':<34} {'recall@5':>8} {'recall@10':>9} {'all@10':>7}",
                f"  {'proxy (raw ranking, search_raw)':<34} {p['recall_at_5']:>8.3f} {p['recall_at_10']:>9.3f} "
                f"{p['all_at_10']:>7.3f}",
                f"  {'mcp (recall tool, limit 10)':<34} {m['recall_at_5']:>8.3f} {m['recall_at_10']:>9.3f} "
                f"{m['all_at_10']:>7.3f}   p50 {m['p50_ms']:.2f} ms  p95 {m['p95_ms']:.2f} ms",
                f"  queries whose answer the {result['budget_tokens']}-token budget cut short: {result['cut_by_budget']}",
            ]
        )
    lines = [
        f"{result['name']} (injection): proxy path vs the recall tool and get_memory_context",
        f"  {'split':<6} {'proxy cue recall/precision':>26} {'proxy with pinned':>17} {'mcp recall@5/@10':>16} "
        f"{'mcp precision@5/@10':>19} {'mcp context':>11} {'p95 ms':>7}",
    ]

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for name, r in result["splits"].items():
        p, m = r["proxy"] or {}, r["mcp"]
        cue = f"{f(p.get('recall'))} / {f(p.get('precision'))}"
        rec = f"{f(m['recall_at_5'])} / {f(m['recall_at_10'])}"
        prec = f"{f(m['precision_at_5'])} / {f(m['precision_at_10'])}"
        lines.append(
            f"  {name:<6} {cue:>26} {f(p.get('delivered_with_pinned')):>17} {rec:>16} {prec:>19} "
            f"{f(m['context_delivers']):>11} {m['p95_ms']:>7.2f}"
        )
    return "\n".join(lines)
