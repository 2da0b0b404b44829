"""Episodes: what happened in a session, as the dream summarised it.

``store/episodes/YYYY/MM/DD/<session>.md``; a later run over new turns of
the same session adds to its file. The text is secret-scanned before it is
written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ..capture.secrets import redact
from ..paths import Home
from ..store.audit import iso
from ..store.files import atomic_write

SECTIONS = ("situation", "action", "outcome", "lesson")


class Episodes:
    def __init__(self, home: Home):
        self.home = home

    def write(self, session: str, day: datetime, episode: dict[str, str], owner: str, now: datetime) -> Path:
        path = self.home.episode_file(session, day)
        parts = [f"---\nsession: {session}\nwritten: {iso(now)}\nowner: {owner}\n---"]
        for name in SECTIONS:
            parts.append(f"## {name.capitalize()}\n{redact(str(episode.get(name, '')).strip())[0]}")
        if path.exists():
            atomic_write(path, (path.read_text(encoding="utf-8") + "\n" + "\n\n".join(parts[1:]) + "\n").encode())
        else:
            atomic_write(path, ("\n\n".join(parts) + "\n").encode())
        return path

    def files(self) -> list[Path]:
        out = []
        for dirpath, dirnames, names in os.walk(self.home.episodes):
            dirnames.sort()
            out += [Path(dirpath) / n for n in sorted(names) if n.endswith(".md") and not n.startswith(".")]
        return out

    def holding(self, matches: Callable[[str], bool]) -> list[Path]:
        """Episode files whose text ``matches`` (forget's plan)."""
        return [p for p in self.files() if matches(p.read_text(encoding="utf-8", errors="replace"))]

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            p.unlink(missing_ok=True)
