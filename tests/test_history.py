"""The one history check: problems() finds what both APIs reject; repair() fixes it locally."""

from __future__ import annotations

import copy

from scout_tui.engine.history import INTERRUPTED, problems, repair


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(*ids, text="working"):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]
            + [{"type": "tool_use", "id": i, "name": "read", "input": {"path": "a"}} for i in ids]}


def results(*ids, extra_text=None):
    content = [{"type": "tool_result", "tool_use_id": i, "content": f"out {i}", "is_error": False} for i in ids]
    if extra_text:
        content.append({"type": "text", "text": extra_text})
    return {"role": "user", "content": content}


def test_valid_conversation_has_no_problems_and_repairs_to_itself():
    convo = [user("hi"), call("a", "b"), results("a", "b"), {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    assert problems(convo) == []
    assert repair(convo) == convo


def test_unanswered_call_gets_an_error_result_in_the_next_message():
    convo = [user("hi"), call("a", "b"), results("a"), user("and?")]
    assert any("b" in p and "no result" in p for p in problems(convo))
    fixed = repair(convo)
    assert problems(fixed) == []
    answered = fixed[2]["content"]
    assert [b["tool_use_id"] for b in answered if b["type"] == "tool_result"] == ["a", "b"]
    assert answered[1] == {"type": "tool_result", "tool_use_id": "b", "content": INTERRUPTED, "is_error": True}
    # the user's own text survives, after the results
    assert answered[-1] == {"type": "text", "text": "and?"}


def test_call_at_the_end_is_closed_unless_tools_are_about_to_run():
    convo = [user("hi"), call("a")]
    assert problems(repair(convo)) == []
    assert repair(convo, close_open_calls=False) == convo


def test_orphan_and_duplicate_results_are_dropped():
    convo = [user("hi"), call("a"), {"role": "user", "content": results("a")["content"] * 2 + results("zzz")["content"]}]
    assert len(problems(convo)) == 2
    fixed = repair(convo)
    assert problems(fixed) == []
    assert [b["tool_use_id"] for b in fixed[2]["content"]] == ["a"]


def test_empty_messages_and_blank_text_blocks_go_and_roles_alternate():
    convo = [user("hi"), {"role": "assistant", "content": [{"type": "text", "text": "  \n"}]}, user("again"),
             {"role": "assistant", "content": "plain string answer"}]
    fixed = repair(convo)
    assert problems(fixed) == []
    assert [m["role"] for m in fixed] == ["user", "assistant"]
    assert [b["text"] for b in fixed[0]["content"]] == ["hi", "again"]


def test_repair_never_mutates_its_input():
    convo = [user("hi"), call("a", "b"), results("b", extra_text="x"), user("y")]
    before = copy.deepcopy(convo)
    repair(convo)
    assert convo == before


def test_text_before_a_tool_result_is_a_problem_that_repair_reorders():
    convo = [user("go"), call("a"), {"role": "user", "content": [{"type": "text", "text": "note"}] + results("a")["content"]}]
    assert any("after other content" in p for p in problems(convo))
    fixed = repair(convo)
    assert problems(fixed) == []
    assert [b["type"] for b in fixed[2]["content"]] == ["tool_result", "text"]
