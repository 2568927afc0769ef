"""Exporting a session for every front end: ``scout-tui export``, the TUI's ``/export`` and
ACP's: the text in a format (HTML, Markdown, JSON), and the file it is written to.

Reads the store: call these off the UI loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.core.errors import ScoutError
from scout_tui.core.redaction import redact

if TYPE_CHECKING:
    from scout_tui.store.event_log import SessionInfo, Store

FORMATS = ("html", "md", "json")
"""What ``export_text`` writes; the first is ``/export``'s default."""


def export_text(store: Store, session_id: str, form: str, colours: Mapping[str, str] | None = None,
                secrets: tuple[str, ...] = ()) -> str:
    """Session ``session_id`` (an id or a unique prefix) as text: ``html``, the page of its
    whole tree (``export_html``, in ``colours``); ``md`` or ``json``, the session with its
    ancestry (``store.export``). Every one of ``secrets`` is replaced by ``[redacted]``.

    Raises:
        ScoutError: no session matches, or ``form`` is not one of ``FORMATS``.
    """
    if form == "html":
        from scout_tui.session.export_html import read_tree, to_html

        return to_html(read_tree(store, session_id), colours, secrets)
    if form not in FORMATS:
        raise ScoutError(f"unknown export format {form!r}: use one of {', '.join(FORMATS)}")
    from scout_tui.store.export import to_json, to_markdown

    info = store.find(session_id)
    text = (to_json if form == "json" else to_markdown)(store.ancestry(info.id), store.messages(info.id))
    return redact(text, secrets)


def default_path(info: SessionInfo, form: str) -> Path:
    """Where ``/export`` writes when given no path: ``scout-<first 8 of the id>.<form>`` in the
    session's directory."""
    return Path(info.cwd or ".") / f"scout-{info.id[:8]}.{form}"


def write_export(store: Store, session_id: str, form: str, path: Path | None = None,
                 colours: Mapping[str, str] | None = None, secrets: tuple[str, ...] = ()) -> Path:
    """``export_text`` written to ``path`` (relative to the session's directory; None:
    ``default_path``), replacing a file there; returns the absolute path written.

    Raises:
        ScoutError: as ``export_text``, or the file cannot be written (naming it).
    """
    info = store.find(session_id)
    text = export_text(store, info.id, form, colours, secrets)
    target = default_path(info, form) if path is None else Path(info.cwd or ".") / path.expanduser()
    try:
        target.write_text(text, encoding="utf-8", errors="replace")
    except OSError as e:
        raise ScoutError(f"{target}: cannot write the export: {e.strerror or e}") from None
    return target.resolve()


def parse_export_args(args: str) -> tuple[str, Path | None]:
    """``/export [html|md|json] [PATH]``'s argument text as ``(form, path or None)``. Without a
    form word the path's suffix (``.md``, ``.json``, ``.html``) says it, else html."""
    words = args.strip().split(maxsplit=1)
    if words and words[0].lower() in FORMATS:
        return words[0].lower(), Path(words[1]) if len(words) > 1 else None
    path = Path(args.strip()) if args.strip() else None
    suffix = path.suffix.lower().lstrip(".") if path is not None else ""
    return (suffix if suffix in FORMATS else FORMATS[0]), path
