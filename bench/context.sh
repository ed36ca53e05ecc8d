#!/usr/bin/env bash
# `context` of the 286 MB / 50,000-entry session beside `cat` of the same file, in one run:
#   bench/context.sh [FILE]        (RUNS=7 rounds by default; BIN=... to time another build)
# The file is generated when missing (gen_session 50000 5500 7, seeded). Each round runs
# cat and each `context` once, in turn, so that all see the same machine; medians of the
# rounds, peak RSS, CPU (user + sys) and the ratios to cat are printed with the load
# average before and after. Warm page cache (cat runs first).
#
# "whole file" rows read and check every byte (SESSIONTREE_NO_KEPT_CONTEXT=1): the first
# read of a session, or of one that changed. "kept" rows are every later read of the
# unchanged file, which parse only the context's own lines (they run with a throwaway
# agent dir, where the first, untimed read keeps where those lines are). The last two rows
# append one entry before each run (untimed), continuing the last, as an agent's turn does.
. "$(dirname "$0")/lib.sh"
FILE=${1:-/tmp/big.jsonl}
RUNS=${RUNS:-7}
build_cli
if [ ! -s "$FILE" ]; then
  cargo build -q --release -p sessiontree --example gen_session
  "$CARGO_TARGET_DIR/release/examples/gen_session" 50000 5500 7 >"$FILE"
fi
# A file changed less than two seconds ago is not kept.
sleep 3
AGENT=$(mktemp -d)
trap 'rm -rf "$AGENT"' EXIT
export PI_CODING_AGENT_DIR=$AGENT
echo "file: $FILE, $(($(stat -c %s "$FILE") / 1000000)) MB; $RUNS rounds; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$FILE" >/dev/null
"$BIN" context "$FILE" --json >/dev/null
[ -n "$(ls "$AGENT/sessiontree-context")" ] || { echo "context was not kept" >&2; exit 1; }
WHOLE=(env SESSIONTREE_NO_KEPT_CONTEXT=1 "$BIN")
names=("cat FILE" "context --json, whole file" "context --json, kept" "context (human), whole file" "context (human), kept")
mapfile -t lines < <(python3 bench/measure.py --interleave "$RUNS" \
  cat "$FILE" ::: "${WHOLE[@]}" context "$FILE" --json ::: "$BIN" context "$FILE" --json \
  ::: "${WHOLE[@]}" context "$FILE" ::: "$BIN" context "$FILE")
[ "${#lines[@]}" -eq 5 ] || exit 1
read -r cat_wall _ _ <<<"${lines[0]}"
printf '| %-28s | %8s | %8s | %12s | %7s |\n' run "wall s" "CPU s" "peak RSS MB" "x cat"
printf '|%s|%s|%s|%s|%s|\n' "------------------------------" "----------" "----------" "--------------" "---------"
for i in 0 1 2 3 4; do
  read -r wall rss cpu <<<"${lines[$i]}"
  printf '| %-28s | %8.3f | %8.3f | %12.0f | %6.2fx |\n' "${names[$i]}" "$wall" "$cpu" \
    "$(echo "$rss/1024" | bc -l)" "$(echo "$wall/$cat_wall" | bc -l)"
done

# After an agent's next turn: one entry appended before every run, continuing the last one
# (on a copy of the file). "kept" reads the kept part's checksums and parses only the tail
# and the context's lines; "whole file" reads and checks everything.
COPY=$AGENT/appended.jsonl
cp "$FILE" "$COPY"
sleep 3
"$BIN" context "$COPY" --json >/dev/null
export MEASURE_BEFORE="python3 bench/append_continuing.py '$COPY'"
mapfile -t lines < <(python3 bench/measure.py --interleave "$RUNS" \
  "${WHOLE[@]}" context "$COPY" --json ::: "$BIN" context "$COPY" --json)
unset MEASURE_BEFORE
[ "${#lines[@]}" -eq 2 ] || exit 1
names=("after an append, whole file" "after an append, kept")
for i in 0 1; do
  read -r wall rss cpu <<<"${lines[$i]}"
  printf '| %-28s | %8.3f | %8.3f | %12.0f | %6.2fx |\n' "${names[$i]}" "$wall" "$cpu" \
    "$(echo "$rss/1024" | bc -l)" "$(echo "$wall/$cat_wall" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
