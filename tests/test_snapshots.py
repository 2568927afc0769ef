"""SVG snapshots of the main screen (pytest-textual-snapshot): empty, and after a tool-using turn.

Update after an intended visual change with `pytest --snapshot-update tests/test_snapshots.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.tools import sandbox as sandbox_module
from scout_tui.widgets import ChatView, Composer
from scout_tui.widgets.approval import ApprovalScreen
from tests.app_helpers import SIZE, long_session, send, settle, steady
from scout_tui.widgets.prompt_view import PromptView
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

# The same ids, context estimate, tool-call durations and session ages on every run.
pytestmark = pytest.mark.usefixtures("fixed_ids", "fixed_clock")


def test_empty_screen(snap_compare, home_project: Path) -> None:
    app = ScoutApp(load_config(home_project, flags={"api_key": "sk-test"}), cwd=home_project)

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_finished_tool_using_turn(snap_compare, tmp_home: Path, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    first = anthropic_stream(["Let me read the file."], ("toolu_1", "read", ['{"path": "notes.txt"}']))
    answer = ["The file `notes.txt` says:\n\n", "> the answer is **42**\n\n",
              "```python\nprint(42)\n```\n\n", "- one fact\n- no *surprises*"]
    with LoopbackServer([Reply(first), Reply(anthropic_stream(answer))]) as server:
        app = ScoutApp(load_config(workdir, flags={"base_url": server.url, "api_key": "sk-test"}), cwd=workdir)

        async def run_before(pilot) -> None:
            await send(app, pilot, "what does notes.txt say?")
            await settle(app, pilot)
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_what_the_model_sees(snap_compare, tmp_home: Path, workdir: Path, small_epochs: None) -> None:
    sid = long_session(Store(), workdir, calls=16, size=300)
    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir, resume=sid)

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        # Every batch mounted, then back at the newest: the same chat behind the view each run
        # (how far lazy loading got by itself depends on timing).
        chat = app.query_one(ChatView)

        def all_loaded() -> bool:
            if chat.loaded_count >= len(app.session.messages):
                return True
            chat.scroll_home(animate=False, immediate=True)  # at the top, the next older batch loads
            return False

        await wait_until(pilot, all_loaded, what="every message of the chat is mounted")
        await settle(app, pilot)
        chat.scroll_end(animate=False, immediate=True)
        await steady(app, pilot)
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptView), what="the prompt view")
        await settle(app, pilot)
        await settle_screen(pilot, scroll_chat=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_prompt_with_a_diff(snap_compare, tmp_home: Path, workdir: Path) -> None:
    (workdir / "app.py").write_text("def greet(name):\n    print('hello', name)\n    return name\n\n\ngreet('you')\n")
    edit = {"path": "app.py", "old_string": "    print('hello', name)\n", "new_string": "    print(f'hi {name}!')\n    log(name)\n"}
    first = anthropic_stream(["I'll update the greeting."], ("toolu_1", "edit", [json.dumps(edit)]))
    with LoopbackServer([Reply(first)]) as server:
        app = ScoutApp(load_config(workdir, flags={"base_url": server.url, "api_key": "sk-test"}), cwd=workdir)

        async def run_before(pilot) -> None:
            await send(app, pilot, "make the greeting friendlier")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval prompt")
            await settle_screen(pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_prompt_asking_to_run_without_a_sandbox(snap_compare, tmp_home: Path, workdir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "available", lambda: False)  # as on a machine without bwrap
    first = anthropic_stream(["Let me run the tests."], ("toolu_1", "bash", [json.dumps({"command": "pytest -q"})]))
    with LoopbackServer([Reply(first)]) as server:
        app = ScoutApp(load_config(workdir, flags={"base_url": server.url, "api_key": "sk-test",
                                                   "permission_mode": "yolo"}), cwd=workdir)

        async def run_before(pilot) -> None:
            await send(app, pilot, "run the tests")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval prompt")
            await settle_screen(pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def settle_screen(pilot, scroll_chat: bool = True) -> None:
    """Until three frames in a row are the same: the chat behind a modal scrolls into place."""
    pilot.app.query_one(Composer).cursor_blink = False
    if scroll_chat:
        pilot.app.query_one(ChatView).scroll_end(animate=False, immediate=True)
    frames: list[str] = []

    def unchanged() -> bool:
        frames.append(pilot.app.export_screenshot())
        return len(frames) >= 3 and frames[-1] == frames[-2] == frames[-3]

    await wait_until(pilot, unchanged, what="three frames in a row are the same")
