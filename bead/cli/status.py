"""bead status."""

from __future__ import annotations

import click

from .common import emit, json_option, open_memory


def collect(mem) -> dict:
    """Counts, index freshness and problems, each with the command that fixes it."""
    from ..index import sqlite
    from ..index.rebuild import diff
    from ..errors import BeadError

    problems: list[dict] = []
    kvs, file_problems = mem.facts.scan()
    for p in file_problems:
        problems.append({"problem": f"{p.path}: {p.reason}", "fix": "edit the file so it parses (bead skips it until then)"})
    turns = sessions = 0
    for path in mem.raw.files():
        sessions += 1
        turns += len(mem.raw.read(path))
    data = {
        "home": str(mem.home.root),
        "owner": mem.config.owner,
        "sqlite": None,
        "facts": {"keys": sum(1 for kv in kvs if kv.facts), "versions": sum(len(kv.facts) for kv in kvs),
                  "dormant": sum(1 for kv in kvs if kv.current and kv.current.status == "dormant")},
        "raw": {"sessions": sessions, "turns": turns},
        "tombstones": mem.tombstones.count(),
        "index": None,
        "problems": problems,
    }
    try:
        data["sqlite"] = sqlite.check()
        idx = mem.index
        d = diff(idx, mem.facts, mem.raw)
        data["index"] = {"path": str(mem.home.index_db), **idx.counts(), "stale_files": d.as_dict(), "fresh": d.clean}
        if not d.clean:
            problems.append({"problem": f"the index is behind the files ({d.as_dict()})", "fix": "run `bead reindex`"})
    except BeadError as exc:
        problems.append({"problem": exc.message, "fix": exc.hint})
    data["proxy"] = proxy_health(mem.config.get("proxy.listen"))
    if data["proxy"].get("errors"):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(data["proxy"]["error_kinds"].items()))
        problems.append({"problem": f"the proxy failed open {data['proxy']['errors']} time(s) ({kinds}); "
                                    "requests went out without memory",
                         "fix": "see the proxy's log (its stderr) for the kinds above; `bead reindex` if the index is the cause"})
    mode = mem.home.root.stat().st_mode & 0o777
    if mode & 0o077:
        problems.append({"problem": f"the home {mem.home.root} is readable by others (mode {mode:o})",
                         "fix": f"run `chmod 700 {mem.home.root}`"})
    for d in (mem.home.root, *mem.home.root.parents):
        if (d / ".git").exists():
            problems.append({"problem": f"the home is inside a git repository ({d}); forget refuses to run there",
                             "fix": "move the home out of the repository and set BEAD_HOME"})
            break
    return data


def proxy_health(listen: str) -> dict:
    """The running proxy's /bead/health, or {"running": False}."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{listen}/bead/health", timeout=1) as r:
            return {"running": True, "address": listen, **json.loads(r.read())}
    except (OSError, ValueError):
        return {"running": False, "address": listen}


@click.command()
@json_option
def status(as_json):
    """Show counts, index freshness and problems found."""
    mem = open_memory()
    data = collect(mem)

    def human(d):
        click.echo(f"home        {d['home']} (owner {d['owner']}, SQLite {d['sqlite']})")
        f = d["facts"]
        click.echo(f"facts       {f['keys']} keys, {f['versions']} versions, {f['dormant']} dormant")
        click.echo(f"raw         {d['raw']['turns']} turns in {d['raw']['sessions']} sessions")
        click.echo(f"tombstones  {d['tombstones']}")
        if d["index"]:
            i = d["index"]
            state = "fresh" if i["fresh"] else "behind the files"
            click.echo(f"index       {i['current_facts']} current facts, {i['raw_turns']} raw turns ({state})")
        p = d["proxy"]
        if p["running"]:
            click.echo(f"proxy       running at http://{p['address']} for {p['uptime_s']:.0f} s: "
                       f"{p['requests']} requests, {p['injections']} with memory, {p['errors']} failed open")
        else:
            click.echo(f"proxy       not running at {p['address']} (start it with `bead proxy`)")
        if d["problems"]:
            click.echo("problems")
            for p in d["problems"]:
                click.echo(f"  - {p['problem']}\n    fix: {p['fix']}")
        else:
            click.echo("problems    none")

    emit(data, as_json, human)


COMMANDS = [status]
