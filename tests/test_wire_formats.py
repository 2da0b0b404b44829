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


def test_a_stale_token_on_the_anthropic_route_is_refused_locally(served_proxy, upstream, bead_home):
    """`/<a token that is not the home's>/v1/messages` is not forwarded with the token in its path: the
    Anthropic SDK sees a 403 in Anthropic's shape that names the cause, and the upstream sees nothing; the home's
    own token still goes through."""
    import anthropic

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
