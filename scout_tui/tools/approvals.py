"""A tool call waiting for the person's answer, and the answer: what the approval prompt (or
headless ``-p``, which cannot ask) is given and gives back, and how a denial reads to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Literal

from scout_tui.tools.permissions import EDIT_TOOLS


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """A tool call waiting for the person's answer.

    ``id``, ``tool``, ``input``: the call. ``reason``: why it asks. ``suggestions``: the rules
    "allow for the session" adds (empty: not offered). ``diff``: the unified diff of an edit or
    write (None for other tools). ``mode``: the permission mode when it asked. ``outside``:
    the call's paths outside the workspace. ``sandbox``: as ``Check.sandbox``. ``agent``: the
    subagent whose call it is, as the person reads it ("" for the main agent): its task's
    description and agent name, e.g. ``"find the parser (explore)"``.
    """

    id: str
    tool: str
    input: dict
    reason: str
    suggestions: tuple[str, ...] = ()
    diff: str | None = None
    mode: str = "ask"
    outside: tuple[str, ...] = ()
    sandbox: str = ""
    agent: str = ""

    def how_to_allow(self) -> str:
        """How the person could let such a call run without being asked."""
        if self.sandbox == "outside":
            return "a command runs outside the sandbox only when the user says so at the prompt"
        if self.sandbox == "none":
            return ("no sandbox is available here (`scout-tui doctor` says why): install bubblewrap, or set "
                    "[sandbox] mode = \"off\" in ~/.config/scout/scout.toml to run commands unsandboxed")
        if self.outside:
            return "paths outside the working directory always ask; only --permission-mode yolo skips that"
        if self.tool in EDIT_TOOLS and self.mode == "ask" and self.suggestions:
            return "--permission-mode auto-edit lets edits inside the working directory run"
        if self.suggestions:
            return (f"an allow rule in scout.toml would, e.g. [permissions] allow = [\"{self.suggestions[0]}\"]; "
                    "or --permission-mode yolo")
        return "only --permission-mode yolo runs it without asking"


@dataclass(frozen=True, slots=True)
class Approval:
    """The answer to a ``PermissionRequest``.

    ``action``: ``allow`` (this call), ``allow_session`` (this call, and the request's
    suggested rules from now on; for a ``sandbox == "none"`` request, unsandboxed commands for
    the session), ``allow_outside`` (this call, run once outside the sandbox), ``deny`` (the
    model reads why and goes on), ``stop`` (deny, and end the turn). ``reason``: what the person
    said, for the model. ``by``: ``user``, or who answered instead (``headless``, ``policy``).
    """

    action: Literal["allow", "allow_session", "allow_outside", "deny", "stop"]
    reason: str = ""
    by: str = "user"

    def model_text(self) -> str:
        """What the model reads instead of the tool's result, for a denial."""
        if self.by != "user":
            return f"Not run: {_sentence(self.reason)}"
        said = f" They said: {_sentence(self.reason)}" if self.reason else ""
        if self.action == "stop":
            return f"The user denied this tool call and stopped the turn.{said} Wait for their next message."
        return f"The user denied this tool call.{said} Do not run it again as it is."


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


Approver = Callable[[PermissionRequest], Awaitable[Approval]]
"""Asks the person about a call (the TUI's approval prompt; headless answers by itself)."""


@dataclass(frozen=True, slots=True)
class PlanReview:
    """A plan waiting for the person's answer: the ``exit_plan`` call ``id``, its ``plan``
    (markdown), the person's ``request`` it answers (the turn's prompt, as text), and ``mode``,
    the permission mode "run it here" goes back to."""

    id: str
    plan: str
    request: str
    mode: str = "ask"


@dataclass(frozen=True, slots=True)
class PlanDecision:
    """The answer to a ``PlanReview``.

    ``action``: ``here`` (leave plan mode for ``PlanReview.mode`` and carry the plan out in this
    conversation), ``fresh`` (carry it out in a new branch whose first message is the plan and
    the request; the exploration stays as its own branch), ``keep`` (stay in plan mode; the model
    reads ``note``), ``stop`` (nobody can approve it: ``-p`` prints the plan and the turn ends).
    ``plan``: the plan as approved, perhaps edited by the person ("": as proposed).
    """

    action: Literal["here", "fresh", "keep", "stop"]
    plan: str = ""
    note: str = ""


PlanReviewer = Callable[[PlanReview], Awaitable[PlanDecision]]
"""Shows the person a plan and waits for their answer (the TUI's plan dialog, ACP's permission
request; ``-p`` answers ``stop`` by itself)."""
