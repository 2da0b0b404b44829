"""Structured tool errors: what failed, whether to retry, whether the write may have happened, the next call.

A failed tool call is a result with ``isError`` set whose body (text and
structured content alike) is ``{"error", "code", "retryable",
"outcome_unknown", "next"}``; ``next`` names the call that moves on. The
message is bead's own sentence; an unexpected exception is reported by its
type only, never its text (which may hold a value).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.types import CallToolResult, TextContent

from ..core.memory import busy_errors
from ..display import json_text, visible_data
from ..errors import (
    BeadError,
    InvalidArgument,
    KeySealed,
    NotFound,
    NotPermitted,
    RefusedWrite,
    Sealed,
    Unreadable,
    VersionConflict,
)


@dataclass
class ToolFailure(Exception):
    """An error a tool raises on purpose, with its code and next call."""

    code: str
    message: str
    next: str = ""
    retryable: bool = False

    def __str__(self) -> str:
        return self.message


def result(
    code: str, message: str, *, next_call: str = "", retryable: bool = False, outcome_unknown: bool = False
) -> CallToolResult:
    body = {"error": message, "code": code, "retryable": retryable, "outcome_unknown": outcome_unknown, "next": next_call}
    return CallToolResult(
        content=[TextContent(type="text", text=json_text(body))], structured_content=visible_data(body), is_error=True
    )


def failure(exc: BaseException, *, write: bool) -> tuple[CallToolResult, str]:
    """(the error result, its code) for an exception a tool's work raised."""
    if isinstance(exc, ToolFailure):
        return result(exc.code, exc.message, next_call=exc.next, retryable=exc.retryable), exc.code
    if isinstance(exc, VersionConflict):
        nxt = (
            f"call get_memory(key={exc.key!r}) to read the current value, then remember again with "
            f"expected_version={exc.current or 0} if your change still holds"
        )
        return result("version_conflict", exc.message, next_call=nxt), "version_conflict"
    if isinstance(exc, Sealed | KeySealed):
        return result(
            "sealed",
            exc.message,
            next_call="none: a sealed value is only for the person, at their terminal (`bead sealed show KEY`)",
        ), "sealed"
    if isinstance(exc, Unreadable):
        return result(
            "unreadable",
            exc.message,
            next_call="none: the person mends the file (`bead status` names it) or writes the value again",
        ), "unreadable"
    if isinstance(exc, NotFound):
        return result("not_found", exc.message, next_call=exc.hint or "search_memory"), "not_found"
    if isinstance(exc, NotPermitted):
        return result("not_permitted", exc.message, next_call=exc.hint or ""), "not_permitted"
    if isinstance(exc, InvalidArgument):
        nxt = "call again with a corrected argument" + (f" ({exc.hint})" if exc.hint else "")
        return result("invalid_argument", exc.message, next_call=nxt), "invalid_argument"
    if isinstance(exc, busy_errors()):
        return result(
            "busy",
            "the memory index is busy with another bead process; nothing was changed",
            next_call="call again in a moment",
            retryable=True,
        ), "busy"
    if isinstance(exc, RefusedWrite):
        return result("refused", exc.message, next_call=exc.hint or ""), "refused"
    if isinstance(exc, BeadError):
        return result("rejected", exc.message, next_call=exc.hint or ""), "rejected"
    name = type(exc).__name__
    if write:
        return result(
            "internal",
            f"bead failed ({name}); the change may or may not have been made",
            next_call="read the fact back (get_memory) before trying again",
            outcome_unknown=True,
        ), "internal"
    return result(
        "internal",
        f"bead failed ({name})",
        next_call="call again; if it keeps failing, `bead status` shows what is wrong",
        retryable=True,
    ), "internal"
