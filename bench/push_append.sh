#!/usr/bin/env bash
# A push after one appended entry, and with nothing changed, over a large agent dir, beside
# its target (< 0.1 s), with a running watch's change journal and without it, the rounds
# alternated (bench/measure.py --interleave; an entry is appended before every push, untimed):
#   bench/push_append.sh [DATA_DIR] [COUNT] [TOTAL_MB] [PROJECTS]
# Defaults: the 20,000-session corpus of bench/scale.sh (/tmp/st-scale/big, 5.3 GB, 400
# projects; generated if missing). The archive: $SESSIONTREE_ARCHIVE when set (its sessions
# pushed already, or pushed now), else a throwaway cluster under DATA_DIR/../push-bench
# with everything pushed first (about a minute at 20,000). RUNS: rounds (default 9).
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-9}
scale_corpus "$@"
if [ -z "${SESSIONTREE_ARCHIVE:-}" ]; then
  start_cluster "$(dirname "$DATA")/push-bench"
  rm -f "$DATA"/sessiontree-archive/*.json "$DATA"/sessiontree-archive/*.changes
fi
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s.%N)
"$BIN" push >&2
echo "  push of what was not pushed yet: $(echo "$(date +%s.%N) - $start" | bc) s" >&2
# A watch with nothing to import and no archive of its own: it keeps the journal.
empty=$(mktemp -d)
env -u SESSIONTREE_ARCHIVE "$BIN" watch --claude "$empty" --no-claude --no-codex --no-gemini \
  --no-opencode --no-copilot 2>/dev/null &
watch_pid=$!
# (Each step may fail without stopping the rest: the watch may be gone already.)
trap 'kill $watch_pid 2>/dev/null || true; wait $watch_pid 2>/dev/null || true; rm -rf "$empty"
      if [ -n "${CLUSTER_STOP:-}" ]; then "${CLUSTER_STOP[@]}" >/dev/null || true; fi' EXIT
for _ in $(seq 100); do [ -f "$DATA/sessiontree-changes" ] && break; sleep 0.1; done
"$BIN" ls --all >/dev/null # the first read of the epoch walks and saves the snapshot
"$BIN" push >/dev/null     # in step with the archive
F=$(find "$DATA/sessions" -name '*.jsonl' | sort | sed -n 1p)
append_before "$F"
echo "columns: wall s, peak RSS KiB, CPU s; $RUNS rounds alternated" >&2
echo "push after one appended entry: with the journal / without (SESSIONTREE_NO_JOURNAL=1)" >&2
python3 bench/measure.py --interleave "$RUNS" "$BIN" push ::: env SESSIONTREE_NO_JOURNAL=1 "$BIN" push >&2
unset MEASURE_BEFORE
echo "push, nothing changed: with the journal / without" >&2
python3 bench/measure.py --interleave "$RUNS" "$BIN" push ::: env SESSIONTREE_NO_JOURNAL=1 "$BIN" push >&2
echo "target: < 0.1 s; load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
