#!/usr/bin/env bash
# Keeps the benchmark harness working: runs `holdline-bench hub --quick` and
# `holdline-bench bridge --quick` on the debug binaries and checks that they ran
# and printed every figure (the hub's /mcp beside the stdio bridge included), and that the peer comparison's `floor-server` answers
# a tool call. Timings are not judged here (debug build, small numbers); real
# figures come from scripts/bench.sh on release-lto builds.
# Ends with `bench: N passed, M failed`; exits non-zero on failure.
set -uo pipefail
cd "$(dirname "$0")/.."

# scripts/test.sh builds the workspace first; on its own, build the two binaries under test.
debug="${CARGO_TARGET_DIR:-target}/debug"
if [ ! -x "$debug/holdline-hub" ] || [ ! -x "$debug/holdline-mcp" ]; then
  cargo build -q -p holdline-hub -p holdline-mcp || {
    echo "bench: 0 passed, 1 failed (build)"
    exit 1
  }
fi
cargo build -q -p holdline-bench || {
  echo "bench: 0 passed, 1 failed (build)"
  exit 1
}
bench="$debug/holdline-bench"
# HUB_BIN=PATH tries another hub build (e.g. one with a fix) with the same checks.
hub_args=()
[ -n "${HUB_BIN:-}" ] && hub_args=(--hub-bin "$HUB_BIN")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

passed=0
failed=0
check() { # name, file, pattern...
  local name=$1 file=$2
  shift 2
  for pattern in "$@"; do
    if ! grep -q -- "$pattern" "$file"; then
      echo "FAIL $name: no line matching '$pattern' in its output:"
      sed 's/^/    /' "$file"
      failed=$((failed + 1))
      return
    fi
  done
  echo "ok   $name"
  passed=$((passed + 1))
}

run() { # name, file, args...
  local name=$1 file=$2
  shift 2
  if ! timeout 180 "$bench" "$@" ${hub_args[@]+"${hub_args[@]}"} --json "$file.json" >"$file" 2>"$file.err"; then
    echo "FAIL $name: holdline-bench $* exited non-zero:"
    sed 's/^/    /' "$file.err" "$file"
    failed=$((failed + 1))
    return 1
  fi
}

if run "hub --quick" "$out/hub" hub --quick; then
  check "hub --quick" "$out/hub" \
    '^| reply latency, one waiting session, MCP client' \
    '^| reply latency, one waiting session, p99' \
    '^| reply→poll answer, 200 waiting' \
    '^| replies lost / duplicated | 0 / 0 ' \
    '^| hub RSS, 200 sessions waiting | [0-9.]* MiB' \
    '^| idle cost per waiting session' \
    '^| hub start, 2000 stored sessions' \
    '^| hub RSS, 2000 stored sessions, idle | [0-9.]* MiB' \
    '^| hub RSS, 2000 stored sessions, after the panel.s list paged through all | [0-9.]* MiB' \
    '^| hub idle, nothing waiting' \
    '^| /mcp reply latency: reply POST → tool result at an rmcp client over Streamable HTTP (20 replies) p50 / p99 | [0-9.]* ms / [0-9.]* ms' \
    '^| /mcp beside: the same through the stdio bridge, rounds alternated on the same hub (20 replies) p50 / p99 | [0-9.]* ms / [0-9.]* ms' \
    '^| /mcp memory per waiting remote agent (5 waiting).* | [0-9.]* KiB (hub idle' \
    '^| /mcp beside: memory per waiting stdio agent (5 waiting).* | [0-9.]* MiB = bridge [0-9.]* MiB + hub [0-9.]* KiB' \
    '^| /mcp hub RSS, 50 remote agents waiting at once | [0-9.]* MiB' \
    '^| /mcp 50 remote agents waiting, one reply each at [0-9]* replies/s: reply POST → tool result p50 / p99 | [0-9.]* ms / [0-9.]* ms (max [0-9.]* ms, 50 results)' \
    '^| /mcp beside: 50 sessions long-polling as stdio bridges do (simulated), [0-9]* replies/s: reply POST → poll answer p50 / p99; hub RSS | [0-9.]* ms / [0-9.]* ms (max [0-9.]* ms, [0-9]* replies, lost 0, duplicated 0); [0-9.]* MiB' \
    '^| /mcp 50 remote agents: replies lost / duplicated | 0 / 0 (delivered 50 of 50 sent, errors 0)' \
    '^| hub RSS after 20 registers with attachments by 10 keys .* | [0-9.]* MiB (peak [0-9.]* MiB)' \
    '^| store size after them .* | [0-9.]* MiB ([0-9.]* MiB of it the files)'
  check "hub --quick --json" "$out/hub.json" '"reply"' '"load"' '"stored"' '"remote"' '"attachments"'
fi
if run "bridge --quick" "$out/bridge" bridge --quick; then
  check "bridge --quick" "$out/bridge" \
    '^| bridge cold start: spawn → tools/list answered' \
    '^| bridge idle RSS (process tree'
fi
# The peer comparison's floor server: initialize, the tool list, and a call
# answered by a datagram, over its stdio.
if timeout 60 python3 - "$bench" >"$out/floor" 2>&1 <<'PY'
import json, socket, subprocess, sys
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
port = udp.getsockname()[1]
udp.close()
server = subprocess.Popen([sys.argv[1], "floor-server", "--port", str(port)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def ask(i, method, params):
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                   "params": params}).encode() + b"\n")
    server.stdin.flush()
    if method == "tools/call":
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hello", ("127.0.0.1", port))
    answer = json.loads(server.stdout.readline())
    assert answer["id"] == i, answer
    return answer["result"]
assert ask(1, "initialize", {"protocolVersion": "2025-06-18"})["protocolVersion"] == "2025-06-18"
assert [t["name"] for t in ask(2, "tools/list", {})["tools"]] == ["wait"]
assert ask(3, "tools/call", {"name": "wait", "arguments": {}})["content"][0]["text"] == "hello"
server.stdin.close()
assert server.wait(10) == 0
print("floor server answered")
PY
then
  check "floor-server" "$out/floor" '^floor server answered'
else
  echo "FAIL floor-server:"
  sed 's/^/    /' "$out/floor"
  failed=$((failed + 1))
fi
echo "bench: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
