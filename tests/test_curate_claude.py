"""`bead curate`'s command line under the real Claude Code, against a model API on loopback that speaks the
Anthropic Messages shape: the session holds bead's curator tools and no built-in one, and the curator's remember
writes only on the person's own yes, which reaches Claude Code as an MCP elicitation (answered here by the person's
own Elicitation hook, in their user settings; headless Claude Code declines it).

Runs where Claude Code is installed (`claude` on PATH, or BEAD_CLAUDE naming it); elsewhere it skips and says so.
The model's turn is scripted: it calls remember, as a model steered by a queued text might."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import QuietHandler, message_events, serve, sse

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home
from bead.setup import curate as launch

CLAUDE = os.environ.get("BEAD_CLAUDE") or shutil.which("claude")
pytestmark = pytest.mark.skipif(not CLAUDE, reason="Claude Code is not installed (npm i -g @anthropic-ai/claude-code)")


class ScriptedModel:
    """A model API that calls ``tool`` with ``args`` on the first request that offers tools, then answers."""

    def __init__(self, tool: str, args: dict):
        self.requests: list[dict] = []
        model = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.body() or b"{}")
                model.requests.append(body)
                results = [
                    c
                    for m in body.get("messages", [])
                    if isinstance(m.get("content"), list)
                    for c in m["content"]
                    if c.get("type") == "tool_result"
                ]
                call = {"name": tool, "input": args} if body.get("tools") and not results else None
                events = message_events("Done.", call, body.get("model", "claude-test"))
                if not body.get("stream"):
                    data = json.dumps(
                        {
                            "id": "msg_1",
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-test",
                            "content": [{"type": "text", "text": "Done."}],
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": 1, "output_tokens": 1},
                        }
                    ).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                data = b"".join(sse(events))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server, self.url = serve(Handler)

    def tool_results(self) -> list[dict]:
        return [
            c
            for body in self.requests
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for c in m["content"]
            if c.get("type") == "tool_result"
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def curate(bead_home: Path, tmp_path: Path, model: ScriptedModel, hook: bool) -> subprocess.CompletedProcess:
    """`bead curate`'s own command line (launch.command), printing instead of interactive, with the remember tool
    allowed (the person's per-tool approval is not what is tested), in a HOME of its own."""
    home = tmp_path / "user-home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    settings: dict = {}
    if hook:
        answer = tmp_path / "answer.py"
        answer.write_text(
            "import json, sys\n"
            f"open({str(tmp_path / 'asked.json')!r}, 'w').write(sys.stdin.read())\n"
            "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'Elicitation', 'action': 'accept', "
            "'content': {}}}))\n"
        )
        settings = {"hooks": {"Elicitation": [{"hooks": [{"type": "command", "command": f"{sys.executable} {answer}"}]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    config = launch.write_config(Home(bead_home), str(Path(sys.executable).parent / "bead"))
    argv = [*launch.command(CLAUDE, config, "curator"), "-p", "--allowedTools", "mcp__bead-admin__remember"]
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("hook", [True, False], ids=["the-person-accepts", "headless-declines"])
def test_the_curators_remember_writes_only_on_the_persons_yes_under_real_claude_code(bead_home, tmp_path, hook):
    model = ScriptedModel(
        "mcp__bead-admin__remember", {"value": "The person drinks green tea", "type": "user", "key": "user/tea"}
    )
    try:
        run = curate(bead_home, tmp_path, model, hook)
    finally:
        model.close()
    assert run.returncode == 0, run.stderr[-2000:]
    offered = {t["name"] for body in model.requests for t in body.get("tools") or []}
    assert offered and all(n.startswith("mcp__bead-admin__") for n in offered), offered  # --tools "": no shell
    (result,) = model.tool_results()
    with Memory(Home(bead_home), Config(owner="t")) as mem:
        written = mem.current("user/tea")
    if hook:
        asked = json.loads((tmp_path / "asked.json").read_text())
        assert asked["mcp_server_name"] == "bead-admin" and "remember this as your word" in asked["message"]
        assert "    The person drinks green tea" in asked["message"]
        assert written is not None and written.trust == "user_stated"
    else:
        assert '\\"code\\": \\"declined\\"' in json.dumps(result) and result.get("is_error"), result
        assert written is None
