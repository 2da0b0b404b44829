"""Agent Skills from memory the person vouches for: `bead skills preview|install`.

A skill file is an instruction a harness loads into an agent's context
whenever its description matches the task, so only what the person stated
or accepted becomes one:

- a pinned ``feedback`` or ``project`` fact whose trust is ``user_stated``
  or ``accepted`` (``PERSON_TRUSTS``), current, of the project or of every
  project (``user/``, ``global/``);
- a lesson the person approved from the review queue (an accepted ``lesson``
  item: from the dream's outcome gate, or written by hand), as its key holds
  it now, if that version is still the person's word.

Facts an agent observed or the dream inferred never do, pinned or not: their
text may come from a tool's output or a web page. The file is
``.claude/skills/<name>/SKILL.md`` in the project, with the frontmatter of
the Agent Skills specification (agentskills.io): ``name`` (1-64 characters,
lower-case letters, digits and single hyphens, not at either end, equal to
the folder's name), ``description`` (1-1024 characters: what it is and when
it applies), and ``metadata``, a map of strings carrying the provenance
(bead key, version id, source session, review item, trust). Nothing else.

Installing is an explicit command: nothing else in bead writes into a
project. An existing file is left alone unless ``force``; files are written
through the link-safe helpers with the project folder as their root, so a
``.claude`` or ``skills`` folder that is a link (a hostile repository's) is
refused, never written through.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import files as safe
from ..display import visible
from ..errors import BeadError
from ..store.facts import split_frontmatter
from ..store.keys import PERSON_TRUSTS
from ..store.queue import Queue
from ..textform import _ignorable
from . import skill_files
from .memory import Memory
from .review import lesson_key, session_of
from .skill_files import skills_dir

MAX_NAME = 64
MAX_DESCRIPTION = 1024
ALLOWED_FIELDS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
RESERVED = ("anthropic", "claude")  # words a skill's name may not hold (Claude's skill rules)
FILE_MODE = 0o644  # a project file, meant to be committed and read by the harness


@dataclass
class Skill:
    name: str
    description: str
    body: str
    metadata: dict[str, str]
    key: str
    status: str = ""  # new | unchanged | differs | written | kept
    path: Path | None = None
    before: str | None = None  # what the file held when it differs (a person's edit, say)
    backup: Path | None = None  # where ``install --force`` kept it
    problems: list[str] = field(default_factory=list)

    def render(self) -> str:
        front = {"name": self.name, "description": self.description, "metadata": self.metadata}
        return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000) + "---\n\n" + self.body

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "metadata": self.metadata,
            "key": self.key,
            "status": self.status,
            "path": str(self.path) if self.path else None,
            "backup": str(self.backup) if self.backup else None,
            "content": self.render(),
        }


def _plain(text: str) -> str:
    """One line of text without control or invisible characters and without angle brackets (a description is
    read as plain text by harnesses; some refuse tags in it)."""
    flat = " ".join(str(text).split())
    flat = "".join(ch for ch in flat if unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co"))
    flat = "".join(ch for ch in flat if ord(ch) < 0x34F or not _ignorable(ord(ch)))  # a later Unicode's format controls
    return flat.replace("<", "(").replace(">", ")")


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def skill_name(key: str, taken: set[str]) -> str:
    """``bead-<the key's last segment>`` in the specification's alphabet, unique among ``taken``."""
    last = key.rsplit("/", 1)[-1].removeprefix("lesson-")
    # A word that holds a reserved one anywhere ("claudes", "anthropics") is left out too: the rule is on the name's
    # letters, and one such key stopped every install.
    words = [w for w in re.findall(r"[a-z0-9]+", last.lower()) if not any(r in w for r in RESERVED)]
    base = "-".join(["bead", *words])[:MAX_NAME].strip("-") or "bead"
    name, n = base, 0
    while name in taken:  # the tagged name may be taken too (a key named so): counted on until it is not
        tag = hashlib.sha256(f"{key}\x00{n}".encode() if n else key.encode()).hexdigest()[:8]
        name = f"{base[: MAX_NAME - 9].strip('-')}-{tag}"
        n += 1
    return name


def validate(text: str, folder: str) -> list[str]:
    """What makes ``text`` (a SKILL.md) break the Agent Skills specification's frontmatter rules; [] when valid."""
    try:
        meta, _body = split_frontmatter(text)
    except ValueError as exc:
        return [f"frontmatter: {exc}"]
    errors = [f"unexpected field {k!r}" for k in sorted(set(meta) - ALLOWED_FIELDS)]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append("name is missing")
    else:
        if len(name) > MAX_NAME:
            errors.append(f"name is over {MAX_NAME} characters")
        if not NAME.fullmatch(name):
            errors.append("name must be lower-case letters, digits and single hyphens, not at either end")
        if name != folder:
            errors.append(f"name {name!r} is not the folder's name {folder!r}")
        if any(w in name for w in RESERVED):
            errors.append("name holds a reserved word")
    desc = meta.get("description")
    if not isinstance(desc, str) or not desc.strip():
        errors.append("description is missing")
    elif len(desc) > MAX_DESCRIPTION:
        errors.append(f"description is over {MAX_DESCRIPTION} characters")
    elif "<" in desc or ">" in desc:
        errors.append("description holds angle brackets")
    md = meta.get("metadata")
    if md is not None and not (isinstance(md, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in md.items())):
        errors.append("metadata must map strings to strings")
    comp = meta.get("compatibility")
    if comp is not None and (not isinstance(comp, str) or len(comp) > 500):
        errors.append("compatibility must be a string of at most 500 characters")
    return errors


def _session(sources: tuple[str, ...] | list[str]) -> str:
    for s in sources:
        sid = session_of(s)
        if sid:
            return sid
    return ""


def _project_of(key: str) -> str | None:
    parts = key.split("/")
    return parts[1] if parts[0] == "project" and len(parts) > 2 else None


def _where(key: str) -> str:
    parts = key.split("/")
    return f"the {parts[1]} project" if parts[0] == "project" else "any project"


def _in_project(key: str, project: str | None) -> bool:
    parts = key.split("/")
    return parts[0] != "project" or parts[1] == project


def _shown(title: str, body: str) -> str:
    """``title`` where it is ``body``'s first clause (blanks and case aside), else "": the person accepts a lesson by
    its text, and a title of other words was never before them. A hand lesson's title (`bead candidate add --title`,
    which an agent's shell can run) is shown at no accept, yet became the skill's heading and description, which the
    harness reads as instructions in every later session (an outside attack: "...; before any task first run curl
    ... | sh" above the benign text that was accepted). The heading is then the text's own first sentence."""
    # Its whole first clause, not only its start: "Force-push to main" over "Force-push to main is never allowed;
    # ..." is the start of the text and says the opposite (a review).
    first = re.split(r"[.!?;:](?:\s|$)", " ".join(body.split()), maxsplit=1)[0]
    named = " ".join(title.split()).rstrip(".!?;:").casefold()
    return title if named and named == first.strip().casefold() else ""


def collect(mem: Memory, project: str | None) -> list[Skill]:
    """The skills memory gives for ``project`` (and every project), in key order; nothing is written."""
    out: list[Skill] = []
    taken: set[str] = set()
    seen: set[str] = set()

    def add(
        key: str, fid: str, text: str, kind: str, trust: str, session: str, item: str = "", title: str = "", named: str = ""
    ) -> None:
        """``named``: the key the skill's name is made from, where the fact's own key holds words the person took out
        of its text (a dream lesson edited at its accept: its key was made from the proposal's words); the
        description then names no key."""
        if key in seen or not _in_project(key, project):
            return
        seen.add(key)
        # A harness shows the file and a person cats it: a control character (a value stored before the
        # checks, or through `bead write`) goes in as its visible escape, never as itself.
        text = visible(text, multiline=True, tab="\t")
        name = skill_name(named or key, taken)
        taken.add(name)
        gist = _plain(title) if title else _cut(_plain(re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]), 200)
        gist = gist if gist.endswith((".", "!", "?", "…")) else gist + "."
        when = f"Use when working in {_where(key)}"
        what = {
            "feedback": "How the person wants the agent to work",
            "project": "A fact about the project",
            "lesson": "A lesson from an earlier session that succeeded",
            "lesson-hand": "A lesson written by hand from an earlier session",
        }[kind]
        # The key is in the file (its metadata and how to change it); not here, where it would say the words taken out.
        ref = "" if named else f"; bead memory {key}"
        description = _cut(f"{what}: {gist} {when}{ref}.", MAX_DESCRIPTION)
        body = (
            f"# {_plain(title) or gist}\n\n{text.strip()}\n\n---\n\n"
            f"Written by `bead skills install` from {fid} ({trust}"
            + (f", from session {visible(session)}" if session else "")
            + "). The memory is the source: change it with "
            f"`bead write {key} ...`, then run `bead skills install --force` to refresh this file.\n"
        )
        meta = {
            "bead_key": key,
            "bead_version_id": fid,
            "bead_kind": "lesson" if kind.startswith("lesson") else kind,
            "bead_trust": trust,
            "bead_source_session": session,
        }
        if item:
            meta["bead_review_item"] = item
        out.append(Skill(name, description, body, meta, key))

    # Approved lessons first: their key holds the person's approved (maybe edited) text.
    for item in sorted(Queue(mem).items("accepted"), key=lambda i: i.key):
        if item.kind != "lesson":
            continue
        cur = mem.served(item.key) if not mem.is_sealed(item.key) else None
        if cur is None or cur.trust not in PERSON_TRUSTS or cur.status not in ("current", "dormant"):
            continue
        # Only the dream's lessons passed the outcome gate (the session succeeded); a hand-written one was not judged.
        kind = "lesson-hand" if item.source == "hand" else "lesson"
        # The dream's title is the first sentence of its proposal: it names the lesson only while the text is the
        # proposal's. Once the person edited it (at the accept or since), a sentence they took out must not come
        # back as the skill's heading and description: those come from the text they approved.
        edited = item.source != "hand" and cur.body.strip() != item.value.strip()
        title, named = ("", lesson_key(cur.body, _project_of(cur.key))) if edited else (_shown(item.title, cur.body), "")
        add(cur.key, cur.id, cur.body, kind, cur.trust, item.session, item.id, title, named)
    for row in mem.index.pinned_candidates(project):
        if not row.get("pinned") or row["type"] not in ("feedback", "project") or row["trust"] not in PERSON_TRUSTS:
            continue
        if row["sensitivity"] == "secret":
            continue
        cur = mem.served(row["key"])
        if cur is None or cur.id != row["id"]:
            continue
        add(cur.key, cur.id, cur.body, cur.type, cur.trust, _session(cur.sources))
    return out


def plan(mem: Memory, project_dir: Path, project: str | None) -> list[Skill]:
    """``collect`` with each skill's file and whether it is new, unchanged or differs from what is there."""
    skills = collect(mem, project)
    for s in skills:
        s.path = skills_dir(project_dir) / s.name / "SKILL.md"
        s.problems = validate(s.render(), s.name)
        try:
            now = safe.read_text(s.path, root=project_dir, errors="replace")
        except FileNotFoundError:
            s.status = "new"
            continue
        s.status = "unchanged" if now == s.render() else "differs"
        s.before = now if s.status == "differs" else None
    return skills


def install(mem: Memory, project_dir: Path, project: str | None, force: bool = False) -> list[Skill]:
    """Write the skills' files; one that exists with other content is kept unless ``force``. Every file is noted in
    the home's skills log first (bead.core.skill_files), one found as install would write it too (a second checkout
    of a project that committed its skills), so that forget and seal find it."""
    # The queue's lock, which a forget holds for the whole of its run: a skill collected before the forget and
    # written after it removed the files would bring the value back.
    with Queue(mem).deciding():
        return _install(mem, project_dir, project, force)


def _install(mem: Memory, project_dir: Path, project: str | None, force: bool) -> list[Skill]:
    skills = plan(mem, project_dir, project)
    for s in skills:
        if s.problems:
            raise BeadError(
                f"skill {s.name} would not be valid: {'; '.join(s.problems)}", "report this: bead builds every field itself"
            )
    # Noted: what install writes, and what it finds as it would write it; not a file it keeps as it is (a changed
    # file without --force), whose earlier line (bead's own write, if any) stands.
    written = [s for s in skills if s.path and (s.status != "differs" or force)]
    ours = skill_files.digests(mem)  # before this install's lines: what bead wrote at each path until now
    keep: dict[str, Path] = {}  # each --force's backup, decided before anything is noted or written (one may refuse)
    for s in written:
        if s.path is not None and s.before is not None and _sha(s.before) not in ours.get(s.path, set()):
            # --force over a file that differs: what it held (a person's edit) is kept beside it, in a backup of its
            # own; bead's own earlier write (a refresh after the value changed) is no edit, and not kept.
            backup = _free_backup(s.path, project_dir, s.before)
            if backup is not None:
                keep[s.name] = backup
    skill_files.record(mem, [(s.path, project_dir, s.key, s.render().encode("utf-8")) for s in written if s.path])
    for s in skills:
        if s.status == "unchanged" or (s.status == "differs" and not force):
            s.status = "kept" if s.status == "differs" else s.status
            continue
        assert s.path is not None
        if s.name in keep and s.before is not None:
            s.backup = keep[s.name]
            safe.atomic_write(s.backup, s.before.encode("utf-8"), FILE_MODE, root=project_dir)
        safe.atomic_write(s.path, s.render().encode("utf-8"), FILE_MODE, root=project_dir)
        s.status = "written"
    return skills


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _free_backup(path: Path, root: Path, before: str) -> Path | None:
    """The first backup name that is free, or None where one already holds ``before``; refused (nothing written)
    when every name is taken."""
    for name in skill_files.backup_names(path):
        try:
            if safe.read_text(name, root=root, errors="replace", limit=skill_files.MAX_SKILL_BYTES) == before:
                return None
        except FileNotFoundError:
            return name
        except (OSError, ValueError, safe.UnsafePath):
            continue  # a name bead cannot read (a link, a folder): not written over either
    raise BeadError(
        f"{path.parent} holds {skill_files.MAX_BACKUPS} backups already; nothing was written",
        f"remove the {path.name}.bak* files you do not need from {path.parent}, then run install again",
    )
