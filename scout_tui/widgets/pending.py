"""The prompts sent during a turn that have not gone yet, above the composer."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from ..core.text import one_line


class PendingPrompts(Static):
    """One line per pending prompt, in the order they go: steering ones (with the running tool
    calls' results, or next) first, then queued ones (after the turn); hidden when there are none."""

    DEFAULT_CSS = """
    PendingPrompts {
        height: auto;
        max-height: 6;
        padding: 0 2;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-empty { display: none; }
    }
    """

    prompts: reactive[tuple[tuple[str, bool], ...]] = reactive((), always_update=True)
    """The pending prompts as ``(text, steer)`` pairs, in the order they go."""

    def show(self, prompts: list[tuple[str, bool]]) -> None:
        """Show ``prompts`` as ``(text, steer)`` pairs, with the keys that act on the newest."""
        self.prompts = tuple(prompts)

    def watch_prompts(self, prompts: tuple[tuple[str, bool], ...]) -> None:
        self.set_class(not prompts, "-empty")
        width = max(20, self.size.width - 30 if self.size.width else 60)
        lines = [Content.assemble(("⏵ next step: " if steer else "⏸ after the turn: ", "bold"),
                                  one_line(text, width)) for text, steer in prompts]
        if prompts:
            lines.append(Content("  Up: the newest back · Esc: cancel it · Enter steers · Tab queues",
                                 ).stylize("dim"))
        self.update(Content("\n").join(lines))
