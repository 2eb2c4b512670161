#!/usr/bin/env bash
# The real-client suite (tests/clients): installs each pinned MCP client from npm into a
# cache outside the repository (~/.cache/holdline-test-clients, or $HOLDLINE_CLIENTS_CACHE)
# when missing, then drives them all headless against the fake model with node's test
# runner. Builds nothing: uses target/debug/holdline-hub and holdline-mcp, or
# $HOLDLINE_HUB_BIN / $HOLDLINE_MCP_BIN (the caller runs `cargo build --workspace`).
# Files: the clients with the stdio bridge (run.test.mjs, abandoned.test.mjs), the
# installer's remote entry read back (remote-entry.test.mjs), and the same clients
# against the hub's /mcp with an agent key (remote.test.mjs), and a model that forgets the
# tool caught by the stop hooks of Claude Code, Codex, Qwen Code and Gemini CLI (hooks.test.mjs).
#
#   scripts/test-clients.sh                               every client
#   HOLDLINE_CLIENTS=claude-code,gemini scripts/test-clients.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

export HOLDLINE_HUB_BIN="${HOLDLINE_HUB_BIN:-$root/target/debug/holdline-hub}"
export HOLDLINE_MCP_BIN="${HOLDLINE_MCP_BIN:-$root/target/debug/holdline-mcp}"
for bin in "$HOLDLINE_HUB_BIN" "$HOLDLINE_MCP_BIN"; do
  if [[ ! -x "$bin" ]]; then
    echo "test-clients: no binary at $bin; run \`cargo build --workspace\` first" >&2
    exit 1
  fi
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test-clients: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if (( node_major < 20 )); then
  echo "test-clients: node $node_major is too old; the clients need node ≥ 20" >&2
  exit 1
fi

# Installs happen one client at a time, before the clients start, so the test runner's
# timing does not include npm; the test itself reuses the cache. Clients from PyPI
# (Mistral Vibe, OpenHands) need a Python ≥ 3.12: tests/clients/python.mjs unpacks Debian 13's
# CPython 3.13 (Ubuntu 24.04's 3.12 for OpenHands) into the cache with apt-get download
# (private apt state) and installs the client with uv from PyPI; that needs apt-get, dpkg
# and python3 -m pip.
node --input-type=module -e '
  import { readdirSync } from "node:fs";
  import { installDriver } from "./tests/clients/harness.mjs";
  const only = (process.env.HOLDLINE_CLIENTS || "").split(",").filter(Boolean);
  for (const f of readdirSync("tests/clients/clients").filter((f) => f.endsWith(".mjs")).sort()) {
    const d = await import(`./tests/clients/clients/${f}`);
    if (only.length && !only.includes(d.name)) continue;
    const t = Date.now();
    const dir = await installDriver(d);
    console.log(`test-clients: ${d.pkg}@${d.version} in ${dir} (${Math.round((Date.now() - t) / 1000)} s)`);
  }
'

cd tests/clients
# Each file's clients run in parallel inside it, the files one after another. Where a network namespace with only
# loopback can be made (root, or user namespaces allowed), the whole run is inside one:
# hub, fake model and clients reach each other on 127.0.0.1 and nothing else at all.
# remote-entry.test.mjs: the installer's remote entry read back by each client.
# remote.test.mjs: the same clients against the hub's /mcp over Streamable HTTP (no bridge).
# hooks.test.mjs: a forgetful model in the clients whose Stop hook install writes.
run_tests=(node --test --test-concurrency=1 --test-timeout=900000 --test-reporter=spec run.test.mjs abandoned.test.mjs remote-entry.test.mjs remote.test.mjs hooks.test.mjs)
if [[ -z "${HOLDLINE_CLIENTS_NO_UNSHARE:-}" ]] && command -v ip >/dev/null &&
  unshare -n sh -c 'ip link set lo up' 2>/dev/null; then
  echo "test-clients: inside a network namespace with only loopback"
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${run_tests[@]}"
fi
echo "test-clients: no private network namespace here; the clients reach loopback only because the fake model is all they are given"
exec "${run_tests[@]}"
