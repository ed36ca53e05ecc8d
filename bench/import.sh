#!/usr/bin/env bash
# Import benchmark: COUNT synthetic transcripts (half Claude Code, half Codex, ~TOTAL_MB)
# imported into an empty agent dir, against `ls --no-index` over the result.
#   bench/import.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Generated data stays in DATA_DIR (default /tmp/sessiontree-import-bench), never in the repo.
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-import-bench}
COUNT=${2:-1000}
MB=${3:-500}
build_cli
if [ ! -d "$DATA/src" ]; then
  python3 bench/import_gen.py "$DATA/src" "$COUNT" "$MB"
fi
echo "sources: $(find "$DATA/src" -name '*.jsonl' | wc -l) files, $(du -sm "$DATA/src" | cut -f1) MB" >&2
export CLAUDE_CONFIG_DIR=$DATA/src/claude CODEX_HOME=$DATA/src/codex
RUNS=${RUNS:-3}
export MEASURE_CPU=1
# Wall time, CPU time (user + sys: the machine may be shared) and peak RSS.
row() { printf '%-46s %8.3f s wall %8.3f s cpu %9d KiB\n' "$1" "$2" "$3" "$4" >&2; }
add() { python3 -c "print(f'{$1+$2:.4f}')"; }
# ext4 without a journal (this kind of VM disk) does not reuse an inode for 60 s after it
# was deleted, or for 360 s while the inode's table block is dirty (as creating files keeps
# it), and on each file it creates scans past every such inode (9% of an import's samples
# in a profile taken 61 s after removing 3,000 files). So results are removed at the end
# of a run of this script, the time is noted, and the next one waits until 361 s have
# passed since (SETTLE=seconds to change it); each import run writes a new folder.
wait_after_removal() {
  local since=0
  [ -f "$DATA/.removed-at" ] && since=$(cat "$DATA/.removed-at")
  local left=$(( since + ${SETTLE:-361} - $(date +%s) ))
  if [ "$left" -gt 0 ]; then
    echo "waiting $left s: files were removed here $(( $(date +%s) - since )) s ago (see the comment above)" >&2
    sleep "$left"
  fi
}
remove() {
  rm -rf "$@"
  sync
  date +%s > "$DATA/.removed-at"
}
if compgen -G "$DATA/agent-run-*" > /dev/null || [ -e "$DATA/agent" ] || [ -e "$DATA/copy-of-result" ]; then
  remove "$DATA"/agent "$DATA"/agent-run-* "$DATA/copy-of-result"
fi
wait_after_removal
echo "load before: $(uptime)" >&2
times="" cpus="" lss="" lscpus="" pairs=""
for r in $(seq "$RUNS"); do
  export PI_CODING_AGENT_DIR=$DATA/agent-run-$r
  sync
  # Warm sources, as `ls` below is measured warm (its warm-up run): this machine's memory
  # manager evicts page cache that was idle for a few seconds.
  find "$DATA/src" -name '*.jsonl' -exec cat {} + >/dev/null
  # Memory the host has taken back makes writing the result cost up to 2.5x (see
  # bench/prefault.py); PREFAULT_MB=0 measures without this step.
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r a ra ca < <(python3 bench/measure.py 0 "$BIN" import claude)
  read -r b rb cb < <(python3 bench/measure.py 0 "$BIN" import codex)
  t=$(add "$a" "$b")
  c=$(add "$ca" "$cb")
  row "import claude + codex (run $r)" "$t" "$c" "$(( ra > rb ? ra : rb ))"
  # `ls` over this run's result right after it: the machine's speed drifts by a third
  # within minutes, so each import is also compared with an `ls` of the same moment.
  python3 bench/prefault.py "${PREFAULT_MB:-2048}"
  read -r l rl cl < <(python3 bench/measure.py "$RUNS" "$BIN" ls --all --no-index --json)
  row "  ls --all --no-index --json over it" "$l" "$cl" "$rl"
  times="$times $t"
  cpus="$cpus $c"
  lss="$lss $l"
  lscpus="$lscpus $cl"
  pairs="$pairs $(python3 -c "print(f'{$t/$l:.4f}')")"
done
best_import=$(python3 -c "print(min(map(float, '$times'.split())))")
best_cpu=$(python3 -c "print(min(map(float, '$cpus'.split())))")
echo "result: $(find "$PI_CODING_AGENT_DIR/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$PI_CODING_AGENT_DIR/sessions" | cut -f1) MB" >&2
read -r again ragain cagain < <(python3 bench/measure.py "$RUNS" "$BIN" import claude)
row "import claude again (nothing to add)" "$again" "$cagain" "$ragain"
ls=$(python3 -c "print(min(map(float, '$lss'.split())))")
cls=$(python3 -c "print(min(map(float, '$lscpus'.split())))")
# Context for the ratio: the import without writing anything, and the bare cost of writing
# its result durably on this disk (a copy of the result folder, then sync).
# (Into an agent dir with no sessions, so that nothing is compared with earlier files.)
read -r d rd cd < <(PI_CODING_AGENT_DIR=$DATA/agent-none BIN=$BIN python3 bench/measure.py "$RUNS" bash -c '"$BIN" import claude --dry-run >/dev/null && "$BIN" import codex --dry-run >/dev/null')
row "import claude + codex --dry-run (no writing)" "$d" "$cd" "$rd"
printf '%-46s %8.3f s wall\n' "cp -r of the result + sync (writing alone)" \
  "$(durable_copy "$PI_CODING_AGENT_DIR/sessions" "$DATA/copy-of-result")" >&2
echo "load after: $(uptime)" >&2
# Removed now, so that a later run of this script waits only for what is left of the
# six minutes.
remove "$DATA"/agent-run-* "$DATA/copy-of-result"
python3 -c "print(f'import / ls = {$best_import/$ls:.2f} wall, {$best_cpu/$cls:.2f} cpu, best of each (target <= 3)')" >&2
python3 -c "import statistics; p=sorted(map(float, '$pairs'.split())); print(f'import / ls of the same moment: {\", \".join(f\"{x:.2f}\" for x in p)} (median {statistics.median(p):.2f})')" >&2
