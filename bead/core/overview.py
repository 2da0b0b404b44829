"""Memory at a glance, for the read-only dashboard (`bead dashboard`).

Counts (facts by type and trust, raw turns, sessions, the review queue,
sealed keys, dormant facts), the latest dream report, the injections the
proxy's trace recorded (grouped by conversation, with the reasons for what
was left out), the open review items, the figures of the last `bead eval`,
and the days memory grew and was injected on (from the index and the audit
log), and the problems `bead status` finds (``bead.core.health``, one
model for both). Nothing here returns a sealed value: a sealed key has no plaintext and
no index row; only the number of sealed keys is counted. Everything else is
stored text, possibly an attacker's: the page escapes every string.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from .. import files as safe
from ..paths import Home
from ..store.queue import Queue
from . import health
from .memory import Memory
from .review import latest_report
from .trace import NotATrace, Trace, configured_paths, listed

RECENT_REQUESTS = 40
PREVIEW = 300


def _cut(text: Any, n: int = PREVIEW) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


# ----- the last `bead eval` ----------------------------------------------------------------------------------


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: (_summary(v) if isinstance(v, dict) else v) for k, v in result.items() if k != "details"}


def record_eval(home: Home, results: list[dict[str, Any]], files: list[str]) -> None:
    """Keep the figures of a `bead eval` run (no per-query details) for the dashboard; the last run wins."""
    data = {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "files": files, "results": [_summary(r) for r in results]}
    safe.atomic_write(home.eval_results, json.dumps(data, ensure_ascii=False, indent=1).encode(), root=home.root)


def last_eval(home: Home) -> dict[str, Any] | None:
    try:
        data = json.loads(safe.read_text(home.eval_results, root=home.root))
    except (OSError, ValueError, safe.UnsafePath):
        return None
    return data if isinstance(data, dict) else None


FIGURES = (
    "recall_at_5",
    "recall_at_10",
    "all_at_10",
    "stale_first",
    "hit_at_1",
    "stale_at_1",
    "recall",
    "precision",
    "false_injection_turns",
    "caught_rate",
    "false_queued_rate",
    "queries",
)


def eval_rows(data: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per suite: its name, kind and the figures it has of ``FIGURES``."""
    rows = []
    results = (data or {}).get("results") if isinstance(data, dict) else None
    for r in results if isinstance(results, list) else []:
        if not isinstance(r, dict):
            continue
        figures = {k: r[k] for k in FIGURES if isinstance(r.get(k), int | float) and not isinstance(r.get(k), bool)}
        nested = r.get("splits")
        splits: dict[str, Any] = nested if isinstance(nested, dict) else r  # injection suites nest them
        modes = r.get("modes")
        # A supersession suite's figures are per mode: bead's rule first (the figure that matters), then the
        # similarity-only baseline it is measured against.
        groups = [("", modes.get("supersession-rule"))] if isinstance(modes, dict) else []
        groups += [(f"{split} ", splits.get(split)) for split in ("dev", "test")]
        for prefix, group in groups:
            if isinstance(group, dict):
                figures |= {
                    f"{prefix}{k}": v
                    for k, v in group.items()
                    if k in FIGURES and isinstance(v, int | float) and not isinstance(v, bool)
                }
        rows.append({"name": str(r.get("name", "")), "kind": str(r.get("kind", "")), "figures": figures})
    return rows


# ----- the trace ----------------------------------------------------------------------------------------------


def injections(mem: Memory, trace: str | None = None) -> list[dict[str, Any]]:
    """The newest traced requests that injected something or left candidates out, grouped by conversation
    (newest conversation first): when, what was injected, what was not and why, the cues."""
    entries: list[dict[str, Any]] = []
    for p in configured_paths(mem.config, trace, home=mem.home):
        try:
            entries += Trace(p).entries()
        except (OSError, safe.UnsafePath, NotATrace):
            continue
    entries = [e for e in entries if isinstance(e, dict) and (e.get("injected") or e.get("rejected") or e.get("pinned"))]
    entries.sort(key=lambda e: str(e.get("at", "")))
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in entries[-RECENT_REQUESTS:]:
        conv = f"{e.get('session', '?')}/{e.get('thread', '?')}"
        groups.setdefault(conv, []).append(
            {
                "at": str(e.get("at", "")),
                "project": str(e.get("project") or ""),
                "pinned": [str(i) for i in listed(e, "pinned")],
                "injected": [str(i) for i in listed(e, "injected")],
                "rejected": [
                    {"id": str(r.get("id", "")), "score": r.get("score"), "reason": _cut(r.get("reason"), 160)}
                    for r in listed(e, "rejected")[:5]
                    if isinstance(r, dict)
                ],
                "cues": [_cut(c.get("text"), 160) for c in listed(e, "cues")[:3] if isinstance(c, dict)],
            }
        )
    return [
        {"conversation": k, "requests": v[::-1]} for k, v in sorted(groups.items(), key=lambda kv: kv[1][-1]["at"], reverse=True)
    ]


# ----- growth over time ----------------------------------------------------------------------------------------


def growth(mem: Memory, breakdown: dict[str, Any]) -> dict[str, list]:
    """Per day: fact versions and raw turns in all (cumulative), and injections that day (the audit log)."""
    versions = {r["day"]: int(r["n"]) for r in breakdown["versions_by_day"] if r["day"]}
    turns = {r["day"]: int(r["n"]) for r in breakdown["turns_by_day"] if r["day"]}
    injected: dict[str, int] = {}
    for e in mem.audit.entries():
        if isinstance(e, dict) and e.get("event") == "inject" and e.get("at"):
            day = str(e["at"])[:10]
            injected[day] = injected.get(day, 0) + 1
    days = sorted(set(versions) | set(turns) | set(injected))
    out: dict[str, list] = {"days": [], "t": [], "versions": [], "turns": [], "injections": []}
    v = t = 0
    for day in days:
        try:
            stamp = int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())
        except ValueError:
            continue
        v += versions.get(day, 0)
        t += turns.get(day, 0)
        out["days"].append(day)
        out["t"].append(stamp)
        out["versions"].append(v)
        out["turns"].append(t)
        out["injections"].append(injected.get(day, 0))
    return out


# ----- what `bead status` finds ------------------------------------------------------------------------------

PROBLEMS_MAX_AGE_S = 60.0  # the full check parses every fact file: a page reloaded within a minute reuses it
_problems: dict[str, tuple[float, list[dict[str, str]]]] = {}


def problems(mem: Memory) -> list[dict[str, str]]:
    """The problems `bead status` finds (bead.core.health), checked at most once a minute per home."""
    now = time.monotonic()
    seen = _problems.get(str(mem.home.root))
    if seen is None or now - seen[0] > PROBLEMS_MAX_AGE_S:
        found = [{"problem": str(p["problem"]), "fix": str(p["fix"])} for p in health.collect(mem)["problems"]]
        seen = _problems[str(mem.home.root)] = (now, found)
    return seen[1]


# ----- the whole page -------------------------------------------------------------------------------------------


def overview(mem: Memory, trace: str | None = None) -> dict[str, Any]:
    counts = mem.index.counts()
    statuses = mem.index.fact_counts()
    breakdown = mem.index.breakdown()
    queue = Queue(mem).items("open")
    report = latest_report(mem)
    return {
        "counts": {
            "current facts": counts["current_facts"],
            "fact versions": counts["fact_versions"],
            "raw turns": counts["raw_turns"],
            "sessions": breakdown["sessions"],
            "review queue": len(queue),
            "sealed keys": len(mem.sealed.counts()),
            "dormant": statuses.get("dormant", 0),
            "pinned": statuses.get("pinned", 0),
            "tombstones": mem.tombstones.count(),
        },
        "by_type_trust": [{"type": r["type"], "trust": r["trust"], "n": int(r["n"])} for r in breakdown["by_type_trust"]],
        "report": {"file": report.file, "text": report.text} if report else None,
        "queue": [
            {
                "id": i.id,
                "kind": i.kind,
                "key": i.key,
                "value": _cut(i.value),
                "detail": _cut(i.detail, 200),
                "source": i.source,
                "title": i.title,
            }
            for i in queue
        ],
        "injections": injections(mem, trace),
        # How to turn the trace on, where none is configured (the panel's empty state says it).
        "trace_hint": None if trace or mem.config.proxy.trace else health.trace_hint(mem.home),
        "eval": {"at": (ev := last_eval(mem.home) or {}).get("at"), "files": ev.get("files") or [], "rows": eval_rows(ev)},
        "growth": growth(mem, breakdown),
        "problems": problems(mem),
    }
