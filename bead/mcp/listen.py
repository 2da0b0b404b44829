"""Where `bead mcp --http` may listen: the address it is given, the refusal of one beyond loopback without
authentication, and whether signed JWTs are set up. No MCP SDK or PyJWT here, so a refused address is said
before the SDK (half a second) is imported."""

from __future__ import annotations

import ipaddress

from ..config import McpSettings
from ..errors import BeadError


def parse_listen(listen: str) -> tuple[str, int, bool]:
    """(host, port, loopback) of ``host:port``."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise BeadError(
            f"listen address {listen!r} is not host:port (a port from 1 to 65535)", "use e.g. --listen 127.0.0.1:7078"
        )
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        # ::1:7078 reads two ways (and printed as a URL it is none); the proxy's address takes brackets too
        raise BeadError(f"listen address {listen!r}: an IPv6 address goes in brackets", "use e.g. [::1]:7078")
    host = host.strip("[]")
    if "%" in host:  # a scoped IPv6 address (::1%lo) passed here and failed at the bind
        raise BeadError(f"listen address {listen!r} has a scope", "use [::1]:<port> or 127.0.0.1:<port>")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise BeadError(f"listen address {listen!r} is not an IP address", "use e.g. 127.0.0.1:7078") from None
    return host, int(port), loopback


def configured(settings: McpSettings) -> bool:
    """Whether signed JWTs are set up: all three settings given (`bead mcp` refuses one or two)."""
    return bool(settings.jwks_url and settings.issuer and settings.audience)


def check_bind(loopback: bool, has_auth: bool, listen: str) -> None:
    if not loopback and not has_auth:
        raise BeadError(
            f"refusing to listen on {listen} without authentication: anyone who reaches it could read and write this memory",
            "set mcp.jwks_url, mcp.issuer and mcp.audience in config.yaml (signed JWTs), or listen on 127.0.0.1",
        )
