"""Wire formats: how a model API's requests and responses look, read once and edited in place.

``anthropic`` is the Messages API; ``openai`` holds the Chat Completions
API (``openai.CHAT``) and the Responses API (``openai.RESPONSES``). Each
format parses a request body into the typed
``bead.conversation.Conversation``, splices blocks into the raw body
without moving a byte, and rebuilds the assistant turn from the response
bytes. ``Wire`` is all the proxy's engine knows of a format: the anthropic
module and the two OpenAI formats each satisfy it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..conversation import Conversation, Message


class Collector(Protocol):
    """Rebuilds the assistant turn from the response bytes as they arrive (linear time, capped)."""

    def feed(self, chunk: bytes) -> None: ...

    def result(self, index: int) -> tuple[Message, dict[str, Any]] | None:
        """(the assistant message at position ``index``, flags such as ``partial``), or None."""
        ...


class Wire(Protocol):
    """One model API's request and response format, as the engine uses it."""

    def parse(self, body: bytes, headers: dict[str, str]) -> tuple[Any, Conversation]:
        """(the spans the splice needs, the typed conversation); a ValueError for a body bead cannot read."""
        ...

    def splice(self, req: Any, pinned: str | None, blocks: dict[int, list[str]]) -> bytes:
        """The body with the pinned block and each conversation message's cue blocks added, every other
        byte as it was (``blocks`` is keyed by the conversation's message index)."""
        ...

    def collector(self, content_type: str, content_encoding: str | None) -> Collector: ...
