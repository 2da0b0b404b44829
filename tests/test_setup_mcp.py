"""`bead setup` offers to register the agent's MCP server with Claude Code; `--uninstall` removes it.

A stand-in `claude` on PATH records its arguments and remembers what was added, as `claude mcp` does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

CLAUDE = r"""#!/bin/bash
# Stands in for claude: records argv; `mcp get bead` succeeds once `mcp add ... bead` ran (and not after remove).
echo "claude $*" >> "{log}"
state="{log}.state"
case "$*" in
  "mcp get bead") grep -q "^added$" "$state" 2>/dev/null && exit 0 || exit 1 ;;
  "mcp add --scope user bead -- "*) echo added > "$state"; exit 0 ;;
  "mcp remove --scope user bead") grep -q "^added$" "$state" 2>/dev/null || exit 1; echo removed > "$state"; exit 0 ;;
esac
exit 0
"""


@pytest.fixture
def person(tmp_path):
    """A temporary HOME whose PATH has recorders for claude, systemctl and launchctl."""
    home = tmp_path / "person"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "commands.log"
    log.write_text("")
    (bin_dir / "claude").write_text(CLAUDE.format(log=log))
    for name in ("systemctl", "launchctl"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}.services"\nexit 0\n')
    for p in bin_dir.iterdir():
        p.chmod(0o755)
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SHELL": "/bin/bash",
        "BEAD_HOME": str(home / ".bead"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    return home, log, env


def claude_calls(log) -> list[str]:
    return [ln for ln in log.read_text().splitlines() if ln.startswith("claude ")]


ARGS = ("setup", "--platform", "systemd", "--no-load", "--no-rc", "--no-vault", "--executable")


def test_without_a_terminal_it_prints_the_command_and_runs_nothing(person):
    home, log, env = person
    true = shutil.which("true")
    r = subprocess.run(
        [sys.executable, "-m", "bead", *ARGS, true],
        env={**os.environ, **env},
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    home = env["BEAD_HOME"]
    assert f"run `claude mcp add --scope user bead -- {true} --home {home} mcp`" in r.stderr
    assert [c for c in claude_calls(log) if " add " in c] == []


def test_at_a_terminal_it_asks_and_registers_once_then_uninstall_removes_it(person, bead, monkeypatch):
    from bead.cli import common

    home, log, env = person
    monkeypatch.setattr(common, "at_terminal", lambda: True)
    monkeypatch.setenv("PATH", env["PATH"])
    true = shutil.which("true")
    r = bead(*ARGS, true, input="y\n", env=env)
    assert r.code == 0, r.err
    assert "Register bead's MCP server with Claude Code" in r.err
    assert f"claude mcp add --scope user bead -- {true} --home {env['BEAD_HOME']} mcp" in claude_calls(log)
    assert "registered bead's MCP server with Claude Code" in r.out
    again = bead(*ARGS, true, env=env)  # registered: no second question
    assert again.code == 0 and "Register bead's MCP server" not in again.err
    assert len([c for c in claude_calls(log) if " add " in c]) == 1
    gone = bead("setup", "--uninstall", "--platform", "systemd", env=env)
    assert gone.code == 0, gone.err
    assert "claude mcp remove --scope user bead" in claude_calls(log)
    assert "removed bead's MCP server from Claude Code" in gone.out


def test_a_no_registers_nothing_and_no_mcp_does_not_ask(person, bead, monkeypatch):
    from bead.cli import common

    home, log, env = person
    monkeypatch.setattr(common, "at_terminal", lambda: True)
    monkeypatch.setenv("PATH", env["PATH"])
    true = shutil.which("true")
    r = bead(*ARGS, true, input="n\n", env=env)
    assert r.code == 0 and "not registered" in r.err
    assert bead(*ARGS, true, "--no-mcp", env=env).code == 0
    assert [c for c in claude_calls(log) if " add " in c] == []
    # With no input at all (EOF at the question) it is a no, not a crash.
    assert bead(*ARGS, true, env=env).code == 0


def test_without_claude_on_path_nothing_is_said(person, bead, monkeypatch, tmp_path):
    from bead.cli import common

    home, log, env = person
    (tmp_path / "bin" / "claude").unlink()
    true = shutil.which("true")
    monkeypatch.setattr(common, "at_terminal", lambda: True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no claude anywhere on it
    r = bead(*ARGS, true, env={**env, "PATH": str(tmp_path / "bin")})
    assert r.code == 0 and "claude" not in r.err.lower()


def test_home_option_names_the_home_for_every_command(bead, tmp_path):
    """`bead --home DIR` works where the environment has no BEAD_HOME (an MCP client's minimal one)."""
    other = tmp_path / "other-home"
    r = bead("--home", str(other), "write", "user/editor", "Helix", "--type", "user", env={"BEAD_HOME": ""})
    assert r.code == 0, r.err
    assert (other / "store" / "facts" / "user" / "editor" / "v1.md").is_file()
    listed = bead("--home", str(other), "list", "--json", env={"BEAD_HOME": ""})
    assert '"user/editor@v1"' in listed.out
