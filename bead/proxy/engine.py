"""What the proxy does around one request, with no HTTP in sight.

``prepare`` runs before forwarding: parse the body once (the wire format's
job), name the conversation, capture the new turns, build (once) the pinned
block, run recall for the newest user message (once), and splice every block
into the raw body. ``finish`` runs when the response ends and captures the
assistant turn. Both run in a worker thread under the conversation's flock,
so parallel subagents (different conversations) never wait for each other,
and a ``bead forget`` in another process sees a consistent file.

The work itself is the application layer's (``bead.core``, ``bead.recall``);
this module only orders it for a proxied conversation and fails open.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config
from ..core import capture
from ..core.conversation import Conversation, Identity, Message, identify
from ..core.memory import Memory, utcnow
from ..core.pinned import pinned_block
from ..core.remember import remember
from ..core.state import Conversations, ConversationState
from ..core.trace import Trace
from ..paths import Home
from ..recall.pipeline import Recaller
from ..wire import anthropic

log = logging.getLogger("bead.proxy")


@dataclass
class Prepared:
    body: bytes                      # what goes upstream
    ident: Identity | None = None
    n_messages: int = 0
    injected: list[str] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)


class Engine:
    def __init__(self, home: Home, config: Config, default_project: str | None = None,
                 trace_path: str | None = None, clock: Callable[[], datetime] = utcnow):
        self.home = home
        self.config = config
        self.default_project = default_project if default_project is not None else config.proxy.project
        trace = trace_path if trace_path is not None else config.proxy.trace
        self.trace = Trace(Path(trace).expanduser().absolute()) if trace else None
        self.deadline_s = config.proxy.recall_deadline_ms / 1000
        self.clock = clock
        self.started = time.time()
        self.counters: Counter[str] = Counter()
        self.last_error: dict[str, Any] | None = None
        self.conversations = Conversations(home)
        self.recaller = Recaller(config, self.error)
        self._local = threading.local()
        # Build the index now if it is missing, so no request pays for a rebuild.
        with Memory(home, config, clock) as mem:
            mem.index  # noqa: B018 - opening it builds it

    # ----- per-thread runtime ------------------------------------------------
    def memory(self) -> Memory:
        mem = getattr(self._local, "mem", None)
        if mem is None:
            # A short busy timeout: a locked index fails the recall step open
            # instead of holding the agent's request.
            mem = Memory(self.home, self.config, self.clock, busy_timeout_ms=250)
            self._local.mem = mem
        return mem

    def error(self, kind: str, exc: BaseException | None = None) -> None:
        self.counters["errors"] += 1
        self.counters[f"error.{kind}"] += 1
        self.last_error = {"kind": kind, "at": time.time(), "detail": type(exc).__name__ if exc else ""}
        log.warning("proxy %s failed open: %s", kind, type(exc).__name__ if exc else "", exc_info=exc is not None)

    # ----- before forwarding -------------------------------------------------
    def prepare(self, body: bytes, headers: dict[str, str]) -> Prepared:
        """Never raises: any failure forwards ``body`` unchanged."""
        t0 = time.perf_counter()
        self.counters["requests"] += 1
        try:
            req, conv = anthropic.parse(body, headers)
        except ValueError as exc:
            self.error("parse", exc)
            return Prepared(body)
        if conv.auxiliary:
            self.counters["auxiliary"] += 1
            return Prepared(body)
        try:
            pinned, blocks, prep = self._prepare(conv, headers, t0)
            prep.body = anthropic.splice(req, pinned, blocks)
            return prep
        except Exception as exc:  # fail open: the harness must never see bead's failure
            self.error("inject", exc)
            return Prepared(body)

    def _prepare(self, conv: Conversation, headers: dict[str, str],
                 t0: float) -> tuple[str | None, dict[int, list[str]], Prepared]:
        ident = identify(headers, conv, self.default_project)
        newest = conv.newest_user
        mem = self.memory()
        trace: dict[str, Any] = {"at": utcnow().isoformat(timespec="seconds"), "session": ident.session,
                                 "thread": ident.thread, "project": ident.project,
                                 "roles": [m.role for m in conv.messages], "newest_user": newest, "errors": []}
        injected: list[str] = []
        blocks: dict[int, list[str]] = {}
        with self.conversations.lock(ident.id):
            st = self.conversations.load(ident.id)
            self._capture_requests(mem, conv, ident, st, trace)
            if not st.has_pinned:
                text, ids = pinned_block(mem, ident.project, self.config.proxy.pinned_budget_tokens)
                st.set_pinned(text, ids)
                trace["pinned"] = ids
                # Pinned facts count as injected: decay must not put to sleep
                # the facts that every conversation starts with.
                for fid in ids:
                    mem.audit.record(self.clock(), "inject", id=fid, session=ident.session, block="pinned")
            for rec in sorted(st.cues.values(), key=lambda r: r.message):
                if rec.text and rec.message < len(conv.messages) and conv.messages[rec.message].hash == rec.hash:
                    blocks.setdefault(rec.message, []).append(rec.text)
            if newest is not None and newest not in st.cues:
                t1 = time.perf_counter()
                cue = self.recaller.recall_for(mem, conv, ident, st.injected, self.deadline_s,
                                               raw_df=lambda terms: self.memory().index.raw_doc_freq(terms))
                trace["recall_ms"] = round((time.perf_counter() - t1) * 1000, 2)
                trace["errors"] += cue.trace.pop("errors", [])
                trace.update(cue.trace)
                if not cue.failed:
                    st.add_cue(newest, conv.messages[newest].hash, cue.text, cue.ids)
                    if cue.text:
                        blocks.setdefault(newest, []).append(cue.text)
                        injected = cue.ids
                        for fid in cue.ids:
                            mem.audit.record(self.clock(), "inject", id=fid, session=ident.session)
        trace["injected"] = injected
        trace["prepare_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        self._trace(trace)
        if injected:
            self.counters["injections"] += 1
        return st.pinned, blocks, Prepared(b"", ident, len(conv.messages), injected, trace)

    def _capture_requests(self, mem: Memory, conv: Conversation, ident: Identity, st: ConversationState,
                          trace: dict[str, Any]) -> None:
        """Write turns the raw log has not seen yet: the user's, and any assistant turn a response missed."""
        if st.captured >= len(conv.messages):
            return
        newest = conv.newest_user
        if newest is not None and newest >= st.captured:
            try:
                for r in remember(mem, conv.messages[newest], ident):
                    if r.id:
                        trace["remembered"] = r.id
                    elif r.refused:
                        trace["errors"].append(f"remember: {r.refused}")
            except Exception as exc:
                self.error("remember", exc)
        try:
            turns = capture.request_turns(conv, ident, st.captured)
            if turns:
                capture.capture(mem, ident, turns)
            st.set_captured(len(conv.messages))
        except Exception as exc:
            self.error("capture", exc)
            trace["errors"].append("capture")

    # ----- after the response -----------------------------------------------
    def finish(self, prep: Prepared, result: tuple[Message, dict[str, Any]] | None) -> None:
        """Capture the assistant turn once, even if the harness retries."""
        if prep.ident is None or result is None:
            return
        message, flags = result
        turn = capture.assistant_turn(message, prep.ident, flags)
        if turn is None:
            return
        try:
            mem = self.memory()
            with self.conversations.lock(prep.ident.id):
                st = self.conversations.load(prep.ident.id)
                if st.captured > prep.n_messages and not st.captured_partial:
                    return  # a retry of a request whose answer is already in the log
                capture.capture(mem, prep.ident, [turn])
                st.set_captured(prep.n_messages + 1, bool(flags.get("partial")))
        except Exception as exc:
            self.error("capture", exc)

    def _trace(self, entry: dict[str, Any]) -> None:
        if self.trace is None:
            return
        try:
            self.trace.record(entry)
        except OSError as exc:
            self.error("trace", exc)

    def store_state(self) -> dict[str, Any]:
        """Cheap facts about the store and index for /bead/health."""
        try:
            idx = self.memory().index
            return {"store": str(self.home.store), "index": "ok", "current_facts": idx.current_fact_count(),
                    "raw_turns_about": idx.raw_size()}
        except Exception as exc:  # health must answer even when the index does not
            return {"store": str(self.home.store), "index": f"unavailable ({type(exc).__name__})"}

    def health(self) -> dict[str, Any]:
        return {"uptime_s": round(time.time() - self.started, 1), "requests": self.counters["requests"],
                "injections": self.counters["injections"], "errors": self.counters["errors"],
                "error_kinds": {k[6:]: v for k, v in self.counters.items() if k.startswith("error.")},
                "last_error": self.last_error}
