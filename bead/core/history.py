"""History from day one: Claude Code's saved transcripts into the raw log.

Claude Code keeps every conversation as JSON lines under
``~/.claude/projects/<dir>/<session>.jsonl`` (a subagent's under
``<session>/subagents/agent-<id>.jsonl``). The lines that matter are
``type: user`` and ``type: assistant``; their ``message`` holds Messages API
content (an assistant answer is written one content block per line, the
lines sharing ``message.id``). Every other line (queue operations,
attachments, system notes, the last prompt, harness meta messages, compact
summaries, synthetic API errors) is harness bookkeeping and is skipped.

An import goes through the same path as live capture: the messages become
a typed ``Conversation`` (the Messages API parser the proxy uses), each
message becomes one turn per run of parts with the same source
(``capture.request_turns``), and the raw log's append runs the secret scan.
Session ids are the ones the proxy gives the same conversation (the
session's id; a subagent's is the parent's plus a hash of its agent id), and
the project comes from the working directory each line records, as the
proxy takes it from the one the harness reports.

Idempotent: a turn whose role, source and (scanned) text the session's raw
file already holds, as many times as the transcript has it, is not written
again, so a second import adds nothing and a session the proxy captured live
is completed, not doubled.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..capture.secrets import redact
from ..errors import BeadError
from .capture import request_turns
from .conversation import Identity, _h, project_from_cwd, project_slug, safe_name
from .memory import Memory

IMPORTED = {"anthropic": "claude-code", "responses": "codex"}
SKIPPED_TYPES = frozenset({"queue-operation", "attachment", "system", "last-prompt", "mode", "summary",
                           "file-history-snapshot"})


@dataclass
class Transcript:
    """One transcript file: a session, or a subagent of one."""

    path: Path
    session: str              # the raw log's session id (what the proxy names this conversation)
    base_session: str         # the parent session's (a subagent's session starts with it)
    project: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)   # Messages API messages, or Responses items
    times: list[datetime] = field(default_factory=list)            # one per message (or item)
    first: datetime | None = None
    wire: str = "anthropic"                                        # anthropic | responses (Codex CLI)


@dataclass
class ImportCounts:
    files: int = 0
    sessions: int = 0
    turns_added: int = 0
    turns_present: int = 0      # already in the raw log (an earlier import, or live capture)
    redacted: int = 0           # added turns the secret scan changed
    skipped_lines: int = 0      # harness bookkeeping and lines that do not parse
    skipped_project: int = 0    # files of other projects (--project)
    skipped_old: int = 0        # messages before --since

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _harness_root(env: str, default: str, sub: str) -> Path:
    """``$env/sub``, else ``~/default/sub``: where a harness keeps its sessions."""
    base = os.environ.get(env)
    return (Path(base) if base else Path.home() / default) / sub


def _session_files(root: Path, pattern: str, missing: str, hint: str) -> list[Path]:
    """Every regular file matching ``pattern`` below ``root`` (never a link), in a stable order."""
    if not root.is_dir():
        raise BeadError(f"no {missing} at {root}", hint)
    return sorted(p for p in root.rglob(pattern) if p.is_file() and not p.is_symlink())


def default_root() -> Path:
    """Where Claude Code keeps its transcripts (``CLAUDE_CONFIG_DIR`` moves it)."""
    return _harness_root("CLAUDE_CONFIG_DIR", ".claude", "projects")


def transcript_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` below ``root`` (sessions and their subagents), in a stable order."""
    return _session_files(root, "*.jsonl", "Claude Code transcripts",
                          "give the folder with --from (Claude Code keeps them in ~/.claude/projects)")


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _lines(path: Path) -> Iterator[dict[str, Any] | None]:
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                yield None
                continue
            yield d if isinstance(d, dict) else None


def read_transcript(path: Path, since: datetime | None, counts: ImportCounts) -> Transcript | None:
    """The conversation one file holds, or None when it holds none."""
    session_id = agent_id = cwd = None
    messages: list[dict[str, Any]] = []
    times: list[datetime] = []
    last_id: str | None = None
    for d in _lines(path):
        if d is None:
            counts.skipped_lines += 1
            continue
        kind = d.get("type")
        msg = d.get("message")
        if kind not in ("user", "assistant") or not isinstance(msg, dict) or d.get("isMeta") \
                or d.get("isCompactSummary") or d.get("isApiErrorMessage"):
            counts.skipped_lines += 1
            continue
        session_id = session_id or d.get("sessionId")
        agent_id = agent_id or (d.get("agentId") if d.get("isSidechain") else None)
        cwd = cwd or d.get("cwd")
        at = _time(d.get("timestamp"))
        if at is None:
            counts.skipped_lines += 1
            continue
        if since is not None and at < since:
            counts.skipped_old += 1
            last_id = None
            continue
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
        mid = msg.get("id") if kind == "assistant" else None
        if mid and mid == last_id and messages and messages[-1]["role"] == "assistant":
            # One API answer, written one content block per line.
            messages[-1]["content"].extend(blocks)
            continue
        last_id = mid
        messages.append({"role": kind, "content": list(blocks)})
        times.append(at)
    if not messages or not session_id:
        return None
    base = safe_name(str(session_id))
    session = f"{base}-{_h(str(agent_id), 8)}" if agent_id else base
    project = project_from_cwd(str(cwd)) if cwd else None
    return Transcript(path, session, base, project, messages, times, times[0])


def _key(role: str, source: str, text: str) -> tuple[str, str, str]:
    return role, source, " ".join(text.split())


def _conversation(t: Transcript) -> tuple[Any, list[datetime]]:
    """The typed conversation of a transcript (through the proxy's parser for its wire) and each message's time."""
    if t.wire == "responses":
        from ..wire.openai import responses_conversation

        conv, groups = responses_conversation({"input": t.messages}, {})
        return conv, [t.times[g.items[0]] if g.items else t.times[0] for g in groups]
    from ..wire.anthropic import conversation_of

    return conversation_of({"messages": t.messages}, {}), t.times


def import_transcript(mem: Memory, t: Transcript, counts: ImportCounts) -> int:
    """Append the transcript's turns that the session's raw file does not hold yet; how many were added."""
    conv, times = _conversation(t)
    ident = Identity(session=t.session, base_session=t.base_session, thread="", project=t.project)
    turns = request_turns(conv, ident, 0)
    present: Counter[tuple[str, str, str]] = Counter()
    path = mem.raw.find(t.session)
    if path is not None:
        for old in mem.raw.read(path):
            present[_key(old.role, str(old.flags.get("source", "")), old.text)] += 1
    items = []
    for turn in turns:
        clean, found = redact(turn.text)
        key = _key(turn.role, str(turn.flags.get("source", "")), clean)
        if present[key] > 0:
            present[key] -= 1
            counts.turns_present += 1
            continue
        counts.redacted += bool(found)
        at = times[int(turn.flags.get("message", 0))]
        items.append((turn.role, turn.text, at, None, {**turn.flags, "imported": IMPORTED[t.wire]}))
    if items:
        mem.append_turns(t.session, items)
    counts.turns_added += len(items)
    return len(items)


def import_claude_code(mem: Memory, root: Path | None = None, since: datetime | None = None,
                       project: str | None = None,
                       progress: Callable[[Path], None] | None = None) -> ImportCounts:
    """Import every transcript under ``root`` (default: Claude Code's folder); ``progress`` is told each file."""
    return _import(mem, transcript_files(root or default_root()), read_transcript, since, project, progress)


def _import(mem: Memory, files: list[Path], read: Callable[[Path, datetime | None, ImportCounts], Transcript | None],
            since: datetime | None, project: str | None, progress: Callable[[Path], None] | None) -> ImportCounts:
    counts = ImportCounts()
    want = project_slug(project) if project else None
    sessions: set[str] = set()
    for path in files:
        counts.files += 1
        t = read(path, since, counts)
        if t is not None and want is not None and t.project != want:
            counts.skipped_project += 1
        elif t is not None:
            import_transcript(mem, t, counts)
            sessions.add(t.session)
        if progress is not None:
            progress(path)
    counts.sessions = len(sessions)
    return counts


# ----- Codex CLI ----------------------------------------------------------------------------------
#
# Codex keeps each session as ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``: a
# ``session_meta`` line (the session's id and working directory), then ``response_item`` lines whose
# payload is a Responses API input item (messages of the developer, the user and the assistant,
# reasoning, function calls and their outputs), among events and settings that are bookkeeping.


def codex_root() -> Path:
    """Where Codex CLI keeps its sessions (``CODEX_HOME``, default ``~/.codex``)."""
    return _harness_root("CODEX_HOME", ".codex", "sessions")


def codex_files(root: Path) -> list[Path]:
    return _session_files(root, "rollout-*.jsonl", "Codex CLI sessions",
                          "give the folder with --from (Codex keeps them in ~/.codex/sessions, or $CODEX_HOME/sessions)")


def read_codex(path: Path, since: datetime | None, counts: ImportCounts) -> Transcript | None:
    """The conversation one Codex rollout file holds, or None."""
    session_id = cwd = None
    items: list[dict[str, Any]] = []
    times: list[datetime] = []
    for d in _lines(path):
        payload = d.get("payload") if d is not None else None
        if d is None or not isinstance(payload, dict):
            counts.skipped_lines += 1
            continue
        kind = d.get("type")
        if kind == "session_meta":
            session_id = session_id or payload.get("session_id") or payload.get("id")
            cwd = cwd or payload.get("cwd")
            continue
        if kind == "turn_context":
            cwd = cwd or payload.get("cwd")
            continue
        if kind != "response_item":
            counts.skipped_lines += 1
            continue
        at = _time(d.get("timestamp"))
        if at is None:
            counts.skipped_lines += 1
            continue
        if since is not None and at < since:
            counts.skipped_old += 1
            continue
        items.append({k: v for k, v in payload.items() if k != "internal_chat_message_metadata_passthrough"})
        times.append(at)
    if not items or not session_id:
        return None
    base = safe_name(str(session_id))
    return Transcript(path, base, base, project_from_cwd(str(cwd)) if cwd else None, items, times, times[0],
                      wire="responses")


def import_codex(mem: Memory, root: Path | None = None, since: datetime | None = None, project: str | None = None,
                 progress: Callable[[Path], None] | None = None) -> ImportCounts:
    """Import every Codex CLI session under ``root`` (default: Codex's folder)."""
    return _import(mem, codex_files(root or codex_root()), read_codex, since, project, progress)
