"""A turn that ends, or an approval that waits, while the terminal is in the background sends one
desktop notification in the form the terminal shows (OSC 777, OSC 99, OSC 9, tmux's passthrough)
or the bell; nothing while the terminal has focus or with ``notify = "off"``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.drivers.headless_driver import HeadlessDriver

from scout_tui.config.layers import load_config
from scout_tui.core.errors import ScoutError
from scout_tui.tui.notify import DETECTING, notification_sequence, notification_text, terminal_form
from scout_tui.widgets.approval import ApprovalScreen
from tests.app_helpers import SIZE, HeldReply, make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


@pytest.fixture
def repo(tmp_home: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in DETECTING:  # the terminal running the tests (tmux, kitty…) says nothing here
        monkeypatch.delenv(name, raising=False)
    return workdir


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the app writes to its terminal through the driver (the headless one of ``run_test``
    writes nothing else)."""
    found: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "write", lambda self, data: found.append(data))
    return found


def notifications(written: list[str]) -> list[str]:
    """The notifications among what was written (Textual writes its mouse pointer's shape, OSC 22)."""
    return [data for data in written if data.startswith(("\x1b]777;", "\x1b]99;", "\x1b]9;", "\x1bPtmux;"))]


async def run_unseen_turn(repo: Path, until: Callable[[], bool] = lambda: True, **flags) -> list[int]:
    """Send a prompt; while the model's answer is held, the terminal loses focus (its FocusOut
    report: Textual's ``AppBlur``); then the turn ends, and the app runs ``until`` holds. The
    bells rung (``App.bell``, which the headless driver would not ring)."""
    body = anthropic_stream(["All ", "green."])
    cut = body.index(b"green.")
    held = HeldReply([body[:cut], body[cut:]], held_after=1)  # the answer's end waits for the test
    rang: list[int] = []
    with LoopbackServer([held]) as server:
        app = make_app(repo, server, **flags)
        async with app.run_test(size=SIZE) as pilot:
            app.bell = lambda: rang.append(1)
            await send(app, pilot, "fix the tests")
            await wait_until(pilot, lambda: app.busy, what="the turn to start")
            app.post_message(events.AppBlur())
            await wait_until(pilot, lambda: not app.app_focus, what="the app to know it lost focus")
            held.release()
            await settle(app, pilot)
            await wait_until(pilot, until, what="what the test waits for after the turn")
    return rang


@pytest.mark.parametrize(("variables", "expected"), [
    ({"TERM_PROGRAM": "WezTerm"}, "\x1b]777;notify;scout-tui;fix the tests: finished\x07"),
    ({"TERM_PROGRAM": "iTerm.app"}, "\x1b]9;fix the tests: finished\x07"),
    ({"TERM": "xterm-kitty"}, "\x1b]99;;fix the tests: finished\x1b\\"),
    ({"TERM_PROGRAM": "tmux", "TMUX": "/tmp/tmux-1/default,1,0", "GHOSTTY_RESOURCES_DIR": "/usr/share/ghostty"},
     "\x1bPtmux;\x1b\x1b]777;notify;scout-tui;fix the tests: finished\x07\x1b\\"),
])
async def test_a_turn_finished_unseen_writes_one_notification_in_the_terminals_form(
        repo, written, monkeypatch, variables, expected):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    rang = await run_unseen_turn(repo)
    assert notifications(written) == [expected] and rang == []


async def test_a_terminal_without_notifications_gets_the_bell_once(repo, written, monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    rang = await run_unseen_turn(repo)
    assert notifications(written) == [] and rang == [1]


async def test_notify_bell_rings_the_bell_in_a_terminal_that_shows_notifications(repo, written, monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    (repo / "scout.toml").write_text('notify = "bell"\n')
    rang = await run_unseen_turn(repo)
    assert notifications(written) == [] and rang == [1]


async def test_notify_off_sends_nothing(repo, written, monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    (repo / "scout.toml").write_text('notify = "off"\n')
    rang = await run_unseen_turn(repo)
    assert notifications(written) == [] and rang == []


async def test_a_turn_finished_while_the_terminal_has_focus_sends_nothing(repo, written, monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    with LoopbackServer([Reply(anthropic_stream(["All green."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            rang: list[int] = []
            app.bell = lambda: rang.append(1)
            await send(app, pilot, "fix the tests")
            await settle(app, pilot)
            assert app.app_focus
    assert notifications(written) == [] and rang == []


async def test_an_approval_waiting_unseen_says_so_once_and_the_turn_end_once_more(repo, written, monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    call = ("toolu_1", "write", [json.dumps({"path": "notes.txt", "content": "hi\n"})])
    body = anthropic_stream(["Writing."], call)
    cut = body.index(b"Writing.")
    held = HeldReply([body[:cut], body[cut:]], held_after=1)  # the call comes once the terminal lost focus
    with LoopbackServer([held, Reply(anthropic_stream(["Written."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write notes")
            app.post_message(events.AppBlur())
            await wait_until(pilot, lambda: not app.app_focus, what="the app to know it lost focus")
            held.release()
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval prompt")
            await wait_until(pilot, lambda: len(notifications(written)) == 1, what="the approval notification")
            assert notifications(written) == ["\x1b]777;notify;scout-tui;write notes: needs your approval\x07"]
            await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys")
            app.screen.dismiss(None)  # answered elsewhere than by a key: the terminal stays in the background
            await settle(app, pilot)
    assert notifications(written)[1:] == ["\x1b]777;notify;scout-tui;write notes: finished\x07"]


def test_the_text_is_one_line_without_controls_separators_or_secrets():
    text = notification_text("deploy\x1b]0;pwned\x07 with sk-secret-12345;\nnow", "finished", ("sk-secret-12345",))
    assert text == "deploy with [redacted], now: finished"
    assert notification_text("", "approval") == "scout: needs your approval"
    assert notification_text("x" * 200, "finished") == "x" * 47 + "…: finished"


def test_the_form_follows_the_terminal():
    assert terminal_form({"TERM": "foot"}) == "osc777"
    assert terminal_form({"TERM_PROGRAM": "ghostty"}) == "osc777"
    assert terminal_form({"WT_SESSION": "1"}) == "osc9"
    assert terminal_form({"ConEmuPID": "42"}) == "osc9"
    assert terminal_form({"TERM_PROGRAM": "tmux", "KITTY_WINDOW_ID": "1"}) == "osc99"
    assert terminal_form({"TERM": "xterm-256color", "TERM_PROGRAM": "Apple_Terminal"}) == "bell"
    assert notification_sequence("bell", "x: finished", tmux=True) == ""


def test_a_bad_notify_setting_names_the_file_and_line(tmp_home, workdir):
    (workdir / "scout.toml").write_text('model = "m"\nnotify = "loud"\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:2: notify must be one of auto, bell, off, got 'loud'"):
        load_config(workdir)


async def test_a_turn_finished_unseen_fires_the_notification_hooks(repo, written, tmp_home, tmp_path):
    seen = tmp_path / "notification.json"
    config = tmp_home / ".config" / "scout" / "scout.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    hook = f"cat > {seen}"
    config.write_text(f'[[hooks.Notification]]\nmatcher = "idle_prompt"\ncommand = {json.dumps(hook)}\n')
    await run_unseen_turn(repo, until=lambda: seen.exists() and seen.read_text().endswith("}"))
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "Notification" and event["notification_type"] == "idle_prompt"
    assert event["message"] == "fix the tests: finished" and event["session_id"]
