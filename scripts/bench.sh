#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md in one command, on release builds:
# the hub figures (holdline-bench hub), the bridge figures (holdline-bench bridge)
# and the side-by-side comparison with mcp-feedback-enhanced (scripts/bench-peer.sh).
# Prints the machine and the tables; keeps a copy in target/bench/.
#
#   scripts/bench.sh            everything (~10 minutes; the first run also imports
#                               100,000 stored sessions, kept in target/release/holdline-bench-cache)
#   scripts/bench.sh --no-peer  leave out the peer comparison (no Python venv needed)
set -euo pipefail
cd "$(dirname "$0")/.."
peer=1
[ "${1:-}" = "--no-peer" ] && peer=0

cargo build --release -p holdline-hub -p holdline-mcp -p holdline-bench
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

echo | tee -a "$report"
echo "## Hub" | tee -a "$report"
target/release/holdline-bench hub --json "target/bench/hub-$stamp.json" | tee -a "$report"
echo | tee -a "$report"
echo "## Bridge (rmcp client)" | tee -a "$report"
target/release/holdline-bench bridge --json "target/bench/bridge-$stamp.json" | tee -a "$report"
if [ "$peer" = 1 ]; then
  echo | tee -a "$report"
  echo "## Side by side with the peer (MCP Python SDK client)" | tee -a "$report"
  scripts/bench-peer.sh --bin-dir target/release --json "target/bench/peer-$stamp.json" | tee -a "$report"
fi
echo
echo "report: $report"
