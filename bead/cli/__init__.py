"""The ``bead`` command: a root group plus one module per noun.

Heavy libraries (sqlite-utils, the index, the store) are imported inside the
commands, so ``bead --help`` stays fast.
"""

from __future__ import annotations

import errno
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
        from ..log import fallback_to_stderr
        from .common import INTERRUPTED, echo, interrupted_at_work

        fallback_to_stderr()

        try:
            return super().invoke(ctx)
        except BeadError as exc:
            # A message may quote what it refuses (a key, a file's name, a line of the trace): shown, never acted on.
            echo(f"error: {exc.message}", err=True)
            if exc.hint:
                echo(f"  hint: {exc.hint}", err=True)
            ctx.exit(1)
        except click.exceptions.Abort as exc:
            if interrupted_at_work(exc):
                # A Ctrl-C while the command worked (a forget rewriting raw files): "nothing was changed" was untrue.
                echo(INTERRUPTED, err=True)
                ctx.exit(130)
            click.echo("aborted: nothing was changed", err=True)
            if sys.stdin is None or not sys.stdin.isatty():
                echo("  hint: no one could answer the question here (no terminal); pass --yes to go ahead", err=True)
            ctx.exit(1)
        except RuntimeError as exc:
            if "lost sys.stdin" not in str(exc):
                raise
            # a question asked with standard input closed (`... <&-`): as an unanswered one
            echo("error: a question was asked but standard input is closed; nothing was changed", err=True)
            echo("  hint: pass --yes to go ahead without the question", err=True)
            ctx.exit(1)
        except BrokenPipeError:
            raise  # the reader went away (`bead list | head`): click ends quietly, as before
        except OSError as exc:
            # The file system said no (full, read-only, not ours): what and where, and what to do, never a traceback.
            echo(f"error: {exc.strerror or type(exc).__name__}" + (f": {exc.filename}" if exc.filename else ""), err=True)
            echo(f"  hint: {_os_hint(exc)}", err=True)
            ctx.exit(1)
        except Exception as exc:
            from ..index.sqlite import module

            sqlite = module()  # the SQLite driver bead uses (pysqlite3 or sqlite3)
            if not isinstance(exc, sqlite.DatabaseError):
                raise
            echo(f"error: the index (index.db) cannot be used: {exc}", err=True)
            if isinstance(exc, sqlite.OperationalError):  # locked, busy, full: the file itself is fine
                echo("  hint: another program may be using index.db, or the disk is full: run the command again", err=True)
            else:
                echo("  hint: the index is derived from the files: run `bead reindex` to build it again", err=True)
            ctx.exit(1)


def _os_hint(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            "the disk is full: free some space and run the command again (a forget or write stopped midway is "
            "finished by running it again; then `bead reindex` if search still shows what it should not)"
        )
    if exc.errno == errno.EROFS:
        return "bead's home is on a read-only file system: choose a writable home with BEAD_HOME"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "bead cannot use that path: check its owner and permissions (bead's home must be yours)"
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return "something other than a folder is where bead's home (or a folder in it) should be: check BEAD_HOME"
    if exc.filename:
        return "check that path and its file system, then run the command again"
    return "this is the operating system's answer; run the command again, and if it stays, look at `bead status`"


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

        from ..paths import home_path

        # Every command reads the home from the environment, and the processes a command starts
        # (`bead up`'s services) inherit it.
        os.environ["BEAD_HOME"] = str(home_path(home))


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
    except click.exceptions.Abort as exc:
        from .common import INTERRUPTED, interrupted_at_work

        if interrupted_at_work(exc):
            click.echo(INTERRUPTED, err=True)
            sys.exit(130)
        click.echo("aborted: nothing was changed", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        # What click says quotes what was typed (an extra argument): through bead's echo, so an escape sequence in
        # it reaches the terminal as text.
        from .common import echo

        echo(f"Error: {exc.format_message()}", err=True, multiline=True)
        ctx = getattr(exc, "ctx", None)
        name = ctx.command_path if ctx else "bead"
        click.echo(f"  hint: run `{name} --help` for the usage", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        # A bug: its traceback, as Python prints it, but through bead's echo. An exception's message may quote
        # stored or captured text (a key, a value, a file's name), which must reach the terminal as text.
        import traceback

        from .common import echo

        echo(traceback.format_exc().rstrip("\n"), err=True, multiline=True)
        echo("  hint: this is a bug in bead, not in what you typed; the lines above say where (please report them)", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
