"""ChatView: keyboard selection of messages, `f` to fork, stored indices, earlier batches on scroll-up.

Update the snapshot after an intended visual change with
`pytest --snapshot-update tests/test_widgets_chat_select.py`.
"""

from __future__ import annotations

from scout_tui.widgets import ChatView
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_messages import ToolCallLine, UserMessage
from scout_tui.widgets.chat_view import LOAD_LIMIT
from tests.chat_helpers import WITH_TOOLS, SelectApp, dialogue, finished, loaded, rendered, selected_index, text


async def test_focusing_the_chat_by_keyboard_selects_the_newest_message():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(4))
        assert chat.selected is None
        await pilot.press("tab")
        assert app.focused is chat
        assert selected_index(chat) == 3
        assert app.selections == [(3, "assistant")]


async def test_up_down_k_j_move_the_selection_between_messages():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(4))
        await pilot.press("tab")
        seen = []
        for key in ("k", "up", "up", "up", "j", "down", "down", "down"):
            await pilot.press(key)
            seen.append(selected_index(chat))
        assert seen == [2, 1, 0, 0, 1, 2, 3, 3]


async def test_home_end_and_g_shift_g_jump_to_first_and_newest():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(6))
        await pilot.press("tab", "g")
        assert selected_index(chat) == 0
        await pilot.press("G")
        assert selected_index(chat) == 5
        await pilot.press("home")
        assert selected_index(chat) == 0
        await pilot.press("end")
        assert selected_index(chat) == 5


async def test_the_selected_message_is_highlighted_only_while_the_chat_has_focus():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(4))
        await pilot.press("tab", "k")
        message = chat.selected
        assert message is not None
        other = chat.query(UserMessage).first()
        assert message is not other
        assert message.styles.outline_left[0] == "thick"
        assert other.styles.outline_left[0] == ""
        await pilot.press("tab")  # back to the input
        await pilot.pause()
        assert message.has_class("-selected")  # remembered ...
        assert message.styles.outline_left[0] == ""  # ... but not drawn


async def test_selection_scrolls_the_message_into_view():
    app = SelectApp()
    async with app.run_test(size=(60, 12)) as pilot:
        chat = await loaded(app, pilot, dialogue(20))
        await pilot.press("tab", "g")
        await pilot.pause()
        first = chat.selected
        assert first is not None and first.index == 0
        assert first.region in chat.scrollable_content_region


async def test_f_on_a_user_message_posts_fork_before_it_with_its_text():
    app = SelectApp()
    async with app.run_test() as pilot:
        await loaded(app, pilot, dialogue(4))
        await pilot.press("tab", "k", "f")
        await pilot.pause()
        assert app.forks == [(2, "message 2")]


async def test_f_on_an_answer_still_being_written_says_why_nothing_forks():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(2))
        chat.assistant_delta("text", "Still writing")
        await pilot.press("tab", "end", "f")
        await pilot.pause()
        assert app.forks == []
        assert any("once the answer is written" in str(n.message) for n in app._notifications)


async def test_f_on_an_assistant_message_posts_its_index_and_role():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(4))
        await pilot.press("tab", "up", "up", "f")
        await pilot.pause()
        assert selected_index(chat) == 1
        assert app.forks == [(2, "")]


async def test_indices_after_load_count_tool_results_that_show_no_message():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, WITH_TOOLS)
        assert [w.index for w in chat.query(UserMessage)] == [0, 4]
        assert [w.index for w in chat.query(AssistantMessage)] == [1, 3, 5]
        await pilot.press("tab", "k", "f")  # the second prompt the person sees
        await pilot.pause()
        assert app.forks == [(4, "and in todo.txt?")]


async def test_live_messages_take_the_index_the_app_gives():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, WITH_TOOLS)
        chat.user_message(6, text("user", "and now?"))
        chat.assistant_delta("text", "Still nothing.")
        answer = chat.current
        assert answer is not None
        chat.assistant_message(7, text("assistant", "Still nothing."))
        await finished(pilot, answer)
        await pilot.press("tab", "f", "k", "f")
        await pilot.pause()
        assert app.forks == [(8, ""), (6, "and now?")]


async def test_f_on_a_message_without_an_index_posts_nothing():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = app.query_one(ChatView)
        chat.user_message(None, text("user", "not stored"))
        await pilot.pause()
        await pilot.press("tab", "f")
        await pilot.pause()
        assert chat.selected is not None
        assert app.forks == []


async def test_a_long_session_mounts_only_the_newest_batch():
    app = SelectApp()
    async with app.run_test() as pilot:
        chat = await loaded(app, pilot, dialogue(10_000))
        assert chat.loaded_count == LOAD_LIMIT
        assert len(chat.query(UserMessage)) + len(chat.query(AssistantMessage)) == LOAD_LIMIT
        assert rendered(chat.query_one(".earlier")).strip().startswith(f"{10_000 - LOAD_LIMIT:,} earlier messages not shown")


async def test_scrolling_to_the_top_mounts_the_batch_before_and_keeps_the_view_in_place():
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await loaded(app, pilot, dialogue(300))
        assert chat.loaded_count == LOAD_LIMIT
        oldest = chat.query(UserMessage).first()
        assert oldest.index == 300 - LOAD_LIMIT
        row = oldest.virtual_region.y  # where it shows with the view at the top
        # What the wheel or PageUp does; applied now, so a layout still pending from loading
        # (under load it can come late) is laid out at the top too.
        chat.scroll_to(y=0, animate=False, immediate=True)
        rows_laid_out: list[int] = []  # its row in every layout from here on, new batch or not
        app.screen.screen_layout_refresh_signal.subscribe(
            chat, lambda _: rows_laid_out.append(oldest.region.y - chat.scrollable_content_region.y), immediate=True
        )
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert chat.loaded_count == 2 * LOAD_LIMIT
        assert chat.query(UserMessage).first().index == 300 - 2 * LOAD_LIMIT
        assert rendered(chat.query_one(".earlier")).strip().startswith(f"{300 - 2 * LOAD_LIMIT} earlier messages not shown")
        assert chat.scroll_y > 0
        assert rows_laid_out and set(rows_laid_out) == {row}  # not even one frame jumped


async def test_up_from_the_first_mounted_message_mounts_and_selects_the_one_before():
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await loaded(app, pilot, dialogue(300))
        await pilot.press("tab")
        oldest = chat.query(UserMessage).first()
        chat.select(oldest, scroll=False)  # selected while the view stays at the bottom
        await pilot.press("k")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert chat.loaded_count == 2 * LOAD_LIMIT
        assert selected_index(chat) == 300 - LOAD_LIMIT - 1
        assert chat.selected.region.overlaps(chat.scrollable_content_region)


async def test_scrolling_up_to_the_start_loads_everything_and_drops_the_earlier_line():
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await loaded(app, pilot, dialogue(120))
        for _ in range(5):
            chat.scroll_to(y=0, animate=False)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert chat.loaded_count == 120
        assert not chat.query(".earlier")
        assert [w.index for w in chat.query(UserMessage)] == list(range(0, 120, 2))


async def test_an_earlier_batch_marks_its_tool_calls_answered_in_the_batch_after_it():
    messages = dialogue(100)
    cut = 100 - LOAD_LIMIT  # the first message of the newest batch
    messages[cut - 1] = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "make"}}]}
    messages[cut] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = await loaded(app, pilot, messages)
        assert chat.query_one(UserMessage).index == cut + 2  # the result at the cut shows nothing
        chat.scroll_to(y=0, animate=False)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert chat.loaded_count == 2 * LOAD_LIMIT
        assert rendered(chat.query_one(ToolCallLine)).strip() == "✓ bash  make"



async def test_older_messages_still_being_read_mount_once_they_are_filled_in():
    messages: list[dict | None] = list(dialogue(100))
    cut = 100 - LOAD_LIMIT
    older, messages[:cut] = messages[:cut], [None] * cut  # the app reads them after the first frame
    app = SelectApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chat = app.query_one(ChatView)
        chat.load(messages)
        await app.workers.wait_for_complete()
        await pilot.pause()
        chat.scroll_to(y=0, animate=False)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert chat.loaded_count == LOAD_LIMIT  # at the top, but nothing to mount yet
        assert rendered(chat.query_one(".earlier")).strip().startswith(f"{cut} earlier messages not shown")
        messages[:cut] = older  # in place, as the app fills them
        chat.older_messages_ready()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert chat.loaded_count == 2 * LOAD_LIMIT
        assert chat.query(UserMessage).first().index == 100 - 2 * LOAD_LIMIT

SNAPSHOT_CONVERSATION = [
    text("user", "What does `make check` run?"),
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look at the Makefile."},
                                      {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "Makefile"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "check: lint test"}]},
    text("assistant", "It runs two targets:\n\n- `lint`\n- `test`"),
    text("user", "Add a `typecheck` target to it."),
    text("assistant", "Done: `check` now runs **lint**, **typecheck** and **test**."),
]


def test_snapshot_chat_with_the_third_message_selected(snap_compare) -> None:
    app = SelectApp()

    async def run_before(pilot) -> None:
        await loaded(app, pilot, SNAPSHOT_CONVERSATION)
        await pilot.press("tab", "g", "j", "j")
        await pilot.pause()
        assert selected_index(app.query_one(ChatView)) == 3  # the third shown; a tool result sits between

    assert snap_compare(app, terminal_size=(70, 24), run_before=run_before)
