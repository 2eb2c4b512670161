#!/usr/bin/env bash
# Run the hub from this checkout: builds it if needed, then runs
# `holdline-hub serve`, which prints the panel URL. Ctrl-C stops it.
#
#   scripts/run.sh                          release build (first build takes a few minutes)
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
case "${1:-}" in -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

command -v cargo >/dev/null 2>&1 || { echo "run: cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }

cd "$ROOT"
if [ "$PROFILE" = release ]; then
  cargo build --release -p holdline-hub -p holdline-mcp
else
  cargo build -p holdline-hub -p holdline-mcp
fi
exec "${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/holdline-hub" serve "$@"
