"""The person's own yes, asked by the curator's server before text becomes their word.

An accept from the review queue, a pin, and the curator's ``remember`` put
text into every conversation's pinned block as the person's word. The model
that calls the tool may be steered by the very text it is asked to accept (a
queued proposal, a web page in the session), and a harness may approve tool
calls without asking. So the server asks the person itself, through MCP
elicitation: the client shows bead's question, with the text it would write,
in a dialog the person answers; the model sees neither the question nor a
token it could repeat. A client that cannot ask (no form elicitation, or no
channel back) gets a refusal naming the terminal command the person runs
instead. Nothing is written without an accept, and only while the question
would still read the same (the tool checks again just before it writes).

The SDK asks through resolvers (``mcp.server.mcpserver.Resolve``): a tool's
question resolver reads the store, its ask resolver turns the question into
an ``Elicit`` marker, and the SDK carries it the way the negotiated protocol
wants (a request to the client mid-call before 2026-07-28, an
``InputRequiredResult`` and the client's retry from then on; a retry whose
question reads differently is asked again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from mcp.server.mcpserver import Context, Elicit
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, ConfigDict

from ..core import review
from ..display import visible
from .errors import ToolFailure

# Longer text is not put in a dialog: the person would accept what they did not read.
SHOW_CHARS = 4000
# From this protocol revision on, a question rides an InputRequiredResult and needs no channel back.
INPUT_REQUIRED = "2026-07-28"
# How long a question asked in the middle of a call waits for the person (before 2026-07-28; from then on the
# SDK's request state expires after as long): the call is not held open for good by a client that never answers.
WAIT_S = 600.0


class Consent(BaseModel):
    """An empty form: the person's accept or decline is the whole answer."""

    model_config = ConfigDict(extra="ignore")


@dataclass(frozen=True)
class Question:
    """What a tool would ask the person: ``text`` (empty: the call writes nothing as the person's word, so
    nothing is asked), or ``failed`` (reading what to ask raised: the tool's work raises the same, asked
    nothing); ``instead``: what the person runs at a terminal where the client cannot ask; ``act``: what only the
    person can do, for the refusal."""

    text: str = ""
    instead: str = ""
    failed: bool = False
    act: str = ""  # what only the person can do, for the refusal ("" : make this their word)


def can_ask(ctx: Context) -> bool:
    """The client shows forms to its user (``elicitation: {}`` is form mode, the spec's first form), and the
    question can reach it: an InputRequiredResult, or a request on a channel back."""
    try:
        caps = ctx.client_capabilities
        el = caps.elicitation if caps is not None else None
        if el is None or (el.form is None and el.url is not None):
            return False
        return _input_required(ctx) or bool(ctx.session.can_send_request)
    except Exception:  # outside a request, or a session without the attribute: no one to ask
        return False


def _input_required(ctx: Context) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED)


@dataclass(frozen=True)
class Answered:
    """The person's answer to a question asked in the middle of the call (before 2026-07-28): ``accept``,
    ``decline`` or ``cancel``, or "" when no clear answer came (an error from the client, no answer in time)."""

    action: str = ""


async def ask(ctx: Context, q: Question) -> Elicit[Consent] | Question | Answered:
    """The ask resolver's body: ``q`` itself when there is nothing to ask or no one to ask it of (the tool then
    acts or refuses, ``verdict``); else the question, for the SDK to carry as an InputRequiredResult
    (2026-07-28 on), or asked here, on the channel back, so that a client's error or silence is a refusal of
    bead's own shape rather than a protocol error or a call held open for good."""
    if not q.text or q.failed or not can_ask(ctx):
        return q
    # The one text bead hands a harness to show as it is (a dialog): every control or invisible character in it is
    # escaped here, whatever part of the question it came in with (a queue item's field was once shown raw).
    text = visible(q.text, multiline=True)
    if _input_required(ctx):
        return Elicit(text, Consent)
    try:
        with anyio.fail_after(WAIT_S):
            answer = await ctx.elicit(text, Consent)
    except (MCPError, ValueError, TimeoutError):
        return Answered()
    return Answered(answer.action)


def quoted(text: str, instead: str) -> str:
    """``text`` as the question shows it: on one line, each run of blank space one space, so no padding pushes a part
    of it out of the dialog's view, and each run of line breaks a ` ↵ ` (joined silently, a `# old hook:` line and the
    command after it read as one commented line: a review), every control and invisible character as an escape,
    indented under the question; refused when too long to read in a dialog."""
    flat = review.lines_marked(text)
    if len(flat) > SHOW_CHARS:
        raise ToolFailure(
            "needs_person",
            f"the text is {len(flat):,} characters, too long to ask about in a dialog; nothing was changed",
            instead,
        )
    return "    " + visible(flat)


def excerpt(text: str, key: str) -> str:
    """``text`` as ``quoted`` shows it, cut as a current version before a proposal is (bead.core.review.cut_current)."""
    return "    " + visible(review.cut_current(review.lines_marked(text), key))


def said_no(outcome: Any) -> bool:
    """The person was asked and did not say yes (declined, closed the dialog, a client error, no answer)."""
    if isinstance(outcome, DeclinedElicitation | CancelledElicitation):
        return True
    data = outcome.data if isinstance(outcome, AcceptedElicitation) else None
    return isinstance(data, Answered) and data.action != "accept"


def verdict(q: Question, outcome: Any) -> None:
    """Return when the tool may act on ``q``: nothing to ask, or the person accepted it; raise ToolFailure
    (nothing was changed) when they did not, or could not be asked."""
    if q.failed or not q.text:
        return  # the work raises what the question could not be read for, or writes nothing of the person's
    data = outcome.data if isinstance(outcome, AcceptedElicitation) else None
    if isinstance(data, Consent) or (isinstance(data, Answered) and data.action == "accept"):
        return
    if isinstance(outcome, DeclinedElicitation | CancelledElicitation) or isinstance(data, Answered):
        raise ToolFailure(
            "declined",
            "the person did not accept (declined, closed the dialog, or no answer came); nothing was changed",
            "leave it as it is unless the person asks again",
        )
    raise ToolFailure(
        "needs_person",
        f"only the person can {q.act or 'make this their word'}, and they cannot be asked through this client here (no MCP "
        "elicitation form, or no channel back on this connection); nothing was changed",
        q.instead,
    )
