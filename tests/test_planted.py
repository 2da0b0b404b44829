"""Files planted in the home, or damaged, with numbers or shapes bead's own never have (an outside attack): each
command still runs, says what it found where it says anything, and loses nothing."""

from __future__ import annotations

import json

import pytest
from conftest import invoke_cli

from bead.config import Config
from bead.core.memory import Memory
from bead.errors import BeadError
from bead.paths import Home


def _home_with_a_fact(bead_home):
    with Memory(Home(bead_home).ensure(), Config(owner="t")) as m:
        m.write("project/demo/db-host", "db host is zqplm-10 on the staging box", "project")
    return Home(bead_home)


def test_a_temp_file_named_with_a_pid_past_cs_int_ends_no_command(bead, bead_home):
    """`os.kill` overflows on a pid of ten digits: forget, status (with --fix) and reindex ended in a traceback, so
    the person could not forget a value, and the tools to clean up crashed too. Such a pid names no process: the
    file is an orphan, removed as one."""
    home = _home_with_a_fact(bead_home)
    planted = home.root / ".config.yaml.9999999999-deadbeef.tmp"
    planted.write_text("x")
    for args in (("status",), ("reindex",), ("status", "--fix"), ("forget", "--yes", "project/demo/db-host")):
        r = bead(*args)
        assert r.code == 0 and "Traceback" not in r.err, (args, r.err)
    assert not planted.exists()
    with Memory(home, Config(owner="t")) as m:
        assert m.current("project/demo/db-host") is None


def test_a_key_state_with_a_number_past_any_int_is_read_as_none(bead, bead_home):
    """`{"last": 1e999}` (JSON's inf) in a key's .state.json overflowed `int()`: search, writes, the pinned block and
    MCP recall failed while `bead status` said nothing was wrong. The state is a hint: a damaged one is not used."""
    home = _home_with_a_fact(bead_home)
    (home.fact_dir("project/demo/db-host") / ".state.json").write_text('{"last": 1e999}')
    r = bead("search", "zqplm")
    assert r.code == 0 and "db-host" in r.out, r.err
    r = bead("write", "--type", "project", "project/demo/db-host", "db host is zqplm-11 now")
    assert r.code == 0, r.err
    with Memory(home, Config(owner="t")) as m:
        assert m.current("project/demo/db-host").version == 2


def test_an_audit_line_that_is_no_object_ends_no_reindex(bead, bead_home):
    """A line `[1]` in audit.log ended `bead reindex` (AttributeError) and left the index as it was."""
    home = _home_with_a_fact(bead_home)
    with home.audit_log.open("a") as f:
        f.write('[1]\n"text"\n')
    r = bead("reindex")
    assert r.code == 0 and "Traceback" not in r.err, r.err


@pytest.mark.parametrize("up", [{"pid": 99999999999, "services": {"proxy": 1}}, {"pid": 1, "services": {"dream": -1}}])
def test_an_up_file_with_a_pid_no_process_has_ends_no_status(bead, bead_home, up):
    """A pid past C's int in up.json crashed `bead status`; -1 (every process, to kill(2)) read as a running
    service. Neither is a service `bead up` runs."""
    home = _home_with_a_fact(bead_home)
    home.up_file.write_text(json.dumps(up))
    r = invoke_cli(("status", "--json"), env={"BEAD_HOME": str(bead_home)})
    assert r.code == 0, r.err
    assert "pid -1" not in r.out and "running under `bead up`" not in r.out


@pytest.mark.parametrize("odd", ["bead\ufdd0home", "bead\uffffhome", "bead\U0001fffehome"])
def test_a_path_with_a_noncharacter_is_refused_before_anything_is_written(tmp_path, odd):
    """systemd ignores a unit line holding a Unicode noncharacter (not UTF-8 clean) and XML cannot hold U+FFFE or
    U+FFFF: the units and the rc block were written and the services failed to load. Refused first, with what to do."""
    from bead.setup.install import Plan, install

    plan = Plan(platform="systemd", user_home=tmp_path, home=Home(tmp_path / odd), bead="/usr/bin/bead", listen="127.0.0.1:7077")
    with pytest.raises(BeadError, match="noncharacter") as err:
        install(plan, load=False, rc=False)
    assert "BEAD_HOME" in (err.value.hint or "")
    assert not (tmp_path / ".config").exists() and not (tmp_path / odd).exists()
