"""Bad input gets a clear error that says what to do next, and loses nothing: an adversarial review's commands
(2026-12-04), each a traceback, a silent wrong answer or a hang before its fix."""

from __future__ import annotations

import errno
import sys

import pytest

from bead.cli import main


def clean(r) -> bool:
    return r.code == 1 and "Traceback" not in r.err and "error:" in r.err and "hint:" in r.err


def test_a_key_that_is_not_utf8_is_refused_plainly(bead):
    assert bead("write", "user/editor", "helix", "--type", "user").code == 0
    for cmd in ("show", "history", "forget", "reinforce"):
        r = bead(cmd, "user/\udcff")
        assert clean(r) and "not UTF-8" in r.err, (cmd, r.err)
    assert bead("show", "user/editor").out.strip().endswith("helix")


@pytest.mark.parametrize("n", ["0", "-1", "9223372036854775808"])
def test_a_search_limit_out_of_range_is_a_usage_error(bead, n):
    r = bead("search", "x", "-n", n)
    assert r.code == 2 and "Traceback" not in r.err and "1<=x<=1000" in r.err, r.err


@pytest.mark.parametrize("line", ['{"cues": [1]}', '{"rejected": [{"id": "a"}]}', '{"roles": 5}', '{"pinned": 5}'])
def test_why_shows_an_odd_trace_line_without_a_traceback(bead, bead_home, tmp_path, line):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(line + "\n")
    bead_home.mkdir(parents=True, exist_ok=True)
    (bead_home / "config.yaml").write_text(f"proxy:\n  trace: {trace}\n")
    r = bead("why")
    assert r.code == 0 and "Traceback" not in r.err, r.err


def test_a_home_that_is_a_file_is_said_with_what_to_do(bead, bead_home):
    bead_home.parent.mkdir(parents=True, exist_ok=True)
    bead_home.write_text("not a folder")
    r = bead("status")
    assert clean(r) and "BEAD_HOME" in r.err, r.err


def test_a_full_disk_is_said_with_what_to_do_and_the_old_value_stays(bead, monkeypatch):
    from bead import files

    assert bead("write", "user/editor", "helix", "--type", "user").code == 0

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_at", full)
    r = bead("write", "user/editor", "kakoune", "--type", "user")
    assert clean(r) and "No space left on device" in r.err and "free some space" in r.err, r.err
    monkeypatch.undo()
    assert bead("show", "user/editor").out.strip().endswith("helix")


def test_a_write_whose_last_steps_fail_says_it_is_written_and_status_names_what_to_mend(bead, bead_home):
    """The version's file is the commit. A step after it that failed (a full disk; a folder where the key's state
    should be) ended the command in `error: Is a directory: .state.json`, exit 1, for a value written and served (an
    outside attack): the person would write it again, or take it for lost. Now it says the value is written and what
    was left, and `bead status` names the folder and how to remove it."""
    assert bead("write", "user/editor", "helix", "--type", "user").code == 0
    state = bead_home / "store" / "facts" / "user" / "editor" / ".state.json"
    state.unlink()
    state.mkdir()
    r = bead("write", "user/editor", "kakoune", "--type", "user")
    assert r.code == 0 and r.out.strip() == "wrote user/editor@v2 (supersedes user/editor@v1)", r.out
    assert "the value is written, but Is a directory" in r.err and "bead status" in r.err, r.err
    assert bead("show", "user/editor").out.strip().endswith("kakoune")
    status = bead("status").out
    assert f"{state}: is not a file" in status and f"rm -r {state}" in status, status
    # An agent's remember through MCP (remember_fact) is told so too, without the home's path.
    from bead.config import Config
    from bead.core.memory import Memory
    from bead.core.remember import remember_fact
    from bead.paths import Home

    with Memory(Home(bead_home), Config(owner="t")) as mem:
        saved = remember_fact(mem, "The team uses helix", "user", key="user/team-editor")
        assert saved.status == "written" and not saved.undone  # a new key: its state is a file
        (mem.home.fact_dir("user/team-editor") / ".state.json").unlink()
        (mem.home.fact_dir("user/team-editor") / ".state.json").mkdir()
        saved = remember_fact(mem, "The team uses kakoune", "user", key="user/team-editor")
        assert saved.status == "written" and saved.undone


def test_a_full_disk_on_the_first_run_leaves_no_empty_config(bead, bead_home, monkeypatch):
    """config.yaml was created, then written: a full disk left it empty, and it was never written again (an outside
    attack). It is written whole, then linked to its name, or not at all."""
    from bead import files

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_all", full)
    r = bead("list")
    assert r.code == 1 and "No space left on device" in r.err, r.err
    assert not (bead_home / "config.yaml").exists() and not [p for p in bead_home.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.undo()
    assert bead("list").code == 0
    assert "owner:" in (bead_home / "config.yaml").read_text()


def test_a_value_that_is_not_utf8_and_a_version_that_does_not_read_are_said_as_such(bead):
    """`bead write user/b "caf\\xe9"` said the value held invisible characters (U+DCE9), and `bead show user/a@v0`
    that the segment 'a@v0' was not lower-case (an outside attack on the errors): each says what is wrong now."""
    r = bead("write", "user/b", "caf\udce9", "--type", "user")
    assert r.code == 1 and "not UTF-8 text (byte 0xe9)" in r.err and "invisible" not in r.err, r.err
    assert bead("write", "user/a", "one", "--type", "user").code == 0
    for wrong in ("user/a@v0", "user/a@v01", "user/a@V1"):
        r = bead("show", wrong)
        assert r.code == 1 and "names no version" in r.err and "bead history" in r.err, (wrong, r.err)


def test_a_damaged_index_is_said_and_reindex_builds_it_again(bead, bead_home):
    assert bead("write", "user/editor", "helix", "--type", "user").code == 0
    (bead_home / "index.db").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (bead_home / f"index.db{suffix}").unlink(missing_ok=True)
    r = bead("search", "helix")
    assert clean(r) and "bead reindex" in r.err, r.err
    r = bead("reindex")
    assert r.code == 0 and "removed it" in r.err, r.err
    assert "helix" in bead("search", "helix").out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_ca_bundle_that_is_not_there_is_named_before_the_proxy_serves(bead_process, workers):
    """SSL_CERT_FILE naming no file: the proxy says so and what to do, and exits, whether it serves alone (a
    traceback from its server's start before) or forks workers (each crashed in turn before)."""
    from fakes import free_port

    r = bead_process(
        "proxy", "--listen", f"127.0.0.1:{free_port()}", "--workers", workers, env={"SSL_CERT_FILE": "/nonexistent/ca.pem"}
    )
    assert r.code == 1, r.err
    assert "SSL_CERT_FILE=/nonexistent/ca.pem" in r.err and "hint: point SSL_CERT_FILE" in r.err, r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("cmd", [("dashboard", "--listen", "127.0.0.1:99999"), ("mcp", "--http", "--listen", "127.0.0.1:70000")])
def test_a_port_out_of_range_is_refused_plainly(bead, cmd):
    r = bead(*cmd)
    assert clean(r) and "1 to 65535" in r.err, r.err


def test_an_owner_of_a_megabyte_is_refused_before_a_fact_no_one_can_read_is_written(bead, bead_home):
    bead_home.mkdir(parents=True, exist_ok=True)
    (bead_home / "config.yaml").write_text("owner: " + "x" * 1_200_000 + "\n")
    r = bead("write", "user/o", "val", "--type", "user")
    assert clean(r) and "owner" in r.err and not (bead_home / "store" / "facts" / "user" / "o").exists()


def test_a_ctrl_c_during_a_forget_says_it_may_have_stopped_part_way_and_one_at_its_question_that_nothing_changed(
    bead, bead_home, monkeypatch, capsys
):
    """A Ctrl-C while forget rewrote raw files printed "aborted: nothing was changed" (an outside attack: 22 files
    were already rewritten). One while the command works says it may have stopped part way and to run it again; one
    at its question still says nothing was changed, which is true there."""
    import click

    from bead.cli import main
    from bead.core import forget as forget_mod

    assert bead("write", "user/pet", "a cat named Biscotti", "--type", "user").code == 0
    monkeypatch.setenv("BEAD_HOME", str(bead_home))
    real_apply = forget_mod.apply

    def part_way(mem, plan, *a, **k):
        mem.write("user/other", "written before the Ctrl-C", "user")  # a change made before it came
        raise KeyboardInterrupt

    monkeypatch.setattr(forget_mod, "apply", part_way)
    with pytest.raises(SystemExit) as code:
        main(["forget", "user/pet", "--yes"])
    err = capsys.readouterr().err
    assert code.value.code == 130 and "may have stopped part way" in err and "run it again" in err, err
    assert "nothing was changed" not in err
    monkeypatch.setattr(forget_mod, "apply", real_apply)

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(click, "confirm", ctrl_c)
    monkeypatch.setattr("bead.cli.common.at_terminal", lambda: True)  # the question is asked at a terminal
    with pytest.raises(SystemExit) as code:
        main(["forget", "user/pet"])
    err = capsys.readouterr().err
    assert code.value.code == 1 and "aborted: nothing was changed" in err, err
    assert bead("show", "user/pet").out.strip().endswith("a cat named Biscotti")


def test_a_value_from_a_closed_stdin_is_refused_plainly(bead_process):
    r = bead_process("write", "user/editor", "-", "--type", "user", stdin_closed=True)
    assert r.code == 1 and "standard input" in r.err and "Traceback" not in r.err, r.err


def test_a_usage_error_shows_what_was_typed_as_text(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["forget", "user/a", "\x1b]0;PWN\x07"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "\x1b" not in err and "\x07" not in err and "hint:" in err, err


def test_a_question_no_one_can_answer_says_to_pass_yes(bead):
    assert bead("write", "user/editor", "helix editor", "--type", "user").code == 0
    r = bead("forget", "--match", "helix editor", input="")
    assert r.code == 1 and "--yes" in r.err, r.err
    assert bead("show", "user/editor").code == 0


def test_a_project_option_that_names_no_project_is_refused(bead):
    r = bead("skills", "preview", "--project", "../..")
    assert clean(r) and "not a project name" in r.err, r.err


@pytest.mark.parametrize("body", ["scenarios: 5\n", "scenarios: [5]\n", "sessions: 5\n"])
def test_a_suite_of_another_shape_is_said_not_a_traceback(bead, tmp_path, body):
    suite = tmp_path / "suite.yaml"
    suite.write_text("kind: supersession\nname: x\n" + body)
    r = bead("eval", str(suite))
    assert clean(r) and "suite format" in r.err and str(suite) in r.err, r.err


@pytest.mark.parametrize(
    "body",
    [
        # nine aliases of nine aliases: a few hundred bytes that expand to a tree far too large to check
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
        + "kind: supersession\nname: x\nscenarios: *i\n",
        "kind: poisoning\nname: x\nproposals: &c [*c]\n",  # a list that holds itself
    ],
    ids=["alias-bomb", "self-reference"],
)
def test_a_suite_with_anchors_is_refused_at_once_not_expanded(bead, tmp_path, body):
    """A suite expanded its aliases and was walked whole (minutes for 1.4 KB), or ended in a RecursionError
    traceback. A suite uses no anchor or alias: one is refused at once, saying so."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(body)
    r = bead("eval", str(suite))
    assert clean(r) and "anchors and aliases" in r.err and "no anchor or alias" in r.err, r.err


def test_a_base_60_number_is_read_in_linear_time_as_the_text_it_is():
    """PyYAML builds a YAML 1.1 base-60 number (`1:0:0:...`) by multiplying a growing integer once per part: an
    800 KB one-line eval suite took 20 s of CPU before its error, 4 MB minutes (an outside attack); config.yaml's and
    a fact's frontmatter's values are read the same way. Such a scalar is text now, its tag given outright is a YAML
    error, and so is a decimal Python will not build (a ValueError before)."""
    from linear import assert_linear

    from bead import config, yamlsafe
    from bead.errors import BeadError

    assert_linear(yamlsafe.load, lambda n: "x: [1" + ":0" * (n // 2) + "]", 400_000, limit=0.4, what="load")
    assert_linear(yamlsafe.load_plain, lambda n: "x: 1" + ":0" * (n // 2), 400_000, limit=0.4, what="load_plain")

    def parsed(text: str) -> None:
        with pytest.raises(BeadError, match="whole number"):  # the text it is, which no number setting takes
            config.parse(text)

    assert_linear(parsed, lambda n: "proxy:\n  workers: 1" + ":0" * (n // 2), 400_000, limit=0.4, what="config")
    assert yamlsafe.load("at: 1:30\nn: 12\nf: 1.5\nh: 0x1F") == {"at": "1:30", "n": 12, "f": 1.5, "h": 31}
    for text in ("a: !!int 1:0:0", "a: !!float 1:0.5", "a: " + "9" * 5000):
        with pytest.raises(yamlsafe.Error):
            yamlsafe.load(text)
    with pytest.raises(BeadError, match="workers"):
        config.parse("proxy:\n  workers: !!int 1:30\n")


def test_reindex_never_removes_an_index_that_is_only_busy(bead, bead_home, monkeypatch):
    """A locked index (another program mid-write) is no damaged one: reindex says so and removes nothing."""
    from bead.core.memory import Memory
    from bead.index.sqlite import module

    assert bead("write", "user/editor", "helix", "--type", "user").code == 0

    def locked(self):
        raise module().OperationalError("database is locked")

    monkeypatch.setattr(Memory, "index", property(locked))
    r = bead("reindex")
    assert r.code == 1 and "database is locked" in r.err and "run the command again" in r.err, r.err
    assert (bead_home / "index.db").exists()


def test_a_reader_that_goes_away_ends_the_listing_quietly(mem, bead_home):
    import os
    import subprocess

    for i in range(300):
        mem.write(f"project/shop/key{i}", f"value {i}", "project")
    mem.close()
    r = subprocess.run(
        f"{sys.executable} -m bead list | head -1",
        shell=True,
        capture_output=True,
        text=True,
        env={**os.environ, "BEAD_HOME": str(bead_home)},
        timeout=120,
    )
    assert r.stdout.count("\n") == 1 and "error" not in r.stderr, r.stderr


def test_a_usage_error_keeps_its_lines(capsys):
    with pytest.raises(SystemExit):
        main(["write", "user/q", "hi"])
    err = capsys.readouterr().err
    assert "\\x0a" not in err and "--type" in err, err


def test_a_question_asked_with_stdin_closed_is_an_error_with_a_next_step(bead_process, bead):
    assert bead("write", "user/editor", "helix editor", "--type", "user").code == 0
    r = bead_process("forget", "--match", "helix editor", stdin_closed=True)
    assert r.code == 1 and "--yes" in r.err and "Traceback" not in r.err, r.err
    assert bead("show", "user/editor").code == 0


def test_a_login_name_of_another_shape_is_no_owner_and_writes_no_setting(bead_home, monkeypatch):
    import getpass

    from bead.config import load, write_default
    from bead.paths import Home

    monkeypatch.setattr(getpass, "getuser", lambda: "x\nrecall:\n  evidence_threshold: 9")
    home = Home(bead_home).ensure()
    write_default(home)
    cfg = load(home)
    assert cfg.owner == "owner" and cfg.recall.evidence_threshold == 1.2


def test_an_ipv6_listen_address_needs_its_brackets():
    from bead.errors import BeadError
    from bead.ports import parse_listen

    assert parse_listen("[::1]:7077") == ("::1", 7077)
    with pytest.raises(BeadError, match="brackets"):
        parse_listen("::1:7077")


def test_the_mcp_servers_ipv6_address_takes_brackets_and_no_scope_as_the_proxys_does():
    """`bead mcp --http --listen ::1:7391` started and printed http://::1:7391/mcp, no URL; `[::1%lo]:7391` passed
    and failed at the bind with a resolver's error. Each is refused with the form to use."""
    from bead.errors import BeadError
    from bead.mcp.listen import parse_listen

    assert parse_listen("[::1]:7078") == ("::1", 7078, True)
    with pytest.raises(BeadError, match="brackets"):
        parse_listen("::1:7078")
    with pytest.raises(BeadError, match="scope"):
        parse_listen("[::1%lo]:7078")


@pytest.mark.parametrize(
    "url", ["http://x/\x1bfoo", "http://x:99999/", "http://x:0/", "ftp://mirror.example/", "api.anthropic.com"]
)
def test_an_upstream_that_is_no_http_url_is_named_before_the_proxy_serves(bead, url):
    """A `--upstream` holding an escape went through, and the proxy's first request ended in httpx's InvalidURL and a
    traceback labelled a bug in bead (an outside review). It is refused at once, with what to give instead."""
    r = bead("proxy", "--upstream", url, "--listen", "127.0.0.1:1")
    assert r.code == 1 and "--upstream" in r.err and "hint: give --upstream the API's base URL" in r.err, r.err
    assert "Traceback" not in r.err


def test_a_config_upstream_that_is_no_http_url_names_its_line(bead, bead_home):
    bead_home.mkdir(parents=True, exist_ok=True)
    (bead_home / "config.yaml").write_text('owner: t\nproxy:\n  upstream: "http://x/\\e[2Jy"\n')  # YAML's \\e: ESC
    r = bead("list")
    assert r.code == 1 and "line 3" in r.err and "proxy.upstream" in r.err, r.err
