"""kind: injection: which facts the recall step puts into the cue block.

Each turn is judged alone, as the first request of a fresh conversation, with
the pinned block empty (FORMAT.md). The runner builds a Messages API request
(a system prompt that reports `cwd`, then the turn's messages), parses it as
the proxy does, and calls the same recall step and pinned block the proxy
calls. With ``wire`` ``chat`` or ``responses`` the turn's messages (written
in the Messages API's shape) are converted to that OpenAI API's request
first and parsed by its wire format, so the figures are those of the
OpenAI routes.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..config import parse as parse_config
from ..conversation import identify
from ..core.pinned import pinned_block
from ..core.recall import Recaller
from ..wire import formats
from .suite import RECALL_DEADLINE_S, embed_store, percentile, temp_memory
from .suite import write as write_suite_fact

WIRES = formats.NAMES


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    return c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [] if x.get("type") == "text")


def chat_request(system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A Messages API conversation as a Chat Completions request: tool calls in ``tool_calls``, each tool
    result a ``tool`` message (text sent beside the results goes with the last one, as it counts as
    tool output on the Anthropic route)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for m in messages:
        blocks = _blocks(m.get("content"))
        texts = [{"type": "text", "text": b["text"]} for b in blocks if b.get("type") == "text"]
        if m.get("role") == "assistant":
            calls = [
                {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            out.append({"role": "assistant", "content": texts or None, **({"tool_calls": calls} if calls else {})})
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for k, b in enumerate(results):
            extra = texts if k == len(results) - 1 else []
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": b.get("tool_use_id", ""),
                    "content": [{"type": "text", "text": _result_text(b)}, *extra] if extra else _result_text(b),
                }
            )
        if not results:
            out.append({"role": "user", "content": m["content"] if isinstance(m.get("content"), str) else texts})
    return {"model": "eval", "messages": out}


def responses_request(system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A Messages API conversation as a Responses request: a developer message, then message, function
    call and function call output items."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": system}]}]
    for m in messages:
        blocks = _blocks(m.get("content"))
        if m.get("role") == "assistant":
            said = [{"type": "output_text", "text": b["text"]} for b in blocks if b.get("type") == "text"]
            if said:
                items.append({"type": "message", "role": "assistant", "content": said})
            items += [
                {"type": "function_call", "call_id": b["id"], "name": b["name"], "arguments": json.dumps(b["input"])}
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        for k, b in enumerate(results):
            extra = "".join("\n" + t for t in texts) if k == len(results) - 1 else ""
            items.append({"type": "function_call_output", "call_id": b.get("tool_use_id", ""), "output": _result_text(b) + extra})
        if not results:
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t} for t in texts]})
    return {"model": "eval", "input": items}


def conversation(wire: str, system: str, messages: list[dict[str, Any]]):
    """The turn as the proxy's parser for ``wire`` reads it."""
    body = (
        chat_request(system, messages)
        if wire == "chat"
        else responses_request(system, messages)
        if wire == "responses"
        else {"model": "eval", "max_tokens": 1, "system": system, "messages": messages}
    )
    return formats.by_name(wire).read(body)[0]


def run(suite: dict, split: str | None = None, config_text: str = "", wire: str = "anthropic") -> dict:
    turns = [t for t in suite.get("turns") or [] if split is None or t.get("split", "dev") == split]
    per_turn = []
    with temp_memory() as mem:
        current: dict[str, str] = {}
        for f in suite.get("facts") or []:
            res = write_suite_fact(mem, f)
            current[f["key"]] = res.fact.id
        embed_store(mem)
        config = parse_config(config_text)
        recaller = Recaller(config)
        project = suite.get("project")
        system = f"You are a coding agent.\n - Primary working directory: {suite.get('cwd', '/tmp/' + str(project))}"
        # Not part of FORMAT.md's figures (the cue block is judged alone):
        # what the pinned block of a conversation in this project would hold.
        first = identify({}, formats.by_name("anthropic").read({"system": system, "messages": []})[0], project)
        _text, pinned_ids = pinned_block(mem, first.project, config.proxy.pinned_budget_tokens)
        pinned = {i.rsplit("@v", 1)[0] for i in pinned_ids}
        for t in turns:
            t0 = time.perf_counter()
            conv = conversation(wire, system, t["messages"])
            # FORMAT.md judges the cue block as if the pinned block were empty; pointers, which the proxy never
            # gives to a fact the conversation was shown, leave out the pinned block's keys.
            cue = recaller.recall_for(mem, conv, identify({}, conv, project), set(), RECALL_DEADLINE_S, pointed=frozenset(pinned))
            ids, trace = cue.ids, cue.trace
            ms = (time.perf_counter() - t0) * 1000
            fact_ids = [i for i in ids if not i.startswith("raw:")]
            keys = [i.rsplit("@v", 1)[0] for i in fact_ids]
            per_turn.append(
                {
                    "id": t["id"],
                    "split": t.get("split", "dev"),
                    "needs": list(t.get("needs") or []),
                    "injected": keys,
                    "stale": [i for i in fact_ids if i != current.get(i.rsplit("@v", 1)[0])],
                    "ms": ms,
                    "rejected": trace.get("rejected", []),
                    "pinned": sorted(pinned),
                    "pointed": [i.rsplit("@v", 1)[0] for i in cue.pointers],
                    "pointer_tokens": cue.pointer_tokens,
                }
            )
    out = {"kind": "injection", "name": suite["name"], "wire": wire, "splits": {}}
    for name in sorted({t["split"] for t in per_turn}) + ["all"]:
        rows = [t for t in per_turn if name == "all" or t["split"] == name]
        out["splits"][name] = figures(rows)
    out["details"] = per_turn
    return out


def figures(rows: list[dict]) -> dict:
    needed = sum(len(r["needs"]) for r in rows)
    injected = sum(len(r["injected"]) for r in rows)
    hits = sum(len(set(r["needs"]) & set(r["injected"])) for r in rows)
    false_turns = sum(1 for r in rows if set(r["injected"]) - set(r["needs"]))
    ms = [r["ms"] for r in rows]
    delivered = sum(len(set(r["needs"]) & (set(r["injected"]) | set(r.get("pinned", [])))) for r in rows)
    return {
        "turns": len(rows),
        "injected": injected,
        "recall": round(hits / needed, 3) if needed else None,
        "precision": round(hits / injected, 3) if injected else None,
        "false_injection_turns": round(false_turns / len(rows), 3) if rows else None,
        "stale_injected": sum(len(r["stale"]) for r in rows),
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        # Beyond FORMAT.md: needed keys present in the pinned block or the cue block.
        "delivered_with_pinned": round(delivered / needed, 3) if needed else None,
        "delivered": round(delivered / needed, 3) if needed else None,
    } | pointer_figures(rows, needed, lambda r: set(r["injected"]) | set(r.get("pinned", [])))


def pointer_figures(rows: list[dict], needed: int, delivered_of, prefix: str = "") -> dict:
    """What the pointers add (issue #22's names, which other tools read): ``reachable`` (needed keys delivered
    or pointed to), ``pointers_per_turn``, ``pointer_tokens_mean``, ``pointer_precision`` (pointed keys that
    were needed / pointed keys)."""
    pointed = [set(r[prefix + "pointed"]) for r in rows]
    reach = sum(len(set(r["needs"]) & (delivered_of(r) | p)) for r, p in zip(rows, pointed, strict=True))
    n_pointed = sum(len(p) for p in pointed)
    hits = sum(len(set(r["needs"]) & p) for r, p in zip(rows, pointed, strict=True))
    return {
        "reachable": round(reach / needed, 3) if needed else None,
        "pointers_per_turn": round(n_pointed / len(rows), 2) if rows else None,
        "pointer_tokens_mean": round(sum(r[prefix + "pointer_tokens"] for r in rows) / len(rows), 1) if rows else None,
        "pointer_precision": round(hits / n_pointed, 3) if n_pointed else None,
    }


def table(result: dict) -> str:
    wire = result.get("wire", "anthropic")
    lines = [
        f"{result['name']} (injection{'' if wire == 'anthropic' else ', ' + wire + ' wire'})",
        f"  {'split':<6} {'turns':>5} {'recall':>7} {'precision':>9} {'false-inj turns':>15} {'stale':>5} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'with pinned':>11} {'reachable':>9} {'pointers/turn':>13} "
        f"{'ptr tokens':>10} {'ptr precision':>13}",
    ]
    for name, r in result["splits"].items():
        rec = "-" if r["recall"] is None else f"{r['recall']:.2f}"
        prec = "-" if r["precision"] is None else f"{r['precision']:.2f}"
        pin = "-" if r["delivered_with_pinned"] is None else f"{r['delivered_with_pinned']:.2f}"
        reach = "-" if r["reachable"] is None else f"{r['reachable']:.2f}"
        pprec = "-" if r["pointer_precision"] is None else f"{r['pointer_precision']:.2f}"
        lines.append(
            f"  {name:<6} {r['turns']:>5} {rec:>7} {prec:>9} {r['false_injection_turns']:>15.0%} "
            f"{r['stale_injected']:>5} {r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f} {pin:>11} {reach:>9} "
            f"{r['pointers_per_turn']:>13.2f} {r['pointer_tokens_mean']:>10.1f} {pprec:>13}"
        )
    return "\n".join(lines)
