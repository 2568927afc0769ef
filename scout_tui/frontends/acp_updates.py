"""The agent's events (``bus.py``) and stored messages as Agent Client Protocol session updates:
message and thought chunks, tool calls with their kind, status, locations and diffs. No I/O.

Shapes follow the ACP schema (https://agentclientprotocol.com/protocol/schema, as the
``agent-client-protocol`` package's ``acp.schema`` models it): ``session/update`` notifications
(https://agentclientprotocol.com/protocol/prompt-turn), tool calls
(https://agentclientprotocol.com/protocol/tool-calls) and stop reasons.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Union

from acp.schema import (AgentMessageChunk, AgentThoughtChunk, ContentToolCallContent, Cost, FileEditToolCallContent,
                        PermissionOption, ToolCallUpdate,
                        SessionConfigOptionSelect, SessionConfigSelectOption, SessionInfo, SessionInfoUpdate,
                        SessionMode, SessionModeState, StopReason, TextContentBlock, ToolCallLocation, ToolCallProgress,
                        ToolCallStart, ToolKind, UsageUpdate, UserMessageChunk)

from scout_tui.core.bus import (Event, MessageAssistant, MessageDelta, PermissionDecision, PromptCompacted, SessionCompacted,
                           SubagentEvent, ToolEnd, ToolOutput, ToolStart)
from scout_tui.core.subagent_progress import SubagentProgress
from scout_tui.core.diffs import diff_lines
from scout_tui.session.mentions import typed_text
from scout_tui.core.messages import blocks, result_text
from scout_tui.config.models import prompt_tokens
from scout_tui.store.queries import SessionInfo as StoredSession
from scout_tui.core.text import tool_summary
from scout_tui.tools.approvals import Approval, PermissionRequest
from scout_tui.tools.permissions import MODES

Update = Union[AgentMessageChunk, AgentThoughtChunk, UserMessageChunk, ToolCallStart, ToolCallProgress, UsageUpdate,
               SessionInfoUpdate]
"""One ``session/update`` payload (the ``update`` field of a ``SessionNotification``)."""

TOOL_KINDS: dict[str, ToolKind] = {
    "read": "read", "skill": "read", "write": "edit", "edit": "edit", "bash": "execute", "grep": "search",
    "glob": "search",
}
"""ACP's ``ToolKind`` of each built-in tool; any other tool (a plugin's, an MCP server's) is ``other``."""

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn", "stop_sequence": "end_turn", "pause_turn": "end_turn", "tool_use": "end_turn",
    "max_tokens": "max_tokens", "refusal": "refusal", "max_turns": "max_turn_requests",
    "interrupted": "cancelled", "stopped": "cancelled",
}
"""A ``turn.end`` stop reason (the model's, or scout-tui's own: ``bus.TurnEnd``) as ACP's
``StopReason``; one not listed is ``end_turn``. ``error`` is not a stop reason: the prompt fails."""


MODE_TEXT = {
    "ask": ("Ask", "Reads run; edits, commands and plugin tools ask first"),
    "auto-edit": ("Auto-edit", "Edits inside the project run; commands ask first"),
    "yolo": ("Yolo", "Nothing asks (deny rules still hold)"),
    "plan": ("Plan", "Read-only: the agent explores and proposes a plan for you to approve"),
}
"""ACP session modes: scout-tui's permission modes (``tools.permissions.MODES``), named for a client's menu."""


def session_modes(current: str) -> SessionModeState:
    """The session modes a client offers (https://agentclientprotocol.com/protocol/session-modes):
    the permission modes in Shift+Tab's order, ``current`` the one in force."""
    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id=m, name=MODE_TEXT[m][0], description=MODE_TEXT[m][1]) for m in MODES])


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def listed(session: StoredSession) -> SessionInfo:
    """A stored session as ``session/list`` gives it: id, folder, title, and its last activity
    (Unix seconds) as ISO 8601 in UTC."""
    return SessionInfo(session_id=session.id, cwd=session.cwd or "/", title=_title(session),
                       updated_at=_iso(session.updated))


def info_update(session: StoredSession) -> SessionInfoUpdate:
    """The ``session_info_update`` that tells a client a session's title and last activity."""
    return SessionInfoUpdate(session_update="session_info_update", title=_title(session), updated_at=_iso(session.updated))


def _title(session: StoredSession) -> str | None:
    """The title a client shows (``shown_title``: a branch's inherited one reads "fork of …"),
    None when there is none, so the client says so in its own words."""
    return session.shown_title if session.title else None


def model_option(choices: list[tuple[str, str]], current: tuple[str, str]) -> SessionConfigOptionSelect:
    """The session's model as an ACP config option (https://agentclientprotocol.com/protocol/session-config-options,
    category ``model``): each ``(provider profile, model id)`` choice (``providers.configured_models``)
    as the value ``PROFILE/MODEL``, ``current`` the one in use."""
    def value(choice: tuple[str, str]) -> str:
        return f"{choice[0]}/{choice[1]}"

    options = [SessionConfigSelectOption(value=value(c), name=c[1], description=f"provider {c[0]}")
               for c in dict.fromkeys([current, *choices])]
    return SessionConfigOptionSelect(type="select", id="model", name="Model", category="model",
                                     current_value=value(current), options=options)


def stop_reason(reason: str) -> StopReason:
    """``reason`` (a ``turn.end``'s ``stop_reason``) as ACP's ``StopReason`` (``STOP_REASONS``)."""
    return STOP_REASONS.get(reason, "end_turn")


def tool_kind(name: str) -> ToolKind:
    """ACP's kind of tool ``name`` (``TOOL_KINDS``), which clients use for an icon."""
    return TOOL_KINDS.get(name, "other")


def tool_title(name: str, input: Any) -> str:
    """A call's one-line title: the tool and its path, command or pattern (``text.tool_summary``);
    a ``task`` call's, its agent and description (``explore: find the parser``)."""
    if name == "task" and isinstance(input, dict):
        return f"{input.get('agent') or 'general'}: {tool_summary(input.get('description') or input)}"
    return f"{name} {tool_summary(input)}".strip()


def _absolute(path: str, cwd: Path) -> str:
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))


def tool_locations(input: Any, cwd: Path) -> list[ToolCallLocation]:
    """The file a call reads or changes (its ``path`` argument) as an absolute path, for a
    client's "follow along"; none for a call without one (bash, a glob without a path)."""
    path = input.get("path") if isinstance(input, dict) else None
    return [ToolCallLocation(path=_absolute(path, cwd))] if isinstance(path, str) and path.strip() else []


def diff_contents(diff: str | None, input: Any, cwd: Path) -> list[FileEditToolCallContent]:
    """A unified diff (``diffs.unified_diff``: what a write or edit made) as ACP ``diff`` contents,
    one per hunk: ``oldText`` the hunk's context and removed lines, ``newText`` its context and
    added lines, ``path`` absolute; ``oldText`` None for a new file (``--- /dev/null``). Empty
    without a diff or a ``path`` argument."""
    path = input.get("path") if isinstance(input, dict) else None
    if not diff or not isinstance(path, str):
        return []
    created = diff.startswith("--- /dev/null")
    hunks: list[tuple[list[str], list[str]]] = []
    for kind, line in diff_lines(diff):
        if kind == "hunk":
            hunks.append(([], []))
        elif hunks and kind in ("context", "remove", "add"):
            old, new = hunks[-1]
            if kind != "add":
                old.append(line[1:])
            if kind != "remove":
                new.append(line[1:])
    where = _absolute(path, cwd)
    return [FileEditToolCallContent(type="diff", path=where, old_text=None if created else "\n".join(old) + "\n",
                                    new_text="\n".join(new) + "\n") for old, new in hunks]


def notice_update(text: str) -> AgentMessageChunk:
    """Something the person should read that is not the model's (an MCP server still starting),
    as a quoted paragraph of the agent's message: ACP has no notice of its own."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines())
    return AgentMessageChunk(session_update="agent_message_chunk", content=_text(f"{quoted}\n\n"))


def text_content(text: str) -> ContentToolCallContent:
    """``text`` as a tool call's ``content`` item."""
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def tool_call(call_id: str, name: str, input: Any, cwd: Path) -> ToolCallStart:
    """The ``tool_call`` update announcing a call, ``pending`` (not running yet)."""
    return ToolCallStart(session_update="tool_call", tool_call_id=call_id, title=tool_title(name, input),
                         kind=tool_kind(name), status="pending", locations=tool_locations(input, cwd),
                         raw_input=input)


def tool_result(call_id: str, content: Any, is_error: bool, diff: str | None, input: Any, cwd: Path) -> ToolCallProgress:
    """The ``tool_call_update`` that ends a call: ``completed`` or ``failed``, its result's text
    (what the model reads) and the diffs it made."""
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                            status="failed" if is_error else "completed",
                            content=[text_content(result_text(content)), *diff_contents(diff, input, cwd)])


ALLOW, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
"""The ``optionId``s of a permission request: the TUI's y, a and n."""


def permission_request(request: PermissionRequest, cwd: Path) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """A call waiting for the person's answer as ``session/request_permission`` asks about it
    (https://agentclientprotocol.com/protocol/tool-calls#requesting-permission): the call (why it
    asks, and the diff it would make) and the options: allow once, allow always (the rules the
    TUI's ``a`` adds, for this run; offered when there are some) and reject."""
    options = [PermissionOption(option_id=ALLOW, name="Allow once", kind="allow_once")]
    if request.suggestions or request.sandbox == "none":
        always = ", ".join(request.suggestions) or "commands unsandboxed"
        options.append(PermissionOption(option_id=ALLOW_ALWAYS, name=f"Allow always ({always}, this run)",
                                        kind="allow_always"))
    options.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
    call = ToolCallUpdate(
        tool_call_id=request.id, title=tool_title(request.tool, request.input), kind=tool_kind(request.tool),
        status="pending", locations=tool_locations(request.input, cwd), raw_input=request.input,
        content=[text_content(f"Asks because {request.reason}."), *diff_contents(request.diff, request.input, cwd)])
    return call, options


def approval(option_id: str | None) -> Approval:
    """The answer a chosen ``optionId`` gives; None (the request was cancelled: the turn is being
    cancelled) stops the turn."""
    return {ALLOW: Approval("allow"), ALLOW_ALWAYS: Approval("allow_session"), REJECT: Approval("deny")}.get(
        option_id or "", Approval("stop"))


class LiveUpdates:
    """Maps one session's events to updates as a turn runs (``updates``). It remembers each
    call's arguments (a ``tool.end`` carries none), which calls were said to be running, the
    context window the last request was fitted to, and ``cost``: the session's dollars so far
    (start it at the branch's, ``OpenedSession.cost``; None while nothing was priced)."""

    def __init__(self, cwd: Path, cost: float | None = None) -> None:
        self.cwd = cwd
        self.cost = cost
        self._inputs: dict[str, Any] = {}
        self._running: set[str] = set()
        self._window: int | None = None
        self._subagents: dict[str, SubagentProgress] = {}  # task call id -> its subagent's progress

    def updates(self, event: Event) -> list[Update]:
        """The updates ``event`` makes: a streamed delta a message or thought chunk; ``tool.start``
        a pending ``tool_call``; an allowed permission or the first output ``in_progress``;
        ``tool.end`` the call's end (``tool_result``); a finished answer a ``usage_update``
        (https://agentclientprotocol.com/protocol/prompt-turn#session-usage-updates: the tokens
        its request read and wrote, of the window, and the session's cost in USD) once the
        window is known. Others (notices, turn.end) none."""
        match event:
            case MessageDelta(kind="text", text=text) if text:
                return [AgentMessageChunk(session_update="agent_message_chunk", content=_text(text))]
            case MessageDelta(kind="thinking", text=text) if text:
                return [AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(text))]
            case SubagentEvent(call=call_id, agent=agent, description=description):
                return self._subagent(call_id, agent, description, event.innermost)
            case ToolStart(id=call_id, name=name, input=input):
                self._inputs[call_id] = input
                return [tool_call(call_id, name, input, self.cwd)]
            case PermissionDecision(id=call_id, decision=decision) if decision.startswith("allow"):
                return self._started(call_id)
            case ToolOutput(id=call_id):
                return self._started(call_id)
            case ToolEnd(id=call_id, content=content, is_error=is_error, diff=diff):
                self._running.discard(call_id)
                return [tool_result(call_id, content, is_error, diff, self._inputs.pop(call_id, None), self.cwd)]
            case PromptCompacted(context_window=window) if window:
                self._window = window
            case SessionCompacted(cost=cost) if cost is not None:
                self.cost = (self.cost or 0.0) + cost
            case MessageAssistant(usage=usage, cost=cost, interrupted=False):
                if cost is not None:
                    self.cost = (self.cost or 0.0) + cost
                if self._window:
                    used = prompt_tokens(usage) + int(usage.get("output_tokens") or 0)
                    return [UsageUpdate(session_update="usage_update", used=used, size=self._window,
                                        cost=Cost(amount=self.cost, currency="USD") if self.cost is not None else None)]
        return []

    def _subagent(self, call_id: str, agent: str, description: str, event: Event) -> list[Update]:
        """A ``task`` call's subagent at work: its call's content becomes what the subagent does
        (``SubagentProgress.text``), sent when its calls or its state change, not per streamed delta."""
        progress = self._subagents.setdefault(call_id, SubagentProgress(agent))
        if not progress.take(event):
            return []
        self._running.add(call_id)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress",
                                 content=[text_content(progress.text(description))])]

    def _started(self, call_id: str) -> list[Update]:
        if call_id in self._running:
            return []
        self._running.add(call_id)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")]


def replay(messages: list[dict], details: dict[str, dict[str, Any]], cwd: Path) -> list[Update]:
    """A stored conversation (``Store.messages``) as the updates that show it again
    (``session/load``): what the person typed as user chunks (attached ``@`` mentions left
    out), thinking and text as thought and message chunks, each tool call as a ``tool_call``
    then its final ``tool_call_update`` from its result (``details``: ``Store.tool_details``,
    for the diffs)."""
    out: list[Update] = []
    inputs: dict[str, Any] = {}
    for message in messages:
        if message.get("role") == "user":
            if text := typed_text(message):
                out.append(UserMessageChunk(session_update="user_message_chunk", content=_text(text)))
            for block in blocks(message):
                if block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id"))
                    out.append(tool_result(call_id, block.get("content"), bool(block.get("is_error")),
                                           details.get(call_id, {}).get("diff"), inputs.get(call_id), cwd))
            continue
        for block in blocks(message):
            kind = block.get("type")
            if kind == "thinking" and block.get("thinking"):
                out.append(AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(block["thinking"])))
            elif kind == "text" and block.get("text"):
                out.append(AgentMessageChunk(session_update="agent_message_chunk", content=_text(block["text"])))
            elif kind == "tool_use":
                inputs[block["id"]] = block.get("input")
                out.append(tool_call(block["id"], block.get("name", ""), block.get("input"), cwd))
    return out

