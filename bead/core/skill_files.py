"""The skill files `bead skills install` wrote, so that forget and seal reach them (bead.core.skills writes them).

A skill file holds its fact's text in the person's project, outside bead's
home. The log (``Home.skills_log``) has a line per write: the file's path,
the project folder, the key and the content's digest. Forget and seal remove
a file only while it is byte for byte what bead wrote: a planted line naming
someone else's file fails the digest, and the path must be
``<folder>/.claude/skills/<name>/SKILL.md`` of the folder it names. A file
changed since (the person's edit) is named, never touched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from .. import files as safe
from .memory import Memory

SKILLS_DIR = (".claude", "skills")
MAX_LOG_BYTES = 4 * 1024 * 1024  # of the log, and of a skill file read back


def skills_dir(project_dir: Path) -> Path:
    return project_dir.joinpath(*SKILLS_DIR)


@dataclass(frozen=True)
class Installed:
    path: Path  # .../.claude/skills/<name>/SKILL.md
    root: Path  # the project folder install wrote it under (the link-safe helpers' root)
    key: str
    sha256: str


def record(mem: Memory, path: Path, root: Path, key: str, data: bytes) -> None:
    line = json.dumps({"path": str(path), "root": str(root), "key": key, "sha256": hashlib.sha256(data).hexdigest()})
    safe.append_line(mem.home.skills_log, line, 0o600, root=mem.home.root)


def _parsed(line: str) -> Installed | None:
    try:
        obj = json.loads(line)
        path, root = Path(obj["path"]), Path(obj["root"])
        key, digest = obj["key"], obj["sha256"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    if not (isinstance(key, str) and isinstance(digest, str) and path.is_absolute() and root.is_absolute()):
        return None
    # Only where install writes: <root>/.claude/skills/<name>/SKILL.md, no `..` anywhere.
    if ".." in path.parts or ".." in root.parts or path.name != "SKILL.md" or path.parent.parent != skills_dir(root):
        return None
    return Installed(path, root, key, digest)


def installed(mem: Memory) -> list[Installed]:
    """The skill files the log names, the last write of each path; lines that are not install's are skipped."""
    try:
        text = safe.read_text(mem.home.skills_log, root=mem.home.root, errors="replace", limit=MAX_LOG_BYTES)
    except FileNotFoundError:
        return []
    except (OSError, safe.UnsafePath):
        return []
    last: dict[Path, Installed] = {}
    for line in safe.lines_of(text):
        if (rec := _parsed(line)) is not None:
            last[rec.path] = rec
    return list(last.values())


def read_installed(rec: Installed) -> str | None:
    """What ``rec``'s file holds now (None: gone, unreadable, a link on the way, not a regular file, too large)."""
    try:
        return safe.read_text(rec.path, root=rec.root, errors="replace", limit=MAX_LOG_BYTES)
    except (OSError, safe.UnsafePath):
        return None


def as_written(rec: Installed, text: str) -> bool:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() == rec.sha256


def remove_installed(mem: Memory, recs: list[Installed], keys: set[str]) -> list[Path]:
    """Delete ``recs``' files (each checked again: still as bead wrote it), their empty folders, and the log's lines
    for them and for ``keys`` (a key's name may hold a forgotten value); the paths removed."""
    gone: list[Path] = []
    for rec in recs:
        text = read_installed(rec)
        if text is None or not as_written(rec, text):
            continue
        try:
            if safe.unlink(rec.path, root=rec.root):
                gone.append(rec.path)
            safe.prune_empty(rec.path.parent, root=rec.root, stop=skills_dir(rec.root))
        except (OSError, safe.UnsafePath):
            continue
    removed = {str(p) for p in gone}

    def edit(line: str) -> str | None:
        rec = _parsed(line)
        return None if rec is None or str(rec.path) in removed or rec.key in keys else line

    try:
        safe.rewrite_lines(mem.home.skills_log, edit, root=mem.home.root)
    except (OSError, safe.UnsafePath):
        pass
    return gone
