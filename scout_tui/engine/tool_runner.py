"""The tool-calling half of ``agent.Agent``, a mixin: one reply's tool calls run (read-only ones at
once), each checked against the permission policy, stoppable from the pane, its output redacted and cut.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import AsyncIterator, Callable

from scout_tui.backends.failures import UNPARSED_ARGUMENTS
from scout_tui.core.bus import Event, PermissionAsk, PermissionDecision, ToolEnd, ToolOutput, ToolStart
from scout_tui.tools.base import ToolContext, ToolError, ToolResult, may_change_files
from scout_tui.tools.files import FILE_STAMPS
from scout_tui.tools.output import MAX_OUTPUT_CHARS, cut_to_fit, save_output
from scout_tui.core.redaction import StreamRedactor, redact
from scout_tui.tools.approvals import Approval, PermissionRequest
from scout_tui.tools.permissions import Sandboxing
from scout_tui.tools.sandbox import active

STOPPED_BY_USER = "Not run: the user stopped the turn."
STOP_GRACE = 3.0
"""Seconds a tool stopped from the tool pane gets to return what it has before it is cancelled."""
CUT_BY_MAX_TOKENS = (
    "Not run: this tool call was cut off by the max_tokens limit, so its arguments may be "
    "incomplete. Send it again, smaller if needed."
)


class ToolRunner:
    """The tool-calling half of ``Agent`` (see the module docstring). The state it reads (tools,
    cwd, secrets, policy, ``clock``, the calls running) is the agent's; no Textual, no database."""

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

    async def _run_tools(self, uses: list[dict], *, cut_last: bool) -> AsyncIterator[Event]:
        """Run the calls of one assistant message; yield their events; append the results.

        Consecutive read-only calls run at once; a call that may change things runs alone, so
        an edit never races a read of the same file. Results keep call order. Once the person
        stops the turn at an approval prompt, the calls not yet run get a "not run" result.
        """
        runnable = uses[:-1] if cut_last else uses
        if cut_last:
            self._results[uses[-1]["id"]] = ToolResult(CUT_BY_MAX_TOKENS, True)
        for batch in self._batches(runnable):
            if self._stopping:
                for use in batch:
                    self._results[use["id"]] = ToolResult(STOPPED_BY_USER, True)
                    yield ToolStart(use["id"], use["name"], use.get("input"))
                    yield ToolEnd(use["id"], use["name"], STOPPED_BY_USER, True, None)
                continue
            if not batch[0]["_ro"] and (notice := await self.snapshot_before_change()):  # it may change files
                yield notice
            async for event in self._run_batch(batch):
                yield event
        content = [result_block(u["id"], self._results[u["id"]]) for u in uses]
        if not self._stopping:  # prompts sent meanwhile go after the results (Agent.steer)
            content += [block for steered in self.steering for block in steered]
            self.steering.clear()
        self._open_calls = []
        yield self._add_user({"role": "user", "content": content})

    def _batches(self, uses: list[dict]) -> list[list[dict]]:
        batches: list[list[dict]] = []
        for use in uses:
            read_only = not may_change_files(self.tools.tools.get(use["name"]))
            if read_only and batches and batches[-1][-1].get("_ro"):
                batches[-1].append({**use, "_ro": True})
            else:
                batches.append([{**use, "_ro": read_only}])
        return batches

    async def _run_batch(self, batch: list[dict]) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def one(use: dict) -> None:
            start = self._started[use["id"]] = self.clock()
            live = StreamRedactor(tuple(self.secrets))
            diff, refused = None, None

            def show(text: str) -> None:
                if text:
                    queue.put_nowait(ToolOutput(use["id"], text))

            try:
                ctx = ToolContext(
                    self.cwd,
                    on_output=lambda text: show(live.feed(text)),
                    env=self.tool_env,
                    output_path=self._output_path(use["id"]),
                    secrets=tuple(self.secrets),
                    sandbox=self.sandbox,
                )
                FILE_STAMPS.set(self._file_stamps)  # this task's own context: the call's tools see it
                diff, refused = await self._permit(use, ctx, queue.put_nowait)
                if refused is not None:
                    result = refused
                else:
                    start = self._started[use["id"]] = self.clock()  # not counting the approval
                    result = await self._call(use, ctx)
                show(live.flush())
            except Exception as e:  # whatever fails, the call ends with a result the model reads
                result = ToolResult(f"{use['name']} failed: {type(e).__name__}: {e}", True)
            result = ToolResult(self.redact(str(result.content)), result.is_error, result.output_path,
                                self.redact(result.notice) if result.notice else None)
            self._results[use["id"]] = result
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
                return ToolResult(f"Stopped by the user after {self.clock() - self._started[use['id']]:.1f} s.", True)
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
        tool = self.tools.tools.get(name)
        if tool is None or not isinstance(input, dict):
            return None, None  # the registry answers with the error; nothing runs
        if set(input) == {UNPARSED_ARGUMENTS}:
            return None, ToolResult(f"Tool call {name!r} had arguments that are not a JSON object: "
                                    f"{str(input[UNPARSED_ARGUMENTS])[:200]!r}; send them again as a JSON object.", True)
        try:
            sandboxing = await self._sandboxing() if name == "bash" else "off"
            check = (self.permissions.check(name, input, self.cwd, read_only=tool.read_only, sandbox=sandboxing)
                     if self.permissions else None)
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
        if check is None or check.verdict == "allow":
            return diff, None
        async with self._asking:
            if self._stopping:
                return diff, ToolResult(STOPPED_BY_USER, True)
            emit(PermissionAsk(use["id"], name, check.reason, list(check.suggestions)))
            request = PermissionRequest(use["id"], name, input, check.reason, check.suggestions, diff,
                                        self.permissions.mode, check.outside, check.sandbox)
            if self.approve is None:
                answer = Approval("deny", "it needs approval and nobody is here to give it", by="policy")
            else:
                answer = await self.approve(request)
            if answer.action == "allow_session" and check.sandbox == "none":
                self.permissions.unsandboxed = True
            elif answer.action == "allow_session":
                self.permissions.allow_for_session(check.suggestions)
            elif answer.action == "allow_outside" or answer.action == "allow" and check.sandbox == "outside":
                ctx.sandbox = None  # this one call, as the person said
            elif answer.action == "stop":
                self._stopping = True
            emit(PermissionDecision(use["id"], name, answer.action, answer.by, answer.reason,
                                    list(check.suggestions) if answer.action == "allow_session" else []))
        if answer.action in ("allow", "allow_session", "allow_outside"):
            return diff, None
        return diff, ToolResult(answer.model_text(), True)


def result_block(tool_use_id: str, result: ToolResult) -> dict:
    """The ``tool_result`` block that answers call ``tool_use_id`` with ``result``."""
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": result.content, "is_error": result.is_error}
