"""The Quart app: forward everything, change only POST /v1/messages.

Quart's defaults would break a streaming LLM proxy, so they are lifted:
RESPONSE_TIMEOUT (60 s cuts a long stream), BODY_TIMEOUT, MAX_CONTENT_LENGTH
(16 MiB, below the API's 32 MB). The upstream client has no read timeout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import typing

import httpx
from quart import Quart, Response, request
from werkzeug.datastructures import Headers

from .. import __version__
from ..wire.anthropic import ResponseCollector
from .engine import Engine, Prepared

log = logging.getLogger("bead.proxy")

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
    "trailer", "trailers", "transfer-encoding", "upgrade",
})
# Recomputed by the HTTP layers on each side.
REQUEST_DROP = HOP_BY_HOP | {"host", "content-length"}
# Hypercorn writes its own date; the upstream's server header passes through.
RESPONSE_DROP = HOP_BY_HOP | {"date"}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def loopback_host(host: str) -> bool:
    host = (host or "").strip().lower()
    if host.startswith("["):
        name = host.split("]")[0] + "]"
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name in LOOPBACK_HOSTS or name.startswith("127.")


def _api_error(status: int, message: str, kind: str = "api_error") -> Response:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}})
    return Response(body, status=status, content_type="application/json")


def create_app(engine: Engine, upstream: str) -> Quart:
    app = Quart("bead.proxy")
    app.config.update(MAX_CONTENT_LENGTH=None, BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None)
    upstream = upstream.rstrip("/")
    state: dict = {"client": None, "tasks": set()}

    @app.before_serving
    async def start_client() -> None:
        # TCP_NODELAY: headers and body leave in separate writes, and Nagle's
        # algorithm against the server's delayed ACK would add ~40 ms to each.
        transport = httpx.AsyncHTTPTransport(
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
        )
        state["client"] = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(connect=15.0, read=None, write=None, pool=None),
            follow_redirects=False,
        )

    @app.after_serving
    async def stop_client() -> None:
        if state["client"] is not None:
            await state["client"].aclose()

    @app.before_request
    async def guard():
        # A web page must not be able to write into memory through 127.0.0.1:
        # refuse browser origins (cross-site POST) and foreign Host names
        # (DNS rebinding).
        if request.headers.get("origin"):
            return _api_error(403, "bead proxy refuses requests with a browser Origin header", "permission_error")
        if not loopback_host(request.headers.get("host", "")):
            return _api_error(403, "bead proxy answers only to a loopback Host name", "permission_error")
        return None

    @app.route("/bead/health", methods=["GET"])
    async def health():
        state_ = await asyncio.to_thread(engine.store_state)
        return Response(json.dumps({"ok": True, "version": __version__, "upstream": upstream,
                                    "home": str(engine.home.root), **engine.health(), **state_}),
                        content_type="application/json")

    @app.route("/", defaults={"path": ""}, methods=METHODS)
    @app.route("/<path:path>", methods=METHODS)
    async def forward(path: str):
        body = typing.cast(bytes, await request.get_data(cache=False, as_text=False))
        # The ASGI scope holds the headers as they arrived, in order; Quart's
        # request.headers adds its own (Remote-Addr).
        raw_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]
        headers = {k.lower(): v for k, v in raw_headers}
        prep = Prepared(body)
        if request.method == "POST" and request.path == "/v1/messages":
            prep = await asyncio.to_thread(engine.prepare, body, headers)
        out_headers = [(k, v) for k, v in raw_headers if k.lower() not in REQUEST_DROP]
        # The path as sent (percent-encoding intact), not Quart's decoded one.
        raw_path = (request.scope.get("raw_path") or request.path.encode()).decode("latin-1")
        url = upstream + raw_path + (("?" + request.query_string.decode("latin-1")) if request.query_string else "")
        client: httpx.AsyncClient = state["client"]
        try:
            up = await client.send(client.build_request(request.method, url, headers=out_headers, content=prep.body),
                                   stream=True)
        except httpx.HTTPError as exc:
            engine.error("upstream", exc)
            return _api_error(502, f"bead proxy could not reach the upstream API ({type(exc).__name__})")
        collector = ResponseCollector(up.headers.get("content-type", ""), up.headers.get("content-encoding"))
        capture = prep.ident is not None and up.status_code < 400

        async def stream():
            nonlocal capture
            try:
                async for chunk in up.aiter_raw():
                    if capture:
                        try:
                            collector.feed(chunk)
                        except Exception as exc:  # capture must never break the stream
                            engine.error("capture", exc)
                            capture = False
                    yield chunk
            except httpx.HTTPError as exc:
                # The upstream dropped mid-stream: the harness has what arrived.
                engine.error("upstream_stream", exc)
            finally:
                await up.aclose()
                if capture:
                    task = asyncio.get_running_loop().run_in_executor(None, _finish, engine, prep, collector)
                    state["tasks"].add(task)
                    task.add_done_callback(state["tasks"].discard)

        resp_headers = [(k, v) for k, v in up.headers.multi_items() if k.lower() not in RESPONSE_DROP]
        response = Response(stream(), status=up.status_code, headers=Headers(resp_headers))
        response.timeout = None  # a long stream is never cut
        return response

    app.extensions["bead.engine"] = engine  # for tests and status
    return app


def _finish(engine: Engine, prep: Prepared, collector: ResponseCollector) -> None:
    try:
        engine.finish(prep, collector.result(prep.n_messages))
    except Exception as exc:
        engine.error("capture", exc)

