"""Watch the store with watchdog and keep the FTS5 rows in step.

Events are coalesced into a set of dirty paths and applied after a short
quiet period (duplicates and bursts are normal: an editor's atomic save is a
create, a write and a move). Hidden and temporary files are ignored. A file
that does not parse is reported and skipped, never rewritten. On start the
whole store is reconciled against the index (a checksum diff), so edits made
while the indexer was down are picked up.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from .. import files as safe
from ..core.memory import Memory
from ..errors import BeadError
from ..index import semantic
from ..index.db import Index, IndexBusy
from ..index.rebuild import reconcile, sync_key, sync_raw

log = logging.getLogger("bead.indexer")

DEBOUNCE_S = 0.15
TEMP_SUFFIXES = (".tmp", ".swp", ".swx", ".part", "~", ".lock")
EMBED_IDLE_S = 30.0  # with nothing to embed, look again this often (besides after every change it indexes)
EMBED_RETRY_S = 5.0  # after a batch failed (the index locked by a reindex, say)
PROBE = ".indexer-probe"  # the hidden file under the store the indexer touches to know its watch still hears
PROBE_S = 30.0  # how often (and how long it waits for the event)
POLL_S = 5.0  # where the store cannot be watched, it is reconciled this often (a reconcile compares sizes and times)
# Without a watch, how often the indexer tries to watch again: a watch lost once (its queue overflowed, a folder too
# deep moved in and out) left it reconciling every POLL_S for good, a tenth of a core on a large store.
REWATCH_S = 300.0
MAX_REWATCH_S = 6 * 3600.0


def ignored(path: Path, store: Path) -> bool:
    try:
        rel = path.relative_to(store)
    except ValueError:
        return True
    if any(part.startswith(".") for part in rel.parts):
        return True
    name = rel.name
    return name.endswith(TEMP_SUFFIXES) or name.startswith("#") or not name.endswith(".md")


class Indexer:
    def __init__(self, mem: Memory, debounce_s: float = DEBOUNCE_S):
        self.mem = mem
        self.store = mem.home.store
        self.debounce_s = debounce_s
        self._dirty: set[Path] = set()
        self._cond = threading.Condition()
        self._last_event = 0.0
        self._stop = threading.Event()
        self._full = False
        self._said: set[str] = set()  # the problems the last reconcile logged
        self._counts: dict | None = None  # and its counts
        self._failed = ""  # why the last reconcile failed ("": it did not)
        self.applied = 0
        self.unchanged = 0  # raw logs whose event found the index holding them as they are (not read again)
        self._replaced: set[Path] = set()  # paths a file was put in place of since the last apply
        self.embed_wake = threading.Event()  # set after each change indexed: new turns may need vectors

    # watchdog calls this from its own thread
    def note(self, *paths: str | bytes | None, replaced: bool = False) -> None:
        """``paths`` changed; ``replaced``: a file was put in their place (created, moved), which may keep the size and
        modification time the index saw (`cp -p` or `rsync -a` of a scrubbed copy): read whatever the index holds."""
        with self._cond:
            for p in paths:
                if not p:
                    continue
                path = Path(p.decode() if isinstance(p, bytes) else p)
                if not ignored(path, self.store):
                    self._dirty.add(path)
                    if replaced:
                        self._replaced.add(path)
            self._last_event = time.monotonic()
            self._cond.notify()

    def note_everything(self) -> None:
        with self._cond:
            self._full = True
            self._last_event = time.monotonic()
            self._cond.notify()

    def reconcile(self) -> None:
        t0 = time.perf_counter()
        d, problems = reconcile(self.mem.index, self.mem.facts, self.mem.raw)
        # Polling reconciles every few seconds: a file that stays broken (or a diff it cannot settle) is said once,
        # until it changes, not twice a poll in the service log.
        said = {f"skipped {p.path}: {p.reason}" for p in problems}
        for line in sorted(said - self._said):
            log.warning("%s", line)
        self._said = said
        counts = d.as_dict()
        level = logging.INFO if counts != self._counts and (any(counts.values()) or self._counts is None) else logging.DEBUG
        self._counts = counts
        log.log(level, "reconciled in %.2f s: %s", time.perf_counter() - t0, counts)

    def apply(self, paths: set[Path]) -> None:
        with self._cond:
            replaced, self._replaced = self._replaced & paths, self._replaced - paths
        keys: dict[str, list[Path]] = {}
        again: set[Path] = set()  # what the index, held by another process past its wait, did not take: retried
        for path in sorted(paths):
            kind = self.mem.home.classify(path)
            if kind and kind[0] == "fact":
                keys.setdefault(kind[1], []).append(path)
            elif kind and kind[0] == "raw":
                # The proxy indexes the turns it appends and records the file as it left it: read again, a session's
                # whole file after each of its turns made the indexer's work grow with the square of its length
                # (55 ms a turn at 2,000 turns: benchmarks/bench_indexer.py --session-only).
                if path not in replaced and self.mem.index.holds_as_is(path):
                    self.unchanged += 1
                    continue
                try:
                    sync_raw(self.mem.index, self.mem.raw, path)
                except IndexBusy as exc:
                    log.warning("%s: %s; tried again", path, exc.message)
                    again.add(path)
                except (OSError, BeadError) as exc:  # a file bead will not read (a hard link): that file only
                    log.warning("skipped %s: %s", path, exc.message if isinstance(exc, BeadError) else exc)
        for key in sorted(keys):
            try:
                for p in sync_key(self.mem.index, self.mem.facts, key):
                    log.warning("skipped %s: %s", p.path, p.reason)
            except IndexBusy as exc:
                # A long forget or reindex held the index past the wait: the edit was dropped for good, and its key
                # served its old value (an adversarial pass). It goes back in line.
                log.warning("%s: %s; tried again", key, exc.message)
                again.update(keys[key])
            except BeadError as exc:
                log.warning("skipped %s: %s", key, exc.message)
        self.applied += len(paths) - len(again)
        if again:
            self.note(*map(str, again - replaced))
            self.note(*map(str, again & replaced), replaced=True)  # still a file put in place: read it whole

    def run(self) -> None:
        """Apply dirty paths after each quiet period until stop()."""
        while not self._stop.is_set():
            with self._cond:
                while not self._dirty and not self._full and not self._stop.is_set():
                    self._cond.wait(timeout=1.0)
                # Wait for the burst to settle.
                while not self._stop.is_set():
                    quiet = time.monotonic() - self._last_event
                    if quiet >= self.debounce_s:
                        break
                    self._cond.wait(timeout=self.debounce_s - quiet)
                batch, self._dirty = self._dirty, set()
                full, self._full = self._full, False
            if full:
                try:
                    self.reconcile()
                    self._failed = ""
                except Exception as exc:
                    why = f"{type(exc).__name__}: {exc}"
                    if why != self._failed:  # polling tries every few seconds: said once until it changes
                        log.exception("reconciling the store failed; it is tried again")
                    self._failed = why
            if batch:
                try:
                    self.apply(batch)
                except Exception:
                    log.exception("indexing a batch of %d paths failed; it is retried on the next reconcile", len(batch))
            self.embed_wake.set()

    def embed(self) -> None:
        """bead[semantic]: give every raw turn its vector, newest first, in the background until stop(); its own
        connection, so indexing never waits for the model."""
        model = semantic.model(threads=1)  # one core: the machine is the agent's
        if model is None:
            return
        index = Index(self.mem.home.index_db, self.mem.home.store, self.mem.busy_timeout_ms)
        fill = semantic.Backfill(index, model)
        log.info("computing the raw turns' vectors in the background (%s)", semantic.MODEL_ID)
        # The proxy's questions get their vectors from this model too (it loads none of its own).
        server = semantic.QueryServer(model, self.mem.home.embed_socket, self.mem.home.root)
        server.start()
        try:
            while not self._stop.is_set():
                self.embed_wake.clear()
                try:
                    if index.replaced():  # index.db deleted or built again: the vectors go to the file there
                        index.close()
                        if not self.mem.holds_current_index():
                            # The worker's Memory lets go and builds the file there (Memory.index); this thread never
                            # opens a path that may hold no index yet, which would make it an empty one that reads as
                            # built (a review).
                            self.note_everything()
                            self._stop.wait(EMBED_RETRY_S)
                            continue
                        index = Index(self.mem.home.index_db, self.mem.home.store, self.mem.busy_timeout_ms)
                        fill = semantic.Backfill(index, model)
                    n = fill.step()
                except Exception as exc:  # noqa: BLE001 - a locked index (a long reindex), a damaged one: try again later
                    log.warning("computing vectors paused for %.0f s: %s", EMBED_RETRY_S, getattr(exc, "message", exc))
                    self._stop.wait(EMBED_RETRY_S)
                    continue
                if n == 0:
                    self.embed_wake.wait(EMBED_IDLE_S)
        finally:
            server.close()
            index.close()

    def stop(self) -> None:
        self._stop.set()
        self.embed_wake.set()
        with self._cond:
            self._cond.notify_all()


def serve(mem: Memory, stop: threading.Event) -> None:
    """Reconcile, then watch until ``stop`` is set."""
    from watchdog.events import (
        DirMovedEvent,
        FileClosedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
        FileSystemEventHandler,
    )
    from watchdog.observers import Observer

    idx = Indexer(mem)

    probe = mem.home.store / PROBE
    heard = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event):
            if not event.is_directory and Path(os.fsdecode(event.src_path)) == probe:
                heard.set()
            elif isinstance(event, DirMovedEvent):
                idx.note_everything()  # a renamed key directory: rare, so diff the whole store
            elif not event.is_directory:
                replaced = isinstance(event, (FileCreatedEvent, FileMovedEvent))
                idx.note(event.src_path, getattr(event, "dest_path", None), replaced=replaced)

    handler = Handler()
    # Only events that change files. Watching opens and reads too would make
    # every read (the reconcile, bead's own readers, this indexer's parsing)
    # an event: enough to overflow inotify's queue on a large store, and a
    # loop where indexing a file triggers indexing it again.
    kinds = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent, DirMovedEvent]

    def watch(again: bool = False) -> Any:
        """The store watched, or None where watchdog could not: a folder tree deeper than Python's stack (watchdog
        walks it recursively to add its watches), the user's inotify watches used up. The indexer then polls (and
        tries ``again`` every REWATCH_S, said only when it works)."""
        observer = Observer()
        try:
            observer.schedule(handler, str(mem.home.store), recursive=True, event_filter=kinds)
            observer.start()
        except (RecursionError, OSError) as exc:
            _stop_quietly(observer)
            if again:
                return None
            log.warning(
                "cannot watch %s (%s); reconciling it every %g s instead. Remove what is not bead's under it "
                "(a folder tree hundreds deep), or raise fs.inotify.max_user_watches, then restart the indexer",
                mem.home.store,
                _why(exc),
                POLL_S,
            )
            return None
        return observer

    # Watch before reconciling, so an edit during the reconcile is not lost.
    observer = watch()
    worker = threading.Thread(target=idx.run, name="bead-indexer", daemon=True)
    embedder = threading.Thread(target=idx.embed, name="bead-embed", daemon=True)
    try:
        idx.reconcile()
        worker.start()
        if mem.index.semantic:
            embedder.start()
        if observer is not None:
            log.info("watching %s", mem.home.store)
        # While the watch runs this looks every PROBE_S seconds that it still hears: it touches a hidden file of its
        # own and waits for the event. Without a watch (it could not start, or it stopped: watchdog walks a folder
        # moved in later the same way, and its reading thread dies of a tree too deep) the store is reconciled every
        # POLL_S seconds.
        probed: float | None = None
        unprobed = False  # said that the probe cannot be touched
        unwatched = time.monotonic()  # since when (or when it last tried) the store has no watch
        rewatch = REWATCH_S  # doubled each time a watch set up again stops hearing (a mount that sends no events)
        again = False  # the watch running is one set up again
        while not stop.wait(POLL_S):
            if observer is None and time.monotonic() - unwatched >= rewatch:
                unwatched = time.monotonic()
                observer = watch(again=True)
                if observer is not None:
                    log.info("watching %s again", mem.home.store)
                    probed, again = None, True
                    idx.note_everything()  # what changed while the watch was being set up
            if observer is not None:
                now = time.monotonic()
                if probed is not None and now - probed >= PROBE_S and not heard.is_set():
                    if again:
                        rewatch = min(rewatch * 2, MAX_REWATCH_S)
                        log.info("the watch on %s hears nothing again; trying once more in %g s", mem.home.store, rewatch)
                    else:
                        log.warning("the watch on %s stopped; reconciling it every %g s instead", mem.home.store, POLL_S)
                    _stop_quietly(observer)
                    observer = None
                    unwatched = now
                elif probed is None or now - probed >= PROBE_S:
                    if probed is not None and heard.is_set():
                        rewatch, again = REWATCH_S, False  # the watch hears: a later loss waits the first time again
                    heard.clear()
                    probed = now if _touch(probe, mem.home.root) else None
                    if probed is None and not unprobed:
                        log.warning(
                            "cannot check the watch on %s (%s is not a file bead can open: remove it); reconciling the "
                            "store every %g s as well",
                            mem.home.store,
                            probe,
                            POLL_S,
                        )
                    unprobed = probed is None
            # Without a watch, or one that cannot be checked, the store is reconciled; and where index.db was
            # deleted or built again, the worker's next pass takes the file there (Memory.index), with no event.
            if observer is None or probed is None or mem.index_replaced():
                idx.note_everything()
    finally:
        idx.stop()
        if observer is not None:
            _stop_quietly(observer)
        for t in (worker, embedder):
            if t.is_alive():
                t.join(timeout=5)


def _stop_quietly(observer: Any) -> None:
    try:
        observer.stop()
        observer.join(timeout=5)
    except (RuntimeError, OSError):  # never started, or its emitter died starting
        pass


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "a folder tree in it is deeper than the watch can walk"
    return str(exc) or type(exc).__name__


def _touch(path: Path, root: Path) -> bool:
    """Write one byte to ``path`` (created if missing; never through a link at any step below ``root``; a FIFO, a
    hard link or another user's file refused before it is truncated): a change every watch backend reports (a close
    without a write is heard by inotify alone, not by macOS's FSEvents nor by polling)."""
    try:
        fd = safe.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, root=root)
    except (OSError, safe.UnsafePath):
        return False
    try:
        safe.write_all(fd, b"\n")
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
