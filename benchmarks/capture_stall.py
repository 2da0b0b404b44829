"""How long a large capture holds up the other work of its process (the proxy's event loop, its other requests).

The proxy redacts a turn's text in a thread of the worker that forwards requests; while a scan runs inside one call
to a C extension that holds the GIL, nothing else of that worker runs. A thread here sleeps 1 ms in a loop and
records how late each wake-up is, first with nothing else running (the baseline, in the same run), then while
another thread redacts each text. Figures only, nothing asserted::

    .venv-test/bin/python benchmarks/capture_stall.py [--mb 30]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from bead.capture.secrets import redact


def wakeups(work) -> tuple[list[float], float]:
    """Each 1 ms sleep's overshoot (ms) while ``work`` runs in another thread (or for 1 s without), and its time."""
    late: list[float] = []
    done = threading.Event()

    def run() -> None:
        if work is None:
            time.sleep(1.0)
        else:
            work()
        done.set()

    t = threading.Thread(target=run)
    start = time.monotonic()
    t.start()
    while not done.is_set():
        a = time.monotonic()
        time.sleep(0.001)
        late.append((time.monotonic() - a) * 1000 - 1.0)
    t.join()
    return late, time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=30.0, help="size of each text (the proxy reads up to 32 MiB)")
    args = ap.parse_args()
    n = int(args.mb * 1_000_000)
    texts = {
        "none (baseline)": None,
        "build log": "12:04:31 INFO compiling src/app/module_17.py ok\n",
        "one character": "x",
        "base64 lines": "QmFzZTY0IGVuY29kZWQgbGluZSBvZiBhIGxvbmcgZmlsZSBpbiBhIGxvZyBvdXRwdXQgaGVyZQ==\n",
        "hex dump (xxd -p)": "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9\n",
    }
    print(f"{'text':<20} {'MB':>5} {'redact s':>9} {'wake p50 ms':>12} {'p95':>7} {'max':>8}")
    base = None
    for name, unit in texts.items():
        text = None if unit is None else unit * (n // len(unit))
        late, took = wakeups(None if text is None else (lambda t=text: redact(t)))
        p50, p95, worst = statistics.median(late), sorted(late)[int(len(late) * 0.95)], max(late)
        base = base or worst
        size = 0 if text is None else len(text) / 1e6
        print(f"{name:<20} {size:5.1f} {took if text else 0:9.2f} {p50:12.2f} {p95:7.2f} {worst:8.1f}")
    print(f"(the baseline's longest wake-up: {base:.1f} ms)")


if __name__ == "__main__":
    main()
