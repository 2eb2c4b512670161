#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md in one command, on release builds:
# the hub figures (holdline-bench hub: over the stdio bridge and over /mcp),
# the bridge figures (holdline-bench bridge)
# and the side-by-side comparison with mcp-feedback-enhanced (scripts/bench-peer.sh).
# Prints the machine and the tables; keeps a copy in target/bench/. On a shared
# machine, run it as `nice -n -10 scripts/bench.sh` (root) to keep other work's
# scheduling out of the latency tails.
#
#   scripts/bench.sh            everything (~3 minutes after the build; a new hub binary
#                               also imports 100,000 stored sessions first, ~30 s, kept in
#                               target/release-lto/holdline-bench-cache)
#   scripts/bench.sh --no-peer  leave out the peer comparison (no Python venv needed)
set -euo pipefail
cd "$(dirname "$0")/.."
peer=1
[ "${1:-}" = "--no-peer" ] && peer=0

cargo build --profile release-lto -p holdline-hub -p holdline-mcp -p holdline-bench
mkdir -p target/bench
stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="target/bench/report-$stamp.md"
{
  echo "# holdline benchmark run $stamp"
  echo
  echo "- command: scripts/bench.sh"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "- cpus: $(nproc) × $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "- memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "- kernel: $(uname -r); $(rustc --version)"
  echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$report"

failed=()
part() { # title, json name, command...
  local title=$1 name=$2
  shift 2
  echo | tee -a "$report"
  echo "## $title" | tee -a "$report"
  # A part that fails (e.g. a hub that stops answering) is reported; the others still run.
  if ! "$@" --json "target/bench/$name-$stamp.json" 2>&1 | tee -a "$report"; then
    echo "(this part FAILED; see the lines above)" | tee -a "$report"
    failed+=("$title")
  fi
}
bench=target/release-lto/holdline-bench
part "Hub: reply latency, large store" hub "$bench" hub --only reply,stored
part "Hub: 10,000 waiting under 1,000 replies/s" load "$bench" hub --only load
part "Hub: /mcp beside the stdio bridge, 1,000 remote agents" remote "$bench" hub --only remote
part "Bridge (rmcp client)" bridge "$bench" bridge
if [ "$peer" = 1 ]; then
  part "Side by side with the peer (MCP Python SDK client)" peer scripts/bench-peer.sh --bin-dir target/release-lto
fi
echo
echo "report: $report"
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed parts: ${failed[*]}"
  exit 1
fi
