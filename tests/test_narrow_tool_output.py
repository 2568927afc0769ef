"""Below 100 columns the side panes fold away, and each tool call shows its output in the chat
(``ToolCallLine``): folded to a few lines, live while it runs, expanded with a click or ``o``;
the same text as the tool pane's, secrets redacted. Wide, the chat keeps one line per call.

Update the snapshot after an intended visual change with
`pytest --snapshot-update tests/test_narrow_tool_output.py`.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.tui.main_screen import NARROW
from scout_tui.core.bus import Event
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.core.text import sanitize
from scout_tui.widgets.chat_messages import FOLDED_LINES, ToolCallLine
from tests.app_helpers import SIZE, make_app, rendered, send, settle, steady
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SMALL = (80, 24)
TEN_LINES = "for i in $(seq 1 10); do echo \"line $i of ten\"; done"


def bash_turn(command: str, answer: str = "Done.") -> list[Reply]:
    """A model that runs ``command`` with bash, then answers ``answer``."""
    call = ("toolu_1", "bash", [json.dumps({"command": command})])
    return [Reply(anthropic_stream(["Running it."], call)), Reply(anthropic_stream([answer]))]


@asynccontextmanager
async def after_turn(repo: Path, command: str, size: tuple[int, int] = SMALL, **flags) -> AsyncIterator:
    """``(app, pilot)`` in ``repo``, ``size`` cells, once a turn running ``command`` with bash ended."""
    with LoopbackServer(bash_turn(command)) as server:
        app = make_app(repo, server, permission_mode="yolo", **flags)
        async with app.run_test(size=size) as pilot:
            await send(app, pilot, "run it")
            await settle(app, pilot)
            yield app, pilot


def shown(app) -> list[str]:
    """The lines the chat's (only) tool call shows, right spaces dropped."""
    return rendered(app.query_one(ToolCallLine)).splitlines()


async def test_below_100_columns_a_tool_call_shows_its_output_folded_in_the_chat(home_project: Path) -> None:
    async with after_turn(home_project, TEN_LINES) as (app, pilot):
        lines = shown(app)
        assert lines[0].startswith(" ✓ bash")
        assert lines[1:] == ["   ⎿ line 1 of ten", "     line 2 of ten", "     line 3 of ten",
                             "     line 4 of ten", "     … 6 more lines (click or o expands)"]
        assert len(lines) == 1 + FOLDED_LINES + 1


async def test_the_chat_shows_the_text_the_tool_pane_shows(home_project: Path) -> None:
    # A carriage return overwrites the line on a terminal: the pane shows what is left of it.
    command = "printf 'progress 10%%\\rprogress 100%%\\nbold \\033[1mtext\\033[0m\\n'"
    async with after_turn(home_project, command) as (app, pilot):
        pane = sanitize(app.tool_pane.output_of("toolu_1")).rstrip("\n").splitlines()
        assert [line[5:] for line in shown(app)[1:]] == pane
        assert "\x1b" not in "".join(shown(app))


async def test_at_100_columns_and_more_the_chat_keeps_one_line_per_call(home_project: Path) -> None:
    async with after_turn(home_project, TEN_LINES, (NARROW, 30)) as (app, pilot):
        line = app.query_one(ToolCallLine)
        assert line.size.height == 1 and "line 1 of ten" not in rendered(line)
        assert "line 1 of ten" in app.tool_pane.output_of("toolu_1")


async def test_resizing_across_100_columns_shows_and_hides_the_output(home_project: Path) -> None:
    async with after_turn(home_project, TEN_LINES, SIZE) as (app, pilot):
        line = app.query_one(ToolCallLine)
        assert line.size.height == 1
        await pilot.resize_terminal(*SMALL)
        await wait_until(pilot, lambda: line.size.height == 1 + FOLDED_LINES + 1, what="the output folded in")
        assert "line 4 of ten" in rendered(line)
        await pilot.resize_terminal(*SIZE)
        await wait_until(pilot, lambda: line.size.height == 1, what="one line again")


async def test_o_on_the_selected_turn_and_a_click_expand_and_fold_the_output(home_project: Path) -> None:
    async with after_turn(home_project, TEN_LINES) as (app, pilot):
        line = app.query_one(ToolCallLine)
        app.chat.focus()  # selects the newest message: the answer after the call, same turn
        await pilot.press("o")
        await wait_until(pilot, lambda: line.size.height == 11, what="all ten lines")
        assert shown(app)[-1] == "     line 10 of ten" and "more lines" not in rendered(line)
        await pilot.press("o")
        await wait_until(pilot, lambda: line.size.height == 1 + FOLDED_LINES + 1, what="folded again")
        await pilot.click(line)
        await wait_until(pilot, lambda: line.size.height == 11, what="expanded by a click")


async def test_a_running_call_shows_its_newest_lines_as_they_come(home_project: Path) -> None:
    command = "for i in $(seq 1 6); do echo \"tick $i\"; done; while [ ! -e go ]; do sleep 0.05; done; echo last"
    with LoopbackServer(bash_turn(command)) as server:
        app = make_app(home_project, server, permission_mode="yolo")
        async with app.run_test(size=SMALL) as pilot:
            await send(app, pilot, "tick")
            await wait_until(pilot, lambda: app.query(ToolCallLine) and "tick 6" in rendered(app.query_one(ToolCallLine)),
                             what="the sixth tick in the chat")
            assert shown(app)[1:] == ["   ⎿ … 2 earlier lines", "     tick 3", "     tick 4", "     tick 5",
                                      "     tick 6"]
            assert app.query_one(ToolCallLine).status == "running"
            (home_project / "go").touch()
            await settle(app, pilot)
            assert "     … 3 more lines (click or o expands)" in shown(app)


async def test_a_secret_printed_by_a_tool_stays_redacted_in_the_chat(home_project: Path) -> None:
    key = "sk-ant-chat-key-0123456789abcdef"
    (home_project / "env.txt").write_text(f"KEY={key}\n")
    async with after_turn(home_project, "cat env.txt", api_key=key) as (app, pilot):
        assert "KEY=[redacted]" in rendered(app.query_one(ToolCallLine))
        assert key[:12] not in app.export_screenshot().replace("&#160;", " ")


async def test_a_stored_session_opened_narrow_shows_its_calls_output(home_project: Path) -> None:
    store = Store()
    sid = store.create_session(home_project)
    for role, content in [
        ("user", [{"type": "text", "text": "what is in notes?"}]),
        ("assistant", [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "notes.txt"}}]),
        ("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "one\ntwo\nthree", "is_error": False}]),
        ("assistant", [{"type": "text", "text": "Three lines."}]),
    ]:
        kind = "message.user" if role == "user" else "message.assistant"
        store.append(sid, Event.of(kind, {"message": {"role": role, "content": content}}))
    app = ScoutApp(load_config(home_project, flags={"api_key": "sk-test"}), cwd=home_project, resume=sid)
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        await wait_until(pilot, lambda: app.query(ToolCallLine), what="the stored call")
        assert shown(app)[1:] == ["   ⎿ one", "     two", "     three"]


async def test_a_very_long_output_line_takes_one_row_cut_with_an_ellipsis(home_project: Path) -> None:
    async with after_turn(home_project, "printf 'x%.0s' $(seq 1 20000); echo; echo second") as (app, pilot):
        line = app.query_one(ToolCallLine)
        drawn = line.render().plain.split("\n")
        assert len(drawn) == 3 and line.size.height == 3
        assert drawn[1] == "  ⎿ " + "x" * (line.size.width - 5) + "…" and drawn[2] == "    second"


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_a_tool_turn_at_80_columns(snap_compare, home_project: Path) -> None:
    with LoopbackServer(bash_turn(TEN_LINES, "The loop printed **ten** lines.")) as server:
        app = make_app(home_project, server, permission_mode="yolo")

        async def run_before(pilot) -> None:
            await send(app, pilot, "count to ten in bash")
            await settle(app, pilot)
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)
