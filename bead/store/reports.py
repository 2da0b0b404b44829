"""The dream's files: which turns of each session a run has read (``DreamState``) and the run reports.

A report (``store/reports/<date>.md``) names keys and version ids, never values; forget replaces a forgotten
key's mentions with its hash, and a line that holds the value (a proposal's key made of its words) whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from .. import files as safe
from ..paths import Home
from .audit import key_hash
from .keys import key_mentions

# A run's lines that list keys or ids (bead.dream.run.Report.render): the session's lists, and review queue additions.
_LISTED = re.compile(r"^- (written|unchanged|rejected|skipped|queued): (.*)$")
_QUEUED = re.compile(r"^- ([0-9a-f]{12}) (\S+) (.+)$")
_ALONE = re.compile(r"^- ((?:user|global|project/[^/\s]+)/\S+)$")  # a run's facts decayed to dormant: one id a line


class DreamState:
    def __init__(self, path: Path, root: Path | None = None):
        self.path = path
        self.root = root if root is not None else path.parent
        try:
            self.data = json.loads(safe.read_text(path, root=self.root))
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            self.data = {}
        self.data.setdefault("sessions", {})

    def read(self, sid: str) -> int:
        return int(self.data["sessions"].get(sid, 0))

    def mark(self, sid: str, n: int) -> None:
        self.data["sessions"][sid] = n

    def save(self) -> None:
        safe.atomic_write(self.path, json.dumps(self.data, indent=1, sort_keys=True).encode(), root=self.root)


class Reports:
    """``store/reports/<date>.md``: keys and version ids of each run, never values."""

    def __init__(self, home: Home):
        self.home = home

    def append(self, day: datetime, text: str) -> Path:
        path = self.home.report_file(day)
        try:
            prior = safe.read_text(path, root=self.home.root) + "\n"
        except FileNotFoundError:
            prior = ""
        safe.atomic_write(path, (prior + text).encode(), root=self.home.root)
        return path

    def files(self) -> list[Path]:
        return [
            folder / n
            for folder, _d, names in safe.walk(self.home.reports, root=self.home.root)
            for n in names
            if n.endswith(".md") and not n.startswith(".")
        ]

    def scrub(self, matches: Callable[[str], bool], write: bool = True) -> int:
        """Each key or id a run's line lists (``- written: a, b``, ``- rejected: KEY (why)``, a review queue
        addition's ``- <id> <kind> KEY``) that ``matches`` (holds a forgotten value: a proposal's key made of its
        words) becomes ``[forgotten]`` (forget). Headings and a run's other lines (its model, times, episode) are
        never touched. The number of items changed (``write=False``: that would be, nothing written)."""
        changed = 0
        for path in self.files():
            text = safe.read_text(path, root=self.home.root, errors="replace")
            lines = text.split("\n")
            hits = 0
            for i, line in enumerate(lines):
                if m := _LISTED.match(line):
                    items = m.group(2).split(", ")
                    kept = ["[forgotten]" if matches(item) else item for item in items]
                    if kept != items:
                        hits += sum(1 for a, b in zip(items, kept, strict=True) if a != b)
                        lines[i] = f"- {m.group(1)}: " + ", ".join(kept)
                elif (m := _QUEUED.match(line)) and matches(m.group(3)):
                    hits += 1
                    lines[i] = f"- {m.group(1)} {m.group(2)} [forgotten]"
                elif (m := _ALONE.match(line)) and matches(m.group(1)):
                    hits += 1
                    lines[i] = "- [forgotten]"
            if hits and write:
                safe.atomic_write(path, "\n".join(lines).encode(), root=self.home.root)
            changed += hits
        return changed

    def blind(self, hashes: set[str]) -> int:
        """Every ``[forgotten HASH]`` of one of ``hashes`` (a key's that `seal --as` moved) says ``[forgotten]``."""
        changed = 0
        marks = {f"[forgotten {h[:12]}]" for h in hashes}
        for path in self.files():
            text = safe.read_text(path, root=self.home.root, errors="replace")
            new = text
            for mark in marks:
                new = new.replace(mark, "[forgotten]")
            if new != text:
                safe.atomic_write(path, new.encode(), root=self.home.root)
                changed += 1
        return changed

    def forget_keys(self, keys: set[str], blind: bool = False) -> int:
        """Every mention of a forgotten key (or a version id of it) becomes its hash (forget), or nothing of it
        (``blind``: a `seal --as`, whose key may not leave even its hash)."""
        changed = 0
        for path in self.files():
            text = safe.read_text(path, root=self.home.root, errors="replace")
            new = text
            for key in sorted(keys, key=len, reverse=True):
                spans = key_mentions(new, key)
                for start, end in reversed(spans):
                    new = new[:start] + ("[forgotten]" if blind else f"[forgotten {key_hash(key)[:12]}]") + new[end:]
            if new != text:
                safe.atomic_write(path, new.encode(), root=self.home.root)
                changed += 1
        return changed
