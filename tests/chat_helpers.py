"""Helpers shared by the ChatView tests: host apps, conversations, and waits on conditions
(never on durations)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Input

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, ChatView
from scout_tui.widgets.assistant_message import AnswerState, AssistantMessage
from tests.conftest import wait_until


class ChatApp(App):
    """A chat alone; ``f5`` records whether the newest answer was still being drawn."""

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


class SelectApp(App):
    """A chat above an input (the composer's stand-in, focused at start); records what the chat posts."""

    def __init__(self) -> None:
        super().__init__()
        self.forks: list[tuple[int, str]] = []
        self.selections: list[tuple[int | None, str]] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat")
        yield Input(id="composer")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_chat_view_fork_requested(self, message: ChatView.ForkRequested) -> None:
        self.forks.append((message.at, message.prompt))

    def on_chat_view_selected(self, message: ChatView.Selected) -> None:
        self.selections.append((message.index, message.role))


def rendered(widget: Widget) -> str:
    """The text a widget (or, for a container, its descendants) shows on screen."""
    if widget.children:
        return "\n".join(rendered(child) for child in widget.children if child.display)
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)


async def finished(pilot, answer: AssistantMessage) -> None:
    """Until ``answer``'s pump has put its last widget in place, then one frame more.

    Awaits the pump itself (a worker), so it takes as long as the pump needs on this machine.
    """
    assert answer.state is not AnswerState.STREAMING, "an open answer never finishes: end it first"
    await wait_until(pilot, lambda: answer.is_mounted, what="the answer mounted")
    for worker in list(pilot.app.workers):
        if worker.node is answer:
            await worker.wait()
    await pilot.pause()
    assert answer.done


def long_answer(sections: int) -> str:
    out = []
    for i in range(sections):
        out.append(f"## Part {i}\n\nParagraph {i} explains *why* the loop stays responsive.\n\n")
        out.append(f"- item {i}.a\n- item {i}.b\n\n```python\ndef f{i}(x):\n    return x * {i}\n```\n\n")
    return "".join(out) + "The end."


def text(role: str, body: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": body}]}


def dialogue(count: int) -> list[dict]:
    """``count`` messages, user and assistant in turn, each saying its own index."""
    return [text("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(count)]


WITH_TOOLS = [
    text("user", "what is in notes.txt?"),
    {"role": "assistant", "content": [{"type": "text", "text": "Let me read it."},
                                      {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "notes.txt"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"}]},
    text("assistant", "It says **42**."),
    text("user", "and in todo.txt?"),
    text("assistant", "Nothing yet."),
]


async def loaded(app: App, pilot, messages: list[dict]) -> ChatView:
    """The app's chat once ``messages`` are loaded and mounted."""
    chat = app.query_one(ChatView)
    chat.load(messages)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return chat


def selected_index(chat: ChatView) -> int | None:
    """The selected message's index; the one selected is the only child marked so."""
    assert chat.selected is not None
    assert [w for w in chat.children if w.has_class("-selected")] == [chat.selected]
    return chat.selected.index
