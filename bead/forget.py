"""Forget: the value's bytes leave every file under the home.

Order matters: tombstones first (a crash after them cannot bring the value
back through a later dream run), then the version files, the raw turns, the
index rows, episodes and per-conversation state lines; then the index's WAL
is truncated.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BeadError
from .index.rebuild import sync_raw
from .memory import Memory
from .store.audit import normalise
from .store.files import atomic_write
from .store.facts import split_frontmatter
from .store.keys import parse_id, validate_key
from .store.locks import flocked
from .store.rawlog import FORGOTTEN


@dataclass
class Plan:
    """Everything one forget will touch."""

    keys: dict[str, list[Path]] = field(default_factory=dict)       # key -> version files to delete
    values: dict[str, list[str]] = field(default_factory=dict)      # key -> values (for tombstones)
    match_text: str | None = None
    turns: dict[Path, set[int]] = field(default_factory=dict)       # raw file -> turn numbers
    episodes: list[Path] = field(default_factory=list)
    session_lines: dict[Path, int] = field(default_factory=dict)
    queue_items: list[Path] = field(default_factory=list)

    @property
    def needles(self) -> list[str]:
        out = [normalise(v) for vs in self.values.values() for v in vs]
        if self.match_text:
            out.append(normalise(self.match_text))
        return [n for n in out if n]

    @property
    def empty(self) -> bool:
        return not (self.keys or self.turns or self.episodes or self.session_lines or self.queue_items)

    def summary(self, home_store: Path) -> dict:
        return {
            "keys": sorted(self.keys),
            "versions": sum(len(v) for v in self.keys.values()),
            "raw_turns": sorted(
                f"{p.relative_to(home_store).as_posix()}#turn-{n}" for p, ns in self.turns.items() for n in ns
            ),
            "episodes": len(self.episodes),
            "session_lines": sum(self.session_lines.values()),
            "review_items": len(self.queue_items),
        }


def refuse_git(mem: Memory) -> None:
    for d in (mem.home.root, *mem.home.root.parents):
        if (d / ".git").exists():
            raise BeadError(
                f"refusing to forget: the bead home is inside a git repository ({d})",
                "git history keeps deleted content, so forget cannot keep its promise there; "
                "move the home out of the repository (set BEAD_HOME) and run forget again",
            )


def _version_files(mem: Memory, key: str) -> list[Path]:
    d = mem.facts.key_dir(key)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_file())


def _best_effort_value(path: Path) -> str | None:
    try:
        _meta, body = split_frontmatter(path.read_text(encoding="utf-8", errors="replace"))
        return body.strip() or None
    except (ValueError, OSError):
        return None


def _add_key(mem: Memory, plan: Plan, key: str, only_version: int | None = None) -> None:
    kv = mem.facts.versions(key)
    if only_version is not None:
        facts = [f for f in kv.facts if f.version == only_version]
        files = [mem.facts.key_dir(key) / f"v{only_version}.md"]
        files = [p for p in files if p.exists()]
    else:
        facts = list(kv.facts)
        files = _version_files(mem, key)
    values = [f.body for f in facts]
    for p in kv.problems:
        if only_version is None or p.path.name == f"v{only_version}.md":
            v = _best_effort_value(p.path)
            if v:
                values.append(v)
    if not files:
        return
    plan.keys[key] = files
    plan.values[key] = values
    for f in facts:
        for src in f.sources:
            path_part, _, anchor = src.partition("#turn-")
            rel = path_part[4:] if path_part.startswith("raw/") else path_part
            if anchor.isdigit():
                plan.turns.setdefault(mem.home.raw / rel, set()).add(int(anchor))


def _scan_files(mem: Memory, plan: Plan) -> None:
    """Raw turns, episodes and state lines that contain a needle (read from files)."""
    needles = plan.needles
    if not needles:
        return
    for path in mem.raw.files():
        text = normalise(path.read_text(encoding="utf-8", errors="replace"))
        if not any(n in text for n in needles):
            continue
        for t in mem.raw.read(path):
            if t.text != FORGOTTEN and any(n in normalise(t.text) for n in needles):
                plan.turns.setdefault(path, set()).add(t.n)
    if mem.home.episodes.exists():
        for dirpath, _dirs, files in os.walk(mem.home.episodes):
            for name in files:
                p = Path(dirpath) / name
                if any(n in normalise(p.read_text(encoding="utf-8", errors="replace")) for n in needles):
                    plan.episodes.append(p)
    queue = mem.home.store / "queue"
    if queue.exists():
        for p in sorted(queue.glob("*.json")):
            try:
                item = json.loads(p.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue
            if item.get("key") in plan.keys or any(n in normalise(str(item.get("value", ""))) for n in needles):
                plan.queue_items.append(p)
    for p in _trace_files(mem):
        hits = sum(1 for line in p.read_text(encoding="utf-8", errors="replace").splitlines() if _line_matches(line, needles))
        if hits:
            plan.session_lines[p] = hits
    if mem.home.sessions.exists():
        for p in sorted(mem.home.sessions.glob("*.jsonl")):
            hits = sum(1 for line in p.read_text(encoding="utf-8", errors="replace").splitlines()
                       if _line_matches(line, needles))
            if hits:
                plan.session_lines[p] = hits


def _trace_files(mem: Memory) -> list[Path]:
    """The proxy's trace (config proxy.trace or BEAD_TRACE): it quotes cue text, so forget scrubs it too."""
    out = []
    for value in (mem.config.get("proxy.trace"), os.environ.get("BEAD_TRACE")):
        if value:
            p = Path(value).expanduser().absolute()
            if p.is_file() and p not in out:
                out.append(p)
    return out


def _line_matches(line: str, needles: list[str]) -> bool:
    texts = [line]
    try:
        # Values inside JSON are escaped (quotes, newlines); compare decoded.
        texts.append(json.dumps(json.loads(line), ensure_ascii=False))
        texts.append(" ".join(_strings(json.loads(line))))
    except (json.JSONDecodeError, TypeError):
        pass
    return any(n in normalise(t) for t in texts for n in needles)


def _strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def plan_target(mem: Memory, target: str) -> Plan:
    """Plan ``bead forget <id-or-key>``."""
    plan = Plan()
    parsed = parse_id(target)
    key, version = parsed if parsed else (target, None)
    validate_key(key)
    _add_key(mem, plan, key, version)
    if not plan.keys:
        raise BeadError(f"nothing to forget: {target} has no version files", "check the key with `bead search` or `bead history KEY`")
    _scan_files(mem, plan)
    return plan


def plan_match(mem: Memory, text: str) -> Plan:
    """Plan ``bead forget --match TEXT``: every key with a version containing it, every turn."""
    needle = normalise(text)
    if len(needle) < 3:
        raise BeadError("--match needs 3 or more characters", "give a longer piece of the text to forget")
    plan = Plan(match_text=text)
    kvs, problems = mem.facts.scan()
    for kv in kvs:
        bodies = [f.body for f in kv.facts] + [v for p in kv.problems if (v := _best_effort_value(p.path))]
        if any(needle in normalise(b) for b in bodies):
            _add_key(mem, plan, kv.key)
    _scan_files(mem, plan)
    return plan


def apply(mem: Memory, plan: Plan) -> dict:
    refuse_git(mem)
    now = mem.clock()
    store = mem.home.store
    with flocked(mem.home.store_lock):
        # 1. Tombstones first: a crash after this cannot lose them.
        for key, values in plan.values.items():
            for v in dict.fromkeys(values):
                digest = mem.tombstones.add(now, key, v, reason="forget")
                mem.audit.record(now, "tombstone", key=key, sha256=digest)
        # 2. Version files.
        for key, files in plan.keys.items():
            for p in files:
                p.unlink(missing_ok=True)
            d = mem.facts.key_dir(key)
            while d != mem.home.facts and d.is_dir() and not any(d.iterdir()):
                d.rmdir()
                d = d.parent
    # 3. Raw turns: the marker stays, the text becomes [forgotten].
    redacted = 0
    for path, numbers in plan.turns.items():
        if path.exists():
            redacted += len(mem.raw.redact_turns(path, numbers))
            sync_raw(mem.index, mem.raw, path)
    # 4. Index rows of the keys.
    for key in plan.keys:
        mem.sync_key(key)
    # 5. Episodes, review items and per-conversation state.
    for p in plan.episodes + plan.queue_items:
        p.unlink(missing_ok=True)
    needles = plan.needles
    for p in plan.session_lines:
        with flocked(p.with_suffix(".lock")):
            lines = p.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            keep = [line for line in lines if not _line_matches(line, needles)]
            atomic_write(p, "".join(keep).encode("utf-8"))
    mem.index.checkpoint()
    summary = plan.summary(store)
    summary["raw_turns_redacted"] = redacted
    mem.audit.record(now, "forget", keys=summary["keys"], versions=summary["versions"],
                     raw_turns=redacted, episodes=summary["episodes"], session_lines=summary["session_lines"],
                     match=bool(plan.match_text))
    return summary
