"""Several proxy processes on one port (#27, ``proxy.workers``): real `bead proxy --workers 2` processes, since
what is under test is processes (a fork, a shared socket, signals, a kill).

A conversation whose requests land on either worker keeps its turns in order and each fact injected once; the
health endpoint adds up all workers; a worker that dies is started again; the supervisor's stop (or its death)
stops them all."""

from __future__ import annotations

import json
import os
import signal
import sys
import urllib.request

import pytest
from conftest import eventually
from fakes import Reply
from test_proxy_behaviour import mem_of, post, raw_turns

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked; the checks read /proc")

SYSTEM = [{"type": "text", "text": "You are a test.\n - Primary working directory: /home/dev/src/shop"}]


def body(messages: list[dict]) -> bytes:
    return json.dumps(
        {"model": "claude-test", "max_tokens": 100, "stream": True, "system": SYSTEM, "messages": messages}
    ).encode()


def health(url: str, home) -> dict:
    token = (home / "proxy.token").read_text().strip()
    r = urllib.request.Request(url + "/bead/health", headers={"x-bead-token": token})
    with urllib.request.urlopen(r, timeout=10) as resp:
        return json.loads(resp.read())


def trace_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not serving
        return not open(f"/proc/{pid}/stat").read().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_two_workers_keep_a_conversation_in_order_add_up_health_replace_a_dead_worker_and_stop_with_the_supervisor(
    start_proxy, upstream, bead_home
):
    """One `bead proxy --workers 2` process, its promises in turn (each was a process of its own):

    - a conversation whose requests land on either worker (each on a connection of its own, so the kernel hands
      it to either; it goes on until both workers have served it) keeps its turns in the raw log in order, each
      once, and the fact the turns ask about reached the model once (pinned or recalled) in all;
    - whichever worker answers /bead/health counts the requests all of them served;
    - a worker that dies is started again, and what it served still counts;
    - stopping the supervisor stops every worker, the one started again too."""
    from conftest import stop

    with mem_of(bead_home) as m:
        m.write("project/shop/db", "The shop's database is Postgres 16 on db.internal", "project")
    # What is checked here is the workers' order and counts, not the deadline: a cold worker on a busy machine may
    # take more than the default 500 ms to prepare its first request, and fail open without the fact.
    (bead_home / "config.yaml").write_text("owner: tester\nproxy:\n  recall_deadline_ms: 10000\n")
    trace = bead_home / "trace.jsonl"
    url = start_proxy("--workers", "2", "--trace", str(trace))
    # The supervisor answers once one worker serves; the second may still be starting.
    assert eventually(lambda: len(health(url, bead_home)["worker_pids"]) == 2)
    assert health(url, bead_home)["workers"] == 2

    # A conversation served by both workers.
    msgs = [{"role": "user", "content": "which postgres database host does the shop use?"}]
    served: set[int] = set()
    n = 0
    while len(served) < 2 or n < 4:
        assert n < 60, f"one worker served {n} requests in a row: {served}"
        upstream.replies.append(Reply(kind="sse", text=f"answer {n}: db.internal"))
        status, _, _ = post(url, body(msgs), {"x-bead-session": "two-workers"})
        assert status == 200
        # (once, in a whole CI run, a request's trace line never came: the proxy's log says what its workers did)
        assert eventually(lambda: len(trace_lines(trace)) > n), (  # noqa: B023 - waited for within the loop
            n,
            trace_lines(trace),
            start_proxy.logs[0].read_text(errors="replace")[-4000:],
        )
        served.add(trace_lines(trace)[n]["pid"])
        msgs = [*msgs, {"role": "assistant", "content": f"answer {n}: db.internal"}]
        msgs.append({"role": "user", "content": f"and the postgres database host again, step {n}?"})
        n += 1
    entries = trace_lines(trace)
    assert {e["pid"] for e in entries} == served and len(served) == 2
    shown = [i for e in entries for i in [*(e.get("pinned") or []), *e["injected"]]]
    assert shown.count("project/shop/db@v1") == 1, shown
    want = []
    for i in range(n):
        want.append(
            (
                "user",
                "which postgres database host does the shop use?"
                if i == 0
                else f"and the postgres database host again, step {i - 1}?",
            )
        )
        want.append(("assistant", f"answer {i}: db.internal"))

    def logged() -> list[tuple[str, str]]:
        return [(t.role, t.text) for t in raw_turns(bead_home, "two-workers")]

    assert eventually(lambda: len(logged()) >= len(want)), logged()
    assert logged() == want

    # Health adds up every worker: each request is counted before its answer is sent; every health answer, from
    # either worker, has them all (the conversation's, which both workers served, and twelve more).
    for i in range(12):
        post(url, body([{"role": "user", "content": f"question {i}"}]), {"x-bead-session": f"h{i}"})
    for _ in range(6):
        h = health(url, bead_home)
        assert h["requests"] == n + 12 and h["workers"] == 2, h

    # A worker that dies is started again and its counts stay.
    pids = h["worker_pids"]
    os.kill(pids[0], signal.SIGKILL)
    assert eventually(lambda: (h := health(url, bead_home))["workers"] == 2 and pids[0] not in h["worker_pids"], 30)
    assert post(url, body([{"role": "user", "content": "still there?"}]), {"x-bead-session": "after"})[0] == 200
    h = health(url, bead_home)
    assert h["requests"] == n + 13 and h["worker_restarts"] == 1, h  # what the dead worker served still counts

    # Stopping the supervisor stops every worker.
    now = h["worker_pids"]
    proc = start_proxy.procs[-1]
    stop(proc)
    assert proc.returncode == 0
    assert eventually(lambda: not any(alive(p) for p in now), 30)


def test_workers_stop_when_their_supervisor_is_killed(start_proxy, upstream, bead_home):
    """No orphaned workers holding the port once the supervisor is gone without a chance to stop them."""
    url = start_proxy("--workers", "2")
    pids = health(url, bead_home)["worker_pids"]
    proc = start_proxy.procs[-1]
    proc.kill()
    proc.wait()
    assert eventually(lambda: not any(alive(p) for p in pids), 30)


def test_a_stop_while_the_workers_are_forked_stops_them_all(bead_home, upstream, tmp_path):
    """SIGTERM as soon as the supervisor says it listens (before or while it forks): it and every worker end."""
    import subprocess

    from fakes import free_port

    def serving(listen: str) -> list[int]:
        """The processes whose command line serves ``listen``."""
        out = []
        for d in os.listdir("/proc"):
            try:
                if d.isdigit() and listen.encode() in open(f"/proc/{d}/cmdline", "rb").read() and alive(int(d)):
                    out.append(int(d))
            except OSError:
                continue
        return out

    for attempt in range(3):
        listen = f"127.0.0.1:{free_port()}"
        p = subprocess.Popen(
            [sys.executable, "-m", "bead", "proxy", "--listen", listen, "--upstream", upstream.url, "--workers", "2"],
            env={**os.environ, "BEAD_HOME": str(bead_home)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert p.stderr is not None
        assert b"bead proxy on" in p.stderr.readline()
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) == 0, attempt
        assert eventually(lambda: serving(listen) == [], 30), serving(listen)  # noqa: B023


def test_a_board_slot_whose_writer_was_killed_mid_write_is_read_again(bead_home):
    """A worker killed inside a publication leaves its slot's sequence odd; the worker that replaces it in that
    slot still publishes readable counts."""
    from bead.proxy.workers import _HEAD, Board

    board = Board(2)
    board.publish(0, {"requests": 3, "pid": 11})
    seq = _HEAD.unpack_from(board.mem, 0)[0]
    _HEAD.pack_into(board.mem, 0, seq + 1, 0)  # what a SIGKILL between the two writes leaves
    assert board.read(0) is None
    board.publish(0, {"requests": 1, "pid": 12})
    assert board.read(0) == {"requests": 1, "pid": 12}


def test_counters_read_while_other_threads_add_kinds_never_raise(bead_home):
    """Health reads a worker's counters (and every change publishes them) while the request and capture threads
    add counters of new kinds."""
    import threading
    import time

    from bead.config import parse
    from bead.paths import Home
    from bead.proxy.engine import Engine
    from bead.proxy.workers import Board

    engine = Engine(Home(bead_home).ensure(), parse("owner: t\n"))
    engine.share(Board(1), 0)
    failures: list[BaseException] = []
    end = time.monotonic() + 0.5
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def add(n: int) -> None:
        i = 0
        while time.monotonic() < end:
            try:
                engine.count(f"kind-{n}-{i}")
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                failures.append(exc)
            i += 1

    def read() -> None:
        while time.monotonic() < end:
            try:
                engine.health()
            except BaseException as exc:  # noqa: BLE001
                failures.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(3)] + [threading.Thread(target=read)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
        engine.close()
    assert failures == []


@pytest.mark.parametrize("how", ["deaths", "forks that fail"])
def test_workers_that_keep_dying_are_started_again_after_a_wait_and_the_supervisor_holds_on(tmp_path, how):
    """A local user could make the workers die again and again (bodies that exhaust memory): after five deaths in a
    minute the supervisor stopped, its port came free, and whoever bound it next received the harnesses' requests,
    the token and API keys with them; a fork that failed (memory exhausted) ended it too. Past the limit it now
    waits, twice as long each time, and starts the worker again; a stop still ends it at once. Shown with the
    supervisor alone (the limit 2, the first wait 0.2 s), in a process of its own, since it forks."""
    import subprocess
    import textwrap

    starts = tmp_path / "starts"
    script = textwrap.dedent(f"""
        import errno, logging, os, signal, sys, time
        from bead.proxy import workers
        workers.CRASHES, workers.BACKOFF_S, workers.RESTART_DELAY_S = 2, 0.2, 0.05
        workers.CRASH_WINDOW_S = 0.3  # shorter than the waits: deaths during them still count as the same loop
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        if {how!r} == "forks that fail":
            real, forks = os.fork, [0]
            def fork():
                forks[0] += 1
                if forks[0] in (2, 3, 4):
                    raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))
                return real()
            os.fork = fork

        def run(slot):
            with open({str(starts)!r}, "a") as f:
                f.write(f"{{time.monotonic()}}\\n")
            if {how!r} == "deaths" and sum(1 for _ in open({str(starts)!r})) <= 4 or (
                {how!r} != "deaths" and sum(1 for _ in open({str(starts)!r})) == 1
            ):
                os._exit(1)  # dies at once
            signal.pause()

        sys.exit(workers.supervise(run, 1))
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    want = 5 if how == "deaths" else 2
    try:
        assert eventually(lambda: starts.exists() and len(starts.read_text().splitlines()) >= want, 30)
        assert p.poll() is None  # it held on past the limit
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read() if p.stderr else ""
    at = [float(x) for x in starts.read_text().split()]
    if how == "deaths":
        # One quick start again, then waits of 0.2, 0.4 and 0.8 s: each at least as long as it said.
        waits = [b - a for a, b in zip(at, at[1:], strict=False)]
        assert waits[1] >= 0.2 and waits[2] >= 0.4 and waits[3] >= 0.8, waits
        for said in ("0.2 s", "0.4 s", "0.8 s"):
            assert f"starting it again in {said}, the port held meanwhile" in err, err
    else:
        # The worker died once; three forks failed, each waited for, twice as long as the one before.
        assert at[1] - at[0] >= 0.2 + 0.4 + 0.8, at
        assert err.count("could not start proxy worker 0 (Cannot allocate memory)") == 3, err
    assert "stopping" not in err


def test_the_proxy_raises_its_open_file_limit_before_it_serves(bead_home, upstream):
    """A local user who held about a thousand connections open (headers sent, the body never) filled the usual
    soft limit of 1,024 files, and the proxy accepted no new connection, the agent's neither. `bead proxy`, started
    with a soft limit of 256, serves with its soft limit raised to the hard one (its workers inherit it)."""
    import resource
    import subprocess

    from conftest import http_answers
    from fakes import free_port

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"the hard limit here is {hard}: nothing to raise")
    port = free_port()
    script = (
        "import os, resource, sys; "
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
        f"os.execv(sys.executable, [sys.executable, '-m', 'bead', 'proxy', '--listen', '127.0.0.1:{port}', "
        f"'--upstream', {upstream.url!r}])"
    )
    p = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "BEAD_HOME": str(bead_home)})
    try:
        assert eventually(lambda: p.poll() is None and http_answers(f"http://127.0.0.1:{port}/bead/health"), 60)
        line = next(x for x in open(f"/proc/{p.pid}/limits").read().splitlines() if x.startswith("Max open files"))
        got_soft, got_hard = line.split()[3:5]
        assert got_soft == got_hard and got_soft != "256", line
    finally:
        p.terminate()
        p.wait(30)
