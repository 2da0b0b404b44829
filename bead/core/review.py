"""What a person reviewing memory works through, and what each of their decisions does.

`bead review` (the terminal), `bead candidate add` and the dashboard call
these; they translate, this decides. The walk holds, in order:

- the open items of the review queue (proposals, lesson candidates), each
  with its reason, dated excerpts of the turns it came from, and the current
  value of the key it would change;
- the facts the latest dream run wrote or decayed to dormant (from its
  report, which holds keys and version ids), each still as it was then;
- the evaluations of that run that did not promote a lesson, with the
  reason (the outcome gate, bead.dream.evaluate).

Actions: accept (the value as proposed, or as the person edited it: the item
keeps the proposed text), reject with a reason, pin, reinforce, forget and
seal (both planned first, so the person sees the preview before anything
changes), and a lesson candidate written by hand. Nothing here returns a
sealed value: a sealed key has no plaintext, and its current value is shown
as sealed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import files as safe
from ..capture.secrets import credential_rules
from ..display import CONTROL
from ..errors import BeadError, InvalidArgument, RefusedWrite
from ..recall.render import flattened
from ..store.episodes import Episodes
from ..store.facts import Fact
from ..store.keys import TYPES, parse_id, persons_word, validate_key
from ..store.queue import Item, Queue, fingerprint
from ..store.rawlog import label
from ..store.reports import Reports
from ..textform import hidden, lookalikes
from . import forget
from . import seal as ops
from .curate import set_pinned
from .memory import Memory
from .query import unreadable

EXCERPTS = 5
EXCERPT_CHARS = 240
_ANCHOR = re.compile(r"(?:raw/)?(\d{4}/\d{2}/\d{2}/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.md)#turn-(\d{1,9})")
_FACT_ID = re.compile(r"\b((?:user|global|project/[a-z0-9][a-z0-9._-]*)/[a-z0-9][a-z0-9._-]*@v[1-9][0-9]{0,8})\b")


@dataclass
class Excerpt:
    anchor: str
    session: str
    n: int
    at: str
    who: str
    text: str


# Of a current version an agent or the dream wrote, what a question or a card shows before the proposal that would
# replace it: an agent can write one long enough to push the proposal out of sight (a review). The person's word is
# shown whole.
CURRENT_CHARS = 300


def lines_marked(value: str) -> str:
    """``value`` on one line, its blanks merged as a block's line merges them (every run of blanks of any script:
    U+3000, no-break spaces), each run of line breaks (of any kind str.splitlines knows) shown as ` ↵ `: what a
    question about a value shows, so that padding cannot push its first words off the screen and a `# old hook:`
    line and the command after it do not read as one commented line."""
    return " \u21b5 ".join(line for part in value.splitlines() if (line := flattened(part)))


def current_shown(cur: Current | None, key: str, cut: bool = True) -> str:
    """What accepting a proposal for ``key`` overrides, as a question shows it: none, a sealed key (never its value),
    or the current value (``lines_marked``; one an agent or the dream wrote cut at CURRENT_CHARS where ``cut``) with
    its id, trust, status and whether it is pinned (it stays pinned)."""
    if cur is None:
        return "(none: the key is new)"
    if cur.sealed:
        return "sealed in the vault (never shown here)"
    value = lines_marked(cur.value)
    if cut and not cur.persons:
        value = cut_current(value, key)
    flags = ", pinned: stays pinned" if cur.pinned else ""
    return f"{value} ({cur.id}, {cur.trust}, {cur.status}{flags})"


def cut_current(text: str, key: str) -> str:
    """``text`` (one line, as shown) cut at CURRENT_CHARS, saying how much more there is and where to read it."""
    if len(text) <= CURRENT_CHARS:
        return text
    return f"{text[:CURRENT_CHARS]} … ({len(text) - CURRENT_CHARS:,} more characters: bead show {key})"


@dataclass
class Current:
    """The value a decision would change: a fact's current version, or a sealed key (never its value)."""

    key: str
    id: str = ""
    value: str = ""
    trust: str = ""
    status: str = ""
    pinned: bool = False
    sealed: bool = False
    type: str = ""

    @property
    def persons(self) -> bool:
        """The person's word (``persons_word``)."""
        return persons_word(self.trust, self.pinned)


@dataclass
class Entry:
    kind: str  # item | fact | evaluation
    id: str  # the item id, the fact id, or the session
    key: str
    headline: str
    reason: str
    proposed: str | None = None  # an item's value (a lesson's text)
    current: Current | None = None
    excerpts: list[Excerpt] = field(default_factory=list)
    sources: int = 0  # how many turns it cites in all
    evaluation: dict[str, Any] | None = None
    session: str = ""
    actions: tuple[str, ...] = ()
    shown: str = ""  # an item's fingerprint when the walk read it (bead.store.queue.fingerprint): what is decided
    type: str = ""  # an item's type, which accepting writes (it may differ from the current version's)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReportView:
    """The newest dream run of the newest report file: its text, and the ids and episodes it names."""

    file: str
    text: str
    written: list[str] = field(default_factory=list)
    dormant: list[str] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)


_RUN_HEADER = re.compile(r"^## Dream run", re.MULTILINE)


def latest_report(mem: Memory) -> ReportView | None:
    files = sorted(Reports(mem.home).files(), key=lambda p: p.name)
    if not files:
        return None
    text = safe.read_text(files[-1], root=mem.home.root, errors="replace")
    # The last run is the last line that begins with its header: a model's rejected key can hold the same words
    # inside a line (`- rejected: ## Dream run …`), which would hide every line of the run before it.
    starts = [m.start() for m in _RUN_HEADER.finditer(text)]
    run = text[starts[-1] :] if starts else text
    view = ReportView(files[-1].name, run)
    section = ""
    for line in run.splitlines():
        if line.startswith("### "):
            section = line[4:]
        elif line.startswith("- written: "):
            view.written += [i for i in _FACT_ID.findall(line) if "(would write)" not in line]
        elif line.startswith("- episode: "):
            view.episodes.append(line[len("- episode: ") :].strip())
        elif section.startswith("decayed to dormant") and line.startswith("- "):
            view.dormant += _FACT_ID.findall(line)
    return view


def excerpts(mem: Memory, anchors: list[str], limit: int = EXCERPTS) -> list[Excerpt]:
    """Dated excerpts of the turns ``anchors`` name (``raw/YYYY/MM/DD/<session>.md#turn-N``), first ``limit``."""
    out: list[Excerpt] = []
    files: dict[str, dict[int, Any]] = {}
    for anchor in anchors:
        if len(out) >= limit:
            break
        m = _ANCHOR.fullmatch(anchor)
        if not m:
            continue
        rel, n = m.group(1), int(m.group(2))
        if rel not in files:
            try:
                files[rel] = {t.n: t for t in mem.raw.read(mem.home.raw / rel)}
            except (OSError, safe.UnsafePath):
                files[rel] = {}
        t = files[rel].get(n)
        if t is None:
            continue
        flat = " ".join(t.text.split())
        text = flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"
        out.append(Excerpt(anchor, t.session, n, t.at, label(t), text))
    return out


def current(mem: Memory, key: str) -> Current | None:
    """The current version of ``key`` (None when it has none); a sealed key says so and nothing else."""
    try:
        validate_key(key)
    except BeadError:
        return None
    if mem.is_sealed(key):
        return Current(key, sealed=True)
    cur = mem.current(key)
    if cur is None:
        return None
    return Current(key, cur.id, cur.body, cur.trust, cur.status, cur.pinned, type=cur.type)


def _fact_actions(cur: Current | None) -> tuple[str, ...]:
    if cur is None or cur.sealed:
        return ()
    return ("pin", "reinforce", "forget", "seal")


def entries(mem: Memory) -> list[Entry]:
    """The walk: open queue items, then the latest dream run's facts, then its evaluations not promoted."""
    out: list[Entry] = []
    for item in queue_order(Queue(mem).items("open")):
        cur = current(mem, item.key)
        what = f"lesson candidate: {item.title}" if item.kind == "lesson" and item.title else item.kind
        out.append(
            Entry(
                "item",
                item.id,
                item.key,
                what,
                item.detail,
                item.value,
                cur,
                excerpts(mem, item.sources),
                len(item.sources),
                item.evaluation,
                item.session,
                ("accept", "edit", "reject", *_fact_actions(cur)),
                card_fingerprint(item, cur.id if cur is not None and not cur.sealed else None),
                item.type,
            )
        )
    rep = latest_report(mem)
    if rep is None:
        return out
    run = rep.text.splitlines()[0].removeprefix("## ").strip() if rep.text else rep.file
    for ids, why in ((rep.written, "written by the dream"), (rep.dormant, "decayed to dormant by the dream")):
        for fid in dict.fromkeys(ids):
            parsed = parse_id(fid)
            if parsed is None:
                continue
            cur = current(mem, parsed[0])
            if cur is None or cur.sealed or cur.id != fid:
                continue  # forgotten, sealed or changed since: nothing of this run left to review
            kv = mem.versions(parsed[0])
            sources = list(kv.current.sources) if kv.current else []
            out.append(
                Entry(
                    "fact",
                    fid,
                    parsed[0],
                    f"{why} ({cur.trust}, {cur.status})",
                    f"{why} in the {run}",
                    None,
                    cur,
                    excerpts(mem, sources),
                    len(sources),
                    actions=_fact_actions(cur),
                )
            )
    episodes = Episodes(mem.home)
    for rel in dict.fromkeys(rep.episodes):
        path = mem.home.store / rel
        try:
            ep = episodes.read(path)
        except (OSError, ValueError, safe.UnsafePath):
            continue
        if not ep.evaluations:
            continue
        ev = ep.evaluations[-1]
        if ev.get("promoted"):
            continue
        lesson = ep.sections.get("lesson", "")
        out.append(
            Entry(
                "evaluation",
                ep.session,
                "",
                f"evaluation of session {ep.session}: not promoted",
                str(ev.get("reason") or ""),
                lesson or None,
                None,
                [],
                0,
                ev,
                ep.session,
                ("candidate",) if lesson else (),
            )
        )
    return out


# ----- decisions ------------------------------------------------------------------------------------------


def queue_order(items: list[Any]) -> list[Any]:
    """Oldest proposal first (the time it was queued), then by id."""
    return sorted(items, key=lambda i: (str((i.history or [{}])[0].get("at", "")), i.id))


def items(mem: Memory, status: str | None = "open") -> list[Item]:
    """The review queue's items of ``status`` (None: all), in file order."""
    return Queue(mem).items(status)


def open_item(mem: Memory, item_id: str) -> Item:
    """Review item ``item_id``, which must still be open and hold what it was queued with (Queue.open_item)."""
    return Queue(mem).open_item(item_id)


def card_fingerprint(item: Item, replaces: str | None) -> str:
    """What a card shows a decision on: the item (``fingerprint``) and the id of the version its value would replace
    (``replaces``; empty where the key has none). An accept made on a card is refused when either changed since (it
    must not write an older proposal over a value the person wrote after the card); a reject, which writes nothing
    over the value, when the item did."""
    return f"{fingerprint(item)}:{replaces or ''}"


def replaced_id(mem: Memory, key: str) -> str | None:
    """The id of the version a write of ``key`` would replace now (None: none, or a sealed key's)."""
    cur = current(mem, key)
    return cur.id if cur is not None and not cur.sealed else None


def _as_shown(item: Item, shown: str | None, replaces: str | None, whole: bool = True) -> None:
    if shown and (card_fingerprint(item, replaces) != shown if whole else shown.split(":", 1)[0] != fingerprint(item)):
        raise BeadError(
            f"review item {item.id} changed since it was shown (its type, owner, sources or title), or the value it "
            "would replace did; nothing was decided",
            "look at it again: `bead review` or `bead queue`",
        )


def accept_item(mem: Memory, item_id: str, reason: str = "", value: str | None = None, shown: str | None = None) -> Item:
    """Write a review item's value (or ``value``, the person's edit of it) with trust ``accepted``.

    An edited value is written; the item keeps the proposed text and its
    history records the written one. A lesson's fact cites no turns: its
    evidence is a whole session, which a later forget of the lesson must
    not redact (the item keeps the evidence)."""
    queue = Queue(mem)
    with queue.deciding():  # a second decision of the item waits, then finds it decided
        return _accept(mem, queue, item_id, reason, value, shown)


def _accept(mem: Memory, queue: Queue, item_id: str, reason: str, value: str | None, shown: str | None) -> Item:
    item = queue.open_item(item_id)
    text = item.value if value is None else value.strip()
    acceptable(item_id, text)
    sources = [] if item.kind == "lesson" else item.sources

    def as_shown(cur: Fact | None) -> None:  # under the store's lock: nothing writes the key between it and the write
        _as_shown(item, shown, cur.id if cur is not None else None)

    res = mem.write(item.key, text, item.type, trust="accepted", sources=sources, owner=item.owner or None, check=as_shown)
    entry = {"action": "accepted", "reason": reason, "id": res.fact.id}
    if text != item.value:
        entry["value"] = text
    return queue.decided(item, "accepted", entry)


def acceptable(item_id: str, text: str) -> None:
    """Raise unless ``text`` (review item ``item_id``'s value, or the person's edit of it) may be written as the
    person's word; the curator's server asks the person only about text that passes."""
    if not text:
        raise BeadError("the edited value is empty", "accept the item as it is, or reject it")
    # Accepting makes the text the person's word: the same checks as any other way in. A proposal (or an
    # edit) that holds a terminal escape or a credential is not written, whoever backs it.
    if CONTROL.search(text):
        raise InvalidArgument(
            f"review item {item_id} holds control characters (a terminal escape, a NUL); nothing was written",
            "edit it into plain text (`bead review`, e), or reject it",
        )
    unseen = hidden(text)
    if unseen:
        # Tag characters, bidi overrides, zero-width spaces: text a model reads and the person does not see. As the
        # person's word it would reach every conversation's pinned block unseen (the card shows them escaped).
        raise InvalidArgument(
            f"review item {item_id} holds invisible or reordering characters ({', '.join(unseen[:5])}); nothing was written",
            "edit it into the text you see (`bead review`, e), or reject it",
        )
    mixed = lookalikes(text)
    if mixed:
        # A letter of another script inside an ASCII word (`pypi.оrg` with a Cyrillic о) reads as the word it
        # imitates: as the person's word, or a skill installed from a lesson, it would point the agent elsewhere.
        shown = ", ".join(ascii(w[:40]) for w in mixed[:3])
        raise InvalidArgument(
            f"review item {item_id} holds letters of another script that read as ASCII ({shown}); nothing was written",
            "edit it into the plain letters you mean (`bead review`, e), or reject it",
        )
    if credential_rules(text):
        raise RefusedWrite(
            f"the value of review item {item_id} looks like a credential, and bead never stores "
            "one in plain text; nothing was written",
            "leave the secret out (edit it), or seal it: `bead write KEY - --sensitivity secret`",
        )


def reject_item(mem: Memory, item_id: str, reason: str = "", shown: str | None = None) -> Item:
    """Reject a review item: a tombstone keeps the same proposal from returning."""
    queue = Queue(mem)
    with queue.deciding():
        item = queue.open_item(item_id)
        _as_shown(item, shown, None, whole=False)
        mem.audit.ready()  # refused before the tombstone is written, not after
        digest = mem.tombstones.add(mem.clock(), item.key, item.value, reason="review-reject")
        mem.audit.record(mem.clock(), "tombstone", key=item.key, sha256=digest)
        return queue.decided(item, "rejected", {"action": "rejected", "reason": reason})


def accept(mem: Memory, item_id: str, value: str | None = None, shown: str | None = None) -> dict[str, Any]:
    """Accept a review item as proposed, or with the person's edit of its value (the item keeps the proposal);
    ``shown``: the fingerprint of the item as the person saw it (the review walk's)."""
    item = accept_item(mem, item_id, value=value, shown=shown)
    written = Queue(mem).written(item)
    return {"id": item.id, "wrote": written[0] if written else None, "edited": bool(written and written[1] != item.value)}


def reject(mem: Memory, item_id: str, reason: str = "", shown: str | None = None) -> dict[str, Any]:
    item = reject_item(mem, item_id, " ".join(reason.split()), shown)
    return {"id": item.id, "rejected": True}


def pin(mem: Memory, key: str, pinned: bool = True, expected_id: str | None = None) -> dict[str, Any]:
    return set_pinned(mem, key, pinned, expected_id)


def reinforce(mem: Memory, key: str) -> dict[str, Any]:
    return {"id": wake(mem, key)}


def forget_plan(mem: Memory, key: str) -> tuple[Any, dict[str, Any]]:
    """(the plan, its preview: keys, versions, raw turns, episodes, review items, state lines; no values)."""
    forget.refuse_git(mem)
    plan = forget.plan_target(mem, key)
    return plan, plan.summary(mem.home.store)


INDEX_BUSY = forget.INDEX_BUSY


def forget_apply(mem: Memory, plan: Any) -> dict[str, Any]:
    return forget.apply(mem, plan)


def seal_preview(mem: Memory, key: str) -> dict[str, Any]:
    return ops.preview_seal(mem, key).summary(mem.home.store)


def seal_apply(mem: Memory, key: str) -> dict[str, Any]:
    return ops.seal(mem, key)


# ----- a lesson candidate written by hand ----------------------------------------------------------------


def add_candidate(mem: Memory, session: str, kind: str, title: str, body: str, project: str | None = None) -> tuple[Any, bool]:
    """A ``lesson`` review candidate whose evidence is ``session``'s turns, with no model call.

    ``kind`` is the type of fact it becomes when accepted. The key is
    ``project/<project>/lesson-<title words>`` (the session's project, or
    ``project``), else ``global/lesson-<title words>``. The same checks as a
    remembered value: not empty, no control characters, no credential, not a
    forgotten or rejected value. Returns (item, added)."""
    if kind not in TYPES:
        raise InvalidArgument(
            f"kind {kind!r} is not one of {', '.join(TYPES)}",
            "the kind is the type of fact the lesson becomes: feedback (how to work), project, user or reference",
        )
    title = " ".join((title or "").split())
    body = (body or "").strip()
    if not title or len(title) > 120 or CONTROL.search(title):
        raise InvalidArgument(
            "the title must be one line of 1 to 120 characters, without control characters",
            "give a short title, e.g. --title 'Run migrations before the tests'",
        )
    path = mem.raw.find(session)
    if path is None:
        raise BeadError(
            f"no raw session {session}", "the session id is the file name under store/raw (`bead search --raw` shows sessions)"
        )
    turns = mem.raw.read(path)
    if not turns:
        raise BeadError(f"session {session} has no turns", "write the candidate from a session with turns")
    if project is None:
        projects = sorted({str(t.flags["project"]) for t in turns if t.flags.get("project")})
        project = projects[0] if len(projects) == 1 else None
    key = lesson_key(title, project)
    body = mem.facts.check_body(key, body)
    if CONTROL.search(body.replace("\t", " ")):
        raise InvalidArgument(
            "the body holds control characters (a NUL, a terminal escape)", "write plain text: tabs and line breaks are fine"
        )
    # No store file holds the home's token (first: its refusal says what to do) or a credential in a key.
    mem.check_storable(key, body, title)
    if credential_rules(body) or credential_rules(title):
        raise RefusedWrite(
            "the candidate looks like it holds a credential, and bead never stores one in plain text", "leave the secret out"
        )
    if mem.tombstones.matches(body):
        raise RefusedWrite(
            "that lesson was forgotten or rejected before (tombstone)", "write it as a fact with `bead write` if you mean it"
        )
    detail = f"written by hand from session {session} (no model call)"
    return Queue(mem).add("lesson", key, kind, body, [t.anchor for t in turns], detail, "hand", title=title, session=session)


def session_of(anchor: str) -> str | None:
    """The session a source anchor names."""
    m = _ANCHOR.fullmatch(anchor)
    return Path(m.group(1)).stem if m else None


# ----- facts the dream wrote or decayed, and lessons ----------------------------------------------------


def wake(mem: Memory, key: str) -> str:
    """Make a dormant fact current again (and record it, so decay starts over)."""
    kv = mem.versions(key)
    if kv.unreadable is not None:
        raise unreadable(kv)
    if kv.current is None:
        raise BeadError(f"no fact under {key}", "list the keys with `bead list`")
    mem.audit.ready()  # the use is recorded there: a FIFO refuses before the status changes, not after
    if kv.current.status != "current":
        mem.set_status(kv.current, "current")
    mem.note_use([key], "reinforce", id=kv.current.id)
    return kv.current.id


_SLUG_WORD = re.compile(r"[a-z0-9]+")


def lesson_title(lesson: str) -> str:
    """A lesson's title: its first sentence, at most 80 characters, on one line."""
    first = re.split(r"(?<=[.!?])\s", " ".join(lesson.split()), maxsplit=1)[0]
    return first if len(first) <= 80 else first[:79].rstrip() + "…"


def lesson_key(text: str, project: str | None) -> str:
    """``project/<p>/lesson-<words>`` (or ``global/lesson-<words>``) from a lesson's first words."""
    words = _SLUG_WORD.findall(text.lower())[:8]
    slug = "-".join(words)[:60].strip("-") or hashlib.sha256(text.encode()).hexdigest()[:12]
    name = f"lesson-{slug}"
    return f"project/{project}/{name}" if project else f"global/{name}"
