"""Fact keys and the enumerations of the fact schema."""

from __future__ import annotations

import re

from ..errors import BeadError

TYPES = ("user", "feedback", "project", "reference")
TRUSTS = ("user_stated", "accepted", "agent_observed", "dream_inferred")
# A person's word: said by them, or accepted by them from the review queue.
# Tombstones do not block it, and recall ranks it first.
PERSON_TRUSTS = ("user_stated", "accepted")
SENSITIVITIES = ("public", "private", "secret")
STATUSES = ("current", "superseded", "dormant", "sealed")

_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
KEY_HELP = "keys look like user/<name>, project/<project>/<name> or global/<name>, with lower-case [a-z0-9._-] segments"


def validate_key(key: str) -> str:
    """Return ``key`` if it is well formed; raise BeadError otherwise.

    A key becomes a directory under ``store/facts``, so anything that could
    leave that directory (``..``, an absolute path, an empty segment) or hide
    from the indexer (a leading dot) is refused.
    """
    if not isinstance(key, str) or not key:
        raise BeadError("empty key", KEY_HELP)
    if key.startswith("/") or "\\" in key:
        raise BeadError(f"key {key!r} is an absolute or Windows path", KEY_HELP)
    parts = key.split("/")
    for part in parts:
        if part == "":
            raise BeadError(f"key {key!r} has an empty segment", KEY_HELP)
        if part in (".", ".."):
            raise BeadError(f"key {key!r} would escape the store ({part!r} segment)", KEY_HELP)
        if not _SEGMENT.match(part):
            raise BeadError(f"key {key!r}: segment {part!r} is not lower-case [a-z0-9._-] "
                            "(or starts with a dot or dash)", KEY_HELP)
    scope = parts[0]
    shape_ok = (scope in ("user", "global") and len(parts) == 2) or (scope == "project" and len(parts) == 3)
    if not shape_ok:
        raise BeadError(f"key {key!r} does not have the shape of a key", KEY_HELP)
    return key


def scope_of(key: str) -> str:
    """``user``, ``global`` or ``project/<name>``."""
    parts = key.split("/")
    return "/".join(parts[:2]) if parts[0] == "project" else parts[0]


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise BeadError(f"{name} {value!r} is not one of {', '.join(choices)}", f"use --{name} with one of: {', '.join(choices)}")
    return value


def parse_id(text: str) -> tuple[str, int] | None:
    """``key@vN`` -> (key, N); None when ``text`` is not a version id."""
    m = re.match(r"^(.+)@v(\d+)$", text)
    if not m:
        return None
    return m.group(1), int(m.group(2))
