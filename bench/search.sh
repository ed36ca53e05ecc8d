#!/usr/bin/env bash
# Search and listing benchmark, one run: a common word and a rare word side by side, each
# beside its yardstick `LC_ALL=C grep -rciF WORD` (warm cache): the first search (no
# summaries on disk), --no-index (every file read), a search while the summaries build and
# the warm search; then the other warm searches (several words, a phrase, a regex), what
# the index keeps on disk against the sessions' size, and the ls timings.
#   bench/search.sh [DATA_DIR] [COUNT] [TOTAL_MB]
#   COMMON=compaction RARE=quokka_marker RUNS=7 BEFORE=/path/to/older/sessiontree
# With BEFORE, every row of the side-by-side table is also taken with that binary, right
# after this one's (same corpus, same load). Generated data stays in DATA_DIR (default
# /tmp/sessiontree-bench), never in the repo. gen_sessions sets each file's mtime to its
# last entry's time, as Pi's files have it: the first search reads newest files first and
# stops once the newest hits are certain (a corpus generated before that change has every
# mtime at generation time, and shows no such stop: generate it again).
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-bench}
COUNT=${2:-2000}
MB=${3:-530}
RUNS=${RUNS:-7}
build_cli
corpus "$DATA" "$COUNT" "$MB"
export PI_CODING_AGENT_DIR=$DATA
# The benchmark times each step alone: no background build unless asked for below.
export SESSIONTREE_NO_BACKGROUND_INDEX=1
corpus=$(find "$DATA/sessions" -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files, $((corpus / 1048576)) MiB; $(nproc) cores"

MEASURE_WIDTH=52
COMMON=${COMMON:-compaction}
RARE=${RARE:-quokka_marker}
BEFORE=${BEFORE:-}
for w in "$COMMON" "$RARE"; do
  echo "$w: in $(LC_ALL=C grep -rliF "$w" "$DATA/sessions" | wc -l) files, $(LC_ALL=C grep -rhiF "$w" "$DATA/sessions" | wc -l) lines"
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The median of a row (RESULTS holds "name|wall|rss").
wall_of() {
  local r
  for r in "${RESULTS[@]}"; do
    if [ "${r%%|*}" = "$1" ]; then
      echo "$r" | cut -d'|' -f2
      return
    fi
  done
  echo nan
}
# `measure` with this binary, then (with BEFORE) the same with the older one.
both() {
  local name=$1 runs=$2; shift 2
  measure "$name" "$runs" "$BIN" "$@"
  if [ -n "$BEFORE" ]; then
    measure "before: $name" "$runs" "$BEFORE" "$@"
  fi
}
no_summaries() { rm -f "$DATA"/sessiontree-search.summaries* "$DATA"/sessiontree-index.sqlite*; }

for w in "$COMMON" "$RARE"; do
  # Warm page cache for everyone (grep's warm-up run reads every file).
  measure "grep $w" "$RUNS" env LC_ALL=C grep -rciF "$w" "$DATA/sessions"
  no_summaries
  # No background build here: each run is a first search, with nothing on disk.
  both "first search $w" "$RUNS" search "$w" --limit 20
  both "--no-index $w" "$RUNS" search "$w" --limit 20 --no-index
done
# A search while the summaries build (the background build a first search starts).
for w in "$COMMON" "$RARE"; do
  for b in "$BIN" ${BEFORE:+"$BEFORE"}; do
    no_summaries
    "$b" search --build-index >/dev/null 2>&1 &
    builder=$!
    sleep 0.3
    prefix=""
    [ "$b" = "$BIN" ] || prefix="before: "
    measure "${prefix}while summaries build $w" 0 "$b" search "$w" --limit 20
    wait "$builder"
  done
done
no_summaries
measure "summaries build (background, 1 thread)" 0 "$BIN" search --build-index
for w in "$COMMON" "$RARE"; do
  both "warm $w" "$RUNS" search "$w" --limit 20
done

row() {
  local label=$1 key=$2 c r gc gr
  c=$(wall_of "$key $COMMON")
  r=$(wall_of "$key $RARE")
  gc=$(wall_of "grep $COMMON")
  gr=$(wall_of "grep $RARE")
  printf '| %-36s | %9.3f | %7.2fx | %9.3f | %7.2fx |\n' "$label" "$c" "$(echo "$c/$gc" | bc -l)" \
    "$r" "$(echo "$r/$gr" | bc -l)"
}
SIDE=$( {
  echo
  printf '| %-36s | %9s | %8s | %9s | %8s |\n' "wall s (median of $RUNS)" "$COMMON" "/ grep" "$RARE" "/ grep"
  printf '|%s|%s|%s|%s|%s|\n' "--------------------------------------" "-----------" "----------" "-----------" "----------"
  row "LC_ALL=C grep -rciF WORD (warm)" grep
  row "first search (no summaries)" "first search"
  [ -z "$BEFORE" ] || row "  before" "before: first search"
  row "search --no-index" "--no-index"
  [ -z "$BEFORE" ] || row "  before" "before: --no-index"
  row "while summaries build (1 run)" "while summaries build"
  [ -z "$BEFORE" ] || row "  before" "before: while summaries build"
  row "warm (summaries)" "warm"
  [ -z "$BEFORE" ] || row "  before" "before: warm"
} )
WORD=$RARE
measure "search --no-index, two words" "$RUNS" "$BIN" search "$WORD" Needle --limit 20 --no-index
measure "search --no-index, a word in no file" "$RUNS" "$BIN" search zqxjkvbw --limit 20 --no-index
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
echo "$SIDE"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "search summaries: $summ bytes = $(echo "100*$summ/$corpus" | bc -l | cut -c1-5)% of the sessions ($corpus bytes)"
echo "listing index (ls): $listing bytes = $(echo "100*$listing/$corpus" | bc -l | cut -c1-5)%"
echo "everything the index keeps: $(echo "100*($summ+$listing)/$corpus" | bc -l | cut -c1-5)%"
