"""ChatView driven by the agent's events: when an answer opens and ends, one lifecycle state per
answer, and message positions that come from the events."""

from __future__ import annotations

from scout_tui.widgets import ChatView
from scout_tui.widgets.assistant_message import AnswerState, AssistantMessage
from scout_tui.widgets.chat_messages import ToolCallLine, UserMessage
from tests.chat_helpers import ChatApp, SelectApp, finished, rendered, text
from tests.conftest import wait_until

TOOL_USE_ONLY = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]}


def results(*outcomes: tuple[str, bool]) -> dict:
    """A user message of ``tool_result`` blocks: ``(tool_use_id, is_error)`` each."""
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "x", "is_error": is_error}
                                        for tool_use_id, is_error in outcomes]}


async def test_a_delta_opens_a_streaming_answer_and_the_next_ones_grow_it():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        assert chat.current is None
        chat.assistant_delta("text", "Hello")
        answer = chat.current
        assert answer is not None and answer.state is AnswerState.STREAMING
        chat.assistant_delta("text", ", world")
        assert chat.current is answer
        assert len(chat.query(AssistantMessage)) == 1
        assert answer.source == "Hello, world"
        chat.assistant_message(1, text("assistant", "Hello, world"))
        await finished(pilot, answer)


async def test_the_final_message_ends_the_open_answer_without_a_second_one():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "All done.")
        answer = chat.current
        assert answer is not None
        chat.assistant_message(3, text("assistant", "All done."))
        assert answer.state is AnswerState.FINISHING
        assert chat.current is None  # closed at once: a delta now would open a new answer
        await finished(pilot, answer)
        assert answer.state is AnswerState.DONE
        assert answer.index == 3
        assert list(chat.query(AssistantMessage)) == [answer]


async def test_a_delta_after_an_interrupt_opens_a_new_answer():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "Half an ans")
        first = chat.current
        assert first is not None
        chat.stream_interrupted()
        assert chat.current is None
        chat.assistant_delta("text", "A new answer.")
        second = chat.current
        assert second is not None and second is not first
        chat.assistant_message(2, text("assistant", "A new answer."))
        await finished(pilot, first)
        await finished(pilot, second)
        assert first.state is AnswerState.INTERRUPTED and first.index is None
        assert second.state is AnswerState.DONE and second.index == 2
        assert "(cut off)" in rendered(first) and "(cut off)" not in rendered(second)
        assert [a.source for a in chat.query(AssistantMessage)] == ["Half an ans", "A new answer."]


async def test_stream_interrupted_with_nothing_open_does_nothing():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.stream_interrupted()
        await pilot.pause()
        assert not chat.children
        chat.assistant_message(1, text("assistant", "Complete."))
        answer = chat.query_one(AssistantMessage)
        await finished(pilot, answer)
        chat.stream_interrupted()  # the turn ends after its final message, as every turn does
        await pilot.pause()
        assert answer.state is AnswerState.DONE
        assert "(cut off)" not in rendered(answer)
        assert len(chat.query(AssistantMessage)) == 1


async def test_a_final_message_with_text_and_no_deltas_gets_an_answer_of_its_own():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_message(5, text("assistant", "Said *all at once*."))
        answer = chat.query_one(AssistantMessage)
        await finished(pilot, answer)
        assert answer.index == 5
        assert "Said all at once." in rendered(answer)


async def test_a_final_message_without_text_and_no_deltas_shows_nothing():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_message(1, TOOL_USE_ONLY)
        chat.assistant_message(3, {"role": "assistant", "content": [{"type": "text", "text": "  \n"}]})
        await pilot.pause()
        assert not chat.query(AssistantMessage)


async def test_an_interrupted_final_message_keeps_its_partial_text_and_index():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "Partial")
        answer = chat.current
        assert answer is not None
        chat.assistant_message(4, text("assistant", "Partial"), interrupted=True)
        await finished(pilot, answer)
        assert answer.state is AnswerState.INTERRUPTED and answer.index == 4
        assert "(cut off)" in rendered(answer)


async def test_a_user_message_of_tool_results_shows_nothing_and_marks_lines_still_running():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.tool_call_started("t1", "read", {"path": "a"})
        chat.tool_call_started("t2", "bash", {"command": "false"})
        chat.tool_call_ended("t1", False, 0.25)
        chat.user_message(2, results(("t1", False), ("t2", True)))
        await pilot.pause()
        assert not chat.query(UserMessage)
        first, second = chat.query(ToolCallLine)
        assert rendered(first).strip() == "✓ read  a  0.2s"  # its elapsed time stays
        assert rendered(second).strip() == "✗ bash  false"


async def test_clear_while_streaming_lets_the_next_delta_open_a_new_answer():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "From the old session")
        old = chat.current
        chat.clear()
        assert chat.current is None
        chat.assistant_delta("text", "From the new one")
        new = chat.current
        assert new is not None and new is not old
        await pilot.pause()
        assert list(chat.query(AssistantMessage)) == [new]


async def test_indices_from_the_events_decide_where_f_forks():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(10, text("user", "why?"))
        chat.assistant_delta("text", "Because.")
        answer = chat.current
        assert answer is not None
        chat.assistant_message(11, text("assistant", "Because."))
        await finished(pilot, answer)
        assert [w.index for w in chat.query(UserMessage)] == [10]
        assert answer.index == 11
        await pilot.press("tab", "f", "k", "f")
        await pilot.pause()
        assert app.forks == [(12, ""), (10, "why?")]


async def test_a_streaming_answer_has_no_index_until_its_final_message():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "Thinking out loud")
        await pilot.press("tab", "f")
        await pilot.pause()
        assert app.selections == [(None, "assistant")]
        assert app.forks == []  # nothing stored to fork at yet
        answer = chat.current
        assert answer is not None
        chat.assistant_message(1, text("assistant", "Thinking out loud"))
        await finished(pilot, answer)


async def test_a_message_added_to_the_loaded_list_before_it_mounts_shows_once():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        conversation = [text("user", "stored question"), text("assistant", "stored answer")]
        chat.load(conversation)
        # The app appends a new turn's message to the same list and shows it at once, before
        # the load worker has run.
        new = text("user", "new question")
        conversation.append(new)
        chat.user_message(2, new)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [m.text for m in chat.query(UserMessage)] == ["stored question", "new question"]


async def test_a_reopened_answer_reads_as_it_did_live():
    """Stored incomplete: marked "(cut off)" again; two text blocks: joined by a newline,
    as they streamed (``messages.message_text``), not run together."""
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        cut = {"role": "assistant", "content": [{"type": "text", "text": "Half an ans"}], "incomplete": True}
        two = {"role": "assistant", "content": [{"type": "text", "text": "First."}, {"type": "text", "text": "Then."}]}
        chat.load([text("user", "q"), cut, text("user", "again"), two])
        await app.workers.wait_for_complete()
        await pilot.pause()
        first, second = chat.query(AssistantMessage)
        assert first.state is AnswerState.INTERRUPTED and "(cut off)" in rendered(first)
        assert second.state is AnswerState.DONE and "(cut off)" not in rendered(second)
        assert second.source == "First.\nThen."


async def test_a_conversation_loaded_after_scrolling_up_opens_at_its_newest_message():
    app = ChatApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chat = app.query_one(ChatView)
        chat.load([text("user" if i % 2 == 0 else "assistant", f"first {i}") for i in range(30)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        chat.scroll_home(animate=False, immediate=True)  # the person scrolls up: the chat stops following
        await pilot.pause()
        assert chat.scroll_y < chat.max_scroll_y
        chat.load([text("user" if i % 2 == 0 else "assistant", f"second {i}") for i in range(30)])
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y,
                         what="the new conversation scrolled to its end")
        chat.add_notice("a notice after it")
        await wait_until(pilot, lambda: chat.scroll_y == chat.max_scroll_y, what="the chat following new output")


async def test_loading_a_new_session_starts_no_worker_to_build_nothing():
    # A worker made and never run (the app quitting at once) left "coroutine 'ChatView._load'
    # was never awaited" on the terminal after exit.
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(0, {"role": "user", "content": [{"type": "text", "text": "hi"}]})
        chat.load([])
        assert [w for w in app.workers if w.group == "chat-load"] == []
        await pilot.pause()
        assert list(chat.children) == [] and chat.loaded_count == 0
