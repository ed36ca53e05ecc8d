#!/usr/bin/env bash
# The terminal browser's benchmarks on generated corpora:
#   bash bench/browse.sh [WORKDIR]
# makes WORKDIR/agent (2,000 sessions, ~540 MB, gen_sessions) and WORKDIR/big.jsonl
# (50,000 entries, ~276 MB, gen_session), warms the index, then runs
# `cargo bench -p sessiontree-cli --bench browse` (renders to a test backend).
. "$(dirname "$0")/lib.sh"
work=${1:-${TMPDIR:-/tmp}/sessiontree-browse-bench}
mkdir -p "$work"
build_cli
corpus "$work/agent" 2000 540
if [ ! -s "$work/big.jsonl" ]; then
  cargo build --release -q -p sessiontree --example gen_session
  "$CARGO_TARGET_DIR/release/examples/gen_session" 50000 5500 7 > "$work/big.jsonl"
fi
# Warm index: listings and texts (what a browse after an earlier ls/search finds).
PI_CODING_AGENT_DIR="$work/agent" "$BIN" ls --all > /dev/null
PI_CODING_AGENT_DIR="$work/agent" "$BIN" search zzzz > /dev/null || true
ls -la "$work/big.jsonl"
du -sh "$work/agent"
BROWSE_AGENT_DIR="$work/agent" BROWSE_SESSION="$work/big.jsonl" \
  cargo bench -p sessiontree-cli --bench browse -- "${@:2}"
