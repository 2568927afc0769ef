"""Start-up paints the first frame before it imports or reads what that frame does not show
(issue 13): the engine stays unimported, the work the first frame does not need starts after
it (after a reopened session's newest messages are drawn), the collector waits until then."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from pathlib import Path

from scout_tui.tui.app import ScoutApp
from scout_tui.tui.main_screen import NARROW
from scout_tui.core.bus import Event
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer, SessionTree, ToolActivity
from tests.app_helpers import SIZE, long_session, settle
from tests.conftest import wait_until

NOT_FOR_THE_FIRST_FRAME = (
    "httpx", "scout_tui.engine.agent", "scout_tui.session.runtime", "scout_tui.backends", "scout_tui.engine.compaction",
    "scout_tui.frontends.headless", "scout_tui.extensions.plugins", "scout_tui.extensions.skills", "scout_tui.engine.summary", "scout_tui.config.trust",
    "scout_tui.widgets.approval", "scout_tui.engine.strategies", "rich.markdown", "markdown_it",
    # The tools run in a turn; the widgets need only ``tools.output.redact``. (The permission
    # and sandbox tables are checked in ``ScoutApp.__init__``, with the modules they need:
    # ``tools.globs`` for the rules' paths, ``sandbox_config`` for the settings.)
    "scout_tui.tools.bash", "scout_tui.tools.sandbox_after", "scout_tui.tools.base", "scout_tui.tools.files",
    "scout_tui.tools.search", "scout_tui.tools.sandbox", "scout_tui.tools.seccomp",
    # Screens opened on request; compaction markers, with a session that has them.
    "scout_tui.widgets.cost_view", "scout_tui.widgets.prompt_view", "scout_tui.widgets.dialogs",
    "scout_tui.widgets.compaction", "textual.widgets._collapsible",
    # The side panes, mounted once the first frame is painted (stand-ins hold their places).
    "scout_tui.widgets.session_tree", "scout_tui.widgets.tool_activity",
    # The store and the events' vocabulary: a new session reads nothing before its first frame.
    "scout_tui.store.event_log", "sqlite3", "scout_tui.core.bus", "scout_tui.tui.show",
    # Shipped themes are checked by the tests, not at every start (Pygments' style names).
    "pygments",
)


def imported_by(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_importing_the_app_leaves_the_engine_unimported() -> None:
    loaded = imported_by("import scout_tui.tui.app")
    assert "scout_tui.tui.app" in loaded
    assert sorted(loaded & set(NOT_FOR_THE_FIRST_FRAME)) == []


def test_the_first_frame_is_drawn_without_the_engine_the_tools_or_pygments(tmp_home: Path, workdir: Path) -> None:
    code = """
import sys
from pathlib import Path
from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
class FirstFrame(ScoutApp):
    def on_mount(self):
        self.call_after_refresh(lambda: (print("\\n".join(sys.modules)), self.exit()))
FirstFrame(load_config(Path.cwd(), flags={"api_key": "sk-test"}), cwd=Path.cwd()).run(headless=True, size=(120, 40))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = set(done.stdout.split())
    assert "scout_tui.widgets.status_bar" in loaded
    assert sorted(loaded & set(NOT_FOR_THE_FIRST_FRAME)) == []


def test_the_cli_imports_no_textual_before_it_opens_the_app() -> None:
    loaded = imported_by("import scout_tui.cli")
    assert not any(name == "textual" or name.startswith("textual.") for name in loaded)


def app_in(repo: Path, **kwargs) -> ScoutApp:
    return ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, **kwargs)


async def test_a_reopened_session_is_drawn_before_the_rest_of_start_up_begins(tmp_home: Path, workdir: Path) -> None:
    store = Store()
    sid = long_session(store, workdir, calls=60, size=100)
    store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant",
                                                                 "content": [{"type": "text", "text": "the last word"}]}}))
    seen: list[tuple[int, bool, bool]] = []

    class Recording(ScoutApp):
        def start_background(self) -> None:
            if not self.background_started:
                seen.append((self.chat.loaded_count, self.history_ready.is_set(), self.extensions_ready.is_set()))
            super().start_background()

    app = Recording(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir, continue_=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.history_ready.is_set() and app.extensions_ready.is_set()
    # The newest messages were mounted; the older ones and the plugins were not read yet.
    assert len(seen) == 1 and seen[0][0] > 0 and seen[0][1:] == (False, False)


def test_the_garbage_collector_is_off_only_until_the_first_frame(tmp_home: Path, workdir: Path) -> None:
    states: list[bool] = []

    class FirstFrame(ScoutApp):
        def on_mount(self) -> None:  # before ScoutApp.on_mount (Textual calls both)
            states.append(gc.isenabled())

        def start_background(self) -> None:
            super().start_background()
            states.append(gc.isenabled())
            self.exit()

    assert gc.isenabled()
    FirstFrame(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir).run(headless=True, size=SIZE)
    assert states == [False, True] and gc.isenabled()


async def test_the_first_frame_shows_the_footer_keys(tmp_home: Path, workdir: Path) -> None:
    # Drawn by the footer itself (tests/test_footer.py: as Textual's keys would look); the
    # keys' widgets are made after the first frame.
    first_frame: list[str] = []

    class FirstFrame(ScoutApp):
        def on_mount(self) -> None:
            self.call_after_refresh(lambda: first_frame.append(self.screen._compositor.render_strips()[-1].text))

    app = FirstFrame(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
    assert len(first_frame) == 1 and " ^q Quit " in first_frame[0] and "^p palette" in first_frame[0]


def test_an_app_that_cannot_start_leaves_the_collector_on(tmp_home: Path, workdir: Path, capsys) -> None:
    from scout_tui.cli import main

    (workdir / "scout.toml").write_text('[models."claude-sonnet-4-5"]\ncontext_windw = 1000\n')  # ScoutApp() raises
    assert main(["--api-key", "sk-test"]) == 1
    assert "unknown key 'context_windw'" in capsys.readouterr().err
    assert gc.isenabled()


async def test_start_up_work_begins_when_another_session_replaces_the_first_at_once(tmp_home: Path, workdir: Path) -> None:
    class Replaced(ScoutApp):
        def on_mount(self) -> None:  # Ctrl+N before the app's own session is drawn
            self.call_after_refresh(self.action_new_session)

    app = Replaced(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.background_started and app.extensions_ready.is_set()


def test_markdown_rendering_is_set_up_in_a_thread_before_the_first_answer(tmp_home: Path, workdir: Path) -> None:
    # In a fresh interpreter: rich.markdown is not loaded by start-up (the import guard above),
    # and must not be first imported on the event loop by the first streamed answer's round.
    code = f"""
import asyncio, sys, threading
from pathlib import Path
import rich
from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
importers = []
real_import = __builtins__.__import__ if hasattr(__builtins__, "__import__") else __builtins__["__import__"]
def spy(name, *args, **kwargs):
    if name == "rich.markdown" and "rich.markdown" not in sys.modules:
        importers.append(threading.current_thread().name)
    return real_import(name, *args, **kwargs)
import builtins
builtins.__import__ = spy
async def main():
    app = ScoutApp(load_config(Path({str(workdir)!r}), flags={{"api_key": "sk-test"}}), cwd=Path({str(workdir)!r}))
    async with app.run_test() as pilot:
        while "rich.markdown" not in sys.modules:  # the subprocess's timeout guards a hang
            await pilot.pause()
    print("rich.markdown" in sys.modules, importers)
asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HOME": str(tmp_home)})
    assert done.returncode == 0, done.stderr
    loaded, importers = done.stdout.split(" ", 1)
    assert loaded == "True" and "MainThread" not in importers, done.stdout


def test_the_event_loop_imports_no_engine_module_at_start_up_or_in_a_turn(tmp_home: Path, workdir: Path) -> None:
    # The threads started after the first frame import the engine (runtime, backends, httpx);
    # an import of it on the event loop meanwhile waits for theirs to finish (the import lock):
    # typed keys stalled ~100 ms when a prompt was sent right after start-up.
    code = f"""
import asyncio, builtins, sys, threading
from pathlib import Path
from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from tests.loopback import LoopbackServer, Reply, anthropic_stream
ENGINE = ("scout_tui.session.runtime", "scout_tui.engine.agent", "scout_tui.backends", "httpx")
on_the_loop = []
real_import = builtins.__import__
def spy(name, *args, **kwargs):
    if name.startswith(ENGINE) and threading.current_thread() is threading.main_thread():
        on_the_loop.append(name)
    return real_import(name, *args, **kwargs)
async def main(url):
    repo = Path({str(workdir)!r})
    app = ScoutApp(load_config(repo, flags={{"api_key": "sk-test", "base_url": url}}), cwd=repo)
    async with app.run_test() as pilot:
        builtins.__import__ = spy  # from the first frame on
        app.query_one("Composer").text = "hello"
        await pilot.press("enter")
        while not app.chat.query("AssistantMessage") or app.busy:  # the subprocess's timeout guards a hang
            await pilot.pause()
        builtins.__import__ = real_import
    print(sorted(set(on_the_loop)))
with LoopbackServer(handler=lambda request: Reply(anthropic_stream(["Hi", " there"]))) as server:
    asyncio.run(main(server.url))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_home)}, cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


async def test_the_side_panes_replace_their_stand_ins_after_the_first_frame(tmp_home: Path, workdir: Path) -> None:
    first_frame: list[tuple[str, int]] = []

    class FirstFrame(ScoutApp):
        def fill_main_screen(self) -> None:  # the layout is mounted: the next refresh draws it
            super().fill_main_screen()
            self.call_after_refresh(lambda: first_frame.append(
                ("\n".join(strip.text for strip in self.screen._compositor.render_strips()),
                 len(self.query(SessionTree)) + len(self.query(ToolActivity)))))

    app = FirstFrame(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.tree_pane is not None)
        await pilot.pause()
        panes = app.screen._compositor.render_strips()
        assert list(app.query_one("#side").children) == [app.tool_pane, app.tree_pane]
    text, mounted = first_frame[0]
    assert mounted == 0 and "Tool activity" in text and "Sessions" in text
    # The panes are drawn where their stand-ins were, with the same titles.
    assert [strip.text for strip in panes if "Tool activity" in strip.text or "Sessions" in strip.text] == \
        [line for line in text.splitlines() if "Tool activity" in line or "Sessions" in line]


def side_panes_held(workdir: Path, gate: asyncio.Event) -> ScoutApp:
    """The app in ``workdir``, its side panes mounted only once ``gate`` is set."""

    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    mount = app.side_panes.mount_side_panes

    def held() -> None:
        async def later() -> None:
            await gate.wait()
            mount()
        app.run_worker(later())

    app.side_panes.mount_side_panes = held  # type: ignore[method-assign]
    return app


async def test_ctrl_t_before_the_sessions_pane_is_mounted_focuses_it_once_it_is(tmp_home: Path, workdir: Path) -> None:
    gate = asyncio.Event()
    app = side_panes_held(workdir, gate)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.background_started)
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.tree_pane is None and isinstance(app.focused, Composer)
        gate.set()
        await wait_until(pilot, lambda: app.tree_pane is not None and app.tree_pane.has_focus)
        await pilot.press("ctrl+t")  # and back
        await wait_until(pilot, lambda: isinstance(app.focused, Composer))


async def test_a_reopened_session_s_tool_pane_opens_at_its_newest_call(tmp_home: Path, workdir: Path) -> None:
    # The pane is mounted after the first frame and filled at once: its scroll to the newest
    # row must wait for the rows' real heights (seen: it stopped at f11 of f0-f29, at 80x24).
    sid = long_session(Store(), workdir, calls=30, size=300)
    for size in ((100, 24), (80, 24)):  # beside the chat; folded away and shown over it (Ctrl+T twice)
        app = app_in(workdir, resume=sid)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            await wait_until(pilot, lambda: app.tool_pane is not None)
            if size[0] < NARROW:
                await pilot.press("ctrl+t", "ctrl+t")
            await settle(app, pilot)
            rows = app.tool_pane.query_one("#tool-list")
            assert rows.max_scroll_y > 0 and rows.scroll_y == rows.max_scroll_y, size


async def test_every_frame_until_the_side_panes_are_in_shows_their_titles_on_their_background(tmp_home: Path,
                                                                                           workdir: Path) -> None:
    # Seen in a raw terminal log: one frame with the stand-ins gone and the panes not yet in.
    frames: list[tuple[str, str]] = []

    class Recording(ScoutApp):
        def _display(self, screen, renderable) -> None:
            if self.tree_pane is None or not frames or "Tool activity" not in frames[-1][0]:
                strips = screen._compositor.render_strips()
                side = screen.query_one("#side")
                frames.append((strips[side.region.y].text, str(side.children[0].styles.background)))
            super()._display(screen, renderable)

    app = Recording(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.tree_pane is not None)
        await pilot.pause()
        surface = str(app.tool_pane.styles.background)
    assert len(frames) > 1
    assert all("Tool activity" in line for line, _ in frames), [line for line, _ in frames]
    assert {background for _, background in frames} == {surface}


async def test_ctrl_t_twice_before_the_sessions_pane_is_mounted_comes_back_to_the_composer(tmp_home: Path,
                                                                                          workdir: Path) -> None:
    gate = asyncio.Event()
    app = side_panes_held(workdir, gate)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.background_started)
        await pilot.press("ctrl+t", "ctrl+t")  # to the pane and back, both waiting for it
        gate.set()
        await wait_until(pilot, lambda: app.side_panes_ready.is_set())
        await pilot.pause()
        assert isinstance(app.focused, Composer)
