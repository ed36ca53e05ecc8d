#!/usr/bin/env bash
# The warm figures with and without a running watch's change journal (sessiontree::changes),
# over one corpus: the commands that must know which session files changed stat every file
# without it, only the changed ones with it. Alternated in one run (bench/measure.py
# --interleave), each with a common and a rare word, beside the floor of a stat per file.
#   bench/journal.sh [DATA_DIR] [COUNT] [TOTAL_MB] [PROJECTS]
# Defaults: the 20,000-session corpus of bench/scale.sh (/tmp/st-scale/big, 5.3 GB, 400
# projects; generated if missing). COMMON / RARE: the words; RUNS: rounds (default 9).
. "$(dirname "$0")/lib.sh"
RUNS=${RUNS:-9}
COMMON=${COMMON:-kalo}
RARE=${RARE:-quokka_marker}
scale_corpus "$@"
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files in $(find "$DATA/sessions" -mindepth 1 -maxdepth 1 -type d | wc -l) folders; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ -f "$DATA/sessiontree-search.summaries" ] || "$BIN" search --build-index >/dev/null
"$BIN" ls --all >/dev/null  # the listing index, warm
# A watch with nothing to import: it keeps the journal of the sessions folder.
empty=$(mktemp -d)
"$BIN" watch --claude "$empty" --no-claude --no-codex --no-gemini --no-opencode --no-copilot 2>/dev/null &
watch_pid=$!
trap 'kill $watch_pid 2>/dev/null; wait $watch_pid 2>/dev/null || true; rm -rf "$empty"' EXIT
for _ in $(seq 100); do [ -f "$DATA/sessiontree-changes" ] && break; sleep 0.1; done
"$BIN" ls --all >/dev/null  # the first read of the epoch walks and saves the snapshot
printf '%s\n' "columns: wall s, peak RSS KiB, CPU s; each row alternated with the others $RUNS times" >&2
for w in "$COMMON" "$RARE"; do
  echo "warm search $w: with the journal / without (SESSIONTREE_NO_JOURNAL=1) / one stat per file (find)" >&2
  python3 bench/measure.py --interleave "$RUNS" "$BIN" search "$w" --limit 20 \
    ::: env SESSIONTREE_NO_JOURNAL=1 "$BIN" search "$w" --limit 20 \
    ::: find "$DATA/sessions" -name '*.jsonl' -printf '%s %T@\n' >&2
done
echo "ls --all (table), warm: with the journal / without" >&2
python3 bench/measure.py --interleave "$RUNS" "$BIN" ls --all ::: env SESSIONTREE_NO_JOURNAL=1 "$BIN" ls --all >&2
# One entry appended to a session before each run (and 50 ms for the watch to write its
# line): the kept table is of another list, the changed file is read again.
F=$(find "$DATA/sessions" -name '*.jsonl' | sort | sed -n 1p)
append_before "$F" 0.05
echo "ls --all (table) after one appended entry: with the journal / without" >&2
python3 bench/measure.py --interleave "$RUNS" "$BIN" ls --all ::: env SESSIONTREE_NO_JOURNAL=1 "$BIN" ls --all >&2
unset MEASURE_BEFORE
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
