"""Proxy overhead benchmark: prints figures, asserts nothing.

    python benchmarks/bench_proxy.py                    # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_proxy.py --facts 1000 --turns 20000 --rounds 3   # quick

The recorded Claude Code requests (shared/fixtures/claude-code) are sent in
one run straight to a fake upstream on 127.0.0.1 and through a real `bead
proxy` process in front of the same fake, against a generated store. Each
round rewrites X-Bead-Session so every round is a new conversation (pinned
block built, recall run on every turn). Figures: added latency (total and
time to first byte) p50/p95/p99, the same with 8 concurrent streams, and the
proxy's resident memory.
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
    args = ap.parse_args()

    reqs = load_requests()
    root = Path(tempfile.mkdtemp(prefix="bead-bench-proxy-"))
    fake = FakeAnthropic()
    fake.default = Reply(kind="sse", text="A reply of moderate length from the fake upstream. " * 4)
    proc = None
    try:
        mem, rng, vocab, weights = bench_store.generated(root, args.facts, args.turns)
        home = mem.home
        # Facts of the fixtures' project, so the pinned block and recall have real work.
        for i in range(40):
            note = f"The demo project note {i}: " + bench_store.sentence(rng, vocab, weights, 15)
            mem.write(f"project/demo/fact-{i}", note, "project")
        mem.close()
        from fakes import free_port
        port = free_port()
        log = open(root / "proxy.log", "wb")
        trace = root / "trace.jsonl"
        proc = subprocess.Popen([sys.executable, "-m", "bead", "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", fake.url,
                                 "--trace", str(trace)],
                                env={**os.environ, "BEAD_HOME": str(home.root)}, stdout=log, stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                send("127.0.0.1", port, "/v1/messages", [("content-type", "application/json")], b"{}")
                break
            except OSError:
                time.sleep(0.1)
        up_port = int(fake.url.rsplit(":", 1)[1])
        run_sequence(port, reqs, 1, "warm")  # warm-up: imports, caches, IDF stats
        d_ttfb, d_total = run_sequence(up_port, reqs, args.rounds, "direct")
        p_ttfb, p_total = run_sequence(port, reqs, args.rounds, "proxy")
        c_direct = concurrent(up_port, reqs, args.streams, "cdirect")
        c_proxy = concurrent(port, reqs, args.streams, "cproxy")
        rss = rss_mb(proc.pid)
        added = [p - d for p, d in zip(p_total, d_total, strict=False)]
        added_ttfb = [p - d for p, d in zip(p_ttfb, d_ttfb, strict=False)]
        print(f"store: {args.facts:,} facts, {args.turns:,} raw turns; {len(reqs)} recorded requests x {args.rounds} rounds")
        for name, d, p in (("total", d_total, p_total), ("first byte", d_ttfb, p_ttfb)):
            print(f"{name:<11} direct p50 {statistics.median(d):7.2f} ms p95 {pct(d, 95):7.2f} | "
                  f"proxy p50 {statistics.median(p):7.2f} ms p95 {pct(p, 95):7.2f} p99 {pct(p, 99):7.2f}")
        print(f"added      p50 {statistics.median(added):7.2f} ms  p95 {pct(added, 95):7.2f} ms  p99 {pct(added, 99):7.2f} ms")
        print(f"added TTFB p50 {statistics.median(added_ttfb):7.2f} ms  p95 {pct(added_ttfb, 95):7.2f} ms  "
              f"p99 {pct(added_ttfb, 99):7.2f} ms")
        print(f"{args.streams} concurrent streams: direct p50 {statistics.median(c_direct):7.2f} ms "
              f"p95 {pct(c_direct, 95):7.2f} | "
              f"proxy p50 {statistics.median(c_proxy):7.2f} ms p95 {pct(c_proxy, 95):7.2f} ms  "
              f"(ratio p50 {statistics.median(c_proxy) / statistics.median(c_direct):.1f}x)")
        print(f"proxy RSS after the run: {rss:.0f} MB")
        steps = [json.loads(line) for line in trace.read_text().splitlines()]
        prep = [e["prepare_ms"] for e in steps]
        rec = [e["recall_ms"] for e in steps if "recall_ms" in e]
        print(f"inside the proxy (trace): prepare p50 {statistics.median(prep):.2f} ms p95 {pct(prep, 95):.2f} ms; "
              f"recall step p50 {statistics.median(rec):.2f} ms p95 {pct(rec, 95):.2f} ms ({len(rec)} recalls)")
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)
        fake.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
