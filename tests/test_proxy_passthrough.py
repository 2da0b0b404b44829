"""What the proxy forwards is what it was given, in bytes an HTTP library would tidy: the request target as the
harness sent it, an answer's headers as the upstream sent them (none added), and a target it cannot send answered
with bead's own error in the API's shape, never a 500 (an adversarial review found each)."""

from __future__ import annotations

import contextlib
import json
import os
import socket

import h2.config
import h2.connection
import h2.events
import pytest
from rawhttp import RawUpstream, head_of, raw_request

OK_JSON = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"


@pytest.fixture
def raw_upstream():
    made: list[RawUpstream] = []

    def make(response: bytes = OK_JSON) -> RawUpstream:
        made.append(RawUpstream(response))
        return made[-1]

    yield make
    for u in made:
        u.close()


def get(url: str, target: bytes, method: bytes = b"GET") -> bytes:
    return raw_request(url, method + b" " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")


@pytest.mark.parametrize("target", [b"/v1/a{b}", b'/v1/models?q="x"', b"/v1/models?q=<a>`", b"/v1/files/a^b|c"])
def test_the_request_target_goes_upstream_as_sent(served_proxy, raw_upstream, target):
    up = raw_upstream()
    out = get(served_proxy(upstream_url=up.url).url, target)
    assert out.startswith(b"HTTP/1.1 200"), out
    assert up.requests[0][0].split(b"\r\n")[0] == b"GET " + target + b" HTTP/1.1"


@pytest.mark.parametrize(
    "base,target,sent",
    [
        ("/gw?key=GWKEY", b"/v1/messages?beta=true", b"/gw/v1/messages?key=GWKEY&beta=true"),
        ("/?key=GWKEY", b"/v1/models", b"/v1/models?key=GWKEY"),
        ("/gw/?key=a/b/", b"/v1/models", b"/gw/v1/models?key=a/b/"),
        ("/openai/?api-version=2024-10-21", b"/v1/chat/completions", b"/openai/v1/chat/completions?api-version=2024-10-21"),
    ],
)
def test_an_upstream_urls_own_query_goes_after_the_requests_path(served_proxy, raw_upstream, base, target, sent):
    """A gateway's upstream URL with a query (`?key=`, `?api-version=`): the request's path was glued on after the
    query, inside it, so every request reached the wrong route (an outside attack). The path goes after the
    upstream's path, the upstream's query and then the request's after it."""
    up = raw_upstream()
    out = get(served_proxy(upstream_url=up.url + base).url, target)
    assert out.startswith(b"HTTP/1.1 200"), out
    assert up.requests[0][0].split(b"\r\n")[0] == b"GET " + sent + b" HTTP/1.1"


@pytest.mark.parametrize(
    "answer,method",
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok", b"GET"),
        (b"HTTP/1.1 204 No Content\r\nx-request-id: r1\r\nconnection: close\r\n\r\n", b"DELETE"),
    ],
    ids=["200", "204"],
)
def test_an_answer_without_a_content_type_gets_none(served_proxy, raw_upstream, answer, method):
    up = raw_upstream(answer)
    status, headers, _ = head_of(get(served_proxy(upstream_url=up.url).url, b"/v1/files/x", method))
    assert status.split()[1] == answer.split()[1]
    assert b"content-type" not in dict(headers), headers
    assert dict(headers).get(b"x-request-id", b"r1") == b"r1"


def test_an_answers_content_type_is_kept(served_proxy, raw_upstream):
    up = raw_upstream()
    _, headers, body = head_of(get(served_proxy(upstream_url=up.url).url, b"/v1/models"))
    assert dict(headers)[b"content-type"] == b"application/json" and body == b"ok"


def test_an_answers_header_bytes_reach_the_harness_as_sent(served_proxy, raw_upstream):
    """A value that is not UTF-8 (ISO-8859-1's é) beside one that is (€): each byte as the upstream sent it, not
    re-encoded (the other direction is tests/test_proxy_trust.py's)."""
    sent = [(b"x-note", b"caf\xe9"), (b"x-file", b"\xe2\x82\xac5.txt"), (b"x-request-id", b"r1")]
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    answer += b"".join(k + b": " + v + b"\r\n" for k, v in sent) + b"content-length: 2\r\nconnection: close\r\n\r\nok"
    up = raw_upstream(answer)
    _, headers, body = head_of(get(served_proxy(upstream_url=up.url).url, b"/v1/models"))
    assert [(k, v) for k, v in headers if k in dict(sent)] == sent and body == b"ok"


def h2_get(url: str, path: bytes) -> tuple[bytes | None, bytes]:
    """One GET over HTTP/2 with prior knowledge (h2c, which Hypercorn accepts), its path sent without checks:
    (status, body)."""
    host, port = url.rsplit("/", 1)[-1].split(":")
    conn = h2.connection.H2Connection(
        h2.config.H2Configuration(
            client_side=True, header_encoding=None, validate_outbound_headers=False, normalize_outbound_headers=False
        )
    )
    conn.initiate_connection()
    conn.send_headers(
        1, [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"127.0.0.1"), (b":path", path)], end_stream=True
    )
    status, body = None, b""
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(conn.data_to_send())
        done = False
        while not done and (chunk := s.recv(65536)):
            for ev in conn.receive_data(chunk):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = dict(ev.headers).get(b":status")
                elif isinstance(ev, h2.events.DataReceived):
                    body += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset, h2.events.ConnectionTerminated)):
                    done = True
            s.sendall(conn.data_to_send())
    return status, body


@pytest.mark.parametrize("path", [b"/v1/a\x01b", b"/v1/models?q=\x7f"])
def test_a_target_that_cannot_go_upstream_gets_beads_error_not_a_500(served_proxy, raw_upstream, path):
    """An HTTP/2 client may send a control character HTTP/1.1 refuses: nothing goes upstream, and the harness reads
    bead's error in the API's shape."""
    up = raw_upstream()
    proxy = served_proxy(upstream_url=up.url)
    assert h2_get(proxy.url, b"/v1/models") == (b"200", b"ok"), "HTTP/2 itself works"
    status, body = h2_get(proxy.url, path)
    assert status == b"502" and json.loads(body)["type"] == "error", (status, body)
    assert len(up.requests) == 1


def test_a_cookie_an_answer_sets_goes_out_on_no_later_request(served_proxy, raw_upstream):
    """One upstream client serves every harness, session and user: a Set-Cookie in one answer (a CDN's __cf_bm) was
    kept by it and sent on every later request, other users' too, a header none of them sent. The answer still
    carries its Set-Cookie to its own harness."""
    up = raw_upstream(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: __cf_bm=OWNER-SESSION; Path=/\r\n"
        b"content-length: 2\r\nconnection: close\r\n\r\nok"
    )
    url = served_proxy(upstream_url=up.url).url
    _, headers, _ = head_of(get(url, b"/v1/models"))
    assert dict(headers).get(b"set-cookie") == b"__cf_bm=OWNER-SESSION; Path=/"
    get(url, b"/v1/models")
    assert len(up.requests) == 2
    assert b"cookie:" not in up.requests[1][0].lower(), up.requests[1][0]


def test_an_answer_framed_twice_is_relayed_by_its_chunks(served_proxy, raw_upstream):
    """Content-Length and chunked framing both (HTTP settles it by the chunks): httpx hands over the unchunked bytes,
    and the relayed Content-Length announced fewer than came, so the harness's client got nothing."""
    up = raw_upstream(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n"
        b"connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )
    status, headers, body = head_of(get(served_proxy(upstream_url=up.url).url, b"/v1/models"))
    assert status.split()[1] == b"200" and dict(headers).get(b"content-length") != b"3", headers
    assert b"hello" in body, body


@pytest.mark.parametrize("path", ["/v1/files", "/v1/messages"])
def test_a_body_past_what_bead_reads_goes_upstream_as_it_comes_never_whole_in_memory(served_proxy, monkeypatch, path):
    """A body larger than bead ever reads (a file upload, or gigabytes anyone on the machine may send: no token is
    needed to be forwarded) was read whole into the worker before any of it went out; 1.5 GB took a worker to
    3 GB. It now goes upstream as it comes: while the upstream reads slowly, the sender is held back by the
    proxy instead of the proxy taking all it sends. Shown with bead's limit at 1 MiB and a 64 MiB body: at no
    point has the sender got more than 40 MiB ahead of what the upstream read (socket buffers and the proxy's
    few MiB); read whole first, it is the whole body ahead. The upstream gets every byte, in order."""
    import hashlib
    import threading
    import time

    from bead.proxy import app as proxy_app

    monkeypatch.setattr(proxy_app, "MAX_BODY_BYTES", 1024 * 1024)
    size, piece = 64 * 1024 * 1024, 64 * 1024
    sent = [0]
    ahead = [0]
    digest = [b""]
    framing = [b""]
    listener = socket.create_server(("127.0.0.1", 0))

    def upstream() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            _head, _, got = data.partition(b"\r\n\r\n")
            h = hashlib.sha256(got)
            received = len(got)
            while received < size:
                chunk = conn.recv(piece)
                if not chunk:
                    break
                h.update(chunk)
                received += len(chunk)
                ahead[0] = max(ahead[0], sent[0] - received)
                time.sleep(0.0005)  # a slow upstream: about 100 MB/s at most
            digest[0] = h.digest()
            framing[0] = _head.lower()
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")

    t = threading.Thread(target=upstream, daemon=True)
    t.start()
    proxy = served_proxy(upstream_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    port = int(proxy.url.rsplit(":", 1)[1])
    block = bytes(range(256)) * (piece // 256)
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
        try:
            for _ in range(size // piece):
                c.sendall(block)
                sent[0] += piece
        except BrokenPipeError:
            pass
        answer = b""
        while chunk := c.recv(65536):
            answer += chunk
    t.join(30)
    listener.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok"), answer[:200]
    assert f"content-length: {size}".encode() in framing[0] and b"transfer-encoding" not in framing[0], framing[0]
    assert digest[0] == hashlib.sha256(block * (size // piece)).digest()
    assert ahead[0] < 40 * 1024 * 1024, ahead[0]
    assert proxy.health()["too_large"] == (path == "/v1/messages")


def test_a_request_with_both_framings_and_a_large_body_goes_upstream_by_its_chunks(served_proxy):
    """Content-Length and chunked framing both on a request (HTTP settles it by the chunks), its body past what
    bead reads: the Content-Length was put back on the streamed body, h11 refused the longer body, and the harness
    got an HTML 500. It goes upstream by its chunks, whole."""
    import threading

    got: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def upstream() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
            got.append(data)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")

    threading.Thread(target=upstream, daemon=True).start()
    proxy = served_proxy(upstream_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    body = b"z" * (2 * 1024 * 1024)
    out = raw_request(
        proxy.url,
        b"POST /v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n",
    )
    listener.close()
    assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"ok"), out[:300]
    head, _, sent = got[0].partition(b"\r\n\r\n")
    assert b"content-length" not in head.lower() and b"transfer-encoding: chunked" in head.lower(), head
    assert sent.count(b"z") == len(body)


def test_over_http2_a_large_upload_holds_no_other_request_of_its_connection(served_proxy):
    """Over HTTP/2 Hypercorn reads every stream of a connection in one loop: an upload paced to its upstream (which
    had not read yet) held the connection's other requests until it did. An HTTP/2 body is taken as it comes."""
    import select
    import threading
    import time

    gate = threading.Event()
    heads: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def handle(conn: socket.socket) -> None:
        accepted.append(conn)
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            heads.append(head.split(b"\r\n")[0])
            if head.startswith(b"POST"):
                gate.wait(30)  # an upstream that does not read the upload yet
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                with contextlib.suppress(OSError):  # ended by the test's end
                    while len(body) < length and (chunk := conn.recv(1 << 20)):
                        body += chunk
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    proxy = served_proxy(upstream_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    host, port = proxy.url.rsplit("/", 1)[-1].split(":")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    conn.initiate_connection()
    size = 16 * 1024 * 1024
    conn.send_headers(
        1,
        [
            (b":method", b"POST"),
            (b":path", b"/v1/files"),
            (b":scheme", b"http"),
            (b":authority", b"127.0.0.1"),
            (b"content-length", str(size).encode()),
        ],
    )
    answered: dict[int, bytes] = {}
    left, asked = size, False
    s = socket.create_connection((host, int(port)), timeout=30)
    try:
        s.sendall(conn.data_to_send())
        deadline = time.monotonic() + 30
        while 3 not in answered and time.monotonic() < deadline:
            while left > 0 and (w := min(conn.local_flow_control_window(1), conn.max_outbound_frame_size, left)) > 0:
                conn.send_data(1, b"a" * w, end_stream=left == w)
                left -= w
            # The other request once the upload is under way upstream (its head arrived) and the client has sent
            # what the connection takes for now.
            readable, writable, _ = select.select([s], [s], [], 0.5)
            out = conn.data_to_send()
            if out:
                s.sendall(out)
            if not asked and heads and (left == 0 or not writable):
                conn.send_headers(
                    3,
                    [(b":method", b"GET"), (b":path", b"/v1/models"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")],
                    end_stream=True,
                )
                s.sendall(conn.data_to_send())
                asked = True
            if readable:
                data = s.recv(65536)
                if not data:
                    break
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.ResponseReceived):
                        answered[ev.stream_id] = dict(ev.headers).get(b":status", b"")
                s.sendall(conn.data_to_send())
        assert answered.get(3) == b"200", (answered, heads, size - left)
        assert answered.get(1) is None, "the upload's upstream has not read it yet"
    finally:
        gate.set()
        s.close()
        listener.close()
        for c in accepted:  # the upload's upstream waits for a body that stopped coming: ended, the proxy's
            with contextlib.suppress(OSError):  # shutdown needs no grace
                c.shutdown(socket.SHUT_RDWR)


def test_a_header_the_connection_header_names_does_not_go_upstream(served_proxy, raw_upstream):
    """A header the client's Connection header names is hop-by-hop, as Connection is (RFC 9110, 7.6.1): it went
    upstream (an outside review). The other headers go as sent."""
    up = raw_upstream()
    request = (
        b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close, X-Secret-Hop\r\nX-Secret-Hop: 1\r\nX-Kept: 2\r\n\r\n"
    )
    out = raw_request(served_proxy(upstream_url=up.url).url, request)
    assert out.startswith(b"HTTP/1.1 200"), out
    sent = up.requests[0][0].lower()
    assert b"x-kept: 2" in sent and b"x-secret-hop" not in sent


def test_an_answer_that_may_carry_no_body_but_sends_one_fails_no_other_request(served_proxy):
    """An upstream's 204 with a body (a Content-Length, then bytes) left the bytes on the pooled connection, and the
    next request, any harness's, read them as its answer's status line: bead's 502, after the request had gone
    upstream (an outside review). The connection of an answer that carries no body is not used again."""

    def answer(head: bytes) -> bytes:
        if head.startswith(b"GET /v1/odd "):
            return b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\nhello"
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\nok"

    up = RawUpstream(answer, keep_alive=True)
    try:
        url = served_proxy(upstream_url=up.url).url
        assert get(url, b"/v1/odd").startswith(b"HTTP/1.1 204")
        after = get(url, b"/v1/models")
        assert after.startswith(b"HTTP/1.1 200") and after.endswith(b"ok"), after
        assert [head.split(b"\r\n")[0] for head, _ in up.requests] == [b"GET /v1/odd HTTP/1.1", b"GET /v1/models HTTP/1.1"]
    finally:
        up.close()


def test_a_header_the_answers_connection_header_names_does_not_reach_the_harness(served_proxy, raw_upstream):
    """The same rule for an answer (a review): the upstream's `Connection: close, X-Up-Hop` named a header that is
    its hop's, not the harness's."""
    up = raw_upstream(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close, x-up-hop\r\nx-up-hop: 1\r\n"
        b"x-kept: 2\r\ncontent-length: 2\r\n\r\nok"
    )
    out = get(served_proxy(upstream_url=up.url).url, b"/v1/models").lower()
    assert out.startswith(b"http/1.1 200") and b"x-kept: 2" in out and b"x-up-hop" not in out


def _upstream_reading(received: list[int], answer: bytes = OK_JSON):
    """A loopback upstream that counts the body bytes of its one request as they come (``received``) and answers
    once the body is whole (or the proxy gives up on it). Returns its listener."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, got = data.partition(b"\r\n\r\n")
            want = int(dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:]).get(b"content-length", b"0"))
            received[0] = len(got)
            while received[0] < want:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                received[0] += len(chunk)
            conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return listener


def test_another_users_conversation_request_goes_upstream_as_it_comes_not_held_first(bead_home, upstream):
    """Whose request it is was decided after its body was read: another user on the machine could make the proxy
    hold up to 32 MiB per connection, forever with a body that never ends (an outside attack: 40 connections took
    two workers from 60 MB to 730 MB). Another user's request to /v1/messages is now forwarded as it comes, as a
    route bead does not read: the upstream gets the start of its body while the rest is still unsent."""
    from conftest import ServedProxy, eventually, make_proxy_app

    from bead.proxy.app import create_app

    received = [0]
    listener = _upstream_reading(received)
    engine_app = make_proxy_app(bead_home, upstream.url)
    engine = engine_app.extensions["bead.engine"]
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    proxy = ServedProxy(create_app(engine, url, owner_uid=os.getuid() + 1))  # this test's connections: another user's
    try:
        port = int(proxy.url.rsplit(":", 1)[1])
        size, first = 8 * 1024 * 1024, 2 * 1024 * 1024
        body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x" * size}]})
        data = body.encode()[:size]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
            head = f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
            c.sendall(head.encode() + data[:first])
            assert eventually(lambda: received[0] >= 1024 * 1024, timeout=15), received
            c.sendall(data[first:])
            status, _, _ = head_of(_read_all(c))
        assert status.split()[1] == b"200" and received[0] == size
        assert engine.health()["not_owner"] == 1
    finally:
        proxy.close()
        listener.close()


def _read_all(c: socket.socket) -> bytes:
    out = b""
    while chunk := c.recv(65536):
        out += chunk
    return out


@pytest.mark.parametrize(
    ("path", "how"),
    [("/v1/messages", "stops"), ("/v1/files", "stops"), ("/v1/messages", "trickles")],
    ids=["stops", "stops-past-what-bead-reads", "a-byte-now-and-then"],
)
def test_a_body_that_keeps_the_proxy_waiting_ends_with_a_408_and_its_connection(served_proxy, upstream, monkeypatch, path, how):
    """A body whose headers came and then nothing, or half of it and then nothing, or a byte now and then, held its
    connection for good: a local user holding thousands so used up the proxy's file descriptors, and the owner's
    harness timed out (an outside attack, then a review of its first mend, which a byte every 29 s passed). Once a
    body has kept the proxy waiting BODY_WAIT_S in all, the request ends with a 408 in the API's shape and the
    connection closes. /v1/files: past what bead reads, the body was already on its way upstream."""
    import time

    from bead.proxy import app as proxy_app

    monkeypatch.setattr(proxy_app, "BODY_WAIT_S", 1.0)
    received = [0]
    listener = _upstream_reading(received)
    proxy = served_proxy(upstream_url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    port = int(proxy.url.rsplit(":", 1)[1])
    sent = 2 * 1024 * 1024 if path == "/v1/files" else 10
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
            head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {sent * 1000}\r\n\r\n"
            c.sendall(head.encode() + b"x" * sent)
            if how == "trickles":  # each byte well inside the wait, until the proxy answers
                c.setblocking(False)
                out = b""
                while not out:
                    c.sendall(b"x")
                    time.sleep(0.2)
                    try:
                        out = c.recv(65536)
                    except BlockingIOError:
                        continue
                c.setblocking(True)
                answer = out + _read_all(c)
            else:
                answer = _read_all(c)  # the proxy closes it: this returns
        status, _, body = head_of(answer)
        assert status.split()[1] == b"408", (status, body)
        assert b"kept the proxy waiting" in body and json.loads(body)["type"] == "error"
    finally:
        listener.close()


def test_a_request_without_the_token_is_not_held_by_preparations_stuck_past_their_guard(served_proxy, upstream, monkeypatch):
    """The owner check ran on the preparations' threads before the body was read: with each of them held by a
    preparation stuck where it cannot look at the clock (the case the guard is for), a request without the token
    (the owner's harness on a plain base URL, on Linux) waited for good, where the guard forwards it after its
    deadline (a review). The check has threads of its own."""
    import threading

    from bead.proxy import app as proxy_app
    from bead.proxy import engine as engine_mod

    release = threading.Event()
    real = engine_mod.Engine.prepare

    def stuck(self, *a, **kw):
        release.wait(60)
        return real(self, *a, **kw)

    proxy = served_proxy()
    proxy.engine.deadline_s = 0.5
    token = proxy_app.load_token(proxy.engine.home)
    monkeypatch.setattr(engine_mod.Engine, "prepare", stuck)
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    try:
        held = []
        for _ in range(proxy_app.PREPARE_THREADS):  # every preparation thread held
            t = threading.Thread(target=_post, args=(proxy.url + f"/{token}/v1/messages", body), daemon=True)
            t.start()
            held.append(t)
        for t in held:
            t.join(30)
        assert _post(proxy.url + "/v1/messages", body) == 200
    finally:
        release.set()


def _post(url: str, body: bytes) -> int:
    import urllib.request

    r = urllib.request.Request(url, data=body, method="POST", headers={"content-type": "application/json"})
    with urllib.request.urlopen(r, timeout=20) as answer:
        return answer.status


def _tls_upstream(monkeypatch):
    """A TLS server context for a raw upstream on 127.0.0.1, its certificate from a throwaway CA (trustme) that the
    proxy is made to trust (its TLS roots, ``tls_context``, for this test)."""
    import ssl

    import trustme

    from bead.proxy import app as proxy_app

    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    monkeypatch.setattr(proxy_app, "tls_context", lambda: client)
    return server


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_bytes_an_upstream_sends_past_its_answer_never_reach_the_next_request(served_proxy, monkeypatch, tmp_path, tls):
    """An upstream that sends more than its Content-Length (a misframed answer, or junk after it) left those bytes on
    the pooled connection, and the next request on it, maybe another harness's, got them as its answer (an outside
    attack); over TLS, junk in a record of its own too (a review). A connection with bytes left over is closed
    instead of being reused."""
    from rawhttp import RawUpstream

    context = _tls_upstream(monkeypatch) if tls else None
    answers = iter(
        [
            [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", b"HTTP/1.1 418 junk\r\ncontent-length: 4\r\n\r\nJUNK"],
            b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond",
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nthird",
        ]
    )
    up = RawUpstream(lambda head: next(answers), keep_alive=True, tls=context)
    try:
        url = served_proxy(upstream_url=up.url).url
        first = get(url, b"/v1/models")
        assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"ok"), first
        second = get(url, b"/v1/models")
        assert second.startswith(b"HTTP/1.1 200") and second.endswith(b"second"), second
    finally:
        up.close()


def test_an_upstream_connection_over_tls_with_nothing_left_over_is_used_again(served_proxy, monkeypatch):
    """The check for bytes left over reads past a TLS session ticket (TLS 1.3 sends them after the handshake, maybe
    after an answer): a connection that answered as it should serves the next request, no new handshake."""
    from rawhttp import RawUpstream

    up = RawUpstream(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", keep_alive=True, tls=_tls_upstream(monkeypatch))
    try:
        url = served_proxy(upstream_url=up.url).url
        for _ in range(3):
            out = get(url, b"/v1/models")
            assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"ok"), out
        assert (len(up.requests), up.connections) == (3, 1)
    finally:
        up.close()


def test_bytes_past_an_answer_reach_no_request_that_comes_at_the_same_time(served_proxy):
    """The connection was closed after the answer ended, by then idle in the pool: a request that came meanwhile took
    it and read the bytes as its answer (a review: 134 of 2,000 requests from 32 clients). It is closed before it is
    idle."""
    from concurrent.futures import ThreadPoolExecutor

    from rawhttp import RawUpstream

    up = RawUpstream(
        lambda head: b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 418 junk\r\ncontent-length: 4\r\n\r\nJUNK",
        keep_alive=True,
    )
    try:
        url = served_proxy(upstream_url=up.url).url
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: get(url, b"/v1/models"), range(300)))
        assert [a for a in answers if not (a.startswith(b"HTTP/1.1 200") and a.endswith(b"ok"))] == []
    finally:
        up.close()
