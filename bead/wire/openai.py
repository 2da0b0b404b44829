"""The OpenAI APIs as bead reads and edits them: Chat Completions (``CHAT``) and Responses (``RESPONSES``).

Each satisfies ``bead.wire.Wire``, as the anthropic module does:

- ``parse``: a request body, once, into the spans the splice needs and the
  typed ``Conversation`` (the only place that walks these APIs' messages and
  items). One conversation message per chat message or Responses message
  item, except that a run of tool outputs (chat ``tool`` messages,
  Responses ``*_call_output`` items) is one ``user`` message of tool output
  and a run of the assistant's items (its message, reasoning, tool calls) is
  one ``assistant`` message: the shape of an Anthropic conversation, so
  capture, "remember" and the cue extraction read both APIs alike;
- ``splice``: the pinned block after the existing system or developer
  content, cue blocks at the end of their user messages, every other byte as
  it was;
- ``collector``: the assistant turn rebuilt from the bytes the harness
  received (a JSON body, chat completion chunks, or the Responses API's
  typed events), on the anthropic collector's capped, linear SSE reader.

A person's text goes through the same typed/pasted split as on the Anthropic
route (``anthropic.text_parts``). A user text part that is one tagged
element from start to end (``HARNESS_ELEMENTS``: Codex CLI's ``<environment_context>``,
``<user_instructions>``, ``<turn_aborted>`` and the like) or Codex's ``# AGENTS.md
instructions for ...`` block is the harness's context, as Claude Code's
``<system-reminder>`` is: never typed, never captured, never a cue.
Reasoning is skipped everywhere.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from .. import budget
from ..capture.text import CODEX_CONTEXT_ELEMENTS, clean, harness_element, strip_own
from ..conversation import Conversation, Message, Part, Source, call_id, context_elements, reported_cwd
from . import aider, anthropic
from .splice import (
    MAX_MESSAGE_PARTS,
    Edit,
    Span,
    SpliceError,
    TooLarge,
    append_blocks,
    append_to_string,
    apply,
    check_parts,
    decode,
    members,
)

# "<name ...>" opening a text: the name is bounded, the match anchored (linear time).
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9_-]{0,63})(?:[ \t][^>\n]{0,512})?>")
_AGENTS_MD = "# AGENTS.md instructions for "


# The elements a harness writes into a user message as its own context, from start to end: Codex CLI's (its
# contextual user fragments: codex-rs model_visible_context.rs) and Claude Code's, which OpenCode also writes.
# Only these: any other tag is a harness's wrapper of the person's words (Cline's and Roo Code's <task>) or the
# person's own, and a part that was one whole element of any name went uncaptured and asked nothing.
HARNESS_ELEMENTS = frozenset({*CODEX_CONTEXT_ELEMENTS, "system-reminder"})


def harness_context(text: str) -> bool:
    """Whether a user text part is the harness's own context rather than the person's words: Codex's AGENTS.md
    block, or one of HARNESS_ELEMENTS from start to end."""
    t = text.strip()
    if t.startswith(_AGENTS_MD):
        return True
    m = _OPEN_TAG.match(t)
    return m is not None and m.group(1).lower() in HARNESS_ELEMENTS and t.lower().endswith(f"</{m.group(1).lower()}>")


def _json_value(text: str) -> Any:
    """A tool call's arguments as data when they are JSON (too deep or not JSON: the text as it is)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError, TypeError):
        return text
    return value if isinstance(value, dict | list) else text


def _call_part(name: str, data: Any, call: Any = None) -> Part:
    # The assistant may copy injected memory into a tool call (a note it writes):
    # bead's own blocks leave its input too.
    data = anthropic.strip_own_deep(data)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return Part(Source.TOOL_CALL, text, kind="tool_use", name=name, data=data, call=call_id(call))


def _content_parts(content: Any, source: Source) -> tuple[list[Part], list[str]]:
    """(the parts, the raw texts for the hash) of a message's content: a string or a list of parts."""
    items = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    parts: list[Part] = []
    raw: list[str] = []
    texts = [_item_text(c) for c in items]
    several = len(items) > 1 or any(t is not None and anthropic.tool_result_head(t) for t in texts)
    reads = anthropic.read_blocks(texts) if source is Source.TYPED and several else {}
    own = _own_item([None if i in reads else c for i, c in enumerate(items)]) if source is Source.TYPED else None
    for i, c in enumerate(items):
        if isinstance(c, str):
            text = c
        elif isinstance(c, dict):
            kind = str(c.get("type", ""))
            value = (
                c.get("text")
                if kind in ("text", "input_text", "output_text")
                else c.get("refusal")
                if kind == "refusal"
                else None
            )
            if value is None:
                if kind in ("image_url", "input_image", "image"):
                    parts.append(Part(Source.PASTED, "", kind="image"))
                elif kind in ("file", "input_file", "input_audio"):
                    parts.append(Part(Source.PASTED, "", kind="document"))
                continue
            text = str(value)
        else:
            continue
        raw.append(text)
        if i in reads:
            parts += anthropic.read_parts(reads[i], text)
        elif source is Source.TYPED and harness_context(text):
            parts.append(Part(Source.HARNESS, text.strip()))
        elif source is Source.TYPED and anthropic.attached_or_summary(text):
            # Codex's summary of a compacted conversation, or one element of another name (Cline's <task>): pasted,
            # as on the Anthropic route
            parts += anthropic.text_parts(text, Source.PASTED)
        else:
            # Of several text parts of a person's message, only their own words (the last) are typed.
            got = anthropic.text_parts(text, Source.PASTED if own is not None and i != own else source)
            if own is not None and i == own:  # the last of several: the one before may be the person's (anthropic)
                got = [dataclasses.replace(p, near_paste=True) if p.source is Source.TYPED else p for p in got]
            parts += got
    return parts, raw


def _item_text(c: Any) -> str | None:
    if isinstance(c, str):
        return c
    if isinstance(c, dict) and str(c.get("type", "")) in ("text", "input_text", "output_text"):
        value = c.get("text")
        return None if value is None else str(value)
    return None


def _own_item(items: list[Any]) -> int | None:
    """The person's own text part when several carry words (``anthropic.own_block``), harness context aside."""
    with_words = [
        i
        for i, c in enumerate(items)
        if (t := _item_text(c)) is not None and clean(t) and not harness_context(t) and not harness_element(clean(t))
    ]
    return with_words[-1] if len(with_words) > 1 else None


def _output_text(value: Any) -> str:
    """The text of a tool output: a string, a list of content parts, shell results or an object."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return ""
    out = []
    for v in value:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            kind = v.get("type")
            if isinstance(v.get("text"), str):
                out.append(v["text"])
            elif kind in ("input_image", "image_url", "computer_screenshot"):
                out.append("[image]")
            elif kind in ("input_file", "file"):
                out.append("[document]")
            else:  # a shell call's result: stdout and stderr
                out += [str(v[k]) for k in ("stdout", "stderr") if isinstance(v.get(k), str) and v[k]]
    return "\n".join(out)


def _check_groups(groups: tuple[Group, ...]) -> None:
    """TooLarge when one conversation message is a run of over MAX_MESSAGE_PARTS wire items (tool outputs, an
    assistant's calls). What is counted is what the client sent, as the Anthropic wire counts a message's blocks
    (with check_parts' count of each item's content): the parts bead reads out of a text are no measure of the
    request's size (a 28 KB JSON pasted without a fence came apart into thousands of them, and every request of its
    conversation was sent on without memory or capture: a review)."""
    if any(len(g.items) > MAX_MESSAGE_PARTS for g in groups):
        raise TooLarge(f"a message of more than {MAX_MESSAGE_PARTS} parts")


def _normalised(role: str, texts: list[str]) -> str:
    """Role and text, blind to bead's own blocks and to how the content was laid out (the hash's input)."""
    cleaned = [strip_own(t).strip() for t in texts]
    return role + "\x00" + "\x00".join(t for t in cleaned if t)


@dataclass(frozen=True)
class Group:
    """The wire items one conversation message came from, and where its cue blocks go."""

    items: tuple[int, ...]  # indices into ``messages`` / ``input``
    kind: str  # message | tools | other


class _Builder:
    """Collects conversation messages, merging runs of tool outputs and of the assistant's items."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.groups: list[Group] = []
        self._open: tuple[str, list[int], list[Part], list[str]] | None = None  # (kind, items, parts, texts)

    def add(self, role: str, item: int, parts: list[Part], texts: list[str], kind: str = "message") -> None:
        self.close()
        self.messages.append(Message(len(self.messages), role, tuple(parts), _normalised(role, texts)))
        self.groups.append(Group((item,), kind))

    def run(self, kind: str, item: int, parts: list[Part], texts: list[str]) -> None:
        """Add to the open run of ``kind`` (``tools`` or ``assistant``), or start one."""
        if self._open is None or self._open[0] != kind:
            self.close()
            self._open = (kind, [], [], [])
        self._open[1].append(item)
        self._open[2].extend(parts)
        self._open[3].extend(texts)

    def close(self) -> None:
        if self._open is None:
            return
        kind, items, parts, texts = self._open
        self._open = None
        role = "user" if kind == "tools" else "assistant"
        self.messages.append(Message(len(self.messages), role, tuple(parts), _normalised(role, texts)))
        self.groups.append(Group(tuple(items), kind))

    def done(self) -> tuple[tuple[Message, ...], tuple[Group, ...]]:
        self.close()
        return tuple(self.messages), tuple(self.groups)


def _structured(fmt: Any) -> bool:
    return isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object")


@dataclass
class Request:
    """The spans of one OpenAI request body that the proxy reads or edits."""

    text: str
    data: dict[str, Any]
    top: dict[str, Span]
    end: int  # the closing brace
    items: list[Span] | None  # the elements of ``messages`` / ``input``; None when ``input`` is a string
    groups: tuple[Group, ...]  # conversation message index -> wire items
    api: str  # chat | responses

    def member(self, i: int, name: str) -> Span | None:
        assert self.items is not None
        return members(self.text, self.items[i]).get(name)

    def item(self, i: int) -> dict[str, Any]:
        key = "messages" if self.api == "chat" else "input"
        value = self.data[key][i]
        return value if isinstance(value, dict) else {}


# ----- Chat Completions ------------------------------------------------------------------------

_CHAT_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def chat_conversation(data: dict[str, Any], headers: dict[str, str]) -> tuple[Conversation, tuple[Group, ...]]:
    """The typed conversation of a decoded Chat Completions request, and each message's wire items."""
    b = _Builder()
    raw = data.get("messages") or []
    check_parts(raw, ("content", "tool_calls"), per_item=True)
    system: list[str] = []
    lead: int | None = None  # how many of them come before the conversation's first other message
    first_user: list[str] | None = None
    for i, m in enumerate(raw):
        budget.check()
        m = m if isinstance(m, dict) else {}
        role = str(m.get("role", ""))
        if lead is None and role not in ("system", "developer"):
            lead = len(system)
        if role in ("tool", "function"):
            text = _output_text(m.get("content"))
            part = Part(Source.TOOL_OUTPUT, clean(text), kind="tool_result", call=call_id(m.get("tool_call_id")))
            b.run("tools", i, [part], [text])
        elif role == "assistant":
            parts, texts = _content_parts(m.get("content"), Source.ASSISTANT)
            if isinstance(m.get("refusal"), str) and m["refusal"]:
                parts += anthropic.text_parts(m["refusal"], Source.ASSISTANT)
                texts.append(m["refusal"])
            calls: list[Any] = list(m["tool_calls"]) if isinstance(m.get("tool_calls"), list) else []
            if isinstance(m.get("function_call"), dict):
                calls.append({"function": m["function_call"]})
            for c in calls:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict):
                    args = fn.get("arguments")
                    args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                    parts.append(_call_part(str(fn.get("name", "")), _json_value(args), c.get("id")))
                    texts.append(f"{fn.get('name', '')} {args}")
            b.add("assistant", i, parts, texts)
        else:
            conv_role = _CHAT_ROLES.get(role, "system")
            source = Source.TYPED if conv_role == "user" else Source.HARNESS
            if conv_role == "user" and m.get("name") not in (None, ""):
                # A named participant's message (a multi-agent client sends each agent's words as a user message
                # with its name: a web surfer's page, another model's answer): nothing tells it is the person.
                source = Source.PASTED
            parts, texts = _content_parts(m.get("content"), source)
            if conv_role == "system":
                parts = [Part(Source.HARNESS, "\n".join(texts))] if texts else []
                system.append("\n".join(texts))
            elif first_user is None:
                first_user = texts
            b.add(conv_role, i, parts, texts)
    messages, groups = b.done()
    _check_groups(groups)
    newest = next((m.index for m in reversed(messages) if m.role == "user"), -1)
    items = groups[newest].items if 0 <= newest < len(groups) else ()
    newest_content = raw[items[0]].get("content") if len(items) == 1 and isinstance(raw[items[0]], dict) else None
    messages, opener = aider.context(messages, newest_content, "\n".join(system), _AIDER_SPLIT)
    context = context_elements(first_user or [])
    reminders = context_elements(first_user or [], ("system-reminder",))
    no_tools = not data.get("tools") and not data.get("functions")
    auxiliary = no_tools and (_structured(data.get("response_format")) or _side_request("\n".join(system), messages))
    cwd, reported = reported_cwd(system if lead is None else system[:lead], context, reminders)
    conv = Conversation(
        messages,
        system="\n".join(system),
        cwd=cwd,
        cwd_reported=reported,
        auxiliary=auxiliary,
        opener=opener,
        lead_system="\n".join(system if lead is None else system[:lead]),
    )
    if opener >= 0 and aider.editor(messages, conv.system):
        # Aider's architect mode: the editor model is sent the architect model's answer as its user message.
        conv = conv.delegated()
    return conv, groups


# Side requests that quote the person's words or the work as data: not conversation. OpenCode's session title
# (its system prompt, then "Generate a title for this conversation:"); Aider's commit message. Neither has an
# assistant turn or tools.
_TITLE_REQUEST = ("You are a title generator.", "Generate a title for this conversation:")


# How a person's text becomes parts on these routes, for what Aider wrote around it (bead.wire.aider).
_AIDER_SPLIT = aider.Split(
    words=lambda text: anthropic.text_parts(text, Source.TYPED),
    content=lambda text: _content_parts(text, Source.TYPED)[0],
)


def _side_request(system: str, messages: tuple[Message, ...]) -> bool:
    if any(m.role == "assistant" for m in messages):
        return False
    if aider.commit_request(system):
        return True
    users = [m for m in messages if m.role == "user"]
    return system.startswith(_TITLE_REQUEST[0]) and bool(users) and aider.text_of(users[0]).startswith(_TITLE_REQUEST[1])


class Chat:
    """``POST .../chat/completions``."""

    name = "chat"

    def parse(self, body: bytes, headers: dict[str, str]) -> tuple[Request, Conversation]:
        text, data, top, items, end = decode(body, "messages")
        if not isinstance(data.get("messages"), list) or items is None:
            raise SpliceError("body is not a Chat Completions request (no messages array)")
        conv, groups = chat_conversation(data, headers)
        return Request(text, data, top, end, items, groups, "chat"), conv

    def splice(self, req: Request, pinned: str | None, blocks: dict[int, list[str]]) -> bytes:
        edits: list[Edit] = []
        if pinned and req.items:
            edits.append(_pinned_edit(req, pinned, ("system", "developer"), _chat_message("system", pinned)))
        for i, texts in blocks.items():
            edits.append(_cue_edit(req, i, texts))
        return apply(req.text, edits).encode("utf-8") if edits else req.text.encode("utf-8")

    def collector(self, content_type: str, content_encoding: str | None) -> ChatCollector:
        return ChatCollector(content_type, content_encoding)


def _chat_message(role: str, text: str) -> str:
    return json.dumps({"role": role, "content": text}, ensure_ascii=False, separators=(",", ":"))


# ----- Responses --------------------------------------------------------------------------------

# Items the assistant produced: its tool calls of every kind, and the reasoning (skipped).
_CALL_DATA = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "shell_call": "action",
    "apply_patch_call": "operation",
    "computer_call": "action",
    "web_search_call": "action",
    "file_search_call": "queries",
    "code_interpreter_call": "code",
    "mcp_call": "arguments",
    "tool_search_call": "arguments",
    "image_generation_call": None,
}


RESPONSE_ID_SNIFF = 64 * 1024  # bytes of an answer looked at for its response id


def _rid(v: Any) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= 256 else None


class ResponseIdSniffer:
    """A Responses answer's id from its first bytes, fed chunk by chunk on the proxy's event loop: each byte is
    looked at once, only the first ``RESPONSE_ID_SNIFF`` bytes, and only the first event (``response.created``
    comes first); a whole JSON answer (no stream) is read once, at its end. ``found`` is the id, ``done`` says
    to stop feeding. Never raises: bytes it cannot read end the sniffing."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.found: str | None = None
        self.done = False
        self.json = False

    def feed(self, chunk: bytes) -> None:
        if self.done:
            return
        start = max(0, len(self.buf) - 3)  # a blank line may straddle two chunks
        self.buf += chunk
        if len(self.buf) > RESPONSE_ID_SNIFF:
            self.done = True
            return
        if not self.json and self.buf.lstrip()[:1] == b"{":
            self.json = True  # a whole JSON body: read at the end
        if self.json:
            return
        cut = min((k for k in (self.buf.find(b"\n\n", start), self.buf.find(b"\r\n\r\n", start)) if k >= 0), default=-1)
        if cut < 0:
            return
        self.done = True  # the first event: it names the response, or nothing will
        block = bytes(self.buf[:cut]).replace(b"\r\n", b"\n")
        payload = b"\n".join(line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:"))
        try:
            ev = json.loads(payload)
        except Exception:  # noqa: BLE001 - not JSON, not UTF-8, nested too deep: no id, the answer goes on
            return
        resp = ev.get("response") if isinstance(ev, dict) else None
        self.found = _rid(resp.get("id")) if isinstance(resp, dict) else None

    def end(self) -> str | None:
        """The id once the answer is whole (a JSON body is read now)."""
        if self.found is None and self.json and not self.done:
            self.done = True
            try:
                body = json.loads(bytes(self.buf))
            except Exception:  # noqa: BLE001 - as above
                return None
            if isinstance(body, dict) and body.get("object") == "response":
                self.found = _rid(body.get("id"))
        return self.found


def _continues(data: dict[str, Any]) -> str | None:
    prev = data.get("previous_response_id")
    if isinstance(prev, str) and prev:
        return prev
    return _thread_id(data)


def _thread_id(data: dict[str, Any]) -> str | None:
    """The Conversations API conversation a request continues (``conversation``: its id, or an object with it)."""
    conv = data.get("conversation")
    if isinstance(conv, dict):
        conv = conv.get("id")
    return conv if isinstance(conv, str) and conv else None


def responses_conversation(data: dict[str, Any], headers: dict[str, str]) -> tuple[Conversation, tuple[Group, ...]]:
    """The typed conversation of a decoded Responses request, and each message's wire items."""
    b = _Builder()
    system: list[str] = []
    if isinstance(data.get("instructions"), str):
        system.append(data["instructions"])
    first_user: list[str] | None = None
    raw = data.get("input")
    check_parts(raw, ("content", "output"), per_item=True)
    lead: int | None = None  # how many of them come before the conversation's first other item
    if isinstance(raw, str) and raw:
        parts, texts = _content_parts(raw, Source.TYPED)
        b.add("user", 0, parts, texts, kind="string")
        first_user = [raw]
        raw = []
        lead = len(system)
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        budget.check()
        item = item if isinstance(item, dict) else {}
        kind = item.get("type", "message" if "role" in item else "")
        kind = kind if isinstance(kind, str) else ""
        if lead is None and not (kind == "message" and str(item.get("role", "")) in ("system", "developer")):
            lead = len(system)
        if kind == "message":
            role = str(item.get("role", ""))
            if role == "assistant":
                parts, texts = _content_parts(item.get("content"), Source.ASSISTANT)
                b.run("assistant", i, parts, texts)
            elif role == "user":
                parts, texts = _content_parts(item.get("content"), Source.TYPED)
                if first_user is None:
                    first_user = texts
                b.add("user", i, parts, texts)
            else:  # system, developer: the harness's instructions
                _, texts = _content_parts(item.get("content"), Source.HARNESS)
                system.append("\n".join(texts))
                b.add("system", i, [Part(Source.HARNESS, "\n".join(texts))] if texts else [], texts)
        elif kind.endswith("_call_output") or kind == "tool_search_output":
            text = _output_text(item.get("output"))
            b.run(
                "tools",
                i,
                [
                    Part(
                        Source.TOOL_OUTPUT,
                        clean(text),
                        kind="tool_result",
                        error=item.get("status") == "failed",
                        call=call_id(item.get("call_id")),
                    )
                ],
                [text],
            )
        elif kind in _CALL_DATA or kind in ("reasoning", "mcp_list_tools", "mcp_approval_request"):
            field = _CALL_DATA.get(kind)
            if field is None:
                b.run("assistant", i, [], [])  # reasoning and what carries no input: nothing to read
                continue
            value = item.get(field)
            data_ = (
                _json_value(value)
                if isinstance(value, str) and kind != "custom_tool_call" and kind != "code_interpreter_call"
                else value
            )
            name = str(item.get("name") or kind.removesuffix("_call"))
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
            part = _call_part(name, data_ if data_ is not None else {}, item.get("call_id"))
            b.run("assistant", i, [part], [f"{name} {text}"])
        else:  # compaction, item references, approvals: context the harness keeps, not turns
            b.add("system", i, [], [json.dumps(item, ensure_ascii=False, sort_keys=True)[:4096]], kind="other")
    messages, groups = b.done()
    _check_groups(groups)
    context = context_elements(first_user or [])
    reminders = context_elements(first_user or [], ("system-reminder",))
    text_cfg = data.get("text")
    auxiliary = isinstance(text_cfg, dict) and _structured(text_cfg.get("format")) and not data.get("tools")
    cwd, reported = reported_cwd(system if lead is None else system[:lead], context, reminders)
    return Conversation(
        messages,
        system="\n".join(system),
        cwd=cwd,
        cwd_reported=reported,
        auxiliary=auxiliary,
        continues=_continues(data),
        lead_system="\n".join(system if lead is None else system[:lead]),
        thread_id=_thread_id(data),
    ), groups


class Responses:
    """``POST .../responses``."""

    name = "responses"

    def parse(self, body: bytes, headers: dict[str, str]) -> tuple[Request, Conversation]:
        text, data, top, items, end = decode(body, "input")
        raw = data.get("input")
        if raw is not None and not isinstance(raw, str | list):
            raise SpliceError("body is not a Responses request (input is neither text nor a list)")
        conv, groups = responses_conversation(data, headers)
        return Request(text, data, top, end, items, groups, "responses"), conv

    def response_id_sniffer(self) -> ResponseIdSniffer:
        """What names the response an answer begins, so that a later request naming it in ``previous_response_id``
        joins this conversation."""
        return ResponseIdSniffer()

    def splice(self, req: Request, pinned: str | None, blocks: dict[int, list[str]]) -> bytes:
        edits: list[Edit] = []
        # A request that continues server-held state never gets the pinned block: the
        # server holds the conversation's first request, pinned block included.
        if pinned and not _continues(req.data):
            if isinstance(req.data.get("input"), str) and req.data["input"]:
                # One string of input becomes a developer message and the user's message
                # (its string kept byte for byte, with its cue block appended).
                span = req.top["input"]
                user = span.of(req.text)
                for t in (t for texts in blocks.values() for t in texts):
                    user = apply(user, [append_to_string(user, Span(0, len(user)), t)])
                blocks = {}
                edits.append(Edit(span.start, span.end, "[" + _developer(pinned) + ',{"role":"user","content":' + user + "}]"))
            elif req.items:
                edits.append(_pinned_edit(req, pinned, ("developer", "system"), _developer(pinned)))
        for i, texts in blocks.items():
            edits.append(_cue_edit(req, i, texts))
        return apply(req.text, edits).encode("utf-8") if edits else req.text.encode("utf-8")

    def collector(self, content_type: str, content_encoding: str | None) -> ResponsesCollector:
        return ResponsesCollector(content_type, content_encoding)


def _developer(text: str) -> str:
    return json.dumps(
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _user_item(api: str, texts: list[str]) -> str:
    if api == "chat":
        return _chat_message("user", "\n\n".join(texts))
    return json.dumps(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t} for t in texts]},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _part(api: str, text: str) -> str:
    return json.dumps(
        {"type": "text" if api == "chat" else "input_text", "text": text}, ensure_ascii=False, separators=(",", ":")
    )


# ----- splicing (both APIs) ------------------------------------------------------------------------


def _append_to_content(req: Request, span: Span, texts: list[str]) -> Edit | None:
    """Append ``texts`` to a content value: inside a string (after a blank line) or as new text parts."""
    raw = span.of(req.text)
    if raw.startswith('"'):
        return append_to_string(req.text, span, "\n\n".join(texts))
    if raw.startswith("["):
        return append_blocks(req.text, span, [_part(req.api, t) for t in texts])
    return None


def _pinned_edit(req: Request, pinned: str, roles: tuple[str, ...], new_message: str) -> Edit:
    """The pinned block at the end of the first message's content where that is a system/developer message; a
    message of its own right after it when that content cannot take text; a first message of its own when the
    conversation opens with another. Only the first: a system or developer message a later request adds further
    down (a harness's note that the approval mode changed) took the block, so it moved and the cached prefix went
    with it (an outside review)."""
    assert req.items is not None
    if req.items:
        item = req.item(0)
        if item.get("role") in roles and item.get("type", "message") == "message":
            content = req.member(0, "content")
            edit = _append_to_content(req, content, [pinned]) if content is not None else None
            if edit is not None:
                return edit
            return Edit(req.items[0].end, req.items[0].end, "," + new_message)
    key = "messages" if req.api == "chat" else "input"
    start = req.top[key].start + 1  # just inside the array's [
    return Edit(start, start, new_message + ("," if req.items else ""))


def _cue_edit(req: Request, index: int, texts: list[str]) -> Edit:
    """Cue blocks for conversation message ``index``: at the end of a user message's content; for a run of
    tool outputs, at the end of the last chat tool message's content, or (Responses, whose outputs are
    not messages) a user message right after the run."""
    group = req.groups[index]
    if group.kind == "string":
        return _append_to_content(req, req.top["input"], texts) or _fail(index)
    assert req.items is not None
    last = group.items[-1]
    if group.kind == "message" or (group.kind == "tools" and req.api == "chat"):
        content = req.member(last, "content")
        edit = _append_to_content(req, content, texts) if content is not None else None
        if edit is not None:
            return edit
    end = req.items[last].end
    return Edit(end, end, "," + _user_item(req.api, texts))


def _fail(index: int) -> Edit:
    raise SpliceError(f"conversation message {index} cannot take a block")


# ----- the answer ---------------------------------------------------------------------------------


class _Collector(anthropic.ResponseCollector):
    """The anthropic collector's reader (decompression, caps, SSE lines) with the OpenAI events."""

    def __init__(self, content_type: str, content_encoding: str | None):
        super().__init__(content_type, content_encoding)
        self.items: dict[int, dict[str, Any]] = {}  # output index -> the item as it stands
        self.text_deltas: dict[int, list[str]] = {}  # joined once, at the end (linear)
        self.arg_deltas: dict[int, list[str]] = {}
        self.finished_items: set[int] = set()

    def _json_body(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None

    def _flags(self) -> dict[str, Any]:
        flags: dict[str, Any] = {}
        if self.error:
            flags["error"] = True
        if not self.done or self.overflow:
            flags["partial"] = True
        return flags


def _choice0(choices: Any) -> dict[str, Any] | None:
    """The first choice: with ``n`` > 1 the harness continues with one answer, and bead keeps the first."""
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


class ChatCollector(_Collector):
    """A chat completion (JSON) or its chunks (SSE, ``data: [DONE]`` last); choice 0; reasoning skipped."""

    def _event(self, ev: Any) -> None:
        if not isinstance(ev, dict):
            return
        if "error" in ev and ev.get("error"):
            self.error = True
            return
        c = _choice0(ev.get("choices"))
        if c is None:
            return
        d: dict[str, Any] = c["delta"] if isinstance(c.get("delta"), dict) else {}
        if isinstance(d.get("content"), str):
            self.text_deltas.setdefault(0, []).append(d["content"])
        for tc in d.get("tool_calls") or []:
            if not isinstance(tc, dict):
                continue
            k = tc.get("index", 0) if isinstance(tc.get("index", 0), int) else 0
            slot = self.items.setdefault(k, {"name": ""})
            fn: dict[str, Any] = tc["function"] if isinstance(tc.get("function"), dict) else {}
            if fn.get("name"):
                slot["name"] = str(fn["name"])
            if isinstance(fn.get("arguments"), str):
                self.arg_deltas.setdefault(k, []).append(fn["arguments"])
        if c.get("finish_reason"):
            self.done = True

    def result(self, index: int) -> tuple[Message, dict[str, Any]] | None:
        if not self.supported:
            return None
        if not self.sse:
            body = self._json_body()
            if not isinstance(body, dict) or body.get("object") != "chat.completion":
                return None
            c = _choice0(body.get("choices"))
            m = c.get("message") if c else None
            if not isinstance(m, dict):
                return None
            conv, _ = chat_conversation({"messages": [{**m, "role": "assistant"}]}, {})
            return _at(conv, index), {}
        calls = [
            {"function": {"name": self.items[k]["name"], "arguments": "".join(self.arg_deltas.get(k, []))}}
            for k in sorted(self.items)
        ]
        message = {"role": "assistant", "content": "".join(self.text_deltas.get(0, [])), "tool_calls": calls}
        conv, _ = chat_conversation({"messages": [message]}, {})
        return _at(conv, index), self._flags()


class ResponsesCollector(_Collector):
    """A Responses answer: its JSON ``response`` object, or its typed events (``response.completed`` last).

    Finished items (``response.output_item.done``) are taken whole; an item the stream broke inside is
    rebuilt from its text and argument deltas, so a broken stream still captures what arrived.
    """

    response_id: str | None = None  # the answer's id (response.created, or the JSON body's), for chains

    def _event(self, ev: Any) -> None:
        if not isinstance(ev, dict):
            return
        kind = ev.get("type")
        if self.response_id is None and isinstance(ev.get("response"), dict):
            self.response_id = _rid(ev["response"].get("id"))
        i = ev.get("output_index")
        i = i if isinstance(i, int) else None
        if kind in ("response.output_item.added", "response.output_item.done") and i is not None:
            if isinstance(ev.get("item"), dict) and (kind.endswith("done") or i not in self.finished_items):
                self.items[i] = ev["item"]
            if kind.endswith("done"):
                self.finished_items.add(i)
        elif kind == "response.output_text.delta" and i is not None and isinstance(ev.get("delta"), str):
            self.text_deltas.setdefault(i, []).append(ev["delta"])
        elif (
            kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta")
            and i is not None
            and isinstance(ev.get("delta"), str)
        ):
            self.arg_deltas.setdefault(i, []).append(ev["delta"])
        elif kind == "response.completed":
            self.done = True
        elif kind in ("response.failed", "error"):
            self.error = True
        elif kind == "response.incomplete":
            self.done = False

    def _item(self, i: int) -> dict[str, Any]:
        item = dict(self.items[i])
        if i in self.finished_items:
            return item
        if item.get("type") == "message":
            item["content"] = [{"type": "output_text", "text": "".join(self.text_deltas.get(i, []))}]
        elif item.get("type") == "function_call":
            item["arguments"] = "".join(self.arg_deltas.get(i, []))
        elif item.get("type") == "custom_tool_call":
            item["input"] = "".join(self.arg_deltas.get(i, []))
        return item

    def result(self, index: int) -> tuple[Message, dict[str, Any]] | None:
        if not self.supported:
            return None
        if not self.sse:
            body = self._json_body()
            if not isinstance(body, dict) or body.get("object") != "response" or not isinstance(body.get("output"), list):
                return None
            self.response_id = _rid(body.get("id"))
            # Every message of the answer is the assistant's, whatever role an upstream writes into it
            # (as for the streamed answer): never a "typed" turn in the raw log.
            conv, _ = responses_conversation({"input": [_assistant(o) for o in body["output"] if isinstance(o, dict)]}, {})
            return _answer(conv, index), ({"partial": True} if body.get("status") == "incomplete" else {})
        for i in self.text_deltas:
            self.items.setdefault(i, {"type": "message", "role": "assistant"})
        output = [self._item(i) for i in sorted(self.items)]
        conv, _ = responses_conversation({"input": [_assistant(o) for o in output]}, {})
        return _answer(conv, index), self._flags()


def _assistant(item: dict[str, Any]) -> dict[str, Any]:
    """An answer's item as the assistant's: a message item (``type`` message, or none with a role) gets its role."""
    if item.get("type", "message" if "role" in item else "") == "message":
        return {**item, "type": "message", "role": "assistant"}
    return item


def _at(conv: Conversation, index: int) -> Message:
    m = conv.messages[0] if conv.messages else Message(0, "assistant", (), "assistant\x00")
    return Message(index, "assistant", m.parts, m.normalised)


def _answer(conv: Conversation, index: int) -> Message:
    """The answer's items as one assistant message (they all are the assistant's)."""
    parts = tuple(p for m in conv.messages for p in m.parts)
    return Message(index, "assistant", parts, "assistant\x00" + "\x00".join(m.normalised for m in conv.messages))


CHAT = Chat()
RESPONSES = Responses()
