"""Where the test suite's time goes: CPU seconds per test file and per test, its own and its subprocesses'.

    python benchmarks/suite_cpu.py               # the whole suite, as setup_scripts/test.sh runs it
    python benchmarks/suite_cpu.py --top 40      # more rows
    python benchmarks/suite_cpu.py --rows F      # every test's row into F, tab-separated
    python benchmarks/suite_cpu.py -- tests/test_setup.py -n 0   # arguments after -- go to pytest

On two cores the suite is bound by CPU, not by waits: its wall time is about half of the total printed here.
A test's "children" are the processes it started and waited for (bead processes, pip, shells); a process it
killed without waiting is not counted. Figures only, nothing asserted; CPU time moves less than wall time on a
busy machine, but other work on the same cores still raises it by a tenth or so.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A pytest plugin, written to a temporary folder and loaded with -p: each worker appends one line per test.
PLUGIN = """
import os, resource, time, pytest

def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children = _cpu()
    start = time.monotonic()
    yield
    own2, children2 = _cpu()
    with open(os.path.join(os.environ["BEAD_SUITE_CPU"], f"cpu.{os.getpid()}"), "a") as f:
        f.write(f"{own2 - own:.3f}\\t{children2 - children:.3f}\\t{time.monotonic() - start:.3f}\\t{item.nodeid}\\n")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=20, help="rows of files and of tests to print")
    ap.add_argument("--rows", help="also write every test's row (own, children, wall, test) to this file")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to setup_scripts/test.sh (pytest)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        (Path(tmp) / "bead_suite_cpu.py").write_text(PLUGIN)
        env = {
            **os.environ,
            "BEAD_SUITE_CPU": str(out),
            "PYTHONPATH": os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")])),
        }
        cmd = [
            "sh",
            str(ROOT / "setup_scripts" / "test.sh"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "bead_suite_cpu",
            "-rf",
            *args.pytest_args,
        ]
        run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        summary = [line for line in run.stdout.splitlines() if " passed" in line or " failed" in line]
        rows = []
        for f in out.glob("cpu.*"):
            for line in f.read_text().splitlines():
                own, children, wall, node = line.split("\t", 3)
                rows.append((float(own), float(children), float(wall), node))
    if args.rows:
        Path(args.rows).write_text("".join(f"{o:.3f}\t{c:.3f}\t{w:.3f}\t{n}\n" for o, c, w, n in rows))
    if not rows:
        sys.exit(run.stdout[-2000:] + run.stderr[-2000:])
    own = sum(r[0] for r in rows)
    children = sum(r[1] for r in rows)
    print(f"{len(rows)} tests; {summary[-1].strip('= ') if summary else 'no summary line'}")
    print(
        f"CPU: {own:.1f} s in the pytest workers, {children:.1f} s in processes the tests started, {own + children:.1f} s in all"
    )
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for o, c, _w, node in rows:
        entry = by_file[node.split("::", 1)[0]]
        entry[0] += o
        entry[1] += c
        entry[2] += 1
    print(f"\n{'CPU s':>7} {'own':>6} {'child':>6} {'tests':>5}  file")
    for name, (o, c, n) in sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[: args.top]:
        print(f"{o + c:7.1f} {o:6.1f} {c:6.1f} {int(n):5d}  {name}")
    print(f"\n{'CPU s':>7} {'own':>6} {'child':>6} {'wall':>6}  test")
    for o, c, w, node in sorted(rows, key=lambda r: -(r[0] + r[1]))[: args.top]:
        print(f"{o + c:7.2f} {o:6.2f} {c:6.2f} {w:6.2f}  {node}")
    waits = sum(max(0.0, w - o - c) for o, c, w, _n in rows)
    print(f"\nwaiting (wall beyond CPU, summed over tests): {waits:.1f} s")
    print(f"{'wait s':>7} {'CPU s':>6} {'wall':>6}  test")
    for o, c, w, node in sorted(rows, key=lambda r: -(r[2] - r[0] - r[1]))[: args.top]:
        print(f"{w - o - c:7.2f} {o + c:6.2f} {w:6.2f}  {node}")
    if run.returncode != 0:
        failed = "\n".join(line for line in run.stdout.splitlines() if line.startswith(("FAILED", "ERROR")))
        sys.exit(f"\nthe suite failed (exit {run.returncode}): {summary[-1] if summary else ''}\n{failed}")


if __name__ == "__main__":
    main()
