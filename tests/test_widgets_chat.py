"""ChatView: prompts, streamed answers, tool-call lines, notices, stored conversations."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Region
from textual.widget import Widget

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, ChatView
from scout_tui.widgets.chat_view import (
    LOAD_LIMIT,
    AssistantMessage,
    MarkdownChunk,
    Notice,
    ThinkingBlock,
    ToolCallLine,
    UserMessage,
    last_cut,
    split_markdown,
)


class ChatApp(App):
    BINDINGS = [Binding("f5", "ping", "Ping")]

    def __init__(self) -> None:
        super().__init__()
        self.pings: list[bool] = []  # for each ping: was the answer still being drawn?

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat")

    def action_ping(self) -> None:
        answers = list(self.query(AssistantMessage))
        self.pings.append(bool(answers) and not answers[-1].done)


def rendered(widget: Widget) -> str:
    """The text a widget (or, for a container, its descendants) shows on screen."""
    if widget.children:
        return "\n".join(rendered(child) for child in widget.children if child.display)
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)


async def finished(answer: AssistantMessage) -> None:
    while not answer.done:
        await asyncio.sleep(0.01)


def long_answer(sections: int) -> str:
    out = []
    for i in range(sections):
        out.append(f"## Part {i}\n\nParagraph {i} explains *why* the loop stays responsive.\n\n")
        out.append(f"- item {i}.a\n- item {i}.b\n\n```python\ndef f{i}(x):\n    return x * {i}\n```\n\n")
    return "".join(out) + "The end."


async def test_user_text_is_shown_literally_not_as_markup():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.add_user("[bold]x[/] and [link=https://evil]y[/link]")
        await pilot.pause()
        assert "[bold]x[/] and [link=https://evil]y[/link]" in rendered(app.query_one(UserMessage))


async def test_streaming_2000_deltas_ends_with_the_whole_text_and_keys_work_meanwhile():
    answer = long_answer(300)
    deltas = [answer[i : i + 20] for i in range(0, len(answer), 20)]
    assert len(deltas) >= 2000
    app = ChatApp()
    async with app.run_test(size=(100, 30)) as pilot:
        chat = app.query_one(ChatView)
        chat.begin_assistant()
        message = chat.current
        assert message is not None
        for delta in deltas:
            chat.append_delta("text", delta)
        chat.end_assistant({"role": "assistant", "content": [{"type": "text", "text": answer}]})
        await pilot.press("f5")
        await finished(message)
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
        chat.begin_assistant()
        message = chat.current
        assert message is not None
        chat.append_delta("thinking", "Let me look at the ")
        chat.append_delta("thinking", "tests first.")
        chat.append_delta("text", "Done.")
        chat.end_assistant(None)
        await finished(message)
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
        chat.begin_assistant()
        message = chat.current
        assert message is not None
        chat.end_assistant({"role": "assistant", "content": [{"type": "text", "text": "From the *final* message."}]})
        await finished(message)
        await pilot.pause()
        assert "From the final message." in rendered(message.query_one(MarkdownChunk))


async def test_interrupted_answer_is_marked():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.begin_assistant()
        message = chat.current
        assert message is not None
        chat.append_delta("text", "Half an ans")
        chat.end_assistant(None, interrupted=True)
        await finished(message)
        await pilot.pause()
        assert "(interrupted)" in rendered(message)
        assert "Half an ans" in rendered(message)


async def test_streamed_escape_sequences_never_reach_the_screen():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.begin_assistant()
        message = chat.current
        assert message is not None
        chat.append_delta("text", "copy \x1b]52;c;cm0gLXJmIH4=\x07this \x1b[31mred\x1b[0m")
        chat.end_assistant(None)
        await finished(message)
        assert message.source == "copy this red"


async def test_tool_call_line_runs_then_shows_ok_or_error_with_elapsed():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.add_tool_call("t1", "read", {"path": "src/app.py"})
        chat.add_tool_call("t2", "bash", {"command": "make test\nmore"})
        await pilot.pause()
        first, second = app.query(ToolCallLine)
        assert rendered(first).strip() == "▸ read  src/app.py"
        assert first.has_class("-running")
        chat.finish_tool_call("t1", False, 0.42)
        chat.finish_tool_call("t2", True, 3.0)
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
        chat.add_user("new question")
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = rendered(chat)
        assert shown.index("stored question") < shown.index("stored answer") < shown.index("new question")


async def test_clear_removes_everything():
    app = ChatApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.add_user("hi")
        chat.add_tool_call("t1", "read", {"path": "a"})
        await pilot.pause()
        chat.clear()
        await pilot.pause()
        assert not chat.children


def test_split_markdown_cuts_only_between_blocks_outside_fences():
    source = long_answer(40)
    chunks, rest = split_markdown(source, size=300)
    assert len(chunks) > 5
    assert "".join(chunks) + rest == source
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0  # no chunk ends inside a code fence


def test_split_markdown_closes_and_reopens_a_long_fence():
    code = "".join(f"x{i} = {i}\n" for i in range(2_000))
    chunks, rest = split_markdown(f"Intro.\n\n```python\n{code}```\n\nOutro.\n", size=4_000)
    pieces = [*chunks, rest]
    assert len(pieces) > 3
    assert all(p.count("```") % 2 == 0 for p in pieces[:-1])
    assert pieces[1].startswith("```python\n")


def test_last_cut_keeps_the_unfinished_block_live():
    head, rest = last_cut("# Title\n\nA paragraph.\n\nStill writ")
    assert (head, rest) == ("# Title\n\nA paragraph.\n\n", "Still writ")
    head, rest = last_cut("Text.\n\n```\ncode\n\nmore code")
    assert rest == "```\ncode\n\nmore code"  # a blank line inside a fence is not a block end


async def test_chat_follows_new_output_until_the_person_scrolls_up():
    app = ChatApp()
    async with app.run_test(size=(60, 10)) as pilot:
        chat = app.query_one(ChatView)
        for i in range(20):
            chat.add_user(f"message {i}")
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
            chat.add_user(f"message {i}")
        await pilot.pause()
        chat.scroll_to(y=0, animate=False)
        await pilot.pause()
        chat.add_user("a new question")
        chat.begin_assistant()
        for _ in range(30):
            chat.append_delta("text", "more answer text\n\n")
        chat.end_assistant(None)
        await finished(chat.query(AssistantMessage).last())
        await pilot.pause()
        assert chat.scroll_y == chat.max_scroll_y > 0
