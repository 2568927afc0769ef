"""``scout_tui/compat.py``: each private library attribute it names is still there, of the kind it
relies on (a failure names the attribute and the installed version, so a Textual or mcp release
that changes one fails here, not silently in the app); and no other module of scout_tui names a
private library attribute, so a new one cannot creep in outside it.

Private attributes are read here directly: these tests are where their use is checked.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import signal
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable, Mapping

import anyio
import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static, TextArea

from scout_tui import compat

PACKAGE = Path(compat.__file__).resolve().parent
LIBRARIES = ("textual", "rich", "mcp", "acp", "httpx")


def changed(attribute: str, what: str, library: str = "textual") -> str:
    """The failure message: ``attribute`` and what changed about it, in the installed release."""
    return (f"{attribute} {what} in {library} {version(library)}: scout_tui/compat.py relies on it "
            f"(see its docstring); adapt compat.py to this release")


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def method(owner: type, name: str, library: str = "textual") -> Callable[..., Any]:
    """``owner``'s method ``name`` (found in its MRO), or a failure naming it."""
    found = inspect.getattr_static(owner, name, None)
    assert inspect.isfunction(found), changed(f"{owner.__name__}.{name}", f"is {found!r}, not a method", library)
    return found


# -- Textual: the footer ----------------------------------------------------------------------

def test_footer_key_is_textuals_key_widget_with_a_compact_reactive() -> None:
    try:
        key = compat.footer_key_class()
    except ImportError as e:
        pytest.fail(changed("textual.widgets._footer.FooterKey", f"cannot be imported ({e})"))
    assert issubclass(key, Widget), changed("textual.widgets._footer.FooterKey", "is no Widget")
    assert isinstance(inspect.getattr_static(key, "compact", None), Reactive), changed("FooterKey.compact", "is no reactive")
    assert "FooterKey(" in inspect.getsource(Footer.compose), changed("Footer.compose", "makes no FooterKey")


def test_footer_bindings_ready_is_the_reactive_its_compose_waits_for() -> None:
    ready = inspect.getattr_static(Footer, "_bindings_ready", None)
    assert isinstance(ready, Reactive), changed("Footer._bindings_ready", f"is {ready!r}, not a reactive")
    assert "self._bindings_ready" in inspect.getsource(Footer.compose), changed("Footer.compose", "no longer reads _bindings_ready")


async def test_footer_shows_its_keys_at_once_when_told() -> None:
    class Told(Footer):
        def __init__(self) -> None:
            super().__init__()
            compat.show_footer_keys_at_once(self)

    class Keys(App):
        BINDINGS = [Binding("ctrl+q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Told()

    app = Keys()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(Told)
        assert footer._bindings_ready is True, changed("Footer._bindings_ready", "is not set by set_reactive")
        assert footer.query(compat.footer_key_class()), changed("Footer._bindings_ready", "no longer makes the keys")


# -- Textual: keys ----------------------------------------------------------------------------

def test_a_nodes_bindings_for_a_key() -> None:
    class Box(Static):
        BINDINGS = [Binding("ctrl+w", "delete_word", "Delete word"), Binding("ctrl+w", "other", "Other")]

    try:
        found = compat.bindings_for_key(Box(), "ctrl+w")
    except AttributeError as e:
        pytest.fail(changed("DOMNode._bindings.key_to_bindings", f"is gone ({e})"))
    assert [binding.action for binding in found] == ["delete_word", "other"], changed("DOMNode._bindings", f"maps ctrl+w to {found}")
    assert compat.bindings_for_key(Box(), "x") == []


def test_text_areas_key_handler_is_an_async_method_of_the_event() -> None:
    handler = method(TextArea, "_on_key")
    assert inspect.iscoroutinefunction(handler), changed("TextArea._on_key", "is no coroutine")
    assert parameters(handler) == ["self", "event"], changed("TextArea._on_key", f"takes {parameters(handler)}")


async def test_keys_go_to_key_first_before_the_text_area() -> None:
    class NoX(compat.KeysBeforeTextArea, TextArea):
        async def key_first(self, event: Any) -> bool:
            return event.key == "x"

    class Box(App):
        def compose(self) -> ComposeResult:
            yield NoX()

    app = Box()
    async with app.run_test() as pilot:
        await pilot.press("a", "x", "b")
        await pilot.pause()
        assert app.query_one(NoX).text == "ab", changed("TextArea._on_key", "is not what inserts a typed key")


# -- Textual: the screen and the driver -------------------------------------------------------

def test_the_screens_update_tick_takes_no_arguments() -> None:
    tick = method(Screen, "_on_timer_update")
    assert parameters(tick) == ["self"], changed("Screen._on_timer_update", f"takes {parameters(tick)}")


@pytest.mark.skipif(sys.platform == "win32", reason="Textual's Linux driver")
async def test_the_linux_drivers_app_output_file_and_saved_mode() -> None:
    from textual.drivers.linux_driver import LinuxDriver

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    try:
        app: App[None] = App()
        driver = LinuxDriver(app)
    finally:
        for sig, handler in handlers.items():  # the driver puts in its own
            signal.signal(sig, handler)
    try:
        assert compat.driver_app(driver) is app
    except AttributeError:
        pytest.fail(changed("Driver._app", "is gone"))
    assert compat.driver_output(driver) is sys.__stderr__, changed("LinuxDriver._file", "is not the terminal's file")
    start = inspect.getsource(LinuxDriver.start_application_mode)
    assert "WriterThread(self._file)" in start, changed("LinuxDriver.start_application_mode", "no longer writes through _file")
    assert "self.attrs_before = termios.tcgetattr" in start, changed("LinuxDriver.attrs_before", "is not the mode it found")
    assert "termios.tcsetattr(self.fileno, termios.TCSANOW, self.attrs_before)" in inspect.getsource(LinuxDriver), \
        changed("LinuxDriver.attrs_before", "is not the mode it restores")
    assert compat.restore_mode_at_exit(driver, [0]) is False  # it found no mode yet: nothing to restore
    driver.attrs_before = [1]
    assert compat.restore_mode_at_exit(driver, [0]) is True and driver.attrs_before == [0]


# -- Textual: layout --------------------------------------------------------------------------

async def test_an_anchor_released_by_the_person() -> None:
    class Tall(App):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield Static("\n".join(map(str, range(100))))

    app = Tall()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(VerticalScroll)
        view.anchor()
        await pilot.pause()
        try:
            assert compat.anchor_released(view) is False
        except AttributeError:
            pytest.fail(changed("Widget._anchor_released", "is gone"))
        view.release_anchor()
        assert view.is_anchored and compat.anchor_released(view), changed("Widget._anchor_released", "is not set by release_anchor")


def test_the_layout_counters_and_the_arrangement_cache() -> None:
    widget = Widget()
    assert isinstance(getattr(widget, "_layout_updates", None), int), changed("Widget._layout_updates", "is no counter")
    assert "self._layout_updates" in inspect.getsource(Widget._get_box_model), \
        changed("Widget._get_box_model", "no longer keys its cache on _layout_updates")
    clear = method(Widget, "_clear_arrangement_cache")
    assert parameters(clear) == ["self"], changed("Widget._clear_arrangement_cache", f"takes {parameters(clear)}")
    before = widget._layout_updates
    compat.count_layout_change(widget)
    compat.clear_layout_cache(widget)
    assert widget._layout_updates == before + 2


# -- Textual: themes --------------------------------------------------------------------------

def test_the_apps_theme_methods_take_one_argument() -> None:
    for name in ("_refresh_truecolor_filter", "_watch_theme"):
        found = method(App, name)
        assert len(parameters(found)) == 2, changed(f"App.{name}", f"takes {parameters(found)}")


async def test_a_theme_is_applied_again_under_its_name() -> None:
    from textual.theme import Theme

    class Themed(App):
        def compose(self) -> ComposeResult:
            yield Static("x")

    app = Themed()
    async with app.run_test() as pilot:
        app.register_theme(Theme("mine", primary="#ff0000"))
        app.theme = "mine"
        await pilot.pause()
        app.register_theme(Theme("mine", primary="#00ff00"))
        compat.reapply_theme(app, "mine")
        compat.refresh_truecolor_filter(app, app.ansi_theme)
        await pilot.pause()
        assert app.get_css_variables()["primary"].lower() == "#00ff00"
        assert app.stylesheet._variables["primary"].lower() == "#00ff00", changed("App._watch_theme", "does not apply the theme")


# -- mcp --------------------------------------------------------------------------------------

async def test_the_id_of_an_mcp_sessions_next_request() -> None:
    from mcp import ClientSession
    from mcp.shared.message import SessionMessage

    to_client_send, to_client = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    from_client, from_client_receive = anyio.create_memory_object_stream[SessionMessage](1)
    async with ClientSession(to_client, from_client) as session:
        for _ in range(2):
            try:
                expected = compat.next_request_id(session)
            except AttributeError:
                pytest.fail(changed("BaseSession._request_id", "is gone", "mcp"))
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(session.send_ping)
                sent = await from_client_receive.receive()
                tasks.cancel_scope.cancel()
            went = getattr(sent.message.root, "id", None)
            assert went == expected, changed("BaseSession._request_id", f"was {expected}, the request went as {went}", "mcp")
    for stream in (to_client_send, from_client_receive):
        await stream.aclose()


# -- nowhere else ---------------------------------------------------------------------------

STDLIB_PRIVATE = {"_replace", "_asdict", "_fields", "_make", "_exit"}
"""Documented stdlib names with an underscore: namedtuple's API, ``os._exit``."""


def library_privates() -> set[str]:
    """Every private name the libraries define: their methods, instance and class attributes."""
    names: set[str] = set()
    pattern = re.compile(r"(?:def |self\.|^\s*)(_[a-z][a-z0-9_]*)\s*[(:=]", re.M)
    for library in LIBRARIES:
        root = Path(str(importlib.import_module(library).__file__)).parent
        for path in root.rglob("*.py"):
            names.update(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


def scout_modules() -> dict[str, Path]:
    return {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
            for path in sorted(PACKAGE.rglob("*.py")) if path.name != "__main__.py" and path != Path(compat.__file__).resolve()}


def our_privates(trees: dict[str, ast.Module]) -> set[str]:
    """The private names scout_tui defines itself (methods, attributes, class attributes)."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute) and ast.unparse(part.value) in ("self", "cls"):
                            names.add(part.attr)
                        elif isinstance(part, ast.Name):
                            names.add(part.id)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def class_names(node: ast.ClassDef) -> set[str]:
    """The private names a class's body uses on itself: ``self._x``, ``super()._x``, ``def _x``."""
    names = set()
    for part in ast.walk(node):
        if isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef)) and private(part.name):
            names.add(part.name)
        elif isinstance(part, ast.Attribute) and private(part.attr) and \
                ast.unparse(part.value) in ("self", "cls", "super()"):
            names.add(part.attr)
    return names


def classes_from_factories() -> list[type]:
    """Classes scout_tui makes at run time (not found by importing its modules)."""
    from textual.drivers.headless_driver import HeadlessDriver

    from scout_tui.tui.input_first import noting_input

    found = [noting_input(HeadlessDriver)]
    if sys.platform != "win32":
        from textual.drivers.linux_driver import LinuxDriver

        found.append(noting_input(LinuxDriver))
    return found


def our_classes(modules: dict[str, Path]) -> list[type]:
    """The classes defined in ``modules`` (imported), nested ones too."""
    found: list[type] = []
    stack: list[Mapping[str, Any]] = [vars(importlib.import_module(module)) for module in modules]
    while stack:
        for value in stack.pop().values():
            if inspect.isclass(value) and value.__module__ in modules and value not in found:
                found.append(value)
                stack.append(vars(value))
    return found


def class_body(cls: type, tree: ast.Module) -> ast.ClassDef | None:
    """``cls``'s ``class`` statement in its module's ``tree``: the innermost one holding its
    methods (a class made by a function may be renamed), else the one of its name."""
    lines = {member.__code__.co_firstlineno for member in vars(cls).values() if inspect.isfunction(member)}
    bodies = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and (
        any(node.lineno <= line <= (node.end_lineno or 0) for line in lines) if lines else node.name == cls.__name__)]
    return min(bodies, key=lambda node: (node.end_lineno or 0) - node.lineno, default=None)


@functools.cache
def source_of(base: type) -> str:
    try:
        return inspect.getsource(base)
    except (OSError, TypeError):
        return ""


def library_defines(base: type, name: str) -> bool:
    """Whether the library class ``base`` has ``name``: in its body, its slots, or set on self."""
    return name in vars(base) or name in getattr(base, "__slots__", ()) or \
        re.search(rf"self\.{name}\b", source_of(base)) is not None


def test_no_module_but_compat_names_a_private_library_attribute() -> None:
    modules = scout_modules()
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules.items()}
    theirs, ours = library_privates(), our_privates(trees)
    named: list[str] = []
    for module, tree in trees.items():
        where = modules[module].relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                paths = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                    [f"{node.module}.{alias.name}" for alias in node.names if not node.level]
                for dotted in paths:
                    parts = dotted.split(".")
                    if parts[0] in LIBRARIES and any(private(part) for part in parts[1:]):
                        named.append(f"{where}:{node.lineno} imports {dotted}")
            elif isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in STDLIB_PRIVATE:
                on = ast.unparse(node.value)
                if on not in ("self", "cls", "super()") and node.attr in theirs and node.attr not in ours:
                    named.append(f"{where}:{node.lineno} reads {on}.{node.attr}")
    # A class of ours built on a library's: what it, or a mixin of ours in it, names on itself
    # must not be the library's (an override, or a read of its internals through self).
    for cls in our_classes(modules) + classes_from_factories():
        bases = [base for base in cls.__mro__ if base.__module__.split(".")[0] in LIBRARIES]
        for mine in [base for base in cls.__mro__ if base.__module__ in trees] if bases else []:
            body = class_body(mine, trees[mine.__module__])
            if body is None:
                continue
            for name in sorted(class_names(body)):
                base = next((base for base in bases if library_defines(base, name)), None)
                if base is not None:
                    named.append(f"{modules[mine.__module__].relative_to(PACKAGE.parent)}:{body.lineno} "
                                 f"{mine.__name__} names {base.__module__}.{base.__name__}.{name}")
    assert not named, "name these through scout_tui/compat.py:\n" + "\n".join(sorted(set(named)))


def test_compats_docstring_lists_every_private_attribute_it_uses() -> None:
    tree = ast.parse(Path(compat.__file__).read_text(encoding="utf-8"))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and private(node.attr)}
    used |= {node.module.rsplit(".", 1)[-1] for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module and private(node.module.rsplit(".", 1)[-1])}
    used |= {name for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr"
             and isinstance(node.args[1], ast.Constant) for name in [str(node.args[1].value)]}
    listed = compat.__doc__ or ""
    assert used and sorted(name for name in used if name not in listed) == []


async def test_the_running_apps_driver_takes_what_is_written_to_the_terminal(monkeypatch) -> None:
    from textual.drivers.headless_driver import HeadlessDriver

    written: list[str] = []
    monkeypatch.setattr(HeadlessDriver, "write", lambda self, data: written.append(data))
    app: App[None] = App()
    assert compat.write_to_terminal(app, "\x1b]9;before\x07") is False  # no driver yet
    async with app.run_test():
        try:
            assert compat.write_to_terminal(app, "\x1b]9;hello\x07") is True
        except AttributeError:
            pytest.fail(changed("App._driver", "is gone"))
    assert "\x1b]9;hello\x07" in written and "\x1b]9;before\x07" not in written, changed("App._driver", "is not the running driver")
