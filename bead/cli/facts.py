"""bead write / show / history / list."""

from __future__ import annotations

import sys

import click

from . import common
from .common import INDEX_LATER, echo, emit, json_option, open_memory


@click.command()
@click.argument("key")
@click.argument("text")
@click.option(
    "--type",
    "type_",
    required=True,
    type=click.Choice(["user", "feedback", "project", "reference"]),
    help="What kind of fact this is.",
)
@click.option(
    "--trust", default="user_stated", show_default=True, type=click.Choice(["user_stated", "agent_observed", "dream_inferred"])
)
@click.option("--sensitivity", default="private", show_default=True, type=click.Choice(["public", "private", "secret"]))
@click.option("--pin/--no-pin", default=None, help="Pin the fact (kept in the pinned block). Default: as before.")
@click.option(
    "--title",
    help="A short name for the fact, at most 8 words, shown where bead points to it without "
    "its value. Default: the value's first words.",
)
@json_option
def write(key, text, type_, trust, sensitivity, pin, title, as_json):
    """Write TEXT as the new value of KEY (TEXT `-` reads stdin).

    Applies the supersession rule: the new version gets the next number and
    the old one is marked superseded. Writing the current value again writes
    nothing. A value holding a control character (a terminal escape, a
    NUL) is refused; tabs and line breaks are fine.

    --sensitivity secret seals: the key's plaintext versions go into the vault
    first, and TEXT is encrypted before it reaches the disk (no passphrase
    needed). Pass a secret as `-` so it stays out of the shell's history.
    """
    mem = open_memory()
    if sensitivity == "secret" and text != "-":
        echo(
            "note: the secret was on the command line, where other processes (ps, /proc) and your shell's history "
            "can read it; next time pipe it in: `bead write KEY - --sensitivity secret`",
            err=True,
        )
    if text == "-":
        if sys.stdin is None:
            from ..errors import BeadError

            raise BeadError("TEXT is - but there is no standard input to read it from", "pipe the value in, or give it")
        # Read one character past the limit at most: the store's check then names the limit.
        text = sys.stdin.read(mem.config.store.max_fact_bytes + 1)
        text = text.removeprefix("\ufeff")  # a file saved with a byte-order mark: not part of the value
    _refuse_control(key, text)
    if sensitivity != "secret":
        _refuse_hidden(key, text)
    from ..core.seal import write_fact

    result = write_fact(mem, key, text, type_, trust=trust, sensitivity=sensitivity, pinned=pin, title=title)
    superseded = result.superseded.id if result.superseded else (result.fact.supersedes if result.sealed else None)
    data = {
        "id": result.fact.id,
        "written": result.written,
        "superseded": superseded,
        "path": str(result.fact.path),
        "indexed": result.indexed,
        "sealed": result.sealed,
        "skill_files": list(result.skill_files),
        "skill_files_left": list(result.skill_files_left),
        **({"also_in": list(result.also_in), "raw_files_unread": list(result.raw_files_unread)} if result.sealed else {}),
    }
    common.also_in_clear(list(result.also_in))  # as `bead seal` says it: another fact quotes the secret in clear
    for path in result.raw_files_unread:  # as `bead forget` says it (a review: a secret write said nothing)
        common.raw_file_unread(path)
    if result.lookalikes:
        data["lookalikes"] = list(result.lookalikes)
        echo(
            f"note: {', '.join(result.lookalikes)} reads like {result.fact.key} and only an agent or the dream "
            f"wrote it; if it is not yours, `bead forget {result.lookalikes[0]}`",
            err=True,
        )
    if result.undone:
        data["undone"] = result.undone
        echo(f"warning: the value is written, but {result.undone}; `bead status` says what to mend", err=True)
    if not result.indexed:
        echo(INDEX_LATER, err=True)
    if result.redacted:
        echo(f"note: redacted {result.redacted} raw turn(s) that held the secret, as forget does", err=True)
    common.skill_files_said(
        {
            "skill_files": result.skill_files,
            "skill_files_left": result.skill_files_left,
            "skill_files_unread": result.skill_files_unread,
        }
    )

    def human(d):
        if d["written"]:
            extra = f" (supersedes {d['superseded']})" if d["superseded"] else ""
            where = " to the vault, encrypted" if d["sealed"] else ""
            echo(f"wrote {d['id']}{where}{extra}")
        else:
            echo(f"unchanged: {d['id']} already holds that value")

    emit(data, as_json, human)


def _refuse_control(key: str, text: str) -> None:
    """Refuse a value holding a control character (a NUL, a terminal escape), as remember, the review queue and
    the MCP tools do: nothing is written. Tabs and line breaks are fine."""
    from ..display import CONTROL, visible
    from ..errors import InvalidArgument

    found = CONTROL.search(text)
    if found:
        raise InvalidArgument(
            f"refusing to write {key}: the value holds control characters (a NUL, a terminal "
            f"escape: {visible(found.group())} at character {found.start() + 1}); nothing was written",
            "write plain text: tabs and line breaks are fine",
        )


def _refuse_hidden(key: str, text: str) -> None:
    """Refuse a value holding characters the person does not see but a model reads (tag characters spelling words,
    a bidi override, a zero-width space: text pasted from a page carries them unseen), as an accept from the review
    queue does: as the person's word it would reach every conversation's pinned block."""
    from ..errors import InvalidArgument
    from ..textform import hidden

    undecoded = [c for c in text if "\udc80" <= c <= "\udcff"]
    if undecoded:
        # A byte the terminal's or the file's text was not UTF-8 for (Python reads it as a lone surrogate): said as
        # such, where "invisible characters (U+DCE9)" sent the person looking for a character they never typed.
        raise InvalidArgument(
            f"refusing to write {key}: the value is not UTF-8 text (byte 0x{ord(undecoded[0]) - 0xDC00:02x}); "
            "nothing was written",
            "save or type it as UTF-8 (`iconv -f latin1 -t utf-8` converts a Latin-1 file)",
        )
    unseen = hidden(text)
    if unseen:
        raise InvalidArgument(
            f"refusing to write {key}: the value holds invisible or reordering characters ({', '.join(unseen[:5])}); "
            "nothing was written",
            "write the text you see (retype it, or paste it through a plain-text editor)",
        )


def _refuse_sealed(mem, key: str) -> None:
    from ..errors import BeadError

    if mem.is_sealed(key):
        raise BeadError(f"{key} is sealed in the vault", f"`bead sealed show {key}` asks for the passphrase and prints it")


def _print_problems(problems) -> None:
    for p in problems:
        echo(f"warning: skipped {p.path}: {p.reason}", err=True)


@click.command()
@click.argument("key")
@click.option("--all", "all_versions", is_flag=True, help="Every version, oldest first.")
@click.option("--project", help="The project a bare KEY is of (default: the working directory's).")
@json_option
def show(key, all_versions, project, as_json):
    """Print the current value of KEY (KEY@vN: that version).

    KEY may be a bare name, as a pointer in the cue block writes a fact of the conversation's project: that
    project's fact of the name (the working directory's project, or --project); the key it stands for goes
    to stderr. Reading the current value counts as a use of the fact (audit.log `open`), as the agent's
    get_memory does: the pinned block favours facts in use.
    """
    import os

    from ..conversation import project_from_cwd
    from ..core.query import resolve_key, unreadable
    from ..errors import BeadError
    from ..store.keys import parse_id

    mem = open_memory()
    parsed = parse_id(key)
    version = None
    if parsed is not None:  # KEY@vN, as forget, pin and the audit log write a version: that version
        key, version = parsed
        all_versions = False
    given = key
    if "/" not in key:
        try:
            here = common.project_name(project) if project else project_from_cwd(os.getcwd())
        except OSError:  # a working directory deleted under the shell
            here = None
        key = resolve_key(mem, key, here)
        if key != given and not as_json:
            echo(key, err=True)
    kv = mem.versions(key)
    _print_problems(kv.problems)
    if not kv.facts:
        _refuse_sealed(mem, key)
        if kv.numbers:
            raise unreadable(kv)
        raise BeadError(f"no fact under {key}", "list keys with `bead list` or write one with `bead write`")
    if version is not None:
        facts = [f for f in kv.facts if f.version == version]
        if not facts:
            numbers = ", ".join(f"v{f.version}" for f in kv.facts)
            raise BeadError(f"{key} has no version v{version} (it has {numbers})", f"run `bead history {key}` to list them")
    elif all_versions:
        facts = list(kv.facts)
    elif kv.served is None:
        raise unreadable(kv)
    else:
        facts = [kv.served]
    data = [f.as_dict() | {"current": f is kv.served} for f in facts]
    if version is None and not all_versions and kv.served is not None:
        mem.note_use([kv.served.key], "open")

    def human(rows):
        for r in rows:
            if all_versions:
                mark = "current" if r["current"] else r["status"]
                echo(f"== {r['id']} [{mark}] {r['valid_from']} {r['trust']}")
                # Indented under its header, so no body (an agent's) can make a line that reads as one.
                echo("\n".join("    " + line for line in r["body"].split("\n")), multiline=True)
            else:
                echo(r["body"], multiline=True)

    emit(data if all_versions else data[0], as_json, human if all_versions else (lambda r: human([r])))


@click.command()
@click.argument("key")
@json_option
def history(key, as_json):
    """List every version of KEY in order, with status, trust and time."""
    from ..errors import BeadError
    from ..store.keys import parse_id

    mem = open_memory()
    parsed = parse_id(key)
    key = parsed[0] if parsed else key  # KEY@vN: the key's history, that version among them
    kv = mem.versions(key)
    _print_problems(kv.problems)
    if not kv.facts:
        _refuse_sealed(mem, key)
        raise BeadError(f"no fact under {key}", "list the keys with `bead list`")
    rows = [
        {
            "id": f.id,
            "version": f.version,
            "current": f is kv.served,
            "status": f.status,
            "valid_from": f.valid_from,
            "trust": f.trust,
            "type": f.type,
            "body": f.body,
        }
        for f in kv.facts
    ]

    def human(rs):
        from ..display import one_line

        for r in rs:
            mark = "*" if r["current"] else " "
            echo(f"{mark} v{r['version']:<3} {r['valid_from']}  {r['trust']:<14} {one_line(r['body'], 80)}")

    emit(rows, as_json, human)


@click.command("list")
@click.argument("prefix", required=False, default="")
@click.option("--type", "type_", type=click.Choice(["user", "feedback", "project", "reference"]), help="Only this type.")
@click.option(
    "--trust", type=click.Choice(["user_stated", "accepted", "agent_observed", "dream_inferred"]), help="Only this trust."
)
@json_option
def list_(prefix, type_, trust, as_json):
    """List the keys memory holds (under PREFIX, e.g. `project/shop` or `user/`), each with its current version,
    type, trust and whether it is pinned; sealed keys show as sealed, never their value."""
    from ..core.query import list_keys

    items = list_keys(open_memory(), prefix, type_, trust)

    def human(rows):
        if not rows:
            echo(f"no keys{' under ' + prefix if prefix else ''}{' of that type or trust' if type_ or trust else ''}")
        for r in rows:
            if r["status"] == "sealed":
                echo(f"  {r['key']}  sealed ({r['versions']} version(s))")
                continue
            if r["status"] == "unreadable":
                echo(f"  {r['id']:<48} unreadable: no value served (`bead show {r['key']}` says why)")
                continue
            pin = " pinned" if r["pinned"] else ""
            state = "" if r["status"] == "current" else f" {r['status']}"
            echo(f"  {r['id']:<48} {r['type']:<9} {r['trust']:<14}{pin}{state}".rstrip())

    emit([i.as_dict() for i in items], as_json, human)


COMMANDS = [write, show, history, list_]
