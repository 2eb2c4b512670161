#!/usr/bin/env bash
# Run the hub from this checkout: builds it if needed, runs `holdline-hub serve`
# and, once the hub answers, prints the panel's login URL (with the key: this is
# your own terminal; the same line `holdline-hub panel-url` prints). Ctrl-C stops it.
#
#   scripts/run.sh                          release build (first build takes a few minutes;
#                                           without MongoDB sync, as scripts/install.sh)
#   scripts/run.sh --dev                    debug build (faster to build)
#   scripts/run.sh --listen 0.0.0.0:13458   any other arguments go to `holdline-hub serve`
#
# The bridge (holdline-mcp) is built alongside, in the same target folder.
# Cargo ties a build to the folder its dependencies' sources are in
# ($CARGO_HOME, by default ~/.cargo): run with another HOME, it builds every
# dependency again. Keep CARGO_HOME and RUSTUP_HOME set to the usual folders
# to reuse an existing build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROFILE=release
if [ "${1:-}" = "--dev" ]; then PROFILE=debug; shift; fi
case "${1:-}" in -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

command -v cargo >/dev/null 2>&1 || { echo "run: cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }

cd "$ROOT"
if [ "$PROFILE" = release ]; then
  cargo build --release -p holdline-hub -p holdline-mcp --no-default-features
else
  cargo build -p holdline-hub -p holdline-mcp
fi
HUB="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/holdline-hub"

# panel-url and status read the home and listen address as serve does: pass them the same.
url_args=()
listen_env=()
prev=""
for a in "$@"; do
  case "$prev" in
    --home) url_args=(--home "$a") ;;
    --listen) listen_env=("HOLDLINE_LISTEN=$a") ;;
  esac
  case "$a" in
    --home=*) url_args=(--home "${a#*=}") ;;
    --listen=*) listen_env=("HOLDLINE_LISTEN=${a#*=}") ;;
  esac
  prev="$a"
done
hub_cli() { env "${listen_env[@]+"${listen_env[@]}"}" "$HUB" "${url_args[@]+"${url_args[@]}"}" "$@"; }

"$HUB" serve "$@" &
hub_pid=$!
trap 'kill -TERM "$hub_pid" 2>/dev/null' INT TERM
# Up to 30 s for the hub to answer (it creates its secret on the first start).
for _ in $(seq 1 150); do
  kill -0 "$hub_pid" 2>/dev/null || break
  hub_cli status >/dev/null 2>&1 && break
  sleep 0.2
done
if kill -0 "$hub_pid" 2>/dev/null && hub_cli status >/dev/null 2>&1; then
  echo
  echo "Panel — open this login URL once in a browser (it holds the key; it keeps you signed in):"
  hub_cli panel-url --no-qr || true
  echo "('$HUB panel-url' prints it again, with a QR code for a phone. Ctrl-C stops the hub.)"
  echo
fi
# wait returns early when a signal is trapped: wait again for the hub's own exit status.
rc=0
wait "$hub_pid" || rc=$?
kill -0 "$hub_pid" 2>/dev/null && { wait "$hub_pid" || rc=$?; }
exit "$rc"
