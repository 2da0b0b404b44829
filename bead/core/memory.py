"""The runtime every bead process builds once: home, config, store, index.

Every change goes through a method here, and each method keeps the index in
step with the files it changed (writes, status changes, deleted versions,
redacted turns), so a reader sees a change as soon as the method returns.

A secret never becomes a plaintext file: ``write`` refuses a ``secret`` value
(bead.core.seal writes it, to the vault), and a plaintext write to a key the
vault holds is refused. Sealed versions have no index rows at all, so nothing that reads
the index (search, injection, the dream, the rerank) can see them.

One exception, by design: a fact write commits when its file is in place.
If another process holds the index's write lock for longer than
``store.busy_timeout_ms`` (a long reindex, say), the write still succeeds,
comes back with ``indexed=False``, and the index catches up through the
indexer's reconcile or ``bead reindex``. A forget never takes that way out:
its index rows must go, so a locked index is an error it reports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import config as config_mod
from .. import files as safe
from ..capture.secrets import credential_rules
from ..errors import BeadError, InvalidKey, RefusedWrite
from ..index import semantic
from ..index.db import Index, IndexBusy, database_errors
from ..index.rebuild import rebuild, reconcile, sync_key, sync_raw
from ..paths import Home, resolve_home
from ..store.audit import AuditLog, Tombstones, iso
from ..store.facts import Fact, FactStore, KeyVersions, Problem, WriteResult
from ..store.keys import PERSON_TRUSTS, validate_key
from ..store.locks import LockBusy
from ..store.rawlog import RawLog, Turn, TurnItem
from ..textform import LONE_SURROGATE, skeleton, versions_differ
from ..token import home_token
from ..vault.sealed import SealedStore

if TYPE_CHECKING:
    from ..index.db import Index

log = logging.getLogger("bead.memory")
T = TypeVar("T")
USE_WINDOW_DAYS = 30  # recent use the pinned block counts
USE_INDEX_MS = 50  # how long noting a use waits for the index (a read tool must not wait longer)
# Pauses between attempts to reach a locked index, within the busy timeout.
BACKOFF_S = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)


class IndexBehind(BeadError):
    """The files changed (that is the commit) but the index could not be updated yet."""

    def __init__(self, what: str):
        super().__init__(
            f"{what} is written, but the index is locked by another process and lags behind",
            "it catches up by itself when `bead indexer` runs, or run `bead reindex`",
        )


def busy_errors() -> tuple[type[BaseException], ...]:
    """What another bead process holding the index or the store raises: nothing changed, try again soon."""
    return (IndexBusy, LockBusy)


def utcnow() -> datetime:
    return datetime.now(UTC)


INDEX_CHECK_S = 1.0  # how often a Memory looks that its index file was not deleted or replaced (one stat)


class Memory:
    def __init__(
        self, home: Home, config: config_mod.Config, clock: Callable[[], datetime] = utcnow, busy_timeout_ms: int | None = None
    ):
        self.home = home
        self.busy_timeout_ms = config.store.busy_timeout_ms if busy_timeout_ms is None else busy_timeout_ms
        self.config = config
        self.clock = clock
        self.audit = AuditLog(home.audit_log, config.owner, home.root)
        self.tombstones = Tombstones(home.tombstones_log, config.owner, home.root)
        self.sealed = SealedStore(home)
        self.facts = FactStore(
            home, self.audit, self.tombstones, config.owner, clock, max_bytes=config.store.max_fact_bytes, sealed=self.sealed.has
        )
        # A replayed turn is looked at whole: a forgotten value past its first 64 KiB (a long tool output) came back.
        self.raw = RawLog(home, clock, config.owner, forgotten_in=lambda text: self.tombstones.contained(text, whole=True))
        self._index: Index | None = None
        self._index_checked = 0.0  # when ``index`` last looked that its file is still the one at its path
        self.semantic_wait = True  # bead[semantic]: a search may wait for the model to load (not on the proxy's path)
        self.semantic_socket: Path | None = None  # the proxy: questions' vectors from the indexer (Index.semantic_socket)
        self.cache_kib: int | None = None  # the proxy: a smaller SQLite page cache (Index.small_cache)

    @classmethod
    def open(cls, home: Home | None = None, clock: Callable[[], datetime] = utcnow) -> Memory:
        home = (home or resolve_home()).ensure()  # a folder of other files, or of another config.yaml, is refused
        return cls(home, config_mod.load(home), clock)

    # ----- the index --------------------------------------------------------
    @property
    def index(self) -> Index:
        if (
            self._index is not None
            and (now := time.monotonic()) - self._index_checked >= INDEX_CHECK_S
            and not self._index.in_transaction  # a forget's or a seal's write in progress ends on its connection
        ):
            self._index_checked = now
            if self._index.replaced():
                # index.db deleted (and perhaps built again by another process) under this long-lived Memory: the
                # indexer kept writing into the deleted file, where no search reads, holding a forgotten value's
                # bytes in its WAL (an adversarial pass). The connection goes; the next open takes the file there.
                self._index.close()
                self._index = None
        if self._index is None:
            idx = Index(self.home.index_db, self.home.store, self.busy_timeout_ms)
            idx.semantic = self.config.recall.semantic and semantic.available()
            idx.semantic_wait = self.semantic_wait
            idx.semantic_socket = self.semantic_socket
            if self.cache_kib:
                idx.small_cache(self.cache_kib)
            if idx.fresh:
                # Deleted, never built, or built by another schema: derive it again. One that fails stays unbuilt,
                # for the next open to build again (never an empty index that reads as current).
                try:
                    rebuild(idx, self.facts, self.raw)
                except BaseException:
                    with contextlib.suppress(Exception):
                        idx.unbuilt()
                    idx.close()
                    raise
            self._index = idx
        return self._index

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def holds_current_index(self) -> bool:
        """Whether this Memory holds an index open and it is the file at the path (built: Memory.index builds what it
        opens). Opens nothing."""
        idx = self._index
        return idx is not None and not idx.replaced()

    def index_replaced(self) -> bool:
        """Whether the index this Memory holds open is no longer the file at its path (``Index.replaced``); False when
        it holds none. Opens nothing (another thread may be using the connection)."""
        idx = self._index
        return idx is not None and idx.replaced()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # ----- facts ------------------------------------------------------------
    def write(
        self,
        key: str,
        body: str,
        type: str,
        trust: str = "user_stated",
        sensitivity: str = "private",
        pinned: bool | None = None,
        sources: Iterable[str] = (),
        owner: str | None = None,
        check: Callable[[Fact | None], None] | None = None,
        title: str | None = None,
    ) -> WriteResult:
        """Write a new version; the file is the commit, the index follows (``indexed`` says whether it did).

        ``sensitivity="secret"`` is refused: a secret is sealed by
        ``bead.core.seal.write_secret`` (``seal.write_fact`` picks the path for
        `bead write`). A plaintext write to a sealed key raises KeySealed. ``owner`` (default: the home's) is written on the
        version; ``check`` sees the current version under the store's lock and
        may refuse the write by raising (FactStore.write).
        """
        self.check_title(key, title)
        sources = tuple(sources)
        for what, text in (("key", key), ("body", body), ("owner", owner or ""), *(("source", s) for s in sources)):
            half = LONE_SURROGATE.search(text)
            if half:  # UTF-8 cannot hold it: the file could not be written
                raise BeadError(
                    f"refusing to write {key!r}: its {what} holds half of a character (U+{ord(half.group()):04X} at "
                    f"{half.start()}, a lone surrogate, as an emoji cut in two leaves)",
                    f"write the {what} again without it",
                )
        self.facts.check_writable_key(key)  # before anything opens a file for it; a look-alike's refusal after
        agents_lookalikes = self.check_lookalike(key, trust)
        self.check_storable(key, body, title)
        if sensitivity != "secret":
            found = credential_rules(body)
            if found:
                # No entry point stores a credential in plain text: it would stand in a prompt, a file and the
                # index. The person can seal it; nothing else writes it.
                raise RefusedWrite(
                    f"refusing to write {key} in plain text: the secret scan found what looks like a credential "
                    f"({', '.join(sorted(set(found)))})",
                    "keep it sealed instead: write it with --sensitivity secret (`bead vault init` first if there "
                    "is no vault), or write the fact without the secret",
                )
        if sensitivity == "secret":
            raise BeadError(
                f"a secret is never written in plain text: {key} is sealed through bead.core.seal.write_secret",
                "write it with `bead write KEY - --sensitivity secret`",
            )
        result = self.facts.write(
            key,
            body,
            type,
            trust=trust,
            sensitivity=sensitivity,
            pinned=pinned,
            sources=tuple(sources),
            owner=owner,
            check=check,
            title=title,
        )
        if result.written:
            fact, marked = result.fact, result.marked
            done = self._catch_up(lambda idx: idx.add_version(fact, marked), f"write of {fact.id}")
            if not done:
                result = dataclasses.replace(result, indexed=False)
            if agents_lookalikes:
                result = dataclasses.replace(result, lookalikes=agents_lookalikes)
        return result

    def check_storable(self, key: str, body: str, title: str | None = None) -> None:
        """Refuse what no file of the store may hold, whatever writes it (a version, a review item): this home's
        proxy token anywhere, or a credential in the key (a key is shown in every list and log and never sealed).
        A credential in the body is the caller's to refuse or seal (``write``)."""
        token = home_token(self.home)
        if token and any(token in text for text in (key, body, title or "")):
            raise RefusedWrite(
                "refusing to write a fact whose key, value or title holds this home's proxy token (proxy.token), "
                "which makes whoever reads it the home's owner to the proxy",
                "write the fact without the token; if it was shared, delete proxy.token and restart the proxy for a new one",
            )
        in_key = credential_rules(key.replace("/", " "))
        if in_key:
            raise RefusedWrite(
                "refusing a key in which the secret scan found what looks like a credential "
                f"({', '.join(sorted(set(in_key)))}); the key is not repeated here",
                "a key is shown in every list, pointer and log line and is never sealed; name the fact without the "
                "secret (the value can be sealed: --sensitivity secret)",
            )

    def check_title(self, key: str, title: str | None) -> None:
        """A title is shown wherever bead points to the fact: it may not hold a credential."""
        if title is not None and credential_rules(title):
            raise BeadError(
                f"refusing the title of {key}: it holds what looks like a credential",
                "a title is shown wherever bead points to the fact; give one without the secret "
                "(the value can be sealed: --sensitivity secret)",
            )

    def check_lookalike(self, key: str, trust: str | None = None) -> tuple[str, ...]:
        """A new key that looks like one already stored, plain or sealed (``user/edit0r`` beside ``user/editor``,
        ``user/rnodel`` beside ``user/model``) is refused: a reader would take one for the other. One indexed
        lookup of the key's skeleton (bead.textform.skeleton).

        The guard keeps the person's keys theirs, so a key only an agent or the dream wrote does not stop the
        person's own word (``trust`` in PERSON_TRUSTS): an agent could otherwise claim ``user/ed1tor`` ahead of the
        person's ``user/editor`` and have the person's fact filed under its key. Those keys are returned, for the
        caller to name; every other writer is refused by any look-alike, and by a key of the person's when it writes
        a key that is there already (an impostor stored before). Keys told apart only as versions are
        (``versions_differ``) are no look-alikes. While the index cannot be read an agent's or the dream's key is
        checked against the keys on disk."""
        if not self.home.root.is_dir():
            return ()  # a home with no store yet holds no key to look like
        mine = skeleton(key)
        person = trust in PERSON_TRUSTS
        exists, own, like = False, False, []
        try:
            exists = self.index.has_key(key)
            if exists and person:
                return ()
            like = self.index.keys_like(mine, key)
            own = exists and self.index.persons_key(key)
        except (IndexBusy, *database_errors()):  # type: ignore[misc]  # derived: a write never waits on it
            if not person:
                # An agent's or the dream's write does not go unchecked while the index is down: the keys on disk,
                # each taken for the person's (which, the index would say).
                on_disk = list(self.facts.keys())
                exists = key in on_disk
                like = [(k, True) for k in on_disk if k != key and skeleton(k) == mine]
        like = [(k, p) for k, p in like if not versions_differ(k, key)]
        # A sealed key is only ever the person's.
        sealed = (
            []
            if self.sealed.has(key)
            else [k for k in self.sealed.keys() if k != key and skeleton(k) == mine and not versions_differ(k, key)]
        )
        # The person's keys first: a refusal points to a key the person wrote, never to an impostor beside it.
        persons = [k for k, p in like if p] + sealed
        if exists:
            # A key that is there already and not the person's (one an agent or the dream wrote before its
            # look-alike was refused) takes no more of their writes while a key of the person's reads like it.
            if persons and not own:
                raise InvalidKey(
                    f"refusing to write {key}: it looks like {persons[0]}, the person's key",
                    f"write to {persons[0]} to change that fact, or choose a key that reads differently",
                )
            return ()
        if persons:
            other: str | None = persons[0]
        else:  # only an agent's or the dream's key reads like it: that stops their write, not the person's
            other = None if person else next((k for k, _p in like), None)
        if other is not None:
            raise InvalidKey(
                f"refusing to write {key}: it looks like {other}, which is stored already",
                f"write to {other} to change that fact, or choose a key that reads differently",
            )
        return tuple(k for k, _persons in like)

    def behind(self, rows: Iterable[dict[str, Any]]) -> set[str]:
        """The ids of index rows (``key``, ``version``, ``id``) whose key has a newer version on disk: the index is
        behind the files there (a write whose index update met a locked index, a hand edit while no indexer ran),
        and the row's value is one the person replaced. What serves a value leaves these out until the index
        catches up. A stat or two a row, and the key's state or a listing of its folder (FactStore.behind)."""
        rows = list(rows)
        stale = self.facts.behind((r["key"], int(r["version"])) for r in rows)
        return {r["id"] for r in rows if (r["key"], int(r["version"])) in stale} if stale else set()

    def set_status(self, fact: Fact, status: str) -> bool:
        """Change one version's status (dormant, current, ...) in its file and in the index (False: index later)."""
        self.facts.set_status(fact, status)
        return self._catch_up(lambda idx: self._sync(idx, fact.key), f"status of {fact.id}")

    def set_dormant(self, fact: Fact) -> bool:
        """The dream's decay: one version dormant in its file and the index, unless it was pinned since it was read
        (False: left as it is)."""
        if not self.facts.set_status(fact, "dormant", unless_pinned=True):
            return False
        self._catch_up(lambda idx: self._sync(idx, fact.key), f"status of {fact.id}")
        return True

    def set_pinned(self, fact: Fact, pinned: bool) -> bool:
        """Pin or unpin one version in its file and in the index (False: index later)."""
        self.facts.set_pinned(fact, pinned)
        return self._catch_up(lambda idx: self._sync(idx, fact.key), f"pin of {fact.id}")

    def restore_versions(self, key: str, files: dict[int, bytes]) -> list[Path]:
        """Put version files of ``key`` back (unseal; the caller holds the store lock) and index them."""
        paths = self.facts.restore(validate_key(key), files)
        self.sync_key(key)
        return paths

    def is_sealed(self, key: str) -> bool:
        """Whether the vault holds versions of ``key`` (then it has no plaintext, no rows, no injection)."""
        return self.sealed.has(validate_key(key))

    def delete_versions(self, key: str, numbers: list[int]) -> tuple[int, list[Path]]:
        """Delete version files of ``key`` (forget; the caller holds the store lock) and their rows.

        Returns the number deleted and the files left in the key's folder
        because they are not versions of it. A locked index raises IndexBusy.
        """
        out = self.facts.delete_versions(key, numbers)
        self.sync_key(key)
        return out

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """The index changes of the block commit as one; a locked index raises IndexBusy before the block runs."""
        with self.index.write_tx():
            yield

    def _sync(self, idx: Index, key: str) -> None:
        for p in sync_key(idx, self.facts, key):
            log.debug("skipped %s: %s", p.path, p.reason)

    def _catch_up(self, apply: Callable[[Index], T], what: str) -> bool:
        """Apply an index update, retrying a locked index with backoff for up to the busy timeout.

        False when the index stayed locked: the files are already right, and
        the indexer's reconcile (or `bead reindex`) brings the index up to them.
        """
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        for pause in (*BACKOFF_S, None):
            remaining = deadline - time.monotonic()
            try:
                idx = self.index
                with idx.busy_timeout(max(1, int(remaining * 1000))):
                    apply(idx)
                return True
            except IndexBusy:
                remaining = deadline - time.monotonic()
                if pause is None or remaining <= 0:
                    break
                time.sleep(min(pause, remaining))
            except database_errors() as exc:
                # A damaged or unreadable index: the files are right, `bead reindex` rebuilds it.
                log.warning("the index could not take the %s (%s); run `bead reindex`", what, exc)
                return False
        # info, not warning: a command says it in its own words (one line), a service logs this.
        log.info(
            "the index was locked for %.1f s; the %s is on disk and the index catches up later", self.busy_timeout_ms / 1000, what
        )
        return False

    def note_use(self, keys: Iterable[str], kind: str, **fields: object) -> None:
        """The agent recalled these facts (``recall``) or opened one (``open``), or they were reinforced
        (``reinforce``): audit.log
        records it (one ``key``, or ``keys``), and the index's ``uses`` rows, which the pinned block counts,
        follow if the index is free within USE_INDEX_MS (else a reindex derives them from audit.log)."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return
        # A key forgotten since it was found (a search, then a forget, then this) would be named again after the
        # forget scrubbed audit.log and the index: only keys that still have a version, and none while a forget
        # runs. Under the raw log's lock, which a forget takes as it begins: these lines come before it or see it.
        with self.raw.locked():
            if self.raw.forget_running():
                return
            keys = [k for k in keys if self.facts.versions(k).numbers or self.sealed.has(k)]
            if not keys:
                return
            now = self.clock()
            if len(keys) == 1:
                self.audit.record(now, kind, key=keys[0], **fields)
            else:
                self.audit.record(now, kind, keys=keys, **fields)
            try:
                idx = self.index
                with idx.busy_timeout(USE_INDEX_MS):
                    idx.record_uses(keys, kind, iso(now))
            except (IndexBusy, *database_errors()):  # type: ignore[misc]
                log.info("the index was busy; %d %s row(s) wait for the next reindex", len(keys), kind)

    def recent_uses(self) -> dict[str, int]:
        """Recalls and reinforcements per key over the last USE_WINDOW_DAYS days."""
        return self.index.recent_uses(iso(self.clock() - timedelta(days=USE_WINDOW_DAYS)))

    def sync_key(self, key: str) -> list[Problem]:
        """Make the index rows of ``key`` match its files (after a hand edit, or a change above)."""
        return sync_key(self.index, self.facts, key)

    def versions(self, key: str) -> KeyVersions:
        return self.facts.versions(validate_key(key))

    def current(self, key: str) -> Fact | None:
        return self.versions(key).current

    def served(self, key: str) -> Fact | None:
        """The version a read serves: the current one, or none while the newest file cannot be read."""
        return self.versions(key).served

    # ----- raw --------------------------------------------------------------
    def append_turns(
        self, session: str, items: Iterable[TurnItem], scanned: bool = False, epoch: str | None = None
    ) -> list[Turn]:
        """Append turns to the raw log, then index them; IndexBehind when only the first happened. ``scanned``: the
        texts are already redacted; ``epoch``: the forget epoch when they were read (both
        ``bead.store.rawlog.RawLog.append_many``)."""
        turns = self.raw.append_many(session, items, scanned=scanned, epoch=epoch)
        what = f"{len(turns)} turn(s) of session {session}"

        def index(idx: Index) -> None:
            # Inside the write transaction, which a forget's own index update waits for: the texts as appended only
            # if the file still holds them so; a forget or seal that rewrote it meanwhile (`bead import` running
            # beside `bead forget`) is read from the file instead, or its value would be indexed again.
            with idx.write_tx():
                if self.raw.as_appended(turns):
                    idx.add_turns(turns)
                else:
                    for path in dict.fromkeys(t.path for t in turns if t.path is not None):
                        sync_raw(idx, self.raw, path)

        if turns and not self._catch_up(index, what):
            raise IndexBehind(what)
        return turns

    def redact_turns(self, path: Path, numbers: set[int]) -> list[Turn]:
        """Replace the text of turns in one raw file with ``[forgotten]``, in the file and the index; the turns
        changed."""
        changed = self.raw.redact_turns(path, numbers)
        sync_raw(self.index, self.raw, path)
        return changed

    def drop_preamble(self, path: Path) -> bool:
        """Drop the text before a raw file's first turn (RawLog.drop_preamble), in the file and the index."""
        dropped = self.raw.drop_preamble(path)
        if dropped:
            sync_raw(self.index, self.raw, path)
        return dropped

    def scrub_markers(self, path: Path, numbers: set[int], held: Callable[[str], bool]) -> int:
        """Drop the fields of turns' markers in one raw file that hold a forgotten value (RawLog.scrub_markers), in
        the file and the index."""
        changed = self.raw.scrub_markers(path, numbers, held)
        if changed:
            sync_raw(self.index, self.raw, path)
        return len(changed)

    def redact_tokens(
        self, path: Path, numbers: set[int], pattern: Any, still: Callable[[str], bool] | None = None
    ) -> list[Turn]:
        """Replace a forgotten value's distinctive tokens in turns of one raw file, in the file and the index (a turn
        that ``still`` holds one after, escaped, goes whole: RawLog.redact_tokens); the turns changed."""
        changed = self.raw.redact_tokens(path, numbers, pattern, still)
        sync_raw(self.index, self.raw, path)
        return changed

    def catch_up_index(self) -> None:
        """Re-read every file the index has not seen as it is now (bead.index.rebuild.reconcile)."""
        for p in reconcile(self.index, self.facts, self.raw)[1]:
            log.debug("skipped %s: %s", p.path, p.reason)

    def checkpoint(self) -> bool:
        """Empty the index's WAL, so deleted text leaves the -wal file too (False: a reader kept it from it)."""
        return self.index.checkpoint()

    # ----- housekeeping ------------------------------------------------------
    def links(self) -> list[Path]:
        """Every symbolic link below the home: bead never follows one (`bead status` reports them)."""
        found: list[Path] = []
        for _ in safe.walk(self.home.root, root=self.home.root, links=found, skip_hidden_dirs=False):
            pass
        return found

    def orphan_temps(self) -> list[Path]:
        """Temp files whose writer is gone (a killed write); they may hold a value."""
        return safe.orphan_temps(self.home.root, root=self.home.root)

    def remove_orphan_temps(self) -> list[Path]:
        """Remove the temp files of killed writers (`bead status --fix`, `bead reindex`, forget)."""
        with self.facts.lock():
            # Under the store's lock no fact file is being written: a version's temp file is a killed write's,
            # whoever holds its pid now.
            facts = safe.orphan_temps(self.home.facts, root=self.home.root, any_writer=True)
            found = dict.fromkeys([*self.orphan_temps(), *facts])
            gone = [p for p in found if safe.unlink(p, root=self.home.root)]
        with self.raw.locked():
            # So under the raw log's lock for its folder: a redaction's or the epoch's temp file is made only under
            # it (one whose pid was alive again as another process kept a turn's text for good: an outside attack).
            raw = safe.orphan_temps(self.home.raw, root=self.home.root, any_writer=True)
            gone += [p for p in raw if safe.unlink(p, root=self.home.root)]
        return gone
