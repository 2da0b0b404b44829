"""The floor of bead's own stack: a Quart app on Hypercorn that streams each request to the upstream with httpx and
back, and does nothing else (no parsing, no memory, no capture). bench_proxy.py runs it beside bead, so that what
bead adds splits into what the stack costs and what bead's own work costs.

    python benchmarks/floor_proxy.py PORT UPSTREAM_URL
"""

from __future__ import annotations

import asyncio
import socket
import sys

import httpx
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart, Response, request


def make_app(upstream: str) -> Quart:
    app = Quart("floor")
    app.config.update(MAX_CONTENT_LENGTH=None, BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None)
    state: dict[str, httpx.AsyncClient] = {}

    @app.before_serving
    async def start() -> None:
        transport = httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        state["client"] = httpx.AsyncClient(transport=transport, timeout=None)

    @app.route("/<path:path>", methods=["POST"])
    async def forward(path: str) -> Response:
        body = await request.get_data()
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in ("host", "content-length")]
        up = await state["client"].send(
            state["client"].build_request("POST", f"{upstream}/{path}", headers=headers, content=body), stream=True
        )

        async def relay():
            try:
                async for chunk in up.aiter_raw():
                    yield chunk
            finally:
                await up.aclose()

        keep = [(k, v) for k, v in up.headers.items() if k.lower() not in ("content-length", "transfer-encoding", "connection")]
        return Response(relay(), status=up.status_code, headers=keep)

    return app


def main() -> None:
    port, upstream = int(sys.argv[1]), sys.argv[2].rstrip("/")
    cfg = Config()
    cfg.bind = [f"127.0.0.1:{port}"]
    cfg.accesslog = None
    asyncio.run(serve(make_app(upstream), cfg))


if __name__ == "__main__":
    main()
