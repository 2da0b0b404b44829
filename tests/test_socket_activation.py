"""The proxy on a socket systemd holds (bead-proxy.socket, written by `bead setup`): the port stays open while the
proxy restarts, so a request sent meanwhile waits in the kernel's queue and is answered by the next proxy instead of
being refused, and no other process can take the port that Codex, OpenCode and Aider dial.

Real processes: systemd's own `systemd-socket-activate` passes the socket as a user manager does (LISTEN_FDS,
LISTEN_PID, descriptor 3), and a launcher in this test does the same for a restart; `inherited_socket`'s refusals
are checked in this process."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from conftest import eventually, http_answers, stop
from fakes import free_port

from bead.errors import BeadError
from bead.proxy.serve import inherited_socket

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd's socket activation")

# What a service manager does between fork and exec: the socket as descriptor 3, and the variables that say so,
# naming this very process (exec keeps the pid).
LAUNCHER = """
import os, sys
os.dup2(int(sys.argv[1]), 3)
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDS"] = "1"
os.execv(sys.executable, [sys.executable, "-m", "bead", *sys.argv[2:]])
"""


def message(text: str) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()


HEADERS = {"content-type": "application/json", "x-api-key": "sk-test", "anthropic-version": "2023-06-01"}


def send(port: int, text: str) -> http.client.HTTPConnection:
    """A request written to the port: connected and sent, its answer not read yet."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/messages", body=message(text), headers={**HEADERS, "x-bead-session": text[:20]})
    return conn


def answer(conn: http.client.HTTPConnection) -> tuple[int, bytes]:
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def held_socket(port: int) -> socket.socket:
    """The port as a service manager holds it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


@pytest.mark.skipif(not shutil.which("systemd-socket-activate"), reason="systemd is not installed (.ci/run installs it)")
def test_a_proxy_started_by_systemd_serves_the_socket_it_is_passed(bead_home, upstream, tmp_path):
    """systemd-socket-activate binds the port and starts the proxy on the first connection: the request that
    started it is answered (the proxy could not have bound the port itself: systemd holds it)."""
    port = free_port()
    log = tmp_path / "proxy.log"
    env = {**os.environ, "BEAD_HOME": str(bead_home)}
    with open(log, "wb") as out:
        p = subprocess.Popen(
            [
                "systemd-socket-activate",
                "--listen",
                f"127.0.0.1:{port}",
                # It starts the program with these variables only (and its own LISTEN_*): this test's, as they are.
                *(f"--setenv={k}" for k in env),
                sys.executable,
                "-m",
                "bead",
                "proxy",
                "--listen",
                f"127.0.0.1:{port}",
                "--upstream",
                upstream.url,
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        # systemd-socket-activate says when it listens; the proxy is not running yet.
        assert eventually(lambda: "Listening on" in log.read_text(errors="replace"), 30), log.read_text(errors="replace")
        status, data = answer(send(port, "hello through the socket systemd holds"))
        assert status == 200, (data[:300], log.read_text(errors="replace"))
        assert b"hello through the socket systemd holds" in upstream.requests[-1].body
        assert f"bead proxy on http://127.0.0.1:{port}" in log.read_text(errors="replace")
    finally:
        stop(p)


def test_a_request_sent_while_the_proxy_restarts_is_answered_not_refused(bead_home, upstream, tmp_path):
    """The service manager keeps the port while one proxy stops and the next starts: a request written in between
    is answered by the next one, and both serve the one socket without binding it."""
    port = free_port()
    sock = held_socket(port)
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "BEAD_HOME": str(bead_home)}
    args = ["proxy", "--listen", f"127.0.0.1:{port}", "--upstream", upstream.url]

    def launch(n: int) -> subprocess.Popen:
        with open(tmp_path / f"proxy-{n}.log", "wb") as out:
            return subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(sock.fileno()), *args],
                env=env,
                pass_fds=(sock.fileno(),),
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    first = launch(1)
    second = None
    try:
        assert eventually(lambda: http_answers(url + "/bead/health"), 60), (tmp_path / "proxy-1.log").read_text()
        assert answer(send(port, "before the restart"))[0] == 200
        stop(first)
        assert first.returncode == 0, (tmp_path / "proxy-1.log").read_text()
        # Nothing serves the port now; the connection is queued by the kernel on the held socket.
        waiting = send(port, "during the restart")
        second = launch(2)
        status, data = answer(waiting)
        assert status == 200, (data[:300], (tmp_path / "proxy-2.log").read_text())
        assert [b"before the restart" in r.body for r in upstream.requests] == [True, False]
        assert b"during the restart" in upstream.requests[-1].body
    finally:
        stop(first)
        if second is not None:
            stop(second)
        sock.close()


def env_for(count: str = "1") -> dict[str, str]:
    return {"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": count, "LISTEN_FDNAMES": "bead-proxy.socket", "OTHER": "x"}


class TestInheritedSocket:
    def test_none_without_the_variables_or_for_another_process(self):
        assert inherited_socket("127.0.0.1", 7077, environ={}) is None
        other = {"LISTEN_PID": "1", "LISTEN_FDS": "1"}
        assert inherited_socket("127.0.0.1", 7077, environ=other) is None
        assert other == {"LISTEN_PID": "1", "LISTEN_FDS": "1"}  # another process's: left as they are

    def test_a_listening_loopback_socket_on_the_address_is_taken_and_the_variables_go(self):
        port = free_port()
        sock = held_socket(port)
        env = env_for()
        fd = inherited_socket("127.0.0.1", port, environ=env, fd=sock.fileno())
        assert fd == sock.fileno()
        assert env == {"OTHER": "x"}  # nothing this process starts reads them as its own
        taken = socket.socket(fileno=sock.detach())
        assert taken.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        taken.close()

    def test_a_socket_on_another_address_is_refused_naming_both_and_the_fix(self):
        port = free_port()
        sock = held_socket(port)
        with pytest.raises(BeadError) as e:
            inherited_socket("127.0.0.1", port + 1 if port < 65535 else port - 1, environ=env_for(), fd=sock.fileno())
        assert f"127.0.0.1:{port}" in str(e.value) and "bead setup" in (e.value.hint or "")
        # The descriptor stays open: it is the service manager's.
        assert sock.getsockname()[1] == port
        sock.close()

    def test_a_socket_that_is_not_loopback_is_refused(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("0.0.0.0", 0))  # bound, never listening: nothing can connect to it  # noqa: S104
        with pytest.raises(BeadError, match="not a loopback address"):
            inherited_socket("127.0.0.1", sock.getsockname()[1], environ=env_for(), fd=sock.fileno())
        sock.close()

    def test_a_socket_that_is_not_tcp_or_not_listening_or_more_than_one_is_refused(self):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        with pytest.raises(BeadError, match="not a TCP socket"):
            inherited_socket("127.0.0.1", udp.getsockname()[1], environ=env_for(), fd=udp.fileno())
        udp.close()
        idle = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        idle.bind(("127.0.0.1", 0))
        with pytest.raises(BeadError, match="not listening"):
            inherited_socket("127.0.0.1", idle.getsockname()[1], environ=env_for(), fd=idle.fileno())
        idle.close()
        with pytest.raises(BeadError, match="exactly one"):
            inherited_socket("127.0.0.1", 7077, environ=env_for("2"))
        with pytest.raises(BeadError, match="descriptor"):
            inherited_socket("127.0.0.1", 7077, environ=env_for(), fd=_closed_fd())


def _closed_fd() -> int:
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    return r


def test_the_socket_unit_listens_on_the_configured_loopback_address(tmp_path):
    from bead.paths import Home
    from bead.setup.install import Plan

    plan = Plan(platform="systemd", user_home=tmp_path, home=Home(tmp_path / ".bead"), bead="/bin/true", listen="localhost:7080")
    assert "\nListenStream=127.0.0.1:7080\n" in plan.socket_template()  # as the proxy binds localhost
    v6 = Plan(platform="systemd", user_home=tmp_path, home=Home(tmp_path / ".bead"), bead="/bin/true", listen="[::1]:7080")
    assert "\nListenStream=[::1]:7080\n" in v6.socket_template()
    wide = Plan(platform="systemd", user_home=tmp_path, home=Home(tmp_path / ".bead"), bead="/bin/true", listen="0.0.0.0:7080")
    with pytest.raises(BeadError, match="not a loopback address"):
        wide.socket_template()


# A process that holds a listening socket under systemd's name, as the user's service manager holds
# bead-proxy.socket: it never accepts, so a connection waits in the kernel's queue.
HOLDER = """
import ctypes, socket, sys
ctypes.CDLL(None).prctl(15, b"systemd", 0, 0, 0)  # PR_SET_NAME: the kernel's command name
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
sys.stdin.read()
"""


def test_a_port_systemd_holds_for_a_restarting_proxy_is_no_impostor(tmp_path):
    """While the proxy starts or restarts, systemd's socket takes the connection and nothing proves the token: that
    is this user's own service manager, not someone else's listener, and status says so."""
    from bead.core.health import proxy_health
    from bead.ports import held_by_own_service_manager, listener

    port = free_port()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "listening"
        assert held_by_own_service_manager(port) and listener(port) == f"pid {holder.pid} (systemd)"
        health = proxy_health(f"127.0.0.1:{port}", "t" * 43)
        assert health == {"running": False, "address": f"127.0.0.1:{port}", "held_by_systemd": True}
    finally:
        holder.kill()
        holder.wait()
    # Anything else that cannot prove the token is still called what it is.
    other = held_socket(free_port())
    try:
        assert not held_by_own_service_manager(other.getsockname()[1])
        assert proxy_health(f"127.0.0.1:{other.getsockname()[1]}", "t" * 43).get("impostor") is True
    finally:
        other.close()


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "127.0.0.1:99999", "[::1%lo]:7077", "127.0.0.1:７０７７"])
def test_an_address_systemd_could_not_listen_on_is_refused_before_anything_is_written(listen):
    from bead.ports import parse_listen

    with pytest.raises(BeadError, match="port from 1 to 65535|has a scope"):
        parse_listen(listen)
