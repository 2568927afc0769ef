"""The key bar at the bottom: Textual's ``Footer``, with its keys made in the look they keep.

A ``FooterKey`` starts compact and is bound to the footer's ``compact`` (False here) once
mounted: each key's class then changes and its styles are worked out again (2 more of the 4
style passes it takes before the first frame; ~4 ms of start-up for 7 keys). Made with the
footer's value from the start, it takes the 2 passes every widget takes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeysFooter(Footer):
    """``Footer``, same keys, same look; the keys bound to its ``compact`` start with its value."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            # The palette's key is not bound to ``compact``: it stays compact, as in Footer.
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget
