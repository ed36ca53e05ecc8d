#!/usr/bin/env bash
# `context` of the 276 MB / 50,000-entry session beside `cat` of the same file, in one run:
#   bench/context.sh [FILE]        (RUNS=7 rounds by default; BIN=... to time another build)
# The file is generated when missing (gen_session 50000 5500 7, seeded). Each round runs
# cat, `context --json` and `context` (human) once each, in turn, so all three see the same
# machine; medians of the rounds, peak RSS, CPU (user + sys) and the ratios to cat are
# printed with the load average before and after. Warm page cache (cat runs first).
. "$(dirname "$0")/lib.sh"
FILE=${1:-/tmp/big.jsonl}
RUNS=${RUNS:-7}
build_cli
if [ ! -s "$FILE" ]; then
  cargo build -q --release -p sessiontree --example gen_session
  "$CARGO_TARGET_DIR/release/examples/gen_session" 50000 5500 7 >"$FILE"
fi
echo "file: $FILE, $(($(stat -c %s "$FILE") / 1000000)) MB; $RUNS rounds; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$FILE" >/dev/null
names=("cat FILE" "context FILE --json" "context FILE (human)")
mapfile -t lines < <(python3 bench/measure.py --interleave "$RUNS" \
  cat "$FILE" ::: "$BIN" context "$FILE" --json ::: "$BIN" context "$FILE")
[ "${#lines[@]}" -eq 3 ] || exit 1
read -r cat_wall _ _ <<<"${lines[0]}"
printf '| %-22s | %8s | %8s | %12s | %7s |\n' run "wall s" "CPU s" "peak RSS MB" "x cat"
printf '|%s|%s|%s|%s|%s|\n' "------------------------" "----------" "----------" "--------------" "---------"
for i in 0 1 2; do
  read -r wall rss cpu <<<"${lines[$i]}"
  printf '| %-22s | %8.3f | %8.3f | %12.0f | %6.2fx |\n' "${names[$i]}" "$wall" "$cpu" \
    "$(echo "$rss/1024" | bc -l)" "$(echo "$wall/$cat_wall" | bc -l)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
