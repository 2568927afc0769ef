"""Helpers for tests of the running app: making and driving it with Pilot, waiting for a turn,
stored sessions to open, model replies held back by the test, theme files, a widget's text."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from textual import events
from textual.geometry import Region
from textual.widget import Widget
from textual.worker import WorkerCancelled

from scout_tui.tui.app import ScoutApp
from scout_tui.core.bus import Event
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer, ToolActivity
from scout_tui.widgets.assistant_message import AssistantMessage
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply

SIZE = (120, 40)
"""The terminal size (columns, rows) of the app tests and snapshots."""


def make_app(repo: Path, server: LoopbackServer | None, provider: str = "anthropic", **flags) -> ScoutApp:
    """The app in ``repo`` talking to ``server`` (with a test key), or with no key at all."""
    base = {"provider": provider, "base_url": server.url if server else None, "api_key": "sk-test" if server else None}
    return ScoutApp(load_config(repo, flags={**base, **flags}), cwd=repo)


async def send(app: ScoutApp, pilot, text: str) -> None:
    """Type ``text`` into the composer and press Enter."""
    composer = app.query_one(Composer)
    composer.focus()
    composer.load_text(text)
    await pilot.press("enter")


def type_ahead(app: ScoutApp, *keys: str) -> None:
    """Queue key presses on the app at once, as a fast typist (or tmux) sends them: unlike
    ``pilot.press``, nothing waits for the app to go idle between them. Single characters only."""
    for key in keys:
        event = events.Key(key, key)
        event.set_sender(app)
        app.post_message(event)


def running_and_printed(app: ScoutApp, tool_id: str, printed: str) -> bool:
    """Whether the call ``tool_id`` is running in the tool pane and has printed ``printed``."""
    tools = app.query_one(ToolActivity)
    try:
        return tools.status_of(tool_id) == "running" and printed in tools.output_of(tool_id)
    except KeyError:  # no row for it yet
        return False


async def workers_done(app: ScoutApp, seconds: float = 60.0) -> None:
    """Wait for every worker; one replaced by a newer of its group (exclusive) is fine. A worker
    still running after ``seconds`` (a hang guard) fails the test."""

    async def done() -> None:
        while True:
            try:
                return await app.workers.wait_for_complete()
            except WorkerCancelled:
                continue

    try:
        await asyncio.wait_for(done(), seconds)
    except asyncio.TimeoutError:
        running = [w.name for w in app.workers if not w.is_finished]
        pytest.fail(f"workers still running after {seconds:g} s: {running}", pytrace=False)


async def settle(app: ScoutApp, pilot, seconds: float = 60.0) -> None:
    """Wait for the turn, the store writes and the chat's last flush. ``seconds`` only guards
    against a hang (a turn stuck on an approval prompt, say): the test fails instead."""
    await workers_done(app, seconds)
    await wait_until(pilot, lambda: not app.busy and all(a.done for a in app.query(AssistantMessage)), seconds,
                     "the turn ends and every answer is drawn")
    await workers_done(app, seconds)
    await pilot.pause()


async def steady(app: ScoutApp, pilot) -> None:
    """A still frame: no blinking cursor (its phase at capture time depends on load)."""
    app.query_one(Composer).cursor_blink = False
    await pilot.pause()


# -- model replies the test holds back -----------------------------------------------------


@dataclass
class HeldReply(Reply):
    """A reply that sends its first ``held_after`` pieces, then waits for ``release()`` before
    the rest: the test decides when the model goes on, whatever the machine's speed. The wait
    gives up after ``hang_guard`` seconds, so a failed test does not leave the server stuck."""

    held_after: int = 0
    hang_guard: float = 60.0
    released: threading.Event = field(default_factory=threading.Event)

    def pieces(self) -> Iterator[bytes]:  # type: ignore[override]  (the server only iterates)
        pieces = super().pieces()
        yield from pieces[: self.held_after]
        self.released.wait(self.hang_guard)
        yield from pieces[self.held_after :]

    def release(self) -> None:
        self.released.set()


# -- stored sessions to open ----------------------------------------------------------------


def say(store: Store, sid: str, role: str, *content: dict) -> None:
    """Store a message of ``role`` ("user" or "assistant") with ``content`` blocks in ``sid``."""
    event = "message.user" if role == "user" else "message.assistant"
    store.append(sid, Event.of(event, {"message": {"role": role, "content": list(content)}}))


def text_block(text: str) -> dict:
    """A text content block."""
    return {"type": "text", "text": text}


def long_session(store: Store, repo: Path, calls: int = 30, size: int = 5000) -> str:
    """A stored session with ``calls`` read calls whose results are ``size`` characters each."""
    sid = store.create_session(repo)
    store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "read all"}]}}))
    for i in range(calls):
        use = {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}.txt"}}
        store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant", "content": [use]}}))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i}:" + "x" * size, "is_error": False}
        store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [result]}}))
    store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}}))
    return sid


ANSWER = """\
`notes.txt` holds the answer, and `missing.txt` does not exist:

```python
def answer() -> int:
    return 42  # from notes.txt
```

- one fact
- no *surprises*"""


def conversation(store: Store, repo: Path) -> str:
    """A stored session: a read that worked, a bash call that failed, an answer with code
    (``ANSWER``); and a fork of it after the first answer, so the tree shows a branch."""

    def message(sid: str, role: str, *content: dict) -> None:
        event = "message.user" if role == "user" else "message.assistant"
        store.append(sid, Event.of(event, {"message": {"role": role, "content": list(content)}}))

    sid = store.create_session(repo)
    message(sid, "user", {"type": "text", "text": "what does notes.txt say? and missing.txt?"})
    message(sid, "assistant", {"type": "text", "text": "Let me read both."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "notes.txt"}},
            {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "cat missing.txt"}})
    message(sid, "user",
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "the answer is 42", "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "cat: missing.txt: No such file",
             "is_error": True})
    message(sid, "assistant", {"type": "text", "text": ANSWER})
    store.fork(sid, 2, title="try another file")
    return sid


# -- theme files ----------------------------------------------------------------------------


def write(folder: Path, name: str, text: str) -> Path:
    """``folder/name.toml`` holding ``text`` (the folder made if need be)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def user_dir(home: Path) -> Path:
    """Where a person's own themes live under ``home``."""
    return home / ".config" / "scout" / "themes"


def project_dir(repo: Path) -> Path:
    """Where a project's themes live in ``repo``."""
    return repo / ".scout" / "themes"


# -- what a widget shows --------------------------------------------------------------------


def rendered(widget: Widget) -> str:
    """The text a widget (or, for a container, its shown descendants) has on screen."""
    if not widget.display:
        return ""
    if widget.children:
        return "\n".join(rendered(child) for child in widget.children)
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text.rstrip() for strip in strips)
