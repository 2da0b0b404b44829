"""Rebuild and reconcile the index from the files (the files always win)."""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import files as safe
from ..paths import version_number
from ..store.facts import FactStore, Problem
from ..store.rawlog import RawLog
from .db import ODD_ENTRY, Index, sha256_file

CTIME_MARGIN_NS = 2_000_000_000


@dataclass
class Diff:
    """A checksum diff between the files and the index."""

    new: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.new or self.modified or self.deleted)

    def as_dict(self) -> dict:
        return {"new": len(self.new), "modified": len(self.modified), "deleted": len(self.deleted)}


def _store_files(facts: FactStore, raw: RawLog) -> dict[str, tuple[Path, str]]:
    """Every version file and raw log under the store. A version name that is not a regular file (a link, a FIFO, a
    folder) is listed too: no key's value is read from it, but when it is a key's newest it withholds the key
    (KeyVersions.served), so its coming and going must reach the index as a file's does."""
    out: dict[str, tuple[Path, str]] = {}
    store_root = facts.home.store
    odd: list[Path] = []
    for folder, dirs, names in safe.walk(facts.root, root=facts.home.root, links=odd, others=odd):
        for name in names:
            if version_number(name) is not None:
                p = folder / name
                out[p.relative_to(store_root).as_posix()] = (p, "fact")
        odd += [folder / name for name in dirs if version_number(name) is not None]
    for p in odd:
        if version_number(p.name) is not None and p.parent != facts.root:
            out[p.relative_to(store_root).as_posix()] = (p, "fact")
    for p in raw.files():
        out[p.relative_to(store_root).as_posix()] = (p, "raw")
    return out


def diff(index: Index, facts: FactStore, raw: RawLog) -> Diff:
    """New, modified and deleted files since the index last saw them."""
    d = Diff()
    known = index.file_fingerprints()
    on_disk = _store_files(facts, raw)
    # A fact file changed since the last reconcile began is read again even where its size and time are the ones
    # the index saw: `cp -p` or `rsync -a` restoring another value of the same length keeps both, and its old value
    # stayed in search and the pinned block with `bead status` saying fresh. A change sets a file's ctime, which no
    # tool sets back. (Raw logs grow by appends, which change their size; bead's own rewrites index themselves.)
    # Less a margin: a file system's ctime may come from a coarser clock than time.time_ns() (a kernel tick), and a
    # change made in the tick the reconcile began at could read as older than it.
    since = index.reconciled_ns() - CTIME_MARGIN_NS
    for rel, (path, kind) in sorted(on_disk.items()):
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if rel not in known:
            d.new.append(rel)
            continue
        size, mtime_ns, sha, _ = known[rel]
        if not stat.S_ISREG(st.st_mode):  # a version name that is no file: changed only if the index saw a file
            if sha != ODD_ENTRY:
                d.modified.append(rel)
            continue
        changed = (size, mtime_ns) != (st.st_size, st.st_mtime_ns) or (kind == "fact" and st.st_ctime_ns > since)
        if changed and (not sha or _digest(path) != sha):
            d.modified.append(rel)
    d.deleted = sorted(rel for rel in known if rel not in on_disk)
    return d


def _digest(path: Path) -> str | None:
    """The file's digest, or None where bead will not read it (a hard link, a FIFO): changed, so the sync that reads
    it says why."""
    try:
        return sha256_file(path)
    except (OSError, safe.UnsafePath):
        return None


def reconcile(index: Index, facts: FactStore, raw: RawLog) -> tuple[Diff, list[Problem]]:
    """Apply a diff: re-read every changed file, drop rows of deleted ones."""
    began = time.time_ns()
    d = diff(index, facts, raw)
    problems: list[Problem] = []
    keys = set()
    for rel in d.new + d.modified + d.deleted:
        path = facts.home.store / rel
        kind = facts.home.classify(path)
        if kind and kind[0] == "fact":
            keys.add(kind[1])
        elif kind and kind[0] == "raw":
            try:
                sync_raw(index, raw, path)
            except (OSError, safe.UnsafePath) as exc:
                # One raw file bead will not read (a hard link, a link) is that file's problem: the rest of the
                # store, its facts included, is reconciled (before, it stopped the indexer from starting).
                problems.append(Problem(path, exc.message if isinstance(exc, safe.UnsafePath) else str(exc)))
    for key in sorted(keys):
        problems.extend(sync_key(index, facts, key))
    index.set_reconciled_ns(began)
    return d, problems


def sync_key(index: Index, facts: FactStore, key: str) -> list[Problem]:
    """Make one key's rows match its files.

    The files are read inside the index's write transaction: two processes
    that write the same key one after the other also sync one after the
    other, and the later sync reads the later files. Reading first and then
    waiting for the lock could commit a stale view last.
    """
    from ..errors import BeadError

    with index.write_tx():
        try:
            kv = facts.versions(key)
        except BeadError as exc:
            return [Problem(facts.root / key, exc.message)]
        index.sync_key(kv, facts.key_dir(key))
    return list(kv.problems)


def sync_raw(index: Index, raw: RawLog, path: Path) -> None:
    """Make one raw file's rows match it, reading it inside the write transaction (see sync_key)."""
    with index.write_tx():
        if path.exists():
            index.sync_raw_file(path, *raw.read_seen(path))
        else:
            index.drop_raw_file(index.rel(path))


USE_EVENTS = ("recall", "reinforce", "open")


def use_rows(facts: FactStore) -> list[tuple[str, str, str]]:
    """(key, kind, at) of every recall, opening and reinforcement audit.log records, for keys that still exist."""
    out = []
    for e in facts.audit.entries():
        if e.get("event") not in USE_EVENTS:
            continue
        many = e.get("keys")
        keys: list[object] = list(many) if isinstance(many, list) else [e.get("key")]
        out += [(k, str(e["event"]), str(e.get("at", ""))) for k in keys if isinstance(k, str) and k]
    return out


def rebuild(
    index: Index, facts: FactStore, raw: RawLog, progress: Callable[[str, int], None] | None = None
) -> tuple[dict, list[Problem]]:
    """Drop everything and index every file again. Returns counts and problems."""
    tick = progress or (lambda kind, n: None)
    versions = turns = 0
    # One transaction: readers see the old index or the new one, never half. The files are listed
    # inside it, holding the index's write lock: a writer whose file came after the listing adds its
    # row after this commits; listed first, a writer's row committed meanwhile would be dropped by the
    # reset (8 writers starting on a home with no index lost a few rows that way).
    with index.write_tx():
        kvs, problems = facts.scan()
        raw_files = list(raw.files())
        index.reset()
        for kv in kvs:
            index.sync_key(kv, facts.key_dir(kv.key))
            versions += len(kv.facts)
            tick("fact", 1)
        for path in raw_files:
            try:
                ts, seen = raw.read_seen(path)
            except (OSError, safe.UnsafePath) as exc:
                problems.append(Problem(path, exc.message if isinstance(exc, safe.UnsafePath) else str(exc)))
                continue
            index.sync_raw_file(path, ts, seen)
            turns += len(ts)
            tick("raw", 1)
        index.record_use_rows(use_rows(facts))
    # A forget running in another process may delete more after this; its flag stays until its own checkpoint.
    index.checkpoint(keep_owed=raw.forget_running)
    counts = {
        "keys": len(kvs),
        "fact_versions": versions,
        "raw_files": len(raw_files),
        "raw_turns": turns,
        "problems": len(problems),
    }
    return counts, problems
