"""Episodes: what happened in a session, as the dream summarised it.

``store/episodes/YYYY/MM/DD/<session>.md``; a later run over new turns of
the same session adds to its file. The text is secret-scanned before it is
written. The outcome gate's evaluations (bead.dream.evaluate: figures, the
reason a lesson was not promoted, tokens; never the model's words) are kept
in the file's frontmatter, under ``evaluations``, one per run that judged the
session, so forget, which deletes an episode file that holds a forgotten
value, takes them along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from .. import files as safe
from ..capture.secrets import redact
from ..display import visible
from ..paths import Home
from .audit import iso

SECTIONS = ("situation", "action", "outcome", "lesson")


@dataclass
class EpisodeView:
    """One episode file as a reader sees it: the newest text of each section, every evaluation."""

    path: Path
    session: str
    written: str
    sections: dict[str, str] = field(default_factory=dict)
    evaluations: list[dict[str, Any]] = field(default_factory=list)


def _split(text: str) -> tuple[dict[str, Any], str]:
    from .facts import split_frontmatter

    try:
        return split_frontmatter(text)
    except ValueError:
        return {}, text


def _frontmatter(meta: dict[str, Any]) -> str:
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---"


class Episodes:
    def __init__(self, home: Home):
        self.home = home

    def write(
        self,
        session: str,
        day: datetime,
        episode: dict[str, str] | None,
        owner: str,
        now: datetime,
        evaluation: dict[str, Any] | None = None,
    ) -> Path:
        """Add the episode's sections (and an evaluation, to the frontmatter) to the session's file."""
        path = self.home.episode_file(session, day)
        parts = (
            # A model wrote them, from captured turns; a person opens the file: no control reaches a terminal as itself.
            [
                f"## {name.capitalize()}\n{visible(redact(str(episode.get(name, '')).strip())[0], multiline=True)}"
                for name in SECTIONS
            ]
            if episode
            else []
        )
        root = self.home.root
        try:
            meta, body = _split(safe.read_text(path, root=root, errors="replace"))
        except FileNotFoundError:
            meta, body = {}, ""
        meta = {"session": session, "written": iso(now), "owner": owner, **meta}
        if evaluation is not None:
            meta["evaluations"] = [*(meta.get("evaluations") or []), evaluation]
        body = body.strip("\n")
        text = _frontmatter(meta) + "\n\n" + "\n\n".join(p for p in (body, *parts) if p) + "\n"
        safe.atomic_write(path, text.encode(), root=root)
        return path

    def read(self, path: Path) -> EpisodeView:
        """An episode file: the newest text of each section (a later run adds its own), its evaluations."""
        meta, body = _split(safe.read_text(path, root=self.home.root, errors="replace"))
        sections: dict[str, str] = {}
        name = ""
        lines: list[str] = []
        for line in (body + "\n## End").splitlines():
            head = line[3:].strip().lower() if line.startswith("## ") else None
            if head is not None and (head in SECTIONS or head == "end"):
                if name:
                    sections[name] = "\n".join(lines).strip()
                name, lines = head if head != "end" else "", []
            else:
                lines.append(line)
        evals = [e for e in meta.get("evaluations") or [] if isinstance(e, dict)]
        return EpisodeView(path, str(meta.get("session") or path.stem), str(meta.get("written") or ""), sections, evals)

    def find(self, session: str) -> Path | None:
        """The episode file of ``session`` (on whatever day it started), or None."""
        for p in self.files():
            if p.stem == session:
                return p
        return None

    def files(self) -> list[Path]:
        return [
            folder / n
            for folder, _d, names in safe.walk(self.home.episodes, root=self.home.root)
            for n in names
            if n.endswith(".md") and not n.startswith(".")
        ]

    def holding(self, matches: Callable[[str], bool]) -> list[Path]:
        """Episode files whose text ``matches`` (forget's plan)."""
        return [p for p in self.files() if matches(safe.read_text(p, root=self.home.root, errors="replace"))]

    def delete(self, paths: list[Path]) -> None:
        for p in paths:
            safe.unlink(p, root=self.home.root)
