"""The tool calls of one assistant reply, run for ``agent.Agent`` (which holds a ``ToolRunner``):
read-only ones at once, each checked against the permission policy, stoppable from the pane, its
output redacted and cut. No Textual, no database.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, AsyncIterator, Awaitable, Callable

from scout_tui.backends.failures import UNPARSED_ARGUMENTS
from scout_tui.core.bus import Event, Notice, PermissionAsk, PermissionDecision, ToolEnd, ToolOutput, ToolStart
from scout_tui.tools.base import Registry, ToolContext, ToolError, ToolResult, may_change_files
from scout_tui.tools.files import FILE_STAMPS
from scout_tui.tools.output import MAX_OUTPUT_CHARS, cut_to_fit, save_output
from scout_tui.core.redaction import StreamRedactor, redact
from scout_tui.tools.approvals import Approval, Approver, PermissionRequest
from scout_tui.tools.permissions import Policy, Sandboxing
from scout_tui.tools.sandbox import SandboxSettings, active

if TYPE_CHECKING:
    from scout_tui.extensions.hooks import Hooks

STOPPED_BY_USER = "Not run: the user stopped the turn."
STOP_GRACE = 3.0
"""Seconds a tool stopped from the tool pane gets to return what it has before it is cancelled."""
CUT_BY_MAX_TOKENS = (
    "Not run: this tool call was cut off by the max_tokens limit, so its arguments may be "
    "incomplete. Send it again, smaller if needed."
)


class ToolRunner:
    """Runs the tool calls of one assistant reply at a time (``run``) and owns their state: the
    calls running (``kill``), when each started, their results, and whether the person stopped the
    turn at an approval prompt. The agent builds the user message of results from ``results``.

    Args:
        tools: the tools offered; an unknown name gets the registry's error result.
        cwd: the folder tools run in.
        env: extra environment variables for processes tools start (None: none).
        sandbox: how those processes are sandboxed (None: unsandboxed).
        secrets: strings replaced by ``[redacted]`` in every output, longest first.
        permissions: the policy each call is checked against (None: every call runs).
        approve: asks the person about a call the policy says to ask about (None: such a
            call is denied).
        output_dir: where a tool output too long for the model is saved whole (None: not saved).
        clock: seconds on a monotonic clock, for each call's ``elapsed``.
        before_change: awaited before the turn's first call that may change files (the
            agent's checkpoint); a ``Notice`` it returns is passed on.
    """

    def __init__(self, tools: Registry, *, cwd: Path, env: dict[str, str] | None,
                 sandbox: SandboxSettings | None, secrets: tuple[str, ...], permissions: Policy | None,
                 approve: Approver | None, output_dir: Path | None, clock: Callable[[], float],
                 before_change: Callable[[], Awaitable[Event | None]]) -> None:
        self.tools = tools
        self.cwd = cwd
        self.env = env
        self.sandbox = sandbox
        self.secrets = secrets
        self.permissions = permissions
        self.approve = approve
        self.output_dir = output_dir
        self.clock = clock
        self.before_change = before_change
        self.stopping = False
        """The person stopped the turn at an approval prompt: calls not run yet are not run."""
        self.results: dict[str, ToolResult] = {}  # tool_use id -> its result, for the reply being run
        self.started: dict[str, float] = {}  # tool_use id -> ``clock()`` when it started running
        self._asking = asyncio.Lock()  # one approval prompt at a time
        self._running: dict[str, ToolContext] = {}  # tool_use id -> context, while it runs
        self._file_stamps: dict[str, tuple[int, int]] = {}  # files.FILE_STAMPS: what this agent last saw of each file
        self.hooks: Hooks | None = None
        """The session's hooks: ``PreToolUse`` before each call's permission check, ``PostToolUse``
        after it ran, ``Notification`` when a call waits for the person (None: no hooks)."""

    def start_reply(self) -> None:
        """Forget the results of the previous reply's calls (a new reply's calls are open)."""
        self.results = {}

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[redacted]``."""
        return redact(text, tuple(self.secrets))

    def kill(self, tool_use_id: str) -> bool:
        """Stop one running tool call (the turn goes on; the model reads what it printed).

        Returns False when no call of that id is running. Bash kills its whole process group;
        another tool gets ``STOP_GRACE`` seconds to return, then is cancelled.
        """
        ctx = self._running.get(tool_use_id)
        if ctx is None or ctx.stop.is_set():
            return False
        ctx.stop.set()
        return True

    async def run(self, uses: list[dict], *, cut_last: bool) -> AsyncGenerator[Event, None]:
        """Run the calls ``uses`` (``tool_use`` blocks) of one assistant message; yield their
        events; each call's result is in ``results`` by its id when this ends.

        Consecutive read-only calls run at once, and so do consecutive calls that hand work to
        subagents (``Tool.delegates``: each of their calls is checked on its own); another call
        that may change things runs alone, so an edit never races a read of the same file. Once the person stops the turn at an
        approval prompt, the calls not yet run get a "not run" result. With ``cut_last`` the
        last call (cut off by max_tokens) is not run.
        """
        runnable = uses[:-1] if cut_last else uses
        if cut_last:
            self.results[uses[-1]["id"]] = ToolResult(CUT_BY_MAX_TOKENS, True)
        for batch in self._batches(runnable):
            if self.stopping:
                for use in batch:
                    self.results[use["id"]] = ToolResult(STOPPED_BY_USER, True)
                    yield ToolStart(use["id"], use["name"], use.get("input"))
                    yield ToolEnd(use["id"], use["name"], STOPPED_BY_USER, True, None)
                continue
            if not batch[0]["_ro"] and (notice := await self.before_change()):  # it may change files
                yield notice
            async for event in self._run_batch(batch):
                yield event

    async def call_alone(self, name: str, input: dict) -> ToolResult:
        """One call outside the model's replies (a markdown command's ``!`cmd```): checked as the
        model's are (hooks, the permission rules, asking the person when they say so), run in the
        sandbox, its result redacted and cut; no events, no checkpoint (no turn runs yet)."""
        call_id = f"expand_{os.urandom(4).hex()}"
        use = {"id": call_id, "name": name, "input": input}
        ctx = ToolContext(self.cwd, on_output=lambda text: None, env=self.env, output_path=None,
                          secrets=tuple(self.secrets), sandbox=self._sandbox_now(), call_id=call_id)
        self.started[call_id] = self.clock()
        try:
            _, refused = await self._permit(use, ctx, lambda event: None)
            result = refused if refused is not None else await self._call(use, ctx)
        except Exception as e:  # as in a reply: whatever fails ends with a result
            result = ToolResult(f"{name} failed: {type(e).__name__}: {e}", True)
        return ToolResult(self.redact(str(result.content)), result.is_error)

    def _batches(self, uses: list[dict]) -> list[list[dict]]:
        batches: list[list[dict]] = []
        for use in uses:
            tool = self.tools.tools.get(use["name"])
            read_only = not may_change_files(tool)
            delegates = tool is not None and tool.delegates
            last = batches[-1][-1] if batches else None
            if last is not None and (read_only and last["_ro"] or delegates and last["_delegates"]):
                batches[-1].append({**use, "_ro": read_only, "_delegates": delegates})
            else:
                batches.append([{**use, "_ro": read_only, "_delegates": delegates}])
        return batches

    async def _run_batch(self, batch: list[dict]) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def one(use: dict) -> None:
            start = self.started[use["id"]] = self.clock()
            live = StreamRedactor(tuple(self.secrets))
            diff, refused = None, None

            def show(text: str) -> None:
                if text:
                    queue.put_nowait(ToolOutput(use["id"], text))

            try:
                ctx = ToolContext(
                    self.cwd,
                    on_output=lambda text: show(live.feed(text)),
                    env=self.env,
                    output_path=self._output_path(use["id"]),
                    secrets=tuple(self.secrets),
                    sandbox=self._sandbox_now(),
                    call_id=use["id"],
                    emit=queue.put_nowait,
                )
                FILE_STAMPS.set(self._file_stamps)  # this task's own context: the call's tools see it
                diff, refused = await self._permit(use, ctx, queue.put_nowait)
                if refused is not None:
                    result = refused
                else:
                    start = self.started[use["id"]] = self.clock()  # not counting the approval
                    result = await self._call(use, ctx)
                    result = await self._after(use, result, queue.put_nowait)
                show(live.flush())
            except Exception as e:  # whatever fails, the call ends with a result the model reads
                result = ToolResult(f"{use['name']} failed: {type(e).__name__}: {e}", True)
            result = ToolResult(self.redact(str(result.content)), result.is_error, result.output_path,
                                self.redact(result.notice) if result.notice else None, result.ends_turn)
            self.results[use["id"]] = result
            if result.ends_turn:
                self.stopping = True  # no model request follows (a plan handed to the person)
            queue.put_nowait(ToolEnd(
                use["id"], use["name"], result.content, result.is_error,
                elapsed=None if refused is not None else round(self.clock() - start, 3),
                diff=self.redact(diff) if diff and refused is None and not result.is_error else None,
                output_path=result.output_path or None, notice=result.notice))

        for use in batch:
            yield ToolStart(use["id"], use["name"], use.get("input"))
        tasks = [asyncio.create_task(one(use)) for use in batch]
        try:
            remaining = len(tasks)
            while remaining:
                event = await queue.get()
                if isinstance(event, ToolEnd):
                    remaining -= 1
                yield event
        finally:
            for task in tasks:
                task.cancel()
            # Let cancelled tools clean up (bash kills its process group) before we go on.
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _call(self, use: dict, ctx: ToolContext) -> ToolResult:
        """Run one call; stopping it from the pane ends it; a result too long for the model is
        cut to its head and tail and saved whole."""
        self._running[use["id"]] = ctx
        task = asyncio.ensure_future(self.tools.call(use["name"], use.get("input"), ctx))
        stopping = asyncio.ensure_future(ctx.stop.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():  # stopped: bash returns what it printed; others get a moment
                await asyncio.wait({task}, timeout=STOP_GRACE)
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return ToolResult(f"Stopped by the user after {self.clock() - self.started[use['id']]:.1f} s.", True)
            result = task.result()
        finally:
            self._running.pop(use["id"], None)
            stopping.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if len(result.content) > MAX_OUTPUT_CHARS + 1_000 and result.output_path is None:
            content = self.redact(result.content)
            note = ""
            if ctx.output_path is not None:
                try:
                    await asyncio.to_thread(save_output, ctx.output_path, content)
                    result.output_path = str(ctx.output_path)
                    note = f"\n[the full output ({len(content):,} characters) is saved in {ctx.output_path}]"
                except OSError as e:
                    note = f"\n[could not save the full output to {ctx.output_path}: {e.strerror or e}]"
            result.content = cut_to_fit(content) + note
        return result

    async def _after(self, use: dict, result: ToolResult, emit: Callable[[Event], None]) -> ToolResult:
        """``result`` with what the ``PostToolUse`` hooks said for the model added (a block's reason,
        ``additionalContext``); their warnings emitted as notices."""
        if self.hooks is None or not self.hooks.has("PostToolUse"):
            return result
        outcome = await self.hooks.fire("PostToolUse", {
            "tool_name": use["name"], "tool_input": use.get("input"), "tool_use_id": use["id"],
            "tool_response": {"content": result.content, "is_error": result.is_error}}, match=use["name"])
        for warning in outcome.warnings:
            emit(Notice(warning))
        said = [f"PostToolUse hook: {outcome.reason}"] if outcome.blocked and outcome.reason else []
        said += outcome.context
        if not said:
            return result
        return dataclasses.replace(result, content="\n\n".join([result.content, *said]))

    async def _before(self, use: dict, emit: Callable[[Event], None]) -> tuple[str | None, ToolResult | None]:
        """The ``PreToolUse`` hooks' word on a call: ``(permission, refused)``, permission "allow"
        (run without asking; a deny rule still refuses), "ask" (ask even where the rules allow) or
        None; refused, the result to give the model instead of running it (a hook blocked it)."""
        if self.hooks is None or not self.hooks.has("PreToolUse"):
            return None, None
        name = use["name"]
        outcome = await self.hooks.fire("PreToolUse", {"tool_name": name, "tool_input": use.get("input"),
                                                       "tool_use_id": use["id"]}, match=name)
        for warning in outcome.warnings:
            emit(Notice(warning))
        if outcome.blocked:
            reason = outcome.reason or "a PreToolUse hook blocked it"
            emit(PermissionDecision(use["id"], name, "deny", "hook", reason))
            return None, ToolResult(f"Blocked by a PreToolUse hook: {reason}", True)
        if outcome.stop is not None:
            self.stopping = True
            return None, ToolResult(f"Not run: a PreToolUse hook stopped the turn. {outcome.stop}".rstrip(), True)
        return outcome.permission, None

    def _sandbox_now(self) -> SandboxSettings | None:
        """The sandbox a call starting now runs in: in plan mode a writable one becomes read-only
        (a second wall behind ``read_only_commands``)."""
        sandbox = self.sandbox
        if sandbox is not None and sandbox.mode == "workspace-write" and self.permissions is not None \
                and self.permissions.mode == "plan":
            return dataclasses.replace(sandbox, mode="read-only")
        return sandbox

    def _output_path(self, tool_use_id: str) -> Path | None:
        if self.output_dir is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tool_use_id)[:64] or "call"
        # Some servers reuse ids ("call_0" every turn): a random tail keeps each call's own file.
        return self.output_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-{os.urandom(3).hex()}.txt"

    # -- permissions --------------------------------------------------------------------------

    async def _sandboxing(self) -> Sandboxing:
        """Whether this agent's commands run in the OS sandbox (``permissions.Sandboxing``)."""
        if self.sandbox is None or self.sandbox.mode == "off":
            return "off"
        return "active" if await asyncio.to_thread(active, self.sandbox) else "none"  # runs bwrap once, then cached

    async def _permit(self, use: dict, ctx: ToolContext, emit: Callable[[Event], None]) -> tuple[str | None, ToolResult | None]:
        """Check a call against the policy, asking the person when it says so.

        Returns ``(diff, refused)``: the unified diff an edit or write would make (None for
        other tools), and the result to give the model instead of running it (None: run it).
        """
        name, input = use["name"], use.get("input")
        policy = self.permissions
        tool = self.tools.tools.get(name)
        if tool is None or not isinstance(input, dict):
            return None, None  # the registry answers with the error; nothing runs
        if set(input) == {UNPARSED_ARGUMENTS}:
            return None, ToolResult(f"Tool call {name!r} had arguments that are not a JSON object: "
                                    f"{str(input[UNPARSED_ARGUMENTS])[:200]!r}; send them again as a JSON object.", True)
        hooked, refused = await self._before(use, emit)
        if refused is not None:
            return None, refused
        try:
            sandboxing = await self._sandboxing() if name == "bash" else "off"
            check = (policy.check(name, input, self.cwd, read_only=tool.read_only or tool.delegates, sandbox=sandboxing)
                     if policy else None)
        except Exception as e:  # a call that cannot be judged does not run
            return None, ToolResult(f"Not run: checking this {name} call against the permission rules failed "
                                    f"({type(e).__name__}: {e}).", True)
        if check is not None and check.verdict == "deny":
            emit(PermissionDecision(use["id"], name, "deny", "rule", check.reason))
            return None, ToolResult(f"Permission denied: {check.reason}. Do not try to get around this rule; "
                                    "if the task needs it, tell the user.", True)
        diff = None
        if tool.preview is not None:  # only now: a denied call reads nothing
            try:
                diff = await tool.preview(input, ctx)
            except ToolError as e:  # the call would fail the same way: say so, change nothing
                return None, ToolResult(f"{name}: {e}", True)
            except Exception as e:  # a plugin's preview bug: ask without a diff
                diff = f"(no preview: {type(e).__name__}: {e})"
            diff = self.redact(diff) if diff else diff  # shown when asking: a key in the file stays off the screen
        if check is None or policy is None or (check.verdict == "allow" and hooked != "ask"):  # no policy: no check
            return diff, None
        if hooked == "allow":  # a PreToolUse hook approved it: not asked
            emit(PermissionDecision(use["id"], name, "allow", "hook", "a PreToolUse hook allowed it"))
            return diff, None
        async with self._asking:
            if self.stopping:
                return diff, ToolResult(STOPPED_BY_USER, True)
            emit(PermissionAsk(use["id"], name, check.reason, list(check.suggestions)))
            request = PermissionRequest(use["id"], name, input, check.reason, check.suggestions, diff,
                                        policy.mode, check.outside, check.sandbox)
            if self.approve is None:
                answer = Approval("deny", "it needs approval and nobody is here to give it", by="policy")
            else:
                if self.hooks is not None:
                    self.hooks.notify(f"scout-tui needs your permission to use {name}", "permission_prompt")
                answer = await self.approve(request)
            if answer.action == "allow_session" and check.sandbox == "none":
                policy.unsandboxed = True
            elif answer.action == "allow_session":
                policy.allow_for_session(check.suggestions)
            elif answer.action == "allow_outside" or answer.action == "allow" and check.sandbox == "outside":
                ctx.sandbox = None  # this one call, as the person said
            elif answer.action == "stop":
                self.stopping = True
            emit(PermissionDecision(use["id"], name, answer.action, answer.by, answer.reason,
                                    list(check.suggestions) if answer.action == "allow_session" else []))
        if answer.action in ("allow", "allow_session", "allow_outside"):
            return diff, None
        return diff, ToolResult(answer.model_text(), True)


def result_block(tool_use_id: str, result: ToolResult) -> dict:
    """The ``tool_result`` block that answers call ``tool_use_id`` with ``result``."""
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": result.content, "is_error": result.is_error}
