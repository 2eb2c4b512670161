#!/usr/bin/env bash
# Runs every test of holdline on a fresh machine: installs what the tests
# need (Chromium, Playwright, the MCP Python and TypeScript SDKs, a MongoDB-wire server,
# systemd-analyze), checks formatting and lints, builds the workspace, then
# runs the Rust tests and each end-to-end suite against real processes.
#
#   scripts/test.sh            everything
#   SKIP_E2E=1 scripts/test.sh leave out the browser tests
#   SKIP_CLIENTS=1 scripts/test.sh leave out the real MCP clients (tests/clients)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# What git sees before the run: the run itself must change nothing in the tree.
tree_state() { git status --porcelain=v1 --untracked-files=all 2>/dev/null || true; }
tree_before="$(tree_state)"

passed=0
failed=0
failures=()
suite() {
  local name=$1
  shift
  echo
  echo "=== $name: $*"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name FAILED"
  fi
}

# A MongoDB-wire server for the sync tests (SecantusDB, pinned: it is a beta).
mongo_env() {
  local venv="$root/target/test-venvs/mongo"
  if [ ! -x "$venv/bin/secantusd-py" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'SecantusDB==0.7.0b3' ||
      { echo "could not install SecantusDB: MongoDB sync tests will say they are skipped"; return 0; }
  fi
  export HOLDLINE_TEST_SECANTUSD="$venv/bin/secantusd-py"
}

suite format cargo fmt --all -- --check
suite links python3 scripts/check-links.py
suite clippy cargo clippy --workspace --all-targets -- -D warnings
# The source path builds the hub without MongoDB sync (scripts/install.sh): that build is
# checked and its own config test run.
suite clippy-no-sync cargo clippy -p holdline-hub -p holdline-sync --no-default-features --all-targets -- -D warnings
suite no-sync cargo test -p holdline-sync --no-default-features
# The system tests (system-tests/) and the end-to-end suites run the debug binaries this
# builds (`holdline-hub`, `holdline-mcp`): cargo builds a package's binaries only for its own tests.
cargo build --workspace --all-targets
mongo_env
if command -v cargo-nextest >/dev/null 2>&1; then
  suite rust cargo nextest run --workspace --no-fail-fast
else
  suite rust cargo test --workspace --no-fail-fast
fi
for script in test-mcp-python test-sdk test-compat test-crash test-service test-bench test-dist; do
  [ -x "scripts/$script.sh" ] && suite "$script" "scripts/$script.sh"
done
if [ -z "${SKIP_CLIENTS:-}" ]; then
  suite test-clients scripts/test-clients.sh
fi
if [ -z "${SKIP_E2E:-}" ]; then
  suite test-e2e scripts/test-e2e.sh
fi

# Last: the suites wrote only to ignored places (target/, node_modules/, temp folders).
tree_unchanged() {
  local after
  after="$(tree_state)"
  if [ "$after" != "$tree_before" ]; then
    echo "the test run changed the working tree:"
    diff <(printf '%s\n' "$tree_before") <(printf '%s\n' "$after") | sed -n 's/^> /  /p'
    return 1
  fi
}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  suite clean-tree tree_unchanged
fi

echo
if [ "$failed" -gt 0 ]; then
  echo "failed suites: ${failures[*]}"
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
