"""One request, parsed once: typed turns that say who produced each part.

A wire format (the Anthropic Messages API, the OpenAI Chat Completions and
Responses APIs: ``bead.wire``) parses its request body into a
``Conversation`` once; capture, "remember",
recall and the proxy's bookkeeping all read this model and never the raw
JSON again. Each ``Part`` carries its ``Source``, so later code can tell the
person's typed words from pasted content, tool output, the assistant's text
and the harness's own text.

Who is talking (the ``Identity``) follows the reference design (docs/design.md):
- session: ``X-Bead-Session``; else ``x-claude-code-session-id`` (plus a hash
  of ``x-claude-code-agent-id`` for a subagent); else Codex CLI's
  ``session-id`` (plus a hash of its ``thread-id`` when that differs: a
  subagent); else OpenCode's ``x-session-id``; else a hash of the system
  prompt, the person's first words (a message that is only the harness's, as
  Aider's example exchange, does not count), ``X-Bead-Project`` when given,
  and the server-held state a Responses request continues;
- thread: a hash of that first message (and of the continued state), which
  separates side requests that share a session header;
- project: ``X-Bead-Project``; else the working directory the harness reports
  (in the system prompt, a system message, or the first user message, as a
  ``cwd: /x`` line or Codex's ``<cwd>/x</cwd>``), resolved through a linked
  git worktree to its main checkout; else the default project.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from .capture.secrets import credential_rules
from .paths import PATH_MAX, enclosing_git
from .textform import stream_safe


# Parts read in one request (content blocks and parts, tool calls, parts of a tool output), and in one
# conversation message. Each part costs Python work when the conversation is built (~10 us), and each part
# of the newest user message is a recall cue whose excerpt is secret-scanned before forwarding (~0.2 ms):
# one message of 100,000 one-letter parts (2.7 MB) held a worker 22 s past the deadline. No harness sends
# near these; past them the body goes out unchanged and uncaptured, counted as too large (both APIs).
class Unreadable(ValueError):
    """A request body a wire format's parser cannot read into a conversation (bead.wire.splice.SpliceError)."""


MAX_PARTS = 20_000
MAX_MESSAGE_PARTS = 1_000

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")


# A line such as "Primary working directory: /x" or "- cwd: /x". Bounded
# runs and no nested quantifier over the same characters: linear time.
def _cwd_line(label: str) -> re.Pattern[str]:
    return re.compile(rf"(?im)^[ \t]{{0,16}}(?:-[ \t]{{0,16}})?{label}[ \t]{{0,16}}:[ \t]{{0,16}}(\S[^\n]{{0,4095}})$")


# The lines a harness reports its working directory in (and Codex's <cwd>, below), the most particular first
# (reported_cwd's order).
_CWD_LINES = tuple(_cwd_line(label) for label in ("primary working directory", "working directory", "cwd"))
# Codex CLI's <environment_context>: "<cwd>/x</cwd>". The run stops at the
# next "<" or line end, so each start is scanned once: linear time.
_CWD_TAG = re.compile(r"<cwd>[ \t]{0,16}([^<\n]{1,4096})</cwd>")
_CWD_SCAN_CHARS = 200_000


class Source(StrEnum):
    """Who produced a part of a turn."""

    TYPED = "typed"  # the person's own words
    PASTED = "pasted"  # content the person pasted or attached: documents, images, code fences,
    # quotes, expanded pastes (bead.capture.text.segments)
    TOOL_OUTPUT = "tool_output"  # what a tool returned
    TOOL_CALL = "tool_call"  # the assistant's call of a tool
    ASSISTANT = "assistant"  # the assistant's text
    HARNESS = "harness"  # the harness's own text: system prompt, reminders


@dataclass(frozen=True)
class Part:
    source: Source
    text: str  # bead's own blocks and harness reminders removed
    kind: str = "text"  # text | tool_result | tool_use | image | document
    name: str = ""  # a tool's name (tool_use)
    data: Any = None  # a tool call's input
    error: bool = False  # a tool result that reports an error
    # The characters of the person's text block this part was read from, as the harness sent it: what was pasted
    # around typed words, or cut from them (reminders, <bead-memory> tags), still counts towards how long the
    # person's message is (bead.core.remember). 0: the part's own text is the block.
    sent: int = 0
    # Typed words a paste may reach into: with someone's text on both sides in the same block (a paste may have
    # closed the person's code fence and opened one again, so that its own lines read as typed), or right after a
    # quote with no blank line between (Markdown reads them as the quote's). A "remember" there waits for review.
    near_paste: bool = False
    # The id the harness pairs a tool call and its result by (Anthropic's tool_use id and tool_use_id, OpenAI's
    # tool_call_id and call_id); "" where the wire gave none.
    call: str = ""


CALL_ID_CHARS = 256  # of a call's id, what is kept: the ids harnesses send are under 64 characters


def call_id(value: Any) -> str:
    """A tool call's id as a wire gives it (``Part.call``): a string, else ""."""
    return value[:CALL_ID_CHARS] if isinstance(value, str) else ""


@dataclass(frozen=True)
class Message:
    index: int  # position in the request's messages
    role: str  # user | assistant | system
    parts: tuple[Part, ...]
    normalised: str  # role and text, blind to cache markers and string-vs-list content

    @property
    def hash(self) -> str:
        """Stable across resends: the proxy re-adds a cue block only to the same message."""
        return _h(self.normalised, 16)


@dataclass(frozen=True)
class Conversation:
    messages: tuple[Message, ...]
    system: str = ""  # the harness's system prompt text
    cwd: str | None = None  # the working directory the harness reports
    # Whether ``cwd`` is in a harness's own form (Claude Code's "Primary working directory:", Codex's <cwd>,
    # OpenCode's <env>): only then is a file of its folder read (a worktree's .git). A free "cwd:" or "Working
    # directory:" line in a system text (an SDK app's prompt holding a retrieved page) names the project by the
    # nearest folder a .git entry stands in, found by its name alone (``project_by_name``).
    cwd_reported: bool = True
    auxiliary: bool = False  # a harness side request (titles, summaries): not conversation
    # The server-held state this request builds on (a Responses API previous_response_id or
    # conversation): its earlier turns are on the server, not in this request.
    continues: str | None = None
    # The person's first message where the harness opens with messages of its own (Aider): what keys a conversation
    # that names no session. -1: the first message that is not a system message.
    opener: int = -1
    # The system prompt the conversation opened with, where the harness may add system messages later (the OpenAI
    # routes: a "switched to plan mode" note), which must not make it another conversation. None: ``system``.
    lead_system: str | None = None
    # The Responses API's server-held conversation (its ``conversation`` parameter): each request continues it, so
    # it names the latest step, not one answer (bead.proxy.engine.Engine.chained).
    thread_id: str | None = None
    # Why the person's words in this conversation cannot be told from text the harness sends with them as the same
    # message, with nothing to mark it (``untyped``); "" where they can. A "remember" then waits for review.
    untyped: str = ""

    @property
    def newest_user(self) -> int | None:
        """The newest user message, skipping trailing system messages (and an assistant prefill)."""
        for m in reversed(self.messages):
            if m.role == "user":
                return m.index
            if m.role not in ("system", "assistant"):
                return None
        return None

    def marked_untyped(self, why: str) -> Conversation:
        """The same conversation where the person's words cannot be told from a harness's text sent as theirs
        (``untyped``: why): each typed part is marked as typed words someone else's text may reach into
        (``Part.near_paste``): a "remember" there waits for review, and the dream does not take them as the person's
        word."""
        return dataclasses.replace(
            self,
            untyped=why,
            messages=tuple(_typed_as(m, near_paste=True) for m in self.messages),
        )

    def delegated(self, only: Collection[int] | None = None) -> Conversation:
        """The same conversation as a sub-agent's: the main model wrote its prompt, so no text in it is the
        person's own words (typed becomes pasted: still the turn's question for recall, never a "remember" nor
        the person's word to the dream). ``only``: just the messages of these indexes (a sub-agent's lines inside
        its parent's transcript)."""
        return dataclasses.replace(
            self,
            messages=tuple(_typed_as(m, source=Source.PASTED) if only is None or m.index in only else m for m in self.messages),
        )


def _typed_as(m: Message, **change: Any) -> Message:
    """``m`` with ``change`` made to each of its typed parts (the person's words), its other parts as they are."""
    return dataclasses.replace(
        m, parts=tuple(dataclasses.replace(p, **change) if p.source is Source.TYPED else p for p in m.parts)
    )


def one_turn_each(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """A request's ``messages`` with each run of user messages side by side that all hold typed words read as the one
    turn the APIs make of it: the last one's typed words are the person's, near a paste (``Part.near_paste``), and
    the others' pasted, as of several text blocks in one message (bead.wire.anthropic.own_block). An SDK app sends a
    retrieved page or another agent's output as a user message of its own: its "Remember that ..." was written as
    the person's word (an outside attack). A message of the run with no typed words (a named agent's, a tool's
    output) ends it: what stands on either side of it was told apart. For a request the proxy forwards
    (bead.proxy.engine), not a transcript's lines (bead.core.history), which are turns apart in time."""
    out = list(messages)

    def typed(k: int) -> bool:
        return out[k].role == "user" and any(p.source is Source.TYPED for p in out[k].parts)

    i = 0
    while i < len(out):
        j = i
        while typed(i) and j + 1 < len(out) and typed(j + 1):
            j += 1
        typed_ones = list(range(i, j + 1)) if j > i else []
        for k in typed_ones[:-1]:
            out[k] = _typed_as(out[k], source=Source.PASTED)
        if typed_ones:
            out[typed_ones[-1]] = _typed_as(out[typed_ones[-1]], near_paste=True)
        i = j + 1
    return tuple(out)


def untyped(conv: Conversation, headers: dict[str, str]) -> str:
    """Why ``conv``'s person's text may be a harness's that no mark tells apart (``headers`` keys lower-case), or "":

    - a Claude Code run with no terminal (``claude -p``, the Agent SDK: its attribution block says
      ``cc_entrypoint=sdk-...``): its prompt may be a script's, or the person's words with piped input after them
      (``gh issue view 7 | claude -p "fix this"``) in one text;
    - OpenCode (its User-Agent): a project command's template (``.opencode/command/NAME.md``, a repository's file)
      and the output of the ``!`cmd` `` it runs are sent as the person's message, as is what ``opencode run`` was
      piped after the person's words;
    - a ``codex exec`` run (its ``originator`` header, or its User-Agent), the Codex SDK's too (which runs ``codex
      exec`` as ``codex_sdk_ts``): with ``-`` or no prompt its whole prompt is what was piped to it (``gh issue view
      7 --json body -q .body | codex exec -``), sent with no mark, and a script's prompt is no one's word either, as
      for ``claude -p``; so is any other client of Codex's app server, which names itself in that header
      (``codex-app-server-sdk``, a program's prompt). A session of Codex's own interactive clients (``codex_cli_rs``,
      ``codex-tui``, ``codex_vscode``, "Codex Desktop") is the person's."""
    head = conv.system[:600]
    if "x-anthropic-billing-header:" in head and "cc_entrypoint=sdk-" in head:
        return HEADLESS_CLAUDE_CODE
    agent = headers.get("user-agent", "").lower()
    if codex_unattended(headers.get("originator", "")) or agent.startswith(("codex_exec/", "codex_sdk")):
        return CODEX_EXEC
    if headers.get("user-agent", "").lower().startswith("opencode/"):
        return OPENCODE
    return ""


# The originators of Codex's own interactive clients, as Codex tells its first-party ones (openai/codex
# login/src/auth/default_client.rs is_first_party_originator): its terminal UI (``codex_cli_rs``, ``codex-tui``), its
# editor extension and any named "Codex ..." (Codex Desktop). Every other (``codex_exec``, ``codex_sdk_ts``, the name
# any other app-server client gives itself: the app server's own SDK, a program) is read as a program's run.
CODEX_INTERACTIVE = frozenset({"codex_cli_rs", "codex-tui", "codex_vscode"})


def codex_unattended(originator: object) -> bool:
    """Whether a Codex ``originator`` (a request's header, a rollout's field) names a run no person types into:
    any but Codex's own interactive clients' (CODEX_INTERACTIVE, "Codex ..."); none given is not one."""
    name = originator.strip() if isinstance(originator, str) else ""
    return bool(name) and name.lower() not in CODEX_INTERACTIVE and not name.startswith("Codex ")


HEADLESS_CLAUDE_CODE = "a headless Claude Code run's prompt (claude -p, the Agent SDK) may be a script's, or carry piped input"
CODEX_EXEC = "a codex exec run's prompt may be a script's, or what was piped to it (codex exec -)"
OPENCODE = "OpenCode sends a project command's template, its shell output and piped input as the person's message"
UNTYPED_REASONS = (HEADLESS_CLAUDE_CODE, CODEX_EXEC, OPENCODE)  # every reason ``untyped`` gives


def delegated(headers: dict[str, str]) -> bool:
    """Whether a request is a sub-agent's (``headers`` keys lower-case): Claude Code names its agent
    (``x-claude-code-agent-id``), OpenCode a child session's parent (``x-parent-session-id``), Codex CLI a thread
    other than its session's."""
    if headers.get("x-claude-code-agent-id") or headers.get("x-parent-session-id"):  # OpenCode's child session
        return True
    codex, thread = _codex_ids(headers)
    return bool(codex and thread and thread != codex)


def _codex_ids(headers: dict[str, str]) -> tuple[str | None, str | None]:
    """Codex CLI's session and thread ids (either spelling of each header)."""
    return (
        headers.get("session-id") or headers.get("session_id"),
        headers.get("thread-id") or headers.get("thread_id"),
    )


@dataclass(frozen=True)
class Identity:
    session: str  # raw-log session (subagents: parent + agent hash)
    base_session: str  # the parent session, for excluding its own excerpts
    thread: str
    project: str | None

    @property
    def id(self) -> str:
        return f"{self.session}-{self.thread}"


@dataclass
class Turn:
    """One turn to capture: role, text and the flags its raw-log marker carries."""

    role: str
    text: str
    flags: dict[str, Any] = field(default_factory=dict)


def _h(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def safe_name(value: str) -> str:
    """``value`` as a file name (a session's): as it is where it is one, else a hash of it. A credential is never
    a name (a session id or a folder a harness reports is anyone's text: a raw file named after a token would keep
    it on disk, past the secret scan)."""
    return value if _SAFE.fullmatch(value) and not credential_rules(value) else "h" + _h(value, 16)


PROJECT_CHARS = 100  # a key's segment: a project's name (a folder's) longer is cut, with a hash of the whole after it


def _utf8(header: str) -> str:
    """A header's value as its sender wrote it: HTTP servers decode header bytes as Latin-1, so a UTF-8 name
    (``app-日本``) arrives as mojibake and would make another project than its folder's."""
    try:
        return header.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return header


def project_slug(name: str) -> str | None:
    # A key's segment starts with a letter or digit (bead.store.keys): a folder named _webshop is webshop.
    if not name.isascii():
        # macOS writes folder names decomposed: one name, one project. Runs of combining marks cut first (Unicode's
        # reordering of a run is quadratic: an imported transcript's `cwd` of 128k marks took 16 s, an outside review).
        name = unicodedata.normalize("NFC", stream_safe(name))
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    if not name.isascii():
        # The letters of other scripts become "-": names apart only in them (app-日本 and app-中国, café and cafè,
        # a Kelvin sign for a k) were one project, each reading the other's memory. A hash of the whole name keeps
        # them apart; a name of such letters alone is a project too.
        whole = _h(name.casefold(), 8)
        slug = f"{slug[: PROJECT_CHARS - 9].rstrip('-._')}-{whole}" if slug else f"p-{whole}"
    if not slug:
        return None
    if credential_rules(name):
        return "p" + _h(slug, 16)
    if len(slug) > PROJECT_CHARS:
        # of the slug, so that the folder's name in any case or spacing is one project, as shorter names are
        slug = slug[: PROJECT_CHARS - 13].rstrip("-._") + "-" + _h(slug, 12)
    return slug


# Where a harness reports the working directory inside the person's first message: Claude Code's
# <system-reminder>, Codex CLI's <environment_context>, each a block of its own or leading one. Nothing else of
# that message names it: a pasted README or page that says "cwd: /elsewhere" (or holds such an element further
# on, after the text it opens with) would move the conversation into another project's memory (and make bead
# read that folder's .git).
_CONTEXT_ELEMENTS = ("system-reminder", "environment_context")


def context_elements(texts: list[str], names: tuple[str, ...] = ("environment_context",)) -> str:
    """The insides of the harness's context elements (``_CONTEXT_ELEMENTS``) that open each of ``texts`` (the first
    message's blocks), those of ``names`` (Codex's <environment_context>, by default), one after another, one a line;
    empty when none does. An element counts only where its block starts with it or with the elements before it: one
    further on sits in the person's text or a paste. Linear time."""
    out: list[str] = []
    for text in texts:
        text = text[:_CWD_SCAN_CHARS]
        i = 0
        first = True
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            name = next((n for n in _CONTEXT_ELEMENTS if text.startswith(f"<{n}>", i)), None)
            if name is None or (name == "environment_context" and not first):
                # Codex sends its <environment_context> as a block of its own: one after a <system-reminder> in the
                # same block is text Claude Code quoted there (a repository's CLAUDE.md closing the reminder)
                break
            k = text.find(f"</{name}>", i)
            if k == -1:
                break
            if name in names:
                out.append(text[i + len(name) + 2 : k])
            i = k + len(name) + 3
            first = False
    return "\n".join(out)


def reported_cwd(texts: list[str], context: str = "", reminders: str = "") -> tuple[str | None, bool]:
    """The working directory a request reports, by the harness whose own form is there: Claude Code's "Primary
    working directory:" line in ``texts``, the system texts; else Codex's ``<cwd>`` in ``context`` (its
    <environment_context>, which opens a user message); else a "Primary working directory:" line in ``reminders``
    (the <system-reminder> elements that open the first user message: Claude Code quotes a repository's CLAUDE.md
    there, so such a line is free text), a "Working directory:" line (OpenCode's, in its system prompt), then a bare
    "cwd:" line, the first text first. A ``<cwd>`` in a system text (a repository's AGENTS.md quoted there) or a
    skill's description line does not outrank its harness's own report. The second value: whether the directory is
    in a harness's own form (the first two, OpenCode's <env> element), not a free line of text: only then is a file
    of its folder read."""
    heads = [t[:_CWD_SCAN_CHARS] for t in (*texts, context, reminders) if t]
    ctx = context[:_CWD_SCAN_CHARS]
    systems = [t[:_CWD_SCAN_CHARS] for t in texts if t]
    # OpenCode's own report, its <env> element's "Working directory:" line right after its lead-in, comes before the
    # instructions it quotes from the repository ("Instructions from: .../AGENTS.md"): a "Primary working directory:"
    # line there outranked it and moved the conversation into another project. Its agents' own prompts (a subagent's)
    # keep the lead-in and the element, so those are what tell it: an <env> element right after the lead-in, before
    # any quoted instructions, is the harness's report; anywhere else an <env> is text like any.
    for text in texts:
        head = text[:_CWD_SCAN_CHARS]
        lead_in = head.find(_ENV_LEAD_IN)
        if lead_in == -1:
            continue
        after = head[lead_in + len(_ENV_LEAD_IN) :].lstrip(" \t\n")
        env = _env_element(after) if after.startswith("<env>") else None
        quoted = head.find("Instructions from:")
        if env is not None and (quoted == -1 or lead_in < quoted):
            m = _CWD_LINES[1].search(env)
            if m:
                return m.group(1).strip().strip("`'\""), True
        break
    tiers: list[tuple[re.Pattern[str], list[str], bool]] = [
        (_CWD_LINES[0], systems, True),
        (_CWD_TAG, [ctx] if ctx else [], True),
        (_CWD_LINES[0], [reminders[:_CWD_SCAN_CHARS]] if reminders else [], False),
        (_CWD_LINES[1], heads, False),
        (_CWD_LINES[2], heads, False),
    ]
    for pattern, where, reported in tiers:
        for text in where:
            m = pattern.search(text)
            if m:
                return m.group(1).strip().strip("`'\""), reported
    return None, False


_ENV_LEAD_IN = "Here is some useful information about the environment you are running in:"


def _env_element(text: str) -> str | None:
    """The inside of the first ``<env>`` element of ``text`` (on lines of its own), or None. str.find: linear."""
    i = text.find("<env>")
    if i == -1 or (i > 0 and text[i - 1] != "\n"):
        return None
    k = text.find("</env>", i)
    return text[i + 5 : k] if k != -1 else None


def main_checkout(path: Path) -> Path:
    """The main working tree of ``path``'s repository; ``path`` when not in one.

    A linked worktree has a ``.git`` *file* pointing at
    ``<main>/.git/worktrees/<name>``, whose ``commondir`` leads back to
    ``<main>/.git``: memory then stays with the main checkout's project.
    """
    d = enclosing_git(path)
    if d is None:
        return path
    git = d / ".git"
    try:
        if git.is_dir():
            return d
        try:
            text = _small_file(git)
        except OSError:
            return d  # a .git that is a link (not followed) or cannot be read: the folder that holds it
        if text is None or not text.startswith("gitdir:"):
            return d
        gitdir = Path(text[len("gitdir:") :].strip())
        gitdir = gitdir if gitdir.is_absolute() else (d / gitdir)
        common = gitdir
        common_text = _small_file(gitdir / "commondir")
        if common_text:
            common = gitdir / common_text
        common = common.resolve()
        return common.parent if common.name == ".git" else d
    except OSError:
        return path


def _small_file(path: Path, limit: int = 4096) -> str | None:
    """The text of a regular file of at most ``limit`` bytes, else None.

    The path comes from a request (the working directory the harness
    reports): a FIFO or a device there must never block the proxy, so the
    file is opened non-blocking and only if it is a regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))  # a .git link is no repository's
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


@lru_cache(maxsize=256)
def project_by_name(cwd: str) -> str | None:
    """The project of a directory a free line of text names (not a harness's own report): the nearest folder at or
    above it where a ``.git`` entry stands, found by its name alone (lstat: no file read, no link followed, no
    worktree's ``gitdir:`` to another checkout), else its last folder. `billing/src` stays `billing`."""
    path = Path(cwd)
    if not path.is_absolute() or len(cwd) > PATH_MAX:
        return project_slug(path.name)
    for d in (path, *path.parents):
        try:
            if os.path.lexists(d / ".git"):
                return project_slug(d.name)
        except (OSError, ValueError):
            break
    return project_slug(path.name)


@lru_cache(maxsize=256)
def project_from_cwd(cwd: str) -> str | None:
    """Cached: every request of a conversation reports the same directory, and the
    walk up to its repository's .git is stat calls on the proxy's hot path. A relative
    directory (a transcript's or a prompt's text: no harness reports one) is named by its
    last folder alone: walked, it was resolved against bead's own working directory."""
    if not os.path.isabs(cwd):
        return project_slug(Path(cwd).name)
    return project_slug(main_checkout(Path(cwd)).name)


# The headers a harness names its session with, as identify() reads them.
SESSION_HEADERS = ("x-bead-session", "x-claude-code-session-id", "session-id", "session_id", "x-session-id")


def names_session(headers: dict[str, str]) -> bool:
    """The harness names its session (``headers`` keys lower-case): that says which conversation a request is."""
    return any(headers.get(h) for h in SESSION_HEADERS)


def _own_words(m: Message) -> str:
    """The words of a message that are not the harness's, one space apart ("" when there are none)."""
    return " ".join(" ".join(p.text for p in m.parts if p.source is not Source.HARNESS and p.text).split())


def identify(headers: dict[str, str], conv: Conversation, default_project: str | None) -> Identity:
    """Session, thread and project of a request (``headers`` keys are lower-case)."""
    # The conversation's own first message: the OpenAI APIs carry the system
    # prompt as messages, which every conversation of a harness shares.
    first = next((m.normalised for m in conv.messages if m.role != "system"), "\x00")
    if conv.continues:
        first = conv.continues + "\x00" + first
    codex, thread = _codex_ids(headers)
    # Where the conversation is: the project the harness names (X-Bead-Project), else the working directory it
    # reports. It keeps apart two repositories' conversations that a session id or their openings would join.
    where = headers.get("x-bead-project") or conv.cwd or ""
    if headers.get("x-bead-session"):
        base = safe_name(headers["x-bead-session"])
        session = base
    elif headers.get("x-claude-code-session-id"):
        base = safe_name(headers["x-claude-code-session-id"])
        agent = headers.get("x-claude-code-agent-id")
        session = f"{base}-{_h(agent, 8)}" if agent else base
    elif codex:
        base = safe_name(codex)
        session = f"{base}-{_h(thread, 8)}" if thread and thread != codex else base
    elif headers.get("x-session-id"):  # OpenCode's session
        base = session = safe_name(headers["x-session-id"])
        # Other tools send this header too, some with one value for everything: so no project's memory joins
        # another's conversation.
        first = first + "\x00" + where
    else:
        # No header names the session: the system prompt and the person's first words. A message that is only the
        # harness's (Aider's example exchange, its file listings: bead.wire.openai.aider_context) is not the
        # conversation's, nor is a reminder the harness appended; words, not their spacing, count.
        lead = conv.messages[conv.opener] if 0 <= conv.opener < len(conv.messages) else None
        if lead is None:
            lead = next((m for m in conv.messages if m.role != "system"), None)
        # Its words, not their spacing or a reminder the harness appended; a message without words of the person's
        # (an image, the harness's context alone) as it was sent.
        opener = (_own_words(lead) or lead.normalised) if lead is not None else first
        if lead is not None and conv.continues:
            opener = conv.continues + "\x00" + opener
        # Two repositories' chats that open alike stay apart by ``where`` (a directory in a reminder the person's
        # words leave out, or a system message).
        lead_system = conv.system if conv.lead_system is None else conv.lead_system
        base = session = "p" + _h(lead_system + "\x00" + opener + ("\x00" + where if where else ""), 16)
        first = opener
    project = None
    if headers.get("x-bead-project"):
        project = project_slug(_utf8(headers["x-bead-project"]))
    if not project and conv.cwd:
        project = project_from_cwd(conv.cwd) if conv.cwd_reported else project_by_name(conv.cwd)
    return Identity(
        session=session,
        base_session=base,
        thread=_h(first),
        project=project or (project_slug(default_project) if default_project else None),
    )
