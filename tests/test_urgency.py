"""``urgency.yielding``: a background thread's imports wait while a typed key is held."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from scout_tui.core import urgency
from tests.conftest import until


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Makes the names of modules no one has imported yet (files on a path of their own)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(urgency, "HOLD_MAX", 3600.0)  # held until released, however slow the machine
    made: list[str] = []

    def make() -> str:
        name = f"urgency_probe_{tmp_path.name.replace('-', '_')}_{len(made)}"
        (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
        made.append(name)
        return name

    yield make
    for name in made:
        sys.modules.pop(name, None)


def waiting_in_the_hook(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code is urgency._on_audit.__code__:
            return True
        frame = frame.f_back
    return False


def test_a_yielding_threads_import_waits_while_a_key_is_held_and_goes_on_at_release(fresh_module):
    name, done = fresh_module(), threading.Event()

    def work() -> None:
        with urgency.yielding():
            __import__(name)
        done.set()

    urgency.hold(3600.0)
    worker = threading.Thread(target=work, daemon=True)
    try:
        worker.start()
        until(lambda: waiting_in_the_hook(worker), what="the worker's import waits in the audit hook")
        assert name not in sys.modules and not done.is_set()
    finally:
        urgency.release()
    worker.join(60)
    assert done.is_set() and sys.modules[name].VALUE == 42


def test_imports_on_the_main_thread_or_outside_the_block_do_not_wait(fresh_module):
    on_main, elsewhere = fresh_module(), fresh_module()
    released_by_guard, finished = threading.Event(), threading.Event()

    def guard() -> None:  # only against a hang: a waiting import would wait an hour
        if not finished.wait(60):
            released_by_guard.set()
            urgency.release()

    urgency.hold(3600.0)
    threading.Thread(target=guard, daemon=True).start()
    try:
        with urgency.yielding():  # on the main thread (the UI's event loop): no wait
            __import__(on_main)
        thread = threading.Thread(target=__import__, args=(elsewhere,), daemon=True)  # never entered the block
        thread.start()
        thread.join()
    finally:
        finished.set()
    assert not released_by_guard.is_set()
    assert on_main in sys.modules and elsewhere in sys.modules
