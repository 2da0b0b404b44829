"""Who is talking: session, thread and project; and the conversation's state file.

The rules are the reference design's:
- session: ``X-Bead-Session``; else ``x-claude-code-session-id`` (plus a hash
  of ``x-claude-code-agent-id`` for a subagent); else a hash of the system
  prompt and the first message;
- thread: a hash of the first message, which separates side requests that
  share a session header;
- project: ``X-Bead-Project``; else the working directory the harness reports
  (in the system prompt, a system message, or the first user message),
  resolved through a linked git worktree to its main checkout; else the
  ``--project`` default.

The state file ``sessions/<session>-<thread>.jsonl`` is read on every request,
so a proxy restart or a ``bead forget`` in another process takes effect at once.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..capture.text import OWN, block_text, content_blocks
from ..store.files import append_line

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
_CWD = re.compile(r"(?im)^[ \t]*(?:-[ \t]*)?(?:primary working directory|working directory|cwd)[ \t]*:[ \t]*(\S[^\n]*?)[ \t]*$")


def _h(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def normalised(message: dict) -> str:
    """A message's role and text, blind to cache_control and to string-vs-list content.

    Claude Code resends the previous last message without its cache_control
    and, if it was a string, as a string again; the hash must not change.
    """
    parts = [OWN.sub("", block_text(b)).strip() for b in content_blocks(message)]
    return (message.get("role", "") if isinstance(message, dict) else "") + "\x00" + "\x00".join(p for p in parts if p)


def message_hash(message: dict) -> str:
    return _h(normalised(message), 16)


def safe_name(value: str) -> str:
    return value if _SAFE.match(value) else "h" + _h(value, 16)


def _system_text(system) -> str:
    if isinstance(system, str):
        return system
    return "\n".join(block_text(b) for b in system or [])


def find_cwd(data: dict) -> str | None:
    messages = data.get("messages") or []
    places = [_system_text(data.get("system"))]
    places += ["\n".join(block_text(b) for b in content_blocks(m)) for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    first_user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    if first_user:
        places.append("\n".join(block_text(b) for b in content_blocks(first_user)))
    for text in places:
        m = _CWD.search(text or "")
        if m:
            return m.group(1).strip().strip("`'\"")
    return None


def main_checkout(path: Path) -> Path:
    """The main working tree of ``path``'s repository; ``path`` when not in one.

    A linked worktree has a ``.git`` *file* pointing at
    ``<main>/.git/worktrees/<name>``, whose ``commondir`` leads back to
    ``<main>/.git``: memory then stays with the main checkout's project.
    """
    for d in (path, *path.parents):
        git = d / ".git"
        try:
            if git.is_dir():
                return d
            if git.is_file():
                text = git.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return d
                gitdir = Path(text[len("gitdir:"):].strip())
                gitdir = gitdir if gitdir.is_absolute() else (d / gitdir)
                common = gitdir
                if (gitdir / "commondir").is_file():
                    common = gitdir / (gitdir / "commondir").read_text().strip()
                common = common.resolve()
                return common.parent if common.name == ".git" else d
        except OSError:
            return path
    return path


def project_slug(name: str) -> str | None:
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.")
    return slug or None


@lru_cache(maxsize=256)
def project_from_cwd(cwd: str) -> str | None:
    """Cached: every request of a conversation reports the same directory, and the
    walk up to its repository's .git is stat calls on the proxy's hot path."""
    return project_slug(main_checkout(Path(cwd)).name)


@dataclass(frozen=True)
class Conversation:
    session: str        # raw-log session (subagents: parent + agent hash)
    base_session: str   # the parent session, for excluding its own excerpts
    thread: str
    project: str | None

    @property
    def id(self) -> str:
        return f"{self.session}-{self.thread}"


def derive(headers: dict[str, str], data: dict, default_project: str | None) -> Conversation:
    """``headers`` keys are lower-case."""
    messages = data.get("messages") or []
    first = messages[0] if messages else {}
    if headers.get("x-bead-session"):
        base = safe_name(headers["x-bead-session"])
        session = base
    elif headers.get("x-claude-code-session-id"):
        base = safe_name(headers["x-claude-code-session-id"])
        agent = headers.get("x-claude-code-agent-id")
        session = f"{base}-{_h(agent, 8)}" if agent else base
    else:
        base = session = "p" + _h(_system_text(data.get("system")) + "\x00" + normalised(first), 16)
    project = None
    if headers.get("x-bead-project"):
        project = project_slug(headers["x-bead-project"])
    if not project:
        cwd = find_cwd(data)
        project = project_from_cwd(cwd) if cwd else None
    return Conversation(session=session, base_session=base, thread=_h(normalised(first)),
                        project=project or (project_slug(default_project) if default_project else None))


@dataclass
class CueRecord:
    message: int
    hash: str
    text: str | None
    ids: list[str] = field(default_factory=list)


@dataclass
class State:
    """What the proxy did in one conversation, rebuilt from its file each request."""

    path: Path
    pinned: str | None = None
    pinned_ids: list[str] = field(default_factory=list)
    has_pinned: bool = False
    cues: dict[int, CueRecord] = field(default_factory=dict)
    captured: int = 0
    captured_partial: bool = False

    @staticmethod
    def lock_for(sessions_dir: Path, conv: Conversation) -> Path:
        """The conversation's flock; ``bead forget`` takes the same one."""
        return sessions_dir / f"{conv.id}.lock"

    @property
    def injected(self) -> set[str]:
        out = set(self.pinned_ids)
        for c in self.cues.values():
            out.update(c.ids)
        return out

    @classmethod
    def load(cls, sessions_dir: Path, conv: Conversation) -> "State":
        st = cls(sessions_dir / f"{conv.id}.jsonl")
        try:
            lines = st.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return st
        for line in lines:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line never stops the conversation
            kind = r.get("kind")
            if kind == "pinned":
                st.has_pinned, st.pinned, st.pinned_ids = True, r.get("text"), list(r.get("ids") or [])
            elif kind == "cue":
                st.cues[int(r["message"])] = CueRecord(int(r["message"]), r.get("hash", ""), r.get("text"),
                                                       list(r.get("ids") or []))
            elif kind == "captured":
                st.captured, st.captured_partial = int(r.get("upto", 0)), bool(r.get("partial", False))
        return st

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_line(self.path, json.dumps(record, ensure_ascii=False))
