"""Every test gets its own bead home; nothing touches ~/.bead."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bead.config import Config
from bead.core.memory import Memory
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


def eventually(cond, timeout: float = 20.0, step: float = 0.05) -> bool:
    """Poll ``cond`` until it holds or ``timeout`` passes (for work done by other processes)."""
    import time

    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def all_bytes_under(root: Path) -> dict[Path, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[p] = p.read_bytes()
    return out


@pytest.fixture
def upstream():
    from fakes import FakeAnthropic

    fake = FakeAnthropic()
    yield fake
    fake.close()


def launch_proxy(home: Path, upstream_url: str, log_path: Path, *extra: str, env: dict | None = None):
    """Start `bead proxy` as a real process on a free loopback port; wait for its health check."""
    import time
    import urllib.request

    from fakes import free_port

    port = free_port()
    log = open(log_path, "wb")
    p = subprocess.Popen([sys.executable, "-m", "bead", "proxy", "--listen", f"127.0.0.1:{port}",
                          "--upstream", upstream_url, *extra],
                         env={**os.environ, "BEAD_HOME": str(home), **(env or {})},
                         stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"proxy exited: {log_path.read_text()}")
        try:
            with urllib.request.urlopen(url + "/bead/health", timeout=1) as r:
                if r.status == 200:
                    return p, url
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("proxy did not answer /bead/health")


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()


@pytest.fixture
def start_proxy(bead_home, upstream, tmp_path):
    """Start `bead proxy` processes for this test's home; stopped afterwards."""
    procs = []

    def start(*extra: str, env: dict | None = None, upstream_url: str | None = None) -> str:
        p, url = launch_proxy(bead_home, upstream_url or upstream.url, tmp_path / f"proxy-{len(procs)}.log",
                              *extra, env=env)
        procs.append(p)
        return url

    start.procs = procs
    yield start
    for p in procs:
        stop(p)
