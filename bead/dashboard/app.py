"""The dashboard's Quart app: one page, its static files, the checks of bead.proxy.access."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quart import Quart, Response, render_template, request

from ..config import Config
from ..core.memory import Memory
from ..core.overview import overview
from ..display import visible_data
from ..paths import Home
from ..proxy import access

HERE = Path(__file__).resolve().parent
log = logging.getLogger("bead.dashboard")
STATIC = {
    "uplot.iife.min.js": "text/javascript",
    "uplot.min.css": "text/css",
    "dashboard.js": "text/javascript",
    "dashboard.css": "text/css",
    "uplot.LICENSE": "text/plain",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class DashboardApp(Quart):
    def log_exception(self, exception_info: Any) -> None:
        """Never the request's path in a log line: the dashboard's path starts with the home's token."""
        exc_type = exception_info[0]
        log.error("unhandled %s in the dashboard", exc_type.__name__ if exc_type else "error")


def _refused(status: int, why: str) -> Response:
    return Response(why + "\n", status=status, content_type="text/plain; charset=utf-8", headers=HEADERS)


def _host_refusal(host: str, scope: Any) -> str | None:
    """Why the Host names another address than the one this serves on, or None. ``localhost`` is refused: a browser
    tries ::1 first, where another user may serve a page that then reads this one as its own origin; only the literal
    address (and port) the socket is bound to is the dashboard's own."""
    name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    name = name.strip("[]").lower()
    server = scope.get("server")
    if name == "localhost" or name.endswith(".localhost"):
        where = f"{server[0]}:{server[1]}" if server and len(server) >= 2 else "the address it printed"
        return f"bead dashboard answers only at its literal address: open http://{where}/ (`localhost` may reach another server)"
    if server and len(server) >= 2 and server[0] is not None and (name != str(server[0]).lower() or port != str(server[1])):
        return "bead dashboard answers only to the address it serves on (the Host header names another)"
    return None


def _page_refusal(headers: dict[str, str]) -> str | None:
    """Why a browser's request for the page itself (what holds the memory) was not the person opening it, or None.
    Its files may come from the page (``same-origin``); the page only from the address bar, a bookmark or a reload
    (``Sec-Fetch-Site: none``, a document, a navigation). The origin http://127.0.0.1:PORT is whoever held the port
    last: a tab another user's page left open there, or a service worker it left in the browser, is same-origin with
    the dashboard and would read it with ``fetch``. A client that sends no such header (curl) is judged by the rest."""
    site, dest, mode = (headers.get(h, "").strip().lower() for h in ("sec-fetch-site", "sec-fetch-dest", "sec-fetch-mode"))
    if (site and site != "none") or (dest and dest != "document") or (mode and mode != "navigate"):
        return (
            "bead dashboard opens only from the address bar: type or paste the address `bead dashboard` printed "
            "(a page, a script or a service worker asked for it)"
        )
    return None


def create_app(
    home: Home,
    config: Config,
    trace: str | None = None,
    token: str | None = None,
    owner_uid: int | None = None,
    peer_uid: Callable[[tuple[str, int], tuple[str, int]], int | None] = access.peer_uid,
) -> Quart:
    """The dashboard for ``home``. ``token`` (default: a secret of this app's own, new each run) and ``owner_uid``
    (default: the home's owner) decide who is the owner, as in the proxy. Never the home's proxy token: the
    dashboard's address holds it, and a page that held the port before (another user's, a service worker it left in
    the browser) can read an address; what it reads is one read-only run, not the proxy's or MCP's credential."""
    app = DashboardApp("bead.dashboard", template_folder=str(HERE / "templates"), static_folder=None)
    token = secrets.token_urlsafe(24) if token is None else token
    owner_uid = access.home_owner(home) if owner_uid is None else owner_uid
    local = threading.local()

    def memory() -> Memory:
        mem = getattr(local, "mem", None)
        if mem is None:
            mem = local.mem = Memory(home, config)
        return mem

    def owner(has_token: bool) -> bool:
        if has_token:
            return True
        ends: list[Any] = [request.scope.get("client"), request.scope.get("server")]
        if not sys.platform.startswith("linux") or any(not e or len(e) < 2 or None in e[:2] for e in ends):
            return False
        (c_ip, c_port), (s_ip, s_port) = (e[:2] for e in ends)
        return peer_uid((str(c_ip), int(c_port)), (str(s_ip), int(s_port))) == owner_uid

    @app.route("/", defaults={"path": ""}, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    @app.route("/<path:path>", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    async def page(path: str) -> Response:
        raw = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.scope["headers"]]
        headers = dict(raw)
        if sum(1 for k, _ in raw if k == "host") > 1:
            return _refused(403, "bead dashboard refuses a request with two Host headers")
        why = access.browser_refusal(headers, same_origin=True) or _host_refusal(headers.get("host", ""), request.scope)
        if why:
            return _refused(403, why)
        if request.method not in ("GET", "HEAD"):
            return _refused(405, "the dashboard is read-only: GET only")
        offered = headers.get("x-bead-token", "")
        target = request.scope.get("raw_path", b"/").decode("latin-1").split("?")[0]
        in_path, rest = access.split_token(target, token)
        has_token = in_path or (bool(offered) and hmac.compare_digest(offered.encode(), token.encode()))
        if not await asyncio.to_thread(owner, has_token):
            return _refused(403, "this memory is its owner's: open the address `bead dashboard` printed (with the home's token)")
        if rest.startswith("/static/") and rest[len("/static/") :] in STATIC:
            name = rest[len("/static/") :]
            return Response((HERE / "static" / name).read_bytes(), content_type=STATIC[name], headers=HEADERS)
        if in_path and not target.endswith("/") and rest == "/":
            # /<token> -> /<token>/, so that the page's relative links keep the token.
            return Response("", status=308, headers={**HEADERS, "Location": target + "/"})
        if rest != "/":
            return _refused(404, "nothing here: the dashboard is one page")
        why = _page_refusal(headers)
        if why:
            return _refused(403, why)
        # Every stored string as a terminal would show it (escaped controls, bidi and invisible characters): Jinja
        # escapes markup, not a U+202E that reverses how a queued value reads.
        try:
            data = await asyncio.to_thread(lambda: visible_data(overview(memory(), trace)))
        except Exception as exc:  # noqa: BLE001 - a page that says what failed, with the page's own headers
            log.error("the dashboard could not read the home: %s", type(exc).__name__)
            return _refused(500, f"bead dashboard could not read this home ({type(exc).__name__}); run `bead status`")
        html = await render_template("dashboard.html", d=data, growth=json.dumps(data["growth"]))
        return Response(html, content_type="text/html; charset=utf-8", headers=HEADERS)

    app.extensions["bead.dashboard.token"] = token
    return app


def serve(app: Any, host: str, port: int, on_listening: Callable[[], None] | None = None) -> None:
    """Serve on loopback with Hypercorn until SIGINT/SIGTERM; ``on_listening`` runs once the port is bound."""
    from hypercorn.config import Config as HyperConfig

    from ..proxy.serve import listening_socket, run_until_signal

    cfg = HyperConfig()
    cfg.bind = [f"fd://{listening_socket(host, port)}"]
    cfg.accesslog = None
    cfg.errorlog = None
    if on_listening is not None:
        on_listening()
    run_until_signal(app, cfg)
