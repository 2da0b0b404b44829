"""Fact versions and the one supersession rule.

One Markdown file per version, ``store/facts/<key>/v<N>.md``. The current
version of a key is the parseable file with the highest version number; the
``status`` field is written for readers, the rule never reads it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ..errors import BeadError, RefusedWrite
from ..paths import Home, version_number
from .audit import AuditLog, Tombstones, iso
from .files import atomic_write
from .keys import PERSON_TRUSTS, SENSITIVITIES, TRUSTS, TYPES, check_choice, scope_of, validate_key
from .locks import flocked

# libyaml's C loader when PyYAML has it: parsing frontmatter dominates reindex.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# The frontmatter of a version file, in the order it is written: the one list
# of a fact's fields (the body follows the frontmatter).
FIELDS = (
    "id", "key", "type", "owner", "status", "version", "supersedes", "valid_from",
    "trust", "sensitivity", "sources", "last_injected", "pinned",
)


@dataclass(frozen=True)
class Problem:
    """A file bead could not use: reported, skipped, never rewritten."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Fact:
    key: str
    version: int
    type: str
    body: str
    owner: str
    status: str = "current"
    supersedes: str | None = None
    valid_from: str = ""
    trust: str = "user_stated"
    sensitivity: str = "private"
    sources: tuple[str, ...] = ()
    last_injected: str | None = None
    pinned: bool = False
    path: Path | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        return f"{self.key}@v{self.version}"

    @property
    def scope(self) -> str:
        return scope_of(self.key)

    def frontmatter(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in FIELDS:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def render(self) -> bytes:
        front = yaml.dump(self.frontmatter(), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                          default_flow_style=False, width=1000)
        return f"---\n{front}---\n{self.body}\n".encode()

    def as_dict(self) -> dict[str, Any]:
        return {**self.frontmatter(), "body": self.body, "path": str(self.path) if self.path else None}


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return iso(value)
    return str(value)


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body) or ValueError with a reason."""
    if not text.startswith("---\n"):
        raise ValueError("does not start with a `---` frontmatter line")
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.rstrip("\n").endswith("\n---"):
            end = len(text.rstrip("\n")) - 4
        else:
            raise ValueError("the frontmatter has no closing `---` line")
    try:
        meta = yaml.load(text[4:end + 1], Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ValueError(f"frontmatter is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(meta, dict):
        raise ValueError("frontmatter is not a mapping")
    body = text[end + 5:]
    return meta, body


def parse_fact(path: Path, key: str, version: int) -> Fact:
    """Parse one version file; ValueError says why it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    meta, body = split_frontmatter(text)
    if meta.get("key") != key:
        raise ValueError(f"frontmatter key {meta.get('key')!r} does not match its directory ({key})")
    if meta.get("version") != version:
        raise ValueError(f"frontmatter version {meta.get('version')!r} does not match its file name (v{version})")
    ftype = meta.get("type")
    if ftype not in TYPES:
        raise ValueError(f"type {ftype!r} is not one of {', '.join(TYPES)}")
    trust = meta.get("trust", "user_stated")
    if trust not in TRUSTS:
        raise ValueError(f"trust {trust!r} is not one of {', '.join(TRUSTS)}")
    sensitivity = meta.get("sensitivity", "private")
    if sensitivity not in SENSITIVITIES:
        raise ValueError(f"sensitivity {sensitivity!r} is not one of {', '.join(SENSITIVITIES)}")
    sources = meta.get("sources") or []
    if not isinstance(sources, list):
        raise ValueError("sources is not a list")
    body = body.strip()
    if not body:
        raise ValueError("the body (the value) is empty")
    return Fact(
        key=key, version=version, type=ftype, body=body, owner=str(meta.get("owner") or ""),
        status=str(meta.get("status") or "current"), supersedes=_text(meta.get("supersedes")),
        valid_from=_text(meta.get("valid_from")) or "", trust=trust, sensitivity=sensitivity,
        sources=tuple(str(s) for s in sources), last_injected=_text(meta.get("last_injected")),
        pinned=bool(meta.get("pinned", False)), path=path,
    )


def _set_status(path: Path, status: str) -> None:
    """Change the `status:` line of a version file, keeping every other byte."""
    text = path.read_text(encoding="utf-8")
    end = text.find("\n---\n", 3)
    head, rest = text[:end], text[end:]
    new_head, n = re.subn(r"(?m)^status:.*$", f"status: {status}", head, count=1)
    if n == 0:
        new_head = head + f"\nstatus: {status}"
    atomic_write(path, (new_head + rest).encode("utf-8"), mode=_file_mode(path))


def _file_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o600


@dataclass(frozen=True)
class KeyVersions:
    """Everything on disk for one key."""

    key: str
    numbers: tuple[int, ...]          # every v<N>.md, parseable or not
    facts: tuple[Fact, ...]           # the parseable ones, oldest first
    problems: tuple[Problem, ...]
    files: tuple[Path, ...] = ()      # the v<N>.md files, in the order of numbers

    @property
    def current(self) -> Fact | None:
        return self.facts[-1] if self.facts else None

    @property
    def next_version(self) -> int:
        return max(self.numbers, default=0) + 1


@dataclass(frozen=True)
class WriteResult:
    fact: Fact
    written: bool
    superseded: Fact | None = None


class FactStore:
    """Reads and writes fact versions; the only place the rule lives."""

    def __init__(self, home: Home, audit: AuditLog, tombstones: Tombstones,
                 owner: str, clock: Callable[[], datetime]):
        self.home = home
        self.root = home.facts
        self.lock_path = home.store_lock
        self.audit = audit
        self.tombstones = tombstones
        self.owner = owner
        self.clock = clock

    def key_dir(self, key: str) -> Path:
        return self.home.fact_dir(validate_key(key))

    def versions(self, key: str) -> KeyVersions:
        d = self.key_dir(key)
        numbers: list[int] = []
        facts: list[Fact] = []
        problems: list[Problem] = []
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            names = []
        for name in names:
            n = version_number(name)
            if n is not None:
                numbers.append(n)
        for n in sorted(numbers):
            path = self.home.fact_file(key, n)
            try:
                facts.append(parse_fact(path, key, n))
            except (ValueError, OSError) as exc:
                problems.append(Problem(path, str(exc)))
        numbers.sort()
        return KeyVersions(key, tuple(numbers), tuple(facts), tuple(problems),
                           tuple(self.home.fact_file(key, n) for n in numbers))

    def current(self, key: str) -> Fact | None:
        return self.versions(key).current

    def keys(self) -> Iterator[str]:
        """Every key with a directory under store/facts (sorted)."""
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if any(version_number(f) is not None for f in filenames):
                rel = Path(dirpath).relative_to(self.root).as_posix()
                out.append(rel)
        return iter(sorted(out))

    def scan(self) -> tuple[list[KeyVersions], list[Problem]]:
        """All keys; problems include files in places no key can be."""
        result: list[KeyVersions] = []
        problems: list[Problem] = []
        for key in self.keys():
            try:
                kv = self.versions(key)
            except BeadError as exc:
                problems.append(Problem(self.root / key, exc.message))
                continue
            result.append(kv)
            problems.extend(kv.problems)
        return result, problems

    def write(self, key: str, body: str, type: str, trust: str = "user_stated",
              sensitivity: str = "private", pinned: bool | None = None,
              sources: tuple[str, ...] = ()) -> WriteResult:
        """Apply the supersession rule: write v<N+1>, then mark v<N> superseded."""
        validate_key(key)
        check_choice("type", type, TYPES)
        check_choice("trust", trust, TRUSTS)
        check_choice("sensitivity", sensitivity, SENSITIVITIES)
        body = (body or "").strip()
        if not body:
            raise BeadError(f"refusing to write an empty value to {key}", "give the fact a value")
        if sensitivity == "secret":
            raise RefusedWrite(
                "secret facts are kept only in the encrypted vault, which this version of bead does not have yet",
                "write it with --sensitivity private, or keep the secret out of bead",
            )
        with flocked(self.lock_path):
            if trust not in PERSON_TRUSTS and self.tombstones.matches(body):
                raise RefusedWrite(
                    f"refusing to write {key}: that value was forgotten or rejected (tombstone)",
                    "only a person can bring it back: write it again with --trust user_stated",
                )
            kv = self.versions(key)
            cur = kv.current
            if cur is not None and cur.body == body and cur.type == type:
                return WriteResult(cur, written=False)
            now = self.clock()
            fact = Fact(
                key=key, version=kv.next_version, type=type, body=body, owner=self.owner,
                status="current", supersedes=cur.id if cur else None, valid_from=iso(now),
                trust=trust, sensitivity=sensitivity, sources=tuple(sources),
                pinned=cur.pinned if (pinned is None and cur) else bool(pinned),
                path=self.home.fact_file(key, kv.next_version),
            )
            atomic_write(_path(fact), fact.render())
            self.audit.record(now, "write", key=key, id=fact.id, trust=trust, type=type)
            # Step two. A crash before it leaves the old file saying `current`;
            # the rule still picks the new one by its number.
            for old in kv.facts:
                if old.status == "current":
                    _mark_superseded(old)
                    self.audit.record(now, "supersede", key=key, id=old.id, by=fact.id)
            return WriteResult(fact, written=True, superseded=cur)

    def set_status(self, fact: Fact, status: str) -> None:
        """Change the status line of one version (the index is the caller's: Memory.set_status)."""
        with flocked(self.lock_path):
            _set_status(_path(fact), status)

    def delete_versions(self, key: str, numbers: list[int]) -> int:
        """Unlink the version files ``v<N>.md`` of ``key`` (forget only; the caller holds the lock).

        Only files named as versions are touched; anything else in the
        folder stays, and the folder is removed only once it is empty.
        """
        deleted = 0
        for n in numbers:
            try:
                self.home.fact_file(key, n).unlink()
                deleted += 1
            except FileNotFoundError:
                pass
        _prune_empty(self.key_dir(key), self.root)
        return deleted


def _path(fact: Fact) -> Path:
    if fact.path is None:
        raise ValueError(f"{fact.id} has no file")
    return fact.path


def _mark_superseded(fact: Fact) -> None:
    _set_status(_path(fact), "superseded")


def _prune_empty(d: Path, stop: Path) -> None:
    while d != stop and d.is_relative_to(stop):
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent

