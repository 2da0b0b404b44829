"""Helpers every command module shares."""

from __future__ import annotations

import json
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


INDEX_LATER = ("note: the index was busy, so search does not show this yet; the file is written and the index "
               "catches up (a running `bead indexer` does it, or run `bead reindex`)")


def emit(data: Any, as_json: bool, human: Callable[[Any], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        human(data)
