"""bead status."""

from __future__ import annotations

import click

from .common import echo, emit, json_option, open_memory


@click.command()
@click.option(
    "--fix", is_flag=True, help="Remove temp files that killed writers left behind; give hard-linked files copies of their own."
)
@click.option(
    "--wait",
    type=click.FloatRange(0, 300),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="While the proxy's service is up but the proxy does not answer yet (just installed or restarted), wait "
    "this long for it before reporting.",
)
@json_option
def status(fix, wait, as_json):
    """Show counts, index freshness and problems found (links, leftovers, a stale index)."""
    from ..core.health import collect, unshare_home, wait_for_proxy
    from ..paths import resolve_home

    unshared: tuple[list[str], list[dict]] = ([], [])
    if fix:
        # Before the home is opened: its config and token may be hard links too (a `cp -al` backup).
        home = resolve_home()
        home.refuse_foreign()  # before a copy of a hard-linked file in a folder that is no bead home
        unshared = unshare_home(home)
    mem = open_memory()
    if wait:
        wait_for_proxy(mem, wait)
    data = collect(mem, fix=fix)
    data["fixed"] = unshared[0] + data["fixed"]
    # What could not be copied is listed again by collect, with the general fix; its own reason replaces that.
    reasons = {p["problem"]: p for p in unshared[1]}
    data["problems"] = [reasons.get(p["problem"], p) for p in data["problems"]]

    def human(d):
        for line in d["fixed"]:
            echo(f"fixed       {line}")
        echo(f"home        {d['home']} (owner {d['owner']}, SQLite {d['sqlite']})")
        f = d["facts"]
        echo(f"facts       {f['keys']} keys, {f['versions']} versions, {f['dormant']} dormant")
        turns = "?" if d["raw"]["turns"] is None else d["raw"]["turns"]
        echo(f"raw         {turns} turns in {d['raw']['sessions']} sessions")
        echo(f"tombstones  {d['tombstones']}")
        v = d["vault"]
        if v["kind"] == "none":
            echo("vault       none (`bead vault init` creates it; secrets are refused until then)")
        else:
            echo(f"vault       {v['label']}, {v['sealed_keys']} sealed key(s) ({v['sealed_versions']} versions)")
        if d["index"]:
            i = d["index"]
            state = "fresh" if i["fresh"] else "behind the files"
            echo(f"index       {i['current_facts']} current facts, {i['raw_turns']} raw turns ({state})")
        sem = d.get("semantic")
        if sem and sem["state"] == "on":
            left = sem["turns"] - sem["vectors"]
            more = f"; the indexer computes the other {left} in the background" if left > 0 else ""
            echo(f"semantic    on ({sem['model']}): {sem['vectors']} of {sem['turns']} raw turns have a vector{more}")
        elif sem:
            echo(f"semantic    {sem['state']} ({sem['hint']})")
        for name, st in d["services"].items():
            echo(f"{'service':<12}{name}: {st.get('summary') or st['state']}")
        if d["last_dream"] and d["last_dream"]["last_run"]:
            echo(f"last dream  {d['last_dream']['last_run']} (report {d['last_dream']['report']})")
        elif d["last_dream"]:  # a run that did nothing (no model set) wrote its report and no time of a run
            echo(f"last dream  none that groomed the store (report {d['last_dream']['report']})")
        else:
            echo("last dream  never (`bead dream run`, or the dream worker at dream.schedule)")
        echo(f"review      {d['review_queue']} item(s) waiting (`bead queue`)")
        p = d["proxy"]
        if p["running"]:
            inst = d["installed"]
            code = f"bead {p.get('version') or '?'}" + (f", build {p['build']}" if p.get("build") else "")
            same = p.get("build") == inst["build"]
            code += " (the installed code)" if same else f" (installed: bead {inst['version']}, build {inst['build']})"
            n = int(p.get("workers") or 1)
            procs = f" in {n} worker processes" if n > 1 else ""
            echo(
                f"proxy       running at http://{p['address']}{procs} for {p['uptime_s']:.0f} s, {code}: "
                f"{p['requests']} requests, {p.get('with_memory', 0)} with memory (pinned or recalled), "
                f"{p['errors']} failed open, {p.get('not_owner', 0)} not yours (no memory, not captured)"
            )
        elif p.get("other_home"):
            echo(f"proxy       {p['address']} is another home's proxy ({p['other_home']})")
        elif p.get("impostor"):
            echo(f"proxy       {p['address']} is held by something that is not this home's proxy (see problems)")
        else:
            echo(f"proxy       not answering at {p['address']} ({p['hint']})")
        if d["problems"]:
            echo("problems")
            for p in d["problems"]:
                echo(f"  - {p['problem']}")
                echo(f"    fix: {p['fix']}")
        else:
            echo("problems    none")

    emit(data, as_json, human)


COMMANDS = [status]
