"""bead proxy."""

from __future__ import annotations

import click


@click.command()
@click.option("--listen", help="Loopback host:port (default: config proxy.listen, 127.0.0.1:7077).")
@click.option("--upstream", help="The real API base URL (default: config proxy.upstream).")
@click.option("--project", help="Project when the harness reports no working directory.")
@click.option("--trace", "trace", envvar="BEAD_TRACE", help="Append one JSON line per request to this file.")
def proxy(listen, upstream, project, trace):
    """Run the Anthropic Messages proxy at ANTHROPIC_BASE_URL.

    Forwards every request with the caller's own credentials, captures turns
    into the raw log and injects memory into POST /v1/messages, for the
    home's owner only. Point Claude Code at it with
    ANTHROPIC_BASE_URL=http://127.0.0.1:7077/$(cat ~/.bead/proxy.token)
    (the `claude` wrapper from `bead setup` does this).
    """
    from ..core.memory import Memory
    from ..log import setup_logging
    from ..proxy.app import create_app
    from ..proxy.engine import Engine
    from ..proxy.serve import parse_listen, serve

    setup_logging("proxy")
    mem = Memory.open()
    host, port = parse_listen(listen or mem.config.proxy.listen)
    upstream = upstream or mem.config.proxy.upstream
    engine = Engine(mem.home, mem.config, default_project=project, trace_path=trace)
    mem.close()
    click.echo(f"bead proxy on http://{host}:{port} -> {upstream}", err=True)
    try:
        serve(create_app(engine, upstream), host, port)
    finally:
        engine.close()


COMMANDS = [proxy]
