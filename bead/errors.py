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
