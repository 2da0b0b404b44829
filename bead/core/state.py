"""What the proxy did in each conversation: ``sessions/<session>-<thread>.jsonl``.

The file is read on every request under the conversation's flock, so a
proxy restart or a ``bead forget`` in another process takes effect at once,
and parallel subagents (different conversations) never wait for each other.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import files as safe
from ..conversation import Identity
from ..paths import Home
from ..store.locks import flocked

IDENTITY_FIELDS = ("session", "base_session", "thread", "project")
CHAIN_KEEP_S = 24 * 3600  # a chain record's life (bead.proxy.workers: another worker continues the chain)
CHAIN_PRUNE_EVERY = 256  # records written between two prunes
PARSED_KEEP = 256  # conversations whose parsed state a process keeps (ConversationState.load)
PARSED_BYTES = 16 * 1024 * 1024  # and the most bytes of state files those stand for
_PARSED: OrderedDict[str, tuple[int, bytes, ConversationState]] = OrderedDict()  # path -> (bytes parsed, digest, state)
_PARSED_LOCK = threading.Lock()


def _digest(data: memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass
class CueRecord:
    message: int
    hash: str
    text: str | None
    ids: list[str] = field(default_factory=list)
    pointers: list[str] = field(default_factory=list)  # fact ids the block points to, not shown
    digests: dict[str, str] = field(default_factory=dict)  # fact id -> what was shown of it (render.shown_digest)


@dataclass
class ConversationState:
    """Rebuilt from its file each request."""

    path: Path
    root: Path
    pinned: str | None = None
    pinned_ids: list[str] = field(default_factory=list)
    has_pinned: bool = False
    pinned_digests: dict[str, str] = field(default_factory=dict)  # fact id -> what the block showed of it
    # The project whose facts this conversation's blocks name by their bare names (bead.recall.render.pointer_key):
    # its first request's, recorded once in a record of its own (``claim_names``).
    names_project: str | None = None
    names_known: bool = False
    # Each cue record by the message it went into and that message's hash: a rewind or a side request puts
    # another message at an index, whose record is its own; the block re-added is the one of the message there now.
    cues: dict[tuple[int, str], CueRecord] = field(default_factory=dict)
    last_cue: int = 0  # the message the newest cue record went into: where the next request's look at ``plain`` starts
    # Newest messages (by index and hash) sent without a block that no later request has looked at since (a later
    # request that holds one records it in ``plain``): the next look for such messages starts at the lowest.
    bare: set[tuple[int, str]] = field(default_factory=set)
    # The person's messages (by index and hash) a request sent without a block before its newest one (two user
    # messages in a row, a request whose recall failed open, a resumed history): none is ever given one later, which
    # every request that holds it would re-add, its cached prefix changed there (a side request ending at one).
    plain: set[tuple[int, str]] = field(default_factory=set)
    captured: int = 0
    captured_partial: bool = False
    # The raw log's forget epoch when the request that captured up to ``captured`` came: the answer after that
    # place, where the proxy could not read it as it ended (a compressed stream), is that request's, said then.
    captured_epoch: str | None = None
    # A capture under way (bead.proxy.engine): its batch id and where it takes ``captured``; cleared by the
    # "captured" record that follows its append. One still set names a capture that stopped in between (a crash):
    # the raw log says whether its append happened (the append is the commit).
    capturing: dict[str, Any] | None = None
    ahead: list[str] = field(default_factory=list)  # the look-ahead judge's picks for the next request
    # A Responses chain's later step (its own file): the step it continues, and what the chain was shown before it.
    carried_from: str | None = None
    carried_ids: list[str] = field(default_factory=list)
    carried_pointers: list[str] = field(default_factory=list)
    carried_digests: dict[str, str] = field(default_factory=dict)
    # Whether the last answer captured here called a command that prints a secret on its own (`printenv X`): a
    # request continuing it (previous_response_id) carries only the call's output, redacted so (bead.core.capture).
    answer_prints: bool = False
    carried_prints: bool = False
    # Records this request made and has not written yet (``defer``): None writes each at once.
    pending: list[dict[str, Any]] | None = field(default=None, repr=False)
    # The person's messages (and tool results) the raw log has, by index and hash: a new one at an index the
    # capture has passed (a rewind, a side request on the same session) is logged on its own, an "aside", with its
    # answer, and the capture's place for the conversation's line stays where it was.
    logged: set[tuple[int, str]] = field(default_factory=set)
    asides: dict[tuple[int, str], bool] = field(default_factory=dict)  # (index, hash) -> its answer is logged
    aside_answers: dict[int, str] = field(default_factory=dict)  # an aside's answer: its index -> its turns' digest

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

    def live(self, n: int, hash_of: Callable[[int], str]) -> set[tuple[int, str]]:
        """The cue records of this request's ``n`` messages: at an index it has, with the hash of the message there
        now (``hash_of``, asked only for the indexes that have a record). One of a message that is gone or was
        another (a rewind, a side request that shared the conversation's first messages) is of a branch the model
        does not see in this request."""
        return {(i, h) for i, h in self.cues if 0 <= i < n and hash_of(i) == h}

    def seen(self, live: set[tuple[int, str]]) -> tuple[set[str], set[str]]:
        """The fact ids this request's model has been shown (the pinned block, a chain's earlier steps, the cue
        records of ``live``) and the fact ids it was pointed to there."""
        shown = set(self.pinned_ids) | set(self.carried_ids)
        pointers = set(self.carried_pointers)
        for k in live:
            shown.update(self.cues[k].ids)
            pointers.update(self.cues[k].pointers)
        return shown, pointers

    def shown_digests(self, live: set[tuple[int, str]] | None = None) -> dict[str, str]:
        """What this request's model was shown of each fact it was shown or pointed to (render.shown_digest), the
        latest block's where several showed one: the pinned block's, a chain's earlier steps', then the cue records
        of ``live`` (all of them where None) in their messages' order. A fact whose value changed in place since (a
        version file edited, its id the same) is told to the conversation as a replaced one is."""
        out = {**self.pinned_digests, **self.carried_digests}
        for k in sorted(self.cues if live is None else live):
            out.update(self.cues[k].digests)
        return out

    @classmethod
    def load(cls, home: Home, conversation_id: str) -> ConversationState:
        """The state as its file says now. The file is read whole every time (another worker, or a forget, may
        have changed it), but only the lines after what this process parsed last time are parsed, when the bytes
        before them are the very bytes it parsed (a digest of them): a conversation of hundreds of requests no
        longer parses all of its records three times a request."""
        path = home.session_state(conversation_id)
        key = str(path)
        try:
            data = safe.read_bytes(path, root=home.root)
        except FileNotFoundError:
            with _PARSED_LOCK:
                _PARSED.pop(key, None)
            return cls(path, home.root)
        with _PARSED_LOCK:
            known = _PARSED.get(key)
        view = memoryview(data)
        start = 0
        st = cls(path, home.root)
        if known is not None and len(data) >= known[0] and _digest(view[: known[0]]) == known[1]:
            start, st = known[0], known[2].copy()
        end = max(data.rfind(b"\n") + 1, start)  # whole lines only: another process may be writing the last one
        for line in safe.lines_of(bytes(view[start:end]).decode("utf-8", errors="replace")):
            st._apply(line)
        with _PARSED_LOCK:
            _PARSED[key] = (end, _digest(view[:end]), st.copy())
            _PARSED.move_to_end(key)
            while len(_PARSED) > PARSED_KEEP or (len(_PARSED) > 1 and sum(e[0] for e in _PARSED.values()) > PARSED_BYTES):
                _PARSED.popitem(last=False)
        if end < len(data):
            st._apply(bytes(view[end:]).decode("utf-8", errors="replace"))
        return st

    def copy(self) -> ConversationState:
        """A copy whose containers are its own (a caller's changes never reach the parsed-state cache)."""
        return dataclasses.replace(
            self,
            pinned_ids=list(self.pinned_ids),
            cues={
                k: dataclasses.replace(c, ids=list(c.ids), pointers=list(c.pointers), digests=dict(c.digests))
                for k, c in self.cues.items()
            },
            pinned_digests=dict(self.pinned_digests),
            carried_digests=dict(self.carried_digests),
            logged=set(self.logged),
            plain=set(self.plain),
            bare=set(self.bare),
            asides=dict(self.asides),
            aside_answers=dict(self.aside_answers),
            capturing=dict(self.capturing) if self.capturing is not None else None,
            ahead=list(self.ahead),
            carried_ids=list(self.carried_ids),
            carried_pointers=list(self.carried_pointers),
        )

    def _apply(self, line: str) -> None:
        """One record of the file; a torn or malformed line is skipped, never stops the conversation."""
        try:
            r = json.loads(line)
            if not isinstance(r, dict):
                return
            kind = r.get("kind")
            if kind == "pinned":
                self.has_pinned, self.pinned, self.pinned_ids = True, r.get("text"), list(r.get("ids") or [])
                self.pinned_digests = _digests(r.get("digests"))
            elif kind == "names":
                if not self.names_known:  # the first one holds
                    project = r.get("project")
                    self.names_project, self.names_known = (project if isinstance(project, str) else None), True
            elif kind == "cue":
                rec = CueRecord(
                    int(r["message"]),
                    str(r.get("hash", "")),
                    r.get("text"),
                    list(r.get("ids") or []),
                    list(r.get("pointers") or []),
                    _digests(r.get("digests")),
                )
                self.cues[(rec.message, rec.hash)] = rec
                self.last_cue = rec.message
            elif kind == "bare":
                self.bare.add((int(r["message"]), str(r["hash"])))
            elif kind == "looked":
                self.bare.difference_update(logged_pairs(r.get("messages")))
            elif kind == "plain":
                self.plain.update(logged_pairs(r.get("messages")))
            elif kind == "ahead":
                self.ahead = list(r.get("ids") or [])
            elif kind == "carried":
                ids, pointers = list(r.get("ids") or []), list(r.get("pointers") or [])
                self.carried_from, self.carried_ids, self.carried_pointers = str(r.get("from") or ""), ids, pointers
                self.carried_prints = r.get("prints") is True
                self.carried_digests = _digests(r.get("digests"))
            elif kind == "answer_prints":
                self.answer_prints = r.get("prints") is True
            elif kind == "captured":
                epoch = r.get("epoch") if isinstance(r.get("epoch"), str) else None
                self._captured(int(r.get("upto", 0)), bool(r.get("partial", False)), r.get("logged"), epoch)
            elif kind == "aside":
                self._aside(r)
            elif kind == "capturing":
                batch, upto = str(r.get("batch", "")), int(r.get("upto", 0))
                self.capturing = {"batch": batch, "upto": upto, "partial": bool(r.get("partial")), "remember": r.get("remember")}
                if isinstance(r.get("epoch"), str):
                    self.capturing["epoch"] = r["epoch"]
                if r.get("logged"):
                    self.capturing["logged"] = [list(k) for k in logged_pairs(r["logged"])]
            elif kind == "remembered" and self.capturing and r.get("batch") == self.capturing["batch"]:
                self.capturing["remember"] = None
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
            return

    def append(self, record: dict[str, Any]) -> None:
        if self.pending is not None:
            self.pending.append(record)
            return
        safe.append_line(self.path, json.dumps(record, ensure_ascii=False), root=self.root)

    def defer(self) -> None:
        """Hold the records of what this request sends (``append``) until ``flush``: a request is recorded as sent
        only once it is sure to go out as prepared (the proxy's guard may give up on it and forward the original)."""
        if self.pending is None:
            self.pending = []

    def flush(self) -> None:
        """Write the held records, in one append (one write: no other line comes between them)."""
        held, self.pending = self.pending or [], None
        if held:
            safe.append_line(self.path, "\n".join(json.dumps(r, ensure_ascii=False) for r in held), root=self.root)

    def set_pinned(self, text: str | None, ids: list[str], digests: dict[str, str] | None = None) -> None:
        self.append({"kind": "pinned", "text": text, "ids": ids, **({"digests": digests} if digests else {})})
        self.has_pinned, self.pinned, self.pinned_ids = True, text, ids
        self.pinned_digests = dict(digests or {})

    def inherit_names(self, before: ConversationState) -> None:
        """A Responses chain's step names what the step before it named (its blocks are in the same context)."""
        if before.names_known and not self.names_known:
            self.append({"kind": "names", "project": before.names_project})
            self.names_project, self.names_known = before.names_project, True

    def claim_names(self, project: str | None, fresh: bool = True) -> bool:
        """Whether this conversation's blocks name ``project``'s facts by their bare names: only the project (or
        none) its first request named, which that request records here once. A record of its own, holding no
        fact, so that a forget's scrub (which drops the pinned record that named the fact, after which the
        pinned block is built again) keeps it. A conversation whose project changed since (a header that names
        another), that had none then, or that is not ``fresh`` (a Responses chain's step whose earlier steps
        this proxy cannot see) gets full keys: two facts of one name from two projects never read alike. A
        state file from before this record (it has blocks, and no record) keeps the bare names."""
        if not self.names_known:
            if self.has_pinned or self.cues or self.carried_from:
                return project is not None
            named = project if fresh else None
            self.append({"kind": "names", "project": named})
            self.names_project, self.names_known = named, True
        return project is not None and self.names_project == project

    def add_cue(
        self,
        message: int,
        hash_: str,
        text: str | None,
        ids: list[str],
        pointers: list[str] | None = None,
        digests: dict[str, str] | None = None,
    ) -> None:
        record: dict[str, Any] = {"kind": "cue", "message": message, "hash": hash_, "text": text, "ids": ids}
        if pointers:
            record["pointers"] = pointers
        if digests:
            record["digests"] = digests
        self.append(record)
        self.cues[(message, hash_)] = CueRecord(message, hash_, text, ids, list(pointers or []), dict(digests or {}))
        self.last_cue = message

    def mark_bare(self, message: int, hash_: str) -> None:
        """This request's newest message goes without a block (its recall failed open, or came too late)."""
        self.append({"kind": "bare", "message": message, "hash": hash_})
        self.bare.add((message, hash_))

    @property
    def bare_from(self) -> int | None:
        """Where the next look for messages sent without a block starts, at the latest (``bare``)."""
        return min((i for i, _ in self.bare), default=None)

    def looked(self, seen: list[tuple[int, str]]) -> None:
        """A request that holds these ``bare`` messages looked at them: done with. One of another branch at the same
        index is not (a cue there, or a look over it, ended the look's start at the prompt sent without a block: a
        review)."""
        done = [k for k in seen if k in self.bare]
        if done:
            self.append({"kind": "looked", "messages": [list(k) for k in done]})
            self.bare.difference_update(done)

    def add_plain(self, messages: list[tuple[int, str]]) -> None:
        """These messages went out without a block, before the request's newest one (``plain``)."""
        new = [k for k in messages if k not in self.plain]
        if new:
            self.append({"kind": "plain", "messages": [list(k) for k in new]})
            self.plain.update(new)

    def carry(
        self, from_id: str, ids: list[str], pointers: list[str], prints: bool = False, digests: dict[str, str] | None = None
    ) -> None:
        """This conversation continues ``from_id`` (a Responses chain): what that one was shown counts as shown (and
        ``digests``, what it was shown of each), and ``prints``: its last answer called a command that prints a secret
        (``answer_prints``)."""
        self.append(
            {
                "kind": "carried",
                "from": from_id,
                "ids": ids,
                "pointers": pointers,
                **({"prints": True} if prints else {}),
                **({"digests": digests} if digests else {}),
            }
        )
        self.carried_from, self.carried_ids, self.carried_pointers, self.carried_prints = from_id, ids, pointers, prints
        self.carried_digests = dict(digests or {})

    def set_answer_prints(self, prints: bool) -> None:
        """Whether the answer just captured called a command that prints a secret on its own."""
        if prints != self.answer_prints:
            self.append({"kind": "answer_prints", "prints": prints})
            self.answer_prints = prints

    def set_ahead(self, ids: list[str]) -> None:
        """The look-ahead judge's picks (fact ids), injected with the conversation's next request."""
        self.append({"kind": "ahead", "ids": ids})
        self.ahead = ids

    def set_captured(
        self, upto: int, partial: bool = False, logged: list[tuple[int, str]] | None = None, epoch: str | None = None
    ) -> None:
        """The raw log has the conversation's turns up to message ``upto``; ``logged``: the person's messages among
        the ones this capture appended, by index and hash; ``epoch``: the raw log's forget epoch when the request
        whose capture this is came (``captured_epoch``)."""
        record: dict[str, Any] = {"kind": "captured", "upto": upto, "partial": partial}
        if logged:
            record["logged"] = [list(k) for k in logged]
        if epoch is not None:
            record["epoch"] = epoch
        self.append(record)
        self._captured(upto, partial, record.get("logged"), epoch)

    def _captured(self, upto: int, partial: bool, logged: Any = None, epoch: str | None = None) -> None:
        if upto >= self.captured:  # never backwards (a late record of an earlier answer)
            self.captured, self.captured_partial, self.captured_epoch = upto, partial, epoch
        self.capturing = None
        self.logged.update(logged_pairs(logged))

    def set_aside(self, message: int, hash_: str, answered: bool = False, answer_at: int | None = None, answer: str = "") -> None:
        """A message at an index the capture had passed, logged on its own (``logged``); ``answered``: and its
        answer too, which is message ``answer_at`` of the conversation, its turns' digest ``answer``: the
        conversation's capture that reaches that index passes over it (``aside_answers``)."""
        record: dict[str, Any] = {"kind": "aside", "message": message, "hash": hash_, "answered": answered}
        if answer_at is not None:
            record.update(answer_at=answer_at, answer=answer)
        self.append(record)
        self._aside(record)

    def _aside(self, r: dict[str, Any]) -> None:
        key = (int(r["message"]), str(r["hash"]))
        self.logged.add(key)
        self.asides[key] = self.asides.get(key, False) or bool(r.get("answered"))
        at = r.get("answer_at")
        if isinstance(at, int) and not isinstance(at, bool) and at >= 0 and isinstance(r.get("answer"), str):
            self.aside_answers[r["answer_at"]] = r["answer"]

    def set_capturing(
        self,
        batch: str,
        upto: int,
        partial: bool = False,
        remember: int | None = None,
        logged: list[tuple[int, str]] | None = None,
        epoch: str | None = None,
    ) -> None:
        """A capture of the turns up to message ``upto`` is about to be appended with this batch id; ``remember``:
        the message whose "remember" runs after the append (done: ``set_remembered``); ``logged``: the person's
        messages among them (``set_captured``), for a capture that stops in between (``_catch_up``); ``epoch``: the
        raw log's forget epoch when its request came (RawLog.settled)."""
        record: dict[str, Any] = {"kind": "capturing", "batch": batch, "upto": upto, "partial": partial, "remember": remember}
        if epoch is not None:
            record["epoch"] = epoch
        if logged:
            record["logged"] = [list(k) for k in logged]
        self.append(record)
        self.capturing = {k: v for k, v in record.items() if k != "kind"}

    def set_remembered(self, batch: str) -> None:
        self.append({"kind": "remembered", "batch": batch})
        if self.capturing and self.capturing["batch"] == batch:
            self.capturing["remember"] = None


def _digests(value: Any) -> dict[str, str]:
    """A record's ``digests`` as written (fact id -> hex); anything else (an older record, a hand edit) is none."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


# A message's digest a forget took (``Conversations.forget_digests``): its index is known as logged, its words not.
FORGOTTEN_DIGEST = "forgotten"


def logged_pairs(value: Any) -> list[tuple[int, str]]:
    """The (index, hash) pairs a record's ``logged`` holds; an entry of another shape (a damaged or hand-edited
    file) is passed over."""
    if not isinstance(value, list):
        return []
    return [
        (i, h)
        for i, h in (e for e in value if isinstance(e, list | tuple) and len(e) == 2)
        if isinstance(i, int) and not isinstance(i, bool) and isinstance(h, str)
    ]


class Conversations:
    """Every conversation's state file; the operations the proxy and forget need."""

    def __init__(self, home: Home):
        self.home = home
        self._chain_writes = 0

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

    # ----- Responses API chains across proxy workers ----------------------------
    def record_chain(self, response_id: str, ident: Identity | None, n_messages: int, latest: bool = False) -> bool:
        """That the answer ``response_id`` belongs to ``ident``'s conversation, whose request had ``n_messages``
        (None: two conversations claimed it), for a request continuing it in another worker. An id already
        recorded for another conversation is recorded as neither's; ``latest``: ``response_id`` is a Conversations
        API conversation's id, which each step continues, and names its latest step. True when it is time to prune
        old records (``prune_chains``, off the request's path)."""
        if ident is not None and not latest:
            known = self.chain(response_id)
            if known is not None and known[0] != ident:
                ident = None
        path = self.home.chain_file(response_id)
        data = {"n": n_messages, **({"ident": dataclasses.asdict(ident)} if ident is not None else {})}
        safe.atomic_write(path, json.dumps(data).encode(), root=self.home.root, durable=False)
        self._chain_writes += 1
        return self._chain_writes % CHAIN_PRUNE_EVERY == 1  # a process's first record too: one that restarts often

    def chain(self, response_id: str) -> tuple[Identity | None, int] | None:
        """The conversation an answer belongs to and its request's message count, as ``record_chain`` left them
        (None: no record; an Identity of None: two conversations claimed the answer)."""
        try:
            data = json.loads(safe.read_text(self.home.chain_file(response_id), root=self.home.root))
            ident = data.get("ident")
            if ident and not all(isinstance(ident[k], str) for k in IDENTITY_FIELDS if k != "project"):
                return None
            if ident and not isinstance(ident["project"], str | None):
                return None
            return (Identity(**{k: ident[k] for k in IDENTITY_FIELDS}) if ident else None), int(data["n"])
        except (OSError, ValueError, KeyError, TypeError, OverflowError, safe.UnsafePath):
            return None

    def prune_chains(self, now: float | None = None) -> int:
        """Drop chain records older than CHAIN_KEEP_S (a Responses chain goes on within minutes)."""
        folder = self.home.chain_file("x").parent
        now = time.time() if now is None else now
        gone = 0
        try:
            names = safe.listdir(folder, root=self.home.root)
        except (OSError, safe.UnsafePath):
            return 0
        for name in names:
            p = folder / name
            try:
                if now - os.lstat(p).st_mtime > CHAIN_KEEP_S:
                    gone += safe.unlink(p, root=self.home.root)
            except (OSError, safe.UnsafePath):
                continue
        return gone

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
            n = sum(1 for line in safe.lines_of(text) if matches(line))
            if n:
                out[p] = n
        return out

    def forget_digests(self, messages: dict[str, set[int]]) -> int:
        """Replace the digest of each of ``messages`` (session -> message indexes whose turns a forget took) in
        the state files of those sessions' conversations with FORGOTTEN_DIGEST: a digest of a message that is
        a guessable value alone (a tool's output `4417`) gave the value back to whoever tried them all. The capture
        goes on from where it was (it counts by index), so the message is not captured again as the conversation
        goes on; a rewind that sends it again is captured as a new one, and a cue block put in it is no longer
        re-added (its message reads as another one). The number of lines changed."""
        changed = 0
        for p in self.files():
            session = p.stem.rsplit("-", 1)[0]
            gone = messages.get(session)
            if not gone:
                continue

            def edit(line: str, gone: set[int] = gone) -> str | None:
                try:
                    rec = json.loads(line)
                except ValueError:
                    return line
                if not isinstance(rec, dict):
                    return line
                out = dict(rec)
                if out.get("message") in gone and isinstance(out.get("hash"), str):
                    out["hash"] = FORGOTTEN_DIGEST
                if "logged" in out:
                    out["logged"] = [[i, FORGOTTEN_DIGEST if i in gone else h] for i, h in logged_pairs(out["logged"])]
                return line if out == rec else json.dumps(out, ensure_ascii=False)

            with self.lock(p.stem):
                changed += safe.rewrite_lines(p, edit, root=self.home.root)
        return changed

    def scrub(self, files: list[Path], matches: Callable[[str], bool]) -> int:
        """Drop the lines that ``matches`` from the given state files, each under its conversation's lock."""
        removed = 0
        for p in files:
            with self.lock(p.stem):
                removed += safe.rewrite_lines(p, lambda line: None if matches(line) else line, root=self.home.root)
        return removed
