"""Who listens on a local TCP port, as the kernel says (Linux: /proc): for a busy port's message and for
`bead status` about a service that cannot start."""

from __future__ import annotations

import os
from pathlib import Path


def hex_port(port: int) -> str:
    return f"{port:04X}"


def listener(port: int, proc: Path = Path("/proc")) -> str | None:
    """Who listens on a local TCP port, as the kernel says: ``pid 123 (python3)``, ``uid 1000`` or None."""
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
        return None
    target = f"socket:[{inode}]"
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        try:
            for fd in os.listdir(proc / pid / "fd"):
                if os.readlink(proc / pid / "fd" / fd) == target:
                    comm = (proc / pid / "comm").read_text(encoding="utf-8", errors="replace").strip()
                    return f"pid {pid} ({comm})"
        except OSError:
            continue
    return f"a process of uid {uid}"


def client_address(listen: str) -> str:
    """``listen`` as a client should dial it: ``localhost`` as 127.0.0.1, which the proxy binds (bead.proxy.serve).
    Dialled by name, ``localhost`` may resolve to ::1 first, where another user's listener would get the request."""
    host, sep, port = listen.rpartition(":")
    return f"127.0.0.1:{port}" if sep and host.strip("[]").lower() == "localhost" else listen
