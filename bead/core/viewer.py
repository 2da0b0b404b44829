"""Who is asking: the home's own person, or one member of a team host.

The person who owns a home sees all of its memory. On a team host (`bead mcp
--http` with JWT authentication) each member is a ``Viewer`` with a name (the
token's actor claim) and the projects they may share (``mcp.projects``):

- their own ``user/`` facts, and no one else's. Each member has their own
  part of the ``user/`` key space: the key ``user/editor`` a member reads or
  writes is stored as ``user/<tag>.editor``, where the tag is a hash of their
  name, so two members never collide on a key, and no member can even tell
  whether another has a key of that name. Every such version carries the
  member's name as its ``owner``; a reader checks both.
- the shared ``project/<p>/`` facts of the projects they are allowed;
- no ``global/`` facts (those are the host's own), and no raw turns (turns
  carry no owner).

Every read in ``bead.core.query`` takes a Viewer and filters by it (in SQL,
``bead.index.query.Visibility``, and again on each row), and every write of a
member goes through ``stored_key`` and is written with ``owner``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..conversation import project_slug
from ..errors import InvalidArgument, InvalidKey, NotPermitted
from ..index.query import Visibility
from ..store.keys import MAX_SEGMENT_BYTES, member_prefix, parse_id, scope_of, validate_key

_PROJECT = re.compile(r"[a-z0-9][a-z0-9._-]*")  # fullmatch: a key segment


@dataclass(frozen=True)
class Viewer:
    owner: str | None = None  # None: the home's own person, who sees everything
    projects: tuple[str, ...] | None = ()  # a member's projects; None: every project

    @classmethod
    def member(cls, owner: str, allowed: Iterable[str]) -> Viewer:
        """A team member and the projects ``mcp.projects`` gives them (``*``: every project)."""
        names = list(allowed)
        if "*" in names:
            return cls(owner, None)
        # As a folder's name becomes its project (bead.conversation.project_slug): `app-日本` listed is the project
        # its folder makes, `app-5070b32f`, not another.
        return cls(owner, tuple(sorted({s for n in names if (s := project_slug(n)) is not None})))

    @property
    def team(self) -> bool:
        return self.owner is not None

    @property
    def user_prefix(self) -> str:
        """The start of every ``user/`` key this member owns, as stored."""
        assert self.owner is not None
        return member_prefix(self.owner)

    def visibility(self) -> Visibility | None:
        """The SQL filter for this viewer's reads (None: everything)."""
        if self.owner is None:
            return None
        return Visibility(self.owner, self.user_prefix, self.projects)

    def allows_project(self, project: str) -> bool:
        return self.owner is None or self.projects is None or project in self.projects

    def check_project(self, project: str | None) -> str | None:
        """``project`` if it is a project's name and this viewer may read and write it (NotPermitted otherwise)."""
        project = project.strip().lower() if isinstance(project, str) else project
        if project is not None and (not _PROJECT.fullmatch(project) or len(project.encode("utf-8")) > MAX_SEGMENT_BYTES):
            raise InvalidArgument(
                f"project {project[:80]!r} is not a project name (lower-case [a-z0-9._-])",
                'give the project\'s name, e.g. "shop"',
            )
        if project is not None and not self.allows_project(project):
            raise NotPermitted(
                f"project {project!r} is not one of your projects on this host",
                "the host's `mcp.projects` lists the projects each member shares",
            )
        return project

    def check_scope(self, scope: str | None) -> str | None:
        """A scope as given (``user``, ``global``, ``project/<p>`` or a bare project name), normalised and allowed."""
        if scope is None or not scope.strip():
            return None
        s = scope.strip().lower().rstrip("/")
        if s not in ("user", "global"):
            name = s.removeprefix("project/")
            if not _PROJECT.fullmatch(name) or len(name.encode("utf-8")) > MAX_SEGMENT_BYTES:
                raise InvalidArgument(
                    f"scope {scope[:80]!r} is not user, global, project/<name> or a project name",
                    'e.g. scope="project/shop", or leave it out to search everything',
                )
            self.check_project(name)
            s = f"project/{name}"
        if s == "global" and self.team:
            raise NotPermitted("global facts are the host's own; members share project facts", "use scope user or project/<name>")
        return s

    def stored_key(self, key: str) -> str:
        """The key as the store holds it, for this viewer (validated; NotPermitted for a scope it may not use)."""
        if not isinstance(key, str):
            raise InvalidKey("a key must be a string")
        validate_key(key)
        if self.owner is None:
            return key
        scope = scope_of(key)
        if scope == "user":
            stored = self.user_prefix + key[len("user/") :]
            try:
                return validate_key(stored)
            except InvalidKey:
                room = MAX_SEGMENT_BYTES - len(self.user_prefix) + len("user/")
                raise InvalidKey(
                    f"key {key!r} is too long on this host (a user/ name holds at most {room} bytes here)", "use a shorter name"
                ) from None
        if scope == "global":
            raise NotPermitted(
                "global keys are the host's own; members write user/ or project/ facts",
                "use user/<name> or project/<project>/<name>",
            )
        self.check_project(scope.split("/", 1)[1])
        return key

    def shown_key(self, key: str) -> str:
        """The key as this viewer knows it (a member's own user/ keys without their tag)."""
        if self.owner is not None and key.startswith(self.user_prefix):
            return "user/" + key[len(self.user_prefix) :]
        return key

    def shown_id(self, fact_id: str) -> str:
        parsed = parse_id(fact_id)
        return f"{self.shown_key(parsed[0])}@v{parsed[1]}" if parsed else fact_id

    def sees(self, key: str, owner: str) -> bool:
        """Whether this viewer may read the fact ``key`` (as stored) whose version says ``owner``."""
        if self.owner is None:
            return True
        scope = scope_of(key)
        if scope == "user":
            return key.startswith(self.user_prefix) and owner == self.owner
        if scope.startswith("project/"):
            return self.allows_project(scope.split("/", 1)[1])
        return False

    def sees_row(self, row: Mapping[str, Any]) -> bool:
        return self.sees(str(row["key"]), str(row.get("owner") or ""))


LOCAL = Viewer()
