"""setup_scripts/install.sh end to end: an upgrade restarts what runs, and where no service manager runs the
install leaves a working wrapper and says how to point a harness at the proxy.

Each install is real: pip builds bead from a copy of this checkout and installs it into a fresh venv, and the
script runs `bead setup` and `bead status` or `bead up` from there. To keep it to seconds, the venv borrows this
test environment's installed dependencies through a .pth file (pip finds them installed, builds only bead, and
needs no index). The service manager is a recorder (no user manager runs on a test machine; the restart loop
under a real `systemd --user` is a manual check, docs/install.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import uuid
from pathlib import Path

import pytest
from conftest import eventually, http_answers
from fakes import free_port

from bead.setup.install import SERVICES

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="install.sh's systemd and no-manager paths")

MANAGER = r"""#!/bin/sh
# A user manager that answers: bead's units are active; `show` calls them inactive so that `bead status --wait`
# has no starting proxy to wait for (nothing listens in this test).
echo "systemctl $*" >> "{log}"
case "$*" in
  *show-environment*) echo "HOME={home}" ;;
  *is-active*) exit 0 ;;
  *" show "*) printf 'LoadState=loaded\nActiveState=inactive\nSubState=dead\n' ;;
esac
exit 0
"""

NO_MANAGER = """#!/bin/sh
echo "systemctl $*" >> "{log}"
echo "Failed to connect to bus: No medium found" >&2
exit 1
"""


class Installer:
    """A person's HOME, a copy of the checkout to install from, a venv, and a PATH whose systemctl is ``manager``."""

    def __init__(self, root: Path, manager: str):
        self.home = root / "person"
        self.src = root / "src"
        # Not under a temporary folder (a CI checkout may be in one), where `bead setup` refuses to point services
        # (they would stop starting once it is cleaned): under the user's state folder, removed by close().
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        self.venv = state / "bead-install-tests" / f"{root.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.venv.parent.mkdir(parents=True, exist_ok=True)
        self.log = root / "systemctl.log"
        self.port = free_port()
        (self.home / ".bead").mkdir(parents=True)
        # An existing config is never changed by setup: this proxy listens on a free port, not the default one.
        (self.home / ".bead" / "config.yaml").write_text(f"proxy:\n  listen: 127.0.0.1:{self.port}\n")
        self.src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(REPO / name, self.src / name)
        for name in ("bead", "setup_scripts"):
            shutil.copytree(REPO / name, self.src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], check=True, timeout=120)
        purelib = Path(sysconfig.get_paths(vars={"base": str(self.venv), "platbase": str(self.venv)})["purelib"])
        (purelib / "bead-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        self.bin = root / "bin"
        self.bin.mkdir()
        (self.bin / "systemctl").write_text(manager.format(log=self.log, home=self.home))
        (self.bin / "systemctl").chmod(0o755)
        # A claude that says which base URL it was given (the wrapper's job) and no MCP server named bead.
        (self.bin / "claude").write_text('#!/bin/sh\n[ "$1" = mcp ] && exit 1\necho "BASE=$ANTHROPIC_BASE_URL ARGS=$*"\n')
        (self.bin / "claude").chmod(0o755)
        # Not PYTHONPATH either: it would put another bead before the venv's (a checkout's, whatever -P says).
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("BEAD_", "XDG_", "PIP_", "VIRTUAL_ENV", "PYTHONPATH"))}
        self.env = {
            **keep,
            "HOME": str(self.home),
            "BEAD_VENV": str(self.venv),
            "BEAD_SEMANTIC": "0",  # the model's wheel is installed either way; no test here needs it loaded
            "PATH": f"{self.bin}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "SHELL": "/bin/bash",
            "PIP_NO_INDEX": "1",  # every dependency is installed already (the .pth): no download,
            "PIP_NO_DEPS": "1",  # and no resolving them (half of each install's time)
            "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of "build with the setuptools installed here"
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }

    @property
    def script(self) -> list[str]:
        return ["sh", str(self.src / "setup_scripts" / "install.sh")]

    def run(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.script, env=self.env, capture_output=True, text=True, timeout=300, cwd=self.home)

    def close(self) -> None:
        shutil.rmtree(self.venv, ignore_errors=True)
        try:
            self.venv.parent.rmdir()  # the last test's leaves nothing behind
        except OSError:
            pass

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def installer(tmp_path):
    made: list[Installer] = []

    def make(manager: str) -> Installer:
        made.append(Installer(tmp_path, manager))
        return made[-1]

    yield make
    for inst in made:
        inst.close()


def test_a_second_install_restarts_the_running_services_only_when_bead_changed(installer):
    inst = installer(MANAGER)
    # BEAD_VENV relative to where the script runs: the link on PATH must name it absolutely (it named the relative
    # path, which meant nothing from anywhere else, and the install said all was well).
    inst.env["BEAD_VENV"] = os.path.relpath(inst.venv, inst.home)
    first = inst.run()
    assert first.returncode == 0, first.stderr
    assert f"installed: {inst.home}/.local/bin/bead -> {inst.venv}/bin/bead" in first.stderr
    assert (inst.venv / "bin" / "bead").exists() and "restarted" not in first.stderr
    assert "systemctl --user enable --now bead-proxy.service" in inst.calls()
    assert "home        " in first.stdout  # it ends with `bead status`

    again = len(inst.calls())
    second = inst.run()  # the same code: nothing to restart
    assert second.returncode == 0, second.stderr
    assert "restarted" not in second.stderr
    assert not [c for c in inst.calls()[again:] if " restart " in c]

    version = inst.src / "bead" / "version.py"
    version.write_text(version.read_text() + "\n# a change, as a new release brings\n")
    again = len(inst.calls())
    third = inst.run()
    assert third.returncode == 0, third.stderr
    for name in SERVICES:
        assert f"systemctl --user restart bead-{name}.service" in inst.calls()[again:]
        assert f"restarted bead-{name}: bead changed (build " in third.stderr


def test_without_a_service_manager_install_runs_bead_up_and_leaves_a_working_wrapper(installer):
    inst = installer(NO_MANAGER)
    p = subprocess.Popen(inst.script, env=inst.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=inst.home)
    lines: list[str] = []

    def read() -> None:
        assert p.stdout is not None
        for raw in p.stdout:
            lines.append(raw.decode(errors="replace").rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:

        def up() -> bool:
            if p.poll() is not None:
                pytest.fail("install.sh ended:\n" + "\n".join(lines))
            return http_answers(f"http://127.0.0.1:{inst.port}/bead/health")

        assert eventually(up, 120)
        assert eventually(lambda: any(line.startswith("proxy   |") for line in lines))
        out = "\n".join(lines)
        # What a person needs before the services' logs scroll past: the base URL line and the PATH hint.
        base = next(i for i, line in enumerate(lines) if "base URL http://127.0.0.1:" in line)
        assert base < next(i for i, line in enumerate(lines) if line.startswith("proxy   |")), out
        assert f"add {inst.home}/.local/bin to PATH" in out
        assert "no service manager for this user here" in out
        # The wrapper, from the rc block setup wrote, uses the proxy while `bead up` runs it.
        assert (inst.home / ".bead" / "shell.sh").exists()
        token = (inst.home / ".bead" / "proxy.token").read_text().strip()
        r = subprocess.run(
            ["bash", "-ic", "claude -p hello"], env=inst.env, capture_output=True, text=True, timeout=60, cwd=inst.home
        )
        assert r.stdout.strip() == f"BASE=http://127.0.0.1:{inst.port}/{token} ARGS=-p hello", r.stderr
        assert not [c for c in inst.calls() if "enable" in c]  # no unit was loaded anywhere
    finally:
        p.send_signal(signal.SIGINT)  # install.sh exec'd `bead up`: Ctrl-C stops it
        p.wait(60)
        reader.join(30)
    assert p.returncode == 0, "\n".join(lines)
    assert "bead up: stopped" in "\n".join(lines)
