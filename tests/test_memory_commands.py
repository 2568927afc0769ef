"""``/init`` and ``/memory`` (``tui/memory_commands.py``, ``session/slash.py``): ``/init`` is a
turn asking the model for an AGENTS.md, whose write is asked first in ask mode; ``/memory`` opens
the nearest memory file in ``$EDITOR`` and the next request's system prompt has the new text."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from scout_tui.session.memory import init_prompt
from scout_tui.tui.app import ScoutApp
from scout_tui.widgets.approval import ApprovalScreen
from scout_tui.widgets.chat_messages import Notice, UserMessage
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

WRITTEN = "# AGENTS.md\n\nRun the tests with `make test`.\n"


@pytest.fixture
def project(tmp_home: Path, workdir: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    return workdir


def editor_script(tmp_path: Path, body: str) -> str:
    """An EDITOR: a shell script running ``body`` with the file as $1."""
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def write_call(path: str = "AGENTS.md") -> Reply:
    return Reply(anthropic_stream(["Here it is."], ("toolu_1", "write", [json.dumps({"path": path, "content": WRITTEN})])))


def notices(app) -> list[str]:
    return [n.text for n in app.query(Notice)]


async def systems_of_two_turns(project: Path, between: Callable[[ScoutApp, Any], Awaitable[None]]) -> tuple[str, str]:
    """The system prompts (as JSON) of two turns in the app, with ``between(app, pilot)`` done after the first."""
    replies = [Reply(anthropic_stream(["One."])), Reply(anthropic_stream(["Two."]))]
    with LoopbackServer(replies) as server:
        app = make_app(project, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "first")
            await settle(app, pilot)
            await between(app, pilot)
            await send(app, pilot, "second")
            await settle(app, pilot)
    first, second = (json.dumps(request.json()["system"]) for request in server.requests)
    return first, second


async def test_memory_opens_the_nearest_file_in_the_editor_and_the_next_request_carries_it(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "AGENTS.md").write_text("OLD-RULE\n")
    monkeypatch.setenv("EDITOR", editor_script(tmp_path, 'echo "EDITED-RULE" >> "$1"'))
    monkeypatch.delenv("VISUAL", raising=False)

    async def memory(app: ScoutApp, pilot) -> None:
        await send(app, pilot, "/memory")
        await wait_until(pilot, lambda: any("saved" in text for text in notices(app)), what="the saved notice")
        assert notices(app)[-1] == "Memory file AGENTS.md saved: the next request carries it."

    first, second = await systems_of_two_turns(project, memory)
    assert "OLD-RULE" in first and "EDITED-RULE" not in first
    assert "OLD-RULE" in second and "EDITED-RULE" in second
    assert (project / "AGENTS.md").read_text() == "OLD-RULE\nEDITED-RULE\n"


async def test_a_memory_file_written_between_turns_is_in_the_next_request(project: Path) -> None:
    async def write(app: ScoutApp, pilot) -> None:
        (project / "AGENTS.md").write_text("WRITTEN-BY-ANOTHER-PROGRAM\n")

    first, second = await systems_of_two_turns(project, write)
    assert "WRITTEN-BY-ANOTHER-PROGRAM" not in first and "WRITTEN-BY-ANOTHER-PROGRAM" in second


async def test_memory_without_a_memory_file_creates_agents_md_here(project: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", editor_script(tmp_path, 'echo "NEW-RULE" > "$1"'))
    app = make_app(project, None)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/memory")
        await wait_until(pilot, lambda: any("saved" in text for text in notices(app)), what="the saved notice")
    assert (project / "AGENTS.md").read_text() == "NEW-RULE\n"


async def test_an_editor_that_fails_is_said(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", editor_script(tmp_path, "exit 3"))
    app = make_app(project, None)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/memory")
        await wait_until(pilot, lambda: any("exited with status" in text for text in notices(app)), what="the error")
    assert not (project / "AGENTS.md").exists()


async def test_init_asks_the_model_for_agents_md_and_its_write_is_asked_first(project: Path) -> None:
    with LoopbackServer([write_call(), Reply(anthropic_stream(["Written."]))]) as server:
        app = make_app(project, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/init focus on the tests")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval of the write")
            assert "+Run the tests with `make test`." in app.screen.request.diff
            assert not (project / "AGENTS.md").exists()  # nothing written before the answer
            await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys")
            await pilot.press("y")
            await settle(app, pilot)
            assert [m.text for m in app.query(UserMessage)] == [init_prompt(project, "focus on the tests")]
    assert (project / "AGENTS.md").read_text() == WRITTEN
    [message] = server.requests[0].json()["messages"]
    sent = message["content"][0]["text"]
    assert f"write {project / 'AGENTS.md'}" in sent and sent.endswith("Also: focus on the tests")


def test_print_mode_init_sends_the_prompt_and_the_model_writes_agents_md(repo, env):  # noqa: F811
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with LoopbackServer([write_call(), Reply(anthropic_stream(["Written."]))]) as server:
        done = scout(["-p", "/init", "--permission-mode", "auto-edit", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    [message] = server.requests[0].json()["messages"]
    assert message["content"][0]["text"] == init_prompt(repo)
    assert (repo / "AGENTS.md").read_text() == WRITTEN
