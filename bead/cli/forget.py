"""bead forget."""

from __future__ import annotations

import click

from . import common
from .common import echo, emit, json_option, open_memory


@click.command()
@click.argument("target", required=False)
@click.option("--match", "match", metavar="TEXT", help="Forget every fact and raw turn containing TEXT (3+ characters).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (--match asks always, a KEY at a terminal).")
@json_option
def forget(target, match, yes, as_json):
    """Forget a fact (KEY, or one version KEY@vN) everywhere, for good.

    Writes a tombstone, deletes the version files, redacts raw turns that
    cite or contain the value, removes index rows, episodes and conversation
    state lines, and truncates the index's WAL. Where a raw turn says the
    value's codes, numbers or rare words in other words, those are redacted
    in place. A sealed KEY's encrypted files are deleted as they are (no
    passphrase, no tombstone). At a terminal it shows what it will change
    first and asks; --match always asks (--yes for scripts).
    """
    from ..core import forget as forget_mod
    from ..errors import BeadError

    if bool(target) == bool(match):
        raise BeadError(
            "give either a KEY (or KEY@vN) or --match TEXT",
            "e.g. `bead forget user/editor` or `bead forget --match 'old password'`",
        )
    mem = open_memory()
    forget_mod.refuse_git(mem)
    plan = forget_mod.plan_match(mem, match) if match else forget_mod.plan_target(mem, target, sealed=True)
    preview = plan.summary(mem.home.store)
    if plan.sealed_not_searched:
        echo(
            f"note: --match does not search the vault's {plan.sealed_not_searched} sealed key(s): forget does "
            "not decrypt them (`bead sealed list`; `bead forget KEY` deletes one)",
            err=True,
        )
    if plan.empty:
        emit(
            {"forgotten": False, **preview, "sealed_not_searched": plan.sealed_not_searched},
            as_json,
            lambda d: echo(
                "nothing matches; nothing changed"
                + (
                    f" ({kept} raw turn marker(s) hold it in bead's own fields, where each turn came from: those stay)"
                    if (kept := d["raw_turn_markers_kept"])
                    else ""
                )
            ),
        )
        return
    # --match always asks (a script says --yes); a KEY at a terminal too, as seal does: a short or common value takes
    # every raw turn that holds it, which the person should see before it goes.
    if not yes and (match or (not as_json and common.at_terminal())):
        echo("This will forget:", err=True)
        for key in preview["keys"]:
            if key in plan.sealed:
                echo(f"  key {key}: {len(plan.sealed[key])} sealed version file(s), deleted as they are", err=True)
            if key not in plan.keys:
                continue
            if key in plan.whole:
                echo(f"  key {key}: all {len(plan.keys[key])} version file(s), its current value too", err=True)
            else:
                said = ", ".join(f"v{n}" for n in plan.keys[key])
                stays = "; its current value does not hold the text and stays" if match else ""
                echo(f"  key {key}: version(s) {said}{stays}", err=True)
        for t in preview["raw_turns"]:
            echo(f"  raw turn {t}", err=True)
        for f in preview["raw_files_unread"]:
            echo(f"  raw file {f}: could not be read, so it may hold it too (forget reads it again as it runs)", err=True)
        for f in preview["raw_text_outside_turns"]:
            echo(f"  raw file {f}: the text before its first turn (no turn bead wrote; it goes)", err=True)
        for t in preview["raw_turn_markers"]:
            echo(f"  raw turn {t}: the fields of its marker line that hold it (not bead's; they go)", err=True)
        if kept := preview["raw_turn_markers_kept"]:
            echo(
                f"  {kept} raw turn marker(s) hold it in bead's own fields (the turn's project, source or batch): "
                "those stay, as bead's record of where each turn came from",
                err=True,
            )
        if preview["raw_turns_in_part"]:
            echo(
                f"  {preview['raw_turns_in_part']} raw turn(s) that say its codes or rare words in other words: "
                "those words become [forgotten], the rest of each turn stays",
                err=True,
            )
        if preview["episodes"]:
            echo(f"  {preview['episodes']} episode file(s)", err=True)
        if preview["logged_keys"]:
            echo(f"  {preview['logged_keys']} key name(s) made of it in the audit and tombstone logs: hashed", err=True)
        if preview["report_items"]:
            echo(f"  {preview['report_items']} item(s) of dream reports that hold it: they become [forgotten]", err=True)
        if preview["session_lines"]:
            echo(f"  {preview['session_lines']} conversation state line(s)", err=True)
        for path in preview["skill_files"]:
            echo(f"  skill file {path} (`bead skills install` wrote it)", err=True)
        common.confirm("Forget all of these?", abort=True, err=True)
    summary = forget_mod.apply(mem, plan)
    if not summary["index_emptied"]:
        echo(f"warning: {forget_mod.INDEX_BUSY}", err=True)
    for path in summary["not_traces"]:
        echo(
            f"warning: left {path} as it is: it is named as the proxy's trace (proxy.trace, --trace or "
            "proxy.runtime.jsonl) but holds lines the proxy did not write; look at it yourself if it holds the value",
            err=True,
        )
    for path in summary["raw_files_unread"]:
        common.raw_file_unread(path)
    for path in summary["kept"]:
        echo(
            f"warning: kept {path}: it is not a version file of the key (forget deletes only those); "
            "look at it and delete it yourself if it holds the value",
            err=True,
        )

    common.also_in_clear(summary["also_in"])
    common.skill_files_said(summary)

    def human(d):
        sealed = f"{d['sealed_versions']} sealed version(s), " if d["sealed_versions"] else ""
        echo(
            f"forgot {len(d['keys'])} key(s), {d['versions']} version file(s), {sealed}"
            f"redacted {d['raw_turns_redacted']} raw turn(s) and {d['raw_turns_redacted_in_part']} in part, "
            f"removed {d['episodes']} episode(s) and {d['session_lines']} state line(s)"
            + (
                f", and the text before the first turn of {len(outside)} raw file(s)"
                if (outside := d["raw_text_outside_turns"])
                else ""
            )
            + (f", and fields of {len(marked)} raw turn marker(s)" if (marked := d["raw_turn_markers"]) else "")
            + (f", hashed {n} key name(s) in the audit and tombstone logs" if (n := d.get("logged_keys")) else "")
            + (f", scrubbed {n} item(s) of dream reports" if (n := d.get("report_items")) else "")
            + (
                f"; {kept} raw turn marker(s) keep it in bead's own fields (where each turn came from)"
                if (kept := d["raw_turn_markers_kept"])
                else ""
            )
        )

    emit({"forgotten": True, **summary, "sealed_not_searched": plan.sealed_not_searched}, as_json, human)


COMMANDS = [forget]
