#!/usr/bin/env bash
# End-to-end tests of the reply panel (tests/e2e): installs what they need —
# Debian's chromium and caddy (and a CJK font for readable screenshots) when
# missing, playwright-core and axe-core from npm — then runs them with node's
# test runner against the hub binary ($CARGO_TARGET_DIR or target/,
# debug/holdline-hub; or $HOLDLINE_HUB_BIN).
# The caller builds the hub first: `cargo build -p holdline-hub`.
#
#   scripts/test-e2e.sh                       screenshots go to target/screenshots/
#   scripts/test-e2e.sh --update-screenshots  rewrite the tracked docs/screenshots/
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

target_dir="${CARGO_TARGET_DIR:-$root/target}"
# A test run leaves the tracked screenshots alone unless asked.
export HOLDLINE_SCREENSHOTS_DIR="${HOLDLINE_SCREENSHOTS_DIR:-$target_dir/screenshots}"
case "${1:-}" in
  --update-screenshots) HOLDLINE_SCREENSHOTS_DIR="$root/docs/screenshots" ;;
  "") ;;
  *) echo "test-e2e: unknown option '$1'" >&2; exit 2 ;;
esac

hub_bin="${HOLDLINE_HUB_BIN:-$target_dir/debug/holdline-hub}"
if [[ ! -x "$hub_bin" ]]; then
  echo "test-e2e: no hub binary at $hub_bin; run \`cargo build -p holdline-hub\` first" >&2
  exit 1
fi
export HOLDLINE_HUB_BIN="$hub_bin"

apt_install() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "test-e2e: $* missing and not root; install it with apt-get" >&2
    return 1
  fi
  if [[ -z "${apt_updated:-}" ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [[ ! -x /usr/bin/chromium ]]; then
  echo "test-e2e: installing chromium"
  apt_install chromium
fi
# https.test.mjs puts Debian's Caddy in front of the hub (skipped without it).
if [[ ! -x /usr/bin/caddy ]]; then
  echo "test-e2e: installing caddy"
  apt_install caddy || echo "test-e2e: no caddy; the HTTPS test is skipped" >&2
fi
# Chinese text in the screenshots needs a CJK font; the tests pass without one.
if ! fc-list 2>/dev/null | grep -qiE 'wqy|noto sans cjk|droid sans fallback'; then
  echo "test-e2e: installing a CJK font"
  apt_install fonts-wqy-microhei || echo "test-e2e: no CJK font; screenshots will show boxes for Chinese" >&2
fi

cd tests/e2e
if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi

# One file at a time: each starts its own hub and browsers, and the machine is small.
node --test --test-concurrency=1 --test-timeout=300000 --test-reporter=spec ./*.test.mjs
