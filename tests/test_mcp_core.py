"""The core functions the MCP tools call, in process: real files, real SQLite (the servers' own tests drive
them through the transports). What needs a race or a precise store state is shown here."""

from __future__ import annotations

import threading

import pytest

from bead.config import parse
from bead.core import query
from bead.core.remember import remember_fact
from bead.core.viewer import LOCAL, Viewer
from bead.errors import BeadError, InvalidArgument, NotFound, NotPermitted, VersionConflict


def test_compare_and_swap_lets_exactly_one_of_two_racing_writers_win(mem):
    mem.write("project/shop/counter", "v1 of the counter", "project", trust="agent_observed")
    results: list[str] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        barrier.wait()
        try:
            with mem.__class__(mem.home, mem.config) as own:  # each thread its own connection, as servers do
                saved = remember_fact(
                    own, f"value from writer {i}", "project", "project/shop/counter", expected_version=1, project="shop"
                )
            results.append(saved.status)
        except VersionConflict:
            results.append("lost")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == ["lost"] * 7 + ["written"]
    assert mem.current("project/shop/counter").version == 2


def test_a_member_key_space_is_their_own(mem):
    ana, bo = Viewer.member("ana@example.com", ["shop"]), Viewer.member("bo@example.com", ["*"])
    assert ana.stored_key("user/editor") != bo.stored_key("user/editor")
    assert ana.shown_key(ana.stored_key("user/editor")) == "user/editor"
    assert bo.shown_key(ana.stored_key("user/editor")) == ana.stored_key("user/editor")
    assert LOCAL.stored_key("user/editor") == "user/editor"
    with pytest.raises(NotPermitted):
        ana.stored_key("project/billing/x")
    with pytest.raises(NotPermitted):
        ana.stored_key("global/x")
    assert bo.stored_key("project/billing/x") == "project/billing/x"  # '*': every project
    with pytest.raises(InvalidArgument):
        ana.stored_key("user/" + "a" * 95)  # no room left for the tag
    with pytest.raises(InvalidArgument):
        LOCAL.check_project("../etc")
    assert LOCAL.check_project(" Shop ") == "shop"
    # The owner on the version is checked as well as the key: a row under ana's prefix written by someone else
    # (a hand edit, say) is not hers.
    assert not ana.sees(ana.stored_key("user/editor"), "mallory@example.com")


def test_visibility_is_applied_in_sql_so_other_members_cannot_crowd_a_members_results_out(mem):
    ana = Viewer.member("ana@example.com", [])
    for i in range(60):
        mem.write(f"user/crowd-{i}", f"crowding value {i} about kiwis", "user")  # the host's own
    remember_fact(mem, "ana's note about kiwis", "user", "user/kiwi", viewer=ana)
    found = query.search_memory(mem, "kiwis", limit=5, viewer=ana)
    assert [f.key for f in found] == ["user/kiwi"]
    assert [f.key for f in query.recall(mem, "kiwis", limit=5, viewer=ana).facts] == ["user/kiwi"]
    # An agent's note is not the person's word: it is among the matches, never the pinned block.
    ctx = query.memory_context(mem, "kiwis", viewer=ana)
    assert ctx.pinned == [] and ctx.matches[:1] == ["user/kiwi@v1"]


def test_a_scope_or_project_is_applied_in_the_search_so_other_scopes_cannot_crowd_it_out(mem):
    """``recall`` narrowed to a scope, or given a project, filters in the search: a few hundred better matches of
    another project do not leave it empty (they used to fill the search's first rows and be dropped after)."""
    for i in range(300):
        mem.write(f"project/alpha/lag-{i}", f"kafka consumer lag alarm {i}: the kafka consumer lag pages", "project")
    mem.write("user/lag", "I read the consumer lag runbook before anything else.", "user")
    mem.write("project/beta/lag", "Beta's consumer lag dashboard is in Grafana.", "project")
    assert [f.key for f in query.recall(mem, "kafka consumer lag", scope="user").facts] == ["user/lag"]
    assert [f.key for f in query.recall(mem, "kafka consumer lag", scope="beta").facts] == ["project/beta/lag"]
    by_project = [f.key for f in query.recall(mem, "kafka consumer lag", project="beta").facts]
    assert sorted(by_project) == ["project/beta/lag", "user/lag"]


def test_reads_of_missing_forbidden_and_malformed_keys(mem):
    with pytest.raises(NotFound):
        query.get_memory(mem, "user/nothing")
    with pytest.raises(InvalidArgument):
        query.get_memory(mem, "user/../x")
    with pytest.raises(NotPermitted):
        query.recall(mem, "x", scope="global", viewer=Viewer.member("a@x", []))
    with pytest.raises(InvalidArgument):
        query.recall(mem, "x", scope="project/../../etc")
    assert query.recall(mem, "   ").facts == [] and query.search_memory(mem, "") == []


def test_remember_fact_refuses_an_empty_or_oversized_value_and_an_unknown_type(mem):
    with pytest.raises(InvalidArgument):
        remember_fact(mem, "  ", "project", "project/shop/x")
    with pytest.raises(InvalidArgument):
        remember_fact(mem, "x" * 70000, "project", "project/shop/x")
    with pytest.raises(InvalidArgument):
        remember_fact(mem, "x", "secret", "project/shop/x")
    assert not mem.facts.key_dir("project/shop/x").exists()


def test_mcp_settings_are_checked_like_every_other(tmp_path):
    cfg = parse("mcp:\n  projects:\n    ana@example.com: [shop, billing]\n    '*': ['*']\n")
    assert cfg.mcp.projects == {"ana@example.com": ["shop", "billing"], "*": ["*"]}
    for bad in (
        "mcp:\n  projects:\n    ana: shop\n",
        "mcp:\n  projects: [shop]\n",
        "mcp:\n  http_listen: 7078\n",
        "mcp:\n  jwks_url: file:///etc/passwd\n",
        "mcp:\n  max_concurrent: 0\n",
        # Plain http to another host: anyone on the path serves their own keys (an adversarial pass).
        "mcp:\n  jwks_url: http://idp.example.com/jwks\n",
        "mcp:\n  jwks_url: http://127.0.0.1.evil.example/jwks\n",
        # An issuer that is no URL: `<sub>@<issuer>` would read as a member's address (ana@example.com).
        "mcp:\n  issuer: example.com\n",
    ):
        with pytest.raises(BeadError):
            parse(bad)
    for good in ("https://idp.example.com/jwks", "http://127.0.0.1:9000/jwks", "http://localhost/jwks", "http://[::1]/k"):
        assert parse(f"mcp:\n  jwks_url: {good}\n").mcp.jwks_url == good


@pytest.mark.parametrize("broken", ["yaml", "too large"])
def test_get_memory_of_a_key_whose_newest_file_cannot_be_read_is_an_unreadable_error_naming_no_path(mem, broken):
    from bead.mcp.errors import failure

    mem.write("project/shop/region", "eu-west-1", "project")
    bad = mem.home.facts / "project" / "shop" / "region" / "v2.md"
    if broken == "yaml":
        bad.write_text("---\nkey: [\n---\nus-east-1\n")
    else:
        bad.write_bytes(b"---\nkey: project/shop/region\n---\n" + b"x" * (3 << 20))
    with pytest.raises(BeadError) as err:
        query.get_memory(mem, "project/shop/region", note=True)
    res, code = failure(err.value, write=False)
    body = res.structured_content
    assert code == body["code"] == "unreadable" and res.is_error
    assert "eu-west-1" not in str(body) and str(mem.home.root) not in str(body), "no older value, no path to the agent"
    assert "v2" in body["error"] and "person" in body["next"]


@pytest.mark.parametrize("expected", [7, 0])
def test_a_compare_and_swap_that_fails_says_nothing_of_a_forgotten_value(mem, expected):
    """A write refused by its own compare-and-swap was checked against the tombstones first, so an agent learned
    whether a guess was a forgotten value (`refused`) or not (`version_conflict`) without writing anything: 150
    guesses a call recovered a forgotten door code in 74 calls (an outside attack). The swap is checked first."""
    from bead.core import forget

    mem.write("project/shop/door", "The office door code is 4821", "project", trust="user_stated")
    forget.apply(mem, forget.plan_target(mem, "project/shop/door"))
    mem.write("project/shop/probe", "a first value", "project", trust="agent_observed")
    key = "project/shop/probe" if expected == 0 else "project/shop/new-probe"
    for guess in ("4821", "1234"):
        with pytest.raises(VersionConflict):
            remember_fact(mem, f"The office door code is {guess}.", "project", key, expected_version=expected, project="shop")
    assert mem.current("project/shop/new-probe") is None and mem.current("project/shop/probe").version == 1
    # A swap that holds still meets the tombstone.
    with pytest.raises(BeadError, match="forgotten or rejected"):
        remember_fact(mem, "The office door code is 4821.", "project", "project/shop/probe", expected_version=1, project="shop")
