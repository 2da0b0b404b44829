"""The health of a home, one model for `bead status` and the dashboard.

What the store holds (counts, the index's freshness against the files, the vault), what runs (each service as the
platform's service manager sees it, the proxy's own health endpoint), and the problems found, each with the
command that fixes it. `bead status` prints it; the dashboard shows its problems beside its counts.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .. import __version__
from .. import files as safe
from ..config import SCHEDULE_FIX, schedule_problem
from ..errors import BeadError
from ..index import semantic, sqlite
from ..index.db import index_files as index_files_of
from ..index.rebuild import diff
from ..paths import Home, enclosing_git
from ..ports import CHECK_S, HEALTH_MAX_BYTES, client_address, held_by_own_service_manager, host_port, listener, proven_within
from ..store.audit import key_hash
from ..store.facts import HARD_LINK_REASON, LINK_REASON, STATE_NOT_A_FILE, UNREADABLE_FOLDER
from ..store.locks import flocked
from ..store.queue import Queue
from ..store.reports import DreamState, Reports
from ..token import load_token
from ..vault import keys as vault_keys
from ..version import build_id
from . import seal as seal_ops
from .memory import Memory

UNSHARE_MAX_BYTES = 256 * 1024 * 1024  # larger files are reported, not copied (a copy is the person's call)


def _hard_link_problem(path: Path) -> dict[str, str]:
    return {
        "problem": f"{path} is a hard link, another name of a file that may live outside the home (a `cp -al` backup "
        "makes every file one): bead neither reads nor writes it",
        "fix": "stop bead's services, then run `bead status --fix`: it gives each such file a copy of its own (the "
        "other name keeps the old bytes) and removes the index's (derived, built again)",
    }


def unshare_home(home: Home) -> tuple[list[str], list[dict[str, str]]]:
    """`bead status --fix`, before anything of the home is read (its config and token may be hard links too): give
    every hard-linked file below the home a copy of its own, remove the index's files if any is one (the index is
    derived and built again), and report what could not be done. What it did, and the problems left."""
    fixed: list[str] = []
    problems: list[dict[str, str]] = []
    linked = safe.hard_links(home.root, root=home.root)
    if not linked:
        return fixed, problems
    index_files = index_files_of(home.index_db)
    if any(p in index_files for p in linked):
        for p in index_files:  # all of them: a WAL or journal beside a database it is not of would be replayed into it
            if safe.unlink(p, root=home.root):
                fixed.append(f"removed {p} (the index is built again from the files)")
    rest = [p for p in linked if p not in index_files]

    def unshare(p: Path) -> None:
        try:
            if os.lstat(p).st_size > UNSHARE_MAX_BYTES:
                problems.append({**_hard_link_problem(p), "fix": f"copy it yourself: cp -p {p} {p}.own && mv {p}.own {p}"})
            elif safe.unshare(p, root=home.root):
                fixed.append(f"gave {p} a copy of its own (it was a hard link)")
        except (OSError, BeadError) as exc:
            problems.append({**_hard_link_problem(p), "fix": f"could not copy it ({exc}); copy it yourself, or remove it"})

    # Lock files first (empty; the store's lock is one), then the rest under the store's lock.
    for p in rest:
        if p.name.endswith(".lock"):
            unshare(p)
    # A raw file's under the raw log's lock as well, which every maker of a temp file in its folder holds (removal
    # of killed writers' temps there takes it: Memory.remove_orphan_temps). One lock at a time, as everywhere.
    raw = [p for p in rest if not p.name.endswith(".lock") and p.is_relative_to(home.raw)]
    with flocked(home.store_lock, root=home.root):
        for p in rest:
            if not p.name.endswith(".lock") and p not in raw:
                unshare(p)
    if raw:
        with flocked(home.raw_lock, root=home.root):
            for p in raw:
                unshare(p)
    return fixed, problems


def collect(mem: Memory, fix: bool = False) -> dict[str, Any]:
    """Counts, index freshness, the services and the proxy, and the problems found, each with the command that fixes
    it (``fix``: remove orphaned temp files; hard-linked files are ``unshare_home``'s, before the home is opened)."""
    problems: list[dict] = []
    fixed: list[str] = []
    kvs, file_problems = mem.facts.scan()
    withheld = {kv.unreadable.path: kv for kv in kvs if kv.unreadable is not None}
    for p in file_problems:
        kv = withheld.get(p.path)
        if kv is None:
            if p.reason == STATE_NOT_A_FILE:
                problems.append({"problem": f"{p.path}: {p.reason}", "fix": f"remove it: rm -r {shlex.quote(str(p.path))}"})
            elif p.reason == UNREADABLE_FOLDER:
                quoted = shlex.quote(str(p.path))
                problems.append({"problem": f"{p.path}: {p.reason}", "fix": f"chmod u+rwx {quoted}, then `bead reindex`"})
            elif p.reason not in (LINK_REASON, HARD_LINK_REASON):  # links are listed once, below
                problems.append(
                    {"problem": f"{p.path}: {p.reason}", "fix": "edit the file so it parses (bead skips it until then)"}
                )
        else:  # the key's newest version: no version of it is served meanwhile
            problems.append(
                {
                    "problem": f"{p.path}: {p.reason}; it is {kv.key}'s newest version, so no value of {kv.key} is "
                    "served (the one below it was replaced)",
                    "fix": f"edit the file so it parses, or write the value again (`bead write {kv.key} ...`)",
                }
            )
    for link in mem.links():
        problems.append(_link_problem(link))
    for hl in safe.hard_links(mem.home.root, root=mem.home.root):
        problems.append(_hard_link_problem(hl))
    for odd in mem.raw.odd_names():
        problems.append(
            {
                "problem": f"{odd}: its name is not UTF-8 (bead never names a file so): it is not indexed, searched or "
                "forgotten in",
                "fix": f"remove {odd}, or rename it to a UTF-8 name ending in .md",
            }
        )
    bad_schedule = schedule_problem(mem.config.dream.schedule, mem.clock())
    if bad_schedule is not None:  # the dream worker will not start on it
        problems.append({"problem": bad_schedule, "fix": SCHEDULE_FIX})
    for log_path in (mem.home.audit_log, mem.home.tombstones_log):
        try:
            kind = os.lstat(log_path).st_mode
        except OSError:
            continue  # none yet: the first write makes it
        if not stat.S_ISREG(kind) and not stat.S_ISLNK(kind):  # a link is listed above
            problems.append(
                {
                    "problem": f"{log_path} is not a regular file (a FIFO, a socket or a folder): every write refuses it",
                    "fix": f"remove {log_path}; bead makes it again at the next write",
                }
            )
    if fix:
        fixed += [f"removed {t} (a temp file a killed writer left)" for t in mem.remove_orphan_temps()]
    for temp in mem.orphan_temps():
        problems.append(
            {
                "problem": f"{temp} is a temp file a killed writer left (it may hold a value)",
                "fix": "run `bead status --fix` (or `bead reindex`) to remove it",
            }
        )
    # Sessions are files; turns are counted by the index (reading every raw
    # file would take seconds on a large store). A stale index is reported below.
    sessions = sum(1 for _ in mem.raw.files())
    turns = None
    data: dict[str, Any] = {
        "home": str(mem.home.root),
        "owner": mem.config.owner,
        "sqlite": None,
        "facts": {
            "keys": sum(1 for kv in kvs if kv.facts),
            "versions": sum(len(kv.facts) for kv in kvs),
            "dormant": sum(1 for kv in kvs if kv.current and kv.current.status == "dormant"),
        },
        "raw": {"sessions": sessions, "turns": turns},
        "tombstones": mem.tombstones.count(),
        "vault": vault_state(mem, {kv.key for kv in kvs if kv.numbers}, problems),
        "index": None,
        "semantic": None,
        "problems": problems,
        "fixed": fixed,
    }
    try:
        data["sqlite"] = sqlite.check()
        idx = mem.index
        d = diff(idx, mem.facts, mem.raw)
        data["index"] = {"path": str(mem.home.index_db), **idx.counts(), "stale_files": d.as_dict(), "fresh": d.clean}
        data["raw"]["turns"] = data["index"]["raw_turns"]
        data["semantic"] = semantic_state(mem)
        # A forget or seal running now owes its checkpoint until it ends: not a problem yet, and not for --fix to
        # clear (its flag would go, and a kill after that would leave the value with nothing to say so).
        # Only a forget's or a seal's owed checkpoint: a merge owed after an ordinary re-index of a raw file (an import,
        # the proxy's appends) deleted no text that is not still in its file, and was reported as a stopped forget.
        if idx.owes_checkpoint() and not mem.raw.forget_running():
            if fix:
                # Asked again inside the lock that clears the flag: a forget that began meanwhile keeps its own.
                idx.checkpoint(keep_owed=mem.raw.forget_running)
                fixed.append("cleared deleted text out of index.db (a forget or a seal had stopped before it did)")
            else:
                problems.append(
                    {
                        "problem": "index.db may still hold text a forget or a seal deleted (it stopped before it "
                        "cleared it away)",
                        "fix": "run `bead status --fix` (or `bead reindex`)",
                    }
                )
        if not d.clean:
            problems.append(
                {
                    "problem": f"the index is behind the files ({d.as_dict()})",
                    "fix": "run `bead reindex`; the indexer (a service, or under `bead up`) keeps it in step while it runs",
                }
            )
    except BeadError as exc:
        problems.append({"problem": exc.message, "fix": exc.hint})
    data["proxy"] = proxy_health(mem.config.proxy.listen, load_token(mem.home))
    if data["proxy"].get("impostor"):
        dial = host_port(mem.config.proxy.listen)
        holder = listener(dial[1]) if dial else None
        problems.append(
            {
                "problem": f"something that is not this home's proxy answers at {data['proxy']['address']}"
                + (f" ({holder})" if holder else "")
                + ": it could not prove it holds this home's token, so bead sent it nothing, and the claude wrapper "
                "runs claude without it",
                "fix": "stop what listens there (another home's proxy, or another user's program), or give this "
                "home's proxy another port (`proxy.listen` in config.yaml, then `bead setup`)",
            }
        )
    if data["proxy"]["running"] and data["proxy"].get("home") != str(mem.home.root):
        # Another home's proxy answers on this address: its figures are not ours.
        data["proxy"] = {"running": False, "address": data["proxy"]["address"], "other_home": data["proxy"].get("home")}
        problems.append(
            {
                "problem": f"the proxy at {data['proxy']['address']} serves another home "
                f"({data['proxy']['other_home']}), not {mem.home.root}",
                "fix": "run this home's proxy on another port (`proxy.listen` in its config.yaml), "
                "or unset BEAD_HOME to look at the other home",
            }
        )
    data["installed"] = {"version": __version__, "build": build_id()}
    running = data["proxy"]
    # A proxy from before builds were reported (none in its health) is other code if its version differs, or if it
    # reports no version at all.
    stale = running.get("running") and (
        running.get("build") != build_id() if running.get("build") else running.get("version") != __version__
    )
    data["services"] = services_state(mem.home)
    if stale:
        was = f"bead {running.get('version') or '?'}" + (f", build {running['build']}" if running.get("build") else "")
        managed = data["services"].get("proxy", {}).get("state") not in (None, "not installed", "not loaded", "unknown")
        under_up = data["services"].get("proxy", {}).get("state") == "running under bead up"
        problems.append(
            {
                "problem": f"the proxy runs other code than the bead installed here ({was}; installed bead "
                f"{__version__}, build {build_id()}): it was not restarted after an upgrade",
                "fix": "stop `bead up` (Ctrl-C) and start it again"
                if under_up
                else f"`{restart_fix('proxy')}` (and the indexer and the dream worker the same way)"
                if managed
                else "stop the proxy you started (`bead proxy` or `bead up`) and start it again",
            }
        )
    if not data["proxy"]["running"] and not data["proxy"].get("other_home"):
        data["proxy"]["hint"] = proxy_hint(data["services"].get("proxy") or {}, bool(data["proxy"].get("held_by_systemd")))
    for name, st in data["services"].items():
        if st.get("state") != "failed" and not st.get("restarting"):
            continue
        cause = ""
        if name == "proxy":
            port = mem.config.proxy.listen.rpartition(":")[2]
            holder = listener(int(port)) if port.isdigit() else None
            if holder and not held_by_own_service_manager(int(port)):  # systemd's own hold is bead-proxy.socket's
                cause = f"; port {port} is held by {holder}, so the proxy cannot start"
        what = st.get("problem") or (f"keeps restarting ({st['restarting']})" if st.get("restarting") else "has failed")
        problems.append(
            {
                "problem": f"the {name} service {what}{cause}",
                "fix": f"see why in `bead logs {name}` (a busy port or a config error is the usual cause); once it is "
                f"fixed, `{restart_fix(name)}`",
            }
        )
    try:
        data["last_dream"] = last_dream(mem)
        data["review_queue"] = Queue(mem).open_count()
    except BeadError as exc:
        data["last_dream"], data["review_queue"] = None, 0
        problems.append({"problem": exc.message, "fix": exc.hint})
    if data["proxy"].get("errors"):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(data["proxy"]["error_kinds"].items()))
        problems.append(
            {
                "problem": f"the proxy failed open {data['proxy']['errors']} time(s) ({kinds}); requests went out without memory",
                "fix": "see the proxy's log (its stderr) for the kinds above; `bead reindex` if the index is the cause",
            }
        )
    mode = mem.home.root.stat().st_mode & 0o777
    if mode & 0o077:
        problems.append(
            {
                "problem": f"the home {mem.home.root} is readable by others (mode {mode:o})",
                "fix": f"run `chmod 700 {shlex.quote(str(mem.home.root))}`",
            }
        )
    repo = enclosing_git(mem.home.root)
    if repo is not None:
        problems.append(
            {
                "problem": f"the home is inside a git repository ({repo}); forget refuses to run there",
                "fix": "move the home out of the repository and set BEAD_HOME",
            }
        )
    return data


def semantic_state(mem: Memory) -> dict[str, Any]:
    """bead[semantic]: on or off and why, and how many raw turns have their vector so far."""
    if not semantic.installed():
        return {"state": "not installed", "hint": "pip install 'bead[semantic]' lets the raw search weigh meaning too"}
    if semantic.switched_off():
        return {"state": "off", "hint": "BEAD_SEMANTIC=0 in this environment"}
    if not mem.config.recall.semantic:
        return {"state": "off", "hint": "recall.semantic is false in config.yaml"}
    turns, vectors = mem.index.counts()["raw_turns"], mem.index.vector_count()
    # Turns wait for their vector: whether the model loads at all here says whether the indexer can give them one.
    if vectors < turns and semantic.model() is None:
        return {"state": "failed", "hint": semantic.failure() or "the embedding model did not load; search uses BM25 alone"}
    return {"state": "on", "model": semantic.MODEL_ID, "vectors": vectors, "turns": turns}


def _secret_writes_stopped(mem: Memory, keys: set[str]) -> set[str]:
    """The keys of ``keys`` whose last line in the audit log is a sealed write: a `bead write --sensitivity secret`
    stopped after its encrypted copies, before its seal's scrub was recorded (an unseal stopped half-way leaves the
    same files, fewer plaintext versions than sealed ones, and is finished otherwise; a review). One read of the
    log."""
    if not keys:
        return set()
    by_hash = {key_hash(k): k for k in keys}
    last: dict[str, tuple[int, dict]] = {}
    anonymous = -1  # the last seal line that names no key: how a finished one was written before it named its key
    for i, e in enumerate(mem.audit.entries()):
        if not isinstance(e, dict):
            continue
        named = e.get("keys")
        if e.get("event") == "seal" and named == [] and "key" not in e:
            anonymous = i
        for k in [e.get("key"), *(named if isinstance(named, list) else [])]:
            if isinstance(k, str) and (k in keys or k in by_hash):
                last[by_hash.get(k, k)] = (i, e)
    return {k for k, (i, e) in last.items() if e.get("event") == "write" and e.get("sealed") is True and anonymous < i}


def vault_state(mem: Memory, plaintext_keys: set[str], problems: list[dict]) -> dict:
    """The vault's kind and sealed key count; its problems, and keys caught both sealed and plaintext."""
    vi = vault_keys.info(mem.home)
    counts = mem.sealed.counts()
    problems += [{"problem": p, "fix": f} for p, f in vi.problems]
    odd: list[str] = []  # sealed folders whose name is no key, which keys() leaves out
    list(mem.sealed.keys(odd=odd))
    problems += [
        {
            "problem": f"vault/sealed/{name} holds sealed files but its name is no key bead writes; bead leaves it out",
            "fix": f"move vault/sealed/{name} out of the home, or rename it to a key (lower case, `scope/name`)",
        }
        for name in odd
    ]
    sealed_only = set(counts) - plaintext_keys
    moves = seal_ops.stopped_moves(mem, sealed_only) if sealed_only else {}
    by_hash = {key_hash(k): k for k in plaintext_keys} if moves else {}
    for into, (from_hash, _at) in sorted(moves.items()):
        if from_hash in by_hash:  # the key it was moving is still plaintext: the seal stopped before it went
            key = by_hash[from_hash]
            problems.append(
                {
                    "problem": f"`bead seal {key} --as {into}` was interrupted: {key} is still plaintext, and "
                    f"{into} holds some or all of its sealed copies",
                    "fix": f"run `bead seal {key} --as {into}` again: it takes those copies back and seals the key again",
                }
            )
    stopped = _secret_writes_stopped(mem, set(counts))
    for key in sorted(sealed_only & stopped):
        # A secret write stopped after its copy, to a key with no plaintext (a new key, or one sealed already): the
        # vault is as it should be, but the turns that said the value may still say it in clear.
        problems.append(
            {
                "problem": f"a `bead write {key} --sensitivity secret` was interrupted before it took the value out of "
                "the turns that say it",
                "fix": f"run that `bead write {key} - --sensitivity secret` again with the same value: it takes that "
                "value out of the turns (the value is written once more, as a version of its own)",
            }
        )
    for key in sorted(plaintext_keys & set(counts)):
        if key in stopped:
            # A secret write stopped after its encrypted copies: its new value is in the vault alone, so a seal of
            # the plaintext versions would not look for it in the turns that still say it (an adversarial pass).
            problems.append(
                {
                    "problem": f"{key} is both sealed and plaintext, and its newest version is sealed only (a "
                    "`bead write --sensitivity secret` was interrupted)",
                    "fix": f"run that `bead write {key} - --sensitivity secret` again with the same value: it takes "
                    "that value out of the turns that say it and finishes sealing the key (the value is written once "
                    "more, as a version of its own)",
                }
            )
            continue
        problems.append(
            {
                "problem": f"{key} is both sealed and plaintext (a seal or unseal was interrupted)",
                "fix": f"run `bead seal {key}` again to finish sealing it (or `bead unseal {key}`)",
            }
        )
    return {
        "kind": vi.kind,
        "label": vi.label,
        "sealed_keys": len(counts),
        "sealed_versions": sum(counts.values()),
        "age_plugin_pq": vi.plugin,
    }


def _link_problem(link: Path) -> dict:
    """The problem of a symbolic link under the home, and its fix as commands a person may paste: each path quoted
    for the shell (a link's name or target may hold `$(...)` or `;`), and the move suggested only for a target in
    the person's own home folder (never `mv /etc ...`)."""
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    fix = f"remove the link (`rm {shlex.quote(str(link))}`)"
    whole = os.path.normpath(os.path.join(link.parent, target))
    mine = os.path.expanduser("~")
    if target != "?" and mine != "~" and os.path.commonpath([mine, whole]) == mine and whole != mine:
        fix += (
            " and, if what it points to belongs in bead, move it into its place "
            f"(`mv {shlex.quote(whole)} {shlex.quote(str(link))}`)"
        )
    return {
        "problem": f"{link} is a symbolic link (to {target}); bead never reads, writes or deletes through it, "
        "so what is behind it is invisible to search, reindex and forget",
        "fix": fix + "; then run `bead reindex`",
    }


RECENT_START_S = 60.0  # a service restarted by its manager that came up less than this long ago is in a loop


def up_services(home: Home) -> dict[str, int]:
    """The services `bead up` runs now (its ``home.up_file``), by name and pid; empty when it does not run."""
    try:
        data = json.loads(safe.read_text(home.up_file, root=home.root))
        pids = {str(k): int(v) for k, v in data["services"].items()}
        if int(data["pid"]) <= 0:
            return {}  # 0 and -1 name a process group or every process to kill(2): no pid bead up wrote
        os.kill(int(data["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError, safe.UnsafePath):
        return {}  # a pid past C's int (an outside attack: `bead status` crashed) is no process either
    alive = {}
    for name, pid in pids.items():
        try:
            if pid <= 0:
                continue
            os.kill(pid, 0)
        except (OSError, OverflowError):
            continue
        alive[name] = pid
    return alive


def services_state(home: Home | None = None) -> dict:
    """Each service as the platform's service manager sees it, with ``summary``: a sentence for `bead status`;
    a service the manager does not know that `bead up` runs for ``home`` says so."""
    out = _managed_state()
    for name, pid in (up_services(home) if home is not None else {}).items():
        if out.get(name, {}).get("state") in (None, "not installed", "not loaded", "unknown"):
            out[name] = {"state": "running under bead up", "pid": pid, "summary": f"running under `bead up` (pid {pid})"}
    return out


def _managed_state() -> dict:
    out: dict[str, dict[str, Any]] = {}
    for name in ("proxy", "indexer", "dream"):
        try:
            if sys.platform == "darwin":
                r = subprocess.run(
                    ["launchctl", "print", f"gui/{os.getuid()}/com.bead.{name}"], capture_output=True, text=True, timeout=5
                )
                if r.returncode != 0:
                    out[name] = {"state": "not loaded", "summary": "not loaded"}
                    continue
                fields = dict(line.strip().split(" = ", 1) for line in r.stdout.splitlines() if " = " in line)
                state = fields.get("state", "?")
                out[name] = {"state": state, "runs": fields.get("runs"), "pid": fields.get("pid"), "summary": state}
                runs, last = int(fields.get("runs") or 0), fields.get("last exit code", "0")
                if runs > 1 and last not in ("0", "(never exited)") and state != "running":
                    out[name]["restarting"] = f"{runs} runs, the last exited with code {last}"
                    out[name]["summary"] = f"restarting over and over: {runs} runs, the last exited with code {last}"
            elif shutil.which("systemctl"):
                r = subprocess.run(
                    [
                        "systemctl",
                        "--user",
                        "show",
                        f"bead-{name}.service",
                        "-p",
                        "ActiveState,SubState,ActiveEnterTimestamp,ActiveEnterTimestampMonotonic,NRestarts,LoadState,Result",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=5,
                )
                fields = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
                if r.returncode != 0 or fields.get("LoadState") in (None, "not-found"):
                    out[name] = {"state": "not installed", "summary": "not installed"}
                    continue
                out[name] = _systemd_state(fields)
            else:
                out[name] = {
                    "state": "unknown",
                    "summary": "unknown (no service manager here; `bead up` runs the services in the foreground)",
                }
        except (OSError, subprocess.TimeoutExpired, ValueError):
            out[name] = {"state": "unknown", "summary": "unknown"}
    return out


def _systemd_state(fields: dict[str, str]) -> dict[str, Any]:
    """A unit's state from `systemctl show`: a restart loop is one whatever the moment it is sampled at (waiting
    to start again, starting, failed, or up for a few seconds before it fails again)."""
    restarts = int(fields.get("NRestarts") or 0)
    active, sub = fields.get("ActiveState", "?"), fields.get("SubState", "")
    since = fields.get("ActiveEnterTimestamp") or None
    state = "starting" if active == "activating" and sub != "auto-restart" else active
    st: dict[str, Any] = {"state": state, "since": since, "restarts": restarts}
    # systemd's monotonic clock is CLOCK_MONOTONIC, Python's time.monotonic() (not /proc/uptime, which counts
    # suspend and, in a container, may be the container's).
    entered = fields.get("ActiveEnterTimestampMonotonic", "")
    up_for = time.monotonic() - int(entered) / 1e6 if entered.isdigit() and int(entered) else None
    looping = sub == "auto-restart" or (
        restarts > 0 and (active in ("activating", "failed") or (up_for is not None and up_for < RECENT_START_S))
    )
    times = f"{restarts} restart{'s' if restarts != 1 else ''}"
    # Failed, not waiting to start again (that is "activating"/"auto-restart"): systemd will not start it by itself.
    # After restarts that is the start limit whatever Result says (systemd 252 keeps "exit-code" there).
    if active == "failed" and (fields.get("Result") == "start-limit-hit" or restarts > 0):
        why = f"after {times}" if restarts else "it was started too often in a short time"
        st["restarting"] = f"{why}, systemd's start limit stopped it"
        st["summary"] = f"failed: {why}, systemd's start limit stopped it"
    elif looping and not restarts:
        # The first failure: systemd waits RestartSec before the first restart.
        st["restarting"] = "it failed to start; systemd starts it again in a few seconds"
        st["problem"] = "failed to start (systemd starts it again in a few seconds)"
        st["summary"] = "failed to start; systemd starts it again in a few seconds"
    elif looping:
        now = "waiting to start again" if sub == "auto-restart" else f"{state} for the moment"
        st["restarting"] = f"{times} so far, now {now}"
        st["summary"] = f"restarting over and over: {times} so far, now {now}"
    else:
        st["summary"] = (
            state
            + (f" since {since}" if since and state == "active" else "")
            + (f" ({restarts} restart{'s' if restarts != 1 else ''} since it was started)" if restarts else "")
        )
    return st


def proxy_hint(st: dict[str, Any], held_by_systemd: bool = False) -> str:
    """What to do about a proxy that does not answer, by what its service is doing: `bead proxy` only where no
    service runs it (under a failing service it would fail on the same port, under a starting one it races it)."""
    state = st.get("state")
    if held_by_systemd or state == "deactivating":
        return (
            "it is starting or restarting: systemd holds its port (bead-proxy.socket) and requests wait, for the "
            "streams in flight at most 300 s; `bead status --wait 300` waits for it"
        )
    if st.get("restarting") or state == "failed":
        return "its service is failing: see the problems below"
    if state in ("active", "starting", "running"):
        return "its service is up and the proxy listens within seconds; `bead status --wait 15` waits for it"
    if state == "running under bead up":
        return "`bead up` runs it and it listens within seconds; if not, see `bead up`'s output"
    if state == "inactive":
        return "start its service: `systemctl --user start bead-proxy`"
    if sys.platform == "darwin" and state not in (None, "not loaded", "unknown"):
        return f"start its service: `launchctl kickstart gui/{os.getuid()}/com.bead.proxy`"
    return "start it with `bead up`, which runs all three services, or `bead proxy` alone"


def trace_hint(home: Home) -> str:
    """Exactly how to have the services' proxy keep a trace (`bead why`, the dashboard's injections): the line for
    config.yaml, where it goes, and the restart that makes the running proxy read it."""
    line = f"trace: {home.root / 'trace.jsonl'}"
    try:
        lines = safe.read_text(home.config, root=home.root, limit=1024 * 1024).splitlines()  # never through a link
        has_proxy = any(raw.split("#", 1)[0].rstrip() == "proxy:" for raw in lines)  # `proxy:  # the proxy` too
    except (OSError, UnicodeDecodeError, safe.UnsafePath):
        has_proxy = False
    where = f"under its `proxy:` line add `  {line}`" if has_proxy else f"add the two lines `proxy:` and `  {line}`"
    st = services_state(home).get("proxy") or {}
    if st.get("state") == "running under bead up":
        restart = "stop `bead up` (Ctrl-C) and start it again"
    elif st.get("state") not in (None, "not installed", "not loaded", "unknown"):
        restart = f"restart the proxy: `{restart_fix('proxy')}`"
    else:
        restart = "then start the proxy (`bead up` or `bead proxy`)"
    return f"in {home.config}, {where}; {restart}. The trace is scrubbed by forget like every other file"


def restart_fix(name: str) -> str:
    """The command that brings a failed or looping service back once its cause is gone: systemd's plain restart
    fails after the start limit, so the failure is reset first."""
    if sys.platform == "darwin":
        return f"launchctl kickstart -k gui/{os.getuid()}/com.bead.{name}"
    return f"systemctl --user reset-failed bead-{name} && systemctl --user restart bead-{name}"


def last_dream(mem: Memory) -> dict | None:
    reports = Reports(mem.home).files()
    if not reports:
        return None
    return {"last_run": DreamState(mem.home.dream_state, mem.home.root).data.get("last_run"), "report": str(reports[-1])}


def wait_for_proxy(mem: Memory, seconds: float) -> None:
    """Wait, at most ``seconds``, while the proxy's service is up but the proxy does not answer yet (right after an
    install or a restart, a Type=simple service is "active" before it listens): `bead status --wait`."""
    deadline = time.monotonic() + seconds
    token = load_token(mem.home)
    while time.monotonic() < deadline and not proxy_health(mem.config.proxy.listen, token)["running"]:
        st = services_state(mem.home).get("proxy") or {}
        if st.get("restarting") or st.get("state") not in ("active", "starting", "running under bead up"):
            return
        time.sleep(0.2)


def proxy_health(listen: str, token: str | None = None) -> dict:
    """The running proxy's /bead/health (its details with this home's token), or {"running": False}. With a token,
    the listener must first be this home's proxy (bead.ports.proven_connection: the kernel's word on Linux, and a
    proof of the token everywhere), and the token goes over the connection that proof came on: another user's
    listener on the port (started first, or during a restart) gets {"running": False, "impostor": True} and
    never sees it. No environment proxy is used (http.client does not read http_proxy)."""
    dial = host_port(client_address(listen))
    if dial is None:
        return {"running": False, "address": listen}
    if token:
        conn = proven_within(listen, token, CHECK_S)
        if conn is None:
            try:  # something that cannot prove it, or nothing at all?
                socket.create_connection(dial, timeout=1).close()
            except OSError:
                return {"running": False, "address": listen}
            if held_by_own_service_manager(dial[1]):
                # bead-proxy.socket: systemd keeps the port while the proxy starts or restarts, and the kernel
                # queues the connection; not someone else's listener.
                return {"running": False, "address": listen, "held_by_systemd": True}
            return {"running": False, "address": listen, "impostor": True}
    else:
        conn = http.client.HTTPConnection(*dial, timeout=1)
    try:
        conn.request("GET", "/bead/health", headers={"X-Bead-Token": token} if token else {})
        r = conn.getresponse()
        raw = r.read(HEALTH_MAX_BYTES + 1)
        if len(raw) > HEALTH_MAX_BYTES:
            return {"running": False, "address": listen}
        data = json.loads(raw)
        return {"running": True, "address": listen, **(data if isinstance(data, dict) else {})}
    except (OSError, http.client.HTTPException, ValueError):
        return {"running": False, "address": listen}
    finally:
        conn.close()
