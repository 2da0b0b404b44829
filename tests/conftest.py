"""Every test gets its own bead home; nothing touches ~/.bead.

bead runs in the test's own process wherever that shows the behaviour: the
CLI through click's CliRunner (``bead``), the proxy app through Quart's test
app and client (``proxy_client``) or, where a real socket matters, served by
Hypercorn on a loopback port in a thread (``served_proxy``). Real processes
(``bead_process``, ``start_proxy``) are for what only a process shows:
signals, races between processes, the console entry, service logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
# bead[semantic] is installed for the tests and off unless a test turns it on (`semantic_on`): every bead process a
# test starts would load the embedding model (half a second of CPU each) for no figure it checks. Set here as well
# as in `bead_home`, so that fixtures of a wider scope (a module's eval run) see it too.
os.environ["BEAD_SEMANTIC"] = "0"


@pytest.fixture(autouse=True)
def bead_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("BEAD_HOME", str(home))
    monkeypatch.setenv("BEAD_SEMANTIC", "0")  # off, as above (a test may have turned it on)
    return home


@pytest.fixture
def semantic_on(bead_home, monkeypatch) -> None:
    """bead[semantic] on, as a default install has it."""
    monkeypatch.delenv("BEAD_SEMANTIC", raising=False)


@pytest.fixture
def mem(bead_home) -> Memory:
    m = Memory(Home(bead_home).ensure(), Config(owner="tester"))
    yield m
    m.close()


def plaintext_secret(mem: Memory, key: str, body: str, type_: str, **kw) -> None:
    """A fact that holds a credential in plain text, as a store written before bead refused them holds it (or a
    hand-edited file): through the store and the index directly, past Memory.write's refusal."""
    mem.facts.write(key, body, type_, **kw)
    mem.sync_key(key)


def trace_line(session: str, **fields) -> dict:
    """A trace record as the proxy writes one (bead.proxy.engine: the fields every line holds), with ``fields``."""
    base = {"at": "2026-12-01T10:00:00+00:00", "session": session, "thread": "t", "project": None, "roles": ["user"]}
    return {**base, "newest_user": 0, "errors": [], "pid": 1, **fields}


def eventually(cond, timeout: float = 30.0, step: float = 0.02) -> bool:
    """Poll ``cond`` until it holds or ``timeout`` passes: the suite's one way to wait.

    Wait for a positive signal (a trace line, a captured turn, a request the
    fake recorded, a health answer) and assert after it; never sleep and then
    assert that something did not happen. The timeout is generous because the
    machines are shared and noisy; a passing wait costs only its poll steps.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def copy_home(seeded: Path, home: Path) -> Path:
    """``home`` as a copy of ``seeded`` (a home a module wrote once): files, index and audit log, with their
    modification times (what the index compares), so nothing tells it from one written in place."""
    shutil.copytree(seeded, home, symlinks=True, dirs_exist_ok=True)
    return home


def seeded_homes(seed, name: str = "seeded"):
    """Two fixtures for a module whose tests start from one seeded home: ``<name>_home``, the home ``seed`` wrote
    once for the module, and ``seeded``, the test's own home as a copy of it (``copy_home``). Assign both at the
    module's top: ``seeded_home, seeded = seeded_homes(seed)``."""

    @pytest.fixture(scope="module", name=f"{name}_home")
    def once(tmp_path_factory) -> Path:
        home = tmp_path_factory.mktemp(name) / "home"
        seed(home)
        return home

    @pytest.fixture(name="seeded")
    def per_test(request, bead_home) -> Path:
        return copy_home(request.getfixturevalue(f"{name}_home"), bead_home)

    return once, per_test


def all_bytes_under(root: Path) -> dict[Path, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if p.is_file():  # not the indexer's socket
                out[p] = p.read_bytes()
    return out


# The modules that hold the longest tests (2-10 s each on 2 cores), longest first: they start the run, so that none
# starts last and keeps one worker busy alone while the others have finished (test_recall_quality's two 7 s tests,
# collected near the end, left one worker running alone for ~8 s). Worksteal hands out the collection in order and
# the idle workers take the rest of a busy one's queue from its end. Each module's tests keep their order.
LONG_FIRST = (
    "test_install",
    "test_recall_quality",
    "test_proxy_workers",
    "test_hostile_text",
    "test_proxy_behaviour",
    "test_pinned_choice",
    "test_proxy_basic",
    "test_socket_activation",
    "test_setup",
    "test_write_contention",
    "test_mcp_agent",
    "test_proxy_trust",
    "test_vault",
    "test_proxy_openai",
    "test_services",
    "test_mcp_http",
    "test_setup_hostile",
    "test_mcp_admin",
)


def pytest_collection_modifyitems(items) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order


def pytest_collection_finish(session) -> None:
    """The collected tests, modules and libraries live until the end: the garbage collector need not
    walk them again (each worker spent 1-1.6 s in about 2,500 collections)."""
    gc.freeze()
    gc.set_threshold(20000, 50, 50)


# ----- the CLI ----------------------------------------------------------------


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def bead(bead_home):
    """Run the `bead` CLI in this process (click's CliRunner) against the test's home.

    The root group prints a BeadError as ``error: ...`` / ``  hint: ...`` on
    stderr and exits 1, as the real command does. Two differences from
    ``bead_process``: a usage error exits 2 here (click's standalone mode;
    ``main()`` turns it into 1 plus a hint), and a crash is a traceback
    appended to ``err`` with code 1, as Python would print it.
    """

    def run(*args: str, input: str | None = None, env: dict | None = None) -> Result:
        return invoke_cli(args, input=input, env={"BEAD_HOME": str(bead_home), **(env or {})})

    return run


def invoke_cli(args, input: str | None = None, env: dict | None = None) -> Result:
    """`bead *args` in this process through click's CliRunner, with ``env`` set in os.environ meanwhile."""
    from click.testing import CliRunner

    from bead.cli import cli

    # Commands that serve (`bead proxy`) set up logging on the root logger
    # before they check their arguments: put it back for the next test.
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        r = CliRunner().invoke(cli, list(args), input=input, prog_name="bead", env=env)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    err = r.stderr
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        err += "".join(traceback.format_exception(r.exception))
    return Result(r.exit_code, r.stdout, err)


@pytest.fixture
def low_work_factor(monkeypatch) -> None:
    """`bead vault init` seals the identity at scrypt work factor 10 instead of pyrage's calibrated
    second (and half a gigabyte): the same age format (pyrage and the age CLI open it), for init tests
    about something else. tests/test_vault.py runs one init at pyrage's real cost."""
    import age_scrypt

    from bead.vault import keys

    mod = keys.pyrage()
    monkeypatch.setattr(mod.passphrase, "encrypt", lambda data, passphrase: age_scrypt.encrypt(data, passphrase, 10))


@pytest.fixture
def bead_process(bead_home):
    """Run the real `bead` command (``python -m bead``) in a subprocess against the test's home.

    Only for what a real process shows: the console entry itself (usage
    errors exit 1 with a hint there), signals, races between processes.
    """

    def run(*args: str, input: str | None = None, env: dict | None = None, stdin_closed: bool = False) -> Result:
        full_env = {**os.environ, "BEAD_HOME": str(bead_home), **(env or {})}
        p = subprocess.run(
            [sys.executable, "-m", "bead", *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=120,
            preexec_fn=(lambda: os.close(0)) if stdin_closed else None,  # as `bead ... <&-` in a shell
        )
        return Result(p.returncode, p.stdout, p.stderr)

    return run


@pytest.fixture
def second_os_user() -> str:
    """The name of another account on this machine, created when missing (tests that use it skip unless root)."""
    import pwd

    name = "beadtest2"
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    return name


def hang_up_once(url: str, path: str, body: bytes, session: str, until: bytes) -> None:
    """POST ``body`` over a raw socket, read until ``until`` has arrived, then close the connection: a
    client that goes away mid-answer."""
    import urllib.parse

    u = urllib.parse.urlparse(url)
    s = socket.create_connection((u.hostname, u.port))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"x-bead-session: {session}\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    try:
        s.sendall(head + body)
        got = b""
        while until not in got:
            chunk = s.recv(4096)
            assert chunk, "the connection closed before the answer began"
            got += chunk
    finally:
        s.close()


class lazy_import:  # noqa: N801 - stands in for a module name
    """A module imported on first use: every xdist worker collects every test module, and the SDKs take
    seconds to import (anthropic ~1.4 s), which only the workers that run their tests should pay."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        if attr.startswith("_"):
            # pytest's collection probes every module-level name for its own markers
            # (``_pytestfixturefunction``, ``__test__``): that must not import the SDK.
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


# ----- the proxy ---------------------------------------------------------------

TEST_DEADLINE_S = 10.0


def _patient_engines() -> None:
    """Every Engine a test makes in-process gets TEST_DEADLINE_S before it fails open, not the default 500 ms of wall
    time, unless its config chose a deadline: the test machines are shared and busy (three workers and their bead
    processes on two cores), and a test whose request failed open under load saw no memory and failed. Tests about
    the deadline set one (the config, ``engine.deadline_s`` or ``prepare``'s ``deadline``)."""
    from bead.proxy.engine import Engine

    made = Engine.__init__

    def patient(self, home, config, *args, **kwargs) -> None:
        made(self, home, config, *args, **kwargs)
        if config.proxy.recall_deadline_ms == Config().proxy.recall_deadline_ms:
            self.deadline_s = TEST_DEADLINE_S

    Engine.__init__ = patient  # type: ignore[method-assign]


_patient_engines()


def make_proxy_app(
    home: Path,
    upstream_url: str,
    project: str | None = None,
    trace: str | Path | None = None,
    config: Config | None = None,
    openai_upstream_url: str | None = None,
):
    """Build the proxy app as `bead proxy` does (bead/cli/proxy.py): the tests' only construction of it.

    ``config`` defaults to the home's config.yaml, as the command reads it; ``openai_upstream_url``
    (where paths under /openai go) to its ``proxy.openai_upstream``.
    ``app.extensions["bead.engine"]`` is the Engine, for tests that drive it without HTTP.
    """
    from bead.config import load
    from bead.proxy.app import create_app
    from bead.proxy.engine import Engine

    h = Home(Path(home)).ensure()
    cfg = config if config is not None else load(h)
    engine = Engine(h, cfg, default_project=project, trace_path=str(trace) if trace is not None else None)
    return create_app(engine, upstream_url, openai_upstream=openai_upstream_url)


class _CountingExecutor(ThreadPoolExecutor):
    """The app loop's default executor, counting work not yet finished (the proxy prepares
    requests there; its work after forwarding runs on the engine's own threads)."""

    def __init__(self, max_workers: int | None = None):
        super().__init__(max_workers=max_workers, thread_name_prefix="proxy-app")
        self._count_lock = threading.Lock()
        self.pending = 0

    def submit(self, fn, /, *args, **kwargs):
        with self._count_lock:
            self.pending += 1
        try:
            fut = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._done(None)
            raise
        fut.add_done_callback(self._done)
        return fut

    def _done(self, _fut) -> None:
        with self._count_lock:
            self.pending -= 1


class ProxyStream:
    """One request through the test client whose response is read as it arrives."""

    def __init__(self, proxy: ProxyClient, conn):
        self.proxy, self.conn, self.got = proxy, conn, bytearray()
        self.closed = False

    @property
    def status(self) -> int | None:
        return self.conn.status_code

    @property
    def headers(self) -> dict:
        return {k.lower(): v for k, v in (self.conn.headers or {}).items()}

    def receive(self, timeout: float = 30.0) -> bytes:
        """The next body chunk the app sent (waits for it)."""
        chunk = self.proxy.call(asyncio.wait_for(self.conn.receive(), timeout), timeout + 5)
        self.got += chunk
        return chunk

    def read_rest(self, timeout: float = 60.0) -> bytes:
        """Wait for the response to end; everything not yet received."""
        before = len(self.got)
        self.proxy.call(asyncio.wait_for(self.conn.__aexit__(None, None, None), timeout), timeout + 5)
        self.closed = True
        self.got += self.conn.response_data
        return bytes(self.got[before:])


class ProxyClient:
    """The proxy app in this process, driven by Quart's test app and test client.

    A thread runs the app's event loop: ``app.test_app()`` runs the
    before_serving/after_serving hooks (the upstream httpx client), and each
    request is one coroutine on that loop. The tests stay synchronous, so
    ``eventually`` can poll while the app works, and threads can send
    requests at the same time. Requests go to the real fake upstream on
    loopback. Quart's test client adds ``User-Agent: Quart`` and a Host
    header (``localhost`` unless given); this sends ``Host: 127.0.0.1`` as
    Claude Code does, since the proxy refuses a Host that is not loopback.
    """

    HOST = "127.0.0.1"

    def __init__(self, app):
        from bead.token import load_token

        self.app = app
        self.engine = app.extensions["bead.engine"]
        # The test client's connection has no kernel-visible peer, so requests
        # prove they are the owner's the way every harness can: the token path.
        self.token = load_token(self.engine.home)
        self.executor = _CountingExecutor()
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(self.executor)
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxy-app-loop", daemon=True)
        self.thread.start()
        self.test_app = None
        self.call(self._startup())

    async def _startup(self) -> None:
        from bead.proxy.app import PREPARE_THREADS

        self.test_app = self.app.test_app()
        await self.test_app.startup()
        # The app's start gives the loop an executor of its own for the preparations: counted here instead, with
        # the same bound, so that settle() waits for them too (one the guard gave up on goes on after its answer).
        self.executor = _CountingExecutor(PREPARE_THREADS)
        asyncio.get_running_loop().set_default_executor(self.executor)

    def call(self, coro, timeout: float = 120.0):
        """Run ``coro`` on the app's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _headers(self, headers: dict | None) -> dict:
        out = dict(headers or {})
        if not any(k.lower() == "host" for k in out):
            out["host"] = self.HOST
        return out

    def _path(self, path: str, owner: bool) -> str:
        """The owner's requests carry the home's token first (bead's own /bead/ routes never do)."""
        return f"/{self.token}{path}" if owner and not path.startswith("/bead/") else path

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict | None = None, owner: bool = True
    ) -> tuple[int, dict, bytes]:
        async def go():
            client = self.test_app.test_client()
            r = await client.open(self._path(path, owner), method=method, data=body, headers=self._headers(headers))
            return r.status_code, {k.lower(): v for k, v in r.headers.items()}, await r.get_data()

        return self.call(go())

    def post(
        self, body: bytes, headers: dict | None = None, path: str = "/v1/messages", owner: bool = True
    ) -> tuple[int, dict, bytes]:
        return self.request("POST", path, body, headers, owner)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        return self.request("GET", path, b"", headers)

    def health(self) -> dict:
        """The owner's view of /bead/health (the test client has no kernel-visible peer: the token says it)."""
        import json

        status, _, data = self.get("/bead/health", headers={"X-Bead-Token": self.token})
        assert status == 200, data
        return json.loads(data)

    def stream(
        self, path: str, body: bytes, headers: dict | None = None, method: str = "POST", owner: bool = True
    ) -> ProxyStream:
        """Send a request; read its response chunk by chunk (``receive``) or to its end (``read_rest``)."""

        async def go():
            conn = self.test_app.test_client().request(self._path(path, owner), method=method, headers=self._headers(headers))
            await conn.__aenter__()
            await conn.send(body)
            await conn.send_complete()
            return conn

        return ProxyStream(self, self.call(go()))

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until every piece of work the app started has finished: preparations, then the
        engine's work after forwarding (capture, remember, trace)."""
        assert eventually(lambda: self.executor.pending == 0, timeout), "the proxy app's work did not finish"
        self.engine.drain(timeout)

    def close(self) -> None:
        if self.thread.is_alive():
            try:
                if self.test_app is not None:
                    self.call(self.test_app.shutdown(), 30)
                self.call(self.loop.shutdown_default_executor(), 30)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self.thread.join(30)
        if not self.loop.is_running():
            self.loop.close()


class ServedProxy:
    """The proxy app served by Hypercorn on a free 127.0.0.1 port, in a thread with its own event loop.

    For what only a real socket shows: a real HTTP client (the official SDK),
    a client that disconnects, `bead status` reading /bead/health. The server
    settings are the service's own (bead.proxy.serve.hypercorn_config), but
    for a short shutdown grace.
    """

    def __init__(self, app):
        from bead.proxy.serve import hypercorn_config

        self.app = app
        self.engine = app.extensions["bead.engine"]
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        cfg = hypercorn_config("127.0.0.1", port)
        cfg.bind = [f"fd://{sock.detach()}"]  # bound already: no race for the port
        cfg.graceful_timeout = 10.0  # the real grace is tested on a real process
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, args=(cfg,), name="served-proxy", daemon=True)
        self.thread.start()
        if not eventually(self._answers, step=0.003):
            self.close()
            raise RuntimeError(f"the served proxy did not answer /bead/health: {self.error!r}")

    def _run(self, cfg) -> None:
        from hypercorn.asyncio import serve

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(self.app, cfg, shutdown_trigger=self._stop.wait)

        try:
            asyncio.run(main())  # and then joins the default executor: every capture has finished
        except BaseException as exc:
            self.error = exc

    def _answers(self) -> bool:
        if not self.thread.is_alive():
            raise RuntimeError(f"the served proxy stopped: {self.error!r}")
        try:
            with urllib.request.urlopen(self.url + "/bead/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def health(self) -> dict:
        import json

        with urllib.request.urlopen(self.url + "/bead/health", timeout=10) as r:
            return json.loads(r.read())

    def close(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop closed meanwhile
                pass
        self.thread.join(30)
        assert not self.thread.is_alive(), "the served proxy did not shut down"


@pytest.fixture
def upstream():
    from fakes import FakeAnthropic

    fake = FakeAnthropic()
    yield fake
    fake.close()


@pytest.fixture
def openai_upstream():
    """A fake of the OpenAI APIs (Chat Completions, Responses) on loopback: pass its url as ``openai_upstream_url``."""
    from fakes import FakeOpenAI

    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture
def proxy_client(bead_home, upstream):
    """Start the proxy app in this process for this test's home: ``proxy_client(trace=..., upstream_url=...)``."""
    started: list[ProxyClient] = []

    def start(
        project: str | None = None,
        trace: str | Path | None = None,
        upstream_url: str | None = None,
        openai_upstream_url: str | None = None,
    ) -> ProxyClient:
        p = ProxyClient(
            make_proxy_app(
                bead_home, upstream_url or upstream.url, project=project, trace=trace, openai_upstream_url=openai_upstream_url
            )
        )
        started.append(p)
        return p

    yield start
    for p in started:
        p.close()


@pytest.fixture
def served_proxy(bead_home, upstream):
    """Serve the proxy app on a loopback port in this process: ``served_proxy(...)`` returns a ServedProxy."""
    started: list[ServedProxy] = []

    def start(
        project: str | None = None,
        trace: str | Path | None = None,
        upstream_url: str | None = None,
        openai_upstream_url: str | None = None,
    ) -> ServedProxy:
        s = ServedProxy(
            make_proxy_app(
                bead_home, upstream_url or upstream.url, project=project, trace=trace, openai_upstream_url=openai_upstream_url
            )
        )
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def http_answers(url: str) -> bool:
    """Whether ``url`` answers 200 right now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def launch_indexer(home: Path, log_path: Path) -> subprocess.Popen:
    """Start `bead indexer` as a real process for ``home``, its output to ``log_path``; wait until it watches.
    The caller stops it (``terminate`` and ``wait``)."""
    with open(log_path, "wb") as log:  # the process has its own descriptor of the file
        p = subprocess.Popen(
            [sys.executable, "-m", "bead", "indexer"],
            env={**os.environ, "BEAD_HOME": str(home)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    if not eventually(lambda: b"watching" in log_path.read_bytes(), 20):
        p.terminate()
        p.wait(10)
        raise RuntimeError(f"the indexer did not start watching:\n{log_path.read_text(errors='replace')}")
    return p


def launch_proxy(home: Path, upstream_url: str, log_path: Path, *extra: str, env: dict | None = None):
    """Start `bead proxy` as a real process on a free loopback port; wait for its health check."""
    from fakes import free_port

    port = free_port()
    log = open(log_path, "wb")
    p = subprocess.Popen(
        [sys.executable, "-m", "bead", "proxy", "--listen", f"127.0.0.1:{port}", "--upstream", upstream_url, *extra],
        env={**os.environ, "BEAD_HOME": str(home), **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if p.poll() is not None:
            raise RuntimeError(f"proxy exited: {log_path.read_text()}")
        return http_answers(url + "/bead/health")

    if not eventually(up, 60):
        p.kill()
        raise RuntimeError("proxy did not answer /bead/health")
    return p, url


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


@pytest.fixture
def start_proxy(bead_home, upstream, tmp_path):
    """Start real `bead proxy` processes for this test's home; stopped afterwards.

    Only for what a process shows: SIGTERM grace, the service log, the command itself.
    """
    procs = []
    logs: list[Path] = []  # each process's stdout and stderr, in start order

    def start(*extra: str, env: dict | None = None, upstream_url: str | None = None) -> str:
        logs.append(tmp_path / f"proxy-{len(procs)}.log")
        p, url = launch_proxy(bead_home, upstream_url or upstream.url, logs[-1], *extra, env=env)
        procs.append(p)
        return url

    start.procs = procs
    start.logs = logs
    yield start
    for p in procs:
        stop(p)


def remembered(home: Path, query: str, words: str) -> list:
    """The current facts among ``query``'s three best hits whose body holds ``words`` (a replayed harness's
    "remember"), best first."""
    from bead.recall.rank import search_facts

    with Memory(Home(home), Config(owner="dev")) as mem:
        hits = search_facts(mem.index, query, limit=3)
        facts = [mem.current(h.id.rsplit("@v", 1)[0]) for h in hits]
    return [f for f in facts if f is not None and words in f.body]


def replay_openai(home: Path, records: list[dict], reply_of, headers_of=None, whole=None) -> list:
    """Recorded harness requests (tests/fixtures/*/requests.jsonl), in order, through one in-process proxy app in front
    of a fake OpenAI upstream, each answered with ``reply_of(record)``; ``headers_of(record)`` adds headers. Each
    answer must be a 200 that ``whole(body)`` accepts (default: a chat completions stream to its "[DONE]"). Returns
    (record, what the upstream got) pairs, after every capture is done; nothing may reach the Anthropic upstream."""
    import base64

    from fakes import FakeAnthropic, FakeOpenAI

    fake, anthropic = FakeOpenAI(), FakeAnthropic()
    proxy = ProxyClient(make_proxy_app(home, anthropic.url, openai_upstream_url=fake.url))
    try:
        sent = []
        for rec in records:
            fake.replies.append(reply_of(rec))
            headers = {k: v for k, v in rec["headers"] if k.lower() not in ("host", "content-length", "connection")}
            headers.update(headers_of(rec) if headers_of else {})
            status, _, data = proxy.post(base64.b64decode(rec["body_b64"]), headers, "/openai" + rec["path"])
            assert status == 200, data[:300]
            assert (whole or (lambda d: d.rstrip().endswith(b"data: [DONE]")))(data), data[-300:]
            sent.append((rec, fake.requests[-1]))
        proxy.settle()  # the last answer is captured after its stream ends
        assert anthropic.requests == [], "nothing went to the Anthropic upstream"
    finally:
        proxy.close()
        fake.close()
        anthropic.close()
    return sent


@contextlib.contextmanager
def reading_index(index_db: Path):
    """Another process holding a read transaction on ``index_db`` (a backup, an sqlite3 shell) for the block: it
    keeps a checkpoint from emptying the WAL. A process of its own: SQLite's locks do not stop connections of one
    process."""
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN'); c.execute('SELECT count(*) FROM facts').fetchone()\n"
            "print('reading', flush=True); sys.stdin.readline()",
            str(index_db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
        yield
    finally:
        reader.communicate("\n", timeout=30)


def deep_tree(at, depth):
    """``depth`` folders one in the other under ``at``, made through descriptors (no path grows long)."""
    at.mkdir(parents=True, exist_ok=True)
    fd = os.open(at, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", 0o700, dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


def remove_deep(at):
    """rmtree recurses as deep as the tree (pytest's cleanup of old runs too): take it apart from the bottom."""
    if not at.exists():
        return
    parts = [at]
    while (parts[-1] / "d").is_dir():
        parts.append(parts[-1] / "d")
    for p in reversed(parts[1:]):
        os.rmdir(p)
