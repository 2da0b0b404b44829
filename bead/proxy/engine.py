"""What the proxy does around one request, with no HTTP in sight.

``prepare`` runs before forwarding: derive the conversation, capture the new
user turns, build (once) the pinned block, run recall for the newest user
message (once), and splice every block into the raw body. ``finish`` runs
when the response ends and captures the assistant turn. Both run in a worker
thread under the conversation's flock, so parallel subagents (different
conversations) never wait for each other, and a ``bead forget`` in another
process sees a consistent file.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.secrets import redact
from ..config import Config
from ..memory import Memory, utcnow
from ..paths import Home
from ..recall import gate, render
from ..recall.cues import Cue, extract, newest_user_index
from ..store.files import append_line
from ..store.locks import flocked
from ..capture.text import content_blocks
from .capture import assistant_text, user_text
from .conversation import Conversation, State, derive, message_hash
from .splice import Request, append_blocks, text_block

log = logging.getLogger("bead.proxy")

# "remember X" where a sentence starts: "remember that ...", "Then remember: ...".
_REMEMBER = re.compile(
    r"(?im)(?:^|[.!?]\s+)(?:(?:then|and|also|please|pls)[,\s]+)*remember(?:\s+that)?\s*[:,\-]?\s+"
    r"([^\n]{3,600}?)\s*(?:[.!?](?=\s|$)|$)")
_KEY_SKIP = frozenset("""a an the is are was were be been am i i'm my me mine we our you your it its this that
these those to of in on at for with and or but so that project repo please always""".split())
_FIRST_PERSON = re.compile(r"(?i)\b(i|i'm|i've|my|me|mine)\b")


@dataclass
class Prepared:
    body: bytes                      # what goes upstream
    conv: Conversation | None = None
    n_messages: int = 0
    injected: list[str] = field(default_factory=list)
    trace: dict = field(default_factory=dict)


class Engine:
    def __init__(self, home: Home, config: Config, default_project: str | None = None,
                 trace_path: str | None = None, clock=utcnow):
        self.home = home
        self.config = config
        self.default_project = default_project if default_project is not None else config.get("proxy.project")
        trace = trace_path if trace_path is not None else config.get("proxy.trace")
        self.trace_path = Path(trace).expanduser().absolute() if trace else None
        self.deadline_s = config.get("proxy.recall_deadline_ms") / 1000
        self.clock = clock
        self.started = time.time()
        self.counters: Counter[str] = Counter()
        self.last_error: dict | None = None
        self._local = threading.local()
        self._stats: tuple[int, gate.FactStats] | None = None
        self._stats_lock = threading.Lock()
        # Build the index now if it is missing, so no request pays for a rebuild.
        with Memory(home, config, clock) as mem:
            mem.index

    # ----- per-thread runtime ------------------------------------------------
    def memory(self) -> Memory:
        mem = getattr(self._local, "mem", None)
        if mem is None:
            # A short busy timeout: a locked index fails the recall step open
            # instead of holding the agent's request.
            mem = Memory(self.home, self.config, self.clock, busy_timeout_ms=250)
            self._local.mem = mem
        return mem

    def fact_stats(self, mem: Memory) -> gate.FactStats:
        gen = mem.index.facts_generation()
        n_raw = mem.index.raw_size()
        with self._stats_lock:
            if self._stats is None or self._stats[0] != gen or n_raw > self._stats[1].n_raw * 1.1 + 100:
                rows = [(r["key"], r["body"]) for r in mem.index.current_fact_rows()]
                # The raw lookups run on whichever thread asks; each has its own connection.
                self._stats = (gen, gate.FactStats(rows, lambda terms: self.memory().index.raw_doc_freq(terms), n_raw))
            return self._stats[1]

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
            req = Request.parse(body)
        except ValueError as exc:
            self.error("parse", exc)
            return Prepared(body)
        if is_auxiliary(headers, req.data):
            self.counters["auxiliary"] += 1
            return Prepared(body)
        try:
            return self._prepare(req, headers, t0)
        except Exception as exc:  # fail open: the harness must never see bead's failure
            self.error("inject", exc)
            return Prepared(body)

    def _prepare(self, req: Request, headers: dict[str, str], t0: float) -> Prepared:
        messages = req.data["messages"]
        conv = derive(headers, req.data, self.default_project)
        newest = newest_user_index(messages)
        mem = self.memory()
        trace: dict = {"at": utcnow().isoformat(timespec="seconds"), "session": conv.session, "thread": conv.thread,
                       "project": conv.project, "roles": req.roles, "newest_user": newest, "errors": []}
        injected: list[str] = []
        with flocked(State.lock_for(self.home.sessions, conv)):
            st = State.load(self.home.sessions, conv)
            self._capture_requests(mem, conv, st, messages, newest, trace)
            if not st.has_pinned:
                text, ids = self._pinned(mem, conv)
                st.append({"kind": "pinned", "text": text, "ids": ids})
                st.has_pinned, st.pinned, st.pinned_ids = True, text, ids
                trace["pinned"] = ids
                # Pinned facts count as injected: decay must not put to sleep
                # the facts that every conversation starts with.
                for fid in ids:
                    mem.audit.record(self.clock(), "inject", id=fid, session=conv.session, block="pinned")
            blocks: dict[int, list[str]] = {}
            for rec in sorted(st.cues.values(), key=lambda r: r.message):
                if rec.text and rec.message < len(messages) and message_hash(messages[rec.message]) == rec.hash:
                    blocks.setdefault(rec.message, []).append(text_block(rec.text))
            if newest is not None and newest not in st.cues:
                t1 = time.perf_counter()
                result = self._recall(mem, conv, st, messages, newest, trace)
                trace["recall_ms"] = round((time.perf_counter() - t1) * 1000, 2)
                if result is not None:
                    text, ids = result
                    st.append({"kind": "cue", "message": newest, "hash": message_hash(messages[newest]),
                               "text": text, "ids": ids})
                    if text:
                        blocks.setdefault(newest, []).append(text_block(text))
                        injected = ids
                        for fid in ids:
                            mem.audit.record(self.clock(), "inject", id=fid, session=conv.session)
        edits = []
        if st.pinned:
            edits.append(req.system_edit(text_block(st.pinned)))
        for i, bl in blocks.items():
            edits.append(append_blocks(req.text, req.content_span(i), bl))
        out = req.edited(edits)
        trace["injected"] = injected
        trace["prepare_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        self._trace(trace)
        if injected:
            self.counters["injections"] += 1
        return Prepared(out, conv, len(messages), injected, trace)

    def _capture_requests(self, mem: Memory, conv: Conversation, st: State, messages: list, newest: int | None,
                          trace: dict) -> None:
        """Write turns the raw log has not seen yet: the user's, and any assistant turn a response missed."""
        if st.captured >= len(messages):
            return
        items = []
        now = self.clock()
        for i in range(st.captured, len(messages)):
            m = messages[i]
            role = m.get("role") if isinstance(m, dict) else None
            if role == "user":
                text = user_text(m)
            elif role == "assistant":
                text = assistant_text(content_blocks(m))
            else:
                text = ""  # harness system messages are context, not conversation
            if text:
                flags = {"message": i, **({"project": conv.project} if conv.project else {})}
                items.append((role, text, now, None, flags))
            if role == "user" and i == newest:
                self._remember(mem, conv, m, trace)
        try:
            if items:
                mem.append_turns(conv.session, items)
            st.append({"kind": "captured", "upto": len(messages), "partial": False})
            st.captured = len(messages)
        except Exception as exc:
            self.error("capture", exc)
            trace["errors"].append("capture")

    def _remember(self, mem: Memory, conv: Conversation, message: dict, trace: dict) -> None:
        """"remember X" in the person's own text writes a user_stated fact at once."""
        for cue in extract([message], 0):
            if cue.source != "user":
                continue
            m = _REMEMBER.search(cue.text)
            if not m:
                continue
            value = m.group(1).strip()
            if redact(value)[1]:
                trace["errors"].append("remember: refused a value that looks like a credential")
                continue
            key = propose_key(value, conv.project)
            try:
                res = mem.write(key, value, "user" if key.startswith("user/") else "project", trust="user_stated")
                trace["remembered"] = res.fact.id
            except Exception as exc:
                self.error("remember", exc)

    def _pinned(self, mem: Memory, conv: Conversation) -> tuple[str | None, list[str]]:
        # Pinned first, then the person's own word, then the newest; the budget
        # holds at most a few hundred lines, so SQLite sorts and limits.
        rows = mem.index.current_fact_rows(
            "AND status != 'dormant' AND sensitivity != 'secret' AND (type IN ('user', 'feedback') OR scope = ?) "
            "ORDER BY pinned DESC, trust != 'user_stated', valid_from DESC LIMIT 400",
            (f"project/{conv.project}" if conv.project else "",))
        text, n = render.block("pinned", render.PINNED_HEADER, [render.fact_line(r) for r in rows],
                               self.config.get("proxy.pinned_budget_tokens"))
        return text, [r["id"] for r in rows[:n]]

    def _recall(self, mem: Memory, conv: Conversation, st: State, messages: list, newest: int,
                trace: dict) -> tuple[str | None, list[str]] | None:
        cues: list[Cue] = extract(messages, newest)
        trace["cues"] = [{"source": c.source, "text": redact(c.text[:200])[0]} for c in cues]
        conn = mem.index.conn
        deadline = time.monotonic() + self.deadline_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 2000)
        try:
            stats = self.fact_stats(mem)
            exclude_sessions = mem.index.sessions_like(conv.base_session)
            injected = st.injected
            result = gate.recall(mem.index, stats, cues, conv.project, injected, exclude_sessions,
                                 {i for i in injected if i.startswith("raw:")},
                                 threshold=self.config.get("recall.evidence_threshold"),
                                 max_facts=self.config.get("recall.max_facts"),
                                 max_raw=self.config.get("recall.max_excerpts"))
        except Exception as exc:
            kind = "recall_deadline" if time.monotonic() > deadline else "recall"
            self.error(kind, exc)
            trace["errors"].append(kind)
            return None
        finally:
            conn.set_progress_handler(None, 0)
        if self.config.get("rerank.enabled"):
            self._rerank(result, cues, trace)
        trace["rejected"] = [{"id": c.id, "score": c.score, "reason": c.reason} for c in result.rejected[:20]]
        lines = [render.fact_line(c.row) for c in result.facts]
        ids = [c.id for c in result.facts]
        for c in result.raw:
            lines.append(render.raw_line(c.row, c.body))
            ids.append(render.text_id(c.body))
        text, n = render.block("recall", render.CUE_HEADER, lines, self.config.get("proxy.cue_budget_tokens"))
        return text, ids[:n]

    def pinned_ids(self, data: dict, headers: dict[str, str] | None = None) -> list[str]:
        """The facts a fresh conversation's pinned block would hold (for the eval)."""
        return self._pinned(self.memory(), derive(headers or {}, data, self.default_project))[1]

    def evaluate(self, data: dict, headers: dict[str, str] | None = None) -> tuple[list[str], dict]:
        """The recall step alone, as for the first request of a fresh conversation.

        ``bead eval`` (kind: injection) calls this: the same derivation, cue
        extraction, gate and rendering as a real request, nothing written.
        Returns the injected ids and the trace.
        """
        conv = derive(headers or {}, data, self.default_project)
        messages = data["messages"]
        newest = newest_user_index(messages)
        trace: dict = {"errors": []}
        if newest is None:
            return [], trace
        st = State(self.home.sessions / "eval-never-written.jsonl")
        result = self._recall(self.memory(), conv, st, messages, newest, trace)
        return (result[1] if result else []), trace

    def _rerank(self, result: gate.Recall, cues: list[Cue], trace: dict) -> None:
        """Let the chat model choose among the candidates; on any failure the default gate stands."""
        from ..llm import Model
        from ..recall import rerank

        pool = [c for c in result.facts + result.rejected
                if c.key and c.score >= self.config.get("rerank.min_evidence") and not c.reason.startswith("already")]
        pool.sort(key=lambda c: -c.score)
        pool = pool[: self.config.get("rerank.max_candidates")]
        if not pool:
            return
        t0 = time.perf_counter()
        try:
            model = Model.from_section(self.config.get("rerank"), self.config.get("dream"),
                                       timeout_s=self.config.get("rerank.timeout_ms") / 1000)
            answer = model.chat(rerank.SYSTEM, rerank.prompt(cues, [c.row for c in pool]), max_tokens=200)
            chosen = rerank.parse(answer.text, len(pool))
        except Exception as exc:
            self.error("rerank", exc)
            trace["errors"].append("rerank")
            return
        finally:
            trace["rerank_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        picked = [pool[i] for i in chosen][: self.config.get("recall.max_facts")]
        ids = {c.id for c in picked}
        others = [c for c in result.facts + result.rejected if c.id not in ids]
        for c in others:
            if c in pool:
                c.reason = "rerank: not helpful for the next step"
        for c in picked:
            c.reason = ""
        result.facts, result.rejected = picked, others

    # ----- after the response -----------------------------------------------
    def finish(self, prep: Prepared, result: tuple[str, dict] | None) -> None:
        """Capture the assistant turn once, even if the harness retries."""
        if prep.conv is None or result is None:
            return
        text, flags = result
        try:
            mem = self.memory()
            with flocked(State.lock_for(self.home.sessions, prep.conv)):
                st = State.load(self.home.sessions, prep.conv)
                if st.captured > prep.n_messages and not st.captured_partial:
                    return  # a retry of a request whose answer is already in the log
                project = {"project": prep.conv.project} if prep.conv.project else {}
                mem.append_turns(prep.conv.session, [("assistant", text, self.clock(), None,
                                                      {"message": prep.n_messages, **project, **flags})])
                st.append({"kind": "captured", "upto": prep.n_messages + 1, "partial": bool(flags.get("partial"))})
        except Exception as exc:
            self.error("capture", exc)

    def _trace(self, entry: dict) -> None:
        if not self.trace_path:
            return
        try:
            append_line(self.trace_path, json.dumps(entry, ensure_ascii=False))
        except OSError as exc:
            self.error("trace", exc)

    def store_state(self) -> dict:
        """Cheap facts about the store and index for /bead/health."""
        try:
            idx = self.memory().index
            facts = idx.conn.execute("SELECT count(*) FROM facts WHERE current = 1").fetchone()[0]
            return {"store": str(self.home.store), "index": "ok", "current_facts": facts, "raw_turns_about": idx.raw_size()}
        except Exception as exc:  # health must answer even when the index does not
            return {"store": str(self.home.store), "index": f"unavailable ({type(exc).__name__})"}

    def health(self) -> dict:
        return {"uptime_s": round(time.time() - self.started, 1), "requests": self.counters["requests"],
                "injections": self.counters["injections"], "errors": self.counters["errors"],
                "error_kinds": {k[6:]: v for k, v in self.counters.items() if k.startswith("error.")},
                "last_error": self.last_error}


def is_auxiliary(headers: dict[str, str], data: dict) -> bool:
    """A harness side request (session title, summaries): not conversation.

    Claude Code marks them with ``x-claude-code-request-class: auxiliary`` when
    hint headers are on; without them they are structured-output calls with
    no tools. They quote the user's words as data, so capturing them would
    log every prompt twice and "remember" would fire twice.
    """
    if headers.get("x-claude-code-request-class", "").lower() == "auxiliary":
        return True
    fmt = (data.get("output_config") or {}).get("format") if isinstance(data.get("output_config"), dict) else None
    return bool(fmt) and not data.get("tools")


def propose_key(value: str, project: str | None) -> str:
    """A key for a remembered value: user/... for the person, else the project's."""
    skip = _KEY_SKIP | set(re.split(r"[-_.]", project or ""))
    words = [t for t in re.findall(r"[a-z0-9]+", value.lower()) if t not in skip][:4] or ["note"]
    slug = "-".join(re.sub(r"[^a-z0-9]", "", w) for w in words).strip("-") or "note"
    if _FIRST_PERSON.search(value) or not project:
        return f"user/{slug}"
    return f"project/{project}/{slug}"

