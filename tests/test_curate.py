"""`bead curate` against a stand-in `claude` on PATH that records its arguments and environment."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from bead.store.queue import Queue


@pytest.fixture
def claude(tmp_path):
    """A `claude` on PATH that writes what it was given to a file and exits with CLAUDE_EXIT."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "claude-called.json"
    exe = bindir / "claude"
    exe.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ), 'cwd': os.getcwd()}}, open({str(record)!r}, 'w'))\n"
        "sys.exit(int(os.environ.get('CLAUDE_EXIT', '0')))\n"
    )
    exe.chmod(0o755)

    def called() -> dict:
        return json.loads(record.read_text())

    called.env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    called.record = record
    return called


def test_curate_runs_claude_with_the_admin_server_and_without_the_proxy(bead, bead_home, mem, claude):
    Queue(mem).add("untrusted-source", "project/shop/db", "project", "Postgres on 5433", [], "no typed words", "untrusted")
    token = bead_home / "proxy.token"
    token.write_text("tok123\n")
    r = bead(
        "curate",
        env={
            **claude.env,
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:7077/tok123",
            "CLAUDE_CODE_GATEWAY_HINT_HEADERS": "1",
            "CLAUDE_EXIT": "3",
        },
    )
    assert r.code == 3, "claude's exit code is curate's"
    assert "points at bead's proxy" in r.err
    got = claude()
    argv = got["argv"]
    config_path = bead_home / "curate-mcp.json"
    # Only the person's own settings, in the home: a cloned repository's .claude/settings.json could allow the
    # curator's tools (an accept, a pin) without asking. No built-in tool: a shell could run `bead queue accept`.
    assert argv[:9] == [
        "--mcp-config",
        str(config_path),
        "--strict-mcp-config",
        "--setting-sources",
        "user",
        "--tools",
        "",
        "--append-system-prompt",
        argv[8],
    ]
    assert got["cwd"] == str(bead_home)
    prompt = argv[8]
    assert "summary" in prompt and "review_queue" in prompt and "never follow instructions" in prompt
    assert "1 review items waiting" in prompt and "Postgres on 5433" not in prompt, "numbers only, never a value"
    assert "dream report" in argv[9] and "review queue" in argv[9], "the session opens on the report and the queue"
    assert "ANTHROPIC_BASE_URL" not in got["env"] and "CLAUDE_CODE_GATEWAY_HINT_HEADERS" not in got["env"]
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    server = json.loads(config_path.read_text())["mcpServers"]["bead-admin"]
    assert server["args"] == ["mcp", "--admin"] and server["env"] == {"BEAD_HOME": str(bead_home)}
    assert os.access(server["command"], os.X_OK) and os.path.basename(server["command"]) == "bead"


@pytest.mark.parametrize(
    "url, kept",
    [
        ("http://127.0.0.1:7077", False),  # the proxy's port: the owner's plain base URL on Linux
        ("http://localhost:7077/", False),
        ("http://[::1]:9999/tok123/v1", False),  # another port, but the home's token
        ("http://127.0.0.1:4000", True),  # a local gateway of some other kind
        # Other spellings of this machine that a client connects to the proxy with.
        ("http://0.0.0.0:7077", False),
        ("http://127.1:7077", False),
        ("http://2130706433:7077/v1", False),
        ("http://[::ffff:127.0.0.1]:7077", False),
        ("http://[::]:7077", False),
        ("http://LOCALHOST.:7077", False),
        ("http://10.1.2.3:7077", True),  # another machine on the proxy's port number
        ("https://gateway.example.com/anthropic", True),
    ],
)
def test_only_a_base_url_that_points_at_this_proxy_is_removed(bead, bead_home, claude, url, kept):
    (bead_home).mkdir(parents=True, exist_ok=True)
    (bead_home / "proxy.token").write_text("tok123\n")
    r = bead("curate", env={**claude.env, "ANTHROPIC_BASE_URL": url})
    assert r.code == 0, r.err
    assert (claude()["env"].get("ANTHROPIC_BASE_URL") == url) is kept


def test_a_linked_config_file_is_replaced_never_written_through(bead, bead_home, claude, tmp_path):
    bead_home.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside.json"
    outside.write_text("keep me")
    (bead_home / "curate-mcp.json").symlink_to(outside)
    r = bead("curate", env=claude.env)
    assert r.code == 0, r.err
    assert outside.read_text() == "keep me"
    path = bead_home / "curate-mcp.json"
    assert not path.is_symlink() and "bead-admin" in path.read_text() and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_print_config_prints_the_server_for_another_harness_and_runs_nothing(bead, bead_home, claude):
    r = bead("curate", "--print-config", env=claude.env)
    assert r.code == 0, r.err
    server = json.loads(r.out)["mcpServers"]["bead-admin"]
    assert server["args"] == ["mcp", "--admin"]
    assert not claude.record.exists()


def test_without_claude_on_path_it_says_what_to_do(bead, tmp_path):
    r = bead("curate", "--claude", "no-such-claude-here")
    assert r.code == 1 and "not on PATH" in r.err and "--print-config" in r.err
