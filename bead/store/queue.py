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

import contextlib
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from .. import files as safe
from ..display import json_text
from ..errors import BeadError
from ..paths import Home
from ..textform import strings_in
from .audit import iso, normalise
from .keys import validate_key
from .locks import flocked

KINDS = ("suspicious", "key-conflict", "change-user-stated", "untrusted-source", "lesson")
_ITEM_ID = re.compile(r"[0-9a-f]{12}")  # what item_id gives; anything else names no file
# What an accepted value may not hold: C0 controls but tab and line breaks, DEL, C1 (a terminal acts on them).


def item_id(kind: str, key: str, value: str) -> str:
    return hashlib.sha256(f"{kind}\x00{key}\x00{normalise(value)}".encode()).hexdigest()[:12]


def item_id_of(item: Item) -> str:
    return item_id(str(item.kind), str(item.key), str(item.value))


def fingerprint(item: Item) -> str:
    """What a decision acts on, as one hash (kind, key, type, value, owner, sources, title): the review walk keeps it
    for the card it shows and the decision refuses an item that no longer has it."""
    fields = [item.kind, item.key, item.type, item.value, item.owner, *item.sources, "\x01", item.title]
    return hashlib.sha256("\x00".join(str(f) for f in fields).encode()).hexdigest()


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
    source: str = ""  # typed | untrusted | curator (empty in items queued before provenance)
    owner: str = ""  # whose fact it becomes when accepted (a team host's member; empty: the home's)
    title: str = ""  # a lesson: its title (a skill's name and description come from it)
    session: str = ""  # a lesson: the session it came from (its evidence)
    evaluation: dict | None = None  # a lesson from the dream: the judge's figures (bead.dream.evaluate)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


_TEXT_FIELDS = ("id", "kind", "key", "type", "value", "detail", "status", "source", "owner", "title", "session")


def _item(data: dict | None) -> Item | None:
    """The item a queue file holds, or None where it holds something else: a field of another type (a file written
    by hand: a list for a key, a number for a value, broke every reader that took it for text) or an id that is
    not item_id's form."""
    if not data:
        return None
    try:
        item = Item(**data)
    except TypeError:
        return None
    if not all(isinstance(getattr(item, f), str) for f in _TEXT_FIELDS) or not _ITEM_ID.fullmatch(item.id):
        return None
    if not (isinstance(item.sources, list) and all(isinstance(x, str) for x in item.sources)):
        return None
    if not (isinstance(item.history, list) and all(isinstance(x, dict) for x in item.history)):
        return None
    return item if item.evaluation is None or isinstance(item.evaluation, dict) else None


class Located(Protocol):
    """Where the queue's files are and what time it is (``bead.core.memory.Memory`` is one)."""

    @property
    def home(self) -> Home: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...


class Queue:
    """The item files. Deciding an item (accept writes a fact, reject a tombstone) is the application's:
    ``bead.core.review.accept_item`` and ``reject_item`` record it here with ``decided``."""

    def __init__(self, where: Located):
        self.home = where.home
        self.clock = where.clock
        self.dir = self.home.queue

    def path(self, item_id: str) -> Path:
        return self.home.queue_item(item_id)

    def _files(self) -> list[Path]:
        names = safe.listdir(self.dir, root=self.home.root)
        return [self.dir / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]

    def _read(self, p: Path) -> dict | None:
        try:
            data = json.loads(safe.read_text(p, root=self.home.root))
        except (OSError, ValueError, RecursionError, safe.UnsafePath):
            return None  # unreadable, or a link, a FIFO (`bead status` reports links)
        return data if isinstance(data, dict) else None

    def items(self, status: str | None = "open") -> list[Item]:
        out = []
        for p in self._files():
            item = _item(self._read(p))
            if item is None:
                continue  # not an item bead wrote (its fields' types, or an id no file of the queue is named by)
            if status is None or item.status == status:
                out.append(item)
        return out

    def get(self, item_id: str) -> Item:
        item = _item(self._read(self.path(item_id))) if _ITEM_ID.fullmatch(item_id) else None
        if item is None:
            raise BeadError(f"no review item {item_id}", "list the queue with `bead queue`")
        return item

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
                    text = safe.read_text(p, root=self.home.root, errors="replace")
                except (OSError, safe.UnsafePath):
                    continue
                if matches(text):
                    out.append(p)
                continue
            if item.get("key") in keys or any(matches(t) for t in strings_in(item)):
                out.append(p)
        return out

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            safe.unlink(p, root=self.home.root)

    def _save(self, item: Item) -> None:
        safe.atomic_write(self.path(item.id), json_text(item.as_dict(), indent=2).encode(), root=self.home.root)

    def add(
        self,
        kind: str,
        key: str,
        type_: str,
        value: str,
        sources: list[str],
        detail: str = "",
        source: str = "",
        owner: str = "",
        title: str = "",
        session: str = "",
        evaluation: dict | None = None,
    ) -> tuple[Item, bool]:
        """(item, added): a proposal seen before (in any status) is not queued again. A key the store would refuse is
        refused here too (InvalidKey): every reader of a card's key need not check it again."""
        validate_key(key)
        iid = item_id(kind, key, value)
        if self._read(self.path(iid)) is not None:
            return self.get(iid), False
        item = Item(
            iid,
            kind,
            key,
            type_,
            value,
            sources,
            detail,
            history=[{"at": iso(self.clock()), "action": "queued", "reason": detail}],
            source=source,
            owner=owner,
            title=title,
            session=session,
            evaluation=evaluation,
        )
        self._save(item)
        return item, True

    def open_item(self, item_id: str) -> Item:
        """The item, which must still be open (a decided one cannot be decided again) and hold what it was queued
        with: its id (its file's name, and the id inside it) is the hash of its kind, key and value, so a file
        changed since (another program rewrote it while the person read it) is refused rather than decided."""
        item = self.get(item_id)
        if item.id != item_id or item_id_of(item) != item_id:
            raise BeadError(
                f"review item {item_id} was changed after it was queued (its kind, key or value no longer give its "
                "id); nothing was decided",
                "look at the file under store/queue/ and delete it if you did not change it; `bead queue` lists the rest",
            )
        if item.status != "open":
            raise BeadError(f"review item {item_id} is already {item.status}", "list open items with `bead queue`")
        return item

    def deciding(self) -> contextlib.AbstractContextManager[None]:
        """The queue's lock, held from reading an item to recording its decision (bead.core.review)."""
        return flocked(self.home.queue_lock, root=self.home.root)

    def decided(self, item: Item, status: str, entry: dict) -> Item:
        """Record a decision (``accepted`` or ``rejected``) and its history entry (the time is added here)."""
        item.status = status
        item.history.append({"at": iso(self.clock()), **entry})
        self._save(item)
        return item

    def written(self, item: Item) -> tuple[str, str] | None:
        """(fact id, the text written) of an accepted item, from its history; None for any other."""
        for entry in reversed(item.history):
            if entry.get("action") == "accepted" and entry.get("id"):
                return str(entry["id"]), str(entry.get("value", item.value))
        return None
