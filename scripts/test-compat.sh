#!/usr/bin/env bash
# Wire compatibility with the previous release: builds holdline-hub and holdline-mcp of
# that release from git (once per commit, cached under the target dir), then runs
# tests/compat against three pairs: old bridge → new hub, new bridge → old hub, and old
# with old as the control. The new binaries are this tree's debug builds.
#
# The old source is unpacked with `git archive` (no worktree, so `git status` and
# `git worktree list` stay as they were) into <target>/compat-<commit>/src and built
# with its own target dir beside it, dev profile, the two binaries only. The first
# build takes minutes; later runs find <target>/compat-<commit>/bin and skip it.
# A clone without that commit (a shallow clone) fails here with what to fetch.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# The previous release: the last main before the contract crate (holdline-contract)
# changed how the wire is written. Bump it at each release to the commit it was built from.
PREVIOUS_RELEASE=31329742a69394e3d4ae4f15614700a4ad710c46

if ! command -v node >/dev/null; then
  echo "test-compat: node is needed (Debian: apt-get install nodejs)" >&2
  exit 1
fi

target="${CARGO_TARGET_DIR:-$root/target}"
cache="$target/compat-${PREVIOUS_RELEASE:0:12}"
old_bin="$cache/bin"

build_previous_release() {
  if ! git cat-file -e "$PREVIOUS_RELEASE^{commit}" 2>/dev/null; then
    echo "test-compat: the previous release $PREVIOUS_RELEASE is not in this clone" >&2
    echo "  (a shallow clone? run: git fetch --unshallow, or clone with full history)" >&2
    return 1
  fi
  local src="$cache/src"
  if [[ ! -f "$src/Cargo.lock" ]]; then
    rm -rf "$src.tmp"
    mkdir -p "$src.tmp"
    git archive --format=tar "$PREVIOUS_RELEASE" | tar -x -C "$src.tmp"
    rm -rf "$src"
    mv "$src.tmp" "$src"
  fi
  echo "test-compat: building holdline-hub and holdline-mcp of ${PREVIOUS_RELEASE:0:12} (minutes the first time)"
  (cd "$src" && CARGO_TARGET_DIR="$cache/target" cargo build --locked --bin holdline-hub --bin holdline-mcp)
  # bin/ appears only whole: its presence is what later runs trust.
  rm -rf "$old_bin.tmp"
  mkdir -p "$old_bin.tmp"
  cp "$cache/target/debug/holdline-hub" "$cache/target/debug/holdline-mcp" "$old_bin.tmp/"
  rm -rf "$old_bin"
  mv "$old_bin.tmp" "$old_bin"
}

if [[ ! -x "$old_bin/holdline-hub" || ! -x "$old_bin/holdline-mcp" ]]; then
  build_previous_release
fi
cargo build -q --bin holdline-hub --bin holdline-mcp

export HOLDLINE_OLD_HUB_BIN="$old_bin/holdline-hub"
export HOLDLINE_OLD_MCP_BIN="$old_bin/holdline-mcp"
export HOLDLINE_NEW_HUB_BIN="$target/debug/holdline-hub"
export HOLDLINE_NEW_MCP_BIN="$target/debug/holdline-mcp"
export HOLDLINE_PREVIOUS_RELEASE="$PREVIOUS_RELEASE"

cd tests/compat
exec timeout 600 node --test --test-concurrency=1 --test-reporter=spec wire.test.mjs
