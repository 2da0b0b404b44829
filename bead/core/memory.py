"""The runtime every bead process builds once: home, config, store, index.

Every change goes through a method here, and each method keeps the index in
step with the files it changed (writes, status changes, deleted versions,
redacted turns), so a reader sees a change as soon as the method returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .. import config as config_mod
from ..errors import BeadError
from ..paths import Home, resolve_home
from ..store.audit import AuditLog, Tombstones
from ..store.facts import Fact, FactStore, KeyVersions, Problem, WriteResult
from ..store.keys import validate_key
from ..store.rawlog import RawLog, Turn, TurnItem

if TYPE_CHECKING:
    from ..index.db import Index


class IndexBehind(BeadError):
    """The files changed (that is the commit) but the index could not be updated yet."""

    def __init__(self, what: str):
        super().__init__(f"{what} is written, but the index is locked by another process and lags behind",
                         "it catches up by itself when `bead indexer` runs, or run `bead reindex`")


def utcnow() -> datetime:
    return datetime.now(UTC)


class Memory:
    def __init__(self, home: Home, config: config_mod.Config, clock: Callable[[], datetime] = utcnow,
                 busy_timeout_ms: int = 30000):
        self.home = home
        self.busy_timeout_ms = busy_timeout_ms
        self.config = config
        self.clock = clock
        self.audit = AuditLog(home.audit_log, config.owner)
        self.tombstones = Tombstones(home.tombstones_log, config.owner)
        self.facts = FactStore(home, self.audit, self.tombstones, config.owner, clock)
        self.raw = RawLog(home, clock, config.owner)
        self._index: Index | None = None

    @classmethod
    def open(cls, home: Home | None = None, clock: Callable[[], datetime] = utcnow) -> Memory:
        home = (home or resolve_home()).ensure()
        return cls(home, config_mod.load(home), clock)

    # ----- the index --------------------------------------------------------
    @property
    def index(self) -> Index:
        if self._index is None:
            from ..index.db import Index
            from ..index.rebuild import rebuild

            idx = Index(self.home.index_db, self.home.store, self.busy_timeout_ms)
            if idx.fresh:
                # Deleted, never built, or built by another schema: derive it again.
                rebuild(idx, self.facts, self.raw)
            self._index = idx
        return self._index

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    # ----- facts ------------------------------------------------------------
    def write(self, key: str, body: str, type: str, trust: str = "user_stated",
              sensitivity: str = "private", pinned: bool | None = None,
              sources: Iterable[str] = ()) -> WriteResult:
        result = self.facts.write(key, body, type, trust=trust, sensitivity=sensitivity,
                                  pinned=pinned, sources=tuple(sources))
        if result.written:
            self.sync_key(key)
        return result

    def set_status(self, fact: Fact, status: str) -> None:
        """Change one version's status (dormant, current, ...) in its file and in the index."""
        self.facts.set_status(fact, status)
        self.sync_key(fact.key)

    def delete_versions(self, key: str, numbers: list[int]) -> int:
        """Delete version files of ``key`` (forget; the caller holds the store lock) and their rows."""
        n = self.facts.delete_versions(key, numbers)
        self.sync_key(key)
        return n

    def sync_key(self, key: str) -> list[Problem]:
        """Make the index rows of ``key`` match its files (after a hand edit, or a change above)."""
        from ..index.rebuild import sync_key

        return sync_key(self.index, self.facts, key)

    def versions(self, key: str) -> KeyVersions:
        return self.facts.versions(validate_key(key))

    def current(self, key: str) -> Fact | None:
        return self.versions(key).current

    # ----- raw --------------------------------------------------------------
    def append_turns(self, session: str, items: Iterable[TurnItem]) -> list[Turn]:
        """Append turns to the raw log, then index them; IndexBehind when only the first happened."""
        from ..index.sqlite import module

        turns = self.raw.append_many(session, items)
        try:
            self.index.add_turns(turns)
        except module().OperationalError:
            raise IndexBehind(f"{len(turns)} turn(s) of session {session}") from None
        return turns

    def redact_turns(self, path: Path, numbers: set[int]) -> int:
        """Replace the text of turns in one raw file with ``[forgotten]``, in the file and the index."""
        from ..index.rebuild import sync_raw

        changed = self.raw.redact_turns(path, numbers)
        sync_raw(self.index, self.raw, path)
        return len(changed)

    def checkpoint(self) -> None:
        """Empty the index's WAL, so deleted text leaves the -wal file too."""
        self.index.checkpoint()
