"""``/export [html|md|json] [PATH]`` in the TUI: the session written to a file in a thread
(``session/exporting.py``), in the theme on screen, and a notice saying where."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp


def export_command(app: ScoutApp, args: str) -> None:
    """``/export [html|md|json] [PATH]`` (``exporting.parse_export_args``; html by default):
    write this session to PATH (relative to its directory; default ``./scout-<id>.<format>``).
    html holds the session's whole branch tree in the current theme's colours."""
    from scout_tui.session.exporting import parse_export_args

    session_id = app.session.id
    if session_id is None:
        app.chat.add_notice("Nothing to export yet: this session has no messages.")
        return
    form, path = parse_export_args(args)
    colours = None
    if form == "html":
        from scout_tui.theming.export_colours import page_colours

        colours = page_colours(app.current_theme)
    app.run_worker(lambda: _write(app, session_id, form, path, colours), name="export", group="export", thread=True)


def _write(app: ScoutApp, session_id: str, form: str, path: Path | None, colours: Mapping[str, str] | None) -> None:
    """In a thread: the export written, then a notice (an error one naming the file when it fails)."""
    from scout_tui.session.exporting import write_export

    try:
        written = write_export(app.store, session_id, form, path, colours, app.secrets)
    except ScoutError as e:
        app.call_from_thread(app.chat.add_notice, f"Not exported: {e}", "error")
        return
    what = "this session's branch tree as a page to open in a browser" if form == "html" else f"this session as {form}"
    app.call_from_thread(app.chat.add_notice, f"Exported {what}: `{written}`")
