"""A real MCP server (the PyPI `mcp` package's FastMCP) for the `mcp` connector's tests.

    python server.py stdio [--bad-schema]        MCP over stdin/stdout
    python server.py http PORT [--bad-schema]    streamable HTTP at http://127.0.0.1:PORT/mcp

Tools: echo(text), add(a, b), whoami(), slow(ms), progress(steps), crash(), fail(),
getenv(name), book() (asks the user which seat: a form elicitation mid-call) and garbage()
(stdio only: writes a malformed answer to its own request). The
listing is paged (PAGE_SIZE tools a page) so that clients must follow `nextCursor`. With
--bad-schema it also lists `broken`, whose inputSchema is not a valid JSON Schema.
"""

import asyncio
import json
import os
import sys

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

PAGE_SIZE = 3
BATON_KEYS = (
    "baton/principal",
    "baton/episode",
    "baton/agent",
    "baton/idempotency_key",
    "traceparent",
)

args = sys.argv[1:]
bad_schema = "--bad-schema" in args
args = [a for a in args if a != "--bad-schema"]
if not args or args[0] not in ("stdio", "http") or (args[0] == "http" and len(args) != 2):
    sys.exit("usage: server.py stdio|http PORT [--bad-schema]")
transport = args[0]
port = int(args[1]) if transport == "http" else 8000

mcp = FastMCP("baton-test", log_level="WARNING", host="127.0.0.1", port=port)


# Plain text answers (no structured output): the connector maps text contents itself.
@mcp.tool(description="Echoes its text back.", structured_output=False)
def echo(text: str) -> str:
    return text


@mcp.tool(description="Adds two numbers.")
def add(a: float, b: float) -> dict[str, float]:
    return {"sum": a + b}


@mcp.tool(description="The Baton metadata this call carried.", structured_output=False)
def whoami(ctx: Context) -> str:
    meta = ctx.request_context.meta
    extra = (meta.model_extra or {}) if meta is not None else {}
    return json.dumps({key: extra.get(key) for key in BATON_KEYS})


@mcp.tool(description="Sleeps for ms milliseconds.", structured_output=False)
async def slow(ms: int) -> str:
    await asyncio.sleep(ms / 1000)
    return "slept"


@mcp.tool(description="Reports progress steps times, then answers.", structured_output=False)
async def progress(steps: int, ctx: Context) -> str:
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        await asyncio.sleep(0.01)
    return "done"


@mcp.tool(description="Exits the server process at once.", structured_output=False)
def crash() -> str:
    os._exit(3)


class Seat(BaseModel):
    seat: str = Field(description="The seat, e.g. 12A")
    window: bool = Field(default=True, description="A window seat")


BOOKINGS = {"count": 0}


@mcp.tool(description="Books a seat, asking the user which one.", structured_output=False)
async def book(ctx: Context) -> str:
    answer = await ctx.elicit(message="Which seat would you like?", schema=Seat)
    if answer.action != "accept":
        return f"not booked: {answer.action}"
    BOOKINGS["count"] += 1
    return f"booked {answer.data.seat} (window: {answer.data.window}), booking {BOOKINGS['count']}"


@mcp.tool(description="Always fails.", structured_output=False)
def fail() -> str:
    raise ValueError("internal detail that users must not see")


@mcp.tool(description="The value of an environment variable, or null.", structured_output=False)
def getenv(name: str) -> str:
    return json.dumps(os.environ.get(name))


@mcp.tool(description="Answers its own request with garbage (stdio only).", structured_output=False)
async def garbage(ctx: Context) -> str:
    bad = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"content": "not a list", "isError": 7}}
    sys.stdout.buffer.write((json.dumps(bad) + "\n").encode())
    sys.stdout.buffer.flush()
    await asyncio.sleep(0.2)
    return "too late"


BROKEN = types.Tool(
    name="broken",
    description="Its inputSchema is not a JSON Schema.",
    inputSchema={"type": "not-a-type"},
)


# The listing, paged: replaces FastMCP's single-page handler on its low-level server.
@mcp._mcp_server.list_tools()
async def list_tools(request: types.ListToolsRequest) -> types.ListToolsResult:
    tools = await mcp.list_tools()
    if bad_schema:
        tools.append(BROKEN)
    if request is None:
        # The low-level server refreshes its tool cache with no request: all tools at once.
        return types.ListToolsResult(tools=tools)
    cursor = request.params.cursor if request.params else None
    start = int(cursor) if cursor else 0
    end = start + PAGE_SIZE
    next_cursor = str(end) if end < len(tools) else None
    return types.ListToolsResult(tools=tools[start:end], nextCursor=next_cursor)


if __name__ == "__main__":
    mcp.run("stdio" if transport == "stdio" else "streamable-http")
