"""bead import: earlier conversations of a harness into the raw log."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from ..errors import BeadError
from .common import echo, emit, json_option, open_memory


def _since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise BeadError(f"--since {value!r} is not a date", "give a date such as 2026-01-31 (or 2026-01-31T09:00)") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@click.group("import")
def import_() -> None:
    """Read a harness's saved conversations into the raw log (secret scan included; a second run adds nothing)."""


def _run(kind: str, files, run, folder, since, project, as_json) -> None:
    from ..wire import formats

    mem = open_memory()
    with click.progressbar(length=len(files), label="importing", file=sys.stderr, hidden=as_json) as bar:
        counts = run(mem, formats.read_items, folder, _since(since), project, progress=lambda p: bar.update(1))

    def human(c):
        echo(
            f"read {c['files']} {kind} file(s): {c['sessions']} session(s); added {c['turns_added']} "
            f"turn(s), {c['turns_present']} already in the raw log, {c['redacted']} with secrets redacted"
        )
        skipped = [
            f"{c['skipped_project']} file(s) of other projects" if c["skipped_project"] else "",
            f"{c['skipped_old']} message(s) before --since" if c["skipped_old"] else "",
            f"{c['skipped_long_lines']} line(s) too long" if c["skipped_long_lines"] else "",
            f"{c['skipped_files']} file(s) gone or unreadable by then" if c["skipped_files"] else "",
            f"{c['unreadable_lines']} line(s) that are no JSON object (damaged, or not UTF-8)" if c["unreadable_lines"] else "",
        ]
        if any(skipped):
            echo("skipped " + ", ".join(s for s in skipped if s))

    emit(counts.as_dict(), as_json, human)
    if counts.unverified:
        echo(
            f"note: {counts.unverified} turn(s) came from a folder that is not the harness's own ({folder}): what "
            "the person typed there is not taken as your word, so what the dream learns from it waits for "
            "`bead review` (a transcript from elsewhere may be anyone's)",
            err=True,
        )
    if counts.skipped_long_lines:
        limit = mem.config.import_.max_line_bytes
        echo(
            f"note: {counts.skipped_long_lines} line(s) longer than import.max_line_bytes ({limit} bytes) were "
            "skipped, unread; to import them, raise import.max_line_bytes in config.yaml and run this again "
            "(what is imported already is not written twice)",
            err=True,
        )


_SINCE = click.option("--since", help="Only messages from this date on (YYYY-MM-DD, UTC unless a zone is given).")
_PROJECT = click.option("--project", help="Only conversations of this project (as bead names it: the working directory's).")


@import_.command("claude-code")
@_SINCE
@_PROJECT
@click.option(
    "--from",
    "root",
    type=click.Path(file_okay=False, exists=True),
    help="The folder of transcripts (default ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects).",
)
@json_option
def claude_code(since, project, root, as_json):
    """Claude Code's transcripts (~/.claude/projects/<dir>/<session>.jsonl), subagents included.

    Turns keep their times, Claude Code's session ids (the ones the proxy
    uses) and the project of their working directory.
    """
    from pathlib import Path

    from ..core import history

    folder = Path(root) if root else history.default_root()
    _run("transcript", history.transcript_files(folder), history.import_claude_code, folder, since, project, as_json)


@import_.command("codex")
@_SINCE
@_PROJECT
@click.option(
    "--from",
    "root",
    type=click.Path(file_okay=False, exists=True),
    help="The folder of sessions (default ~/.codex/sessions, or $CODEX_HOME/sessions).",
)
@json_option
def codex(since, project, root, as_json):
    """Codex CLI's sessions (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl).

    Read as the proxy's OpenAI route reads a Responses request; turns keep
    their times, Codex's session ids and the project of their working directory.
    """
    from pathlib import Path

    from ..core import history

    folder = Path(root) if root else history.codex_root()
    _run("session", history.codex_files(folder), history.import_codex, folder, since, project, as_json)


COMMANDS = [import_]
