"""An MCP server over stdio (JSON-RPC lines, no SDK) whose tool list changes mid-session and which
then crashes: ``python changing_server.py``.

It offers ``grow`` and ``crash``. A call to ``grow`` adds the tool ``added``: the server sends
``notifications/tools/list_changed`` (spec 2025-06-18, "Tools", "List Changed Notification"),
answers the ``tools/list`` the client sends for it, and only then answers the call, so the client
knows the new list before the call's result. A call to ``crash`` exits with status 1 without
answering (a server that crashed).

Each request received is written to stderr (``got METHOD``).
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "grow", "description": "Adds the tool 'added'.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exits without answering.", "inputSchema": {"type": "object", "properties": {}}},
]
ADDED = {"name": "added", "description": "Added by 'grow'.", "inputSchema": {"type": "object", "properties": {}}}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def requests():
    for line in sys.stdin:
        request = json.loads(line)
        print(f"got {request.get('method')}", file=sys.stderr, flush=True)
        yield request


def list_answer(request: dict) -> dict:
    return {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": TOOLS}}


incoming = requests()
for request in incoming:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "changing", "version": "1"}}})
    elif method == "tools/list":
        send(list_answer(request))
    elif method == "tools/call" and params.get("name") == "grow":
        if ADDED not in TOOLS:
            TOOLS.append(ADDED)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "grown"}]}})
    elif method == "tools/call" and params.get("name") == "crash":
        print("crashing now", file=sys.stderr, flush=True)
        sys.exit(1)
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "added ran"}]}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}})
