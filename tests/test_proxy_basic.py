"""The proxy end to end: the official SDK over a real socket, a fake upstream; the command itself once."""

from __future__ import annotations

import json
import urllib.request

import pytest
from conftest import eventually, lazy_import

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home

anthropic = lazy_import("anthropic")


def read_raw(bead_home):
    mem = Memory(Home(bead_home), Config(owner="t"))
    out = {}
    for p in mem.raw.files():
        out[p.stem] = mem.raw.read(p)
    mem.close()
    return out


class TestSDK:
    """The official anthropic SDK works through the proxy, streaming and not.

    The app is served by Hypercorn on a loopback port in this process: the SDK
    speaks real HTTP to it, as it would to `bead proxy`.
    """

    def test_non_streaming(self, served_proxy, upstream):
        url = served_proxy().url
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-api03-test-key-not-real")
        msg = client.messages.create(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hello there"}])
        assert msg.content[0].text == "Hello from the fake."
        proxied = upstream.requests[-1]
        assert proxied.path == "/v1/messages"
        # The same call straight to the upstream: every header arrives unchanged
        # through the proxy, credentials included (host and length excepted).
        direct = anthropic.Anthropic(base_url=upstream.url, api_key="sk-ant-api03-test-key-not-real")
        direct.messages.create(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hello there"}])
        skip = {"host", "content-length", "connection", "x-stainless-retry-count"}
        norm = lambda rec: sorted((k.lower(), v) for k, v in rec.headers if k.lower() not in skip)  # noqa: E731
        assert norm(proxied) == norm(upstream.requests[-1])
        assert any(k.lower() in ("authorization", "x-api-key") for k, _ in proxied.headers)

    def test_a_stale_token_is_refused_locally(self, served_proxy, upstream, bead_home):
        """`/<a token that is not the home's>/v1/messages` is not forwarded with the token in its path: the
        Anthropic SDK sees a 403 in Anthropic's shape that names the cause, and the upstream sees nothing; the home's
        own token still goes through."""
        from bead.paths import Home
        from bead.token import load_token

        token = load_token(Home(bead_home))
        served = served_proxy()
        stale = anthropic.Anthropic(base_url=f"{served.url}/{'S' * len(token)}", api_key="sk-test", max_retries=0)
        with pytest.raises(anthropic.PermissionDeniedError) as e:
            stale.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert "not this home's token" in e.value.message
        # Shorter or longer guesses, and the home's own token percent-encoded, are refused too: never sent upstream.
        for guess in ("S" * (len(token) - 1), "S" * 40, token.replace(token[0], f"%{ord(token[0]):02X}", 1)):
            sdk = anthropic.Anthropic(base_url=f"{served.url}/{guess}", api_key="sk-test", max_retries=0)
            with pytest.raises(anthropic.PermissionDeniedError):
                sdk.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert upstream.requests == []
        mine = anthropic.Anthropic(base_url=f"{served.url}/{token}", api_key="sk-test", max_retries=0)
        mine.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert [r.path for r in upstream.requests] == ["/v1/messages"]

    def test_streaming(self, served_proxy, upstream, bead_home):
        url = served_proxy().url
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-api03-test-key-not-real")
        with client.messages.stream(
            model="claude-test",
            max_tokens=64,
            messages=[{"role": "user", "content": "stream me a greeting"}],
            extra_headers={"X-Bead-Session": "sdk-stream"},
        ) as stream:
            text = "".join(stream.text_stream)
        assert text == "Hello from the fake."
        assert eventually(lambda: len(read_raw(bead_home).get("sdk-stream", [])) == 2)
        turns = read_raw(bead_home)["sdk-stream"]
        assert [(t.role, t.text) for t in turns] == [("user", "stream me a greeting"), ("assistant", "Hello from the fake.")]


def test_health(start_proxy):
    """Smoke test of the command: a real `bead proxy` process starts and answers its health check."""
    url = start_proxy()
    with urllib.request.urlopen(url + "/bead/health") as r:
        data = json.loads(r.read())
    assert data["ok"] is True and "version" in data and data["errors"] == 0
    assert data["index"] == "ok" and data["current_facts"] == 0 and "uptime_s" in data


def test_an_upstreams_user_name_and_password_are_never_shown(start_proxy, upstream):
    """A gateway's Basic auth in the upstream URL (`http://gw:PASSWORD@host`, which httpx sends upstream) was
    printed whole in the service log's first line and in `GET /bead/health`, which `bead status` shows (an outside
    attack), and so was a gateway's key in a query (a review): both show `***` in their place."""
    host = upstream.url.split("://", 1)[1]
    url = start_proxy("--openai-upstream", f"http://{host}/?key=QUERYSECRET", upstream_url=f"http://gw:GATEWAYSECRET@{host}")
    with urllib.request.urlopen(url + "/bead/health") as r:
        data = json.loads(r.read())
    assert data["upstream"] == f"http://***@{host}" and data["openai_upstream"] == f"http://{host}/?***"
    assert "SECRET" not in json.dumps(data)
    log = start_proxy.logs[-1].read_text()
    assert f"-> http://***@{host}" in log and "SECRET" not in log
