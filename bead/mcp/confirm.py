"""The two-call rule of forget, forget_matching and seal.

The first call returns a preview and a token; the second, with the token,
acts. A token works once (any use spends it), only for the action and the
arguments it was issued for, and only for ``mcp.confirm_ttl_s`` (10 minutes).
It also remembers a digest of the preview: if what the action would touch has
changed since (a new version, another matching turn), the second call acts on
nothing and asks for a new preview. The harness may approve tool calls
without asking the person; the preview is what the person sees first.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from .errors import ToolFailure


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class ConfirmTokens:
    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.clock = clock
        self._open: dict[str, tuple[str, str, float, str]] = {}  # token -> (action, args, expires, preview)
        self._lock = threading.Lock()

    def issue(self, action: str, args: dict[str, Any], preview: Any) -> str:
        token = secrets.token_urlsafe(18)
        now = self.clock()
        with self._lock:
            for t in [t for t, (_a, _g, exp, _p) in self._open.items() if exp <= now]:
                del self._open[t]
            self._open[token] = (action, digest(args), now + self.ttl_s, digest(preview))
        return token

    def peek(self, token: str, action: str, args: dict[str, Any]) -> str | None:
        """The digest of the preview ``token`` was issued with, if ``take`` would accept it for ``action(args)``
        now; None otherwise. Nothing is spent."""
        with self._lock:
            held = self._open.get(token)
        if held is None or held[0] != action or held[1] != digest(args) or self.clock() >= held[2]:
            return None
        return held[3]

    def discard(self, token: str) -> None:
        """Spend ``token`` without acting."""
        with self._lock:
            self._open.pop(token, None)

    def take(self, token: str, action: str, args: dict[str, Any], again: str) -> str:
        """Spend ``token`` for ``action(args)``: the digest of the preview it was issued with, or ToolFailure.
        ``again`` is the call that gets a new preview. The caller compares the digest with the preview now."""
        with self._lock:
            held = self._open.pop(token, None)
        nxt = f"call {again} without confirm for a new preview and token"
        if held is None:
            raise ToolFailure("confirm_invalid", "that confirm token is unknown or was used already; nothing was changed", nxt)
        t_action, t_args, expires, t_preview = held
        if self.clock() >= expires:
            raise ToolFailure(
                "confirm_expired", f"that confirm token expired ({self.ttl_s:.0f} s after its preview); nothing was changed", nxt
            )
        if t_action != action or t_args != digest(args):
            raise ToolFailure(
                "confirm_mismatch",
                "that confirm token was issued for another action or other arguments; it is spent now and nothing was changed",
                nxt,
            )
        return t_preview

    @staticmethod
    def check_preview(held: str, preview: Any, again: str) -> None:
        if held != digest(preview):
            raise ToolFailure(
                "preview_stale",
                "what this would change is no longer what the preview showed; nothing was changed",
                f"call {again} without confirm for a new preview and token",
            )
