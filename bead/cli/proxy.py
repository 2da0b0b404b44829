"""bead proxy."""

from __future__ import annotations

import click

from .common import echo


@click.command()
@click.option("--listen", help="Loopback host:port (default: config proxy.listen, 127.0.0.1:7077).")
@click.option("--upstream", help="The real API base URL (default: config proxy.upstream).")
@click.option("--openai-upstream", help="Where paths under /openai go (default: config proxy.openai_upstream).")
@click.option("--project", help="Project when the harness reports no working directory.")
@click.option("--trace", "trace", envvar="BEAD_TRACE", help="Append one JSON line per request to this file.")
@click.option(
    "--workers",
    type=click.IntRange(1, 16),
    help="Processes on the one port (default: config proxy.workers, else the number of cores, at most 4).",
)
def proxy(listen, upstream, openai_upstream, project, trace, workers):
    """Run the proxy: the Anthropic Messages API at its root, the OpenAI APIs under /openai.

    Forwards every request with the caller's own credentials, captures turns
    into the raw log and injects memory into POST /v1/messages and, under
    /openai, into POST .../chat/completions and .../responses, for the home's
    owner only. Point Claude Code at it with
    ANTHROPIC_BASE_URL=http://127.0.0.1:7077/$(cat ~/.bead/proxy.token)
    (the `claude` wrapper from `bead setup` does this), and an OpenAI harness
    at the base URL http://127.0.0.1:7077/$(cat ~/.bead/proxy.token)/openai/v1.
    """
    import sys

    from ..core.memory import Memory
    from ..log import setup_logging
    from ..proxy.access import shown_url
    from ..proxy.app import create_app, prepare
    from ..proxy.engine import Engine
    from ..proxy.serve import parse_listen, serve_workers
    from ..proxy.workers import Board, default_workers, fewer_malloc_arenas

    fewer_malloc_arenas()
    setup_logging("proxy")
    mem = Memory.open()
    home, config = mem.home, mem.config
    host, port = parse_listen(listen or config.proxy.listen)
    upstream = upstream or config.proxy.upstream
    openai_upstream = openai_upstream or config.proxy.openai_upstream
    from ..config import upstream_problem
    from ..errors import BeadError

    for name, value in (("--upstream", upstream), ("--openai-upstream", openai_upstream)):
        if (problem := upstream_problem(value)) is not None:
            raise BeadError(f"{name} {problem}", f"give {name} the API's base URL, such as https://api.anthropic.com")
    n = workers or config.proxy.workers or default_workers()
    mem.index  # noqa: B018 - built here if missing, once, not by each worker
    mem.close()
    board = Board(n) if n > 1 else None
    prepare()
    if n > 1 and config.recall.semantic:
        from ..index import semantic

        if semantic.available():
            import numpy  # noqa: F401 - the workers' rescoring needs it: imported once, shared after the fork
    shown = f"[{host}]" if ":" in host else host
    line = f"bead proxy on http://{shown}:{port} -> {shown_url(upstream)} (/openai -> {shown_url(openai_upstream)})"
    if n > 1:
        line += f", {n} workers"

    def make_app(slot: int):
        engine = Engine(home, config, default_project=project, trace_path=trace)
        if board is not None:
            engine.share(board, slot)
        return create_app(engine, upstream, openai_upstream=openai_upstream)

    status = serve_workers(make_app, n, host, port, lambda: echo(line, err=True), board.retire if board else None)
    if status:
        sys.exit(status)


@click.command("check-proxy")
@click.option("--listen", help="The proxy's host:port (default: config proxy.listen).")
def check_proxy(listen):
    """Exit 0 when this home's proxy answers at its address and proves it holds the home's token (and, on Linux,
    the kernel says the person owns the listening socket); 1 otherwise, silently. Nothing but a fresh challenge is
    sent. The claude wrapper runs the same check (`python -E -P -m bead.ports`)."""
    import sys

    from ..config import load
    from ..paths import resolve_home
    from ..ports import CHECK_S, proven_within
    from ..token import home_token

    try:
        home = resolve_home()
        address = listen or load(home).proxy.listen
        token = home_token(home)
    except Exception:  # noqa: BLE001 - any doubt is "no": the wrapper then runs claude without the proxy
        sys.exit(1)
    conn = proven_within(address, token, CHECK_S) if token else None
    if conn is None:
        sys.exit(1)
    conn.close()


COMMANDS = [proxy, check_proxy]
