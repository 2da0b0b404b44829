"""Episodes: what happened in a session, as the dream summarised it.

``store/episodes/YYYY/MM/DD/<session>.md``; a later run over new turns of
the same session adds to its file. The text is secret-scanned before it is
written.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ..capture.secrets import redact
from ..paths import Home
from ..store import files as safe
from ..store.audit import iso

SECTIONS = ("situation", "action", "outcome", "lesson")


class Episodes:
    def __init__(self, home: Home):
        self.home = home

    def write(self, session: str, day: datetime, episode: dict[str, str], owner: str, now: datetime) -> Path:
        path = self.home.episode_file(session, day)
        parts = [f"---\nsession: {session}\nwritten: {iso(now)}\nowner: {owner}\n---"]
        for name in SECTIONS:
            parts.append(f"## {name.capitalize()}\n{redact(str(episode.get(name, '')).strip())[0]}")
        root = self.home.root
        try:
            text = safe.read_text(path, root=root) + "\n" + "\n\n".join(parts[1:]) + "\n"
        except FileNotFoundError:
            text = "\n\n".join(parts) + "\n"
        safe.atomic_write(path, text.encode(), root=root)
        return path

    def files(self) -> list[Path]:
        return [folder / n for folder, _d, names in safe.walk(self.home.episodes, root=self.home.root)
                for n in names if n.endswith(".md") and not n.startswith(".")]

    def holding(self, matches: Callable[[str], bool]) -> list[Path]:
        """Episode files whose text ``matches`` (forget's plan)."""
        return [p for p in self.files() if matches(safe.read_text(p, root=self.home.root, errors="replace"))]

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            safe.unlink(p, root=self.home.root)
