#!/usr/bin/env bash
# Remove what scripts/install.sh added: holdline's entry and rule in every
# IDE (`holdline-mcp uninstall --all`, so no IDE keeps pointing at a deleted
# binary), the service (stopped first) and the two binaries. The home
# (~/.holdline: secret, config.toml, db/, archive/, logs/) is kept unless
# --purge is given.
#
#   scripts/uninstall.sh                 remove IDE entries, service and binaries, keep the data
#   scripts/uninstall.sh --purge         also delete the home and all sessions in it
#   scripts/uninstall.sh --keep-ide      leave the IDE entries and rules alone
#   scripts/uninstall.sh --prefix DIR    where the binaries are, when the install
#                                        manifest is gone (default ~/.local/bin)
#
# Run it from a project folder to also remove that project's rule files.
# Safe to run again: what is already gone is skipped. It never asks anything.
set -euo pipefail

PREFIX="${HOME}/.local/bin"
PURGE=0
KEEP_IDE=0
HL_HOME="${HOLDLINE_HOME:-${HOME}/.holdline}"
LABEL="dev.holdline.hub"
UNIT="holdline-hub.service"

say() { printf '%s\n' "$*"; }
warn() { printf 'uninstall: %s\n' "$*" >&2; }
die() { printf 'uninstall: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --purge) PURGE=1; shift ;;
    --keep-ide) KEEP_IDE=1; shift ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; PREFIX="$2"; shift 2 ;;
    --prefix=*) PREFIX="${1#*=}"; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

MANIFEST="$HL_HOME/install-manifest"
BINS=()
SERVICE_FILES=()
if [ -f "$MANIFEST" ]; then
  while IFS=$'\t' read -r kind path; do
    [ -n "$path" ] || continue
    case "$kind" in
      bin) BINS+=("$path") ;;
      systemd|launchd) SERVICE_FILES+=("$kind"$'\t'"$path") ;;
    esac
  done < "$MANIFEST"
else
  BINS=("$PREFIX/holdline-hub" "$PREFIX/holdline-mcp")
fi
# The default service locations, also when the manifest does not list them.
SERVICE_FILES+=("systemd"$'\t'"${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/$UNIT")
SERVICE_FILES+=("launchd"$'\t'"$HOME/Library/LaunchAgents/$LABEL.plist")

removed=0

# IDE entries first, while holdline-mcp is still there to take them out.
if [ "$KEEP_IDE" = 0 ]; then
  MCP=""
  for b in ${BINS[@]+"${BINS[@]}"}; do
    [ "$(basename "$b")" = holdline-mcp ] && [ -x "$b" ] && MCP="$b"
  done
  if [ -n "$MCP" ]; then
    if ide_out="$("$MCP" uninstall --all 2>&1)"; then
      if ! grep -q "nothing changed" <<<"$ide_out"; then
        printf '%s\n' "$ide_out"
        removed=$((removed + 1))
      fi
    else
      warn "could not remove every IDE entry (the rest of the uninstall goes on):"
      printf '%s\n' "$ide_out" | sed 's/^/  /' >&2
    fi
  fi
fi

for entry in "${SERVICE_FILES[@]}"; do
  kind="${entry%%$'\t'*}"; file="${entry#*$'\t'}"
  [ -f "$file" ] || continue
  case "$kind" in
    systemd)
      if command -v systemctl >/dev/null 2>&1 && systemctl --user show-environment >/dev/null 2>&1; then
        systemctl --user disable --now "$UNIT" >/dev/null 2>&1 || true
        rm -f "$file"
        systemctl --user daemon-reload || true
        systemctl --user reset-failed "$UNIT" >/dev/null 2>&1 || true
      else
        rm -f "$file"
      fi
      ;;
    launchd)
      if command -v launchctl >/dev/null 2>&1; then
        launchctl bootout "gui/$(id -u)/$LABEL" >/dev/null 2>&1 \
          || launchctl unload "$file" >/dev/null 2>&1 || true
      fi
      rm -f "$file"
      ;;
  esac
  say "Removed service $file"
  removed=$((removed + 1))
done

# A hub that no service manager runs (nohup, cron, one a bridge started) is
# still running from the binary about to be removed: stop it, and take out
# the crontab line install.sh suggested.
for b in ${BINS[@]+"${BINS[@]}"}; do
  if [ "$(basename "$b")" = holdline-hub ] && [ -x "$b" ] && [ -d "$HL_HOME" ]; then
    if stop_out="$(HOLDLINE_HOME="$HL_HOME" "$b" stop 2>&1)"; then
      if grep -q '^stopped' <<<"$stop_out"; then
        say "$(head -n 1 <<<"$stop_out")"
        removed=$((removed + 1))
      fi
    else
      warn "could not stop the running hub: $stop_out"
    fi
  fi
done
if command -v crontab >/dev/null 2>&1 && cron_now="$(crontab -l 2>/dev/null)"; then
  cron_kept="$(grep -v -E '^@reboot .*holdline-hub"? serve' <<<"$cron_now" || true)"
  if [ "$cron_kept" != "$cron_now" ]; then
    if [ -n "$cron_kept" ]; then printf '%s\n' "$cron_kept" | crontab -; else crontab -r; fi
    say "Removed the holdline-hub @reboot line from your crontab"
    removed=$((removed + 1))
  fi
fi

for b in ${BINS[@]+"${BINS[@]}"}; do
  case "$(basename "$b")" in holdline-hub|holdline-mcp) ;; *) continue ;; esac
  if [ -e "$b" ]; then rm -f "$b"; say "Removed $b"; removed=$((removed + 1)); fi
done
rm -f "$MANIFEST"

if [ "$PURGE" = 1 ]; then
  case "$HL_HOME" in
    ""|"/"|"$HOME"|"$HOME/") die "refusing to delete '$HL_HOME'" ;;
  esac
  if [ -d "$HL_HOME" ]; then
    rm -rf "$HL_HOME"
    say "Deleted $HL_HOME (all sessions, secret and config)"
    removed=$((removed + 1))
  fi
elif [ -d "$HL_HOME" ]; then
  say "Kept $HL_HOME (sessions, secret, config). Delete it with: scripts/uninstall.sh --purge"
fi
[ "$removed" -gt 0 ] || say "Nothing to remove: holdline is not installed."
