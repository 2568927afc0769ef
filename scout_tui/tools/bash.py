"""The ``bash`` tool: run a command in its own process group (in the sandbox, when one is in
force), stream its output, kill it whole.

Timeout and cancellation (Esc) both end every process the command started; output kept for the
model is capped to its head and tail, and so is the memory held while reading.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from scout_tui.tools.base import Tool, ToolContext, ToolError, ToolResult, boolean, number, object_schema, string
from scout_tui.tools.output import MAX_OUTPUT_CHARS, FullOutput, HeadTail
from scout_tui.tools.sandbox import SandboxSettings, wrap, wraps
from scout_tui.tools.sandbox_after import blocked_note, missing_protected, new_nested_repositories, quarantine

DEFAULT_TIMEOUT = 120.0  # seconds
MAX_TIMEOUT = 600.0  # seconds
KILL_GRACE = 0.5  # seconds between SIGTERM and SIGKILL
DRAIN_SECONDS = 0.5  # how long to read on after the shell exits, if something still holds the pipe
READ_CHUNK = 65_536  # bytes


# ----------------------------------------------------------------------------- process groups


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone, or (pgid reused) not ours to signal


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs; zombies (dead, unreaped) don't count.

    On Linux this reads ``/proc/<pid>/stat`` (fields after the ``)`` closing the command
    name: state, ppid, pgrp; see proc(5)), because orphans may stay zombies when PID 1 does not
    reap them; elsewhere it asks ``killpg(pgid, 0)``.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not sys.platform.startswith("linux"):
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue  # exited while we looked
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def _until_gone(pgid: int, seconds: float) -> None:
    """Return once group ``pgid`` has no running process, or after ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # No event tells us when non-child members of the group die, so poll briefly.
    while group_alive(pgid) and loop.time() < deadline:
        await asyncio.sleep(0.01)


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group led by ``proc``, then SIGKILL whatever is left after ``KILL_GRACE`` s.

    Returns once the group is gone (or, for a process stuck in the kernel, a further grace
    later) and the shell is reaped.
    """
    pgid = proc.pid  # start_new_session made the shell the leader of a new group
    _signal_group(pgid, signal.SIGTERM)
    try:
        await _until_gone(pgid, KILL_GRACE)
    finally:
        # Also reached when cancelled again mid-grace: escalate rather than leave survivors.
        if group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
    await _until_gone(pgid, KILL_GRACE)  # SIGKILL cannot be refused, but dying takes a moment
    await proc.wait()


# ----------------------------------------------------------------------------- running


async def _read_until_eof(reader: asyncio.StreamReader, take: Callable[[bytes], None]) -> None:
    while chunk := await reader.read(READ_CHUNK):
        take(chunk)


class _Stopped(Exception):
    """The person stopped this call (``ToolContext.stop``)."""


async def _stream(reader: asyncio.StreamReader, proc: asyncio.subprocess.Process, take: Callable[[bytes], None],
                  stop: asyncio.Event) -> bool:
    """Feed output to ``take`` until EOF and the shell's exit.

    Returns False when the shell exited but something it started in the background still held
    the output pipe ``DRAIN_SECONDS`` later (so we stopped waiting for EOF). Raises
    ``_Stopped`` as soon as ``stop`` is set.
    """
    reading = asyncio.ensure_future(_read_until_eof(reader, take))
    exited = asyncio.ensure_future(proc.wait())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({reading, exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done() and not stopping.done():
            await asyncio.wait({reading, stopping}, timeout=DRAIN_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        if stopping.done():
            raise _Stopped
        if not reading.done():
            return False
        reading.result()  # an error raised by on_output surfaces here
        await exited
        return True
    finally:
        reading.cancel()
        exited.cancel()
        stopping.cancel()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal has no name
        return str(number)


async def run_bash(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run ``input["command"]`` with ``bash -c`` in ``ctx.cwd``; stdout and stderr merged.

    Each decoded output fragment goes to ``ctx.on_output`` as it arrives. The result text is the
    output (capped to ``MAX_OUTPUT_CHARS``: head and tail kept), then, on failure, a status line:
    ``[exit code N]``, ``[killed by signal NAME]`` or ``[timed out after N s; ...killed]``; a
    zero exit adds no line, and no output at all reads ``(no output)``. Output cut to fit is
    saved whole to ``ctx.output_path``, named in the result and in ``ToolResult.output_path``.
    ``ctx.stop`` kills the process group and returns what was printed, with ``[stopped by the
    user after N s; ...]``. With ``ctx.sandbox`` set (mode not ``off``) and bwrap working, the
    command runs in the sandbox (``tools.sandbox.wrap``; bwrap leads the process group), and
    output that shows the sandbox refused a write ends with a line saying so (``blocked_note``),
    even when the exit code is 0 (a compound command whose last part succeeded). Any failure,
    such a refused write included, is an ``is_error`` result. Cancellation kills the process group and re-raises ``CancelledError``.
    Raises ``ToolError`` for bad arguments or when bash cannot start.
    """
    command = input.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("argument 'command' must be a non-empty string")
    timeout = input.get("timeout", DEFAULT_TIMEOUT)
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise ToolError(f"argument 'timeout' must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, got {timeout!r:.50}")

    argv = ["bash", "-c", command]
    sandbox: SandboxSettings | None = None
    watched: list[Path] = []
    began = time.time()  # wall clock, as file times are: what this command made is newer
    if ctx.sandbox is not None and await asyncio.to_thread(wraps, ctx.sandbox):  # bwrap runs once, then cached
        argv = wrap(argv, ctx.cwd, ctx.sandbox)
        if ctx.sandbox.mode != "off":  # off: a network namespace alone, nothing to watch
            sandbox = ctx.sandbox
            watched = missing_protected(ctx.cwd, sandbox)

    # Our own pipe, not PIPE: we can stop reading and close it even while a background job
    # of the command still holds the write end.
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=ctx.cwd, stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=write_fd,
            start_new_session=True, env=ctx.env,
        )  # fmt: skip
    except OSError as e:
        os.close(read_fd)
        raise ToolError(f"could not start {'bash' if argv[0] == 'bash' else 'bwrap'} in {ctx.cwd}: {e}") from None
    finally:
        os.close(write_fd)

    captured = HeadTail(MAX_OUTPUT_CHARS)
    full = FullOutput(ctx.output_path, MAX_OUTPUT_CHARS, ctx.secrets)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def take(data: bytes, final: bool = False) -> None:
        text = decoder.decode(data, final)
        if text:
            captured.add(text)
            full.add(text)
            ctx.on_output(text)

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport: asyncio.BaseTransport | None = None
    timed_out = stopped = False
    finished = True
    started = loop.time()
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            async with asyncio.timeout(timeout):
                finished = await _stream(reader, proc, take, ctx.stop)
        except TimeoutError:
            timed_out = True
            await kill_group(proc)
        except _Stopped:
            stopped = True
            await kill_group(proc)
        take(b"", final=True)
    except BaseException:
        # Cancelled (Esc, SIGHUP), or on_output failed: no process of this command may outlive
        # it, nor what it planted for later (quarantine: quick moves, done before giving up).
        await kill_group(proc)
        await full.close()
        quarantine(_planted(ctx.cwd, sandbox, watched, began), None, ctx.cwd)
        raise
    finally:
        if transport is not None:
            transport.close()
        else:
            pipe.close()

    out = captured.text()
    if "\x00" in out:  # binary output: NULs mean nothing to the model and break some servers
        nuls = out.count("\x00")
        out = out.replace("\x00", "") + f"\n[{nuls:,} NUL bytes removed from the output]"
    saved = await full.close()
    if saved:
        out += f"\n[the full output ({full.total:,} characters) is saved in {saved}]"
    elif full.problem:
        out += f"\n[{full.problem}]"
    if stopped:
        status = (f"[stopped by the user after {loop.time() - started:.1f} s; the command and its child "
                  "processes were killed]")
    elif timed_out:
        status = f"[timed out after {timeout:g} s; the command and its child processes were killed]"
    elif proc.returncode is not None and proc.returncode < 0:
        status = f"[killed by signal {_signal_name(-proc.returncode)}]"
    elif proc.returncode:
        status = f"[exit code {proc.returncode}]"
    else:
        status = ""
    blocked = False
    if sandbox is not None and proc.returncode is not None and not (stopped or timed_out):
        # Also at exit 0: in `touch /etc/x; echo done` only the last part sets the status.
        if note := blocked_note(out, ctx.cwd, sandbox, succeeded=proc.returncode == 0):
            status = f"{status}\n{note}" if status else note
            blocked = True
    created = await asyncio.to_thread(_planted, ctx.cwd, sandbox, watched, began)
    moved = await asyncio.to_thread(quarantine, created, None, ctx.cwd)
    if moved:
        status = f"{status}\n{moved.for_model()}" if status else moved.for_model()
    if not finished:
        note = "[the shell exited, but background processes still hold its output open; they were left running]"
        status = f"{status}\n{note}" if status else note
    if not status:
        return ToolResult(out or "(no output)", output_path=saved)
    if out and not out.endswith("\n"):
        out += "\n"
    said = [f"The sandbox ({sandbox.mode}) blocked a write by this command; the model is told it may ask to run it "
            "outside the sandbox." if blocked and sandbox is not None else "", moved.for_person() if moved else ""]
    return ToolResult(out + status, is_error=timed_out or stopped or blocked or bool(proc.returncode), output_path=saved,
                      notice="\n\n".join(line for line in said if line) or None)


def _planted(cwd: Path, sandbox: SandboxSettings | None, watched: list[Path], began: float) -> list[Path]:
    """What a sandboxed command made that would run outside the sandbox later: the ``watched``
    paths (``missing_protected``) that now exist, and repositories it nested in the index."""
    created = [path for path in watched if os.path.lexists(path)]
    if sandbox is not None and sandbox.mode == "workspace-write":
        created += new_nested_repositories(cwd, began)
    return created


BASH = Tool(
    name="bash",
    description=(
        "Run a shell command with bash -c in the working directory and return its output "
        "(stdout and stderr together). stdin is closed, so interactive commands fail; pass flags "
        f"like --yes instead. Default timeout {DEFAULT_TIMEOUT:g} s (at most {MAX_TIMEOUT:g} s); "
        "on timeout the command and every process it started are killed. A non-zero exit is "
        "reported as an error with its exit code. Output over "
        f"{MAX_OUTPUT_CHARS} characters keeps only its start and end, so filter long output "
        "(grep, head, tail). For background servers, redirect output: `cmd > log 2>&1 &`. "
        "Prefer the read, grep, glob, edit and write tools over cat, grep, find, sed and echo."
    ),
    input_schema=object_schema(
        command=string("The command to run, as you would type it in bash."),
        timeout=number(
            f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
            exclusive_minimum=0,
            maximum=MAX_TIMEOUT,
        ),
        outside_sandbox=boolean(
            "Run this command outside the sandbox. Only after the sandbox blocked it and it must write outside "
            "the workspace; the user is always asked first."
        ),
        required=["command"],
    ),
    run=run_bash,
)
