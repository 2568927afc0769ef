"""ToolActivity: row lifecycle, live output, the detail view, caps, stored conversations."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Log, OptionList

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, ToolActivity
from scout_tui.widgets.tool_activity import OUTPUT_CAP
from tests.conftest import wait_until


class ToolsApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield ToolActivity(id="tools")

    def on_tool_activity_selected(self, event: ToolActivity.Selected) -> None:
        self.selected.append(event.tool_use_id)


def row(tools: ToolActivity, index: int) -> str:
    """The plain text of one row's prompt."""
    option_list = tools.query_one("#tool-list", OptionList)
    return option_list.get_option_at_index(index).prompt.plain


def detail(tools: ToolActivity) -> str:
    """The text in the detail area."""
    return "\n".join(tools.query_one("#tool-detail-body", Log).lines)


async def test_row_runs_shows_output_then_ends_ok_with_elapsed():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "pytest -q"})
        await pilot.pause()
        assert tools.status_of("t1") == "running"
        assert "bash  pytest -q" in row(tools, 0)
        tools.output("t1", "\x1b[32m....\x1b[0m 4 passed\n")
        await wait_until(pilot, lambda: "\n  .... 4 passed" in row(tools, 0), what="a redraw (4 Hz) shows the output")
        tools.end("t1", "4 passed in 0.1s\n", False, 0.42)
        await pilot.pause()
        assert tools.status_of("t1") == "ok"
        assert row(tools, 0).startswith("✓ bash  pytest -q  0.4s\n  4 passed in 0.1s")


async def test_row_ends_with_an_error_mark():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "read", {"path": "missing.py"})
        tools.end("t1", "File not found: missing.py", True, 0.01)
        await pilot.pause()
        assert tools.status_of("t1") == "error"
        assert row(tools, 0).startswith("✗ read  missing.py  0.0s")


async def test_selecting_a_row_shows_its_whole_output_and_posts_selected():
    output = "".join(f"line {i}\n" for i in range(300))
    app = ToolsApp()
    async with app.run_test(size=(100, 40)) as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "read", {"path": "a.txt"})
        tools.end("t1", "first", False, 0.1)
        tools.start("t2", "bash", {"command": "seq"})
        tools.end("t2", output, False, 0.2)
        await pilot.pause()
        tools.query_one("#tool-list").focus()
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        assert app.selected == ["t2"]
        assert tools.has_class("-detail")
        assert detail(tools) == output
        await pilot.press("escape")
        assert not tools.has_class("-detail")


async def test_a_2mb_single_line_is_kept_capped_and_shown_clipped_without_hanging():
    app = ToolsApp()
    async with app.run_test(size=(100, 40)) as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "cat big.min.js"})
        tools.end("t1", "x" * 2_000_000, False, 1.0)
        tools.query_one("#tool-list").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        shown = detail(tools)
        assert shown.startswith("x" * 1000)
        assert "hidden" in shown and len(shown) < OUTPUT_CAP + 200


async def test_many_small_output_fragments_are_cheap_and_capped():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "yes"})
        for _ in range(50_000):
            tools.output("t1", "y\n" * 4)
        await pilot.pause()
        tools.query_one("#tool-list").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        shown = detail(tools)
        assert "more lines" in shown  # clipped to DETAIL_LINES for display
        kept = tools.output_of("t1")  # 400,000 chars sent
        assert kept.startswith("y\n" * (OUTPUT_CAP // 2))
        assert kept.endswith(f"… {400_000 - OUTPUT_CAP:,} more characters of output not kept")


async def test_detail_of_tool_output_is_sanitized():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "evil"})
        tools.output("t1", "safe \x1b]52;c;cm0gLXJm")
        tools.output("t1", "IH4=\x07text \u202edesrever")
        tools.end("t1", "safe \x1b]52;c;cm0gLXJmIH4=\x07text \u202edesrever", False, 0.1)
        tools.query_one("#tool-list").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert detail(tools) == "safe text desrever"


async def test_load_rebuilds_rows_from_tool_use_and_tool_result_blocks():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running two."},
                {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x.py"}},
                {"type": "tool_use", "id": "b", "name": "bash", "input": {"command": "false"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "print(1)"},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "exit 1"}], "is_error": True},
            ],
        },
    ]
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("old", "read", {"path": "gone"})
        tools.load(messages)
        await pilot.pause()
        assert (tools.status_of("a"), tools.status_of("b")) == ("ok", "error")
        assert row(tools, 0) == "✓ read  x.py\n  print(1)"
        assert row(tools, 1) == "✗ bash  false\n  exit 1"
        try:
            tools.status_of("old")
        except KeyError:
            pass
        else:
            raise AssertionError("clear() by load() should forget earlier calls")


async def test_the_detail_of_a_running_call_follows_its_new_output():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "make"})
        tools.output("t1", "step 1\n")
        tools.query_one("#tool-list").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert detail(tools) == "step 1\n"
        tools.output("t1", "step 2\n")
        await wait_until(pilot, lambda: detail(tools) == "step 1\nstep 2\n", what="a redraw (4 Hz) adds the new line")
        tools.end("t1", "step 1\nstep 2\ndone\n", False, 2.5)
        await pilot.pause()
        assert detail(tools) == "step 1\nstep 2\ndone\n"


async def test_escape_reaches_the_app_when_no_output_is_open():
    class InterruptApp(ToolsApp):
        BINDINGS = [("escape", "interrupt", "Interrupt")]
        interrupted = 0

        def action_interrupt(self) -> None:
            self.interrupted += 1

    app = InterruptApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "sleep 9"})
        tools.query_one("#tool-list").focus()
        await pilot.press("escape")
        assert app.interrupted == 1
        await pilot.press("down", "enter", "escape")
        assert app.interrupted == 1 and not tools.has_class("-detail")


async def test_a_reused_tool_call_id_gets_its_own_row():
    """Some servers number calls per response (call_0 every turn): ids repeat within a session."""
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("call_0", "read", {"path": "a.txt"})
        tools.end("call_0", "alpha", False, 0.1)
        tools.start("call_0", "read", {"path": "b.txt"})
        await pilot.pause()
        assert tools.status_of("call_0") == "running"
        tools.end("call_0", "beta", True, 0.2)
        await pilot.pause()
        assert row(tools, 0).startswith("✓ read  a.txt") and row(tools, 1).startswith("✗ read  b.txt")
        tools.load([{"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "glob", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "1"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "grep", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "2"}]}])
        await pilot.pause()
        assert row(tools, 0).startswith("✓ glob") and row(tools, 1).startswith("✓ grep")


def glob_calls(first: int, count: int) -> list[dict]:
    """``count`` finished glob calls ``c{first}``… (pattern ``p{n}``), each with its result."""
    messages = []
    for i in range(first, first + count):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{i}", "name": "glob",
                                                           "input": {"pattern": f"p{i}"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "ok"}]})
    return messages


async def test_a_long_session_shows_its_newest_calls_and_the_earlier_ones_on_enter():
    from scout_tui.widgets.tool_activity import LOAD_LIMIT

    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.load(glob_calls(0, 2 * LOAD_LIMIT + 50))
        await pilot.pause()
        option_list = tools.query_one("#tool-list", OptionList)
        assert option_list.option_count == LOAD_LIMIT + 1  # built rows stay few, however long the session
        assert row(tools, 0) == f"▲ {LOAD_LIMIT + 50} earlier calls  Enter shows the newest {LOAD_LIMIT}"
        assert row(tools, LOAD_LIMIT).startswith(f"✓ glob  p{2 * LOAD_LIMIT + 49}")
        option_list.focus()
        option_list.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert option_list.option_count == 2 * LOAD_LIMIT + 1
        assert row(tools, 0) == "▲ 50 earlier calls  Enter shows them"
        assert row(tools, 1).startswith("✓ glob  p50") and option_list.highlighted == LOAD_LIMIT
        option_list.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert option_list.option_count == 2 * LOAD_LIMIT + 50  # every call, no first row left
        assert row(tools, 0).startswith("✓ glob  p0") and row(tools, 2 * LOAD_LIMIT + 49).startswith(
            f"✓ glob  p{2 * LOAD_LIMIT + 49}")
        assert tools.status_of("c0") == "ok"


async def test_calls_of_older_messages_read_later_get_rows_above_while_there_is_room():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        older, newer = glob_calls(0, 3), glob_calls(3, 2)
        tools.load([*older[-1:], *newer])
        tools.add_older(older[:-1])
        await pilot.pause()
        assert [row(tools, i).split("\n")[0] for i in range(5)] == [f"✓ glob  p{i}" for i in range(5)]
        option_list = tools.query_one("#tool-list", OptionList)
        assert option_list.scroll_y == option_list.max_scroll_y  # still at the newest call


async def test_calls_of_older_messages_read_later_join_the_earlier_ones(monkeypatch):
    monkeypatch.setattr("scout_tui.widgets.tool_activity.LOAD_LIMIT", 3)  # the rows load made: no room left
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        older, newer = glob_calls(0, 3), glob_calls(3, 2)
        # The split falls between a call and its result: the result came with the newest messages.
        tools.load([*older[-1:], *newer])
        tools.add_older(older[:-1])
        await pilot.pause()
        assert row(tools, 0) == "▲ 2 earlier calls  Enter shows them"
        option_list = tools.query_one("#tool-list", OptionList)
        option_list.focus()
        option_list.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert [row(tools, i).split("\n")[0] for i in range(5)] == [f"✓ glob  p{i}" for i in range(5)]


async def test_stored_durations_and_diffs_reach_rows_made_later():
    from scout_tui.widgets.tool_activity import LOAD_LIMIT

    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.load(glob_calls(0, LOAD_LIMIT + 1))
        tools.set_details({"c0": {"elapsed": 1.25}, f"c{LOAD_LIMIT}": {"elapsed": 0.5}})
        await pilot.pause()
        assert row(tools, LOAD_LIMIT).startswith(f"✓ glob  p{LOAD_LIMIT}  0.5s")
        option_list = tools.query_one("#tool-list", OptionList)
        option_list.focus()
        option_list.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert row(tools, 0).startswith("✓ glob  p0  1.2s")


async def test_a_running_row_shows_the_newest_line_of_output():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("t1", "bash", {"command": "make"})
        tools.output("t1", "compiling a.c\n")
        tools.output("t1", "compiling b.c\n\n")
        await wait_until(pilot, lambda: row(tools, 0).endswith("\n  compiling b.c"), what="a redraw (4 Hz) shows b.c")
        tools.end("t1", "built\nin 2s", False, 2.0)
        await pilot.pause()
        assert row(tools, 0).endswith("\n  built")


async def test_a_new_call_scrolls_into_view_unless_the_person_scrolled_up():
    app = ToolsApp()
    async with app.run_test(size=(60, 12)) as pilot:
        tools = app.query_one(ToolActivity)
        option_list = tools.query_one("#tool-list", OptionList)
        for i in range(30):
            tools.start(f"t{i}", "bash", {"command": f"step {i}"})
            tools.end(f"t{i}", "ok", False, 0.1)
            await pilot.pause()
        await pilot.pause()
        assert option_list.max_scroll_y > 0 and option_list.scroll_y == option_list.max_scroll_y
        option_list.focus()
        option_list.scroll_home(animate=False)
        await pilot.pause()
        tools.start("late", "bash", {"command": "later"})
        await pilot.pause()
        assert option_list.scroll_y == 0  # reading older calls: left where it is


async def test_tall_rows_finishing_at_once_still_leave_the_running_call_in_view():
    app = ToolsApp()
    async with app.run_test(size=(60, 14)) as pilot:
        tools = app.query_one(ToolActivity)
        option_list = tools.query_one("#tool-list", OptionList)
        for i in range(4):  # denied at once: started and ended in the same moment, long text
            tools.start(f"d{i}", "bash", {"command": f"rm {i}"})
            tools.end(f"d{i}", "Permission denied: denied by the rule 'bash:rm *' (scout.toml:3). " * 3, True, None)
        tools.start("run", "bash", {"command": "for i in $(seq 1 20); do echo tick; sleep 1; done"})
        await wait_until(pilot, lambda: 0 < option_list.max_scroll_y == option_list.scroll_y,
                         what="the running call's row is scrolled into view")
        await pilot.pause()  # and stays there once the tall rows are drawn
        assert option_list.max_scroll_y > 0 and option_list.scroll_y == option_list.max_scroll_y


async def test_a_removed_line_that_starts_with_dashes_counts_as_removed():
    app = ToolsApp()
    async with app.run_test() as pilot:
        tools = app.query_one(ToolActivity)
        tools.start("e1", "edit", {"path": "q.sql"})
        diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- old comment\n select 1;\n"
        tools.end("e1", "Edited q.sql", False, 0.1, diff=diff)
        await pilot.pause()
        assert "+0 −1" in row(tools, 0) and "--- old comment" in row(tools, 0)
