#!/usr/bin/env bash
# The official MCP TypeScript SDK (npm @modelcontextprotocol/sdk, pinned in
# tests/sdk/package-lock.json) as a client of the stdio bridge and the hub's /mcp: tool
# error results are results the SDK accepts (isError and the instruction in the text),
# never a -32602 schema-validation McpError. The SDK installs with `npm ci` into a cache
# outside the repository (~/.cache/holdline-test-sdk, or $HOLDLINE_SDK_CACHE), keyed by
# the lock file, so the tree stays clean. Builds the two debug binaries it drives.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test-sdk: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
cargo build -q -p holdline-hub -p holdline-mcp
debug="${CARGO_TARGET_DIR:-$root/target}/debug"
export HOLDLINE_HUB_BIN="$debug/holdline-hub"
export HOLDLINE_MCP_BIN="$debug/holdline-mcp"

lock_sum="$(sha256sum tests/sdk/package-lock.json | cut -c1-16)"
export HOLDLINE_SDK_DIR="${HOLDLINE_SDK_CACHE:-$HOME/.cache/holdline-test-sdk}/$lock_sum"
if [[ ! -f "$HOLDLINE_SDK_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]]; then
  tmp="$HOLDLINE_SDK_DIR.tmp-$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp tests/sdk/package.json tests/sdk/package-lock.json "$tmp/"
  (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error)
  rm -rf "$HOLDLINE_SDK_DIR"
  mv "$tmp" "$HOLDLINE_SDK_DIR"
fi

cd tests/sdk
exec timeout 300 node --test --test-reporter=spec errors.test.mjs
