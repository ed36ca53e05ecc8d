#!/usr/bin/env bash
# Watch benchmark (issue 26 targets): append-to-copy latency over 200 appends, idle CPU and
# RSS with 2,000 transcripts watched, catch-up of 1,000 transcripts against `import`.
#   bench/watch.sh [DATA_DIR] [latency|idle|catchup ...]
# Generated data stays in DATA_DIR (default /tmp/sessiontree-watch-bench), never in the repo.
# BIN=path/to/sessiontree measures another build (default: this tree's release build).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/sessiontree-watch-bench}
shift || true
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
if [ -z "${BIN:-}" ]; then
  cargo build -q --release -p sessiontree-cli --bin sessiontree
  BIN=$CARGO_TARGET_DIR/release/sessiontree
fi
mkdir -p "$DATA"
echo "load before: $(uptime)" >&2
python3 bench/watch_bench.py "$BIN" "$DATA" "$@"
