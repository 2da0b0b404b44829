"""What the proxy does around one request, with no HTTP in sight.

Before forwarding, only what changes the forwarded bytes, all under one
deadline (``proxy.recall_deadline_ms``): parse the body once (the wire
format's job: a ``bead.wire.Wire``, which the route passes in), name the
conversation, build (once) the pinned block, run recall for the newest user
message (once), and splice the blocks into the raw body. Past the deadline,
or on any failure, the original bytes go out.

Everything else runs after forwarding, off the event loop, one job at a time
per conversation and in order: capture the new turns (secret scan, raw
append; the indexer indexes them), "remember", the audit's inject records
and the trace; then,
when the response ends, the assistant turn. A conversation's next request
does not wait for them (a capture holds a lock of its own, and the raw
append is its commit); only a Responses chain's next step waits for the
answer it continues, and with ``rerank.mode: async`` a request waits, within
its deadline, for the previous one's judge.

The work itself is the application layer's (``bead.core``, ``bead.recall``);
this module only orders it for a proxied conversation and fails open.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import os
import threading
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import budget
from .. import files as safe
from ..capture.secrets import PRINTED, keep_found, redact_known, redact_messages, ruleset, shared_across
from ..config import Config
from ..conversation import Conversation, Identity, delegated, identify, names_session, one_turn_each, untyped
from ..core import capture
from ..core import remember as remembering
from ..core.memory import Memory, utcnow
from ..core.pinned import standing_memory
from ..core.recall import Recaller
from ..core.state import Conversations, ConversationState, logged_pairs
from ..core.trace import Trace, record_proxy_trace
from ..paths import Home
from ..store.locks import LockBusy
from ..store.rawlog import FORGOTTEN, REPLAYED, SAID_AT_EPOCH, UNSCREENED
from ..store.rawlog import Turn as RawTurn
from ..wire import Wire, anthropic
from ..wire.splice import TooLarge
from . import workers
from .workers import Board

log = logging.getLogger("bead.proxy")

# Larger bodies go out unchanged, uncaptured. 32 MiB, at or above the Messages API's own 32 MB limit: below it a
# conversation of screenshots or PDFs keeps its blocks on every request (past 16 MiB, the limit before, each later
# request went out without them, and the prompt cache missed); above it the API refuses the request anyway.
# Reading one of 28 MiB takes about 80 ms, and splicing as long again.
MAX_BODY_BYTES = 32 * 1024 * 1024
# The API's own limit, read as decimal megabytes (the smaller reading): bead's blocks never take a body that was under
# it over it. Such a request goes out as the harness sent it, since with the blocks the API would refuse it.
API_BODY_BYTES = 32_000_000
# Parsing cannot look at the clock, and its cost grows with the number of
# objects, not bytes: a body of more messages than any real conversation
# holds goes out unchanged too (a C-speed count finds it before any parsing:
# messages carry a "role", the Responses API's tool calls and outputs a "call_id").
MAX_MESSAGES = 10_000
MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # response bytes kept for capturing the assistant turn
MAX_CHAINS = 4096  # Responses ids remembered for previous_response_id
MAX_PRINTED_CONVERSATIONS = 1024  # conversations whose printed secrets' values are looked for again (in memory)
# Of the newest message, the characters a "remember" notice reads for secrets before forwarding: its end, where a
# `.env` pasted with the "remember" stands (the scan takes up to 15 s a megabyte of text dense with secrets' names).
NOTICE_SCAN_CHARS = 8 * 1024
CHAIN_ANSWER_WAIT_S = 5.0  # a chain step's capture waits this long at most for the previous answer in another worker
# SQLite's page cache of each of the proxy's connections (one a thread, in every worker): 512 KiB instead of SQLite's
# 2,000 took about 7 MB off a worker at 10,000 facts and 200,000 turns (docs/results.md); the OS caches the file.
PAGE_CACHE_KIB = 512


class DeadlineExceeded(Exception):
    """bead's work on a request passed ``proxy.recall_deadline_ms``."""


class ForgetBegan(Exception):
    """A forget or seal began while a request was being prepared: the request goes out unchanged, nothing recorded."""


class Abandoned(Exception):
    """The proxy's guard gave up waiting for this preparation and forwarded the original: nothing is recorded."""


class Claim:
    """Whether a preparation's result is the request that goes out. The proxy's guard (bead.proxy.app) abandons a
    preparation it stopped waiting for; the preparation records its blocks as sent (the conversation's state, which
    the next request re-adds byte for byte) only after claiming the send here. Whichever comes first wins: an
    abandoned preparation records nothing, and a claimed one is waited for and sent as prepared."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "open"

    def _become(self, state: str, unless: str) -> bool:
        with self._lock:
            if self._state == unless:
                return False
            self._state = state
            return True

    def claim(self) -> bool:
        """True when the preparation's result goes out; False when the guard abandoned it already."""
        return self._become("claimed", unless="abandoned")

    def abandon(self) -> bool:
        """True when the preparation will record nothing; False when it has claimed the send already."""
        return self._become("abandoned", unless="claimed")


def _forgotten(turns: list[RawTurn]) -> bool:
    """Whether the raw log took these turns as [forgotten] (a forget began since their request came)."""
    return any(t.text == FORGOTTEN and t.flags.get(UNSCREENED) for t in turns)


@dataclass
class Prepared:
    body: bytes  # what goes upstream
    ident: Identity | None = None  # set when the request is a conversation bead captures
    conv: Conversation | None = None
    n_messages: int = 0
    injected: list[str] = field(default_factory=list)
    pinned_new: list[str] = field(default_factory=list)  # the pinned block's ids, when built by this request
    pinned_text: str | None = None  # the conversation's (frozen) pinned block
    blocks: dict[int, list[str]] = field(default_factory=dict)  # message index -> cue blocks to append
    trace: dict[str, Any] = field(default_factory=dict)
    wire: Wire = anthropic  # the format the answer is read in
    judge: Any = None  # rerank.mode async: the CueBlock the judge looks at
    plans: list[remembering.Plan] | None = None  # what "remember" will do, decided before forwarding
    # A Responses chain's previous step that another worker answered: its conversation id and message count,
    # whose answer goes into the raw log before this request's turns.
    after: tuple[str, int] | None = None
    # The raw log's forget epoch when the request arrived: its turns and its answer, captured after a forget or seal
    # began, are written as [forgotten] (they may hold what it took; RawLog.append_many).
    epoch: str | None = None


def _scrubbed(value: Any, values: dict[str, str]) -> Any:
    """``value`` (a trace entry) with each of ``values`` (a secret the conversation's capture found or a command
    printed, to its rule) redacted in every string: the trace quotes the turn's words, which its cues redact by the
    rules alone (a password the person pasted by name, then said bare)."""
    if not values:
        return value
    if isinstance(value, str):
        for v in sorted(values, key=len, reverse=True):
            if v in value:
                value = value.replace(v, f"[REDACTED:{values[v]}]")
        return value
    if isinstance(value, dict):
        return {k: _scrubbed(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, values) for v in value]
    return value


def _turns_digest(turns: list[capture.Turn]) -> str:
    """What an answer's turns say, for telling it again in the conversation the harness sends back."""
    return hashlib.blake2b("\x00".join(f"{t.role}\x01{t.text}" for t in turns).encode(), digest_size=12).hexdigest()


class Counts(Counter[str]):
    """The proxy's counters, which say when they change (``on_change``: a worker publishes them)."""

    on_change: Callable[[], None] | None = None

    def __setitem__(self, key: str, value: int) -> None:
        super().__setitem__(key, value)
        if self.on_change is not None:
            self.on_change()


class Engine:
    def __init__(
        self,
        home: Home,
        config: Config,
        default_project: str | None = None,
        trace_path: str | None = None,
        clock: Callable[[], datetime] = utcnow,
    ):
        self.home = home
        self.config = config
        self.default_project = default_project if default_project is not None else config.proxy.project
        trace = trace_path if trace_path is not None else config.proxy.trace
        self.trace = Trace(Path(trace).expanduser().absolute()) if trace else None
        # Forget must find this trace even from a shell that knows nothing of it.
        record_proxy_trace(home, self.trace.path if self.trace else None)
        self.deadline_s = config.proxy.recall_deadline_ms / 1000
        self.clock = clock
        self.started = time.time()
        self.counters = Counts()
        self.last_error: dict[str, Any] | None = None
        self.board: tuple[Board, int] | None = None  # proxy.workers > 1: the shared board and this worker's slot
        self.conversations = Conversations(home)
        self.recaller = Recaller(config, self.error)
        self.recaller.trace_cues = self.trace is not None  # no trace file: no excerpts to make for it
        self._local = threading.local()
        # Work after forwarding: its own threads, so it never holds up a
        # request's preparation; chained per conversation to keep its order.
        self._after = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bead-capture")
        self._chains: dict[str, Future[None]] = {}  # each conversation's newest job
        self._queues: dict[str, deque[tuple[Callable[[], None], Future[None]]]] = {}
        self._chains_lock = threading.Lock()
        self._judging: dict[str, threading.Event] = {}  # a conversation whose judge (rerank.mode async) is under way
        self.warmed = threading.Event()  # set once warm_up() has finished (or given up)
        # Responses API chains: a response's id -> the conversation it answered, so that the request continuing
        # it (previous_response_id, no session header) is the same conversation. In memory, the newest ones; each is
        # also recorded in the store (``chained``), which a step continuing an answer no longer held here reads.
        self._responses: OrderedDict[str, Identity | None] = OrderedDict()  # None: an id two answers claimed
        self._answers: dict[str, threading.Event] = {}  # a chained answer's conversation -> set once its capture is queued
        self._responses_lock = threading.Lock()
        # The values a conversation's printed secrets held (``capture.request_turns``' ``known``), so that a later
        # answer that says one again is redacted too. In this process's memory only, never on disk; the newest
        # MAX_PRINTED_CONVERSATIONS conversations. A conversation's captures run one after another (``_chain``).
        self._printed: OrderedDict[str, list[str]] = OrderedDict()
        # Beside them, the values the secret scan found in what the conversation captured (value to rule), redacted
        # wherever a later turn says one again (the model repeating a password the person pasted in a `.env`).
        self._found: dict[str, dict[str, str]] = {}
        # How many of a conversation's messages this process has read for such values: the messages before it
        # captures (another worker's, or before a restart) are read at its next capture (``_seed_found``).
        self._seeded: dict[str, int] = {}
        # The newest values found in any conversation (REPEATS_KEPT of them), looked for in every other one's
        # captures too: the password the person pasted in one session and says bare in the next. In memory only.
        self._found_all: dict[str, str] = {}
        self._printed_lock = threading.Lock()
        # Build the index now if it is missing, so no request pays for a rebuild.
        with Memory(home, config, clock) as mem:
            mem.index  # noqa: B018 - opening it builds it

    def warm_up(self) -> threading.Thread:
        """Build, off the request path, what the first request would otherwise pay for: the recall
        gate's IDF statistics over every current fact (~0.2 s at 10,000 facts) and the secret scan's
        rules. Without it the first conversation after a start could pass the deadline and get no
        memory. A failure here costs nothing: the first request builds them as before."""

        def run() -> None:
            try:
                with Memory(self.home, self.config, self.clock, busy_timeout_ms=250) as mem:
                    self.recaller.fact_stats(mem, lambda terms: self.memory().index.raw_doc_freq(terms))
                ruleset()
            except Exception as exc:  # noqa: BLE001 - only a head start; the request path does it again
                log.info("proxy warm-up skipped: %s", type(exc).__name__)
            finally:
                self.warmed.set()

        thread = threading.Thread(target=run, name="bead-warm-up", daemon=True)
        thread.start()
        return thread

    # ----- per-thread runtime ------------------------------------------------
    def memory(self) -> Memory:
        mem = getattr(self._local, "mem", None)
        if mem is None:
            # A short busy timeout: a locked index fails the recall step open
            # instead of holding the agent's request.
            mem = Memory(self.home, self.config, self.clock, busy_timeout_ms=250)
            # The request path never waits for a question's vector past its limit; the indexer's model computes it
            # (this process loads none: about 200 MB), and without an indexer the words' order stands.
            mem.semantic_wait = False
            mem.semantic_socket = self.home.embed_socket
            mem.cache_kib = PAGE_CACHE_KIB
            self._local.mem = mem
        return mem

    def error(self, kind: str, exc: BaseException | None = None) -> None:
        self.counters["errors"] += 1
        self.counters[f"error.{kind}"] += 1
        self.last_error = {"kind": kind, "at": time.time(), "detail": type(exc).__name__ if exc else ""}
        log.warning("proxy %s failed open: %s", kind, type(exc).__name__ if exc else "", exc_info=exc is not None)

    def count(self, what: str) -> None:
        self.counters[what] += 1

    # ----- before forwarding -------------------------------------------------
    def prepare(
        self,
        body: bytes,
        headers: dict[str, str],
        deadline: float | None = None,
        wire: Wire = anthropic,
        claim: Claim | None = None,
    ) -> Prepared:
        """The bytes to forward. Never raises: any failure forwards ``body`` unchanged.

        ``deadline`` is a ``time.monotonic()`` instant; past it, the work
        stops and ``body`` goes out unchanged. ``wire`` is the request's API
        (the route knows it); every step after parsing is the same for all.
        ``claim``: the proxy's hold on the send (``Claim``); the blocks are recorded as sent only once it is claimed.
        """
        t0 = time.perf_counter()
        deadline = time.monotonic() + self.deadline_s if deadline is None else deadline
        self.counters["requests"] += 1
        epoch = self._forget_epoch()
        if len(body) > MAX_BODY_BYTES or body.count(b'"role"') + body.count(b'"call_id"') > MAX_MESSAGES:
            self.count("too_large")
            return Prepared(body)
        try:
            with budget.until(deadline):
                req, conv = wire.parse(body, headers)
        except TooLarge:  # more elements or parts than bead reads before forwarding
            self.count("too_large")
            return Prepared(body)
        except budget.OutOfTime:  # a body that takes longer to read than the deadline leaves (a paste of 2 MB)
            self.error("deadline")
            return Prepared(body)
        except Exception as exc:  # not JSON, not UTF-8, too deep (RecursionError), out of memory
            self.error("parse", exc)
            return Prepared(body)
        if conv.auxiliary:
            self.count("auxiliary")
            return Prepared(body)
        why = untyped(conv, headers)
        if why:
            conv = conv.marked_untyped(why)
        conv = dataclasses.replace(conv, messages=one_turn_each(conv.messages))

        def finish(prep: Prepared) -> None:
            """The body as it goes out, then the claim on sending it; the records of what it holds are written
            after this (under the conversation's lock), so a splice that fails or a send the guard gave up on
            records nothing: the next request would re-add bytes the model never saw (and break the cache)."""
            prep.body = wire.splice(req, prep.pinned_text, prep.blocks)
            if len(prep.body) > API_BODY_BYTES >= len(body):
                raise TooLarge(f"the blocks would take the body past the API's {API_BODY_BYTES} bytes")
            prep.wire = wire
            if claim is not None and not claim.claim():
                raise Abandoned

        try:
            return self._prepare(conv, headers, deadline, t0, epoch, finish)
        except ForgetBegan:  # fail open, as on any failure: nothing of this request was recorded
            self.count("forget_during_request")
            return Prepared(body)
        except Abandoned:  # the original went out already; nothing of this request was recorded
            self.count("abandoned")
            return Prepared(body)
        except TooLarge:  # the blocks would take it past the API's limit: as sent, nothing recorded
            self.count("too_large")
            return Prepared(body)
        except Exception as exc:  # fail open: the harness must never see bead's failure
            self.error("deadline" if isinstance(exc, DeadlineExceeded) else "inject", exc)
            return Prepared(body)

    def _left(self, deadline: float, step: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(step)
        return left

    def chained(self, prep: Prepared, response_id: str, capture_queued: bool = False) -> None:
        """The upstream named the response this request gets: a request that continues it is this conversation."""
        if prep.ident is None:
            return
        with self._responses_lock:
            known = self._responses.get(response_id, prep.ident)
            # An upstream that gave two answers one id (a local server, a proxy that rewrites them) cannot say
            # which conversation a continuation belongs to: neither, then.
            self._responses[response_id] = prep.ident if known == prep.ident else None
            self._responses.move_to_end(response_id)
            while len(self._responses) > MAX_CHAINS:
                self._responses.popitem(last=False)
            # A continuation may come before this answer's capture is queued (the client reads the last event
            # before the stream closes): it waits for finished() to say so.
            if not capture_queued and prep.ident.id not in self._answers and len(self._answers) < MAX_CHAINS:
                self._answers[prep.ident.id] = threading.Event()
            shared = self._responses[response_id]
            # A Conversations API conversation: its next request continues it by its own id, not this answer's, and
            # is the step after this one (what this step was shown is carried there).
            thread = prep.conv.thread_id if prep.conv is not None else None
            if thread:
                self._responses[thread] = prep.ident
                self._responses.move_to_end(thread)
        # The request that continues this answer may come to another worker, or to this proxy after a restart
        # or once the answer left ``_responses``: without the record it started a conversation of its own, shown
        # and pointed to again what the chain had been. (On the event loop: one small file; the occasional prune
        # of old ones goes to a thread.)
        try:
            if self.conversations.record_chain(response_id, shared, prep.n_messages):
                self._after.submit(self.conversations.prune_chains)
            if thread:
                self.conversations.record_chain(thread, prep.ident, prep.n_messages, latest=True)
        except (OSError, safe.UnsafePath) as exc:
            self.error("chain", exc)

    def _known_prints(self, conversation_id: str) -> list[str]:
        """The list of values the conversation's printed secrets held (``_printed``), made on first use."""
        return self._known(conversation_id)[0]

    def _known_found(self, conversation_id: str) -> dict[str, str]:
        """The values the secret scan found in the conversation's captured turns (``_found``), made on first use."""
        return self._known(conversation_id)[1]

    def _seed_found(self, ident: Identity, conv: Conversation, before: int, upto: int | None = None) -> None:
        """Read the conversation's messages before ``before`` that this process has not read for the values the
        secret scan finds (a proxy restarted, or another worker captured them: the `.env` the person pasted there,
        whose password the answer says bare), each message once; then count those up to ``upto`` as read (this
        capture's own, whose values its append adds)."""
        found = self._known_found(ident.id)
        with self._printed_lock:
            read = self._seeded.get(ident.id, 0)
            if read > len(conv.messages):
                read = 0  # a rewind: the conversation is another line now
            self._seeded[ident.id] = max(read, before, upto or 0)
            work = dict(found)  # read and added to apart: a capture's thread adds to ``found`` under the lock
        if before > read:
            groups = [[t.text for t in capture.message_turns(m, ident)] for m in conv.messages[read:before]]
            redact_messages([g for g in groups if g], work)
            capture.note_typed(conv.messages[read:before], work)
            self._keep_new(found, work)

    def _notice_known(self, ident: Identity, conv: Conversation, newest: int) -> tuple[dict[str, str], bool]:
        """The values a "remember" notice must not quote (to their rules): those the secret scan found in the
        conversation's turns this process read (its captures), those its commands printed, and those of the newest
        message's last ``NOTICE_SCAN_CHARS`` characters (a `.env` pasted just before the "remember" that says its
        password bare) and of the earlier messages this process has not read, where they are no more than that;
        and whether some were left unread. Nothing more is read before forwarding: the scan is not bounded by the
        request's deadline, and a dense paste ending in "remember ..." held the request past it (an outside attack;
        a bound of 256 KB still took 3.7 s: a review)."""
        with self._printed_lock:
            read = self._seeded.get(ident.id, 0)
        read = 0 if read > len(conv.messages) else read
        unread = sum(len(p.text) for m in conv.messages[read:newest] for p in m.parts)
        if 0 < unread <= NOTICE_SCAN_CHARS:
            self._seed_found(ident, conv, newest)
        known = dict(self._known_found(ident.id))
        texts = [t.text for t in capture.message_turns(conv.messages[newest], ident)]
        tail = "\n".join(texts)[-NOTICE_SCAN_CHARS:]
        if tail:
            redact_messages([[tail]], known)
        left = unread > NOTICE_SCAN_CHARS or len("\n".join(texts)) > NOTICE_SCAN_CHARS
        return {**dict.fromkeys(self._known_prints(ident.id), PRINTED), **known}, left

    def _known(self, conversation_id: str) -> tuple[list[str], dict[str, str]]:
        with self._printed_lock:
            known = self._printed.get(conversation_id)
            if known is None:
                known = self._printed[conversation_id] = []
                self._found[conversation_id] = {}
                while len(self._printed) > MAX_PRINTED_CONVERSATIONS:
                    gone, _ = self._printed.popitem(last=False)
                    self._found.pop(gone, None)
                    self._seeded.pop(gone, None)
            self._printed.move_to_end(conversation_id)
            return known, self._found[conversation_id]

    def _chain_of(self, conv: Conversation) -> Identity | None:
        return self._chain_of_id(conv.continues) if conv.continues else None

    def _chain_of_id(self, response_id: str) -> Identity | None:
        with self._responses_lock:
            return self._responses.get(response_id)

    def _prepare(
        self,
        conv: Conversation,
        headers: dict[str, str],
        deadline: float,
        t0: float,
        epoch: str | None,
        finish: Callable[[Prepared], None] = lambda prep: None,
    ) -> Prepared:
        t_wait = time.perf_counter()
        if delegated(headers):
            conv = conv.delegated()  # a sub-agent's prompt is the main model's words, never the person's
        ident = identify(headers, conv, self.default_project)
        prev = self._chain_of(conv)
        elsewhere: tuple[str, int] | None = None  # the previous step's conversation and size, in another worker
        if conv.continues and (self.board is not None or prev is None):
            # Several workers: the store's record of the answer decides (another worker may have seen the same id
            # given to another conversation's answer: then it is neither's). One worker reads it for an answer it
            # does not hold (given before a restart, or one of more than MAX_CHAINS since).
            found = self.conversations.chain(conv.continues)
            if found is not None and found[0] is None:
                prev = None
            elif found is not None and found[0] is not None and (prev is None or (conv.thread_id and found[0] != prev)):
                # (a Conversations API conversation's latest step may have been another worker's)
                prev, elsewhere = found[0], (found[0].id, found[1])
        if prev is not None and ident.project and ident.project != prev.project:
            prev = elsewhere = None  # the request says it is another project's: never another project's conversation
        if prev is not None and names_session(headers) and prev.base_session != ident.base_session:
            # The harness names its session, and the answer continued was another session's: a session of its own
            # that starts from it (its own raw log and memory), as the header says. In its own session, a step of
            # the chain like any other: what the earlier steps were shown is carried, never shown or pointed again.
            prev = elsewhere = None
        if prev is not None:
            # The next step of a Responses chain: the same raw-log session and project; a state file of its own
            # (its messages are numbered from 0 again), which carries what the chain was already shown.
            ident = Identity(session=prev.session, base_session=prev.base_session, thread=ident.thread, project=prev.project)
            queued = self._answers.get(prev.id)
            if queued is not None:
                queued.wait(self._left(deadline, "parse"))
            self._wait_for_pending(prev.id, self._left(deadline, "parse"))  # its answer is in the log first
            self._wait_for_judge(prev.id, deadline)  # rerank.mode async: the previous step's pick joins this one
        newest = conv.newest_user
        mem = self.memory()
        trace: dict[str, Any] = {
            "at": utcnow().isoformat(timespec="seconds"),
            "session": ident.session,
            "thread": ident.thread,
            "project": ident.project,
            "roles": [m.role for m in conv.messages],
            "newest_user": newest,
            "errors": [],
            "pid": os.getpid(),  # which worker (proxy.workers) served it
        }
        # Nothing here waits for this conversation's previous capture: what this request needs of the previous one
        # is in the state file, which prepare itself wrote; a capture job never holds the conversation's lock (it
        # holds a capture lock of its own, _after_request). rerank.mode async: the previous request's judge, whose
        # pick joins this request, is waited for within the deadline.
        self._wait_for_judge(ident.id, deadline)
        injected: list[str] = []
        pinned_new: list[str] = []
        blocks: dict[int, list[str]] = {}
        judge = None
        plans = None
        opening: list[dict[str, Any]] = []
        with self._locked(ident.id, deadline):
            # Time spent waiting before the work: a Responses chain's previous step, a judge's pick, the lock.
            trace["pending_ms"] = round((time.perf_counter() - t_wait) * 1000, 2)
            st = self.conversations.load(ident.id)
            st.defer()  # written at the end, once the request is sure to go out as prepared (``finish``)
            if prev is not None and not st.carried_from:
                if not mem.raw.settled(epoch):
                    raise ForgetBegan  # what the chain's steps were shown may name what it took
                before = self.conversations.load(prev.id)
                st.carry(
                    prev.id, sorted(before.injected), sorted(before.pointer_ids), before.answer_prints, before.shown_digests()
                )
                st.inherit_names(before)
                if before.ahead:  # the look-ahead judge's picks after the previous step
                    st.set_ahead(before.ahead)
            # Whether the blocks name this project's facts by their bare names (a continued request this proxy
            # cannot place in its chain never does: its earlier steps' blocks may have named another project's).
            bare = bool(conv.messages) and st.claim_names(ident.project, fresh=not conv.continues or prev is not None)
            # A request that continues server-held state (a Responses API
            # previous_response_id) carries only its new turns: the pinned block
            # went with the conversation's first request. A request with no
            # messages at all is no conversation: a block would make it one.
            if not st.has_pinned and not conv.continues and conv.messages:
                stats = self.recaller.fact_stats(mem, lambda terms: self.memory().index.raw_doc_freq(terms))
                pinned_digests: dict[str, str] = {}
                text, ids, opening = standing_memory(
                    mem,
                    ident.project,
                    self.config.proxy.pinned_budget_tokens,
                    conv,
                    stats=stats,
                    deadline=deadline,
                    bare_names=bare,
                    digests=pinned_digests,
                )
                self._left(deadline, "pinned block")
                if not mem.raw.settled(epoch):
                    # A forget or seal began since the request came: the block may hold what it took. Under the
                    # conversation's lock, which the forget's scrub of every state file takes after it began.
                    raise ForgetBegan
                st.set_pinned(text, ids, pinned_digests)
                trace["pinned"] = pinned_new = ids
            hash_of = functools.cache(lambda i: conv.messages[i].hash)  # each message hashed once, if asked
            live = st.live(len(conv.messages), hash_of)
            for i, h in sorted(live):
                text = st.cues[(i, h)].text
                if text:
                    blocks.setdefault(i, []).append(text)
            # A rewind (an earlier prompt edited) or a side request on the same conversation puts a new message
            # where another had its record: it is given recall as any new message is, and what only the other
            # branch was shown or pointed to was never in front of the model here. (Its capture: ``_aside``.)
            # A message an earlier request sent without a block before its newest one is no new one: a block
            # recorded for it now (a side request that ends there, another conversation taken for this one) would be
            # re-added into every later request that holds it, and the prefix the model cached would change there (an
            # outside review). Recorded as the request is prepared, not when its capture ends (a side request may come
            # while the first is answered). The same message as a request's newest, sent again (a client's retry
            # after a 529 whose recall had failed open), is given recall: the upstream refused the first.
            new_message = newest is not None and (newest, hash_of(newest)) not in st.cues
            new_message = new_message and (newest, hash_of(newest)) not in st.plain
            if newest is not None:
                # The person's messages before this newest one without a block of their own here: from where the last
                # cue went, or a newest message went without one since (a conversation that grows looks at what it
                # added since), and below it where a record's message is another now (a rewind: the last cue may be the
                # old branch's, further on; reviews).
                start = min(st.last_cue, newest, newest if st.bare_from is None else st.bare_from)
                moved = {i for i, _ in (*st.cues, *st.plain) if i < start and (i, hash_of(i)) not in live}
                st.add_plain(
                    [
                        (i, hash_of(i))
                        for i in sorted(moved | set(range(start, newest)))
                        if conv.messages[i].role == "user" and (i, hash_of(i)) not in live
                    ]
                )
                st.looked([(i, h) for i, h in st.bare if i < len(conv.messages) and hash_of(i) == h])  # all >= start
            shown, pointed = st.seen(live)
            # From here on a deadline missed skips recall (the next new message has
            # it) instead of dropping the pinned block built above: both go out,
            # and are recorded, with the request (``finish``, ``flush`` below).
            left = deadline - time.monotonic()
            if newest is not None and new_message and left <= 0:
                self.error("deadline")
                trace["errors"].append("deadline")
            elif newest is not None and new_message:
                t1 = time.perf_counter()
                # A "remember" that will be queued instead of written says so in
                # this message's cue block, which is re-added with the same bytes.
                plans = remembering.plan(
                    conv.messages[newest],
                    ident,
                    conv.untyped,
                    mem.tombstones.refuses,
                )
                known, unread = self._notice_known(ident, conv, newest) if remembering.needs_notice(plans) else ({}, False)
                notices = remembering.notice_lines(plans, known, unread)
                cue = self.recaller.recall_for(
                    mem,
                    conv,
                    ident,
                    shown,
                    left,
                    raw_df=lambda terms: self.memory().index.raw_doc_freq(terms),
                    notices=notices,
                    ahead=opening + self._ahead(mem, st, shown),
                    pointed={i.rsplit("@v", 1)[0] for i in pointed},
                    pointed_ids=pointed,
                    pinned=frozenset(st.pinned_ids),
                    bare_names=bare,
                    shown_digests=st.shown_digests(live),
                )
                trace["recall_ms"] = round((time.perf_counter() - t1) * 1000, 2)
                trace["errors"] += cue.trace.pop("errors", [])
                trace.update(cue.trace)
                if not cue.failed and time.monotonic() > deadline:
                    self.error("deadline")  # decided too late: neither recorded nor sent
                    trace["errors"].append("deadline")
                elif not cue.failed and not mem.raw.settled(epoch):
                    self.count("forget_during_request")  # the block may hold what it took: neither recorded nor sent
                elif not cue.failed:
                    st.add_cue(newest, conv.messages[newest].hash, cue.text, cue.ids, cue.pointers, cue.digests)
                    if cue.text:
                        blocks.setdefault(newest, []).append(cue.text)
                        injected = cue.ids
                    if cue.pool:
                        judge = cue
            if new_message and newest is not None and (newest, hash_of(newest)) not in st.cues:
                # it goes without a block: the next request's look for such messages starts there
                st.mark_bare(newest, hash_of(newest))
            prep = Prepared(
                b"",
                ident,
                conv,
                len(conv.messages),
                injected,
                pinned_new,
                st.pinned,
                blocks,
                trace,
                judge=judge,
                plans=plans,
                after=elsewhere,
                epoch=epoch,
            )
            finish(prep)
            # No deadline check past this point: the send is claimed, and the state says what it holds.
            st.flush()
        trace["injected"] = injected
        trace["prepare_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        if injected or st.pinned:
            self.counters["with_memory"] += 1
        if injected:
            self.counters["injections"] += 1
        return prep

    def _ahead(self, mem: Memory, st: Any, shown: set[str]) -> list[dict[str, Any]]:
        """The look-ahead judge's picks not yet ``shown`` in this conversation, as current fact rows."""
        ids = [i for i in st.ahead if i not in shown]
        if not ids:
            return []
        return [
            r for r in mem.index.facts_by_id(ids) if r["current"] and r["status"] != "dormant" and r["sensitivity"] != "secret"
        ]

    @contextlib.contextmanager
    def _locked(self, conversation_id: str, deadline: float) -> Iterator[None]:
        """The conversation's lock, waited for until the deadline at most."""
        try:
            with self.conversations.lock(conversation_id, timeout=self._left(deadline, "pending capture")):
                yield
        except LockBusy:
            raise DeadlineExceeded("the conversation's lock") from None

    def _wait_for_answer_elsewhere(self, conversation_id: str, n_messages: int) -> None:
        """Off the request path: until another worker has logged the answer to a Responses chain's previous step
        (its conversation's capture covers message ``n_messages``), at most CHAIN_ANSWER_WAIT_S (an answer that
        never came, a worker that stopped)."""
        end = time.monotonic() + CHAIN_ANSWER_WAIT_S
        while time.monotonic() < end:
            if self.conversations.load(conversation_id).captured > n_messages:
                return
            time.sleep(0.02)
        self.count("chain_answer_late")

    def _wait_for_pending(self, conversation_id: str, timeout: float) -> None:
        """Let this conversation's earlier capture finish first (never another conversation's)."""
        with self._chains_lock:
            pending = self._chains.get(conversation_id)
        if pending is not None:
            try:
                pending.result(timeout=timeout)
            except FutureTimeout:
                self.count("capture_pending")  # go on: capture keeps its own order
            except Exception:  # noqa: S110 - the job reports its own failures
                pass

    # ----- after forwarding ---------------------------------------------------
    def _chain(self, conversation_id: str, job: Callable[[], None]) -> Future[None]:
        """Run ``job`` after every earlier job of the same conversation.

        A conversation's jobs wait in its own queue, not in a worker: a
        worker only ever runs a job that is ready, so one conversation's
        backlog never holds a worker that another conversation needs.
        """
        fut: Future[None] = Future()
        with self._chains_lock:
            queue = self._queues.setdefault(conversation_id, deque())
            queue.append((job, fut))
            self._chains[conversation_id] = fut
            start = len(queue) == 1
        if start:
            self._after.submit(self._run_next, conversation_id)
        return fut

    def _run_next(self, conversation_id: str) -> None:
        with self._chains_lock:
            job, fut = self._queues[conversation_id][0]
        try:
            job()
            fut.set_result(None)
        except BaseException as exc:  # jobs report their own failures; this only keeps the chain going
            fut.set_exception(exc)
        with self._chains_lock:
            queue = self._queues[conversation_id]
            queue.popleft()
            if not queue:
                del self._queues[conversation_id]
                if self._chains.get(conversation_id) is fut:
                    del self._chains[conversation_id]
                return
        self._after.submit(self._run_next, conversation_id)

    def forwarded(self, prep: Prepared) -> Future[None] | None:
        """The request went upstream: capture its new turns, "remember", audit and trace, in order."""
        if prep.ident is None or prep.conv is None:
            return None
        ident = prep.ident
        if prep.judge is not None:
            with self._chains_lock:
                self._judging[ident.id] = threading.Event()
        return self._chain(ident.id, lambda: self._after_request(prep, ident))

    def _after_request(self, prep: Prepared, ident: Identity) -> None:
        conv = prep.conv
        assert conv is not None
        trace = prep.trace
        try:
            if prep.judge is not None:
                # First: the conversation's next request waits for the pick (within its deadline), not for capture.
                try:
                    self._judge(ident, prep.judge, trace, prep.epoch)
                finally:
                    self._judged(ident.id)
            if prep.after is not None:
                self._wait_for_answer_elsewhere(*prep.after)
            mem = self.memory()
            with self.conversations.capture_lock(ident.id):
                st = self.conversations.load(ident.id)
                self._catch_up(mem, ident, st, conv, trace)
                self._capture_messages(mem, ident, st, conv, len(conv.messages), trace, prep.plans, epoch=prep.epoch)
            captured = True
        except Exception as exc:
            self.error("capture", exc)
            trace["errors"].append("capture")
            captured = False
        try:
            mem = self.memory()
            # Under the raw log's lock, which a forget takes as it begins: these lines land before it (and it scrubs
            # them) or are not written. A forget or seal that began since the request came: what it injected may
            # name a key that is gone, and the trace holds the turn's words (its turns went to the log as
            # [forgotten]).
            with mem.raw.locked():
                if not mem.raw.settled(prep.epoch):
                    self.count("forget_during_request")
                    return
                if captured:
                    now = self.clock()
                    # Pinned facts count as injected: decay must not put to sleep the
                    # facts that every conversation starts with.
                    for fid in prep.pinned_new:
                        mem.audit.record(now, "inject", id=fid, session=ident.session, block="pinned")
                    for fid in prep.injected:
                        mem.audit.record(now, "inject", id=fid, session=ident.session)
                printed, found = self._known(ident.id)
                with self._printed_lock:
                    others = dict(self._found_all)  # what any conversation's capture found (the trace quotes cues)
                self._trace(_scrubbed(trace, {**others, **dict.fromkeys(printed, PRINTED), **found}))
        except Exception as exc:
            self.error("capture", exc)

    def _capture_messages(
        self,
        mem: Memory,
        ident: Identity,
        st: ConversationState,
        conv: Conversation,
        upto: int,
        trace: dict[str, Any],
        plans: list[remembering.Plan] | None = None,
        answer: list[capture.Turn] | None = None,
        partial: bool = False,
        epoch: str | None = None,
    ) -> None:
        """Capture the conversation's messages from ``st.captured`` on (and ``answer``, the turns of message
        ``upto - 1``, when given), then "remember" for the newest user message among them, under the capture lock.
        The turns are recorded as capturing (a batch id) before they are appended and as captured after."""
        start = st.captured
        newest = conv.newest_user
        if (
            not answer
            and newest is not None
            and newest < start
            and st.logged  # a state from before bead knew which messages it logged: as before, none
            and (newest, conv.messages[newest].hash) not in st.logged
        ):
            # The capture has passed this index and this message is not the one logged there: a new message where
            # another was (a rewind, a side request on the same session), which is logged on its own.
            self._aside(mem, ident, st, conv, newest, trace, plans, epoch)
            return
        if start < len(conv.messages) and conv.messages[start].role == "assistant" and start in st.aside_answers:
            # An aside's answer stands at the capture's place (a rewind or an interrupt made the aside the line):
            # it is in the log already.
            if _turns_digest(capture.message_turns(conv.messages[start], ident)) == st.aside_answers[start]:
                start += 1
        if start >= upto and not answer:
            # Nothing new (a retry): the answer at this place will be this request's, said at its epoch.
            if epoch is not None and start == st.captured and st.captured_epoch not in (None, epoch):
                st.set_captured(st.captured, st.captured_partial, None, epoch)
            return
        self._seed_found(ident, conv, start, upto)
        capture.note_typed(conv.messages[start:upto], self._known_found(ident.id))
        known = self._known_prints(ident.id)
        turns = capture.request_turns(conv, ident, start, st.carried_prints, known) if start < len(conv.messages) else []
        unread = start == st.captured and start < len(conv.messages) and conv.messages[start].role == "assistant"
        if unread and st.captured_epoch is not None:
            # The answer to the request that captured up to here, which the proxy could not read as it ended (a
            # compressed stream), carried by this request's history: said when that request came, so judged by its
            # epoch (a forget since may have taken what it repeats).
            for t in turns:
                if t.flags.get("message") == start:
                    t.flags[SAID_AT_EPOCH] = st.captured_epoch
        for t in turns:
            # Messages before the newest user message, captured only now (a resumed session, a rewind, an answer the
            # proxy could not read): the harness replays them; what the person says now is the newest one.
            if newest is not None and int(t.flags.get("message", newest)) < newest:
                t.flags[REPLAYED] = True
        turns += answer or []
        remember_at = newest if newest is not None and start <= newest < upto else None
        logged = [(m.index, m.hash) for m in conv.messages[start:upto] if m.role == "user"]
        batch = self._begin(st, turns, upto, partial, remember_at, logged, epoch)
        # The slow part (secret scan, append, "remember") holds no lock the next request takes.
        captured = self._capture(mem, ident, turns, batch, epoch) if turns else []
        if remember_at is not None and _forgotten(captured):
            # Written as [forgotten]: a forget began since the request came. Its "remember" is not acted on (it may
            # be what the forget took): said in the log, for the person to say it again.
            trace["errors"].append("remember: a forget ran meanwhile")
            log.warning("a remember was not acted on: bead forget ran while its request was in flight; say it again")
            if batch:
                st.set_remembered(batch)
        elif remember_at is not None:
            # Remembered facts and queued items cite the typed turns they come from.
            typed = [t.anchor for t in captured if t.flags.get("message") == remember_at and t.flags.get("source") == "typed"]
            self._remember(mem, conv, remember_at, ident, trace, typed, plans)
            if batch:
                st.set_remembered(batch)
        if batch or st.captured < upto:
            st.set_captured(upto, partial, logged, epoch)

    def _aside(
        self,
        mem: Memory,
        ident: Identity,
        st: ConversationState,
        conv: Conversation,
        at: int,
        trace: dict[str, Any],
        plans: list[remembering.Plan] | None,
        epoch: str | None = None,
    ) -> None:
        """Log message ``at`` on its own, and its "remember": a new message at an index the capture has passed
        (an earlier prompt edited after a rewind, a side request that shares the conversation's first messages).
        The conversation's place (``captured``) stays where its line is; the answer follows it (``_capture_answer``).
        """
        self._seed_found(ident, conv, at, at + 1)
        known = self._known_prints(ident.id)
        turns = [t for t in capture.request_turns(conv, ident, at, st.carried_prints, known) if t.flags.get("message") == at]
        logged = self._capture(mem, ident, turns, epoch=epoch) if turns else []
        typed = [t.anchor for t in logged if t.flags.get("source") == "typed"]
        if _forgotten(logged):
            trace["errors"].append("remember: a forget ran meanwhile")
        else:
            self._remember(mem, conv, at, ident, trace, typed, plans)
        st.set_aside(at, conv.messages[at].hash)
        trace["aside"] = at

    def _catch_up(self, mem: Memory, ident: Identity, st: ConversationState, conv: Conversation, trace: dict[str, Any]) -> None:
        """Under the capture lock, a "capturing" record left over is a capture that stopped (a crash) between its
        record and its end: the raw log is the commit. Its batch there: its turns count as captured (never appended
        twice), and a "remember" it had not run yet runs now (its message is in this conversation); not there: its
        turns are captured again from the conversation (never lost)."""
        left = st.capturing
        if not left or not mem.raw.has_batch(ident.session, left["batch"]):
            return
        at = left.get("remember")
        if isinstance(at, int) and 0 <= at < len(conv.messages):
            if mem.raw.settled(left.get("epoch")):
                self._remember(mem, conv, at, ident, trace, [], None)
            else:  # a forget began since its request came: its words may be what the forget took
                trace["errors"].append("remember: a forget ran meanwhile")
            st.set_remembered(left["batch"])
        st.set_captured(left["upto"], left["partial"], logged_pairs(left.get("logged")), left.get("epoch"))

    def _wait_for_judge(self, conversation_id: str, deadline: float) -> None:
        """rerank.mode async: the conversation's previous request's judge, whose pick joins the next request, within
        the deadline."""
        with self._chains_lock:
            judging = self._judging.get(conversation_id)
        if judging is not None:
            judging.wait(self._left(deadline, "parse"))

    def _judged(self, conversation_id: str) -> None:
        with self._chains_lock:
            done = self._judging.pop(conversation_id, None)
        if done is not None:
            done.set()

    def _judge(self, ident: Identity, cue: Any, trace: dict[str, Any], epoch: str | None = None) -> None:
        """rerank.mode async: the chat model judges this turn's candidates off the request path; its picks
        wait in the conversation's state and join the cue block of the conversation's next request. Not if a
        forget or seal began since the request came (``epoch``): a pick may be what it took."""
        picked = self.recaller.judge(cue.pool, cue.cues, trace)
        if picked is None:
            return
        trace["judged"] = [c.id for c in picked]
        with self.conversations.lock(ident.id):
            # Under the conversation's lock, which the forget's scrub of every state file takes after it began.
            if self.memory().raw.settled(epoch):
                self.conversations.load(ident.id).set_ahead([c.id for c in picked])

    def _remember(
        self,
        mem: Memory,
        conv: Conversation,
        newest: int,
        ident: Identity,
        trace: dict[str, Any],
        sources: list[str],
        plans: list[remembering.Plan] | None,
    ) -> None:
        try:
            printed, found = self._known(ident.id)
            secrets = [*printed, *found]
            for r in remembering.remember(mem, conv.messages[newest], ident, sources, plans, conv.untyped, secrets):
                if r.id:
                    trace["remembered"] = r.id
                elif r.queued:
                    trace["remember_queued"] = r.queued
                elif r.refused:
                    trace["errors"].append(f"remember: {r.refused}")
        except Exception as exc:
            self.error("remember", exc)

    def finished(
        self, prep: Prepared, chunks: list[bytes], content_type: str, encoding: str | None, truncated: bool
    ) -> Future[None] | None:
        """The response ended: rebuild and capture the assistant turn, after the request's own capture."""
        if prep.ident is None:
            return None
        ident = prep.ident
        try:
            return self._chain(ident.id, lambda: self._capture_answer(prep, ident, chunks, content_type, encoding, truncated))
        finally:
            queued = self._answers.pop(ident.id, None)
            if queued is not None:
                queued.set()

    def _capture_answer(
        self, prep: Prepared, ident: Identity, chunks: list[bytes], content_type: str, encoding: str | None, truncated: bool
    ) -> None:
        try:
            collector = prep.wire.collector(content_type, encoding)
            for chunk in chunks:
                collector.feed(chunk)
            result = collector.result(prep.n_messages)
            rid = getattr(collector, "response_id", None)
            if rid and prep.conv is not None and self._chain_of_id(rid) is None:
                self.chained(prep, rid, capture_queued=True)  # an answer the relay could not read (compressed)
            if result is None or prep.conv is None:
                return
            message, flags = result
            if truncated:
                flags["partial"] = True
            turns = capture.assistant_turns(message, ident, flags)
            prints = capture.calls_print_secret(message)
            mem = self.memory()
            n = prep.n_messages
            with self.conversations.capture_lock(ident.id):
                st = self.conversations.load(ident.id)
                # What a secret the request's newest tool results printed held, which the answer may say again
                # ("DB_PASSWORD is set to ..."): redacted there too.
                said = turns  # as the next request's history will carry it (an aside's answer is known by its digest)
                known = self._known_prints(ident.id)
                turns = capture.without_values(turns, capture.printed_values(prep.conv, st.carried_prints, known))
                st.set_answer_prints(prints)
                newest = prep.conv.newest_user
                aside = (newest, prep.conv.messages[newest].hash) if newest is not None else None
                if aside in st.asides:
                    # The answer to a message logged on its own (``_aside``): logged after it, once; the
                    # conversation's line is not moved.
                    if turns and not st.asides[aside]:
                        self._capture(mem, ident, turns, epoch=prep.epoch)
                        st.set_aside(*aside, answered=True, answer_at=n, answer=_turns_digest(said))
                    return
                self._catch_up(mem, ident, st, prep.conv, prep.trace)
                if not turns:
                    # Nothing of the answer to log, but its place is taken: the request's turns are in the log and
                    # the conversation captured up to the answer (a chain's next step in another worker waits for it).
                    if st.captured <= n:
                        self._capture_messages(mem, ident, st, prep.conv, n + 1, prep.trace, epoch=prep.epoch)
                    return
                if st.captured > n + 1 or (st.captured == n + 1 and not st.captured_partial):
                    return  # this answer, or a later message, is in the log already (a retry, a late stream end)
                if st.captured > n:
                    st.captured = n  # a partial answer logged before: the whole one follows it
                # The request's own turns first if its capture never got them into the log.
                self._capture_messages(
                    mem,
                    ident,
                    st,
                    prep.conv,
                    n + 1,
                    prep.trace,
                    answer=turns,
                    partial=bool(flags.get("partial")),
                    epoch=prep.epoch,
                )
        except Exception as exc:
            self.error("capture", exc)

    def _begin(
        self,
        st: ConversationState,
        turns: list[capture.Turn],
        upto: int,
        partial: bool = False,
        remember: int | None = None,
        logged: list[tuple[int, str]] | None = None,
        epoch: str | None = None,
    ) -> str:
        """Record that ``turns`` are about to be appended with a new batch id (which the first of them carries into
        the raw log; ``remember``: the message whose "remember" follows); none to append: captured at once, after a
        "remember" of its own if there is one ("" comes back)."""
        if not turns:
            if st.captured < upto and remember is None:
                st.set_captured(upto, partial, logged, epoch)
            return ""
        batch = uuid.uuid4().hex[:16]
        st.set_capturing(batch, upto, partial, remember, logged, epoch)
        return batch

    def _capture(
        self, mem: Memory, ident: Identity, turns: list[capture.Turn], batch: str = "", epoch: str | None = None
    ) -> list[RawTurn]:
        """Append turns to the raw log (the first carries ``batch``); the indexer indexes them. ``epoch``: the
        request's (Prepared.epoch)."""
        if turns and batch:
            turns[0].flags["batch"] = batch
        own = self._known_found(ident.id)
        with self._printed_lock:
            known = dict(own)  # the capture adds what it finds to a copy: another request's thread reads ``own``
            others = {v: r for v, r in self._found_all.items() if v not in known}
        if others:
            # Redacted before the capture's own scan, so that a value this capture finds does not push them out of
            # what is looked for (the conversation's own values are kept apart, REPEATS_KEPT of them).
            turns = [dataclasses.replace(t, text=redact_known(t.text, others)) for t in turns]
        out = capture.capture(mem, ident, turns, epoch, known)
        self._keep_new(own, known, share=True)
        return out

    def _keep_new(self, own: dict[str, str], work: dict[str, str], share: bool = False) -> None:
        """The values in ``work`` (a copy of a conversation's ``own`` found values that a scan added to) that ``own``
        lacks, added to it under the lock; with ``share``, those ``shared_across`` also to every conversation's."""
        with self._printed_lock:
            for value, rule in work.items():
                if value in own:
                    continue
                keep_found(own, value, rule)
                if share and shared_across(value):
                    keep_found(self._found_all, value, rule)

    def _forget_epoch(self) -> str | None:
        """The raw log's forget epoch now; None where it cannot be read (a capture then checks nothing)."""
        try:
            return self.memory().raw.forget_epoch()
        except Exception as exc:  # noqa: BLE001 - the request goes on; it is read again at its capture
            self.error("capture", exc)
            return None

    def drain(self, timeout: float | None = None) -> None:
        """Wait for every pending job (shutdown, tests)."""
        with self._chains_lock:
            pending = list(self._chains.values())
        for f in pending:
            try:
                f.result(timeout=timeout)
            except Exception:  # noqa: S110 - each job reports its own failures
                pass

    def close(self) -> None:
        self.drain()
        self._after.shutdown(wait=True)

    def _trace(self, entry: dict[str, Any]) -> None:
        if self.trace is None:
            return
        try:
            self.trace.record(entry)
        except (OSError, safe.UnsafePath) as exc:  # a FIFO no one reads, another user's file: the trace's error
            self.error("trace", exc)

    def store_state(self) -> dict[str, Any]:
        """Cheap facts about the store and index for /bead/health."""
        try:
            idx = self.memory().index
            return {
                "store": str(self.home.store),
                "index": "ok",
                "current_facts": idx.current_fact_count(),
                "raw_turns_about": idx.raw_size(),
            }
        except Exception as exc:  # health must answer even when the index does not
            return {"store": str(self.home.store), "index": f"unavailable ({type(exc).__name__})"}

    def own_health(self) -> dict[str, Any]:
        """This process's counts (one worker's, when there are several)."""
        counts = dict(self.counters)  # one copy: another thread may add a key meanwhile
        return {
            "uptime_s": round(time.time() - self.started, 1),
            "started": self.started,
            "pid": os.getpid(),
            **{k: counts.get(k, 0) for k in workers.COUNTS},
            "error_kinds": {k[6:]: v for k, v in counts.items() if k.startswith("error.")},
            "last_error": self.last_error,
        }

    def share(self, board: Board, slot: int) -> None:
        """Publish this worker's counts in ``slot`` of ``board`` now and at every change, for health to add up."""
        self.board = (board, slot)
        self.counters.on_change = self._publish
        self._publish()

    def _publish(self) -> None:
        if self.board is not None:
            board, slot = self.board
            board.publish(slot, self.own_health())

    def health(self) -> dict[str, Any]:
        """The proxy's counts: this process's, or with several workers all of theirs added up."""
        if self.board is None:
            own = self.own_health()
            return {
                **{k: v for k, v in own.items() if k not in ("started", "pid")},
                "workers": 1,
                "worker_pids": [own["pid"]],
                "worker_restarts": 0,
            }
        self._publish()
        return workers.total(self.board[0].all())
