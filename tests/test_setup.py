"""bead setup, the units and agents, shell.sh, bead up."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import eventually, http_answers, invoke_cli
from fakes import FakeAnthropic, FakeModel, free_port

from bead.config import Config
from bead.core.memory import Memory
from bead.dream import second
from bead.errors import BeadError
from bead.paths import Home
from bead.recall.rank import search_facts
from bead.setup.install import SERVICES, Plan, install

BEAD = str(Path(sys.executable).parent / "bead")

RECORDER = r"""#!/bin/sh
# Stands in for {name}: records argv, answers queries from what it recorded.
log="{log}"
state="{log}.state"   # what the stand-in service manager remembers; the test clears only $log
echo "{name} $*" >> "$log"
echo "{name} $*" >> "$state"
case "$*" in
  *is-enabled*) unit="${{@: -1}}"; grep -q "enable --now $unit" "$state" && echo enabled || {{ echo disabled; exit 1; }} ;;
  *is-active*) unit="${{@: -1}}"
    case "$(grep -E "(enable --now|start|stop|disable --now) $unit\$" "$state" | tail -n 1)" in
      *"enable --now"*|*" start "*) echo active ;;
      *) echo inactive; exit 3 ;;
    esac ;;
  print*) label="${{2##*/}}"; grep -q "bootstrap .*$label.plist" "$state" || exit 113 ;;
esac
exit 0
"""


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    """A temporary HOME with systemctl, launchctl and claude replaced by recorders (this claude knows
    bead's MCP server already: tests/test_setup_mcp.py is about registering it)."""
    home = tmp_path / "person"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "commands.log"
    log.write_text("")
    for name in ("systemctl", "launchctl", "claude"):
        p = bin_dir / name
        p.write_text(
            "#!/bin/bash\n"
            + RECORDER.format(name=name, log=log if name != "claude" else tmp_path / "claude.log").split("\n", 1)[1]
        )
        p.chmod(0o755)
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SHELL": "/bin/bash",
        "BEAD_HOME": str(home / ".bead"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    return home, log, env


def bead_cmd(env, *args, input=None) -> subprocess.CompletedProcess:
    """`bead setup ...` in this process (CliRunner) in the fake person's environment (HOME, PATH with
    the recorders, SHELL); stdin is not a terminal. End to end in real processes: the tests below."""
    r = invoke_cli(args, input=input, env=env)
    return subprocess.CompletedProcess(["bead", *args], r.code, r.out, r.err)


def commands(log):
    return [line for line in log.read_text().splitlines() if line]


class TestSetupCommand:
    """Both platforms' layouts, twice (idempotent), then --uninstall."""

    def test_systemd_layout(self, fake_home):
        home, log, env = fake_home
        true = shutil.which("true")
        r = bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--json")
        assert r.returncode == 0, r.stderr
        units = home / ".config" / "systemd" / "user"
        assert sorted(p.name for p in units.iterdir()) == [
            "bead-dream.service",
            "bead-indexer.service",
            "bead-proxy.service",
            "bead-proxy.socket",
        ]
        assert f"ExecStart={true} proxy" in (units / "bead-proxy.service").read_text()
        # systemd holds the proxy's port (proxy.listen) and passes it to the service, which says it takes it.
        assert "\nListenStream=127.0.0.1:7077\n" in (units / "bead-proxy.socket").read_text()
        assert "\nSockets=bead-proxy.socket\n" in (units / "bead-proxy.service").read_text()
        assert f"Environment=BEAD_HOME={home / '.bead'}" in (units / "bead-proxy.service").read_text()
        cfg = home / ".bead" / "config.yaml"
        assert cfg.stat().st_mode & 0o777 == 0o600
        assert f"] && . {home / '.bead' / 'shell.sh'}" in (home / ".bashrc").read_text()
        cmds = commands(log)
        assert "systemctl --user daemon-reload" in cmds
        for s in SERVICES:
            assert f"systemctl --user enable --now bead-{s}.service" in cmds
        # The socket listens before its service starts, so the proxy is handed the port instead of binding it.
        assert cmds.index("systemctl --user enable --now bead-proxy.socket") < cmds.index(
            "systemctl --user enable --now bead-proxy.service"
        )
        # Second run: nothing changes, nothing is (re)started.
        before = {p: p.read_bytes() for p in [cfg, home / ".bashrc", home / ".bead" / "shell.sh", *units.iterdir()]}
        log.write_text("")
        r2 = bead_cmd(env, "setup", "--platform", "systemd", "--executable", true)
        assert r2.returncode == 0 and "nothing to change" in r2.stdout
        assert not [c for c in commands(log) if "enable" in c and "is-enabled" not in c or "daemon-reload" in c]
        assert {p: p.read_bytes() for p in before} == before
        # Uninstall: units and rc block go, the store stays.
        with Memory(Home(home / ".bead"), Config(owner="t")) as m:
            m.write("user/editor", "helix", "user")
        r3 = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
        assert r3.returncode == 0, r3.stderr
        assert not list(units.iterdir()) and "bead" not in (home / ".bashrc").read_text()
        assert (home / ".bead" / "store" / "facts" / "user" / "editor" / "v1.md").exists()
        assert any("disable --now bead-proxy.service" in c for c in commands(log))
        assert any("disable --now bead-proxy.socket" in c for c in commands(log))

    def test_an_install_from_before_the_socket_moves_the_running_proxys_port_to_it(self, fake_home):
        """The proxy that holds the port stops, the socket takes the port, the proxy starts again on it; a second
        run changes nothing; a new address stops both and starts both; an edit that keeps the address stops nothing."""
        home, log, env = fake_home
        true = shutil.which("true")
        units = home / ".config" / "systemd" / "user"
        units.mkdir(parents=True)
        (units / "bead-proxy.service").write_text("[Service]\nExecStart=/old/bead proxy\n")
        state = Path(str(log) + ".state")
        state.write_text("systemctl --user enable --now bead-proxy.service\n")  # it runs, holding the port
        assert bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc").returncode == 0
        cmds = [c for c in commands(log) if "is-" not in c]
        order = [
            "systemctl --user daemon-reload",
            "systemctl --user stop bead-proxy.service",
            "systemctl --user enable --now bead-proxy.socket",
            "systemctl --user enable --now bead-proxy.service",
        ]
        assert [c for c in cmds if c in order] == order, cmds
        log.write_text("")
        assert "nothing to change" in bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc").stdout
        assert [c for c in commands(log) if "is-" not in c and "show-environment" not in c] == []
        # A comment in the socket unit (bead's template changed): applied at the socket's next start, no stop.
        sock = units / "bead-proxy.socket"
        sock.write_text(sock.read_text().replace("[Socket]", "# an older template\n[Socket]"))
        assert bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc").returncode == 0
        assert not [c for c in commands(log) if " stop " in c]
        # proxy.listen changed: the socket moves, the proxy with it.
        cfg = home / ".bead" / "config.yaml"
        cfg.write_text(cfg.read_text().replace("127.0.0.1:7077", "127.0.0.1:7177"))
        log.write_text("")
        assert bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc").returncode == 0
        assert "\nListenStream=127.0.0.1:7177\n" in sock.read_text()
        moved = [
            "systemctl --user stop bead-proxy.service",
            "systemctl --user stop bead-proxy.socket",
            "systemctl --user enable --now bead-proxy.socket",
            "systemctl --user enable --now bead-proxy.service",
        ]
        assert [c for c in commands(log) if c in moved] == moved, commands(log)
        # Uninstall: the socket first, or a request would start the proxy again after its service stopped.
        log.write_text("")
        assert bead_cmd(env, "setup", "--uninstall", "--platform", "systemd").returncode == 0
        disabled = [c for c in commands(log) if "disable --now" in c]
        assert disabled[0] == "systemctl --user disable --now bead-proxy.socket" and len(disabled) == 4

    def test_a_socket_that_cannot_listen_leaves_every_service_started_and_says_why(self, fake_home, tmp_path):
        """The port is taken (`bead up` by hand): setup fails naming the holder, and the proxy it stopped, the
        indexer and the dream worker are started all the same; the next run tries the socket again."""
        home, log, env = fake_home
        true = shutil.which("true")
        systemctl = tmp_path / "bin" / "systemctl"
        text = systemctl.read_text()
        systemctl.write_text(
            text.replace(  # failed: the manager keeps no record of it
                'echo "systemctl $*" >> "$state"\n',
                '[ "$*" = "--user enable --now bead-proxy.socket" ] && { echo "Job failed." >&2; exit 1; }\n'
                'echo "systemctl $*" >> "$state"\n',
                1,
            )
        )
        # The proxy is enabled but stopped: it is started all the same, binding the port itself once it is free.
        Path(str(log) + ".state").write_text(
            "systemctl --user enable --now bead-proxy.service\nsystemctl --user stop bead-proxy.service\n"
        )
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        (home / ".bead").mkdir(mode=0o700)
        (home / ".bead" / "config.yaml").write_text(f"proxy:\n  listen: 127.0.0.1:{port}\n")
        try:
            r = bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc")
        finally:
            holder.close()
        assert r.returncode == 1 and "enable --now bead-proxy.socket" in r.stderr, r.stderr
        assert f"port {port} is held by pid {os.getpid()}" in r.stderr and "bead setup" in r.stderr
        for s in SERVICES:
            assert f"systemctl --user enable --now bead-{s}.service" in commands(log)
        log.write_text("")
        bead_cmd(env, "setup", "--platform", "systemd", "--executable", true, "--no-rc")
        assert "systemctl --user enable --now bead-proxy.socket" in commands(log)

    @pytest.mark.timeout(60)
    def test_a_link_or_a_fifo_at_shell_sh_is_replaced_never_read(self, fake_home, tmp_path):
        """A link planted at ~/.bead/shell.sh to a FIFO outside the home: setup neither blocks on it nor reads through
        it; it writes a file of its own in the link's place."""
        home, log, env = fake_home
        Home(home / ".bead").ensure()  # a bead home (a folder of a planted link alone is no home: refused)
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        (home / ".bead" / "shell.sh").symlink_to(fifo)
        r = bead_cmd(env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", "--no-rc")
        assert r.returncode == 0, r.stderr
        shell = home / ".bead" / "shell.sh"
        assert not shell.is_symlink() and "claude" in shell.read_text() and stat.S_ISFIFO(fifo.stat().st_mode)

    def test_launchd_layout(self, fake_home):
        home, log, env = fake_home
        true = shutil.which("true")
        env = {**env, "SHELL": "/bin/zsh"}
        assert bead_cmd(env, "setup", "--platform", "launchd", "--executable", true, "--no-dream").returncode == 0
        agents = home / "Library" / "LaunchAgents"
        assert sorted(p.name for p in agents.iterdir()) == ["com.bead.indexer.plist", "com.bead.proxy.plist"]
        pl = plistlib.loads((agents / "com.bead.proxy.plist").read_bytes())
        assert pl["ProgramArguments"] == [true, "proxy"] and pl["RunAtLoad"] and pl["KeepAlive"]
        assert pl["StandardErrorPath"] == str(home / "Library" / "Logs" / "bead" / "proxy.log")
        assert (home / ".zshrc").exists() and not (home / ".bashrc").exists()
        uid = os.getuid()
        assert f"launchctl bootstrap gui/{uid} {agents / 'com.bead.proxy.plist'}" in commands(log)
        log.write_text("")
        assert "nothing to change" in bead_cmd(env, "setup", "--platform", "launchd", "--executable", true, "--no-dream").stdout
        assert not [c for c in commands(log) if "bootstrap" in c or "bootout" in c]
        assert bead_cmd(env, "setup", "--uninstall", "--platform", "launchd").returncode == 0
        assert not list(agents.iterdir()) and "bead" not in (home / ".zshrc").read_text()

    def test_no_load_and_no_rc(self, fake_home):
        home, log, env = fake_home
        assert (
            bead_cmd(
                env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", "--no-rc"
            ).returncode
            == 0
        )
        assert commands(log) == [] and not (home / ".bashrc").exists()

    def test_it_prints_the_line_for_each_harness_it_finds(self, fake_home, tmp_path):
        """OpenCode and Aider on PATH: one line each that points it at the proxy, reading the token from its file,
        never the token itself (Codex CLI's line too where it is installed)."""
        home, log, env = fake_home
        bin_dir = tmp_path / "bin"
        for name in ("opencode", "aider"):
            (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
            (bin_dir / name).chmod(0o755)
        r = bead_cmd(
            env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", "--no-vault", input=""
        )
        assert r.returncode == 0, r.stderr
        token = (home / ".bead" / "proxy.token").read_text().strip()
        lines = [line for line in r.stderr.splitlines() if line.startswith(("opencode:", "aider:", "codex:"))]
        assert [line.split(":", 1)[0] for line in lines][-2:] == ["opencode", "aider"]
        assert all("127.0.0.1:7077" in line and "proxy.token" in line and token not in line for line in lines)
        assert "OPENAI_API_BASE=http://127.0.0.1:7077/$(cat " in lines[-1]

    def test_without_a_terminal_it_prints_a_vault_hint_and_does_not_prompt(self, fake_home):
        home, log, env = fake_home
        r = bead_cmd(
            env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", input=""
        )  # stdin is a pipe: no person to ask
        assert r.returncode == 0, r.stderr
        assert "run `bead vault init` at a terminal" in r.stderr
        assert "Passphrase" not in r.stdout + r.stderr and "Create the encrypted vault" not in r.stdout + r.stderr
        assert not (home / ".bead" / "vault").exists()
        quiet = bead_cmd(
            env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", "--no-vault", input=""
        )
        assert quiet.returncode == 0 and "vault" not in quiet.stderr

    def test_at_a_terminal_it_offers_the_vault_once(self, fake_home, bead, monkeypatch, low_work_factor):
        from bead.cli import common

        home, log, env = fake_home
        monkeypatch.setattr(common, "at_terminal", lambda: True)
        args = ("setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load", "--no-rc")
        passphrase = "correct horse battery staple"
        r = bead(*args, input=f"y\n{passphrase}\n{passphrase}\n", env=env)
        assert r.code == 0, r.err
        assert r.err.count("Create the encrypted vault") == 1 and "lost for good" in r.err
        assert passphrase not in r.out + r.err
        assert (home / ".bead" / "vault" / "identity.age").stat().st_mode & 0o777 == 0o600
        again = bead(*args, env=env)  # a vault exists: no second offer
        assert again.code == 0 and "Create the encrypted vault" not in again.err

    def test_existing_config_is_never_changed(self, fake_home):
        home, log, env = fake_home
        (home / ".bead").mkdir(mode=0o700)
        (home / ".bead" / "config.yaml").write_text("owner: someone\n")
        bead_cmd(env, "setup", "--platform", "systemd", "--executable", shutil.which("true"), "--no-load")
        assert (home / ".bead" / "config.yaml").read_text() == "owner: someone\n"

    def test_refuses_a_throwaway_executable(self, fake_home, tmp_path):
        home, log, env = fake_home
        fake = tmp_path / "venv" / "bin" / "bead"
        fake.parent.mkdir(parents=True)
        fake.write_text("#!/bin/sh\n")
        fake.chmod(0o755)
        r = bead_cmd(env, "setup", "--platform", "systemd", "--executable", str(fake))
        assert r.returncode == 1 and "temporary or throwaway" in r.stderr and "install.sh" in r.stderr
        assert not (home / ".config" / "systemd").exists()


def render(platform: str, home: Path, services=SERVICES) -> Plan:
    return Plan(
        platform=platform, user_home=home, home=Home(home / ".bead"), bead=BEAD, listen="127.0.0.1:7077", services=services
    )


def verify_units(plan: Plan, tmp_path: Path) -> subprocess.CompletedProcess:
    """`systemd-analyze --user verify` on the plan's units, written to tmp_path/units."""
    out = tmp_path / "units"
    out.mkdir()
    for svc in SERVICES:
        (out / plan.unit_name(svc)).write_text(plan.template(svc))
    (out / "bead-proxy.socket").write_text(plan.socket_template())
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    return subprocess.run(
        ["systemd-analyze", "--user", "verify", *map(str, out.iterdir())],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )


class TestUnits:
    """Units verify clean; plists parse; both name the same commands."""

    @pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed (.ci/run installs it)")
    def test_systemd_analyze_verify(self, tmp_path):
        plan = render("systemd", tmp_path)
        r = verify_units(plan, tmp_path)
        assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr

    @pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed (.ci/run installs it)")
    def test_a_path_with_a_space_a_percent_and_a_quote_is_one_word_to_systemd(self, tmp_path):
        """systemd splits a unit's line at spaces and reads "%" as a specifier and "$" as a variable: such a path is
        quoted and escaped, so systemd finds the executable (verify checks it exists) and the home as written."""
        venv = tmp_path / "my tools 100%"  # systemd refuses an executable's name holding a quote or "$" at all
        venv.mkdir()
        exe = venv / "bead"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        odd = tmp_path / 'my "bead" 100%$x'
        plan = Plan(platform="systemd", user_home=tmp_path, home=Home(odd / ".bead"), bead=str(exe), listen="127.0.0.1:7077")
        r = verify_units(plan, tmp_path)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        unit = (tmp_path / "units" / "bead-proxy.service").read_text()
        assert 'Environment="BEAD_HOME=' in unit and "100%%$x" in unit.split("Environment=", 1)[1].splitlines()[0]

    @pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed (.ci/run installs it)")
    def test_an_executable_whose_name_systemd_refuses_is_run_by_env(self, tmp_path):
        """systemd refuses an executable's name that holds a quote, a backslash or "$": bead installed under a home
        at /home/o'brien got units that never started, and setup said all was well. Such a path is env(1)'s
        argument, where systemd takes it ("$" doubled); env then runs that very path."""
        venv = tmp_path / "o'brien" / 'a "b" \\c $HOME 5%'
        venv.mkdir(parents=True)
        exe = venv / "bead"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        plan = Plan(platform="systemd", user_home=tmp_path, home=Home(tmp_path / ".bead"), bead=str(exe), listen="127.0.0.1:7077")
        r = verify_units(plan, tmp_path)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        line = next(x for x in plan.template("proxy").splitlines() if x.startswith("ExecStart="))
        assert line.startswith("ExecStart=/usr/bin/env ") and line.endswith(" proxy"), line
        # systemd's own reading of the line gives the path back as written.
        words = shlex.split(line[len("ExecStart=") :].replace("$$", "$").replace("%%", "%"))
        assert words == ["/usr/bin/env", str(exe), "proxy"], words

    def test_a_path_env_cannot_run_either_is_refused_before_anything_is_written(self, tmp_path):
        """A path with a quote and a "=" too: env(1) takes a first argument holding "=" for a variable and would run
        `proxy`; the unit loaded and then failed. Refused, with what to do."""
        plan = Plan(
            platform="systemd", user_home=tmp_path, home=Home(tmp_path / ".bead"), bead="/opt/a=b'c/bead", listen="127.0.0.1:7077"
        )
        with pytest.raises(BeadError, match="env"):
            install(plan, load=False, rc=False)
        assert not (tmp_path / ".config").exists() and not (tmp_path / ".bead").exists()

    def test_a_path_that_is_not_utf8_is_refused_before_anything_is_written(self, tmp_path):
        """systemd ignores a unit line holding bytes that are not UTF-8 (and a plist cannot hold them): the services
        never started. setup refuses such a path with what to do, and writes nothing."""
        odd = os.fsdecode(b"/tmp/caf\xe9")
        plan = Plan(platform="systemd", user_home=tmp_path, home=Home(Path(odd) / ".bead"), bead=BEAD, listen="127.0.0.1:7077")
        with pytest.raises(BeadError, match="not UTF-8") as err:
            install(plan, load=False, rc=False)
        assert "BEAD_HOME" in (err.value.hint or "")
        assert not (tmp_path / ".config").exists()

    def test_plists(self, tmp_path):
        plan = render("launchd", tmp_path)
        for s in SERVICES:
            pl = plistlib.loads(plan.template(s).encode())
            assert pl["Label"] == f"com.bead.{s}" and pl["RunAtLoad"] is True and pl["KeepAlive"] is True
            assert pl["ProgramArguments"][0] == BEAD and pl["EnvironmentVariables"]["BEAD_HOME"] == str(tmp_path / ".bead")
            sysd = render("systemd", tmp_path).template(s)
            exec_start = re.search(r"^ExecStart=(.*)$", sysd, re.M).group(1).split()
            assert exec_start == pl["ProgramArguments"]


def unit_command(plan: Plan, service: str) -> tuple[list[str], dict]:
    text = plan.template(service)
    cmd = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    env = dict(re.findall(r"^Environment=(\w+)=(.*)$", text, re.M))
    return cmd, env


def test_services_from_their_unit_lines_work_end_to_end(tmp_path):
    """Each service runs exactly as ExecStart says; a CLI-written fact reaches a request through the proxy."""
    plan = render("systemd", tmp_path)
    port = free_port()
    upstream, model = FakeAnthropic(), FakeModel()
    model.default = json.dumps(
        {
            "facts": [{"key": "project/shop/queue", "type": "reference", "value": "Jobs run on NATS JetStream.", "turns": [1]}],
            "episode": {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"},
        }
    )
    model.by_system[second.SYSTEM[:80]] = json.dumps({"kind": "fact", "reason": "a fact"})
    plan.home.ensure()
    # A generous deadline: this machine runs three test workers and their processes on two cores, and the
    # request below must get its memory, not fail open (conftest.TEST_DEADLINE_S says the same).
    plan.home.config.write_text(
        f"proxy:\n  listen: 127.0.0.1:{port}\n  upstream: {upstream.url}\n  recall_deadline_ms: 10000\n"
        f"dream:\n  provider: ollama\n  model: tiny\n  base_url: {model.url}\n"
    )
    (plan.home.store / "dream").mkdir(parents=True, exist_ok=True)
    (plan.home.store / "dream" / "state.json").write_text(json.dumps({"sessions": {}, "last_run": "2020-01-01T00:00:00Z"}))
    with Memory(plan.home, Config(owner="t")) as m:
        m.append_turns(
            "earlier", [("user", "we moved the job queue to nats jetstream", None, None, {"source": "typed", "project": "shop"})]
        )
    procs = []
    try:
        for s in SERVICES:
            cmd, env = unit_command(plan, s)
            if s == "dream":
                cmd += ["--interval", "0.5"]  # the unit's line, checked more often
            procs.append(
                subprocess.Popen(
                    cmd, env={**os.environ, **env}, stdout=open(tmp_path / f"{s}.log", "wb"), stderr=subprocess.STDOUT
                )
            )
        url = f"http://127.0.0.1:{port}"
        if not eventually(lambda: http_answers(url + "/bead/health"), 60):
            pytest.fail((tmp_path / "proxy.log").read_text())
        with urllib.request.urlopen(url + "/bead/health", timeout=10) as r:
            assert json.loads(r.read())["ok"]
        env = {**os.environ, "BEAD_HOME": str(plan.home.root)}
        subprocess.run(
            [BEAD, "write", "global/payments", "Payments go through Stripe; test keys live in .env.test.", "--type", "reference"],
            env=env,
            check=True,
        )
        body = json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "where do the stripe test keys live?"}]}
        ).encode()
        req = urllib.request.Request(
            url + "/v1/messages", data=body, headers={"content-type": "application/json", "x-bead-session": "e2e"}
        )
        urllib.request.urlopen(req, timeout=30).read()
        sent = json.loads(upstream.requests[-1].body)
        assert "Payments go through Stripe" in sent["messages"][0]["content"][-1]["text"]
        # The indexer picks up a hand edit; the dream worker ran its pass against the fake model.
        v1 = plan.home.facts / "global" / "payments" / "v1.md"
        v1.write_text(v1.read_text().replace("Stripe", "Adyen"))

        def found(q):
            with Memory(plan.home, Config(owner="t")) as m:
                return [h.id for h in search_facts(m.index, q)]

        assert eventually(lambda: found("adyen") and found("jetstream"))
        assert found("adyen") == ["global/payments@v1"]
        assert found("nats jetstream") == ["project/shop/queue@v1"], (tmp_path / "dream.log").read_text()
    finally:
        for p in procs:
            p.terminate()
            p.wait(15)
        upstream.close()
        model.close()


SHELLS = [s for s in ("bash", "zsh") if shutil.which(s)]


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_wrapper(shell, tmp_path):
    """`claude` uses the proxy when its health check answers, and runs directly (with one warning) when not."""
    from conftest import ServedProxy, make_proxy_app

    upstream = FakeAnthropic()
    home = tmp_path / "home"
    proxy = ServedProxy(make_proxy_app(home, upstream.url))  # on a real socket, in this process
    url = proxy.url
    listen = url[len("http://") :]
    from importlib import resources

    token_file = home / "proxy.token"
    (home / "shell.sh").write_text(
        resources.files("bead.setup")
        .joinpath("shell.sh")
        .read_text()
        .replace("@LISTEN_ARG@", shlex.quote(listen))
        .replace("@LISTEN@", listen)
        .replace("@TOKEN@", shlex.quote(str(token_file)))
        .replace("@PYTHON@", shlex.quote(sys.executable))
    )
    token = token_file.read_text().strip()
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    (stand_in / "claude").write_text(
        '#!/bin/sh\necho "BASE=$ANTHROPIC_BASE_URL HINT=$CLAUDE_CODE_GATEWAY_HINT_HEADERS KEY=$ANTHROPIC_API_KEY TOKEN=$ANTHROPIC_AUTH_TOKEN ARGS=$*"\n'
    )
    (stand_in / "claude").chmod(0o755)
    env = {"PATH": f"{stand_in}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    script = f'. "{home / "shell.sh"}"; claude -p "hello there"'
    # An alias defined before shell.sh is sourced must neither shadow the wrapper (bash) nor break it (zsh).
    aliased = f'alias claude="echo aliased"\n. "{home / "shell.sh"}"\nclaude -p "hello there"'
    try:
        up = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=30)
        assert up.stdout.strip() == f"BASE={url}/{token} HINT=1 KEY= TOKEN= ARGS=-p hello there" and up.stderr == ""
        flags = ["-O", "expand_aliases"] if shell == "bash" else []  # bash -c expands aliases only when asked
        up2 = subprocess.run([shell, *flags, "-c", aliased], env=env, capture_output=True, text=True, timeout=30)
        assert up2.stdout.strip() == f"BASE={url}/{token} HINT=1 KEY= TOKEN= ARGS=-p hello there", up2.stderr
        # An alias that ran something else is replaced, and the person is told so, once per shell.
        assert up2.stderr.strip() == "bead: your alias claude='echo aliased' is replaced by bead's claude function"
        # An alias that ran claude with arguments keeps them: they come first.
        with_args = f'alias claude=\'claude --verbose --model "x y"\'\n. "{home / "shell.sh"}"\nclaude -p "hello there"'
        up3 = subprocess.run([shell, *flags, "-c", with_args], env=env, capture_output=True, text=True, timeout=30)
        assert up3.stdout.strip() == f"BASE={url}/{token} HINT=1 KEY= TOKEN= ARGS=--verbose --model x y -p hello there"
        assert up3.stderr == ""
        # Claude Code's local install is an alias to a path, with claude not on PATH: that path is run.
        local = tmp_path / ".claude" / "local"
        local.mkdir(parents=True)
        shutil.copy(stand_in / "claude", local / "claude")
        by_path = f'alias claude=\'~/.claude/local/claude --x\'\n. "{home / "shell.sh"}"\nclaude -p "hello there"'
        no_path = {**env, "PATH": os.environ["PATH"]}
        up4 = subprocess.run([shell, *flags, "-c", by_path], env=no_path, capture_output=True, text=True, timeout=30)
        assert up4.stdout.strip() == f"BASE={url}/{token} HINT=1 KEY= TOKEN= ARGS=--x -p hello there", up4.stderr

        # The base URL, with its token, never stays in the shell's environment.
        def sourced(then: str) -> subprocess.CompletedProcess:
            """``then`` run in the shell after shell.sh is sourced."""
            return subprocess.run(
                [shell, "-c", f'. "{home / "shell.sh"}"; {then}'], env=env, capture_output=True, text=True, timeout=30
            )

        leak = sourced('claude -p x >/dev/null; echo "[$ANTHROPIC_BASE_URL]"')
        assert leak.stdout.strip() == "[]"
        # A claude that ends the function early (Ctrl-C aborts it at the command; here an error does, by bash's ERR
        # trap or zsh's ERR_RETURN) leaves no token in the shell, and none in the environment under `set -a`.
        echoing = (stand_in / "claude").read_text()
        (stand_in / "claude").write_text("#!/bin/sh\nexit 130\n")
        early = (
            'outer() { set -o errtrace; trap "return 1" ERR; "$@"; }; set -a; outer claude; trap - ERR'
            if shell == "bash"
            else 'setopt ERR_RETURN; outer() { "$@"; }; set -a; outer claude || :'
        )
        left = sourced(f'{early}; echo "[${{__bead_url-}}]"; env | grep -c -e "{token}" || :')
        assert left.stdout.split() == ["[]", "0"], repr(left.stdout + left.stderr)  # one line in pytest's summary
        (stand_in / "claude").write_text(echoing)
    finally:
        proxy.close()
        upstream.close()
    # Sourced under `set -e` (a script's `set -e; . ~/.bashrc`, with no alias named claude), it ends no shell.
    strict = subprocess.run(
        [shell, "-c", f'set -e; . "{home / "shell.sh"}"; echo sourced'], env=env, capture_output=True, text=True, timeout=30
    )
    assert strict.stdout.strip() == "sourced", strict.stderr
    down = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert down.stdout.strip() == "BASE= HINT= KEY= TOKEN= ARGS=-p hello there"
    assert len(down.stderr.strip().splitlines()) == 1 and "not answering" in down.stderr
    # Another program on the port (another user's, started while the proxy was down) answers the health check as
    # any server would: it cannot prove it holds the home's token, so claude runs without it, and it is sent no
    # token (a port squatter once got the token, the API key and the prompts).
    squatter = Squatter(int(listen.rpartition(":")[2]))
    try:
        took = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=30)
        assert took.stdout.strip() == "BASE= HINT= KEY= TOKEN= ARGS=-p hello there" and "prove" in took.stderr
        assert squatter.seen and not any(token in line for line in squatter.seen), squatter.seen
    finally:
        squatter.close()


class Squatter:
    """An HTTP server on 127.0.0.1:PORT that answers 200 to everything and records each request line and header."""

    def __init__(self, port: int):
        import http.server
        import threading

        seen: list[str] = []
        self.seen = seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the stdlib's name
                seen.append(self.requestline)
                seen.extend(f"{k}: {v}" for k, v in self.headers.items())
                body = b'{"ok": true, "version": "0"}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class TestUp:
    """bead up runs all three in the foreground; Ctrl-C stops them; a death is reported."""

    @pytest.fixture(autouse=True)
    def stopped_after(self):
        """Every `bead up` a test started is stopped at its end, whatever the test asserted: a failed assertion left
        one running with its services (found after a run that checked a test fails on the old code)."""
        self.started: list[subprocess.Popen] = []
        yield
        for p in self.started:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)  # bead up stops its services on Ctrl-C
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def start(self, tmp_path, *flags: str, name: str = "home"):
        home = tmp_path / name
        Home(home).ensure()
        port = free_port()
        (home / "config.yaml").write_text(f"proxy:\n  listen: 127.0.0.1:{port}\n")
        p = subprocess.Popen(
            [sys.executable, "-m", "bead", "up", *flags],
            env={**os.environ, "BEAD_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.started.append(p)
        url = f"http://127.0.0.1:{port}/bead/health"

        def up() -> bool:
            if p.poll() is not None:
                pytest.fail(p.stdout.read().decode())
            return http_answers(url)

        if eventually(up, 60):
            return p
        p.kill()
        pytest.fail(p.stdout.read().decode())

    def test_ctrl_c_stops_all(self, tmp_path):
        """While it runs `bead status` knows the services (no service manager knows them), and the output says
        how to point claude and Codex at the proxy; Ctrl-C stops all three and `bead status` forgets them."""
        p = self.start(tmp_path)
        home = tmp_path / "home"
        env = {"BEAD_HOME": str(home)}
        data = json.loads(invoke_cli(["status", "--json"], env=env).out)
        assert {n: s["state"] for n, s in data["services"].items()} == {n: "running under bead up" for n in SERVICES}
        assert "running under `bead up` (pid " in invoke_cli(["status"], env=env).out
        # A second `bead up` on the same home refuses at once: it ran a second indexer and dream worker, and its
        # record replaced the first one's, so `bead status` said nothing was running.
        second = invoke_cli(["up"], env=env)
        assert second.code == 1 and "already running for this home" in second.err, second.err
        assert json.loads((home / "up.json").read_text())["pid"] == p.pid
        p.send_signal(signal.SIGINT)
        out = p.communicate(timeout=60)[0].decode()
        assert p.returncode == 0 and "bead up: stopped" in out
        assert "proxy   |" in out and "indexer |" in out
        assert "base URL http://127.0.0.1:" in out and f"$(cat {home / 'proxy.token'})/openai/v1" in out
        assert (home / "proxy.token").read_text().strip() not in out, "the token stays in its file"
        assert not (home / "up.json").exists()
        after = json.loads(invoke_cli(["status", "--json"], env=env).out)
        assert all(s["state"] != "running under bead up" for s in after["services"].values())

    def test_reports_which_service_died(self, tmp_path):
        """Under a home whose name holds a terminal's escape sequences (BEAD_HOME is the environment's), each line
        `bead up` prints shows them as escapes: its own line about the proxy printed them raw."""
        name = "home\x1b]0;PWNED\x07\x1b[31m"
        p = self.start(tmp_path, "--no-dream", name=name)  # the proxy and the indexer are enough to tell which one died
        children = subprocess.run(
            ["pgrep", "-P", str(p.pid), "-f", "bead indexer"], capture_output=True, text=True
        ).stdout.split()
        assert children
        os.kill(int(children[0]), signal.SIGKILL)
        out = p.communicate(timeout=60)[0].decode()
        assert p.returncode == 1 and "bead up: indexer exited with code -9" in out
        assert "\x1b" not in out and "\x07" not in out and "home\\x1b]0;PWNED\\x07" in out, out


@pytest.mark.parametrize(
    "original", ["", "export FOO=1\n", 'export FOO=1\nalias ll="ls -l"', "a\n\n\n", "# only a comment", "a=1\r\nb=2\r\n"]
)
def test_uninstall_gives_back_the_rc_file_byte_for_byte(fake_home, original):
    """Setup adds its block after one line break; --uninstall takes both away, whatever the file's last byte."""
    home, _log, env = fake_home
    rc = home / ".bashrc"
    rc.write_bytes(original.encode())
    true = shutil.which("true")
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-load", "--no-vault", "--executable", true).returncode == 0
    assert rc.read_bytes().decode().startswith(original) and "# >>> bead >>>" in rc.read_text()
    assert bead_cmd(env, "setup", "--uninstall", "--platform", "systemd").returncode == 0
    assert rc.read_bytes() == original.encode()


def test_an_rc_file_that_is_not_utf8_comes_back_byte_for_byte(fake_home):
    """A Latin-1 rc file neither stops setup halfway (a traceback after the units were written) nor loses a byte."""
    home, _log, env = fake_home
    rc = home / ".bashrc"
    original = b"export NAME=Jos\xe9\n"
    rc.write_bytes(original)
    true = shutil.which("true")
    r = bead_cmd(env, "setup", "--platform", "systemd", "--no-load", "--no-vault", "--executable", true)
    assert r.returncode == 0, r.stderr
    assert rc.read_bytes().startswith(original + b"\n# >>> bead >>>")
    assert bead_cmd(env, "setup", "--uninstall", "--platform", "systemd").returncode == 0
    assert rc.read_bytes() == original


def test_a_linked_rc_file_stays_a_link(fake_home):
    """Dotfiles kept with stow or chezmoi: the block goes into the link's target, and the link stays."""
    home, _log, env = fake_home
    target = home / "dotfiles" / "bashrc"
    target.parent.mkdir()
    target.write_text("alias ll='ls -l'\n")
    (home / ".bashrc").symlink_to(target)
    true = shutil.which("true")
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-load", "--no-vault", "--executable", true).returncode == 0
    assert (home / ".bashrc").is_symlink() and "# >>> bead >>>" in target.read_text()
    assert bead_cmd(env, "setup", "--uninstall", "--platform", "systemd").returncode == 0
    assert (home / ".bashrc").is_symlink() and target.read_text() == "alias ll='ls -l'\n"


def test_uninstall_never_joins_two_of_the_persons_lines(fake_home):
    """A line another tool appended after bead's block (nvm, conda) stays a line of its own."""
    home, _log, env = fake_home
    rc = home / ".bashrc"
    rc.write_text("alias x=1")
    true = shutil.which("true")
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-load", "--no-vault", "--executable", true).returncode == 0
    rc.write_text(rc.read_text() + "export NVM_DIR=$HOME/.nvm\n")
    assert bead_cmd(env, "setup", "--uninstall", "--platform", "systemd").returncode == 0
    assert rc.read_text() == "alias x=1\nexport NVM_DIR=$HOME/.nvm\n"


def test_logs_says_where_the_logs_are(fake_home, tmp_path):
    """`bead logs` without installed services says so (and where `bead up` logs) instead of journalctl's bare
    "No entries"; with them it shows all three services interleaved, or one; a journald without a per-user
    journal gets a hint, not "insufficient permissions" alone."""
    home, _log, env = fake_home
    journal = tmp_path / "bin" / "journalctl"
    journal.write_text('#!/bin/sh\necho "journal $*"\n')
    journal.chmod(0o755)
    r = bead_cmd(env, "logs")
    assert r.returncode == 1 and "no bead service is installed here" in r.stderr and "bead up" in r.stderr
    true = shutil.which("true")
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-load", "--no-vault", "--executable", true).returncode == 0
    r = bead_cmd(env, "logs")
    assert r.returncode == 0, r.stderr
    assert "-u bead-proxy.service -u bead-indexer.service -u bead-dream.service" in r.stdout
    assert bead_cmd(env, "logs", "dream").stdout.strip().startswith("journal --user -u bead-dream.service -n 200")
    journal.write_text('#!/bin/sh\necho "Hint: You are currently not seeing messages. insufficient permissions." >&2\n')
    r = bead_cmd(env, "logs")
    assert r.returncode == 1 and "journald keeps no journal of your own here" in r.stderr and "sudo journalctl" in r.stderr
    # Units installed, never started: journalctl's bare "No entries" with rc 0 is said as what it means.
    journal.write_text('#!/bin/sh\necho "-- No entries --"\n')
    r = bead_cmd(env, "logs")
    assert r.returncode == 1 and "no log line yet from bead-proxy.service" in r.stderr and "bead status" in r.stderr
    # As a user manager without journald of its own says it (seen under a real `systemd --user`): no bare "No
    # entries" above the error, and the hint names the service asked for.
    journal.write_text('#!/bin/sh\necho "-- No entries --"\necho "No journal files were found." >&2\n')
    r = bead_cmd(env, "logs", "indexer")
    assert r.returncode == 1 and "No entries" not in r.stdout
    assert "`sudo journalctl _SYSTEMD_USER_UNIT=bead-indexer.service`" in r.stderr


def test_setup_without_a_user_manager_writes_nothing_and_says_what_to_do(fake_home):
    """No half-install: where `systemctl --user` has no manager to talk to, setup stops before it writes a unit,
    shell.sh or the rc block, and names `bead setup --no-load` and `bead up`."""
    home, _log, env = fake_home
    no_manager = Path(env["PATH"].split(":")[0]) / "systemctl"
    no_manager.write_text('#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n')
    true = shutil.which("true")
    r = bead_cmd(env, "setup", "--platform", "systemd", "--no-vault", "--executable", true)
    assert (
        r.returncode == 1
        and "no unit, wrapper or rc block was written" in r.stderr
        and "--no-load" in r.stderr
        and "bead up" in r.stderr
    )
    assert not (home / ".config" / "systemd").exists() and not (home / ".bashrc").exists()
    assert not (home / ".bead" / "shell.sh").exists()


def test_status_sends_the_token_only_to_a_proxy_that_proves_it_holds_it(tmp_path, monkeypatch):
    """`bead status` (and `bead status --wait`, `bead check-proxy`) ask the proxy to prove it holds the home's token
    before sending it: this home's proxy does, and gives its details; a program squatting the port cannot, is sent
    nothing, and status names the problem; an http_proxy in the environment never sees the check."""
    from conftest import ServedProxy, make_proxy_app
    from fakes import free_port

    from bead.core.health import proxy_health

    upstream = FakeAnthropic()
    home = tmp_path / "home"
    proxy = ServedProxy(make_proxy_app(home, upstream.url))
    token = (home / "proxy.token").read_text().strip()
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there: a request through it would fail
    try:
        listen = proxy.url[len("http://") :]
        ours = proxy_health(listen, token)
        assert ours["running"] and ours["home"] == str(home)
        assert check_proxy_exit(home, listen) == 0
    finally:
        proxy.close()
        upstream.close()
    port = free_port()
    squatter = Squatter(port)
    try:
        other = proxy_health(f"127.0.0.1:{port}", token)
        assert other == {"running": False, "address": f"127.0.0.1:{port}", "impostor": True}
        assert check_proxy_exit(home, f"127.0.0.1:{port}") == 1
        assert squatter.seen and not any(token in line for line in squatter.seen), squatter.seen
    finally:
        squatter.close()


def check_proxy_exit(home, listen: str) -> int:
    from click.testing import CliRunner

    from bead.cli import cli

    return CliRunner().invoke(cli, ["check-proxy", "--listen", listen], env={"BEAD_HOME": str(home)}).exit_code


def test_clients_dial_localhost_as_the_address_the_proxy_binds():
    """The proxy binds `localhost` as 127.0.0.1; a client that dialled the name could reach ::1 first, where another
    user's listener would get the request: the wrapper, status and the harness lines dial 127.0.0.1."""
    from bead.cli.setup import harness_lines
    from bead.ports import client_address

    assert client_address("localhost:7177") == "127.0.0.1:7177" == client_address("[localhost]:7177")
    assert client_address("127.0.0.1:7077") == "127.0.0.1:7077" and client_address("[::1]:7077") == "[::1]:7077"
    lines = harness_lines("localhost:7177", "/h", which=lambda name: f"/usr/bin/{name}")
    assert lines and all("localhost" not in line for line in lines) and any("127.0.0.1:7177" in line for line in lines)


def test_folders_setup_makes_are_not_writable_by_others_whatever_the_umask(tmp_path, monkeypatch):
    """Under umask 000 the unit folders setup creates (~/.config/systemd/user) are 0755: another user cannot swap a
    unit in that would run as the person at their next login."""
    from bead.setup.install import _write_if_changed

    unit = tmp_path / "person" / ".config" / "systemd" / "user" / "bead-proxy.service"
    old = os.umask(0)
    try:
        assert _write_if_changed(unit, "[Unit]\n")
    finally:
        os.umask(old)
    for d in (unit.parent, unit.parent.parent, unit.parent.parent.parent, tmp_path / "person"):
        assert (d.stat().st_mode & 0o777) == 0o755, d


class Relay:
    """A byte-for-byte TCP relay from 127.0.0.1:PORT to ``target``, recording what passes towards the target."""

    def __init__(self, target: tuple[str, int]):
        import socket
        import threading

        self.seen = bytearray()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]

        def pipe(a, b, record):
            try:
                while data := a.recv(65536):
                    if record:
                        self.seen.extend(data)
                    b.sendall(data)
            except OSError:
                pass
            finally:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        def serve():
            while True:
                try:
                    client, _ = self.server.accept()
                except OSError:
                    return
                upstream = socket.create_connection(target)
                threading.Thread(target=pipe, args=(client, upstream, True), daemon=True).start()
                threading.Thread(target=pipe, args=(upstream, client, False), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()

    def close(self):
        self.server.close()


def test_a_relay_to_the_real_proxy_on_another_port_gets_nothing(tmp_path):
    """The proxy's proof names the address it was reached at: a relay from another port to the real proxy (another
    user's, holding the port the wrapper was written for) passes the proof along, but it does not fit the address
    the client dialled, so the client sends nothing; `bead check-proxy` never sends the token at all."""
    from conftest import ServedProxy, make_proxy_app

    from bead.core.health import proxy_health

    upstream = FakeAnthropic()
    home = tmp_path / "home"
    proxy = ServedProxy(make_proxy_app(home, upstream.url))
    token = (home / "proxy.token").read_text().strip()
    host, _, port = proxy.url[len("http://") :].rpartition(":")
    relay = Relay((host, int(port)))
    try:
        assert proxy_health(f"127.0.0.1:{port}", token)["running"] is True, "the real one, dialled directly"
        through = proxy_health(f"127.0.0.1:{relay.port}", token)
        assert through == {"running": False, "address": f"127.0.0.1:{relay.port}", "impostor": True}
        assert check_proxy_exit(home, f"127.0.0.1:{relay.port}") == 1
        assert check_proxy_exit(home, f"127.0.0.1:{port}") == 0
        assert relay.seen and token.encode() not in bytes(relay.seen)
    finally:
        relay.close()
        proxy.close()
        upstream.close()


@pytest.mark.skipif(os.getuid() != 0 or not Path("/proc/net/tcp").exists(), reason="another uid's listener: root, Linux")
def test_a_listener_another_user_owns_is_not_asked_at_all():
    """On Linux the kernel says who owns the listening socket: one of another uid (here nobody's) is sent nothing,
    not even the challenge: the first bytes it receives are the test's own, sent after the check."""
    import socket as socket_mod

    from bead.ports import proven_connection

    port = free_port()
    script = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        f"s = socket.create_server(('127.0.0.1', {port}))\n"
        "print('ready', flush=True)\n"
        "c, _ = s.accept()\n"
        "print(c.recv(100).decode(errors='replace'), flush=True)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        assert proven_connection(f"127.0.0.1:{port}", "t" * 32) is None
        with socket_mod.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"ping")
            assert p.stdout.readline().strip() == "ping", "the check made no connection before this one"
    finally:
        p.kill()
        p.wait(10)


@pytest.mark.skipif(os.getuid() != 0 or not Path("/proc/net/tcp").exists(), reason="another uid's listener: root, Linux")
def test_another_users_listener_on_another_address_of_the_port_turns_nothing_off(tmp_path):
    """Only a socket a connection to the dialled address could reach counts: another user's listener on ::1 beside
    the person's proxy on 127.0.0.1 (same port) does not make the check fail (it turned memory off)."""
    from conftest import ServedProxy, make_proxy_app

    from bead.ports import proven_connection

    upstream = FakeAnthropic()
    home = tmp_path / "home"
    proxy = ServedProxy(make_proxy_app(home, upstream.url))
    token = (home / "proxy.token").read_text().strip()
    port = int(proxy.url.rpartition(":")[2])
    script = (
        "import os, socket\n"
        "os.setgid(65534); os.setuid(65534)\n"
        f"s = socket.create_server(('::1', {port}), family=socket.AF_INET6)\n"
        "print('ready', flush=True)\n"
        "s.accept()\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        conn = proven_connection(f"127.0.0.1:{port}", token)
        assert conn is not None
        conn.close()
    finally:
        p.kill()
        p.wait(10)
        proxy.close()
        upstream.close()


@pytest.mark.parametrize("shell", SHELLS)
def test_the_wrapper_takes_an_ipv6_address(shell, tmp_path):
    """A proxy on [::1]:PORT: the address reaches the check as one word, not a glob pattern (zsh refused it, and a
    file named 1:PORT in the current folder changed it in bash)."""
    from bead.setup.install import Plan, install

    home = tmp_path / "my home"
    plan = Plan(platform="systemd", user_home=tmp_path, home=Home(home / ".bead"), bead="/bin/true", listen="[::1]:7177")
    install(plan, load=False, rc=False)
    text = (home / ".bead" / "shell.sh").read_text()
    call = next(line for line in text.splitlines() if "-m bead.ports" in line)
    assert "'[::1]:7177'" in call and "-E -P" in call
    (tmp_path / "1:7177").write_text("")
    r = subprocess.run(
        [shell, "-c", f'cd {shlex.quote(str(tmp_path))}; set -- {call.split("bead.ports", 1)[1].split(">", 1)[0]}; echo "$1"'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.stdout.strip() == "[::1]:7177", r.stderr


def test_the_wrappers_check_never_waits_on_a_fifo_at_the_token(tmp_path):
    """The `claude` wrapper's check (`python -m bead.ports LISTEN TOKEN_FILE`) opened the token file blocking: a FIFO
    there held every `claude` the person started, for ever. It is refused at once, and claude runs without the
    proxy."""
    import threading

    from bead.ports import _main

    fifo = tmp_path / "proxy.token"
    os.mkfifo(fifo)
    out: list[int] = []
    t = threading.Thread(target=lambda: out.append(_main(["127.0.0.1:9", str(fifo)])), daemon=True)
    t.start()
    t.join(10)
    assert out == [1]


@pytest.mark.parametrize("platform", ["systemd", "launchd"])
def test_an_uninstall_for_another_bead_home_removes_nothing_and_creates_nothing(fake_home, platform):
    """`BEAD_HOME=/scratch bead setup --uninstall` (a trial home, a typo) stopped and removed the real install's
    services and its rc block, left its shell.sh, and made the scratch home (an outside attack). Units or an rc
    block of another home are not this one's to remove: nothing goes, nothing is made, and the error says what to
    run. With the home they serve, the uninstall goes as before."""
    home, log, env = fake_home
    true = shutil.which("true")
    assert bead_cmd(env, "setup", "--platform", platform, "--no-vault", "--executable", true).returncode == 0
    units = home / ("Library/LaunchAgents" if platform == "launchd" else ".config/systemd/user")
    before = {p: p.read_bytes() for p in [*units.iterdir(), home / ".bashrc", home / ".bead" / "shell.sh"]}
    log.write_text("")
    scratch = home / "scratch"
    r = bead_cmd({**env, "BEAD_HOME": str(scratch)}, "setup", "--uninstall", "--platform", platform)
    assert r.returncode != 0 and "another bead home" in r.stderr and "nothing was removed" in r.stderr, r.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert not scratch.exists() and commands(log) == []
    r = bead_cmd(env, "setup", "--uninstall", "--platform", platform)
    assert r.returncode == 0, r.stderr
    assert not list(units.iterdir()) and "bead" not in (home / ".bashrc").read_text()


def test_an_empty_or_relative_home_folder_is_refused_before_anything_is_written(fake_home, tmp_path, monkeypatch):
    """Python reads HOME= as `/` and a relative HOME as given: `bead setup` in a container with HOME= wrote its units,
    home and rc block into `/` (as root), and with a relative one into the current folder, where nothing reads them,
    and said it was done (an outside attack). Both are refused, saying what to set."""
    from bead.errors import BeadError
    from bead.paths import resolve_home, user_home

    for value in ("", "rel", "./rel"):
        with pytest.raises(BeadError, match="(?s)HOME is .*set HOME to your home folder's absolute path"):
            user_home({"HOME": value})
        with pytest.raises(BeadError, match="HOME is"):
            resolve_home({"HOME": value})
    assert resolve_home({"HOME": "", "BEAD_HOME": str(tmp_path / "b")}).root == tmp_path / "b"
    _home, log, env = fake_home
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    env = {k: v for k, v in env.items() if k not in ("BEAD_HOME", "XDG_CONFIG_HOME")}
    r = bead_cmd({**env, "HOME": "rel"}, "setup", "--platform", "systemd", "--no-vault", "--executable", shutil.which("true"))
    assert r.returncode != 0 and "HOME is a relative path" in r.stderr, r.stderr
    assert list(work.iterdir()) == [] and commands(log) == []


def test_a_quoted_tilde_bead_home_is_read_against_home_and_refused_where_home_is_empty(tmp_path):
    """`BEAD_HOME='~/.bead'` (quoted: the shell left the tilde) with HOME= resolved to `/.bead`, Python reading an
    empty HOME as nothing: bead's home in `/`. A leading `~` is read as HOME is, so it is refused there, and means
    the home folder where HOME is set."""
    from bead.errors import BeadError
    from bead.paths import resolve_home

    for value in ("~/.bead", "~"):
        with pytest.raises(BeadError, match="HOME is empty"):
            resolve_home({"HOME": "", "BEAD_HOME": value})
    assert resolve_home({"HOME": str(tmp_path), "BEAD_HOME": "~/.bead"}).root == tmp_path / ".bead"
    assert resolve_home({"HOME": str(tmp_path), "BEAD_HOME": "~"}).root == tmp_path
    assert resolve_home({"HOME": str(tmp_path), "BEAD_HOME": "~//.bead"}).root == tmp_path / ".bead"  # not /.bead
    # `--home` (an MCP client's arguments) is read the same way.
    r = invoke_cli(["--home", "~/.bead", "status"], env={"HOME": "", "BEAD_HOME": None})
    assert r.code != 0 and "HOME is empty" in r.err and not Path("/.bead").exists(), r.err


def test_two_homes_installed_one_over_the_other_can_each_be_uninstalled(fake_home):
    """Home A set up for bash, then home B for zsh (the units now B's, each rc file its own home's block): the first
    form of the check refused both uninstalls, each naming the other (a review). The units name the home they serve;
    an rc block of another home is left and said, not a reason to refuse."""
    home, _log, env = fake_home
    true = shutil.which("true")
    a, b = home / ".bead", home / "work-bead"
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-vault", "--executable", true).returncode == 0
    env_b = {**env, "BEAD_HOME": str(b), "SHELL": "/bin/zsh"}
    assert bead_cmd(env_b, "setup", "--platform", "systemd", "--no-vault", "--executable", true).returncode == 0
    assert str(a / "shell.sh") in (home / ".bashrc").read_text() and str(b / "shell.sh") in (home / ".zshrc").read_text()
    refused = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert refused.returncode != 0 and f"BEAD_HOME={b} bead setup --uninstall" in refused.stderr, refused.stderr
    r = bead_cmd(env_b, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0, r.stderr
    assert "bead" not in (home / ".zshrc").read_text() and str(a / "shell.sh") in (home / ".bashrc").read_text()
    assert "left the bead block of another home" in r.stdout
    r = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0, r.stderr
    assert "bead" not in (home / ".bashrc").read_text()


def test_units_and_rc_blocks_an_earlier_bead_wrote_are_this_homes(fake_home):
    """Earlier versions wrote a home with a space unquoted in Environment=, "%" single, and the rc block's path in
    double quotes: the same home, which the first form of the check took for another and refused to uninstall."""
    home, _log, env = fake_home
    true = shutil.which("true")
    odd = home / "my bead %h"
    env = {**env, "BEAD_HOME": str(odd)}
    assert bead_cmd(env, "setup", "--platform", "systemd", "--no-vault", "--executable", true).returncode == 0
    units = home / ".config" / "systemd" / "user"
    for unit in units.glob("*.service"):
        lines = [f"Environment=BEAD_HOME={odd}" if ln.startswith("Environment=") else ln for ln in unit.read_text().splitlines()]
        unit.write_text("\n".join(lines) + "\n")
    sh = odd / "shell.sh"
    (home / ".bashrc").write_text(f'export A=1\n# >>> bead >>>\n[ -f "{sh}" ] && . "{sh}"\n# <<< bead <<<\n')
    r = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0, r.stderr
    assert not list(units.glob("bead-*")) and (home / ".bashrc").read_text().strip() == "export A=1"


def test_an_uninstall_leaves_claude_codes_registration_of_another_home(fake_home, tmp_path):
    """`claude mcp remove --scope user bead` ran whatever home the registration named: an uninstall for a scratch home
    took the real install's MCP server away (a review). A registration that names another home is left and said."""
    home, _log, env = fake_home
    claude_log = tmp_path / "claude-get.log"
    stub = Path(env["PATH"].split(":")[0]) / "claude"
    stub.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{claude_log}"\n'
        'case "$*" in *"mcp get"*) printf "bead:\\n  Scope: User config\\n  Args: --home /home/someone/.bead mcp\\n" ;; esac\n'
        "exit 0\n"
    )
    stub.chmod(0o755)
    r = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0, r.stderr
    assert "registered for another home (/home/someone/.bead)" in r.stdout
    assert "mcp remove" not in claude_log.read_text()
    stub.write_text(stub.read_text().replace("/home/someone/.bead", str(home / ".bead")))
    r = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0 and "mcp remove --scope user bead" in claude_log.read_text(), r.stdout


def test_a_registration_of_this_home_with_a_space_in_its_path_is_removed(fake_home, tmp_path):
    """`claude mcp get` joins the arguments with blanks: the home was read up to its first space, taken for another
    home, and the uninstall left this home's registration behind (a review)."""
    home, _log, env = fake_home
    spaced = home / "my bead"
    env = {**env, "BEAD_HOME": str(spaced)}
    claude_log = tmp_path / "claude-get.log"
    stub = Path(env["PATH"].split(":")[0]) / "claude"
    stub.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{claude_log}"\n'
        f'case "$*" in *"mcp get"*) printf "bead:\\n  Args: --home {spaced} mcp\\n" ;; esac\n'
        "exit 0\n"
    )
    stub.chmod(0o755)
    r = bead_cmd(env, "setup", "--uninstall", "--platform", "systemd")
    assert r.returncode == 0 and "mcp remove --scope user bead" in claude_log.read_text(), r.stdout
