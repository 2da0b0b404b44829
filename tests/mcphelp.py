"""Driving bead's MCP servers as an MCP client does: the official SDK's client over real transports.

- ``McpSession``: one open ``mcp.Client`` on an event loop of its own thread,
  so tests stay synchronous (as the proxy's tests are) and a module can keep
  one server process for all its tests. Over stdio the server is a real
  ``python -m bead mcp`` subprocess; over Streamable HTTP it is any URL.
- ``ServedAsgi``: an ASGI app (bead's HTTP MCP app) served by Hypercorn on a
  free 127.0.0.1 port in a thread, as ``ServedProxy`` serves the proxy.
- ``Jwks``: an identity provider on 127.0.0.1: an RSA key pair, its JWKS
  document over HTTP (which can be taken down or made to answer garbage),
  and tokens signed with it or with a stranger's key.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from conftest import eventually

from bead import files as safe
from bead.paths import Home

REPO = Path(__file__).resolve().parent.parent


class McpSession:
    """An open official MCP client, driven from synchronous tests."""

    def __init__(self, transport_factory, timeout: float = 60.0, elicitation=None, mode: str = "auto"):
        from mcp import Client

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-client-loop", daemon=True)
        self.thread.start()
        self._ready: asyncio.Future | None = None
        self._stop: asyncio.Event | None = None
        self.client: Client | None = None

        async def hold() -> None:
            self._stop = asyncio.Event()
            try:
                extra: dict[str, Any] = {"mode": mode}
                if elicitation is not None:
                    extra["elicitation_callback"] = elicitation
                async with Client(transport_factory(), read_timeout_seconds=timeout, **extra) as client:
                    self.client = client
                    self._ready.set_result(True)
                    await self._stop.wait()
            except BaseException as exc:
                if not self._ready.done():
                    self._ready.set_exception(exc)
                raise

        async def start() -> None:
            self._ready = self.loop.create_future()
            self._task = self.loop.create_task(hold())
            await self._ready

        self._run(start(), timeout)

    def _run(self, coro, timeout: float = 120.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, tool: str, args: dict[str, Any] | None = None, timeout: float = 120.0):
        assert self.client is not None
        return self._run(self.client.call_tool(tool, args or {}), timeout)

    def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict:
        """The structured result of a call that must succeed."""
        r = self.call(tool, args)
        assert not r.is_error, r.content[0].text if r.content else r
        return r.structured_content

    def err(self, tool: str, args: dict[str, Any] | None = None) -> dict:
        """The structured error of a call that must fail (its text is the same JSON)."""
        r = self.call(tool, args)
        assert r.is_error, r.structured_content
        body = r.structured_content
        assert json.loads(r.content[0].text) == body
        assert set(body) == {"error", "code", "retryable", "outcome_unknown", "next"}, body
        return body

    def tools(self) -> list:
        assert self.client is not None
        return self._run(self.client.list_tools()).tools

    def close(self) -> None:
        if self._stop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stop.set)
            try:
                asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(self._task), 30), self.loop).result(40)
            except Exception:
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def stdio_session(
    home: Path,
    *args: str,
    errlog=None,
    env: dict | None = None,
    cwd: Path | None = None,
    elicitation=None,
    mode: str = "auto",
) -> McpSession:
    """`python -m bead mcp ARGS` as a real subprocess, its home ``home``, driven by the official client (with
    ``elicitation``, an async callback the client answers the server's questions to its user with; ``mode``
    "legacy": the initialize handshake of protocol revisions before 2026-07-28, as Claude Code speaks it)."""
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bead", "mcp", *args],
        env={"BEAD_HOME": str(home), "PYTHONPATH": str(REPO), "BEAD_SEMANTIC": "0", **(env or {})},
        cwd=str(cwd) if cwd else None,
    )
    return McpSession(
        lambda: stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params),
        elicitation=elicitation,
        mode=mode,
    )


class Person:
    """The person at an MCP client's dialogs: answers each question the server asks its user with ``answer``
    (accept, decline or cancel; "error": the client fails the question; "bare-accept": an accept without the
    form's content; a callable gets the question first), and keeps every question it was shown."""

    def __init__(self, answer="accept"):
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, context, params):
        from mcp import types

        self.asked.append(params.message)
        action = self.answer(params.message) if callable(self.answer) else self.answer
        if action == "error":  # the client fails the question (a JSON-RPC error instead of an answer)
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the dialog could not be shown")
        if action == "bare-accept":  # an accept without the form's content
            return types.ElicitResult(action="accept", content=None)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)


def http_session(url: str, token: str | None = None, elicitation=None) -> McpSession:
    """The official client over Streamable HTTP at ``url`` (a bearer token when given; ``elicitation`` as for
    ``stdio_session``)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    class Transport:
        def __init__(self):
            self.http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0))
            self.inner = streamable_http_client(url, http_client=self.http)

        async def __aenter__(self):
            return await self.inner.__aenter__()

        async def __aexit__(self, *exc):
            try:
                return await self.inner.__aexit__(*exc)
            finally:
                await self.http.aclose()

    return McpSession(Transport, elicitation=elicitation)


def post_mcp(url: str, token: str | None = None, body: dict | None = None) -> tuple[int, dict, dict]:
    """One raw JSON-RPC POST to /mcp (what a client without the SDK sends): (status, headers, JSON body)."""
    data = json.dumps(body or {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
            **({"Authorization": f"Bearer {token}"} if token else {}),
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        payload = e.read()
        return e.code, {k.lower(): v for k, v in e.headers.items()}, json.loads(payload or b"{}")


class ServedAsgi:
    """An ASGI app served by Hypercorn on a free 127.0.0.1 port, in a thread with its own loop."""

    def __init__(self, app, health: str = "/health"):
        from hypercorn.asyncio import serve
        from hypercorn.config import Config as HConfig

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = HConfig()
        cfg.bind = [f"fd://{sock.detach()}"]
        cfg.graceful_timeout = 5.0
        cfg.accesslog = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(app, cfg, shutdown_trigger=self._stop.wait)

        def run() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=run, name="served-mcp", daemon=True)
        self.thread.start()
        if not eventually(lambda: self._answers(health)):
            self.close()
            raise RuntimeError(f"the served app did not answer {health}: {self.error!r}")

    def _answers(self, path: str) -> bool:
        if not self.thread.is_alive():
            raise RuntimeError(f"the served app stopped: {self.error!r}")
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def health(self) -> dict:
        with urllib.request.urlopen(self.url + "/health", timeout=10) as r:
            return json.loads(r.read())

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass
        self.thread.join(30)


def _rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Jwks:
    """A local identity provider: its key pair, its JWKS over HTTP on 127.0.0.1, and tokens it signs."""

    ISSUER = "https://id.bead.test/"
    AUDIENCE = "bead-team"

    def __init__(self):
        self.key = _rsa_key()
        self.kid = "key-1"
        self.mode = "ok"  # ok | error | garbage
        self.fetches = 0
        self.answered = threading.Event()  # cleared: a fetch waits for it before it answers (a provider that hangs)
        self.answered.set()
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.document = {"keys": [{**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}]}
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                provider.fetches += 1
                provider.answered.wait(30)
                if provider.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                body = b"<html>not json" if provider.mode == "garbage" else json.dumps(provider.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.005}, daemon=True)
        self.thread.start()

    def mint(
        self,
        actor: str | None = "ana@example.com",
        *,
        exp_in: int = 600,
        aud: str | None = None,
        iss: str | None = None,
        key=None,
        kid: str | None = None,
        alg: str = "RS256",
        claims: dict | None = None,
        headers: dict | None = None,
    ) -> str:
        now = int(time.time())
        payload = {
            "iss": iss or self.ISSUER,
            "aud": aud or self.AUDIENCE,
            "iat": now,
            "exp": now + exp_in,
            "sub": "subject-" + (actor or "none"),
        }
        if actor is not None:
            payload["email"] = actor
        payload.update(claims or {})
        return jwt.encode(
            payload, key if key is not None else self.key, algorithm=alg, headers={"kid": kid or self.kid, **(headers or {})}
        )

    def down(self) -> None:
        """The provider stops answering: connections are refused."""
        self.server.shutdown()
        self.server.server_close()

    def close(self) -> None:
        try:
            self.down()
        except OSError:
            pass


def config_text(jwks: Jwks, projects: dict[str, list[str]] | None = None, extra: str = "") -> str:
    lines = [
        "owner: host-person",
        "mcp:",
        f"  jwks_url: {jwks.url}",
        f"  issuer: {jwks.ISSUER}",
        f"  audience: {jwks.AUDIENCE}",
        "  jwks_timeout_s: 5",
    ]
    if projects:
        lines.append("  projects:")
        lines += [f"    {json.dumps(o)}: {json.dumps(ps)}" for o, ps in projects.items()]
    return "\n".join(lines) + "\n" + extra


def make_vault(home: Path) -> None:
    """An X25519 vault in ``home`` as `bead vault init` lays it out (low scrypt work factor: tests only)."""
    import age_scrypt

    from bead.vault import keys as vault_keys

    h = Home(home).ensure()
    mod = vault_keys.pyrage()
    ident = mod.x25519.Identity.generate()
    text = f"# created: 2026-11-30T00:00:00Z\n# public key: {ident.to_public()}\n{ident}\n".encode()
    safe.atomic_write(
        h.vault / "identity.age", age_scrypt.encrypt(text, "correct horse battery staple", work_factor=10), root=h.root
    )
    safe.atomic_write(h.vault / "recipient.txt", f"{ident.to_public()}\n".encode(), root=h.root)


def all_text(home: Path) -> bytes:
    out = b""
    for dirpath, _dirs, files in os.walk(home):
        for name in files:
            out += (Path(dirpath) / name).read_bytes()
    return out
