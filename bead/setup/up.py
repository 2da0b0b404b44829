"""bead up: the three services as child processes in the foreground."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

COMMANDS = {"proxy": ["proxy"], "indexer": ["indexer"], "dream": ["dream", "worker"]}


def run_services(include_dream: bool = True, stream=None) -> int:
    """Start the services, prefix their output, stop all on Ctrl-C or when one dies."""
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
                print(f"{name:<8}| {line}", file=out, flush=True)

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
            print(f"bead up: {died} exited with code {code}: {why}; stopped the others", file=out, flush=True)
            return 1
        print("bead up: stopped", file=out, flush=True)
        return 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
