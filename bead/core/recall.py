"""Recall for one turn: cues, the evidence gate, the optional rerank, the cue block.

``Recaller.recall_for`` is what every entry point that injects memory calls
(the proxy's routes, and ``bead eval`` directly, so the figures are those of
the real path). It reads the index under a deadline; statistics over the
facts are cached across requests until the facts change.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..conversation import Conversation, Identity
from ..llm import Model
from ..recall import gate, pointers, rank, render, rerank
from ..recall.cues import Cue, extract
from ..token import without_token
from .capture import printed_redactor
from .memory import Memory
from .trace import cue_excerpt

ErrorSink = Callable[[str, BaseException | None], None]


@dataclass
class CueBlock:
    text: str | None  # the rendered block, or None when nothing passed
    ids: list[str]  # fact ids and raw text ids, in the block's order
    trace: dict[str, Any] = field(default_factory=dict)
    failed: bool = False  # recall broke or passed its deadline: nothing was decided
    # rerank.mode async: what the judge looks at after forwarding (the candidates, the turn's cues).
    pool: list[gate.Candidate] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    pointers: list[str] = field(default_factory=list)  # the fact ids the block points to (not shown)
    pointer_tokens: int = 0  # what the pointers add (the how-to line included)
    digests: dict[str, str] = field(default_factory=dict)  # fact id -> what the block showed of it (shown_digest)


PREVIOUS_ANSWER = ("assistant", "tool_input")  # cue sources of the assistant message before the newest user one


REPLACED_MAX = 3  # replaced facts a cue block carries, at most (the rest come with the next turns)


def _changed(seen: str | None, row: dict[str, Any]) -> bool:
    """Whether what a conversation was shown of ``row`` (``seen``, a shown or pointed digest; None: not recorded) is
    no longer what the row would show. The whole line's digest first: it matches for the pinned and cue facts, which
    are most of a conversation's, and the pointer line's (its title, a regex walk of the body) is only computed for
    the rest, every turn of every conversation being checked so."""
    return seen is not None and seen != render.shown_digest(row) and seen != render.pointed_digest(row)


class Recaller:
    def __init__(self, config: Config, on_error: ErrorSink | None = None):
        self.config = config
        self.on_error: ErrorSink = on_error or (lambda kind, exc: None)
        self._stats: tuple[tuple[str, int], gate.FactStats] | None = None
        self._stats_lock = threading.Lock()
        # Each current fact's terms by the hash of its (key, body), kept between rebuilds: a write changes one or
        # two facts, and taking the terms of all of them again cost ~150 ms at 10,000 facts on the next request.
        # Tuples of interned words under an integer: about 3 MB at 10,000 facts, where frozensets under (key,
        # body) took 25 MB in every proxy worker.
        self._terms: dict[int, tuple[str, ...]] = {}
        # The trace's excerpt of each cue (secret-scanned, about 1 ms a turn): only where a trace is kept.
        self.trace_cues = True

    def fact_stats(self, mem: Memory, raw_df: Callable[[list[str]], dict[str, int]]) -> gate.FactStats:
        """IDF statistics over current facts and raw turns, rebuilt when the facts change
        or the raw corpus has grown by a tenth. ``raw_df`` looks raw frequencies up (any thread)."""
        state = mem.index.facts_state()
        n_raw = mem.index.raw_size()
        with self._stats_lock:
            if self._stats is None or self._stats[0] != state or n_raw > self._stats[1].n_raw * 1.1 + 100:
                known = self._terms
                self._terms = {}
                for row in mem.index.current_bodies():
                    h = hash(row)
                    got = known.get(h)
                    self._terms[h] = got if got is not None else tuple(sys.intern(t) for t in set(gate.fact_terms(*row)))
                self._stats = (state, gate.FactStats([], raw_df, n_raw, term_sets=self._terms.values()))
            return self._stats[1]

    def recall_for(
        self,
        mem: Memory,
        conv: Conversation,
        ident: Identity,
        injected: set[str],
        deadline_s: float,
        raw_df: Callable[[list[str]], dict[str, int]] | None = None,
        notices: list[str] | None = None,
        ahead: list[dict[str, Any]] | None = None,
        pointed: set[str] | frozenset[str] = frozenset(),
        pinned: set[str] | frozenset[str] = frozenset(),
        bare_names: bool = True,
        pointed_ids: set[str] | frozenset[str] = frozenset(),
        shown_digests: dict[str, str] | None = None,
    ) -> CueBlock:
        """The cue block for the newest user message of ``conv``.

        ``injected`` holds what this conversation already carries (fact ids
        and raw text ids); nothing is injected twice. Past ``deadline_s`` the
        index is interrupted and the block comes back ``failed``: the caller
        sends the request without new memory. ``notices`` are bead's own
        lines (a "remember" queued for review) that open the block, before
        any fact, so the budget never drops them. ``ahead`` holds fact rows the
        look-ahead judge picked after the conversation's previous request
        (``rerank.mode: async``): they come first among the facts. ``pointed``
        holds the keys this conversation was already pointed to
        (bead.recall.pointers): never again; ``pointed_ids`` the fact ids so pointed to (a pointer's title quotes its
        value's first words: one replaced since is said to be, as a shown fact is). ``shown_digests``: what the
        conversation was shown of each of those (render.shown_digest): one whose value changed in place since (its
        version file edited, its id the same) is said to be replaced too. ``pinned`` holds the fact ids
        of the conversation's pinned block
        (the trace says a candidate was left out because it is there, not "already injected"). ``bare_names``:
        the block names the conversation's project's facts by their bare names (off where the conversation's
        first request named another project, or none: bead.core.state.ConversationState.claim_names).
        """
        names = ident.project if bare_names else None
        notices = notices or []
        ahead = [r for r in ahead or [] if r["id"] not in injected]
        cues: list[Cue] = extract(conv)
        trace: dict[str, Any] = {"errors": []}
        if self.trace_cues:
            # The previous answer's words are the raw log's (captured with it, where a forget finds them); the
            # conversation re-sends them with every request, so a trace line quoting them would put back what a
            # forget took from the log. Their length only.
            # A tool's output that is a secret printed alone (`printenv DB_PASSWORD`) is redacted as capture
            # redacts it: the scan alone finds no name beside the value.
            printed = printed_redactor(conv)

            def traced(c: Cue) -> str:
                text = without_token(mem.home, c.text)[0]
                return cue_excerpt(printed(c.source, text) if printed is not None else text)

            trace["cues"] = [
                {"source": c.source, "text": traced(c)}
                if c.source not in PREVIOUS_ANSWER
                else {"source": c.source, "text": f"(the previous answer's, {len(c.text)} characters)"}
                for c in cues
            ]
        index = mem.index
        # bead[semantic]: the turn's own words as a vector, computed beside the search, for the pointers' order.
        said = pointers.question(cues)
        pending = rank.embed_query(index, said) if pointers.SEMANTIC_ALPHA and self.config.recall.pointers > 0 else None
        start = time.monotonic()
        try:
            with index.deadline(deadline_s):
                stats = self.fact_stats(mem, raw_df or index.raw_doc_freq)
                exclude_sessions = index.sessions_like(ident.base_session)
                result = gate.recall(
                    index,
                    stats,
                    cues,
                    ident.project,
                    injected,
                    exclude_sessions,
                    {i for i in injected if i.startswith("raw:")},
                    self.config.recall,
                    pointed,
                )
        except Exception as exc:
            kind = "recall_deadline" if time.monotonic() - start > deadline_s else "recall"
            rank.forget_vector(pending)
            self.on_error(kind, exc)
            trace["errors"].append(kind)
            return CueBlock(None, [], trace, failed=True)
        pool: list[gate.Candidate] = []
        if self.config.rerank.enabled and self.config.rerank.mode == "sync":
            self._rerank(result, cues, trace)
        elif self.config.rerank.enabled:
            pool = self.judge_pool(result)
        for c in result.rejected:
            if c.id in pinned and c.reason == gate.ALREADY:
                c.reason = "in the pinned block"
        trace["rejected"] = [{"id": c.id, "score": c.score, "reason": c.reason} for c in result.rejected[:20]]
        if ahead:
            trace["ahead"] = [r["id"] for r in ahead]
        # A fact the conversation was shown (its pinned block, an earlier cue block) and that was replaced since: the
        # frozen line stays in front of the model for the rest of the conversation. First, whatever this turn says,
        # each saying that it replaces what was shown (REPLACED_MAX a turn; one the gate chose too is so marked
        # wherever it stands); then the look-ahead's picks and the gate's. A lookup that fails costs these lines only.
        left = deadline_s - (time.monotonic() - start)
        try:
            with index.deadline(max(left, 0.001)):
                digests = shown_digests or {}
                every = index.superseded_shown(
                    injected | set(pinned) | set(pointed_ids),
                    ident.project,
                    changed=lambda r: _changed(digests.get(r["id"]), r),
                )
        except Exception as exc:  # noqa: BLE001 - the index busy or the deadline passed: the next turn tries again
            # Not a failure of the turn (its block goes out): said in the trace, not counted as a request without memory.
            trace["replaced_lookup"] = type(exc).__name__
            every = []
        # A row the index still calls current whose key has a newer version file (the index behind the files: a
        # write whose index update met a locked index, a hand edit while no indexer ran) holds a replaced value: it
        # is not served until the index catches up.
        stale = mem.behind([*ahead, *every, *(c.row for c in result.facts)])
        if stale:
            trace["behind"] = sorted(stale)
            ahead = [r for r in ahead if r["id"] not in stale]
            every = [r for r in every if r["id"] not in stale]
            result.facts = [c for c in result.facts if c.id not in stale]
        again = {r["id"] for r in every}
        # What the model read whole (its pinned block, an earlier cue block) before what it was pointed to, whose
        # line quoted a few words: a pointed fact's replacement never takes a shown fact's place among the few.
        seen_whole = {i.rsplit("@v", 1)[0] for i in injected | set(pinned)}
        every.sort(key=lambda r: r["key"] not in seen_whole)  # stable: by key within each
        replaced = every[:REPLACED_MAX]
        if replaced:
            trace["replaced"] = [r["id"] for r in replaced]
        cut = min(render.REPLACING_TOKENS, self.config.proxy.cue_budget_tokens // 3)  # a line always fits the block
        lines = [render.replacing_line(r, names, cut) for r in replaced]
        ids = [r["id"] for r in replaced]
        chosen = {c.id for c in result.facts} | set(ids)
        for r in ahead:
            if r["id"] not in chosen:
                lines.append(render.replacing_line(r, names, cut) if r["id"] in again else render.fact_line(r, names))
                ids.append(r["id"])
                chosen.add(r["id"])
        for c in result.facts:
            if c.id not in ids:
                lines.append(render.replacing_line(c.row, names, cut) if c.id in again else render.fact_line(c.row, names))
                ids.append(c.id)
        for c in result.raw:
            lines.append(render.raw_line(c.row, c.body))
            ids.append(render.text_id(c.body))
        budget = self.config.proxy.cue_budget_tokens
        n = render.fitting(render.CUE_HEADER, notices + lines, budget)
        fitted = ids[: max(0, n - len(notices))]
        # What this block shows or the conversation was shown is never pointed to; a fact that passed but
        # did not fit the block's budget is not shown, so it may be.
        shown = pointers.shown_keys(injected) | set(pointed) | pointers.shown_keys(fitted)
        chosen_pointers = pointers.choose(
            result,
            shown,
            self.config.recall,
            first=[c for c in result.facts if c.id not in fitted],
            index=index,
            pending=pending,
            deadline=start + deadline_s,
            scope=f"project/{ident.project}" if ident.project else None,
            behind=mem.behind,  # a title is the value's first words: not of a replaced one
        )
        tail, tail_tokens = render.pointers(
            [c.row for c in chosen_pointers], self.config.recall.pointer_budget_tokens, alone=n == 0, project=names
        )
        named = [c for c in chosen_pointers if any(ln.startswith(f"- {render.pointer_key(c.key, names)} (") for ln in tail[1:])]
        if named:
            trace["pointers"] = [c.id for c in named]
        text, n = render.block("recall", render.CUE_HEADER, notices + lines, budget, tail)
        rows = {r["id"]: r for r in [*replaced, *ahead]} | {c.id: c.row for c in [*result.facts, *named]}
        digests = {i: render.shown_digest(rows[i]) for i in fitted if i in rows}
        digests |= {c.id: render.pointed_digest(c.row) for c in named}
        return CueBlock(
            text,
            fitted,
            trace,
            pool=pool,
            cues=cues,
            pointers=[c.id for c in named],
            pointer_tokens=tail_tokens,
            digests=digests,
        )

    def judge_pool(self, result: gate.Recall) -> list[gate.Candidate]:
        """The candidates the chat model judges: facts with some evidence, strongest first."""
        settings = self.config.rerank
        pool = [
            c
            for c in result.facts + result.rejected
            if c.key and c.score >= settings.min_evidence and not c.reason.startswith("already")
        ]
        pool.sort(key=lambda c: -c.score)
        return pool[: settings.max_candidates]

    def judge(self, pool: list[gate.Candidate], cues: list[Cue], trace: dict[str, Any]) -> list[gate.Candidate] | None:
        """The candidates the chat model says help the next step (at most ``recall.max_facts``); None when the
        call failed (the caller keeps the default gate's choice)."""
        settings = self.config.rerank
        t0 = time.perf_counter()
        try:
            model = Model.from_settings(settings, self.config.dream, timeout_s=settings.timeout_ms / 1000)
            answer = model.chat(rerank.SYSTEM, rerank.prompt(cues, [c.row for c in pool]), max_tokens=200)
            chosen = rerank.parse(answer.text, len(pool))
        except Exception as exc:
            self.on_error("rerank", exc)
            trace.setdefault("errors", []).append("rerank")
            return None
        finally:
            trace["rerank_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        return [pool[i] for i in chosen][: self.config.recall.max_facts]

    def _rerank(self, result: gate.Recall, cues: list[Cue], trace: dict[str, Any]) -> None:
        """Let the chat model choose among the candidates; on any failure the default gate stands."""
        pool = self.judge_pool(result)
        if not pool:
            return
        picked = self.judge(pool, cues, trace)
        if picked is None:
            return
        ids = {c.id for c in picked}
        others = [c for c in result.facts + result.rejected if c.id not in ids]
        for c in others:
            if c in pool:
                c.reason = "rerank: not helpful for the next step"
        for c in picked:
            c.reason = ""
        result.facts, result.rejected = picked, others
