"""bead dream, bead queue, bead reinforce."""

from __future__ import annotations

import click

from ..errors import BeadError
from . import common
from .common import echo, emit, json_option, open_memory


@click.group()
def dream():
    """The nightly grooming job: extract facts from new raw turns with a model."""


@dream.command("run")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Estimate the model calls, tokens and cost (dream.prices) of a run now; no network call, nothing changes.",
)
@json_option
def dream_run(dry_run, as_json):
    """Do one dream pass now (or, with --dry-run, estimate what it would spend)."""
    from ..dream.run import Dream

    mem = open_memory()
    if dry_run:
        est = Dream(mem).estimate()

        def told(d):
            cost = (
                f"about ${d['cost_usd']:.4f}"
                if d["cost_usd"] is not None
                else f"cost unknown (set dream.prices for {d['model'] or 'the model'} in config.yaml)"
            )
            echo(
                f"dream (dry run, no model called): {len(d['sessions'])} session(s) with unread turns, "
                f"{d['calls']} model calls, about {d['tokens_in']} tokens in and {d['tokens_out']} out, {cost}"
            )
            for sid, s in d["sessions"].items():
                echo(f"  {sid}: {s['turns']} turns, {s['calls']} calls, ~{s['tokens_in']} in / ~{s['tokens_out']} out")
            echo(
                f"  plus one second-opinion call (~{d['second_opinion_tokens_each']} tokens) per proposal "
                "about to be written; the number depends on what the model proposes"
            )
            if d["stops_early"]:
                echo("  dream.max_tokens_per_run would stop the run before the end; the rest waits for the next run")
            if not d["model"]:
                echo(
                    "  no model is set (dream.model in config.yaml): a run, and the dream worker, do nothing until "
                    "one is; these are the figures for when it is"
                )

        emit(est, as_json, told)
        return
    rep = Dream(mem).run()
    data = {
        "report": str(rep.path or ""),
        "no_model": rep.no_model,
        "calls": rep.calls,
        "tokens_in": rep.tokens_in,
        "tokens_out": rep.tokens_out,
        "sessions": rep.sessions,
        "failed": rep.failed,
        "dormant": rep.dormant,
        "queued": [i for i, _, _ in rep.queued],
        "stopped_early": rep.stopped_early,
        "dry_run": False,
    }

    def human(d):
        if d["no_model"]:
            echo(f"dream: nothing done: {d['no_model']}")
            return
        written = sum(len(s["written"]) for s in d["sessions"].values())
        echo(
            f"dream: {d['calls']} model calls, {len(d['sessions'])} sessions, "
            f"{written} written, {len(d['queued'])} queued, {len(d['dormant'])} dormant, "
            f"{len(d['failed'])} left unread; report {d['report']}"
        )

    emit(data, as_json, human)


@dream.command("worker")
@click.option("--interval", default=60.0, show_default=True, help="Seconds between schedule checks.")
def dream_worker(interval):
    """Run the dream pass on config dream.schedule (a long-lived service)."""
    from ..core.memory import Memory
    from ..dream.run import Dream
    from ..dream.worker import Worker, serve
    from ..log import setup_logging
    from .services import wait_for_signal

    setup_logging("dream")
    mem = Memory.open()

    def make():
        return Dream(mem)

    worker = Worker(make, mem.config.dream.schedule, mem.home.dream_state, mem.clock, root=mem.home.root)
    serve(worker, wait_for_signal(), interval)
    mem.close()


@click.group(invoke_without_command=True)
@click.option("--all", "show_all", is_flag=True, help="Include accepted and rejected items.")
@json_option
@click.pass_context
def queue(ctx, show_all, as_json):
    """List the review queue (proposals the dream job left for a person)."""
    if ctx.invoked_subcommand:
        return
    from ..store.queue import Queue

    items = Queue(open_memory()).items(None if show_all else "open")

    def human(rows):
        if not rows:
            echo("the review queue is empty")
        for r in rows:  # stored text is attacker-influenced: echo shows each line's controls as escapes
            src = f", source: {r['source']}" if r.get("source") else ""
            # The type too: accepting writes it, and it may differ from the key's current one (project to user).
            echo(f"{r['id']}  {r['kind']:<18} {r['status']:<8} {r['key']} (type {r['type']})")
            echo(f"    {r['value']}")
            echo(f"    ({r['detail']}{src})")

    emit([i.as_dict() for i in items], as_json, human)


@queue.command("accept")
@click.argument("item_id")
@click.option("--yes", "-y", is_flag=True, help="Write without showing the value and asking (a script of your own).")
@json_option
def queue_accept(item_id, yes, as_json):
    """Write the item's value (trust: accepted, a person's decision). It shows the whole value first, on one line as
    the model will read it, and asks at a terminal; without one it refuses unless --yes (a script of your own)."""
    from ..core.review import accept_item, card_fingerprint, current, current_shown, lines_marked
    from ..display import one_line
    from ..store.queue import Queue

    mem = open_memory()
    shown = None
    if not yes and not common.at_terminal():
        # An agent's shell has no terminal: a queued "remember" from a pasted page told the model to run this, and
        # the value reached the pinned block as accepted (an outside attack). --json alone no longer skips the question.
        raise BeadError(
            "`bead queue accept` writes a value the pinned block may carry, and no one is at a terminal to read it first",
            "run it yourself at a terminal (or `bead review`); a script of your own passes --yes",
        )
    if not yes:
        # What a notice or a list cut short (a proposal's first 160 characters) is read whole before it is written,
        # as `bead review`'s card shows it: one line, every run of blanks of any script merged (thousands of U+3000
        # pushed the key and the start of a `curl ... | sh` off the screen: an outside attack), each line break a
        # ` ↵ `, and first what it overrides (the person's pinned value); the question names the key and what it
        # replaces again, beside the answer.
        item = Queue(mem).get(item_id)
        cur = current(mem, item.key)
        replaces = cur.id if cur is not None and not cur.sealed else None
        shown = card_fingerprint(item, replaces)  # as it is when the question is shown (what the accept checks)
        kv = mem.versions(item.key)
        if kv.unreadable is not None:
            # The newest version cannot be read: the write goes above it, not above the older one shown (a review).
            replaces = f"{item.key}@v{kv.numbers[-1]}"
            cur = None
        changes = ""
        if cur is not None and cur.type and cur.type != item.type:
            changes = f"; the current version is {one_line(cur.type)}: accepting changes it"
        what = f"{one_line(item.key)} ({one_line(item.type)}, trust accepted: the pinned block may carry it{changes})"
        echo(f"This will write {what}.", err=True)
        if item.detail:
            echo(f"  queued:   {one_line(lines_marked(item.detail), 400)}", err=True)
        shown_cur = (
            current_shown(cur, item.key)
            if kv.unreadable is None
            else f"v{kv.numbers[-1]}, which cannot be read (`bead status` names the file)"
        )
        echo(f"  current:  {one_line(shown_cur)}", err=True)
        echo(f"  proposed: {one_line(lines_marked(item.value))}", err=True)
        pinned = " (pinned: it stays pinned)" if cur is not None and cur.pinned and not cur.sealed else ""
        over = f", replacing {one_line(replaces)}{pinned}" if replaces else ""
        # What the accept changes beside the value, again at the question: a long proposal scrolls the lines above
        # away (a type made `feedback` becomes a skill `bead skills install` writes: a review).
        retyped = f", as {one_line(item.type)} (it is {one_line(cur.type)} now)" if changes and cur is not None else ""
        common.confirm(f"Write the proposal to {one_line(item.key)}{over}{retyped}?", abort=True, err=True)
    item = accept_item(mem, item_id, value=None, shown=shown)
    emit(item.as_dict(), as_json, lambda d: echo(f"accepted {d['id']}: wrote {d['history'][-1]['id']}: {one_line(d['value'])}"))


@queue.command("reject")
@click.argument("item_id")
@click.option("--reason", default="", help="Why; kept in the item's history.")
@json_option
def queue_reject(item_id, reason, as_json):
    """Tombstone the item's value so the same proposal never returns."""
    from ..core.review import reject_item

    item = reject_item(open_memory(), item_id, reason)
    emit(item.as_dict(), as_json, lambda d: echo(f"rejected {d['id']}; its value is tombstoned"))


@click.command()
@click.argument("key")
@json_option
def reinforce(key, as_json):
    """Make a dormant fact current again (and restart its decay clock)."""
    from ..core.review import wake as do

    fid = do(open_memory(), key)
    emit({"id": fid}, as_json, lambda d: echo(f"reinforced {d['id']}"))


@click.command()
@click.argument("key")
@json_option
def pin(key, as_json):
    """Pin KEY (or KEY@vN: only while that version is current): it goes first into every conversation's pinned
    block and never decays. `bead unpin KEY` undoes it."""
    _pin(key, True, as_json)


@click.command()
@click.argument("key")
@json_option
def unpin(key, as_json):
    """Unpin KEY: it is chosen for the pinned block as any other fact again."""
    _pin(key, False, as_json)


def _pin(given: str, pinned: bool, as_json: bool) -> None:
    from ..core.curate import set_pinned

    key, _, version = given.partition("@v")
    expected = f"{key}@v{version}" if version else None
    if version and not version.isdigit():
        from ..errors import InvalidArgument

        raise InvalidArgument(f"{given} is not KEY or KEY@vN", "give the key, or the key and a version: user/editor@v2")
    out = set_pinned(open_memory(), key, pinned, expected)
    word = "pinned" if pinned else "unpinned"
    emit(out, as_json, lambda d: echo(f"{word} {d['id']}" if d["changed"] else f"unchanged: {d['id']} was {word} already"))


COMMANDS = [dream, queue, reinforce, pin, unpin]
