"""An MCP server over stdio (JSON-RPC lines, no SDK) whose tool list changes mid-session and which
then crashes: ``python changing_server.py``.

It offers ``grow`` and ``crash``. A call to ``grow`` adds the tool ``added``: the server sends
``notifications/tools/list_changed`` (spec 2025-06-18, "Tools", "List Changed Notification"),
then the call's answer, and takes its time (``RELIST_DELAY`` s) over the ``tools/list`` the client
sends for the change, as a server that builds its list slowly would: a client that sends its next
request without waiting for that list offers the old one. A call to ``crash`` exits with status 1
without answering (a server that crashed).

Each request received is written to stderr (``got METHOD``).
"""

from __future__ import annotations

import json
import sys
import time

RELIST_DELAY = 1.0

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


changed = False
for request in requests():
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "changing", "version": "1"}}})
    elif method == "tools/list":
        if changed:
            time.sleep(RELIST_DELAY)
        send(list_answer(request))
    elif method == "tools/call" and params.get("name") == "grow":
        if ADDED not in TOOLS:
            TOOLS.append(ADDED)
        changed = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "grown"}]}})
    elif method == "tools/call" and params.get("name") == "crash":
        print("crashing now", file=sys.stderr, flush=True)
        sys.exit(1)
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "added ran"}]}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no {method}"}})
