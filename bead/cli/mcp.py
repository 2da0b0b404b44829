"""bead mcp: the MCP servers (stdio for an agent or a curator, Streamable HTTP for a team host)."""

from __future__ import annotations

import click

from . import common
from .common import echo


@click.command()
@click.option(
    "--admin",
    is_flag=True,
    help="The curator's server: the agent's tools plus summary, history, pin, "
    "forget, seal, the review queue; its remember writes user_stated.",
)
@click.option(
    "--http", "http_", is_flag=True, help="Serve the agent's tools over Streamable HTTP at /mcp (GET /health), for a team host."
)
@click.option("--listen", help="With --http: host:port (default: config mcp.http_listen, 127.0.0.1:7078).")
@click.option("--project", help="The project whose standing facts get_memory_context gives (default: the working directory's).")
def mcp(admin, http_, listen, project):
    """Run an MCP server: by default the agent's, over stdio (what `claude mcp add` registers).

    stdout carries JSON-RPC only; logs go to stderr, never with a value.
    With --http, a listener other than loopback needs JWT settings
    (mcp.jwks_url, mcp.issuer, mcp.audience): every request then carries a
    signed token, and its actor owns what it writes.
    """
    import logging
    import os

    from ..config import load
    from ..conversation import project_from_cwd, project_slug
    from ..errors import BeadError
    from ..log import setup_logging
    from ..paths import resolve_home

    setup_logging("mcp")
    # The SDK's own INFO lines (each request's type, session start) say nothing bead's one line per call does not.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    home = resolve_home().ensure()
    config = load(home)
    if project is not None:
        project = common.project_name(project)
    elif not http_:
        project = project_from_cwd(os.getcwd()) or (project_slug(config.proxy.project) if config.proxy.project else None)
    if http_:
        from ..mcp.listen import check_bind, configured, parse_listen

        if admin:
            raise BeadError(
                "the curator's server runs over stdio only: forget and seal act on the whole store",
                "run `bead mcp --admin` from the person's own harness",
            )
        settings = config.mcp
        given = [n for n in ("jwks_url", "issuer", "audience") if getattr(settings, n)]
        if given and len(given) < 3:
            missing = sorted({"jwks_url", "issuer", "audience"} - set(given))
            raise BeadError(
                f"JWT settings are incomplete: mcp.{', mcp.'.join(missing)} missing",
                "set all three of mcp.jwks_url, mcp.issuer and mcp.audience, or none",
            )
        signed = configured(settings)
        if signed and project is not None:
            raise BeadError(
                "--project does not go with signed JWTs: each member's projects are mcp.projects'",
                "leave --project out, or serve the home owner alone (no JWT settings)",
            )
        host, port, loopback = parse_listen(listen or settings.http_listen)
        check_bind(loopback, signed, f"{host}:{port}")
        # The SDK only now (half a second to import): a setting or an address it refuses is said at once.
        from ..mcp import http
        from ..mcp.auth import JwtAuth
        from ..mcp.server import Runtime

        auth = JwtAuth(settings) if signed else None
        # The home owner's server names its project only when told (--project): it serves whatever harness connects.
        rt = Runtime(home, config, None if auth else project, http.viewer_of(settings.projects) if auth else None)
        shown = f"[{host}]" if ":" in host else host  # a URL the person can paste
        echo(f"bead mcp on http://{shown}:{port}/mcp ({'signed JWTs' if auth else 'no JWT: the home owner only'})", err=True)
        if auth is None:
            echo(
                "note: without JWT settings only the home's owner is answered: on Linux the kernel says who "
                "connects; elsewhere send the home's token (the file proxy.token) as "
                "`Authorization: Bearer <token>`. Browsers are refused.",
                err=True,
            )
        try:
            http.serve(http.create_app(rt, host, auth=auth), host, port)
        finally:
            rt.close()
        return
    import anyio

    from ..mcp.server import Runtime, build
    from .mcp_stdin import read_lines

    rt = Runtime(home, config, project)
    try:
        with read_lines():
            anyio.run(build(rt, admin=admin).run_stdio_async)
    finally:
        rt.close()


COMMANDS = [mcp]
