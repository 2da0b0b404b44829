"""The wire formats bead reads, in one list: the proxy's routes, `bead eval --wire` and `bead import` read it.

A format is a model API's request shape: its ``Wire`` (parse, splice, collector: ``bead.wire.Wire``), the
POST path bead reads, and ``read`` (a decoded request body to the typed conversation, with the request item
each message starts at). Every format belongs to an API, which says where its requests arrive at the proxy
(a path prefix), which setting names its upstream, and the shape of an error bead answers itself.

A third API format is one new module beside ``anthropic.py`` and ``openai.py`` plus one entry in ``FORMATS``
(and one in ``APIS`` when it is a new API, with its upstream setting in ``bead.config.ProxySettings``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..conversation import Conversation
from . import Wire, anthropic, openai


@dataclass(frozen=True)
class Api:
    name: str  # anthropic | openai
    prefix: str  # the proxy path its requests come under ("": every path no other API claims)
    upstream: str  # the setting that names its upstream (under ``proxy:`` in config.yaml)
    error_body: Callable[[str, str], dict[str, Any]]  # (message, kind) -> the API's error object

    def error(self, message: str, kind: str = "api_error") -> str:
        """An error bead itself answers, in the shape of this API."""
        return json.dumps(self.error_body(message, kind))


@dataclass(frozen=True)
class Format:
    name: str  # what `bead eval --wire` and an imported transcript's ``wire`` say
    api: Api
    path: str  # the POST path bead reads, after the API's prefix
    whole_path: bool  # the path is the whole path (Anthropic's), or its end (a compatible server's own
    # base path may come before it)
    items: str  # the request field holding the conversation (messages, input)
    wire: Wire
    read: Callable[[dict[str, Any]], tuple[Conversation, list[int]]]  # a decoded body -> (the conversation,
    # the request item each message starts at)

    def reads(self, method: str, path: str) -> bool:
        return method == "POST" and (path == self.path if self.whole_path else path.endswith(self.path))


def _read_messages(data: dict[str, Any]) -> tuple[Conversation, list[int]]:
    conv = anthropic.conversation_of(data, {})
    return conv, list(range(len(conv.messages)))


def _grouped(
    parse: Callable[[dict[str, Any], dict[str, str]], tuple[Conversation, tuple[openai.Group, ...]]],
) -> Callable[[dict[str, Any]], tuple[Conversation, list[int]]]:
    def read(data: dict[str, Any]) -> tuple[Conversation, list[int]]:
        conv, groups = parse(data, {})
        return conv, [g.items[0] if g.items else 0 for g in groups]

    return read


ANTHROPIC = Api("anthropic", "", "upstream", lambda message, kind: {"type": "error", "error": {"type": kind, "message": message}})
OPENAI = Api(
    "openai",
    "/openai",
    "openai_upstream",
    lambda message, kind: {"error": {"message": message, "type": kind, "param": None, "code": None}},
)
APIS = {a.name: a for a in (ANTHROPIC, OPENAI)}

FORMATS = (
    Format("anthropic", ANTHROPIC, "/v1/messages", True, "messages", anthropic, _read_messages),
    Format("chat", OPENAI, "/chat/completions", False, "messages", openai.CHAT, _grouped(openai.chat_conversation)),
    Format("responses", OPENAI, "/responses", False, "input", openai.RESPONSES, _grouped(openai.responses_conversation)),
)
NAMES = tuple(f.name for f in FORMATS)


def by_name(name: str) -> Format:
    for f in FORMATS:
        if f.name == name:
            return f
    raise KeyError(f"no wire format {name!r} (one of {', '.join(NAMES)})")


def api_of(raw_path: str) -> Api:
    """The API a proxy path belongs to: the one whose prefix it is under, else the one without a prefix."""
    path = raw_path.split("?", 1)[0]
    for api in APIS.values():
        if api.prefix and (path == api.prefix or path.startswith(api.prefix + "/")):
            return api
    return next(a for a in APIS.values() if not a.prefix)


def route(method: str, raw_path: str) -> tuple[Api, str, Format | None]:
    """(the API, the path to forward: its prefix removed, the format bead reads or None to pass it through)."""
    api = api_of(raw_path)
    rest = raw_path[len(api.prefix) :] or "/"
    path = rest.split("?", 1)[0]
    fmt = next((f for f in FORMATS if f.api is api and f.reads(method, path)), None)
    return api, rest, fmt


def read_items(name: str, items: list[dict[str, Any]]) -> tuple[Conversation, list[int]]:
    """The conversation of a transcript's request items in format ``name`` (``bead import``'s parse)."""
    fmt = by_name(name)
    return fmt.read({fmt.items: items})
