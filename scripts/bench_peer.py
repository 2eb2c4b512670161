"""Side-by-side figures for holdline-mcp and the most used peer, mcp-feedback-enhanced,
taken with one client: the official MCP Python SDK over stdio, runs alternated.

- cold start: spawn -> initialize -> tools/list answered (a warm-up of each, then RUNS each);
- idle RSS: after initialize + 2 s idle, VmRSS summed over the server process and its children;
- reply latency, the person's reply sent -> tool result at this client: for holdline the
  reply is POSTed to the hub; for the peer it is sent as its own web page sends it
  (`submit_feedback` over the page's WebSocket, found on the port the peer listens on).
  Both ways alike: the connection is open before the clock starts, and the reply is
  written from this client's event loop, so the clock holds no connection set-up;
- the client's own share of that latency (with --floor): the same clock against the smallest
  server there is (`holdline-bench floor-server`, answering the tool call when a datagram
  sent from this loop arrives), the floor under any server's figure with this client.

Usage: bench_peer.py --bridge PATH --peer PATH [--floor HOLDLINE_BENCH] [--runs 10] [--replies 200]
                    [--json FILE]
Env:   HOLDLINE_HUB, HOLDLINE_SECRET, HOLDLINE_HOME (a hub already running: the bridge's cold
       start never includes starting the hub). The peer runs headless with
       BROWSER=true MCP_WEB_HOST=127.0.0.1 MCP_WEB_PORT=0 FASTMCP_CHECK_FOR_UPDATES=off.
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(c) for c in f.read().split())
    except OSError:
        pass
    return out


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_bytes(pids: list[int]) -> int:
    total, todo, seen = 0, list(pids), set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += rss_kib(p) * 1024
        todo.extend(children(p))
    return total


def server_pids(before: set[int]) -> list[int]:
    """The processes this script started since `before`: the server under test."""
    return [p for p in children(os.getpid()) if p not in before]


def server_env(kind: str, home: str) -> dict:
    env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    env["HOME"] = home
    if kind == "holdline":
        for k in ("HOLDLINE_HUB", "HOLDLINE_SECRET", "HOLDLINE_HOME"):
            env[k] = os.environ[k]
        env.update(HOLDLINE_NO_AUTOSTART="1", HOLDLINE_HOST_ID="10.0.0.9",
                   HOLDLINE_MAX_WAIT_SEC="0", HOLDLINE_LOG="warn")
    else:
        env.update(BROWSER="true", MCP_WEB_HOST="127.0.0.1", MCP_WEB_PORT="0",
                   FASTMCP_CHECK_FOR_UPDATES="off", MCP_DEBUG="false")
    return env


async def one_run(kind: str, command: list[str], home: str, idle: float, measure_rss: bool):
    """Spawn -> initialize -> tools/list; optionally idle and read the tree's RSS."""
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env=server_env(kind, home), cwd=home)
    before = set(children(os.getpid()))
    with open(os.devnull, "w") as devnull:
        t0 = time.perf_counter()
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                took = time.perf_counter() - t0
                if not tools.tools:
                    raise RuntimeError(f"{kind} lists no tools")
                rss = None
                if measure_rss:
                    await asyncio.sleep(idle)
                    rss = tree_rss_bytes(server_pids(before))
    return took, rss, len(tools.tools)


def hub_call(method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        os.environ["HOLDLINE_HUB"] + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + os.environ["HOLDLINE_SECRET"],
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


async def reply_request(body: dict):
    """A connection to the hub and the bytes of a POST /api/reply on it, not yet sent."""
    hub = urllib.parse.urlsplit(os.environ["HOLDLINE_HUB"])
    reader, writer = await asyncio.open_connection(hub.hostname, hub.port)
    payload = json.dumps(body).encode()
    head = (f"POST /api/reply HTTP/1.1\r\nHost: {hub.netloc}\r\n"
            f"Authorization: Bearer {os.environ['HOLDLINE_SECRET']}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n")
    return reader, writer, head.encode() + payload


async def reply_answered(reader, writer) -> None:
    """Reads the hub's answer to a reply request: it must be a 200."""
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    if not answer.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the hub refused the reply: {answer[:200]!r}")


async def until_status(token: str, wanted) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        s = await asyncio.to_thread(hub_call, "GET", f"/api/sessions/{token}?limit=1")
        if wanted(s):
            return
        await asyncio.sleep(0.001)
    raise RuntimeError(f"session {token} did not reach the expected state")


async def holdline_replies(bridge: str, home: str, replies: int) -> list[float]:
    """Reply latency through this client: POST /api/reply sent -> tool result here."""
    params = StdioServerParameters(command=bridge, args=[], env=server_env("holdline", home),
                                   cwd=home)
    out = []
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                r = await session.call_tool("init_conversation",
                                            {"cursorTitle": "bench peer comparison"})
                token = r.structured_content["token"]
                for i in range(replies):
                    call = asyncio.create_task(session.call_tool(
                        "wait_for_user_input", {"token": token, "message": f"step {i} done"}))
                    await until_status(token, lambda s: s["status"] == "waiting")
                    await asyncio.sleep(0.005)  # let the bridge's long poll reach the hub
                    text = f"reply #{i}."
                    # As with the peer's WebSocket, the connection is open before the
                    # clock starts, and the request is written from this loop.
                    reader, writer, request = await reply_request({"token": token, "text": text})
                    t0 = time.perf_counter()
                    writer.write(request)
                    result = await call
                    took = time.perf_counter() - t0
                    await reply_answered(reader, writer)
                    got = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                    if text not in got:
                        raise RuntimeError(f"wait {i} ended without the reply: {got}")
                    out.append(took)
                    # The bridge acks after writing the result; let it land before the next call.
                    await until_status(token, lambda s: s["status"] == "holding"
                                       and s.get("queuedReplies", 0) == 0)
    return out


async def floor_replies(bench: str, replies: int) -> list[float]:
    """This client's own share: a datagram sent -> tool result from `holdline-bench floor-server`."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    port = udp.getsockname()[1]
    udp.close()  # the server binds it; a race with another process is harmless here
    params = StdioServerParameters(command=bench, args=["floor-server", "--port", str(port)])
    out = []
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(replies):
                call = asyncio.create_task(session.call_tool("wait", {}))
                await asyncio.sleep(0.005)  # as for holdline: the call is at the server
                text = f"reply #{i}."
                t0 = time.perf_counter()
                sender.sendto(text.encode(), ("127.0.0.1", port))
                result = await call
                took = time.perf_counter() - t0
                if text not in result.content[0].text:
                    raise RuntimeError(f"the floor server answered {result.content[0].text!r}")
                out.append(took)
    return out


def listening_ports(pids: list[int]) -> list[int]:
    """TCP ports in LISTEN state owned by these processes or their children."""
    inodes, todo, seen = set(), list(pids), set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(children(p))
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    link = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:
                        ports.append(int(cols[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


async def peer_replies(peer: str, home: str, replies: int) -> list[float]:
    """The peer's reply latency: `submit_feedback` sent on its page's WebSocket -> tool result."""
    import websockets

    params = StdioServerParameters(command=peer, args=[], env=server_env("peer", home), cwd=home)
    out = []
    before = set(children(os.getpid()))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [t.name for t in (await session.list_tools()).tools]
                tool = "interactive_feedback" if "interactive_feedback" in tools else tools[0]
                pids = server_pids(before)
                for i in range(replies):
                    call = asyncio.create_task(session.call_tool(
                        tool, {"project_directory": home, "summary": f"step {i} done",
                               "timeout": 600}))
                    ws = None
                    deadline = time.monotonic() + 30
                    while ws is None:
                        if time.monotonic() > deadline:
                            raise RuntimeError("the peer's web page never accepted a WebSocket")
                        for port in listening_ports(pids):
                            try:
                                c = await websockets.connect(f"ws://127.0.0.1:{port}/ws",
                                                             open_timeout=2)
                                # Ready once the page is told about this call's session.
                                until = time.monotonic() + 2
                                while time.monotonic() < until:
                                    m = await asyncio.wait_for(c.recv(), until - time.monotonic())
                                    if f"step {i} done" in m:
                                        ws = c
                                        break
                                if ws is not None:
                                    break
                                await c.close()
                            except Exception:
                                continue
                        if ws is None:
                            await asyncio.sleep(0.02)
                    # Let the page's initial messages arrive, as a person would read first.
                    await asyncio.sleep(0.05)
                    text = f"reply #{i}."
                    t0 = time.perf_counter()
                    await ws.send(json.dumps({"type": "submit_feedback", "feedback": text,
                                              "images": [], "settings": {}}))
                    result = await asyncio.wait_for(call, 30)
                    took = time.perf_counter() - t0
                    await ws.close()
                    got = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                    if text not in got:
                        raise RuntimeError(f"peer wait {i} ended without the reply: {got[:200]}")
                    out.append(took)
    return out


def summary(xs: list[float]) -> dict:
    xs = sorted(xs)
    if not xs:
        return {}
    p = lambda q: xs[min(len(xs) - 1, max(0, int(round(q / 100 * len(xs) + 0.5)) - 1))]
    return {"n": len(xs), "median": statistics.median(xs), "min": xs[0], "max": xs[-1],
            "p99": p(99)}


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--peer", required=True, help="the peer's command (its console script)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--replies", type=int, default=200)
    ap.add_argument("--peer-replies", type=int, default=20)
    ap.add_argument("--floor", help="holdline-bench, for the client's own share of the reply latency")
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--json")
    a = ap.parse_args()

    kinds = {"holdline": [a.bridge], "peer": [a.peer]}
    starts = {k: [] for k in kinds}
    rss = {k: [] for k in kinds}
    tools = {}
    with tempfile.TemporaryDirectory() as home:
        # Warm-up of each (page cache, Python bytecode), not counted.
        for kind, cmd in kinds.items():
            await one_run(kind, cmd, home, a.idle, False)
        for run in range(a.runs):
            # Alternate, and swap who goes first every run.
            order = ["holdline", "peer"] if run % 2 == 0 else ["peer", "holdline"]
            for kind in order:
                took, r, n = await one_run(kind, kinds[kind], home, a.idle, run < 3)
                starts[kind].append(took)
                tools[kind] = n
                if r is not None:
                    rss[kind].append(r)
                print(f"  run {run + 1} {kind}: cold start {took * 1e3:.1f} ms"
                      + (f", idle RSS {r / 2**20:.1f} MiB" if r is not None else ""),
                      file=sys.stderr)
        floor_lat = await floor_replies(a.floor, a.replies) if a.floor and a.replies else []
        lat = await holdline_replies(a.bridge, home, a.replies) if a.replies else []
        try:
            peer_lat = await peer_replies(a.peer, home, a.peer_replies) if a.peer_replies else []
        except Exception as e:  # the peer's page protocol is not ours: report, do not fail
            print(f"  peer reply latency not measured: {e!r}", file=sys.stderr)
            peer_lat = []

    res = {"runs": a.runs, "tools": tools,
           "cold_start_s": {k: summary(v) for k, v in starts.items()},
           "idle_rss_bytes": {k: (max(v) if v else None) for k, v in rss.items()},
           "idle_rss_samples": rss,
           "holdline_reply_s": summary(lat), "peer_reply_s": summary(peer_lat),
           "client_floor_reply_s": summary(floor_lat)}
    h, p = res["cold_start_s"]["holdline"], res["cold_start_s"]["peer"]
    hr, pr = res["idle_rss_bytes"]["holdline"], res["idle_rss_bytes"]["peer"]
    speedup = p["median"] / h["median"]
    ratio = pr / hr if hr else float("inf")
    print()
    print("| figure (MCP Python SDK client, stdio) | holdline-mcp | mcp-feedback-enhanced 2.8.5 | target | met |")
    print("|---|---|---|---|---|")
    ms = lambda s: f"{s['median'] * 1e3:.1f} ms (min {s['min'] * 1e3:.1f}, max {s['max'] * 1e3:.1f})"
    ok = lambda b: "met" if b else "MISSED"
    print(f"| cold start: spawn → tools/list answered (median of {a.runs}) | {ms(h)} | {ms(p)} "
          f"| ≤ 20 ms and ≥ 50× faster (here {speedup:.0f}×) | {ok(h['median'] <= 0.020 and speedup >= 50)} |")
    print(f"| idle RSS, process tree, after initialize + {a.idle:g} s | {hr / 2**20:.1f} MiB | {pr / 2**20:.1f} MiB "
          f"| ≤ 10 MiB and ≤ 1/8 of the peer (here 1/{ratio:.1f}) | {ok(hr <= 10 * 2**20 and ratio >= 8)} |")
    if lat:
        s = res["holdline_reply_s"]
        ps = res["peer_reply_s"]
        peer_cell = (f"{ps['median'] * 1e3:.2f} / {ps['p99'] * 1e3:.2f} ms ({ps['n']} replies)"
                     if ps else "not measured")
        print(f"| reply latency, reply sent → tool result, p50 / p99 | "
              f"{s['median'] * 1e3:.2f} / {s['p99'] * 1e3:.2f} ms ({s['n']} replies) | {peer_cell} "
              f"| p50 ≤ 1 ms, p99 ≤ 3 ms | {ok(s['median'] <= 0.001 and s['p99'] <= 0.003)} |")
    if floor_lat:
        f = res["client_floor_reply_s"]
        print(f"| the client's own share: the same against the smallest server "
              f"(holdline-bench floor-server), p50 / p99 | {f['median'] * 1e3:.2f} / {f['p99'] * 1e3:.2f} ms "
              f"({f['n']} replies) | | for reference | |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
