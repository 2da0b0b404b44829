"""Cues: what the turn is about, by who said it.

The newest user message plus the text and tool calls of the assistant
message before it (harness system messages in between are skipped). Harness
reminders, bead's own blocks and tool field names are already gone from the
parsed parts; a tool result longer than 1,500 characters keeps its start and
its end (a traceback, a compiler's or a test runner's output ends with what
failed), and so does a text of the person's longer than 20,000. Weights follow the
reference design (docs/design.md): the person's text 1, the assistant's text and tool input
0.6, tool output 0.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..capture.text import clean
from ..conversation import Conversation, Source
from ..textform import strings_in

TOOL_RESULT_CHARS = 1500
# Of a longer tool result, its last TOOL_RESULT_TAIL characters stand in for as many before them: a traceback ends
# with the exception, a test run with its failures' summary, a build with its error. 0: its first TOOL_RESULT_CHARS
# only (before). Chosen by cross-validation (evals/grids/cues.yaml: 0, 500, 750, 1,000; docs/results.md).
TOOL_RESULT_TAIL = 500
# Of the person's message, a text longer than this (a pasted log, a file, a page) keeps its start and its end, half
# each: what the person asks is at one end of a paste, and every cue word costs the recall step time inside the
# proxy's deadline (a paste of 16 MB of words took it past the deadline, so that turn got no memory at all). A bound, not a tuned
# value: no turn of the dev suites comes near it.
USER_TEXT_CHARS = 20_000
CUT_LINE_CHARS = 200  # how far a cut may move to the nearest line break
WEIGHTS = {"user": 1.0, "assistant": 0.6, "tool_input": 0.6, "tool_output": 0.3}
# Whether a tool call's cue holds the tool's name (Edit, Bash, Read) beside its arguments: the action a rule may
# name ("don't edit a migration that is on main"). Chosen by cross-validation (evals/grids/tool-name.yaml).
TOOL_NAME = True


@dataclass(frozen=True)
class Cue:
    source: str  # user | assistant | tool_input | tool_output
    text: str
    typed: bool = False  # the person's own typed words (not pasted, not a tool's text beside its result)

    @property
    def weight(self) -> float:
        return WEIGHTS[self.source]


def words(text: str) -> str:
    """``text`` without what is left of bead's own blocks and harness reminders: the parsed parts have lost the
    closed ones, and an opening never closed (a block a tool's output cut off) runs to the end here."""
    return clean(text, unclosed_to_end=True)


def clipped(text: str, limit: int | None = None, tail: int | None = None) -> str:
    """A tool result's text as a cue: all of it up to ``limit`` (TOOL_RESULT_CHARS) characters, else its start and
    its last ``tail`` (TOOL_RESULT_TAIL) characters, a line break between them. Each cut moves to a line break
    within CUT_LINE_CHARS where there is one, so no word is cut in two there; the result is at most ``limit``
    characters and the line break."""
    limit = TOOL_RESULT_CHARS if limit is None else limit
    if len(text) <= limit:
        return text
    tail = min(max(TOOL_RESULT_TAIL if tail is None else tail, 0), limit)
    if not tail:
        return text[:limit]
    head_end = limit - tail
    line = text.rfind("\n", max(head_end - CUT_LINE_CHARS, 0), head_end)
    if line > 0:
        head_end = line
    tail_start = len(text) - tail
    line = text.find("\n", tail_start, tail_start + CUT_LINE_CHARS)
    if line != -1:
        tail_start = line + 1
    return text[:head_end] + "\n" + text[tail_start:]


def extract(conv: Conversation, index: int | None = None) -> list[Cue]:
    """The cues of message ``index`` (default: the newest user message)."""
    index = conv.newest_user if index is None else index
    if index is None:
        return []
    cues: list[Cue] = []
    for p in conv.messages[index].parts:
        # Every text of the person's message is a cue at the person's weight,
        # whoever wrote it (provenance decides what may become memory, not what
        # recall looks for): typed, pasted, or text sent beside a tool result.
        if p.kind == "text" and p.source in (Source.TYPED, Source.PASTED, Source.TOOL_OUTPUT) and p.text:
            text = clipped(words(p.text), USER_TEXT_CHARS, USER_TEXT_CHARS // 2)
            if text:
                cues.append(Cue("user", text, typed=p.source is Source.TYPED))
        elif p.kind == "tool_result":
            text = clipped(words(p.text))
            if text:
                cues.append(Cue("tool_output", text))
    j = index - 1
    while j >= 0 and conv.messages[j].role == "system":
        j -= 1
    if j >= 0 and conv.messages[j].role == "assistant":
        for p in conv.messages[j].parts:
            if p.kind == "text" and p.source is Source.ASSISTANT and p.text:
                text = words(p.text)
                if text:
                    cues.append(Cue("assistant", text))
            elif p.kind == "tool_use":
                text = words(" ".join([p.name, *strings_in(p.data)] if TOOL_NAME else strings_in(p.data)))
                if text.strip():
                    cues.append(Cue("tool_input", text))
    return cues
