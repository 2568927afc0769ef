"""Prompts sent while a turn runs: shown as pending above the composer until they go.

A feature of ``ScoutApp`` (app.py). Enter while busy *steers*: the prompt goes to the model with
the results of the tool calls running now (``Agent.steer``), or, when the turn ends without
another call, as the next turn. Tab (Codex's key) or Alt+Enter *queues*: the prompt is sent
as its own turn once this one ends. (Many terminals send Alt+Enter as ESC CR, which Textual
reads as Enter: Tab works everywhere.) The newest pending prompt can be taken back into the composer (Up in an empty
composer) or cancelled (Esc, before Esc interrupts the turn).

Pending prompts go in the order shown: steering ones first (the "next step"), then queued ones,
each group in the order typed (``in_order``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scout_tui.widgets import Composer
from scout_tui.tui.feature import Feature

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp


@dataclass(eq=False)
class Pending:
    """A prompt sent during a turn: ``text`` as typed, ``steer`` (with the running calls'
    results) or not (after the turn), and its ``content`` once given to the agent."""

    text: str
    steer: bool
    content: list[dict] = field(default_factory=list)


class PromptQueue(Feature):
    """The pending prompts of ``ScoutApp``."""

    def __init__(self, app: ScoutApp) -> None:
        super().__init__(app)
        self.pending: list[Pending] = []
        """The prompts sent during the turn that runs, in the order typed."""

    def hold(self, text: str, *, steer: bool) -> None:
        """Keep ``text``, sent while a turn runs, as pending: steering (``steer``) or queued."""
        pending = Pending(text, steer)
        self.pending.append(pending)
        self.show_pending()
        if steer:
            self.app.run_worker(self._steer(pending), group="steer")

    async def _steer(self, pending: Pending) -> None:
        agent = self.app.session.agent
        content = await asyncio.to_thread(self.app.turns.with_mentions, pending.text)
        if pending in self.pending and pending.steer and agent is not None and self.app.busy:
            pending.content = content
            self.app.session.steer(content)

    def steered(self) -> None:
        """After a stored user message: the steering prompts the agent took are no longer pending."""
        agent = self.app.session.agent
        waiting = [id(c) for c in agent.steering] if agent is not None else []
        before = len(self.pending)
        self.pending = [p for p in self.pending if not (p.steer and p.content and id(p.content) not in waiting)]
        if len(self.pending) != before:
            self.show_pending()

    def in_order(self) -> list[Pending]:
        """The pending prompts in the order they go, as shown: steering ones, then queued ones."""
        return [p for p in self.pending if p.steer] + [p for p in self.pending if not p.steer]

    def next_pending(self) -> str | None:
        """At the end of a turn: the first pending prompt in the order shown (``in_order``), to
        send as the next turn, or None. The steering prompts no tool call took wait on as queued
        ones, before those queued already: each is sent as its own turn."""
        if self.app.session.agent is not None:
            self.app.session.agent.steering.clear()
        self.pending = self.in_order()
        for pending in self.pending:
            pending.steer, pending.content = False, []
        if not self.pending:
            return None
        text = self.pending.pop(0).text
        self.show_pending()
        return text

    def drop_newest_pending(self) -> Pending | None:
        """Remove the newest pending prompt (from the agent's steering too), or None."""
        if not self.pending:
            return None
        pending = self.pending.pop()
        agent = self.app.session.agent
        if agent is not None and pending.content:
            agent.steering[:] = [c for c in agent.steering if c is not pending.content]
        self.show_pending()
        return pending

    def take_back(self, _: Composer.TakeBackRequested) -> None:
        """Up in an empty composer with prompts pending: the newest comes back to edit."""
        if (pending := self.drop_newest_pending()) is not None:
            composer = self.app.query_one(Composer)
            composer.load_text(pending.text)
            composer.move_cursor(composer.document.end)

    def cancel_pending(self) -> bool:
        """Esc with prompts pending: cancel the newest (True), else False (Esc interrupts)."""
        if (pending := self.drop_newest_pending()) is None:
            return False
        self.app.notify(f"Cancelled: {pending.text[:60]}{'…' if len(pending.text) > 60 else ''} (Esc again interrupts "
                    "the turn)", timeout=4)
        return True

    def show_pending(self) -> None:
        """Show the pending prompts above the composer (``MainScreen.pending``)."""
        self.app.main_screen.pending = tuple((p.text, p.steer) for p in self.in_order())
