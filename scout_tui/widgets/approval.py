"""The approval prompt: a modal screen asking whether one tool call may run.

It shows the exact command, or the unified diff of an edit or write coloured by the theme's
``diff-added`` / ``diff-removed`` variables; control characters in a command are written
out (``text.reveal``), so what is shown is what runs. Keys: ``y`` allow once, ``a`` allow the
shown rules for the session, ``o`` run a command once outside the sandbox (offered when it would
run in one), ``n`` deny (then type an optional reason for the model and press Enter), Esc deny
and stop the turn (with the reason typed, if any). With no sandbox available, ``a`` lets
commands run unsandboxed for the session. Keys pressed in the first ``ARM_SECONDS`` are
ignored. Dismisses with a ``approvals.Approval``.
"""

from __future__ import annotations

import json
import time
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ..core.diffs import diff_lines
from ..core.text import reveal
from ..tools.approvals import Approval, PermissionRequest

MAX_DIFF_LINES = 2_000
"""Lines of a diff the prompt shows; a longer one ends with a line counting the rest."""

ARM_SECONDS = 0.4
"""Keys pressed sooner than this after the prompt appears are ignored: a ``y`` typed ahead
for the previous prompt must not allow a call nobody has read."""

LONG_LINES = 12
"""A command or diff longer than this gets a line saying to scroll through it."""


DIFF_STYLES = {"file": "bold", "hunk": "$accent", "add": "$text on $diff-added",
               "remove": "$text on $diff-removed", "context": "", "note": "$text-muted"}


def diff_content(diff: str, max_lines: int = MAX_DIFF_LINES) -> Content:
    """A unified diff as Content: added lines on ``$diff-added``, removed lines on
    ``$diff-removed``, hunk headers in ``$accent``, file headers bold (``diffs.diff_lines``);
    control characters written out (``text.reveal``)."""
    lines = [(kind, reveal(line)) for kind, line in diff_lines(diff)]
    shown = lines[:max_lines]
    # Changed lines are padded to one width, so their background reads as a block.
    width = max((len(line) for _, line in shown), default=0)
    parts: list[str | tuple[str, str]] = []
    for kind, line in shown:
        parts += [(line.ljust(width) if kind in ("add", "remove") else line, DIFF_STYLES[kind]), "\n"]
    if len(lines) > max_lines:
        parts.append((f"… {len(lines) - max_lines:,} more lines of diff", "$text-muted italic"))
    elif parts:
        parts.pop()
    return Content.assemble(*parts)


def _subject(request: PermissionRequest) -> str:
    path = request.input.get("path")
    if request.tool == "bash":
        return {"outside": "Run this command outside the sandbox?",
                "none": "Run this command without a sandbox?"}.get(request.sandbox, "Run this command?")
    if isinstance(path, str):
        verb = {"edit": "Edit", "write": "Write", "read": "Read"}.get(request.tool, f"{request.tool}:")
        return f"{verb} {path}?"
    if request.tool.startswith("mcp__") and "__" in request.tool[5:]:
        server = request.tool[5:].split("__", 1)[0]
        return f"Run the tool {request.tool} of the MCP server {server}?"
    return f"Run the tool {request.tool}?"


class ApprovalScreen(ModalScreen[Approval]):
    """Ask about one tool call (see the module docstring for the keys)."""

    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
        & > #dialog {
            width: 110;
            max-width: 96%;
            height: auto;
            max-height: 92%;
            padding: 1 2;
            background: $surface;
            border: round $warning;
            border-title-color: $warning;
            border-title-style: bold;
        }
        & #question { text-style: bold; }
        & #reason { color: $text-muted; }
        & #long { color: $warning; }
        & #body {
            height: auto;
            max-height: 50vh;
            margin-top: 1;
            background: $panel;
            padding: 0 1;
        }
        & #command { color: $text; }
        & #deny-reason { display: none; margin-top: 1; }
        & .-denying #deny-reason { display: block; }
        & #keys { margin-top: 1; color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "allow", "Allow once", id="approval.allow"),
        Binding("a", "allow_session", "Allow for the session", id="approval.allow_session"),
        Binding("o", "allow_outside", "Run once outside the sandbox", id="approval.allow_outside"),
        Binding("n", "deny", "Deny", id="approval.deny"),
        Binding("enter", "send_denial", "Deny", id="approval.send_denial", show=False),
        Binding("escape", "stop", "Deny and stop", id="approval.stop"),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request
        self._shown_at = time.monotonic()
        self._denying = False

    @property
    def armed(self) -> bool:
        """Whether the prompt takes answer keys yet (``ARM_SECONDS`` after it appeared)."""
        return time.monotonic() - self._shown_at >= ARM_SECONDS

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()
        self.query_one("#body").focus()  # ↑/↓ and PgUp/PgDn scroll a long command or diff

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog") as dialog:
            dialog.border_title = f"Permission: {request.tool}"
            if request.agent:  # a subagent's call: say which one asks
                dialog.border_title += f" · subagent {request.agent}"
                yield Static(Content.assemble(("Subagent ", "bold"), (request.agent, "bold $accent"), " asks:"),
                             id="subagent")
            yield Static(Content(_subject(request)), id="question")
            yield Static(Content(f"Asking because {request.reason}."), id="reason")
            if request.diff:
                shown = request.diff
            elif request.tool == "bash":
                shown = reveal(str(request.input.get("command", "")))
            else:
                shown = reveal(json.dumps(request.input, indent=2, ensure_ascii=False)[:20_000])
            lines = shown.count("\n") + 1
            if lines > LONG_LINES:
                yield Static(Content(f"{lines:,} lines: scroll (↑/↓, PgUp/PgDn) to read all of it before you answer."),
                             id="long")
            with VerticalScroll(id="body"):
                if request.diff:
                    yield Static(diff_content(request.diff), id="diff")
                else:
                    yield Static(Content(shown), id="command")
            yield Input(placeholder="Why not? (optional, goes to the model; Enter sends)", id="deny-reason")
            yield Static(self._keys(), id="keys")

    def _keys(self) -> Content:
        sandbox = self.request.sandbox
        once = {"outside": " run once outside the sandbox · ", "none": " run unsandboxed once · ",
                "in": " run in the sandbox · "}.get(sandbox, " allow once · ")
        parts: list[str | tuple[str, str]] = [("y", "bold $text"), once]
        if sandbox == "none":
            parts += [("a", "bold $text"), " allow unsandboxed commands for this session · "]
        elif self.request.suggestions:
            rules = ", ".join(self.request.suggestions)
            parts += [("a", "bold $text"), " allow ", (rules, "$text"), " for this session · "]
        if sandbox == "in":
            parts += [("o", "bold $text"), " run once outside the sandbox · "]
        parts += [("n", "bold $text"), " deny · ", ("Esc", "bold $text"), " deny and stop the turn"]
        return Content.assemble(*parts)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "send_denial":
            return self._denying
        if action in ("allow", "allow_session", "allow_outside", "deny"):
            # Once denying, letters belong to the reason, wherever the focus went.
            if self._denying or not self.armed:
                return False
            if action == "allow_session":
                return bool(self.request.suggestions) or self.request.sandbox == "none"
            return action != "allow_outside" or self.request.sandbox == "in"
        return True

    def action_allow(self) -> None:
        self.dismiss(Approval("allow_outside" if self.request.sandbox == "outside" else "allow"))

    def action_allow_session(self) -> None:
        self.dismiss(Approval("allow_session"))

    def action_allow_outside(self) -> None:
        self.dismiss(Approval("allow_outside"))

    def action_send_denial(self) -> None:
        self.dismiss(Approval("deny", self.query_one("#deny-reason", Input).value.strip()))

    def action_deny(self) -> None:
        """Ask for an optional reason; Enter sends the denial with it."""
        self._denying = True
        self.query_one("#dialog").add_class("-denying")
        self.query_one("#keys", Static).update(Content.assemble(
            ("Enter", "bold $text"), " deny with this reason (or none) · ", ("Esc", "bold $text"),
            " deny and stop the turn"))
        self.query_one("#deny-reason", Input).focus()

    def action_stop(self) -> None:
        reason = self.query_one("#deny-reason", Input).value.strip()
        self.dismiss(Approval("stop", reason))

    @on(Input.Submitted, "#deny-reason")
    def _reason_given(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(Approval("deny", event.value.strip()))
