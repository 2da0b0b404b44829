"""Cues of a turn (bead/recall/cues.py), read from conversations parsed as the proxy parses them."""

from __future__ import annotations

from bead.recall.cues import (
    CUT_LINE_CHARS,
    TOOL_RESULT_CHARS,
    TOOL_RESULT_TAIL,
    TOOL_RESULTS_CHARS,
    USER_TEXT_CHARS,
    Cue,
    clipped,
    extract,
)
from bead.wire.anthropic import conversation_of


def cues_of(*messages: dict, system: str | None = None) -> list[Cue]:
    data: dict = {"model": "m", "max_tokens": 5, "messages": list(messages)}
    if system is not None:
        data["system"] = system
    return extract(conversation_of(data, {}))


def user(*content) -> dict:
    return {"role": "user", "content": content[0] if len(content) == 1 and isinstance(content[0], str) else list(content)}


def assistant(*content) -> dict:
    return {"role": "assistant", "content": content[0] if len(content) == 1 and isinstance(content[0], str) else list(content)}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def tool_use(name: str, input: dict, id: str = "toolu_1") -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def tool_result(content, id: str = "toolu_1", is_error: bool = False) -> dict:
    return {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}


def by_source(cues: list[Cue], source: str) -> list[str]:
    return [c.text for c in cues if c.source == source]


def test_typed_text_of_newest_user_message_is_a_user_cue_of_weight_one():
    """The newest user message's typed text becomes one `user` cue weighing 1.0."""
    cues = cues_of(
        user("an older question about redis"), assistant("an answer"), user(text("why does the kafka consumer lag alarm fire?"))
    )
    users = [c for c in cues if c.source == "user"]
    assert [c.text for c in users] == ["why does the kafka consumer lag alarm fire?"]
    assert users[0].weight == 1.0


def test_string_content_of_user_message_is_a_user_cue():
    """A user message whose content is a plain string gives the same `user` cue as a text block."""
    assert by_source(cues_of(user("deploy the billing service")), "user") == ["deploy the billing service"]


def test_each_source_has_its_documented_weight():
    """Cue weights follow the reference design: user 1, assistant and tool input 0.6, tool output 0.3."""
    cues = cues_of(
        assistant(text("Running the tests."), tool_use("Bash", {"command": "pytest -x"})),
        user(tool_result("1 failed"), text("what broke?")),
    )
    weights = {c.source: c.weight for c in cues}
    assert weights == {"user": 1.0, "assistant": 0.6, "tool_input": 0.6, "tool_output": 0.3}


def test_tool_result_text_is_a_tool_output_cue():
    """A tool_result in the newest user message becomes a `tool_output` cue with its text."""
    cues = cues_of(
        assistant(tool_use("Bash", {"command": "make"})),
        user(tool_result([{"type": "text", "text": "error: undefined symbol ledger_open"}])),
    )
    assert by_source(cues, "tool_output") == ["error: undefined symbol ledger_open"]


def test_a_long_tool_output_keeps_its_start_and_its_end():
    """A tool result longer than TOOL_RESULT_CHARS keeps its first lines and its last TOOL_RESULT_TAIL characters
    or so (a traceback ends with the exception, a test run with its failures), not its middle, each cut at a line
    break, and stays within TOOL_RESULT_CHARS and the line break between the two."""
    lines = [f"line {i:05d} of the build log" for i in range(400)] + ["error: undefined symbol ledger_open"]
    long = "\n".join(lines)
    assert len(long) > TOOL_RESULT_CHARS
    cues = cues_of(assistant(tool_use("Bash", {"command": "make"})), user(tool_result(long)))
    (out,) = by_source(cues, "tool_output")
    kept = out.split("\n")
    assert set(kept) <= set(lines), "every line kept is whole: no word cut in two at either cut"
    at = [lines.index(x) for x in kept]
    gap = next(i for i in range(1, len(at)) if at[i] != at[i - 1] + 1)
    head, tail = kept[:gap], kept[gap:]
    assert head == lines[: len(head)] and tail == lines[-len(tail) :], "the start and the end, nothing between"
    assert "line 00200 of the build log" not in kept
    assert len(out) <= TOOL_RESULT_CHARS + 1
    assert len("\n".join(tail)) >= TOOL_RESULT_TAIL - CUT_LINE_CHARS


def test_a_huge_paste_of_the_persons_keeps_its_start_and_its_end_within_the_bound():
    """A person's text of megabytes (a pasted log or file) is a cue of its start and its end, at most
    USER_TEXT_CHARS and the line break between them: the question at either end stays, and the recall step's work
    no longer grows with the paste (a 30 MB one took it past the proxy's deadline)."""
    middle = "".join(f"row {i:07d} status=ok\n" for i in range(200_000))  # about 4 MB
    paste = "why does the ledger export hang?\n" + middle + "and the flower port is wrong too"
    (out,) = by_source(cues_of(user(paste)), "user")
    assert len(out) <= USER_TEXT_CHARS + 1
    assert out.startswith("why does the ledger export hang?") and out.endswith("and the flower port is wrong too")
    assert "row 0100000 " not in out
    within = ("why does the ledger export hang? " * 600)[:USER_TEXT_CHARS].strip()
    assert by_source(cues_of(user(within)), "user") == [within], "a text within the bound is the cue as it is"


def test_a_paste_sent_as_hundreds_of_blocks_is_bounded_as_a_whole_and_the_typed_question_kept():
    """The bound holds for all of the message's texts together, not each: a paste of 882 blocks of 19,000
    characters (16 MB) gave the recall step 16 MB of cues, past its deadline. The typed words come first, wherever
    they stand; tool results, and the answer before the message (a Write call's file), are bounded the same way."""
    block = "".join(f"row {i:07d} status=ok\n" for i in range(900))  # about 19,000 characters
    paste = [text(block) for _ in range(300)]
    question = "why does the ledger export hang on the flower port?"
    big_call = tool_use("Write", {"file_path": "/tmp/x.py", "content": block * 50})
    results = [tool_result(block, id=f"toolu_{i}") for i in range(300)]
    cues = cues_of(assistant(text(block * 50), big_call), user(*paste, *results, text(question)))
    users = by_source(cues, "user")
    assert question in users, "the typed question is kept, though it comes after the paste"
    assert sum(map(len, users)) <= USER_TEXT_CHARS + len(paste) + 1
    assert sum(map(len, by_source(cues, "tool_output"))) <= TOOL_RESULTS_CHARS + 300
    answer = by_source(cues, "assistant") + by_source(cues, "tool_input")
    assert sum(map(len, answer)) <= USER_TEXT_CHARS + 2


def test_a_cut_moves_to_a_line_break_only_nearby():
    """With no line break within CUT_LINE_CHARS of a cut, the cut stays where it is: the parts keep their size."""
    blob = "x" * (3 * TOOL_RESULT_CHARS)
    out = clipped(blob)
    assert out == "x" * (TOOL_RESULT_CHARS - TOOL_RESULT_TAIL) + "\n" + "x" * TOOL_RESULT_TAIL


def test_a_tool_output_of_the_limit_is_whole_and_one_more_is_cut():
    """A tool result of exactly TOOL_RESULT_CHARS characters is the cue as it is; one character more and it is
    the start and the end."""
    exact = ("word " * TOOL_RESULT_CHARS)[:TOOL_RESULT_CHARS]
    assert clipped(exact) == exact
    longer = exact + "z"
    out = clipped(longer)
    assert out != longer and out.endswith("z") and out.startswith("word word") and "\n" in out
    assert len(out) <= TOOL_RESULT_CHARS + 1


def test_an_unclosed_reminder_or_bead_block_at_a_tool_outputs_end_is_not_a_cue():
    """A harness reminder or bead's own block whose closing tag a long output lost (cut off) is not the turn's
    words: from its opening tag on, nothing of it is a cue, at the end of a long result as at the start."""
    passed = "\n".join(f"tests/test_api.py::test_page_{i} PASSED" for i in range(60))
    for tail in (
        "<system-reminder>Flower is not answering on port 5555",
        '<bead-memory kind="recall">\n- celery-flower (inferred): Flower shows the queues on port 5555',
    ):
        cues = cues_of(assistant(tool_use("Bash", {"command": "pytest -q"})), user(tool_result(passed + "\n" + tail)))
        (out,) = by_source(cues, "tool_output")
        assert "Flower" not in out and "5555" not in out
        assert out.startswith("tests/test_api.py::test_page_0 PASSED")
    typed = cues_of(user("what failed? <system-reminder>Flower port 5555"))
    assert by_source(typed, "user") == ["what failed?"]


def test_a_tool_output_within_the_limit_is_whole():
    """A tool result of TOOL_RESULT_CHARS characters or fewer is the cue as it is, nothing dropped or added."""
    whole = "\n".join(f"line {i:05d} of the build log" for i in range(TOOL_RESULT_CHARS // 28))
    assert len(whole) <= TOOL_RESULT_CHARS
    cues = cues_of(assistant(tool_use("Bash", {"command": "make"})), user(tool_result(whole)))
    assert by_source(cues, "tool_output") == [whole]


def test_empty_tool_result_gives_no_cue():
    """A tool result with no text gives no `tool_output` cue."""
    cues = cues_of(assistant(tool_use("Bash", {"command": "true"})), user(tool_result("")))
    assert by_source(cues, "tool_output") == []


def test_assistant_text_before_the_user_message_is_an_assistant_cue():
    """The text of the assistant message right before the newest user message gives `assistant` cues."""
    cues = cues_of(user("start"), assistant(text("The ledger migration needs a lock.")), user("go on"))
    assert by_source(cues, "assistant") == ["The ledger migration needs a lock."]


def test_tool_input_cue_holds_string_values_without_field_names():
    """A tool call gives a `tool_input` cue of its name and its input's string values (nested too), without field
    names."""
    call = tool_use(
        "Bash",
        {
            "command": "pytest tests/test_pricing.py",
            "description": "pricing suite",
            "timeout": 120,
            "options": {"env": ["PYTHONHASHSEED"], "verbose": True},
        },
    )
    cues = cues_of(assistant(call), user(tool_result("ok")))
    (inp,) = by_source(cues, "tool_input")
    assert inp.split() == ["Bash", "pytest", "tests/test_pricing.py", "pricing", "suite", "PYTHONHASHSEED"]
    for field_name in ("command", "description", "timeout", "options", "env", "verbose"):
        assert field_name not in inp


def test_tool_call_without_string_values_gives_its_name_alone():
    """A tool call whose input holds no strings gives a `tool_input` cue of its name only."""
    cues = cues_of(assistant(tool_use("Counter", {"n": 3, "flag": False})), user(tool_result("3")))
    assert by_source(cues, "tool_input") == ["Counter"]


def test_system_messages_between_are_skipped():
    """Harness system messages between the assistant message and the user message do not hide the assistant's cues."""
    cues = cues_of(
        user("start"),
        assistant(text("Checking the cron schedule.")),
        {"role": "system", "content": "harness note"},
        {"role": "system", "content": "another note"},
        user("and then?"),
    )
    assert by_source(cues, "assistant") == ["Checking the cron schedule."]
    assert all("note" not in c.text for c in cues)


def test_only_the_assistant_message_right_before_counts():
    """An assistant message before an earlier turn gives no cues; the newest turn's user messages in a row do."""
    cues = cues_of(assistant(text("An old remark about nginx.")), user("first"), assistant(text("ok")), user("second"))
    assert by_source(cues, "assistant") == ["ok"]
    assert by_source(cues, "user") == ["second"]
    cues = cues_of(assistant(text("An old remark about nginx.")), user("first"), user("second"))
    assert by_source(cues, "assistant") == ["An old remark about nginx."]
    assert by_source(cues, "user") == ["first", "second"]


def test_system_reminder_never_becomes_a_cue():
    """`<system-reminder>` blocks in user text, tool output and assistant text are not cue text."""
    reminder = "<system-reminder>TodoWrite reminder zanzibar</system-reminder>\n"
    cues = cues_of(
        assistant(text(reminder + "Looking at the parser.")),
        user(tool_result(reminder + "parser.py:12 SyntaxError"), text(reminder + "fix the parser")),
    )
    assert cues, "the turn has cues"
    assert by_source(cues, "user") == ["fix the parser"]
    assert by_source(cues, "tool_output") == ["parser.py:12 SyntaxError"]
    assert by_source(cues, "assistant") == ["Looking at the parser."]
    assert all("zanzibar" not in c.text and "system-reminder" not in c.text for c in cues)


def test_bead_memory_block_never_becomes_a_cue():
    """A `<bead-memory>` block bead injected earlier is not cue text, in a text block of its own or inline."""
    block = '<bead-memory kind="recall">\nMemory bead retrieved.\n- global/vault: the code is quokka\n</bead-memory>'
    cues = cues_of(user(text("open the vault"), text(block)))
    assert by_source(cues, "user") == ["open the vault"]
    cues = cues_of(user(block + "\n\nopen the vault"))
    assert by_source(cues, "user") == ["open the vault"]
    cues = cues_of(assistant(tool_use("Read", {"file_path": "a"})), user(tool_result(block + "\nfile body")))
    assert by_source(cues, "tool_output") == ["file body"]


def test_bead_memory_block_in_tool_input_never_becomes_a_cue():
    """A `<bead-memory>` block copied into a tool call's input is not `tool_input` cue text."""
    block = '<bead-memory kind="recall">\n- global/vault: the code is quokka\n</bead-memory>\n'
    cues = cues_of(
        assistant(tool_use("Write", {"file_path": "notes.md", "content": block + "my notes"})), user(tool_result("written"))
    )
    (inp,) = by_source(cues, "tool_input")
    assert "quokka" not in inp and "bead-memory" not in inp


def test_no_user_message_gives_no_cues():
    """A conversation without any user message gives no cues."""
    assert cues_of() == []
    assert cues_of(assistant(text("Hello, I can help with the kafka alarm."))) == []
    assert cues_of({"role": "system", "content": "cwd: /tmp"}) == []


def test_trailing_assistant_prefill_is_skipped():
    """An assistant prefill after the newest user message neither hides it nor becomes a cue."""
    cues = cues_of(user("list the open incidents as JSON"), assistant('{"incidents": ['))
    assert by_source(cues, "user") == ["list the open incidents as JSON"]
    assert all('incidents"' not in c.text for c in cues)
    assert by_source(cues, "assistant") == []


def test_extract_at_an_explicit_index():
    """`extract(conv, index)` gives the cues of that message and the assistant message before it."""
    conv = conversation_of(
        {
            "messages": [
                assistant(text("Earlier remark on grafana.")),
                user("first question"),
                assistant(text("Later remark.")),
                user("second question"),
            ]
        },
        {},
    )
    cues = extract(conv, 1)
    assert by_source(cues, "user") == ["first question"]
    assert by_source(cues, "assistant") == ["Earlier remark on grafana."]


def test_images_and_documents_give_no_cue_text():
    """A pasted image or document carries no text and gives no cue; the typed text beside it does."""
    cues = cues_of(
        user(
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
            text("what is on this screenshot?"),
        )
    )
    assert [(c.source, c.text) for c in cues] == [("user", "what is on this screenshot?")]


def test_a_tool_calls_cue_holds_the_tools_name_beside_its_arguments():
    """The tool's name is the action a rule may name ("don't edit a migration that is on main"): an Edit call's cue
    holds "Edit" with the path and strings it was given (evals/grids/tool-name.yaml chose it)."""
    cues = cues_of(
        assistant(tool_use("Edit", {"file_path": "migrations/versions/8e2d_credit_notes.py", "old_string": "reson"})),
        user(tool_result("The file has been updated.")),
    )
    (call,) = by_source(cues, "tool_input")
    assert call.split()[0] == "Edit" and "migrations" in call and "reson" in call


def test_user_messages_in_a_row_are_one_turn():
    """The APIs read consecutive user messages as one turn: the person's words, then an image or the harness's reminder
    in a message of its own, are the newest turn's cues, and the answer before the first of them too (only the last
    message was read, so such a turn asked recall nothing)."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    for after in (user(image), user("<system-reminder>\nThe user opened src/app.py.\n</system-reminder>")):
        cues = cues_of(
            user("older question"),
            assistant(text("Earlier remark on grafana.")),
            user("why is the checkout discount test flaky under xdist?"),
            after,
        )
        assert by_source(cues, "user") == ["why is the checkout discount test flaky under xdist?"]
        assert by_source(cues, "assistant") == ["Earlier remark on grafana."]
