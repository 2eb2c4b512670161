#!/usr/bin/env bash
# The peer comparison: holdline-mcp and mcp-feedback-enhanced 2.8.5 (the most used tool
# of this kind) measured with one client, the official MCP Python SDK over stdio, runs
# alternated: cold start to tools/list, idle RSS of the process tree, and holdline's reply
# latency through that client (beside that client's own share, measured against
# `holdline-bench floor-server` when it is in DIR). A hub with a temporary home is started first, so the
# bridge's cold start never includes starting the hub.
#
#   scripts/bench-peer.sh [--bin-dir DIR] [--runs N] [--replies N] [--json FILE]
#
# DIR defaults to target/release-lto (build it: cargo build --profile release-lto -p holdline-hub -p holdline-mcp).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PEER_VERSION="2.8.5"
BIN_DIR="$ROOT/target/release-lto"
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) BIN_DIR="$2"; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
BIN_DIR="$(cd "$BIN_DIR" && pwd)"
for b in holdline-hub holdline-mcp; do
  [ -x "$BIN_DIR/$b" ] || { echo "$BIN_DIR/$b is missing: cargo build --profile release-lto -p holdline-hub -p holdline-mcp" >&2; exit 1; }
done

VENV="$ROOT/target/bench-venv"
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp-feedback-enhanced') != '$PEER_VERSION')" 2>/dev/null; then
  echo "setting up $VENV (mcp-feedback-enhanced==$PEER_VERSION and the MCP Python SDK)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "mcp-feedback-enhanced==$PEER_VERSION" mcp
fi
PEER="$VENV/bin/mcp-feedback-enhanced"
[ -x "$PEER" ] || { echo "$PEER is missing after the install" >&2; exit 1; }
"$VENV/bin/python" - <<'PY' >&2
import importlib.metadata as m
print("peer:", "mcp-feedback-enhanced", m.version("mcp-feedback-enhanced"), "| client: mcp", m.version("mcp"))
PY

HOME_DIR="$(mktemp -d)"
HUB_PID=""
cleanup() {
  if [ -n "$HUB_PID" ]; then kill "$HUB_PID" 2>/dev/null || true; wait "$HUB_PID" 2>/dev/null || true; fi
  rm -rf "$HOME_DIR"
}
trap cleanup EXIT

HOLDLINE_LOG=warn "$BIN_DIR/holdline-hub" --home "$HOME_DIR/hub" serve --listen 127.0.0.1:0 \
  >"$HOME_DIR/hub.stdout" 2>"$HOME_DIR/hub.stderr" &
HUB_PID=$!
for _ in $(seq 1 400); do
  [ -s "$HOME_DIR/hub/hub.addr" ] && break
  sleep 0.05
done
[ -s "$HOME_DIR/hub/hub.addr" ] || { echo "the hub did not start:" >&2; cat "$HOME_DIR/hub.stderr" >&2; exit 1; }

export HOLDLINE_HUB="http://$(cat "$HOME_DIR/hub/hub.addr")"
export HOLDLINE_SECRET="$(cat "$HOME_DIR/hub/secret")"
export HOLDLINE_HOME="$HOME_DIR/hub"
FLOOR=()
[ -x "$BIN_DIR/holdline-bench" ] && FLOOR=(--floor "$BIN_DIR/holdline-bench")
"$VENV/bin/python" "$ROOT/scripts/bench_peer.py" --bridge "$BIN_DIR/holdline-mcp" --peer "$PEER" \
  ${FLOOR[@]+"${FLOOR[@]}"} ${ARGS[@]+"${ARGS[@]}"}
