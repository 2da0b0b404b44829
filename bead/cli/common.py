"""Helpers every command module shares.

Whatever a command prints for a person goes through ``echo`` (or ``emit``): stored and captured text may come
from an attacker, and a terminal acts on the control and invisible characters in it (bead.display says how).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def at_terminal() -> bool:
    """Whether a person can be asked: stdin is a terminal, and so is stderr, where the question goes.
    A script (or a test that captures the output) gets a hint or an error instead of a prompt."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def open_memory():
    from ..core.memory import Memory

    return Memory.open()


INDEX_LATER = (
    "note: the index was busy, so search does not show this yet; the file is written and the index "
    "catches up (a running `bead indexer` does it, or run `bead reindex`)"
)


def confirm(text: str, **kwargs: Any) -> bool:
    """click.confirm, where a Ctrl-C is an answer: nothing was changed yet (the root group says so), where one during
    the work may have stopped it part way (``interrupted_at_work``)."""
    try:
        # Shown as `echo` shows text: a question that quotes a path or a value (the home `bead setup` registers)
        # printed a bidi override raw, which turned the rest of the question around (an outside attack).
        from ..display import visible

        return bool(click.confirm(visible(text, multiline=True), **kwargs))
    except KeyboardInterrupt:
        raise click.Abort() from None


def prompt(text: str, **kwargs: Any) -> Any:
    """click.prompt, where a Ctrl-C is an answer (``confirm``)."""
    try:
        from ..display import visible

        return click.prompt(visible(text, multiline=True), **kwargs)
    except KeyboardInterrupt:
        raise click.Abort() from None


def interrupted_at_work(exc: BaseException) -> bool:
    """Whether click's Abort ``exc`` is a Ctrl-C that came while the command worked: click raises it from the
    KeyboardInterrupt, where a question's (``confirm``, ``prompt``) is raised from none."""
    return isinstance(exc.__cause__, KeyboardInterrupt)


INTERRUPTED = (
    "interrupted: the command may have stopped part way; what it did stays and nothing is lost: run it again to "
    "finish (`bead status` says what is left)"
)


def echo(text: object = "", err: bool = False, multiline: bool = False) -> None:
    """Print ``text`` for a person: every control and invisible format character as its escape
    (bead.display.visible), line breaks too unless ``multiline`` (one call, one line: a value cannot forge
    the next line of the output)."""
    from ..display import visible

    click.echo(visible(str(text), multiline), err=err)


def echo_json(data: Any, indent: int | None = 2) -> None:
    """Print ``data`` as JSON: the same value, with no character in it a terminal acts on (bead.display.json_text)."""
    from ..display import json_text

    click.echo(json_text(data, indent=indent))


def emit(data: Any, as_json: bool, human: Callable[[Any], None]) -> None:
    if as_json:
        echo_json(data)
    else:
        human(data)


def raw_file_unread(path: str) -> None:
    """Say that a forget, seal or secret write could not read a raw file, which may still hold the value."""
    echo(
        f"warning: could not read raw file {path} (it may still hold the value); if `bead status` calls it a hard "
        "link, `bead status --fix` gives it a copy of its own, else check that bead can read it; then run the "
        "same command again",
        err=True,
    )


def also_in_clear(keys: list[str]) -> None:
    """Say which other facts still hold the value in clear (a forget or seal of one key leaves them)."""
    if keys:
        echo(
            f"warning: {', '.join(keys)} still hold(s) the value in clear; "
            f"forget or seal them too (`bead forget {keys[0]}`, `bead seal {keys[0]}`)",
            err=True,
        )


def skill_files_said(summary: dict) -> None:
    """Say which skill files in the person's projects a forget or seal removed, and which it left."""
    for path in summary.get("skill_files") or []:
        echo(
            f"removed {path}: `bead skills install` wrote it from this memory (if it was committed, "
            "git's history still holds it)",
            err=True,
        )
    for path in summary.get("skill_files_left") or []:
        echo(
            f"warning: left {path}: it holds the value, or `bead skills install` made it from this memory, and it is "
            "not as install wrote it (an edit, a --force's backup) or could not be read; look at it and remove the "
            "value yourself",
            err=True,
        )
    if summary.get("skill_files_unread"):
        echo(
            f"warning: {summary['skill_files_unread']}: look in your projects' .claude/skills folders for the value",
            err=True,
        )


def project_name(value: str) -> str:
    """A project named on the command line, as bead names projects (a folder's name, lower-cased); BeadError for
    one that names none (``../..``)."""
    from ..conversation import project_slug
    from ..errors import BeadError

    slug = project_slug(value)
    if slug is None:
        raise BeadError(f"{value!r} is not a project name", "give the project's folder name, e.g. --project shop")
    return slug
