"""A conversation's state file (bead.core.state) as the proxy reads it on every request: whole each time, but parsed
only from where this process stopped last time, when the bytes before are the same bytes."""

from __future__ import annotations

import json
import re

import pytest

from bead import files as safe
from bead.core.state import Conversations, ConversationState, CueRecord
from bead.paths import Home


def test_a_load_parses_only_the_lines_added_since_the_last(bead_home, monkeypatch):
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "c1")
    st.set_pinned("the pinned block", ["user/a@v1"])
    for i in range(20):
        st.add_cue(i, f"h{i}", f"cue {i}", [f"project/x/f{i}@v1"])
    assert ConversationState.load(home, "c1").cues[(19, "h19")].text == "cue 19"
    applied: list[str] = []
    real = ConversationState._apply
    monkeypatch.setattr(ConversationState, "_apply", lambda self, line: applied.append(line) or real(self, line))
    # Another worker appends one record.
    safe.append_line(
        home.session_state("c1"),
        json.dumps({"kind": "cue", "message": 20, "hash": "h20", "text": "cue 20", "ids": []}),
        root=home.root,
    )
    got = ConversationState.load(home, "c1")
    assert len(applied) == 1 and got.cues[(20, "h20")].text == "cue 20"
    assert got.pinned == "the pinned block" and len(got.cues) == 21 and "project/x/f3@v1" in got.injected


def test_a_forget_that_rewrites_the_file_is_seen_at_once(bead_home):
    """Forget scrubs a cue block's text from the file: the next load never serves it from what it parsed before."""
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "c2")
    st.add_cue(0, "h0", "the staging password hint is tulip", ["project/x/pw@v1"])
    st.add_cue(1, "h1", "the build uses make", ["project/x/build@v1"])
    assert ConversationState.load(home, "c2").cues[(0, "h0")].text  # parsed and kept
    removed = Conversations(home).scrub([home.session_state("c2")], lambda line: "tulip" in line)
    assert removed == 1
    again = ConversationState.load(home, "c2")
    assert (0, "h0") not in again.cues and again.cues[(1, "h1")].text == "the build uses make"
    assert "project/x/pw@v1" not in again.injected


def test_a_callers_change_never_reaches_the_next_load(bead_home):
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "c3")
    st.set_capturing("b1", 2, False, 1)
    first = ConversationState.load(home, "c3")
    assert first.capturing is not None
    first.capturing["remember"] = None  # what set_remembered does in memory
    first.cues[(7, "h7")] = CueRecord(7, "h7", "a block only this caller has")
    second = ConversationState.load(home, "c3")
    assert second.capturing == {"batch": "b1", "upto": 2, "partial": False, "remember": 1} and (7, "h7") not in second.cues


def test_a_line_being_written_is_read_but_not_kept_as_parsed(bead_home):
    """The last line without its newline yet (another process mid-write) counts when whole JSON, and is parsed
    again once complete."""
    home = Home(bead_home).ensure()
    path = home.session_state("c4")
    path.parent.mkdir(parents=True, exist_ok=True)
    whole = json.dumps({"kind": "captured", "upto": 3})
    path.write_text(json.dumps({"kind": "captured", "upto": 1}) + "\n" + whole[:10])
    assert ConversationState.load(home, "c4").captured == 1
    path.write_text(json.dumps({"kind": "captured", "upto": 1}) + "\n" + whole + "\n")
    assert ConversationState.load(home, "c4").captured == 3


def test_a_record_holding_a_line_separator_stays_one_record_and_a_forget_removes_it_whole(bead_home):
    """U+2028 (and U+2029, U+0085) inside a cue's text is written raw (JSON with ensure_ascii=False); only a newline
    ends a record, so the cue is read back whole and a forget's rewrite drops all of it."""
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "c5")
    st.add_cue(0, "h0", "the vault code\u2028is 4471\u2029and\u0085more", ["project/x/vault@v1"])
    st.add_cue(1, "h1", "the build uses make", ["project/x/build@v1"])
    got = ConversationState.load(home, "c5")
    assert got.cues[(0, "h0")].text == "the vault code\u2028is 4471\u2029and\u0085more"
    assert Conversations(home).scrub([home.session_state("c5")], lambda line: "project/x/vault@v1" in line) == 1
    raw = home.session_state("c5").read_bytes()
    assert not re.search(rb"(?<![0-9a-f])4471(?![0-9a-f])", raw) and b"vault" not in raw  # not inside a hex digest
    assert sorted(ConversationState.load(home, "c5").cues) == [(1, "h1")]


def test_a_cue_record_changed_by_a_caller_never_reaches_the_next_load(bead_home):
    home = Home(bead_home).ensure()
    ConversationState.load(home, "c6").add_cue(0, "h0", "the build uses make", ["project/x/build@v1"])
    a = ConversationState.load(home, "c6")
    a.cues[(0, "h0")].ids.append("project/x/other@v1")
    a.cues[(0, "h0")].text = "a caller's own text"
    b = ConversationState.load(home, "c6")
    assert b.cues[(0, "h0")].text == "the build uses make" and b.cues[(0, "h0")].ids == ["project/x/build@v1"]


@pytest.mark.parametrize(
    "record",
    [
        '{"kind": "cue", "message": Infinity, "text": "x"}',
        '{"kind": "captured", "upto": 1e400}',
        "[" * 100000,
        '{"kind": "carried", "from": "OTHER", "ids": 5}',
    ],
)
def test_a_malformed_record_is_skipped_whole(bead_home, record):
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "c7")
    st.carry("FIRST", ["project/x/a@v1"], [])
    safe.append_line(home.session_state("c7"), record, root=home.root)
    st.set_captured(2)
    got = ConversationState.load(home, "c7")
    assert got.captured == 2 and got.carried_from == "FIRST" and got.carried_ids == ["project/x/a@v1"]


def test_the_first_requests_project_decides_the_bare_names_for_good_and_an_older_file_keeps_them(bead_home):
    """claim_names records the first request's project (or none) once, in a record of its own that a forget's
    scrub of the pinned record leaves; another project, or none first, gets full keys; a state file from before
    that record keeps the bare names; a chain's step inherits its step before's."""
    home = Home(bead_home).ensure()
    st = ConversationState.load(home, "p1")
    assert st.claim_names("shop")
    st.set_pinned("- db-port (stated, 2026-11-20): 5433", ["project/shop/db-port@v1"])
    again = ConversationState.load(home, "p1")
    assert again.claim_names("shop") and not again.claim_names("blog") and not again.claim_names(None)
    Conversations(home).scrub([home.session_state("p1")], lambda line: "db-port" in line)
    scrubbed = ConversationState.load(home, "p1")
    assert not scrubbed.has_pinned and not scrubbed.claim_names("blog") and scrubbed.claim_names("shop")
    none = ConversationState.load(home, "p2")
    assert not none.claim_names(None)  # no project then: full keys, and so on (one project or another)
    assert not ConversationState.load(home, "p2").claim_names("blog")
    unplaced = ConversationState.load(home, "p4")
    assert not unplaced.claim_names("shop", fresh=False)  # a chain's step this proxy cannot place
    step = ConversationState.load(home, "p5")
    step.carry("p1", [], [])
    step.inherit_names(ConversationState.load(home, "p1"))
    assert step.claim_names("shop") and not step.claim_names("blog")
    safe.append_line(home.session_state("p3"), json.dumps({"kind": "pinned", "text": "old", "ids": []}), root=home.root)
    old = ConversationState.load(home, "p3")
    assert old.has_pinned and old.claim_names("shop") and old.claim_names("blog") and not old.claim_names(None)


def test_a_damaged_logged_list_is_passed_over_entry_by_entry(bead_home):
    """A state line's ``logged`` list (which messages a capture logged) with entries of another shape, from a
    damaged or hand-edited file: those entries are passed over, the rest kept, and capture goes on."""
    home = Home(bead_home).ensure()
    path = home.session_state("c9")
    path.parent.mkdir(parents=True, exist_ok=True)
    bad = [["not-an-int", "h"], [1, "a", "b"], [True, "x"], "str", [2, "h2"]]
    lines = [
        {"kind": "capturing", "batch": "b1", "upto": 3, "partial": False, "remember": None, "logged": bad},
        {"kind": "captured", "upto": 3, "partial": False, "logged": bad},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    st = ConversationState.load(home, "c9")
    assert st.captured == 3 and st.logged == {(2, "h2")}
    st.set_capturing("b2", 4, logged=[(3, "h3")])
    st.set_captured(4, logged=[(3, "h3")])
    assert ConversationState.load(home, "c9").logged == {(2, "h2"), (3, "h3")}
