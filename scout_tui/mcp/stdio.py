"""The stdio transport of an MCP server scout-tui starts: JSON-RPC lines over the process's stdin
and stdout, as the SDK's ``stdio_client`` speaks them, but with the process in scout-tui's hands.

Why not the SDK's: it logs a traceback for each line that is not JSON-RPC (the person sees
pages of pydantic errors) and passes the error on where ``ClientSession`` drops it, so a server
that prints a banner waits out its whole start-up timeout; and its shutdown always waits 2 s
for the process after closing its stdin, then 2 s after SIGTERM, so ``-p`` lingered ~4 s after
a call that timed out. Here a bad line is handed to ``on_bad_line`` at once, and the wait at
shutdown is the caller's (none for a server still busy with a call nobody will read).

Shutdown, as the spec's stdio transport asks
(https://modelcontextprotocol.io/specification/2025-06-18/basic/lifecycle#stdio): close the
server's stdin, wait for it to exit, then SIGTERM, then SIGKILL, to its whole process group
(``npx`` starts ``node`` under it).
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

TERM_WAIT = 1.0
"""Seconds between SIGTERM and SIGKILL."""


@asynccontextmanager
async def stdio_transport(command: str, args: list[str], *, env: Mapping[str, str], cwd: Path, errlog: IO[bytes],
                          on_bad_line: Callable[[str], None], grace: Callable[[], float]) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command args`` (in a session of its own: its process group can be ended whole)
    and yield ``(read, write)``, the memory streams ``mcp.ClientSession`` takes: ``read``
    yields ``SessionMessage``s, ``write`` takes them. Each stdout line that is not a JSON-RPC
    message goes to ``on_bad_line(line)`` (called on this loop; keep it quick) and is dropped.
    On exit the stdin is closed, then the process gets ``grace()`` seconds to end before
    SIGTERM, and ``TERM_WAIT`` more before SIGKILL.

    Raises:
        OSError: the command cannot be started (FileNotFoundError: no such command).
    """
    import anyio
    from mcp import types
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process([command, *args], env=dict(env), cwd=cwd, stderr=errlog,
                                       start_new_session=True)
    to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    stdout, stdin = process.stdout, process.stdin
    assert stdout is not None and stdin is not None  # open_process pipes both unless told otherwise

    async def reader() -> None:
        buffer = b""
        async with to_session:
            try:
                async for chunk in stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for raw in lines:
                        line = raw.decode("utf-8", "replace").strip()
                        if not line:
                            continue
                        try:
                            message = types.JSONRPCMessage.model_validate_json(line)
                        except ValueError:  # pydantic's ValidationError: not JSON, or not JSON-RPC
                            on_bad_line(line)
                            continue
                        await to_session.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the session is closing

    async def writer() -> None:
        async with from_session:
            try:
                async for message in from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await stdin.send((text + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the server closed its stdin: the reader sees its stdout end

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read, write
        finally:
            with anyio.CancelScope(shield=True):
                await _end(process, grace())
                tasks.cancel_scope.cancel()
                for stream in (read, write, to_session, from_session):
                    await stream.aclose()


async def _end(process: Any, grace: float) -> None:
    """Close the process's stdin, wait ``grace`` seconds for it to exit, then end its group."""
    import anyio

    try:
        await process.stdin.aclose()
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # it is gone already
    if grace > 0:
        with anyio.move_on_after(grace):
            await process.wait()
    for signum, wait in ((signal.SIGTERM, TERM_WAIT), (signal.SIGKILL, 5.0)):
        if process.returncode is not None:
            break
        try:
            os.killpg(process.pid, signum)  # its own session: group id = its pid
        except ProcessLookupError:
            break
        except PermissionError:  # it left its group (setsid): end the process itself
            process.send_signal(signum)
        with anyio.move_on_after(wait):
            await process.wait()
    # What is left of the group (a child that ignored SIGTERM) goes with the SIGKILL.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
