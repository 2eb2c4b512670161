#!/usr/bin/env python3
"""Measures the hub under the resource attacks of docs/security.md ("LAN
peers"): starts a real holdline-hub under an open-files limit, then

  1. holds N idle connections (never a byte), from several loopback addresses,
  2. holds N unfinished unauthenticated login bodies (chunked, and plain of
     one byte under 4 KiB),

and during each checks /healthz and a whole reply round trip (register, a
held poll, the reply reaching it), and reports the hub's RSS growth and how
long the hub took to close the connections.

  scripts/measure-hardening.py [--hub target/debug/holdline-hub] [--nofile 1024] [--conns 1100]

Only loopback addresses are used. Prints one line per figure.
"""

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def call(base, path, secret=None, body=None, timeout=10):
    req = urllib.request.Request(base + path, method="POST" if body is not None else "GET")
    if secret:
        req.add_header("Authorization", f"Bearer {secret}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    started = time.monotonic()
    with urllib.request.urlopen(req, data=data, timeout=timeout) as res:
        answer = json.loads(res.read() or b"null")
    return answer, time.monotonic() - started


def round_trip(base, secret, n):
    """register, a held poll, the reply; answers the seconds it took."""
    started = time.monotonic()
    who = {"cursorTitle": f"measure {n}", "workspace": "/w", "hostIp": "10.9.9.9"}
    token = call(base, "/api/init", secret, who)[0]["token"]
    wait = call(base, "/api/wait/register", secret,
                dict(who, token=token, message="next?", requestId=f"m{n}"))[0]["waitId"]
    got = {}

    def poll():
        got["a"] = call(base, "/api/wait/poll", secret,
                        {"token": token, "waitId": wait, "timeoutMs": 10000}, timeout=20)[0]

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.2)
    call(base, "/api/reply", secret, {"token": token, "text": "go on"})
    t.join()
    assert got["a"]["status"] == "replied", got
    return time.monotonic() - started


def timed(what, f):
    """`f()`'s result formatted, or why it failed (the hub did not answer)."""
    try:
        return what(f())
    except Exception as e:  # noqa: BLE001 - any failure is the figure
        return f"no answer ({type(e).__name__})"


def connect_from(addr, i):
    s = socket.socket()
    s.bind((f"127.0.0.{2 + i % 16}", 0))
    s.settimeout(3)
    s.connect(addr)
    return s


def closed_after(socks, started, limit=40):
    """Seconds until the hub closed every socket (None if some stayed open)."""
    for s in socks:
        s.settimeout(max(0.01, limit - (time.monotonic() - started)))
        try:
            while s.recv(65536):
                pass
        except (socket.timeout, TimeoutError):
            return None
        except OSError:
            pass
    return time.monotonic() - started


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hub", default="target/debug/holdline-hub")
    ap.add_argument("--nofile", type=int, default=1024)
    ap.add_argument("--conns", type=int, default=1100)
    args = ap.parse_args()
    need = args.conns + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))

    home = tempfile.mkdtemp(prefix="holdline-measure-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, HOLDLINE_HOME=home, HOLDLINE_LOG="warn")
    env.pop("HOLDLINE_MONGO_URI", None)
    hub = subprocess.Popen(
        ["sh", "-c", f'ulimit -n {args.nofile} && exec "$0" "$@"', args.hub,
         "serve", "--listen", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                call(base, "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        secret = open(os.path.join(home, "secret")).read().strip()
        round_trip(base, secret, 0)
        idle_rss = rss_kib(hub.pid)
        print(f"hub: open-files limit {args.nofile}, RSS at rest {idle_rss} KiB")

        # 1. idle connections
        started = time.monotonic()
        socks = []
        for i in range(args.conns):
            try:
                socks.append(connect_from(("127.0.0.1", port), i))
            except OSError:
                pass
        health = timed(lambda r: f"{r[1] * 1000:.0f} ms", lambda: call(base, "/healthz", timeout=10))
        rt = timed(lambda t: f"{t:.2f} s", lambda: round_trip(base, secret, 1))
        peak = rss_kib(hub.pid)
        closed = closed_after(socks, started)
        print(f"idle: {len(socks)} connections opened from 16 addresses; /healthz answered in "
              f"{health} and a reply round trip in {rt} during the flood; "
              f"RSS +{peak - idle_rss} KiB; all closed by the hub after "
              f"{'never' if closed is None else f'{closed:.1f} s'}")
        for s in socks:
            s.close()
        time.sleep(0.5)

        # 2. unfinished unauthenticated bodies
        for kind in ("chunked", "plain"):
            base_rss = rss_kib(hub.pid)
            started = time.monotonic()
            socks = []
            for i in range(args.conns):
                try:
                    s = connect_from(("127.0.0.1", port), i)
                    if kind == "chunked":
                        head = (f"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                        body = b"".join(b"10000\r\n" + b" " * 0x10000 + b"\r\n" for _ in range(16))
                    else:
                        head = (f"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                "Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n")
                        body = b" " * 4095
                    s.sendall(head.encode())
                    s.settimeout(0.5)
                    try:
                        s.sendall(body)
                    except OSError:
                        pass
                    socks.append(s)
                except OSError:
                    pass
            health = timed(lambda r: f"{r[1] * 1000:.0f} ms",
                           lambda: call(base, "/healthz", timeout=10))
            rt = timed(lambda t: f"{t:.2f} s", lambda: round_trip(base, secret, 2))
            peak = rss_kib(hub.pid)
            closed = closed_after(socks, started)
            what = "1 MiB chunked" if kind == "chunked" else "4 KiB − 1 byte plain"
            print(f"bodies: {len(socks)} unfinished {what} login bodies; /healthz in "
                  f"{health}, a reply round trip in {rt} during them; "
                  f"RSS +{peak - base_rss} KiB; all closed after "
                  f"{'never' if closed is None else f'{closed:.1f} s'}")
            for s in socks:
                s.close()
            time.sleep(0.5)
        print(f"hub: RSS at the end {rss_kib(hub.pid)} KiB")
    finally:
        hub.terminate()
        hub.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
