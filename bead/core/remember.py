""""remember X": the person asks for a fact to be kept, in their own words.

Only the person's typed text counts: the phrase must open the typed text or
one of its sentences (after ``. ! ?`` or at the start of a typed line), so
nothing in a code fence, a quote, an expanded paste, a pasted document,
command output, a tool result, the assistant's text, the system prompt or a
harness reminder can ask for it (the parser sets those apart:
``bead.wire.anthropic.parts_of``). A value the secret scan flags is not
stored. A value that reads like an instruction to an AI agent (the dream's
prefilter, ``bead.dream.rules``) is not written but queued for review
(kind ``suspicious``): the person accepts it with ``bead queue accept ID``,
and the reply's cue block says so in one line. The key is proposed from the
value's first words: ``user/<words>`` when it speaks of the person, else the
project's.

``plan`` decides before forwarding (a regex on a short value; the queue
item's id is a hash), so the cue block can carry the line; ``remember``
writes after forwarding, with the rest of capture.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..capture.secrets import compile_linear, redact
from ..dream import rules
from ..dream.queue import Queue, item_id
from ..recall.render import escape
from ..store.keys import MAX_SEGMENT_BYTES
from .conversation import Identity, Message, Source
from .memory import Memory

# "remember X" where a sentence starts: "remember that ...", "Then remember: ...".
# Every run is bounded, so the scan stays linear on hostile text.
# On RE2 (linear time): the lazy value followed by a run of blanks backtracked
# quadratically in Python's engine on a long run of spaces.
_REMEMBER = compile_linear(
    r"(?im)(?:^|[.!?][ \t]{1,8})(?:(?:then|and|also|please|pls)[, \t]{1,4})*remember(?:[ \t]{1,4}that)?[ \t]{0,4}"
    r"[:,\-]?[ \t]{1,4}([^\n]{3,600}?)[ \t]*(?:[.!?](?:\s|$)|$)")
_KEY_SKIP = frozenset("""a an the is are was were be been am i i'm my me mine we our you your it its this that
these those to of in on at for with and or but so that project repo please always""".split())
_FIRST_PERSON = re.compile(r"(?i)\b(i|i'm|i've|my|me|mine)\b")
NOTICE_VALUE_CHARS = 160


@dataclass(frozen=True)
class Plan:
    """What "remember" will do with one value."""

    value: str
    key: str
    type: str
    action: str                 # write | queue | refuse
    reason: str = ""            # why it is queued or refused
    item: str | None = None     # the review item's id, when queued


@dataclass(frozen=True)
class Remembered:
    id: str | None              # the fact written, or None
    refused: str | None = None  # why nothing was written
    queued: str | None = None   # the review item, when the value waits for the person


def requests(message: Message) -> list[str]:
    """The values "remember ..." asks for in the person's typed text of ``message``."""
    out = []
    for part in message.parts:
        if part.source is Source.TYPED and part.kind == "text":
            m = _REMEMBER.search(part.text)
            if m:
                out.append(m.group(1).strip())
    return out


def propose_key(value: str, project: str | None) -> str:
    """A key for a remembered value: user/... for the person, else the project's."""
    skip = _KEY_SKIP | set(re.split(r"[-_.]", project or ""))
    words = [t for t in re.findall(r"[a-z0-9]+", value.lower()) if t not in skip][:4] or ["note"]
    slug = "-".join(re.sub(r"[^a-z0-9]", "", w) for w in words).strip("-")
    # A long word (a pasted hash, a path) must not make a key the store refuses.
    slug = slug[:MAX_SEGMENT_BYTES].strip("-") or "note"
    if _FIRST_PERSON.search(value) or not project:
        return f"user/{slug}"
    return f"project/{project}/{slug}"


def plan(message: Message, ident: Identity) -> list[Plan]:
    """What to do with each value the person asked to remember in ``message`` (no IO)."""
    out = []
    for value in requests(message):
        key = propose_key(value, ident.project)
        type_ = "user" if key.startswith("user/") else "project"
        if redact(value)[1]:
            out.append(Plan(value, key, type_, "refuse", "a value that looks like a credential is not stored"))
            continue
        rule = rules.instruction_rule(value)
        if rule is not None:
            reason = f"remember: reads like an instruction to an AI agent ({rule.name}: {rule.why})"
            out.append(Plan(value, key, type_, "queue", reason, item_id("suspicious", key, value)))
            continue
        out.append(Plan(value, key, type_, "write"))
    return out


def notice_lines(plans: Iterable[Plan]) -> list[str]:
    """One cue-block line per queued value: what happened and the command that keeps it."""
    out = []
    for p in plans:
        if p.action != "queue":
            continue
        value = " ".join(p.value.split())
        if len(value) > NOTICE_VALUE_CHARS:
            value = value[:NOTICE_VALUE_CHARS - 1] + "…"
        out.append(f'- note from bead: the user\'s "remember {escape(value)}" was queued for review, not stored, '
                   f"because it reads like an instruction to an AI agent; the user can keep it with "
                   f"`bead queue accept {p.item}`")
    return out


def remember(mem: Memory, message: Message, ident: Identity, sources: Iterable[str] = ()) -> list[Remembered]:
    """Write each value the person asked to remember as a ``user_stated`` fact, or queue it (see ``plan``).

    ``sources`` are the raw-log anchors of the message's typed turns.
    """
    out = []
    sources = list(sources)
    for p in plan(message, ident):
        if p.action == "refuse":
            out.append(Remembered(None, p.reason))
        elif p.action == "queue":
            item, _ = Queue(mem).add("suspicious", p.key, p.type, p.value, sources, p.reason, source="typed")
            out.append(Remembered(None, queued=item.id))
        else:
            res = mem.write(p.key, p.value, p.type, trust="user_stated", sources=sources)
            out.append(Remembered(res.fact.id))
    return out
