"""`bead review`: the review queue and the latest dream report, one item at a time, without a model.

At a terminal the keys act at once (prompt_toolkit: raw keys, line editing
for an edit or a reason, a y/n question before anything destructive); when
stdout is not a terminal each step is a plain line read from stdin, so a
script, a pipe or a log can drive it. Both show the same card per item,
built from bead.core.review, and every stored string on it goes through
``text.safe`` first.

Keys: a accept, e edit then accept, r reject (asks why), p pin / unpin,
i reinforce, f forget (preview, then y/n), x seal (preview, then y/n),
c make a lesson candidate of a lesson the gate did not promote, s skip,
q quit, ? the keys.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..core import review
from ..core.memory import Memory
from ..display import one_line as flat
from ..errors import BeadError
from .text import one_line, safe

# A proposed value wider than this many columns, as shown (about eight lines of a terminal), is followed by the card's
# head again.
LONG_VALUE = 600

KEYS = {
    "a": "accept",
    "e": "edit",
    "r": "reject",
    "p": "pin",
    "i": "reinforce",
    "f": "forget",
    "x": "seal",
    "c": "candidate",
    "s": "skip",
    "q": "quit",
}
LABELS = {
    "accept": "accept",
    "edit": "edit",
    "reject": "reject",
    "pin": "pin",
    "reinforce": "reinforce",
    "forget": "forget",
    "seal": "seal",
    "candidate": "candidate",
    "skip": "skip",
    "quit": "quit",
}
Segment = tuple[str, str]  # (style, text): the style is for the terminal, plain lines drop it


class LineIO:
    """Plain lines: stdout not a terminal. One answer per line on stdin; end of input quits."""

    def __init__(self, out: TextIO, inp: TextIO):
        self.out, self.inp = out, inp

    def show(self, segments: list[Segment]) -> None:
        self.out.write("".join(t for _s, t in segments))
        self.out.flush()

    def _line(self, prompt: str) -> str | None:
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            self.out.write("\n")
            return None
        return line.rstrip("\r\n")

    def choose(self, actions: list[str], labels: dict[str, str]) -> str:
        keys = "/".join(k for k, a in KEYS.items() if a in actions)
        while True:
            got = self._line(f"action [{keys}]? ")
            if got is None:
                return "quit"
            word = got.strip().lower()
            action = KEYS.get(word[:1]) if len(word) == 1 else word if word in actions else None
            if action in actions:
                return action
            self.out.write(f"  unknown: {one_line(got, 40)}; one of {keys}\n")

    def ask(self, prompt: str, default: str = "") -> str | None:
        if default:
            self.out.write(f"  proposed: {one_line(default)}\n")
        got = self._line(f"{prompt} (empty line: keep the proposed text) " if default else f"{prompt} ")
        if got is None:
            return None
        return got if got.strip() or not default else default

    def confirm(self, question: str) -> bool:
        got = self._line(f"{question} [y/N] ")
        return got is not None and got.strip().lower() in ("y", "yes")


class TermIO:
    """A terminal: prompt_toolkit reads single keys and edits lines; nothing but its own output goes out raw."""

    def __init__(self) -> None:
        from prompt_toolkit.output import create_output
        from prompt_toolkit.styles import Style

        self.output = create_output(stdout=sys.stdout)
        self.style = Style.from_dict(STYLE)

    def show(self, segments: list[Segment]) -> None:
        from prompt_toolkit import print_formatted_text
        from prompt_toolkit.formatted_text import FormattedText

        print_formatted_text(FormattedText(segments), end="", output=self.output, style=self.style)

    def _keys(self, hint: str, keys: dict[str, str]) -> str:
        """Show ``hint`` on one line and wait for one of ``keys`` (key -> result); Ctrl-C and Ctrl-D quit."""
        from prompt_toolkit.application import Application
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.layout import Layout, Window
        from prompt_toolkit.layout.controls import FormattedTextControl

        kb = KeyBindings()

        def bind(key: str, result: str) -> None:
            @kb.add(key)
            def _(event: Any) -> None:
                event.app.exit(result=result)

        for k, result in {"c-c": "quit", "c-d": "quit", **keys}.items():
            bind(k, result)
        app: Application[str] = Application(
            layout=Layout(Window(FormattedTextControl([("class:keys", hint)]), wrap_lines=True, dont_extend_height=True)),
            key_bindings=kb,
            full_screen=False,
            output=self.output,
            style=self.style,
            erase_when_done=True,
        )
        return app.run()

    def choose(self, actions: list[str], labels: dict[str, str]) -> str:
        keys = {k: a for k, a in KEYS.items() if a in actions}
        hint = "  ".join(f"{k} {labels[a]}" for k, a in keys.items()) + "  ? keys"
        while True:
            got = self._keys(hint, {**keys, "?": "help"})
            if got != "help":
                return got
            self.show([("", "".join(f"  {k}  {labels[a]}\n" for k, a in keys.items()))])

    def ask(self, prompt: str, default: str = "") -> str | None:
        from prompt_toolkit import PromptSession

        multiline = "\n" in default
        note = " (Esc then Enter to finish)" if multiline else ""
        try:
            return PromptSession(output=self.output).prompt(f"{prompt}{note} ", default=default, multiline=multiline)
        except (KeyboardInterrupt, EOFError):
            return None

    def confirm(self, question: str) -> bool:
        got = self._keys(f"{question} y yes  n no", {"y": "yes", "n": "no", "enter": "no", "escape": "no"})
        self.show([("", f"{question} {'yes' if got == 'yes' else 'no'}\n")])
        return got == "yes"


STYLE = {"head": "bold", "label": "ansibrightblack", "warn": "ansired", "keys": "reverse", "ok": "ansigreen"}


# ----- the card ---------------------------------------------------------------------------------------------


def _field(name: str, value: str) -> list[Segment]:
    lines = value.split("\n") or [""]
    out: list[Segment] = [("class:label", f"  {name:<10} "), ("", lines[0] + "\n")]
    for more in lines[1:]:
        out.append(("", " " * 13 + more + "\n"))
    return out


def _columns(text: str) -> int:
    """How many terminal columns ``text`` takes (a wide character two; an escape as many as its characters)."""
    from prompt_toolkit.utils import get_cwidth

    return get_cwidth(text)


def card(e: review.Entry, n: int, total: int) -> list[Segment]:
    """What the person sees of one entry; every stored string passes through ``safe``."""
    title = f"[{n}/{total}] "
    what = {"item": "review item", "fact": "fact"}.get(e.kind)
    title += f"{what} {safe(e.id)}" if what else f"session {safe(e.session)}"
    out: list[Segment] = [("", "\n"), ("class:head", title + "\n")]
    out += _field("what", one_line(e.headline, 200))
    if e.key:
        out += _field("key", one_line(e.key))
    if e.type:
        # What accepting writes, beside the current version's type where it differs: an accept of a proposal typed
        # otherwise turned the person's pinned feedback into a reference, unseen (an outside review).
        was = e.current.type if e.current is not None and not e.current.sealed else ""
        out += _field(
            "type",
            one_line(e.type)
            + (f" (the current version is {one_line(was)}: accepting changes it)" if was and was != e.type else ""),
        )
    if e.reason:
        out += _field("reason", one_line(e.reason, 400))
    if e.kind != "evaluation":
        # Before the proposal: what accepting overrides (the person's pinned value) stays in sight however long the
        # proposal is (an outside attack pushed it below 4,000 characters of a proposal in the MCP question).
        cur = e.current
        if cur is None:
            shown = "(none: the key is new)"
        elif cur.sealed:
            shown = "sealed in the vault (never shown here)"
        else:
            flags = ", pinned" if cur.pinned else ""
            # The person's word is shown whole; a version an agent or the dream wrote is cut (review.cut_current).
            value = flat(review.lines_marked(cur.value))
            if e.proposed is not None and not cur.persons:
                value = review.cut_current(value, safe(e.key))
            shown = f"{value}\n({safe(cur.id)}, {safe(cur.trust)}, {safe(cur.status)}{flags})"
        out += _field("current", shown)
    if e.proposed is not None:
        # What would be written is shown as bead's blocks give it to the model (bead.recall.render.fact_line): one
        # line, every run of blanks and line breaks one space. Its own line breaks could push its first lines off the
        # screen and leave an innocent last line beside the current value (an outside review); an evaluation's
        # lesson, which nothing writes from here, keeps its lines.
        # Every run of blanks of any script too (U+3000, no-break spaces): the model reads one space, and thousands
        # of them filled the screen above the question with nothing (an adversarial pass). Where the value breaks
        # its lines, the card says so (`↵`, runs of breaks as one): `get_memory` gives the agent the lines, and a
        # `# old hook:` line followed by a command reads as one commented line once joined (a review).
        shown = safe(e.proposed, multiline=True) if e.kind == "evaluation" else flat(review.lines_marked(e.proposed))
        out += _field("lesson" if e.kind == "evaluation" else "proposed", shown)
    if e.evaluation:
        ev = e.evaluation
        figures = ", ".join(
            f"{k} {float(ev[k]):.2f}"
            for k in ("task_success", "verified", "reusable", "score")
            if isinstance(ev.get(k), int | float)
        )
        extra = f"; {one_line(str(ev.get('reason')), 200)}" if ev.get("reason") else ""
        out += _field(
            "evaluated",
            f"{figures or one_line(str(ev.get('status', '')))}{extra} "
            f"({one_line(str(ev.get('tokens_in', 0)))} tokens in, "
            f"{one_line(str(ev.get('tokens_out', 0)))} out)",
        )
    if e.excerpts:
        lines = [
            f"{safe(x.at[:16].replace('T', ' '))}  {safe(x.session)}#{x.n} {safe(x.who)}: {one_line(x.text)}" for x in e.excerpts
        ]
        if e.sources > len(e.excerpts):
            lines.append(f"... and {e.sources - len(e.excerpts)} more turn(s)")
        out += _field("sources", "\n".join(lines))
    elif e.kind != "evaluation":
        out += _field("sources", "(no turns cited)" if not e.sources else f"{e.sources} turn(s), none readable now")
    if e.proposed is not None and e.kind != "evaluation" and _columns(flat(review.lines_marked(e.proposed))) > LONG_VALUE:
        # A long value pushes the card's head (what it is, its key, why it waits) off the top of the screen: said
        # again beside the question.
        again = " · ".join(x for x in (one_line(e.headline, 120), one_line(e.key or "", 120), one_line(e.reason or "", 200)) if x)
        out += _field("deciding", again)
    return out


def _preview(p: dict[str, Any], what: str) -> list[Segment]:
    out: list[Segment] = [("class:warn", f"{what} will change, for good:\n")]
    for k in p.get("keys", []):
        out.append(("", f"  key {one_line(k)} ({p.get('versions', 0)} version file(s) in all)\n"))
    for t in p.get("raw_turns", [])[:20]:
        out.append(("", f"  raw turn {one_line(t)} (its text becomes [forgotten])\n"))
    if len(p.get("raw_turns", [])) > 20:
        out.append(("", f"  ... and {len(p['raw_turns']) - 20} more raw turn(s)\n"))
    for name, label in (
        ("episodes", "episode file(s)"),
        ("review_items", "review item(s)"),
        ("session_lines", "conversation state and trace line(s)"),
    ):
        if p.get(name):
            out.append(("", f"  {p[name]} {label}\n"))
    for path in p.get("skill_files", []):
        out.append(("", f"  skill file {one_line(path)} (`bead skills install` wrote it: removed)\n"))
    for path in p.get("skill_files_left", []):
        out.append(("class:warn", f"  skill file {one_line(path)} holds it or was made from it, changed since: left to you\n"))
    return out


def _skills_done(s: dict[str, Any]) -> str:
    """What a forget or seal did to the skill files install wrote, for the line after it ("" when nothing)."""
    said = [f"; removed skill file {one_line(p)}" for p in s.get("skill_files", [])]
    said += [
        f"; warning: left skill file {one_line(p)}: it holds the value, remove it yourself" for p in s.get("skill_files_left", [])
    ]
    if s.get("skill_files_unread"):
        said.append(f"; warning: {one_line(s['skill_files_unread'])}")
    return "".join(said)


# ----- the walk -----------------------------------------------------------------------------------------------


def run(mem: Memory, io: LineIO | TermIO) -> dict[str, int]:
    """Walk every entry once; returns how many of each action were taken."""
    items = review.entries(mem)
    done: dict[str, int] = {}
    rep = review.latest_report(mem)
    head = (
        f"bead review: {sum(1 for e in items if e.kind == 'item')} review item(s), "
        f"{sum(1 for e in items if e.kind == 'fact')} fact(s) and "
        f"{sum(1 for e in items if e.kind == 'evaluation')} evaluation(s) not promoted from the latest dream "
        f"report ({safe(rep.file) if rep else 'none yet'})\n"
    )
    io.show([("class:head", head)])
    if rep is not None:
        summary = [line for line in rep.text.splitlines()[:4] if line.startswith(("## ", "- model", "- time"))]
        io.show([("class:label", "".join(f"  {one_line(s, 160)}\n" for s in summary))])
    for n, e in enumerate(items, 1):
        io.show(card(e, n, len(items)))
        actions = [*e.actions, "skip", "quit"]
        while True:
            labels = {**LABELS, "pin": "unpin" if e.current is not None and e.current.pinned else "pin"}
            action = io.choose(actions, labels)
            if action == "quit":
                io.show([("", "stopped; the rest waits for the next `bead review`\n")])
                return done
            try:
                said = _act(mem, io, e, action)
            except BeadError as exc:
                io.show(
                    [
                        ("class:warn", f"  not done: {one_line(exc.message, 300)}\n"),
                        ("", f"  {one_line(exc.hint or '', 300)}\n" if exc.hint else ""),
                    ]
                )
                continue
            if said is None:
                continue  # the person backed out of an edit, a reason or a preview: ask again
            done[action] = done.get(action, 0) + 1
            io.show([("class:ok", f"  {said}\n")])
            break
    skipped = done.get("skip", 0)
    if not items:
        end = "nothing left to review\n"
    elif skipped:
        end = f"walked through all {len(items)}; {skipped} skipped, still waiting for the next `bead review`\n"
    else:
        end = "all reviewed\n"
    io.show([("", end)])
    return done


def _act(mem: Memory, io: LineIO | TermIO, e: review.Entry, action: str) -> str | None:
    """Carry out one decision; None when the person backed out (nothing changed)."""
    acts: dict[str, Callable[[], str | None]] = {
        "skip": lambda: "skipped",
        "accept": lambda: _accepted(review.accept(mem, e.id, shown=e.shown or None)),
        "edit": lambda: _edit(mem, io, e),
        "reject": lambda: _reject(mem, io, e),
        "pin": lambda: _pin(mem, e),
        "reinforce": lambda: f"reinforced {review.reinforce(mem, e.key)['id']}",
        "forget": lambda: _forget(mem, io, e),
        "seal": lambda: _seal(mem, io, e),
        "candidate": lambda: _candidate(mem, e),
    }
    return acts[action]()


def _accepted(r: dict[str, Any]) -> str:
    return f"accepted {r['id']}: wrote {r['wrote']}" + (" (your edit; the item keeps the proposed text)" if r["edited"] else "")


def _edit(mem: Memory, io: LineIO | TermIO, e: review.Entry) -> str | None:
    # The edit starts from the proposal as the card shows it: a control or invisible character in it is
    # there as its visible escape, never as itself (the line editor would send some of them to the terminal),
    # so what the person sees is what is written.
    value = io.ask("new value:", default=safe(e.proposed or "", multiline=True))
    if value is None or not value.strip():
        return None
    return _accepted(review.accept(mem, e.id, value, shown=e.shown or None))


def _reject(mem: Memory, io: LineIO | TermIO, e: review.Entry) -> str | None:
    reason = io.ask("why reject it (kept in the item's history):")
    if reason is None:
        return None
    review.reject(mem, e.id, reason, shown=e.shown or None)
    return f"rejected {e.id}; its value is tombstoned and will not be proposed again"


def _pin(mem: Memory, e: review.Entry) -> str:
    cur = e.current
    pinned = not (cur is not None and cur.pinned)
    # The version on the card, or nothing: one written since (an agent's) is not what the person decided on.
    r = review.pin(mem, e.key, pinned, expected_id=cur.id if cur is not None else None)
    if cur is not None:
        cur.pinned = pinned
    return f"{'pinned' if pinned else 'unpinned'} {safe(r['id'])}"


def _forget(mem: Memory, io: LineIO | TermIO, e: review.Entry) -> str | None:
    plan, preview = review.forget_plan(mem, e.key)
    io.show(_preview(preview, f"forget {safe(e.key)}"))
    if not io.confirm("Forget all of these?"):
        io.show([("", "  nothing was changed\n")])
        return None
    s = review.forget_apply(mem, plan)
    done = f"forgot {len(s['keys'])} key(s), {s['versions']} version file(s), redacted {s['raw_turns_redacted']} raw turn(s)"
    done += _skills_done(s)
    return done if s["index_emptied"] else f"{done}; warning: {review.INDEX_BUSY}"


def _seal(mem: Memory, io: LineIO | TermIO, e: review.Entry) -> str | None:
    preview = review.seal_preview(mem, e.key)
    io.show(_preview(preview, f"seal {safe(e.key)} (its plaintext is forgotten; the vault keeps it)"))
    if not io.confirm("Seal it?"):
        io.show([("", "  nothing was changed\n")])
        return None
    s = review.seal_apply(mem, e.key)
    return f"sealed {safe(e.key)}: {len(s.get('sealed', []))} version(s) in the vault" + _skills_done(s)


def _candidate(mem: Memory, e: review.Entry) -> str:
    from ..core.review import lesson_title

    item, added = review.add_candidate(mem, e.session, "feedback", lesson_title(e.proposed or ""), e.proposed or "")
    return f"review item {item.id} holds the lesson now" + ("" if added else " (it was queued before)")


def main(mem: Memory, line_mode: bool) -> dict[str, int]:
    io: LineIO | TermIO = LineIO(sys.stdout, sys.stdin) if line_mode else TermIO()
    return run(mem, io)
