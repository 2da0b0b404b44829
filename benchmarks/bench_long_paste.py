"""What a large typed paste costs every later request of its conversation (the proxy's preparation, in process).

A conversation sends every earlier message again with each request. One whose person pasted a large JSON (1.7 MB,
typed: no code fence) is prepared turn after turn through bead's engine, as the proxy prepares it, beside the same
conversation without the paste (the baseline, in the same run); the figures are each later turn's preparation time,
median and p95, and their ratio to the baseline's. Figures only, nothing asserted::

    .venv-test/bin/python benchmarks/bench_long_paste.py [--turns 12] [--mb 1.7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bead.config import parse
from bead.paths import Home
from bead.proxy.engine import Engine
from bead.wire import formats


def later_turns(paste: str | None, turns: int) -> list[float]:
    """Seconds each later turn's preparation took (the turns after the one that pasted)."""
    home = Home(Path(tempfile.mkdtemp()) / "home").ensure()
    engine = Engine(home, parse("owner: bench\n"))
    wire = formats.by_name("anthropic").wire
    system = "You are a coding agent.\n - Primary working directory: /tmp/demo"
    talk = [{"role": "user", "content": "hello"}]
    took = []
    for turn in range(turns + 2):
        body = json.dumps({"model": "m", "max_tokens": 10, "system": system, "messages": talk}).encode()
        t0 = time.perf_counter()
        prep = engine.prepare(body, {"x-bead-session": "bench"}, wire=wire, deadline=time.monotonic() + 60)
        if turn >= 2:
            took.append(time.perf_counter() - t0)
        engine.forwarded(prep)
        engine.drain(60)  # each turn's capture done before the next (a person reads the answer first)
        said = paste if turn == 0 and paste is not None else f"and what about item {turn}?"
        talk = [*talk, {"role": "assistant", "content": "ok"}, {"role": "user", "content": said}]
    engine.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--mb", type=float, default=1.7)
    args = ap.parse_args()
    items, paste = 0, ""
    while len(paste) < args.mb * 1e6:
        items += 2000
        paste = "why is item 7 missing?\n" + json.dumps(
            [{"id": i, "name": f"item {i}", "price": i * 1.5, "tags": ["a", "b"]} for i in range(items)], indent=2
        )
    base = later_turns(None, args.turns)
    long = later_turns(paste, args.turns)

    def p95(xs: list[float]) -> float:
        return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]

    print(f"{args.turns} later turns each; a typed paste of {len(paste) / 1e6:.1f} MB in the first")
    for name, xs in (("without the paste (baseline)", base), ("with the paste", long)):
        print(f"  {name:30} median {statistics.median(xs) * 1000:7.1f} ms  p95 {p95(xs) * 1000:7.1f} ms")
    print(f"  ratio, median: {statistics.median(long) / statistics.median(base):.1f}x   p95: {p95(long) / p95(base):.1f}x")


if __name__ == "__main__":
    main()
