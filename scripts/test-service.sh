#!/usr/bin/env bash
# Tests the service side: systemd units, the LaunchAgent plist,
# install.sh / uninstall.sh, `holdline-hub config` on a broken config file,
# and that the README's commands and links exist as written.
#
#   scripts/test-service.sh [--bin-dir DIR]
#
# Uses already built binaries (default: target/debug, as scripts/test.sh
# builds them); builds nothing. Works in temporary folders only: never
# touches your ~/.holdline, your services or your PATH. Installs the Debian
# package `systemd` when systemd-analyze is missing. Ends with
# "service: N passed, M failed" and exits non-zero when anything failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) BIN_DIR="$2"; shift 2 ;;
    --bin-dir=*) BIN_DIR="${1#*=}"; shift ;;
    *) echo "test-service: unknown option '$1'" >&2; exit 2 ;;
  esac
done
case "$BIN_DIR" in /*) ;; *) BIN_DIR="$(pwd)/$BIN_DIR" ;; esac

# A time limit for commands that could hang (macOS has no timeout(1) by default).
if command -v timeout >/dev/null 2>&1; then T20=(timeout 20); T60=(timeout 60); else T20=(); T60=(); fi

PASSED=0
FAILED=0
FAILURES=()
ok() { PASSED=$((PASSED + 1)); printf 'ok   %s\n' "$1"; }
bad() { FAILED=$((FAILED + 1)); FAILURES+=("$1"); printf 'FAIL %s\n' "$1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/     | /'; }
# has_all TEXT WORD...: TEXT contains every WORD.
has_all() { local text="$1" w; shift; for w in "$@"; do grep -qF -- "$w" <<<"$text" || { echo "no '$w' in: $text"; return 1; }; done; }
# check NAME CMD...: passes when CMD exits 0.
check() { local name="$1"; shift; local out; if out="$("$@" 2>&1)"; then ok "$name"; else bad "$name" "$out"; fi; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/holdline-test-service.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# A clean environment for everything that runs install.sh or the hub: a
# temporary HOME whose name needs quoting (space, &, %) in unit files and XML.
FAKE_HOME="$TMP/home dir&50%"
mkdir -p "$FAKE_HOME" "$TMP/run"
chmod 0700 "$TMP/run"
in_fake_home() {
  env -u HOLDLINE_HOME -u HOLDLINE_MONGO_URI -u HOLDLINE_SECRET -u HOLDLINE_HUB \
    HOME="$FAKE_HOME" XDG_CONFIG_HOME="$FAKE_HOME/.config" XDG_RUNTIME_DIR="$TMP/run" "$@"
}

have_bins=1
for b in holdline-hub holdline-mcp; do
  if [ ! -x "$BIN_DIR/$b" ]; then
    have_bins=0
    bad "binary $BIN_DIR/$b exists" "build first: cargo build -p holdline-hub -p holdline-mcp"
  fi
done

# --- syntax of every script -------------------------------------------------
for s in install.sh uninstall.sh run.sh test-service.sh; do
  check "scripts/$s is executable and parses" bash -c "test -x '$ROOT/scripts/$s' && bash -n '$ROOT/scripts/$s'"
done

# --- install.sh / uninstall.sh, each run twice --------------------------------
PREFIX="$TMP/prefix/bin"
HL="$FAKE_HOME/.holdline"
if [ "$have_bins" = 1 ]; then
  for round in 1 2; do
    check "install.sh --no-service (run $round) exits 0" \
      in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR" --prefix "$PREFIX"
    check "install.sh (run $round) put both binaries into the prefix, unchanged" bash -c "
      cmp -s '$BIN_DIR/holdline-hub' '$PREFIX/holdline-hub' && test -x '$PREFIX/holdline-hub' &&
      cmp -s '$BIN_DIR/holdline-mcp' '$PREFIX/holdline-mcp' && test -x '$PREFIX/holdline-mcp'"
    check "install.sh (run $round) made the home 0700 with logs/ and a manifest" bash -c "
      test \"\$(stat -c %a '$HL' 2>/dev/null || stat -f %Lp '$HL')\" = 700 &&
      test -d '$HL/logs' && grep -q holdline-hub '$HL/install-manifest'"
    check "install.sh --no-service (run $round) wrote no service file" bash -c "
      test ! -e '$FAKE_HOME/.config/systemd/user/holdline-hub.service' &&
      test ! -e '$FAKE_HOME/Library/LaunchAgents/dev.holdline.hub.plist'"
  done
  check "the installed holdline-hub runs (--version)" in_fake_home ${T20[@]+"${T20[@]}"} "$PREFIX/holdline-hub" --version
  check "the installed holdline-mcp runs (--version)" in_fake_home ${T20[@]+"${T20[@]}"} "$PREFIX/holdline-mcp" --version
  out="$(in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR" --prefix "$PREFIX" 2>&1)"
  check "install.sh prints the next step (holdline-mcp install --client)" grep -q 'holdline-mcp install --client' <<<"$out"

  # Data the person made must survive an uninstall without --purge.
  printf 'keep me\n' > "$HL/data-marker"
  for round in 1 2; do
    check "uninstall.sh (run $round) exits 0" in_fake_home "$ROOT/scripts/uninstall.sh"
    check "uninstall.sh (run $round) removed both binaries and the manifest" bash -c "
      test ! -e '$PREFIX/holdline-hub' && test ! -e '$PREFIX/holdline-mcp' && test ! -e '$HL/install-manifest'"
    check "uninstall.sh (run $round) kept the home and its data" test -f "$HL/data-marker"
  done
  check "install.sh after an uninstall exits 0" \
    in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR" --prefix "$PREFIX"
  for round in 1 2; do
    check "uninstall.sh --purge (run $round) exits 0" in_fake_home "$ROOT/scripts/uninstall.sh" --purge
    check "uninstall.sh --purge (run $round) deleted the home and the binaries" bash -c "
      test ! -e '$HL' && test ! -e '$PREFIX/holdline-hub' && test ! -e '$PREFIX/holdline-mcp'"
  done
  # uninstall.sh takes holdline out of the IDEs before deleting the binary they run.
  check "install.sh for the IDE checks exits 0" \
    in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR" --prefix "$PREFIX"
  printf '{\n  "mcpServers": {\n    "other": {\n      "command": "x"\n    }\n  }\n}\n' > "$FAKE_HOME/.claude.json"
  cp "$FAKE_HOME/.claude.json" "$TMP/claude.json.before"
  check "holdline-mcp install --client claude-code exits 0" \
    in_fake_home bash -c "cd \"\$HOME\" && '$PREFIX/holdline-mcp' install --client claude-code"
  check "... wrote holdline's entry" grep -q '"holdline"' "$FAKE_HOME/.claude.json"
  out="$(in_fake_home "$ROOT/scripts/uninstall.sh" 2>&1)"
  check "uninstall.sh removed holdline's IDE entry and left the rest byte for byte" \
    cmp -s "$TMP/claude.json.before" "$FAKE_HOME/.claude.json"
  check "uninstall.sh said so" has_all "$out" "removed holdline's entry"
  # --purge after a plain uninstall: the binaries are gone, the home is not.
  out="$(in_fake_home "$ROOT/scripts/uninstall.sh" --purge 2>&1)"
  check "uninstall.sh --purge after an uninstall deletes the home without a contradiction" bash -c "
    test ! -e '$HL' && grep -q 'Deleted' <<<\"\$1\" && ! grep -q 'Nothing to remove' <<<\"\$1\"" _ "$out"
  rm -f "$FAKE_HOME/.claude.json"

  # No systemd user manager (a container, WSL without systemd, a root shell): a
  # systemctl that cannot reach the user bus stands in for it.
  if [ "$(uname -s)" = Linux ]; then
    mkdir -p "$TMP/no-user-manager"
    printf '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n' > "$TMP/no-user-manager/systemctl"
    chmod +x "$TMP/no-user-manager/systemctl"
    out="$(in_fake_home env PATH="$TMP/no-user-manager:$PATH" "$ROOT/scripts/install.sh" --bin-dir "$BIN_DIR" --prefix "$PREFIX" 2>&1)"
    rc=$?
    check "install.sh without a systemd user manager exits 0: the binaries are installed" \
      bash -c "test '$rc' = 0 && test -x '$PREFIX/holdline-hub'"
    check "... says last that no service was installed, and how to start and keep the hub" bash -c '
      tail_block="$(printf "%s\n" "$1" | sed -n "/^No service was installed/,\$p")"
      test -n "$tail_block" &&
      grep -q "The hub is NOT running" <<<"$tail_block" &&
      grep -q "nohup .*holdline-hub'"'"' serve" <<<"$tail_block" &&
      grep -q "crontab" <<<"$tail_block" &&
      ! grep -q "^Next:" <<<"$tail_block"' _ "$out"
    check "... does not present the panel as if the hub ran" bash -c '! grep -q "^Panel (open it once" <<<"$1"' _ "$out"
    check "... wrote no service file" test ! -e "$FAKE_HOME/.config/systemd/user/holdline-hub.service"
  fi
  in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$TMP/no-such-dir" --prefix "$TMP/p2" >/dev/null 2>&1
  rc=$?
  check "install.sh exits non-zero when nothing was installed" bash -c "test '$rc' != 0 && test ! -e '$TMP/p2/holdline-hub'"
  in_fake_home "$ROOT/scripts/uninstall.sh" --purge >/dev/null 2>&1

  # A hub no service manager runs (nohup, cron, a bridge's auto-start) is
  # stopped by uninstall.sh, and the crontab line install.sh suggested goes;
  # a crontab stand-in keeps the table in a file.
  in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR" --prefix "$PREFIX" >/dev/null 2>&1
  mkdir -p "$TMP/cron"
  printf '#!/bin/sh\ntab="%s/cron/table"\ncase "$1" in -l) [ -f "$tab" ] && cat "$tab" || exit 1 ;; -r) rm -f "$tab" ;; -) cat > "$tab" ;; esac\n' "$TMP" > "$TMP/cron/crontab"
  chmod +x "$TMP/cron/crontab"
  printf '%s\n' '0 3 * * * backup-my-stuff' "@reboot \"$PREFIX/holdline-hub\" serve > /dev/null 2>&1" > "$TMP/cron/table"
  # Started directly (not through the function), so $! is the hub itself.
  env -u HOLDLINE_HOME HOME="$FAKE_HOME" "$PREFIX/holdline-hub" serve --listen 127.0.0.1:0 > /dev/null 2>&1 &
  hub_pid=$!
  for _ in $(seq 100); do [ -f "$HL/hub.addr" ] && break; sleep 0.1; done
  out="$(in_fake_home env PATH="$TMP/cron:$PATH" "$ROOT/scripts/uninstall.sh" 2>&1)"
  # Gone, or a zombie this script has not reaped yet.
  gone() { ! ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; }
  for _ in $(seq 100); do gone "$hub_pid" && break; sleep 0.1; done
  check "uninstall.sh stops a hub started with nohup, and says so" bash -c "
    ! ps -o stat= -p '$hub_pid' 2>/dev/null | grep -qv Z && grep -q '^stopped holdline-hub (PID $hub_pid)' <<<\"\$1\"" _ "$out"
  check "uninstall.sh removes the @reboot line and keeps the rest of the crontab" bash -c "
    test \"\$(cat '$TMP/cron/table')\" = '0 3 * * * backup-my-stuff'"
  kill "$hub_pid" 2>/dev/null || true
  in_fake_home "$ROOT/scripts/uninstall.sh" --purge >/dev/null 2>&1

  # Leave binaries at the default prefix of the fake home for the unit checks.
  check "install.sh with the default prefix (~/.local/bin) exits 0" \
    in_fake_home "$ROOT/scripts/install.sh" --no-service --bin-dir "$BIN_DIR"
fi

# --- systemd units ------------------------------------------------------------
SYSTEMD_OK=1
if ! command -v systemd-analyze >/dev/null 2>&1; then
  if [ "$(uname -s)" = Linux ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing the Debian package systemd (for systemd-analyze)…"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends systemd >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends systemd >/dev/null 2>&1; }
  fi
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
  SYSTEMD_OK=0
  if [ "$(uname -s)" = Linux ]; then
    bad "systemd-analyze is available" "install the systemd package (apt-get install systemd)"
  else
    echo "skip systemd checks: no systemd-analyze on $(uname -s)"
  fi
fi

# verify_unit NAME MODE FILE: `systemd-analyze verify` must exit 0 and say nothing
# (it only warns about unknown keys or bad values, still exiting 0).
verify_unit() {
  local name="$1" mode="$2" file="$3" out rc
  if [ "$mode" = user ]; then
    out="$(in_fake_home systemd-analyze --user --man=no verify "$file" 2>&1)"; rc=$?
  else
    out="$(systemd-analyze --man=no verify "$file" 2>&1)"; rc=$?
  fi
  if [ "$rc" = 0 ] && [ -z "$out" ]; then ok "$name"; else bad "$name" "exit $rc: $out"; fi
}

HARDENING="NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ProtectKernelTunables=yes
ProtectKernelModules=yes ProtectControlGroups=yes LockPersonality=yes MemoryDenyWriteExecute=yes
Restart=on-failure"
for unit in holdline-hub.service holdline-hub-system.service; do
  missing=""
  for opt in $HARDENING; do grep -qx "$opt" "$ROOT/systemd/$unit" || missing="$missing $opt"; done
  grep -qx 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' "$ROOT/systemd/$unit" || missing="$missing RestrictAddressFamilies"
  grep -q '^ProtectHome=' "$ROOT/systemd/$unit" || missing="$missing ProtectHome"
  grep -q '^ReadWritePaths=' "$ROOT/systemd/$unit" || missing="$missing ReadWritePaths"
  if [ -z "$missing" ]; then ok "systemd/$unit has the hardening options"; else bad "systemd/$unit has the hardening options" "missing:$missing"; fi
done
check "user unit: its own user namespace, read-only home except ~/.holdline" bash -c "
  grep -qx 'PrivateUsers=yes' '$ROOT/systemd/holdline-hub.service' &&
  grep -qx 'ProtectHome=read-only' '$ROOT/systemd/holdline-hub.service' &&
  grep -qx 'ReadWritePaths=%h/.holdline' '$ROOT/systemd/holdline-hub.service'"

if [ "$SYSTEMD_OK" = 1 ] && [ "$have_bins" = 1 ]; then
  # The user unit as shipped: ExecStart=%h/.local/bin/holdline-hub, and the
  # fake home has the real binary there.
  verify_unit "systemd-analyze verify systemd/holdline-hub.service (user)" user "$ROOT/systemd/holdline-hub.service"
  # The system unit, with ExecStart pointed at an installed binary.
  mkdir -p "$TMP/units" "$TMP/sysbin"
  cp "$BIN_DIR/holdline-hub" "$TMP/sysbin/holdline-hub"
  sed "s#^ExecStart=/usr/local/bin/holdline-hub #ExecStart=$TMP/sysbin/holdline-hub #" \
    "$ROOT/systemd/holdline-hub-system.service" > "$TMP/units/holdline-hub-system.service"
  check "system unit's ExecStart is /usr/local/bin/holdline-hub serve" \
    grep -qx 'ExecStart=/usr/local/bin/holdline-hub serve' "$ROOT/systemd/holdline-hub-system.service"
  verify_unit "systemd-analyze verify systemd/holdline-hub-system.service (system)" system "$TMP/units/holdline-hub-system.service"
  # The unit install.sh writes, for a prefix and home that need quoting.
  mkdir -p "$TMP/rendered"
  if in_fake_home "$ROOT/scripts/install.sh" --print-service systemd > "$TMP/rendered/holdline-hub.service"; then
    verify_unit "systemd-analyze verify on the unit install.sh writes" user "$TMP/rendered/holdline-hub.service"
  else
    bad "install.sh --print-service systemd"
  fi
fi

# --- launchd plist --------------------------------------------------------------
PY="$(command -v python3 || true)"
if [ -z "$PY" ]; then
  bad "python3 is available (to parse the plist)"
else
  plist_check() { # FILE HOME: parse with plistlib and check the keys
    "$PY" - "$1" "$2" <<'EOF'
import plistlib, sys
path, home = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    d = plistlib.load(f)
assert d["Label"] == "dev.holdline.hub", d.get("Label")
args = d["ProgramArguments"]
assert args[0].endswith("/holdline-hub") and args[1:] == ["serve"], args
assert d["RunAtLoad"] is True, "RunAtLoad"
assert d["KeepAlive"] not in (False, None), "KeepAlive"
assert d["StandardOutPath"] == home + "/.holdline/logs/launchd.log", d["StandardOutPath"]
assert d["StandardErrorPath"] == home + "/.holdline/logs/launchd.err", d["StandardErrorPath"]
assert d["EnvironmentVariables"]["HOLDLINE_HOME"] == home + "/.holdline"
EOF
  }
  check "launchd/dev.holdline.hub.plist parses with plistlib and has the keys" \
    plist_check "$ROOT/launchd/dev.holdline.hub.plist" "__HOME__"
  if in_fake_home "$ROOT/scripts/install.sh" --print-service launchd > "$TMP/rendered.plist"; then
    rendered_plist_ok() { plist_check "$TMP/rendered.plist" "$FAKE_HOME" && ! grep -q '__[A-Z_]*__' "$TMP/rendered.plist"; }
    check "the plist install.sh writes parses, with the real home and no placeholders left" rendered_plist_ok
    check "the plist install.sh writes runs the installed binary" \
      "$PY" -c "import plistlib,sys; d=plistlib.load(open(sys.argv[1],'rb')); assert d['ProgramArguments'][0]==sys.argv[2], d" \
      "$TMP/rendered.plist" "$FAKE_HOME/.local/bin/holdline-hub"
  else
    bad "install.sh --print-service launchd"
  fi
fi

# --- the user service, live, under a real systemd user manager ------------------
# On a machine without a running systemd (a container, CI) but with systemd
# installed, start a systemd user manager for a throwaway account inside a
# private mount namespace and run install.sh for real: the unit must start
# the hub under its sandbox, answer `holdline-hub status`, survive a second
# install (restart), come back after kill -9 (Restart=on-failure), and go away
# with uninstall.sh. Nothing outside the namespace is touched except a
# cgroup folder, removed at the end. Skipped where this cannot be arranged.
live_service_check() {
  local why=""
  [ "$(uname -s)" = Linux ] || why="not Linux"
  [ -z "$why" ] && [ "$(id -u)" != 0 ] && why="needs root"
  [ -z "$why" ] && [ -d /run/systemd/system ] && why="systemd already runs this machine (use systemctl --user by hand)"
  local mgr=""
  for m in /usr/lib/systemd/systemd /lib/systemd/systemd; do [ -x "$m" ] && { mgr="$m"; break; }; done
  [ -z "$why" ] && [ -z "$mgr" ] && why="no systemd binary"
  for t in unshare setpriv "$PY"; do [ -z "$why" ] && ! command -v "$t" >/dev/null 2>&1 && why="no $t"; done
  [ -z "$why" ] && [ ! -w /sys/fs/cgroup/unified ] && [ ! -w /sys/fs/cgroup/cgroup.procs ] && why="no writable cgroup file system"
  if [ -n "$why" ]; then echo "skip live user-service check: $why"; return 0; fi

  local W="$TMP/live" uid=4242 cg="holdline-test-$$"
  mkdir -p "$W/repo" "$W/bin"
  cp -r "$ROOT/scripts" "$ROOT/systemd" "$ROOT/launchd" "$W/repo/"
  cp "$BIN_DIR/holdline-hub" "$BIN_DIR/holdline-mcp" "$W/bin/"
  chmod -R a+rX "$TMP"
  local port; port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

  # Runs as the throwaway user; writes "ok NAME" / "FAIL NAME: detail" lines.
  cat > "$W/inner.sh" <<'INNER'
set -u
R="$HOME/results"; : > "$R"
res() { if [ "$1" = 0 ]; then echo "ok $2" >> "$R"; else echo "FAIL $2: ${3:-}" >> "$R"; fi; }
"$MGR" --user >/dev/null 2>&1 &
up=1; for _ in $(seq 1 50); do systemctl --user is-system-running >/dev/null 2>&1 && { up=0; break; }; [ "$(systemctl --user is-system-running 2>/dev/null)" = degraded ] && { up=0; break; }; sleep 0.2; done
[ "$up" = 0 ] || exit 3
mkdir -p -m 0700 "$HOME/.holdline"
printf 'listen = "127.0.0.1:%s"\n' "$PORT" > "$HOME/.holdline/config.toml"; chmod 600 "$HOME/.holdline/config.toml"
mainpid() { systemctl --user show holdline-hub -p MainPID --value; }
out="$("$W/repo/scripts/install.sh" --bin-dir "$W/bin" 2>&1)"; res $? "live: install.sh (with service) exits 0" "$out"
res "$(test -f "$HOME/.config/systemd/user/holdline-hub.service"; echo $?)" "live: install.sh wrote the user unit"
res "$(systemctl --user is-enabled holdline-hub >/dev/null 2>&1; echo $?)" "live: the unit is enabled"
res "$(systemctl --user is-active holdline-hub >/dev/null 2>&1; echo $?)" "live: the hub runs under the sandboxed unit" "$(systemctl --user status holdline-hub 2>&1 | head -8)"
out="$("$HOME/.local/bin/holdline-hub" status 2>&1)"; res $? "live: holdline-hub status reaches the service" "$out"
pid="$(mainpid)"
res "$(awk 'END { exit !(NR == 1 && $3 == 1) }' "/proc/$pid/uid_map"; echo $?)" "live: the hub runs in its own user namespace (PrivateUsers)" "$(cat "/proc/$pid/uid_map" 2>&1)"
res "$(awk -v h="$HOME" '
  ($5 == "/home" || $5 == h) && $6 ~ /(^|,)ro(,|$)/ { ro = 1 }
  $5 == h "/.holdline" && $6 ~ /(^|,)rw(,|$)/ { rw = 1 }
  END { exit !(ro && rw) }' "/proc/$pid/mountinfo"; echo $?)" "live: the hub sees the home read-only and only ~/.holdline writable" "$(grep -E ' /home' "/proc/$pid/mountinfo" 2>&1)"
m="$(stat -c %a "$HOME/.holdline/secret" 2>/dev/null)"; res "$([ "$m" = 600 ]; echo $?)" "live: the service made the secret, mode 0600" "mode '$m'"
res "$(test -d "$HOME/.holdline/db"; echo $?)" "live: the sandboxed service wrote its store in its home (db/)"
p1="$(mainpid)"
out="$("$W/repo/scripts/install.sh" --bin-dir "$W/bin" 2>&1)"; rc=$?
p2="$(mainpid)"
res "$([ "$rc" = 0 ] && [ "$p2" != 0 ] && [ "$p2" != "$p1" ]; echo $?)" "live: a second install.sh restarts the service" "rc $rc, pid $p1 -> $p2: $out"
kill -9 "$p2" 2>/dev/null
p3=0; for _ in $(seq 1 40); do sleep 0.25; p3="$(mainpid)"; [ "$p3" != 0 ] && [ "$p3" != "$p2" ] && systemctl --user is-active holdline-hub >/dev/null 2>&1 && break; done
res "$([ "$p3" != 0 ] && [ "$p3" != "$p2" ]; echo $?)" "live: killed with SIGKILL, the hub is restarted (Restart=on-failure)" "pid $p2 -> $p3"
systemctl --user stop holdline-hub; rc=$?
res "$([ "$rc" = 0 ] && [ "$(systemctl --user show holdline-hub -p Result --value)" = success ]; echo $?)" "live: SIGTERM stops the hub cleanly" "$(systemctl --user show holdline-hub -p Result -p ExecMainStatus 2>&1)"
out="$("$W/repo/scripts/uninstall.sh" 2>&1)"; res $? "live: uninstall.sh exits 0" "$out"
res "$([ ! -e "$HOME/.config/systemd/user/holdline-hub.service" ] && ! systemctl --user is-enabled holdline-hub >/dev/null 2>&1 && ! systemctl --user is-active holdline-hub >/dev/null 2>&1; echo $?)" "live: uninstall.sh stopped and removed the service"
res "$(test -f "$HOME/.holdline/secret"; echo $?)" "live: uninstall.sh kept the data"
# A hub started by hand holds the port: install.sh must say so, and the
# service must take over once that hub is gone.
"$W/bin/holdline-hub" serve >/dev/null 2>&1 &
manual=$!
for _ in $(seq 1 50); do "$W/bin/holdline-hub" status >/dev/null 2>&1 && break; sleep 0.2; done
out="$("$W/repo/scripts/install.sh" --bin-dir "$W/bin" 2>&1)"
res "$(grep -q 'another holdline-hub already listens' <<<"$out"; echo $?)" "live: install.sh notices a hand-started hub holding the port" "$out"
kill "$manual"; wait "$manual" 2>/dev/null
ok=1; for _ in $(seq 1 40); do sleep 0.25; systemctl --user is-active --quiet holdline-hub && "$HOME/.local/bin/holdline-hub" status >/dev/null 2>&1 && { ok=0; break; }; done
res "$ok" "live: the service takes over once that hub stops" "$(systemctl --user status holdline-hub 2>&1 | head -5)"
"$W/repo/scripts/uninstall.sh" >/dev/null 2>&1
systemctl --user exit >/dev/null 2>&1
for _ in $(seq 1 25); do kill -0 %1 2>/dev/null || break; sleep 0.2; done
kill %1 2>/dev/null
exit 0
INNER

  # Runs as root in the private mount namespace.
  cat > "$W/outer.sh" <<'OUTERSH'
set -e
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/systemd/system "/run/user/$UIDT"
mkdir -m 0700 /run/systemd/unit-root
chown "$UIDT:$UIDT" "/run/user/$UIDT"; chmod 700 "/run/user/$UIDT"
mount -t tmpfs -o mode=755 tmpfs /home
mkdir -p /home/hltest; chown "$UIDT:$UIDT" /home/hltest
cp /etc/passwd "$W/passwd"; echo "hltest:x:$UIDT:$UIDT::/home/hltest:/bin/sh" >> "$W/passwd"
cp /etc/group "$W/group"; echo "hltest:x:$UIDT:" >> "$W/group"
mount --bind "$W/passwd" /etc/passwd; mount --bind "$W/group" /etc/group
if [ -d /sys/fs/cgroup/unified ]; then dirs="/sys/fs/cgroup/unified/$CG"; [ -d /sys/fs/cgroup/systemd ] && dirs="$dirs /sys/fs/cgroup/systemd/$CG"; else dirs="/sys/fs/cgroup/$CG"; fi
for d in $dirs; do mkdir -p "$d"; chown -R "$UIDT:$UIDT" "$d"; echo $$ > "$d/cgroup.procs"; done
set +e
setpriv --reuid "$UIDT" --regid "$UIDT" --clear-groups \
  env -i HOME=/home/hltest USER=hltest LOGNAME=hltest PATH=/usr/local/bin:/usr/bin:/bin \
  XDG_RUNTIME_DIR="/run/user/$UIDT" MGR="$MGR" W="$W" PORT="$PORT" bash "$W/inner.sh"
rc=$?
cp /home/hltest/results "$W/results" 2>/dev/null
exit $rc
OUTERSH

  local rc
  env W="$W" UIDT="$uid" CG="$cg" MGR="$mgr" PORT="$port" timeout 180 unshare -m --propagation private bash "$W/outer.sh" >"$W/outer.log" 2>&1
  rc=$?
  # Remove the cgroup folders (deepest first) once their processes are gone.
  local d
  for d in /sys/fs/cgroup/unified/"$cg" /sys/fs/cgroup/systemd/"$cg" /sys/fs/cgroup/"$cg"; do
    [ -d "$d" ] || continue
    find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do kill -9 "$pid" 2>/dev/null; done
    sleep 0.3
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  if [ "$rc" = 3 ]; then echo "skip live user-service check: the systemd user manager did not start here"; return 0; fi
  if [ ! -s "$W/results" ]; then bad "live user-service check ran" "exit $rc: $(tail -5 "$W/outer.log")"; return 0; fi
  local line
  while IFS= read -r line; do
    case "$line" in
      "ok "*) ok "${line#ok }" ;;
      "FAIL "*) local name="${line#FAIL }"; bad "${name%%: *}" "${name#*: }" ;;
    esac
  done < "$W/results"
}
if [ "$have_bins" = 1 ]; then live_service_check; fi

# --- the README's path: an agent waits, the person's reply reaches it -----------
# With the binaries install.sh put in ~/.local/bin: start the hub, run the
# bridge as an IDE would (MCP over stdio), call init_conversation and
# wait_for_user_input, see the session waiting (`holdline-hub sessions`),
# answer with `holdline-hub reply`, and get the answer as the tool result.
readme_path_check() {
  local bin="$FAKE_HOME/.local/bin" home="$TMP/path-home" port hub_pid
  port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  # `env` execs the hub, so $! is the hub's own pid.
  env -u HOLDLINE_MONGO_URI -u HOLDLINE_SECRET -u HOLDLINE_HUB HOME="$FAKE_HOME" HOLDLINE_HOME="$home" \
    "$bin/holdline-hub" serve --listen "127.0.0.1:$port" >"$TMP/path-hub.log" 2>&1 &
  hub_pid=$!
  local up=1 _
  for _ in $(seq 1 50); do
    if in_fake_home env HOLDLINE_HOME="$home" ${T20[@]+"${T20[@]}"} "$bin/holdline-hub" status >/dev/null 2>&1; then up=0; break; fi
    sleep 0.2
  done
  if [ "$up" != 0 ]; then
    bad "README path: the hub starts" "$(tail -5 "$TMP/path-hub.log")"
    kill "$hub_pid" 2>/dev/null; wait "$hub_pid" 2>/dev/null; return 0
  fi
  ok "README path: the hub starts and answers holdline-hub status"
  local out
  out="$(in_fake_home env HOLDLINE_HOME="$home" HOLDLINE_HUB="http://127.0.0.1:$port" HOLDLINE_NO_AUTOSTART=1 \
    ${T60[@]+"${T60[@]}"} "$PY" - "$bin" <<'EOF' 2>&1
import json, subprocess, sys, time
bin = sys.argv[1]
p = subprocess.Popen([bin + "/holdline-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
def send(m): p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
def answer(i):
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i: return m
def call(i, name, args):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "test-service", "version": "0"}}})
answer(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
call(2, "init_conversation", {"cursorTitle": "README path", "workspace": "/srv/project"})
token = answer(2)["result"]["structuredContent"]["token"]
call(3, "wait_for_user_input", {"token": token, "message": "Listed the files. Next?", "timeoutSec": 50})
deadline = time.time() + 20
while time.time() < deadline:
    s = subprocess.run([bin + "/holdline-hub", "sessions"], capture_output=True, text=True).stdout
    if token in s and "waiting" in s: break
    time.sleep(0.2)
else:
    sys.exit("the session never showed as waiting: " + s)
print("WAITING", token)
r = subprocess.run([bin + "/holdline-hub", "reply", token, "Ship it"], capture_output=True, text=True)
if r.returncode: sys.exit("holdline-hub reply failed: " + r.stderr)
text = answer(3)["result"]["content"][0]["text"]
print("RESULT", text.splitlines()[0])
p.kill()
EOF
)"
  if grep -q '^WAITING ct_' <<<"$out"; then ok "README path: an agent's wait_for_user_input shows as waiting"; else bad "README path: an agent's wait_for_user_input shows as waiting" "$out"; fi
  if grep -qx 'RESULT Ship it' <<<"$out"; then ok "README path: the person's reply comes back as the tool result"; else bad "README path: the person's reply comes back as the tool result" "$out"; fi
  kill "$hub_pid" 2>/dev/null; wait "$hub_pid" 2>/dev/null
}
if [ "$have_bins" = 1 ] && [ -n "$PY" ] && [ -x "$FAKE_HOME/.local/bin/holdline-hub" ]; then readme_path_check; fi

# --- LAN use as docs/operations.md describes it ------------------------------------
# listen on every interface with an allowed host name: panel-url shows an
# address a phone can open, the secret is still required, a listed name is
# accepted and any other name refused (DNS rebinding).
lan_check() {
  local bin="$FAKE_HOME/.local/bin" home="$TMP/lan-home" port hub_pid _
  port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  mkdir -p "$home"; chmod 0700 "$home"
  printf 'listen = "0.0.0.0:%s"\nallowed_hosts = ["devbox.lan"]\n' "$port" > "$home/config.toml"
  env -u HOLDLINE_MONGO_URI -u HOLDLINE_LISTEN HOME="$FAKE_HOME" HOLDLINE_HOME="$home" \
    "$bin/holdline-hub" serve >"$TMP/lan-hub.log" 2>&1 &
  hub_pid=$!
  for _ in $(seq 1 50); do
    env HOME="$FAKE_HOME" HOLDLINE_HOME="$home" "$bin/holdline-hub" status >/dev/null 2>&1 && break
    sleep 0.2
  done
  local url
  url="$(env HOME="$FAKE_HOME" HOLDLINE_HOME="$home" "$bin/holdline-hub" panel-url --no-qr 2>&1)"
  if [[ "$url" =~ ^http://[0-9.]+:$port/#key=[0-9a-f]{32,}$ ]] && [[ "$url" != http://0.0.0.0* ]]; then
    ok "LAN: panel-url on 0.0.0.0 prints an address a phone can open, with the key"
  else
    bad "LAN: panel-url on 0.0.0.0 prints an address a phone can open, with the key" "$url"
  fi
  local out
  out="$("$PY" - "$port" "$(cat "$home/secret" 2>/dev/null)" <<'EOF' 2>&1
import sys, urllib.request, urllib.error
port, secret = sys.argv[1], sys.argv[2]
def get(host, auth):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/whoami", headers={"Host": host})
    if auth: req.add_header("Authorization", "Bearer " + secret)
    try: return urllib.request.urlopen(req, timeout=5).status
    except urllib.error.HTTPError as e: return e.code
print("listed", get(f"devbox.lan:{port}", True))
print("nokey", get(f"devbox.lan:{port}", False))
print("rebound", get(f"evil.example:{port}", True))
EOF
)"
  if grep -qx 'listed 200' <<<"$out"; then ok "LAN: a host name in allowed_hosts is accepted"; else bad "LAN: a host name in allowed_hosts is accepted" "$out"; fi
  if grep -qx 'nokey 401' <<<"$out"; then ok "LAN: without the secret the API answers 401"; else bad "LAN: without the secret the API answers 401" "$out"; fi
  if grep -qx 'rebound 403' <<<"$out"; then ok "LAN: any other host name is refused with 403 (DNS rebinding)"; else bad "LAN: any other host name is refused with 403 (DNS rebinding)" "$out"; fi
  kill "$hub_pid" 2>/dev/null; wait "$hub_pid" 2>/dev/null
}
if [ "$have_bins" = 1 ] && [ -n "$PY" ] && [ -x "$FAKE_HOME/.local/bin/holdline-hub" ]; then lan_check; fi

# --- holdline-hub config --------------------------------------------------------
if [ "$have_bins" = 1 ]; then
  CFG_HOME="$TMP/cfg-home"
  mkdir -p "$CFG_HOME"; chmod 0700 "$CFG_HOME"
  hub_config() { in_fake_home env HOLDLINE_HOME="$CFG_HOME" ${T20[@]+"${T20[@]}"} "$BIN_DIR/holdline-hub" config 2>&1; }

  # A type error on line 3.
  printf 'listen = "127.0.0.1:13458"\n# the long-poll length\npoll_timeout_ms = "soon"\n' > "$CFG_HOME/config.toml"
  out="$(hub_config)"; rc=$?
  if [ "$rc" != 0 ] && grep -qi 'line 3' <<<"$out" && grep -qiE 'poll_timeout_ms|invalid type|expected' <<<"$out"; then
    ok "holdline-hub config: a wrong type gives line 3 and the problem, exit non-zero"
  else
    bad "holdline-hub config: a wrong type gives line 3 and the problem, exit non-zero" "exit $rc: $out"
  fi
  # A syntax error on line 2.
  printf 'listen = "127.0.0.1:13458"\nallowed_hosts = [holdline.lan]\n' > "$CFG_HOME/config.toml"
  out="$(hub_config)"; rc=$?
  if [ "$rc" != 0 ] && grep -qi 'line 2' <<<"$out" && grep -q 'config.toml' <<<"$out"; then
    ok "holdline-hub config: a syntax error names config.toml and line 2, exit non-zero"
  else
    bad "holdline-hub config: a syntax error names config.toml and line 2, exit non-zero" "exit $rc: $out"
  fi
  # A good file: exit 0, secrets masked.
  SECRET_VALUE="0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  (umask 077; printf '%s\n' "$SECRET_VALUE" > "$CFG_HOME/secret")
  cat > "$CFG_HOME/config.toml" <<'EOF'
listen = "127.0.0.1:13458"
allowed_hosts = ["holdline.lan"]
mongo_uri = "mongodb://holdline:Sup3rSecretPw@db.lan:27017/"
EOF
  out="$(hub_config)"; rc=$?
  if [ "$rc" = 0 ] && grep -q 'holdline.lan' <<<"$out" && ! grep -q 'Sup3rSecretPw' <<<"$out" && ! grep -q "$SECRET_VALUE" <<<"$out"; then
    ok "holdline-hub config: a good file prints the settings with secrets masked"
  else
    bad "holdline-hub config: a good file prints the settings with secrets masked" "exit $rc: $out"
  fi

  # The example config.toml in docs/operations.md is one the hub accepts.
  if [ -f "$ROOT/docs/operations.md" ]; then
    awk '/^```toml$/{on=1; next} /^```$/{if (on) exit} on' "$ROOT/docs/operations.md" > "$CFG_HOME/config.toml"
    out="$(hub_config)"; rc=$?
    if [ "$rc" = 0 ] && [ -s "$CFG_HOME/config.toml" ] && grep -q 'devbox.lan' <<<"$out"; then
      ok "the config.toml example in docs/operations.md is accepted by holdline-hub config"
    else
      bad "the config.toml example in docs/operations.md is accepted by holdline-hub config" "exit $rc: $out"
    fi
  fi

  # The flags the docs tell people to use exist.
  out="$(in_fake_home ${T20[@]+"${T20[@]}"} "$BIN_DIR/holdline-hub" serve --help 2>&1)"
  check "holdline-hub serve --help has --listen, --home and --mongo-uri" \
    has_all "$out" --listen --home --mongo-uri
  for sub in panel-url status sessions reply export import config; do
    check "holdline-hub $sub --help" in_fake_home ${T20[@]+"${T20[@]}"} "$BIN_DIR/holdline-hub" "$sub" --help
  done
  out="$(in_fake_home ${T20[@]+"${T20[@]}"} "$BIN_DIR/holdline-mcp" install --help 2>&1)"
  check "holdline-mcp install --help has --client and --print" \
    has_all "$out" --client --print
fi

# --- READMEs and docs -------------------------------------------------------------
for readme in README.md README.zh-CN.md; do
  f="$ROOT/$readme"
  if [ ! -f "$f" ]; then bad "$readme exists"; continue; fi
  # The two commands, each alone on a line (as in a code block) and runnable.
  for cmd in scripts/run.sh scripts/test.sh; do
    if grep -qx "$cmd" "$f" && [ -x "$ROOT/$cmd" ]; then
      ok "$readme: '$cmd' is written as a command and $cmd is executable"
    else
      bad "$readme: '$cmd' is written as a command and $cmd is executable"
    fi
  done
done
# Every relative link and image in the newcomer docs points at a file.
for doc in README.md README.zh-CN.md docs/operations.md docs/security.md; do
  f="$ROOT/$doc"
  case "$doc" in README*) [ -f "$f" ] || continue ;; *) [ -f "$f" ] || { bad "$doc exists"; continue; } ;; esac
  missing=""
  while IFS= read -r target; do
    target="${target%%#*}"
    [ -n "$target" ] || continue
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    [ -e "$(dirname "$f")/$target" ] || missing="$missing $target"
  done < <(grep -oE '\]\([^) ]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
  if [ -z "$missing" ]; then ok "$doc: every relative link resolves"; else bad "$doc: every relative link resolves" "missing:$missing"; fi
done

echo
if [ "$FAILED" -gt 0 ]; then
  printf 'failed:\n'; printf '  %s\n' "${FAILURES[@]}"
fi
echo "service: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
