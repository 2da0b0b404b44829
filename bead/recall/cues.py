"""Cues: what the turn is about, by who said it.

The newest user message plus the text and tool calls of the assistant
message before it (harness system messages in between are skipped). Harness
reminders, bead's own blocks and tool field names are already gone from the
parsed parts; a tool result longer than 1,500 characters keeps its start and
its end (a traceback, a compiler's or a test runner's output ends with what
failed). Weights follow the
reference design (docs/design.md): the person's text 1, the assistant's text and tool input
0.6, tool output 0.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conversation import Conversation, Source
from ..textform import strings_in

TOOL_RESULT_CHARS = 1500
# Of a longer tool result, its last TOOL_RESULT_TAIL characters stand in for as many before them: a traceback ends
# with the exception, a test run with its failures' summary, a build with its error. 0: its first TOOL_RESULT_CHARS
# only (before). Chosen by cross-validation (evals/grids/cues.yaml: 0, 500, 750, 1,000; docs/results.md).
TOOL_RESULT_TAIL = 500
WEIGHTS = {"user": 1.0, "assistant": 0.6, "tool_input": 0.6, "tool_output": 0.3}


@dataclass(frozen=True)
class Cue:
    source: str  # user | assistant | tool_input | tool_output
    text: str
    typed: bool = False  # the person's own typed words (not pasted, not a tool's text beside its result)

    @property
    def weight(self) -> float:
        return WEIGHTS[self.source]


def clipped(text: str) -> str:
    """A tool result's text as a cue: all of it up to TOOL_RESULT_CHARS, else its start and its last
    TOOL_RESULT_TAIL characters, a line break between them."""
    if len(text) <= TOOL_RESULT_CHARS:
        return text
    tail = min(max(TOOL_RESULT_TAIL, 0), TOOL_RESULT_CHARS)
    if not tail:
        return text[:TOOL_RESULT_CHARS]
    return text[: TOOL_RESULT_CHARS - tail] + "\n" + text[-tail:]


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
            cues.append(Cue("user", p.text, typed=p.source is Source.TYPED))
        elif p.kind == "tool_result":
            text = clipped(p.text)
            if text:
                cues.append(Cue("tool_output", text))
    j = index - 1
    while j >= 0 and conv.messages[j].role == "system":
        j -= 1
    if j >= 0 and conv.messages[j].role == "assistant":
        for p in conv.messages[j].parts:
            if p.kind == "text" and p.source is Source.ASSISTANT and p.text:
                cues.append(Cue("assistant", p.text))
            elif p.kind == "tool_use":
                text = " ".join(strings_in(p.data))
                if text.strip():
                    cues.append(Cue("tool_input", text))
    return cues
