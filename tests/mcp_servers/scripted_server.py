"""An MCP server over stdio written by hand (JSON-RPC lines, no SDK), for what a real server may do
that the SDK's own server will not: ``python scripted_server.py MODE``.

- ``hang``: reads requests and never answers (stuck at ``initialize``);
- ``garbage``: prints a line that is not JSON-RPC on stdout, then hangs as ``hang`` does;
- ``tasks``: answers ``initialize`` (with the ``tasks`` capability of spec 2025-11-25) and lists
  two tools: ``research``, whose ``execution.taskSupport`` is ``"required"``, and ``echo``; a call
  to ``research`` without a ``task`` is refused with -32601 as server-everything refuses one;
  ``tasks GATE``: the same, but ``initialize`` is answered only once the file GATE exists (a
  server that is ready later than the client waits for it).

Each request received is written to stderr (``got METHOD``), for the tests to read.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "hang"
GATE = sys.argv[2] if len(sys.argv) > 2 else None
TOOLS = [
    {"name": "research", "description": "A long research task (needs task augmentation).",
     "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}},
     "execution": {"taskSupport": "required"}},
    {"name": "echo", "description": "Says the message back.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict) -> None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        while GATE and not os.path.exists(GATE):
            time.sleep(0.02)
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "scripted", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": TOOLS}})
    elif method == "tools/call" and params.get("name") == "research" and "task" not in params:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {
            "code": -32601, "message": "Tool 'research' requires task augmentation"}})
    elif method == "tools/call":
        text = (params.get("arguments") or {}).get("message", "")
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": text}]}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}})


if MODE == "garbage":
    print("Starting notes server v1.2 (debug build)", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    print(f"got {request.get('method')}", file=sys.stderr, flush=True)
    if MODE == "tasks":
        answer(request)
