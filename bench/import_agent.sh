#!/usr/bin/env bash
# The import benchmark of one agent: COUNT synthetic transcripts (~TOTAL_MB, made by
# bench/import_AGENT_gen.py) imported into an empty agent dir, against
# `ls --all --no-index --json` over the result, as bench/import.sh does for Claude Code and
# Codex (its notes on this VM's disk and memory apply: results removed at the end, the next
# run waits SETTLE=361 s after that; sources read and memory touched before each run).
#   bench/import_agent.sh AGENT HOME_VAR SOURCES [DATA_DIR] [COUNT] [TOTAL_MB]
# AGENT: gemini or copilot; HOME_VAR: the agent's folder variable the sources go in;
# SOURCES: the name pattern of its transcripts (for reading them before each run).
# bench/import_gemini.sh and bench/import_copilot.sh call it.
. "$(dirname "$0")/lib.sh"
AGENT=$1 HOME_VAR=$2 SOURCES=$3
DATA=${4:-/tmp/sessiontree-import-$AGENT-bench}
COUNT=${5:-1000}
MB=${6:-500}
build_cli
[ -d "$DATA/src" ] || python3 "bench/import_${AGENT}_gen.py" "$DATA/src" "$COUNT" "$MB"
echo "sources: $(find "$DATA/src" -name "$SOURCES" | wc -l) files, $(du -sm "$DATA/src" | cut -f1) MB" >&2
export "$HOME_VAR=$DATA/src"
RUNS=${RUNS:-3}
export MEASURE_CPU=1
row() { printf '%-46s %8.3f s wall %8.3f s cpu %9d KiB\n' "$1" "$2" "$3" "$4" >&2; }
wait_after_removal() {
  local since=0
  [ -f "$DATA/.removed-at" ] && since=$(cat "$DATA/.removed-at")
  local left=$(( since + ${SETTLE:-361} - $(date +%s) ))
  if [ "$left" -gt 0 ]; then
    echo "waiting $left s: files were removed here $(( $(date +%s) - since )) s ago (see bench/import.sh)" >&2
    sleep "$left"
  fi
}
remove() { rm -rf "$@"; sync; date +%s > "$DATA/.removed-at"; }
if compgen -G "$DATA/agent-run-*" > /dev/null; then remove "$DATA"/agent-run-*; fi
wait_after_removal
echo "load before: $(uptime)" >&2
pairs="" times="" lss=""
for r in $(seq "$RUNS"); do
  export PI_CODING_AGENT_DIR=$DATA/agent-run-$r
  sync
  find "$DATA/src" -name "$SOURCES" -exec cat {} + >/dev/null
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r t rt ct < <(python3 bench/measure.py 0 "$BIN" import "$AGENT")
  row "import $AGENT (run $r)" "$t" "$ct" "$rt"
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r l rl cl < <(python3 bench/measure.py "$RUNS" "$BIN" ls --all --no-index --json)
  row "  ls --all --no-index --json over it" "$l" "$cl" "$rl"
  times="$times $t"; lss="$lss $l"
  pairs="$pairs $(python3 -c "print(f'{$t/$l:.4f}')")"
done
echo "result: $(find "$PI_CODING_AGENT_DIR/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$PI_CODING_AGENT_DIR/sessions" | cut -f1) MB" >&2
read -r again ragain cagain < <(python3 bench/measure.py "$RUNS" "$BIN" import "$AGENT")
row "import $AGENT again (nothing to add)" "$again" "$cagain" "$ragain"
read -r d rd cd < <(PI_CODING_AGENT_DIR=$DATA/agent-none python3 bench/measure.py "$RUNS" "$BIN" import "$AGENT" --dry-run)
row "import $AGENT --dry-run (no writing)" "$d" "$cd" "$rd"
# What writing the same bytes durably costs on this disk now, as bench/import.sh prints it:
# on a slow day that alone can be more than 3x the `ls`.
printf '%-46s %8.3f s wall\n' "cp -r of the result + sync (writing alone)" \
  "$(durable_copy "$PI_CODING_AGENT_DIR/sessions" "$DATA/copy-of-result")" >&2
echo "load after: $(uptime)" >&2
remove "$DATA"/agent-run-* "$DATA/copy-of-result"
python3 -c "print(f'import / ls = {min(map(float, \"$times\".split()))/min(map(float, \"$lss\".split())):.2f} wall, best of each (target <= 3)')" >&2
python3 -c "import statistics; p=sorted(map(float, '$pairs'.split())); print(f'import / ls of the same moment: {\", \".join(f\"{x:.2f}\" for x in p)} (median {statistics.median(p):.2f})')" >&2
