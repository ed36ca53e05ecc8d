#!/usr/bin/env bash
# Scale: the same operations over a small corpus and one ten times bigger (by default 2,000
# sessions / 530 MB in 40 projects and 20,000 sessions / 5.3 GB in 400 projects, Pi's
# layout), each figure beside the other and their ratio (linear is 10x), with the grep of
# the same word over the same files as the yardstick of each search.
#   bench/scale.sh [WORKDIR] [BIG_COUNT] [BIG_MB] [BIG_PROJECTS]
# COMMON / RARE: the two words searched (a word in most files, a word in few).
# ARCHIVE=1 also runs bench/archive.sh over both corpora (push of everything, push after one
# append, pull into an empty folder, archive search), BROWSE=1 the browser's first frame
# (criterion, `cargo bench -p sessiontree-cli --bench browse -- first_frame`).
# Generated data stays in WORKDIR (default /tmp/sessiontree-scale), never in the repo; the
# 20,000-session corpus takes 5.3 GB there and, with ARCHIVE=1, about as much again for the
# archive and the pulled copy.
. "$(dirname "$0")/lib.sh"
W=${1:-/tmp/sessiontree-scale}
BIG=${2:-20000}
BIG_MB=${3:-5300}
BIG_PROJ=${4:-400}
RUNS=${RUNS:-5}
COMMON=${COMMON:-kalo}
RARE=${RARE:-quokka_marker}
build_cli
export SESSIONTREE_NO_BACKGROUND_INDEX=1
MEASURE_WIDTH=44

one_corpus() { # NAME COUNT MB PROJECTS: RESULTS for that corpus
  local dir=$W/$1 count=$2 mb=$3 proj=$4
  corpus "$dir" "$count" "$mb" "$proj"
  export PI_CODING_AGENT_DIR=$dir
  local bytes
  bytes=$(find "$dir/sessions" -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
  echo "$1: $(find "$dir/sessions" -name '*.jsonl' | wc -l) files, $((bytes / 1048576)) MiB, $(find "$dir/sessions" -mindepth 1 -maxdepth 1 -type d | wc -l) project folders; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  rm -f "$dir"/sessiontree-search.summaries* "$dir"/sessiontree-index.sqlite*
  export LC_ALL=C
  measure "grep -rciF $COMMON (warm cache)" "$RUNS" grep -rciF "$COMMON" "$dir/sessions"
  measure "grep -rciF $RARE (warm cache)" "$RUNS" grep -rciF "$RARE" "$dir/sessions"
  unset LC_ALL
  # The floor of any warm figure that must know whether a file changed: one stat per file.
  measure "stat every file (find -printf '%s %T@')" "$RUNS" find "$dir/sessions" -name '*.jsonl' -printf '%s %T@\n'
  measure "ls --all --json, no index" "$RUNS" "$BIN" ls --all --no-index --json
  measure "ls --all --json, first (builds listings)" 0 "$BIN" ls --all --json
  measure "ls --all --json, warm" "$RUNS" "$BIN" ls --all --json
  measure "ls --all (table), warm" "$RUNS" "$BIN" ls --all
  rm -f "$dir"/sessiontree-search.summaries*
  measure "first search $COMMON (no summaries)" 0 "$BIN" search "$COMMON" --limit 20
  rm -f "$dir"/sessiontree-search.summaries*
  measure "first search $RARE (no summaries)" 0 "$BIN" search "$RARE" --limit 20
  measure "summaries build" 0 "$BIN" search --build-index
  measure "warm search $COMMON" "$RUNS" "$BIN" search "$COMMON" --limit 20
  measure "warm search $RARE" "$RUNS" "$BIN" search "$RARE" --limit 20
  measure "stats --all --json" "$RUNS" "$BIN" stats --all --json
  if [ "${BROWSE:-0}" = 1 ]; then
    local out
    out=$(BROWSE_AGENT_DIR=$dir cargo bench -q -p sessiontree-cli --bench browse -- first_frame 2>&1 | grep -A2 '^first_frame' | grep -o 'time: *\[[^]]*\]' | head -1)
    echo "browse first frame: $out" >&2
    # the middle of criterion's interval, in seconds
    RESULTS+=("browse first frame (criterion)|$(echo "$out" | awk '{v=$4; u=$5; if (u ~ /^ms/) v/=1000; else if (u ~ /^µs/) v/=1e6; print v}')|0")
  fi
}

one_corpus small $((BIG / 10)) $((BIG_MB / 10)) $((BIG_PROJ / 10))
SMALL_RESULTS=("${RESULTS[@]}")
RESULTS=()
one_corpus big "$BIG" "$BIG_MB" "$BIG_PROJ"
BIG_RESULTS=("${RESULTS[@]}")

echo
printf '| %-44s | %10s | %10s | %6s | %s\n' "operation" "$((BIG / 10))" "$BIG" "ratio" "big, x grep"
printf '|%s|%s|%s|%s|%s\n' "----------------------------------------------" "------------" "------------" "--------" "---------"
for k in "${!SMALL_RESULTS[@]}"; do
  IFS='|' read -r n ws _ <<<"${SMALL_RESULTS[$k]}"
  IFS='|' read -r _ wb rb <<<"${BIG_RESULTS[$k]}"
  vs=""
  case "$n" in
    *"search $COMMON"*) vs=$(echo "${BIG_RESULTS[0]}" | cut -d'|' -f2) ;;
    *"search $RARE"*) vs=$(echo "${BIG_RESULTS[1]}" | cut -d'|' -f2) ;;
  esac
  g=""
  [ -n "$vs" ] && g=$(python3 -c "print(f'{$wb/$vs:.2f}x')")
  printf '| %-44s | %8.3f s | %8.3f s | %5.1fx | %s (peak %d MiB)\n' "$n" "$ws" "$wb" \
    "$(python3 -c "print($wb/$ws if $ws > 0 else 0)")" "$g" "$((${rb:-0} / 1024))"
done

if [ "${ARCHIVE:-0}" = 1 ]; then
  for c in small big; do
    echo "archive over $c:" >&2
    mkdir -p "$W/archive-$c"
    # archive.sh keeps its corpus in DIR/agent: lend it this one (a rename), then take it back.
    mv "$W/$c" "$W/archive-$c/agent"
    BIN=$BIN bash bench/archive.sh "$W/archive-$c" 2>&1 | sed "s/^/  [$c] /" || true
    mv "$W/archive-$c/agent" "$W/$c"
  done
fi
