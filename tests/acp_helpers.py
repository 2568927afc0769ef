"""Driving ``scout-tui acp`` as an editor would: the ``agent-client-protocol`` package's client side
over the stdio of a ``python -m scout_tui acp`` subprocess, with a client that records every update,
answers permission requests as told, and keeps the JSON-RPC lines it saw (``transcript``)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamEvent
from acp.schema import (AllowedOutcome, ClientCapabilities, DeniedOutcome, Implementation, RequestPermissionResponse,
                        TextContentBlock)


class RecordingClient:
    """The editor's side: ``updates`` as ``(session_id, update)``; ``asked`` the permission
    requests; each answered with option ``answer`` (None: the request is cancelled)."""

    def __init__(self, answer: str | None = "allow_once") -> None:
        self.answer = answer
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[dict] = []

    async def request_permission(self, options: list, session_id: str, tool_call: Any, **kwargs: Any
                                 ) -> RequestPermissionResponse:
        self.asked.append({"session": session_id, "tool_call": tool_call, "options": options})
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def of(self, session_id: str) -> list[Any]:
        """The updates received for ``session_id``, in order."""
        return [update for sid, update in self.updates if sid == session_id]


@asynccontextmanager
async def acp_process(repo: Path, env: dict[str, str], client: RecordingClient, *args: str,
                      stderr: Path | None = None, python: str = sys.executable
                      ) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process, list[StreamEvent]]]:
    """``python -m scout_tui acp ARGS`` in ``repo`` with ``env``, initialized (``python``: this
    test's interpreter unless given); yields the client connection, the process and the
    transcript (every JSON-RPC message, both ways, as seen by the client). The agent's stderr
    goes to the file ``stderr`` (default: the repo's parent)."""
    transcript: list[StreamEvent] = []
    log = (stderr or repo.parent / "acp-stderr.txt").open("ab")
    try:
        async with spawn_agent_process(client, python, "-m", "scout_tui", "acp", *args, env=env, cwd=repo,
                                       transport_kwargs={"stderr": log.fileno()}, observers=[transcript.append],
                                       use_unstable_protocol=True) as (conn, proc):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
                                  client_info=Implementation(name="scout-tests", version="0"))
            yield conn, proc, transcript
    finally:
        log.close()


def text(words: str) -> list[TextContentBlock]:
    """A prompt of one text block."""
    return [TextContentBlock(type="text", text=words)]


def fold(updates: list[Any]) -> list[tuple[str, Any]]:
    """What a client ends up showing from ``updates``: consecutive chunks of one kind joined
    (``("agent_message_chunk", text)``…), and each tool call as its fields once every update of
    it has been applied (``("tool_call", {...})``, by the wire's field names)."""
    shown: list[tuple[str, Any]] = []
    calls: dict[str, dict] = {}
    for update in updates:
        kind = update.session_update
        if kind.endswith("_chunk"):
            if shown and shown[-1][0] == kind:
                shown[-1] = (kind, shown[-1][1] + update.content.text)
            else:
                shown.append((kind, update.content.text))
        elif kind in ("tool_call", "tool_call_update"):
            fields = update.model_dump(mode="json", by_alias=True, exclude_none=True)
            fields.pop("sessionUpdate")
            if fields["toolCallId"] not in calls:
                calls[fields["toolCallId"]] = {}
                shown.append(("tool_call", fields["toolCallId"]))
            calls[fields["toolCallId"]].update(fields)
    return [(kind, calls[value] if kind == "tool_call" else value) for kind, value in shown]


def transcript_lines(transcript: list[StreamEvent]) -> list[str]:
    """The JSON-RPC messages as the wire carries them, one per line, marked ``->`` (client to
    agent) or ``<-`` (agent to client)."""
    return [f"{'->' if event.direction == 'outgoing' else '<-'} {json.dumps(event.message)}" for event in transcript]
