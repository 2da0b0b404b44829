"""The list of wire formats (bead.wire.formats) is what the proxy routes by: a new API is one entry."""

from __future__ import annotations

import json

import pytest

from bead.wire import formats


def test_every_route_of_the_two_apis():
    assert formats.route("POST", "/v1/messages")[2] is formats.by_name("anthropic")
    assert formats.route("POST", "/openai/v1/chat/completions")[2] is formats.by_name("chat")
    api, rest, fmt = formats.route("POST", "/openai/api/v1/responses?x=1")
    assert (api.name, rest, fmt and fmt.name) == ("openai", "/api/v1/responses?x=1", "responses")
    assert formats.route("GET", "/openai/v1/models")[2] is None
    assert formats.route("POST", "/v1/chat/completions")[0].name == "anthropic", "only the prefix says OpenAI"


def test_a_third_api_is_one_entry(monkeypatch, proxy_client, upstream, openai_upstream, bead_home):
    """An API registered in APIS (its prefix, its upstream setting, its error shape) is forwarded there with the
    prefix removed, and a stale token before its prefix is refused in its own shape, never sent elsewhere."""
    third = formats.Api("third", "/third", "openai_upstream", lambda message, kind: {"fault": {"why": message}})
    monkeypatch.setitem(formats.APIS, "third", third)
    app = proxy_client(openai_upstream_url=openai_upstream.url)
    status, _, _ = app.get("/third/v1/models")
    assert status == 200
    assert openai_upstream.requests[-1].path == "/v1/models"
    sent, anthropic_sent = len(openai_upstream.requests), len(upstream.requests)
    status, _, body = app.request("GET", "/not-the-token/third/v1/models", owner=False)
    assert status == 403 and "before /third" in json.loads(body)["fault"]["why"]
    assert (len(openai_upstream.requests), len(upstream.requests)) == (sent, anthropic_sent), "nothing was sent on"


@pytest.mark.parametrize("name", formats.NAMES)
def test_each_format_reads_its_own_request_shape(name):
    fmt = formats.by_name(name)
    text = "where is the deploy script"
    item = (
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        if fmt.items == "input"
        else {"role": "user", "content": text}
    )
    conv, first = fmt.read({fmt.items: [item]})
    assert [m.role for m in conv.messages] == ["user"] and first == [0]
    assert text in conv.messages[0].parts[0].text
