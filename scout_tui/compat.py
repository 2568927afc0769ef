"""Every private attribute of a library that scout-tui uses, in one place.

A few things scout-tui does faster or earlier than the libraries' public API allows reach into
their internals. Each reach is a named function or class here; no other module of scout_tui
names a private library attribute (tests/test_compat.py checks both: that each attribute below
is still there and of the kind relied on, naming it and the installed version when not; and
that no other module names one). The engine can import this module: it imports nothing of
scout_tui, and Textual and mcp only inside the functions that need them.

Checked against textual 8.2.8 and mcp 1.30.0. What is used, and for what:

Textual
    ``textual.widgets._footer.FooterKey`` (a private module; ``footer_key_class``): the footer's
        key widget, made with its ``compact`` value at once (widgets/footer.py).
    ``Footer._bindings_ready`` (a reactive; ``show_footer_keys_at_once``): set, so that the
        footer's keys are in the first frame instead of after the first bindings change.
        (Measured with benchmarks/startup.py --instructions, to the first frame: the footer's
        drawn line, 1,499 M instructions; Textual's ``Footer`` with neither attribute, 1,536 M;
        Textual's key widgets in the first frame, 1,608 M.)
    ``DOMNode._bindings`` (its ``BindingsMap``; ``bindings_for_key``): a text area's own
        bindings for a key, run in the widget's key handler, in the order keys were typed.
    ``TextArea._on_key`` (overridden by ``KeysBeforeTextArea``): Enter, newlines, completion
        keys and the box's bindings handled before the text area inserts the key.
    ``Screen._on_timer_update`` (``draw_now``): the screen's update tick, drawn on idle while a
        typed key waits for its frame (tui/input_first.py).
    ``Driver._app`` (``driver_app``), ``LinuxDriver._file`` (``driver_output``,
        ``set_driver_output``: the file its writer thread writes to, read when the application
        mode starts) and ``LinuxDriver.attrs_before`` (no underscore, but undocumented;
        ``restore_mode_at_exit``): the driver subclass that notes typed keys on the input
        thread and restores the person's terminal mode (tui/input_first.py, tui/line_mode.py).
    ``App._driver`` (``write_to_terminal``): the running driver, whose public ``write`` queues an
        escape sequence after the frames (a desktop notification, tui/notify.py).
    ``Widget._anchor_released`` (``anchor_released``): whether the person scrolled away from
        an anchored chat (``Widget.is_anchored`` is the public half).
    ``Widget._layout_updates`` and ``Widget._clear_arrangement_cache`` (``count_layout_change``,
        ``clear_layout_cache``): a chunk's new height counted in the layout pass under way.
    ``App._refresh_truecolor_filter`` (``refresh_truecolor_filter``) and ``App._watch_theme``
        (``reapply_theme``): a theme applied before the CSS is parsed, and a theme file's edit
        applied again under the same name (tui/themes.py).

mcp
    ``BaseSession._request_id`` (``next_request_id``): the id ``send_request`` gives the next
        request, for the ``notifications/cancelled`` that names it (mcp/client.py).
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual import events
    from textual.app import App
    from textual.binding import Binding
    from textual.dom import DOMNode
    from textual.driver import Driver
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.widgets import Footer, TextArea
    from textual.widgets._footer import FooterKey

    _TextAreaBase = TextArea
else:
    _TextAreaBase = object


# -- Textual: the footer ----------------------------------------------------------------------

def footer_key_class() -> type[FooterKey]:
    """Textual's ``FooterKey``: the widget ``Footer.compose`` makes for each key (its reactive
    ``compact`` is public). Not exported by ``textual.widgets``."""
    from textual.widgets._footer import FooterKey as key_class

    return key_class


def show_footer_keys_at_once(footer: Footer) -> None:
    """Have ``footer`` compose its keys in the first frame (``Footer._bindings_ready``: Textual
    waits for the first bindings change), without running the reactive's watchers."""
    from textual.widgets import Footer

    footer.set_reactive(Footer._bindings_ready, True)


# -- Textual: keys ----------------------------------------------------------------------------

def bindings_for_key(node: DOMNode, key: str) -> list[Binding]:
    """``node``'s own bindings for ``key`` (a Textual key name, ``"ctrl+w"``), keymaps applied,
    in the order declared; [] for none (``DOMNode._bindings.key_to_bindings``)."""
    return list(node._bindings.key_to_bindings.get(key, ()))


class KeysBeforeTextArea(_TextAreaBase):
    """A ``TextArea`` base (mixed in before it) whose key handler asks ``key_first`` before the
    text area inserts anything: ``key_first`` returns True when it handled the key (then the key
    is stopped and the text area never sees it). Runs in the widget's own queue, in the order
    the keys were typed (Textual's ``TextArea._on_key``, overridden)."""

    async def key_first(self, event: events.Key) -> bool:
        """Handle ``event`` before the text area; True if handled. Subclasses extend it."""
        return False

    async def _on_key(self, event: events.Key) -> None:
        if await self.key_first(event):
            # Textual runs the handler of each class in the MRO until the default is prevented.
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)


# -- Textual: the screen and the driver -------------------------------------------------------


def draw_now(screen: Screen) -> None:
    """What the screen's update timer does at its tick (``Screen._on_timer_update``): layout,
    the widgets that changed, one write; nothing when nothing changed or updates are batched."""
    screen._on_timer_update()


def driver_app(driver: Driver) -> Any:
    """The app ``driver`` was made for (``Driver._app``; typed Any: our app's own methods are
    called on it)."""
    return driver._app


def driver_output(driver: Driver) -> IO[str] | None:
    """The file ``driver``'s writer thread will write to (``LinuxDriver._file``, read when the
    application mode starts); None for a driver without one (Windows, headless, web)."""
    return getattr(driver, "_file", None)


def set_driver_output(driver: Driver, file: object) -> None:
    """Have ``driver`'`s writer thread write to ``file`` (a file-like object: ``write``, ``flush``),
    before its application mode starts."""
    driver._file = file  # type: ignore[attr-defined]  # LinuxDriver's; checked by driver_output first


def write_to_terminal(app: App[Any], data: str) -> bool:
    """Write ``data`` (an escape sequence) to ``app``'s terminal through its driver
    (``App._driver``, then the public ``Driver.write``: queued after the frames already written,
    as ``App.bell`` and ``App.copy_to_clipboard`` do). False, writing nothing, before the driver
    starts or after it stopped. A headless driver (tests, ``run_test``) takes it and writes nothing."""
    driver = app._driver
    if driver is None:
        return False
    driver.write(data)
    return True


def restore_mode_at_exit(driver: Driver, mode: list[Any]) -> bool:
    """Have ``driver`` restore the terminal to ``mode`` (``termios.tcgetattr``'s list) at exit and
    in ``App.suspend`` instead of the mode it found (``LinuxDriver.attrs_before``), once its
    application mode started. Returns False, changing nothing, when it found none (no terminal)
    or keeps none (not Textual's Linux driver)."""
    if getattr(driver, "attrs_before", None) is None:
        return False
    driver.attrs_before = mode  # type: ignore[attr-defined]  # LinuxDriver's, checked above
    return True


# -- Textual: layout --------------------------------------------------------------------------

def anchor_released(widget: Widget) -> bool:
    """Whether the person scrolled an anchored ``widget`` away from its end
    (``Widget._anchor_released``; ``Widget.is_anchored`` says whether it is anchored)."""
    return bool(widget._anchor_released)


def count_layout_change(widget: Widget) -> None:
    """Make ``widget``'s cached box model stale now (``Widget._layout_updates``), not at the next
    idle as ``refresh(layout=True)`` does."""
    widget._layout_updates += 1


def clear_layout_cache(node: Widget) -> None:
    """Make ``node``'s cached arrangement of its children and its box model stale now
    (``Widget._clear_arrangement_cache``, ``Widget._layout_updates``)."""
    node._clear_arrangement_cache()
    node._layout_updates += 1


# -- Textual: themes --------------------------------------------------------------------------

def refresh_truecolor_filter(app: App[Any], ansi_theme: Any) -> None:
    """Map the 16 ANSI colours through ``ansi_theme`` (a Rich ``TerminalTheme``, such as
    ``App.ansi_theme``), as ``App.theme``'s watcher does (``App._refresh_truecolor_filter``)."""
    app._refresh_truecolor_filter(ansi_theme)


def reapply_theme(app: App[Any], name: str) -> None:
    """Apply theme ``name`` again, as setting ``App.theme`` to a new name does
    (``App._watch_theme``): after its definition changed under the same name."""
    app._watch_theme(name)


# -- mcp --------------------------------------------------------------------------------------

def next_request_id(session: Any) -> int:
    """The JSON-RPC id the next request of ``session`` (an ``mcp.ClientSession``) will carry:
    ``BaseSession.send_request`` takes it before its first await (``BaseSession._request_id``)."""
    return int(session._request_id)
