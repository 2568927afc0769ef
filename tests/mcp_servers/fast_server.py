"""A small MCP server written with the SDK's own server API (FastMCP), for the MCP client tests.

``python fast_server.py`` serves over stdio; ``python fast_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT at ``/mcp``, ``sse PORT`` the older HTTP+SSE transport at ``/sse``. ``MCP_TEST_CRASH_AFTER_START=1`` makes the
``crash`` tool end the process; ``MCP_TEST_FAIL_AT_START`` makes it exit before answering,
printing that text (and its arguments, if any) on stderr.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

if os.environ.get("MCP_TEST_FAIL_AT_START"):
    print(os.environ["MCP_TEST_FAIL_AT_START"], file=sys.stderr, flush=True)
    if sys.argv[1:]:  # as a server that echoes its command line when it cannot start
        print("started as:", *sys.argv[1:], file=sys.stderr, flush=True)
    sys.exit(3)

from mcp.server.fastmcp import Context, FastMCP  # noqa: E402
from mcp.server.fastmcp.utilities.types import Image  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

server = FastMCP("notes", host="127.0.0.1")
NOTES: list[str] = []
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@server.tool(description="Add a note; returns how many notes there are.")
def add_note(text: str) -> str:
    NOTES.append(text)
    return f"noted ({len(NOTES)}): {text}"


@server.tool(description="Add two numbers.", annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> dict:
    return {"sum": a + b}


@server.tool(description="A one-pixel picture.", annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> Image:
    return Image(data=PNG, format="png")


@server.tool(description="Always fails.")
def fail(why: str) -> str:
    raise ValueError(f"failing as asked: {why}")


@server.tool(description="Waits for ever (until cancelled).")
async def slow() -> str:
    print(f"slow: started (pid {os.getpid()})", file=sys.stderr, flush=True)
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        print("slow: cancelled", file=sys.stderr, flush=True)
        raise
    return "never"


@server.tool(description="Counts to three, telling the client its progress at each step.")
async def count(ctx: Context) -> str:
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step} of 3")
    return "counted to 3"


@server.tool(description="Says it is halfway, then waits for ever (until cancelled).")
async def halfway(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "halfway there")
    await asyncio.sleep(3600)
    return "never"


@server.resource("notes://readme", name="readme", description="How the notes work.", mime_type="text/plain")
def readme() -> str:
    return "Notes are kept in memory until the server ends."


@server.resource("notes://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return PNG


@server.tool(description="Ends the server process.")
def crash() -> str:
    print("crash: the server is going down", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(description="Says the token of the Authorization header the call came with (over HTTP).")
def whoami(ctx: Context) -> str:
    request = ctx.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""
    return f"you are the holder of {header.split()[-1] if header else 'no token'}"


@server.tool(description="Adds the tool 'extra' to the list and tells the client.")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "extra here", name="extra", description="Appears once grow ran.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.prompt(description="Review a file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Please review {path}, looking for {focus}."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] in ("http", "sse"):
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http" if sys.argv[1] == "http" else "sse")
    else:
        server.run("stdio")
