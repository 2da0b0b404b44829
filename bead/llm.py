"""Chat models for the dream job and the optional rerank.

Three providers, each spoken in its own wire format over httpx:
- ``ollama``: ``POST {base}/api/chat`` (default base http://127.0.0.1:11434);
- ``anthropic``: ``POST {base}/v1/messages`` (default https://api.anthropic.com);
- ``openai``: any OpenAI-compatible ``POST {base}/chat/completions``
  (default https://api.openai.com/v1).

The key comes from the environment variable named by ``api_key_env`` or
from the output of ``api_key_command``; config.yaml never holds a key, and
bead never writes one anywhere.
"""

from __future__ import annotations

import json
import math
import os
import queue
import shlex
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

import httpx

from .config import ModelSettings
from .errors import BeadError

DEFAULT_BASE = {
    "ollama": "http://127.0.0.1:11434",
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class ModelError(Exception):
    """The model call failed: network, status, timeout or an answer of the wrong shape."""


CHARS_PER_TOKEN = 4  # a call's token count where its server reports none (``Model.chat``)
FLOOR_CHARS_PER_TOKEN = 16  # the fewest tokens a reported count may say: one per this many characters


@dataclass(frozen=True)
class Answer:
    text: str
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True)
class Model:
    provider: str
    model: str
    base_url: str
    api_key_env: str | None = None
    api_key_command: str | None = None
    timeout_s: float = 120.0

    @classmethod
    def from_settings(cls, settings: ModelSettings, fallback: ModelSettings | None = None, timeout_s: float = 120.0) -> Model:
        """A model from a config section (``dream`` or ``rerank``); ``fallback`` fills what it leaves unset."""

        def pick(name: str) -> str | None:
            value = getattr(settings, name)
            if value is None and fallback is not None:
                value = getattr(fallback, name)
            return value

        provider = pick("provider") or "ollama"
        model = pick("model")
        if not model:
            raise BeadError(
                f"no model is set for the {provider} provider",
                "set `dream.model` in config.yaml (for example a model your Ollama has pulled)",
            )
        return cls(
            provider,
            model,
            (pick("base_url") or DEFAULT_BASE[provider]).rstrip("/"),
            pick("api_key_env") or DEFAULT_KEY_ENV.get(provider),
            pick("api_key_command"),
            timeout_s,
        )

    def key(self) -> str | None:
        if self.api_key_command:
            try:
                out = subprocess.run(shlex.split(self.api_key_command), capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ModelError(f"api_key_command failed ({type(exc).__name__})") from None
            if out.returncode != 0 or not out.stdout.strip():
                raise ModelError("api_key_command printed no key")
            return out.stdout.strip()
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        return None

    def chat(self, system: str, user: str, max_tokens: int = 2000, json_mode: bool = True) -> Answer:
        """The model's answer, within ``timeout_s`` for the whole call: the call runs in a thread of its own and is
        given up at the deadline, whatever the server does (httpx's timeouts are per read: a server sending its
        headers a byte at a time held the call for as long as it liked). A given-up call's thread ends when its
        server does; at most MAX_CALLS run at once."""
        key = self.key()
        if self.provider in ("anthropic", "openai") and not key:
            raise ModelError(f"no API key: set {self.api_key_env} or dream.api_key_command")
        if not _CALLS.acquire(blocking=False):
            raise ModelError(f"{MAX_CALLS} calls to the model are still waiting for their answers; try again later")
        done: queue.SimpleQueue[tuple[Answer | None, BaseException | None]] = queue.SimpleQueue()

        def call() -> None:
            try:
                done.put((self._chat(key, system, user, max_tokens, json_mode), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.put((None, exc))
            finally:
                _CALLS.release()

        # A daemon thread: one given up at the deadline must not hold the process at its exit either.
        threading.Thread(target=call, name="bead-model-call", daemon=True).start()
        try:
            answer, error = done.get(timeout=self.timeout_s)
        except queue.Empty:
            raise ModelError(f"the {self.provider} model did not answer within {self.timeout_s:g} s") from None
        if error is not None:
            raise error
        assert answer is not None
        # A count the server does not report (a local server may not; a hostile one says 0) is what the characters
        # say, 4 to a token: such a server still spends dream.max_tokens_per_run (``_counted``).
        sent, got = len(system) + len(user), len(answer.text)
        return Answer(answer.text, _counted(answer.tokens_in, sent), _counted(answer.tokens_out, got))

    def _chat(self, key: str | None, system: str, user: str, max_tokens: int, json_mode: bool) -> Answer:
        try:
            client = _client(self.timeout_s)
            # One pooled client per timeout: a new one per call costs ~50 ms of TLS setup.
            if self.provider == "ollama":
                body = {
                    "model": self.model,
                    "stream": False,
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                }
                if json_mode:
                    body["format"] = "json"
                data = _post(client, f"{self.base_url}/api/chat", {}, body, self.timeout_s)
                content = str(data["message"]["content"])
                return Answer(content, _count(data.get("prompt_eval_count")), _count(data.get("eval_count")))
            if self.provider == "anthropic":
                data = _post(
                    client,
                    f"{self.base_url}/v1/messages",
                    {"x-api-key": key or "", "anthropic-version": "2023-06-01"},
                    {
                        "model": self.model,
                        "max_tokens": max_tokens,
                        "system": system,
                        "messages": [{"role": "user", "content": user}],
                    },
                    self.timeout_s,
                )
                text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
                usage = data.get("usage") or {}
                return Answer(text, _count(usage.get("input_tokens")), _count(usage.get("output_tokens")))
            if self.provider == "openai":
                body = {
                    "model": self.model,
                    "max_tokens": max_tokens,
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                }
                if json_mode:
                    body["response_format"] = {"type": "json_object"}
                auth = {"authorization": f"Bearer {key}"}
                data = _post(client, f"{self.base_url}/chat/completions", auth, body, self.timeout_s)
                usage = data.get("usage") or {}
                return Answer(
                    str(data["choices"][0]["message"]["content"] or ""),
                    _count(usage.get("prompt_tokens")),
                    _count(usage.get("completion_tokens")),
                )
        except httpx.TimeoutException:
            raise ModelError(f"the {self.provider} model did not answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"could not reach the {self.provider} model ({type(exc).__name__})") from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"the {self.provider} answer is not of the expected shape ({type(exc).__name__})") from None
        raise ModelError(f"unknown provider {self.provider!r}")


# Model calls running at once (``Model.chat``: a dream run's and a proxy's judge calls), given-up ones included:
# a server that never finishes its answers holds no more threads than this.
MAX_CALLS = 8
_CALLS = threading.BoundedSemaphore(MAX_CALLS)
_CLIENTS: dict[float, httpx.Client] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(timeout_s: float) -> httpx.Client:
    """A shared client (connection pool, TLS context) per timeout; httpx clients are safe across threads."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(timeout_s)
        if client is None:
            client = _CLIENTS[timeout_s] = httpx.Client(timeout=timeout_s)
        return client


# The most of an answer read: a model's JSON answer is a few KB; a server that sends more is not answering.
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def _post(client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any], timeout_s: float) -> dict:
    """POST ``body`` and the JSON object answered, within ``timeout_s`` for the whole call (httpx's timeout is
    per read: a server trickling a byte at a time would hold the call, and the dream's lock, for ever) and at most
    MAX_ANSWER_BYTES once decoded. bead asks for no compression; a server that compresses anyway is read one layer
    of gzip or deflate deep, never past the cap (httpx's own decoding unpacks a chunk whole before anyone counts it:
    a 2 KB answer of gzip in gzip became 2 GB in memory)."""
    deadline = time.monotonic() + timeout_s
    with client.stream("POST", url, headers={**headers, "accept-encoding": "identity"}, json=body) as r:
        if r.status_code >= 400:
            raise ModelError(f"the model API answered HTTP {r.status_code}")
        decoder = _decoder(r.headers.get("content-encoding", ""))
        chunks: list[bytes] = []
        size = 0
        for raw in r.iter_raw():
            try:
                chunk = raw if decoder is None else decoder.decompress(raw, MAX_ANSWER_BYTES + 1 - size)
            except zlib.error:
                raise ModelError("the model API's compressed answer does not decompress") from None
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ModelError(f"the model API's answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB")
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("the whole answer took longer than the timeout")
            chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks))
    except RecursionError:
        raise ModelError("the model API's answer is nested too deep") from None
    if not isinstance(data, dict):
        raise ModelError("the model API answered something other than a JSON object")
    return data


# Compressions a server may add that bead does not unpack; any other name (`none`, `UTF-8`: a misconfigured server)
# is read as no compression, as httpx read it.
_UNREAD = frozenset({"br", "zstd", "compress", "x-compress"})


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped (RFC 9110) or raw, told by the first bytes, as httpx tells."""

    def __init__(self) -> None:
        self._d: Any = None

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if self._d is None:
            self._d = zlib.decompressobj(zlib.MAX_WBITS)
            try:
                return bytes(self._d.decompress(data, max_length))
            except zlib.error:
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        return bytes(self._d.decompress(data, max_length))


def _decoder(content_encoding: str) -> Any:
    """A bounded decoder for the answer's ``Content-Encoding`` (None for none); ModelError for layers or codings
    bead does not read."""
    codings = [c for c in (part.strip().lower() for part in content_encoding.split(",")) if c and c != "identity"]
    packed = [c for c in codings if c in _UNREAD or c in ("gzip", "x-gzip", "deflate")]
    if not packed:
        return None
    if len(packed) > 1 or packed[0] in _UNREAD:
        raise ModelError(
            f"the model API answered in an encoding bead does not read ({content_encoding[:40]!r}; bead asks for "
            "none): check the server, or a proxy in front of it, for compression it adds"
        )
    return _Deflate() if packed[0] == "deflate" else zlib.decompressobj(16 + zlib.MAX_WBITS)


def _count(value: Any) -> int:
    """A token count as the API reports it: a finite number of at least 0, else 0 (``Infinity`` parses as JSON)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def answer_object(text: str) -> Any:
    """The JSON object a model's answer holds (from its first ``{`` to its last ``}``); ValueError when there is
    none or it does not parse, nesting too deep for the parser included (a model's answer is anyone's text: a
    RecursionError is no answer, never a crash of the run that asked)."""
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end == -1:
        raise ValueError("no JSON object in the answer")
    try:
        return json.loads(text[start : end + 1])
    except RecursionError:
        raise ValueError("the answer's JSON is nested too deep") from None


def _counted(reported: int, chars: int) -> int:
    """A call's tokens: the server's count, unless it says fewer than a token per FLOOR_CHARS_PER_TOKEN characters
    (none at all, or a hostile server's 1 for 8 KB, which let a run read past its budget): then what the characters
    say, CHARS_PER_TOKEN to a token, whichever it said. A tokenizer takes about 4 characters a token of prose, fewer
    of code and CJK text, and hardly ever 16: an honest server's count stands."""
    return reported if reported > 0 and reported >= chars // FLOOR_CHARS_PER_TOKEN else chars // CHARS_PER_TOKEN
