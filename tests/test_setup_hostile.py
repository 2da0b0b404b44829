"""What `bead setup` writes holds only what it means to, whatever a path, the environment or a listener on the
proxy's port holds (an adversarial review's reproductions, 2026-12-04; each failed before its fix)."""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import free_port
from rawhttp import Trickle

from bead.errors import BeadError
from bead.paths import Home
from bead.setup.install import RC_BEGIN, Plan, _strip_block, install, uninstall


def plan(
    tmp_path: Path, platform: str = "systemd", home: Path | None = None, bead: str = "/bin/true", listen: str = "127.0.0.1:7077"
):
    return Plan(platform=platform, user_home=tmp_path, home=Home(home or tmp_path / ".bead"), bead=bead, listen=listen)


def wrapper(tmp_path: Path, says: str) -> tuple[Plan, dict[str, str]]:
    """shell.sh installed for a home under ``tmp_path``, and an environment whose `claude` prints ``says`` and its
    arguments."""
    p = plan(tmp_path, listen=f"127.0.0.1:{free_port()}")
    install(p, load=False, rc=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(f'#!/bin/sh\necho "{says}$*"\n')
    (bin_dir / "claude").chmod(0o755)
    return p, {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path)}


@pytest.mark.parametrize("where", ["home", "executable"])
def test_a_line_break_in_a_path_is_refused_before_anything_is_written(tmp_path, where):
    """systemd cannot quote a line break: BEAD_HOME or bead's path holding one would give the unit a line of its own
    (an ExecStartPre= of someone's choosing)."""
    odd = "h\nExecStartPre=/bin/sh -c id\n#"
    p = plan(tmp_path, home=tmp_path / odd) if where == "home" else plan(tmp_path, bead=f"/opt/{odd}/bead")
    with pytest.raises(BeadError, match="control character"):
        install(p, load=False, rc=False)
    assert not p.unit_dir.exists()


@pytest.mark.parametrize(
    "home, exe",
    [
        ("R&D/.bead", "/opt/bead/bin/bead"),
        ("x</string></dict><key>Program</key><string>/bin/sh", "/opt/b</string><string>-c</string><string>touch x"),
    ],
)
def test_a_plist_holds_each_path_as_written(tmp_path, home, exe):
    p = plan(tmp_path, "launchd", home=tmp_path / home, bead=exe)
    pl = plistlib.loads(p.template("proxy").encode())
    assert pl["ProgramArguments"] == [exe, "proxy"] and pl["EnvironmentVariables"] == {"BEAD_HOME": str(tmp_path / home)}
    assert "Program" not in pl


def test_a_listen_address_that_is_no_loopback_address_is_refused_on_every_platform(tmp_path):
    """It goes into shell.sh as well as the units: `$(...)` in it would run at every `claude`."""
    with pytest.raises(BeadError):
        install(plan(tmp_path, "launchd", listen="127.0.0.1$(touch /tmp/pwned):7077"), load=False, rc=False)


def test_uninstall_takes_only_beads_block_not_a_begin_marker_of_the_persons(tmp_path):
    p = plan(tmp_path)
    mine = f"export A=1\n{RC_BEGIN}\nmine\n"
    assert _strip_block(mine + "\n" + p.rc_block()) == mine  # as install appends it


def test_a_block_kept_just_above_a_removed_one_keeps_its_end_markers_line_break(tmp_path):
    """Another home's block kept at an uninstall (``keep``), this home's right below it at the file's end: the line
    break taken with the removed block was the kept block's own, and its end marker was left without one."""
    ours, theirs = plan(tmp_path).rc_block(), plan(tmp_path, home=tmp_path / "other").rc_block()
    for head in ("export A=1\n", "export A=1\n\n"):
        text = head + theirs + ours
        assert _strip_block(text, keep=lambda line: "other" in line) == head + theirs
    assert _strip_block("export A=1\n" + theirs + "\n" + ours, keep=lambda line: "other" in line) == "export A=1\n" + theirs


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
def test_the_wrapper_evals_no_value_from_the_environment(tmp_path):
    """The wrapper keeps the claude alias's command across a second source in the same shell; a value of that name
    in the environment is someone else's, and the function evals it."""
    p, env = wrapper(tmp_path, "claude ran: ")
    planted = tmp_path / "planted"
    env |= {"__bead_claude_args": f"$(touch {planted})", "__bead_claude_cmd": f"claude; touch {planted} #"}
    r = subprocess.run(["bash", "-c", f". {p.shell_sh}; claude -p hi"], env=env, capture_output=True, text=True, timeout=60)
    assert "claude ran: -p hi" in r.stdout, r.stderr
    assert not planted.exists()


def test_the_wrappers_check_ends_however_slowly_a_listener_answers(tmp_path):
    """A listener on the proxy's port that sends its answer a byte at a time held `claude` for as long as it liked
    (the timeout was per read); the whole check now ends, and claude runs without the proxy."""
    token = tmp_path / "proxy.token"
    token.write_text("t" * 43 + "\n")
    with Trickle(b"HTTP/1.1 200 OK\r\n" + b"X" * 1000, every=0.3) as listener:
        r = subprocess.run(
            [sys.executable, "-E", "-P", "-m", "bead.ports", f"127.0.0.1:{listener.port}", str(token)],
            capture_output=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    assert r.returncode == 1


@pytest.mark.parametrize("shell", [s for s in ("bash", "zsh") if shutil.which(s)])
def test_a_shell_that_exports_everything_keeps_the_aliass_arguments_when_it_sources_again(tmp_path, shell):
    """Under `set -a` the wrapper's own values were exported, and the check that drops exported ones (someone
    else's) dropped them on the next source."""
    p, env = wrapper(tmp_path, "ARGS=")
    script = f"set -a; alias claude='claude --verbose'; . {p.shell_sh}; claude a; . {p.shell_sh}; claude b"
    r = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.split("\n")[:2] == ["ARGS=--verbose a", "ARGS=--verbose b"], (r.stdout, r.stderr)


@pytest.mark.parametrize("shell_rc", [".bashrc", ".zshrc"])
def test_a_named_pipe_at_the_rc_file_is_refused_at_once_and_uninstall_leaves_it(tmp_path, monkeypatch, shell_rc):
    """setup read the rc file whole, and a named pipe there held it (and `--uninstall`, after it had removed the
    units). setup now refuses it before writing anything; uninstall says it and removes the rest."""
    monkeypatch.setenv("SHELL", "/bin/zsh" if shell_rc == ".zshrc" else "/bin/bash")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    os.mkfifo(tmp_path / shell_rc)
    p = plan(tmp_path)
    with pytest.raises(BeadError, match="not a regular file") as err:
        install(p, load=False)
    assert "--no-rc" in (err.value.hint or "") and not p.unit_dir.exists()
    install(p, load=False, rc=False)
    assert (p.unit_dir / "bead-proxy.service").exists()
    acts = uninstall(plan(tmp_path), runner=lambda cmd: subprocess.CompletedProcess(cmd, 0, "", ""))
    assert f"left {tmp_path / shell_rc} as it is: not a regular file" in "\n".join(acts)
    assert not (p.unit_dir / "bead-proxy.service").exists() and not p.shell_sh.exists()


def test_an_rc_link_that_leads_nowhere_is_refused_and_no_folder_is_made(tmp_path, monkeypatch):
    """A dotfiles link into a disk not mounted or a repository not cloned yet: setup made the link's whole missing
    chain of folders (as root, anywhere) and wrote a new file there."""
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / ".bashrc").symlink_to(tmp_path / "elsewhere" / "a" / "b" / "bashrc")
    p = plan(tmp_path)
    with pytest.raises(BeadError, match="which does not exist") as err:
        install(p, load=False)
    assert "--no-rc" in (err.value.hint or "")
    assert not (tmp_path / "elsewhere").exists() and not p.unit_dir.exists()


def test_a_relative_xdg_config_home_is_no_place_for_units(tmp_path, monkeypatch):
    """systemd ignores a relative XDG_CONFIG_HOME (as the XDG spec says); setup wrote the units under the current
    folder, where systemd never looks and `--uninstall` from another folder never found them."""
    monkeypatch.setenv("XDG_CONFIG_HOME", "relcfg")
    monkeypatch.chdir(tmp_path)
    assert plan(tmp_path / "person").unit_dir == tmp_path / "person" / ".config" / "systemd" / "user"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert plan(tmp_path / "person").unit_dir == tmp_path / "cfg" / "systemd" / "user"


@pytest.mark.parametrize(
    "answer, every",
    [
        (b"HTTP/1.1 200 OK\r\n" + b"X" * 1000, 0.3),  # a byte every 0.3 s: held `bead status` for minutes
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n" + b"x" * 64, 0.0005),  # a MemoryError traceback
    ],
    ids=["trickle", "gigantic"],
)
def test_status_and_check_proxy_end_soon_and_cleanly_whatever_listens_on_the_port(tmp_path, answer, every):
    """Something of the person's own on the proxy's port (the kernel's check passes) that answers the health check a
    byte at a time, or announces an answer of 100 GB: `bead status` and `bead check-proxy` waited per read, or read
    it whole. Each now ends within the wrapper's check time, saying the proxy is not this home's."""
    import threading

    from bead.core.health import proxy_health

    with Trickle(answer, every=every) as listener:
        got: list[dict] = []
        t = threading.Thread(target=lambda: got.append(proxy_health(f"127.0.0.1:{listener.port}", "t" * 43)), daemon=True)
        t.start()
        t.join(20)
        assert got and got[0]["running"] is False, got
        env = {**os.environ, "BEAD_HOME": str(tmp_path / ".bead"), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        (tmp_path / ".bead").mkdir()
        (tmp_path / ".bead" / "proxy.token").write_text("t" * 43 + "\n")
        r = subprocess.run(
            [sys.executable, "-m", "bead", "check-proxy", "--listen", f"127.0.0.1:{listener.port}"],
            capture_output=True,
            text=True,
            timeout=20,
            env=env,
        )
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("held", ["", "\n", "abc\n", "has spaces in it, a sentence typed by hand\n"])
def test_a_token_file_that_holds_no_token_gets_a_new_one(tmp_path, held):
    """An emptied proxy.token: the proxy ran with an empty token, the wrapper never used it (its check needs one),
    and `bead status` said all was well. A file without a token of the right shape (a short word is guessed) gets a
    new one, 0600, which the wrapper's check and the proxy then share."""
    from bead.token import SHAPE, home_token, load_token

    home = Home(tmp_path / ".bead").ensure()
    home.proxy_token.write_text(held)
    token = load_token(home)
    assert SHAPE.fullmatch(token) and home.proxy_token.read_text() == token + "\n"
    assert home.proxy_token.stat().st_mode & 0o777 == 0o600
    assert load_token(home) == token == home_token(home)


@pytest.mark.parametrize("written", ["127.0.0.1:017077", "[127.0.0.1]:7078", "[0:0:0:0:0:0:0:1]:7079", "[[::1]]:7077"])
def test_a_listen_address_written_otherwise_than_bead_writes_it_is_refused_with_its_spelling(written):
    """Accepted before, such an address made the wrapper and `bead status` take bead's own running proxy for someone
    else's (the proof covers the address as written; the proxy signs the one it bound), and claude ran without
    memory. Each is refused, naming the spelling to use."""
    from bead.ports import parse_listen

    with pytest.raises(BeadError, match="written otherwise") as err:
        parse_listen(written)
    host, port = written.rsplit(":", 1)
    assert f":{int(port)}" in (err.value.hint or "") and "0:0:0" not in (err.value.hint or "")
    assert parse_listen("localhost:7077") == ("127.0.0.1", 7077) and parse_listen("[::1]:7077") == ("::1", 7077)


def test_the_wrappers_check_runs_on_the_python_of_the_bead_it_installed(tmp_path):
    """shell.sh's check ran the Python that ran setup, which the services never use: set up from a throwaway venv
    (`--executable` naming the real bead), `claude` stopped using the proxy once that venv was gone, while `bead
    status` said all was well. It runs the Python the installed bead's own #! line names."""
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    exe = tmp_path / "venv" / "bin" / "bead"
    exe.write_text(f"#!{python}\nimport sys\nfrom bead.cli import main\nsys.exit(main())\n")
    exe.chmod(0o755)
    p = plan(tmp_path, bead=str(exe))
    install(p, load=False, rc=False)
    shell = p.shell_sh.read_text()
    assert f"if [ -x {python} ] && {python} -E -P -m bead.ports" in shell, shell
    assert sys.executable not in shell


def test_the_port_holder_is_found_though_the_process_closes_other_files_meanwhile(tmp_path):
    """`bead status` names who holds the proxy's port by each process's open files. A busy process closes some
    between the listing and the look, and one gone file made the scan pass over all that process's others, the
    listening socket among them: the holder went unnamed (a test saw it under load). Shown on a /proc laid out by
    hand: the process's fd 3 is no link any more, its fd 4 is the socket."""
    from bead.ports import hex_port, listener

    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    port = 7077
    row = f"   0: 0100007F:{hex_port(port)} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99999 1"
    (proc / "net" / "tcp").write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" + row + "\n"
    )
    (proc / "net" / "tcp6").write_text("header\n")
    fds = proc / "123" / "fd"
    fds.mkdir(parents=True)
    (fds / "3").write_text("")  # readlink fails, as on a file closed meanwhile
    (fds / "4").symlink_to("socket:[99999]")
    (proc / "123" / "comm").write_text("python3\n")
    assert listener(port, proc) == "pid 123 (python3)"


def test_uninstall_with_an_rc_link_in_a_circle_removes_the_rest_and_says_so(tmp_path, monkeypatch):
    """A ~/.zshrc link that leads to itself ended `--uninstall` at once ("Too many levels of symbolic links"), even
    for a person whose shell is bash: nothing was removed."""
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    p = plan(tmp_path)
    install(p, load=False)
    (tmp_path / ".zshrc").symlink_to(tmp_path / ".zshrc")
    acts = uninstall(plan(tmp_path), runner=lambda cmd: subprocess.CompletedProcess(cmd, 0, "", ""))
    assert any(a.startswith(f"left {tmp_path / '.zshrc'} as it is") for a in acts), acts
    assert RC_BEGIN not in (tmp_path / ".bashrc").read_text() and not (p.unit_dir / "bead-proxy.service").exists()


def test_two_processes_making_the_token_at_once_agree_with_its_file(tmp_path, monkeypatch):
    """The token file was created empty and then written: a second process reading it in between found no token,
    made one and replaced the file, and the first (the proxy) went on with a token the file no longer held: `bead
    status` called bead's own proxy someone else's. Shown by making the second one while the first makes its own."""
    import secrets as secrets_module

    from bead import token as token_module

    home = Home(tmp_path / ".bead").ensure()
    real = secrets_module.token_urlsafe
    others: list[str] = []

    def meanwhile(n: int) -> str:
        if not others:
            others.append("")  # once
            others[0] = token_module.load_token(home)  # the other process, while this one makes its token
        return real(n)

    monkeypatch.setattr(token_module.secrets, "token_urlsafe", meanwhile)
    first = token_module.load_token(home)
    assert first == others[0] == home.proxy_token.read_text().strip()


def test_the_wrappers_check_finds_the_python_of_a_bead_pip_wrote_as_a_shell_trampoline(tmp_path):
    """pip writes a /bin/sh trampoline instead of a #! line where the interpreter's path holds a space or is long:
    the check fell back to the Python that ran setup. The venv's own python beside the executable is used."""
    venv = tmp_path / "my venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    exe = venv / "bead"
    exe.write_text(f"#!/bin/sh\n'''exec' \"{venv / 'python'}\" \"$0\" \"$@\"\n' '''\nimport sys\n")
    exe.chmod(0o755)
    p = plan(tmp_path, bead=str(exe))
    install(p, load=False, rc=False)
    assert f"if [ -x '{venv / 'python'}' ]" in p.shell_sh.read_text(), p.shell_sh.read_text()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("planted", ["fifo", "link to a fifo", "link to /dev/zero"])
@pytest.mark.parametrize("unit", ["bead-proxy.service", "bead-proxy.socket"])
def test_a_fifo_or_a_device_at_a_unit_file_is_replaced_never_read(tmp_path, planted, unit):
    """setup compared an existing unit file with what it writes by reading it whole: a named pipe there held setup
    for good, a link to /dev/zero filled memory (an adversarial pass). It reads only a regular file, and writes its
    own in that place."""
    p = plan(tmp_path)
    p.unit_dir.mkdir(parents=True)
    where = p.unit_dir / unit
    fifo = tmp_path / "fifo"
    if planted == "link to /dev/zero":
        where.symlink_to("/dev/zero")
    else:
        os.mkfifo(fifo)
        if planted == "fifo":
            os.rename(fifo, where)
        else:
            where.symlink_to(fifo)
    install(p, load=False, rc=False)
    assert where.is_file() and not where.is_symlink() and "bead" in where.read_text()


def test_a_placeholders_word_in_the_homes_path_is_not_filled_in_again(tmp_path):
    """The wrapper's placeholders were filled in one after another: a home whose path holds `@PYTHON@` had the
    Python path spliced inside its quoted token path, where a `$(...)` in that path would run (an adversarial
    pass). Each value goes in once, as written."""
    exe = tmp_path / "venv" / "bin" / "bead"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!{sys.executable}\n")
    exe.chmod(0o755)
    p = plan(tmp_path, home=tmp_path / "h @PYTHON@x", bead=str(exe))
    install(p, load=False, rc=False)
    shell = p.shell_sh.read_text()
    assert shlex.quote(str(p.home.proxy_token)) in shell, shell
    assert shell.count(sys.executable) == 2, "the Python path in its own two places only"
