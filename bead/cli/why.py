"""bead why."""

from __future__ import annotations

import json

import click

from .common import echo, emit


@click.command(context_settings={"ignore_unknown_options": True})  # so that `bead why -2` works
@click.argument("which", required=False, default="-1")
@click.option(
    "--trace",
    "trace_file",
    envvar="BEAD_TRACE",
    type=click.Path(dir_okay=False),
    help="The proxy's trace file (default: config proxy.trace, or BEAD_TRACE).",
)
@click.option("--session", help="Only requests of this session.")
@click.option("--json", "as_json", is_flag=True, help="Print the trace entry as JSON.")
def why(which, trace_file, session, as_json):
    """Explain one proxied request from the trace: cues, candidates, what was injected and why the rest was not.

    WHICH is an index into the trace (default -1, the latest request; 0 is
    the first). The proxy records with `proxy.trace` in config.yaml (the services read it; restart the
    proxy after adding it), `bead proxy --trace FILE` or BEAD_TRACE.
    """
    from pathlib import Path

    from ..errors import BeadError
    from .common import open_memory

    hint = ""
    if not trace_file:
        from ..core.health import trace_hint

        mem = open_memory()
        trace_file = mem.config.proxy.trace
        hint = "" if trace_file else trace_hint(mem.home)
        mem.close()
    if not trace_file:
        raise BeadError("no trace file is configured: the proxy keeps none by default", hint)
    path = Path(trace_file).expanduser()
    if not path.exists():
        raise BeadError(
            f"no trace at {path}",
            "the proxy writes it once it runs with that trace (`proxy.trace` in config.yaml for the services, or "
            "`bead proxy --trace FILE`) and a request went through",
        )
    from ..files import lines_of, read_text

    entries = []
    # Split at newlines only: a cue holding U+2028 or U+0085 (written raw) would cut its record in pieces, hiding the
    # request or making a piece such as `42` pass for one. Read as every trace reader reads it (bead.files): never
    # through a link put in its place, never a FIFO that would hold the command for ever.
    try:
        text = read_text(path, root=path.parent, errors="replace")
    except OSError as exc:  # bead.files' refusals (a link, a FIFO, a hard link) are BeadErrors and pass through
        raise BeadError(f"cannot read the trace at {path}: {exc.strerror or exc}", "check the file's permissions") from None
    for line in lines_of(text):
        try:
            e = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(e, dict) and (session is None or e.get("session") == session):
            entries.append(e)
    try:
        entry = entries[int(which)]
    except (ValueError, IndexError):
        raise BeadError(f"no request {which} in the trace ({len(entries)} recorded)", "use an index such as -1 or 0") from None

    # The trace holds what the conversation said (cues, the newest user message, reasons): every line goes through
    # echo, one line each, so nothing in it reaches the terminal as a control or forges a line of this output.
    def human(e):
        from ..core.trace import listed
        from ..display import one_line

        def words(items: list) -> str:
            return ", ".join(str(i) for i in items)

        echo(f"request at {e.get('at')}  session {e.get('session')}  thread {e.get('thread')}  project {e.get('project')}")
        echo(f"roles: {' '.join(str(r) for r in listed(e, 'roles'))}   newest user message: {e.get('newest_user')}")
        if e.get("pinned") is not None:
            echo(f"pinned block built: {words(listed(e, 'pinned')) or '(empty)'}")
        echo("cues:")
        for c in listed(e, "cues"):
            if isinstance(c, dict):
                echo(f"  [{c.get('source')}] {one_line(str(c.get('text', '')), 120)}")
        echo(f"injected: {words(listed(e, 'injected')) or 'nothing'}")
        pointed = {str(p) for p in listed(e, "pointers")}
        if pointed:
            echo(f"pointed to (key and title only): {words(listed(e, 'pointers'))}")
        rejected = [r for r in listed(e, "rejected") if isinstance(r, dict)]
        if rejected:
            echo("not injected:")
            for r in rejected:
                mark = "  (pointed to)" if str(r.get("id")) in pointed else ""
                echo(f"  {str(r.get('score', '')):>6}  {r.get('id')}: {r.get('reason')}{mark}")
        if e.get("remembered"):
            echo(f"remembered: {e['remembered']}")
        if e.get("errors"):
            echo(f"failed open: {words(listed(e, 'errors')) or e['errors']}")
        echo(f"timings: prepare {e.get('prepare_ms')} ms, recall {e.get('recall_ms', '-')} ms")

    emit(entry, as_json, human)


COMMANDS = [why]
