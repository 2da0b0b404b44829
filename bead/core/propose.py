"""One rule for a fact that is not the person's word: what it must pass, and whether it is written or queued.

A value reaches the store from three places that are not the person typing it into `bead write`: the
person's "remember X" inside a conversation (``bead.core.remember.plan``), an agent's MCP ``remember`` tool
(``bead.core.remember.remember_fact``) and the dream (``bead.dream.run``, after ``bead.dream.decide``
classified the proposal; ``decide`` stays the pure classifier the poisoning eval counts). All three call
this module, so the rule is written and tested once:

1. ``screen``: the secret scan (a credential is never stored in plain text: refused), invisible or
   reordering characters (what it shows is not what it says) and the instruction rule
   (``bead.capture.instructions``: it reads like an instruction to an AI agent). The last two queue the
   value for the person's review (kind ``suspicious``), except where the caller can fix its own text and
   is told to (the MCP tool refuses invisible characters).
2. ``write_or_queue``: the person's-word guard, checked under the store's lock as the version is written: a
   version that is not the person's word never replaces one that is (stated or accepted by the person, or
   pinned by them). Such a change is queued for review (``change-user-stated``); the same words in other
   case or spacing are no change (``unchanged``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..capture.instructions import instruction_rule
from ..capture.secrets import credential_rules
from ..errors import InvalidKey, RefusedWrite
from ..store.audit import normalise
from ..store.facts import Fact, WriteResult
from ..store.keys import PERSON_TRUSTS, check_new_key, persons_word
from ..store.queue import Item, Queue
from ..textform import invisible, lookalikes
from .memory import Memory

SECRET = "secret"
HIDDEN = "hidden"
LOOKALIKE = "lookalike"
INSTRUCTION = "instruction"


@dataclass(frozen=True)
class Finding:
    """Why a value may not be written as it is."""

    kind: str  # secret (refused) | hidden | lookalike | instruction (queued for review, kind suspicious)
    reason: str  # what the value does, to follow "the value" or "remember:"


def instruction_text(value: str, key: str = "", title: str | None = None) -> str:
    """What the instruction rule reads: the value, the key's last segment as words (a key is made of the
    value's words, and can carry an instruction of its own) and the title."""
    return value + "\n" + key.rsplit("/", 1)[-1].replace("-", " ") + "\n" + (title or "")


def screen(value: str, key: str = "", title: str | None = None) -> Finding | None:
    """The first of: a credential (in the value or the title), invisible or reordering characters, an
    instruction to an AI agent, look-alike characters that read as ASCII (``textform.lookalikes``); None when the
    value may be written."""
    if credential_rules(value) or (title and credential_rules(title)):
        return Finding(SECRET, "looks like a credential, and bead never stores one in plain text")
    if (hidden := hidden_note(value)) is not None:
        return Finding(HIDDEN, hidden)
    rule = instruction_rule(instruction_text(value, key, title))
    if rule is not None:
        return Finding(INSTRUCTION, f"reads like an instruction to an AI agent ({rule.name}: {rule.why})")
    if (mixed := lookalike_note(value, title or "")) is not None:
        return Finding(LOOKALIKE, mixed)
    return None


def hidden_note(value: str) -> str | None:
    """What ``screen`` says of a value with invisible or reordering characters, or None when it has none."""
    hidden = invisible(value)
    return (
        f"holds invisible or reordering characters ({', '.join(hidden[:4])}), so what it shows is not what it says"
        if hidden
        else None
    )


def lookalike_note(value: str, title: str = "") -> str | None:
    """What ``screen`` says of a value (or title) with look-alike characters (``textform.lookalikes``), or None."""
    mixed = lookalikes(value) + lookalikes(title)
    if not mixed:
        return None
    shown = ", ".join(repr(w[:40]) for w in mixed[:3])
    return (
        f"holds look-alike characters that read as ASCII without being it ({ascii(shown)[1:-1]}), so it may not say what it shows"
    )


def persons(fact: Fact | None) -> bool:
    """Whether ``fact`` is the person's word: stated or accepted by them, or pinned (their decision, whoever
    wrote it; a new version would keep the pin)."""
    return fact is not None and persons_word(fact.trust, fact.pinned)


def said(fact: Fact) -> str:
    """How the person made ``fact`` theirs, for a reason line."""
    return "stated" if fact.trust == "user_stated" else "accepted" if fact.trust == "accepted" else "pinned"


class PersonsWord(Exception):
    """The write would replace the person's word (raised under the store's lock by ``guard``)."""

    def __init__(self, current: Fact, same: bool):
        super().__init__(current.id)
        self.current = current
        self.same = same  # the same words in other case or spacing, and the same type: no change


def guard(trust: str, type: str, value: str, first: Callable[[Fact | None], None] | None = None) -> Callable[[Fact | None], None]:
    """The check ``Memory.write`` runs on the current version under the store's lock: ``first`` (a caller's own,
    e.g. a compare-and-swap), then the person's-word rule for a version whose ``trust`` is not the person's."""

    def check(cur: Fact | None) -> None:
        if first is not None:
            first(cur)
        if trust not in PERSON_TRUSTS and cur is not None and persons(cur):
            raise PersonsWord(cur, normalise(cur.body) == normalise(value) and cur.type == type)

    return check


@dataclass(frozen=True)
class Proposed:
    """What became of a proposed value."""

    status: str  # written | unchanged | queued
    result: WriteResult | None = None  # written, or unchanged because the current version holds the value
    current: Fact | None = None  # unchanged because the person's version says the same
    item: Item | None = None  # queued: the review item
    added: bool = False  # queued: a new item (False: the same proposal was queued before)
    reason: str = ""  # queued: why


def queue(
    mem: Memory,
    kind: str,
    key: str,
    type: str,
    value: str,
    reason: str,
    sources: Iterable[str] = (),
    source: str = "",
    owner: str = "",
) -> Proposed:
    """Put the value in the review queue (a proposal seen before, in any status, is not queued again). What no
    file of the store may hold (the home's token, a credential in the key) is refused: RefusedWrite. So is a value
    the person forgot or rejected (its tombstone, as written or said inside the value or the key): queued, it was on
    disk again, shown by the curator's review_queue, and one accept made it the person's word."""
    mem.check_storable(key, value)
    if not mem.facts.versions(key).numbers and not mem.sealed.has(key):
        # A card shows its key to the person, and its accept would create it: the store's rules for a new key
        # hold here already, so no card reads `user/edit0r` beside the person's `user/editor` (or `user/editor.`).
        try:
            check_new_key(key)
            mem.check_lookalike(key, "accepted")
        except InvalidKey as exc:
            raise RefusedWrite(exc.message, exc.hint) from None
    if mem.tombstones.refuses(value, key):
        raise RefusedWrite(
            f"refusing to queue {key}: that value was forgotten or rejected (tombstone)",
            "only a person can bring it back: write it again with `bead write` (--trust user_stated)",
        )
    item, added = Queue(mem).add(kind, key, type, value, list(sources), reason, source=source, owner=owner)
    return Proposed("queued", item=item, added=added, reason=reason)


def write_or_queue(
    mem: Memory,
    key: str,
    value: str,
    type: str,
    trust: str,
    sources: Iterable[str] = (),
    source: str = "",
    owner: str | None = None,
    title: str | None = None,
    check: Callable[[Fact | None], None] | None = None,
    shown: Callable[[str], str] = lambda fact_id: fact_id,
) -> Proposed:
    """Write the value, unless it would replace the person's word: then queue it (``change-user-stated``),
    or report ``unchanged`` when it says the same. ``check`` runs first under the lock; ``shown`` turns a
    fact id into the caller's view of it (a team member's keys) for the reason line. KeySealed, the store's
    refusals and ``check``'s own exceptions pass through."""
    sources = list(sources)
    try:
        res = mem.write(
            key, value, type, trust=trust, sources=sources, owner=owner, title=title, check=guard(trust, type, value, check)
        )
    except PersonsWord as pw:
        if pw.same:
            return Proposed("unchanged", current=pw.current)
        reason = f"would change {shown(pw.current.id)}, which the person {said(pw.current)}"
        return queue(mem, "change-user-stated", key, type, value, reason, sources, source, owner or "")
    return Proposed("written" if res.written else "unchanged", result=res)
