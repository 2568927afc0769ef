"""Copying to the system clipboard, with a confirmation: one rule for the chat's keys and ``/copy``."""

from __future__ import annotations

from textual.app import App


def copy(app: App, text: str, what: str) -> None:
    """Put ``text`` on the system clipboard (OSC 52, ``App.copy_to_clipboard``) and say so,
    naming ``what`` was copied and its size."""
    if not text.strip():
        app.bell()
        app.notify(f"Nothing to copy: {what} is empty.", severity="warning", timeout=3)
        return
    app.copy_to_clipboard(text)
    lines = text.count("\n") + (not text.endswith("\n"))
    app.notify(f"Copied {what} ({lines:,} line{'s' * (lines != 1)}, {len(text):,} characters) to the clipboard.",
               timeout=3)
