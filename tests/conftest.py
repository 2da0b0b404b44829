"""Every test gets its own bead home; nothing touches ~/.bead."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bead.config import Config
from bead.memory import Memory
from bead.paths import Home

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def bead_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAD_HOME", str(home))
    return home


@pytest.fixture
def mem(bead_home) -> Memory:
    m = Memory(Home(bead_home).ensure(), Config(owner="tester"))
    yield m
    m.close()


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def bead(bead_home):
    """Run the real `bead` CLI in a subprocess against the test's home."""

    def run(*args: str, input: str | None = None, env: dict | None = None) -> Result:
        full_env = {**os.environ, "BEAD_HOME": str(bead_home), **(env or {})}
        p = subprocess.run([sys.executable, "-m", "bead", *args], input=input, capture_output=True,
                           text=True, env=full_env, timeout=120)
        return Result(p.returncode, p.stdout, p.stderr)

    return run


def all_bytes_under(root: Path) -> dict[Path, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[p] = p.read_bytes()
    return out
