"""audit.log and tombstones.log: append-only JSON lines, never a value."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from .files import append_line


def normalise(value: str) -> str:
    """Case- and whitespace-insensitive form used for tombstones and --match."""
    return " ".join(value.casefold().split())


def value_hash(value: str) -> str:
    return hashlib.sha256(normalise(value).encode("utf-8")).hexdigest()


def iso(t: datetime) -> str:
    """UTC, second precision, with a Z: the form every bead file uses."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AuditLog:
    """Every write, supersede, injection, forget and tombstone, one JSON line each."""

    def __init__(self, path: Path, owner: str):
        self.path = path
        self.owner = owner

    def record(self, at: datetime, event: str, **fields: object) -> None:
        entry = {"at": iso(at), "event": event, "owner": self.owner, **fields}
        append_line(self.path, json.dumps(entry, ensure_ascii=False, sort_keys=False))

    def entries(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


class Tombstones:
    """Key + SHA-256 of the normalised value; the value itself never."""

    def __init__(self, path: Path, owner: str):
        self.path = path
        self.owner = owner

    def add(self, at: datetime, key: str, value: str, reason: str) -> str:
        digest = value_hash(value)
        append_line(self.path, json.dumps({"at": iso(at), "key": key, "sha256": digest, "reason": reason,
                                           "owner": self.owner}))
        return digest

    def hashes(self) -> set[str]:
        if not self.path.exists():
            return set()
        out = set()
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.add(json.loads(line)["sha256"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
        return out

    def matches(self, value: str) -> bool:
        """A tombstoned value is refused under any key: it must not come back."""
        return value_hash(value) in self.hashes()

    def count(self) -> int:
        return len(self.hashes())
