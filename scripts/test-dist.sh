#!/usr/bin/env bash
# Tests the release artifacts: runs `scripts/dist.sh --quick`, then installs from
# target/dist/ alone, offline, under their published names — the archive unpacked into a
# fresh folder (and its scripts/install.sh), the wheel `holdline-mcp` into a fresh venv
# and with pipx (fetched once, like zig), the npm packages `@holdline/linux-x64` and
# `holdline-mcp` into a fresh npm prefix, the MCP Bundle unpacked and its manifest's entry
# run — and runs `holdline-hub --version`, `holdline-mcp --version` and an MCP
# `initialize` from each. Checks SHA256SUMS, that no binary needs a glibc symbol newer
# than 2.28, that `holdline-mcp install` run through each install writes the command a
# person would expect, that every install command the READMEs show names what dist.sh
# built (scripts/check-install-names.py), and the README's release path end to end in a
# fresh HOME: the archive's install.sh, the hub up, its login URL printed, an MCP
# `initialize` through the installed bridge answered with the hub's tools.
#
#   scripts/test-dist.sh              build (dist.sh --quick) and test
#   scripts/test-dist.sh --no-build   test what is in target/dist/ already
#
# Writes only under target/ and a temporary folder (pip and npm caches included).
# Ends with "dist: N passed, M failed" and exits non-zero when anything failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
DIST="$TARGET_DIR/dist"
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    *) echo "test-dist: unknown option '$1'" >&2; exit 2 ;;
  esac
done
GLIBC_FLOOR="2.28"
VERSION="$(awk '/^\[/{s=($0=="[workspace.package]")} s && /^version *=/{gsub(/.*= *"|".*/,""); print; exit}' "$ROOT/Cargo.toml")"
TRIPLE="x86_64-unknown-linux-gnu"

PASSED=0
FAILED=0
FAILURES=()
ok() { PASSED=$((PASSED + 1)); printf 'ok   %s\n' "$1"; }
bad() { FAILED=$((FAILED + 1)); FAILURES+=("$1"); printf 'FAIL %s\n' "$1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | tail -15 | sed 's/^/     | /'; }
# check NAME CMD...: passes when CMD exits 0.
check() { local name="$1"; shift; local out; if out="$("$@" 2>&1)"; then ok "$name"; else bad "$name" "$out"; fi; }
# timed NAME CMD...: check, and say how long CMD took.
timed() {
  local name="$1" start=$SECONDS; shift
  check "$name" "$@"
  printf '     (%s s)\n' "$((SECONDS - start))"
}
# prints_version NAME BIN: BIN --version prints "NAME VERSION".
prints_version() {
  local out
  out="$(timeout 20 "$2" --version 2>&1)" || { echo "$2 --version failed: $out"; return 1; }
  [ "$out" = "$1 $VERSION" ] || { echo "$2 --version printed '$out', not '$1 $VERSION'"; return 1; }
}

TMP="$(mktemp -d "${TMPDIR:-/tmp}/holdline-test-dist.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# The build may fetch its tools (zig from PyPI, cargo-zigbuild) once, into their own cache.
if [ "$BUILD" = 1 ]; then
  timed "scripts/dist.sh --quick builds the artifacts" "$ROOT/scripts/dist.sh" --quick
fi

# pipx (pinned) and the pip wheel its shared venv upgrades to, fetched once into the dist
# tools' cache like zig: the pipx install below then runs offline from the wheel's path.
TOOLS="${HOLDLINE_DIST_TOOLS:-$HOME/.cache/holdline-dist-tools}"
PIPX="$TOOLS/pipx/bin/pipx"
if [ ! -x "$PIPX" ] || [ -z "$(ls "$TOOLS/pipx-wheels"/pip-*.whl 2>/dev/null)" ]; then
  { python3 -m venv "$TOOLS/pipx" && "$TOOLS/pipx/bin/pip" install --quiet --disable-pip-version-check 'pipx==1.18.4' \
    && "$TOOLS/pipx/bin/pip" download --quiet --disable-pip-version-check -d "$TOOLS/pipx-wheels" 'pip>=26.1'; } \
    >/dev/null 2>&1 || echo "test-dist: could not fetch pipx into $TOOLS (offline?); its check is skipped"
fi

# No install below may reach a registry or write a cache outside $TMP.
export PIP_NO_INDEX=1 PIP_CACHE_DIR="$TMP/pip-cache" PIP_DISABLE_PIP_VERSION_CHECK=1
export npm_config_cache="$TMP/npm-cache" npm_config_offline=true npm_config_update_notifier=false \
  npm_config_audit=false npm_config_fund=false

ARCHIVE="$DIST/holdline-$VERSION-$TRIPLE.tar.gz"
WHEEL="$DIST/holdline_mcp-$VERSION-py3-none-manylinux_2_28_x86_64.whl"
NPM_MAIN="$DIST/npm/holdline-mcp-$VERSION.tgz"
NPM_PLATFORM="$DIST/npm/holdline-linux-x64-$VERSION.tgz"
BUNDLE="$DIST/holdline-mcp-$VERSION-linux-x64.mcpb"
for f in "$ARCHIVE" "$WHEEL" "$NPM_MAIN" "$NPM_PLATFORM" "$BUNDLE" "$DIST/server.json" "$DIST/SHA256SUMS"; do
  check "target/dist has ${f#"$DIST"/}" test -s "$f"
done

# --- SHA256SUMS ----------------------------------------------------------------
sums_cover_all() {
  (cd "$DIST" && sha256sum -c --strict SHA256SUMS) || return 1
  local n
  n="$(wc -l < "$DIST/SHA256SUMS")"
  [ "$n" = 6 ] || { echo "SHA256SUMS lists $n files, not the 6 artifacts"; return 1; }
}
check "SHA256SUMS lists every artifact and each sum matches" sums_cover_all
sum_detects_change() {
  cp -R "$DIST" "$TMP/dist-copy" && printf 'x' >> "$TMP/dist-copy/$(basename "$WHEEL")"
  ! (cd "$TMP/dist-copy" && sha256sum -c --quiet SHA256SUMS >/dev/null 2>&1)
}
check "sha256sum -c fails on a changed artifact" sum_detects_change
rm -rf "$TMP/dist-copy"

# --- (a) the archive -------------------------------------------------------------
A="$TMP/archive"
mkdir -p "$A"
timed "the archive unpacks into a fresh folder" tar -C "$A" -xzf "$ARCHIVE"
AD="$A/holdline-$VERSION-$TRIPLE"
archive_holds_all() {
  local f
  for f in holdline-hub holdline-mcp systemd/holdline-hub.service launchd/dev.holdline.hub.plist \
    scripts/install.sh scripts/uninstall.sh README.md LICENSE; do
    [ -e "$AD/$f" ] || { echo "no $f in the archive"; return 1; }
  done
}
check "the archive holds both binaries, the units, the install scripts, the README and the licence" archive_holds_all
check "archive: holdline-hub --version" prints_version holdline-hub "$AD/holdline-hub"
check "archive: holdline-mcp --version" prints_version holdline-mcp "$AD/holdline-mcp"

archive_install_sh() {
  (cd "$AD" && env -u HOLDLINE_HOME HOME="$TMP/archive-home" \
    scripts/install.sh --bin-dir . --prefix "$TMP/archive-bin" --no-service) || return 1
  prints_version holdline-mcp "$TMP/archive-bin/holdline-mcp"
}
check "archive: scripts/install.sh --bin-dir . installs its binaries" archive_install_sh

# --- glibc floor -----------------------------------------------------------------
# newest_glibc BIN: the newest GLIBC_x.y symbol version BIN needs (empty when none).
newest_glibc() {
  objdump -T "$1" | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/GLIBC_//' | sort -uV | tail -1
}
# at_most A B: version A is B or older.
at_most() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$2" ]; }
# glibc_ok BIN: every versioned glibc symbol BIN needs is from GLIBC_FLOOR or older.
glibc_ok() {
  local newest
  newest="$(newest_glibc "$1")"
  [ -n "$newest" ] || { echo "no GLIBC symbol versions in $1 (not dynamically linked to glibc?)"; return 1; }
  at_most "$newest" "$GLIBC_FLOOR" || { echo "$1 needs GLIBC_$newest"; return 1; }
  echo "$1: newest glibc symbol version $newest"
}
for b in holdline-hub holdline-mcp; do
  check "$b needs no glibc symbol newer than $GLIBC_FLOOR" glibc_ok "$AD/$b"
done
# The check itself: ls, linked on this machine, needs this machine's glibc.
glibc_check_catches_newer() {
  local ls_bin
  ls_bin="$(readlink -f "$(command -v ls)")"
  if at_most "$(newest_glibc "$ls_bin")" "$GLIBC_FLOOR"; then
    echo "this machine's ls needs no glibc newer than $GLIBC_FLOOR: nothing to catch"
    return 0
  fi
  ! glibc_ok "$ls_bin" >/dev/null
}
check "the glibc check fails on this machine's ls, which needs a newer glibc" glibc_check_catches_newer

# --- (b) the wheel ---------------------------------------------------------------
V="$TMP/venv"
timed "the wheel installs into a fresh venv offline" \
  bash -c 'python3 -m venv "$1" && "$1/bin/pip" install --no-index "$2"' _ "$V" "$WHEEL"
check "venv: holdline-hub --version" prints_version holdline-hub "$V/bin/holdline-hub"
check "venv: holdline-mcp --version" prints_version holdline-mcp "$V/bin/holdline-mcp"

# --- (c) npm -----------------------------------------------------------------------
# The platform package and the main package in one command, as npm resolves the main
# package's optional dependency from the registry otherwise.
P="$TMP/npm-prefix"
timed "the npm packages install into a fresh prefix offline" \
  npm install -g --prefix "$P" --offline "$NPM_PLATFORM" "$NPM_MAIN"
check "npm: holdline-hub --version through the launcher" prints_version holdline-hub "$P/bin/holdline-hub"
check "npm: holdline-mcp --version through the launcher" prints_version holdline-mcp "$P/bin/holdline-mcp"
npx_runs() {
  local out
  out="$(cd "$TMP" && npm_config_prefix="$P" PATH="$P/bin:$PATH" timeout 60 npx --no-install holdline-mcp --version 2>&1)" || { echo "$out"; return 1; }
  [ "$out" = "holdline-mcp $VERSION" ] || { echo "npx printed: $out"; return 1; }
}
check "npm: npx holdline-mcp --version runs the installed launcher" npx_runs
# mcp_initialize BIN: an MCP initialize on BIN's stdin gets holdline-mcp's answer (no hub needed).
mcp_initialize() {
  local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test-dist","version":"1"}}}'
  local out
  mkdir -p "$TMP/mcp-home"
  out="$(printf '%s\n' "$init" | env HOME="$TMP/mcp-home" HOLDLINE_HUB=http://127.0.0.1:9 \
    timeout 20 "$1" 2>/dev/null)"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["id"]==1 and r["result"]["serverInfo"]["name"]=="holdline-mcp", r' "$out"
}
# The launcher passes the MCP stdio stream through: initialize gets holdline-mcp's answer.
mcp_through_launcher() { mcp_initialize "$P/bin/holdline-mcp"; }
check "npm: an MCP initialize through the launcher gets holdline-mcp's answer" mcp_through_launcher
launcher_passes_exit_code() {
  local rc
  "$P/bin/holdline-hub" --no-such-flag >/dev/null 2>&1
  rc=$?
  [ "$rc" = 2 ] || { echo "the launcher exited $rc, the binary's usage error is 2"; return 1; }
}
check "npm: the launcher exits with the binary's exit code" launcher_passes_exit_code

# --- holdline-mcp install writes a command that survives upgrades -------------------
# installed_command BIN: the command `BIN install --print` writes for Claude Code.
installed_command() {
  env HOME="$TMP/home" "$1" install --client claude-code --print 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(next(iter(d["mcpServers"].values()))["command"])'
}
mkdir -p "$TMP/home"
command_is() {
  local got
  got="$(installed_command "$1")" || { echo "install --print failed"; return 1; }
  [ "$got" = "$2" ] || { echo "the entry runs '$got', not '$2'"; return 1; }
}
check "npm: install writes the npm bin shim, not the platform package's binary" \
  command_is "$P/bin/holdline-mcp" "$P/bin/holdline-mcp"
check "venv: install writes the venv's holdline-mcp" command_is "$V/bin/holdline-mcp" "$V/bin/holdline-mcp"

check "venv: an MCP initialize through the wheel's holdline-mcp" mcp_initialize "$V/bin/holdline-mcp"

# --- pipx (the README's first release install), offline from the wheel's path --------------
if [ -x "$PIPX" ]; then
  pipx_installs() {
    env PIPX_HOME="$TMP/pipx" PIPX_BIN_DIR="$TMP/pipx-bin" PIPX_MAN_DIR="$TMP/pipx-man" \
      PIP_FIND_LINKS="$TOOLS/pipx-wheels" "$PIPX" install "$WHEEL" || return 1
    prints_version holdline-mcp "$TMP/pipx-bin/holdline-mcp" && prints_version holdline-hub "$TMP/pipx-bin/holdline-hub"
  }
  check "pipx: the wheel installs both commands offline" pipx_installs
else
  echo "skip pipx: it could not be fetched (the venv install above is what pipx does)"
fi

# --- (d) the MCP Bundle --------------------------------------------------------------
B="$TMP/bundle"
check "the MCP Bundle unpacks (a zip)" bash -c 'mkdir -p "$1" && unzip -q "$2" -d "$1"' _ "$B" "$BUNDLE"
# bundle_entry: the command the manifest runs, with ${__dirname} as a client fills it in.
bundle_entry() {
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]+"/manifest.json")); print(m["server"]["mcp_config"]["command"].replace("${__dirname}", sys.argv[1]))' "$B"
}
bundle_manifest_ok() {
  python3 - "$B/manifest.json" "$VERSION" <<'PY' || return 1
import json, sys
m = json.load(open(sys.argv[1]))
assert m["version"] == sys.argv[2], f"manifest version {m['version']}"
assert m["name"] == "holdline-mcp" and m["server"]["type"] == "binary", m["server"]
assert m["compatibility"]["platforms"] == ["linux"], m["compatibility"]
assert m["server"]["entry_point"] == "server/holdline-mcp"
PY
  [ -x "$B/server/holdline-mcp" ] && [ -x "$B/server/holdline-hub" ] || { echo "server/ lacks an executable binary"; return 1; }
}
check "bundle: the manifest is this version's, for linux, and server/ holds both binaries executable" bundle_manifest_ok
check "bundle: the manifest's entry runs holdline-mcp --version" prints_version holdline-mcp "$(bundle_entry)"
check "bundle: an MCP initialize through the manifest's entry" mcp_initialize "$(bundle_entry)"

# --- the names the READMEs show are the ones built --------------------------------------
check "every install command in README.md and README.zh-CN.md names what dist.sh built" \
  python3 "$ROOT/scripts/check-install-names.py" "$DIST" "$AD/holdline-mcp"

# --- the README's release path, end to end in a fresh HOME ------------------------------
# The archive's install.sh put both binaries in $TMP/archive-bin (above). As the README says
# where no service runs: start the hub, read its login URL, connect a client through the
# installed bridge. The hub listens on a free port, so nothing else on this machine is met.
release_path_end_to_end() {
  local home="$TMP/e2e-home" port url hub_pid rc=0
  mkdir -p "$home"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  env -u HOLDLINE_HOME -u HOLDLINE_SECRET HOME="$home" HOLDLINE_LISTEN="127.0.0.1:$port" \
    "$TMP/archive-bin/holdline-hub" serve > "$TMP/e2e-hub.log" 2>&1 &
  hub_pid=$!
  for _ in $(seq 1 100); do
    env -u HOLDLINE_HOME HOME="$home" HOLDLINE_LISTEN="127.0.0.1:$port" "$TMP/archive-bin/holdline-hub" status >/dev/null 2>&1 && break
    sleep 0.2
  done
  url="$(env -u HOLDLINE_HOME HOME="$home" HOLDLINE_LISTEN="127.0.0.1:$port" "$TMP/archive-bin/holdline-hub" panel-url --no-qr 2>&1)"
  case "$url" in
    "http://127.0.0.1:$port/#key=$(cat "$home/.holdline/secret" 2>/dev/null)") ;;
    *) echo "panel-url printed '$url', not the login URL with the secret"; rc=1 ;;
  esac
  if [ "$rc" = 0 ]; then
    env -u HOLDLINE_HOME -u HOLDLINE_SECRET HOME="$home" HOLDLINE_HUB="http://127.0.0.1:$port" python3 - "$TMP/archive-bin/holdline-mcp" <<'PY' || rc=1
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
def answer(want):
    while True:
        line = p.stdout.readline()
        assert line, "the bridge closed its output"
        msg = json.loads(line)
        if msg.get("id") == want:
            return msg
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test-dist", "version": "1"}}})
assert answer(1)["result"]["serverInfo"]["name"] == "holdline-mcp"
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
tools = {t["name"] for t in answer(2)["result"]["tools"]}
assert {"init_conversation", "wait_for_user_input"} <= tools, tools
p.stdin.close(); p.wait(timeout=20)
print("tools:", sorted(tools))
PY
  fi
  kill -TERM "$hub_pid" 2>/dev/null
  wait "$hub_pid" 2>/dev/null
  [ "$rc" = 0 ] || { tail -5 "$TMP/e2e-hub.log"; return 1; }
}
check "release path: archive install, hub up, login URL printed, MCP initialize and tools/list through the bridge" \
  release_path_end_to_end

echo
if [ "$FAILED" -gt 0 ]; then
  printf 'failed:\n'; printf '  %s\n' "${FAILURES[@]}"
fi
echo "dist: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
