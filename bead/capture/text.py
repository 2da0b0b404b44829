"""Tags that never count as conversation: bead's own blocks and harness reminders.

Injected memory must never come back as evidence, so ``<bead-memory>``
blocks are removed from captured text; ``<system-reminder>`` blocks are the
harness talking, not the person. Both are found with ``str.find`` in one
pass: an opening tag that is never closed cannot make the scan quadratic, as
a ``.*?`` regex to a missing closing tag would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .. import budget
from ..textform import frame_form
from .secrets import compile_linear

_WS = re.compile(r"\s*")
_LINE_WS = re.compile(r"[ \t]*")  # the whitespace after a block on its own line (``trailing_space="line"``)
_OWN_OPEN = "<bead-memory"
_OWN_CLOSE = "</bead-memory>"
_REMINDER_OPEN = "<system-reminder>"
_REMINDER_CLOSE = "</system-reminder>"


def _spans(
    text: str,
    opening: str,
    closing: str,
    need_boundary: bool = False,
    unclosed_to_end: bool = False,
    trailing_space: bool | str = True,
    outermost: bool = False,
) -> list[tuple[int, int]]:
    """(start, end) of each ``opening ... closing`` block (plus the whitespace after it when ``trailing_space``;
    "line": the spaces and tabs after it on its line only). An opening never closed ends the scan, or with
    ``unclosed_to_end`` runs to the end of the text. With ``outermost``, one block from the first opening to the
    last closing tag: the harness quotes text it does not write inside its reminders (an attached file, CLAUDE.md,
    commit subjects), and a closing tag in that text must not end the reminder and make the rest read as the
    person's words (a person's words between two reminders of one block go with them: Claude Code sends each
    reminder as a block of its own). One pass of ``str.find``: linear however the tags are arranged."""
    if outermost:
        first = text.find(opening)
        last = text.rfind(closing)
        if first == -1 or last < first + len(opening):
            return [(first, len(text))] if first != -1 and unclosed_to_end else []
        end = last + len(closing)
        if trailing_space:
            m = (_LINE_WS if trailing_space == "line" else _WS).match(text, end)
            end = m.end() if m else end
        return [(first, end)]
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        start = text.find(opening, pos)
        if start == -1:
            return out
        after = start + len(opening)
        if need_boundary and not (after < len(text) and (text[after] == ">" or text[after].isspace())):
            pos = after
            continue
        close = text.find(closing, after)
        if close == -1:
            if unclosed_to_end:
                out.append((start, len(text)))
            return out  # no closing tag anywhere after: nothing further can match
        end = close + len(closing)
        if trailing_space:
            m = (_LINE_WS if trailing_space == "line" else _WS).match(text, end)
            end = m.end() if m else end
        out.append((start, end))
        pos = end


# Where ``clean(as_lines=True)`` cut a block out of a person's text: a line of its own, which the walk reads as someone
# else's text and ``bead.wire.anthropic.text_parts`` drops once it has weighed what stands beside it (words between a
# cut block and a paste may be the paste's: a stray tag in a pasted log made a reminder swallow the person's words).
CUT = "\ue000bead-cut\ue000"


def _cut(
    text: str, spans: list[tuple[int, int]], as_lines: bool = False, marked: Callable[[int, int], bool] | None = None
) -> str:
    """``text`` without ``spans``; ``as_lines``: each span becomes a line break, so the lines around it stay lines (a
    reminder cut with the line break after it joined the next line, a fence, onto the line before), and a ``CUT``
    line where ``marked`` says so (every span when it is None)."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts.append(text[last:start])
        if as_lines:
            parts.append(f"\n{CUT}\n" if marked is None or marked(start, end) else "\n")
        last = end
    parts.append(text[last:])
    return "".join(parts)


def own_tail(text: str) -> int:
    """Where bead's own blocks at the end of a person's ``text`` begin (``len(text)`` when it ends in none): bead
    appends its cue blocks to a message's text, after a blank line, so they are always the text's last thing. A
    ``<bead-memory>`` block with anything but whitespace after it is not bead's: someone wrote it there."""
    if _OWN_OPEN not in text:
        return len(text)
    start = len(text)
    for s, e in reversed(_spans(text, _OWN_OPEN, _OWN_CLOSE, need_boundary=True)):
        if e != start and text[e:start].strip():
            break
        start = s
    return start


def own_blocks(text: str) -> list[str]:
    """The ``<bead-memory>`` blocks in ``text``, each stripped (what ``strip_own`` cuts)."""
    if _OWN_OPEN not in text:
        return []
    return [text[s:e].strip() for s, e in _spans(text, _OWN_OPEN, _OWN_CLOSE, need_boundary=True)]


def strip_own(text: str, unclosed_to_end: bool = False, as_lines: bool = False) -> str:
    """``text`` without bead's own ``<bead-memory>`` blocks (``unclosed_to_end``: one never closed runs to the end;
    ``as_lines``: as ``_cut``'s, and the whitespace after a block stays, the next line's indent with it)."""
    if _OWN_OPEN not in text:
        return text
    after: bool | str = "line" if as_lines else True
    spans = _spans(text, _OWN_OPEN, _OWN_CLOSE, need_boundary=True, unclosed_to_end=unclosed_to_end, trailing_space=after)
    return _cut(text, spans, as_lines)


def reminders(text: str) -> list[str]:
    """The harness's ``<system-reminder>`` blocks in ``text``."""
    if _REMINDER_OPEN not in text:
        return []
    return [text[s:e].strip() for s, e in _spans(text, _REMINDER_OPEN, _REMINDER_CLOSE, outermost=True)]


def clean(text: str, unclosed_to_end: bool = False, as_lines: bool = False) -> str:
    """The conversation's own words: own blocks and harness reminders removed, ends stripped. An opening tag that is
    never closed is kept as text, or with ``unclosed_to_end`` taken to run to the end (recall's cues: what follows
    a cut-off block is still not the conversation's words). ``as_lines``, for the walk over a person's lines
    (``segments``): a block cut with a line break leaves one, the whitespace after a block stays (the next line's
    indent: a cut took it, and a pasted line read as typed), and only blank lines go at the start, so the first
    line keeps its indent."""
    text = strip_own(text, unclosed_to_end, as_lines)
    if _REMINDER_OPEN in text:
        spans = _spans(
            text,
            _REMINDER_OPEN,
            _REMINDER_CLOSE,
            unclosed_to_end=unclosed_to_end,
            outermost=True,
            trailing_space="line" if as_lines else True,
        )

        def stray(start: int, end: int) -> bool:
            """A reminder span with more than one opening or closing tag: a pasted text's stray tag joined a harness
            reminder, and the span may hold the person's words (marked, so that words beside it weigh as near
            someone else's text); one reminder alone is the harness's and is only cut."""
            return text.count(_REMINDER_OPEN, start, end) > 1 or text.count(_REMINDER_CLOSE, start, end) > 1

        text = _cut(text, spans, as_lines, stray)
    if not as_lines:
        return text.strip()
    text = text.rstrip()
    lead = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, lead) + 1 :]


# ----- what in a person's text block they did not type ------------------------------------------
#
# A user text block mixes the person's typed words with text they did not
# write: a pasted README, a quoted mail, a code fence, a command's output that
# the harness put there. Only the typed words may create memory, so a block is
# split into segments by a simple rule, one pass over its lines:
#
# - a fenced code block (``` or ~~~, up to the closing fence or the block's
#   end) is pasted;
# - a line that starts with ``>`` (a quote) is pasted; the lines after it up
#   to a blank line are typed but "lazy" (Markdown reads them as the quote's,
#   so a pasted quote's next line may be the paste's own);
# - a ``[Pasted text #N +M lines]`` marker is pasted, with the rest of its
#   line and the M+1 lines after it (where the harness expanded the paste;
#   a marker without a count: the rest of the block);
# - a Markdown heading (``# ...`` to ``###### ...``), a ``---`` line or a
#   setext heading's ``===`` underline starts a document (a README, a
#   CLAUDE.md): it and everything after it in the block is pasted, since
#   nothing marks where a document ends;
# - Claude Code's command output (``<bash-stdout>``, ``<bash-stderr>``,
#   ``<local-command-stdout>``, ``<local-command-stderr>``) and a hook's
#   (``<user-prompt-submit-hook>``), and what Codex CLI's ``exec`` was piped
#   (``<stdin>``) are tool output, from the first opening
#   tag to the last closing one (or the block's end): a closing tag inside
#   the output is the output's; a block that opens with a background task's
#   ``<task-notification>`` is the harness's to its end.
#
# Every other line is typed. The rule errs towards "pasted": a person who
# types a heading loses "remember" for the rest of that block, never the
# other way round. Each line is looked at once; the tag search is str.find.

TYPED, PASTED, TOOL_OUTPUT = "typed", "pasted", "tool_output"
# Typed lines right after a quote with no blank line between: Markdown reads them as the quote's (lazy
# continuation), a person as their reply. Typed, but a "remember" there waits for review (bead.core.remember).
LAZY = "lazy"
# Claude Code's command output, a UserPromptSubmit hook's output (which may quote an issue tracker or a repository),
# and a background task's notification (its result is a subagent's text).
_OUTPUT_TAGS = (
    "bash-stdout",
    "bash-stderr",
    "local-command-stdout",
    "local-command-stderr",
    "user-prompt-submit-hook",
    "task-notification",
    "stdin",  # Codex CLI's `exec` puts what was piped to it after the prompt so: `git log -1 | codex exec "..."`
)
# A block that opens with one of these is the harness's to its end: Claude Code puts its own line after a task's
# notification ("Read the output file to retrieve the result: ..."), and around another agent's message in an agent
# team ("Another Claude session sent a message:\n<teammate-message teammate_id=...>...</teammate-message>\n\nIMPORTANT:
# This is NOT from your user ..."): that agent's words, which its own inputs (a page, a file) may have written.
_WHOLE_BLOCK_TAGS = ("<task-notification>", "<teammate-message", "Another Claude session sent a message:")
# Output elements that carry attributes (``<teammate-message teammate_id="..." color="...">``): found by their name.
_OUTPUT_WITH_ATTRIBUTES = ("teammate-message",)
_PASTE_MARK = compile_linear(r"\[Pasted text #\d{1,6}(?: \+(\d{1,7}) lines?)?\]")


def _output_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the command output: one span from the first opening output tag to the last closing one
    (or the block's end when none closes after it). The output is anyone's text (a file `! cat` shows, a page
    `! curl` fetched), so a closing tag inside it must not end it and make the rest read as the person's words;
    Claude Code's own closing tags come last. Linear: one find and one rfind a tag."""
    if text.lstrip().startswith(_WHOLE_BLOCK_TAGS):
        return [(0, len(text))]
    firsts = [i for tag in _OUTPUT_TAGS if (i := text.find(f"<{tag}>")) != -1]
    firsts += [i for tag in _OUTPUT_WITH_ATTRIBUTES if (i := text.find(f"<{tag}")) != -1]
    if not firsts:
        return []
    first = min(firsts)
    ends = [i + len(f"</{tag}>") for tag in (*_OUTPUT_TAGS, *_OUTPUT_WITH_ATTRIBUTES) if (i := text.rfind(f"</{tag}>")) != -1]
    last = max(ends, default=-1)
    # An output opened after the last closing tag and never closed (a block cut short) runs to the end.
    if last <= first or any(text.find(f"<{tag}>", last) != -1 for tag in _OUTPUT_TAGS):
        last = len(text)
    return [(first, last)]


def _indent(line: str) -> int:
    n = len(line) - len(line.lstrip(" "))
    return n if n <= 3 else -1


def _fence(line: str) -> str:
    """The fence a line opens (``` or ~~~ run), or ""."""
    i = _indent(line)
    if i < 0:
        return ""
    body = line[i:]
    for ch in "`~":
        if body.startswith(ch * 3):
            return ch * (len(body) - len(body.lstrip(ch)))
    return ""


def _closes(line: str, fence: str) -> bool:
    i = _indent(line)
    if i < 0:
        return False
    body = line[i:].rstrip()
    return body.startswith(fence) and body.strip(fence[0]) == ""


def _starts_document(line: str) -> bool:
    i = _indent(line)
    if i < 0:
        return False
    body = line[i:]
    hashes = len(body) - len(body.lstrip("#"))
    if 1 <= hashes <= 6 and (len(body) == hashes or body[hashes] in " \t"):
        return True
    stripped = line.strip()
    # A thematic break, or a setext heading's underline (the title line above it is typed: one line).
    return len(stripped) >= 3 and (stripped.strip("-") == "" or stripped.strip("=") == "")


_LEADS = frozenset("`~#->=")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|[0-9]{1,9}[.)])[ \t]")  # a list item's marker (bounded: no backtracking)


class _Runs:
    """Lines gathered into runs of the same source, as they come."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, list[str]]] = []

    def add(self, source: str, text: str) -> None:
        if self.runs and self.runs[-1][0] == source:
            self.runs[-1][1].append(text)
        else:
            self.runs.append((source, [text]))


def _columns(line: str) -> int:
    """How far in a line's text starts: its leading spaces, a tab to the next multiple of 4 (Markdown's)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _dedent(line: str, n: int) -> str:
    """``line`` without its first ``n`` columns of leading blanks (a tab that spans past ``n`` leaves its rest)."""
    col = i = 0
    while col < n and i < len(line) and line[i] in " \t":
        col += 1 if line[i] == " " else 4 - col % 4
        i += 1
    return " " * (col - n) + line[i:]


def _item(view: str, pos: int = 0) -> int:
    """Where a list item's content starts in ``view`` (its marker at ``pos``, then up to four spaces), or -1: not an
    item there."""
    m = _LIST_ITEM.match(view, pos)
    if m is None:
        return -1
    j = m.end()
    while j < len(view) and view[j] == " " and j - m.end() < 3:
        j += 1
    return j


def _fence_line(line: str) -> str:
    """The fence a line would open at any indent (a fence line is never the person's words, however far in)."""
    return _fence(line.lstrip(" \t"))


class _Walk:
    """One pass over a person's text block, line by line, each line into ``out`` with its source; the state goes on
    across the pieces an output tag's span cuts the block into (a span inside an indented paste: the paste goes on
    after it).

    A list item is a container, as in Markdown: a fence or a quote inside an item (at its content's column) is
    pasted as it is outside one, and so is a block indented four columns after a blank line, in an item or not;
    the item's own text, and a line that continues it, typed. A fence opened inside an item is closed only at the
    item's column (a pasted log's own fence at the line's start leaves it open), and a fence line at any indent is a
    fence (never typed words).
    """

    def __init__(self, out: _Runs) -> None:
        self.out = out
        self.fence = ""
        self.fence_col = 0  # the column of the list item a fence was opened in (0: none)
        self.inline = False  # the fence was opened inside a typed line: a line holding its run anywhere closes it
        self.after_paste = False  # lines right under a paste, to a blank line: lazy
        self.closed_at = -2  # the line where a fence line last closed a fence (the paste's end is known there)
        self.after_inline = False  # such a fence was closed by a line of other text, or a typed line's runs paired up:
        # the rest of the block is lazy (near someone else's text)
        self.pasted_left = 0  # lines of an expanded paste still to come
        self.quoting = False  # after a quote line: Markdown's lazy continuation, to the next blank line
        self.indented = False  # inside an indented code block (Markdown's: 4 spaces or a tab, after a blank line)
        self.item = -1  # the column where the open list item's content starts (-1: none)
        self.prev_blank = True  # the line before was blank (or there was none)
        self.rest_pasted = False  # a document or a paste marker without a count: the rest of the block is pasted
        self.last = TYPED  # the source of the last line: an output span's line goes on with it
        self._runs_after: dict[str, list[bool]] = {"`": [], "~": []}  # feed's: a later line holds a fence run
        self._at = 0  # the line of the piece being read

    def add(self, source: str, line: str) -> None:
        self.out.add(source, line)
        self.last = source
        self.prev_blank = not line.strip()

    def feed(self, text: str, after_span: bool = False) -> None:
        """``text``'s lines; ``after_span``: it starts where an output span ended, so its first line is the rest of
        the line the span cut (its source that line's)."""
        lines = text.split("\n")
        # For each line, whether a line after it (in this piece) holds a fence run of ` or of ~: a typed line's runs
        # that pair up are inline code unless a later line holds one (_typed).
        self._runs_after = {}
        for ch in "`~":
            after, seen = [False] * len(lines), False
            for j in range(len(lines) - 1, -1, -1):
                after[j] = seen
                seen = seen or ch * 3 in lines[j]
            self._runs_after[ch] = after
        for i, line in enumerate(lines):
            self._at = i
            if not i & 4095:
                budget.check()  # a request's read stops at its deadline (bead.budget), however many lines were pasted
            if self.rest_pasted:
                self.add(PASTED, "\n".join(lines[i:]))
                return
            if i == 0 and after_span:
                if line:
                    self.out.add(self.last, line)
                continue
            self.line(line)

    def line(self, line: str) -> None:
        if line == CUT:
            self.out.add(PASTED, line)  # where a block was cut: someone else's text, the walk's state as it was
            return
        mark = _PASTE_MARK.search(line) if "[Pasted text" in line else None
        # The line as its container reads it: under an open list item, without the item's indent.
        inside = self.item >= 0 and bool(line.strip()) and _columns(line) >= self.item
        view = _dedent(line, self.item) if inside else line
        if self.quoting:
            if not line.strip() or _fence_line(line) or _item(line) >= 0 or _item(view) >= 0:
                self.quoting = False  # a blank line, a fence or a list item ends the quote
            elif mark is None and view.lstrip(" ")[:1] != ">":
                self.add(LAZY, line)
                return
        if self.fence:
            self.add(PASTED, line)
            if self.inline:
                if self.fence in line:
                    # Closed by a line of other text ("npm ERR! wrap it in ``` ..."): it may be the paste's own run,
                    # so the lines after it, to the block's end, are near someone else's text (a person's closing
                    # fence on a line of its own ends that).
                    self.after_inline = bool(line.strip().strip(self.fence[0]).strip())
                    self.fence, self.inline = "", False
            elif _columns(line) >= self.fence_col and _closes(_dedent(line, self.fence_col), self.fence):
                self.fence = ""
                self.closed_at = self._at  # a fence line closed it: the next line is the person's again
            return
        if self.pasted_left > 0:
            self.pasted_left -= 1
            self.add(PASTED, line)
            return
        if not line.strip():
            self.after_paste = False
            self.add(PASTED if self.indented else TYPED, line)  # a blank line: an indented block may go on after it
            return
        if (_columns(line) >= 4 and (self.indented or self.prev_blank)) or _columns(view) >= 4:
            # Code indented as Markdown writes it, pasted like a fenced one; under a list item too, where Markdown
            # may read four spaces as the item's paragraph, and four columns past the line's container right under
            # a line, where Markdown reads a paragraph's next line: a log pasted there is what an attacker writes,
            # and a person's own indented lines lose only this (a `remember` in them waits for review). A paste
            # marker inside is the paste's too, and covers the lines it says.
            self.add(PASTED, line)
            self.indented = True
            if mark is not None:
                self._covers(mark)
            return
        self.indented = False
        if not inside:
            self.item = -1  # a line not indented under the open item ends it (a lazy paragraph line reads the same)
        if (at := _item(view)) >= 0:  # a list item (nested in the open one when ``inside``): its content
            while (more := _item(view, at)) >= 0:  # "- - x": an item that opens with another (no copy per marker)
                at = more
            self.item = (self.item if inside else 0) + at
            view = view[at:]
        body = view.lstrip(" \t\u00a0")  # a quote marker after tabs or no-break spaces is still one
        lead = body[:1]
        if lead not in _LEADS and mark is None:
            self._typed_or_along(line)  # the common case, decided by one character
            return
        if lead == ">":
            self.add(PASTED, line)  # a quote, and the lines that continue it
            self.quoting = True
            return
        if mark is not None:
            before = line[: mark.start()]
            if before.strip():
                self.add(TYPED, before)
            self.add(PASTED, line[mark.start() :])
            self._covers(mark)
            return
        opened = _fence(view) or _fence_line(line)
        if opened:
            self.fence = opened
            self.fence_col = (self.item if inside else 0) if _fence(view) else _columns(line)
            self.add(PASTED, line)
        elif _starts_document(line):  # at the line's start only: "- # of workers is 4" is a list item, typed
            # Nothing marks where a document ends: the rest of the block, at once.
            self.add(PASTED, line)
            self.rest_pasted = True
        else:
            self._typed_or_along(line)

    def _typed_or_along(self, line: str) -> None:
        """``_typed``, but a line of no letter or digit (`  },`, `]`, `...`) goes with the run it is in: it says
        nothing of its own, and a JSON pasted without a fence, its objects' two-space lines read as typed between its
        deeper pasted ones, came apart into thousands of runs (32,001 for 1.8 MB: a review), each a turn."""
        # Not a line that holds a fence run (`• ````, `(````: a fence opens there, a review), nor the line right after a
        # fence closed (the person's again: their words after it are theirs).
        along = not any(c.isalnum() for c in line) and "```" not in line and "~~~" not in line
        if along and self.closed_at != self._at - 1:
            self.add(self.last, line)
        else:
            self._typed(line)

    def _covers(self, mark: Any) -> None:
        """A paste marker's lines: the count it says and the line after it (Claude Code's), or without a count the
        rest of the block."""
        if mark.group(1) is None:
            self.rest_pasted = True
        else:
            self.pasted_left = max(self.pasted_left, int(mark.group(1)) + 1)

    def _typed(self, line: str) -> None:
        """A typed line; one that holds a fence run (``` or ~~~) anywhere is typed only up to its first run, and the
        rest of it pasted: chat apps open a fence inside a line ("the log: ```npm ERR!"), and a paste's own runs on
        the same line must not decide for the person. The run opens a fence to a later line that holds a run (the
        person closes what they open), unless the line's runs pair up and no later line holds one (inline code).
        A person's words after a run on their own line ("wrap it in ``` please. remember ...") are not read as
        theirs, and the lines after a run that opened no fence, or after a fence closed by a line of other text, are
        near someone else's text to the block's end: never an attacker's as theirs."""
        under_paste = self.last == PASTED and not self.prev_blank and self.closed_at != self._at - 1
        if (self.after_inline or self.after_paste or under_paste) and line.strip():
            # After a fence that a line of other text closed, or right under a paste with no blank line between (a
            # stack trace's flush-left last line, a list item under a quote): maybe the paste's still, to a blank line.
            self.after_paste = not self.after_inline
            self.add(LAZY, line)
            return
        found = [(at, ch) for ch in "`~" if (at := line.find(ch * 3)) != -1]
        if not found:
            self.add(TYPED, line)
            return
        at, ch = min(found)
        if line[:at].strip():
            self.add(TYPED, line[:at])
        self.add(PASTED, line[at:])
        if line.count(ch * 3) % 2 or self._runs_after[ch][self._at]:
            self.fence, self.fence_col, self.inline = ch * 3, 0, True
        else:
            self.after_inline = True  # its runs pair up: inline code, or a paste's own pair; what follows may be its


# A line that may start something pasted; text with none of these (and no
# marker or output tag) is typed as a whole, without a walk over its lines.
_MAY_PASTE = compile_linear(
    "(?m)^(?: {0,3}(?:#|---|===)|[ \t\u00a0]*>| {4}| {0,3}\t| {0,3}(?:(?:[-*+]|[0-9]{1,9}[.)])[ \t\u00a0]+){1,8}>)"
)


# What a keyboard in a chat box does not type but a pasted document carries, which the line walk does not read as a
# paste of its own (an adversarial pass): an HTML element or comment opening a line, a Markdown table's row or
# delimiter row, a heading's `===` or `---` underline, line breaks other than LF and CRLF (a lone CR, a vertical tab,
# a form feed, NEL, Unicode's line and paragraph separators: each a line break to some reader, none to the walk),
# three look-alike backticks or tildes, a line indented with a space other than the ASCII space or tab, and a mail's
# or a commit's header line (`From: Bob <bob@acme.com>`, `Subject: ...`, `Author: ...@...`: a pasted mail's body
# reads as typed). A "remember" in a block that holds one waits for review (``untyped_shape``), as in a pasted chat
# transcript (``_SPEAKER``). RE2: linear.
_UNTYPED_SHAPE = compile_linear(
    r"(?m)^[ \t]{0,3}<(?:[A-Za-z][A-Za-z0-9-]{0,63}(?:[ \t/>]|$)|/[A-Za-z]|!--)"
    r"|<!--"
    r"|^[ \t]*\|[^\n]*\|[ \t]*$"
    r"|^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*\|"
    r"|^[ \t]{0,3}(?:={3,}|-{3,})[ \t]*$"
    r"|\r[^\n]|\r\z|[\x0b\x0c\x{85}\x{2028}\x{2029}]"
    r"|[\x{ff40}\x{2cb}\x{2018}\x{b4}\x{2bb}\x{ff5e}\x{223c}\x{301c}]{3}"
    r"|^[ \t]*[\x{a0}\x{2000}-\x{200a}\x{202f}\x{205f}\x{3000}]"
    r"|^[ \t]{0,3}(?:From|To|Cc|Bcc|Reply-To|Author):[ \t][^\n]{0,200}@|^[ \t]{0,3}(?:Subject|Sent):[ \t]\S"
)
# A chat transcript's speaker lines, as a conversation copied from a chat app, an export or a debug print reads
# (`Human: ...`, `**ChatGPT:**`, `ChatGPT said:`, `[10:02] Assistant:`, `GPT-4o:`, `GitHub Copilot:`, `User：`,
# `user: ...` then `assistant: ...`, `You` and `ChatGPT` on lines of their own). A block is a transcript when a
# model's own name, capitalised, opens a line with words after it (`Claude: the lockfile is stale.`, whatever name
# the person had: `alice:`, a quote), a vendor's label does (`GitHub Copilot:`), or a person's side and a model's
# side both open lines (`Human:` and `AI:`, `H:` and `A:`, an API's roles printed lowercase). A person's name counts
# capitalised or as a lowercase role (`user`, `human`); words after a name only as a model's version (`Claude 3.5
# Sonnet`, `GPT-4o`: a digit), so a form's `Model number:` or `Assistant manager:` is no speaker. A person's settings
# (`claude: 0`, `user: 42` and `cursor: ...`, a compose file's indented `assistant:`, `system:` then `assistant: Hi!`)
# and their own `Q:` and `A:`, a bug report's `System:` and `User:`, stay theirs. Notes that open lines with models'
# names (`Claude: good at refactors`) wait for review too: a queued "remember" costs a review, a transcript's taken
# for the person's costs a fact in every later conversation. An allow-list: a transcript of other names reads as
# typed (what the docs say of pasted prose). RE2: linear.
_MODEL_NAMES = "assistant|chatgpt|claude|gemini|copilot|gpt|deepseek|grok|mistral|llama|cursor|codex"
_SPEAKER = compile_linear(
    r"(?m)^(?:\[[0-9:.apmAPM ]{1,12}\][ \t]*)?(?:#{1,6}[ \t]+)?(?:\*\*|__|\*|_)?"
    r"((?i:github|openai|google|anthropic|microsoft)[ \t]+)?"
    r"((?i:human|user|you|me|h|ai|a|bot|model|" + _MODEL_NAMES + r"))"
    r"((?:[ \t-][A-Za-z0-9.]{1,20}){0,3})(?:\*\*|__|\*|_)?[ \t]?[:\x{ff1a}](?:\*\*|__|\*|_)?"
    r"([ \t]+\S|[ \t]*$)"
    r"|(?m)^(?:\*\*|__)?(Human|User|You|Me|Assistant|AI|ChatGPT|Claude|Gemini|Copilot|Cursor)(?:\*\*|__)?[ \t]*$"
)
_PERSON_SIDE = frozenset({"human", "user", "you", "me", "h"})
_MODEL_SIDE = frozenset(_MODEL_NAMES.split("|"))  # a model's own name (not ai, a, bot, model)
_ROLE_NAMES = frozenset({"user", "human"})  # a person's side as an API's role, printed lowercase


def _transcript(text: str) -> bool:
    """Whether ``text`` holds a chat transcript's speaker lines (``_SPEAKER``)."""
    if ":" not in text and "\uff1a" not in text and "\n" not in text:
        return False
    person = model = named = lower = False
    for n, m in enumerate(_SPEAKER.finditer(text)):
        if not n & 1023:
            budget.check()  # a paste of megabytes of short `a:` lines is read to its end, not past the deadline
        vendor, name, after, words = m.group(1), m.group(2) or m.group(5), (m.group(3) or "").strip(), m.group(4)
        low = name.lower()
        upper = name[0].isupper()
        if after and after != "said" and (low not in _MODEL_SIDE or not any(c.isdigit() for c in after.split()[0])):
            continue  # `Model number:`, `Assistant manager:`: words after a name are a model's version only
        if vendor and low in _MODEL_SIDE:
            return True  # `GitHub Copilot:`: an export's label
        if low in _PERSON_SIDE:
            person = person or upper or low in _ROLE_NAMES
            named = named or upper
        elif upper:
            if low in _MODEL_SIDE and words and words.strip():
                return True  # a model speaking by its own name
            model = True
        elif low == "assistant":
            model = True  # an API's role printed lowercase: counts beside a person's side
        elif low in _MODEL_SIDE:
            lower = True  # a model's name in lowercase (`claude:`): counts beside a capitalised person (`Human:`)
        if (person and model) or (named and lower):
            return True
    return False


# A line of a tool's output as the tool prints it, which the walk reads as typed when no fence or quote holds it (a
# log pasted as lines of its own under the person's question). Each form opens a line (after up to eight spaces or
# tabs, or a box-drawing bar). Two kinds:
# - a form no person types as their own words (_OUTPUT_SURE): npm's `npm ERR!`; a traceback's head and frames;
#   a Java, .NET or JavaScript stack frame; a compiler's `path:3:5: error`, `path(3,5): error`, `path:12: error`
#   (gcc, tsc, mypy, pyright); rustc's `error[E0432]` and `--> path:3:5`; a Rust panic; Go's `goroutine 1 [`;
#   make's `make: ***`; curl's `curl: (6)`; klog's `E0101 12:00:00`; a timestamp followed by a level, or syslog's;
#   pytest's `E   ` and `FAILED x::y`; jest's `FAIL  x.test.js`; eslint's `1:10  error  `; GitHub Actions'
#   `##[error]`; Terraform's `│ Error:`; Docker's and kubectl's errors; PHP's and .NET's fatal lines; pnpm's
#   `ERR_PNPM_`; yarn's `error Command failed`; gradle's `FAILURE:`; a shell's `command not found`; a segfault;
#   git's ` ! [rejected]`;
# - a form a person may also open a line with (_OUTPUT_MAYBE): a level word (`ERROR`, `WARNING:`, `[warn]`, `INFO`),
#   `error:`, `hint:`, `fatal:`, `panic:`, `warning:`, `npm error`, `Error: `, `ValueError: `, `Caused by: `, an ISO
#   timestamp: two such lines (or one beside a sure one) make a run a tool's output, one alone ("WARNING: don't run
#   the seed script against prod.") does not.
# Typed words beside them are near a paste (``output_lines``). RE2: linear.
_LINE_START = r"(?m)^[ \t]{0,8}(?:[\x{2502}|][ \t]{1,4})?"
_OUTPUT_SURE = compile_linear(
    _LINE_START + r"(?:"
    r"npm[ \t]+ERR!|Traceback \(most recent call last\)|File \"[^\"\n]{1,400}\", line [0-9]"
    r"|at [^\s()]{1,300} \([^()\n]{1,400}:[0-9]{1,9}:[0-9]{1,9}\)"
    r"|at [\w$.<>]{1,300}\((?:[\w$.\-]{1,200}\.(?:java|kt|scala|groovy|clj):[0-9]{1,9}|Native Method|Unknown Source)\)"
    r"|at [^\n]{1,400} in [^\n]{1,400}:line [0-9]"
    r"|[^\s:()]{1,400}(?::[0-9]{1,9}(?::[0-9]{1,9})?:?|\([0-9]{1,9},[0-9]{1,9}\):?)[ \t]{1,2}(?:-[ \t]{1,2})?"
    r"(?:error|warning|fatal error)\b"
    r"|[^\s:()]{1,400}:[0-9]{1,9}:(?:[0-9]{1,9}:)?(?:error|warning|fatal error)\b"
    r"|error\[E[0-9]{4}\]|--> [^\s:]{1,400}:[0-9]{1,9}:[0-9]{1,9}|thread '[^'\n]{1,200}' panicked at"
    r"|goroutine [0-9]{1,9} \[|make(?:\[[0-9]{1,4}\])?: \*\*\*|curl: \([0-9]{1,3}\)"
    r"|[IWEF][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}"
    r"|\[?[0-9]{4}[-/][0-9]{2}[-/][0-9]{2}[T ][0-9:.,]{5,15}[^\n]{0,40}?\b(?i:error|warn(?:ing)?|info|debug|fatal|critical)\b"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 0-3][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} "
    r"|E {3}|FAILED [^\s:]{1,400}::|(?:FAIL|PASS) {1,2}[^\s]{1,400}\.[jt]sx?\b"
    r"|[0-9]{1,6}:[0-9]{1,6}[ \t]{2,}(?:error|warning)[ \t]{2,}|##\[(?:error|warning)\]"
    r"|Error response from daemon: |Error from server \(|PHP (?:Fatal error|Parse error|Warning|Notice): "
    r"|Unhandled exception\. |ERR_PNPM_|error Command failed with exit code|FAILURE: Build failed"
    r"|Segmentation fault \(core dumped\)|[a-z]{1,20}: [^\s:]{1,200}: command not found| ?! \[(?:remote )?rejected\]"
    r")|^[ \t]{0,8}\x{2502}[ \t]{1,4}(?:Error|Warning): "
)
_OUTPUT_MAYBE = compile_linear(
    _LINE_START + r"(?:"
    r"(?:ERROR|FATAL|CRITICAL|WARN(?:ING)?|INFO|DEBUG)\b"
    r"|\[[ \t]{0,2}(?i:error|fatal|crit(?:ical)?|warn(?:ing)?|info|debug)[ \t]{0,2}\]"
    r"|(?:error|fatal|hint|warning|panic|note)(?:\[[A-Za-z]{0,3}[0-9]{1,5}\])?: |npm[ \t]+(?:error|warn|WARN)\b|Error: "
    r"|[A-Za-z_][\w.]{0,100}(?:Error|Exception): |Caused by: |[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}"
    r")"
)
OUTPUT_MAYBE_LINES = 2  # lines of a form a person may also type that make a run a tool's output


def untyped_shape(text: str) -> bool:
    """Whether ``text`` (a person's block, cleaned) holds something a pasted document carries that the line walk does
    not read as pasted (``_UNTYPED_SHAPE``), as it stands or in its frame form (``frame_form``: `Claudе:` with a
    Cyrillic letter, `Subject：` with a full-width colon, a zero-width space in `Fr\u200bom:` are a transcript's and a
    mail's lines too; an outside attack)."""
    return block_shape(text)[0]


def block_shape(text: str) -> tuple[bool, bool]:
    """``untyped_shape(text)``, and whether its runs need a frame form of their own (``output_lines(run, folded)``):
    only where the block's differs from it (read where not too long) and no shape already made them all near a
    paste."""
    if _UNTYPED_SHAPE.search(text) or _transcript(text):
        return True, False  # every typed run of the block is near a paste: none is looked at again
    form = _folded(text)
    return form != text and (bool(_UNTYPED_SHAPE.search(form)) or _transcript(form)), form != text


def output_lines(text: str, folded: bool = True) -> bool:
    """Whether ``text`` (a typed run) holds a tool's output as the tool prints it: one line of a form no person
    types (``_OUTPUT_SURE``), or OUTPUT_MAYBE_LINES lines of a form a person may also open a line with
    (``_OUTPUT_MAYBE``; a sure one counts as one); as it stands or (``folded``) in its frame form (`npm ЕRR!`)."""
    if _output_lines(text):
        return True
    if not folded:
        return False
    form = _folded(text)
    return form != text and _output_lines(form)


FOLD_MAX = 1 << 16  # characters of a block or run read in their frame form too; a longer one is read as it stands


def _folded(text: str) -> str:
    """``frame_form(text)``, for a text of at most FOLD_MAX characters; a longer one as it is. The form reads each
    distinct character once, about ten times a raw look's cost a character: on a paste of megabytes of another
    script it held the request past its deadline, and the conversation went without memory and capture (a review).
    A block that long is someone else's text to the person's "remember" anyway (bead.core.remember.SHORT_MESSAGE),
    and one that shows no pasted shape as it stands is as much typed as long pasted prose is (docs/proxy.md)."""
    return frame_form(text) if len(text) <= FOLD_MAX else text


def _output_lines(text: str) -> bool:
    if _OUTPUT_SURE.search(text):
        return True
    found = 0
    for _ in _OUTPUT_MAYBE.finditer(text):
        found += 1
        if found >= OUTPUT_MAYBE_LINES:
            return True
    return False


def segments(text: str) -> list[tuple[str, str]]:
    """``text`` (already cleaned) as runs of (source, text): typed, lazy (typed right after a quote), pasted or
    tool_output.

    Runs of the same source are joined; each run's text is stripped, and
    runs left empty are dropped.
    """
    if (
        "[Pasted text" not in text
        and "<bash-std" not in text
        and "<local-command-std" not in text
        and "<user-prompt-submit-hook>" not in text
        and "<task-notification>" not in text
        and "<stdin>" not in text
        and "<teammate-message" not in text
        and "Another Claude session sent a message:" not in text
        and CUT not in text
        and "```" not in text
        and "~~~" not in text
        and not _MAY_PASTE.search(text)
    ):
        return [(TYPED, text.strip())] if text.strip() else []
    runs = _Runs()
    walk = _Walk(runs)
    pos = 0
    for start, end in _output_spans(text):
        if start > pos:
            walk.feed(text[pos:start], after_span=pos > 0)
        runs.add(TOOL_OUTPUT, text[start:end])
        pos = end
    if pos < len(text):
        walk.feed(text[pos:], after_span=pos > 0)
    return [(s, joined) for s, lines in runs.runs if (joined := "\n".join(lines).strip())]


# Codex CLI's contextual user fragments (codex-rs core/src/contextual_user_message.rs, model_visible_context.rs; its
# editor's <additional_context> too): the harness's state sent as a user message part, one element from start to end,
# never the person's words; read as the harness's on the OpenAI routes, and escaped where a stored value would open
# or close one inside bead's block.
CODEX_CONTEXT_ELEMENTS = (
    "environment_context",
    "user_instructions",
    "user_shell_command",
    "turn_aborted",
    "skill",
    "plugins",
    "subagents",
    "subagent_notification",
    "additional_context",
)


# One element of a harness's own markup that a harness puts in a block of its own beside the person's words
# (Claude Code's <ide_opened_file>, <ide_selection>, an "[Image #1]" marker): never the person's prompt.
_OPEN = re.compile(r"<([A-Za-z][A-Za-z0-9_-]{0,63})(?:[ \t][^>\n]{0,512})?>")
_IMAGE_MARKER = re.compile(r"^\[(?:Image|Pasted text|File) #\d{1,6}[^\]\n]{0,80}\]$")


# How a harness opens the summary of a compacted conversation, which it sends as a user message: a model's words,
# never the person's. Claude Code's (its transcript marks the line isCompactSummary, which `bead import` skips) and
# Codex CLI's (its summary_prefix.md).
COMPACTION_PREFIXES = (
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem and produced a summary",
    "You are performing a CONTEXT CHECKPOINT COMPACTION",  # the prompt Codex asks for that summary with
    "This session is being continued from another machine",  # Claude Code's, for a session moved between machines
    "You were originally given instructions from a user",  # older Codex CLI's bridge to a summarised history
    # Claude Code's request for that summary (/compact, or its own when the context fills), sent as the person's
    # message: its instructions, never their words (the dream would take "wrap your analysis in <analysis> tags"
    # for the person's wish).
    "Your task is to create a detailed summary of the conversation so far",
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",
)


def is_compaction(text: str) -> bool:
    """Whether ``text`` (cleaned) is a harness's summary of a compacted conversation."""
    return text.lstrip().startswith(COMPACTION_PREFIXES)


# How Claude Code opens a hook's feedback that it sends the model as a user message of its own (a Stop or
# SubagentStop hook that exits 2, or answers {"decision": "block"}): "Stop hook feedback:\n[<command>]: <stderr>".
# The hook's output (a test run's, a linter's, a fetched page's), never the person's words; the transcript marks the
# line isMeta, which the API request does not carry.
# Every hook event's name before it, not only those known here: TaskCompleted, TeammateIdle and TaskCreated hooks
# send their feedback the same way (an outside review had a TaskCompleted hook's "Remember that ..." pinned as the
# person's word). Anchored, bounded: linear.
HOOK_FEEDBACK_PREFIXES = ("Stop hook feedback:", "SubagentStop hook feedback:")
# With a matcher's name after the event, as a tool hook's says which tool (`PreToolUse:Bash hook feedback:`).
_HOOK_FEEDBACK = re.compile(r"[A-Z][A-Za-z]{1,40}(?::[A-Za-z0-9_.*|-]{1,80})? hook feedback:")


# What a harness relays as a user message of its own that no person wrote: a hook's feedback, and another agent's
# message in a Claude Code agent team (``_WHOLE_BLOCK_TAGS``).
RELAYED_PREFIXES = (*HOOK_FEEDBACK_PREFIXES, "<teammate-message", "Another Claude session sent a message:")


def is_relayed(text: str) -> bool:
    """Whether ``text`` opens as what the harness relays as the person's message (any hook's feedback, another
    agent's message): a tool's output to its end, never the person's words."""
    if not ("hook feedback:" in text or "teammate-message" in text or "Another Claude session" in text):
        return False
    opening = clean(text).lstrip()
    return opening.startswith(RELAYED_PREFIXES) or _HOOK_FEEDBACK.match(opening) is not None


# What Claude Code writes as the person's message when they interrupt it (Esc): its notice, not their words.
HARNESS_NOTICES = frozenset({"[Request interrupted by user]", "[Request interrupted by user for tool use]"})


def harness_element(text: str) -> bool:
    """Whether a whole text block is one element of a harness's markup (or an attachment marker, or a harness's
    notice)."""
    t = text.strip()
    if t in HARNESS_NOTICES or _IMAGE_MARKER.match(t[:200]):
        return True
    m = _OPEN.match(t)
    return m is not None and t.endswith(f"</{m.group(1)}>")
