"""Drives the real holdline-mcp bridge with the official MCP Python SDK (PyPI `mcp`).

A client no one on this project wrote: initialize -> tools/list -> init_conversation ->
wait_for_user_input (with a progress callback) -> the person's reply posted to the hub ->
the reply, with its image, comes back as the tool result.

Usage: mcp_python_client.py BRIDGE_BINARY
Env:   HOLDLINE_HUB (the hub URL), HOLDLINE_SECRET (its secret), HOLDLINE_HOME (temp home).
"""

import asyncio
import json
import os
import sys
import time
import urllib.request

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
TOOLS = {"init_conversation", "select_conversation", "wait_for_user_input", "merge_conversation"}


def hub_call(method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        os.environ["HOLDLINE_HUB"] + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": "Bearer " + os.environ["HOLDLINE_SECRET"],
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


async def wait_for_status(token: str, status: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        s = await asyncio.to_thread(hub_call, "GET", f"/api/sessions/{token}?limit=1")
        if s["status"] == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"session {token} never became {status}")


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(bridge: str) -> None:
    env = {
        k: os.environ[k]
        for k in ("HOLDLINE_HUB", "HOLDLINE_SECRET", "HOLDLINE_HOME", "PATH", "HOME")
        if k in os.environ
    }
    env.update({"HOLDLINE_HOST_ID": "python-sdk-host", "HOLDLINE_NO_AUTOSTART": "1",
                "HOLDLINE_POLL_MS": "500"})
    params = StdioServerParameters(command=bridge, args=[], env=env)
    async with stdio_client(params) as (read, write):
        # A name of its own: the SDK's default name `mcp` is what Mistral Vibe sends, and the
        # bridge treats `mcp` as Vibe (a 50 s limit, images as files in the workspace).
        info = types.Implementation(name="holdline-python-sdk-check", version="1.0")
        async with ClientSession(read, write, client_info=info) as session:
            init = await session.initialize()
            assert init.server_info.name == "holdline-mcp", init.server_info
            tools = await session.list_tools()
            names = {t.name for t in tools.tools}
            assert names == TOOLS, names

            r = await session.call_tool(
                "init_conversation", {"cursorTitle": "Python SDK chat", "workspace": "/py/project"}
            )
            assert not r.is_error, text_of(r)
            token = r.structured_content["token"]
            assert token.startswith("ct_"), token
            assert "wait_for_user_input" in text_of(r)

            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            wait = asyncio.create_task(
                session.call_tool(
                    "wait_for_user_input",
                    {"token": token, "message": "Python step done. Next?", "completionPct": 50},
                    progress_callback=on_progress,
                )
            )
            await wait_for_status(token, "waiting")
            await asyncio.sleep(1.2)  # a few 500 ms renewals -> progress notifications
            sent = await asyncio.to_thread(
                hub_call,
                "POST",
                "/api/reply",
                {"token": token, "text": "Carry on, Python",
                 "images": [{"mimeType": "image/png", "data": PNG_1PX}]},
            )
            r = await asyncio.wait_for(wait, 30)
            assert not r.is_error, text_of(r)
            assert text_of(r).startswith("Carry on, Python"), text_of(r)
            assert f"wait_for_user_input with token {token}" in text_of(r)
            images = [c for c in r.content if getattr(c, "type", "") == "image"]
            assert len(images) == 1 and images[0].data == PNG_1PX, r.content
            assert r.structured_content["reply"]["id"] == sent["replyId"]
            assert progress and progress == sorted(set(progress)), progress
            await wait_for_status(token, "holding")

            # A token of another chat: one clear tool error, not a protocol error.
            r = await session.call_tool(
                "select_conversation", {"token": token, "cursorTitle": "Someone else"}
            )
            assert r.is_error and "BINDING_REJECTED" in text_of(r), text_of(r)
    print(f"PASS mcp_python_client: official MCP Python SDK drove holdline-mcp "
          f"(init -> wait -> reply with image -> result; {len(progress)} progress notifications)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
