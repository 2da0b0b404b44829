"""A value replaced mid-conversation, forgotten back to an older version, or dated ahead: what the model, the
files and the dream make of it (each case from an adversarial review of the fixes that made it reach the model)."""

from __future__ import annotations

import json

from test_proxy_behaviour import mem_of, post, req

from bead.core import forget
from bead.dream.decide import Proposal, decide
from bead.store.rawlog import Turn


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


def test_a_future_dated_value_does_not_queue_every_dream_change_for_ever(mem):
    """A value dated far ahead does not make every later dream change to the key wait for the person."""
    _write_dated(
        mem, "2099-01-01T00:00:00Z", "project/shop/db-port", "Postgres listens on 5432.", "project", trust="agent_observed"
    )
    mem.write("project/shop/db-port", "Postgres listens on 6000.", "project", trust="agent_observed")  # 2099 again
    today = Turn(
        session="s0",
        n=1,
        role="user",
        at="2026-12-06T20:00:00Z",
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
    review.reject(mem, b.id, "no", shown=cards[b.id].shown)


# ---- the replaced line in the proxy -------------------------------------------------------------------
def _cue(sent: dict) -> str:
    content = sent["messages"][-1]["content"]
    return content[-1]["text"] if isinstance(content, list) else ""


def test_a_replaced_fact_the_turn_also_matches_is_still_marked_as_replacing(proxy_client, upstream, bead_home):
    """When the turn's words match the new value too, it still says that it replaces the pinned one (a plain line,
    dated like the pinned one, did not say which of the two is current)."""
    with mem_of(bead_home) as m:
        m.write("project/proj-x/db-port", "Postgres listens on port 5432 for the shop database.", "project")
    proxy = proxy_client()
    talk = [{"role": "user", "content": "hello there, start"}]
    post(proxy, *req("", session="both", messages=talk))
    assert "5432" in json.loads(upstream.requests[-1].body)["system"][-1]["text"]
    with mem_of(bead_home) as m:
        m.write("project/proj-x/db-port", "Postgres listens on port 6543 for the shop database.", "project")
    talk += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "which port does Postgres listen on for the shop database? db-port"},
    ]
    post(proxy, *req("", session="both", messages=talk))
    cue = _cue(json.loads(upstream.requests[-1].body))
    lines = [ln for ln in cue.splitlines() if ln.startswith("- db-port ")]
    assert lines and "6543" in lines[0], cue
    assert "replaces the value shown earlier" in lines[0], cue


def test_many_replaced_pinned_facts_do_not_crowd_out_what_the_turn_needs(proxy_client, upstream, bead_home):
    """A pinned block of 40 facts all rewritten (an import): a cue block carries at most a few replaced lines, so
    the fact the turn asks about still gets in (the rest come with the next turns)."""
    filler = "with the staging settings kept as the team agreed in the planning meeting last spring for every service"
    with mem_of(bead_home) as m:
        for i in range(40):
            m.write(f"project/proj-x/svc-{i}", f"Service {i} runs on host alpha-{i} {filler}.", "project")
        m.write(
            "project/proj-x/zebra-cache",
            "The zebracache daemon listens on port 11311 behind nginx.",
            "project",
            trust="agent_observed",
        )
    proxy = proxy_client()
    talk = [{"role": "user", "content": "hello there, start"}]
    post(proxy, *req("", session="crowd", messages=talk))
    pinned = json.loads(upstream.requests[-1].body)["system"][-1]["text"]
    with mem_of(bead_home) as m:
        for i in range(40):
            if f"svc-{i} " in pinned:
                m.write(f"project/proj-x/svc-{i}", f"Service {i} runs on host beta-{i} {filler}.", "project")
    talk += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "which port does the zebracache daemon listen on?"},
    ]
    post(proxy, *req("", session="crowd", messages=talk))
    cue = _cue(json.loads(upstream.requests[-1].body))
    assert "11311" in cue, cue[:3000]


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


def test_a_replaced_fact_of_another_project_stays_out_of_this_projects_cue_block(proxy_client, upstream, bead_home):
    """A conversation whose requests move from proj-x to proj-y does not get proj-x's new value in proj-y's cue
    block, as the gate leaves another project's facts out."""
    with mem_of(bead_home) as m:
        m.write("project/proj-x/db-port", "Postgres listens on 5432.", "project")
    proxy = proxy_client()
    talk = [{"role": "user", "content": "hello there, start"}]
    post(proxy, *req("", session="moving", messages=talk))
    assert "5432" in json.loads(upstream.requests[-1].body)["system"][-1]["text"]
    with mem_of(bead_home) as m:
        m.write("project/proj-x/db-port", "Postgres listens on 6543.", "project")
    talk += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "run the tests please"}]
    body, headers = req("", session="moving", messages=talk)
    data = json.loads(body)
    data["system"] = [{"type": "text", "text": "You are a test.\n - Primary working directory: /tmp/proj-y"}]
    post(proxy, json.dumps(data).encode(), headers)
    sent = json.loads(upstream.requests[-1].body)
    assert "6543" not in json.dumps(sent["messages"][-1]), sent["messages"][-1]
