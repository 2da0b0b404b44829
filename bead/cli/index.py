"""bead reindex."""

from __future__ import annotations

import sys

import click

from .common import echo, emit, json_option, open_memory


@click.command()
@json_option
def reindex(as_json):
    """Rebuild index.db from the files and print counts.

    The index is derived: deleting index.db loses nothing.
    """
    from ..index.db import database_errors, index_files
    from ..index.rebuild import rebuild
    from ..index.sqlite import module as sqlite_module

    mem = open_memory()
    try:
        mem.index  # noqa: B018 - opens it: a damaged file says so here
    except database_errors() as exc:
        if isinstance(exc, sqlite_module().OperationalError):
            raise  # locked, busy, no space: nothing is wrong with the file itself, so it is never removed
        # Not a database any more (a disk error, a file written over): it is derived, so it goes, and is built anew.
        mem.close()
        db = mem.home.index_db
        for f in index_files(db):
            f.unlink(missing_ok=True)
        echo(f"warning: {db} could not be read ({exc}): removed it; it is built again from the files", err=True)
        mem = open_memory()
    kvs_count = sum(1 for _ in mem.facts.keys())
    raw_count = sum(1 for _ in mem.raw.files())
    show_bar = not as_json
    stderr = sys.stderr
    with click.progressbar(length=kvs_count + raw_count, label="indexing", file=stderr, hidden=not show_bar) as bar:
        counts, problems = rebuild(mem.index, mem.facts, mem.raw, progress=lambda kind, n: bar.update(n))
    for p in problems:
        echo(f"warning: skipped {p.path}: {p.reason}", err=True)
    for p in mem.remove_orphan_temps():
        echo(f"removed {p}: a temp file a killed writer left", err=True)

    def human(c):
        echo(
            f"indexed {c['keys']} keys ({c['fact_versions']} versions) and "
            f"{c['raw_turns']} raw turns in {c['raw_files']} files; {c['problems']} problem(s)"
        )

    emit(counts, as_json, human)


COMMANDS = [reindex]
