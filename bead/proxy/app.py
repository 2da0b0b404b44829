"""The Quart app: forward everything, change only the model APIs' conversation routes.

The base URL a harness is given says which API it speaks: a path under
``/openai`` is OpenAI's (``proxy.openai_upstream``, the prefix removed),
every other path is Anthropic's (``proxy.upstream``), as it always was. Only
``POST /v1/messages`` (Anthropic) and ``POST /openai/.../chat/completions``
and ``POST /openai/.../responses`` (OpenAI) are read; each goes to the same
engine with its wire format (the list is ``bead.wire.formats``).

Quart's defaults would break a streaming LLM proxy, so they are lifted:
RESPONSE_TIMEOUT (60 s cuts a long stream), BODY_TIMEOUT, MAX_CONTENT_LENGTH
(16 MiB; bead parses bodies up to 32 MiB, at or above the API's 32 MB limit:
bead.proxy.engine.MAX_BODY_BYTES). The upstream client has no read timeout.

Who may talk to the proxy and whose memory a request sees is decided in
``access``; what bead does to a request and after it, in ``engine``.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hmac
import http.cookiejar
import json
import logging
import os
import re
import socket
import ssl
import sys
import time
import typing
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from quart import Quart, Response, request, websocket
from quart.asgi import ASGIHTTPConnection
from quart.wrappers.request import Body as QuartBody
from quart.wrappers.request import Request as QuartRequest
from werkzeug.datastructures import Headers
from werkzeug.exceptions import RequestEntityTooLarge

from .. import __version__
from ..capture.secrets import ruleset
from ..errors import BeadError
from ..ports import CHALLENGE, bound_address, health_proof
from ..token import load_token
from ..version import build_id
from ..wire import formats
from . import access
from .access import shown_url
from .engine import MAX_BODY_BYTES, MAX_RESPONSE_BYTES, Claim, Engine, Prepared

log = logging.getLogger("bead.proxy")

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# Recomputed by the HTTP layers on each side.
# x-bead-token: bead's own (health, the dashboard); it names the home's token, which never goes upstream.
REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "x-bead-token"}
# Hypercorn writes its own date; the upstream's server header passes through.
RESPONSE_DROP = HOP_BY_HOP | {"date"}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _connection_named(headers: list[tuple[str, str]]) -> frozenset[str]:
    """The headers a message's Connection header names: hop-by-hop like Connection itself (RFC 9110, 7.6.1), so a
    proxy removes them, from a request and an answer (a client's `Connection: close, X-Secret-Hop` went upstream with
    its X-Secret-Hop)."""
    return frozenset(
        name.strip().lower() for k, v in headers if k.lower() == "connection" for name in v.split(",") if name.strip()
    )


_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{16,128}")


def _basic_credentials(value: str) -> str:
    """What ``Authorization: Basic ...`` carries, decoded ("" for anything else): a base URL written
    ``http://user:TOKEN@127.0.0.1/`` makes a client send the token so."""
    scheme, _, rest = value.strip().partition(" ")
    rest = rest.strip()
    if scheme.lower() != "basic" or not rest:
        return ""
    try:  # unpadded too (some clients leave the padding out); the header's size is the server's to bound
        return base64.b64decode(rest + "=" * (-len(rest) % 4)).decode("latin-1")
    except ValueError:
        return ""


def _raw_header_bytes(asgi_app: Any) -> Any:
    """The app with its answers' header values sent as the bytes they stand for: the proxy relays an upstream's
    headers as latin-1 text (one character a byte: a value that is not UTF-8, an ISO-8859-1 file name, is kept), and
    Quart writes a value as UTF-8, which would turn each byte above ASCII into two. Values that are ASCII, as every
    header bead writes itself is, are the same bytes either way."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def send_raw(message: Any) -> None:
            if message.get("type") == "http.response.start" and any(
                any(b > 0x7F for b in v) for _, v in message.get("headers") or ()
            ):
                message = {**message, "headers": [(k, _latin1(v)) for k, v in message["headers"]]}
            await send(message)

        await asgi_app(scope, receive, send_raw)

    return app


def _latin1(value: bytes) -> bytes:
    try:
        return value.decode("utf-8").encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return value


class UpstreamBroke(Exception):
    """The upstream dropped a response mid-way: the harness must see a broken response too."""


class _Relayed(Response):
    """The upstream's answer: its headers as it sent them, no Content-Type added where it sent none (Quart's
    default is text/html)."""

    default_mimetype = None  # type: ignore[assignment]  # werkzeug reads None as "add none"


def _api_error(status: int, message: str, kind: str = "api_error", api: str = "anthropic") -> Response:
    """An error bead itself answers, in the shape of the API the request speaks (bead.wire.formats). Its connection is
    not kept: most come before the request's body was read (a refusal), after which the server closes the connection
    anyway, and a client that did not hear so sent its next request on it and got no answer (a test's SDK, now and
    then: "Server disconnected without sending a response")."""
    response = Response(formats.APIS[api].error(message, kind), status=status, content_type="application/json")
    response.headers["Connection"] = "close"
    return response


def _stalled(api: str) -> Response:
    """The answer to a request whose body kept the proxy waiting too long (BODY_WAIT_S); its connection is not kept."""
    return _api_error(408, f"bead proxy: the request body kept the proxy waiting {BODY_WAIT_S:.0f} s", api=api)


def _api_behind_a_segment(raw_path: str) -> formats.Api | None:
    """The API with a path prefix whose name is the path's second segment (``/<x>/openai/...``): a request
    of that API behind a token that is not the home's (None when there is none). Not where the first segment is an
    API's prefix itself: Azure's client, given ``.../TOKEN/openai`` as its endpoint, asks
    ``/TOKEN/openai/openai/deployments/...`` (an outside attack found it refused as a stale token)."""
    segments = raw_path.split("?", 1)[0].split("/")
    prefixes = [a for a in formats.APIS.values() if a.prefix]
    if any(segments[1:2] == [a.prefix[1:]] for a in prefixes):
        return None
    return next((a for a in prefixes if segments[2:3] == [a.prefix[1:]]), None)


def _scope_headers() -> list[tuple[str, str]]:
    """The headers as they arrived, in order (Quart's request.headers adds its own, Remote-Addr)."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]


@functools.cache
def tls_context() -> Any:
    """httpx's default TLS settings (certifi's roots), built once per process: loading the roots
    costs ~20 ms of CPU, and an app started again in the same process (the tests) needs no new one."""
    try:
        return httpx.create_ssl_context()
    except OSError as exc:  # ssl.SSLError too: SSL_CERT_FILE or SSL_CERT_DIR naming nothing, or no certificates
        named = ", ".join(f"{k}={os.environ[k]}" for k in ("SSL_CERT_FILE", "SSL_CERT_DIR") if os.environ.get(k))
        raise BeadError(
            f"the proxy cannot load the certificates it checks the upstream's against ({named or 'certifi'}): "
            f"{exc.strerror or exc}",
            "point SSL_CERT_FILE or SSL_CERT_DIR at a readable CA bundle, or unset them to use certifi's",
        ) from None


def prepare() -> None:
    """What the serving process needs, done before it serves: with several workers, once by their supervisor and
    shared after the fork instead of by each worker for itself. The build id (a read of the package's files),
    the TLS roots (~20 ms of CPU; a bad SSL_CERT_FILE is said here, not as a worker's crash), the secret scan's
    rules (~30 ms; the warm-up builds them otherwise) and the upstream client's modules, which httpx imports on
    its first use (~40 ms). Nothing here starts a thread or opens a connection."""
    build_id()
    tls_context()
    ruleset()
    import anyio.lowlevel  # noqa: F401
    import httpcore  # noqa: F401


UNREAD_BYTES = 4 * 1024 * 1024  # of a request body, what may wait unread once the proxy reads it part by part
UNPACED_UNREAD_BYTES = 64 * 1024 * 1024  # over HTTP/2, where the sender is not held back: past it, the body ends
# How long, in all, a request body may keep the proxy waiting for its bytes; past it the request ends with a 408. A
# sender that stops half way (another user on the machine: headers, then nothing, or a byte now and then) held its
# connection, and up to 32 MiB of what it sent, for good; holding thousands so left no file descriptor for the
# owner's harness (an outside attack). A harness on loopback sends its body at once; the time the proxy itself does
# not read (an upstream that takes a large upload slowly) is not counted.
BODY_WAIT_S = 30.0


class BodyStalled(Exception):
    """A request body kept the proxy waiting for its bytes for BODY_WAIT_S in all."""


STREAM_FROM_BYTES = 1024 * 1024  # a body of a route bead does not read goes upstream as it comes past this


class _Body(QuartBody):
    """Quart's request body, which takes what the connection delivers as fast as it comes: unread, a body of
    gigabytes sat whole in a worker's memory, sent by anyone on the machine (no token is needed to be forwarded).
    Once the proxy reads it part by part (``async for``), taking more waits while UNREAD_BYTES are unread
    (``put``), so the sender waits on the socket instead; awaited whole, it is Quart's."""

    def __init__(self, expected_content_length: int | None, max_content_length: int | None) -> None:
        super().__init__(expected_content_length, max_content_length)
        self._read_in_parts = False
        self._drained = asyncio.Event()
        self._drained.set()
        self._waited = 0.0  # seconds spent waiting in __anext__ for the sender's bytes

    async def __anext__(self) -> bytes:
        self._read_in_parts = True
        left = BODY_WAIT_S - self._waited
        if left <= 0:
            raise BodyStalled
        start = time.monotonic()
        try:
            data = await asyncio.wait_for(super().__anext__(), left)
        except TimeoutError:
            raise BodyStalled from None
        finally:
            self._waited += time.monotonic() - start
        self._drained.set()
        return data

    async def put(self, data: bytes, paced: bool = True) -> None:
        self.append(data)
        # Quart's own fields (0.20 to 0.22 have them; a Quart without them takes the body as it always did).
        unread, complete = getattr(self, "_data", b""), getattr(self, "_complete", None)
        if not self._read_in_parts or complete is None or complete.is_set():
            return
        if paced and len(unread) >= UNREAD_BYTES:
            self._drained.clear()
            await self._drained.wait()
        elif not paced and len(unread) > UNPACED_UNREAD_BYTES:
            # HTTP/2: no waiting (it would hold the connection's other streams), so a body its upstream does not read
            # fast enough ends, as one too large, past UNPACED_UNREAD_BYTES held: not the whole of it in memory.
            self._must_raise = RequestEntityTooLarge()
            self.set_complete()


class _Request(QuartRequest):
    body_class = _Body


class _Connection(ASGIHTTPConnection):
    """Quart's HTTP connection, whose receiving waits for the proxy to read (``_Body.put``). When the answer is
    sent, Quart cancels the receiving: what the proxy did not read of a body is never taken in."""

    async def handle_messages(self, request: QuartRequest, receive: Any) -> None:
        body = request.body
        # HTTP/1 only: over HTTP/2 Hypercorn reads every stream of a connection in one loop, and a stream waiting here
        # held the connection's other requests (their answers too) until its upstream read on.
        paced = self.scope.get("http_version", "1.1").startswith("1")
        while True:
            message = await receive()
            if message["type"] == "http.request":
                data = message.get("body", b"")
                if isinstance(body, _Body):
                    await body.put(data, paced)
                else:
                    body.append(data)
                if not message.get("more_body", False):
                    body.set_complete()
            elif message["type"] == "http.disconnect":
                return


class ProxyApp(Quart):
    request_class = _Request
    asgi_http_class = _Connection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asgi_app = _raw_header_bytes(self.asgi_app)  # type: ignore[method-assign]

    def log_exception(self, exception_info: Any) -> None:
        """Never the request's path in a log line: it can carry the home's token."""
        exc_type = exception_info[0]
        log.error("unhandled %s in the proxy", exc_type.__name__ if exc_type else "error")


PREPARE_THREADS = 4


def _dot_segment(segment: bytes) -> bool:
    """A `.` or `..` path segment, percent-encoded or not (`%2e%2e`: a gateway that decodes before it normalises
    reads it as `..` and leaves the configured base path: an outside attack)."""
    return segment.lower().replace(b"%2e", b".") in (b".", b"..")


def _kernel_says(client: tuple[str, int] | None, server: tuple[str, int] | None) -> bool:
    """Whether the kernel can say whose a connection is (Linux, both ends known: bead.proxy.access.peer_uid)."""
    return sys.platform.startswith("linux") and client is not None and server is not None


def _no_trailing_slash(url: str) -> str:
    """An upstream URL without the slashes that end it; one with a query as given (`?key=a/b/` keeps its slash; the
    forward strips the path's own)."""
    return url if "?" in url else url.rstrip("/")


class Proxy:
    """The proxy's parts, each one job: the upstream client's life (``start``, ``stop``), the request guard, the
    health endpoint, the owner check, the WebSocket refusal and the forwarding of one request."""

    def __init__(self, engine: Engine, upstreams: dict[str, str], token: str, owner_uid: int | None):
        self.engine = engine
        self.token = token
        self.token_lower = token.lower()  # a header's name arrives lower-cased
        self.owner_uid = owner_uid
        # Each API's upstream: its setting (bead.wire.formats.Api.upstream) as given here (the command line's),
        # else as config.yaml has it.
        self.bases = {
            api.name: httpx.URL(_no_trailing_slash(upstreams.get(api.upstream) or getattr(engine.config.proxy, api.upstream)))
            for api in formats.APIS.values()
        }
        # An upstream whose URL holds a credential (a gateway's `user:password@`, `?key=`, a key in its path: what
        # bead shows as `***`): that credential goes only with its owner's requests (an outside attack: another OS
        # user's requests went upstream with the person's gateway account).
        self.credentialed = {name: access.shown_url(str(url)) != str(url) for name, url in self.bases.items()}
        self.client: httpx.AsyncClient | None = None
        self.health_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bead-health")
        # The kernel's word on whose a connection is, asked before a body is read: threads of its own, not the
        # preparations' (a preparation stuck past its guard holds one of those, and every request without the token
        # would wait behind it), and within the request's deadline.
        self.owner_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bead-owner")
        build_id()  # read the package's files now, not on the first health request

    async def start(self) -> None:
        # The preparations' threads (asyncio.to_thread): each holds a connection to the index, so a bounded few
        # (Python's default is the number of cores + 4); the GIL runs one at a time anyway.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=PREPARE_THREADS, thread_name_prefix="bead-prepare")
        )
        # TCP_NODELAY: headers and body leave in separate writes, and Nagle's
        # algorithm against the server's delayed ACK would add ~40 ms to each.
        close_connections_left_with_bytes()
        transport = httpx.AsyncHTTPTransport(
            verify=tls_context(),
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
        )
        self.client = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(connect=15.0, read=None, write=None, pool=None),
            follow_redirects=False,
            # One client serves every harness, session and user of the machine: a cookie an answer set (a CDN's
            # __cf_bm) would go out on everyone's later requests, a header none of them sent. The answer's
            # Set-Cookie still reaches its own harness, which keeps what it wants.
            cookies=_NoCookies(),
        )
        # The request's headers as the harness sent them: none of httpx's own (Accept, Accept-Encoding: gzip,
        # User-Agent), or an upstream could compress an answer for a client that never asked for it.
        self.client.headers.clear()
        self.engine.warm_up()

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        await asyncio.to_thread(self.engine.drain, 30.0)

    async def guard(self) -> Response | None:
        # A web page must not be able to read or write memory through
        # 127.0.0.1 (cross-site requests, DNS rebinding).
        raw = _scope_headers()
        headers = {k.lower(): v for k, v in raw}
        if sum(1 for k, _ in raw if k.lower() == "host") > 1:
            return _api_error(403, "bead proxy refuses a request with two Host headers", "permission_error")
        why = access.browser_refusal(headers)
        if why:
            return _api_error(403, why, "permission_error")
        target = request.scope.get("raw_path", b"/")
        path_only = target.split(b"?", 1)[0]
        # The query is apart from raw_path: a "#" there is a fragment too (httpx will not build the URL).
        if (
            not target.startswith(b"/")
            or b"#" in target
            or b"#" in request.scope.get("query_string", b"")
            or any(_dot_segment(seg) for seg in path_only.split(b"/"))
        ):
            return _api_error(
                400,
                "bead proxy takes only a plain path (no fragment, no . or .. segment) as the request target",
                "invalid_request_error",
            )
        return None

    async def health(self) -> Response:
        """Anyone on the machine may learn that the proxy answers (the wrapper's check); only the
        owner (the token in X-Bead-Token, or the kernel's word) sees its home, counts and errors."""
        loop = asyncio.get_running_loop()
        offered = request.headers.get("x-bead-token", "")
        has_token = bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())
        challenge = request.headers.get("x-bead-challenge", "")
        peer, ours = _ends()
        # The proof that this is the home's proxy, reached at this address (bead.ports): a client sends nothing of
        # the person's before it checked it.
        proved = (
            {"X-Bead-Proof": health_proof(self.token, challenge, bound_address(*ours))}
            if self.token and ours is not None and CHALLENGE.fullmatch(challenge)
            else {}
        )
        # Its own thread: preparations stuck on a slow disk never keep health from answering.
        if not await loop.run_in_executor(self.health_pool, self.is_owner, has_token, peer, ours):
            return Response(json.dumps({"ok": True, "version": __version__}), content_type="application/json", headers=proved)
        state_ = await loop.run_in_executor(self.health_pool, self.engine.store_state)
        return Response(
            json.dumps(
                {
                    "ok": True,
                    "version": __version__,
                    "build": build_id(),
                    "upstream": shown_url(str(self.bases["anthropic"])),
                    "openai_upstream": shown_url(str(self.bases["openai"])),
                    "home": str(self.engine.home.root),
                    **self.engine.health(),
                    **state_,
                }
            ),
            content_type="application/json",
            headers=proved,
        )

    def _token_shaped(self, raw_path: str) -> bool:
        """Whether the path's first segment, percent-decoded, has the shape of a home's token (URL-safe letters,
        16 to 128 of them): a stale or mistyped token, or this one percent-encoded, is never sent upstream."""
        first = raw_path.split("?", 1)[0].split("/")[1:2]
        return bool(self.token) and bool(first) and _TOKEN_SHAPE.fullmatch(urllib.parse.unquote(first[0])) is not None

    def _token_inside(self, raw_path: str, query: bytes) -> bool:
        """Whether this home's token is anywhere in what would go upstream (the path left after its leading
        token, the query), as sent or percent-decoded (twice: a proxy before bead may have encoded it)."""
        if not self.token:
            return False
        sent = raw_path + "?" + query.decode("latin-1")
        once = urllib.parse.unquote(sent)
        return any(self.token in form for form in (sent, once, urllib.parse.unquote(once)))

    def is_owner(self, has_token: bool, client: tuple[str, int] | None, server: tuple[str, int] | None) -> bool:
        if has_token:
            return True
        if not _kernel_says(client, server) or client is None or server is None:  # the None checks: for mypy
            return False
        return access.peer_uid(client, server) == self.owner_uid

    async def _owner(self, peer_and_ours: tuple[tuple[str, int] | None, tuple[str, int] | None]) -> bool:
        """Whether a request without the token comes from the home's owner, as the kernel says (Linux); past the
        engine's deadline the answer is no (its request goes on unprepared, as any that fails open)."""
        peer, ours = peer_and_ours
        if not _kernel_says(peer, ours):
            return False  # no thread asked where the kernel has no word
        loop = asyncio.get_running_loop()
        asked = loop.run_in_executor(self.owner_pool, self.is_owner, False, peer, ours)
        try:
            return bool(await asyncio.wait_for(asked, self.engine.deadline_s))
        except TimeoutError:
            self.engine.error("deadline", TimeoutError("the owner check passed the deadline"))
            return False

    async def no_websocket(self, path: str) -> Response:
        """bead relays HTTP only. Codex CLI's built-in OpenAI provider tries a WebSocket first: a 426 makes
        it fall back to HTTP at once (a 400 stops it, a 404 costs it seconds of retries)."""
        _, raw_path = access.split_token(websocket.scope["raw_path"].decode("latin-1"), self.token)
        return _api_error(
            426,
            "bead proxy relays HTTP only: send this request over HTTP",
            "invalid_request_error",
            api=formats.api_of(raw_path).name,
        )

    async def forward(self, path: str) -> Response:
        """Forward one request: prepare it (a conversation route of a known format, for the owner), send it,
        stream the answer back and hand what was captured to the engine."""
        engine = self.engine
        start = time.monotonic()
        raw_headers = _scope_headers()
        headers = {k.lower(): v for k, v in raw_headers}
        # The path as sent (percent-encoding intact), not Quart's decoded one,
        # less the owner's token when it leads.
        has_token, raw_path = access.split_token(request.scope["raw_path"].decode("latin-1"), self.token)
        stale = _api_behind_a_segment(raw_path)
        if stale is not None:
            # A stale or mistyped token before an API's prefix (/openai): as an Anthropic path it would carry the
            # harness's OpenAI key to the Anthropic upstream. Nothing leaves; the harness says why.
            return _api_error(
                403,
                f"bead proxy: the path segment before {stale.prefix} is not this home's token "
                f"(the base URL is http://127.0.0.1:<port>/<the token in proxy.token>{stale.prefix}/v1)",
                "permission_error",
                api=stale.name,
            )
        if self.token and any(
            self.token_lower in k.lower() or self.token in v or self.token in _basic_credentials(v)
            for k, v in raw_headers
            if k.lower() not in REQUEST_DROP
        ):
            # An API key set to the token (Authorization: Bearer TOKEN), or a header naming it: it would go upstream.
            return _api_error(
                403,
                "bead proxy: a request header holds this home's token, which never goes upstream; the token belongs "
                "in the base URL's path (http://127.0.0.1:<port>/<the token in proxy.token>), not in an API key",
                "permission_error",
                api=formats.api_of(raw_path).name,
            )
        if self._token_inside(raw_path, request.scope.get("query_string") or b""):
            # This home's token further on (a base URL written with "//" before it, or the token twice): whatever
            # the route, the upstream would get it.
            return _api_error(
                403,
                "bead proxy: the request's path or query holds this home's token after its start; the base URL is "
                "http://127.0.0.1:<port>/<the token in proxy.token> (one slash before the token)",
                "permission_error",
                api=formats.api_of(raw_path).name,
            )
        if not has_token and self._token_shaped(raw_path):
            # A stale or mistyped token on a route without a prefix: forwarded, the upstream would see the
            # segment (and the harness a puzzling 404). Refused here, as a stale token before /openai is.
            return _api_error(
                403,
                "bead proxy: the path's first segment has the shape of a token and is not this home's token "
                "(the base URL is http://127.0.0.1:<port>/<the token in proxy.token>)",
                "permission_error",
                api=formats.api_of("/" + raw_path.split("/", 2)[-1]).name,
            )
        api_of, raw_path, fmt = formats.route(request.method, raw_path)
        api, wire = api_of.name, (fmt.wire if fmt is not None else None)
        if (wire is not None or self.credentialed[api]) and not has_token:
            # Whose request it is, before its body is read: another user's is forwarded as it comes, as any route
            # bead does not read, not held in memory up to MAX_BODY_BYTES first (an outside attack held 33 MB a
            # connection so); to an upstream whose URL holds a credential, not at all.
            if not await self._owner(peer_and_ours=_ends()):
                engine.count("not_owner")
                if self.credentialed[api]:
                    return _api_error(
                        403,
                        "bead proxy: the upstream's URL holds a credential, which goes only with its owner's requests: "
                        "put the home's token in the base URL (http://127.0.0.1:<port>/<the token in proxy.token>)",
                        "permission_error",
                        api=api,
                    )
                wire = None
        # Read part by part, up to what bead would ever read of it (a conversation route's MAX_BODY_BYTES, another
        # route's first STREAM_FROM_BYTES): the rest (a file upload, or someone's gigabytes) goes upstream as it
        # comes, never whole in memory (``_Body``).
        try:
            body, rest = await _first_bytes(MAX_BODY_BYTES if wire is not None else STREAM_FROM_BYTES)
        except RequestEntityTooLarge:
            return _api_error(413, "bead proxy: the request body came faster than it could be sent on", api=api)
        except BodyStalled:
            return _stalled(api)
        prep = Prepared(body)
        if rest is not None:
            if wire is not None:
                engine.count("too_large")  # as a body bead reads would be: forwarded as sent, nothing recorded
            wire = None
        if wire is not None:

            def work(deadline: float, claim: Claim) -> Prepared:
                return engine.prepare(body, headers, deadline, wire, claim)

            prep = await _prepare(engine, work, body, start)
        # As bytes: httpx sends bytes as they are, where a str value holding a character above 0x7f (a project's
        # name in X-Bead-Project) would fail to encode and the request would not go out.
        hop = REQUEST_DROP | _connection_named(raw_headers)
        out_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in raw_headers if k.lower() not in hop]
        if rest is not None and "content-length" in headers and "transfer-encoding" not in headers:
            # Sent on as it comes, unchanged: its length as the harness gave it (httpx would frame it in chunks,
            # which some upload endpoints refuse).
            out_headers.append((b"content-length", headers["content-length"].encode("latin-1")))
        query = request.scope.get("query_string") or b""
        # Always the configured scheme, host and port: the request target only names a path.
        up_base = self.bases[api]
        # An upstream's own query (a gateway's `?key=`, Azure's `?api-version=`) goes after the path, before the
        # request's own: glued on as a path, the request's path went inside the upstream's query (an outside attack).
        base_path, _, base_query = up_base.raw_path.partition(b"?")
        queries = [q for q in (base_query, query) if q]
        target = base_path.rstrip(b"/") + raw_path.encode("latin-1") + (b"?" + b"&".join(queries) if queries else b"")
        client = self.client
        assert client is not None, "the app started serving"
        try:
            # The target goes out as the harness sent it (httpx would percent-encode `{`, `"` or `<`: the
            # transport's "target" extension sends the bytes as they are); the URL names the upstream. Built inside
            # the try: a target httpx refuses (a control character an HTTP/2 client sent) is bead's 502, not a 500.
            url = up_base.copy_with(raw_path=target)
            content: bytes | typing.AsyncIterator[bytes] = prep.body if rest is None else _then(body, rest)
            out = client.build_request(request.method, url, headers=out_headers, content=content, extensions={"target": target})
            up = await client.send(out, stream=True)
        except Exception as exc:  # noqa: BLE001 - h11's own protocol errors pass httpx unwrapped; never a 500
            if isinstance(exc, BodyStalled) or isinstance(exc.__cause__ or exc.__context__, BodyStalled):
                return _stalled(api)  # the rest of a body sent on as it came stopped coming
            # Unreachable, or a target httpx will not send: bead's one own error, in the API's shape.
            engine.error("upstream", exc)
            return _api_error(502, f"bead proxy could not reach the upstream API ({type(exc).__name__})", api=api)
        engine.forwarded(prep)
        # Each value as its bytes were (latin-1 is one character a byte); _raw_header_bytes writes them back so.
        # An answer framed by chunks comes out of httpx unchunked, so a Content-Length beside it (two framings, which
        # HTTP says to settle by the chunks) would announce another length than the bytes relayed, and the harness's
        # client would drop the answer.
        drop = RESPONSE_DROP | ({"content-length"} if "transfer-encoding" in up.headers else set())
        drop |= _connection_named([(k.decode("latin-1"), v.decode("latin-1")) for k, v in up.headers.raw])
        resp_headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in up.headers.raw if k.decode("latin-1").lower() not in drop
        ]
        response = _Relayed(self._relay(up, prep), status=up.status_code, headers=Headers(resp_headers))
        response.timeout = None  # a long stream is never cut
        return response

    async def _relay(self, up: httpx.Response, prep: Prepared) -> typing.AsyncIterator[bytes]:
        """The upstream's answer, chunk by chunk as it arrives; what a captured request answered is kept (up to
        MAX_RESPONSE_BYTES) and handed to the engine when the stream ends, whole or broken."""
        capture = prep.ident is not None and up.status_code < 400
        chunks: list[bytes] = []
        kept, truncated, broke = 0, False, False
        # A Responses answer's id, as soon as the stream names it: the next step of the chain (its
        # previous_response_id) may come the moment the answer ends, before the capture job has run.
        make = getattr(prep.wire, "response_id_sniffer", None)
        sniff = make() if make is not None and capture and not up.headers.get("content-encoding") else None
        try:
            async for chunk in up.aiter_raw():
                if capture and not truncated:
                    if kept + len(chunk) <= MAX_RESPONSE_BYTES:
                        chunks.append(chunk)
                        kept += len(chunk)
                    else:
                        truncated = True  # give up on the rest rather than buffer it
                if sniff is not None and not sniff.done:
                    sniff.feed(chunk)
                    if sniff.found:
                        self.engine.chained(prep, sniff.found)
                yield chunk
        except httpx.HTTPError as exc:
            self.engine.error("upstream_stream", exc)
            broke = True
            # Pass the break on: the harness must see a broken response,
            # as it would without bead, and retry as it would then.
            raise UpstreamBroke(type(exc).__name__) from None
        finally:
            await up.aclose()
            if sniff is not None and not sniff.found and not broke and (rid := sniff.end()):
                self.engine.chained(prep, rid)  # a whole JSON answer (no stream) names its id only at its end
            if capture:
                self.engine.finished(
                    prep, chunks, up.headers.get("content-type", ""), up.headers.get("content-encoding"), truncated or broke
                )


def close_connections_left_with_bytes() -> None:
    """Make httpcore close an upstream connection whose answer is followed by bytes the upstream should not have sent
    (more than its Content-Length, a body after a 204 or a HEAD's answer), instead of putting it back in the pool:
    reused, it handed those bytes to the next request on it, maybe another harness's, as that request's answer (an
    outside attack and its review). Checked where httpcore decides, under the connection's lock, before the
    connection is idle (a check after the answer ended raced the next request for it), in the HTTP/1.1 parser's
    buffer and, over TLS, in the records already read (a second record was missed). Bytes that come later make the
    socket readable, which httpcore already takes for a closed connection. httpcore has no public hook for this; where
    its connection class has changed, nothing is patched (tests/test_proxy_passthrough.py fails then). Idempotent."""
    try:
        from httpcore._async.http11 import AsyncHTTP11Connection
    except ImportError:  # pragma: no cover - another httpcore
        return
    original = getattr(AsyncHTTP11Connection, "_response_closed", None)
    if original is None or getattr(original, "_bead_checks_leftovers", False):
        return

    async def _response_closed(self: Any) -> None:
        if _bytes_left(self):
            await self.aclose()  # sets the connection closed before it awaits: the pool never hands it out again
        else:
            await original(self)

    _response_closed._bead_checks_leftovers = True  # type: ignore[attr-defined]
    AsyncHTTP11Connection._response_closed = _response_closed  # type: ignore[method-assign]


def _bytes_left(conn: Any) -> bool:
    """Whether bytes wait on ``conn`` (an httpcore HTTP/1.1 connection whose answer just ended): in h11's buffer, or in
    the TLS layer's (anyio's TLS stream: decrypted, or records read and not yet decrypted)."""
    try:
        data, _closed = conn._h11_state.trailing_data
    except (AttributeError, TypeError, ValueError):
        return False
    if data:
        return True
    tls = getattr(getattr(conn, "_network_stream", None), "_stream", None)
    ssl_object, bio = getattr(tls, "_ssl_object", None), getattr(tls, "_read_bio", None)
    if ssl_object is None:
        return False
    try:
        if ssl_object.pending():
            return True
        if bio is None or not bio.pending:
            return False
        # Records read past the answer: a session ticket is no data (SSLWantReadError), anything else (the upstream's
        # extra bytes, or its close) ends the connection.
        ssl_object.read(1)
        return True
    except ssl.SSLWantReadError:
        return False
    except (ssl.SSLError, OSError, ValueError):
        return True


async def _first_bytes(limit: int) -> tuple[bytes, typing.AsyncIterator[bytes] | None]:
    """The request body whole when it is at most ``limit`` bytes, with None; else its first bytes read so far and
    an iterator over the rest, read as it is sent on."""
    parts = request.body.__aiter__()
    got: list[bytes] = []
    size = 0
    async for chunk in parts:
        got.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(got), parts
    return b"".join(got), None


async def _then(first: bytes, rest: typing.AsyncIterator[bytes]) -> typing.AsyncIterator[bytes]:
    yield first
    async for chunk in rest:
        yield chunk


class _NoCookies(http.cookiejar.CookieJar):
    """A cookie jar that keeps nothing: the proxy adds no header a harness did not send."""

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None


def create_app(
    engine: Engine, upstream: str, token: str | None = None, owner_uid: int | None = None, openai_upstream: str | None = None
) -> Quart:
    """The proxy app. ``token`` marks the owner's requests (default: the home's); ``owner_uid`` is the
    UID whose loopback connections count as the owner's on Linux (default: the home's owner);
    ``openai_upstream`` takes the paths under /openai (default: config ``proxy.openai_upstream``)."""
    app = ProxyApp("bead.proxy", static_folder=None)  # no /static route: every path is forwarded
    app.config.update(MAX_CONTENT_LENGTH=None, BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None)
    proxy = Proxy(
        engine,
        {"upstream": upstream, "openai_upstream": openai_upstream or ""},
        load_token(engine.home) if token is None else token,
        access.home_owner(engine.home) if owner_uid is None else owner_uid,
    )
    app.before_serving(proxy.start)
    app.after_serving(proxy.stop)
    app.before_request(proxy.guard)
    app.route("/bead/health", methods=["GET"])(proxy.health)
    app.websocket("/", defaults={"path": ""})(proxy.no_websocket)
    app.websocket("/<path:path>")(proxy.no_websocket)
    app.route("/", defaults={"path": ""}, methods=METHODS)(proxy.forward)
    app.route("/<path:path>", methods=METHODS)(proxy.forward)
    app.extensions["bead.engine"] = engine  # for tests and status
    return app


def _ends() -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The client's and our (address, port) of this connection (None when the server does not say)."""

    def end(value: Any) -> tuple[str, int] | None:
        if not value or len(value) < 2 or value[0] is None or value[1] is None:
            return None
        return str(value[0]), int(value[1])

    return end(request.scope.get("client")), end(request.scope.get("server"))


# How long a preparation that claimed its send (its state is being written: bead.proxy.engine.Claim) is waited for
# past the guard: such a request must go out as prepared, or the next one would re-add blocks the model never saw.
CLAIMED_WAIT_S = 5.0
# Past the request's deadline, how long the guard waits for a preparation stuck where it cannot look at the clock.
GUARD_S = 1.0


async def _prepare(engine: Engine, work: typing.Callable[[float, Claim], Prepared], body: bytes, start: float) -> Prepared:
    """The owner check and the engine's preparation in one worker thread, under the request's
    deadline (counted from its arrival)."""
    deadline = start + engine.deadline_s
    claim = Claim()
    task = asyncio.ensure_future(asyncio.to_thread(work, deadline, claim))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())  # one given up on ends unheard
    try:
        # The engine stops itself at the deadline; the wait here only guards
        # against a thread stuck where it cannot look at the clock.
        done, _ = await asyncio.wait({task}, timeout=engine.deadline_s + GUARD_S)
        if not done and not claim.abandon():
            # It claimed the send and is recording what it holds: it goes out as prepared.
            done, _ = await asyncio.wait({task}, timeout=CLAIMED_WAIT_S)
        if not done:
            claim.abandon()
            engine.error("deadline", TimeoutError("the preparation passed the proxy's guard"))
            return Prepared(body)
        return task.result()
    except asyncio.CancelledError:
        claim.abandon()  # the request is gone: what the preparation would send is recorded nowhere
        raise
    except Exception as exc:
        engine.error("inject", exc)
        return Prepared(body)
