"""The welcome of an empty session (``widgets/welcome.py``): the folder, the model, the
memory files read, the keys to start with; gone with the first prompt, absent from a
session opened with its messages.

Update the snapshots after an intended visual change with
`pytest --snapshot-update tests/test_welcome.py`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.session.runtime import SETUP_HELP
from scout_tui.store.event_log import Store
from scout_tui.widgets.chat_messages import Notice, UserMessage
from scout_tui.session.memory import MEMORY_BUDGET, memory_files
from scout_tui.widgets.welcome import Welcome, memory_names, tilde
from tests.app_helpers import SIZE, conversation, make_app, send, settle, steady
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def app_in(repo: Path, **kwargs) -> ScoutApp:
    return ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, **kwargs)


async def welcomed(app: ScoutApp, pilot) -> str:
    """The welcome's text once it is shown and names the model."""
    await wait_until(pilot, lambda: any(w.model for w in app.query(Welcome)), what="the welcome with its model")
    await pilot.pause()
    return " ".join(app.query_one(Welcome).render().plain.split())


def test_a_folder_in_home_reads_with_a_tilde(tmp_path: Path) -> None:
    assert tilde(tmp_path / "code" / "app", home=tmp_path) == "~/code/app"
    assert tilde(tmp_path, home=tmp_path) == "~"
    assert tilde(Path("/srv/app"), home=tmp_path) == "/srv/app"


async def test_an_empty_session_is_welcomed_with_its_folder_model_and_keys(home_project: Path) -> None:
    app = app_in(home_project)
    async with app.run_test(size=SIZE) as pilot:
        text = await welcomed(app, pilot)
        assert "scout ~/project" in text
        assert "anthropic · claude-" in text
        assert "no AGENTS.md: /init writes one" in text
        assert "/help commands" in text and "Ctrl+T sessions and tools" in text


async def test_the_welcome_names_the_project_s_agents_md(home_project: Path) -> None:
    (home_project / "AGENTS.md").write_text("Run the tests with make test.\n")
    app = app_in(home_project)
    async with app.run_test(size=SIZE) as pilot:
        text = await welcomed(app, pilot)
        assert "reads AGENTS.md" in text and "no AGENTS.md" not in text


async def test_the_welcome_names_the_person_s_own_agents_md_when_the_project_has_none(tmp_home: Path,
                                                                                      home_project: Path) -> None:
    (tmp_home / ".agents").mkdir()
    (tmp_home / ".agents" / "AGENTS.md").write_text("Be brief.\n")
    app = app_in(home_project)
    async with app.run_test(size=SIZE) as pilot:
        assert "reads ~/.agents/AGENTS.md" in await welcomed(app, pilot)


def in_web(repo: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ScoutApp:
    """The app in ``repo/web`` of the git repository ``repo``, ``AGENTS.md`` at its root and a memory file ``name`` in web/."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("Run the tests with make test.\n")
    (repo / "web").mkdir()
    (repo / "web" / name).write_text("Use pnpm.\n")
    monkeypatch.chdir(repo / "web")
    return app_in(repo / "web")


async def test_from_a_subfolder_the_welcome_names_the_root_s_and_the_subfolder_s_memory_files(
        home_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = in_web(home_project, "CLAUDE.md", monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        assert "reads ../AGENTS.md, CLAUDE.md" in await welcomed(app, pilot)


async def test_of_more_memory_files_the_welcome_names_the_nearest_and_counts_the_others(
        tmp_home: Path, home_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_home / ".agents").mkdir()
    (tmp_home / ".agents" / "AGENTS.md").write_text("x" * (MEMORY_BUDGET + 1))
    app = in_web(home_project, "AGENTS.md", monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        assert "reads AGENTS.md and 2 more memory files" in await welcomed(app, pilot)
    names = memory_names(memory_files(home_project / "web"), home_project / "web")
    assert names == ["~/.agents/AGENTS.md (clipped)", "../AGENTS.md", "AGENTS.md"]


async def test_an_import_refused_is_said_below_the_welcome(tmp_home: Path, home_project: Path) -> None:
    (tmp_home / "notes.md").write_text("Mine.\n")
    (home_project / "AGENTS.md").write_text("Style: @../notes.md, and use @types/node\n")
    app = app_in(home_project)
    async with app.run_test(size=SIZE) as pilot:
        await welcomed(app, pilot)
        await wait_until(pilot, lambda: app.query(Notice), what="the notice")
        assert [n.text for n in app.query(Notice)] == [
            f"{home_project / 'AGENTS.md'}:1: import of {tmp_home / 'notes.md'} refused: outside {home_project}"]


async def test_the_welcome_goes_with_the_first_prompt(home_project: Path) -> None:
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as server:
        app = make_app(home_project, server)
        async with app.run_test(size=SIZE) as pilot:
            await welcomed(app, pilot)
            await send(app, pilot, "hi")
            await settle(app, pilot)
            assert not app.query(Welcome)
            assert [m.text for m in app.query(UserMessage)] == ["hi"]


async def test_a_session_opened_with_its_messages_is_not_welcomed(home_project: Path) -> None:
    sid = conversation(Store(), home_project)
    for kwargs in ({"resume": sid}, {"continue_": True}):
        app = app_in(home_project, **kwargs)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await wait_until(pilot, lambda: app.tree_pane is not None and app.query(UserMessage), what="the session")
            assert app.query(UserMessage) and not app.query(Welcome)


async def test_a_new_session_is_welcomed_again(home_project: Path) -> None:
    sid = conversation(Store(), home_project)
    app = app_in(home_project, resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+n")
        assert "scout ~/project" in await welcomed(app, pilot)
        assert not app.query(UserMessage)


async def test_without_a_key_the_welcome_leaves_the_setup_to_the_notice(home_project: Path) -> None:
    app = make_app(home_project, None)
    async with app.run_test(size=SIZE) as pilot:
        text = await welcomed(app, pilot)
        await wait_until(pilot, lambda: any(n.text == SETUP_HELP for n in app.query(Notice)), what="the setup help")
        assert "API key" not in text
        chat = app.chat.children
        assert chat.index(app.query_one(Welcome)) < chat.index(next(n for n in app.query(Notice)))


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
@pytest.mark.parametrize("size", [SIZE, (80, 24)], ids=["120x40", "80x24"])
def test_snapshot_of_the_welcome(snap_compare, home_project: Path, size: tuple[int, int]) -> None:
    (home_project / "AGENTS.md").write_text("Run the tests with make test.\n")
    app = app_in(home_project)

    async def run_before(pilot) -> None:
        await welcomed(app, pilot)
        await settle(app, pilot)
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
