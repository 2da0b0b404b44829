"""Who listens on a local TCP port, as the kernel says (Linux: /proc): for a busy port's message and for
`bead status` about a service that cannot start."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import os
import re
import secrets
import stat
import threading
from pathlib import Path


def hex_port(port: int) -> str:
    return f"{port:04X}"


def _holders(port: int, proc: Path = Path("/proc")) -> tuple[int | None, list[tuple[str, str]]]:
    """The uid of the socket listening on local TCP ``port`` and the processes that hold it (pid, command name), as
    the kernel says; (None, []) when nothing listens. A socket systemd passed a service is held by both."""
    hexport = ":" + hex_port(port)
    inode, uid = None, None
    for name in ("tcp", "tcp6"):
        try:
            with open(proc / "net" / name, encoding="ascii", errors="replace") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) > 9 and fields[1].endswith(hexport) and fields[3] == "0A":  # LISTEN
                        uid, inode = int(fields[7]), fields[9]
                        break
        except (OSError, ValueError):
            continue
        if inode:
            break
    if inode is None:
        return None, []
    target = f"socket:[{inode}]"
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        pids = []
    out = []
    for pid in pids:
        try:
            fds = os.listdir(proc / pid / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                # One fd at a time: a busy process closes some between the listing and the look (gone, not a reason
                # to pass over its others, the listening socket among them).
                if os.readlink(proc / pid / "fd" / fd) != target:
                    continue
                comm = (proc / pid / "comm").read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            out.append((pid, comm))
            break
    return uid, out


def listener(port: int, proc: Path = Path("/proc")) -> str | None:
    """Who listens on a local TCP port, as the kernel says: ``pid 123 (python3)``, ``uid 1000`` or None. A socket
    systemd holds for a service (bead-proxy.socket) is systemd's, whatever the service's pid."""
    uid, holders = _holders(port, proc)
    if uid is None:
        return None
    if not holders:
        return f"a process of uid {uid}"
    pid, comm = next((h for h in holders if h[1] == "systemd"), holders[0])
    return f"pid {pid} ({comm})"


def held_by_own_service_manager(port: int, proc: Path = Path("/proc")) -> bool:
    """Whether this user's systemd holds the socket listening on ``port`` (bead-proxy.socket): a proxy that does not
    answer there yet is starting or restarting, not someone else's listener."""
    uid, holders = _holders(port, proc)
    return uid == os.getuid() and any(comm == "systemd" for _, comm in holders)


def client_address(listen: str) -> str:
    """``listen`` as a client should dial it: ``localhost`` as 127.0.0.1, which the proxy binds (bead.proxy.serve).
    Dialled by name, ``localhost`` may resolve to ::1 first, where another user's listener would get the request."""
    host, sep, port = listen.rpartition(":")
    return f"127.0.0.1:{port}" if sep and host.strip("[]").lower() == "localhost" else listen


def parse_listen(listen: str) -> tuple[str, int]:
    """``host:port`` on a loopback address (``localhost`` as 127.0.0.1), or BeadError saying how to fix it."""
    from .errors import BeadError

    host, sep, port = listen.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise BeadError(
            f"listen address {listen!r} is not host:port (a port from 1 to 65535)", "use e.g. --listen 127.0.0.1:7077"
        )
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        # ::1:7077 reads two ways; the wrapper and the units write [::1]:7077
        raise BeadError(f"listen address {listen!r}: an IPv6 address goes in brackets", "use e.g. [::1]:7077")
    host = host.strip("[]")
    if "%" in host:  # a scoped IPv6 address (::1%lo): loopback needs no scope
        raise BeadError(f"listen address {listen!r} has a scope", "use [::1]:<port> or 127.0.0.1:<port>")
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
    # One spelling of each address: the wrapper and `bead status` prove the proxy by the address as written, and the
    # proxy by the one it bound, so 127.0.0.1:017077 or [127.0.0.1]:7077 made them take bead's own proxy for
    # someone else's.
    canonical = f"[{ip.compressed}]:{int(port)}" if ip.version == 6 else f"{ip.compressed}:{int(port)}"
    if listen != canonical and listen.lower() != f"localhost:{int(port)}":
        raise BeadError(
            f"listen address {listen!r} is written otherwise than bead writes it",
            f"write it as {canonical} (proxy.listen or --listen)",
        )
    return ip.compressed, int(port)


def _proc_hex(ip: str) -> str:
    """An address as /proc/net/tcp{,6} write it (each 32-bit word in the host's byte order, as on Linux's x86 and
    ARM: little-endian)."""
    packed = ipaddress.ip_address(ip).packed
    return "".join(packed[i : i + 4][::-1].hex() for i in range(0, len(packed), 4)).upper()


def listener_uids(port: int, host: str | None = None, proc: Path = Path("/proc")) -> set[int] | None:
    """The uids of the sockets listening on local TCP ``port`` (Linux: /proc/net/tcp and tcp6) that a connection to
    ``host`` could reach: bound to it, or to the any-address of its family (or IPv6's, which takes IPv4 too unless
    v6only; counted either way); every one on the port when ``host`` is None. None where the kernel does not say
    (no /proc: macOS)."""
    hexport = ":" + hex_port(port)
    wanted: set[str] | None = None
    if host is not None:
        ip = ipaddress.ip_address(host)
        wanted = {_proc_hex(host), _proc_hex("::")}
        if ip.version == 4:
            wanted |= {_proc_hex("0.0.0.0"), _proc_hex(f"::ffff:{host}")}
    uids: set[int] = set()
    seen = False
    for name in ("tcp", "tcp6"):
        try:
            with open(proc / "net" / name, encoding="ascii", errors="replace") as f:
                seen = True
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) > 9 and fields[1].endswith(hexport) and fields[3] == "0A":  # LISTEN
                        if wanted is None or fields[1].rpartition(":")[0] in wanted:
                            uids.add(int(fields[7]))
        except (OSError, ValueError):
            continue
    return uids if seen else None


# ----- is this home's proxy the one listening? -----------------------------------------------------------------
#
# Before a client sends the proxy anything of the person's (the token in a base URL, an API key, a prompt), the
# listener must be this home's proxy, not another user's program that took the port first (or during a restart):
# - on Linux the kernel says who owns the listening socket, and it must be the person (a relay to the real proxy,
#   run by another user, fails here);
# - everywhere, the proxy answers a fresh challenge with the HMAC of it and the address it was reached at under
#   the home's token (X-Bead-Challenge, X-Bead-Proof on /bead/health): only the token's holder can, and a proof
#   relayed from another port does not fit the address the client dialled.
# Standard library only: `claude` runs this check (bead.ports as a module) at every start.


CHALLENGE = re.compile(r"[A-Za-z0-9_-]{16,128}")  # what the proxy answers a proof for


def health_proof(token: str, challenge: str, address: str) -> str:
    """The proxy's answer to ``challenge`` when reached at ``address`` (``host:port``, ``[v6]:port``)."""
    msg = b"bead-health\0" + challenge.encode() + b"\0" + address.encode()
    return hmac.new(token.encode(), msg, hashlib.sha256).hexdigest()


def bound_address(host: str, port: int) -> str:
    """``host:port`` as a client writes it (``[host]:port`` for IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` or ``[v6]:port`` (brackets off), or None when the port is no TCP port."""
    host, _, port = address.rpartition(":")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return None
    return host.strip("[]"), int(port)


def proven_connection(listen: str, token: str, timeout: float = 1.0) -> http.client.HTTPConnection | None:
    """An open connection to the proxy at ``listen`` once it proved it is this home's (see above), else None. The
    caller may send the token over it (the same connection the proof came on); it closes it."""
    address = client_address(listen)
    dial = host_port(address)
    if dial is None:
        return None
    try:
        uids = listener_uids(dial[1], dial[0])
    except ValueError:
        return None  # not an IP address: nothing bead binds
    if uids is not None and uids != {os.getuid()}:
        return None  # nobody listens, or someone else does (alone or beside us)
    challenge = secrets.token_urlsafe(24)
    conn = http.client.HTTPConnection(*dial, timeout=timeout)
    try:
        conn.request("GET", "/bead/health", headers={"X-Bead-Challenge": challenge})
        r = conn.getresponse()
        # A health answer is a few hundred bytes: a listener that announces gigabytes (`bead status` ended in a
        # MemoryError traceback) is no proxy of bead's.
        if r.length is not None and r.length > HEALTH_MAX_BYTES or len(r.read(HEALTH_MAX_BYTES + 1)) > HEALTH_MAX_BYTES:
            conn.close()
            return None
        answer = r.getheader("X-Bead-Proof") or ""
        if r.status == 200 and hmac.compare_digest(health_proof(token, challenge, address), answer):
            return conn
    except (OSError, http.client.HTTPException, ValueError):
        pass
    conn.close()
    return None


def _main(argv: list[str]) -> int:
    """``python -E -P -m bead.ports LISTEN TOKEN_FILE``: exit 0 when this home's proxy answers at LISTEN (the claude
    wrapper's check; nothing is sent but the challenge)."""
    if len(argv) != 2:
        return 2
    try:
        # Non-blocking and a regular file only, a few bytes at most: a FIFO left at the token's path held every
        # `claude` the person started, for ever, before the check's own time limit began.
        fd = os.open(argv[1], os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return 1
            token = os.read(fd, TOKEN_MAX_BYTES).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
    except OSError:
        return 1
    if not token:
        return 1
    conn = proven_within(argv[0], token, CHECK_S)
    if conn is None:
        return 1
    conn.close()
    return 0


def proven_within(listen: str, token: str, seconds: float) -> http.client.HTTPConnection | None:
    """``proven_connection`` with the whole check within ``seconds``, whatever the listener does (the connection's
    timeout is per read: one sending its answer a byte at a time held `claude`, `bead status` and `bead
    check-proxy` for as long as it liked): past it, None."""
    result: list[http.client.HTTPConnection | None] = []
    check = threading.Thread(target=lambda: result.append(proven_connection(listen, token, timeout=seconds)), daemon=True)
    check.start()
    check.join(seconds)
    if result:
        return result[0]

    def close_when_done() -> None:  # the check may still prove it after the deadline: its connection is closed then
        check.join()
        if result and result[0] is not None:
            result[0].close()

    threading.Thread(target=close_when_done, daemon=True).start()
    return None


TOKEN_MAX_BYTES = 4096  # a token is 43 characters
CHECK_S = 2.0  # the claude wrapper's whole check (a proxy that answers does so in milliseconds)
HEALTH_MAX_BYTES = 1 << 20  # of a health answer read


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
