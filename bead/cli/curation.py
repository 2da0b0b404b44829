"""bead review, bead curate, bead candidate, bead skills, bead dashboard: a person curating memory."""

from __future__ import annotations

import sys

import click

from .common import emit, json_option, open_memory


@click.command()
@click.option("--lines", "line_mode", is_flag=True, help="Plain lines even at a terminal (the mode used when stdout "
                                                         "is not a terminal).")
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
@click.option("--kind", "kind", required=True, type=click.Choice(["feedback", "project", "user", "reference"]),
              help="The type of fact the lesson becomes when accepted (feedback: how to work).")
@click.option("--title", required=True, help="One line: what the lesson is about (a skill's name comes from it).")
@click.option("--body-file", "body_file", required=True, type=click.File("r", encoding="utf-8"),
              help="The lesson's text (`-` reads stdin).")
@click.option("--project", help="The project it belongs to (default: the session's).")
@json_option
def candidate_add(session, kind, title, body_file, project, as_json):
    """Write a lesson candidate to the review queue from a session you read: no model call.

    It waits in `bead review` / `bead queue` like any proposal; accepting it
    writes the lesson (trust accepted), and `bead skills` can then install it.
    """
    from ..core.conversation import project_slug
    from ..core.review import add_candidate

    mem = open_memory()
    body = body_file.read(mem.config.store.max_fact_bytes + 1)
    item, added = add_candidate(mem, session, kind, title, body, project_slug(project) if project else None)
    emit({**item.as_dict(), "added": added}, as_json,
         lambda d: click.echo(f"{'queued' if d['added'] else 'already queued'}: review item {d['id']} {d['key']} "
                              f"(evidence: {len(d['sources'])} turn(s) of session {d['session']}); "
                              "decide with `bead review`"))


COMMANDS = [review, candidate]
