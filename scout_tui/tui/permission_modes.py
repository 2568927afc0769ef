"""The person's side of permissions in the TUI: the permission mode (Shift+Tab, the palette),
shown in the status bar, and the approval prompt a tool call waits on.

A feature of ``ScoutApp`` (app.py). The rules themselves are the engine's (``tools/permissions.py``);
rules allowed at the prompt stay for the run (``ScoutApp.permissions``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from scout_tui.tui.feature import Feature

if TYPE_CHECKING:
    from scout_tui.tools.approvals import Approval, PermissionRequest

MODE_HELP = {"ask": "edits and bash ask first", "auto-edit": "edits in this folder run; bash asks",
             "yolo": "nothing asks (deny rules still hold)",
             "plan": "read-only: the model explores and proposes a plan for you to approve"}
"""What each permission mode lets run without asking, as said when it is chosen."""


class PermissionModes(Feature):
    """The permission mode and the approval prompt for ``ScoutApp``."""

    def cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode (ask → auto-edit → yolo → ask), for this run."""
        self.set_mode(self.app.permissions.next_mode())

    def set_mode(self, mode: str) -> None:
        """Use permission ``mode`` from the next tool call on (the running turn included)."""
        self.app.permissions.mode = mode
        self.app.main_screen.permission_mode = mode
        self.app.notify(f"Permission mode {mode}: {MODE_HELP[mode]}.", timeout=3)

    async def approve(self, request: PermissionRequest) -> Approval:
        """Ask the person about one tool call with the approval prompt; wait for the answer (a
        dismissed prompt stops the turn: ``Approval("stop")``)."""
        from scout_tui.tools.approvals import Approval
        from scout_tui.widgets.approval import ApprovalScreen

        answered: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        screen = ApprovalScreen(request)

        def done(answer: Approval | None) -> None:
            if not answered.done():
                answered.set_result(answer or Approval("stop"))

        await self.app.push_screen(screen, done)
        try:
            return await answered
        except asyncio.CancelledError:  # the turn was cancelled while the prompt was up
            if screen.is_current:
                screen.dismiss(None)
            raise
