"""Who may reach the proxy, and whose memory a request may see.

Three checks, in order:

- **A browser never gets in.** Only a literal loopback Host (``127.0.0.1``,
  ``localhost``, ``[::1]``, each with an optional port) is answered, so DNS
  rebinding cannot reach the port under another name; a request with an
  ``Origin`` header (empty included) or a ``Sec-Fetch-Site`` other than
  ``none`` is refused: every browser sends one, no harness does.
- **The request target is a path.** It must start with ``/``; the upstream's
  scheme, host and port are always the configured ones.
- **Memory only for its owner.** A request gets memory injected and is
  captured only when it comes from the person who owns the home: its path
  starts with the home's token (``http://127.0.0.1:7077/<token>``, the base
  URL ``shell.sh`` gives the harness, read from the 0600 file
  ``proxy.token``), or, on Linux, the kernel says the connecting socket
  belongs to the home's owner (``/proc/net/tcp`` and ``tcp6``, matched by
  the client's port). Any other request is forwarded unchanged: no memory
  in, nothing captured.

The token works on every OS and with every harness that takes a base URL;
the kernel check keeps a plain ``ANTHROPIC_BASE_URL=http://127.0.0.1:7077``
working for the owner on Linux. Another OS user can neither read the token
(the home is 0700) nor pass the kernel check.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from ..paths import Home
from ..ports import hex_port

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


def loopback_host(host: str) -> bool:
    """A literal loopback name with an optional port, nothing else."""
    host = (host or "").strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        name += "]"
        port = rest[1:] if rest.startswith(":") else rest
    else:
        name, _, port = host.partition(":")
    return name in LOOPBACK_NAMES and (port == "" or (port.isdigit() and len(port) <= 5))


def browser_refusal(headers: dict[str, str], same_origin: bool = False) -> str | None:
    """Why a request looks like it came from a web page, or None.

    ``same_origin`` is for bead's own read-only page (the dashboard), which a
    browser does load: a page typed into the address bar (``Sec-Fetch-Site:
    none``) and what that page itself loads (``same-origin``, and an
    ``Origin`` equal to its own) pass; anything another site starts does not.
    """
    host = headers.get("host", "")
    origin = headers.get("origin")
    if origin is not None and not (same_origin and loopback_host(host) and origin.strip().lower() == f"http://{host.lower()}"):
        return "bead refuses a request with this Origin header (a browser sent it)"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in (("none", "same-origin") if same_origin else ("none",)):
        return "bead refuses cross-site requests (Sec-Fetch-Site)"
    if not loopback_host(host):
        return "bead answers only to a literal loopback Host name (127.0.0.1, localhost, [::1])"
    return None


def split_token(raw_path: str, token: str) -> tuple[bool, str]:
    """(whether the path starts with ``/<token>``, the path without it)."""
    if not token:
        return False, raw_path
    head, sep, rest = raw_path[1:].partition("/")
    if head and hmac.compare_digest(head.encode(), token.encode()):
        return True, "/" + rest if sep else "/"
    return False, raw_path


def _proc_addrs(ip: str) -> set[str]:
    """How /proc/net/tcp{,6} spell an address: IPv4 as 8 hex digits in host (little-endian) order, IPv6
    as four such 32-bit words; an IPv4 peer of a dual-stack socket appears as ::ffff:a.b.c.d."""
    import ipaddress

    try:
        addr = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        return set()

    def v6(packed: bytes) -> str:
        return "".join(packed[i : i + 4][::-1].hex().upper() for i in range(0, 16, 4))

    if isinstance(addr, ipaddress.IPv4Address):
        return {addr.packed[::-1].hex().upper(), v6(ipaddress.IPv6Address(f"::ffff:{addr}").packed)}
    mapped = addr.ipv4_mapped
    out = {v6(addr.packed)}
    if mapped is not None:
        out.add(mapped.packed[::-1].hex().upper())
    return out


def peer_uid(client: tuple[str, int], server: tuple[str, int], proc: Path | None = None) -> int | None:
    """The UID owning the established socket connected from ``client`` to ``server`` (both (ip, port)).

    Both ends are matched in full, address and port: matching ports alone
    would let another user bind their client socket to our own port on
    another loopback address and pass as our accepted socket. The kernel is
    asked for that one socket over netlink (sock_diag: a hash lookup); where
    that is unavailable, ``/proc/net/tcp{,6}`` is read, whose cost grows with
    every socket on the machine (milliseconds with thousands in TIME_WAIT).
    """
    if proc is None:
        uid = _diag_uid(client, server)
        if uid is not _UNAVAILABLE:
            return uid if isinstance(uid, int) else None
        proc = Path("/proc/net")
    return _proc_uid(client, server, proc)


_UNAVAILABLE = object()


def _diag_uid(client: tuple[str, int], server: tuple[str, int]) -> object:
    """The uid of the TCP socket from ``client`` to ``server`` by an exact sock_diag lookup; None when no
    such socket exists; _UNAVAILABLE when netlink cannot answer here."""
    import ipaddress
    import socket
    import struct

    try:
        src = ipaddress.ip_address(client[0].strip("[]"))
        dst = ipaddress.ip_address(server[0].strip("[]"))
    except ValueError:
        return None
    if src.version != dst.version:
        mapped = [a.ipv4_mapped if isinstance(a, ipaddress.IPv6Address) else a for a in (src, dst)]
        if mapped[0] is None or mapped[1] is None:
            return None
        src, dst = mapped[0], mapped[1]
    family = socket.AF_INET if src.version == 4 else socket.AF_INET6
    if getattr(socket, "AF_NETLINK", None) is None:
        return _UNAVAILABLE
    sock_diag_by_family, nlm_f_request, inet_diag_nocookie = 20, 1, 0xFFFFFFFF
    established = 1 << 1
    # struct inet_diag_req_v2 with an exact inet_diag_sockid (ports and addresses in network order).
    sockid = struct.pack("!HH", client[1], server[1]) + src.packed.ljust(16, b"\0") + dst.packed.ljust(16, b"\0")
    sockid += struct.pack("=III", 0, inet_diag_nocookie, inet_diag_nocookie)
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, established) + sockid
    msg = struct.pack("=IHHII", 16 + len(req), sock_diag_by_family, nlm_f_request, 1, 0) + req
    try:
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
    except OSError:
        return _UNAVAILABLE
    try:
        nl.settimeout(1.0)
        nl.sendto(msg, (0, 0))
        data = nl.recv(65536)
    except OSError:
        return _UNAVAILABLE
    finally:
        nl.close()
    if len(data) < 16:
        return _UNAVAILABLE
    _length, kind = struct.unpack_from("=IH", data, 0)
    if kind == 2:  # NLMSG_ERROR: ENOENT means no such socket; anything else, ask /proc instead
        errno_ = -struct.unpack_from("=i", data, 16)[0]
        return None if errno_ == 2 else _UNAVAILABLE
    if kind != sock_diag_by_family or len(data) < 16 + 72 + 4:
        return _UNAVAILABLE
    # struct inet_diag_msg: family, state, timer, retrans (4 bytes), sockid (48), expires, rqueue, wqueue, uid, inode
    return int(struct.unpack_from("=I", data, 16 + 4 + 48 + 12)[0])


def _proc_uid(client: tuple[str, int], server: tuple[str, int], proc: Path) -> int | None:
    local = {f"{a}:{hex_port(client[1])}" for a in _proc_addrs(client[0])}
    remote = {f"{a}:{hex_port(server[1])}" for a in _proc_addrs(server[0])}
    if not local or not remote:
        return None
    uids = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(proc / name, encoding="ascii", errors="replace") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) > 7 and fields[3] == "01" and fields[1] in local and fields[2] in remote:
                        uids.add(int(fields[7]))
        except (OSError, ValueError):
            continue
    return uids.pop() if len(uids) == 1 else None


def home_owner(home: Home) -> int:
    return home.root.stat().st_uid


def shown_url(url: str) -> str:
    """``url`` as bead prints it (its log line, `GET /bead/health`, `bead status`): a user name and password in it (a
    gateway's Basic auth, which httpx sends upstream), a query (a gateway's `?key=`), a path segment's parameters
    (`/v1;key=...`) and a path segment that holds a credential bead's secret rules know (a gateway that takes its
    key in the path) as `***`, never themselves."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        u = urlsplit(str(url))
    except ValueError:
        return "(a URL bead cannot read)"
    path = _shown_path(u.path)
    if "@" not in u.netloc and not u.query and not u.fragment and path == u.path:
        return str(url)
    netloc = "***@" + u.netloc.rsplit("@", 1)[1] if "@" in u.netloc else u.netloc
    return urlunsplit((u.scheme, netloc, path, "***" if u.query else "", "***" if u.fragment else ""))


def _shown_path(path: str) -> str:
    """A URL's path with each segment's parameters (after `;`) and each segment the secret rules flag as `***`."""
    if not path.strip("/"):
        return path
    from ..capture.secrets import scan

    shown = []
    for segment in path.split("/"):
        name, params, _ = segment.partition(";")
        if name and scan(name):
            name = "***"
        shown.append(name + (";***" if params else ""))
    return "/".join(shown)
