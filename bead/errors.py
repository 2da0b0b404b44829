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
        super().__init__(f"refusing to write {key} in plain text: the key is sealed in the vault",
                         f"write it with --sensitivity secret (it is sealed too), or run `bead unseal {key}` "
                         "first to make the key plaintext again")
        self.key = key
