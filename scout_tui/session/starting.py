"""Opening a session for a front end without a screen (``-p``, ``acp``): the config's and the
extensions' notes said, the setup checked, the model's metadata read, the MCP servers started and
the agent built (``open_session``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scout_tui.session.session import Session, setup_problem

if TYPE_CHECKING:
    from scout_tui.config.layers import Config
    from scout_tui.core.bus import Event
    from scout_tui.mcp.config import ServerConfig
    from scout_tui.store.event_log import Store
    from scout_tui.store.opening import OpenedSession


async def open_session(config: Config, cwd: Path, *, store: Store, warn: Callable[[str], None],
                       resume: str | None = None, latest: bool = False,
                       fork: tuple[str, int | None] | None = None, opened: OpenedSession | None = None,
                       on_notice: Callable[[Event], None] | None = None, extra_mcp: Sequence[ServerConfig] = (),
                       mcp_warn: Callable[[str], None] | None = None, **agent_options: Any) -> Session:
    """A session of ``cwd`` opened for a front end without a screen (``-p``, ``acp``): new, the
    latest (``latest``, ``-c``), ``resume`` or ``fork`` (``store.opening.open_session``), or
    ``opened`` as read; ``config.notes``, skill and plugin problems said through ``warn``; the
    setup checked (``setup_problem``); the model's metadata read; the MCP servers started
    (``Session.start_mcp``; what they say through ``mcp_warn``, default ``warn``); the agent built
    (its notes said). ``on_notice`` gets the ``notice``
    events of the bus before the plugins' handlers. ``agent_options`` go to ``build_agent``.

    Raises:
        ScoutError: no such session, a bad setup (``setup_problem``), a bad permission rule or
            ``[sandbox]`` value (then no MCP server is left running).
    """
    from scout_tui.core.bus import Bus
    from scout_tui.core.errors import ScoutError
    from scout_tui.extensions.plugins import load_plugins
    from scout_tui.extensions.skills import discover_skills
    from scout_tui.session.runtime import model_metadata_asking_the_server
    from scout_tui.store import opening

    for note in config.notes:
        warn(note)
    skills, problems = discover_skills(cwd)
    plugins = load_plugins(cwd, config=config)
    for problem in (*problems, *plugins.problems):
        warn(problem)
    bus = Bus()
    if on_notice is not None:
        bus.on("notice", on_notice)
    plugins.attach(bus, report=warn)
    if problem := setup_problem(config, plugins):  # after the plugins: one may register the provider
        raise ScoutError(problem)
    # Before a session is read: a bad [models."ID"] table must not leave an empty one behind.
    info = await model_metadata_asking_the_server(config)
    if opened is None:
        opened = opening.open_session(store, cwd, resume=resume, latest=latest, fork=fork)
    session = Session(store, cwd, config, opened=opened, bus=bus, skills=skills, plugins=plugins, info=info,
                      **agent_options)
    await session.start_mcp(mcp_warn or warn, extra_mcp)  # before the first request (a short wait): their tools belong in it
    try:
        await asyncio.to_thread(session.ensure_agent)
    except BaseException:
        await session.close()
        raise
    for note in session.agent_notes():
        warn(note)
    return session
