"""bead setup, bead up, bead logs."""

from __future__ import annotations

import shlex
import sys

import click

from . import common
from .common import echo, emit, json_option


@click.command()
@click.option(
    "--platform",
    "platform_",
    type=click.Choice(["systemd", "launchd"]),
    help="Which service manager to write for (default: this machine's).",
)
@click.option("--no-load", is_flag=True, help="Write the files only; do not call systemctl/launchctl.")
@click.option("--no-dream", is_flag=True, help="Skip the dream worker service.")
@click.option("--no-rc", is_flag=True, help="Do not add the block that sources shell.sh to ~/.bashrc or ~/.zshrc.")
@click.option("--no-vault", is_flag=True, help="Do not offer to create the vault.")
@click.option("--no-mcp", is_flag=True, help="Do not offer to register bead's MCP server with Claude Code.")
@click.option("--uninstall", is_flag=True, help="Remove the units/agents, shell.sh and the rc block; keep the store.")
@click.option(
    "--executable", type=click.Path(exists=True, dir_okay=False), help="The bead executable the services run (default: this one)."
)
@json_option
def setup(platform_, no_load, no_dream, no_rc, no_vault, no_mcp, uninstall, executable, as_json):
    """Set up this machine: services that start at login, and a `claude` wrapper.

    Writes a default config.yaml if none exists (never changes one), installs
    and enables systemd user units (Linux) or launchd agents (macOS) for the
    proxy, the indexer and the dream worker, writes ~/.bead/shell.sh and a
    marked block in ~/.bashrc or ~/.zshrc that sources it. A second run
    changes nothing. When there is no vault, it offers `bead vault init` at a
    terminal (and prints a hint in a script); --no-vault skips that. When
    Claude Code is on PATH, it offers to register bead's MCP server with it
    (`claude mcp add --scope user bead -- bead mcp`), at a terminal only;
    --no-mcp skips that, and --uninstall removes the registration.
    """

    from ..config import Config, load
    from ..paths import resolve_home, user_home
    from ..setup.install import SERVICES, Plan, check_executable, install, platform_name, which_bead
    from ..setup.install import uninstall as do_uninstall

    # Uninstall creates nothing: a home that does not exist has defaults (a mistyped BEAD_HOME made one).
    home = resolve_home() if uninstall else resolve_home().ensure()
    config = load(home) if not uninstall or home.config.exists() else Config()
    plan = Plan(
        platform=platform_ or platform_name(),
        user_home=user_home(),
        home=home,
        bead=executable or "",
        listen=config.proxy.listen,
        services=tuple(s for s in SERVICES if not (no_dream and s == "dream")),
    )
    if uninstall:
        acts = do_uninstall(plan)
        acts += unregister_mcp(str(plan.home.root))
    else:
        plan.bead = check_executable(executable or which_bead())
        if not no_load:
            _check_manager(plan.platform)  # before anything is written: all or nothing
        acts = install(plan, load=not no_load, rc=not no_rc)
        if not no_vault:
            offer_vault(home)
        if not no_mcp:
            acts += offer_mcp(plan.bead, str(plan.home.root))
        for line in harness_lines(config.proxy.listen, str(plan.home.root)):
            echo(line, err=True)
    idle = "nothing to remove: bead is not set up here" if uninstall else "nothing to change: bead is set up"

    def human(d):
        for line in d["changes"] or [idle]:
            echo(line)

    emit({"platform": plan.platform, "changes": acts}, as_json, human)


def _check_manager(platform: str) -> None:
    """The service manager answers for this user, or BeadError saying what to do instead (nothing written)."""
    import shutil
    import subprocess

    from ..errors import BeadError

    command = ["systemctl", "--user", "show-environment"] if platform == "systemd" else ["launchctl", "managername"]
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=10) if shutil.which(command[0]) else None
    except (OSError, subprocess.TimeoutExpired):
        r = None
    if r is None or r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()[0][:200] if r is not None and (r.stderr or r.stdout) else "not found"
        raise BeadError(
            f"no {platform} service manager answers for this user here (`{' '.join(command)}`: {said}); no unit, "
            "wrapper or rc block was written",
            "run `bead setup --no-load` to write the config, the wrapper and the rc block without services, and start "
            "the services with `bead up` (in the foreground)",
        )


def harness_lines(listen: str, home: str, which=None) -> list[str]:
    """For each other harness found on PATH (Codex CLI, OpenCode, Aider), the line that points it at the proxy
    (docs/harnesses.md). The token stays in its file: each line reads it from there."""
    import shutil

    from ..ports import client_address

    which = which or shutil.which
    listen = client_address(listen)
    token = f"$(cat {shlex.quote(home + '/proxy.token')})"
    base = f"http://{listen}/{token}/openai/v1"
    out = []
    if which("codex"):
        # Not `codex -c openai_base_url=...`: the token would be in the process's arguments, which every user reads.
        out.append(
            f"codex: in ~/.codex/config.toml add a provider whose base_url is http://{listen}/<the token in "
            f"{shlex.quote(home + '/proxy.token')}>/openai/v1 and select it with model_provider (docs/harnesses.md)"
        )
    if which("opencode"):
        out.append(
            f"opencode: in opencode.json set provider.openai.options.baseURL to "
            f'"http://{listen}/{{env:BEAD_TOKEN}}/openai/v1" and `export BEAD_TOKEN={token}`; bead\'s memory tools: '
            'mcp.bead = {"type": "local", "command": ["bead", "mcp"]} (docs/opencode.md)'
        )
    if which("aider"):
        out.append(
            f"aider: `export OPENAI_API_BASE={base}`; name each repository's project with an X-Bead-Project header "
            "in its .aider.model.settings.yml (docs/aider.md)"
        )
    return out


def offer_vault(home) -> None:
    """Offer `bead vault init` once, when there is no vault: at a terminal ask, in a script print a hint."""
    from ..vault import keys

    if keys.info(home).kind != "none":
        return
    if not common.at_terminal():
        echo(
            "vault: none yet; run `bead vault init` at a terminal to keep secrets sealed "
            "(`bead setup --no-vault` leaves this out)",
            err=True,
        )
        return
    if not common.confirm("Create the encrypted vault for secrets (PINs, recovery codes) now?", default=True, err=True):
        echo("vault: not created; `bead vault init` creates it later", err=True)
        return
    from .vault import init_vault, show_created

    show_created(init_vault(home, None, None, "auto"), err=True)  # stdout stays the setup's own (--json)


def offer_mcp(bead: str, home: str) -> list[str]:
    """Offer to register the agent's MCP server with Claude Code: only with `claude` on PATH, only at a terminal,
    only on a yes. In a script, one line with the command; nothing runs."""
    from ..setup import claude

    exe = claude.claude()
    if exe is None or claude.registered(exe):
        return []
    command = " ".join(shlex.quote(a) for a in claude.add_command("claude", bead, home))
    if not common.at_terminal():
        echo(
            f"claude: to give Claude Code bead's memory tools, run `{command}` "
            "(`bead setup` asks at a terminal; --no-mcp leaves this out)",
            err=True,
        )
        return []
    try:
        yes = common.confirm(f"Register bead's MCP server with Claude Code ({command})?", default=True, err=True)
    except click.exceptions.Abort:
        yes = False
    if not yes:
        echo(f"claude: not registered; `{command}` does it later", err=True)
        return []
    done, said = claude.register(exe, bead, home)
    if not done:
        echo(f"claude: `{command}` failed: {said}", err=True)
        return []
    return ["registered bead's MCP server with Claude Code (user scope): claude mcp get bead"]


def unregister_mcp(home: str | None = None) -> list[str]:
    """`claude mcp remove --scope user bead`, when Claude Code is on PATH and knows the server, and the server it
    knows is ``home``'s (where it names one): an uninstall for another home left it as it was."""
    import os

    from ..setup import claude

    exe = claude.claude()
    if exe is None:
        return []
    named = claude.registered_home(exe) if home is not None else None
    if named is not None and home is not None and os.path.normpath(named) != os.path.normpath(home):
        return [f"left bead's MCP server in Claude Code: it is registered for another home ({named})"]
    if not claude.unregister(exe):
        return []
    return ["removed bead's MCP server from Claude Code (claude mcp remove --scope user bead)"]


@click.command()
@click.option("--no-dream", is_flag=True, help="Do not start the dream worker.")
def up(no_dream):
    """Run the proxy, the indexer and the dream worker in the foreground (no init system needed).

    For containers, WSL without systemd, or a quick try. Ctrl-C stops all
    three; if one exits, the others are stopped and bead says which and why.
    """
    from ..config import load
    from ..paths import resolve_home
    from ..setup.up import run_services
    from ..token import load_token

    home = resolve_home().ensure()
    listen = load(home).proxy.listen
    load_token(home)  # the file the line below names exists before a harness reads it
    sys.exit(run_services(include_dream=not no_dream, home=home, listen=listen))


@click.command()
@click.argument("service", required=False, type=click.Choice(["proxy", "indexer", "dream"]))
@click.option("-n", "--lines", default=200, show_default=True)
def logs(service, lines):
    """Show the services' log (all three interleaved, or SERVICE's): journald on Linux, the launchd log
    files on macOS. Under `bead up` the services log to its terminal instead."""
    import shutil
    import subprocess

    from ..errors import BeadError
    from ..setup.install import SERVICES, launchd_log

    names = [service] if service else list(SERVICES)
    not_here = "no bead service is installed here (`bead setup` installs them); under `bead up` the services log to its terminal"
    if sys.platform != "darwin" and not shutil.which("journalctl"):
        raise BeadError(
            "journalctl is not installed here, so bead cannot read the services' log",
            "under `bead up` the services log to its terminal; a systemd service's lines are in journald, which "
            "its own tools read",
        )
    if sys.platform == "darwin":
        found = [(n, launchd_log(n)) for n in names if launchd_log(n).exists()]
        if not found:
            raise BeadError(f"no log at {launchd_log(names[0])}", not_here)
        for n, path in found:
            if len(found) > 1:
                echo(f"==> {n}: {path}")
            text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            echo("\n".join(text), multiline=True)  # a log line may quote what a request held
        return
    from ..paths import resolve_home, user_home
    from ..setup.install import Plan

    plan = Plan(platform="systemd", user_home=user_home(), home=resolve_home(), bead="", listen="", services=SERVICES)
    units = [plan.unit_name(n) for n in names]
    if not any((plan.unit_dir / u).exists() for u in units):
        raise BeadError(f"no bead service unit in {plan.unit_dir}", not_here)
    echo(f"journalctl --user {' '.join('-u ' + u for u in units)} (the last {lines} lines)", err=True)
    r = subprocess.run(
        ["journalctl", "--user", *[a for u in units for a in ("-u", u)], "-n", str(lines), "--no-pager"],
        capture_output=True,
        text=True,
        errors="replace",
    )
    said = r.stderr.strip()
    no_journal = "insufficient permissions" in said.lower() or "no journal files" in said.lower()
    if r.stdout.strip() == "-- No entries --" and not no_journal and r.returncode == 0:
        raise BeadError(
            f"no log line yet from {', '.join(units)}",
            "a service logs once it has started: `bead status` says whether it runs (and `bead setup` loads it)",
        )
    if not (no_journal and r.stdout.strip() == "-- No entries --"):
        echo(r.stdout.rstrip("\n"), multiline=True)
    if no_journal:
        system = " ".join(f"_SYSTEMD_USER_UNIT={u}" for u in units)
        raise BeadError(
            f"journald keeps no journal of your own here ({said.splitlines()[0][:200]})",
            f"the services' lines are in the system journal: `sudo journalctl {system}`, "
            "or join the systemd-journal group; `bead up` shows them in its terminal",
        )
    if r.returncode != 0:
        raise BeadError(f"journalctl failed: {said[:300]}", "run the journalctl line above yourself to see why")


COMMANDS = [setup, up, logs]
