"""The session's events on their way to the screen.

The session (``session.Session``) records each event (plugins' bus, store, conversation) before
the app sees it: a turn's events come from ``Session.turn``, and ``deliver`` records one the app
makes itself (a model switch, a compaction, a rewind). ``shown`` puts an event in the panes
(``show.show``) and refreshes the session list when it added a message. Events plugins emit
on the bus come as ``AgentEvent`` messages. A feature of ``ScoutApp`` (app.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.css.query import NoMatches
from textual.message import Message

from scout_tui.tui import collector
from scout_tui.config.models import cache_hit_share, prompt_tokens
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.tui.feature import Feature

if TYPE_CHECKING:
    from scout_tui.core.bus import Event


@dataclass
class AgentEvent(Message):
    """An event a plugin emitted on the bus (not one the session is recording), delivered to the
    app on its message queue."""

    event: Event


QUIET_BEFORE_COLLECT = 1.0
"""Seconds without a typed key before a finished turn's garbage is collected."""


class Delivery(Feature):
    """Delivery and display of the agent's events for ``ScoutApp``."""

    async def deliver(self, event: Event) -> None:
        """Record ``event`` in the session (``Session.record``: the store write runs in a thread,
        so the UI never waits on disk), then show it (``shown``)."""
        await self.app.session.record(event)
        self.shown(event)

    def shown(self, event: Event) -> None:
        """Put a recorded ``event`` in the panes; one that added a message to the stored session,
        or to a subagent's, updates the tree live (counts, titles, order, a subagent's node)."""
        from scout_tui.core.bus import SubagentEvent, added_message
        from scout_tui.tui.show import show  # with the bus's vocabulary: after the first frame

        stored = event.innermost if isinstance(event, SubagentEvent) else event
        if stored.stored and self.app.session.id and added_message(stored) is not None:
            self.app.sessions.refresh_sessions()
        show(event, self.app)

    def plugin_event(self, message: AgentEvent) -> None:
        from scout_tui.tui.show import show

        show(message.event, self.app)

    def answer_drawn(self, message: AssistantMessage.Drawn) -> None:
        self._collect_if_drawn()

    _collect_pending = False

    def collect_after_turn(self) -> None:
        """A turn ended: collect its garbage once its answer is drawn (``_collect_if_drawn``)."""
        self._collect_pending = True
        self._collect_if_drawn()

    def _collect_if_drawn(self) -> None:
        """After a turn, once no answer is still being drawn (a burst is shown after it ended)
        and the person has not typed for ``QUIET_BEFORE_COLLECT`` s: collect the turn's
        garbage once and freeze what survives (``collector.py``; a full collection can take
        100-200 ms, which a keystroke would wait behind)."""
        if not self._collect_pending:
            return
        try:
            drawing = self.app.chat.drawing
        except NoMatches:  # a timer that fires while the app closes: its screen's widgets are gone
            return
        if drawing:
            return
        quiet = (self.app.last_input or 0.0) + QUIET_BEFORE_COLLECT - time.monotonic()
        if quiet > 0:
            self.app.set_timer(quiet, self._collect_if_drawn)
            return
        self._collect_pending = False
        self.app.call_after_refresh(collector.collect_and_freeze)

    def show_usage(self, usage: dict) -> None:
        """A request's usage (``Usage.as_dict`` and its ``cost``): tokens, cost and cache-hit
        share in the status bar. An empty usage (an interrupted answer) changes nothing."""
        if not usage or not any(usage.get(k) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                       "cache_write_tokens")):
            return
        status = self.app.status
        status.input_tokens += prompt_tokens(usage)
        status.output_tokens += int(usage.get("output_tokens") or 0)
        if usage.get("cost") is not None:
            status.cost = (status.cost or 0.0) + usage["cost"]
        status.cache_share = cache_hit_share(usage)
