"""Fact keys and the enumerations of the fact schema."""

from __future__ import annotations

import hashlib
import re

from ..errors import BeadError, InvalidKey

TYPES = ("user", "feedback", "project", "reference")
TRUSTS = ("user_stated", "accepted", "agent_observed", "dream_inferred")
# A person's word: said by them, or accepted by them from the review queue.
# Tombstones do not block it, and recall ranks it first.
PERSON_TRUSTS = ("user_stated", "accepted")


def persons_word(trust: str, pinned: bool) -> bool:
    """Whether a version is the person's word: stated or accepted by them, or pinned (their decision, whoever wrote
    it; a new version would keep the pin)."""
    return trust in PERSON_TRUSTS or pinned


SENSITIVITIES = ("public", "private", "secret")
STATUSES = ("current", "superseded", "dormant", "sealed")

# fullmatch everywhere: `$` also matches before a final newline.
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]*")
_ID = re.compile(r"(.+)@v([1-9][0-9]{0,8})")
# A segment is a folder name (the file system allows 255 bytes); a key also
# lands in ids, index rows and audit lines.
MAX_SEGMENT_BYTES = 100
MAX_KEY_BYTES = 256  # project/<100>/<100> fits
KEY_HELP = (
    "keys look like user/<name>, project/<project>/<name> or global/<name>, with lower-case [a-z0-9._-] segments "
    "(`bead list` shows the keys there are)"
)


def validate_key(key: str) -> str:
    """Return ``key`` if it is well formed; raise BeadError otherwise.

    A key becomes a directory under ``store/facts``, so anything that could
    leave that directory (``..``, an absolute path, an empty segment) or hide
    from the indexer (a leading dot) is refused.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKey("empty key", KEY_HELP)
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        # Half of a character (bytes that are not UTF-8, given on a command line): no key, and not even measurable.
        shown = key.encode("ascii", "backslashreplace").decode("ascii")
        raise InvalidKey(f"key {shown!r} holds bytes that are not UTF-8 text", KEY_HELP) from None
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise InvalidKey(
            f"key {key[:40]!r}... is {len(key.encode('utf-8'))} bytes long; the limit is {MAX_KEY_BYTES}",
            f"use a shorter key (at most {MAX_KEY_BYTES} bytes, {MAX_SEGMENT_BYTES} per segment)",
        )
    if key.startswith("/") or "\\" in key:
        raise InvalidKey(f"key {key!r} is an absolute or Windows path", KEY_HELP)
    parts = key.split("/")
    for part in parts:
        if part == "":
            raise InvalidKey(f"key {key!r} has an empty segment", KEY_HELP)
        if part in (".", ".."):
            raise InvalidKey(f"key {key!r} would escape the store ({part!r} segment)", KEY_HELP)
        if not _SEGMENT.fullmatch(part):
            if "@v" in part.lower() and part is parts[-1]:
                # `user/a@v0`, `@v01`, `@V1`: a version that does not read, not a key's letters.
                raise InvalidKey(
                    f"{key!r} names no version: a version is @v and its number, 1 or more, without leading zeros",
                    "write KEY@vN (`bead history KEY` lists the versions), or the key alone for its current one",
                )
            raise InvalidKey(
                f"key {key!r}: segment {part!r} is not lower-case [a-z0-9._-] (or starts with a dot or dash)", KEY_HELP
            )
        if len(part.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise InvalidKey(
                f"key {key!r}: segment {part[:40]!r}... is {len(part.encode('utf-8'))} bytes long; "
                f"the limit is {MAX_SEGMENT_BYTES}",
                f"use a shorter name (at most {MAX_SEGMENT_BYTES} bytes per segment)",
            )
    scope = parts[0]
    shape_ok = (scope in ("user", "global") and len(parts) == 2) or (scope == "project" and len(parts) == 3)
    if not shape_ok:
        hint = KEY_HELP
        if len(parts) == 1 and parts[0][-1:].isalnum():
            # A bare name, as bead's blocks and pointers write a fact of the conversation's own project: get_memory
            # and `bead show` take it; a write, a pin or a forget names the fact in full.
            hint = (
                f"{key!r} is a bare name: a fact of a project is project/<project>/{key} (bead's blocks write the "
                f"conversation's project's facts so; get_memory and `bead show` give the full key), the person's user/{key}"
            )
        elif scope in TYPES and scope not in ("user", "project") and len(parts) == 2:
            # A type is not a scope: a feedback fact about the person lives under user/, one about a project
            # under project/<name>/ (the type is --type, stored in the frontmatter).
            hint = (
                f"{scope!r} is a type, not a scope: write it as user/{parts[1]} or project/<project>/{parts[1]} "
                f"with --type {scope}"
            )
        raise InvalidKey(f"key {key!r} does not have the shape of a key", hint)
    return key


def check_new_key(key: str) -> str:
    """A key a write may create: well formed (``validate_key``) and canonical, each segment ending in a letter
    or digit, so that ``user/editor.`` or ``user/editor-`` cannot stand beside ``user/editor`` (keys already
    on disk stay readable and forgettable whatever they end with)."""
    validate_key(key)
    for part in key.split("/"):
        if part[-1] in "._-":
            raise InvalidKey(
                f"key {key!r}: segment {part!r} ends with {part[-1]!r}", "end every segment of a key with a letter or a digit"
            )
    return key


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789._-/")


def key_mentions(text: str, key: str) -> list[tuple[int, int]]:
    """Spans where ``text`` names ``key`` as a whole key or id (``user/a`` is not in ``user/ab``).

    A key may end a sentence: ``user/a.`` names user/a, ``user/a.b`` does not.
    Plain substring search, so its time is linear in the text whatever it holds.
    """
    out = []
    i = 0
    while (j := text.find(key, i)) != -1:
        end = j + len(key)
        before = text[j - 1] if j else ""
        after = text[end : end + 2]
        tail_ok = not after or after[0] not in _KEY_CHARS or (after[0] == "." and after[1:2] not in _KEY_CHARS)
        if (not before or before not in _KEY_CHARS) and tail_ok:
            out.append((j, end))
        i = end
    return out


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
    m = _ID.fullmatch(text)
    if not m:
        return None
    return m.group(1), int(m.group(2))


# A team host's member's user facts are stored under ``user/<tag>.``, the tag the start of their actor's SHA-256
# (bead.core.viewer): kept apart from the home's own person's, and from each other's.
MEMBER_TAG_CHARS = 12


def member_prefix(owner: str) -> str:
    """The start of every ``user/`` key the team member ``owner`` writes, as stored."""
    return f"user/{hashlib.sha256(owner.encode('utf-8')).hexdigest()[:MEMBER_TAG_CHARS]}."


def members_own(key: object, owner: object) -> bool:
    """Whether ``key`` lies in ``owner``'s user space as a team member: a fact about that member, never the home's
    own person's (a conversation of the home's owner must not be given it as theirs)."""
    return isinstance(key, str) and isinstance(owner, str) and bool(owner) and key.startswith(member_prefix(owner))
