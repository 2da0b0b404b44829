"""Where bead keeps things: one home, ``$BEAD_HOME`` or ``~/.bead``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Home:
    """The layout of a bead home (see the reference design)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def facts(self) -> Path:
        return self.store / "facts"

    @property
    def raw(self) -> Path:
        return self.store / "raw"

    @property
    def episodes(self) -> Path:
        return self.store / "episodes"

    @property
    def index_db(self) -> Path:
        return self.root / "index.db"

    @property
    def audit_log(self) -> Path:
        return self.root / "audit.log"

    @property
    def tombstones_log(self) -> Path:
        return self.root / "tombstones.log"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def vault(self) -> Path:
        return self.root / "vault"

    @property
    def store_lock(self) -> Path:
        return self.store / ".lock"

    @property
    def raw_lock(self) -> Path:
        return self.raw / ".lock"

    def ensure(self) -> "Home":
        """Create the home (mode 0700) and its directories if missing."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is masked by the umask; the home holds private memory.
        os.chmod(self.root, 0o700)
        for d in (self.store, self.facts, self.raw, self.episodes, self.sessions):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self


def resolve_home(env: dict[str, str] | None = None) -> Home:
    """``$BEAD_HOME`` if set, else ``~/.bead``."""
    env = os.environ if env is None else env
    value = env.get("BEAD_HOME")
    if value:
        return Home(Path(value).expanduser().absolute())
    return Home(Path.home() / ".bead")
