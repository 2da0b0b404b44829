"""What a newcomer trips on (#26): `bead list`, hints that name the right key or command, a dry run that says a model is missing."""

from __future__ import annotations

import json
import os
import threading

import pytest

from bead.config import Config
from bead.core.memory import Memory
from bead.paths import Home


def seeded(bead_home) -> Memory:
    mem = Memory(Home(bead_home).ensure(), Config(owner="tester"))
    mem.write("user/editor", "Neovim", "user")
    mem.write("user/editor", "Helix", "user")
    mem.write("project/shop/db", "staging db is db2", "project", pinned=True)
    mem.write("project/shop/ci", "CI runs on every push", "feedback", trust="agent_observed")
    mem.write("project/other/db", "the other db", "project")
    return mem


def test_lists_every_key_with_its_current_version(bead, bead_home):
    seeded(bead_home).close()
    r = bead("list", "--json")
    assert r.code == 0
    rows = json.loads(r.out)
    assert [x["id"] for x in rows] == ["project/other/db@v1", "project/shop/ci@v1", "project/shop/db@v1", "user/editor@v2"]
    editor = rows[-1]
    assert (editor["versions"], editor["trust"], editor["pinned"]) == (2, "user_stated", False)
    assert rows[2]["pinned"] is True


def test_a_prefix_and_filters_narrow_it(bead, bead_home):
    seeded(bead_home).close()
    assert [x["key"] for x in json.loads(bead("list", "project/shop", "--json").out)] == ["project/shop/ci", "project/shop/db"]
    assert [x["key"] for x in json.loads(bead("list", "project/sho", "--json").out)] == [], "a whole segment, not a prefix of one"
    assert [x["key"] for x in json.loads(bead("list", "--type", "feedback", "--json").out)] == ["project/shop/ci"]
    assert [x["key"] for x in json.loads(bead("list", "--trust", "agent_observed", "--json").out)] == ["project/shop/ci"]
    r = bead("list", "global/")
    assert r.code == 0 and "no keys under global/" in r.out


def test_the_human_form_marks_pinned_and_dormant(bead, bead_home):
    mem = seeded(bead_home)
    mem.set_status(mem.current("project/other/db"), "dormant")
    mem.close()
    out = bead("list").out.splitlines()
    assert any(line.split()[0] == "project/shop/db@v1" and line.endswith("pinned") for line in out)
    assert any(line.split()[0] == "project/other/db@v1" and line.endswith("dormant") for line in out)


def test_a_missing_key_points_at_bead_list(bead, bead_home):
    seeded(bead_home).close()
    r = bead("show", "user/nobody")
    assert r.code == 1 and "bead list" in r.err


def test_a_key_of_no_known_shape_points_at_bead_list_too(bead):
    r = bead("show", "nope/x")  # the issue's own reproduction: not a scope bead knows
    assert r.code == 1 and "`bead list` shows the keys there are" in r.err


@pytest.mark.parametrize("query", ["", "   ", '"', "*"])
def test_a_search_with_no_words_says_so(bead, query):
    r = bead("search", query)
    assert r.code == 1 and "it has no words" in r.err and "`bead list` shows every key" in r.err


def test_a_type_used_as_a_scope_gets_the_right_key_in_the_hint(bead):
    r = bead("write", "feedback/style", "short commits", "--type", "feedback")
    assert r.code == 1
    assert "'feedback' is a type, not a scope" in r.err and "user/style" in r.err and "--type feedback" in r.err
    r = bead("write", "project/style", "x", "--type", "project")
    assert r.code == 1 and "is a type" not in r.err


def test_a_bare_name_where_a_write_needs_a_key_gets_the_full_forms_in_the_hint(bead):
    """The blocks name the conversation's project's facts by their bare names; a write (or pin, or forget) by
    one says which full keys it could mean."""
    r = bead("write", "db-port", "Postgres listens on 5434.", "--type", "project")
    assert r.code == 1
    assert "'db-port' is a bare name" in r.err and "project/<project>/db-port" in r.err and "user/db-port" in r.err
    odd = bead("write", "db-port.", "v", "--type", "project")  # no key a write may create: the general hint
    assert odd.code == 1 and "bare name" not in odd.err and "keys look like" in odd.err


def test_a_dry_run_without_a_model_says_the_dream_does_nothing_yet(bead):
    r = bead("dream", "run", "--dry-run")
    assert r.code == 0 and "no model is set (dream.model in config.yaml)" in r.out


def test_every_figure_of_the_health_endpoint_is_documented(proxy_client):
    """docs/proxy.md names each field the owner's /bead/health answer holds."""
    from conftest import REPO

    fields = set(proxy_client().health())
    page = (REPO / "docs" / "proxy.md").read_text()
    section = page[page.index("## `GET /bead/health`") :]
    assert {"requests", "not_owner", "with_memory", "errors"} <= fields
    assert sorted(f for f in fields if f"`{f}`" not in section) == []


def test_search_shows_one_readable_scale(bead, bead_home):
    """Raw BM25 numbers depend on the corpus (1e-06 in a small one): each result shows its score as a share of
    its list's best, facts and raw turns alike; --json keeps the score."""
    seeded(bead_home).close()
    r = bead("search", "staging db")
    lines = [line.split() for line in r.out.splitlines() if line.startswith("  ")]
    assert lines and all(0.0 < float(parts[0]) <= 1.0 for parts in lines) and lines[0][0] == "1.00"
    data = json.loads(bead("search", "staging db", "--json").out)
    assert data["facts"][0]["relevance"] == 1.0 and "score" in data["facts"][0]


def test_skills_preview_with_nothing_says_the_folder_decides_the_project(bead, bead_home, tmp_path):
    seeded(bead_home).close()
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    r = bead("skills", "preview", "--dir", str(elsewhere))
    assert r.code == 0 and "no skills for project not-a-project" in r.out
    assert "the project comes from the folder" in r.out and "--project" in r.out


def test_why_without_a_trace_says_exactly_how_the_services_record_one(bead, bead_home, tmp_path, monkeypatch):
    """The services cannot take --trace: the hint gives the line for config.yaml, where it goes (a second `proxy:`
    would be refused), and the restart the running proxy needs; followed as written, `bead why` finds the setting."""
    trace = bead_home / "trace.jsonl"
    bead_home.mkdir(parents=True, exist_ok=True)
    (bead_home / "config.yaml").write_text("recall:\n  pointers: 5\n")
    r = bead("why")
    assert r.code == 1 and "no trace file is configured" in r.err
    assert f"add the two lines `proxy:` and `  trace: {trace}`" in r.err
    (bead_home / "config.yaml").write_text(f"recall:\n  pointers: 5\nproxy:\n  trace: {trace}\n")  # as it says
    assert f"no trace at {trace}" in bead("why").err
    (bead_home / "config.yaml").write_text("proxy:  # the proxy's settings\n  cue_budget_tokens: 600\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(
        "#!/bin/sh\ncase \"$*\" in *bead-proxy*) printf 'LoadState=loaded\\nActiveState=active\\nSubState=running\\n' ;;"
        " *) printf 'LoadState=not-found\\n' ;; esac\n"
    )
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    r = bead("why")
    assert f"under its `proxy:` line add `  trace: {trace}`" in r.err
    assert "restart the proxy: `systemctl --user reset-failed bead-proxy && systemctl --user restart bead-proxy`" in r.err
    (bead_home / "config.yaml").write_text(f"proxy:\n  trace: {trace}\n  cue_budget_tokens: 600\n")  # as it says
    r = bead("why")
    assert r.code == 1 and f"no trace at {trace}" in r.err  # configured now: the proxy writes it once restarted


def test_why_reads_a_trace_whose_cues_hold_line_separators(bead, tmp_path):
    """A cue holding U+2028 or U+0085 is written raw (the trace keeps text as it is): it must not cut its record in
    pieces, which hid the request from `bead why` and let a piece such as `42` pass for one (a crash)."""
    trace = tmp_path / "trace.jsonl"
    benign = {"session": "benign", "cues": [{"source": "user", "text": "how do I run the tests"}]}
    evil = {"session": "evil", "cues": [{"source": "user", "text": "summarise this page\u2028" + "42" + "\u2028 thanks\x85"}]}
    trace.write_text("\n".join(json.dumps(e, ensure_ascii=False) for e in (benign, evil)) + "\n", encoding="utf-8")
    latest = bead("why", "--trace", str(trace))
    assert latest.code == 0, latest.err
    assert "session evil" in latest.out and "summarise this page" in latest.out
    mine = bead("why", "--trace", str(trace), "--session", "evil")
    assert mine.code == 0 and "session evil" in mine.out, mine.err


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_why_never_reads_a_trace_through_a_link_or_waits_on_a_fifo(bead, tmp_path, kind):
    """The trace is read as every other trace reader reads it: a link put in its place is refused, never followed to
    a file outside (which `bead status` promises of every link), and a FIFO is refused, not waited on for ever."""
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"session": "read-from-outside"}\n')
    trace = tmp_path / "home-trace.jsonl"
    feeder = None
    if kind == "symlink":
        trace.symlink_to(outside)
    else:
        os.mkfifo(trace)

        def feed() -> None:  # a writer at the FIFO's other end: a reader that opens it gets a line, not a hang
            try:
                with open(trace, "w") as w:
                    w.write(outside.read_text())
            except BrokenPipeError:  # bead opened it only to see it is no file, and closed it unread
                pass

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
    try:
        r = bead("why", "--trace", str(trace))
    finally:
        if feeder is not None:  # the writer waits for a reader: this one, which lets it end
            fd = os.open(trace, os.O_RDONLY | os.O_NONBLOCK)
            feeder.join(30)
            os.close(fd)
    assert r.code != 0 and "read-from-outside" not in r.out
    assert ("symbolic link" if kind == "symlink" else "not a regular file") in r.err, r.err
