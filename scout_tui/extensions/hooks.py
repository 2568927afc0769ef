"""Running hooks (``hook_config``) as Claude Code does (https://docs.anthropic.com/en/docs/claude-code/hooks):
each matching hook's command runs with ``/bin/sh -c`` in the working directory, with the person's
rights (as plugins), the event as one JSON object on stdin, for at most its ``timeout``; hooks of one
event run at once. What it answers:

- exit 0: go on; stdout of ``UserPromptSubmit`` and ``SessionStart`` is added to the context; a
  JSON object on stdout is read (``continue``, ``stopReason``, ``systemMessage``, ``decision``,
  ``reason``, ``hookSpecificOutput.permissionDecision`` / ``permissionDecisionReason`` /
  ``additionalContext``);
- exit 2: block; stderr is the reason (the model reads it, or for a prompt, the person);
- another code, a crash, a timeout: a warning naming the hook's command and file, and go on.

A hook never stops the session: whatever it does ends in a ``HookOutcome``. No Textual.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from scout_tui.tools.permissions import CLAUDE_TOOLS
from scout_tui.extensions.hook_config import HookConfig, HookSettings

BLOCKING = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop")
"""The events whose exit code 2 (or ``"decision": "block"``) does something: the others' is a warning."""

CONTEXT_FROM_STDOUT = ("UserPromptSubmit", "SessionStart")
"""The events whose plain stdout (exit 0) is added to the model's context."""

CLAUDE_TOOL_NAMES = {ours: theirs for theirs, ours in reversed(CLAUDE_TOOLS.items())}
"""scout-tui's tool names as Claude Code names its own (the first of ``permissions.CLAUDE_TOOLS`` for each):
what a ``.claude`` hook is told and matched by."""

CLAUDE_MODES = {"ask": "default", "auto-edit": "acceptEdits", "plan": "plan", "yolo": "bypassPermissions"}

MAX_TEXT = 10_000
"""Characters of a hook's output passed on (to the model or the screen)."""

PERMISSION_ORDER = {"deny": 3, "ask": 2, "allow": 1}


@dataclass
class HookOutcome:
    """What the hooks of one event said, together.

    Attributes:
        blocked: a hook exited 2 or answered ``"decision": "block"`` (or denied a tool call).
        reason: why, for the model (a tool call, a stop) or the person (a prompt): the hooks'
            stderr or ``reason``, one per line.
        context: texts for the model's context (stdout of ``UserPromptSubmit``/``SessionStart``,
            ``additionalContext``).
        warnings: for the person: a hook that failed, timed out or exited with another code,
            and ``systemMessage``s; each names the hook's command and where it is configured.
        permission: ``PreToolUse``'s ``permissionDecision``, the strictest of the hooks' ("deny",
            "ask", "allow"), or None.
        stop: ``"continue": false`` was answered: the turn stops, for this reason ("" without one);
            None otherwise.
    """

    blocked: bool = False
    reason: str = ""
    context: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    permission: str | None = None
    stop: str | None = None


class Hooks:
    """The hooks of one session, ready to fire.

    Args:
        settings: the hooks configured (``hook_config.hook_settings``).
        cwd: where they run (``CLAUDE_PROJECT_DIR`` and ``SCOUT_PROJECT_DIR`` name it).
        env: their environment (the tools' own: no provider key).
        redact: applied to all a hook says before it is passed on.
        about: the session's id (None before it is stored) and permission mode now, for the
            common fields every hook reads.
    """

    def __init__(self, settings: HookSettings, cwd: Path, env: dict[str, str] | None = None,
                 redact: Callable[[str], str] = lambda text: text,
                 about: Callable[[], tuple[str | None, str]] = lambda: (None, "ask")) -> None:
        self.settings = settings
        self.cwd = cwd
        self.env = {**(os.environ if env is None else env), "CLAUDE_PROJECT_DIR": str(cwd),
                    "SCOUT_PROJECT_DIR": str(cwd)}
        self.redact = redact
        self.about = about
        self.late_warnings: list[str] = []
        """Warnings of hooks fired without waiting (``notify``), for the session to say after its turn."""
        self._background: set[asyncio.Task] = set()

    def has(self, event: str) -> bool:
        """Whether any trusted hook of ``event`` is configured (nothing to prepare otherwise)."""
        return bool(self.settings.runnable(event))

    async def fire(self, event: str, data: dict[str, Any], *, match: str = "") -> HookOutcome:
        """Run the hooks of ``event`` whose matcher matches ``match`` (a tool name, a source…), all
        at once, each told ``data`` with the common fields (``session_id``, ``cwd``,
        ``hook_event_name``, ``permission_mode``), and combine what they said. Never raises for
        what a hook does; cancelled, it stops them."""
        outcome = HookOutcome()
        hooks = [h for h in self.settings.runnable(event) if h.matches(match, CLAUDE_TOOL_NAMES.get(match, ""))]
        if not hooks:
            return outcome
        session_id, mode = self.about()
        runs = await asyncio.gather(*(self._run(hook, self._payload(hook, event, data, session_id, mode))
                                      for hook in hooks))
        for hook, (code, stdout, stderr, problem) in zip(hooks, runs):
            _read(hook, code, stdout, stderr, problem, outcome, self.redact)
        return outcome

    def notify(self, message: str, kind: str) -> None:
        """Fire the ``Notification`` hooks (``message``; ``notification_type`` ``kind``, e.g.
        "permission_prompt", "idle_prompt") without waiting for them; their warnings go to
        ``late_warnings``. Needs a running event loop."""
        if not self.has("Notification"):
            return

        async def run() -> None:
            outcome = await self.fire("Notification", {"message": message, "notification_type": kind}, match=kind)
            self.late_warnings += outcome.warnings

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def take_warnings(self) -> list[str]:
        """``late_warnings``, taken."""
        warnings, self.late_warnings = self.late_warnings, []
        return warnings

    def _payload(self, hook: HookConfig, event: str, data: dict[str, Any], session_id: str | None,
                 mode: str) -> bytes:
        """The JSON a hook reads on stdin; a ``.claude`` hook's as Claude Code writes it (its tool
        names and modes, ``file_path`` absolute)."""
        payload = {"session_id": session_id or "", "cwd": str(self.cwd), "hook_event_name": event,
                   "permission_mode": mode, **data}
        if hook.dialect == "claude":
            payload["permission_mode"] = CLAUDE_MODES.get(mode, mode)
            if "tool_name" in payload:
                payload["tool_name"] = CLAUDE_TOOL_NAMES.get(payload["tool_name"], payload["tool_name"])
            tool_input = payload.get("tool_input")
            if isinstance(tool_input, dict) and isinstance(tool_input.get("path"), str) and "file_path" not in tool_input:
                payload["tool_input"] = {**tool_input, "file_path": str(self.cwd / tool_input["path"])}
                if isinstance(payload.get("tool_response"), dict):
                    payload["tool_response"] = {**payload["tool_response"], "filePath": payload["tool_input"]["file_path"]}
            if isinstance(payload.get("tool_response"), dict) and payload["tool_name"] == "Bash":
                payload["tool_response"] = {**payload["tool_response"], "stdout": payload["tool_response"]["content"]}
        return json.dumps(payload).encode()

    async def _run(self, hook: HookConfig, payload: bytes) -> tuple[int | None, str, str, str]:
        """``(exit code, stdout, stderr, problem)`` of one hook; code None with ``problem`` when it
        could not start or ran past its timeout (then its process group is killed)."""
        from scout_tui.tools.bash import kill_group

        try:
            proc = await asyncio.create_subprocess_shell(
                hook.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=self.env, start_new_session=True)
        except OSError as exc:
            return None, "", "", f"could not start: {exc.strerror or exc}"
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(payload), hook.timeout)
        except asyncio.TimeoutError:
            await kill_group(proc)
            return None, "", "", f"ran past its timeout of {hook.timeout:g} s and was stopped"
        except BaseException:
            await asyncio.shield(kill_group(proc))
            raise
        return (proc.returncode, stdout.decode("utf-8", "replace")[:MAX_TEXT],
                stderr.decode("utf-8", "replace")[:MAX_TEXT], "")


def _read(hook: HookConfig, code: int | None, stdout: str, stderr: str, problem: str, outcome: HookOutcome,
          redact: Callable[[str], str]) -> None:
    """Add what one hook said to ``outcome`` (the rules of the module docstring)."""
    name = f"{hook.event} hook `{hook.command}` ({hook.origin})"
    stdout, stderr = redact(stdout), redact(stderr).strip()
    if code is None:
        outcome.warnings.append(f"{name} {problem}; going on without it")
        return
    if code == 2:
        if hook.event in BLOCKING:
            outcome.blocked = True
            _add_reason(outcome, stderr or f"blocked by {name}")
        else:
            outcome.warnings.append(f"{name}: {stderr or 'exit code 2'}")
        return
    if code != 0:
        outcome.warnings.append(f"{name} exited with code {code}" + (f": {stderr}" if stderr else "") + "; going on")
        return
    answer = _json_object(stdout)
    if answer is None:
        if hook.event in CONTEXT_FROM_STDOUT and stdout.strip():
            outcome.context.append(stdout.strip())
        return
    found = answer.get("hookSpecificOutput")
    specific: dict[str, Any] = found if isinstance(found, dict) else {}
    if answer.get("continue") is False:
        outcome.stop = str(answer.get("stopReason") or "")
    if isinstance(answer.get("systemMessage"), str) and answer["systemMessage"].strip():
        outcome.warnings.append(f"{hook.event} hook: {answer['systemMessage'].strip()}")
    decision, reason = answer.get("decision"), str(answer.get("reason") or "")
    permission = specific.get("permissionDecision")
    if permission is None and hook.event == "PreToolUse" and decision in ("approve", "block"):
        permission = "allow" if decision == "approve" else "deny"  # Claude Code's older names
    if hook.event == "PreToolUse" and permission in PERMISSION_ORDER:
        if PERMISSION_ORDER[permission] > PERMISSION_ORDER.get(outcome.permission or "", 0):
            outcome.permission = permission
        if permission == "deny":
            outcome.blocked = True
        _add_reason(outcome, str(specific.get("permissionDecisionReason") or reason))
    elif decision == "block" and hook.event in BLOCKING:
        outcome.blocked = True
        _add_reason(outcome, reason or f"blocked by {name}")
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        outcome.context.append(extra.strip())


def _add_reason(outcome: HookOutcome, reason: str) -> None:
    if reason:
        outcome.reason = f"{outcome.reason}\n{reason}" if outcome.reason else reason


def _json_object(text: str) -> dict | None:
    """``text`` as a JSON object when it is one (Claude Code reads stdout so), else None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
