"""What `bead setup` writes holds only what it means to, whatever a path, the environment or a listener on the
proxy's port holds (an adversarial review's reproductions, 2026-12-04; each failed before its fix)."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import free_port
from rawhttp import Trickle

from bead.errors import BeadError
from bead.paths import Home
from bead.setup.install import RC_BEGIN, Plan, _strip_block, install


def plan(
    tmp_path: Path, platform: str = "systemd", home: Path | None = None, bead: str = "/bin/true", listen: str = "127.0.0.1:7077"
):
    return Plan(platform=platform, user_home=tmp_path, home=Home(home or tmp_path / ".bead"), bead=bead, listen=listen)


def wrapper(tmp_path: Path, says: str) -> tuple[Plan, dict[str, str]]:
    """shell.sh installed for a home under ``tmp_path``, and an environment whose `claude` prints ``says`` and its
    arguments."""
    p = plan(tmp_path, listen=f"127.0.0.1:{free_port()}")
    install(p, load=False, rc=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(f'#!/bin/sh\necho "{says}$*"\n')
    (bin_dir / "claude").chmod(0o755)
    return p, {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}


@pytest.mark.parametrize("where", ["home", "executable"])
def test_a_line_break_in_a_path_is_refused_before_anything_is_written(tmp_path, where):
    """systemd cannot quote a line break: BEAD_HOME or bead's path holding one would give the unit a line of its own
    (an ExecStartPre= of someone's choosing)."""
    odd = "h\nExecStartPre=/bin/sh -c id\n#"
    p = plan(tmp_path, home=tmp_path / odd) if where == "home" else plan(tmp_path, bead=f"/opt/{odd}/bead")
    with pytest.raises(BeadError, match="control character"):
        install(p, load=False, rc=False)
    assert not p.unit_dir.exists()


@pytest.mark.parametrize(
    "home, exe",
    [
        ("R&D/.bead", "/opt/bead/bin/bead"),
        ("x</string></dict><key>Program</key><string>/bin/sh", "/opt/b</string><string>-c</string><string>touch x"),
    ],
)
def test_a_plist_holds_each_path_as_written(tmp_path, home, exe):
    p = plan(tmp_path, "launchd", home=tmp_path / home, bead=exe)
    pl = plistlib.loads(p.template("proxy").encode())
    assert pl["ProgramArguments"] == [exe, "proxy"] and pl["EnvironmentVariables"] == {"BEAD_HOME": str(tmp_path / home)}
    assert "Program" not in pl


def test_a_listen_address_that_is_no_loopback_address_is_refused_on_every_platform(tmp_path):
    """It goes into shell.sh as well as the units: `$(...)` in it would run at every `claude`."""
    with pytest.raises(BeadError):
        install(plan(tmp_path, "launchd", listen="127.0.0.1$(touch /tmp/pwned):7077"), load=False, rc=False)


def test_uninstall_takes_only_beads_block_not_a_begin_marker_of_the_persons(tmp_path):
    p = plan(tmp_path)
    mine = f"export A=1\n{RC_BEGIN}\nmine\n"
    assert _strip_block(mine + "\n" + p.rc_block()) == mine  # as install appends it


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_the_wrapper_evals_no_value_from_the_environment(tmp_path):
    """The wrapper keeps the claude alias's command across a second source in the same shell; a value of that name
    in the environment is someone else's, and the function evals it."""
    p, env = wrapper(tmp_path, "claude ran: ")
    planted = tmp_path / "planted"
    env |= {"__bead_claude_args": f"$(touch {planted})", "__bead_claude_cmd": f"claude; touch {planted} #"}
    r = subprocess.run(["bash", "-c", f". {p.shell_sh}; claude -p hi"], env=env, capture_output=True, text=True, timeout=60)
    assert "claude ran: -p hi" in r.stdout, r.stderr
    assert not planted.exists()


def test_the_wrappers_check_ends_however_slowly_a_listener_answers(tmp_path):
    """A listener on the proxy's port that sends its answer a byte at a time held `claude` for as long as it liked
    (the timeout was per read); the whole check now ends, and claude runs without the proxy."""
    token = tmp_path / "proxy.token"
    token.write_text("t" * 43 + "\n")
    with Trickle(b"HTTP/1.1 200 OK\r\n" + b"X" * 1000, every=0.3) as listener:
        r = subprocess.run(
            [sys.executable, "-E", "-P", "-m", "bead.ports", f"127.0.0.1:{listener.port}", str(token)],
            capture_output=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    assert r.returncode == 1


@pytest.mark.parametrize("shell", [s for s in ("bash", "zsh") if shutil.which(s)])
def test_a_shell_that_exports_everything_keeps_the_aliass_arguments_when_it_sources_again(tmp_path, shell):
    """Under `set -a` the wrapper's own values were exported, and the check that drops exported ones (someone
    else's) dropped them on the next source."""
    p, env = wrapper(tmp_path, "ARGS=")
    script = f"set -a; alias claude='claude --verbose'; . {p.shell_sh}; claude a; . {p.shell_sh}; claude b"
    r = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.split("\n")[:2] == ["ARGS=--verbose a", "ARGS=--verbose b"], (r.stdout, r.stderr)
