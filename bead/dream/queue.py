"""The review queue: proposals a person decides on.

One JSON file per item under ``store/queue/``. An item id is a hash of kind,
key and normalised value, so a repeated proposal is queued once. Nothing
queued reaches the pinned or cue block. Accepting writes the value with trust
``accepted`` (a person's decision), keeping the item's ``sources``;
rejecting writes a tombstone so the same proposal never returns. Decided
items keep their history and reason. ``source`` says who backs the proposal:
``typed`` (the person's own words) or ``untrusted`` (only pasted content,
tool output or the assistant's text).

A ``lesson`` item is a review candidate: an episode's lesson that passed the
outcome gate (bead.dream.evaluate), or one a person or an agent wrote by hand
from a session they read (``bead candidate add``). Its ``sources`` are the
session's turns (the evidence), ``session`` names it, and ``evaluation`` holds
the judge's figures (none for a hand-written one). Accepting it may change the
text first: the item keeps the proposed text in ``value`` and the history
records what was written, so the review shows what changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.memory import Memory
from ..display import CONTROL
from ..errors import BeadError, InvalidArgument, RefusedWrite
from ..store import files as safe
from ..store.audit import iso, normalise

KINDS = ("suspicious", "key-conflict", "change-user-stated", "untrusted-source", "lesson")
_ITEM_ID = re.compile(r"[0-9a-f]{12}")   # what item_id gives; anything else names no file
# What an accepted value may not hold: C0 controls but tab and line breaks, DEL, C1 (a terminal acts on them).


def item_id(kind: str, key: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\x00{key}\x00{normalise(value)}".encode()).hexdigest()[:12]


def _texts(obj: object) -> list[str]:
    """Every string in a JSON value (an item's fields, its history entries, its evaluation)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _texts(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in _texts(v)]
    return []


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
    source: str = ""            # typed | untrusted | curator (empty in items queued before provenance)
    owner: str = ""             # whose fact it becomes when accepted (a team host's member; empty: the home's)
    title: str = ""             # a lesson: its title (a skill's name and description come from it)
    session: str = ""           # a lesson: the session it came from (its evidence)
    evaluation: dict | None = None   # a lesson from the dream: the judge's figures (bead.dream.evaluate)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


class Queue:
    def __init__(self, mem: Memory):
        self.mem = mem
        self.dir = mem.home.queue

    def path(self, item_id: str) -> Path:
        return self.mem.home.queue_item(item_id)

    def _files(self) -> list[Path]:
        names = safe.listdir(self.dir, root=self.mem.home.root)
        return [self.dir / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]

    def _read(self, p: Path) -> dict | None:
        try:
            data = json.loads(safe.read_text(p, root=self.mem.home.root))
        except (OSError, ValueError):
            return None   # unreadable, or a link (`bead status` reports links)
        return data if isinstance(data, dict) else None

    def items(self, status: str | None = "open") -> list[Item]:
        out = []
        for p in self._files():
            try:
                item = Item(**(self._read(p) or {}))
            except TypeError:
                continue
            if status is None or item.status == status:
                out.append(item)
        return out

    def get(self, item_id: str) -> Item:
        data = self._read(self.path(item_id)) if _ITEM_ID.fullmatch(item_id) else None
        if data is None:
            raise BeadError(f"no review item {item_id}", "list the queue with `bead queue`")
        return Item(**data)

    def open_count(self) -> int:
        return len(self.items("open"))

    def holding(self, keys: set[str], matches: Callable[[str], bool]) -> list[Path]:
        """Item files whose key is one of ``keys`` or any of whose text ``matches`` (forget's plan): the value,
        and also a lesson's title (its key is made of it), the reason, an edit kept in the history, the
        judge's reason. A file that does not parse as an item is matched on its text."""
        out = []
        for p in self._files():
            item = self._read(p)
            if item is None:
                try:
                    text = safe.read_text(p, root=self.mem.home.root, errors="replace")
                except (OSError, safe.UnsafePath):
                    continue
                if matches(text):
                    out.append(p)
                continue
            if item.get("key") in keys or any(matches(t) for t in _texts(item)):
                out.append(p)
        return out

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            safe.unlink(p, root=self.mem.home.root)

    def _save(self, item: Item) -> None:
        safe.atomic_write(self.path(item.id), json.dumps(item.as_dict(), ensure_ascii=False, indent=2).encode(),
                          root=self.mem.home.root)

    def add(self, kind: str, key: str, type_: str, value: str, sources: list[str], detail: str = "",
            source: str = "", owner: str = "", title: str = "", session: str = "",
            evaluation: dict | None = None) -> tuple[Item, bool]:
        """(item, added): a proposal seen before (in any status) is not queued again."""
        iid = item_id(kind, key, value)
        if self._read(self.path(iid)) is not None:
            return self.get(iid), False
        item = Item(iid, kind, key, type_, value, sources, detail,
                    history=[{"at": iso(self.mem.clock()), "action": "queued", "reason": detail}], source=source,
                    owner=owner, title=title, session=session, evaluation=evaluation)
        self._save(item)
        return item, True

    def accept(self, item_id: str, reason: str = "", value: str | None = None) -> Item:
        """Write the item's value (or ``value``, the person's edit of it) with trust ``accepted``.

        An edited value is written; the item keeps the proposed text and its
        history records the written one. A lesson's fact cites no turns: its
        evidence is a whole session, which a later forget of the lesson must
        not redact (the item keeps the evidence)."""
        item = self.get(item_id)
        if item.status != "open":
            raise BeadError(f"review item {item_id} is already {item.status}", "list open items with `bead queue`")
        text = item.value if value is None else value.strip()
        if not text:
            raise BeadError("the edited value is empty", "accept the item as it is, or reject it")
        # Accepting makes the text the person's word: the same checks as any other way in. A proposal (or an
        # edit) that holds a terminal escape or a credential is not written, whoever backs it.
        if CONTROL.search(text):
            raise InvalidArgument(f"review item {item_id} holds control characters (a terminal escape, a NUL); "
                                  "nothing was written", "edit it into plain text (`bead review`, e), or reject it")
        from ..capture.secrets import credential_rules

        if credential_rules(text):
            raise RefusedWrite(f"the value of review item {item_id} looks like a credential, and bead never stores "
                               "one in plain text; nothing was written",
                               "leave the secret out (edit it), or seal it: `bead write KEY - --sensitivity secret`")
        sources = [] if item.kind == "lesson" else item.sources
        res = self.mem.write(item.key, text, item.type, trust="accepted", sources=sources, owner=item.owner or None)
        item.status = "accepted"
        entry = {"at": iso(self.mem.clock()), "action": "accepted", "reason": reason, "id": res.fact.id}
        if text != item.value:
            entry["value"] = text
        item.history.append(entry)
        self._save(item)
        return item

    def written(self, item: Item) -> tuple[str, str] | None:
        """(fact id, the text written) of an accepted item, from its history; None for any other."""
        for entry in reversed(item.history):
            if entry.get("action") == "accepted" and entry.get("id"):
                return str(entry["id"]), str(entry.get("value", item.value))
        return None

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
