"""What the proxy did in each conversation: ``sessions/<session>-<thread>.jsonl``.

The file is read on every request under the conversation's flock, so a
proxy restart or a ``bead forget`` in another process takes effect at once,
and parallel subagents (different conversations) never wait for each other.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import files as safe
from ..paths import Home
from ..store.locks import flocked


@dataclass
class CueRecord:
    message: int
    hash: str
    text: str | None
    ids: list[str] = field(default_factory=list)
    pointers: list[str] = field(default_factory=list)  # fact ids the block points to, not shown


@dataclass
class ConversationState:
    """Rebuilt from its file each request."""

    path: Path
    root: Path
    pinned: str | None = None
    pinned_ids: list[str] = field(default_factory=list)
    has_pinned: bool = False
    cues: dict[int, CueRecord] = field(default_factory=dict)
    captured: int = 0
    captured_partial: bool = False
    # A capture under way (bead.proxy.engine): its batch id and where it takes ``captured``; cleared by the
    # "captured" record that follows its append. One still set names a capture that stopped in between (a crash):
    # the raw log says whether its append happened (the append is the commit).
    capturing: dict[str, Any] | None = None
    ahead: list[str] = field(default_factory=list)  # the look-ahead judge's picks for the next request
    # A Responses chain's later step (its own file): the step it continues, and what the chain was shown before it.
    carried_from: str | None = None
    carried_ids: list[str] = field(default_factory=list)
    carried_pointers: list[str] = field(default_factory=list)

    @property
    def injected(self) -> set[str]:
        out = set(self.pinned_ids) | set(self.carried_ids)
        for c in self.cues.values():
            out.update(c.ids)
        return out

    @property
    def pointer_ids(self) -> set[str]:
        """Fact ids this conversation was pointed to."""
        return set(self.carried_pointers) | {k for c in self.cues.values() for k in c.pointers}

    @property
    def pointed(self) -> set[str]:
        """Keys this conversation was pointed to: never again."""
        return {k.rsplit("@v", 1)[0] for k in self.pointer_ids}

    @classmethod
    def load(cls, home: Home, conversation_id: str) -> ConversationState:
        st = cls(home.session_state(conversation_id), home.root)
        try:
            lines = safe.read_text(st.path, root=home.root, errors="replace").splitlines()
        except FileNotFoundError:
            return st
        for line in lines:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line never stops the conversation
            kind = r.get("kind")
            if kind == "pinned":
                st.has_pinned, st.pinned, st.pinned_ids = True, r.get("text"), list(r.get("ids") or [])
            elif kind == "cue":
                st.cues[int(r["message"])] = CueRecord(
                    int(r["message"]), r.get("hash", ""), r.get("text"), list(r.get("ids") or []), list(r.get("pointers") or [])
                )
            elif kind == "ahead":
                st.ahead = list(r.get("ids") or [])
            elif kind == "carried":
                st.carried_from = str(r.get("from") or "")
                st.carried_ids, st.carried_pointers = list(r.get("ids") or []), list(r.get("pointers") or [])
            elif kind == "captured":
                upto = int(r.get("upto", 0))
                if upto >= st.captured:  # never backwards (a late record of an earlier answer)
                    st.captured, st.captured_partial = upto, bool(r.get("partial", False))
                st.capturing = None
            elif kind == "capturing":
                batch, upto = str(r.get("batch", "")), int(r.get("upto", 0))
                st.capturing = {"batch": batch, "upto": upto, "partial": bool(r.get("partial")), "remember": r.get("remember")}
            elif kind == "remembered" and st.capturing and r.get("batch") == st.capturing["batch"]:
                st.capturing["remember"] = None
        return st

    def append(self, record: dict[str, Any]) -> None:
        safe.append_line(self.path, json.dumps(record, ensure_ascii=False), root=self.root)

    def set_pinned(self, text: str | None, ids: list[str]) -> None:
        self.append({"kind": "pinned", "text": text, "ids": ids})
        self.has_pinned, self.pinned, self.pinned_ids = True, text, ids

    def add_cue(self, message: int, hash_: str, text: str | None, ids: list[str], pointers: list[str] | None = None) -> None:
        record: dict[str, Any] = {"kind": "cue", "message": message, "hash": hash_, "text": text, "ids": ids}
        if pointers:
            record["pointers"] = pointers
        self.append(record)
        self.cues[message] = CueRecord(message, hash_, text, ids, list(pointers or []))

    def carry(self, from_id: str, ids: list[str], pointers: list[str]) -> None:
        """This conversation continues ``from_id`` (a Responses chain): what that one was shown counts as shown."""
        self.append({"kind": "carried", "from": from_id, "ids": ids, "pointers": pointers})
        self.carried_from, self.carried_ids, self.carried_pointers = from_id, ids, pointers

    def set_ahead(self, ids: list[str]) -> None:
        """The look-ahead judge's picks (fact ids), injected with the conversation's next request."""
        self.append({"kind": "ahead", "ids": ids})
        self.ahead = ids

    def set_captured(self, upto: int, partial: bool = False) -> None:
        self.append({"kind": "captured", "upto": upto, "partial": partial})
        if upto >= self.captured:
            self.captured, self.captured_partial = upto, partial
        self.capturing = None

    def set_capturing(self, batch: str, upto: int, partial: bool = False, remember: int | None = None) -> None:
        """A capture of the turns up to message ``upto`` is about to be appended with this batch id; ``remember``:
        the message whose "remember" runs after the append (done: ``set_remembered``)."""
        self.append({"kind": "capturing", "batch": batch, "upto": upto, "partial": partial, "remember": remember})
        self.capturing = {"batch": batch, "upto": upto, "partial": partial, "remember": remember}

    def set_remembered(self, batch: str) -> None:
        self.append({"kind": "remembered", "batch": batch})
        if self.capturing and self.capturing["batch"] == batch:
            self.capturing["remember"] = None


class Conversations:
    """Every conversation's state file; the operations the proxy and forget need."""

    def __init__(self, home: Home):
        self.home = home

    def lock(self, conversation_id: str, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        """The conversation's flock; ``bead forget`` takes the same one (LockBusy past ``timeout``)."""
        return flocked(self.home.session_lock(conversation_id), timeout=timeout, root=self.home.root)

    def capture_lock(self, conversation_id: str) -> contextlib.AbstractContextManager[None]:
        """Held by a capture from its "capturing" record to its "captured" one, in whatever process: the next
        request's preparation never takes it, and a capture that holds it knows a leftover "capturing" record is
        one that stopped (no other capture of the conversation is under way)."""
        return flocked(self.home.capture_lock(conversation_id), root=self.home.root)

    def load(self, conversation_id: str) -> ConversationState:
        return ConversationState.load(self.home, conversation_id)

    def files(self) -> list[Path]:
        d = self.home.sessions
        return [d / n for n in sorted(safe.listdir(d, root=self.home.root)) if n.endswith(".jsonl") and not n.startswith(".")]

    def matching_lines(self, matches: Callable[[str], bool]) -> dict[Path, int]:
        """How many lines of each state file ``matches`` (forget's preview)."""
        out = {}
        for p in self.files():
            try:
                text = safe.read_text(p, root=self.home.root, errors="replace")
            except (OSError, safe.UnsafePath):
                continue  # a link is never read (`bead status` reports it)
            n = sum(1 for line in text.splitlines() if matches(line))
            if n:
                out[p] = n
        return out

    def scrub(self, files: list[Path], matches: Callable[[str], bool]) -> int:
        """Drop the lines that ``matches`` from the given state files, each under its conversation's lock."""
        removed = 0
        for p in files:
            with self.lock(p.stem):
                removed += safe.rewrite_lines(p, lambda line: None if matches(line) else line, root=self.home.root)
        return removed
