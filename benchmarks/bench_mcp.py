"""MCP latency benchmark: prints figures, asserts nothing.

    python benchmarks/bench_mcp.py                  # 10,000 facts, 200,000 raw turns
    python benchmarks/bench_mcp.py --facts 1000 --turns 20000 --calls 50   # quick

Drives `recall`, `get_memory_context` and `remember` with the official MCP
client through the real transports, against one generated store
(bench_store.generated):

- stdio: a `bead mcp` process, as Claude Code runs it;
- http: a `bead mcp --http` process on 127.0.0.1 (loopback, no auth: the same
  work as stdio, so the two transports compare);
- http+jwt: the same process kind with JWT settings against a JWKS server on
  127.0.0.1, called as a team member who shares every project (every request
  verified; a member's recall reads facts only, no raw turns).

Each tool is called ``--calls`` times one after another, then ``--calls``
times in batches of 10 concurrent calls on the same connection. Per call the
client measures the whole round trip; the server reports the time its tool
spent in bead's core (``_meta["bead/tool_ms"]``, measured in the worker
thread); MCP overhead is the difference: JSON-RPC encoding and decoding, the
transport, the SDK's dispatch and validation, the hop to a worker thread (and,
concurrent, the wait for one of its 4 workers, which the server reports as
``_meta["bead/wait_ms"]`` and the last column shows), and the JWT check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_store  # noqa: E402

TOOLS = ("recall", "get_memory_context", "remember")
MEMBER = "bench@example.com"


def pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def trio(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {pct(values, 95):.1f} / {pct(values, 99):.1f}"


class Jwks:
    """A JWKS document on 127.0.0.1 and tokens signed with its key."""

    def __init__(self):
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        doc = json.dumps(
            {
                "keys": [
                    {
                        **json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key())),
                        "kid": "bench",
                        "use": "sig",
                        "alg": "RS256",
                    }
                ]
            }
        ).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(doc)))
                self.end_headers()
                self.wfile.write(doc)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self) -> str:
        import jwt

        now = int(time.time())
        return jwt.encode(
            {
                "iss": "https://id.bench/",
                "aud": "bead-bench",
                "iat": now,
                "exp": now + 7200,
                "sub": "bench-member",
                "email": MEMBER,
                "email_verified": True,
            },
            self.key,
            algorithm="RS256",
            headers={"kid": "bench"},
        )


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve_http(home: Path, port: int, log) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, "-m", "bead", "mcp", "--http", "--listen", f"127.0.0.1:{port}"],
        env={**os.environ, "BEAD_HOME": str(home), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    end = time.monotonic() + 120
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return p
        except OSError:
            if p.poll() is not None:
                raise RuntimeError("bead mcp --http exited") from None
            time.sleep(0.1)
    raise RuntimeError("bead mcp --http did not answer /health")


def transport(kind: str, home: Path, url: str | None = None, token: str | None = None, errlog=None):
    from mcp import StdioServerParameters, stdio_client

    if kind == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "bead", "mcp", "--project", "p7"],
            env={"BEAD_HOME": str(home), "PYTHONPATH": str(ROOT)},
        )
        return stdio_client(params, errlog=errlog)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"} if token else {},
        timeout=httpx2.Timeout(60.0, read=300.0),
        limits=httpx2.Limits(max_connections=20, max_keepalive_connections=20),
    )
    return streamable_http_client(url, http_client=http)


async def drive(make_transport, args_for, calls: int) -> dict[str, dict[str, list[tuple[float, float, float]]]]:
    from mcp import Client

    out: dict[str, dict[str, list[tuple[float, float, float]]]] = {t: {"seq": [], "conc": []} for t in TOOLS}
    async with Client(make_transport(), read_timeout_seconds=300) as client:

        async def one(tool: str, i: int) -> tuple[float, float, float]:
            t0 = time.perf_counter()
            r = await client.call_tool(tool, args_for(tool, i))
            total = (time.perf_counter() - t0) * 1000
            if r.is_error:
                raise RuntimeError(f"{tool} failed: {r.content[0].text[:200]}")
            meta = r.meta or {}
            return total, float(meta.get("bead/tool_ms", 0.0)), float(meta.get("bead/wait_ms", 0.0))

        for tool in TOOLS:
            for i in range(5):  # warm-up: connections, caches, worker threads
                await one(tool, -1 - i)
            for i in range(calls):
                out[tool]["seq"].append(await one(tool, i))
            for b in range(max(1, calls // 10)):
                out[tool]["conc"] += await asyncio.gather(*(one(tool, calls + b * 10 + j) for j in range(10)))
    return out


def report(name: str, res: dict) -> list[dict]:
    rows = []
    for tool in TOOLS:
        for mode in ("seq", "conc"):
            got = res[tool][mode]
            total = [t for t, _, _ in got]
            inner = [k for _, k, _ in got]
            over = [t - k for t, k, _ in got]
            wait = [w for _, _, w in got]
            rows.append(
                {
                    "transport": name,
                    "tool": tool,
                    "mode": "sequential" if mode == "seq" else "10 concurrent",
                    "n": len(got),
                    "total": trio(total),
                    "tool_ms": trio(inner),
                    "overhead": trio(over),
                    "worker_wait": f"{statistics.median(wait):.1f} / {pct(wait, 95):.1f}",
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--calls", type=int, default=200, help="calls per tool and mode")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bead-bench-mcp-"))
    try:
        t = time.perf_counter()
        mem, rng, vocab, weights = bench_store.generated(tmp, args.facts, args.turns, seed=args.seed)
        home = mem.home.root
        mem.close()
        print(f"store: {args.facts:,} facts, {args.turns:,} raw turns, built in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        qrng = random.Random(args.seed + 1)

        def args_for(tool: str, i: int, prefix: str = "x") -> dict:
            words = bench_store.sentence(qrng, vocab[100:], weights[100:], qrng.randint(3, 8))
            if tool == "recall":
                return {"query": words}
            if tool == "get_memory_context":
                return {"task": words, "project": "p7"}
            return {
                "value": bench_store.sentence(qrng, vocab, weights, 20),
                "type": "project",
                "key": f"project/p7/mcp-{prefix}-{i + 10}",
            }

        log = open(tmp / "server.log", "w")  # noqa: SIM115 - closed below
        rows: list[dict] = []
        res = asyncio.run(
            drive(lambda: transport("stdio", home, errlog=log), lambda tool, i: args_for(tool, i, "stdio"), args.calls)
        )
        rows += report("stdio", res)

        port = free_port()
        proc = serve_http(home, port, log)
        try:
            res = asyncio.run(
                drive(
                    lambda: transport("http", home, f"http://127.0.0.1:{port}/mcp"),
                    lambda tool, i: args_for(tool, i, "http"),
                    args.calls,
                )
            )
            rows += report("http", res)
        finally:
            proc.terminate()
            proc.wait(60)

        jwks = Jwks()
        cfg = home / "config.yaml"
        cfg.write_text(
            f"owner: bench\nmcp:\n  jwks_url: {jwks.url}\n  issuer: https://id.bench/\n"
            f"  audience: bead-bench\n  projects:\n    {MEMBER}: ['*']\n"
        )
        port = free_port()
        proc = serve_http(home, port, log)
        try:
            token = jwks.token()
            res = asyncio.run(
                drive(
                    lambda: transport("http", home, f"http://127.0.0.1:{port}/mcp", token),
                    lambda tool, i: args_for(tool, i, "jwt"),
                    args.calls,
                )
            )
            rows += report("http+jwt", res)
        finally:
            proc.terminate()
            proc.wait(60)
            jwks.server.shutdown()
        log.close()
        if args.json:
            print(json.dumps(rows, indent=1))
            return
        print(
            f"{'transport':<9} {'tool':<19} {'mode':<14} {'n':>4}  {'round trip p50/p95/p99 ms':>26}  "
            f"{'tool (in bead) p50/p95/p99':>27}  {'MCP overhead p50/p95/p99':>25}  {'of it, worker wait p50/p95':>26}"
        )
        for r in rows:
            print(
                f"{r['transport']:<9} {r['tool']:<19} {r['mode']:<14} {r['n']:>4}  {r['total']:>26}  "
                f"{r['tool_ms']:>27}  {r['overhead']:>25}  {r['worker_wait']:>26}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
