#!/usr/bin/env bash
# Archive benchmark: push, pull and search the 2,000-session (~509 MB) corpus through a
# throwaway local PostgreSQL cluster (Debian's `postgresql` package).
#   bench/archive.sh [DATA_DIR] [COUNT] [TOTAL_MB]
# Targets (issue 15): first push <= 60 s, push after one appended entry <= 100 ms, pull of
# all into an empty folder <= 60 s, archive search for a rare word < 200 ms and a common
# word < 500 ms, `stats --archive` over every session < 200 ms, and the archive on disk
# (pg_total_relation_size over the schema) <= the sessions' bytes. Each figure is printed
# beside its yardstick, with the load average.
# Generated data and the cluster live under DATA_DIR (default /tmp/sessiontree-bench-archive).
# BIN=path skips building the command (e.g. a release build made already).
. "$(dirname "$0")/lib.sh"
DATA=${1:-/tmp/sessiontree-bench-archive}
COUNT=${2:-2000}
MB=${3:-509}
build_cli
mkdir -p "$DATA"
corpus "$DATA/agent" "$COUNT" "$MB"
echo "data: $(find "$DATA/agent/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$DATA/agent/sessions" | cut -f1) MB" >&2

# The cluster: initdb in DATA/pg as the postgres system user when run as root.
start_cluster "$DATA"


export PI_CODING_AGENT_DIR=$DATA/agent
rm -rf "$DATA/agent/sessiontree-archive" "$DATA/agent/sessiontree-machine.json"
"$BIN" ls --archive >/dev/null 2>&1 || true   # creates the schema (not part of the push)
# CPU seconds of the server: the postmaster's exited children plus the running ones.
server_cpu() {
  local pm s=0 t
  pm=$(head -1 "$PG/data/postmaster.pid")
  for p in $pm $(pgrep -P "$pm"); do
    t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0)
    s=$((s + t))
  done
  echo "scale=2; $s / $(getconf CLK_TCK)" | bc
}
echo "load before the first push: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
cpu0=$(server_cpu)
measure "first push of all" 0 /usr/bin/time -o "$DATA/time.txt" -f '%U %S' "$BIN" push
read -r cu cs <"$DATA/time.txt"
echo "  first push CPU: client ${cu} s user + ${cs} s sys, server $(echo "$(server_cpu) - $cpu0" | bc) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# What autovacuum and the checkpointer do within minutes of a bulk load, done now, so the
# figures below are those of an archive in use, not of one still writing back its first push.
"$PGBIN/psql" -X -q -h "$PG" -p "$PORT" -U postgres -d archive -c "VACUUM ANALYZE" -c "CHECKPOINT"
measure "push again, nothing changed" 5 "$BIN" push
F=$(find "$DATA/agent/sessions" -name '*.jsonl' | sort | sed -n 1p)
append() {
  printf '{"type":"message","id":"b%07d","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"appended quokka","timestamp":1767225600000}}\n' $((RANDOM * 32768 + RANDOM)) >>"$F"
}
WALLS=()
for i in 1 2 3 4 5; do
  append
  out=$(python3 bench/measure.py 0 "$BIN" push)
  WALLS+=("${out%% *}")
done
median=$(printf '%s\n' "${WALLS[@]}" | sort -n | sed -n 3p)
RESULTS+=("push after one appended entry (median of 5)|$median|")
printf '%-48s %8.3f s\n' "push after one appended entry (median of 5)" "$median" >&2
export PI_CODING_AGENT_DIR=$DATA/empty
rm -rf "$DATA/empty"
measure "pull of all into an empty agent dir" 0 "$BIN" pull
if [ "$(find "$DATA/empty/sessions" -name '*.jsonl' | wc -l)" != "$(find "$DATA/agent/sessions" -name '*.jsonl' | wc -l)" ]; then
  echo "pull: file counts differ" >&2; exit 1
fi
(cd "$DATA/agent/sessions" && find . -name '*.jsonl' -print0 | sort -z | xargs -0 cat | sha256sum) >"$DATA/a.sum"
(cd "$DATA/empty/sessions" && find . -name '*.jsonl' -print0 | sort -z | xargs -0 cat | sha256sum) >"$DATA/b.sum"
cmp -s "$DATA/a.sum" "$DATA/b.sum" && echo "pulled files are byte-identical" >&2 || { echo "pulled files differ" >&2; exit 1; }
measure "pull again, nothing new" 3 "$BIN" pull
# The last measurement beside its yardstick: yard LIMIT_SECONDS
yard() {
  local wall
  wall=$(cut -d'|' -f2 <<<"${RESULTS[-1]}")
  printf '  %s s against < %s s: %s (load %s)\n' "$wall" "$1" \
    "$(awk -v w="$wall" -v l="$1" 'BEGIN {print (w < l ? "ok" : "OVER")}')" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
}
measure "archive search, one word (1 in 200 texts)" 5 "$BIN" search quokka_marker --archive --limit 20
measure "archive search, a rare word (5 texts)" 5 "$BIN" search appended --archive --limit 20
yard 0.2
# `vendor` is in about 80% of the generated texts (the corpus's words are made of a dozen
# syllables: `compaction` has letters none of them has, so no text is even a candidate).
measure "archive search, a common word (80% of texts)" 5 "$BIN" search vendor --archive --limit 20
yard 0.5
export PI_CODING_AGENT_DIR=$DATA/agent
measure "stats --archive (every session, kept usage)" 5 "$BIN" stats --archive --json
yard 0.2
"$BIN" stats --archive --json >"$DATA/stats-archive.json" 2>"$DATA/stats-archive.err" || true
"$BIN" stats --all --json >"$DATA/stats-local.json" 2>/dev/null || true
if cmp -s "$DATA/stats-archive.json" "$DATA/stats-local.json"; then
  echo "  stats --archive = stats --all over the same files" >&2
else
  echo "  stats --archive differs from stats --all:" >&2; cat "$DATA/stats-archive.err" >&2
  diff <(tr ',' '\n' <"$DATA/stats-archive.json") <(tr ',' '\n' <"$DATA/stats-local.json") | head >&2
fi
measure "stats --all (every local file)" 3 "$BIN" stats --all --json
psql_q() { "$PGBIN/psql" -X -A -t -q -h "$PG" -p "$PORT" -U postgres -d archive "$@"; }
psql_q -c "VACUUM ANALYZE" >/dev/null
# What the archive takes on disk, per relation (a table's heap with its TOAST, then each
# index), and the whole schema against the bytes of the sessions it holds.
echo "archive on disk, per relation (pg_table_size / pg_relation_size):" >&2
psql_q -F ' ' -c "
  SELECT rpad(c.relname, 34), lpad(pg_size_pretty(pg_table_size(c.oid)), 10), 'table'
  FROM pg_class c WHERE c.relnamespace = 'sessiontree'::regnamespace AND c.relkind = 'r'
  UNION ALL
  SELECT rpad(i.relname || ' (' || t.relname || ')', 34), lpad(pg_size_pretty(pg_relation_size(i.oid)), 10), 'index'
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
  WHERE t.relnamespace = 'sessiontree'::regnamespace
  ORDER BY 1" | sed 's/^/  /' >&2
ARCHIVE_BYTES=$(psql_q -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
  WHERE c.relnamespace = 'sessiontree'::regnamespace AND c.relkind = 'r'")
SESSION_BYTES=$(find "$DATA/agent/sessions" -name '*.jsonl' -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
RATIO=$(echo "scale=3; $ARCHIVE_BYTES / $SESSION_BYTES" | bc)
printf '%-48s %8d MB  (sessions %d MB; ratio %s, yardstick <= 1.000) %s\n' "archive on disk (pg_total_relation_size)" \
  $((ARCHIVE_BYTES / 1048576)) $((SESSION_BYTES / 1048576)) "$RATIO" \
  "$(awk -v r="$RATIO" 'BEGIN {print (r <= 1 ? "ok" : "OVER")}')" >&2
RESULTS+=("archive on disk MB (sessions $((SESSION_BYTES / 1048576)) MB)|$((ARCHIVE_BYTES / 1048576))|")
echo "database size: $(psql_q -c "SELECT pg_size_pretty(pg_database_size('archive'))")" >&2
printf '%s\n' "${RESULTS[@]}"
