"""Aider's own messages, on whichever API it is pointed at (issue #28): the OpenAI routes (its `--openai-api-base`)
and the Anthropic one (a Claude model through litellm, with ``ANTHROPIC_BASE_URL`` at the proxy).

Aider opens every chat with an example exchange, sends the files it was given and a map of the repository as user
messages, appends a reminder (the end of its system prompt) to the newest question, and writes user messages of its
own around a command's output, a fetched page, a failed lint or edit: none of that is the person's word. ``context``
reads a conversation's messages so (the harness's, or a tool's output), ``editor`` tells architect mode's editor
requests (every user message is the architect model's answer), ``commit_request`` its commit-message side request.
The routes differ only in how a text becomes the person's parts (``Split``). tests/fixtures/aider/README.md has what
Aider 0.86.2 sends.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..conversation import Message, Part, Source


@dataclass(frozen=True)
class Split:
    """How a route makes the person's parts of a text: ``words`` of the words before a page Aider appended (the
    typed/pasted split), ``content`` of a message's content once Aider's reminder is cut from its end."""

    words: Callable[[str], list[Part]]
    content: Callable[[str], list[Part]]


# Aider's commit message request (a side request: it quotes the work as data; no assistant turn, no tools).
COMMIT_REQUEST = "You are an expert software engineer that generates concise, one-line Git commit messages"


def commit_request(system: str) -> bool:
    return system.startswith(COMMIT_REQUEST)


def editor(messages: tuple[Message, ...], system: str) -> bool:
    """Whether the request is the editor's in Aider's architect mode (its system prompt, or the user message it
    came as, opens as ``EDITOR``)."""
    return _opens(_system_text(messages, system), EDITOR)


# Aider opens every chat with the same example exchange, ending with these two messages, and then sends
# the files it was given (and a map of the repository) as user messages that its own "Ok, ..." answers: the
# harness's text, not the person's. tests/fixtures/aider/README.md has what Aider 0.86.2 sends.
SWITCH = "I switched to a new code base. Please don't consider the above files or try to edit them any longer."
SYSTEM = "Act as an expert "  # every edit and ask mode's system prompt opens so
CONTEXT = (
    "I have *added these files to the chat*",
    "Don't try and edit any existing code without asking me to add the files to the chat!",
    "Here are summaries of some files present in my git repository.",
    "Here are some READ ONLY files, provided for your reference.",
    "I am not sharing any files that you can edit yet.",
    "I am not sharing the full contents of any files with you yet.",
    "I am working with you on code in a git repository.",
)
# The editor's system prompt in Aider's architect mode (aider/coders/editor_*_prompts.py): every user message of
# that conversation is the architect model's answer, none the person's words.
EDITOR = (
    "Act as an expert software developer who edits source code.",
    "Act as an expert software developer and make changes to source code.",
)
PREAMBLE_MAX = 16  # the example exchange is a few messages long; the marker further on is not Aider's
# What Aider puts before its system prompt for some models (its `system_prompt_prefix`: o3, o4-mini, o1-pro, the
# gpt-5-pro family), which also take the system prompt as a user message.
PREFIX = "Formatting re-enabled."
# Characters a user message's end must repeat of the system prompt's to be its reminder (ask mode's is "Reply in
# English."); whole paragraphs only.
_REMINDER_MIN = 16
_REMINDER_MAX = 65536  # and at most this many are compared (Aider's reminders are a few thousand)


def text_of(m: Message) -> str:
    return "\n\n".join(p.text for p in m.parts if p.kind == "text").strip()


def _opens(text: str, opening: str | tuple[str, ...] = SYSTEM) -> bool:
    """Whether ``text`` opens as Aider's system prompt does (``opening``), after its prefix where it has one."""
    text = text.lstrip()
    if text.startswith(PREFIX):
        text = text[len(PREFIX) :].lstrip()
    return text.startswith(opening)


def _lead(messages: tuple[Message, ...], system: str) -> Message | None:
    """The user message that is Aider's system prompt (a model it sends none to: o3, o4-mini), or None."""
    first = next((m for m in messages if m.role != "system"), None)
    if first is None or first.role != "user" or _opens(system) or not _opens(text_of(first)[:1000]):
        return None
    return first


def _system_text(messages: tuple[Message, ...], system: str) -> str:
    """Aider's system prompt as sent: the system's text, or the user message it came as (``_lead``)."""
    lead = _lead(messages, system)
    return text_of(lead) if lead is not None else system


def _harness(m: Message) -> Message:
    return Message(m.index, m.role, tuple(Part(Source.HARNESS, p.text) for p in m.parts if p.text), m.normalised)


def context(messages: tuple[Message, ...], newest_content: Any, system: str, split: Split) -> tuple[tuple[Message, ...], int]:
    """Aider's example exchange and its file and repository messages as the harness's (never captured, never a
    cue, never the conversation's identity), and the format reminder it appends to the newest question (the end of
    its system prompt, repeated) apart from the person's words; and the index of the person's first message, which
    keys the conversation (-1: not Aider, or no such message). Other harnesses' messages come back as they were.
    The messages' hashes are unchanged: this says who wrote what, not what was sent.

    Aider is told by its example exchange (ending in the switch message and "Ok."), or, where its examples are in
    the system prompt or its mode has none (ask, architect), by its system prompt's opening (after its prefix, and
    in the first user message where the model takes no system prompt: ``_lead``) and one of its file messages
    before the newest (a restored chat's earlier turns stand before them, however many). A file message counts as
    Aider's only where Aider puts them: before the person's first message, or as the run of (file message,
    "Ok...") pairs just before the newest question; never the newest message itself, whatever it says."""
    lead = _lead(messages, system)
    # Read as the system prompt it is, not as messages of the chat: the lead and the "Ok." Aider answers it with
    # (aider/coders/base_coder.py format_chat_chunks, for a model that takes no system prompt).
    skip: set[int] = set()
    if lead is not None:
        system = text_of(lead)
        skip.add(lead.index)
        after = lead.index + 1
        if after < len(messages) and messages[after].role == "assistant" and text_of(messages[after]) == "Ok.":
            skip.add(after)
    head = [m for m in messages[:PREAMBLE_MAX] if m.role != "system" and m.index not in skip]
    end = next(
        (
            i
            for i, m in enumerate(head[:-1])
            if m.role == "user" and text_of(m) == SWITCH and head[i + 1].role == "assistant" and text_of(head[i + 1]) == "Ok."
        ),
        None,
    )
    body = [m for m in messages if m.role != "system" and m.index not in skip]
    # Without the example exchange, a file message that Aider's own "Ok, ..." answers (a person may type a sentence a
    # file message opens with, and a model answer "Okay": a review), looked for only under Aider's system prompt (every
    # Anthropic request comes here: Claude Code's are read no further).
    if end is None and not (_opens(system) and any(_file_pair(body[i], body[i + 1]) for i in range(len(body) - 1))):
        return messages, -1
    harness = ({m.index for m in head[: end + 2]} if end is not None else set()) | skip
    newest = next((m.index for m in reversed(messages) if m.role == "user"), -1)
    rest = [m for m in messages if m.role != "system" and m.index not in harness]
    # Before the person's first message: the file messages that open a fresh chat.
    i = 0
    while i + 1 < len(rest) and rest[i].index != newest and _file_pair(rest[i], rest[i + 1]):
        harness |= {rest[i].index, rest[i + 1].index}
        i += 2
    opener = next((m.index for m in rest[i:] if m.role == "user"), -1)
    # After it: the file messages of a chat that has earlier turns. Aider puts them between the chat's older
    # messages and the current turn's (the question, an edit's answer, its notes), so anywhere, never the newest.
    for k in range(len(rest) - 1):
        if rest[k].index > opener and rest[k].index != newest and _file_pair(rest[k], rest[k + 1]):
            harness |= {rest[k].index, rest[k + 1].index}
    # Aider's own note after it added the files an answer named (the newest message then, or one before it).
    harness |= {m.index for m in rest if m.index > opener and _added(m)}
    out = [_harness(m) if m.index in harness else _output(m, split) for m in messages]
    if newest >= 0 and newest not in harness:
        out[newest] = _output(_without_reminder(messages[newest], newest_content, system, split), split)
    return tuple(out), opener


# What Aider sends as a user message of its own making around a command's or a page's text (aider/prompts.py
# run_output for `/run`, `/test` and a failed auto-test; `/web`; a failed lint it asks the model to fix; the output
# of shell commands the model proposed; a reply whose edit blocks did not apply): that text is a tool's, and a
# "Remember that ..." in a test's output or a web page is never the person's word.
# Also Aider's own notes that carry a model's text in the person's voice: the commit message it made, and the summary
# of a chat's older messages (aider/prompts.py summary_prefix).
OUTPUT = (
    "I ran this command:\n\n",
    "# Fix any errors below, if possible.",
    "Output from ",
    "I committed the changes with git hash ",
    "I spoke to you previously about a number of things.",
)
_EDIT_FAILED = re.compile(r"# [0-9]{1,6} SEARCH/REPLACE blocks? failed to match!")
# A reply whose edit blocks did not parse comes back as the reply up to the fault, then "^^^ " and the error
# (aider/coders/editblock_coder.py): the model's words.
_REFLECTED = re.compile(r"\n\^\^\^ (?:Expected `|Bad/missing filename|Unexpected |Missing )")
_PAGE = re.compile(r"\n\nHere is the content of [a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^\s]{1,4096}:\n\n")
# `/web URL`'s page sent alone: "Here is the content of URL:" (a person's "Here is the content of the config file"
# is theirs: a review)
_PAGE_ALONE = re.compile(r"Here is the content of [a-zA-Z][a-zA-Z0-9+.\-]{0,31}://[^\s]{1,4096}:\n\n")


def _output(m: Message, split: Split) -> Message:
    """``m`` with its words as tool output when Aider wrote it around a command's or a page's text (the reminder
    Aider appends stays the harness's)."""
    if m.role != "user":
        return m

    def persons(p: Part) -> bool:
        return p.kind == "text" and p.source in (Source.TYPED, Source.PASTED)

    if not any(persons(p) for p in m.parts):
        return m
    text = "\n\n".join(p.text for p in m.parts if persons(p)).lstrip()
    rest = tuple(p for p in m.parts if not persons(p))
    if text.startswith(OUTPUT) or _PAGE_ALONE.match(text) or _EDIT_FAILED.match(text) or _REFLECTED.search(text):
        return Message(m.index, m.role, (Part(Source.TOOL_OUTPUT, text, kind="tool_result"), *rest), m.normalised)
    # A URL in the person's words: Aider fetches the page and appends it to their message ("\n\nHere is the
    # content of URL:\n\n" and the page), one a URL. Their words end where the first page begins.
    page = _PAGE.search(text)
    if page is None:
        return m
    mine = split.words(text[: page.start()])
    fetched = Part(Source.TOOL_OUTPUT, text[page.start() + 2 :], kind="tool_result")
    return Message(m.index, m.role, (*mine, fetched, *rest), m.normalised)


def _added(m: Message) -> bool:
    """Aider's whole "I added these files to the chat: ...\nLet me know if there are others we should add." note
    (and the reminder Aider appends when it is the newest message)."""
    t = text_of(m).split("\n\n", 1)[0]
    return (
        m.role == "user"
        and t.startswith("I added these files to the chat: ")
        and t.endswith("\nLet me know if there are others we should add.")
        and t.count("\n") == 1
    )


def _file_message(m: Message) -> bool:
    return m.role == "user" and text_of(m).startswith(CONTEXT)


def _file_pair(user: Message, answer: Message) -> bool:
    """A file message of Aider's and the assistant's "Ok, ..." (or "Ok.") that Aider writes after it: its own words,
    not a model's "Okay, got it" after a person who typed a sentence of Aider's (a review: a plain SDK app with an
    "Act as an expert" prompt was read as Aider's, its person's words as tool output)."""
    said = text_of(answer)
    return _file_message(user) and answer.role == "assistant" and (said == "Ok." or said.startswith("Ok, "))


def _without_reminder(m: Message, content: Any, system: str, split: Split) -> Message:
    """``m`` with the end it repeats of the system prompt (whole paragraphs of it) as the harness's."""
    if not isinstance(content, str) or not system:
        return m
    n = 0
    limit = min(len(content), len(system), _REMINDER_MAX)
    while n < limit and content[-1 - n] == system[-1 - n]:
        n += 1
    if n < _REMINDER_MIN:
        return m
    cut = content.find("\n\n", len(content) - n)
    if cut <= 0 or not content[:cut].strip():
        return m
    parts = split.content(content[:cut])
    return Message(m.index, m.role, (*parts, Part(Source.HARNESS, content[cut:].strip())), m.normalised)
