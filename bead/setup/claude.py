"""Registering the agent's MCP server with Claude Code: `claude mcp add --scope user bead -- <bead> --home <home> mcp`.

Only when `claude` is on PATH, and only with the person's yes at a terminal
(`bead setup` asks; in a script it prints the command instead and runs
nothing). `bead setup --uninstall` removes the registration. The commands go
through the same runner as the services' (tests replace it).
"""

from __future__ import annotations

import re
import shutil
import subprocess

from .install import Runner, run

NAME = "bead"


def claude() -> str | None:
    return shutil.which("claude")


def add_command(claude_exe: str, bead: str, home: str) -> list[str]:
    """The registration, with the home it was set up for: a client may start the server without BEAD_HOME."""
    return [claude_exe, "mcp", "add", "--scope", "user", NAME, "--", bead, "--home", home, "mcp"]


def remove_command(claude_exe: str) -> list[str]:
    return [claude_exe, "mcp", "remove", "--scope", "user", NAME]


def registered(claude_exe: str, runner: Runner = run) -> bool:
    """Whether Claude Code already knows a server named bead (`claude mcp get bead` succeeds)."""
    try:
        return runner([claude_exe, "mcp", "get", NAME]).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def register(claude_exe: str, bead: str, home: str, runner: Runner = run) -> tuple[bool, str]:
    """(done, what claude said when it was not)."""
    try:
        r = runner(add_command(claude_exe, bead, home))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, type(exc).__name__
    return r.returncode == 0, (r.stderr or r.stdout or "").strip()[:300]


def registered_home(claude_exe: str, runner: Runner = run) -> str | None:
    """The home the registered bead server names (`--home HOME` in `claude mcp get bead`); None where it names none
    that can be read."""
    try:
        r = runner([claude_exe, "mcp", "get", NAME])
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    # `Args: --home HOME mcp`, the arguments joined by blanks: the home runs to the last `mcp` (a home with a space).
    for line in (r.stdout or "").splitlines():
        m = re.search(r"--home\s+(.+?)\s+mcp\s*$", line)
        if m:
            return m.group(1)
    return None


def unregister(claude_exe: str, runner: Runner = run) -> bool:
    """True when a registration was removed (False: there was none, or claude refused)."""
    try:
        return runner(remove_command(claude_exe)).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
