"""The home's proxy token: the secret path segment that marks the owner's requests to bead's servers."""

from __future__ import annotations

import os
import secrets

from . import files as safe
from .paths import Home


def load_token(home: Home) -> str:
    """The home's proxy token, created (0600) on first use; never read or written through a link."""
    path = home.proxy_token
    try:
        fd = safe.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, root=home.root)
    except FileExistsError:
        return safe.read_text(path, root=home.root).strip()
    token = secrets.token_urlsafe(24)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    return token
