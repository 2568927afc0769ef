"""Rewinding at a selected message (``r`` in the chat): the code, the conversation, or both go
back to that point; asked first with the files named; recorded so /redo can make them again."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import pytest

from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer
from scout_tui.widgets.chat_messages import Notice, UserMessage
from scout_tui.widgets.chat_view import ChatView
from scout_tui.widgets.dialogs import ChoiceScreen, ConfirmScreen
from tests.app_helpers import SIZE, make_app, running_and_printed, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "keep.txt").write_text("kept\n")
    return workdir


def _replies() -> list[Reply]:
    """Two turns: the first writes a new a.txt; the second (a bash command) rewrites it and makes b.txt."""
    write = ("toolu_1", "write", [json.dumps({"path": "a.txt", "content": "one\n"})])
    bash = ("toolu_2", "bash", [json.dumps({"command": "printf 'two\\n' > a.txt && printf 'bee\\n' > b.txt"})])
    return [Reply(anthropic_stream(["Writing."], write)), Reply(anthropic_stream(["Wrote one."])),
            Reply(anthropic_stream(["Running."], bash)), Reply(anthropic_stream(["Wrote two."]))]


def _notices(app) -> str:
    return "\n".join(n.text for n in app.query(Notice))


async def _two_turns(app, pilot) -> None:
    for prompt in ("first change", "second change"):
        await send(app, pilot, prompt)
        await settle(app, pilot)


@asynccontextmanager
async def _after_two_turns(repo: Path) -> AsyncIterator[tuple]:
    """The app in ``repo`` after the two turns of ``_replies``: ``(app, pilot)``."""
    with LoopbackServer(_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _two_turns(app, pilot)
            yield app, pilot


async def _rewind_at(app, pilot, prompt: int) -> ChoiceScreen:
    """Select the ``prompt``-th prompt of the chat (0 the first) and press ``r``."""
    chat = app.query_one(ChatView)
    chat.focus()
    await pilot.pause()
    chat.select(list(app.query(UserMessage))[prompt])
    await pilot.press("r")
    await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
    return app.screen


async def test_code_only_puts_the_files_back_and_keeps_the_conversation_and_redo_makes_them_again(repo):
    async with _after_two_turns(repo) as (app, pilot):
        assert (repo / "a.txt").read_text() == "two\n" and (repo / "b.txt").exists()
        session = app.session.id
        screen = await _rewind_at(app, pilot, 1)
        question = str(screen.question)
        assert "Rewind to before “second change” (message 4)?" in question
        assert screen.query_one("#choices").highlighted == 3  # Cancel: a stray Enter changes nothing
        assert "restore: a.txt" in question and "remove: b.txt" in question
        assert [key for key, _ in screen.choices] == ["both", "conversation", "code", "cancel"]
        await pilot.press("3")
        await wait_until(pilot, lambda: "Rewound the files to before “second change”: a.txt, b.txt." in _notices(app))
        assert app.query_one(Composer).has_focus  # typing goes to the prompt, not to the chat's keys
        assert (repo / "a.txt").read_text() == "one\n" and not (repo / "b.txt").exists()
        assert app.session.id == session and len(app.query(UserMessage)) == 2
        restores = [d for kind, d in Store().checkpoint_events(session) if kind == "checkpoint.restore"]
        assert [(r["turn"], r["paths"], r["redo"]) for r in restores] == [(4, ["a.txt", "b.txt"], False)]
        await send(app, pilot, "/redo")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: "Redid" in _notices(app))
        assert (repo / "a.txt").read_text() == "two\n" and (repo / "b.txt").read_text() == "bee\n"


async def test_conversation_only_forks_there_and_leaves_the_files(repo):
    async with _after_two_turns(repo) as (app, pilot):
        session = app.session.id
        await _rewind_at(app, pilot, 1)
        await pilot.press("2")
        await wait_until(pilot, lambda: app.session.id != session)
        await settle(app, pilot)
        assert Store().session(app.session.id).fork_at == 4
        assert app.query_one(Composer).text == "second change"
        assert (repo / "a.txt").read_text() == "two\n" and (repo / "b.txt").exists()


async def test_both_at_the_first_prompt_restores_every_file_and_forks_before_it(repo):
    async with _after_two_turns(repo) as (app, pilot):
        session = app.session.id
        screen = await _rewind_at(app, pilot, 0)
        assert "Rewind to before “first change” (message 0)?" in str(screen.question)
        await pilot.press("1")  # code and conversation
        await wait_until(pilot, lambda: app.session.id != session)
        await settle(app, pilot)
        assert not (repo / "a.txt").exists() and not (repo / "b.txt").exists()
        assert (repo / "keep.txt").read_text() == "kept\n"
        assert Store().session(app.session.id).fork_at == 0 and app.query_one(Composer).text == "first change"
        assert any("Rewound: the files (a.txt, b.txt) and the conversation, in a new branch" in str(n.message)
                   for n in app._notifications)
        # the rewind is recorded in the session whose turns it undid; the branch shares none
        assert Store().checkpoint_events(app.session.id) == []
        assert [k for k, _ in Store().checkpoint_events(session)].count("checkpoint.restore") == 1


async def test_after_the_last_change_only_the_conversation_can_go_back_and_esc_cancels(repo):
    with LoopbackServer(_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "first change")
            await settle(app, pilot)
            chat = app.query_one(ChatView)
            chat.focus()
            await pilot.pause()
            await pilot.press("end")  # the newest answer: after it, no file changed
            await pilot.press("r")
            await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            assert "No file was changed after this message" in str(app.screen.question)
            assert [key for key, _ in app.screen.choices] == ["conversation", "cancel"]
            session = app.session.id
            await pilot.press("escape")
            await settle(app, pilot)
            assert app.session.id == session and (repo / "a.txt").read_text() == "one\n"


async def test_a_file_changed_since_by_someone_else_is_named_before_the_rewind(repo):
    async with _after_two_turns(repo) as (app, pilot):
        (repo / "b.txt").write_text("my edit\n")
        screen = await _rewind_at(app, pilot, 1)
        assert "Changed since by someone else, and overwritten: b.txt" in str(screen.question)
        await pilot.press("4")  # cancel
        await settle(app, pilot)
        assert (repo / "b.txt").read_text() == "my edit\n"


async def test_a_fork_sees_the_checkpoints_of_the_turns_it_shares_and_can_undo_them(repo):
    async with _after_two_turns(repo) as (app, pilot):
        session = app.session.id
        await _rewind_at(app, pilot, 1)
        await pilot.press("2")  # fork before the second prompt, files as they are
        await wait_until(pilot, lambda: app.session.id != session)
        await settle(app, pilot)
        turns = [d["turn"] for kind, d in Store().checkpoint_events(app.session.id) if kind == "checkpoint"]
        assert turns == [0]  # the parent's first turn, shared; not its second
        await send(app, pilot, "/undo")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Undo the file changes of “first change”?" in str(app.screen.question)
        await pilot.press("y")
        await wait_until(pilot, lambda: "Undid" in _notices(app))
        assert not (repo / "a.txt").exists()


async def test_a_turn_stopped_with_esc_keeps_a_checkpoint_of_what_it_changed_so_undo_takes_it_back(repo):
    call = ("toolu_s", "bash", [json.dumps({"command": "printf 'half\\n' > a.txt; echo started; sleep 600"})])
    with LoopbackServer([Reply(anthropic_stream(["Working."], call))]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "change then sleep")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_s", "started"))
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy)  # only the kill ends a 600 s sleep
            await settle(app, pilot)
            [checkpoint] = [d for kind, d in Store().checkpoint_events(app.session.id) if kind == "checkpoint"]
            assert checkpoint["turn"] == 0 and checkpoint["files"][0]["path"] == "a.txt"
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_until(pilot, lambda: "Undid" in _notices(app))
            assert not (repo / "a.txt").exists()


async def test_the_rewind_command_selects_the_newest_prompt_or_goes_to_message_n(repo):
    async with _after_two_turns(repo) as (app, pilot):
        await send(app, pilot, "/rewind")
        chat = app.query_one(ChatView)
        await wait_until(pilot, lambda: chat.has_focus and chat.selected is list(app.query(UserMessage))[-1])
        await pilot.press("k")  # up to the first turn's answer: after it
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert str(app.screen.question).startswith("Rewind to after this answer (message 4)?")
        await pilot.press("escape")
        await send(app, pilot, "/rewind 0")
        await wait_until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "Rewind to before “first change” (message 0)?" in str(app.screen.question)
        question = str(app.screen.question)
        assert "remove: a.txt" in question and "remove: b.txt" in question
        assert "restore: a.txt" not in question  # one line a file: what it comes back as


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_the_rewind_choice(snap_compare, repo) -> None:
    from tests.app_helpers import steady

    with LoopbackServer(_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")

        async def run_before(pilot) -> None:
            await _two_turns(app, pilot)
            await _rewind_at(app, pilot, 1)
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
