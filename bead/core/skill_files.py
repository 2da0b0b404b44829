"""The skill files `bead skills install` wrote, so that forget and seal reach them (bead.core.skills writes them).

A skill file holds its fact's text in the person's project, outside bead's
home. The log (``Home.skills_log``) has a line per write: the file's path,
the project folder, the key and the content's digest. Forget and seal remove
a file only while it is byte for byte what bead wrote, is this user's, and is
one bead made (a ``bead-`` folder whose frontmatter carries the key: a digest
is no secret, so a planted line naming someone else's file must fail that),
at ``<folder>/.claude/skills/<name>/SKILL.md`` of the folder it names. A file
changed since (the person's edit) is named, never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import files as safe
from ..store.facts import split_frontmatter
from .memory import Memory

SKILLS_DIR = (".claude", "skills")
MAX_LOG_BYTES = 16 * 1024 * 1024  # of the log, and of a skill file read back


def skills_dir(project_dir: Path) -> Path:
    return project_dir.joinpath(*SKILLS_DIR)


@dataclass(frozen=True)
class Installed:
    path: Path  # .../.claude/skills/<name>/SKILL.md
    root: Path  # the project folder install wrote it under (the link-safe helpers' root)
    key: str
    sha256: str  # of what install wrote (or found there as it would write it)


_READ_ERRORS = (OSError, ValueError, safe.UnsafePath)


def _usable(text: str) -> bool:
    """A path bead can name to the system: no NUL, and every character encodable (a lone surrogate is not)."""
    try:
        os.fsencode(text)
    except UnicodeError:
        return False
    return "\x00" not in text


def _parsed(line: str) -> Installed | None:
    try:
        obj = json.loads(line)
        path_text, root_text, key, digest = obj["path"], obj["root"], obj["key"], obj["sha256"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    if not all(isinstance(v, str) for v in (path_text, root_text, key, digest)):
        return None
    if not (_usable(path_text) and _usable(root_text)):
        return None
    path, root = Path(path_text), Path(root_text)
    # Only where install writes: <root>/.claude/skills/<name>/SKILL.md, absolute, no `..` anywhere.
    if not (path.is_absolute() and root.is_absolute()) or ".." in path.parts or ".." in root.parts:
        return None
    if path.name != "SKILL.md" or path.parent.parent != skills_dir(root):
        return None
    return Installed(path, root, key, digest)


def _bead_name(folder: str) -> bool:
    """Every skill install writes is named ``bead`` or ``bead-...`` (bead.core.skills.skill_name)."""
    return folder == "bead" or folder.startswith("bead-")


MAX_SKILL_BYTES = 1024 * 1024  # of a skill file bead wrote: its fact's value (at most max_fact_bytes) and a few lines


def made_by_bead(rec: Installed, data: bytes) -> bool:
    """Whether ``data`` is a skill install wrote from ``rec.key``: its frontmatter names the folder and carries the
    key in bead's metadata. A log line anyone can write (its digest is of a file they can read) then names only a
    file of bead's own making, never a person's own skill elsewhere."""
    if len(data) > MAX_SKILL_BYTES or not _bead_name(rec.path.parent.name):
        return False
    try:
        meta, _body = split_frontmatter(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    md = meta.get("metadata")
    return meta.get("name") == rec.path.parent.name and isinstance(md, dict) and md.get("bead_key") == rec.key


def digests(mem: Memory) -> dict[Path, set[str]]:
    """Every digest the log has for each path: what bead wrote there at one time or another (a file that is one of
    them holds no edit of the person's)."""
    try:
        text = safe.read_text(mem.home.skills_log, root=mem.home.root, errors="replace", limit=MAX_LOG_BYTES)
    except _READ_ERRORS:
        return {}
    out: dict[Path, set[str]] = {}
    for line in safe.lines_of(text):
        if (rec := _parsed(line)) is not None:
            out.setdefault(rec.path, set()).add(rec.sha256)
    return out


MAX_BACKUPS = 100


def backup_names(path: Path) -> list[Path]:
    """Where ``install --force`` keeps what a skill file held, in the order it uses them: ``SKILL.md.bak``, then
    ``SKILL.md.bak.2`` and on (an earlier backup, a person's edit, is never written over)."""
    return [path.with_name(path.name + ".bak"), *(path.with_name(f"{path.name}.bak.{n}") for n in range(2, MAX_BACKUPS + 1))]


def installed(mem: Memory) -> tuple[list[Installed], str | None]:
    """The skill files the log names (the last line of each path; lines that are not install's are skipped), and why
    the log could not be read, if it could not."""
    try:
        text = safe.read_text(mem.home.skills_log, root=mem.home.root, errors="replace", limit=MAX_LOG_BYTES)
    except FileNotFoundError:
        return [], None
    except _READ_ERRORS as exc:
        return [], f"{mem.home.skills_log} could not be read ({exc}), so the skill files install wrote were not looked at"
    last: dict[Path, Installed] = {}
    for line in safe.lines_of(text):
        if (rec := _parsed(line)) is not None:
            last[rec.path] = rec
    return list(last.values()), None


def record(mem: Memory, skills: list[tuple[Path, Path, str, bytes]]) -> None:
    """Note each (path, project folder, key, content) install writes or finds as it would write it, before it
    writes (a log it cannot append to stops install with no file written); a path whose last line says the same
    is not noted again."""
    last = {(r.path, r.key, r.sha256) for r in installed(mem)[0]}
    for path, root, key, data in skills:
        digest = hashlib.sha256(data).hexdigest()
        if (path, key, digest) not in last:
            line = json.dumps({"path": str(path), "root": str(root), "key": key, "sha256": digest})
            safe.append_line(mem.home.skills_log, line, 0o600, root=mem.home.root)


def read_installed(rec: Installed) -> tuple[bytes | None, str | None]:
    """What ``rec``'s file holds now, or None and why (None and None: it is gone)."""
    try:
        return safe.read_bytes(rec.path, root=rec.root, limit=MAX_LOG_BYTES), None
    except FileNotFoundError:
        return None, None
    except _READ_ERRORS as exc:
        return None, str(exc) or type(exc).__name__


def temps_beside(rec: Installed) -> list[Path]:
    """Temp files of an install of ``rec``'s file that never got to its rename (a killed `bead skills install`):
    each holds what the file was to hold."""
    try:
        with safe.opened_dir(rec.root, rec.path.parent) as d:
            names = os.listdir(d)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [rec.path.with_name(n) for n in sorted(names) if safe.temp_of(n) == rec.path.name]


def as_written(rec: Installed, data: bytes) -> bool:
    return hashlib.sha256(data).hexdigest() == rec.sha256


def _remove(rec: Installed) -> bool:
    """Unlink ``rec``'s file if it is still what install wrote: checked and unlinked in one folder descriptor, and
    only if the name leads to the same file before and after it was read (an editor's save in between keeps the
    edit)."""
    with safe.opened_dir(rec.root, rec.path.parent) as d:
        before = os.stat(rec.path.name, dir_fd=d, follow_symlinks=False)
        if before.st_uid != os.getuid():
            return False  # not this user's file: bead wrote none such
        if not as_written(rec, safe.read_at(d, rec.path, MAX_LOG_BYTES)):
            return False
        now = os.stat(rec.path.name, dir_fd=d, follow_symlinks=False)
        if (now.st_ino, now.st_dev, now.st_mtime_ns) != (before.st_ino, before.st_dev, before.st_mtime_ns):
            return False
        os.unlink(rec.path.name, dir_fd=d)
        return True


def remove_installed(mem: Memory, recs: list[Installed], keys: set[str]) -> tuple[list[Path], list[Path], str | None]:
    """Delete ``recs``' files (each checked again: still as bead wrote it), their empty folders, and the log's lines
    for them and for ``keys`` (a key's name may hold a forgotten value); the paths removed, and those left (changed
    since the plan read them, or no longer readable), which the person is told of, and why the log could not be
    rewritten, if it could not (a forget goes on: the rest of it matters more than the log)."""
    gone: list[Path] = []
    left: list[Path] = []
    for rec in recs:
        try:
            if _remove(rec):
                gone.append(rec.path)
                safe.prune_empty(rec.path.parent, root=rec.root, stop=skills_dir(rec.root))
            else:
                left.append(rec.path)
        except FileNotFoundError:
            continue  # removed meanwhile: nothing of it is left
        except _READ_ERRORS:
            left.append(rec.path)
    removed = {str(p) for p in gone}

    def edit(line: str) -> str | None:
        rec = _parsed(line)
        return None if rec is None or str(rec.path) in removed or rec.key in keys else line

    try:
        safe.rewrite_lines(mem.home.skills_log, edit, root=mem.home.root)
    except _READ_ERRORS as exc:
        return gone, left, f"{mem.home.skills_log} could not be rewritten ({exc}); remove its lines for these keys"
    return gone, left, None
