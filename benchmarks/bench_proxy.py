"""Proxy overhead benchmark: prints figures, asserts nothing.

    python benchmarks/bench_proxy.py                    # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_proxy.py --facts 1000 --turns 20000 --rounds 3   # quick

The recorded Claude Code requests (shared/fixtures/claude-code) are sent in
one run straight to a fake upstream on 127.0.0.1, through a pass-through
proxy written with the standard library only (http.server + http.client,
streaming chunk by chunk: the floor for any Python proxy hop), through the
floor of bead's own stack (benchmarks/floor_proxy.py: Quart on Hypercorn,
httpx, nothing else), and through real `bead proxy` processes (one worker,
and this machine's default number) in front of the same fake, against a generated
store. Each round rewrites X-Bead-Session so every round is a new
conversation (pinned block built, recall run on every turn). Figures: total
and time to first byte p50/p95/p99 for each, what bead adds over direct and
over the pass-through, the same with 8 concurrent clients, and the proxy's
resident memory.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_store  # noqa: E402
from fakes import FakeAnthropic, Reply  # noqa: E402

from bead.proxy.workers import default_workers  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "claude-code" / "requests.jsonl"


def load_requests() -> list[tuple[str, list, bytes]]:
    out = []
    for line in FIXTURE.read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "http" and r["method"] == "POST" and r["path"].startswith("/v1/messages"):
            headers = [(k, v) for k, v in r["headers"] if k.lower() not in ("host", "content-length", "connection")]
            out.append((r["path"], headers, base64.b64decode(r["body_b64"])))
    return out


def send(host: str, port: int, path: str, headers: list, body: bytes) -> tuple[float, float]:
    """(time to first byte, total) in ms."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers=dict(headers))
    r = conn.getresponse()
    r.read1(1)
    ttfb = time.perf_counter() - t0
    r.read()
    total = time.perf_counter() - t0
    conn.close()
    return ttfb * 1000, total * 1000


def pct(v: list[float], q: int) -> float:
    return statistics.quantiles(v, n=100, method="inclusive")[q - 1]


def run_sequence(port: int, reqs, rounds: int, tag: str) -> tuple[list[float], list[float]]:
    ttfb, total = [], []
    for i in range(rounds):
        for path, headers, body in reqs:
            h = [(k, v) for k, v in headers if k.lower() != "x-bead-session"] + [("X-Bead-Session", f"{tag}-{i}")]
            a, b = send("127.0.0.1", port, path, h, body)
            ttfb.append(a)
            total.append(b)
    return ttfb, total


def concurrent(port: int, reqs, streams: int, tag: str) -> list[float]:
    results: list[float] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        _, tot = run_sequence(port, reqs, 1, f"{tag}-c{n}")
        with lock:
            results.extend(tot)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class PassThrough:
    """A stdlib-only streaming proxy: the baseline cost of a Python hop in front of the upstream."""

    def __init__(self, upstream_port: int):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        local = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request("POST", self.path, body=body, headers=headers)
                r = conn.getresponse()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                while True:
                    chunk = r.read1(65536)
                    if not chunk:
                        break
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def tree_memory(pid: int) -> tuple[float, float, list[float]]:
    """A process and its children: RSS summed, PSS summed (a page shared by n of them counts 1/n in each), each RSS."""
    pids = [pid] + [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    rss = [rss_mb(p) for p in pids]
    pss = 0.0
    for p in pids:
        for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss += int(line.split()[1]) / 1024
    return sum(rss), pss, rss


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument(
        "--indexer",
        action="store_true",
        help="bead[semantic] as deployed: every turn and fact gets its vector first (random for turns, real for "
        "facts), and a `bead indexer` runs beside the proxy to embed the proxy's questions",
    )
    ap.add_argument(
        "--workers",
        default=",".join(dict.fromkeys(["1", str(default_workers())])),
        help="a bead proxy for each of these proxy.workers counts, side by side (default: 1 and this machine's default)",
    )
    ap.add_argument(
        "--no-trace",
        dest="trace",
        action="store_false",
        help="run the proxies without --trace, as deployed (the trace's cue excerpts and its line cost time); "
        "the figures from inside the proxy are then left out",
    )
    args = ap.parse_args()

    reqs = load_requests()
    root = Path(tempfile.mkdtemp(prefix="bead-bench-proxy-"))
    fake = FakeAnthropic()
    fake.default = Reply(kind="sse", text="A reply of moderate length from the fake upstream. " * 4)
    procs: dict[str, tuple[subprocess.Popen, int, Path]] = {}
    counts = [int(x) for x in args.workers.split(",")]
    label = lambda n: f"bead {n} worker" + ("s" if n > 1 else "")  # noqa: E731
    try:
        mem, rng, vocab, weights = bench_store.generated(root, args.facts, args.turns)
        home = mem.home
        # Facts of the fixtures' project, so the pinned block and recall have real work.
        for i in range(40):
            note = f"The demo project note {i}: " + bench_store.sentence(rng, vocab, weights, 15)
            mem.write(f"project/demo/fact-{i}", note, "project")
        if args.indexer:
            bench_store.fill_vectors(mem, 7)  # so the indexer has no backfill to do while the figures are taken
        mem.close()
        indexer = None
        if args.indexer:
            indexer = subprocess.Popen(
                [sys.executable, "-m", "bead", "indexer"],
                env={**os.environ, "BEAD_HOME": str(home.root)},
                stdout=open(root / "indexer.log", "wb"),
                stderr=subprocess.STDOUT,
            )
            for _ in range(600):
                if home.embed_socket.exists():
                    break
                time.sleep(0.1)
            else:
                raise SystemExit(f"the indexer did not start its query server: {(root / 'indexer.log').read_text()}")
        from fakes import free_port

        for n in counts:
            port = free_port()
            trace = root / f"trace-{n}.jsonl"
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bead",
                    "proxy",
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--upstream",
                    fake.url,
                    *(["--trace", str(trace)] if args.trace else []),
                    "--workers",
                    str(n),
                ],
                env={**os.environ, "BEAD_HOME": str(home.root)},
                stdout=open(root / f"proxy-{n}.log", "wb"),
                stderr=subprocess.STDOUT,
            )
            procs[label(n)] = (proc, port, trace)
            for _ in range(300):
                try:
                    send("127.0.0.1", port, "/v1/messages", [("content-type", "application/json")], b"{}")
                    break
                except OSError:
                    time.sleep(0.1)
        up_port = int(fake.url.rsplit(":", 1)[1])
        passthrough = PassThrough(up_port)
        floor_port = free_port()
        floor = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "floor_proxy.py"), str(floor_port), fake.url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(300):
            try:
                send("127.0.0.1", floor_port, "/v1/messages", [("content-type", "application/json")], b"{}")
                break
            except OSError:
                time.sleep(0.1)
        ports = {
            "direct": up_port,
            "pass": passthrough.port,
            "quart floor": floor_port,
            **{name: p for name, (_, p, _) in procs.items()},
        }
        for name, p in ports.items():
            if name != "direct":
                run_sequence(p, reqs, 1, f"warm-{name}")  # warm-up: imports, caches, IDF stats (each worker's)
        seq: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in ports}
        conc = {}
        # Interleaved per round, so that noise on a shared machine hits all of them alike.
        for i in range(args.rounds):
            for name, p in ports.items():
                a, b = run_sequence(p, reqs, 1, f"{name}-{i}")
                seq[name][0].extend(a)
                seq[name][1].extend(b)
        for name, p in ports.items():
            conc[name] = concurrent(p, reqs, args.streams, f"c{name}")
        memory = {name: tree_memory(proc.pid) for name, (proc, _, _) in procs.items()}
        indexer_rss = rss_mb(indexer.pid) if indexer is not None else None
        if indexer is not None:
            indexer.terminate()
            indexer.wait(30)
        passthrough.close()
        floor.terminate()
        floor.wait(30)
        print(f"store: {args.facts:,} facts, {args.turns:,} raw turns; {len(reqs)} recorded requests x {args.rounds} rounds")
        print(f"{'sequential':<30} {'p50':>8} {'p95':>8} {'p99':>8}   (ms)")
        for kind, k in (("total", 1), ("TTFB", 0)):
            for name in ports:
                v = seq[name][k]
                print(f"  {kind + ', ' + name:<28} {statistics.median(v):8.2f} {pct(v, 95):8.2f} {pct(v, 99):8.2f}")
        print("added over the pass-through by the stack alone and by bead (difference of the percentiles)")
        for name in ["quart floor", *procs]:
            for what, k, base in (
                ("total over direct", 1, "direct"),
                ("total over pass-through", 1, "pass"),
                ("TTFB over pass-through", 0, "pass"),
                *([("total over the quart floor", 1, "quart floor")] if name != "quart floor" else []),
            ):
                a, b = seq[name][k], seq[base][k]
                print(
                    f"  {name + ', ' + what:<44} {statistics.median(a) - statistics.median(b):8.2f} "
                    f"{pct(a, 95) - pct(b, 95):8.2f} {pct(a, 99) - pct(b, 99):8.2f}"
                )
        print(f"{args.streams} concurrent clients, total")
        for name in ports:
            v = conc[name]
            print(f"  {name:<28} {statistics.median(v):8.2f} {pct(v, 95):8.2f} {pct(v, 99):8.2f}")
        for name in ["quart floor", *procs]:
            print(
                f"  {name}: p50 x{statistics.median(conc[name]) / statistics.median(conc['pass']):.2f} the pass-through's; "
                f"over direct {statistics.median(conc[name]) - statistics.median(conc['direct']):.2f} ms"
            )
        for name, (rss, pss, per) in memory.items():
            print(
                f"{name}: resident memory after the run {rss:.0f} MB (RSS summed over its processes), "
                f"{pss:.0f} MB proportional (PSS: shared pages counted once); "
                f"per process {', '.join(f'{x:.0f}' for x in per)} MB RSS"
            )
        if indexer_rss is not None:
            print(f"indexer RSS (holds the embedding model for both): {indexer_rss:.0f} MB")
        for name, (_, _, trace) in procs.items() if args.trace else ():
            steps = [json.loads(line) for line in trace.read_text().splitlines()]
            prep = [e["prepare_ms"] for e in steps]
            rec = [e["recall_ms"] for e in steps if "recall_ms" in e]
            print(
                f"{name}, inside (trace): prepare p50 {statistics.median(prep):.2f} ms p95 {pct(prep, 95):.2f} ms; "
                f"recall step p50 {statistics.median(rec):.2f} ms p95 {pct(rec, 95):.2f} ms ({len(rec)} recalls)"
            )
            waits = [e.get("pending_ms", 0.0) for e in steps]
            print(f"  of prepare, the wait before its work: p50 {statistics.median(waits):.2f} ms p95 {pct(waits, 95):.2f} ms")
    finally:
        for proc, _, _ in procs.values():
            proc.terminate()
            proc.wait(30)
        fake.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
