#!/usr/bin/env bash
# Search and listing benchmark, one run: grep -rciF beside the first search (no index on
# disk), the warm searches (one word, several words, a phrase), what the index keeps on disk
# against the sessions' size, and the ls timings (so a regression shows).
#   bench/search.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Generated data stays in DATA_DIR (default /tmp/sessiontree-bench), never in the repo.
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-bench}
COUNT=${2:-2000}
MB=${3:-530}
RUNS=${RUNS:-7}
WORD=${WORD:-quokka_marker}
build_cli
corpus "$DATA" "$COUNT" "$MB"
export PI_CODING_AGENT_DIR=$DATA
# The benchmark times each step alone: no background build unless asked for below.
export SESSIONTREE_NO_BACKGROUND_INDEX=1
corpus=$(find "$DATA/sessions" -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files, $((corpus / 1048576)) MiB; $(nproc) cores"

MEASURE_WIDTH=52

# Warm page cache for everyone (grep's warm-up run reads every file).
measure "grep -rciF $WORD (warm cache)" "$RUNS" grep -rciF "$WORD" "$DATA/sessions"
rm -f "$DATA"/sessiontree-search.summaries* "$DATA"/sessiontree-index.sqlite*
measure "first search ever (no index on disk)" 0 "$BIN" search "$WORD" --limit 20
measure "search --no-index (every file scanned)" "$RUNS" "$BIN" search "$WORD" --limit 20 --no-index
measure "search --no-index, two words" "$RUNS" "$BIN" search "$WORD" Needle --limit 20 --no-index
measure "search --no-index, a word in no file" "$RUNS" "$BIN" search zqxjkvbw --limit 20 --no-index
measure "summaries build (background, 1 thread)" 0 "$BIN" search --build-index
measure "warm: one word" "$RUNS" "$BIN" search "$WORD" --limit 20
measure "warm: several words" "$RUNS" "$BIN" search "$WORD" Needle --limit 20
measure "warm: phrase" "$RUNS" "$BIN" search --phrase "$WORD::Needle" --limit 20
measure "warm: a word in no file" "$RUNS" "$BIN" search zqxjkvbw --limit 20
measure "warm: a word of one session" "$RUNS" "$BIN" search ka_lo_mi_unique --limit 20
measure "warm: regex" "$RUNS" "$BIN" search --regex "${WORD}::N\\w+" --limit 20
measure "warm: one word, --limit 1000" "$RUNS" "$BIN" search "$WORD" --limit 1000
measure "ls --all --no-index --json" "$RUNS" "$BIN" ls --all --no-index --json
measure "ls --all --json, first (builds the listings)" 0 "$BIN" ls --all --json
measure "ls --all --json, warm index" "$RUNS" "$BIN" ls --all --json
measure "ls --all (table), warm index" "$RUNS" "$BIN" ls --all
F=$(find "$DATA/sessions" -name '*.jsonl' | sort | sed -n 1p)
printf '{"type":"message","id":"bench%05d","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"appended quokka","timestamp":1767225600000}}\n' $RANDOM >> "$F"
measure "ls --all --json, after one append" 0 "$BIN" ls --all --json
measure "search after one append (that file scanned)" 0 "$BIN" search "$WORD" --limit 20

summ=$(stat -c %s "$DATA/sessiontree-search.summaries")
listing=$(cat "$DATA"/sessiontree-index.sqlite* 2>/dev/null | wc -c)
echo
printf '| %-52s | %9s | %12s |\n' "run" "wall s" "peak RSS MiB"
printf '|%s|%s|%s|\n' "------------------------------------------------------" "-----------" "--------------"
for r in "${RESULTS[@]}"; do
  IFS='|' read -r n w m <<<"$r"
  printf '| %-52s | %9.3f | %12.1f |\n' "$n" "$w" "$(echo "$m/1024" | bc -l)"
done
echo
grep_s=$(echo "${RESULTS[0]}" | cut -d'|' -f2)
first_s=$(echo "${RESULTS[1]}" | cut -d'|' -f2)
echo "first search / grep -rciF: $(echo "$first_s/$grep_s" | bc -l | cut -c1-4)x"
echo "search summaries: $summ bytes = $(echo "100*$summ/$corpus" | bc -l | cut -c1-5)% of the sessions ($corpus bytes)"
echo "listing index (ls): $listing bytes = $(echo "100*$listing/$corpus" | bc -l | cut -c1-5)%"
echo "everything the index keeps: $(echo "100*($summ+$listing)/$corpus" | bc -l | cut -c1-5)%"
