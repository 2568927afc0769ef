"""Helpers for tests of the agent against a loopback model server: an agent with the built-in
tools, and one turn's events."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

import pytest

from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.tools import builtin_registry
from tests.conftest import wait_until
from tests.loopback import LoopbackServer


def make_agent(server: LoopbackServer, cwd: Path, provider: str = "anthropic", **kw) -> Agent:
    """An agent in ``cwd`` with the built-in tools, talking to ``server`` as ``provider``."""
    backend = make_backend(provider, model="test-model", api_key="sk-test", base_url=server.url, max_retries=0)
    return Agent(backend, builtin_registry(), AgentSettings(system="You are a test.", cwd=cwd, **kw))


async def collect(agent: Agent, history: list[dict], text: str) -> list:
    """Every event of one turn that sends ``text`` after ``history``."""
    return [event async for event in agent.run(history, text)]


async def interrupted(agent: Agent, history: list[dict], text: str, when: Callable[[list], bool]) -> list:
    """Run the turn that sends ``text`` after ``history`` until ``when(events so far)``, cancel
    it (what Esc does) and return ``agent.interrupt()``'s events, which close it."""
    seen: list = []

    async def consume() -> None:
        async for event in agent.run(history, text):
            seen.append(event)

    task = asyncio.create_task(consume())
    await wait_until(None, lambda: when(seen))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)  # a guard against a hang, not a timing
    return agent.interrupt()
