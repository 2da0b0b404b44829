"""The runtime every bead process builds once: home, config, store, index.

Commands are thin wrappers over these methods; the methods keep the index
current for what they change, so search sees a write as soon as it returns.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, Iterable

from . import config as config_mod
from .paths import Home, resolve_home
from .store.audit import AuditLog, Tombstones
from .store.facts import Fact, FactStore, KeyVersions, WriteResult
from .store.keys import validate_key
from .store.rawlog import RawLog, Turn


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Memory:
    def __init__(self, home: Home, config: config_mod.Config, clock: Callable[[], datetime] = utcnow,
                 busy_timeout_ms: int = 30000):
        self.home = home
        self.busy_timeout_ms = busy_timeout_ms
        self.config = config
        self.clock = clock
        self.audit = AuditLog(home.audit_log, config.owner)
        self.tombstones = Tombstones(home.tombstones_log, config.owner)
        self.facts = FactStore(home.facts, home.store_lock, self.audit, self.tombstones, config.owner, clock)
        self.raw = RawLog(home.raw, home.raw_lock, clock, config.owner)
        self._index = None

    @classmethod
    def open(cls, home: Home | None = None, clock: Callable[[], datetime] = utcnow) -> "Memory":
        home = (home or resolve_home()).ensure()
        return cls(home, config_mod.load(home), clock)

    # ----- the index --------------------------------------------------------
    @property
    def index(self):
        if self._index is None:
            from .index.db import Index
            from .index.rebuild import rebuild

            idx = Index(self.home.index_db, self.home.store, self.busy_timeout_ms)
            if idx.fresh:
                # Deleted, never built, or built by another schema: derive it again.
                rebuild(idx, self.facts, self.raw)
            self._index = idx
        return self._index

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
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

    def sync_key(self, key: str) -> None:
        from .index.rebuild import sync_key

        sync_key(self.index, self.facts, key)

    def versions(self, key: str) -> KeyVersions:
        return self.facts.versions(validate_key(key))

    def current(self, key: str) -> Fact | None:
        return self.versions(key).current

    # ----- raw --------------------------------------------------------------
    def append_turns(self, session: str, items: Iterable[tuple]) -> list[Turn]:
        turns = self.raw.append_many(session, items)
        self.index.add_turns(turns)
        return turns

    # ----- search -----------------------------------------------------------
    def search(self, query: str, limit: int = 10, corpus: str = "all", current_only: bool = True,
               scope: str | None = None) -> tuple[list, list]:
        """(fact hits, raw hits), each ranked by its own BM25 score.

        The two corpora are ranked separately: their BM25 scores come from
        different tables and are not comparable.
        """
        facts = raw = []
        if corpus in ("all", "facts"):
            facts = self.index.search_facts(query, limit=limit, current_only=current_only, scope=scope)
        if corpus in ("all", "raw"):
            raw = self.index.search_raw(query, limit=limit)
        return facts, raw
