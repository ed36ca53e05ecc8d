#!/usr/bin/env bash
# `sessiontree serve` over generated corpora, one run: the list over 2,000 sessions (warm
# index), search as you type and the search page (warm summaries), and the 50,000-entry
# session's pages (first open, then from the server's cache; at its leaf and at an entry in
# the middle, with its context). Requests are timed by curl (time to the last byte).
#   bash bench/serve.sh [WORKDIR]
# Generated data stays in WORKDIR (default $TMPDIR/sessiontree-serve-bench), never in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-${TMPDIR:-/tmp}/sessiontree-serve-bench}
RUNS=${RUNS:-7}
WORD=${WORD:-quokka_marker}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p sessiontree --example gen_sessions --example gen_session
cargo build --release -q -p sessiontree-cli
BIN=$CARGO_TARGET_DIR/release/sessiontree
mkdir -p "$work"
if [ ! -d "$work/agent/sessions" ]; then
  "$CARGO_TARGET_DIR/release/examples/gen_sessions" "$work/agent" 2000 540
fi
big=$work/agent/sessions/--bench-big--/big.jsonl
if [ ! -s "$big" ]; then
  mkdir -p "$(dirname "$big")"
  "$CARGO_TARGET_DIR/release/examples/gen_session" 50000 5500 7 > "$big"
fi
export PI_CODING_AGENT_DIR=$work/agent
echo "data: $(find "$work/agent/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$work/agent/sessions" | cut -f1) MiB; big session $(($(stat -c %s "$big") / 1048576)) MiB, $(wc -l < "$big") lines; $(nproc) cores"

out=$(mktemp)
"$BIN" serve --listen 127.0.0.1:0 > "$out" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q serving "$out" && break; sleep 0.1; done
base=$(sed -n 's/.* at \(http[^ ]*\)\/$/\1/p' "$out")
sid=$(head -1 "$big" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')
mid=$(sed -n 25000p "$big" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')

t() { curl -s -o /dev/null -w '%{time_total} %{size_download} %{http_code}\n' "$base$1"; }
measure() { # name, path: median of RUNS requests after one warm-up
  local name=$1 path=$2 first
  first=$(t "$path")
  [ "${first##* }" = 200 ] || { echo "$name: HTTP ${first##* }" >&2; exit 1; }
  for _ in $(seq "$RUNS"); do t "$path"; done | sort -n | awk -v n="$name" -v f="$first" '
    { a[NR] = $1; s = $2 } END { split(f, x, " ");
      printf "| %-58s | %7.1f | %7.1f | %8.0f |\n", n, 1000 * x[1], 1000 * a[int((NR + 1) / 2)], s / 1024 }'
}
echo
printf '| %-58s | %7s | %7s | %8s |\n' "request" "first ms" "median ms" "KiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------------------------------" "---------" "---------" "----------"
measure "/ (every session, newest first)" "/"
measure "/?agent=pi&since=2025-01-01 (filtered)" "/?agent=pi&since=2025-01-01"
# The first search scans; the summaries are then built on a background thread.
t "/search?q=zqxjkvbw" > /dev/null
for _ in $(seq 600); do
  [ -s "$work/agent/sessiontree-search.summaries" ] && break; sleep 0.1
done
sleep 3
measure "/search?q=$WORD (hits, the newest 100)" "/search?q=$WORD"
measure "/search?q=zqxjkvbw (a word in no file)" "/search?q=zqxjkvbw"
measure "/?q=$WORD&part=list (search as you type)" "/?q=$WORD&part=list"
measure "/s/<50,000-entry session> (first: load)" "/s/$sid"
measure "/s/<50,000-entry session>/<entry 25,000> (+ context)" "/s/$sid/$mid"
measure "/api/version/<50,000-entry session> (the live poll)" "/api/version/$sid"
