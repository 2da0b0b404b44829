"""The ``bead`` command: a root group plus one module per noun.

Heavy libraries (sqlite-utils, the index, the store) are imported inside the
commands, so ``bead --help`` stays fast.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from . import curation, dream, facts, forget, importing, index, mcp, proxy, search, services, setup, status, vault, why
from . import eval as eval_cmd


class BeadGroup(click.Group):
    """The root group: a BeadError is printed with its hint and exits 1.

    Handled here rather than around ``main`` so that every way of invoking
    the CLI (the console script, ``python -m bead``, click's CliRunner in the
    tests) shows the person the same message.
    """

    def invoke(self, ctx: click.Context):
        from ..errors import BeadError
        from .common import echo

        try:
            return super().invoke(ctx)
        except BeadError as exc:
            # A message may quote what it refuses (a key, a file's name, a line of the trace): shown, never acted on.
            echo(f"error: {exc.message}", err=True)
            if exc.hint:
                echo(f"  hint: {exc.hint}", err=True)
            ctx.exit(1)
        except click.exceptions.Abort:
            click.echo("aborted: nothing was changed", err=True)
            ctx.exit(1)


@click.group(cls=BeadGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bead")
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    help="The bead home to use (default: $BEAD_HOME, else ~/.bead); for clients that start bead without "
    "the environment, such as an MCP client.",
)
def cli(home: str | None) -> None:
    """bead: local memory for coding agents.

    Memory lives as Markdown files under $BEAD_HOME (default ~/.bead, or
    --home); the search index is derived from them and can be rebuilt with
    `bead reindex`.
    """
    if home:
        import os
        from pathlib import Path

        # Every command reads the home from the environment, and the processes a command starts
        # (`bead up`'s services) inherit it.
        os.environ["BEAD_HOME"] = str(Path(home).expanduser().absolute())


for module in (
    facts,
    search,
    forget,
    index,
    importing,
    status,
    eval_cmd,
    proxy,
    why,
    services,
    dream,
    setup,
    vault,
    mcp,
    curation,
):
    for command in module.COMMANDS:
        cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors go to stderr with exit code 1 and a next step."""
    try:
        code = cli.main(args=argv, prog_name="bead", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted: nothing was changed", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        ctx = getattr(exc, "ctx", None)
        name = ctx.command_path if ctx else "bead"
        click.echo(f"  hint: run `{name} --help` for the usage", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
