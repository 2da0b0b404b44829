"""Chat model calls (bead/llm.py) against fake model servers on 127.0.0.1, one per provider's wire format."""

from __future__ import annotations

import json
import os
import socket

import pytest
from fakes import FakeModel, QuietHandler, serve

from bead.config import parse
from bead.errors import BeadError
from bead.llm import DEFAULT_BASE, Model, ModelError

KEY = "sk-test-7f3a9c-secret"
PATHS = {"ollama": "/api/chat", "anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


@pytest.fixture
def fake():
    m = FakeModel()
    yield m
    m.close()


def model_for(provider: str, url: str, **kw) -> Model:
    base = url + "/v1" if provider == "openai" else url
    kw.setdefault("api_key_env", "BEAD_TEST_LLM_KEY")
    return Model(provider, "test-model", base, **kw)


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("BEAD_TEST_LLM_KEY", KEY)


# ----- requests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "anthropic", "openai"])
def test_request_path(fake, key_env, provider):
    """Each provider posts to its own chat path under the base URL."""
    model_for(provider, fake.url).chat("sys", "usr")
    assert [r[0] for r in fake.requests] == [PATHS[provider]]


def test_anthropic_headers(fake, key_env):
    """Anthropic gets the key in `x-api-key` and an `anthropic-version`, and no bearer token."""
    model_for("anthropic", fake.url).chat("sys", "usr")
    _, headers, _ = fake.requests[0]
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def test_openai_headers(fake, key_env):
    """OpenAI gets the key as `authorization: Bearer`, and no `x-api-key`."""
    model_for("openai", fake.url).chat("sys", "usr")
    _, headers, _ = fake.requests[0]
    assert headers["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in headers


def test_ollama_sends_no_key(fake, key_env):
    """Ollama gets no key header, even when a key is available."""
    model_for("ollama", fake.url).chat("sys", "usr")
    _, headers, _ = fake.requests[0]
    assert "authorization" not in headers and "x-api-key" not in headers
    assert KEY not in json.dumps(headers)


def test_ollama_body(fake):
    """Ollama's body: system and user messages, no streaming, `format: json` in json mode."""
    model_for("ollama", fake.url).chat("the system", "the user", max_tokens=77)
    _, _, body = fake.requests[0]
    assert body == {
        "model": "test-model",
        "stream": False,
        "format": "json",
        "messages": [{"role": "system", "content": "the system"}, {"role": "user", "content": "the user"}],
    }


def test_anthropic_body(fake, key_env):
    """Anthropic's body: the system prompt top-level, one user message, max_tokens."""
    model_for("anthropic", fake.url).chat("the system", "the user", max_tokens=77)
    _, _, body = fake.requests[0]
    assert body == {
        "model": "test-model",
        "max_tokens": 77,
        "system": "the system",
        "messages": [{"role": "user", "content": "the user"}],
    }


def test_openai_body(fake, key_env):
    """OpenAI's body: system and user messages, max_tokens, `response_format` json_object in json mode."""
    model_for("openai", fake.url).chat("the system", "the user", max_tokens=77)
    _, _, body = fake.requests[0]
    assert body == {
        "model": "test-model",
        "max_tokens": 77,
        "response_format": {"type": "json_object"},
        "messages": [{"role": "system", "content": "the system"}, {"role": "user", "content": "the user"}],
    }


@pytest.mark.parametrize("provider, field", [("ollama", "format"), ("openai", "response_format")])
def test_no_json_request_outside_json_mode(fake, key_env, provider, field):
    """With json_mode off, no JSON output format is requested."""
    model_for(provider, fake.url).chat("s", "u", json_mode=False)
    _, _, body = fake.requests[0]
    assert field not in body and body["messages"][-1] == {"role": "user", "content": "u"}


# ----- answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "anthropic", "openai"])
def test_answer_text_and_token_counts(fake, key_env, provider):
    """The answer's text and its input and output token counts are read from each provider's reply."""
    fake.answers.append(lambda body: f'{{"echo": "{body["model"]}"}}')
    answer = model_for(provider, fake.url).chat("s", "u")
    assert json.loads(answer.text) == {"echo": "test-model"}
    assert (answer.tokens_in, answer.tokens_out) == (120, 30)


# ----- keys ---------------------------------------------------------------------------------------


def test_key_from_named_environment_variable(fake, monkeypatch):
    """The key is read from the variable `api_key_env` names, at call time."""
    monkeypatch.setenv("BEAD_OTHER_KEY_VAR", "sk-other")
    m = model_for("anthropic", fake.url, api_key_env="BEAD_OTHER_KEY_VAR")
    m.chat("s", "u")
    monkeypatch.setenv("BEAD_OTHER_KEY_VAR", "sk-rotated")
    m.chat("s", "u")
    assert [r[1]["x-api-key"] for r in fake.requests] == ["sk-other", "sk-rotated"]


def test_key_from_command(fake, monkeypatch):
    """The key is the output of `api_key_command`, split with shell quoting and stripped."""
    monkeypatch.delenv("BEAD_TEST_LLM_KEY", raising=False)
    m = model_for("openai", fake.url, api_key_command="printf '%s\\n' 'sk-from command'")
    m.chat("s", "u")
    assert fake.requests[0][1]["authorization"] == "Bearer sk-from command"


def test_command_wins_over_environment(fake, key_env):
    """When both are set, the command's key is used."""
    model_for("anthropic", fake.url, api_key_command="printf sk-cmd").chat("s", "u")
    assert fake.requests[0][1]["x-api-key"] == "sk-cmd"


@pytest.mark.parametrize("command", ["printf ''", "false", "/nonexistent/bead-key-helper"])
def test_failing_key_command_raises_model_error(fake, command):
    """A key command that prints nothing, fails or does not exist raises ModelError before any request."""
    with pytest.raises(ModelError, match="api_key_command"):
        model_for("anthropic", fake.url, api_key_command=command).chat("s", "u")
    assert fake.requests == []


@pytest.mark.parametrize("source", ["env", "command"])
def test_key_is_never_written_to_disk(fake, monkeypatch, tmp_path, bead_home, source):
    """After a call made with a key from settings in a bead home, no file under the test's directories holds the key."""
    from bead import config
    from bead.paths import Home

    home = Home(bead_home).ensure()
    monkeypatch.setenv("BEAD_TEST_KEY_SOURCE", KEY)
    line = "api_key_env: BEAD_TEST_KEY_SOURCE" if source == "env" else "api_key_command: printenv BEAD_TEST_KEY_SOURCE"
    home.config.write_text(f"dream:\n  provider: anthropic\n  model: test-model\n  base_url: {fake.url}\n  {line}\n")
    cfg = config.load(home)
    Model.from_settings(cfg.dream).chat("s", "u")
    assert fake.requests[0][1]["x-api-key"] == KEY
    held = [p for p, data in _all_files(tmp_path) if KEY.encode() in data]
    assert held == []


def _all_files(root):
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                yield p, f.read()


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_missing_key_raises_without_a_request(fake, monkeypatch, provider):
    """Without a key, anthropic and openai raise ModelError naming the variable, and nothing is sent."""
    monkeypatch.delenv("BEAD_TEST_LLM_KEY", raising=False)
    with pytest.raises(ModelError, match="no API key: set BEAD_TEST_LLM_KEY"):
        model_for(provider, fake.url).chat("s", "u")
    assert fake.requests == []


def test_ollama_needs_no_key(fake, monkeypatch):
    """Ollama answers without any key configured."""
    monkeypatch.delenv("BEAD_TEST_LLM_KEY", raising=False)
    assert Model("ollama", "m", fake.url).chat("s", "u").text == fake.default


# ----- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "anthropic", "openai"])
def test_http_error_status_raises_model_error(fake, key_env, provider):
    """An HTTP 500 from the model raises ModelError naming the status."""
    fake.status = 500
    with pytest.raises(ModelError, match="HTTP 500"):
        model_for(provider, fake.url).chat("s", "u")


@pytest.mark.parametrize("provider", ["ollama", "anthropic", "openai"])
def test_timeout_raises_model_error(fake, key_env, provider):
    """A model slower than timeout_s raises ModelError naming the limit."""
    fake.delay = 2.0
    with pytest.raises(ModelError, match=rf"the {provider} model did not answer within 0\.2 s"):
        model_for(provider, fake.url, timeout_s=0.2).chat("s", "u")


def test_unreachable_model_raises_model_error():
    """A connection refused raises ModelError saying the model could not be reached."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused, and no one else gets the port
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(ModelError, match=r"could not reach the ollama model \(ConnectError\)"):
            Model("ollama", "m", url, timeout_s=2).chat("s", "u")


@pytest.fixture
def odd_server():
    """A server that answers every POST with a fixed body (set `.body`)."""
    state = {"body": b"{}", "headers": {}, "asked": []}

    class Handler(QuietHandler):
        def do_POST(self):
            self.body()
            state["asked"].append(dict(self.headers))
            data = state["body"]
            self.send_response(200)
            self.send_header("content-type", "application/json")
            for name, value in state["headers"].items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server, url = serve(Handler)
    yield state, url
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "provider, body, cause",
    [
        ("ollama", b'{"done": true}', "KeyError"),
        ("anthropic", b'{"content": "not a list of blocks"}', "AttributeError"),
        ("anthropic", b'{"type": "message"}', "KeyError"),
        ("openai", b'{"choices": []}', "IndexError"),
        ("openai", b"this is not json", "JSONDecodeError"),
    ],
)
def test_malformed_answer_raises_model_error(odd_server, key_env, provider, body, cause):
    """An answer of the wrong shape raises ModelError saying so and naming the cause."""
    state, url = odd_server
    state["body"] = body
    with pytest.raises(ModelError, match=rf"the {provider} answer is not of the expected shape \({cause}\)"):
        model_for(provider, url).chat("s", "u")


def test_json_that_is_not_an_object_raises_model_error(odd_server, key_env):
    """A JSON answer that is not an object raises ModelError saying so."""
    state, url = odd_server
    state["body"] = b'["a", "list"]'
    with pytest.raises(ModelError, match="other than a JSON object"):
        model_for("openai", url).chat("s", "u")


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=9)


def test_a_compressed_answer_is_unpacked_no_further_than_the_cap(odd_server, key_env):
    """bead asks for no compression. A server that gzips anyway is read, one layer deep and never past the 4 MB
    cap: httpx unpacked each chunk whole before bead counted it, so 16 KB of gzipped zeros was 16 MB in memory
    (and 2 KB of gzip in gzip 2 GB) before "larger than 4 MB" was said."""
    import tracemalloc

    state, url = odd_server
    honest = json.dumps({"choices": [{"message": {"content": "the port is 5433"}}]}).encode()
    state["headers"] = {"content-encoding": "gzip"}
    state["body"] = _gzip(honest)
    assert model_for("openai", url).chat("s", "u").text == "the port is 5433"
    assert state["asked"][-1].get("accept-encoding", state["asked"][-1].get("Accept-Encoding")) == "identity"

    state["body"] = _gzip(b"{" + b" " * (64 * 1024 * 1024) + b"}")
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match="larger than 4 MB"):
            model_for("openai", url).chat("s", "u")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 * 1024 * 1024, f"{peak / 2**20:.0f} MB held to refuse 64 MB of answer"


@pytest.mark.parametrize("encoding", ["gzip, gzip", "br", "zstd"])
def test_an_answer_in_layers_or_codings_bead_does_not_read_is_refused_unread(odd_server, key_env, encoding):
    """gzip inside gzip (a few KB that unpack to gigabytes), or a coding bead does not read, is no answer, and the
    error says where to look."""
    state, url = odd_server
    state["headers"] = {"content-encoding": encoding}
    state["body"] = _gzip(_gzip(b"{}"))
    with pytest.raises(ModelError, match="an encoding bead does not read .* check the server"):
        model_for("anthropic", url).chat("s", "u")


def test_a_compressed_answer_that_does_not_unpack_is_a_model_error(odd_server, key_env):
    state, url = odd_server
    state["headers"] = {"content-encoding": "deflate"}
    state["body"] = b"this was never deflated"
    with pytest.raises(ModelError, match="does not decompress"):
        model_for("ollama", url).chat("s", "u")


def test_unknown_provider_raises_model_error(fake):
    """A provider bead does not speak raises ModelError naming it."""
    with pytest.raises(ModelError, match="unknown provider 'gemini'"):
        Model("gemini", "m", fake.url).chat("s", "u")
    assert fake.requests == []


# ----- from_settings ------------------------------------------------------------------------------


def test_rerank_settings_fall_back_to_dream_settings():
    """Every rerank setting left unset is taken from the dream section; trailing slashes leave the base URL."""
    cfg = parse(
        "dream:\n  provider: openai\n  model: gpt-dream\n  base_url: http://127.0.0.1:9/v1/\n"
        "  api_key_env: DREAM_KEY\n  api_key_command: printf x\nrerank:\n  enabled: true\n"
    )
    m = Model.from_settings(cfg.rerank, cfg.dream, timeout_s=1.5)
    assert m == Model("openai", "gpt-dream", "http://127.0.0.1:9/v1", "DREAM_KEY", "printf x", 1.5)


def test_rerank_settings_that_are_set_win():
    """A rerank setting that is set is used; only the unset ones come from dream."""
    cfg = parse("dream:\n  provider: ollama\n  model: big\n  base_url: http://127.0.0.1:9\nrerank:\n  model: small\n")
    m = Model.from_settings(cfg.rerank, cfg.dream)
    assert (m.provider, m.model, m.base_url) == ("ollama", "small", "http://127.0.0.1:9")


@pytest.mark.parametrize(
    "provider, key_env", [("ollama", None), ("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")]
)
def test_provider_defaults(provider, key_env):
    """Unset base URL and key variable take the provider's defaults."""
    m = Model.from_settings(parse(f"dream:\n  provider: {provider}\n  model: m\n").dream)
    assert (m.base_url, m.api_key_env) == (DEFAULT_BASE[provider].rstrip("/"), key_env)


def test_missing_model_is_refused_with_a_hint_naming_dream_model():
    """No model in either section raises a BeadError whose hint names `dream.model`."""
    cfg = parse("")
    with pytest.raises(BeadError) as info:
        Model.from_settings(cfg.rerank, cfg.dream)
    assert "dream.model" in info.value.hint
    assert "ollama" in info.value.message


@pytest.mark.parametrize("encoding", ["deflate-raw", "UTF-8", "none"])
def test_servers_that_answered_before_still_do(odd_server, key_env, encoding):
    """Raw deflate sent as `deflate`, and a coding name that is no compression (`UTF-8`, `none`: a misconfigured
    server) were read by httpx; a review found the bounded reader refused them."""
    import zlib

    state, url = odd_server
    honest = json.dumps({"choices": [{"message": {"content": "the port is 5433"}}]}).encode()
    if encoding == "deflate-raw":
        packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        state["headers"] = {"content-encoding": "deflate"}
        state["body"] = packer.compress(honest) + packer.flush()
    else:
        state["headers"] = {"content-encoding": encoding}
        state["body"] = honest
    assert model_for("openai", url).chat("s", "u").text == "the port is 5433"
