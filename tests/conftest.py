"""Shared fixtures: an isolated home for config and sessions, the wire fixtures, waiting for the
running app (``wait_until``), and fixed ids and clocks for what snapshots show."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import uuid
from pathlib import Path
from typing import Callable

import pytest

WIRE = Path(__file__).parent / "fixtures" / "wire"


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME, SCOUT_HOME and XDG dirs; no provider keys or SCOUT_* settings leak in."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCOUT_HOME", str(home / ".scout-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    import os

    from scout_tui.config import keys

    for key in list(os.environ):
        if key.startswith("SCOUT_") and key != "SCOUT_HOME" or key in keys.key_variables() or key == "NO_COLOR":
            monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary repository directory, made the current directory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture
def home_project(tmp_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder in the fresh HOME, made the current directory: the welcome shows it as
    ``~/project`` on every run (a folder beside HOME would show its temporary path)."""
    repo = tmp_home / "project"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


def wire(name: str) -> bytes:
    """The raw bytes of a shared wire fixture."""
    return (WIRE / name).read_bytes()


def expected(name: str) -> dict:
    """The ``*.expected.json`` sibling of a wire fixture, parsed."""
    stem = name.rsplit(".", 1)[0]
    return json.loads((WIRE / f"{stem}.expected.json").read_text())


# -- the running app: waiting for it, and what a snapshot shows -----------------------------


async def wait_until(pilot, predicate: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    """Let the app run (``pilot.pause()``; with ``pilot`` None, the event loop) until
    ``predicate()`` is true, checked before each pause.

    ``timeout`` (seconds of wall clock) only guards against a hang, however loaded the
    machine: on expiry the test fails, naming ``what`` it waited for (else the predicate's
    source line). Raises ``pytest.fail.Exception``.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout:g} s waiting until {what or _source(predicate)}", pytrace=False)
        if pilot is None:
            await asyncio.sleep(0.01)
        else:
            await pilot.pause()


def until(predicate: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    """``wait_until`` for code outside an event loop (a process the test watches): poll
    ``predicate()`` every 20 ms until true. ``timeout`` only guards against a hang: on expiry the
    test fails naming ``what`` it waited for. Raises ``pytest.fail.Exception``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout:g} s waiting until {what or _source(predicate)}", pytrace=False)
        time.sleep(0.02)


def _source(predicate: Callable[[], object]) -> str:
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return repr(predicate)


@pytest.fixture
def small_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Epoch compaction at a small scale: past 10 tool calls, the newest 5 whole, 10 shortened,
    epochs of 5 calls."""
    for key, value in {"EPOCH_TOOL_CALL_THRESHOLD": 10, "EPOCH_FULL_TOOL_CALLS": 5,
                       "EPOCH_COMPACTED_TOOL_CALLS": 10, "EPOCH_SIZE": 5}.items():
        monkeypatch.setenv(f"SCOUT_{key}", str(value))


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Session ids and the context estimate come out the same on every run (the system prompt
    holds the temporary directory's path and today's date)."""
    from scout_tui.engine.context import ContextWindow

    counter = iter(range(1, 1000))
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=0x5C0075E55100 + next(counter)))
    monkeypatch.setattr(ContextWindow, "overhead_tokens", lambda self: 1500)


class SteppingClock:
    """Seconds that move by ``step`` each time they are read, and by ``advance(seconds)``:
    durations measured with it depend on what ran, never on how fast."""

    def __init__(self, start: float = 1_000.0, step: float = 0.01) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> SteppingClock:
    """The clocks behind durations and ages on screen, fixed: a tool call's ``elapsed``
    (``Agent.clock``) is 0.01 s a read, so a one-call turn shows ``0.0s``; the sessions pane's
    "now" stops when the test starts, so a session written during it is "just now"."""
    from scout_tui.engine.agent import Agent
    from scout_tui.widgets.session_tree import SessionTree

    clock = SteppingClock()
    monkeypatch.setattr(Agent, "clock", staticmethod(clock))
    stopped = time.time()
    monkeypatch.setattr(SessionTree, "default_clock", staticmethod(lambda: stopped))
    return clock


@pytest.fixture(autouse=True)
def _no_hold_left(monkeypatch):
    """Each test ends with no key's hold on background threads (``urgency``: a test may make
    holds last until released; one left would pause the next tests' network threads)."""
    from scout_tui.core import urgency

    yield
    urgency.release()


@pytest.fixture(autouse=True)
def _forget_withheld_keys(monkeypatch):
    """Each test starts with no key taken out of the environment by an earlier one
    (``keys.withhold`` keeps what it took for the rest of the process)."""
    from scout_tui.config import keys

    monkeypatch.setattr(keys, "_WITHHELD", {})


@pytest.fixture
def outside():
    """A real folder outside the workspace and outside /tmp (inside the sandbox /tmp is a private
    tmpfs, where a write would succeed unseen and prove nothing); removed afterwards."""
    import os
    import shutil
    import tempfile

    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    path = Path(tempfile.mkdtemp(prefix="scout-outside-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)
