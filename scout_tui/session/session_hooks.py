"""Where a session fires its hooks (``extensions.hooks``), for every front end alike: the tool calls'
(``PreToolUse``, ``PostToolUse``, ``Notification`` for an approval) are the tool runner's; here are
``SessionStart`` (before the first prompt of the person's own session is sent: its stdout joins that
prompt), ``UserPromptSubmit`` (a prompt blocked is not sent), ``Stop`` / ``SubagentStop`` (a block
sends its reason to the model and the turn goes on), ``PreCompact`` and ``SessionEnd``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scout_tui.core.bus import BeforeCompact, Event, Notice, TurnEnd

if TYPE_CHECKING:
    from scout_tui.engine.agent import Agent
    from scout_tui.session.session import Session

MAX_STOP_CONTINUES = 8
"""Times in one turn a ``Stop`` hook may send the model back to work before scout-tui stops
asking it (a hook that always blocks would otherwise spend without end)."""

UNFINISHED = ("interrupted", "stopped", "error", "max_turns", "blocked")
"""Stop reasons of a turn the model did not finish itself: no ``Stop`` hook runs for them."""


def attach_hooks(session: Session, agent: Agent) -> None:
    """Give ``session`` and its agent's tool runner the session's hooks (``session.hook_settings``,
    read now when not yet: a subagent's session has its parent's)."""
    from scout_tui.extensions.hook_config import hook_settings
    from scout_tui.extensions.hooks import Hooks
    from scout_tui.session.runtime import tool_environment

    if session.hook_settings is None:
        session.hook_settings = hook_settings(session.config, session.cwd)
    policy = agent.permissions
    session.hooks = Hooks(session.hook_settings, session.cwd, tool_environment(session.config), redact=agent.redact,
                          about=lambda: (session.id, policy.mode if policy is not None else "yolo"))
    agent.runner.hooks = session.hooks


def prompt_text(content: list[dict]) -> str:
    """The text of a prompt's blocks (what ``UserPromptSubmit`` hooks read as ``prompt``)."""
    return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")


async def submitted(session: Session, content: list[dict]) -> tuple[list[dict] | None, list[Event]]:
    """A prompt about to be sent, through the ``SessionStart`` hooks (the session's first) and the
    ``UserPromptSubmit`` hooks: ``(content, notices)``, content None when a hook blocked it (a
    notice says why and a ``turn.end`` "blocked" ends the turn), else with what the hooks added for
    the model as text blocks after it."""
    hooks = session.hooks
    if hooks is None:
        return content, []
    notices: list[Event] = []
    added: list[str] = []
    if session.depth == 1 and not session.hooks_started:
        session.hooks_started = True
        if hooks.has("SessionStart"):
            source = "resume" if session.messages else "startup"
            outcome = await hooks.fire("SessionStart", {"source": source}, match=source)
            notices += [Notice(w) for w in outcome.warnings]
            added += outcome.context
    if hooks.has("UserPromptSubmit"):
        outcome = await hooks.fire("UserPromptSubmit", {"prompt": prompt_text(content)})
        notices += [Notice(w) for w in outcome.warnings]
        if outcome.blocked or outcome.stop is not None:
            why = outcome.reason or outcome.stop or "no reason given"
            notices += [Notice(f"Not sent: a UserPromptSubmit hook blocked this prompt: {why}"), TurnEnd("blocked")]
            return None, notices
        added += outcome.context
    from scout_tui.session.mentions import hook_context

    return [*content, *(hook_context(text) for text in added)], notices


async def stop_feedback(session: Session, stop_reason: str, continues: int) -> tuple[str | None, list[Event]]:
    """After a turn the model ended itself (``stop_reason`` not in ``UNFINISHED``), the ``Stop``
    hooks (``SubagentStop`` in a subagent's session): ``(feedback, notices)``, feedback the text to
    send the model when a hook blocked the stop (None: the turn ends). ``continues``: how many
    times this turn went on so (``stop_hook_active`` when above 0; at ``MAX_STOP_CONTINUES`` it ends)."""
    hooks = session.hooks
    event = "SubagentStop" if session.depth > 1 else "Stop"
    if hooks is None or stop_reason in UNFINISHED or not hooks.has(event):
        return None, []
    outcome = await hooks.fire(event, {"stop_hook_active": continues > 0})
    notices: list[Event] = [Notice(w) for w in outcome.warnings]
    if not outcome.blocked or outcome.stop is not None:
        return None, notices
    if continues >= MAX_STOP_CONTINUES:
        notices.append(Notice(f"A {event} hook blocked the stop {continues + 1} times in this turn; the turn ends "
                              f"here (at most {MAX_STOP_CONTINUES} continuations)."))
        return None, notices
    return f"{event} hook feedback:\n{outcome.reason or 'keep working'}", notices


async def before_compact(session: Session, event: BeforeCompact) -> list[Event]:
    """The ``PreCompact`` hooks for a compaction about to be written (``trigger`` "manual" for
    ``/compact``, "auto" for the agent's own); the notices of their warnings."""
    hooks = session.hooks
    if hooks is None or not hooks.has("PreCompact"):
        return []
    trigger = "auto" if event.by == "auto" else "manual"
    outcome = await hooks.fire("PreCompact", {"trigger": trigger, "custom_instructions": event.focus}, match=trigger)
    return [Notice(w) for w in outcome.warnings]


async def session_ended(session: Session, reason: str = "other") -> None:
    """The ``SessionEnd`` hooks, for a session whose hooks started (warnings go nowhere: the front
    end is closing)."""
    hooks = session.hooks
    if hooks is not None and session.hooks_started and hooks.has("SessionEnd"):
        await hooks.fire("SessionEnd", {"reason": reason}, match=reason)


def late_notices(session: Session) -> list[Any]:
    """Notices of hooks fired without waiting (``Hooks.notify``) that finished since."""
    return [Notice(w) for w in session.hooks.take_warnings()] if session.hooks is not None else []
