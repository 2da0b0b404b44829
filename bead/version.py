"""Which bead this is: the version, and a build id that changes with any of the package's files."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from . import __version__


@functools.cache
def build_id() -> str:
    """A digest of the installed package's files (their paths and bytes): two processes that run the same code
    have the same id; an upgrade or a reinstall of other code gives another, even at the same version."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def describe() -> str:
    return f"{__version__} (build {build_id()})"
