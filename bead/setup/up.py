"""bead up: the three services as child processes in the foreground."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

from .. import files as safe
from ..display import visible
from ..errors import BeadError
from ..paths import Home
from ..ports import client_address
from ..store.locks import LockBusy, flocked

COMMANDS = {"proxy": ["proxy"], "indexer": ["indexer"], "dream": ["dream", "worker"]}


def run_services(include_dream: bool = True, stream=None, home: Home | None = None, listen: str = "") -> int:
    """Start the services, prefix their output, stop all on Ctrl-C or when one dies. With ``home``, say first
    how to point the harnesses at the proxy (``listen``), and keep the services' pids in ``home.up_file`` while
    they run, so `bead status` knows them."""
    if home is None:
        return _run(include_dream, stream, None, listen)
    # One `bead up` a home: a second one ran a second indexer and dream worker on the same store until its proxy
    # found the port taken, and its record replaced the first one's, so `bead status` said nothing was running.
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(flocked(home.up_lock, blocking=False, root=home.root))
        except LockBusy:
            raise BeadError(
                "`bead up` is already running for this home",
                "`bead status` shows its services; stop it with Ctrl-C in its terminal before starting another",
            ) from None
        return _run(include_dream, stream, home, listen)


def _run(include_dream: bool, stream, home: Home | None, listen: str) -> int:
    out = stream or sys.stderr
    names = [n for n in COMMANDS if include_dream or n != "dream"]
    procs: dict[str, subprocess.Popen] = {}
    tails: dict[str, list[str]] = {n: [] for n in names}
    lock = threading.Lock()

    def pump(name: str, p: subprocess.Popen) -> None:
        assert p.stdout is not None  # started with stdout=PIPE
        for raw in p.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with lock:
                tails[name] = (tails[name] + [line])[-5:]
                # A service's own line (JSON, escaped) or anything else it printed (a library's traceback): what
                # reaches the terminal shows its control characters as escapes (bead.display.visible).
                print(f"{name:<8}| {visible(line)}", file=out, flush=True)

    stopping = threading.Event()

    def on_signal(*_):
        stopping.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for name in names:
            # -P: never import bead from the current directory (a checkout), only the installed one.
            p = subprocess.Popen(
                [sys.executable, "-P", "-m", "bead", *COMMANDS[name]],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=os.environ.copy(),
            )
            procs[name] = p
            threading.Thread(target=pump, args=(name, p), daemon=True).start()
        print(f"bead up: {', '.join(names)} running (Ctrl-C stops them)", file=out, flush=True)
        if home is not None:
            _record(home, procs)
            _tell(home, listen, out)
        died = None
        while not stopping.is_set():
            for name, p in procs.items():
                if p.poll() is not None:
                    died = name
                    break
            if died:
                break
            time.sleep(0.2)
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=330)
            except subprocess.TimeoutExpired:
                p.kill()
        time.sleep(0.1)
        if died:
            code = procs[died].returncode
            why = " / ".join(tails[died][-3:]) or "no output"
            print(f"bead up: {died} exited with code {code}: {visible(why)}; stopped the others", file=out, flush=True)
            return 1
        print("bead up: stopped", file=out, flush=True)
        return 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if home is not None:
            try:  # only our own record: a second `bead up` that failed must not erase the first one's
                if json.loads(safe.read_text(home.up_file, root=home.root)).get("pid") == os.getpid():
                    safe.unlink(home.up_file, root=home.root)
            except (OSError, ValueError, AttributeError, safe.UnsafePath):
                pass


def _record(home: Home, procs: dict[str, subprocess.Popen]) -> None:
    data = {"pid": os.getpid(), "services": {name: p.pid for name, p in procs.items()}}
    safe.atomic_write(home.up_file, json.dumps(data).encode(), mode=0o600, root=home.root)


def _tell(home: Home, listen: str, out) -> None:
    """The one line that points the harnesses at the proxy (the token stays in its file, never on the screen)."""
    token = home.proxy_token
    # The home's path is the environment's (BEAD_HOME): one holding a terminal's escape sequences is shown escaped.
    print(
        visible(
            f"bead up: claude in a new shell uses the proxy (or run `. {shlex.quote(str(home.shell_sh))}` here); Codex "
            f"and other OpenAI harnesses: base URL http://{client_address(listen)}/$(cat {shlex.quote(str(token))})/openai/v1"
        ),
        file=out,
        flush=True,
    )
