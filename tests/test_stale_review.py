"""A value replaced mid-conversation, forgotten back to an older version, or dated ahead: what the model, the
files and the dream make of it (each case from an adversarial review of the fixes that made it reach the model)."""

from __future__ import annotations

import json
import os
from datetime import UTC

import pytest
from test_proxy_behaviour import mem_of, post, req

from bead.config import Config
from bead.conversation import identify
from bead.core import forget
from bead.core.recall import Recaller
from bead.dream.decide import Proposal, decide
from bead.errors import BeadError
from bead.recall import render
from bead.store.queue import Queue
from bead.store.rawlog import Turn
from bead.wire.anthropic import conversation_of


# ---- forget back to an older version ------------------------------------------------------------------------------
def test_after_forget_then_write_only_one_version_file_says_current(mem):
    """After a forget of the newest version the one below says `current`; the next write marks it superseded again
    (the key's state said it was settled, and two files said `current`), and never reuses the forgotten number."""
    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    assert mem.current("user/shell").id == "user/shell@v2"
    mem.write("user/shell", "nu is the login shell", "user")
    kv = mem.versions("user/shell")
    says_current = [f.id for f in kv.facts if f.status == "current"]
    assert says_current == ["user/shell@v4"], says_current


@pytest.mark.parametrize("state", ["torn", "missing", "older"])
def test_a_forgotten_version_number_is_never_given_to_another_value(mem, state):
    """A forgotten version's number (its id, which a conversation's record of what it was shown, a trace and the
    audit log name) was kept only by the key's state file, which a write leaves unsynced: with that state torn,
    lost, or the one of the write before (the newest write's never reached the disk), the forget left the folder
    as the only record and the next value got the forgotten number. The forget now writes the number into the
    state and syncs it."""
    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    path = mem.home.fact_state("user/shell")
    if state == "torn":
        path.write_bytes(path.read_bytes()[:9])
    elif state == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes().replace(b'"last": 3', b'"last": 2').replace(b'"settled": 2', b'"settled": 1'))
    forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    assert mem.current("user/shell").id == "user/shell@v2"
    res = mem.write("user/shell", "nu is the login shell", "user")
    assert res.fact.version == 4, res.fact.id
    says_current = [f.id for f in mem.versions("user/shell").facts if f.status == "current"]
    assert says_current == ["user/shell@v4"], says_current


# ---- dates ahead -----------------------------------------------------------
def _write_dated(mem, stamp, *args, **kw):
    """A version written by a process whose clock ran ahead (or hand-dated): valid_from ``stamp``."""
    from datetime import datetime

    keep = mem.facts.clock
    mem.facts.clock = lambda: datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    try:
        return mem.write(*args, **kw)
    finally:
        mem.facts.clock = keep


def test_a_hand_edited_future_date_is_not_copied_onto_every_later_version(mem):
    """A date far ahead (a hand edit) is not carried on to every later version of the key."""
    _write_dated(mem, "2099-01-01T00:00:00Z", "project/shop/db-port", "Postgres listens on 5432.", "project")
    assert mem.current("project/shop/db-port").valid_from == "2099-01-01T00:00:00Z"
    mem.write("project/shop/db-port", "Postgres listens on 6543.", "project")
    mem.write("project/shop/db-port", "Postgres listens on 7000.", "project")
    assert not mem.current("project/shop/db-port").valid_from.startswith("2099"), mem.current("project/shop/db-port")


def test_a_future_dated_value_does_not_queue_every_dream_change_for_ever(mem, monkeypatch):
    """A value dated far ahead (a clock that ran ahead, a hand edit) does not make every dream change to the key
    wait for the person: the check for changes backed only by older turns ignores a date past a day ahead."""
    from datetime import datetime

    when = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    monkeypatch.setattr(mem.facts, "clock", lambda: when)
    monkeypatch.setattr(mem, "clock", lambda: when)
    _write_dated(
        mem, "2099-01-01T00:00:00Z", "project/shop/db-port", "Postgres listens on 6000.", "project", trust="agent_observed"
    )
    assert mem.current("project/shop/db-port").valid_from.startswith("2099")
    today = Turn(
        session="s0",
        n=1,
        role="user",
        at="2026-12-07T08:00:00Z",
        text="remember that Postgres listens on 6543.",
        flags={"source": "typed", "project": "shop"},
    )
    d = decide(mem, Proposal("project/shop/db-port", "project", "Postgres listens on 6543.", (1,)), [today], lambda v: None)
    assert d.action == "write", d


# ---- the review walk ------------------------------------------------------------------------------------
def test_the_walk_can_reject_the_second_item_on_a_key_after_accepting_the_first(mem):
    """Two proposals on one key in one `bead review` walk: accepting the first changes what the second would
    replace, so the second cannot be accepted on its old card, but a reject, which writes nothing over the value,
    still can be."""
    from bead.core import propose, review

    mem.write("project/shop/db-port", "Postgres listens on 5432.", "project")
    a = propose.queue(mem, "suspicious", "project/shop/db-port", "project", "Postgres listens on 5433.", "t").item
    b = propose.queue(mem, "suspicious", "project/shop/db-port", "project", "Postgres listens on 5434.", "t").item
    cards = {e.id: e for e in review.entries(mem)}
    review.accept(mem, a.id, shown=cards[a.id].shown)
    with pytest.raises(BeadError, match="the value it would replace did"):
        review.accept(mem, b.id, shown=cards[b.id].shown)
    review.reject(mem, b.id, "no", shown=cards[b.id].shown)
    assert "5433" in mem.current("project/shop/db-port").body
    assert {i.id for i in Queue(mem).items("rejected")} >= {b.id} and not [i for i in Queue(mem).items("open") if i.id == b.id]


def test_the_replacing_mark_closes_its_parenthesis_once():
    """The replacing mark sits inside the line's one parenthesis."""
    from bead.recall import render

    row = {
        "key": "project/shop/db-port",
        "trust": "user_stated",
        "valid_from": "2026-12-06T12:00:00Z",
        "body": "Postgres listens on 6543.",
    }
    line = render.replacing_line(row, "shop")
    assert line == "- db-port (stated, 2026-12-06, replaces the value shown earlier): Postgres listens on 6543.", line


# ---- the replaced line in the proxy -------------------------------------------------------------------
class _Talk:
    """One conversation through the proxy: its opening (``pinned``: the pinned block it got), then a turn at a time,
    each answering with the turn's cue block."""

    def __init__(self, proxy, upstream, session: str):
        self.proxy, self.upstream, self.session = proxy, upstream, session
        self.messages: list[dict] = [{"role": "user", "content": "hello there, start"}]
        post(proxy, *req("", session=session, messages=self.messages))
        self.pinned = self.sent()["system"][-1]["text"]

    def sent(self) -> dict:
        return json.loads(self.upstream.requests[-1].body)

    def say(self, text: str, system: str | None = None) -> str:
        self.messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": text}]
        body, headers = req("", session=self.session, messages=self.messages)
        if system is not None:
            body = json.dumps({**json.loads(body), "system": [{"type": "text", "text": system}]}).encode()
        post(self.proxy, body, headers)
        content = self.sent()["messages"][-1]["content"]
        return content[-1]["text"] if isinstance(content, list) else ""


def _write(bead_home, facts: dict[str, str], trust: str = "user_stated") -> None:
    with mem_of(bead_home) as m:
        for name, body in facts.items():
            m.write(f"project/proj-x/{name}", body, "project", trust=trust)


def test_a_replaced_fact_the_turn_also_matches_is_still_marked_as_replacing(proxy_client, upstream, bead_home):
    """When the turn's words match the new value too, it still says that it replaces the pinned one (a plain line,
    dated like the pinned one, did not say which of the two is current)."""
    _write(bead_home, {"db-port": "Postgres listens on port 5432 for the shop database."})
    talk = _Talk(proxy_client(), upstream, "both")
    assert "5432" in talk.pinned
    _write(bead_home, {"db-port": "Postgres listens on port 6543 for the shop database."})
    cue = talk.say("which port does Postgres listen on for the shop database? db-port")
    lines = [ln for ln in cue.splitlines() if ln.startswith("- db-port ")]
    assert lines and "6543" in lines[0] and "replaces the value shown earlier" in lines[0], cue


def test_many_replaced_pinned_facts_do_not_crowd_out_what_the_turn_needs(proxy_client, upstream, bead_home):
    """A pinned block of 40 facts all rewritten (an import): a cue block carries at most a few replaced lines, so
    the fact the turn asks about still gets in (the rest come with the next turns)."""
    filler = "with the staging settings kept as the team agreed in the planning meeting last spring for every service"
    _write(bead_home, {f"svc-{i}": f"Service {i} runs on host alpha-{i} {filler}." for i in range(40)})
    _write(bead_home, {"zebra-cache": "The zebracache daemon listens on port 11311 behind nginx."}, "agent_observed")
    talk = _Talk(proxy_client(), upstream, "crowd")
    _write(
        bead_home, {f"svc-{i}": f"Service {i} runs on host beta-{i} {filler}." for i in range(40) if f"svc-{i} " in talk.pinned}
    )
    cue = talk.say("which port does the zebracache daemon listen on?")
    assert "11311" in cue and cue.count("replaces the value shown earlier") <= 3, cue[:3000]


def test_a_replaced_fact_of_another_project_stays_out_of_this_projects_cue_block(proxy_client, upstream, bead_home):
    """A conversation whose requests move from proj-x to proj-y does not get proj-x's new value in proj-y's cue
    block, as the gate leaves another project's facts out."""
    _write(bead_home, {"db-port": "Postgres listens on 5432."})
    talk = _Talk(proxy_client(), upstream, "moving")
    assert "5432" in talk.pinned
    _write(bead_home, {"db-port": "Postgres listens on 6543."})
    talk.say("run the tests please", system="You are a test.\n - Primary working directory: /tmp/proj-y")
    assert "6543" not in json.dumps(talk.sent()["messages"][-1]), talk.sent()["messages"][-1]


def test_a_replaced_fact_past_replaced_max_that_the_turn_chose_is_still_marked_as_replacing(proxy_client, upstream, bead_home):
    """A replaced fact past the three a turn carries, which the turn asks about, is marked as replacing too."""
    names = ("a-port", "b-port", "c-port", "zeta-port")
    _write(
        bead_home,
        {
            n: f"The {n} service listens on port {p} on the shop host."
            for n, p in zip(names, (1111, 2222, 3333, 5432), strict=True)
        },
    )
    talk = _Talk(proxy_client(), upstream, "max")
    assert all(p in talk.pinned for p in ("1111", "2222", "3333", "5432")), talk.pinned
    _write(
        bead_home,
        {
            n: f"The {n} service listens on port {p} on the shop host."
            for n, p in zip(names, (1112, 2223, 3334, 6543), strict=True)
        },
    )
    cue = talk.say("which port does the zeta-port service listen on? zeta-port")
    lines = [ln for ln in cue.splitlines() if ln.startswith("- zeta-port ")]
    assert lines and "6543" in lines[0] and "replaces the value shown earlier" in lines[0], cue


@pytest.mark.parametrize("letters", ["ascii", "astral"])
def test_one_long_replaced_value_does_not_empty_every_later_cue_block(proxy_client, upstream, bead_home, letters):
    """A replaced value longer than the cue block's budget is cut by what it costs (rare letters cost three tokens
    each) and says how to open it whole: it fitted no block, came first again every turn, and every fact after it
    was cut for the rest of the conversation."""
    _write(bead_home, {"runbook": "The deploy runbook is short."})
    _write(
        bead_home,
        {"zebra-cache": "The zebracache daemon listens on port 11311.", "yak-queue": "The yakqueue broker listens on port 5673."},
        "agent_observed",
    )
    talk = _Talk(proxy_client(), upstream, f"long-{letters}")
    assert "runbook is short" in talk.pinned
    if letters == "ascii":
        body = "The deploy runbook, step by step: " + "run the checks then ship. " * 400
    else:
        body = "Runbook: " + " ".join("".join(chr(0x20000 + (i * 7 + j) % 5000) for j in range(6)) for i in range(400))
    _write(bead_home, {"runbook": body})
    row = {"key": "project/proj-x/runbook", "trust": "user_stated", "valid_from": "2026-12-06", "body": body}
    assert render.tokens(render.replacing_line(row, "proj-x")) <= render.REPLACING_TOKENS
    first = talk.say("which port does the zebracache daemon listen on?")
    second = talk.say("and the yakqueue broker port?")
    assert "11311" in first and "replaces the value shown earlier" in first and "the rest: get_memory" in first, first[:600]
    assert "5673" in second and "runbook" not in second, second[:600]


def test_a_failing_replaced_lookup_costs_its_lines_only_and_is_no_request_without_memory(
    proxy_client, upstream, bead_home, monkeypatch
):
    """The replaced facts' lookup failing (a busy index, the deadline) costs their lines only, not the cue block, and
    is not counted as a request that went out without memory (`bead status` said "failed open")."""
    import sqlite3

    from bead.index.db import Index

    _write(bead_home, {"zebra-cache": "The zebracache daemon listens on port 11311 behind nginx."}, "agent_observed")
    proxy = proxy_client()
    talk = _Talk(proxy, upstream, "busy")

    def busy(self, ids, project=None):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(Index, "superseded_shown", busy)
    assert "11311" in talk.say("which port does the zebracache daemon listen on?")
    counters = proxy.engine.counters
    assert counters["error.recall"] == 0 and counters["errors"] == 0, dict(counters)


# ---- forget with an odd key state; the terminal's accept; the look-ahead; a tiny budget
def _three(mem):
    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_forget_of_newest_with_a_linked_or_fifo_state_does_not_raise(mem, tmp_path, kind):
    """A key's state file that is a link or a FIFO is only a hint: a forget of the newest version goes through."""
    _three(mem)
    state = mem.home.fact_state("user/shell")
    state.unlink()
    if kind == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text(json.dumps({"last": 3, "settled": 2, "dir_mtime_ns": 0}))
        state.symlink_to(target)
    else:
        os.mkfifo(state)
    forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    assert mem.current("user/shell").id == "user/shell@v2"


def test_forget_with_a_linked_state_leaves_no_row_of_the_forgotten_value(mem, tmp_path):
    """Such a forget leaves no row of the forgotten value in the index (a raise half-way left it served)."""
    _three(mem)
    state = mem.home.fact_state("user/shell")
    state.unlink()
    (tmp_path / "x.json").write_text('{"last": 3, "settled": 2}')
    state.symlink_to(tmp_path / "x.json")
    try:
        forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    except Exception:  # noqa: BLE001, S110 - whether or not it raises, what it leaves is the point
        pass
    rows = mem.index.facts_by_id(["user/shell@v3"])
    assert rows == [], rows


def _queued(mem):
    from bead.core import propose

    mem.write("project/shop/db-port", "Postgres listens on 5432.", "project")
    return propose.queue(mem, "suspicious", "project/shop/db-port", "project", "Postgres listens on 5433.", "t").item


def test_cli_queue_accept_refuses_a_value_written_while_the_prompt_waits(bead, bead_home, monkeypatch):
    """`bead queue accept` at a terminal: a value written while the question is on the screen is not written over
    (the card is what the question showed)."""
    import click

    from bead.cli import common

    with mem_of(bead_home) as m:
        item = _queued(m)
    monkeypatch.setattr(common, "at_terminal", lambda: True)
    real = click.confirm

    def confirm_while_someone_writes(*a, **kw):
        with mem_of(bead_home) as m2:
            m2.write("project/shop/db-port", "Postgres listens on 6000 (the person, meanwhile).", "project")
        return real(*a, **kw)

    monkeypatch.setattr(click, "confirm", confirm_while_someone_writes)
    r = bead("queue", "accept", item.id, input="y\n")
    assert r.code != 0, (r.out, r.err)
    with mem_of(bead_home) as m:
        assert "6000" in m.current("project/shop/db-port").body


def test_walk_card_of_an_older_bead_fails_closed(mem):
    """A card fingerprint of another form (an older bead's: one hash) is refused by accept and by reject."""
    import hashlib

    from bead.core import review
    from bead.errors import BeadError
    from bead.store.queue import fingerprint

    item = _queued(mem)
    old = hashlib.sha256(f"{fingerprint(item)}\x00{review.replaced_id(mem, item.key)}".encode()).hexdigest()
    with pytest.raises(BeadError):
        review.accept(mem, item.id, shown=old)
    with pytest.raises(BeadError):
        review.reject(mem, item.id, "no", shown=old)


def test_a_look_ahead_pick_past_the_three_replaced_is_marked_as_replacing(mem):
    """A look-ahead pick (rerank.mode async) that is a replaced key past the three a turn is marked as replacing."""
    for name, port in (("a-port", 1111), ("b-port", 2222), ("c-port", 3333), ("zeta-port", 5432)):
        mem.write(f"project/proj-x/{name}", f"The {name} service listens on port {port} on the shop host.", "project")
    shown = {f"project/proj-x/{n}@v1" for n in ("a-port", "b-port", "c-port", "zeta-port")}
    for name, port in (("a-port", 1112), ("b-port", 2223), ("c-port", 3334), ("zeta-port", 6543)):
        mem.write(f"project/proj-x/{name}", f"The {name} service listens on port {port} on the shop host.", "project")
    row = mem.index.facts_by_id(["project/proj-x/zeta-port@v2"])[0]
    data = {
        "model": "m",
        "max_tokens": 5,
        "system": "You help.\n - Primary working directory: /home/dev/src/proj-x",
        "messages": [{"role": "user", "content": "please run the unit tests now"}],
    }
    conv = conversation_of(data, {})
    ident = identify({}, conv, None)
    cue = Recaller(Config()).recall_for(mem, conv, ident, shown, 5.0, ahead=[row], pinned=frozenset(shown))
    assert "project/proj-x/zeta-port@v2" in cue.ids, cue.ids
    lines = [ln for ln in (cue.text or "").splitlines() if "6543" in ln]
    assert lines and render.REPLACES in lines[0], cue.text


def test_a_replacing_line_under_a_budget_that_holds_only_its_key_and_mark_says_to_open_it():
    """A cue budget so small that the key and the mark fill a line's share: the value is not sent whole (it came back
    uncut and fitted no block), the line says to open it."""
    row = {"key": "project/p/runbook", "trust": "user_stated", "valid_from": "2026-12-06T00:00:00Z", "body": "step " * 2000}
    line = render.replacing_line(row, "p", max_tokens=20)
    assert "step step" not in line and "get_memory" in line and render.tokens(line) < 40


# ---- the index behind the files ---------------------------------------------------------------------------------
def _behind(bead_home, name: str, body: str) -> None:
    """A new version written as `bead write` writes it, whose index update did not happen (it met a locked index
    past the busy timeout; or the file was copied in while no indexer ran): the index still calls the old current."""
    with mem_of(bead_home) as m:
        m.facts.write(f"project/proj-x/{name}", body, "project", trust="user_stated")
        assert body not in m.index.fact_bodies(f"project/proj-x/{name}"), "the index did not see it"


def test_a_value_the_index_has_not_caught_up_with_is_served_nowhere(proxy_client, upstream, bead_home, bead):
    """The file is the commit, and the index follows; until it does, the row it calls current holds a value the
    person replaced. The pinned block, the cue block, the agent's recall and search leave it out, and `bead search`
    shows it as replaced."""
    from bead.core import query

    _write(bead_home, {"zebra-cache": "The zebracache daemon listens on port 11311 behind nginx."}, "agent_observed")
    _write(bead_home, {"yak-queue": "The yakqueue broker listens on port 5673 behind nginx."})
    _write(bead_home, {"gnu-mail": "The gnumail relay listens on port 2525 behind nginx."})
    talk = _Talk(proxy_client(), upstream, "lag")
    assert "11311" not in talk.pinned and "5673" in talk.pinned, "an inferred fact is no pinned one"
    _behind(bead_home, "zebra-cache", "The zebracache daemon listens on port 22422 behind nginx.")
    _behind(bead_home, "yak-queue", "The yakqueue broker listens on port 7777 behind nginx.")
    cue = talk.say("which port does the zebracache daemon listen on? zebra-cache")
    assert "11311" not in cue and "zebra-cache" not in cue, cue
    # A version file gone with its row left (a forget or seal stopped before its index step) is not served either.
    with mem_of(bead_home) as m:
        m.home.fact_file("project/proj-x/gnu-mail", 1).unlink()
    fresh = _Talk(talk.proxy, upstream, "lag-2")
    assert "5673" not in fresh.pinned and "2525" not in fresh.pinned, fresh.pinned
    with mem_of(bead_home) as m:
        found = query.recall(m, "zebracache daemon port")
        assert "11311" not in (found.text or "") and not [f for f in found.facts if f.id.endswith("zebra-cache@v1")], found.text
        assert [f.id for f in query.search_memory(m, "zebracache daemon")] == []
        assert "22422" in query.get_memory(m, "project/proj-x/zebra-cache").value, "get_memory reads the files"
    out = bead("search", "zebracache", "--facts", "--json")
    assert out.code == 0, out.err
    (row,) = json.loads(out.out)["facts"]
    assert row["id"] == "project/proj-x/zebra-cache@v1" and row["current"] is False and row["status"] == "superseded"


def test_a_fact_whose_version_file_is_gone_is_not_pointed_to(proxy_client, upstream, bead_home):
    """A pointer's title is its value's first words: a row whose file a stopped forget or seal removed is not
    pointed to either."""
    _write(bead_home, {f"svc-{i}": f"The service number {i} relay runs on host h{i}." for i in range(3)}, "agent_observed")
    talk = _Talk(proxy_client(), upstream, "pointed")
    with mem_of(bead_home) as m:
        m.home.fact_file("project/proj-x/svc-0", 1).unlink()
    cue = talk.say("how is the relay set up?")
    assert "- svc-" in cue and "svc-0" not in cue, cue


def test_a_forget_whose_number_cannot_be_kept_deletes_nothing_and_the_number_is_never_reused(mem, monkeypatch):
    """A review: the forget's record of the number was written in place (truncate, then write), so a full disk or
    a kill between the two left an empty state and the next value took the forgotten number. The record is now
    written whole or not at all, before any version goes: a disk that refuses it stops the forget there."""
    import errno

    from bead.store import facts as facts_mod

    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    state = mem.home.fact_state("user/shell")
    state.write_text('{"last": 2, "settled": 1}')  # the newest write's state never reached the disk
    real = facts_mod.safe.write_at

    def full(dir_fd, path, data, *a, **kw):
        if path.name == ".state.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(dir_fd, path, data, *a, **kw)

    monkeypatch.setattr(facts_mod.safe, "write_at", full)
    with pytest.raises(Exception, match="No space left|space"):
        forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    assert mem.home.fact_file("user/shell", 3).exists(), "nothing deleted before the number is kept"
    assert json.loads(state.read_text())["last"] == 2, "the old state stays whole"
    monkeypatch.setattr(facts_mod.safe, "write_at", real)
    forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    assert mem.write("user/shell", "nu is the login shell", "user").fact.version == 4


@pytest.mark.parametrize("fault", ["full disk", "killed"])
def test_a_forget_of_the_newest_version_keeps_its_number_whatever_happens_after(mem, monkeypatch, fault):
    """A second review: after ordinary writes the state already said `last: 3`, so the forget wrote no record, and
    then rewrote the state in place (truncate, write) to lower `settled`; a full disk or a kill between the two left
    it empty and the next value took `user/shell@v3` again. The forget now writes the state whole before it deletes
    and never rewrites it in place after."""
    from bead.store import facts as facts_mod

    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    real = os.pwrite

    def broken(fd, data, offset):
        if not mem.home.fact_file("user/shell", 3).exists():
            raise OSError(28, "No space left on device") if fault == "full disk" else KeyboardInterrupt
        return real(fd, data, offset)

    monkeypatch.setattr(facts_mod.os, "pwrite", broken)
    try:
        forget.apply(mem, forget.plan_target(mem, "user/shell@v3"))
    except (OSError, KeyboardInterrupt):
        pass
    monkeypatch.setattr(facts_mod.os, "pwrite", real)
    assert not mem.home.fact_file("user/shell", 3).exists()
    assert json.loads(mem.home.fact_state("user/shell").read_text())["last"] == 3
    res = mem.write("user/shell", "nu is the login shell", "user")
    assert res.fact.version == 4, res.fact.id
    assert [f.id for f in mem.versions("user/shell").facts if f.status == "current"] == ["user/shell@v4"]


def test_the_pinned_block_checks_only_the_rows_its_budget_holds(mem, monkeypatch):
    """A review: every candidate of the pinned block was checked against the files (286 at the default budget,
    about 12 ms at 3,000 facts), not the few dozen that fit; a stale one still gives its place to the next."""
    from bead.core import pinned
    from bead.core.memory import Memory

    for i in range(120):
        mem.write(f"project/shop/rule-{i:03d}", f"Rule {i}: the shop's services keep setting {i} as agreed.", "project")
    checked: list[int] = []
    real = Memory.behind

    def counting(self, rows):
        rows = list(rows)
        checked.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(Memory, "behind", counting)
    text, ids, _ = pinned.standing_memory(mem, "shop", 400)
    assert ids and sum(checked) <= len(ids) + 1, (checked, len(ids))
    mem.facts.write(
        "project/shop/" + ids[0].split("/")[-1].split("@")[0], "Replaced, not indexed.", "project", trust="user_stated"
    )
    checked.clear()
    text2, ids2, _ = pinned.standing_memory(mem, "shop", 400)
    assert ids[0] not in ids2 and len(ids2) == len(ids), (ids, ids2)
    assert set(ids2) - set(ids), "the next candidate took its place"


@pytest.mark.parametrize(
    ("target", "writes"),
    [("user/shell", 0), ("user/shell@v1", 0), ("user/shell@v3", 1)],
    ids=["the-whole-key", "an-older-version", "the-newest"],
)
def test_a_forget_syncs_the_keys_state_only_when_the_newest_version_goes_and_another_stays(mem, monkeypatch, target, writes):
    """A third review: every forget wrote and synced each key's state (613 fsyncs for a `--match` over 300 keys), also
    where the key goes whole (its state with it) or its newest stays (whose number the folder keeps)."""
    from bead.store import facts as facts_mod

    for v in ("bash", "zsh", "fish"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    kept: list[int] = []
    real = facts_mod._KeyState.keep
    monkeypatch.setattr(facts_mod._KeyState, "keep", lambda self, *a: (kept.append(self.last), real(self, *a))[1])
    forget.apply(mem, forget.plan_target(mem, target))
    assert len(kept) == writes, kept


@pytest.mark.parametrize("state", ["missing", "torn", "older"])
def test_a_whole_key_forget_that_keeps_a_file_it_cannot_read_still_keeps_the_numbers(mem, state):
    """A fourth review: `bead forget KEY` of v1-v5 keeps a v2 it cannot take for the key's (a hand-broken file), so
    the folder's top drops to 2, and with the state missing, torn or an older write's the next value took @v3."""
    for v in ("sh", "bash", "zsh", "fish", "nu"):
        mem.write("user/shell", f"{v} is the login shell", "user")
    mem.home.fact_file("user/shell", 2).write_text("---\nkey: user/shell\nversion: 2\n: broken [yaml\n---\nbash\n")
    path = mem.home.fact_state("user/shell")
    if state == "missing":
        path.unlink()
    elif state == "torn":
        path.write_bytes(path.read_bytes()[:7])
    else:
        path.write_text('{"last": 4, "settled": 3}')
    forget.apply(mem, forget.plan_target(mem, "user/shell"))
    assert mem.home.fact_file("user/shell", 2).exists(), "a file forget cannot take for the key's stays"
    assert mem.write("user/shell", "fish again", "user").fact.version == 6
