"""A raw HTTP/1.1 upstream on loopback that records each request's bytes and answers with given bytes, and a raw
client: for what an HTTP library would tidy up on either side (a request target's bytes, a missing header)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable


class RawUpstream:
    """A TCP server on 127.0.0.1: records each request (its head's bytes, its body by Content-Length) and answers
    ``response`` as it is (or what ``response`` answers the request's head, where it is a function), then closes the
    connection; with ``keep_alive``, reads the next request on the same connection instead."""

    def __init__(
        self,
        response: bytes | Callable[[bytes], bytes | list[bytes]],
        keep_alive: bool = False,
        tls: ssl.SSLContext | None = None,
    ):
        self.response = response
        self.keep_alive = keep_alive
        self.tls = tls  # a server context: each connection speaks TLS, and each part of an answer is its own record
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0  # accepted so far
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        with conn, contextlib.suppress(OSError):  # a client that went away (bead closing a connection it drops)
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                self.requests.append((head, body))
                answer = self.response(head) if callable(self.response) else self.response
                for part in answer if isinstance(answer, list) else [answer]:
                    conn.sendall(part)
                if not self.keep_alive:
                    return

    def close(self) -> None:
        self.sock.close()


def raw_request(url: str, data: bytes, timeout: float = 20.0) -> bytes:
    """Send ``data`` to ``url``'s host and port; everything it answers until it closes the connection."""
    host, port = url.rsplit("/", 1)[-1].split(":")
    out = b""
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        while chunk := s.recv(65536):
            out += chunk
    return out


def head_of(response: bytes) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
    """(status line, headers as (lower-cased name, value), body) of a raw HTTP/1.1 response."""
    head, _, body = response.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    return status, [(k.strip().lower(), v.strip()) for k, _, v in (line.partition(b":") for line in lines)], body


class Trickle:
    """A listener on 127.0.0.1 that reads one request and then sends ``data`` a byte at a time, ``every`` seconds
    apart, for as long as the test runs (a server holding its answer back): ``with Trickle(...) as t: t.url``."""

    def __init__(self, data: bytes, every: float):
        self.data, self.every = data, every
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            for i in range(len(self.data)):
                if self.stop.wait(self.every):
                    return
                try:
                    conn.sendall(self.data[i : i + 1])
                except OSError:
                    return

    def __enter__(self) -> Trickle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
