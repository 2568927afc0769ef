"""The person's side of permissions in the TUI: the permission mode (Shift+Tab, the palette,
``/plan``), shown in the status bar, the approval prompt a tool call waits on, and the plan
dialog an ``exit_plan`` call waits on.

A feature of ``ScoutApp`` (app.py). The rules themselves are the engine's (``tools/permissions.py``)
and the mode is the session's (``Session.set_permission_mode``); rules allowed at the prompt stay
for the run (``ScoutApp.permissions``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

from scout_tui.tui.feature import Feature

if TYPE_CHECKING:
    from textual.screen import ModalScreen

    from scout_tui.tools.approvals import Approval, PermissionRequest, PlanDecision, PlanReview

T = TypeVar("T")

MODE_HELP = {"ask": "edits and bash ask first", "auto-edit": "edits in this folder run; bash asks",
             "yolo": "nothing asks (deny rules still hold)",
             "plan": "read-only: the model explores and proposes a plan for you to approve"}
"""What each permission mode lets run without asking, as said when it is chosen."""


class PermissionModes(Feature):
    """The permission mode, the approval prompt and the plan dialog for ``ScoutApp``."""

    def cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode (ask → auto-edit → plan → yolo → ask), for this run."""
        from scout_tui.tools.permissions import following

        self.set_mode(following(self.app.permissions.mode))

    def set_mode(self, mode: str, *, announce: bool = True) -> None:
        """Use permission ``mode`` from the next tool call on (the running turn included), through
        ``Session.set_permission_mode`` (entering ``plan`` remembers the mode to go back to), and
        show it in the status bar; ``announce`` says what it lets run in a toast."""
        self.app.session.set_permission_mode(mode)
        self.app.main_screen.permission_mode = mode
        if announce:
            self.app.notify(f"Permission mode {mode}: {MODE_HELP[mode]}.", timeout=3)

    async def approve(self, request: PermissionRequest) -> Approval:
        """Ask the person about one tool call with the approval prompt; wait for the answer (a
        dismissed prompt stops the turn: ``Approval("stop")``)."""
        from scout_tui.tools.approvals import Approval
        from scout_tui.widgets.approval import ApprovalScreen

        return await self._ask(ApprovalScreen(request), Approval("stop"))

    async def review_plan(self, review: PlanReview) -> PlanDecision:
        """Show the plan of an ``exit_plan`` call in the plan dialog (``widgets/plan_dialog.py``)
        and wait for the person's ``PlanDecision`` (here, fresh or keep; a dismissed dialog keeps
        planning). Running the plan, here or in a fresh context, shows the mode going back to
        ``review.mode`` in the status bar at once (``set_mode``: the engine sets the same)."""
        from scout_tui.tools.approvals import PlanDecision
        from scout_tui.widgets.plan_dialog import PlanScreen

        self.app.status.awaiting = True  # "awaiting approval" instead of the spinner
        try:
            decision = await self._ask(PlanScreen(review), PlanDecision("keep", review.plan))
        finally:
            self.app.status.awaiting = False
        if decision.action in ("here", "fresh"):
            self.set_mode(review.mode, announce=False)
        return decision

    async def _ask(self, screen: ModalScreen[T], dismissed: T) -> T:
        """Push ``screen`` and wait for what it is dismissed with (``dismissed`` when that is
        None). A turn cancelled while it is up (Esc on the main screen, Ctrl+C) takes it down."""
        answered: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def done(answer: T | None) -> None:
            if not answered.done():
                answered.set_result(dismissed if answer is None else answer)

        await self.app.push_screen(screen, done)
        self.app.notifier.needs_you()
        try:
            return await answered
        except asyncio.CancelledError:  # the turn was cancelled while the screen was up
            if screen.is_current:
                screen.dismiss(None)
            raise
