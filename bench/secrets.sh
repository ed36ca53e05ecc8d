#!/usr/bin/env bash
# Secrets scan beside the first search of a common word, on the generated corpus of
# bench/search.sh: `sessiontree secrets --all` must take at most twice the first
# `sessiontree search compaction` (no summaries on disk). Prints both and their ratio.
#   bench/secrets.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Generated data stays in DATA_DIR (default /tmp/sessiontree-bench), never in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/sessiontree-bench}
COUNT=${2:-2000}
MB=${3:-530}
RUNS=${RUNS:-5}
WORD=${WORD:-compaction}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build -q --release -p sessiontree-cli --bin sessiontree
cargo build -q --release -p sessiontree --example gen_sessions
BIN=$CARGO_TARGET_DIR/release/sessiontree
if [ ! -d "$DATA/sessions" ]; then
  "$CARGO_TARGET_DIR/release/examples/gen_sessions" "$DATA" "$COUNT" "$MB"
fi
export PI_CODING_AGENT_DIR=$DATA
export SESSIONTREE_NO_BACKGROUND_INDEX=1
corpus=$(find "$DATA/sessions" -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files, $((corpus / 1048576)) MiB; $(nproc) cores"
# Warm page cache for both.
find "$DATA/sessions" -name '*.jsonl' -exec cat {} + > /dev/null
# The first search: no summaries on disk, every file scanned (the search's --no-index
# path is the same scan; it is measured RUNS times instead of once).
rm -f "$DATA"/sessiontree-search.summaries* "$DATA"/sessiontree-index.sqlite*
read -r search_s search_rss <<<"$(python3 bench/measure.py "$RUNS" "$BIN" search "$WORD" --limit 20 --no-index)"
read -r secrets_s secrets_rss <<<"$(python3 bench/measure.py "$RUNS" "$BIN" secrets --all --json)"
printf '%-44s %8.3f s %9d KiB\n' "search $WORD (first: every file scanned)" "$search_s" "$search_rss"
printf '%-44s %8.3f s %9d KiB\n' "secrets --all" "$secrets_s" "$secrets_rss"
echo "secrets / first search: $(echo "$secrets_s/$search_s" | bc -l | cut -c1-4)x (at most 2x)"
findings=$("$BIN" secrets --all --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["findings"]))' || true)
echo "findings on the generated corpus (none is planted: all would be false positives): $findings"
