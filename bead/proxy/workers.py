"""Several proxy processes on one port: a supervisor and its workers.

One process's event loop and GIL serialise the work of every conversation on one core (issue #27). With
``proxy.workers`` above 1, ``bead proxy`` binds its port once and forks that many workers, which all accept
on the one listening socket (the kernel hands each connection to one of them). They share nothing but the
store, as the indexer and the dream worker do: a conversation's order and its injected-once rule are kept
by its lock and its state file (bead.core.state), which hold across processes, never by one process's queue.

The supervisor does no request work. It forks before any thread exists, forwards SIGTERM and SIGINT to its
workers, waits for them to finish their streams, and starts a worker again when one dies on its own (too
many deaths in a minute stop the whole proxy with an error, so that a service manager reports a failure
instead of a loop). A worker stops when its supervisor is gone.

``/bead/health`` answers for all workers: each publishes its counters in its own slot of a shared memory
board (``Board``), and whichever worker is asked adds them up.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import mmap
import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("bead.proxy")

MAX_WORKERS = 16
SLOT = 8192  # bytes of the board per worker: its counters as JSON
_HEAD = struct.Struct("<QI")  # a slot's sequence number (odd while it is written) and the length of its JSON
CRASHES = 5  # deaths of workers within CRASH_WINDOW_S after which a worker is started again only after BACKOFF_S
CRASH_WINDOW_S = 60.0
RESTART_DELAY_S = 1.0
BACKOFF_S = 30.0  # the first wait past CRASHES; it doubles at each crash past them, up to BACKOFF_MAX_S
BACKOFF_MAX_S = 300.0
STOPS = {signal.SIGTERM, signal.SIGINT}


def fewer_malloc_arenas(n: int = 2) -> None:
    """glibc gives each thread that allocates at once an arena of its own (up to eight a core), and a proxy's
    threads leave them fragmented: at most ``n`` took about 15 MB off each worker (docs/results.md). Set before
    the threads start; MALLOC_ARENA_MAX in the environment wins; another libc is left alone."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return
    try:
        ctypes.CDLL(None).mallopt(-8, n)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def default_workers() -> int:
    """``proxy.workers`` when config.yaml does not say: the number of cores, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


class Board:
    """A memory shared by the workers of one proxy: one slot per worker, each written by its worker only and
    read by any. A slot holds the worker's counters as JSON behind a sequence number that is odd while the
    slot is written, so a reader retries instead of reading half a write (a seqlock)."""

    def __init__(self, n: int):
        self.n = n
        # One slot a worker, and one more for the counts of workers that died (``retire``).
        self.mem = mmap.mmap(-1, (n + 1) * SLOT)  # anonymous and shared: the forked workers see the same pages
        self._lock = threading.Lock()  # one writer per slot: the worker's threads take turns

    def publish(self, slot: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data, separators=(",", ":")).encode()
        if len(raw) > SLOT - _HEAD.size:
            raw = json.dumps({k: v for k, v in data.items() if k != "error_kinds"}, separators=(",", ":")).encode()
        off = slot * SLOT
        with self._lock:
            seq = _HEAD.unpack_from(self.mem, off)[0]
            seq += seq % 2  # odd: a writer killed mid-write (the slot's earlier worker); its write is void
            _HEAD.pack_into(self.mem, off, seq + 1, 0)
            self.mem[off + _HEAD.size : off + _HEAD.size + len(raw)] = raw
            _HEAD.pack_into(self.mem, off, seq + 1, len(raw))
            _HEAD.pack_into(self.mem, off, seq + 2, len(raw))

    def read(self, slot: int) -> dict[str, Any] | None:
        """The slot's last whole publication (None: nothing yet, or a writer that never let go)."""
        off = slot * SLOT
        for _ in range(1000):
            seq, n = _HEAD.unpack_from(self.mem, off)
            if seq % 2:
                time.sleep(0)
                continue
            raw = bytes(self.mem[off + _HEAD.size : off + _HEAD.size + n])
            if _HEAD.unpack_from(self.mem, off)[0] != seq:
                continue
            if not n:
                return None
            try:
                value = json.loads(raw)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
        return None

    def all(self) -> list[dict[str, Any]]:
        return [d for d in (self.read(i) for i in range(self.n + 1)) if d is not None]

    def retire(self, slot: int) -> None:
        """A worker died (the supervisor says so): its counts join the retired ones, and its slot is free for the
        worker that replaces it. Health keeps counting what it served, and how many workers were restarted."""
        gone = self.read(slot) or {}
        kept = self.read(self.n) or {}
        merged = {k: int(kept.get(k) or 0) + int(gone.get(k) or 0) for k in COUNTS}
        kinds = dict(kept.get("error_kinds") or {})
        for k, v in (gone.get("error_kinds") or {}).items():
            kinds[k] = int(kinds.get(k, 0)) + int(v)
        errors = [e for e in (kept.get("last_error"), gone.get("last_error")) if isinstance(e, dict)]
        self.publish(
            self.n,
            {
                **merged,
                "error_kinds": kinds,
                "last_error": max(errors, key=lambda e: e.get("at") or 0) if errors else None,
                "started": kept.get("started") or gone.get("started"),
                "restarts": int(kept.get("restarts") or 0) + 1,
            },
        )
        self.publish(slot, {})


COUNTS = ("requests", "with_memory", "injections", "not_owner", "too_large", "errors")


def total(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The health of several workers as one: counts added up, the newest error, the oldest start."""
    out: dict[str, Any] = {k: sum(int(p.get(k) or 0) for p in parts) for k in COUNTS}
    kinds: dict[str, int] = {}
    for p in parts:
        for k, v in (p.get("error_kinds") or {}).items():
            kinds[k] = kinds.get(k, 0) + int(v)
    out["error_kinds"] = kinds
    errors = [p["last_error"] for p in parts if isinstance(p.get("last_error"), dict)]
    out["last_error"] = max(errors, key=lambda e: e.get("at") or 0) if errors else None
    started = [p["started"] for p in parts if p.get("started")]
    out["uptime_s"] = round(time.time() - min(started), 1) if started else 0.0
    pids = [p["pid"] for p in parts if p.get("pid")]
    out["workers"] = len(pids)
    out["worker_pids"] = sorted(pids)
    out["worker_restarts"] = sum(int(p.get("restarts") or 0) for p in parts)
    return out


def watch_parent(parent: int, stop: Callable[[], object]) -> None:
    """Stop this worker once its supervisor is gone (killed without a chance to stop it)."""

    def run() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        stop()

    threading.Thread(target=run, name="bead-supervisor-watch", daemon=True).start()


def supervise(
    run_worker: Callable[[int], None],
    n: int,
    on_ready: Callable[[], None] | None = None,
    on_death: Callable[[int], None] | None = None,
) -> int:
    """Fork ``n`` workers, each ``run_worker(slot)`` in a process of its own, and keep them running until
    SIGTERM or SIGINT (exit status 0). ``on_ready`` runs once a stop signal would be handled (so that one sent on
    what it says stops everything cleanly); ``on_death`` with a worker's slot when it died on its own, before it is
    started again.

    Workers that keep dying (CRASHES within CRASH_WINDOW_S) are started again after a growing wait, never given up
    on: the supervisor holds the listening socket, and a proxy that stopped left its port to whoever binds it next.
    A local user who made the workers die (bodies that exhaust memory) could then take it and receive the harnesses'
    requests: the token in their paths and the API keys in their headers."""
    if threading.active_count() > 1:
        # Forking with other threads alive can leave a lock held forever in the child.
        raise RuntimeError(f"bead proxy forks its workers before any thread starts ({threading.active_count()} running)")
    me = os.getpid()
    children: dict[int, int] = {}  # pid -> slot
    due: dict[int, float] = {}  # slot -> when it is started again (a worker that died, a fork that failed)
    stopping = False
    deaths: list[float] = []
    backoff = BACKOFF_S
    backed_off_until: float | None = None  # when the last wait past CRASHES ends (or ended)

    def back_off(slot: int, what: str) -> None:
        """Start ``slot`` again after the growing wait (the port stays held; other slots go on meanwhile)."""
        nonlocal backoff, backed_off_until
        log.error("%s; starting it again in %.1f s, the port held meanwhile", what, backoff)
        due[slot] = time.monotonic() + backoff
        backed_off_until = due[slot]
        backoff = min(backoff * 2, BACKOFF_MAX_S)

    def start(slot: int) -> None:
        # A stop signal that comes during the fork waits until the new worker is in ``children`` (and so gets
        # the stop too) and until the worker's own handlers are back to the default.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        if stopping:  # a stop came between the caller's look and the block
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
            return
        try:
            pid = os.fork()
        except OSError as exc:
            # Memory exhausted (what makes workers die, too): no worker for now, but the port stays held.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
            back_off(slot, f"could not start proxy worker {slot} ({exc.strerror or exc})")
            return
        if pid == 0:  # the worker
            status = 0
            try:
                for sig in STOPS:
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
                run_worker(slot)
            except BaseException:  # noqa: BLE001 - a worker's end is its exit status, said in the log
                log.exception("proxy worker %d stopped on an error", slot)
                status = 1
            finally:
                logging.shutdown()
                os._exit(status)
        children[pid] = slot
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)

    def stop_all(signum: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    if on_ready is not None:
        on_ready()
    # What the workers import is the supervisor's already: frozen, those pages stay shared after the fork
    # instead of being copied as the collector touches them.
    gc.collect()
    gc.freeze()
    for slot in range(n):
        if not stopping:
            start(slot)
    while children or (due and not stopping):
        if not stopping and os.getpid() == me:
            now = time.monotonic()
            for slot in [s for s, at in due.items() if at <= now]:
                del due[slot]
                start(slot)
        if due and not stopping:
            # A slot waits to start: reap whoever ended meanwhile without blocking, and look again shortly (each
            # slot on its own time: one slot's wait holds no other's start, nor leaves the dead unreaped).
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid, status = 0, 0
            if pid == 0:
                time.sleep(max(0.0, min(0.2, min(due.values()) - time.monotonic())))
                continue
        else:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
        slot = children.pop(pid, -1)
        if slot < 0 or stopping:
            continue
        if on_death is not None:
            on_death(slot)
        now = time.monotonic()
        deaths = [t for t in deaths if now - t < CRASH_WINDOW_S] + [now]
        code = os.waitstatus_to_exitcode(status)
        # Past CRASHES in the window, or soon after such a wait (the workers still die: the wait doubles), a worker
        # is started again only after the wait; once a window passed since the last wait, the waits start over.
        if len(deaths) >= CRASHES or (backed_off_until is not None and now - backed_off_until < CRASH_WINDOW_S):
            back_off(slot, f"proxy workers died {len(deaths)} time(s) within {CRASH_WINDOW_S:.0f} s (worker {slot}, exit {code})")
        else:
            backoff = BACKOFF_S
            backed_off_until = None
            log.warning("proxy worker %d (pid %d) ended on its own (exit %d); starting it again", slot, pid, code)
            due[slot] = now + RESTART_DELAY_S
    return 0
