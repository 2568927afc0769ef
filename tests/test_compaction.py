"""Prompt compaction: shorten_string, the strategies, settings, and properties over random sessions."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings as hsettings, strategies as st

from scout_tui.engine import compaction
from scout_tui.engine.compaction import (
    CLEARED_RESULT,
    NOTICE_PREFIX,
    compact,
    epoch_bounds,
    estimate_tokens,
    prepare_prompt,
    register_strategy,
    configured_settings,
    resolve_settings,
    shorten_string,
    strategy_names,
)
from scout_tui.core.errors import ScoutError
from scout_tui.engine.history import problems

# --- building conversations --------------------------------------------------------------------


def use(i: int, name: str = "bash", args: dict | None = None) -> dict:
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"command": f"cmd {i}"} if args is None else args}


def result(i: int, content: object = None, is_error: bool = False) -> dict:
    text = f"{i:04d}" + "r" * 496 if content is None else content
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": text, "is_error": is_error}


def session(n: int, **kw: object) -> list[dict]:
    """A user request, then ``n`` tool calls t0..t{n-1}, each alone in its assistant message,
    each result 500 characters."""
    messages = [{"role": "user", "content": "fix the bug"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [use(i)]})
        messages.append({"role": "user", "content": [result(i)]})
    return messages


def ids_of(messages: list[dict], kind: str = "tool_use") -> list[str]:
    key = "id" if kind == "tool_use" else "tool_use_id"
    return [
        b[key]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == kind
    ]


def blocks_by_id(messages: list[dict]) -> dict[str, tuple[dict, dict | None]]:
    uses = {b["id"]: b for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"}
    results = {b["tool_use_id"]: b for m in messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
    return {tid: (u, results.get(tid)) for tid, u in uses.items()}


EPOCH_100 = {
    "epoch_tool_call_threshold": 100,
    "epoch_full_tool_calls": 10,
    "epoch_compacted_tool_calls": 40,
    "epoch_size": 10,
}


@pytest.fixture(autouse=True)
def isolated(tmp_home: Path, workdir: Path) -> Path:
    """No real config file or SCOUT_* variable reaches these tests."""
    return workdir


# --- shorten_string ----------------------------------------------------------------------------


def test_shorten_string_matches_the_issue_example() -> None:
    assert shorten_string("6" * 500, 400) == "Truncated (500): " + "6" * 189 + "<...500 - 215cb...>" + "6" * 190


def test_shorten_string_keeps_text_at_the_size() -> None:
    assert shorten_string("a" * 400, 400) == "a" * 400


def test_shorten_string_cuts_text_one_over_the_size() -> None:
    assert shorten_string("a" * 401, 400) == "Truncated (401): " + "a" * 189 + "<...401 - 2351a...>" + "a" * 190


def test_shorten_string_counts_characters_and_hashes_utf8_bytes() -> None:
    # 300 characters, 600 bytes; md5 of the UTF-8 bytes starts 4bf78.
    assert shorten_string("é" * 300, 200) == "Truncated (300): " + "é" * 89 + "<...300 - 4bf78...>" + "é" * 90


def test_shorten_string_handles_characters_outside_the_bmp() -> None:
    text = "ab€🙂" * 60  # 240 characters
    expected = "Truncated (240): " + text[:89] + "<...240 - 40281...>" + text[240 - 90 :]
    assert shorten_string(text, 200) == expected


def test_shorten_string_keeps_one_tail_character_when_size_is_below_the_marker() -> None:
    assert shorten_string("x" * 50, 10) == "Truncated (50): <...50 - 62f01...>x"


# --- shorten_tools_epoch -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "total, whole, truncated, dropped",
    [(100, 100, 0, 0), (101, 11, 40, 50), (105, 15, 40, 50), (110, 20, 40, 50), (111, 11, 40, 60)],
)
def test_epoch_table(total: int, whole: int, truncated: int, dropped: int) -> None:
    messages = session(total)
    out = compact(messages, "shorten_tools_epoch", EPOCH_100)
    expected_marks = {f"t{i}": "dropped" for i in range(dropped)}
    expected_marks |= {f"t{i}": "truncated" for i in range(dropped, dropped + truncated)}
    assert (out.truncated, out.dropped, out.marks) == (truncated, dropped, expected_marks)
    kept = blocks_by_id(out.messages)
    assert sorted(kept, key=lambda t: int(t[1:])) == [f"t{i}" for i in range(dropped, total)]
    original = blocks_by_id(messages)
    for i in range(dropped + truncated, total):  # the newest stay whole: the very same blocks
        assert kept[f"t{i}"][0] is original[f"t{i}"][0] and kept[f"t{i}"][1] is original[f"t{i}"][1]
    for i in range(dropped, dropped + truncated):
        assert kept[f"t{i}"][1]["content"] == shorten_string(original[f"t{i}"][1]["content"], 400)
    assert problems(out.messages) == []


def test_epoch_bounds_move_only_at_epoch_boundaries() -> None:
    s = resolve_settings(EPOCH_100)
    assert [epoch_bounds(t, s) for t in (100, 101, 110, 111, 120, 121)] == [
        (0, 0, 0),
        (100, 50, 90),
        (100, 50, 90),
        (110, 60, 100),
        (110, 60, 100),
        (120, 70, 110),
    ]


def test_epoch_prompt_keeps_its_prefix_within_an_epoch_and_moves_at_the_boundary() -> None:
    prompts = {t: prepare_prompt(session(t), "shorten_tools_epoch", EPOCH_100) for t in (101, 105, 110, 111)}
    first = prompts[101]
    assert prompts[105][: len(first)] == first
    assert prompts[110][: len(first)] == first
    assert prompts[111][: len(first)] != first


def test_epoch_leaves_a_conversation_at_the_threshold_alone() -> None:
    messages = session(100)
    out = prepare_prompt(messages, "shorten_tools_epoch", EPOCH_100)
    assert out == messages and out is not messages


def test_epoch_keeps_the_newest_instance_of_a_repeated_call_whole() -> None:
    # threshold 5, full 2, compacted 2, size 5; T = 20 -> pinned 20, calls 0..15 dropped.
    messages = session(20)
    same = {"path": "a.py", "limit": 10}
    messages[2 * 3 + 1]["content"] = [use(3, "read", same)]
    messages[2 * 7 + 1]["content"] = [use(7, "read", dict(reversed(same.items())))]  # key order differs
    s = {"epoch_tool_call_threshold": 5, "epoch_full_tool_calls": 2, "epoch_compacted_tool_calls": 2, "epoch_size": 5}
    out = compact(messages, "shorten_tools_epoch", s)
    assert out.marks["t3"] == "dropped"
    assert "t7" not in out.marks
    assert blocks_by_id(out.messages)["t7"][1]["content"] == result(7)["content"]
    assert problems(out.messages) == []


def test_epoch_repeat_arriving_mid_epoch_does_not_change_the_compacted_part() -> None:
    s = {"epoch_tool_call_threshold": 5, "epoch_full_tool_calls": 2, "epoch_compacted_tool_calls": 2, "epoch_size": 5}
    messages = session(12)
    messages[2 * 1 + 1]["content"] = [use(1, "read", {"path": "x"})]
    messages[2 * 4 + 1]["content"] = [use(4, "read", {"path": "x"})]  # t4: newest of a repeat, kept
    before = prepare_prompt(messages, "shorten_tools_epoch", s)
    grown = messages + [
        {"role": "assistant", "content": [use(12, "read", {"path": "x"})]},  # a third instance
        {"role": "user", "content": [result(12)]},
    ]
    after = prepare_prompt(grown, "shorten_tools_epoch", s)
    assert after[: len(before)] == before
    assert "t4" in blocks_by_id(after)


def test_parallel_calls_are_paired_by_id_and_split_at_the_boundary() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use(0)]},
        {"role": "user", "content": [result(0)]},
        {"role": "assistant", "content": [{"type": "text", "text": "three at once"}, use(1), use(2), use(3)]},
        {"role": "user", "content": [result(3), result(1), result(2), {"type": "text", "text": "note"}]},
        {"role": "assistant", "content": [use(4)]},
        {"role": "user", "content": [result(4)]},
    ]
    # T = 5, threshold 1, size 1 -> pinned 4; full 2 -> calls 2..4 whole; compacted 1 -> t1 cut, t0 dropped.
    s = {"epoch_tool_call_threshold": 1, "epoch_full_tool_calls": 2, "epoch_compacted_tool_calls": 1, "epoch_size": 1}
    out = compact(messages, "shorten_tools_epoch", s)
    assert out.marks == {"t0": "dropped", "t1": "truncated"}
    parallel = out.messages[1:3]  # t0's pair is gone
    assert [b.get("id") for b in parallel[0]["content"]] == [None, "t1", "t2", "t3"]
    answers = parallel[1]["content"]
    assert [b.get("tool_use_id") for b in answers] == ["t3", "t1", "t2", None]
    assert answers[1]["content"].startswith("Truncated (500): ")
    assert answers[0] is messages[4]["content"][0] and answers[2] is messages[4]["content"][2]
    assert problems(out.messages) == []


def test_dropping_one_of_parallel_calls_keeps_the_others_answered() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use(0), use(1)]},
        {"role": "user", "content": [result(1), result(0)]},
        {"role": "assistant", "content": [use(2)]},
        {"role": "user", "content": [result(2)]},
    ]
    # T = 3, threshold 1, size 1 -> pinned 2, full 1 -> whole from 1; compacted 0 -> t0 dropped.
    s = {"epoch_tool_call_threshold": 1, "epoch_full_tool_calls": 1, "epoch_compacted_tool_calls": 0, "epoch_size": 1}
    out = prepare_prompt(messages, "shorten_tools_epoch", s)
    assert out[1]["content"] == [use(1)] and out[2]["content"] == [result(1)]
    assert problems(out) == []


def test_a_message_left_with_only_text_merges_with_its_neighbour() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, use(0)]},
        {"role": "user", "content": [result(0), {"type": "text", "text": "also check docs"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Now the tests."}, use(1)]},
        {"role": "user", "content": [result(1)]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "ok", "signature": "s2"}, use(2)]},
        {"role": "user", "content": [result(2)]},
    ]
    # T = 3, threshold 0, size 1 -> pinned 2; full 0, compacted 0: t0 and t1 dropped.
    s = {"epoch_tool_call_threshold": 0, "epoch_full_tool_calls": 0, "epoch_compacted_tool_calls": 0, "epoch_size": 1}
    out = prepare_prompt(messages, "shorten_tools_epoch", s)
    # t0's message held only thinking besides the call: removed. t1's remnants merge into the
    # neighbours of their role; the later assistant message's thinking still comes first.
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[0]["content"][0] == {"type": "text", "text": "go"}
    assert out[0]["content"][1] == {"type": "text", "text": "also check docs"}
    assert out[1]["content"] == [messages[5]["content"][0], {"type": "text", "text": "Now the tests."}, use(2)]
    assert problems(out) == []


def test_notice_goes_once_into_the_first_user_message_with_the_counts() -> None:
    out = prepare_prompt(session(111), "shorten_tools_epoch", EPOCH_100)
    notices = [
        (i, b["text"]) for i, m in enumerate(out) for b in m["content"] if b.get("type") == "text" and b["text"].startswith(NOTICE_PREFIX)
    ]
    assert len(notices) == 1
    index, text = notices[0]
    assert index == 0 and out[0]["content"][0] == {"type": "text", "text": "fix the bug"}
    assert "40 truncated" in text and "60 removed" in text
    assert "may have been removed here rather than never run" in text


def test_no_notice_when_nothing_changed() -> None:
    out = prepare_prompt(session(5), "shorten_tools_epoch", {})
    assert out == session(5)


def test_prompt_ends_with_a_user_notice_when_every_call_was_dropped() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, use(0)]},
        {"role": "user", "content": [result(0)]},
    ]
    s = {"full_tool_outputs": 0, "max_tool_calls": 0, "max_tool_chars": 0}
    out = prepare_prompt(messages, "shorten_tools", s)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[-1]["content"][0]["text"].startswith(NOTICE_PREFIX)
    assert problems(out) == []


# --- shorten_tools -----------------------------------------------------------------------------


def test_shorten_tools_leaves_a_short_conversation_alone() -> None:
    messages = session(150)  # 150 * ~520 characters < 100,000
    assert prepare_prompt(messages, "shorten_tools", {}) == messages


def test_shorten_tools_tiers() -> None:
    # Each call carries 500 + 19 characters. max_tool_chars 1000: newest two fit the count,
    # the third is whole by full_tool_outputs 3; 4-5 truncated; 6-7 keep the call without its
    # result; 8-10 dropped.
    s = {"max_tool_chars": 1000, "full_tool_outputs": 3, "max_tool_outputs": 5, "max_tool_calls": 7}
    messages = session(10)
    out = compact(messages, "shorten_tools", s)
    assert out.marks == {
        "t0": "dropped", "t1": "dropped", "t2": "dropped",
        "t3": "truncated", "t4": "truncated", "t5": "truncated", "t6": "truncated",
    }  # fmt: skip
    kept = blocks_by_id(out.messages)
    assert [kept[f"t{i}"][1]["content"] for i in (3, 4)] == [CLEARED_RESULT] * 2
    assert kept["t5"][1]["content"] == shorten_string(result(5)["content"], 400)
    assert all(kept[f"t{i}"][1] is messages[2 * i + 2]["content"][0] for i in (7, 8, 9))
    assert problems(out.messages) == []


def test_shorten_tools_counts_the_arguments_too() -> None:
    # Short results, long arguments: the count passes 1000 through the arguments' JSON.
    messages = [{"role": "user", "content": "go"}]
    for i in range(4):
        messages += [
            {"role": "assistant", "content": [use(i, "write", {"path": f"f{i}", "text": "w" * 600})]},
            {"role": "user", "content": [result(i, "ok")]},
        ]
    out = compact(messages, "shorten_tools", {"max_tool_chars": 1000, "full_tool_outputs": 0})
    assert out.marks == {"t0": "truncated", "t1": "truncated"}
    assert blocks_by_id(out.messages)["t1"][0]["input"] == {"path": "f1", "text": shorten_string("w" * 600, 200)}


def test_a_list_result_is_cut_as_one_text() -> None:
    content = [{"type": "text", "text": "a" * 300}, {"type": "text", "text": "b" * 300}]
    messages = session(3)
    messages[2]["content"] = [result(0, content)]
    out = compact(messages, "shorten_tools", {"max_tool_chars": 0, "full_tool_outputs": 2})
    assert blocks_by_id(out.messages)["t0"][1]["content"] == shorten_string("a" * 300 + "\n" + "b" * 300, 400)


def test_strategies_in_a_chain_do_not_cut_twice() -> None:
    s = {"max_tool_chars": 0, "full_tool_outputs": 1}
    once = compact(session(3), "shorten_tools", s)
    twice = compact(session(3), "shorten_tools,shorten_tools", s)
    assert twice.messages == once.messages and twice.marks == once.marks


# --- choosing strategies -----------------------------------------------------------------------


def test_unknown_strategy_names_it_and_lists_the_known_ones() -> None:
    with pytest.raises(ValueError) as err:
        prepare_prompt(session(1), "shorten_tools,nope", {})
    assert "'nope'" in str(err.value)
    assert "none, shorten_tools, shorten_tools_epoch" in str(err.value)


def test_none_returns_a_new_list_of_the_same_messages() -> None:
    messages = session(3)
    out = prepare_prompt(messages, "none", {})
    assert out is not messages and all(a is b for a, b in zip(out, messages, strict=True))


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "_REGISTRY", dict(compaction._REGISTRY))


def test_registered_strategy_gets_the_settings_and_runs_in_order(registry: None) -> None:
    seen = []

    def tag(messages: list[dict], settings: dict) -> list[dict]:
        seen.append(settings["greeting"])
        return messages + [{"role": "assistant", "content": "tagged"}]

    register_strategy("tag", tag)
    out = compact(session(1), "none, tag", {"greeting": "hi"})
    assert seen == ["hi"] and out.strategies == ["none", "tag"]
    assert out.messages[-1] == {"role": "assistant", "content": "tagged"}
    assert strategy_names()[:3] == ["none", "shorten_tools", "shorten_tools_epoch"] and "tag" in strategy_names()


def test_a_later_registration_wins(registry: None) -> None:
    register_strategy("shorten_tools", lambda messages: messages[:1])
    assert prepare_prompt(session(2), "shorten_tools", {})[0]["content"][0]["text"] == "fix the bug"


def test_calls_missing_from_a_plugin_result_count_as_dropped(registry: None) -> None:
    def forget_first(messages: list[dict]) -> list[dict]:
        return messages[:1] + messages[3:]

    out = compact(session(2), [forget_first], {})
    assert out.marks == {"t0": "dropped"} and out.dropped == 1
    assert out.messages[0]["content"][-1]["text"].startswith(NOTICE_PREFIX)


def test_a_callable_is_a_strategy() -> None:
    out = compact(session(2), lambda messages: list(reversed(messages)), {})
    assert out.strategies == ["<lambda>"] and out.messages[0] == session(2)[-1]


def test_a_strategy_returning_something_else_is_an_error() -> None:
    def broken(messages: list[dict]) -> None:
        return None

    with pytest.raises(TypeError, match="'broken' returned NoneType"):
        prepare_prompt(session(1), broken, {})


def test_register_strategy_rejects_a_bad_name() -> None:
    with pytest.raises(ValueError, match="without commas"):
        register_strategy("a,b", lambda m: m)


# --- settings ----------------------------------------------------------------------------------

SMALL_EPOCH_ENV = {
    "SCOUT_EPOCH_TOOL_CALL_THRESHOLD": "10",
    "SCOUT_EPOCH_FULL_TOOL_CALLS": "1",
    "SCOUT_EPOCH_COMPACTED_TOOL_CALLS": "0",
}


def test_compaction_reads_no_files_and_no_environment(monkeypatch: pytest.MonkeyPatch, isolated: Path) -> None:
    for key, value in SMALL_EPOCH_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SCOUT_STRATEGY", "nope")
    (isolated / "scout.toml").write_text("[compaction]\nstrategy = 'nope'\nepoch_size = 'often'\n")
    # settings None means the defaults: 13 calls are under the default threshold of 50.
    assert compact(session(13)).dropped == 0
    assert prepare_prompt(session(2)) == session(2)


def test_env_settings_override_the_table_once_resolved() -> None:
    s = configured_settings({"epoch_size": 10, "strategy": "shorten_tools"}, {**SMALL_EPOCH_ENV, "SCOUT_EPOCH_SIZE": "1"})
    assert s["epoch_size"] == 1 and s["strategy"] == "shorten_tools" and s["epoch_tool_call_threshold"] == 10
    assert compact(session(13), None, s).strategies == ["shorten_tools"]
    s = configured_settings({}, {**SMALL_EPOCH_ENV, "SCOUT_EPOCH_SIZE": "1", "SCOUT_STRATEGY": "shorten_tools_epoch"})
    assert compact(session(13), None, s).dropped == 11  # pinned 12: calls 0..10 dropped


@pytest.mark.parametrize("value", ["ten", "0", "-3", "2.5"])
def test_a_bad_env_value_names_the_variable(value: str) -> None:
    with pytest.raises(ScoutError, match=f"SCOUT_EPOCH_SIZE: epoch_size must be a whole number >= 1, got '{value}'"):
        configured_settings({}, {"SCOUT_EPOCH_SIZE": value})


def test_max_tool_outputs_defaults_to_max_tool_calls() -> None:
    assert resolve_settings({"max_tool_calls": 7})["max_tool_outputs"] == 7
    assert resolve_settings({"max_tool_calls": 7, "max_tool_outputs": 3})["max_tool_outputs"] == 3


def test_a_bad_explicit_setting_is_an_error() -> None:
    with pytest.raises(ScoutError, match="compaction setting max_tool_chars: max_tool_chars must be a whole number >= 0, got True"):
        resolve_settings({"max_tool_chars": True})


def test_file_settings_reach_the_agent_resolved_once(isolated: Path) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.session.runtime import compaction_settings

    (isolated / "scout.toml").write_text("[compaction]\nepoch_tool_call_threshold = 10\nepoch_full_tool_calls = 1\n"
                                         "epoch_compacted_tool_calls = 0\nepoch_size = 10\n")
    s = compaction_settings(load_config(isolated, env={}), env={})
    assert compact(session(13), None, s).dropped == 9


def test_a_bad_value_in_the_user_file_names_that_file(tmp_home: Path, isolated: Path) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.session.runtime import compaction_settings

    user = tmp_home / ".config" / "scout" / "scout.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[compaction]\nmax_tool_calls = -1\n")
    (isolated / "scout.toml").write_text("[compaction]\nepoch_size = 5\n")
    with pytest.raises(ScoutError, match=f"^{user}:2: \\[compaction\\]: max_tool_calls must be"):
        compaction_settings(load_config(isolated, env={}), env={})


def test_a_bad_file_value_names_the_file_and_line(isolated: Path) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.session.runtime import compaction_settings

    (isolated / "scout.toml").write_text("model = 'x'\n\n[compaction]\nepoch_size = 'often'\n")
    with pytest.raises(ScoutError) as err:
        compaction_settings(load_config(isolated, env={}), env={})
    assert str(err.value).startswith(f"{isolated / 'scout.toml'}:4: [compaction]: epoch_size must be a whole number >= 1")


# --- what compact reports ----------------------------------------------------------------------


def test_compact_reports_the_figures_for_the_event() -> None:
    out = compact(session(111), "shorten_tools_epoch", EPOCH_100)
    data = out.event_data()
    assert data["strategies"] == ["shorten_tools_epoch"]
    assert (data["truncated"], data["dropped"]) == (40, 60)
    assert data["tokens_before"] == estimate_tokens(session(111))
    assert data["tokens_after"] == estimate_tokens(out.messages) < data["tokens_before"]
    assert set(data) == {"strategies", "truncated", "dropped", "tokens_before", "tokens_after", "stable", "budget_cut",
                         "budget_dropped"}


def test_estimate_tokens_is_characters_over_four() -> None:
    # 8 for the message + 392 characters of text = 400 characters = 100 tokens.
    assert estimate_tokens([{"role": "user", "content": "x" * 392}]) == 100
    # + 8 per block; a tool call counts its name and the JSON of its input ({"command": "ls"}).
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}}]}
    assert estimate_tokens([call]) == (8 + 8 + 4 + len('{"command": "ls"}') + 3) // 4


def test_the_module_imports_no_textual() -> None:
    code = (
        "import sys, scout_tui.engine.compaction as c; c.prepare_prompt([{'role': 'user', 'content': 'hi'}]); "
        "sys.exit('textual' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --- properties over random conversations -----------------------------------------------------

# Values drawn from a small pool so repeated calls (same name and arguments) happen.
ARGS = st.sampled_from(["ls", "pytest -q", "x" * 250, "é" * 300, "cat a.py"])
TEXT = st.sampled_from(["ok", "Let me look.", "é🙂 done", "y" * 450])


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 10) -> list[dict]:
    """A valid conversation: user first, roles alternating, every call answered in the next
    message (results in any order, sometimes followed by text), thinking and text around."""
    counter = iter(range(10_000))
    first = draw(TEXT)
    messages: list[dict] = [{"role": "user", "content": first if draw(st.booleans()) else [{"type": "text", "text": first}]}]
    for _ in range(draw(st.integers(0, max_turns))):
        content: list[dict] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": "th", "signature": "sig"})
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(TEXT)})
        calls = draw(st.integers(0 if content else 1, 3))
        uses = []
        for _ in range(calls):
            i = next(counter)
            args: dict = {"command": draw(ARGS)}
            if draw(st.booleans()):
                args["paths"] = [draw(ARGS)]
            uses.append({"type": "tool_use", "id": f"t{i}", "name": draw(st.sampled_from(["bash", "read"])), "input": args})
        if not content and not uses:
            content.append({"type": "text", "text": "hm"})
        messages.append({"role": "assistant", "content": content + uses})
        if uses:
            answers = []
            for u in draw(st.permutations(uses)):
                size = draw(st.sampled_from([0, 10, 399, 400, 401, 900]))
                body: object = "r" * size
                if draw(st.booleans()):
                    body = [{"type": "text", "text": "r" * size}, {"type": "text", "text": draw(TEXT)}]
                answers.append({"type": "tool_result", "tool_use_id": u["id"], "content": body, "is_error": draw(st.booleans())})
            if draw(st.booleans()):
                answers.append({"type": "text", "text": draw(TEXT)})
            messages.append({"role": "user", "content": answers})
        else:
            messages.append({"role": "user", "content": draw(TEXT)})
    return messages


SETTINGS = st.fixed_dictionaries(
    {
        "full_tool_outputs": st.integers(0, 4),
        "max_tool_calls": st.integers(0, 8),
        "max_tool_outputs": st.integers(0, 8),
        "max_tool_chars": st.integers(0, 3000),
        "epoch_tool_call_threshold": st.integers(0, 8),
        "epoch_full_tool_calls": st.integers(0, 4),
        "epoch_compacted_tool_calls": st.integers(0, 4),
        "epoch_size": st.integers(1, 4),
    }
)
STRATEGIES = st.sampled_from(["none", "shorten_tools", "shorten_tools_epoch", "shorten_tools,shorten_tools_epoch"])
PROPERTY = hsettings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(conversations(), STRATEGIES, SETTINGS)
def test_input_is_never_mutated(messages: list[dict], strategy: str, s: dict) -> None:
    snapshot = copy.deepcopy(messages)
    compact(messages, strategy, s)
    assert messages == snapshot


@PROPERTY
@given(conversations(), STRATEGIES, SETTINGS)
def test_output_is_always_a_valid_request(messages: list[dict], strategy: str, s: dict) -> None:
    assert problems(messages) == []
    out = compact(messages, strategy, s)
    assert problems(out.messages) == []
    for message in out.messages:  # Anthropic wants a user message's tool_result blocks first
        kinds = [b.get("type") for b in message["content"]] if isinstance(message["content"], list) else []
        assert kinds == sorted(kinds, key=lambda kind: kind != "tool_result")
    # Every call is either marked or sent exactly as stored.
    before, after = blocks_by_id(messages), blocks_by_id(out.messages)
    assert set(before) - set(after) == {tid for tid, mark in out.marks.items() if mark == "dropped"}
    for tid, (u, r) in after.items():
        if tid not in out.marks:
            assert (u, r) == before[tid]
    assert (out.truncated, out.dropped) == (
        sum(m == "truncated" for m in out.marks.values()),
        sum(m == "dropped" for m in out.marks.values()),
    )


@PROPERTY
@given(conversations(), SETTINGS)
def test_none_is_the_identity(messages: list[dict], s: dict) -> None:
    assert prepare_prompt(messages, "none", s) == messages


@PROPERTY
@given(conversations(), st.sampled_from(["shorten_tools", "shorten_tools_epoch"]))
def test_a_conversation_under_the_thresholds_comes_back_equal(messages: list[dict], strategy: str) -> None:
    # At most 30 calls (threshold 50) of at most ~1,800 characters each (max_tool_chars 100,000).
    assert prepare_prompt(messages, strategy, {}) == messages


@PROPERTY
@given(conversations(max_turns=25), SETTINGS)
def test_epoch_prompts_share_their_prefix_within_an_epoch(messages: list[dict], s: dict) -> None:
    """At every model call (after each user message), the prompt starts with the previous
    call's whole prompt whenever both fall in the same epoch."""
    points = [i + 1 for i, m in enumerate(messages) if m["role"] == "user"]
    previous = None
    for end in points:
        history = messages[:end]
        total = len(ids_of(history))
        pinned = epoch_bounds(total, resolve_settings(s))[0]
        prompt = prepare_prompt(history, "shorten_tools_epoch", s)
        if previous is not None and pinned and previous[0] == pinned:
            assert prompt[: len(previous[1])] == previous[1]
        previous = (pinned, prompt)
    assume(len(points) > 1)
