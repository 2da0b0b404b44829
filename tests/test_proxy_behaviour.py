"""The proxy's contract: byte-for-byte forwarding, fail open, capture once, loopback only."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.store.locks import flocked
from bead.recall.rank import search_facts

from fakes import Reply, sse, message_events


def post(url: str, body: bytes, headers: dict | None = None, path: str = "/v1/messages") -> tuple[int, dict, bytes]:
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", path, body=body, headers={"content-type": "application/json", "x-api-key": "sk-test",
                                                   "anthropic-version": "2023-06-01", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def req(text: str, stream: bool = True, session: str = "s1", **extra) -> tuple[bytes, dict]:
    body = {"model": "claude-test", "max_tokens": 100, "stream": stream,
            "system": [{"type": "text", "text": "You are a test.\n - Primary working directory: /tmp/proj-x"}],
            "messages": [{"role": "user", "content": text}], **extra}
    return json.dumps(body).encode(), {"x-bead-session": session}


def mem_of(home) -> Memory:
    return Memory(Home(home), Config(owner="t"))


def raw_turns(home, session):
    with mem_of(home) as m:
        p = m.raw.find(session)
        return m.raw.read(p) if p else []


def wait_for(cond, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def health(url):
    import urllib.request
    with urllib.request.urlopen(url + "/bead/health") as r:
        return json.loads(r.read())


class TestByteForByte:
    """The harness receives exactly the upstream's bytes."""

    def test_stream_bytes_identical_to_direct(self, start_proxy, upstream):
        url = start_proxy()
        body, hdr = req("say hello")
        s1, h1, via_proxy = post(url, body, hdr)
        s2, h2, direct = post(upstream.url, body, hdr)
        assert (s1, via_proxy) == (s2, direct)
        assert via_proxy.startswith(b"event: message_start")
        assert h1["content-type"] == h2["content-type"] and h1["request-id"] == "req_fake123"
        assert "transfer-encoding" not in h1 or h1["transfer-encoding"] == "chunked"

    def test_stream_is_not_buffered(self, start_proxy, upstream):
        """The upstream holds the rest of the stream until the client has the first event."""
        url = start_proxy()
        gate = threading.Event()
        upstream.replies.append(Reply(kind="sse", hold=gate))
        body, hdr = req("stream please")
        u = urllib.parse.urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json", **hdr})
        r = conn.getresponse()
        first = r.readline()             # a buffering proxy would block here until the timeout
        assert first.startswith(b"event: message_start")
        gate.set()
        rest = r.read()
        assert b"message_stop" in rest

    @pytest.mark.parametrize("status", [400, 401, 429, 500, 529])
    def test_upstream_errors_pass_through(self, start_proxy, upstream, status, bead_home):
        url = start_proxy()
        upstream.replies.append(Reply(status=status))
        body, hdr = req("this will fail", session=f"err{status}")
        got_status, headers, data = post(url, body, hdr)
        assert got_status == status
        assert json.loads(data)["error"]["message"] == "fake upstream error"
        time.sleep(0.2)
        assert [t.role for t in raw_turns(bead_home, f"err{status}")] == ["user"]

    def test_other_paths_pass_through_unchanged(self, start_proxy, upstream):
        url = start_proxy()
        body = b'{"model":"m","messages":[{"role":"user","content":"count me"}]}'
        status, _, data = post(url, body, path="/v1/messages/count_tokens")
        assert status == 200 and upstream.requests[-1].body == body
        assert upstream.requests[-1].path == "/v1/messages/count_tokens"
        u = urllib.parse.urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("GET", "/v1/models?limit=5", headers={"x-api-key": "k"})
        assert conn.getresponse().status == 200
        assert upstream.requests[-1].path == "/v1/models?limit=5" and upstream.requests[-1].method == "GET"


class TestFailOpen:
    """Bad input and bead failures forward the original request unchanged."""

    @pytest.mark.parametrize("body", [
        b'{"model": "x", "messages": [',                      # malformed JSON
        b'\xff\xfe{"model": "x"}',                              # invalid UTF-8
        b'["not", "an", "object"]',                             # JSON of the wrong shape
        b'',                                                    # empty
    ])
    def test_bad_body_forwarded_as_is(self, start_proxy, upstream, body):
        url = start_proxy()
        upstream.replies.append(Reply(kind="raw", status=400, body=b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'))
        status, _, data = post(url, body)
        assert upstream.requests[-1].body == body
        assert status == 400 and b"invalid_request_error" in data
        assert health(url)["error_kinds"].get("parse") == 1

    def test_30_mb_body(self, start_proxy, upstream):
        url = start_proxy()
        big = "x" * (30 * 1024 * 1024)
        body, hdr = req(big, stream=False)
        status, _, data = post(url, body, hdr)
        assert status == 200
        assert upstream.requests[-1].body == body, "nothing to inject: the 30 MB body goes out byte for byte"

    def test_locked_index_fails_open(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        body, hdr = req("is the index there", session="locked")
        from bead.index import sqlite as s
        conn = s.module().connect(str(bead_home / "index.db"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")   # another process holds the write lock for longer than the proxy waits
        conn.execute("INSERT INTO meta(name, value) VALUES('hold', '1')")
        try:
            status, _, data = post(url, body, hdr)
        finally:
            conn.rollback()
            conn.close()
        assert status == 200 and upstream.requests[-1].body == body
        assert health(url)["errors"] >= 1

    def test_upstream_unreachable_is_a_502_in_api_shape(self, start_proxy):
        from fakes import free_port
        url = start_proxy(upstream_url=f"http://127.0.0.1:{free_port()}")
        status, _, data = post(url, *req("anyone there"))
        assert status == 502 and json.loads(data)["type"] == "error"


class TestStreamsThatBreak:
    """A broken stream still captures what arrived, and says so."""

    def test_sse_error_event(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        upstream.replies.append(Reply(kind="error-event", text="partial answer here"))
        status, _, data = post(url, *req("overload me", session="sse-err"))
        assert status == 200 and b"event: error" in data
        assert wait_for(lambda: len(raw_turns(bead_home, "sse-err")) == 2)
        turn = raw_turns(bead_home, "sse-err")[1]
        assert turn.flags.get("error") is True and turn.flags.get("partial") is True
        assert turn.text == "partial a"

    def test_upstream_drops_mid_stream(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        upstream.replies.append(Reply(kind="drop", text="half of the answer"))
        u = urllib.parse.urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        body, hdr = req("drop me", session="dropped")
        conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json", **hdr})
        r = conn.getresponse()
        try:
            data = r.read()
        except http.client.IncompleteRead as exc:
            data = exc.partial
        expected = b"".join(sse(message_events("half of the answer"))[:7])
        assert data == expected, "the harness gets exactly what the upstream sent before it dropped"
        assert wait_for(lambda: len(raw_turns(bead_home, "dropped")) == 2)
        turn = raw_turns(bead_home, "dropped")[1]
        assert turn.flags.get("partial") is True and turn.text == "half of t"

    def test_client_disconnect_closes_upstream(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        upstream.replies.append(Reply(kind="sse", delay=0.3, text="a slow answer that never finishes"))
        u = urllib.parse.urlparse(url)
        s = socket.create_connection((u.hostname, u.port))
        body, hdr = req("slow", session="gone")
        head = (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                f"x-bead-session: gone\r\ncontent-length: {len(body)}\r\n\r\n").encode()
        s.sendall(head + body)
        got = b""
        while b"text_delta" not in got:      # leave once some answer text has arrived
            chunk = s.recv(4096)
            assert chunk
            got += chunk
        s.close()
        assert wait_for(lambda: upstream.disconnects >= 1, 15), "the upstream stream was closed"
        assert wait_for(lambda: len(raw_turns(bead_home, "gone")) == 2)
        assert raw_turns(bead_home, "gone")[1].flags.get("partial") is True


class TestConversation:
    """Capture once, inject once, forget takes effect at once."""

    def test_retry_captures_nothing_twice(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        body, hdr = req("what is the deploy target", session="retry")
        post(url, body, hdr)
        first = upstream.requests[-1].body
        assert wait_for(lambda: len(raw_turns(bead_home, "retry")) == 2)
        post(url, body, hdr)
        time.sleep(0.3)
        assert upstream.requests[-1].body == first, "a retry sends the same bytes"
        assert [t.role for t in raw_turns(bead_home, "retry")] == ["user", "assistant"]

    def test_cue_block_readded_and_forget_takes_effect(self, start_proxy, upstream, bead_home, bead):
        m = Memory(Home(bead_home).ensure(), Config(owner="t"))
        # Active-project facts sit in the pinned block; a global reference fact is cued.
        m.write("global/flaky-checkout", "The checkout discount test is flaky under parallel pytest-xdist runs; run it with -p no:xdist.", "reference")
        for i in range(6):
            m.write(f"global/other-{i}", f"Unrelated fact number {i} about logging and metrics.", "reference")
        m.close()
        url = start_proxy()
        conv1 = [{"role": "user", "content": "why is the checkout discount test flaky under xdist?"}]
        body1 = json.dumps({"model": "m", "max_tokens": 10, "messages": conv1,
                            "system": "Working directory: /tmp/proj-x"}).encode()
        hdr = {"x-bead-session": "cue", "x-bead-project": "proj-x"}
        post(url, body1, hdr)
        out1 = json.loads(upstream.requests[-1].body)
        cue = out1["messages"][0]["content"][-1]["text"]
        assert cue.startswith('<bead-memory kind="recall">') and "flaky-checkout" in cue
        conv2 = conv1 + [{"role": "assistant", "content": "Let me look."}, {"role": "user", "content": "ok thanks"}]
        body2 = json.dumps({"model": "m", "max_tokens": 10, "messages": conv2,
                            "system": "Working directory: /tmp/proj-x"}).encode()
        post(url, body2, hdr)
        out2 = json.loads(upstream.requests[-1].body)
        assert out2["messages"][0] == out1["messages"][0], "the earlier cue block is re-added with the same bytes"
        assert "flaky-checkout" not in json.dumps(out2["messages"][2])
        r = bead("forget", "global/flaky-checkout")
        assert r.code == 0, r.err
        post(url, body2, hdr)
        out3 = upstream.requests[-1].body.decode()
        assert "pytest-xdist runs" not in out3, "forget removed the block from the conversation state"

    def test_remember_is_visible_to_next_request(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        post(url, *req("Remember that the staging database is on port 6543.", session="rem"))
        with mem_of(bead_home) as m:
            hits = search_facts(m.index, "staging database port")
        assert hits and hits[0].row["trust"] == "user_stated" and "6543" in hits[0].text
        assert hits[0].id.startswith("project/proj-x/")

    def test_bead_tags_never_captured(self, start_proxy, upstream, bead_home):
        url = start_proxy()
        text = 'look <bead-memory kind="recall">secret memory text</bead-memory> here'
        post(url, *req(text, session="tags"))
        assert raw_turns(bead_home, "tags")[0].text == "look here"

    def test_conversation_lock_is_per_conversation(self, start_proxy, upstream, bead_home):
        """While one conversation's lock is held, another conversation still goes through."""
        url = start_proxy()
        body_a, hdr_a = req("first conversation", session="conv-a")
        post(url, body_a, hdr_a)                      # creates conv-a's state
        lock = next((bead_home / "sessions").glob("conv-a-*.lock"))
        done = threading.Event()
        with flocked(lock):
            t = threading.Thread(target=lambda: (post(url, body_a, hdr_a), done.set()))
            t.start()
            status, _, _ = post(url, *req("second conversation", session="conv-b"))
            assert status == 200
            assert not done.is_set(), "conv-a waits for its own lock"
        t.join(20)
        assert done.is_set()


class TestSecurity:
    """Loopback only; no browser can reach the memory."""

    def test_browser_origin_refused(self, start_proxy, upstream):
        url = start_proxy()
        n = len(upstream.requests)
        status, _, data = post(url, req("hi")[0], {"origin": "https://evil.example"})
        assert status == 403 and len(upstream.requests) == n

    def test_foreign_host_refused(self, start_proxy, upstream):
        url = start_proxy()
        u = urllib.parse.urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("POST", "/v1/messages", body=req("hi")[0], headers={"Host": "attacker.example:7077"})
        assert conn.getresponse().status == 403
        assert not upstream.requests

    def test_non_loopback_listen_refused(self, bead):
        r = bead("proxy", "--listen", "0.0.0.0:7077")
        assert r.code == 1 and "loopback" in r.err

    def test_no_credential_written(self, start_proxy, upstream, bead_home, tmp_path):
        url = start_proxy("--trace", str(bead_home / "trace.jsonl"))
        secret = "sk-ant-api03-" + "K" * 80
        post(url, req("a prompt body that must not be logged")[0], {"x-api-key": secret, "authorization": f"Bearer {secret}"})
        post(url, b"{broken json so that a failure is logged")
        time.sleep(0.3)
        from conftest import all_bytes_under
        assert not [p for p, b in all_bytes_under(bead_home).items() if secret.encode() in b]
        # The service log (stderr, as journald would get it): JSON lines, no body, no credential.
        log = (tmp_path / "proxy-0.log").read_text()
        lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        assert any(e["level"] == "warning" and "failed open" in e["msg"] for e in lines)
        assert secret not in log and "must not be logged" not in log and "broken json" not in log


def test_trace_line_per_request(start_proxy, upstream, bead_home, tmp_path):
    trace = tmp_path / "trace.jsonl"
    url = start_proxy("--trace", str(trace))
    post(url, *req("trace this request", session="tr"))
    (line,) = trace.read_text().splitlines()
    entry = json.loads(line)
    assert entry["session"] == "tr" and entry["roles"] == ["user"]
    assert entry["cues"][0] == {"source": "user", "text": "trace this request"}
    assert "prepare_ms" in entry and "injected" in entry and "rejected" in entry


def test_worktree_resolves_to_main_checkout(tmp_path):
    from bead.core.conversation import project_from_cwd
    main = tmp_path / "Web-Shop"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    subprocess.run(["git", "-C", str(main), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True)
    wt = tmp_path / "feature-wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True)
    assert project_from_cwd(str(wt)) == "web-shop"
    assert project_from_cwd(str(main / "sub")) == "web-shop"
    assert project_from_cwd("/no/such/place/api-server") == "api-server"


def test_status_shows_proxy_and_failures(start_proxy, upstream, bead_home, bead):
    url = start_proxy()
    (bead_home / "config.yaml").write_text(f"proxy:\n  listen: {url[len('http://'):]}\n")
    post(url, b"not json at all")
    r = bead("status", "--json")
    st = json.loads(r.out)
    assert st["proxy"]["running"] is True and st["proxy"]["errors"] == 1
    assert any("failed open" in p["problem"] for p in st["problems"])
    assert "proxy       running" in bead("status").out


def test_subscription_auth_headers_pass_through(start_proxy, upstream):
    """A claude.ai login: Authorization plus the OAuth capability in anthropic-beta, both untouched."""
    url = start_proxy()
    beta = "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14"
    token = "sk-ant-oat01-" + "Z" * 60
    post(url, req("hi")[0], {"authorization": f"Bearer {token}", "anthropic-beta": beta})
    got = upstream.requests[-1]
    assert got.header("authorization") == f"Bearer {token}" and got.header("anthropic-beta") == beta


def test_in_flight_stream_finishes_on_shutdown(start_proxy, upstream):
    """SIGTERM lets a running stream end (Hypercorn's own grace is 3 s; this one takes about 5)."""
    url = start_proxy()
    upstream.replies.append(Reply(kind="sse", delay=0.4, text="a long answer"))
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    body, hdr = req("long one", session="grace")
    conn.request("POST", "/v1/messages", body=body, headers={"content-type": "application/json", **hdr})
    r = conn.getresponse()
    first = r.readline()
    start_proxy.procs[-1].terminate()
    rest = r.read()
    assert first.startswith(b"event: message_start") and b"message_stop" in rest


def test_why_explains_a_request(start_proxy, upstream, bead_home, tmp_path, bead):
    m = Memory(Home(bead_home).ensure(), Config(owner="t"))
    m.write("global/stripe-keys", "Stripe test keys live in .env.test and load through dotenv.", "reference")
    m.write("global/deploy", "Deploys go to Fly.io.", "reference")
    m.close()
    trace = tmp_path / "trace.jsonl"
    url = start_proxy("--trace", str(trace))
    post(url, *req("where do the stripe test keys live with dotenv?", session="why"))
    r = bead("why", "--trace", str(trace))
    assert r.code == 0, r.err
    assert "injected: global/stripe-keys@v1" in r.out and "[user] where do the stripe test keys" in r.out
    out = json.loads(bead("why", "-1", "--trace", str(trace), "--json").out)
    assert out["injected"] == ["global/stripe-keys@v1"]
    assert bead("why", "5", "--trace", str(trace)).code == 1


def test_encoded_path_passes_unchanged(start_proxy, upstream):
    url = start_proxy()
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.request("GET", "/v1/files/file%2Fwith%20slash?x=1")
    conn.getresponse().read()
    assert upstream.requests[-1].path == "/v1/files/file%2Fwith%20slash?x=1"
