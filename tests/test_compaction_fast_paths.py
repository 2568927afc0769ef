"""The fast paths of compaction's first call (finding the calls, their keys, applying a plan)
give what the plain algorithms give, on the usual shapes and on odd ones: several blocks in a
message, arguments in another key order, unicode, numbers of other types, inputs that are not
JSON at all. The plain algorithms are written out here again as the oracle."""

from __future__ import annotations

import json
import math
from types import MappingProxyType
from typing import Any

from hypothesis import given, strategies as st

from scout_tui.engine.compaction import forget_memos
from scout_tui.engine.strategies import CLEAR, CLEARED_RESULT, DROP, RESULT_SIZE, ARGUMENT_SIZE, TRUNCATE, apply_plan
from scout_tui.core.tool_calls import call_key, find_calls, merge_roles, shorten_input, shorten_result
from tests.test_compaction import PROPERTY

# --- the oracle ---------------------------------------------------------------------------------


def plain_find_calls(messages: list[dict]) -> list[tuple]:
    """Every call as (use message, block, result message or -1, block or -1, id, use alone,
    result alone): alone only for a single call answered by a single result, as specified."""
    calls = []
    for mi, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        uses = [bi for bi, b in enumerate(content) if b.get("type") == "tool_use"]
        nxt = messages[mi + 1] if mi + 1 < len(messages) else {}
        results = nxt.get("content") if nxt.get("role") == "user" and isinstance(nxt.get("content"), list) else []
        if len(uses) == 1 and len(results) == 1 and results[0].get("type") == "tool_result" \
                and results[0].get("tool_use_id") == content[uses[0]].get("id"):
            calls.append((mi, uses[0], mi + 1, 0, content[uses[0]].get("id"), len(content) == 1, True))
            continue
        answers: dict[Any, int] = {}
        for rbi, b in enumerate(results):
            if b.get("type") == "tool_result":
                answers.setdefault(b.get("tool_use_id"), rbi)
        for bi in uses:
            tid = content[bi].get("id")
            rbi = answers.get(tid, -1)
            calls.append((mi, bi, mi + 1 if rbi >= 0 else -1, rbi, tid, False, False))
    return calls


def plain_key(use: dict) -> Any:
    """Name and arguments as a frozenset of the items, or canonical JSON when that fails."""
    try:
        return use.get("name"), frozenset(use.get("input").items())
    except (AttributeError, TypeError):
        return use.get("name"), json.dumps(use.get("input"), sort_keys=True, default=str)


def plain_meaningful(content: list) -> bool:
    return any(str(b.get("text", "")).strip() if b.get("type") == "text" else b.get("type") not in ("thinking", "redacted_thinking")
               for b in content)


def as_blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def plain_merge(messages: list[dict]) -> list[dict]:
    """Each run of one role as one message: the blocks in order, but the last message's leading
    thinking first when it is an assistant's."""
    runs: list[list[dict]] = []
    for message in messages:
        if runs and runs[-1][0]["role"] == message["role"]:
            runs[-1].append(message)
        else:
            runs.append([message])
    out = []
    for run in runs:
        if len(run) == 1:
            out.append(run[0])
            continue
        last = as_blocks(run[-1].get("content"))
        lead = 0
        while run[-1]["role"] == "assistant" and lead < len(last) and last[lead].get("type") in ("thinking", "redacted_thinking"):
            lead += 1
        earlier = [b for m in run[:-1] for b in as_blocks(m.get("content"))]
        out.append({**run[0], "content": last[:lead] + earlier + last[lead:]})
    return out


def plain_apply(messages: list[dict], calls: list[tuple], plan: list) -> tuple[list[dict], dict]:
    """``plan`` applied block by block: dropped blocks removed, cut ones replaced, a message
    left without meaning removed, then (when one was) neighbours of one role merged."""
    removed, swapped, marks = set(), {}, {}
    for (mi, bi, ri, rbi, tid, _, _), action in zip(calls, plan):
        if action == DROP:
            marks[tid] = "dropped"
            removed |= {(mi, bi), (ri, rbi)}
        elif action in (TRUNCATE, CLEAR):
            use = messages[mi]["content"][bi]
            new_input = shorten_input(use.get("input"), ARGUMENT_SIZE)
            if new_input is not use.get("input"):
                swapped[mi, bi] = {**use, "input": new_input}
                marks[tid] = "truncated"
            if ri >= 0:
                res = messages[ri]["content"][rbi]
                new = {**res, "content": CLEARED_RESULT} if action == CLEAR else shorten_result(res, RESULT_SIZE)
                if new is not res:
                    swapped[ri, rbi] = new
                    marks[tid] = "truncated"
    out, skipped = [], False
    for mi, message in enumerate(messages):
        content = message.get("content")
        touched = [bi for bi in range(len(content) if isinstance(content, list) else 0)
                   if (mi, bi) in removed or (mi, bi) in swapped]
        if not touched:
            out.append(message)
            continue
        kept = [swapped.get((mi, bi), b) for bi, b in enumerate(content) if (mi, bi) not in removed]
        if plain_meaningful(kept):
            out.append({**message, "content": kept})
        else:
            skipped = True
    return (plain_merge(out) if skipped else out), marks


# --- odd conversations --------------------------------------------------------------------------

VALUES = st.sampled_from(["ls", "é🙂 ünïcode", "x" * 250, "", 1, 1.0, True, 0, None, 2.5, b"ls", ("a", "b"),
                          frozenset({"a"}), ["a"], {"k": "v"}, {"a", "b"}])
KEYS = st.sampled_from(["command", "path", "é", "a", "b"])
INPUTS = st.one_of(
    st.dictionaries(KEYS, VALUES, max_size=3),
    st.dictionaries(st.sampled_from([1, 2, 1.0, "a"]), st.sampled_from(["x", 1, ("y",)]), max_size=2),
    st.sampled_from([None, "ls", ["ls"], 5, MappingProxyType({"command": "ls"}), {"command": "ls"}]),
)
TEXTS = st.sampled_from(["ok", "é🙂 done", "", "  \n", "\u2003\u00a0", 5, None])


@st.composite
def odd_conversations(draw: st.DrawFn) -> list[dict]:
    """Messages in any shape a stored session might hold: one or several calls after text or
    thinking, blank or non-string text, results alone, out of order, missing, or followed by
    text, string contents, two messages of one role in a row."""
    counter = iter(range(10_000))
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for _ in range(draw(st.integers(1, 12))):
        content: list[dict] = []
        for kind in draw(st.lists(st.sampled_from(["text", "thinking", "use", "use", "use"]), min_size=1, max_size=4)):
            if kind == "text":
                content.append({"type": "text", "text": draw(TEXTS)})
            elif kind == "thinking":
                content.append({"type": "thinking", "thinking": "hm", "signature": "s"})
            else:
                use = {"type": "tool_use", "id": f"t{next(counter)}", "name": draw(st.sampled_from(["bash", "read", None])),
                       "input": draw(INPUTS)}
                if draw(st.integers(0, 9)) == 0:  # a block missing a part
                    del use[draw(st.sampled_from(["name", "input"]))]
                content.append(use)
        messages.append({"role": "assistant", "content": content if draw(st.integers(0, 9)) else draw(st.sampled_from(["just text", None]))})
        uses = [b for b in content if b["type"] == "tool_use"]
        answers: list[dict] = []
        for u in draw(st.permutations(uses)):
            if draw(st.integers(0, 5)):  # now and then a call is left unanswered
                answers.append({"type": "tool_result", "tool_use_id": u["id"], "content": "r" * draw(st.sampled_from([5, 900]))})
        if not answers or draw(st.integers(0, 4)) == 0:
            answers.append({"type": "text", "text": draw(TEXTS)})
        if draw(st.integers(0, 9)) == 0:
            answers.append({"type": "image", "source": {"type": "base64", "data": "AAAA"}})
        if answers and draw(st.integers(0, 9)) == 0:
            answers[0].pop(draw(st.sampled_from(["content", "tool_use_id", "type"])), None)
        messages.append({"role": "user", "content": answers if draw(st.integers(0, 9)) else draw(st.sampled_from(["typed", None]))})
        if draw(st.integers(0, 6)) == 0:
            messages.append({"role": "user", "content": [{"type": "text", "text": "and another thing"}]})
    return messages


def same_equalities(keys: list, oracle: list) -> bool:
    return all((keys[i] == keys[j]) == (oracle[i] == oracle[j]) for i in range(len(keys)) for j in range(len(keys)))


def uses_of(messages: list[dict]) -> list[dict]:
    return [b for m in messages if m["role"] == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "tool_use"]


# --- finding the calls and their keys -------------------------------------------------------------


@PROPERTY
@given(odd_conversations())
def test_find_calls_matches_the_plain_scan(messages: list[dict]) -> None:
    keys: list = []
    assert find_calls(messages, keys) == plain_find_calls(messages)
    assert find_calls(messages) == plain_find_calls(messages)
    assert keys == [call_key(u) for u in uses_of(messages)]


@PROPERTY
@given(odd_conversations())
def test_keys_are_equal_exactly_when_the_plain_keys_are(messages: list[dict]) -> None:
    uses = uses_of(messages)
    keys: list = []
    find_calls(messages, keys)
    assert len({*keys}) <= len(keys)  # hashable
    assert same_equalities(keys, [plain_key(u) for u in uses])


def test_keys_of_odd_arguments_are_equal_exactly_when_the_plain_keys_are() -> None:
    nan = math.nan
    inputs = [
        {"command": "ls"}, {"command": "ls"}, {"command": "ls "}, {"path": "ls"},
        {"a": 1, "b": "x"}, {"b": "x", "a": 1}, {"b": "x", "a": 1.0}, {"b": "x", "a": True}, {"b": "x", "a": "1"},
        {"a": 1}, {"a": 1.0}, {"a": True}, {"a": "1"}, {"a": None}, {"a": "None"},
        {"path": "é🙂"}, {"path": "e🙂"}, {"é": "🙂", "a": "b"}, {"a": "b", "é": "🙂"},
        {"paths": ["a"]}, {"paths": ["a"]}, {"paths": ("a",)}, {"paths": ["a", "b"]},
        {"x": {"b": 1, "a": 2}}, {"x": {"a": 2, "b": 1}}, {"x": {"a": 2}, "y": 1}, {"y": 1, "x": {"a": 2}},
        {"s": {1, 2}}, {"s": {2, 1}}, {"s": frozenset({1, 2})}, {"s": frozenset({2, 1})}, {"b": b"x"}, {"b": "x"},
        {1: "a", 2: "b"}, {2: "b", 1: "a"}, {1.0: "a", 2: "b"}, {1: "a"}, {1.0: "a"}, {"1": "a"},
        {1: ["a"], 2: "b"}, {2: "b", 1: ["a"]},
        {}, {}, None, None, "ls", ["ls"], ["ls"], 5,
        MappingProxyType({"command": "ls"}), MappingProxyType({"a": 1, "b": "x"}),
        {"n": nan}, {"n": nan}, {"n": float("nan")}, {"n": nan, "m": 1}, {"m": 1, "n": nan},
    ]
    uses = [{"type": "tool_use", "id": f"t{i}", "name": name, "input": args}
            for i, args in enumerate(inputs) for name in ("bash", "read", None)]
    keys = [call_key(u) for u in uses]
    assert len({*keys}) <= len(keys)
    assert same_equalities(keys, [plain_key(u) for u in uses])


def test_a_key_in_the_scan_is_the_key_of_its_block() -> None:
    """The scan computes the usual key inline: it is call_key's, for every shape of message."""
    messages = [{"role": "user", "content": "go"}]
    for i, args in enumerate([{"command": "é🙂"}, {"command": 1}, {"a": "x", "b": "y"}, {"p": ["x"]}, None, {}]):
        use = {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": args}
        lead = [{"type": "text", "text": "Looking."}] if i % 2 else []
        messages += [{"role": "assistant", "content": [*lead, use]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}]
    keys: list = []
    find_calls(messages, keys)
    assert keys == [call_key(u) for u in uses_of(messages)]
    assert keys[0] == ("bash", "command", "é🙂") and keys[2] == ("bash", "a", "x", "b", "y")


# --- applying a plan ------------------------------------------------------------------------------


@PROPERTY
@given(odd_conversations(), st.data())
def test_apply_plan_matches_the_plain_edit(messages: list[dict], data: st.DataObject) -> None:
    forget_memos()
    calls = find_calls(messages)
    plan = data.draw(st.lists(st.sampled_from([None, DROP, DROP, TRUNCATE, CLEAR]), min_size=len(calls), max_size=len(calls)))
    expected, marks = plain_apply(messages, calls, plan)
    out = apply_plan(messages, calls, plan, "test")
    assert out.messages == expected
    assert out.marks == marks
    own = {id(m) for m in messages}
    assert [id(m) in own for m in out.messages] == [id(m) in own for m in expected]


def remnant(text: object) -> list[dict]:
    """Text before a call that is dropped, between two calls that stay."""
    def call(i: int, lead: list) -> list[dict]:
        return [{"role": "assistant", "content": [*lead, {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": f"c{i}"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}]
    return [{"role": "user", "content": "go"}, *call(0, []), *call(1, [{"type": "text", "text": text}]), *call(2, [])]


def test_a_remnant_of_blank_text_is_removed_as_str_strip_would_say() -> None:
    for text in ["", " ", "\n\t", "\u2003\u00a0\u3000"]:
        messages = remnant(text)
        out = apply_plan(messages, find_calls(messages), [None, DROP, None], "test").messages
        assert out == [messages[0], messages[1], messages[2], messages[5], messages[6]], repr(text)


def test_a_remnant_of_text_stays_whatever_its_type() -> None:
    for text in ["ok", " é ", 5, None]:
        messages = remnant(text)
        out = apply_plan(messages, find_calls(messages), [None, DROP, None], "test").messages
        assert out[3] == {"role": "assistant", "content": [{"type": "text", "text": text}, messages[5]["content"][0]]}, repr(text)


def test_merging_keeps_an_assistants_leading_thinking_first() -> None:
    messages = [{"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                {"role": "assistant", "content": "b"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "c"}]}]
    assert merge_roles(messages) == plain_merge(messages) == [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t"}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
        {"type": "text", "text": "c"}]}]
