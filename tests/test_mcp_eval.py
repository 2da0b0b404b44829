"""`bead eval --path mcp`: raw-recall and injection suites through the recall tool's own function and budget,
next to the proxy path's figures from the same store."""

from __future__ import annotations

import json

import yaml

RAW = {
    "kind": "raw-recall",
    "name": "tiny-raw",
    "sessions": [
        {
            "id": "s1",
            "started": "2026-01-01T09:00:00Z",
            "turns": [
                {"ref": "s1:1", "role": "user", "text": "We moved the staging database to Postgres 16 last week."},
                {"ref": "s1:2", "role": "assistant", "text": "Noted: staging runs Postgres 16 now."},
                {"ref": "s1:3", "role": "user", "text": "The CI runner is a self-hosted box called hopper. " + "filler " * 300},
            ],
        },
        {
            "id": "s2",
            "started": "2026-01-02T09:00:00Z",
            "turns": [
                {"ref": "s2:1", "role": "user", "text": "Our invoices are rendered with WeasyPrint. " + "filler " * 300},
                {"ref": "s2:2", "role": "user", "text": "The CI runner hopper has 32 GB of RAM. " + "filler " * 300},
            ],
        },
    ],
    "queries": [
        {"id": "q1", "query": "Which Postgres version does staging run?", "evidence": ["s1:1"]},
        {"id": "q2", "query": "What is the CI runner called and how much RAM?", "evidence": ["s1:3", "s2:2"]},
        {"id": "q3", "query": "How are invoices rendered?", "evidence": ["s2:1"]},
    ],
}

INJECTION = {
    "kind": "injection",
    "name": "tiny-injection",
    "project": "shop",
    "cwd": "/home/dev/src/shop",
    "facts": [
        {"key": "project/shop/payments", "type": "project", "body": "Payments go through Stripe; test keys live in .env.test."},
        {"key": "user/shell", "type": "user", "body": "The person's shell is fish: use set -x, not export."},
    ],
    "turns": [
        {
            "id": "t1",
            "split": "dev",
            "needs": ["project/shop/payments"],
            "messages": [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "pytest tests/test_checkout.py"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "tu1",
                            "content": "stripe.error.AuthenticationError: No API key provided",
                        }
                    ],
                },
            ],
        },
        {
            "id": "t2",
            "split": "test",
            "needs": [],
            "messages": [{"role": "user", "content": "rename the variable foo to bar in utils.py"}],
        },
    ],
}


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return str(p)


def test_raw_recall_through_the_tool_next_to_the_proxy_path(bead, tmp_path):
    r = bead("eval", "--path", "mcp", "--json", _write(tmp_path, "raw.yaml", RAW))
    assert r.code == 0, r.err
    out = json.loads(r.out.splitlines()[0])
    assert out["path"] == "mcp" and out["proxy"]["queries"] == out["mcp"]["queries"] == 3
    assert out["mcp"]["recall_at_10"] == out["proxy"]["recall_at_10"] == 1.0
    assert out["cut_by_budget"] == 0
    text = bead("eval", "--path", "mcp", _write(tmp_path, "raw2.yaml", RAW)).out
    assert "proxy (raw ranking, search_raw)" in text and "mcp (recall tool, limit 10)" in text


def test_a_small_budget_shows_in_the_tools_figures(bead, tmp_path):
    cfg = tmp_path / "small.yaml"
    cfg.write_text("mcp:\n  recall_budget_tokens: 200\n")
    r = bead("eval", "--path", "mcp", "--json", "--config", str(cfg), _write(tmp_path, "raw.yaml", RAW))
    out = json.loads(r.out.splitlines()[0])
    assert out["cut_by_budget"] >= 1 and out["budget_tokens"] == 200
    assert out["mcp"]["recall_at_10"] < out["proxy"]["recall_at_10"]


def test_injection_through_the_tool_uses_the_newest_user_text(bead, tmp_path):
    r = bead("eval", "--path", "mcp", "--json", "--details", _write(tmp_path, "inj.yaml", INJECTION))
    assert r.code == 0, r.err
    out = json.loads(r.out.splitlines()[0])
    dev = out["splits"]["dev"]
    assert dev["mcp"]["recall_at_5"] == 1.0 and dev["proxy"]["turns"] == 1
    t1 = next(d for d in out["details"] if d["id"] == "t1")
    assert t1["ranked"][0] == "project/shop/payments" and "user/shell" in t1["context"]


def test_other_kinds_are_skipped_with_a_note(bead, tmp_path):
    sup = {"kind": "supersession", "name": "s", "scenarios": []}
    r = bead("eval", "--path", "mcp", _write(tmp_path, "sup.yaml", sup))
    assert r.code == 0 and "skipped" in r.err
