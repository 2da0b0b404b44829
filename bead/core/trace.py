"""The proxy's trace: one JSON line per request, for ``bead why``.

Where it is: ``proxy.trace`` in config.yaml, or ``BEAD_TRACE``, or the
proxy's ``--trace``. It quotes cue text (secret-scanned, then cut), so
forget scrubs it like every other file that can hold a value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..capture.secrets import redact
from ..config import Config
from ..store.files import append_line, atomic_write

CUE_CHARS = 200


def configured_paths(config: Config, override: str | None = None) -> list[Path]:
    """Every trace file this home may have written: ``--trace``, config, ``BEAD_TRACE``."""
    out: list[Path] = []
    for value in (override, config.proxy.trace, os.environ.get("BEAD_TRACE")):
        if value:
            p = Path(value).expanduser().absolute()
            if p not in out:
                out.append(p)
    return out


def cue_excerpt(text: str) -> str:
    """A cue as the trace keeps it: credentials redacted first, then cut (never cut a secret in half)."""
    return redact(text)[0][:CUE_CHARS]


class Trace:
    def __init__(self, path: Path):
        self.path = path

    def record(self, entry: dict[str, Any]) -> None:
        append_line(self.path, json.dumps(entry, ensure_ascii=False))

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def matching_lines(self, matches: Callable[[str], bool]) -> int:
        if not self.path.is_file():
            return 0
        return sum(1 for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines() if matches(line))

    def scrub(self, matches: Callable[[str], bool]) -> int:
        """Drop the lines that ``matches`` (forget)."""
        if not self.path.is_file():
            return 0
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        keep = [line for line in lines if not matches(line)]
        if len(keep) != len(lines):
            atomic_write(self.path, "".join(keep).encode("utf-8"))
        return len(lines) - len(keep)
