"""What a person curating memory asks for that no other entry point needs: the summary, pin and unpin.

The admin MCP server calls these (with forget, seal, the review queue and
reinforce from their own modules). Nothing here returns a sealed value or a
value at all: the summary holds counts, ids and the dream report, which holds
keys and version ids, never values.
"""

from __future__ import annotations

from typing import Any

from .. import files as safe
from ..errors import BeadError, NotFound, Sealed
from ..store.facts import Fact
from ..store.keys import validate_key
from ..store.queue import Queue
from ..store.reports import DreamState, Reports
from .memory import Memory

REPORT_CHARS = 6000


def summary(mem: Memory) -> dict[str, Any]:
    """Counts from the index, the vault and the queue; the newest dream report (keys and ids, never values)."""
    counts = mem.index.counts()
    by_status = mem.index.fact_counts()
    sealed = mem.sealed.counts()
    reports = sorted(Reports(mem.home).files(), key=lambda p: p.name)
    report = None
    if reports:
        text = safe.read_text(reports[-1], root=mem.home.root, errors="replace")
        report = {"file": reports[-1].name, "text": text[-REPORT_CHARS:], "cut": len(text) > REPORT_CHARS}
    return {
        "facts": {
            "current": counts["current_facts"],
            "versions": counts["fact_versions"],
            "dormant": by_status.get("dormant", 0),
            "pinned": by_status.get("pinned", 0),
        },
        "raw_turns": counts["raw_turns"],
        "sealed_keys": len(sealed),
        "tombstones": mem.tombstones.count(),
        "review_queue": Queue(mem).open_count(),
        "last_dream": DreamState(mem.home.dream_state, mem.home.root).data.get("last_run"),
        "report": report,
    }


def pin_target(mem: Memory, key: str, pinned: bool = True, expected_id: str | None = None) -> Fact:
    """The current version of ``key`` that a pin (or unpin) would change; with ``expected_id``, only if that
    version (the one the person was shown) is still the current one."""
    validate_key(key)
    cur = mem.current(key)
    if cur is None:
        if mem.is_sealed(key):
            raise Sealed(key)
        raise NotFound(f"no fact under {key}", "look for the right key with `bead search` (search_memory over MCP)")
    if expected_id is not None and cur.id != expected_id:
        if expected_id not in {f.id for f in mem.versions(key).facts}:
            raise NotFound(
                f"{expected_id} is no version of {key} (its current one is {cur.id})",
                f"give {key} or {cur.id}; `bead history {key}` lists its versions",
            )
        raise BeadError(
            f"not {'pinned' if pinned else 'unpinned'}: {key} changed since it was shown ({expected_id} then, {cur.id} now)",
            "look at the key again and decide on what it says now",
        )
    return cur


def set_pinned(mem: Memory, key: str, pinned: bool, expected_id: str | None = None) -> dict[str, Any]:
    """Pin (kept first in the pinned block, never decays) or unpin the current version of ``key``; with
    ``expected_id``, only if that version (the one the person was shown) is still the current one."""
    cur = pin_target(mem, key, pinned, expected_id)
    changed = cur.pinned != pinned
    if changed:
        mem.audit.ready()  # a FIFO at audit.log refuses before the version changes, not after
        mem.set_pinned(cur, pinned)
        mem.audit.record(mem.clock(), "pin" if pinned else "unpin", key=key, id=cur.id)
    return {"id": cur.id, "pinned": pinned, "changed": changed}
