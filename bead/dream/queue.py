"""The review queue: proposals a person decides on.

One JSON file per item under ``store/queue/``. An item id is a hash of kind,
key and normalised value, so a repeated proposal is queued once. Nothing
queued reaches the pinned or cue block. Accepting writes the value with trust
``accepted`` (a person's decision), keeping the item's ``sources``;
rejecting writes a tombstone so the same proposal never returns. Decided
items keep their history and reason. ``source`` says who backs the proposal:
``typed`` (the person's own words) or ``untrusted`` (only pasted content,
tool output or the assistant's text).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.memory import Memory
from ..errors import BeadError
from ..store.audit import iso, normalise
from ..store.files import atomic_write

KINDS = ("suspicious", "key-conflict", "change-user-stated", "untrusted-source")


def item_id(kind: str, key: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\x00{key}\x00{normalise(value)}".encode()).hexdigest()[:12]


@dataclass
class Item:
    id: str
    kind: str
    key: str
    type: str
    value: str
    sources: list[str] = field(default_factory=list)
    detail: str = ""
    status: str = "open"
    history: list[dict] = field(default_factory=list)
    source: str = ""            # typed | untrusted (empty in items queued before provenance)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


class Queue:
    def __init__(self, mem: Memory):
        self.mem = mem
        self.dir = mem.home.queue

    def path(self, item_id: str) -> Path:
        return self.mem.home.queue_item(item_id)

    def items(self, status: str | None = "open") -> list[Item]:
        out = []
        for p in sorted(self.dir.glob("*.json")) if self.dir.exists() else []:
            try:
                item = Item(**json.loads(p.read_text(encoding="utf-8")))
            except (json.JSONDecodeError, TypeError):
                continue
            if status is None or item.status == status:
                out.append(item)
        return out

    def get(self, item_id: str) -> Item:
        p = self.path(item_id)
        if not p.exists():
            raise BeadError(f"no review item {item_id}", "list the queue with `bead queue`")
        return Item(**json.loads(p.read_text(encoding="utf-8")))

    def open_count(self) -> int:
        return len(self.items("open"))

    def holding(self, keys: set[str], matches: Callable[[str], bool]) -> list[Path]:
        """Item files whose key is one of ``keys`` or whose value ``matches`` (forget's plan)."""
        out = []
        for p in sorted(self.dir.glob("*.json")) if self.dir.exists() else []:
            try:
                item = json.loads(p.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue
            if item.get("key") in keys or matches(str(item.get("value", ""))):
                out.append(p)
        return out

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            p.unlink(missing_ok=True)

    def _save(self, item: Item) -> None:
        atomic_write(self.path(item.id), json.dumps(item.as_dict(), ensure_ascii=False, indent=2).encode())

    def add(self, kind: str, key: str, type_: str, value: str, sources: list[str], detail: str = "",
            source: str = "") -> tuple[Item, bool]:
        """(item, added): a proposal seen before (in any status) is not queued again."""
        iid = item_id(kind, key, value)
        if self.path(iid).exists():
            return self.get(iid), False
        item = Item(iid, kind, key, type_, value, sources, detail,
                    history=[{"at": iso(self.mem.clock()), "action": "queued", "reason": detail}], source=source)
        self._save(item)
        return item, True

    def accept(self, item_id: str, reason: str = "") -> Item:
        item = self.get(item_id)
        if item.status != "open":
            raise BeadError(f"review item {item_id} is already {item.status}", "list open items with `bead queue`")
        res = self.mem.write(item.key, item.value, item.type, trust="accepted", sources=item.sources)
        item.status = "accepted"
        item.history.append({"at": iso(self.mem.clock()), "action": "accepted", "reason": reason, "id": res.fact.id})
        self._save(item)
        return item

    def reject(self, item_id: str, reason: str = "") -> Item:
        item = self.get(item_id)
        if item.status != "open":
            raise BeadError(f"review item {item_id} is already {item.status}", "list open items with `bead queue`")
        digest = self.mem.tombstones.add(self.mem.clock(), item.key, item.value, reason="review-reject")
        self.mem.audit.record(self.mem.clock(), "tombstone", key=item.key, sha256=digest)
        item.status = "rejected"
        item.history.append({"at": iso(self.mem.clock()), "action": "rejected", "reason": reason})
        self._save(item)
        return item
