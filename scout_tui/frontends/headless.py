"""Headless mode (``scout-tui -p``): the answer streams to stdout, one line per tool call to stderr.

``output_format`` "json" prints one JSON object instead, once the request ends (``result``);
"stream-json" prints each of the turn's events as a JSON line as it happens (``{"type", "session",
"data"}``: the event's name and data, as the store keeps them, ``bus.py``), then that result.

Same agent, store, skills and plugins as the TUI; the session is saved and can be continued
with ``-c``. Configuration warnings, skill and plugin problems go to stderr as
``scout-tui: <problem>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import TextIO, cast

from scout_tui import stop_signals
from scout_tui.core.bus import (Error, Event, MessageAssistant, MessageDelta, PermissionDecision, PlanDecided, Retry,
                           SessionCompacted, SubagentEvent, ToolEnd, ToolStart, TurnEnd)
from scout_tui.config.layers import Config
from scout_tui.core.errors import ScoutError
from scout_tui.session.commands import Parsed, literal
from scout_tui.session.mentions import prompt_content
from scout_tui.core.messages import message_text, thinking_text, tool_uses
from scout_tui.session.session import Session
from scout_tui.session.starting import open_session
from scout_tui.session.slash import command_prompt, session_commands
from scout_tui.store.event_log import Store
from scout_tui.core.text import StreamSanitizer, one_line, tool_summary
from scout_tui.tools.approvals import Approval, PermissionRequest



def _replacing(stream: TextIO) -> TextIO:
    """``stream`` writing what its encoding cannot hold (an emoji to a latin-1 or ASCII terminal,
    PYTHONIOENCODING=ascii) as ``?`` instead of raising UnicodeEncodeError mid-answer."""
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        stream.reconfigure(errors="replace")
    return stream


async def run_headless(
    config: Config,
    cwd: Path,
    prompt: str,
    *,
    resume: str | None = None,
    continue_: bool = False,
    fork: tuple[str, int | None] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    output_format: str = "text",
) -> int:
    """Run one request; return 0 on success, 1 on error (printed as ``scout-tui: <message>``).

    ``resume``, ``continue_`` (the latest of ``cwd``) and ``fork`` choose the session as in
    ``sessions.resolve_session``; without them, or when ``cwd`` has none, a new one. A tool
    call the permission mode would ask about is denied: the model reads why, and stderr gets
    a ``scout-tui: denied ...`` line.
    """
    out = stdout or _replacing(sys.stdout)
    err = stderr or _replacing(sys.stderr)

    def warn(text: str) -> None:
        print(f"scout-tui: {text}", file=err, flush=True)

    # Only a terminal can be hijacked by escape sequences; a pipe gets the model's bytes.
    cleaner = StreamSanitizer() if out.isatty() else None
    shared_terminal = out.isatty() and err.isatty()

    async def refuse(request: PermissionRequest) -> Approval:
        # Nobody is there to ask: the model is told, and so is the person reading stderr.
        what = f"{request.tool} {tool_summary(request.input)}".strip()
        warn(f"denied {what}: it would ask, because {request.reason}, and -p cannot ask; {request.how_to_allow()}")
        return Approval("deny", f"this call needs the user's approval (because {request.reason}), and headless "
                        "mode (-p) cannot ask for it. Tell the user what you wanted to do and that "
                        f"{request.how_to_allow()}", by="headless")

    store = Store()
    said: list[str] = []

    def notice(event: Event) -> None:
        said.append(event.data.get("text", ""))
        print(said[-1], file=err, flush=True)

    try:
        # Notices from the agent and from plugins (api.emit("notice", text=...)) alike.
        session = await open_session(config, cwd, store=store, warn=warn, resume=resume, latest=continue_, fork=fork,
                                     on_notice=notice, approve=refuse)
    except BaseException:
        store.close()
        raise
    opened = session.opened
    if fork is not None and fork[1] is not None and opened and opened.info and opened.info.fork_at != fork[1]:
        print(f"forked at message {opened.info.fork_at} instead of {fork[1]}, so no tool call is left without its "
              "result", file=err, flush=True)
    agent = session.ensure_agent()
    if (parsed := session_commands(session, warn).parse(prompt)) is not None and parsed.command is not None:
        if (planned := await command_prompt(session, parsed)) is None:
            return await _run_command(session, store, parsed, out, output_format, warn)
        prompt = planned
    prompt = literal(prompt) or prompt  # "//text" sends "/text", as in the TUI and acp
    # The session is stored when its turn starts (``Session.turn``): a run stopped by a bad
    # permission rule or [sandbox] value never reached the model, and leaves no empty session in
    # the sessions pane. A run that fails later is stored, and listed as failed (its turn.end's
    # stop_reason "error").
    failure: str | None = None
    last = "\n"  # the last character written to ``out``
    new_message = False  # the next text starts another assistant message: keep them apart
    inputs: dict[str, dict] = {}  # tool_use id -> arguments, for the stderr line
    answers: list[str] = []  # the text of each finished assistant message (the json result)
    cost: float | None = None  # dollars, summed over the requests that were priced

    def emit(event) -> None:  # stream-json: one line per event
        if output_format == "stream-json":
            out.write(json.dumps(stream_line(event, session.id)) + "\n")
            out.flush()

    def write(text: str) -> None:
        nonlocal last
        text = cleaner.feed(text) if cleaner else text
        if text:
            out.write(text)
            out.flush()
            last = text[-1]

    def tool_line(event: ToolEnd) -> None:  # stderr: ✓/✗, the call, its time, why it failed
        if shared_terminal and last != "\n":
            write("\n")  # stdout and stderr on one screen: the tool line starts a line
        mark = "✗" if event.is_error else "✓"
        summary = f"{event.name} {tool_summary(inputs.get(event.id, {}))}"
        line = f"{mark} {summary} ({event.elapsed or 0:.2f}s)"
        if event.is_error and (why := one_line(event.content.rstrip().rsplit("\n", 1)[-1], 200)):
            line += f": {why}"  # its last line: a bash status line, or why a tool failed
        print(line, file=err, flush=True)
        if event.notice:
            warn(event.notice)

    # Closing the terminal (SIGHUP) or `kill` (SIGTERM) stops the turn as Ctrl+C does: the
    # running tool's process group is killed and the turn is closed validly in the store.
    signalled: list[int] = []
    turn = asyncio.current_task()
    assert turn is not None  # run_headless runs in a task (asyncio.run)
    loop = asyncio.get_running_loop()

    def stop(signum: int) -> None:
        if not signalled:  # a turn stuck while it closes never keeps a stopped run alive
            from scout_tui.core.stop_guard import start_stop_guard

            start_stop_guard(128 + signum)
        signalled.append(signum)
        turn.cancel()

    handled = stop_signals()
    for signum in handled:
        loop.add_signal_handler(signum, stop, signum)
    content, notes = prompt_content(prompt, cwd, agent.permissions)  # @path mentions, as in the app
    for note in notes:
        warn(note)
    try:
        async with contextlib.aclosing(session.turn(content)) as events:
            async for event in events:
                emit(event)
                match event:
                    case MessageDelta(kind="text", text=text) if output_format == "text":
                        if new_message and last != "\n":
                            write("\n\n")
                        new_message = False
                        write(text)
                    case MessageAssistant():
                        new_message = True
                        if text := message_text(event.message):
                            answers.append(text)
                        elif (thought := only_thinking(event.message)) is not None:
                            answers.append(thought)  # a thinking model that put its whole answer there
                            if output_format == "text":
                                write(thought)
                        if event.cost is not None:
                            cost = (cost or 0.0) + event.cost
                    case ToolStart(id=call_id, input=arguments):
                        inputs[call_id] = arguments or {}
                    case PermissionDecision(by="rule"):
                        warn(f"denied {event.name} {tool_summary(inputs.get(event.id, {}))}: {event.reason}")
                    case ToolEnd():
                        tool_line(event)
                    case PlanDecided(plan=plan):  # plan mode: the plan is the answer (nobody here approves it)
                        answers.append(plan)
                        if output_format == "text":
                            write(("\n\n" if last not in ("", "\n") else "") + plan + "\n")
                    case SessionCompacted():
                        print(f"compacted: {event.tokens_before:,} → {event.tokens_after:,} tokens (undo: "
                              f"scout-tui --fork {(session.id or '')[:8]}:{event.count})", file=err, flush=True)
                    case Retry():
                        print(f"retrying ({event.attempt}/{event.max_attempts}) in {event.delay:.1f}s: {event.reason}",
                              file=err, flush=True)
                    case Error(message=message):
                        failure = message
                    case TurnEnd(stop_reason="blocked"):  # the notice just said says why
                        failure = said[-1] if said else "the prompt was not sent (a UserPromptSubmit hook blocked it)"
        if cleaner:
            write(cleaner.flush())
    except (asyncio.CancelledError, KeyboardInterrupt, BrokenPipeError):
        # Ctrl+C, or the reader of stdout went away (`| head`): the session closed the turn validly.
        for event in session.interrupt_events():
            if isinstance(event, ToolEnd):  # the call cut short is said, as the others were
                with contextlib.suppress(BrokenPipeError):
                    tool_line(event)
        if signalled:
            turn.uncancel()
            return 128 + signalled[0]  # the shell's convention for "ended by signal N"
        raise
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        if last != "\n":
            try:
                out.write("\n")
                out.flush()
            except BrokenPipeError:
                pass
        await session.close()
        store.close()
    if session.subagent_cost:  # the subagents' requests are this run's too
        cost = (cost or 0.0) + session.subagent_cost
    if output_format != "text":
        out.write(result_json(session.id, failure, "\n\n".join(answers), cost) + "\n")
        out.flush()
    if failure:
        print(f"scout-tui: {failure}", file=err, flush=True)
        return 1
    return 0



async def _run_command(session: Session, store: Store, parsed: Parsed, out: TextIO, output_format: str,
                       warn: Callable[[str], None]) -> int:
    """A prompt that is one of the session's slash commands (``session.slash``: ``/compact``,
    ``/undo``, ``/redo``, ``/cost``, a plugin's): run instead of a turn, what it did printed as
    Markdown (``text``) or as the json result's ``text``. Returns the exit status (1: it failed,
    said on stderr)."""
    assert parsed.command is not None
    said, failure = "", None
    try:  # the handlers are async functions giving Markdown
        said = await cast(Awaitable[str], parsed.command.run(parsed.args))
    except ScoutError as e:
        failure = str(e)
    finally:
        await session.close()
        store.close()
    if output_format == "text":
        if said:
            out.write(said.rstrip("\n") + "\n")
    else:
        out.write(result_json(session.id, failure, said) + "\n")
    out.flush()
    if failure:
        warn(failure)
        return 1
    return 0


def only_thinking(message: dict) -> str | None:
    """The thinking of an answer that has nothing else (no text, no tool call): a small thinking
    model on a small window often writes its whole answer there, and ``-p`` prints it rather than
    nothing; else None."""
    if message_text(message) or tool_uses(message):
        return None
    thought = thinking_text(message).strip()
    return thought or None


def stream_line(event: Event, session: str | None) -> dict:
    """One ``--output-format stream-json`` line: ``{"type", "session", "data"}`` for an event of
    the session ``session``; a subagent's event (``SubagentEvent``) as its own event, with its
    child session's id as ``session`` and the ``task`` call that runs it as
    ``parent_tool_use_id`` (Claude Code's name for it in its stream-json)."""
    if isinstance(event, SubagentEvent):
        inner = event.event
        line = stream_line(inner, event.session)
        line.setdefault("parent_tool_use_id", event.call)
        line.setdefault("agent", event.agent)
        return line
    return {"type": event.type, "session": session, "data": event.data}


def result_json(session: str | None, error: str | None, text: str = "", cost: float | None = None) -> str:
    """The last line of ``-p --output-format json|stream-json`` (README, "Headless"): ``{"type":
    "result", "session", "is_error", "error", "text", "cost"}``; ``session`` None when the run
    failed before one was made (a bad config, no prompt), ``cost`` in dollars or None."""
    return json.dumps({"type": "result", "session": session, "is_error": error is not None, "error": error,
                       "text": text, "cost": cost})
