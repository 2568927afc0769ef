"""ChatView: compaction markers where a summary cut the conversation, live and stored (also in
batches mounted later), never taking part in message selection."""

from __future__ import annotations

from scout_tui.widgets import ChatView, CompactionMarker
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_messages import UserMessage
from scout_tui.widgets.chat_view import LOAD_LIMIT
from tests.chat_helpers import SelectApp, dialogue, loaded, selected_index, text


def compaction(count: int, at: int | None = None) -> dict:
    at = count - 2 if at is None else at
    return {"at": at, "count": count, "summary": f"Summary of the first {at} messages.", "model": "m",
            "tokens_before": 50_000, "tokens_after": 2_000, "by": "user", "event_id": count, "session_id": "s"}


def sequence(chat: ChatView) -> list[str]:
    """The chat's children in order: message indices, ``⊟count`` for markers, others by class."""
    out = []
    for widget in chat.children:
        if isinstance(widget, (UserMessage, AssistantMessage)):
            out.append(str(widget.index))
        elif isinstance(widget, CompactionMarker):
            out.append(f"⊟{widget.count}")
        else:
            out.append(type(widget).__name__)
    return out


class MarkerSelectApp(SelectApp):
    def __init__(self) -> None:
        super().__init__()
        self.undo: list[int] = []

    def on_compaction_marker_undo_requested(self, event: CompactionMarker.UndoRequested) -> None:
        self.undo.append(event.count)


async def test_a_stored_compaction_sits_just_before_the_message_at_its_count():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.load(dialogue(6), [compaction(4)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert sequence(chat) == ["0", "1", "2", "3", "⊟4", "4", "5"]


async def test_a_compaction_made_at_the_end_of_the_stored_conversation_comes_last():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.load(dialogue(6), [compaction(2), compaction(6)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert sequence(chat) == ["0", "1", "⊟2", "2", "3", "4", "5", "⊟6"]


async def test_a_compaction_in_an_earlier_batch_is_mounted_with_that_batch():
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await loaded(app, pilot, [])  # settle the first layout
        total = LOAD_LIMIT + 10
        chat.load(dialogue(total), [compaction(4)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "⊟4" not in sequence(chat)  # not mounted yet: its batch is not
        for _ in range(3):
            chat.scroll_to(y=0, animate=False)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert chat.loaded_count == total
        assert sequence(chat) == [*map(str, range(4)), "⊟4", *map(str, range(4, total))]


async def test_a_live_compaction_comes_after_the_turn_and_selection_skips_it():
    app = MarkerSelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(4))
        chat.user_message(4, text("user", "and now?"))
        chat.assistant_message(5, text("assistant", "done"))
        marker = chat.add_compaction(compaction(6))
        await pilot.pause()
        assert sequence(chat)[-3:] == ["4", "5", "⊟6"] and isinstance(marker, CompactionMarker)
        chat.load(dialogue(6), [compaction(3)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        chat.focus()
        await pilot.pause()
        assert selected_index(chat) == 5
        await pilot.press("up", "up", "up")  # 5 -> 4 -> 3 -> 2: over the marker before 3
        assert selected_index(chat) == 2
        await pilot.press("down", "f")
        await pilot.pause()
        assert app.forks == [(4, "")]


async def test_u_on_a_focused_marker_in_the_chat_asks_to_undo_that_compaction():
    app = MarkerSelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, [])
        chat.load(dialogue(6), [compaction(4)])
        await app.workers.wait_for_complete()
        await pilot.pause()
        chat.query_one(CompactionMarker).query_one("CollapsibleTitle").focus()
        await pilot.press("u")
        await pilot.pause()
        assert app.undo == [4] and app.forks == []
