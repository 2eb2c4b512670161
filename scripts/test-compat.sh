#!/usr/bin/env bash
# Wire compatibility with the previous release: builds holdline-hub and holdline-mcp of
# that release from git (once per commit, cached under the target dir), then runs
# tests/compat against three pairs: old bridge → new hub, new bridge → old hub, and old
# with old as the control. The new binaries are this tree's debug builds.
#
# The old source is unpacked with `git archive` (no worktree, so `git status` and
# `git worktree list` stay as they were) into <target>/compat/src-<commit> and built,
# dev profile, the two binaries only, into <target>/compat/target: one target dir for
# every release, so a bumped PREVIOUS_RELEASE rebuilds only what changed. The first build
# takes minutes; later runs find <target>/compat/bin-<commit> and skip it. Sources and
# binaries of other commits are removed. A shallow clone fetches that one commit from its
# remote; a clone that cannot get it fails here with what to fetch.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# The previous release: the main that landed before this tree (the contract crate's).
# Bump it at each release to the commit it was built from.
PREVIOUS_RELEASE=b1de9297241ef0bb4eb406ee44366019a6495412

if ! command -v node >/dev/null; then
  echo "test-compat: node is needed (Debian: apt-get install nodejs)" >&2
  exit 1
fi

target="${CARGO_TARGET_DIR:-$root/target}"
cache="$target/compat"
old_bin="$cache/bin-${PREVIOUS_RELEASE:0:12}"

build_previous_release() {
  if ! git cat-file -e "$PREVIOUS_RELEASE^{commit}" 2>/dev/null; then
    # A shallow clone: ask its remote for that one commit.
    git fetch --quiet --depth=1 origin "$PREVIOUS_RELEASE" 2>/dev/null || true
  fi
  if ! git cat-file -e "$PREVIOUS_RELEASE^{commit}" 2>/dev/null; then
    echo "test-compat: the previous release $PREVIOUS_RELEASE is not in this clone" >&2
    echo "  (a shallow clone? run: git fetch --unshallow, or clone with full history)" >&2
    return 1
  fi
  local src="$cache/src-${PREVIOUS_RELEASE:0:12}"
  if [[ ! -f "$src/Cargo.lock" ]]; then
    rm -rf "$src.tmp"
    mkdir -p "$src.tmp"
    git archive --format=tar "$PREVIOUS_RELEASE" | tar -x -C "$src.tmp"
    rm -rf "$src"
    mv "$src.tmp" "$src"
  fi
  echo "test-compat: building holdline-hub and holdline-mcp of ${PREVIOUS_RELEASE:0:12} (minutes the first time)"
  (cd "$src" && CARGO_TARGET_DIR="$cache/target" cargo build --locked --bin holdline-hub --bin holdline-mcp)
  # bin-<commit> appears only whole: its presence is what later runs trust.
  rm -rf "$old_bin.tmp"
  mkdir -p "$old_bin.tmp"
  local exe
  for exe in holdline-hub holdline-mcp; do
    # A hard link costs no space; cargo replaces, never rewrites, what it links.
    ln "$cache/target/debug/$exe" "$old_bin.tmp/" 2>/dev/null || cp "$cache/target/debug/$exe" "$old_bin.tmp/"
  done
  rm -rf "$old_bin"
  mv "$old_bin.tmp" "$old_bin"
  find "$cache" -mindepth 1 -maxdepth 1 \( -name 'src-*' -o -name 'bin-*' \) \
    ! -name "src-${PREVIOUS_RELEASE:0:12}" ! -name "bin-${PREVIOUS_RELEASE:0:12}" -exec rm -rf {} +
}

if [[ ! -x "$old_bin/holdline-hub" || ! -x "$old_bin/holdline-mcp" ]]; then
  build_previous_release
fi
cargo build -q --bin holdline-hub --bin holdline-mcp

export HOLDLINE_OLD_HUB_BIN="$old_bin/holdline-hub"
export HOLDLINE_OLD_MCP_BIN="$old_bin/holdline-mcp"
export HOLDLINE_NEW_HUB_BIN="$target/debug/holdline-hub"
export HOLDLINE_NEW_MCP_BIN="$target/debug/holdline-mcp"

echo "test-compat: previous release ${PREVIOUS_RELEASE:0:12} against this tree"
cd tests/compat
exec timeout 600 node --test --test-concurrency=1 --test-reporter=spec wire.test.mjs
