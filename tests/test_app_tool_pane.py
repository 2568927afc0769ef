"""The tool pane of a stored session in the running app: every call reachable, with the
durations the log recorded, also after a fork."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from scout_tui.tui.app import ScoutApp
from scout_tui.core.bus import Event
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.widgets import ToolActivity
from tests.app_helpers import SIZE, long_session, settle
from tests.conftest import wait_until


def opened(repo: Path, sid: str) -> ScoutApp:
    return ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, resume=sid)


def row(tools: ToolActivity, index: int) -> str:
    return str(tools.query_one("#tool-list", OptionList).get_option_at_index(index).prompt)


async def test_a_long_session_reaches_every_call_from_the_first_row(tmp_home: Path, workdir: Path, monkeypatch):
    monkeypatch.setattr("scout_tui.widgets.tool_activity.LOAD_LIMIT", 10)  # fewer rows than the calls read first
    calls = 60  # 122 messages: the app reads the newest OPEN_TAIL first, the rest after
    sid = long_session(Store(), workdir, calls=calls, size=100)
    app = opened(workdir, sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tools = app.query_one(ToolActivity)
        option_list = tools.query_one("#tool-list", OptionList)
        await wait_until(pilot, lambda: row(tools, 0) == f"▲ {calls - 10} earlier calls  Enter shows the newest 10",
                         what="the calls of the older messages, read later, counted in the first row")
        assert option_list.option_count == 11
        option_list.focus()
        for _ in range(calls // 10 - 1):  # each Enter on the first row shows 10 more
            option_list.highlighted = 0
            await pilot.press("enter")
            await pilot.pause()
        assert option_list.option_count == calls
        assert row(tools, 0).startswith("✓ read  f0.txt") and tools.status_of("t0") == "ok"


async def test_a_fork_keeps_the_durations_of_the_calls_it_shares(tmp_home: Path, workdir: Path):
    store = Store()
    sid = store.create_session(workdir)

    def message(role: str, *content: dict) -> None:
        store.append(sid, Event.of(f"message.{role}", {"message": {"role": role, "content": list(content)}}))

    message("user", {"type": "text", "text": "run the tests"})
    message("assistant", {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "make test"}})
    store.append(sid, Event.of("tool.end", {"id": "toolu_1", "name": "bash", "content": "ok", "is_error": False,
                                            "elapsed": 12.34}))
    message("user", {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "is_error": False})
    message("assistant", {"type": "text", "text": "All pass."})
    app = opened(workdir, sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tools = app.query_one(ToolActivity)
        await wait_until(pilot, lambda: row(tools, 0).startswith("✓ bash  make test  12.3s"), what="the stored duration")
        app.sessions.fork_session(None)
        await settle(app, pilot)
        assert app.session.id != sid
        await wait_until(pilot, lambda: row(tools, 0).startswith("✓ bash  make test  12.3s"),
                         what="the duration, in the branch too")
