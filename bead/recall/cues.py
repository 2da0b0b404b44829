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
# All tool results of the message together (each keeps its start and end within TOOL_RESULT_CHARS): a message of a
# thousand results is read as its first ones. The same bound holds for all of the person's texts together (the typed
# ones first: a paste sent as hundreds of blocks), and for the answer before it, its text and its tool calls' inputs.
TOOL_RESULTS_CHARS = 20_000
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
    """The cues of message ``index`` (default: the newest user message, with the user messages right before it)."""
    newest = index is None
    index = conv.newest_user if index is None else index
    if index is None:
        return []
    cues: list[Cue] = []
    # The newest user message with the user messages right before it: the APIs read consecutive user messages as
    # one turn, and a harness may send the person's words and then an image, or its own reminder, as another.
    first = index
    while newest and first > 0 and conv.messages[first - 1].role == "user":
        first -= 1
    parts = tuple(p for m in conv.messages[first : index + 1] for p in m.parts)
    # Every text of the person's message is a cue at the person's weight,
    # whoever wrote it (provenance decides what may become memory, not what
    # recall looks for): typed, pasted, or text sent beside a tool result. Within
    # USER_TEXT_CHARS for all of them: the typed ones first, then from both ends
    # inwards (a paste of many blocks keeps its first and its last, where what is
    # asked stands).
    said = [i for i, p in enumerate(parts) if p.kind == "text" and p.source in _SAID and p.text]
    ends = [said[k // 2] if k % 2 == 0 else said[-1 - k // 2] for k in range(len(said))]
    user = _Budget(USER_TEXT_CHARS)
    texts = {
        i: user.take(parts[i].text, USER_TEXT_CHARS, USER_TEXT_CHARS // 2)
        for i in sorted(dict.fromkeys(ends), key=lambda i: parts[i].source is not Source.TYPED)
    }
    results = _Budget(TOOL_RESULTS_CHARS)
    for i, p in enumerate(parts):
        if i in texts:
            if texts[i]:
                cues.append(Cue("user", texts[i], typed=p.source is Source.TYPED))
        elif p.kind == "tool_result":
            text = results.take(p.text, TOOL_RESULT_CHARS, TOOL_RESULT_TAIL)
            if text:
                cues.append(Cue("tool_output", text))
    j = first - 1
    while j >= 0 and conv.messages[j].role == "system":
        j -= 1
    if j >= 0 and conv.messages[j].role == "assistant":
        answer = _Budget(USER_TEXT_CHARS)  # the answer's text and its tool calls' inputs (a file a Write call holds)
        for p in conv.messages[j].parts:
            if p.kind == "text" and p.source is Source.ASSISTANT and p.text:
                text = answer.take(p.text, USER_TEXT_CHARS, USER_TEXT_CHARS // 2)
                if text:
                    cues.append(Cue("assistant", text))
            elif p.kind == "tool_use":
                text = answer.take(
                    " ".join([p.name, *strings_in(p.data)] if TOOL_NAME else strings_in(p.data)),
                    USER_TEXT_CHARS,
                    USER_TEXT_CHARS // 2,
                )
                if text.strip():
                    cues.append(Cue("tool_input", text))
    return cues


_SAID = (Source.TYPED, Source.PASTED, Source.TOOL_OUTPUT)


class _Budget:
    """Characters of cue text still to give out: each text is cut (``clipped``) to what is left, at most ``limit``;
    once none is left, a text is not even read."""

    def __init__(self, chars: int) -> None:
        self.left = chars

    def take(self, text: str, limit: int, tail: int) -> str:
        if self.left <= 0:
            return ""
        cut = min(limit, self.left)
        out = clipped(words(text), cut, tail if cut == limit else min(tail, cut // 2))
        self.left -= len(out)
        return out
