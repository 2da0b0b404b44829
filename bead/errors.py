"""One error type for everything bead reports to a person."""

from __future__ import annotations


class BeadError(Exception):
    """An error with a hint that names the next step.

    The CLI prints ``message`` and then ``hint`` on stderr and exits 1.
    """

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class RefusedWrite(BeadError):
    """A write the store will not make (tombstoned value, sealed key)."""


class KeySealed(RefusedWrite):
    """A plaintext write to a key whose versions are sealed in the vault (the design's ErrSealed)."""

    def __init__(self, key: str):
        super().__init__(
            f"refusing to write {key} in plain text: the key is sealed in the vault",
            f"write it with --sensitivity secret (it is sealed too), or run `bead unseal {key}` "
            "first to make the key plaintext again",
        )
        self.key = key


class InvalidArgument(BeadError):
    """A value a caller passed that bead cannot use as given (a key, a scope, a type): fix it and call again."""


class InvalidKey(InvalidArgument):
    """A key that is not of the shape ``user/<name>``, ``project/<project>/<name>`` or ``global/<name>``."""


class NotFound(BeadError):
    """Nothing under that key (or nothing the asker may see there: the two look the same)."""


class Unreadable(BeadError):
    """A key whose newest version file bead cannot read: no value is served until it is mended or written again
    (the version below it is one the person replaced, so it is not served in its place)."""

    def __init__(self, key: str, version: int, path: object, reason: str):
        super().__init__(
            f"{key}: its newest version, v{version}, cannot be read ({reason}), so no value is served; "
            "the version below it was replaced and is not served in its place",
            f"mend or remove {path} (`bead status` lists such files), or write the value again (a version above "
            f"it); `bead history {key}` lists the versions bead can read",
        )
        self.key = key
        self.version = version


class NotPermitted(BeadError):
    """A scope the asker may not read or write (a team member and another project, say)."""


class Sealed(BeadError):
    """A key whose versions are sealed in the vault: its value is never returned by a read."""

    def __init__(self, key: str):
        super().__init__(
            f"{key} is sealed in the vault: its value is never returned here",
            f"only the person can read it, with `bead sealed show {key}` and the passphrase",
        )
        self.key = key


class VersionConflict(RefusedWrite):
    """A compare-and-swap write whose expected version is no longer the key's current one."""

    def __init__(self, key: str, expected: int, current: int | None):
        now = f"at v{current}" if current else "without a version"
        want = f"v{expected}" if expected else "no version (a new key)"
        super().__init__(
            f"{key} is {now}, not {want}: it changed since it was read; nothing was written",
            f"read it again and write with expected version {current or 0}",
        )
        self.key, self.expected, self.current = key, expected, current
