#!/usr/bin/env bash
# Drives the real holdline-mcp bridge against a real hub with the official MCP Python SDK
# (PyPI `mcp`), a client this project did not write. Exits non-zero on failure.
set -euo pipefail

MCP_VERSION="2.3.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

cargo build -q -p holdline-hub -p holdline-mcp
DEBUG_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
HUB_BIN="$DEBUG_DIR/holdline-hub"
BRIDGE_BIN="$DEBUG_DIR/holdline-mcp"

VENV="$ROOT/target/py-venv"
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_VERSION"
fi

HOME_DIR="$(mktemp -d)"
HUB_PID=""
cleanup() {
  if [[ -n "$HUB_PID" ]]; then kill "$HUB_PID" 2>/dev/null || true; wait "$HUB_PID" 2>/dev/null || true; fi
  rm -rf "$HOME_DIR"
}
trap cleanup EXIT

"$HUB_BIN" --home "$HOME_DIR" serve --listen 127.0.0.1:0 >"$HOME_DIR/hub.stdout" 2>"$HOME_DIR/hub.stderr" &
HUB_PID=$!
for _ in $(seq 1 200); do
  [[ -s "$HOME_DIR/hub.addr" ]] && break
  sleep 0.05
done
if [[ ! -s "$HOME_DIR/hub.addr" ]]; then
  echo "FAIL test-mcp-python: the hub did not start" >&2
  cat "$HOME_DIR/hub.stderr" >&2 || true
  exit 1
fi

export HOLDLINE_HUB="http://$(cat "$HOME_DIR/hub.addr")"
export HOLDLINE_SECRET="$(cat "$HOME_DIR/secret")"
export HOLDLINE_HOME="$HOME_DIR"
if ! timeout 120 "$VENV/bin/python" "$ROOT/scripts/mcp_python_client.py" "$BRIDGE_BIN"; then
  echo "FAIL test-mcp-python: the MCP Python SDK client failed against holdline-mcp" >&2
  exit 1
fi
