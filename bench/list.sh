#!/usr/bin/env bash
# Listing and search benchmark: 2,000 sessions (~530 MB) against the reference's listAll.
#   bench/list.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Needs node + interop/node_modules (cd interop && npm ci) for the reference row.
# Generated data stays in DATA_DIR (default /tmp/sessiontree-bench), never in the repo.
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-bench}
COUNT=${2:-2000}
MB=${3:-530}
build_cli
corpus "$DATA" "$COUNT" "$MB"
export PI_CODING_AGENT_DIR=$DATA
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$DATA/sessions" | cut -f1) MB"
sync
# Drop page cache when allowed, so the first read is not flattered (ignored otherwise).
(echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null || true

RUNS=${RUNS:-5}
MEASURE_WIDTH=44

if command -v node >/dev/null && [ -d interop/node_modules ]; then
  measure "reference listAll (node oracle list-all)" 3 node interop/oracle.mjs list-all "$DATA"
fi
measure "ls --all --no-index --json" "$RUNS" "$BIN" ls --all --no-index --json
measure "ls --all --no-index (table)" "$RUNS" "$BIN" ls --all --no-index
rm -f "$DATA"/sessiontree-index.sqlite*
measure "ls --all --json, first (builds the index)" 0 "$BIN" ls --all --json
measure "ls --all --json, warm index" "$RUNS" "$BIN" ls --all --json
measure "ls --all (table), warm index" "$RUNS" "$BIN" ls --all
measure "first search (a scan; summaries built after)" 0 "$BIN" search quokka_marker --limit 20
F=$(find "$DATA/sessions" -name '*.jsonl' | sort | sed -n 1p)
printf '{"type":"message","id":"bench%05d","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"appended quokka","timestamp":1767225600000}}\n' $RANDOM >> "$F"
measure "ls --all --json, after one append" 0 "$BIN" ls --all --json
measure "search quokka_marker (warm)" "$RUNS" "$BIN" search quokka_marker --limit 20
measure "search --regex 'quokka_\\w+::Needle' (warm)" "$RUNS" "$BIN" search --regex 'quokka_\w+::Needle' --limit 20

echo
base=$(echo "${RESULTS[0]}" | cut -d'|' -f2)
printf '| %-44s | %9s | %12s | %10s |\n' "run" "wall s" "peak RSS MiB" "vs ref"
printf '|%s|%s|%s|%s|\n' "----------------------------------------------" "-----------" "--------------" "------------"
for r in "${RESULTS[@]}"; do
  IFS='|' read -r n w m <<<"$r"
  printf '| %-44s | %9.3f | %12.1f | %9.1fx |\n' "$n" "$w" "$(echo "$m/1024" | bc -l)" "$(echo "$base/$w" | bc -l)"
done
