"""How each of the running turn's events shows in the panes: ``show`` dispatches on the event's
class (``bus.py``'s vocabulary) to the chat's, tool pane's and status bar's methods. Imported
with the first event (``Delivery.shown``): the first frame needs neither this
nor the vocabulary.
"""

from __future__ import annotations

from functools import singledispatch
from typing import TYPE_CHECKING

from scout_tui.tui import collector
from scout_tui.tui.turn_keys import INTERRUPTED_NOTE, RETRY_HINT
from scout_tui.core.bus import (Checkpoint, CheckpointRestore, CompactCancelled, Error, Event, MessageAssistant,
                           MessageDelta, MessageUser, ModelSwitch, Notice, PermissionAsk, PermissionDecision,
                           PlanBranch, PromptCompacted, Retry, SessionCompacted, SubagentEvent, ToolEnd, ToolOutput,
                           ToolStart, TurnEnd)

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp  # each ``register`` names its class: no import back at run time


@singledispatch
def show(event: Event, app: ScoutApp) -> None:
    """Show ``event`` in ``app``'s panes; an event no pane shows (a plugin's own) does nothing."""


def _settled(app: ScoutApp) -> None:
    """The request is answered, failed for good or interrupted: "retrying" no longer says what
    happens, in the chat or the status bar."""
    if app.status.state.startswith("retrying"):
        app.status.state = ""
    app.chat.drop_retry_notice()


@show.register(MessageDelta)
def _(event: MessageDelta, app: ScoutApp) -> None:
    _settled(app)
    app.chat.assistant_delta(event.kind, event.text)


@show.register(MessageUser)
def _(event: MessageUser, app: ScoutApp) -> None:
    collector.defer_full_collections()  # a turn runs (this is its first event): see collector.py
    app.chat.user_message(event.index, event.message)
    if app.queue.pending:
        app.queue.steered()  # prompts sent meanwhile may have gone with these tool results


@show.register(MessageAssistant)
def _(event: MessageAssistant, app: ScoutApp) -> None:
    _settled(app)
    app.chat.assistant_message(event.index, event.message, interrupted=event.interrupted)
    if event.usage:
        app.delivery.show_usage({**event.usage, "cost": event.cost})


@show.register(ToolStart)
def _(event: ToolStart, app: ScoutApp) -> None:
    app.chat.tool_call_started(event.id, event.name, event.input or {})
    if (tools := app.tool_pane) is not None:
        tools.start(event.id, event.name, event.input or {})


@show.register(SubagentEvent)
def _(event: SubagentEvent, app: ScoutApp) -> None:
    inner = event.innermost  # a subagent's subagent: shown as its parent's step
    if (tools := app.tool_pane) is not None:
        tools.subagent(event.call, event.agent, inner)
    if isinstance(inner, MessageAssistant) and inner.cost:  # the status bar's cost rolls up the subagents'
        app.status.cost = (app.status.cost or 0.0) + inner.cost
    if isinstance(event.event, PermissionAsk):
        app.status.awaiting = True
    elif isinstance(event.event, PermissionDecision):
        app.status.awaiting = False


@show.register(ToolOutput)
def _(event: ToolOutput, app: ScoutApp) -> None:
    if (tools := app.tool_pane) is not None:
        tools.output(event.id, event.text)
    app.chat.tool_call_output(event.id, event.text)


@show.register(ToolEnd)
def _(event: ToolEnd, app: ScoutApp) -> None:
    app.chat.tool_call_ended(event.id, event.is_error, event.elapsed, event.content)
    if (tools := app.tool_pane) is not None:  # mounted before a turn starts (``run_turn`` waits)
        tools.end(event.id, event.content, event.is_error, event.elapsed, diff=event.diff, output_path=event.output_path)
    if event.notice:
        app.chat.add_notice(event.notice, "warning")


@show.register(PermissionAsk)
def _(event: PermissionAsk, app: ScoutApp) -> None:
    if (tools := app.tool_pane) is not None:
        tools.set_waiting(event.id, True)
    app.status.awaiting = True


@show.register(PermissionDecision)
def _(event: PermissionDecision, app: ScoutApp) -> None:
    if (tools := app.tool_pane) is not None:
        tools.set_waiting(event.id, False)
    app.status.awaiting = False
    if event.decision == "allow_outside" and (tools := app.tool_pane) is not None:
        tools.note(event.id, "outside the sandbox")


@show.register(PlanBranch)
def _(event: PlanBranch, app: ScoutApp) -> None:
    app.sessions.branch_started(event.session)


@show.register(PromptCompacted)
def _(event: PromptCompacted, app: ScoutApp) -> None:
    app.status.context_used = event.context_tokens
    app.status.context_window = event.context_window or app.status.context_window


@show.register(SessionCompacted)
def _(event: SessionCompacted, app: ScoutApp) -> None:
    app.delivery.show_usage({**event.usage, "cost": event.cost})
    app.long_session.show_compaction(event.data)


@show.register(Checkpoint)
@show.register(CheckpointRestore)
def _(event: Checkpoint | CheckpointRestore, app: ScoutApp) -> None:
    app.side_panes.add_checkpoint_event(event.type, event.data)


@show.register(CompactCancelled)
def _(event: CompactCancelled, app: ScoutApp) -> None:
    app.delivery.show_usage({**event.usage, "cost": event.cost})


@show.register(Retry)
def _(event: Retry, app: ScoutApp) -> None:
    app.status.state = f"retrying {event.attempt}/{event.max_attempts} in {event.delay:.1f}s"
    app.chat.retry_notice(f"{event.reason}: retrying ({event.attempt}/{event.max_attempts}) in {event.delay:.1f}s")


@show.register(Notice)
def _(event: Notice, app: ScoutApp) -> None:
    app.chat.add_notice(event.text, "warning")


@show.register(Error)
def _(event: Error, app: ScoutApp) -> None:
    from scout_tui.core.messages import retryable

    _settled(app)
    app.chat.stream_interrupted()
    hints = [RETRY_HINT] if retryable(app.session.messages) else []  # not for a prompt refused unsent
    if event.kind == "context_overflow" and app.session.compactions and grew(app.session.compactions[-1], app.status.context_window):
        hints.append(UNDO_COMPACTION_HINT)
    app.chat.add_notice("\n\n".join([event.message, *hints]), "error")


UNDO_COMPACTION_HINT = ("The last compaction made the prompt larger: `u` on its marker in the chat undoes it (a new "
                        "branch without that summary).")
"""Added to a context-overflow error when the summary in force made each request larger."""


def grew(compaction: dict, window: int | None) -> bool:
    """Whether a ``session.compacted`` event's summary made each request larger, or over ``window``
    tokens."""
    return compaction["tokens_after"] >= compaction["tokens_before"] or bool(
        window and compaction["tokens_after"] > window)


@show.register(TurnEnd)
def _(event: TurnEnd, app: ScoutApp) -> None:
    _settled(app)
    app.status.state = ""
    app.status.awaiting = False
    app.chat.stream_interrupted()
    if event.stop_reason == "interrupted":  # by the person: mid-answer, or during tool calls
        app.chat.add_notice(INTERRUPTED_NOTE)
    app.delivery.collect_after_turn()


@show.register(ModelSwitch)
def _(event: ModelSwitch, app: ScoutApp) -> None:
    status = app.status
    status.provider, status.model = event.provider, event.model
    if (info := app.long_session.model_info) is not None:
        status.context_window = info.context_window or 0  # unknown for the new model: not the old one's
    running = " (the answer being written finishes with the model before)" if app.busy else ""
    app.chat.add_notice(f"Model: {event.provider} · {event.model}, from the next request{running}.")
    app.long_session.estimate_context()
