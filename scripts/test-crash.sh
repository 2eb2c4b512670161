#!/usr/bin/env bash
# The durability suite against the real hub binary:
#   - crash: several clients drive hundreds of sessions (every fifth question
#     with a file attached) while the hub is killed with SIGKILL again and again — agents on the agent routes (as the
#     stdio bridge), with plain /mcp calls and with MCP Tasks on /mcp; prints
#     the figures (kills survived, promises checked, lost: 0, duplicated: 0);
#   - store_faults: damaged, locked, other-version and unopenable stores give
#     one clear line and a non-zero exit, never a panic;
#   - roundtrip: export/import keeps every field; the backup and restore
#     procedure of docs/operations.md, followed literally.
#
#   scripts/test-crash.sh                          quick run (25 kills, ~1 min)
#   HOLDLINE_CRASH_KILLS=300 scripts/test-crash.sh long run
#   HOLDLINE_CRASH_SEED=N scripts/test-crash.sh    replay a run's schedule
set -euo pipefail
cd "$(dirname "$0")/.."

export HOLDLINE_CRASH_KILLS="${HOLDLINE_CRASH_KILLS:-25}"
cargo test -p holdline-hub --test it -- store_faults:: roundtrip::
# The crash test is #[ignore]d in plain `cargo test` runs (it takes a minute
# of both cores); this is where it runs, with its figures on the output.
cargo test -p holdline-hub --test it -- crash:: --ignored --nocapture
