"""Fact versions and the one supersession rule.

One Markdown file per version, ``store/facts/<key>/v<N>.md``. The current
version of a key is the parseable file with the highest version number; the
``status`` field is written for readers, the rule never reads it.

A write costs the same at the 10th version and the 10,000th: the next number
comes from the folder's names, the current version is the highest one that
parses (normally the first file read), and a small per-key state
(``.state.json``: the last number given out, and up to which number older
versions are already marked superseded) means only the versions written
since the last settled write are read again, which after a crash between
the two steps of a write is what heals their status.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from .. import files as safe
from .. import yamlsafe
from ..display import plain_words
from ..errors import BeadError, KeySealed, RefusedWrite
from ..paths import FACT_STATE, MAX_VERSION, Home, sealed_number, version_number
from ..textform import invisible
from .audit import AuditLog, Tombstones, iso
from .keys import PERSON_TRUSTS, SENSITIVITIES, TRUSTS, TYPES, check_choice, check_new_key, scope_of, validate_key
from .locks import flocked


@dataclass(frozen=True)
class FieldSpec:
    """One field of a fact's frontmatter."""

    name: str
    index: int | None = None  # its place among the index's fact columns (None: not a column)
    integer: bool = False  # an INTEGER column (else TEXT)
    optional: bool = False  # written only when set (a fact without it keeps the bytes it had before it existed)


# The one declaration of a fact's fields, in the order the frontmatter is written (the body follows it). ``Fact``
# has an attribute for each (``id`` is derived from key and version); the index's fact columns, in ``index``
# order, and its schema follow from it (bead.index.db: a changed column list rebuilds an old index by itself).
# A new field: a line here, the attribute on ``Fact``, its reading in ``parse_fact``, and the keyword on the
# writers that set it (``FactStore.write``, ``Memory.write``). docs/design.md, "A new fact field".
FACT_FIELDS = (
    FieldSpec("id", index=0),
    FieldSpec("key", index=1),
    FieldSpec("type", index=3),
    FieldSpec("owner", index=5),
    FieldSpec("status", index=6),
    FieldSpec("version", index=2, integer=True),
    FieldSpec("supersedes"),
    FieldSpec("valid_from", index=9),
    FieldSpec("trust", index=4),
    FieldSpec("sensitivity", index=7),
    FieldSpec("sources"),
    FieldSpec("last_injected"),
    FieldSpec("pinned", index=8, integer=True),
    FieldSpec("title", index=10, optional=True),
)
FIELDS = tuple(f.name for f in FACT_FIELDS)
OPTIONAL_FIELDS = frozenset(f.name for f in FACT_FIELDS if f.optional)
INDEXED_FIELDS = tuple(sorted((f for f in FACT_FIELDS if f.index is not None), key=lambda f: f.index or 0))
TITLE_MAX_WORDS = 8
CLOCK_AHEAD = timedelta(days=1)  # how far ahead of this one another writer's clock may have run
_ISO_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # iso()'s form, as bead writes valid_from
TITLE_MAX_CHARS = 80


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
    title: str | None = None  # a short name (at most TITLE_MAX_WORDS words): the person's or the dream's
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
            if value is None and name in OPTIONAL_FIELDS:
                continue
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def render(self) -> bytes:
        front = yaml.dump(
            self.frontmatter(), Dumper=yamlsafe.Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
        )
        return f"---\n{front}---\n{self.body}\n".encode()

    def as_dict(self) -> dict[str, Any]:
        return {**self.frontmatter(), "body": self.body, "path": str(self.path) if self.path else None}


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        try:
            return iso(value)
        except OverflowError:  # year 1 an hour east of UTC, year 9999 an hour west: no UTC time to write
            raise ValueError(f"the time {value.isoformat()} is out of range") from None
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
        meta = yamlsafe.load_plain(text[4 : end + 1])
    except yamlsafe.Error as exc:
        raise ValueError(f"frontmatter is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(meta, dict):
        raise ValueError("frontmatter is not a mapping")
    body = text[end + 5 :]
    return meta, body


MAX_FRONTMATTER_BYTES = 64 * 1024  # a version file's frontmatter is a few hundred bytes; room for long source lists
LINK_REASON = "is a symbolic link; bead never reads through links below its home"
NOT_A_FILE_REASON = "is not a regular file (a FIFO, a socket or a device); bead reads only files here"
HARD_LINK_REASON = "is a hard link; bead neither reads nor writes one (`bead status --fix` gives it a copy of its own)"


def parse_fact(path: Path, key: str, version: int, data: bytes | None = None) -> Fact:
    """Parse one version file (``data``, or read from ``path``); ValueError says why it cannot be used."""
    try:
        text = (path.read_bytes() if data is None else data).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    meta, body = split_frontmatter(text)
    if meta.get("key") != key:
        raise ValueError(f"frontmatter key {meta.get('key')!r} does not match its directory ({key})")
    if type(meta.get("version")) is not int or meta.get("version") != version:  # true and 1.0 are no version 1
        raise ValueError(f"frontmatter version {meta.get('version')!r} does not match its file name (v{version})")
    pinned = meta.get("pinned", False)
    if pinned is None or (type(pinned) is int and pinned in (0, 1)):
        pinned = bool(pinned)  # an empty value, 0 or 1: as a person means them
    if not isinstance(pinned, bool):  # "false" or "no" would read as true: pinned into every conversation
        raise ValueError(f"pinned {pinned!r} is not true or false")
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
        key=key,
        version=version,
        type=ftype,
        body=body,
        owner=str(meta.get("owner") or ""),
        status=str(meta.get("status") or "current"),
        supersedes=_text(meta.get("supersedes")),
        valid_from=_text(meta.get("valid_from")) or "",
        trust=trust,
        sensitivity=sensitivity,
        sources=tuple(str(s) for s in sources),
        last_injected=_text(meta.get("last_injected")),
        pinned=pinned,
        title=stored_title(meta.get("title")),
        path=path,
    )


def stored_title(value: object) -> str | None:
    """A title as read from a file or a model: one line of visible words, at most TITLE_MAX_WORDS of them
    (a longer one is cut, not refused: the value is what matters); None when it is not text or is empty."""
    if not isinstance(value, str):
        return None
    return " ".join(plain_words(value[: TITLE_MAX_CHARS * 4])[:TITLE_MAX_WORDS])[:TITLE_MAX_CHARS] or None


def check_title(key: str, title: str | None) -> str | None:
    """A title given on a write: one short line of visible words, or a clear error that says what to do."""
    if title is None:
        return None
    hidden = invisible(title) + (["a line break"] if any(c in title for c in "\n\r") else [])
    if hidden:
        raise BeadError(
            f"refusing the title of {key}: it holds a control, line-break or invisible character ({', '.join(hidden[:3])})",
            "give a title of plain words on one line",
        )
    words = title.split()
    if not words:
        return None
    if len(words) > TITLE_MAX_WORDS or len(" ".join(words)) > TITLE_MAX_CHARS:
        raise BeadError(
            f"refusing the title of {key}: a title has at most {TITLE_MAX_WORDS} words and {TITLE_MAX_CHARS} characters",
            "shorten it: the title only names the fact; the value holds the rest",
        )
    return " ".join(words)


def is_version_of(data: bytes, key: str, version: int) -> bool:
    """Whether a file's frontmatter says it is version ``version`` of ``key`` (forget deletes nothing else).

    Looser than ``parse_fact``: a version with a bad type or an empty body is
    still that key's version, and holds its value.
    """
    try:
        meta, _body = split_frontmatter(data.decode("utf-8", errors="replace"))
    except ValueError:
        return False
    return meta.get("key") == key and meta.get("version") == version


def _with_status(data: bytes, status: str) -> bytes:
    """A version file's bytes with its `status:` line changed, every other byte kept."""
    return _with_field(data, "status", status)


def _says_pinned(data: bytes) -> bool:
    """Whether a version file's frontmatter says `pinned: true`."""
    text = data.decode("utf-8", errors="replace")
    head = text[: text.find("\n---\n", 3)]
    return re.search(r"(?m)^pinned:[ \t]*true[ \t]*$", head) is not None


def _with_field(data: bytes, name: str, value: str) -> bytes:
    """A version file's bytes with one top-level frontmatter line (`name: value`) changed, every other byte kept."""
    text = data.decode("utf-8")
    end = text.find("\n---\n", 3)
    head, rest = text[:end], text[end:]
    new_head, n = re.subn(rf"(?m)^{re.escape(name)}:.*$", f"{name}: {value}", head, count=1)
    if n == 0:
        new_head = head + f"\n{name}: {value}"
    return (new_head + rest).encode("utf-8")


@dataclass(frozen=True)
class KeyVersions:
    """Everything on disk for one key."""

    key: str
    numbers: tuple[int, ...]  # every v<N>.md, parseable or not
    facts: tuple[Fact, ...]  # the parseable ones, oldest first
    problems: tuple[Problem, ...]
    files: tuple[Path, ...] = ()  # the v<N>.md files, in the order of numbers

    @property
    def current(self) -> Fact | None:
        """The newest version bead can read: what a write checks against (a person's word, a compare-and-swap).
        What is served is ``served``."""
        return self.facts[-1] if self.facts else None

    @property
    def unreadable(self) -> Problem | None:
        """The problem of the highest-numbered version file, when bead cannot read it (hand-edited into YAML
        that does not parse, a link, a file too large)."""
        if not self.numbers or (self.facts and self.facts[-1].version == self.numbers[-1]):
            return None
        top = self.files[-1] if self.files else None
        found = next((p for p in self.problems if p.path == top), None)
        return found or Problem(top or Path(self.key), "cannot be read")

    @property
    def served(self) -> Fact | None:
        """The version every read serves: the highest-numbered one, or none while that file cannot be read.
        The supersession rule picks the highest number; serving the version below it would serve a value the
        person replaced, so the key is withheld (from the index's current rows, recall, the pinned block and
        reads) until the file is mended or a new version is written above it."""
        return None if self.unreadable is not None else self.current

    @property
    def next_version(self) -> int:
        return max(self.numbers, default=0) + 1


@dataclass(frozen=True)
class WriteResult:
    fact: Fact
    written: bool
    superseded: Fact | None = None
    marked: tuple[Fact, ...] = ()  # older versions whose status this write changed (as they are now)
    indexed: bool = True  # False: the file is written, the index catches up later
    sealed: bool = False  # the version went to the vault, encrypted (a secret write)
    redacted: int = 0  # a secret write: raw turns that held the value, now [forgotten]
    # A secret write: the skill files `bead skills install` wrote from the old value that it removed, and those it
    # left (changed since, or unreadable), and why the install log could not be read (bead.core.skill_files).
    skill_files: tuple[str, ...] = ()
    skill_files_left: tuple[str, ...] = ()
    skill_files_unread: str | None = None
    also_in: tuple[str, ...] = ()  # a secret write: other facts that hold the value in clear (left as they are)
    raw_files_unread: tuple[str, ...] = ()  # a secret write: raw files it could not read, which may hold the value
    # The person's write of a new key: keys that look like it and that only an agent or the dream wrote.
    lookalikes: tuple[str, ...] = ()
    # What went wrong after the version's file was in place (the write happened; what it left is said, not hidden).
    undone: str = ""


@dataclass
class _KeyState:
    """``.state.json`` of a key: a hint that saves reading the folder, never the rule itself.

    A write that finds the folder as the key's last write left it (the same
    modification time: no file was added, renamed or removed since) takes
    the highest number from ``last`` and reads only the versions after
    ``settled``; anything else, or a state that is missing or torn, lists
    and reads the folder as the rule does. The file is rewritten in place,
    not renamed, so writing it leaves the folder's time alone.

    A folder's time has the clock's tick as resolution (a few milliseconds),
    so a file dropped into the folder by hand in the same tick as a bead
    write could go unseen; every 64th write lists the folder anyway, which
    bounds that to a few writes, and readers always list.
    """

    last: int = 0  # the highest version number given out (a forgotten number is not reused)
    settled: int = 0  # every version up to this one has had its status settled by a write
    dir_mtime_ns: int = 0  # the key folder's modification time when this was written

    @classmethod
    def load(cls, dir_fd: int, path: Path) -> _KeyState:
        try:
            data = json.loads(safe.read_at(dir_fd, path))
            state = cls(int(data.get("last", 0)), int(data.get("settled", 0)), int(data.get("dir_mtime_ns", 0)))
            # A last number at or past the highest a version's file name carries is no hint bead wrote (a hand edit,
            # damage): the folder is listed instead. Taken as given, it made every later write a file no reader sees.
            return state if 0 <= state.settled <= state.last < MAX_VERSION else cls()
        except (OSError, ValueError, TypeError, AttributeError, OverflowError):  # `1e999` is inf: int() overflows
            return cls()  # missing or damaged: list and read the folder, as the rule does

    def save(self, dir_fd: int, path: Path) -> None:
        # Not fsynced after a write: losing it costs one slower write, never a wrong answer, since the folder still
        # names the highest number (``keep`` is the forget's, which must not be lost).
        fd = safe.open_at(dir_fd, path, os.O_RDWR | os.O_CREAT)
        try:
            self.dir_mtime_ns = os.fstat(dir_fd).st_mtime_ns  # after the create above; content writes keep it
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"last": self.last, "settled": self.settled, "dir_mtime_ns": self.dir_mtime_ns}).encode(), 0)
        finally:
            os.close(fd)

    def keep(self, dir_fd: int, path: Path) -> None:
        """Write the state so that it survives a crash or a full disk whole: before a forget deletes the newest
        versions, it is the only record of their numbers. Replaced atomically (temp file, fsync, rename), so a
        failure leaves the old state and raises; its folder time is not recorded (the rename changes it), so the
        next write lists the folder once."""
        self.dir_mtime_ns = 0
        data = json.dumps({"last": self.last, "settled": self.settled, "dir_mtime_ns": 0}).encode()
        safe.write_at(dir_fd, path, data)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


_STATE = Path(FACT_STATE)
# A folder of store/facts the process may not open or list (its mode): the facts in it are not served, and were
# passed over without a word (an outside attack).
UNREADABLE_FOLDER = "cannot be read (its mode): no fact in it is served or searched until it can be"
# A key's state that is no file (a folder, a link, a FIFO placed there): every write of the key ends with a step left.
STATE_NOT_A_FILE = "is not a file: it should be bead's small state of the key; remove it, bead writes it again"


def _behind_in(parent_fd: int, name: str, version: int) -> bool:
    """FactStore.behind for one key folder ``name`` of the folder ``parent_fd``."""
    try:
        fd = safe.open_dir_at(parent_fd, name)
    except (FileNotFoundError, safe.UnsafePath):
        return True
    except OSError:
        return False
    try:
        if not _exists(fd, f"v{version}.md") or _exists(fd, f"v{version + 1}.md"):
            return True
        # Any higher number, not only the next: forgotten numbers are never given out again, so after `forget KEY@v2`
        # the next write is v3 and a v1 the index still calls current sits below a gap (an outside attack). The
        # key's state answers without a listing where the folder is as bead's last write left it (a key of 10,000
        # versions is not listed on every request); else (a forget, a file added by hand, no state) the folder is.
        state = _KeyState.load(fd, _STATE)
        if state.dir_mtime_ns and state.dir_mtime_ns == os.fstat(fd).st_mtime_ns and state.last <= version:
            return False
        return any((n := version_number(name)) is not None and n > version for name in os.listdir(fd))
    except OSError:
        return False
    finally:
        os.close(fd)


def _folder_exists(root: Path, folder: Path) -> bool:
    try:
        with safe.opened_dir(root, folder):
            return True
    except FileNotFoundError:
        return False


# A state whose `settled` lags `last` by more than this lists the folder instead of probing each number.
_MAX_PROBES = 64
# Every this many writes to a key list its folder whatever the state says.
_RELIST_EVERY = 64


class FactStore:
    """Reads and writes fact versions; the only place the rule lives."""

    def __init__(
        self,
        home: Home,
        audit: AuditLog,
        tombstones: Tombstones,
        owner: str,
        clock: Callable[[], datetime],
        max_bytes: int = 65536,
        sealed: Callable[[str], bool] | None = None,
    ):
        self.home = home
        # Whether a key has sealed versions (the vault's): a plaintext write to one is refused under the lock.
        self.sealed = sealed
        self.root = home.facts
        self.lock_path = home.store_lock
        self.audit = audit
        self.tombstones = tombstones
        self.owner = owner
        self.clock = clock
        self.max_bytes = max_bytes

    def key_dir(self, key: str) -> Path:
        return self.home.fact_dir(validate_key(key))

    def behind(self, rows: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """Of (key, version) pairs an index calls current, those behind the files, whose value serving would serve
        one the person replaced or removed: the key's folder holds a version above it (a write whose index update
        met a locked index, a file written by hand or copied in while no indexer ran), or no longer holds
        ``v<version>.md`` (a forget or seal stopped before its index step). Each folder holding keys is opened once
        (without following a link); then, a key, its folder (no link either) and a stat of the two names: a newer
        version is the next number unless one between was forgotten since. A key folder gone or that is a link
        counts as behind (no reader takes a version there); one that cannot be opened for another reason (too many
        open files) does not: the index's word stands."""
        by_parent: dict[Path, list[tuple[str, int, str]]] = {}
        for key, version in rows:
            try:
                d = self.key_dir(key)
            except BeadError:
                continue  # no key's shape: no folder of the store
            by_parent.setdefault(d.parent, []).append((key, version, d.name))
        out: set[tuple[str, int]] = set()
        for parent, named in by_parent.items():
            try:
                with safe.opened_dir(self.home.root, parent) as pfd:
                    out.update((key, version) for key, version, name in named if _behind_in(pfd, name, version))
            except (FileNotFoundError, safe.UnsafePath):
                out.update((key, version) for key, version, _name in named)
            except OSError:
                pass
        return out

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """The store's lock: every writer of fact files holds it (forget too)."""
        return flocked(self.lock_path, root=self.home.root)

    def _read(self, dir_fd: int, key: str, n: int) -> Fact:
        path = self.home.fact_file(key, n)
        try:
            # A version file is a value of at most max_bytes and its frontmatter: one far larger (a hand-placed
            # 100 MB file) is not read into memory, and is a problem, never the current value.
            limit = max(4 * self.max_bytes, 1 << 20) + MAX_FRONTMATTER_BYTES
            data = safe.read_at(dir_fd, path, limit=limit)
        except safe.UnsafePath as exc:
            if isinstance(exc, safe.NotAFile):
                raise ValueError(NOT_A_FILE_REASON) from None
            raise ValueError(HARD_LINK_REASON if isinstance(exc, safe.HardLink) else LINK_REASON) from None
        except safe.TooLarge:
            # Its size only: the reason reaches an agent (get_memory's error), and the home's path is not its business.
            raise ValueError(f"more than the {limit:,} bytes bead reads of a version file") from None
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise ValueError(exc.strerror or str(exc)) from None
        return parse_fact(path, key, n, data)

    def versions(self, key: str) -> KeyVersions:
        d = self.key_dir(key)
        numbers: list[int] = []
        facts: list[Fact] = []
        problems: list[Problem] = []
        try:
            with safe.opened_dir(self.home.root, d) as fd:
                names = os.listdir(fd)
                listed = sorted(n for name in names if (n := version_number(name)) is not None)
                for n in listed:
                    try:
                        facts.append(self._read(fd, key, n))
                    except FileNotFoundError:
                        continue  # removed since the listing (a forget of that version): no version, no problem
                    except ValueError as exc:
                        problems.append(Problem(self.home.fact_file(key, n), str(exc)))
                    numbers.append(n)
                problems += [Problem(d / name, ODD_VERSION_NAME) for name in sorted(names) if _odd_version_name(name)]
                if FACT_STATE in names and not stat.S_ISREG(os.stat(FACT_STATE, dir_fd=fd, follow_symlinks=False).st_mode):
                    problems.append(Problem(d / FACT_STATE, STATE_NOT_A_FILE))
        except FileNotFoundError:
            pass
        return KeyVersions(
            key, tuple(numbers), tuple(facts), tuple(problems), tuple(self.home.fact_file(key, n) for n in numbers)
        )

    def current(self, key: str) -> Fact | None:
        return self.versions(key).current

    def keys(self, links: list[Path] | None = None, unreadable: list[Path] | None = None) -> Iterator[str]:
        """Every key with a version file under store/facts (sorted); links found are added to ``links``, folders
        the process may not read to ``unreadable``."""
        out = []
        for folder, _dirs, names in safe.walk(self.root, root=self.home.root, links=links, unreadable=unreadable):
            if any(version_number(f) is not None for f in names):
                out.append(folder.relative_to(self.root).as_posix())
        return iter(sorted(out))

    def scan(self) -> tuple[list[KeyVersions], list[Problem]]:
        """All keys; problems include files in places no key can be, and links."""
        result: list[KeyVersions] = []
        problems: list[Problem] = []
        links: list[Path] = []
        unreadable: list[Path] = []
        for key in self.keys(links, unreadable):
            try:
                kv = self.versions(key)
            except BeadError as exc:
                problems.append(Problem(self.root / key, exc.message))
                continue
            result.append(kv)
            problems.extend(kv.problems)
        for link in links:
            if version_number(link.name) is None:  # a linked version file is already a problem of its key
                problems.append(Problem(link, LINK_REASON))
        problems += [Problem(folder, UNREADABLE_FOLDER) for folder in unreadable]
        return result, problems

    def check_writable_key(self, key: str) -> str:
        """``key`` well formed, and canonical where it is new (``check_new_key``): an old key stays writable
        whatever it ends with."""
        validate_key(key)
        if not _folder_exists(self.home.root, self.home.fact_dir(key)):
            check_new_key(key)
        return key

    def check_body(self, key: str, body: str) -> str:
        body = (body or "").strip()
        if not body:
            raise BeadError(f"refusing to write an empty value to {key}", "give the fact a value")
        size = len(body.encode("utf-8"))
        if size > self.max_bytes:
            raise BeadError(
                f"refusing to write {key}: the value is {size:,} bytes, over the limit of {self.max_bytes:,} "
                "(store.max_fact_bytes)",
                "store a short fact that points to the file or document instead, or raise store.max_fact_bytes in config.yaml",
            )
        return body

    def write(
        self,
        key: str,
        body: str,
        type: str,
        trust: str = "user_stated",
        sensitivity: str = "private",
        pinned: bool | None = None,
        sources: tuple[str, ...] = (),
        owner: str | None = None,
        check: Callable[[Fact | None], None] | None = None,
        title: str | None = None,
    ) -> WriteResult:
        """Apply the supersession rule: write v<N+1>, then mark v<N> superseded.

        ``owner`` is written on the version (default: the home's owner; a team
        host writes each member's name). ``check`` sees the key's current
        version under the store's lock, before anything is written, and may
        raise to refuse the write (a compare-and-swap, a person's word that an
        agent may not change); nothing can change the key between it and the write.
        """
        self.check_writable_key(key)
        check_choice("type", type, TYPES)
        check_choice("trust", trust, TRUSTS)
        check_choice("sensitivity", sensitivity, SENSITIVITIES)
        body = self.check_body(key, body)
        title = check_title(key, title)
        if sensitivity == "secret":
            # Memory.write sends a secret to the vault; this store never holds one in plain text.
            raise RefusedWrite(
                f"refusing to write {key} in plain text: a secret is kept only in the vault, encrypted",
                "write it through Memory.write (`bead write --sensitivity secret`), which seals it",
            )
        with self.lock():
            if self.sealed is not None and self.sealed(key):
                raise KeySealed(key)
            if check is not None and not _folder_exists(self.home.root, self.home.fact_dir(key)):
                check(None)  # a new key: refused before its folder is made
                check = None
            if check is None:
                self._tombstone_check(key, body, trust, title)
            else:
                # The caller's check first (a compare-and-swap that fails writes nothing and says nothing of the
                # value): checked before it, a tombstone's refusal of a write that was never to happen answered
                # whether a guess was a forgotten value, 150 guesses a call (an outside attack).
                outer = check

                def check(cur: Fact | None) -> None:
                    outer(cur)
                    self._tombstone_check(key, body, trust, title)

            with safe.opened_dir(self.home.root, self.home.fact_dir(key), create=True) as fd:
                return self._write_in(fd, key, body, type, trust, sensitivity, pinned, sources, owner or self.owner, check, title)

    def _tombstone_check(self, key: str, body: str, trust: str, title: str | None) -> None:
        if trust not in PERSON_TRUSTS and self.tombstones.refuses(body, key, title):
            raise RefusedWrite(
                f"refusing to write {key}: that value was forgotten or rejected (tombstone)",
                "only a person can bring it back: write it again with --trust user_stated",
            )

    def _recent(self, fd: int, key: str, state: _KeyState) -> list[int] | None:
        """The version numbers after ``settled`` when the folder is as the last write left it, else None."""
        if (
            state.last <= 0
            or state.last % _RELIST_EVERY == 0
            or state.dir_mtime_ns != os.fstat(fd).st_mtime_ns
            or state.last - state.settled > _MAX_PROBES
            or _exists(fd, self.home.fact_file(key, state.last + 1).name)
        ):
            return None
        return [n for n in range(max(state.settled, 0) + 1, state.last + 1) if _exists(fd, self.home.fact_file(key, n).name)]

    def _current(self, fd: int, key: str, numbers: list[int], parsed: dict[int, Fact]) -> Fact | None:
        """The rule: the current version is the highest one that parses."""
        for n in reversed(numbers):
            try:
                parsed[n] = self._read(fd, key, n)
                return parsed[n]
            except (ValueError, FileNotFoundError):
                continue
        return None

    def _write_in(
        self,
        fd: int,
        key: str,
        body: str,
        type: str,
        trust: str,
        sensitivity: str,
        pinned: bool | None,
        sources: tuple[str, ...],
        owner: str,
        check: Callable[[Fact | None], None] | None,
        title: str | None = None,
    ) -> WriteResult:
        state_path = self.home.fact_state(key)
        state = _KeyState.load(fd, state_path)
        parsed: dict[int, Fact] = {}
        recent = self._recent(fd, key, state)
        cur = self._current(fd, key, recent, parsed) if recent else None
        if cur is not None:
            numbers = recent or []
        else:
            # Listing a folder of 10,000 versions costs more than the rest of
            # a write; it happens when the state cannot vouch for the folder.
            numbers = sorted(n for name in os.listdir(fd) if (n := version_number(name)) is not None)
            cur = self._current(fd, key, numbers, parsed)
        if check is not None:
            check(cur)
        if trust not in PERSON_TRUSTS and numbers and (cur is None or cur.version != numbers[-1]):
            # The newest file cannot be read: most likely the person's hand edit, so only their word goes above it.
            raise RefusedWrite(
                f"refusing to write {key}: its newest version, v{numbers[-1]}, cannot be read and may be the person's",
                "the person mends that file (`bead status` names it) or writes the value themselves",
            )
        # The person's word on a value bead inferred is news even when the value is the same: it becomes theirs
        # (stated, no longer weighed less, and guarded against an agent's or the dream's replacement).
        upgrade = trust in PERSON_TRUSTS and cur is not None and cur.trust not in PERSON_TRUSTS
        # The same value again writes nothing, unless a version above ``cur`` cannot be read: then nothing of the
        # key is served (KeyVersions.served), and writing it again is how the person mends that.
        same = cur is not None and cur.body == body and cur.type == type and (title is None or title == cur.title)
        if same and not upgrade and cur is not None and cur.version == numbers[-1]:
            return WriteResult(cur, written=False)
        now = self.clock()
        stamp = iso(now)
        if cur is not None and _ISO_STAMP.fullmatch(cur.valid_from) and stamp < cur.valid_from <= iso(now + CLOCK_AHEAD):
            # A version written by a process whose clock ran ahead: the new one is never dated before it, or a block
            # showing both (dated) would call the replaced one the newer. A date further ahead is a hand edit's, not
            # a clock's, and is not carried on.
            stamp = cur.valid_from
        version = max(numbers[-1] if numbers else 0, state.last) + 1
        if version > MAX_VERSION:
            # A file written past it would be no version to any reader: the write lost, the old value served.
            raise BeadError(
                f"{key} has used every version number a file name can carry (v{MAX_VERSION}.md); nothing was written",
                f"look at {self.key_dir(key)} (a version file placed there by hand?); `bead forget {key}` frees the "
                "key, or write the value to another key",
            )
        fact = Fact(
            key=key,
            version=version,
            type=type,
            body=body,
            owner=owner,
            status="current",
            supersedes=cur.id if cur else None,
            valid_from=stamp,
            trust=trust,
            sensitivity=sensitivity,
            sources=tuple(sources),
            pinned=cur.pinned if (pinned is None and cur) else bool(pinned),
            # The same value keeps its title, unless the person now states what bead inferred (a model's title is
            # not their word); a new value gets the one given, or none (derived when shown).
            title=title if title is not None else (cur.title if cur is not None and cur.body == body and not upgrade else None),
            path=self.home.fact_file(key, version),
        )
        self.audit.ready()  # a FIFO or a link at audit.log refuses here, before the version is written
        safe.write_at(fd, _path(fact), fact.render())
        # The file is the commit: what follows failing (a full disk, a folder where the key's state should be) is a
        # write that happened with a step left, as a crash here leaves it, said as such (it was an error, exit 1, for
        # a value written and served: an outside attack).
        marked: list[Fact] = []
        try:
            self.audit.record(now, "write", key=key, id=fact.id, trust=trust, type=type)
            # Step two. A crash before it leaves the old file saying `current`;
            # the rule still picks the new one by its number, and the next write
            # (which starts from `settled`) marks it.
            for n in numbers:
                if n <= state.settled:
                    continue
                try:
                    old = parsed.get(n) or self._read(fd, key, n)
                except (ValueError, FileNotFoundError):
                    continue  # never rewritten
                if old.status == "current":
                    marked.append(_mark_superseded(fd, old))
                    self.audit.record(now, "supersede", key=key, id=old.id, by=fact.id)
            _KeyState(last=version, settled=version - 1).save(fd, state_path)
        except (OSError, BeadError) as exc:
            why = exc.message if isinstance(exc, BeadError) else (exc.strerror or exc.__class__.__name__)
            undone = f"{why}, finishing the write in {self.key_dir(key)} (the audit line, the older version's status)"
            return WriteResult(fact, written=True, superseded=cur, marked=tuple(marked), undone=undone)
        return WriteResult(fact, written=True, superseded=cur, marked=tuple(marked))

    def set_status(self, fact: Fact, status: str, unless_pinned: bool = False) -> bool:
        """Change the status line of one version (the index is the caller's: Memory.set_status); with
        ``unless_pinned``, not if its file says pinned now, read under the lock (False: left as it is). The dream's
        decay read the store at its start: a `bead pin` made during its pass ended dormant and pinned, out of the
        pinned block it was pinned for (an outside attack)."""
        path = _path(fact)
        with self.lock(), safe.opened_dir(self.home.root, path.parent) as fd:
            data = safe.read_at(fd, path)
            if unless_pinned and _says_pinned(data):
                return False
            safe.write_at(fd, path, _with_status(data, status))
            return True

    def set_pinned(self, fact: Fact, pinned: bool) -> None:
        """Change the pinned line of one version, every other byte kept (the index is the caller's). A pin goes
        only on the current version, checked under the lock: a version written since the caller read it (an agent's,
        say) is not what the person decided on, and an older one is not what the pinned block shows."""
        path = _path(fact)
        with self.lock(), safe.opened_dir(self.home.root, path.parent) as fd:
            if pinned:
                latest = max((n for name in os.listdir(fd) if (n := version_number(name)) is not None), default=0)
                if latest != fact.version:
                    raise BeadError(
                        f"not pinned: {fact.key} changed since it was read ({fact.id} then, v{latest} now)",
                        "look at the key again and pin what it says now",
                    )
            safe.write_at(fd, path, _with_field(safe.read_at(fd, path), "pinned", "true" if pinned else "false"))

    def restore(self, key: str, files: dict[int, bytes]) -> list[Path]:
        """Put version files back, byte for byte (unseal; the caller holds the lock and syncs the index)."""
        out = []
        with safe.opened_dir(self.home.root, self.key_dir(key), create=True) as fd:
            for n, data in sorted(files.items()):
                path = self.home.fact_file(key, n)
                safe.write_at(fd, path, data)
                out.append(path)
        return out

    def _keep_numbers(self, fd: int, key: str, numbers: list[int]) -> None:
        """Before a forget deletes versions ``numbers`` of ``key``: the key's state records, whole and synced, the
        highest number given out, so that a forgotten number (and its id, which conversations' records, traces and
        the audit log name) is never given to another value (a write takes the folder's highest number or the
        state's, whichever is higher; a state torn, lost, or an older write's left only the folder to count), and
        the version that will be served afterwards as not settled, so that the next write marks it superseded
        again. Written whenever the newest version goes and another stays (the state on disk may be an unsynced
        write's); a forget of the whole key, or of older versions only, needs none. A disk that refuses it stops
        the forget before any version goes (OSError); a state bead will not read (a link, a FIFO) is replaced by
        the atomic write."""
        try:
            state = _KeyState.load(fd, self.home.fact_state(key))
        except BeadError:  # a link or a FIFO at its name: no state bead reads, and the write below replaces it
            state = _KeyState()
        on_disk = {n for name in os.listdir(fd) if (n := version_number(name)) is not None}
        left = on_disk - set(numbers)
        if not left or max(on_disk, default=0) in left:
            return  # the whole key goes (its state with it), or its newest stays and keeps the number in the folder
        last = max(state.last, max(on_disk), max(numbers))
        served = max(left)  # the newest left: said `current` again after the forget
        settled = min(state.settled, served - 1)
        if last < MAX_VERSION:
            _KeyState(last, settled).keep(fd, self.home.fact_state(key))

    def _mark_newest_current(self, fd: int, key: str) -> None:
        """After a forget of a key's newest versions: the version now served says `current` (it said `superseded`,
        and readers showed the current value so labelled). Only a readable, superseded newest is rewritten; the
        key's state already says it is not settled (_keep_numbers)."""
        numbers = sorted(n for name in os.listdir(fd) if (n := version_number(name)) is not None)
        if not numbers:
            return
        try:
            newest = self._read(fd, key, numbers[-1])
        except (ValueError, FileNotFoundError):
            return
        if newest.status == "superseded":
            path = _path(newest)
            safe.write_at(fd, path, _with_status(safe.read_at(fd, path), "current"), sync_dir=False)

    def delete_versions(self, key: str, numbers: list[int]) -> tuple[int, list[Path]]:
        """Unlink the version files ``v<N>.md`` of ``key`` (forget only; the caller holds the lock).

        A file is deleted only when its name is a version's and its
        frontmatter says it is that version of this key; anything else in the
        folder stays (and is returned), and the folder goes only once empty.
        With the last version go the key's state file and any temp file a
        killed writer left (it may hold a value).
        """
        d = self.key_dir(key)
        deleted = 0
        kept: list[Path] = []
        try:
            with safe.opened_dir(self.home.root, d) as fd:
                going: list[Path] = []  # checked first, so the state knows what stays (a file kept lowers the top)
                for n in numbers:
                    path = self.home.fact_file(key, n)
                    try:
                        data = safe.read_at(fd, path)
                    except FileNotFoundError:
                        continue
                    except (safe.UnsafePath, OSError):
                        kept.append(path)
                        continue
                    if not is_version_of(data, key, n):
                        kept.append(path)
                        continue
                    going.append(path)
                self._keep_numbers(fd, key, [version_number(p.name) or 0 for p in going])
                for path in going:
                    os.unlink(path.name, dir_fd=fd)
                    deleted += 1
                if deleted:
                    self._mark_newest_current(fd, key)
                names = os.listdir(fd)
                if not any(version_number(name) is not None for name in names):
                    for name in names:
                        if name == self.home.fact_state(key).name or (name.endswith(".tmp") and safe.is_orphan_temp(name, 0.0)):
                            os.unlink(name, dir_fd=fd)
                # A file no reader takes for a version (`v02.md`, `v1234567890.md`, notes) may hold the value too:
                # it stays, as anything not the key's is never deleted, and is named (a child key's folder is not).
                kept += [d / name for name in sorted(os.listdir(fd)) if _stray(fd, name, self.home.fact_state(key).name)]
        except FileNotFoundError:
            return 0, []
        safe.prune_empty(d, root=self.home.root, stop=self.root)
        return deleted, kept


ODD_VERSION_NAME = (
    "named like a version but no reader takes it for one (a version is v1.md to v999999999.md, no leading zero); "
    "rename or delete it"
)
_VERSION_SHAPE = re.compile(r"v[0-9]+\.md")


def _odd_version_name(name: str) -> bool:
    return _VERSION_SHAPE.fullmatch(name) is not None and version_number(name) is None


def _stray(dir_fd: int, name: str, state_name: str) -> bool:
    """Whether ``name`` in a key's folder is a file that is neither a version (plain or sealed), nor the key's
    state, nor a write's temp file: something placed there by hand, which forget names and leaves."""
    if name == state_name or name.endswith(".tmp") or version_number(name) is not None or sealed_number(name) is not None:
        return False
    try:
        return not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _mark_superseded(dir_fd: int, fact: Fact) -> Fact:
    """Step two of a write: the older version's file says `superseded`.

    The status is for readers (the rule goes by version numbers) and the next
    write repairs it, so the folder is not fsynced a second time: a crash
    leaves this file as it was, or as it should be, never torn.
    """
    path = _path(fact)
    safe.write_at(dir_fd, path, _with_status(safe.read_at(dir_fd, path), "superseded"), sync_dir=False)
    return dataclasses.replace(fact, status="superseded")


def _path(fact: Fact) -> Path:
    if fact.path is None:
        raise ValueError(f"{fact.id} has no file")
    return fact.path
