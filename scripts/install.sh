#!/usr/bin/env bash
# Install holdline: both binaries into a prefix, the hub as a service, started.
#
#   scripts/install.sh                      build release binaries, install, start the service
#   scripts/install.sh --bin-dir DIR        use prebuilt holdline-hub and holdline-mcp from DIR
#   scripts/install.sh --prefix DIR         install the binaries into DIR (default ~/.local/bin)
#   scripts/install.sh --no-service         only install the binaries, touch no service
#   scripts/install.sh --with-sync          build the hub with MongoDB sync between hubs (the `sync`
#                                           feature; the build takes about two minutes more)
#   scripts/install.sh --print-service KIND print the rendered service file (systemd|launchd) and exit
#
# Linux: a systemd user unit (~/.config/systemd/user/holdline-hub.service) when
# `systemctl --user` works. macOS: a LaunchAgent (~/Library/LaunchAgents/dev.holdline.hub.plist).
# Running it again upgrades in place and restarts the service. It never asks
# anything. What it installed is listed in ~/.holdline/install-manifest, which
# scripts/uninstall.sh reads. HOLDLINE_HOME moves the home as for the hub.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${HOME}/.local/bin"
BIN_DIR=""
SERVICE=1
# The hub's cargo features: MongoDB sync is left out unless asked for (a multi-hub setup).
FEATURES=(--no-default-features)
PRINT_SERVICE=""
HL_HOME="${HOLDLINE_HOME:-${HOME}/.holdline}"
LABEL="dev.holdline.hub"
UNIT="holdline-hub.service"

say() { printf '%s\n' "$*"; }
warn() { printf 'install: %s\n' "$*" >&2; }
die() { printf 'install: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; PREFIX="$2"; shift 2 ;;
    --prefix=*) PREFIX="${1#*=}"; shift ;;
    --bin-dir) [ $# -ge 2 ] || die "--bin-dir needs a folder"; BIN_DIR="$2"; shift 2 ;;
    --bin-dir=*) BIN_DIR="${1#*=}"; shift ;;
    --no-service) SERVICE=0; shift ;;
    --with-sync) FEATURES=(); shift ;;
    --print-service) [ $# -ge 2 ] || die "--print-service needs systemd or launchd"; PRINT_SERVICE="$2"; shift 2 ;;
    --print-service=*) PRINT_SERVICE="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

abspath() { # absolute form of a path that may not exist yet
  case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$(pwd)" "$1" ;; esac
}
PREFIX="$(abspath "$PREFIX")"
HL_HOME="$(abspath "$HL_HOME")"

# --- rendering the service files -------------------------------------------

# Rendering is done in awk with plain-text replacement (index/substr) and the
# paths passed through the environment: no sed, awk -v or ${var//} escaping
# rules to trip over (they differ between bash 3.2, 4.x and 5.2 and between
# awks), whatever characters the paths hold.
AWK_LIB='
function repl(s, from, to,   out, p) {
  out = ""
  while ((p = index(s, from)) > 0) { out = out substr(s, 1, p - 1) to; s = substr(s, p + length(from)) }
  return out s
}
# One systemd word: quoted, with backslash, double quote and % escaped.
function sdq(s) { s = repl(s, "\\", "\\\\"); s = repl(s, "\"", "\\\""); s = repl(s, "%", "%%"); return "\"" s "\"" }
function xml(s) { s = repl(s, "&", "&amp;"); s = repl(s, "<", "&lt;"); return repl(s, ">", "&gt;") }
'

render_systemd() {
  # The unit in the repo points at %h/.local/bin and %h/.holdline; write the
  # real paths so a custom --prefix or HOLDLINE_HOME works as well.
  R_HUB="${PREFIX}/holdline-hub" R_HOME="$HL_HOME" awk "$AWK_LIB"'
    BEGIN { hub = sdq(ENVIRON["R_HUB"]); home = sdq(ENVIRON["R_HOME"]) }
    /^ExecStartPre=\+mkdir / { print "ExecStartPre=+mkdir -p -m 0700 " home; next }
    /^ExecStart=/            { print "ExecStart=" hub " serve"; next }
    /^Environment=HOLDLINE_HOME=/ { print "Environment=" sdq("HOLDLINE_HOME=" ENVIRON["R_HOME"]); next }
    /^ReadWritePaths=/       { print "ReadWritePaths=" home; next }
    { print }
  ' "$ROOT/systemd/holdline-hub.service"
}

render_launchd() {
  R_BIN="$PREFIX" R_HLHOME="$HL_HOME" R_HOME="$HOME" awk "$AWK_LIB"'
    {
      line = repl($0, "__BIN_DIR__", xml(ENVIRON["R_BIN"]))
      line = repl(line, "__HOME__/.holdline", xml(ENVIRON["R_HLHOME"]))
      print repl(line, "__HOME__", xml(ENVIRON["R_HOME"]))
    }
  ' "$ROOT/launchd/${LABEL}.plist"
}

case "$PRINT_SERVICE" in
  "") ;;
  systemd) render_systemd; exit 0 ;;
  launchd) render_launchd; exit 0 ;;
  *) die "--print-service takes systemd or launchd, not '$PRINT_SERVICE'" ;;
esac

# --- binaries ---------------------------------------------------------------

if [ -z "$BIN_DIR" ]; then
  command -v cargo >/dev/null 2>&1 \
    || die "cargo not found: install Rust (https://rustup.rs) or pass --bin-dir DIR with prebuilt binaries"
  say "Building release binaries (the first build takes several minutes)…"
  (cd "$ROOT" && cargo build --release -p holdline-hub -p holdline-mcp ${FEATURES[@]+"${FEATURES[@]}"}) \
    || die "cargo build failed (see above)"
  BIN_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi
for b in holdline-hub holdline-mcp; do
  [ -x "$BIN_DIR/$b" ] || die "$BIN_DIR/$b is missing or not executable"
done

mkdir -p "$PREFIX"
for b in holdline-hub holdline-mcp; do
  # Copy next to the target, then rename: replacing a running binary this
  # way never fails with "text file busy" and is atomic.
  install -m 0755 "$BIN_DIR/$b" "$PREFIX/.$b.new"
  mv -f "$PREFIX/.$b.new" "$PREFIX/$b"
done
say "Installed holdline-hub and holdline-mcp into $PREFIX"

# The home: 0700, with logs/ for launchd and the hub.
mkdir -p "$HL_HOME/logs"
chmod 0700 "$HL_HOME" "$HL_HOME/logs"

MANIFEST="$HL_HOME/install-manifest"
write_manifest() { # every line: KIND<TAB>PATH
  local tmp="$MANIFEST.tmp"
  (
    umask 077
    {
      printf 'bin\t%s\n' "$PREFIX/holdline-hub" "$PREFIX/holdline-mcp"
      [ -n "${SERVICE_FILE:-}" ] && printf '%s\t%s\n' "$SERVICE_KIND" "$SERVICE_FILE"
      true
    } > "$tmp"
  )
  mv -f "$tmp" "$MANIFEST"
}

# A service written by an earlier install stays listed even with --no-service.
SERVICE_KIND=""; SERVICE_FILE=""
if [ -f "$MANIFEST" ]; then
  while IFS=$'\t' read -r kind path; do
    case "$kind" in systemd|launchd) SERVICE_KIND="$kind"; SERVICE_FILE="$path" ;; esac
  done < "$MANIFEST"
fi
write_manifest

# --- service ----------------------------------------------------------------

HUB=("$PREFIX/holdline-hub")
export HOLDLINE_HOME="$HL_HOME"

wait_healthy() { # the service answers `holdline-hub status` within ~15 s
  local _
  for _ in $(seq 1 30); do
    if "${HUB[@]}" status >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  return 1
}

STARTED=0
NO_SERVICE_REASON=""
install_systemd() {
  local dir="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
  local file="$dir/$UNIT"
  mkdir -p "$dir"
  render_systemd > "$file.tmp" && mv -f "$file.tmp" "$file"
  SERVICE_KIND=systemd; SERVICE_FILE="$file"; write_manifest
  systemctl --user daemon-reload
  systemctl --user enable "$UNIT" >/dev/null 2>&1 || systemctl --user enable "$UNIT"
  systemctl --user restart "$UNIT"
  say "Service: systemd user unit $file (restarted)"
  if wait_healthy; then
    STARTED=1
    # A hub started by hand (or by a bridge) on the same address also answers
    # `status`, while the service fails to bind; make sure it is the service.
    sleep 1
    if ! systemctl --user is-active --quiet "$UNIT"; then
      STARTED=0
      warn "another holdline-hub already listens on the configured address, so the service cannot start."
      warn "Stop that one (Ctrl-C where it runs), then: systemctl --user restart holdline-hub"
    fi
  else
    warn "the service did not answer yet; see: systemctl --user status holdline-hub; journalctl --user -u holdline-hub"
  fi
  if command -v loginctl >/dev/null 2>&1 \
     && [ "$(loginctl show-user "$(id -un)" -p Linger --value 2>/dev/null || true)" = "no" ]; then
    say "Note: it stops when you log out. To keep it running: loginctl enable-linger $(id -un)"
  fi
}

install_launchd() {
  local dir="$HOME/Library/LaunchAgents"
  local file="$dir/$LABEL.plist"
  local domain; domain="gui/$(id -u)"
  mkdir -p "$dir"
  render_launchd > "$file.tmp" && mv -f "$file.tmp" "$file"
  if command -v plutil >/dev/null 2>&1; then plutil -lint -s "$file" || die "$file is not a valid plist"; fi
  SERVICE_KIND=launchd; SERVICE_FILE="$file"; write_manifest
  # Unload the old job (if any), then load the new file; bootout finishes
  # asynchronously, so retry bootstrap for a few seconds.
  launchctl bootout "$domain/$LABEL" >/dev/null 2>&1 || true
  local ok=0 _
  for _ in $(seq 1 10); do
    if launchctl bootstrap "$domain" "$file" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  if [ "$ok" = 0 ]; then
    launchctl unload "$file" >/dev/null 2>&1 || true
    launchctl load -w "$file" || die "launchctl could not load $file"
  fi
  say "Service: LaunchAgent $file (restarted)"
  if wait_healthy; then
    STARTED=1
    sleep 1
    if ! launchctl print "$domain/$LABEL" 2>/dev/null | grep -q 'state = running'; then
      STARTED=0
      warn "another holdline-hub already listens on the configured address, so the LaunchAgent cannot start."
      warn "Stop that one (Ctrl-C where it runs); launchd starts the agent again within seconds."
    fi
  else
    warn "the service did not answer yet; see $HL_HOME/logs/launchd.err"
  fi
}

if [ "$SERVICE" = 1 ]; then
  case "$(uname -s)" in
    Darwin) install_launchd ;;
    Linux)
      if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then
        install_systemd
      else
        NO_SERVICE_REASON="this machine has no systemd user manager (\`systemctl --user\` does not answer: a container, WSL without systemd, or a root shell)"
      fi
      ;;
    *) NO_SERVICE_REASON="install.sh has no service support for $(uname -s)" ;;
  esac
elif [ -n "$SERVICE_KIND" ] && [ "$SERVICE_KIND" = systemd ] && [ -f "$SERVICE_FILE" ]; then
  say "Note: --no-service: the existing service ($SERVICE_FILE) was not restarted."
fi

# --- what next --------------------------------------------------------------

case ":$PATH:" in
  *":$PREFIX:"*) ;;
  *) say "Note: $PREFIX is not on your PATH. Add it, e.g.: echo 'export PATH=\"$PREFIX:\$PATH\"' >> ~/.profile" ;;
esac

HUB_RUNNING=0
"${HUB[@]}" status >/dev/null 2>&1 && HUB_RUNNING=1
say ""
if URL="$("${HUB[@]}" panel-url --no-qr 2>/dev/null)" && [ -n "$URL" ]; then
  if [ "$HUB_RUNNING" = 1 ]; then
    say "Panel (open it once in a browser; it keeps you signed in):"
  else
    say "Panel, once the hub runs (open it once in a browser; it keeps you signed in):"
  fi
  say "$URL"
  say "('$PREFIX/holdline-hub panel-url' prints it again, with a QR code for a phone.)"
else
  say "Panel URL: run '$PREFIX/holdline-hub panel-url' once the hub is running."
fi
if [ "$STARTED" = 0 ] && [ "$SERVICE" = 0 ]; then
  say ""
  say "Start the hub:   $PREFIX/holdline-hub serve"
fi
say ""
say "Next: connect your IDE — in your project folder run, e.g.:"
say "  $PREFIX/holdline-mcp install --client cursor"
say "  (clients: cursor, claude-code, codex, vscode, windsurf, trae, cline, gemini, qwen,"
say "   copilot, opencode, continue, kilo, droid, mistral-vibe, kimi-code, openhands,"
say "   roo-code, zed; --print to only show)"
say "then restart that IDE and ask its agent to wait for your input through holdline."

# Said last, where it is seen: without a service nothing starts the hub.
if [ -n "$NO_SERVICE_REASON" ]; then
  q() { local sq="'\\''"; printf "'%s'" "${1//\'/$sq}"; } # one shell word, single-quoted
  LOG="$HL_HOME/logs/hub.log"
  say ""
  say "No service was installed: $NO_SERVICE_REASON."
  if [ "$HUB_RUNNING" = 1 ]; then
    say "A hub is running now, but nothing will start it again after a restart."
  else
    say "The hub is NOT running. Start it now (it keeps running after this shell closes):"
    say "  nohup $(q "$PREFIX/holdline-hub") serve > /dev/null 2>&1 &   (it writes $(q "$LOG") itself)"
  fi
  say "To start it at every boot without a service, add it to your crontab:"
  # In a crontab line % ends the command unless escaped.
  CRON_LINE="@reboot \"$PREFIX/holdline-hub\" serve > /dev/null 2>&1"
  CRON_LINE="${CRON_LINE//%/\\%}"
  say "  (crontab -l 2>/dev/null; echo $(q "$CRON_LINE")) | crontab -"
  say "An IDE's holdline-mcp also starts the hub by itself when none answers."
  say "With root and systemd, the system unit is another way: see docs/operations.md."
fi
