"""A small Chrome DevTools Protocol client for headless Chromium, over a pipe (no websocket, no extra package).

Chromium started with ``--remote-debugging-pipe`` reads commands on its fd 3
and writes answers and events on its fd 4, each message one JSON text ended
by a NUL byte. ``Browser`` starts it (Debian's ``chromium``, the flags a test
machine needs), ``page()`` opens a tab attached in flat mode, and a reader
thread files answers by id and keeps every event, so a test can wait for a
positive signal (``Page.loadEventFired``) and read the console's errors.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import Future
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
]


def chromium() -> str | None:
    return shutil.which("chromium") or (os.path.exists("/usr/bin/chromium") and "/usr/bin/chromium") or None


class Browser:
    def __init__(self, exe: str, profile: str, log_path: str):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        # Move the child's ends above 100, so that putting them on 3 and 4 cannot clobber one with the other.
        cmd_r, out_w = (self._high(fd) for fd in (cmd_r, out_w))
        # bash puts the two pipe ends on fds 3 and 4 and closes the originals (no preexec_fn in a threaded test;
        # bash, unlike dash, takes descriptors above 9 in a redirection).
        script = f'exec 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-; exec "$0" "$@"'
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", script, exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(cmd_r, out_w),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._next = 0
        self._waiting: dict[int, Future] = {}
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.version = self.call("Browser.getVersion", timeout=60)

    @staticmethod
    def _high(fd: int) -> int:
        import fcntl

        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(fd)
        return high

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._out_r, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    for f in self._waiting.values():
                        f.set_exception(RuntimeError("chromium closed its debugging pipe"))
                    self._waiting.clear()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        fut = self._waiting.pop(msg["id"], None)
                    if fut is not None:
                        if "error" in msg:
                            fut.set_exception(RuntimeError(f"CDP error: {msg['error']}"))
                        else:
                            fut.set_result(msg.get("result", {}))
                else:
                    with self._lock:
                        self.events.append(msg)

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30.0) -> dict:
        with self._lock:
            self._next += 1
            mid = self._next
            fut: Future = Future()
            self._waiting[mid] = fut
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return fut.result(timeout)

    def wait_event(self, method: str, session: str | None = None, timeout: float = 30.0, after: int = 0) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                for e in self.events[after:]:
                    if e.get("method") == method and (session is None or e.get("sessionId") == session):
                        return e
            time.sleep(0.01)
        raise AssertionError(f"no {method} within {timeout} s")

    def page(self) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return Page(self, session)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()


class Page:
    def __init__(self, browser: Browser, session: str):
        self.b, self.session = browser, session
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        return self.b.call(method, params, self.session, timeout)

    def open(self, url: str, width: int = 1280, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        )
        mark = len(self.b.events)
        nav = self.call("Page.navigate", {"url": url})
        if nav.get("errorText"):
            raise AssertionError(f"navigation failed: {nav['errorText']}")
        self.b.wait_event("Page.loadEventFired", self.session, after=mark)

    def eval(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise AssertionError(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self) -> list[str]:
        """What the page's console reported as an error: console.error, uncaught exceptions, and browser log
        entries of level error (a CSP violation, a failed load)."""
        out = []
        for e in list(self.b.events):
            if e.get("sessionId") != self.session:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + str(p["entry"].get("text")) + " " + str(p["entry"].get("url", "")))
        return out

    def screenshot(self, path: str) -> None:
        """The whole page as a PNG."""
        height = int(self.eval("Math.ceil(document.documentElement.scrollHeight)"))
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": min(max(height, 600), 4000), "deviceScaleFactor": 1, "mobile": False},
        )
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
