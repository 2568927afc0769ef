"""The running turn's events on their way to the screen, the store and the app's conversation.

``deliver`` is the one door: it hands an event to the bus (plugins, and the UI through an
``AgentEvent`` message), appends the message it adds to ``conversation`` and writes it to the
store, so the three never disagree. ``show`` dispatches on the event's class (``bus.py``'s
vocabulary) to the panes' methods. A mixin of ``ScoutApp`` (app.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import singledispatchmethod

from textual.message import Message

from scout_tui import collector
from scout_tui.bus import (CompactCancelled, Error, Event, MessageAssistant, MessageDelta, MessageUser, Notice,
                           PermissionAsk, PermissionDecision, PromptCompacted, Retry, SessionCompacted, ToolEnd,
                           ToolOutput, ToolStart, TurnEnd, added_message)
from scout_tui.models import cache_hit_share, prompt_tokens
from scout_tui.widgets.assistant_message import AssistantMessage


@dataclass
class AgentEvent(Message):
    """An event of the running turn, delivered to the app on its message queue."""

    event: Event


QUIET_BEFORE_COLLECT = 1.0
"""Seconds without a typed key before a finished turn's garbage is collected."""


class AgentEventsMixin:
    """Delivery and display of the agent's events for ``ScoutApp``."""

    conversation: list[dict | None]
    """The open session's messages, as the store holds them (None: an older message still being
    read); grown only by ``deliver``, from the events the store projects."""

    async def deliver(self, event: Event) -> None:
        """Show ``event``, add its message to the conversation and store it; the write runs in
        a thread so the UI never waits on disk."""
        self.bus.emit(event)
        message = added_message(event)
        if event.stored and self.session_id:
            await asyncio.to_thread(self.store.append, self.session_id, event)
            if message is not None:
                self.refresh_sessions()  # the tree updates live: counts, titles, order
        if message is not None:  # after the store took it: a failed write leaves both as they were
            self.conversation.append(message)

    def on_agent_event(self, message: AgentEvent) -> None:
        self.show(message.event)

    @singledispatchmethod
    def show(self, event: Event) -> None:
        """Show ``event`` in the panes; an event no pane shows (a plugin's own) does nothing."""

    @show.register
    def _(self, event: MessageDelta) -> None:
        self.chat.assistant_delta(event.kind, event.text)

    @show.register
    def _(self, event: MessageUser) -> None:
        collector.defer_full_collections()  # a turn runs (this is its first event): see collector.py
        self.chat.user_message(event.index, event.message)

    @show.register
    def _(self, event: MessageAssistant) -> None:
        self.chat.assistant_message(event.index, event.message, interrupted=event.interrupted)
        if event.usage:
            self._show_usage({**event.usage, "cost": event.cost})

    @show.register
    def _(self, event: ToolStart) -> None:
        self.chat.tool_call_started(event.id, event.name, event.input or {})
        self.tool_pane.start(event.id, event.name, event.input or {})

    @show.register
    def _(self, event: ToolOutput) -> None:
        self.tool_pane.output(event.id, event.text)

    @show.register
    def _(self, event: ToolEnd) -> None:
        self.chat.tool_call_ended(event.id, event.is_error, event.elapsed)
        self.tool_pane.end(event.id, event.content, event.is_error, event.elapsed, diff=event.diff,
                           output_path=event.output_path)
        if event.notice:
            self.chat.add_notice(event.notice, "warning")

    @show.register
    def _(self, event: PermissionAsk) -> None:
        self.tool_pane.set_waiting(event.id, True)
        self.status.awaiting = True

    @show.register
    def _(self, event: PermissionDecision) -> None:
        self.tool_pane.set_waiting(event.id, False)
        self.status.awaiting = False
        if event.decision == "allow_outside":
            self.tool_pane.note(event.id, "outside the sandbox")

    @show.register
    def _(self, event: PromptCompacted) -> None:
        self.status.context_used = event.context_tokens
        self.status.context_window = event.context_window or self.status.context_window

    @show.register
    def _(self, event: SessionCompacted) -> None:
        self._show_usage({**event.usage, "cost": event.cost})
        self._compacted(event.data)

    @show.register
    def _(self, event: CompactCancelled) -> None:
        self._show_usage({**event.usage, "cost": event.cost})

    @show.register
    def _(self, event: Retry) -> None:
        self.status.state = f"retrying {event.attempt}/{event.max_attempts} in {event.delay:.1f}s"
        self.chat.add_notice(f"{event.reason}: retrying ({event.attempt}/{event.max_attempts}) "
                             f"in {event.delay:.1f}s", "warning")

    @show.register
    def _(self, event: Notice) -> None:
        self.chat.add_notice(event.text, "warning")

    @show.register
    def _(self, event: Error) -> None:
        self.chat.stream_interrupted()
        self.chat.add_notice(event.message, "error")

    @show.register
    def _(self, event: TurnEnd) -> None:
        self.status.state = ""
        self.status.awaiting = False
        self.chat.stream_interrupted()
        self._collect_pending = True
        self._collect_if_drawn()

    def on_assistant_message_drawn(self, message: AssistantMessage.Drawn) -> None:
        self._collect_if_drawn()

    _collect_pending = False

    def _collect_if_drawn(self) -> None:
        """After a turn, once no answer is still being drawn (a burst is shown after it ended)
        and the person has not typed for ``QUIET_BEFORE_COLLECT`` s: collect the turn's
        garbage once and freeze what survives (``collector.py``; a full collection can take
        100-200 ms, which a keystroke would wait behind)."""
        if not self._collect_pending or self.chat.drawing:
            return
        quiet = (self.last_input or 0.0) + QUIET_BEFORE_COLLECT - time.monotonic()
        if quiet > 0:
            self.set_timer(quiet, self._collect_if_drawn)
            return
        self._collect_pending = False
        self.call_after_refresh(collector.collect_and_freeze)

    def _show_usage(self, usage: dict) -> None:
        """A request's usage (``Usage.as_dict`` and its ``cost``): tokens, cost and cache-hit
        share in the status bar. An empty usage (an interrupted answer) changes nothing."""
        if not usage or not any(usage.get(k) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                       "cache_write_tokens")):
            return
        status = self.status
        status.input_tokens += prompt_tokens(usage)
        status.output_tokens += int(usage.get("output_tokens") or 0)
        if usage.get("cost") is not None:
            status.cost = (status.cost or 0.0) + usage["cost"]
        status.cache_share = cache_hit_share(usage)
