"""Serving the proxy with Hypercorn, loopback only."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

from ..errors import BeadError
from ..ports import listener


def parse_listen(listen: str) -> tuple[str, int]:
    """``host:port`` on a loopback address, or BeadError saying how to fix it."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise BeadError(f"listen address {listen!r} is not host:port", "use e.g. --listen 127.0.0.1:7077")
    host = host.strip("[]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise BeadError(f"listen address {listen!r} is not an IP address", "use 127.0.0.1:<port>") from None
    if not ip.is_loopback:
        raise BeadError(
            f"refusing to listen on {listen}: it is not a loopback address",
            "the proxy sees every prompt and credential; bind it to 127.0.0.1 (e.g. --listen 127.0.0.1:7077)",
        )
    return host, int(port)


def hypercorn_config(host: str, port: int):
    from hypercorn.config import Config as HConfig

    cfg = HConfig()
    cfg.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    # Let in-flight streams finish on restart instead of Hypercorn's 3 s cut.
    cfg.graceful_timeout = 300.0
    cfg.include_server_header = False
    cfg.include_date_header = True
    cfg.keep_alive_timeout = 75.0
    cfg.accesslog = None
    cfg.errorlog = logging.getLogger("hypercorn.error")
    return cfg


def listening_socket(host: str, port: int) -> int:
    """A socket bound to ``host:port`` and listening, as its file descriptor (Hypercorn serves it: ``fd://``);
    BeadError naming the port's holder when it is taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    # What Hypercorn sets on the sockets it binds itself: Nagle's algorithm against the client's delayed ACK
    # would add ~40 ms to a response written in two parts.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(100)
    except OSError as exc:
        sock.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        holder = listener(port)
        raise BeadError(
            f"port {port} on {host} is already in use{f' by {holder}' if holder else ''}",
            "stop what holds it (`bead status` shows a running bead proxy), or choose another port "
            "with `proxy.listen` in config.yaml or --listen",
        ) from None
    return sock.detach()


def run_until_signal(app: Any, cfg: Any, parent: int | None = None) -> None:
    """Serve ``app`` with Hypercorn under ``cfg`` until SIGTERM or SIGINT (the proxy, the dashboard, the MCP
    HTTP server): in-flight requests finish within ``cfg.graceful_timeout``. ``parent``: a worker's
    supervisor, whose end stops it too."""
    from hypercorn.asyncio import serve as hserve

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if parent is not None:
            from .workers import watch_parent

            watch_parent(parent, lambda: loop.call_soon_threadsafe(stop.set))
        await hserve(app, cfg, shutdown_trigger=stop.wait)

    asyncio.run(main())


def serve(app: Any, host: str, port: int, on_listening: Callable[[], None] | None = None) -> None:
    """Serve until SIGTERM or SIGINT. The port is bound before anything is said: ``on_listening`` runs once it
    is this process's and accepts connections, so a line saying the proxy is up is true when it is read."""
    cfg = hypercorn_config(host, port)
    cfg.bind = [f"fd://{listening_socket(host, port)}"]
    if on_listening is not None:
        on_listening()
    run_until_signal(app, cfg)


def serve_workers(
    make_app: Callable[[int], Any],
    workers: int,
    host: str,
    port: int,
    on_listening: Callable[[], None] | None = None,
    on_death: Callable[[int], None] | None = None,
) -> int:
    """``serve`` with ``workers`` processes on the one port (bead.proxy.workers): the port is bound here, once,
    and each worker serves ``make_app(slot)`` on it. One worker is ``serve`` itself, in this process. The exit
    status: 0 after SIGTERM or SIGINT, 1 when the workers kept dying."""
    if workers <= 1:
        serve(make_app(0), host, port, on_listening)
        return 0
    from .workers import supervise

    fd = listening_socket(host, port)
    supervisor = os.getpid()

    def run(slot: int) -> None:
        cfg = hypercorn_config(host, port)
        cfg.bind = [f"fd://{fd}"]
        run_until_signal(make_app(slot), cfg, parent=supervisor)

    return supervise(run, workers, on_listening, on_death)
