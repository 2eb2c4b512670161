#!/usr/bin/env bash
# Build holdline's release artifacts into target/dist/ (or $CARGO_TARGET_DIR/dist/).
#
#   scripts/dist.sh                  release build of every artifact (about 20 minutes on 2 cores)
#   scripts/dist.sh --quick          the same artifacts from a dev-profile build (CI-sized; what
#                                    scripts/test-dist.sh uses); also HOLDLINE_DIST_QUICK=1
#   scripts/dist.sh --target TRIPLE  build for TRIPLE instead of x86_64-unknown-linux-gnu
#                                    (Linux triples go through cargo-zigbuild; the Rust target
#                                    must be installed: rustup target add TRIPLE)
#
# Writes, for VERSION from Cargo.toml and the target TRIPLE (PLATFORM: linux-x64, darwin-arm64, …):
#   holdline-VERSION-TRIPLE.tar.gz          both binaries, systemd/, launchd/, the install scripts, READMEs
#   holdline_mcp-VERSION-py3-none-TAG.whl   PyPI `holdline-mcp`: both binaries as wheel scripts
#                                           (pipx install holdline-mcp / uvx --from holdline-mcp holdline-mcp)
#   npm/holdline-linux-x64-VERSION.tgz      npm `@holdline/PLATFORM`: the binaries for one platform
#   npm/holdline-mcp-VERSION.tgz            npm `holdline-mcp`: node launchers in bin/ (npx -y holdline-mcp)
#   holdline-mcp-VERSION-PLATFORM.mcpb      MCP Bundle for Claude Desktop (manifest scripts/mcpb/manifest.json;
#                                           built and checked with @anthropic-ai/mcpb)
#   server.json                             the MCP Registry entry, as in the repository
#   SHA256SUMS                         of every file above, for `sha256sum -c SHA256SUMS`
#
# Linux binaries are linked against glibc 2.28 with cargo-zigbuild, so they run on any
# Linux with glibc >= 2.28 (Debian 10, Ubuntu 18.10, RHEL 8 and later). The tools it needs
# (zig from PyPI `ziglang`, cargo-zigbuild from crates.io, @anthropic-ai/mcpb from npm) are installed once into
# $HOLDLINE_DIST_TOOLS (default ~/.cache/holdline-dist-tools), never into the checkout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
DIST="$TARGET_DIR/dist"
TOOLS="${HOLDLINE_DIST_TOOLS:-$HOME/.cache/holdline-dist-tools}"
GLIBC_FLOOR="2.28"
TRIPLE="x86_64-unknown-linux-gnu"
QUICK="${HOLDLINE_DIST_QUICK:-}"

say() { printf 'dist: %s\n' "$*"; }
die() { printf 'dist: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --target) [ $# -ge 2 ] || die "--target needs a target triple"; TRIPLE="$2"; shift 2 ;;
    --target=*) TRIPLE="${1#*=}"; shift ;;
    -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

# The workspace version: the one line `version = "…"` under [workspace.package].
VERSION="$(awk '/^\[/{s=($0=="[workspace.package]")} s && /^version *=/{gsub(/.*= *"|".*/,""); print; exit}' "$ROOT/Cargo.toml")"
[ -n "$VERSION" ] || die "no version under [workspace.package] in Cargo.toml"
# The MCP Registry name (server.json), which the npm and PyPI packages carry as proof of ownership.
MCP_NAME="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$ROOT/server.json")"
MCPB_VERSION="2.1.2"

# Per target: the npm platform (node's process.platform-process.arch) and the wheel's platform tag.
case "$TRIPLE" in
  x86_64-unknown-linux-gnu) NPM_OS=linux; NPM_CPU=x64; WHEEL_PLAT="manylinux_2_28_x86_64" ;;
  aarch64-unknown-linux-gnu) NPM_OS=linux; NPM_CPU=arm64; WHEEL_PLAT="manylinux_2_28_aarch64" ;;
  x86_64-apple-darwin) NPM_OS=darwin; NPM_CPU=x64; WHEEL_PLAT="macosx_10_12_x86_64" ;;
  aarch64-apple-darwin) NPM_OS=darwin; NPM_CPU=arm64; WHEEL_PLAT="macosx_11_0_arm64" ;;
  *) die "no packaging known for target '$TRIPLE'" ;;
esac

# --- tools ---------------------------------------------------------------------

# zig (PyPI ziglang) in a venv and cargo-zigbuild (crates.io), both under $TOOLS. The venv's
# bin goes first on PATH: cargo-zigbuild finds zig through `python3 -m ziglang`.
ensure_zigbuild() {
  if [ ! -x "$TOOLS/venv/bin/python3" ] || ! "$TOOLS/venv/bin/python3" -c 'import ziglang' 2>/dev/null; then
    say "installing zig (PyPI ziglang) into $TOOLS/venv"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check ziglang
  fi
  if [ ! -x "$TOOLS/cargo/bin/cargo-zigbuild" ]; then
    say "installing cargo-zigbuild (crates.io) into $TOOLS/cargo"
    (cd "$TOOLS" && env -u CARGO_TARGET_DIR cargo install --quiet --locked cargo-zigbuild --root "$TOOLS/cargo")
  fi
  export PATH="$TOOLS/venv/bin:$TOOLS/cargo/bin:$PATH"
}

# @anthropic-ai/mcpb (npm), pinned, under $TOOLS/mcpb.
ensure_mcpb() {
  MCPB="$TOOLS/mcpb/node_modules/.bin/mcpb"
  if [ ! -x "$MCPB" ] || [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
      "$TOOLS/mcpb/node_modules/@anthropic-ai/mcpb/package.json" 2>/dev/null)" != "$MCPB_VERSION" ]; then
    say "installing @anthropic-ai/mcpb $MCPB_VERSION (npm) into $TOOLS/mcpb"
    mkdir -p "$TOOLS/mcpb"
    (cd "$TOOLS/mcpb" && npm install --silent --no-audit --no-fund "@anthropic-ai/mcpb@$MCPB_VERSION" >/dev/null)
  fi
}

# --- build -----------------------------------------------------------------------

# Builds both binaries for $TRIPLE; sets BIN_OUT to the folder that holds them.
build_binaries() {
  local profile_args=(--profile release-lto) profile_dir=release-lto
  if [ -n "$QUICK" ]; then
    # The dev profile without debug info: a fraction of the release build's time, and
    # binaries small enough to copy into three packages.
    profile_args=()
    profile_dir=debug
    export CARGO_PROFILE_DEV_DEBUG=0
  else
    export CARGO_PROFILE_RELEASE_LTO_STRIP=symbols
  fi
  local build=(cargo build --target "$TRIPLE")
  case "$TRIPLE" in
    *-linux-gnu)
      ensure_zigbuild
      build=(cargo zigbuild --target "$TRIPLE.$GLIBC_FLOOR") ;;
  esac
  say "building holdline $VERSION for $TRIPLE (${profile_dir})"
  (cd "$ROOT" && CARGO_TARGET_DIR="$TARGET_DIR" "${build[@]}" "${profile_args[@]}" \
    -p holdline-hub -p holdline-mcp --bins)
  BIN_OUT="$TARGET_DIR/$TRIPLE/$profile_dir"
  for b in holdline-hub holdline-mcp; do
    [ -x "$BIN_OUT/$b" ] || die "the build left no $BIN_OUT/$b"
  done
}

# --- packages --------------------------------------------------------------------

# The archive: one top folder holdline-VERSION-TRIPLE/ with what a person needs to install
# by hand or with scripts/install.sh --bin-dir .
make_archive() {
  local name="holdline-$VERSION-$TRIPLE" stage="$DIST/stage"
  rm -rf "$stage"
  mkdir -p "$stage/$name/scripts"
  cp "$BIN_OUT/holdline-hub" "$BIN_OUT/holdline-mcp" "$stage/$name/"
  cp -R "$ROOT/systemd" "$ROOT/launchd" "$stage/$name/"
  cp "$ROOT/scripts/install.sh" "$ROOT/scripts/uninstall.sh" "$stage/$name/scripts/"
  cp "$ROOT/README.md" "$ROOT/README.zh-CN.md" "$stage/$name/"
  local lic found=0
  for lic in LICENSE LICENSE.md LICENSE.txt LICENSE-MIT LICENSE-APACHE COPYING; do
    [ -f "$ROOT/$lic" ] && { cp "$ROOT/$lic" "$stage/$name/"; found=1; }
  done
  [ "$found" = 1 ] || say "warning: the repository has no licence file; the archive has none"
  tar -C "$stage" -czf "$DIST/$name.tar.gz" "$name"
  rm -rf "$stage"
  say "wrote $name.tar.gz"
}

make_wheel() {
  python3 "$ROOT/scripts/dist-wheel.py" --version "$VERSION" --platform "$WHEEL_PLAT" \
    --bin "$BIN_OUT/holdline-hub" --bin "$BIN_OUT/holdline-mcp" --readme "$ROOT/README.md" \
    --mcp-name "$MCP_NAME" --out "$DIST"
}

# npm: the layout of the Codex and Claude Code CLIs. @holdline/PLATFORM holds the binaries and
# says os/cpu, so npm installs only the one for the machine; holdline-mcp depends on every
# platform package optionally and its bin/ launchers run the binary from the installed one.
make_npm() {
  local stage="$DIST/npm-stage" platform="$NPM_OS-$NPM_CPU"
  rm -rf "$stage" "$DIST/npm"
  mkdir -p "$stage/platform/bin" "$stage/main" "$DIST/npm"
  cp "$BIN_OUT/holdline-hub" "$BIN_OUT/holdline-mcp" "$stage/platform/bin/"
  cp -R "$ROOT/scripts/npm/." "$stage/main/"
  cp "$ROOT/README.md" "$stage/main/"
  node "$ROOT/scripts/dist-npm.js" "$VERSION" "$NPM_OS" "$NPM_CPU" "$stage/main" "$stage/platform" "$MCP_NAME"
  # npm pack's cache is a temporary folder: nothing is written to ~/.npm or the checkout.
  local cache
  cache="$(mktemp -d "${TMPDIR:-/tmp}/holdline-npm-cache.XXXXXX")"
  for pkg in platform main; do
    (cd "$stage/$pkg" && npm pack --silent --cache "$cache" --pack-destination "$DIST/npm" >/dev/null)
  done
  rm -rf "$cache" "$stage"
  say "wrote npm/$(cd "$DIST/npm" && echo *.tgz)"
}

# The MCP Bundle: manifest.json (this version, this platform) and server/ with both binaries,
# so the bridge finds holdline-hub beside itself and starts it when no hub answers.
make_bundle() {
  local stage="$DIST/mcpb-stage" name="holdline-mcp-$VERSION-$NPM_OS-$NPM_CPU.mcpb"
  ensure_mcpb
  rm -rf "$stage"
  mkdir -p "$stage/server"
  cp "$BIN_OUT/holdline-hub" "$BIN_OUT/holdline-mcp" "$stage/server/"
  python3 - "$ROOT/scripts/mcpb/manifest.json" "$stage/manifest.json" "$VERSION" "$NPM_OS" <<'PY'
import json, sys
src, out, version, os_name = sys.argv[1:]
m = json.load(open(src))
m["version"] = version
m["compatibility"]["platforms"] = [os_name]
json.dump(m, open(out, "w"), indent=2)
PY
  "$MCPB" validate "$stage/manifest.json" >/dev/null || die "mcpb validate refused the bundle's manifest"
  "$MCPB" pack "$stage" "$DIST/$name" >/dev/null || die "mcpb pack failed"
  rm -rf "$stage"
  say "wrote $name"
}

write_sums() {
  local sha=(sha256sum)
  command -v sha256sum >/dev/null 2>&1 || sha=(shasum -a 256) # macOS; same output
  (cd "$DIST" && find . -maxdepth 2 -type f \( -name '*.tar.gz' -o -name '*.whl' -o -name '*.tgz' -o -name '*.mcpb' -o -name server.json \) \
    | sed 's|^\./||' | LC_ALL=C sort | xargs "${sha[@]}" > SHA256SUMS)
  say "wrote SHA256SUMS"
}

started=$SECONDS
build_binaries
rm -rf "$DIST"
mkdir -p "$DIST"
make_archive
make_wheel
make_npm
make_bundle
cp "$ROOT/server.json" "$DIST/server.json"
write_sums
say "done in $((SECONDS - started)) s: $DIST"
