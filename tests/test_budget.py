"""The token budget pass (budget.py): cut the largest tool results first, the newest last, then
drop the oldest calls; never the person's text, never a call without its result."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from scout_tui.engine.budget import FLOOR, Estimator, fit
from scout_tui.engine.compaction import estimate_tokens
from scout_tui.engine.history import problems
from scout_tui.core.messages import result_text

TASK = "Please refactor the parser; keep the public API."


def filler(i: int, size: int) -> str:
    """``size`` characters that start with ``HEAD{i}`` and end with ``TAIL{i}``."""
    head, tail = f"HEAD{i}:", f":TAIL{i}"
    return head + (f"line {i} of the output\n" * (size // 20 + 1))[: size - len(head) - len(tail)] + tail


def conversation(sizes: list[int], task: str = TASK) -> list[dict]:
    """The person's ``task``, then one tool call per size, each answered by a result of that many
    characters (ids t0, t1, ...: t0 the oldest)."""
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": task}]}]
    for i, size in enumerate(sizes):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": filler(i, size), "is_error": False}]})
    return messages


def results(messages: list[dict]) -> dict[str, str]:
    """tool_use id -> result text, for every result in ``messages``."""
    return {b["tool_use_id"]: result_text(b["content"]) for m in messages if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def user_texts(messages: list[dict]) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "text"]


def test_a_prompt_within_the_budget_is_returned_as_it_is():
    messages = conversation([2000, 2000])
    fitted = fit(messages, budget=10_000)
    assert fitted.messages is messages
    assert (fitted.cut, fitted.dropped, fitted.fits, fitted.first_changed) == (0, 0, True, None)


def test_the_largest_results_are_cut_first_and_the_small_ones_kept_whole():
    messages = conversation([12_000, 800, 9_000, 700, 3_000])
    budget = estimate_tokens(messages) - 3_000  # 12,000 characters to free
    fitted = fit(messages, budget)
    before, after = results(messages), results(fitted.messages)
    assert fitted.fits and fitted.dropped == 0
    assert {t for t in before if after[t] != before[t]} == {"t0", "t2"}  # only the two largest
    assert after["t4"] == before["t4"]  # the newest stays whole while older ones can give
    assert fitted.tokens <= budget


def test_the_newest_result_is_cut_last_to_its_head_and_tail_with_the_saved_path():
    messages = conversation([600, 600, 40_000])
    budget = estimate_tokens(messages) - 8_000
    fitted = fit(messages, budget, saved={"t2": "/data/tool-output/t2.txt"})
    newest = results(fitted.messages)["t2"]
    assert fitted.fits and fitted.dropped == 0
    assert len(newest) < 40_000
    assert newest.startswith("HEAD2:") and newest.endswith(":TAIL2")
    assert "/data/tool-output/t2.txt" in newest and "cut to fit the context window" in newest
    # The older results were cut first, down to the floor, before the newest was touched.
    assert all(len(results(fitted.messages)[t]) <= 600 for t in ("t0", "t1"))


def test_the_cut_note_names_no_path_when_the_output_was_not_saved():
    messages = conversation([40_000])
    fitted = fit(messages, estimate_tokens(messages) - 5_000)
    newest = results(fitted.messages)["t0"]
    assert "cut to fit the context window" in newest and "whole output is in" not in newest


def test_cutting_is_enough_when_the_results_are_large_no_call_is_dropped():
    messages = conversation([5_000] * 12 + [1_000])
    budget = estimate_tokens(messages) // 2
    fitted = fit(messages, budget)
    assert fitted.fits and fitted.dropped == 0, (fitted.cut, fitted.dropped, fitted.tokens, budget)
    assert [t for t, text in results(fitted.messages).items()] == [f"t{i}" for i in range(13)]


def test_a_cut_never_makes_a_result_longer():
    messages = conversation([FLOOR + 60] * 30 + [FLOOR + 60])
    fitted = fit(messages, estimate_tokens(messages) - 300)
    before, after = results(messages), results(fitted.messages)
    assert all(len(after[t]) <= len(before[t]) for t in after), [
        (t, len(before[t]), len(after[t])) for t in after if len(after[t]) > len(before[t])]


def test_the_oldest_calls_are_dropped_when_cutting_is_not_enough_and_the_newest_stays():
    messages = conversation([FLOOR] * 40)
    budget = estimate_tokens(messages) // 3
    fitted = fit(messages, budget)
    kept = list(results(fitted.messages))
    assert fitted.fits and fitted.dropped > 0
    assert kept == [f"t{i}" for i in range(40 - len(kept), 40)]  # the newest ones, in order
    assert "t39" in kept
    assert problems(fitted.messages) == []
    assert user_texts(fitted.messages) == [TASK]
    assert fitted.marks["t0"] == "dropped"


def test_the_persons_text_alone_over_the_budget_does_not_fit_and_is_never_cut():
    task = "Here is the log you asked for:\n" + "E" * 40_000
    messages = conversation([3_000, 3_000], task=task)
    fitted = fit(messages, budget=2_000)
    assert fitted.fits is False
    assert user_texts(fitted.messages) == [task]
    assert problems(fitted.messages) == []


def test_the_input_is_not_mutated_and_untouched_messages_are_shared():
    messages = conversation([10_000, 500, 500])
    snapshot = copy.deepcopy(messages)
    fitted = fit(messages, estimate_tokens(messages) - 1_500)
    assert messages == snapshot
    assert fitted.messages[0] is messages[0] and fitted.messages[-1] is messages[-1]
    assert fitted.first_changed == 2  # the message holding the result that was cut


def test_the_estimate_uses_the_learnt_ratio():
    messages = conversation([4_000])
    plain = Estimator()
    doubled = Estimator(ratio=2.0)
    assert doubled.tokens(messages, overhead=100) == 2 * plain.tokens(messages, overhead=100)
    # A budget the plain estimate meets is missed once the server has said tokens are twice as many.
    budget = plain.tokens(messages) + 10
    assert fit(messages, budget, plain).first_changed is None
    assert fit(messages, budget, doubled).first_changed is not None


def test_the_estimator_moves_towards_what_the_server_reports():
    estimator = Estimator()
    estimator.learn(estimated=1_000, reported=1_500)
    assert estimator.ratio == 1.5  # the first sample is taken as it is
    estimator.learn(estimated=1_000, reported=1_000)
    assert 1.0 < estimator.ratio < 1.5  # one odd request does not swing it all the way
    for _ in range(30):
        estimator.learn(estimated=2_000, reported=2_400)
    assert abs(estimator.ratio - 1.2) < 0.01


def test_the_estimator_ignores_empty_reports_and_stays_within_its_bounds():
    estimator = Estimator()
    estimator.learn(estimated=0, reported=500)
    estimator.learn(estimated=500, reported=0)
    assert (estimator.ratio, estimator.samples) == (1.0, 0)
    estimator.learn(estimated=100, reported=100_000)
    assert estimator.ratio == 3.0
    for _ in range(40):
        estimator.learn(estimated=100_000, reported=10)
    assert 0.5 <= estimator.ratio < 0.501


def _random_conversation(draw) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "task " + "t" * draw(st.integers(0, 3000))}]}]
    rounds = draw(st.integers(0, 12))
    n = 0
    for r in range(rounds):
        calls = draw(st.integers(1, 3))
        content: list[dict] = []
        if draw(st.booleans()):
            content.append({"type": "text", "text": f"step {r}"})
        ids = []
        for _ in range(calls):
            ids.append(f"t{n}")
            content.append({"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"command": "x" * draw(st.integers(0, 300))}})
            n += 1
        messages.append({"role": "assistant", "content": content})
        answer = [{"type": "tool_result", "tool_use_id": tid, "content": "r" * draw(st.integers(0, 9000)),
                   "is_error": False} for tid in ids]
        if draw(st.integers(0, 4)) == 0:  # the person wrote after an interrupted round
            answer.append({"type": "text", "text": f"note from the person {r}"})
        messages.append({"role": "user", "content": answer})
    if draw(st.booleans()):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": "and another thing"}]})
    return messages


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_fitted_prompt_is_a_valid_history_that_keeps_the_persons_text(data):
    messages = data.draw(st.builds(lambda: None).flatmap(lambda _: st.composite(lambda d: _random_conversation(d))()))
    budget = data.draw(st.integers(50, estimate_tokens(messages) + 100))
    ratio = data.draw(st.sampled_from([0.8, 1.0, 1.3]))
    snapshot = json.dumps(messages)
    fitted = fit(messages, budget, Estimator(ratio=ratio), overhead=data.draw(st.integers(0, 500)))
    assert json.dumps(messages) == snapshot  # never mutated
    assert problems(fitted.messages) == []
    assert user_texts(fitted.messages) == user_texts(messages)
    if fitted.fits:
        assert fitted.tokens <= budget
    # Whatever is left of a call is still paired, and the newest call is never dropped.
    calls = [b["id"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    if calls:
        assert calls[-1] in results(fitted.messages)
