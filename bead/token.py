"""The home's proxy token: the secret path segment that marks the owner's requests to bead's servers."""

from __future__ import annotations

import contextlib
import os
import re
import secrets

from . import files as safe
from .paths import Home

SHAPE = re.compile(r"[A-Za-z0-9_-]{16,128}")  # fullmatch: what a token may be (secrets.token_urlsafe's alphabet)


def load_token(home: Home) -> str:
    """The home's proxy token, created (0600) on first use; never read or written through a link. A file that holds
    no token of its shape (emptied, a word typed into it) gets a new one: with an empty token the wrapper never
    used the proxy while `bead status` said all was well, and a short one is guessed."""
    path = home.proxy_token
    try:
        held = safe.read_text(path, root=home.root).strip()
    except FileNotFoundError:
        held = None
    if held is not None and SHAPE.fullmatch(held):
        return held
    token = secrets.token_urlsafe(24)
    if held is not None:
        safe.atomic_write(path, (token + "\n").encode("ascii"), mode=0o600, root=home.root)
        return token
    # Created whole, then given its name (a link, which fails if another process named one first): a process that
    # reads the file never sees it empty, as it could between an exclusive create and its write, and then replaced
    # it, leaving the proxy and the file with different tokens.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    safe.atomic_write(tmp, (token + "\n").encode("ascii"), mode=0o600, root=home.root)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return load_token(home)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return token


_READ: dict[str, tuple[int, str]] = {}  # the token file's path -> (its mtime in ns, the token)
MARK = "[REDACTED:bead-token]"


def home_token(home: Home) -> str | None:
    """The home's token if it has one (never made here), read again only when its file changed."""
    path = home.proxy_token
    try:
        mtime = os.stat(path, follow_symlinks=False).st_mtime_ns
        known = _READ.get(str(path))
        if known is not None and known[0] == mtime:
            return known[1] or None
        token = safe.read_text(path, root=home.root).strip()
    except (OSError, safe.UnsafePath):
        return None
    _READ[str(path)] = (mtime, token)
    return token or None


def without_token(home: Home, text: str) -> tuple[str, bool]:
    """``text`` with the home's own token (which `env`, a settings file or `cat proxy.token` puts in a turn)
    replaced by MARK, and whether it held it: the token lets whoever holds it be the owner to the proxy."""
    token = home_token(home)
    if not token or token not in text:
        return text, False
    return text.replace(token, MARK), True
