"""`bead mcp --http`: the agent's tools over Streamable HTTP at /mcp, GET /health, for a team host.

Stateless Streamable HTTP (each POST is complete in itself; JSON answers), so
every request is authenticated on its own: with JWT settings (bead.mcp.auth)
a request to /mcp without a good token is refused before the SDK sees it
(401, or 503 when the key set cannot be fetched), and the token's actor is
the viewer of every tool call (bead.core.viewer) and the owner of every write.
GET /health is public and tells only that the server lives.

Loopback by default (``mcp.http_listen``, 127.0.0.1:7078); any other address
is refused unless the JWT settings are complete. Without them, on loopback,
the server is the home's owner's, as stdio is, and bead checks that as the
proxy does (bead.proxy.access), on every request, GET /health included:

- a browser never gets in: only a literal loopback Host (127.0.0.1,
  localhost, [::1], with a port) is answered, so DNS rebinding cannot reach
  the port under another name, whatever loopback address it listens on; a
  request with an ``Origin`` header or a ``Sec-Fetch-Site`` other than
  ``none`` is refused (a page on another localhost port included);
- memory only for its owner: another local user can connect to a loopback
  port too, so /mcp answers only a connection the kernel says is the home
  owner's (Linux), or one that carries the home's token (the 0600 file
  ``proxy.token``) as ``Authorization: Bearer <token>`` (any OS).

Put TLS in front (a reverse proxy) for anything beyond one machine.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..core.viewer import Viewer
from ..errors import BeadError
from ..proxy import access
from ..token import load_token
from .auth import AuthFailed, JwtAuth
from .listen import configured
from .server import Runtime, build

log = logging.getLogger("bead.mcp.http")

ACTOR = "bead.actor"  # the ASGI scope key the guard sets and the tools read
# A request's whole body must arrive within this long of its headers, as the proxy's (BODY_TIMEOUT): a client that
# stops sending, or trickles a byte now and then, held its connection and a server task for ever. A JSON-RPC call is
# a few KB; MAX_BODY bounds what is held of one.
BODY_S = 30.0
MAX_BODY = 8 * 1024 * 1024


async def _read_body(receive: Any, deadline: float) -> tuple[bytes | None, int]:
    """The request's whole body, read by ``deadline`` (the loop's clock): (body, 0), or (None, the status that refuses
    it: 408 late, 413 too large, 0 for a client that went away)."""
    loop = asyncio.get_running_loop()
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            log.info("mcp http refused: 408 the request body did not arrive in time")
            return None, 408
        if message.get("type") != "http.request":
            return None, 0
        chunk = message.get("body") or b""
        size += len(chunk)
        if size > MAX_BODY:
            log.info("mcp http refused: 413 a request body over %d bytes", MAX_BODY)
            return None, 413
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), 0


async def _drain(receive: Any, deadline: float) -> None:
    """Read and drop the rest of a refused body until it ends, the client goes, or ``deadline``: the server's reader
    waits for someone to take each part, and while it waits it never closes the connection (a 413 sent to a client
    still sending 64 MB held it for good, a review found)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            return
        if message.get("type") != "http.request" or not message.get("more_body", False):
            return


def _declared_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _with_body(app: Any, scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Call ``app`` with the request's body read whole first (``_read_body``); a body that does not come in time, or
    is too large (by its Content-Length, before any of it is read, or as it comes), is answered here and its
    connection closed."""
    deadline = asyncio.get_running_loop().time() + BODY_S
    declared = _declared_length(scope)
    if declared is not None and declared > MAX_BODY:
        log.info("mcp http refused: 413 a request body of %d bytes declared", declared)
        body, status = None, 413
    else:
        body, status = await _read_body(receive, deadline)
    if body is None:
        if status:
            why = "the request body did not arrive in time" if status == 408 else "the request body is too large"
            data = json.dumps({"error": why}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
            # The rest of a body too large is read and dropped while the answer goes out, not after: the server's
            # end of the answer (closing the connection) waits for its reader, which waits for someone to take the
            # body's next part.
            drained = asyncio.ensure_future(_drain(receive, deadline)) if status == 413 else None
            try:
                await send({"type": "http.response.start", "status": status, "headers": [*headers, (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": data})
            finally:
                if drained is not None:
                    await drained
        return
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())  # after the body: the wait for the client to go away

    await app(scope, replay, send)


def viewer_of(rt_projects: dict[str, list[str]] | None) -> Callable[[Context], Viewer]:
    """The viewer of a tool call: the member the request's token names (the guard put it in the scope)."""
    projects = rt_projects or {}

    def of(ctx: Context) -> Viewer:
        request = ctx.request_context.request
        actor = request.scope.get(ACTOR) if isinstance(request, Request) else None
        if not isinstance(actor, str):
            # The guard refuses any /mcp request without a verified actor; reaching here is a bug. Fail closed.
            raise BeadError("this request carries no verified member", "send a signed JWT")
        return Viewer.member(actor, projects.get(actor, []))

    return of


PeerUid = Callable[[tuple[str, int], tuple[str, int]], int | None]


class Owner:
    """Who the home's own server (no JWT settings) answers: the home's owner, as the proxy decides it."""

    def __init__(self, token: str, uid: int, peer_uid: PeerUid = access.peer_uid):
        self.token = token
        self.uid = uid
        self.peer_uid = peer_uid

    def allows(self, scope: dict[str, Any], offered: str | None) -> bool:
        """Blocking (the kernel lookup): run it off the loop."""
        if offered and self.token and hmac.compare_digest(offered.encode(), self.token.encode()):
            return True
        client, server = scope.get("client"), scope.get("server")
        if (
            not sys.platform.startswith("linux")
            or not client
            or not server
            or len(client) < 2
            or len(server) < 2
            or None in (*client[:2], *server[:2])
        ):
            return False
        (c_ip, c_port), (s_ip, s_port) = client[:2], server[:2]
        return self.peer_uid((str(c_ip), int(c_port)), (str(s_ip), int(s_port))) == self.uid


class Guard:
    """ASGI middleware in front of the SDK's app. With JWT settings: the JWT check for every request but
    GET /health (and the actor into the scope). Without (the home's own server, on loopback): no browser,
    no other Host name, and only the home's owner (``owner``)."""

    def __init__(self, app: Any, auth: JwtAuth | None, owner: Owner | None = None):
        if auth is None and owner is None:
            raise ValueError("a server without JWT settings needs the home owner's check")
        self.app = app
        self.auth = auth
        self.owner = owner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await receive()
                await send({"type": "websocket.close", "code": 1008})
            return
        if self.auth is None:
            await self._owners(scope, receive, send)
            return
        # Everything but GET /health needs a token: a path spelled another way never slips by.
        if scope.get("path") == "/health":
            await self.app(scope, receive, send)  # reads no body: none is buffered for anyone who asks
            return
        token = _bearer(scope)
        try:
            if token is None:
                raise AuthFailed(401, "missing")
            actor = await asyncio.to_thread(self.auth.verify, token)
        except AuthFailed as exc:
            log.info("mcp http refused: %s %s", exc.status, exc.reason)
            await _refuse(send, exc.status)
            return
        scope = dict(scope)
        scope[ACTOR] = actor
        # The SDK binds a session to the credential that opened it; this makes that credential the member.
        scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=actor, scopes=[], subject=actor))
        await _with_body(self.app, scope, receive, send)

    async def _owners(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The home's own server: the proxy's browser and Host checks on every request, the owner's on /mcp."""
        assert self.owner is not None
        raw = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers") or []]
        why = None
        if sum(1 for k, _ in raw if k == "host") != 1:
            why = "bead answers only a request with one literal loopback Host header"
        else:
            why = access.browser_refusal(dict(raw))
        if (
            why is None
            and scope.get("path") != "/health"
            and not await asyncio.to_thread(self.owner.allows, scope, _bearer(scope))
        ):
            why = "this memory is its owner's: connect as the home's owner, or send the home's token as a bearer token"
        if why is not None:
            log.info("mcp http refused: 403 %s", "owner" if why.startswith("this memory") else "browser-or-host")
            data = json.dumps({"error": why}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": data})
            return
        if scope.get("path") == "/health":
            await self.app(scope, receive, send)  # reads no body: none is buffered for anyone who asks
            return
        await _with_body(self.app, scope, receive, send)


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"authorization":
            text = value.decode("latin-1")
            if text[:7].lower() == "bearer ":
                return text[7:].strip()
            return None
    return None


async def _refuse(send: Any, status: int) -> None:
    if status == 503:
        body = {"error": "Authentication service unavailable", "retryable": True}
        headers = [(b"retry-after", b"5")]
    else:
        body = {"error": "Unauthorized"}
        headers = [(b"www-authenticate", b'Bearer error="invalid_token"')]
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data})


def create_app(
    rt: Runtime, host: str = "127.0.0.1", admin: bool = False, auth: JwtAuth | None = None, owner: Owner | None = None
) -> Any:
    """The ASGI app: /mcp (Streamable HTTP, stateless, JSON answers) behind the guard, and GET /health.
    Without ``auth``, ``owner`` decides who is the home's owner (default: the home's token and owner uid)."""
    server = build(rt, admin=admin)
    n_tools = len(server._tool_manager.list_tools())  # noqa: SLF001 - the count for /health

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "server": server.name,
                "auth": "jwt" if auth else "none",
                "tools": n_tools,
                # not the calls in flight: /health answers anyone who reaches the port (another local user, the
                # network in jwt mode), and when and how much the owner works is the owner's
            }
        )

    app = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    if auth is None and owner is None:
        owner = Owner(load_token(rt.home), access.home_owner(rt.home))
    return Guard(app, auth, owner)


def serve(app: Any, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT (Hypercorn, as the proxy is served)."""
    from hypercorn.config import Config as HConfig

    from ..proxy.serve import run_until_signal

    cfg = HConfig()
    cfg.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    cfg.graceful_timeout = 10.0
    cfg.include_server_header = False
    cfg.accesslog = None
    cfg.errorlog = logging.getLogger("hypercorn.error")

    try:
        run_until_signal(app, cfg)
    except OSError as exc:
        raise BeadError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", "choose another address with --listen or mcp.http_listen"
        ) from None


__all__ = ["configured", "create_app", "serve"]
