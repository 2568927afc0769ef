"""Small terminals: below NARROW columns the side panes fold away (Ctrl+T shows them over the
chat), the status bar keeps the cost and the mode, the approval prompt's keys wrap and stay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.main_screen import NARROW
from scout_tui.widgets.approval import ApprovalScreen
from tests.app_helpers import make_app, send, settle, steady
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SMALL = (80, 24)


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


async def test_below_narrow_the_chat_takes_the_width_and_ctrl_t_shows_the_panes_over_it(repo):
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        assert SMALL[0] < NARROW and app.chat.region.width == 80 and not app.query_one("#side").display
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: app.focused is app.tree_pane)
        side = app.query_one("#side").region
        assert side.right == 80 and side.width == 44 and app.chat.region.width == 80  # over it, not beside
        await pilot.press("ctrl+t")  # the tool pane next
        assert app.focused is app.tool_pane.query_one("#tool-list")
        await pilot.press("escape")  # folds them away, back to the composer
        assert not app.query_one("#side").display and app.focused.id == "composer"
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=(NARROW, 30)) as pilot:  # from NARROW on: beside the chat
        await settle(app, pilot)
        assert app.query_one("#side").display and app.chat.region.width < NARROW


async def test_at_80x24_the_approval_prompt_shows_all_its_keys_under_a_long_diff(repo):
    (repo / "app.py").write_text("".join(f"line {n}\n" for n in range(200)))
    edit = {"path": "app.py", "old_string": "".join(f"line {n}\n" for n in range(60)),
            "new_string": "".join(f"changed {n}\n" for n in range(60))}
    with LoopbackServer([Reply(anthropic_stream(["Editing."], ("toolu_1", "edit", [json.dumps(edit)])))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SMALL) as pilot:
            await send(app, pilot, "edit it")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await wait_until(pilot, lambda: app.screen.query_one("#keys").region.height)
            keys = app.screen.query_one("#keys")
            dialog = app.screen.query_one("#dialog")
            text = str(keys.render())
            assert "Esc" in text and "deny and stop the turn" in text
            assert keys.region.height >= 2  # wrapped, not cut
            assert dialog.region.contains_region(keys.region) and keys.region.bottom <= SMALL[1]


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_a_conversation_at_80x24(snap_compare, repo) -> None:
    (repo / "notes.txt").write_text("the answer is 42\n")
    first = anthropic_stream(["Let me read the file."], ("toolu_1", "read", ['{"path": "notes.txt"}']))
    answer = ["The file says **42**.\n\n", "- one fact\n- no surprises"]
    with LoopbackServer([Reply(first), Reply(anthropic_stream(answer))]) as server:
        app = make_app(repo, server)

        async def run_before(pilot) -> None:
            await send(app, pilot, "what does notes.txt say?")
            await settle(app, pilot)
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SMALL, run_before=run_before)
