#!/usr/bin/env bash
# OpenCode import benchmark: one database of COUNT generated sessions (~TOTAL_MB of rows,
# bench/opencode_gen.py from the recorded fixture) imported into a new folder (RUNS runs,
# each into its own), against `ls --all --no-index --json` over the result (median of 3,
# right after each import).
#   bench/import_opencode.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Generated data stays in DATA_DIR (default /tmp/opencode-bench), never in the repo.
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/opencode-bench}
COUNT=${2:-1000}
MB=${3:-200}
RUNS=${RUNS:-3}
build_cli
if [ ! -f "$DATA/xdg/opencode/opencode.db" ]; then
  mkdir -p "$DATA/xdg/opencode"
  python3 bench/opencode_gen.py crates/sessiontree-import/tests/fixtures/opencode-recorded/opencode.db \
    "$DATA/xdg/opencode/opencode.db" "$COUNT" "$MB"
fi
echo "source: $(du -sm "$DATA/xdg/opencode/opencode.db" | cut -f1) MB database, $COUNT sessions" >&2
export XDG_DATA_HOME=$DATA/xdg
for r in $(seq "$RUNS"); do
  out=$DATA/run$r
  rm -rf "$out"
  export PI_CODING_AGENT_DIR=$out
  read -r imp _ < <(python3 bench/measure.py 0 "$BIN" import opencode)
  read -r ls _ < <(python3 bench/measure.py 3 "$BIN" ls --all --no-index --json)
  n=$(find "$out/sessions" -name '*.jsonl' | wc -l)
  python3 -c "print(f'run $r: import $imp s, ls --no-index $ls s, ratio {$imp/$ls:.2f}x ($n files, $(du -sm "$out/sessions" | cut -f1) MB)')" >&2
  read -r again _ < <(python3 bench/measure.py 0 "$BIN" import opencode)
  echo "run $r: import again (nothing to add) $again s" >&2
  # What writing the same bytes durably costs on this disk now (as bench/import.sh).
  echo "run $r: cp -r of the result + sync (writing alone) $(durable_copy "$out/sessions" "$DATA/copy-of-result") s" >&2
  rm -rf "$DATA/copy-of-result"
done
uptime >&2
rm -rf "$DATA"/run*
