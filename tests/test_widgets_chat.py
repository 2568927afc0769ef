"""ChatView: prompts, streamed answers, tool-call lines, notices, stored conversations.
(The answer's lifecycle: test_widgets_chat_lifecycle.py; the markdown cutter: test_markdown_cut.py.)"""

from __future__ import annotations

from scout_tui.widgets import ChatView
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_markdown import MarkdownChunk
from scout_tui.widgets.chat_messages import Notice, ThinkingBlock, ToolCallLine, UserMessage
from scout_tui.widgets.chat_view import LOAD_LIMIT
from tests.chat_helpers import ChatApp, finished, long_answer, rendered, text


async def test_user_text_is_shown_literally_not_as_markup():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(0, text("user", "[bold]x[/] and [link=https://evil]y[/link]"))
        await pilot.pause()
        assert "[bold]x[/] and [link=https://evil]y[/link]" in rendered(app.query_one(UserMessage))


async def test_user_text_that_looks_like_html_is_shown_as_written():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(0, text("user", "why <<Files staged successfully>> and <div> <!-- x --> <br/>?"))
        await pilot.pause()
        assert "why <<Files staged successfully>> and <div> <!-- x --> <br/>?" in rendered(app.query_one(UserMessage))


async def test_streaming_2000_deltas_ends_with_the_whole_text_and_keys_work_meanwhile():
    answer = long_answer(300)
    deltas = [answer[i : i + 20] for i in range(0, len(answer), 20)]
    assert len(deltas) >= 2000
    app = ChatApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chat = app.query_one(ChatView)
        for delta in deltas:
            chat.assistant_delta("text", delta)
        message = chat.current
        assert message is not None
        chat.assistant_message(1, text("assistant", answer))
        await pilot.press("f5")
        await finished(pilot, message)
        await pilot.pause()
        assert app.pings == [True]  # the key ran while the answer was still being drawn
        assert message.source == answer
        chunks = list(message.query(MarkdownChunk))
        assert len(chunks) > 1
        assert "".join(chunk.source for chunk in chunks) == answer
        assert "The end." in rendered(chunks[-1])


async def test_thinking_goes_to_a_separate_block_not_the_answer():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("thinking", "Let me look at the ")
        chat.assistant_delta("thinking", "tests first.")
        chat.assistant_delta("text", "Done.")
        message = chat.current
        assert message is not None
        chat.assistant_message(1, {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me look at the tests first."}, {"type": "text", "text": "Done."}]})
        await finished(pilot, message)
        await pilot.pause()
        thinking = message.query_one(ThinkingBlock)
        assert thinking.text == "Let me look at the tests first."
        assert rendered(thinking).startswith("✻ Thinking  (31 chars, click to expand)")
        assert "tests first." not in rendered(thinking)  # folded once finished
        assert message.source == "Done."
        await pilot.click(ThinkingBlock)
        await pilot.pause()
        assert "Let me look at the tests first." in rendered(thinking)


async def test_final_message_text_is_shown_when_nothing_streamed():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_message(1, text("assistant", "From the *final* message."))
        message = chat.query_one(AssistantMessage)
        await finished(pilot, message)
        await pilot.pause()
        assert "From the final message." in rendered(message.query_one(MarkdownChunk))


async def test_interrupted_answer_is_marked():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.assistant_delta("text", "Half an ans")
        message = chat.current
        assert message is not None
        chat.stream_interrupted()
        await finished(pilot, message)
        await pilot.pause()
        assert "(cut off)" in rendered(message)
        assert "Half an ans" in rendered(message)


async def test_streamed_escape_sequences_never_reach_the_screen():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        raw = "copy \x1b]52;c;cm0gLXJmIH4=\x07this \x1b[31mred\x1b[0m"
        chat.assistant_delta("text", raw)
        message = chat.current
        assert message is not None
        chat.assistant_message(1, text("assistant", raw))
        await finished(pilot, message)
        assert message.source == "copy this red"


async def test_tool_call_line_runs_then_shows_ok_or_error_with_elapsed():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.tool_call_started("t1", "read", {"path": "src/app.py"})
        chat.tool_call_started("t2", "bash", {"command": "make test\nmore"})
        await pilot.pause()
        first, second = app.query(ToolCallLine)
        assert rendered(first).strip() == "▸ read  src/app.py"
        assert first.has_class("-running")
        chat.tool_call_ended("t1", False, 0.42)
        chat.tool_call_ended("t2", True, 3.0)
        await pilot.pause()
        assert rendered(first).strip() == "✓ read  src/app.py  0.4s"
        assert first.has_class("-ok") and not first.has_class("-running")
        assert rendered(second).strip() == "✗ bash  make test  3.0s"
        assert second.has_class("-error")


async def test_notice_renders_markdown_with_its_level():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.add_notice("No **API key** found: set `ANTHROPIC_API_KEY`.", "error")
        await pilot.pause()
        notice = app.query_one(Notice)
        assert notice.has_class("-error")
        text = rendered(notice)
        assert "No API key found: set ANTHROPIC_API_KEY." in text
        assert "**" not in text


async def test_load_mounts_only_the_newest_messages_and_marks_tool_results():
    messages: list[dict] = []
    for i in range(60):
        messages.append({"role": "user", "content": f"question {i}"})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    messages.append({"role": "user", "content": "run it"})
    messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": "t9", "name": "bash", "input": {"command": "false"}}]})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "exit 1", "is_error": True}]})
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.load(messages)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert f"{123 - LOAD_LIMIT} earlier messages not shown" in rendered(chat.query_one(".earlier"))
        # of the LOAD_LIMIT shown, a tool_use and a tool_result have no text
        assert len(chat.query(UserMessage)) + len(chat.query(AssistantMessage)) == LOAD_LIMIT - 2
        assert "answer 59" in rendered(chat.query(AssistantMessage).last())
        line = chat.query_one(ToolCallLine)
        assert line.status == "error"
        assert rendered(line).strip() == "✗ bash  false"


async def test_a_prompt_sent_right_after_load_comes_after_the_stored_conversation():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.load([{"role": "user", "content": "stored question"}, {"role": "assistant", "content": "stored answer"}])
        chat.user_message(2, text("user", "new question"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = rendered(chat)
        assert shown.index("stored question") < shown.index("stored answer") < shown.index("new question")


async def test_clear_removes_everything():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(0, text("user", "hi"))
        chat.tool_call_started("t1", "read", {"path": "a"})
        await pilot.pause()
        chat.clear()
        await pilot.pause()
        assert not chat.children


async def test_chat_follows_new_output_until_the_person_scrolls_up():
    app = ChatApp()
    async with app.run_test(size=(60, 10)) as pilot:
        chat = app.query_one(ChatView)
        for i in range(20):
            chat.user_message(i, text("user", f"message {i}"))
        await pilot.pause()
        assert chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y
        chat.scroll_to(y=0, animate=False)  # what a wheel or PageUp does
        chat.add_notice("output arriving while reading")
        await pilot.pause()
        assert chat.scroll_y == 0
        chat.action_follow()
        chat.add_notice("latest")
        await pilot.pause()
        assert chat.scroll_y == chat.max_scroll_y


async def test_sending_a_prompt_while_scrolled_up_follows_its_answer_again():
    app = ChatApp()
    async with app.run_test(size=(60, 10)) as pilot:
        chat = app.query_one(ChatView)
        for i in range(20):
            chat.user_message(i, text("user", f"message {i}"))
        await pilot.pause()
        chat.scroll_to(y=0, animate=False)
        await pilot.pause()
        chat.user_message(20, text("user", "a new question"))
        for _ in range(30):
            chat.assistant_delta("text", "more answer text\n\n")
        chat.assistant_message(21, text("assistant", "more answer text\n\n" * 30))
        await finished(pilot, chat.query(AssistantMessage).last())
        await pilot.pause()
        assert chat.scroll_y == chat.max_scroll_y > 0
