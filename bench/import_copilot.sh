#!/usr/bin/env bash
# GitHub Copilot CLI import benchmark: COUNT synthetic event logs (~TOTAL_MB, bench/import_copilot_gen.py:
# tool calls, resumes, system prompts, compactions, titles) imported into an empty agent dir, against
# `ls --all --no-index --json` over the result, as bench/import.sh does for Claude Code and
# Codex (its notes on this VM's disk and memory apply: results removed at the end, the next
# run waits SETTLE=361 s after that; sources read and memory touched before each run).
#   bench/import_copilot.sh [DATA_DIR] [COUNT] [TOTAL_MB]
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-import-copilot-bench}
COUNT=${2:-1000}
MB=${3:-500}
build_cli
[ -d "$DATA/src" ] || python3 bench/import_copilot_gen.py "$DATA/src" "$COUNT" "$MB"
echo "sources: $(find "$DATA/src" -name 'events.jsonl' | wc -l) files, $(du -sm "$DATA/src" | cut -f1) MB" >&2
export COPILOT_HOME=$DATA/src
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
  find "$DATA/src" -name 'events.jsonl' -exec cat {} + >/dev/null
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r t rt ct < <(python3 bench/measure.py 0 "$BIN" import copilot)
  row "import copilot (run $r)" "$t" "$ct" "$rt"
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r l rl cl < <(python3 bench/measure.py "$RUNS" "$BIN" ls --all --no-index --json)
  row "  ls --all --no-index --json over it" "$l" "$cl" "$rl"
  times="$times $t"; lss="$lss $l"
  pairs="$pairs $(python3 -c "print(f'{$t/$l:.4f}')")"
done
echo "result: $(find "$PI_CODING_AGENT_DIR/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$PI_CODING_AGENT_DIR/sessions" | cut -f1) MB" >&2
read -r again ragain cagain < <(python3 bench/measure.py "$RUNS" "$BIN" import copilot)
row "import copilot again (nothing to add)" "$again" "$cagain" "$ragain"
read -r d rd cd < <(PI_CODING_AGENT_DIR=$DATA/agent-none python3 bench/measure.py "$RUNS" "$BIN" import copilot --dry-run)
row "import copilot --dry-run (no writing)" "$d" "$cd" "$rd"
echo "load after: $(uptime)" >&2
remove "$DATA"/agent-run-*
python3 -c "print(f'import / ls = {min(map(float, \"$times\".split()))/min(map(float, \"$lss\".split())):.2f} wall, best of each (target <= 3)')" >&2
python3 -c "import statistics; p=sorted(map(float, '$pairs'.split())); print(f'import / ls of the same moment: {\", \".join(f\"{x:.2f}\" for x in p)} (median {statistics.median(p):.2f})')" >&2
