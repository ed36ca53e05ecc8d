# The bench scripts' common preamble, sourced first:  . "$(dirname "$0")/lib.sh"
# Strict mode, the repository root as the working folder, CARGO_TARGET_DIR, and:
#   build_cli               BIN = the release command (built, unless BIN is set already)
#   corpus DIR COUNT MB [PROJECTS]
#                           COUNT generated sessions (~MB, in PROJECTS working directories,
#                           default 20) in DIR (gen_sessions), unless DIR/sessions exists
#   durable_copy SRC DST    seconds that `cp -r SRC DST` followed by `sync` takes: what
#                           writing those bytes durably costs on this disk now (DST is
#                           left for the caller to remove)
#   start_cluster DIR       a throwaway PostgreSQL cluster (Debian's packages) in DIR/pg,
#                           as the postgres system user when run as root, stopped on exit;
#                           a login role `bench` owning database `archive`; sets PG,
#                           PGBIN, PORT and SESSIONTREE_ARCHIVE
#   scale_corpus [DATA_DIR] [COUNT] [TOTAL_MB] [PROJECTS]
#                           build_cli, then the corpus (default: bench/scale.sh's 20,000
#                           sessions, /tmp/st-scale/big, 5.3 GB, 400 projects) as the agent
#                           dir (PI_CODING_AGENT_DIR, no background index); sets DATA
#   append_before FILE [WAIT]
#                           sets MEASURE_BEFORE (bench/measure.py) to append one new user
#                           message entry to FILE before every run, then sleep WAIT seconds
#                           (default 0: e.g. 0.05 for a watch to write its journal line)
#   measure NAME RUNS CMD.. median wall seconds and peak RSS of CMD (bench/measure.py),
#                           printed on stderr (name column MEASURE_WIDTH wide) and kept
#                           in RESULTS as "name|wall|rss"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}

scale_corpus() {
  DATA=${1:-/tmp/st-scale/big}
  build_cli
  corpus "$DATA" "${2:-20000}" "${3:-5300}" "${4:-400}"
  export PI_CODING_AGENT_DIR=$DATA SESSIONTREE_NO_BACKGROUND_INDEX=1
}

append_before() {
  local line='{"type":"message","id":"b%s","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"appended quokka","timestamp":1767225600000}}'
  export MEASURE_BEFORE="printf '$line\\n' \$(od -An -N6 -tx1 /dev/urandom | tr -d ' \\n') >> '$1'; sleep ${2:-0}"
}

build_cli() {
  if [ -z "${BIN:-}" ]; then
    cargo build -q --release -p sessiontree-cli --bin sessiontree
    BIN=$CARGO_TARGET_DIR/release/sessiontree
  fi
}

corpus() {
  if [ ! -d "$1/sessions" ]; then
    cargo build -q --release -p sessiontree --example gen_sessions
    "$CARGO_TARGET_DIR/release/examples/gen_sessions" "$1" "$2" "$3" ${4:+"$4"}
  fi
}

RESULTS=()
MEASURE_WIDTH=${MEASURE_WIDTH:-48}
measure() {
  local name=$1 runs=$2; shift 2
  local out wall rss
  out=$(python3 bench/measure.py "$runs" "$@") || exit 1
  read -r wall rss <<<"$out"
  RESULTS+=("$name|$wall|$rss")
  printf "%-${MEASURE_WIDTH}s %8.3f s %9d KiB\n" "$name" "$wall" "$rss" >&2
}

durable_copy() {
  sync
  local t0 t1
  t0=$(date +%s%N)
  cp -r "$1" "$2"
  sync
  t1=$(date +%s%N)
  python3 -c "print(f'{($t1 - $t0) / 1e9:.4f}')"
}

start_cluster() {
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PG=$1/pg
  local run=()
  if [ "$(id -u)" = 0 ]; then run=(runuser -u postgres --); fi
  rm -rf "$PG" && mkdir -p "$PG"
  if [ "$(id -u)" = 0 ]; then chown postgres "$PG"; fi
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "${run[@]}" "$PGBIN/initdb" -D "$PG/data" -U postgres --auth-local=trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
  printf '%s\n' "listen_addresses = ''" "port = $PORT" "unix_socket_directories = '$PG'" \
    "shared_buffers = 256MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" >>"$PG/data/postgresql.conf"
  "${run[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w start >/dev/null
  CLUSTER_STOP=("${run[@]}" "$PGBIN/pg_ctl" -D "$PG/data" -m fast -w stop)
  trap '"${CLUSTER_STOP[@]}" >/dev/null' EXIT
  "$PGBIN/psql" -X -q -h "$PG" -p "$PORT" -U postgres -c "CREATE ROLE bench LOGIN" -c "CREATE DATABASE archive OWNER bench"
  export SESSIONTREE_ARCHIVE="host=$PG port=$PORT user=bench dbname=archive"
}
