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
from ..ports import listener, parse_listen  # noqa: F401 - parse_listen: its callers import it from here


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
        fix = (
            "stop what holds it (`bead status` shows a running bead proxy), or choose another port "
            "with `proxy.listen` in config.yaml or --listen"
        )
        if holder and "(systemd)" in holder:
            # bead-proxy.socket: the installed service's port, which systemd holds whether the proxy runs or not.
            fix = (
                "systemd holds it for bead's installed proxy (bead-proxy.socket): use that one (`bead status`), or "
                "stop both with `systemctl --user stop bead-proxy.socket bead-proxy.service` first"
            )
        raise BeadError(f"port {port} on {host} is already in use{f' by {holder}' if holder else ''}", fix) from None
    return sock.detach()


# systemd's socket activation (sd_listen_fds(3)): the first passed descriptor.
LISTEN_FDS_START = 3


def inherited_socket(host: str, port: int, environ: dict[str, str] | None = None, fd: int = LISTEN_FDS_START) -> int | None:
    """The listening socket systemd passed this process (bead-proxy.socket holds the port across the proxy's
    restarts, so no request is refused meanwhile and no other process can take the port), as its descriptor; None
    when none was passed to this process. The variables that pass it are removed, so nothing this process starts
    reads them as its own. BeadError when the socket is not a TCP socket listening on ``host:port``, loopback: the
    socket unit and the configured address must agree, or clients would dial an address nothing serves."""
    env = os.environ if environ is None else environ
    if env.get("LISTEN_PID") != str(os.getpid()) or "LISTEN_FDS" not in env:
        return None
    count = env.get("LISTEN_FDS", "")
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    fix = "run `bead setup` again: it writes bead-proxy.socket from proxy.listen in config.yaml"
    if count != "1":
        raise BeadError(f"systemd passed {count!r} sockets; the proxy serves exactly one", fix)
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise BeadError(f"systemd said it passed a socket, but descriptor {fd} is none ({exc.strerror})", fix) from None
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            raise BeadError(f"the socket systemd passed is not a TCP socket ({sock.family!r}, {sock.type!r})", fix)
        got_host, got_port = sock.getsockname()[:2]
        got = ipaddress.ip_address(got_host)
        shown = f"[{got_host}]:{got_port}" if ":" in got_host else f"{got_host}:{got_port}"
        if not got.is_loopback:
            raise BeadError(
                f"refusing the socket systemd passed: {shown} is not a loopback address",
                "the proxy sees every prompt and credential; " + fix,
            )
        if got != ipaddress.ip_address(host) or got_port != port:
            want = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise BeadError(f"the socket systemd passed listens on {shown}, but the proxy's address is {want}", fix)
        if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            raise BeadError(f"the socket systemd passed on {shown} is not listening", fix)
        # NoDelay=true in the unit says the same; set here too, for a unit written by hand (see listening_socket).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        sock.detach()  # the descriptor stays the service manager's to close; this process exits anyway
        raise
    return sock.detach()


def bound_socket(host: str, port: int) -> int:
    """The socket the proxy serves: the one systemd passed (``inherited_socket``), else one bound here."""
    fd = inherited_socket(host, port)
    return listening_socket(host, port) if fd is None else fd


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


def more_open_files() -> tuple[int, int]:
    """Raise this process's soft limit of open files to its hard one; the (soft, hard) limits now. Each connection
    is a file: a local user who held about a thousand open (headers sent, the body never) filled the usual soft
    limit of 1,024, and the proxy accepted no new connection, the agent's neither, until they closed."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # a platform that caps it lower (macOS: OPEN_MAX): what it allows stays
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def serve(app: Any, host: str, port: int, on_listening: Callable[[], None] | None = None) -> None:
    """Serve until SIGTERM or SIGINT. The port is bound before anything is said: ``on_listening`` runs once it
    is this process's and accepts connections, so a line saying the proxy is up is true when it is read."""
    cfg = hypercorn_config(host, port)
    cfg.bind = [f"fd://{bound_socket(host, port)}"]
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
    status: 0 after SIGTERM or SIGINT."""
    more_open_files()  # before the fork: the workers inherit it
    if workers <= 1:
        serve(make_app(0), host, port, on_listening)
        return 0
    from .workers import supervise

    fd = bound_socket(host, port)
    supervisor = os.getpid()

    def run(slot: int) -> None:
        cfg = hypercorn_config(host, port)
        cfg.bind = [f"fd://{fd}"]
        run_until_signal(make_app(slot), cfg, parent=supervisor)

    return supervise(run, workers, on_listening, on_death)
