"""bead review, bead curate, bead candidate, bead skills, bead dashboard: a person curating memory."""

from __future__ import annotations

import sys

import click

from . import common
from .common import echo, echo_json, emit, json_option, open_memory


@click.command()
@click.option(
    "--lines", "line_mode", is_flag=True, help="Plain lines even at a terminal (the mode used when stdout is not a terminal)."
)
def review(line_mode):
    """Walk the review queue and the latest dream report, one item at a time, with no model.

    Each item shows its reason, dated excerpts of the turns it came from and
    the current value it would change. Keys: a accept, e edit then accept,
    r reject (asks why), p pin, i reinforce, f forget and x seal (a preview
    first, then y/n), c make a lesson candidate, s skip, q quit. When stdout
    is not a terminal, each answer is one line on stdin.
    """
    from ..tui.review import main

    mem = open_memory()
    try:
        main(mem, line_mode or not (sys.stdout.isatty() and sys.stdin.isatty()))
    finally:
        mem.close()


@click.group()
def candidate():
    """Review candidates written by hand (lessons the person or an agent knows from a session)."""


@candidate.command("add")
@click.option("--session", required=True, help="The raw session the lesson comes from; its turns are the evidence.")
@click.option(
    "--kind",
    "kind",
    required=True,
    type=click.Choice(["feedback", "project", "user", "reference"]),
    help="The type of fact the lesson becomes when accepted (feedback: how to work).",
)
@click.option("--title", required=True, help="One line: what the lesson is about (a skill's name comes from it).")
@click.option(
    "--body-file", "body_file", required=True, type=click.File("r", encoding="utf-8"), help="The lesson's text (`-` reads stdin)."
)
@click.option("--project", help="The project it belongs to (default: the session's).")
@json_option
def candidate_add(session, kind, title, body_file, project, as_json):
    """Write a lesson candidate to the review queue from a session you read: no model call.

    It waits in `bead review` / `bead queue` like any proposal; accepting it
    writes the lesson (trust accepted), and `bead skills` can then install it.
    """
    from ..core.review import add_candidate

    mem = open_memory()
    try:
        body = body_file.read(mem.config.store.max_fact_bytes + 1)
    except UnicodeDecodeError:
        from ..errors import BeadError

        raise BeadError("the --body-file is not UTF-8 text", "save the lesson as UTF-8 (or plain ASCII) and try again") from None
    item, added = add_candidate(mem, session, kind, title, body, common.project_name(project) if project else None)
    emit(
        {**item.as_dict(), "added": added},
        as_json,
        lambda d: echo(
            f"{'queued' if d['added'] else 'already queued'}: review item {d['id']} {d['key']} "
            f"(evidence: {len(d['sources'])} turn(s) of session {d['session']}); "
            "decide with `bead review`"
        ),
    )


@click.command()
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the MCP configuration of the curator's server (for another harness) and start nothing.",
)
@click.option(
    "--claude", "claude_exe", default="claude", show_default=True, envvar="BEAD_CLAUDE", help="The Claude Code command to run."
)
def curate(print_config, claude_exe):
    """Start a Claude Code session with the curator's MCP server, opening on the latest dream report and the queue.

    Writes curate-mcp.json (0600) in the home and runs `claude --mcp-config
    FILE --strict-mcp-config --setting-sources user --append-system-prompt PROMPT` in the home. When
    ANTHROPIC_BASE_URL points at bead's proxy it is left out of the session's
    environment, so the session captures nothing (a capture would bring back
    what you forget in it).
    """
    import os
    import shutil
    import subprocess

    from .. import files as safe
    from ..config import load
    from ..core.curate import summary
    from ..core.memory import Memory
    from ..errors import BeadError
    from ..paths import resolve_home
    from ..setup import curate as launch
    from ..setup.install import which_bead

    home = resolve_home().ensure()
    config = load(home)
    bead_exe = which_bead()
    if print_config:
        echo_json(launch.mcp_config(home, bead_exe))
        return
    exe = shutil.which(claude_exe)
    if exe is None:
        raise BeadError(
            f"`{claude_exe}` is not on PATH",
            "install Claude Code, or give another harness the server: `bead curate --print-config`",
        )
    path = launch.write_config(home, bead_exe)
    with Memory(home, config) as mem:
        prompt = launch.system_prompt(summary(mem))
    try:
        token: str | None = safe.read_text(home.proxy_token, root=home.root).strip()
    except (OSError, safe.UnsafePath):
        token = None
    env, removed = launch.child_env(dict(os.environ), config, token)
    if removed:
        echo(
            "note: ANTHROPIC_BASE_URL points at bead's proxy; this session goes to the API directly, so "
            "that nothing it shows is captured back into memory",
            err=True,
        )
    echo(f"bead curate: {exe} with the curator's server ({path})", err=True)
    # In the home, not the current directory: a repository's CLAUDE.md and settings are not the curator's.
    code = subprocess.call(launch.command(exe, path, prompt), env=env, cwd=home.root)
    click.get_current_context().exit(code)


def _project_dir(path: str | None):
    from pathlib import Path

    from ..paths import enclosing_git

    here = Path(path or ".").resolve()
    return here if path else (enclosing_git(here) or here)


@click.group()
def skills():
    """Agent Skills files (.claude/skills/<name>/SKILL.md) from what the person stated or approved.

    Only pinned feedback and project facts the person stated or accepted, and
    lessons approved from the review queue, become skills: never a fact an
    agent observed or the dream inferred (its text may come from a tool's
    output). Installing is this explicit command only.
    """


_dir_option = click.option(
    "--dir",
    "project_dir",
    type=click.Path(file_okay=False),
    help="The project folder (default: the git checkout around the working directory).",
)
_project_option = click.option("--project", help="The project whose facts become skills (default: the folder's).")


def _skills_args(project_dir, project):
    from ..conversation import project_from_cwd

    folder = _project_dir(project_dir)
    name = common.project_name(project) if project else project_from_cwd(str(folder))
    return folder, name


def _show_skills(rows, verb, folder=None, project=None):
    if not rows:
        where = (
            f" for project {project} (the project comes from the folder, {folder}; run this in the project's "
            "checkout, or give --dir or --project)"
            if folder is not None
            else ""
        )
        echo(
            f"no skills{where}: pin a feedback or project fact you stated (`bead write KEY TEXT --type feedback --pin`) "
            "or accept a lesson in `bead review`"
        )
    for d in rows:
        echo(f"{d['status']:<9} {d['path']}  ({d['metadata']['bead_version_id']})")
        if d.get("backup"):
            echo(f"{'':<9} what it held before is kept as {d['backup']}")
    kept = [d for d in rows if d["status"] in ("differs", "kept")]
    if kept:
        echo(
            f"{len(kept)} file(s) differ from memory and were {verb}; `bead skills install --force` replaces them "
            "(keeping each as SKILL.md.bak beside it)"
        )


@skills.command("preview")
@_dir_option
@_project_option
@click.option("--show", is_flag=True, help="Print each file's content too.")
@json_option
def skills_preview(project_dir, project, show, as_json):
    """Show the skills files install would write, and whether each exists already; writes nothing."""
    from ..core import skills as sk

    folder, name = _skills_args(project_dir, project)
    rows = [s.as_dict() for s in sk.plan(open_memory(), folder, name)]

    def human(rs):
        _show_skills(rs, "not overwritten", folder, name)
        if show:
            for d in rs:
                echo()
                echo(f"==> {d['path']}")
                echo(d["content"], multiline=True)

    emit(rows, as_json, human)


@skills.command("install")
@_dir_option
@_project_option
@click.option("--force", is_flag=True, help="Overwrite a skill file whose content differs from memory.")
@json_option
def skills_install(project_dir, project, force, as_json):
    """Write the skills files into the project (.claude/skills/<name>/SKILL.md)."""
    from ..core import skills as sk

    folder, name = _skills_args(project_dir, project)
    rows = [s.as_dict() for s in sk.install(open_memory(), folder, name, force)]
    emit(rows, as_json, lambda rs: _show_skills(rs, "kept", folder, name))


@click.command()
@click.option("--listen", default="127.0.0.1:7079", show_default=True, help="Loopback host:port to serve on.")
@click.option(
    "--trace",
    "trace_file",
    envvar="BEAD_TRACE",
    type=click.Path(dir_okay=False),
    help="The proxy's trace file for the injections (default: config proxy.trace, and every trace a proxy of "
    "this home was started with).",
)
def dashboard(listen, trace_file):
    """Serve a read-only page of memory at a glance on loopback (Ctrl-C stops it).

    Counts, the latest dream report, recent injections and why, the review
    queue, the last `bead eval` figures and a plot of memory growth. Only the
    home's owner sees it: on Linux the kernel says who connects; elsewhere
    open the address with this run's secret that this prints.
    """
    from ..config import load
    from ..errors import BeadError
    from ..log import setup_logging
    from ..mcp.listen import parse_listen
    from ..paths import resolve_home

    try:
        # `localhost` is 127.0.0.1 here and in the address printed: a browser given `localhost` tries ::1 first, where
        # another user may listen.
        host, port, loopback = parse_listen(listen)
    except BeadError:
        loopback = False
    if not loopback:
        raise BeadError(
            f"--listen {listen} is not a loopback address:port (a port from 1 to 65535)",
            "the dashboard serves only on loopback, e.g. --listen 127.0.0.1:7079",
        )
    from ..dashboard.app import create_app, serve  # Quart: only for an address it will serve on

    setup_logging("dashboard")
    home = resolve_home().ensure()
    app = create_app(home, load(home), trace_file)
    token = app.extensions["bead.dashboard.token"]
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def listening() -> None:
        echo(f"bead dashboard on {where}/ (yours: the kernel says who connects on Linux)", err=True)
        echo(
            f"  from anywhere else, or another OS: {where}/{token}/ (a secret of this run only: keep the address to yourself)",
            err=True,
        )

    serve(app, host, port, listening)


COMMANDS = [review, candidate, curate, skills, dashboard]
