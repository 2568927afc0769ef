"""Compaction remembers its work between model calls (``PrefixMemo``): a session that grows, is
copied or forks gets exactly the prompt, figures and shared objects a first call would give."""

from __future__ import annotations

import copy
import hashlib
import random
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from scout_tui.engine.compaction import NOTICE, compact, forget_memos
from scout_tui.engine.context import for_request
from scout_tui.engine.history import problems
from scout_tui.core.messages import PrefixMemo
from scout_tui.engine.strategies import DROP, apply_plan, calls_and_keys
from scout_tui.core.tokens import MEMO_FROM, estimate_tokens
from scout_tui.core.tool_calls import find_calls
from tests.test_compaction import PROPERTY, SETTINGS, STRATEGIES, conversations


@pytest.fixture(autouse=True)
def isolated(tmp_home: Path, workdir: Path) -> None:
    """No config file or SCOUT_* variable; nothing remembered from another test."""
    forget_memos()


# --- a rich conversation ------------------------------------------------------------------------


def rich_session(calls: int, seed: int = 7) -> list[dict]:
    """A request, then ``calls`` tool calls in the shapes a session has: alone, after text or
    thinking, two in parallel answered out of order, repeated (same command), list results with
    an image, long arguments, errors, results followed by text, and typed user turns between."""
    rng = random.Random(seed)
    messages: list[dict] = [{"role": "user", "content": "Find why the nightly build fails and fix it."}]
    n = 0

    def use(args: dict, name: str = "bash") -> dict:
        nonlocal n
        n += 1
        return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": args}

    def answer(u: dict, size: int, **extra: object) -> dict:
        body = (f"{u['id']} " + "output line of a tool, more or less code-like\n" * (size // 46 + 1))[:size]
        return {"type": "tool_result", "tool_use_id": u["id"], "content": body, "is_error": False, **extra}

    while n < calls:
        shape = rng.choice(["alone", "text", "thinking", "parallel", "repeat", "list", "long", "error", "typed"])
        size = rng.choice([50, 399, 401, 2_000, 4_096])
        if shape == "parallel":
            a, b = use({"path": f"src/a{n}.py"}, "read"), use({"path": f"src/b{n}.py"}, "read")
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "Both files."}, a, b]})
            messages.append({"role": "user", "content": [answer(b, size), answer(a, 30)]})
            continue
        args = {"command": "pytest -q"} if shape == "repeat" else {"command": f"grep -n build_{n} src/m{n % 7}.py"}
        if shape == "long":
            args = {"path": f"src/new_{n}.py", "content": "x = 1\n" * 120}
        u = use(args, "write" if shape == "long" else "bash")
        lead = {"text": [{"type": "text", "text": f"Step {n}: looking."}],
                "thinking": [{"type": "thinking", "thinking": "Hm.", "signature": "sig"}]}.get(shape, [])
        messages.append({"role": "assistant", "content": [*lead, u]})
        if shape == "list":
            result = {**answer(u, size), "content": [{"type": "text", "text": "x" * size},
                                                     {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]}
            messages.append({"role": "user", "content": [result]})
        elif shape == "error":
            messages.append({"role": "user", "content": [answer(u, size, is_error=True),
                                                         {"type": "text", "text": "(it failed)"}]})
        else:
            messages.append({"role": "user", "content": [answer(u, size)]})
        if shape == "typed":
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "Done with that."}]})
            messages.append({"role": "user", "content": "Now look at the flaky test too."})
    return messages


SMALL = {"full_tool_outputs": 2, "max_tool_calls": 12, "max_tool_outputs": 8, "max_tool_chars": 3_000,
         "epoch_tool_call_threshold": 8, "epoch_full_tool_calls": 3, "epoch_compacted_tool_calls": 5, "epoch_size": 4}
# No truncated band: dropped calls border whole ones, so a remnant merges with what follows.
NO_BAND = {**SMALL, "epoch_compacted_tool_calls": 0}
CHAINS = ["shorten_tools", "shorten_tools_epoch", "shorten_tools,shorten_tools_epoch", "shorten_tools_epoch,shorten_tools"]


def figures(messages: list[dict], strategy: str, settings: dict) -> tuple:
    """Everything ``compact`` says, and which of its messages are the input's own objects."""
    out = compact(messages, strategy, settings)
    own = {id(m) for m in messages}
    shared = [i for i, m in enumerate(out.messages) if id(m) in own]
    return (out.messages, out.truncated, out.dropped, out.marks, out.stable, out.tokens_before,
            out.tokens_after, shared)


def first_calls(lists: list[list[dict]], strategy: str, settings: dict) -> list[tuple]:
    """``figures`` of each conversation as a first call sees it: nothing remembered, fresh objects."""
    found = []
    for messages in lists:
        forget_memos()
        found.append(figures(copy.deepcopy(messages), strategy, settings))
    forget_memos()
    return found


# --- a session that grows, is copied, forks -----------------------------------------------------


@pytest.mark.parametrize("settings", [SMALL, NO_BAND], ids=["small", "no-band"])
@pytest.mark.parametrize("strategy", CHAINS)
def test_a_growing_session_gets_what_a_first_call_gets(strategy: str, settings: dict) -> None:
    messages = rich_session(70)
    steps = [messages[:k] for k in range(1, len(messages) + 1)]
    expected = first_calls(steps, strategy, settings)
    for k, step in enumerate(steps):
        found = figures(step, strategy, settings)
        assert found == expected[k], f"after {k + 1} messages"
        if step[-1]["role"] == "user":  # a model call's conversation: every call answered
            assert problems(found[0]) == [], f"after {k + 1} messages"


@pytest.mark.parametrize("strategy", CHAINS)
def test_equal_copies_get_a_prompt_of_their_own_objects(strategy: str) -> None:
    """Each call's conversation is a new list of new, equal dicts (as a reloaded session, or
    one prepared without ``for_request``'s memo, gives): what compaction left alone is the
    caller's own object, never one remembered from an earlier call."""
    messages = rich_session(70)
    steps = [[{**m} for m in messages[:k]] for k in range(1, len(messages) + 1)]
    expected = first_calls(steps, strategy, SMALL)
    for k, step in enumerate(steps):
        assert figures(step, strategy, SMALL) == expected[k], f"after {k + 1} messages"


def test_a_fork_and_its_parent_in_turn_get_what_a_first_call_gets() -> None:
    parent = rich_session(60, seed=1)
    fork = parent[:71] + rich_session(60, seed=2)[71:]
    turns = [parent, fork, parent[:90], fork[:100], parent, fork]
    expected = first_calls(turns, "shorten_tools_epoch", SMALL)
    assert [figures(t, "shorten_tools_epoch", SMALL) for t in turns] == expected


@PROPERTY
@given(conversations(max_turns=25), STRATEGIES, SETTINGS)
def test_every_prefix_of_a_random_session_gets_what_a_first_call_gets(messages: list[dict], strategy: str,
                                                                      s: dict) -> None:
    forget_memos()
    steps = [messages[:k] for k in range(1, len(messages) + 1)]
    expected = first_calls(steps, strategy, s)
    assert [figures(step, strategy, s) for step in steps] == expected


def test_calls_found_again_match_a_fresh_scan() -> None:
    messages = rich_session(80)
    for k in range(1, len(messages) + 1):
        calls, keys = calls_and_keys(messages[:k])
        fresh_keys: list = []
        assert calls == find_calls(messages[:k], fresh_keys)
        assert keys == fresh_keys


def test_calls_without_keys_then_with_keys() -> None:
    """shorten_tools asks without keys; a later epoch call on the same session still gets them."""
    messages = rich_session(40)
    assert calls_and_keys(messages[:50], with_keys=False)[1] is None
    calls, keys = calls_and_keys(messages)
    fresh_keys: list = []
    assert (calls, keys) == (find_calls(messages, fresh_keys), fresh_keys)


# --- the exact prompt of a long session under the default settings --------------------------


def shortened(text: str, size: int) -> str:
    """Issue 3's truncation format, written out again from its specification."""
    marker = f"<...{len(text)} - {hashlib.md5(text.encode()).hexdigest()[:5]}...>"
    k = (size - len(marker)) // 2
    return f"Truncated ({len(text)}): {text[:k - 1]}{marker}{text[len(text) - k:]}"


def bench_session(calls: int) -> list[dict]:
    """``benchmarks/compaction.py``'s conversation: a sentence before every third call, 4 KB results."""
    messages: list[dict] = [{"role": "user", "content": "Find why the nightly build fails and fix it."}]
    for i in range(calls):
        content: list[dict] = [{"type": "text", "text": f"Step {i}."}] if i % 3 == 0 else []
        content.append({"type": "tool_use", "id": f"toolu_{i:06d}", "name": "bash", "input": {"command": f"grep -n b{i} m.py"}})
        body = (f"{i:06d} some output line of a tool\n" * 140)[:4096]
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:06d}",
                                                      "content": body, "is_error": False}]})
    return messages


def assert_default_prompt_of_300_calls(stored: list[dict]) -> None:
    """300 calls: the epoch is pinned at 290, so calls 280-299 are whole, 240-279 truncated and
    0-239 dropped; the sentences of dropped calls stay, merged into one assistant message."""
    out = compact(stored)
    prompt = out.messages
    assert len(prompt) == 121
    notice = NOTICE.format(truncated=40, dropped=240)
    assert prompt[0] == {"role": "user", "content": [{"type": "text", "text": stored[0]["content"]},
                                                     {"type": "text", "text": notice}]}
    assert prompt[1]["role"] == "assistant"
    assert prompt[1]["content"] == [{"type": "text", "text": f"Step {i}."} for i in range(0, 241, 3)] + [stored[481]["content"][1]]
    for i in range(240, 280):
        result = stored[2 + 2 * i]["content"][0]
        sent = prompt[2 + 2 * (i - 240)]
        assert sent == {"role": "user", "content": [{**result, "content": shortened(result["content"], 400)}]}
        if i > 240:
            assert prompt[1 + 2 * (i - 240)] is stored[1 + 2 * i]  # short arguments: the message itself
    assert all(prompt[81 + j] is stored[561 + j] for j in range(40))  # calls 280-299, whole
    assert out.marks == {**{f"toolu_{i:06d}": "dropped" for i in range(240)},
                         **{f"toolu_{i:06d}": "truncated" for i in range(240, 280)}}
    assert (out.truncated, out.dropped, out.stable) == (40, 240, 101)  # the stable part ends with call 289's result
    assert out.tokens_after == estimate_tokens(copy.deepcopy(prompt))


def test_the_default_prompt_of_a_long_session_on_a_first_call() -> None:
    assert_default_prompt_of_300_calls(bench_session(300))


def test_the_default_prompt_of_a_long_session_grown_one_call_at_a_time() -> None:
    messages = bench_session(300)
    for end in range(501, len(messages), 2):  # from 250 calls, one model call after each result
        compact(messages[:end])
    assert_default_prompt_of_300_calls(messages)
    assert_default_prompt_of_300_calls([{**m} for m in messages])


# --- the token estimate and for_request ---------------------------------------------------------


def test_the_estimate_of_a_growing_long_session_is_that_of_a_first_call() -> None:
    messages = rich_session(200)
    assert len(messages) > MEMO_FROM + 50
    fresh = []
    for k in range(MEMO_FROM - 5, len(messages) + 1, 7):
        forget_memos()
        fresh.append(estimate_tokens(copy.deepcopy(messages[:k])))
    forget_memos()
    assert [estimate_tokens(messages[:k]) for k in range(MEMO_FROM - 5, len(messages) + 1, 7)] == fresh
    fork = messages[:300] + rich_session(200, seed=3)[300:]
    forget_memos()
    alone = estimate_tokens(copy.deepcopy(fork))
    estimate_tokens(messages)
    assert estimate_tokens(fork) == alone


def test_for_request_sends_role_and_content_of_every_message_partial_answers_too_as_the_session_grows() -> None:
    messages = rich_session(20)
    messages.insert(3, {"role": "assistant", "content": [{"type": "text", "text": "Half an ans"}], "incomplete": True})
    messages[5] = {**messages[5], "usage": {"input_tokens": 3}}
    for k in range(1, len(messages) + 1):
        sent = for_request(messages[:k])
        assert sent == [{"role": m["role"], "content": m["content"]} for m in messages[:k]]


def test_for_request_hands_back_a_list_the_caller_may_change() -> None:
    messages = rich_session(10)
    sent = for_request(messages)
    sent.append({"role": "user", "content": "extra"})
    sent[0] = {"role": "user", "content": "changed"}
    assert for_request(messages) == [{"role": m["role"], "content": m["content"]} for m in messages]


def test_for_request_reuses_its_dicts_for_the_messages_a_longer_conversation_shares() -> None:
    messages = rich_session(10)
    first = for_request(messages[:-2])
    again = for_request(messages)
    assert all(a is b for a, b in zip(first, again)) and len(again) == len(first) + 2


# --- PrefixMemo -----------------------------------------------------------------------------------


def test_prefix_memo_finds_the_most_recent_conversation_a_list_begins_with() -> None:
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    memo = PrefixMemo(size=2)
    memo.keep([a], "one")
    memo.keep([a, b], "two")
    assert memo.find([a, b, c]) == (2, "two")
    assert memo.find([{**a}, {**b}]) == (2, "two")  # equal dicts count
    assert memo.find([a, c]) == (1, "one")
    assert memo.find([a, b]) == (1, "one")  # the one used last comes first
    assert memo.find([b]) is None
    assert memo.find([a, b], match=lambda value: value == "one") == (1, "one")


def test_prefix_memo_forgets_the_least_recently_used_beyond_its_size() -> None:
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    memo = PrefixMemo(size=2)
    memo.keep([a], "a")
    memo.keep([b], "b")
    memo.find([a])  # a is used again: b is now the oldest
    memo.keep([c], "c")
    assert (memo.find([a]), memo.find([b]), memo.find([c])) == ((1, "a"), None, (1, "c"))


@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.integers(0, 3), max_size=12))
def test_prefix_memo_matches_only_a_real_prefix(first: list[int], second: list[int]) -> None:
    messages = [{"role": "user", "content": str(x)} for x in first]
    other = [{"role": "user", "content": str(x)} for x in second]
    memo = PrefixMemo()
    memo.keep(messages, "kept")
    hit = memo.find(other)
    assert (hit is not None) == (other[: len(messages)] == messages and len(other) >= len(messages))


# --- applying a plan ------------------------------------------------------------------------------


def test_dropping_parallel_calls_whose_last_is_unanswered_removes_the_others_results() -> None:
    """The last call a plan acts on has no result, an earlier one in its message has: the
    message after them still loses that result (an orphan result is rejected by both APIs)."""
    a = {"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}}
    b = {"type": "tool_use", "id": "b", "name": "bash", "input": {"command": "pwd"}}
    c = {"type": "tool_use", "id": "c", "name": "bash", "input": {"command": "id"}}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [a, b]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x", "is_error": False},
                                     {"type": "text", "text": "b was interrupted"}]},
        {"role": "assistant", "content": [c]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "y", "is_error": False}]},
    ]
    calls, _ = calls_and_keys(messages)
    out = apply_plan(messages, calls, [DROP, DROP, None], "test")
    assert out.messages == [{"role": "user", "content": [{"type": "text", "text": "go"},
                                                          {"type": "text", "text": "b was interrupted"}]},
                            messages[3], messages[4]]
    assert out.marks == {"a": "dropped", "b": "dropped"}
