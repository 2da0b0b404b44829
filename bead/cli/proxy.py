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
def proxy(listen, upstream, openai_upstream, project, trace):
    """Run the proxy: the Anthropic Messages API at its root, the OpenAI APIs under /openai.

    Forwards every request with the caller's own credentials, captures turns
    into the raw log and injects memory into POST /v1/messages and, under
    /openai, into POST .../chat/completions and .../responses, for the home's
    owner only. Point Claude Code at it with
    ANTHROPIC_BASE_URL=http://127.0.0.1:7077/$(cat ~/.bead/proxy.token)
    (the `claude` wrapper from `bead setup` does this), and an OpenAI harness
    at the base URL http://127.0.0.1:7077/$(cat ~/.bead/proxy.token)/openai/v1.
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
    openai_upstream = openai_upstream or mem.config.proxy.openai_upstream
    engine = Engine(mem.home, mem.config, default_project=project, trace_path=trace)
    mem.close()
    shown = f"[{host}]" if ":" in host else host
    line = f"bead proxy on http://{shown}:{port} -> {upstream} (/openai -> {openai_upstream})"
    try:
        serve(create_app(engine, upstream, openai_upstream=openai_upstream), host, port, lambda: echo(line, err=True))
    finally:
        engine.close()


COMMANDS = [proxy]
