#!/usr/bin/env bash
# A search whose client goes away stops costing CPU: `sessiontree serve --no-index` over
# 200 generated sessions (157 MiB), a regex search that matches nothing (every file read),
# once with a client that gives up after 1 s, once with one that waits. Prints the server's
# CPU seconds (utime+stime from /proc) in the 5 s after the client left, and the whole
# search's CPU when waited for.
#   bash bench/serve-cancel.sh [WORKDIR]     (BIN=path/to/sessiontree to skip the build)
# Generated data stays in WORKDIR (default $TMPDIR/sessiontree-serve-cancel).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-${TMPDIR:-/tmp}/sessiontree-serve-cancel}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p sessiontree-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/sessiontree
fi
if [ ! -d "$work/agent/sessions/--w--" ]; then
  mkdir -p "$work/agent/sessions/--w--"
  python3 - "$work/agent/sessions/--w--" <<'PY'
import json, random, sys
random.seed(1)
words = "alpha beta gamma delta epsilon zeta theta kappa lambda omicron".split()
for f in range(200):
    sid = f"{f:08x}-0000-7000-8000-000000000000"
    lines = [json.dumps({"type": "session", "version": 3, "id": sid,
                         "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"})]
    parent = None
    for i in range(1500):
        text = " ".join(random.choice(words) for _ in range(60))
        lines.append(json.dumps({"type": "message", "id": f"e{i}", "parentId": parent,
                                 "timestamp": "2025-01-01T00:00:01.000Z",
                                 "message": {"role": "user", "content": text,
                                             "timestamp": 1735689601000}}))
        parent = f"e{i}"
    open(f"{sys.argv[1]}/{sid}.jsonl", "w").write("\n".join(lines) + "\n")
PY
fi
out=$(mktemp)
PI_CODING_AGENT_DIR=$work/agent "$BIN" serve --no-index --listen 127.0.0.1:0 >"$out" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do grep -q http "$out" && break; sleep 0.1; done
addr=$(sed -n 's/.* at http:\/\/\([^/]*\)\/.*/\1/p' "$out")
cpu() { awk '{printf "%.2f", ($14+$15)/100}' "/proc/$pid/stat"; }
q='/search?q=%28alpha%7Cbeta%29%5B%5Ex%5D%2A%28zzqx%29&mode=regex'
curl -s -o /dev/null "http://$addr/"
c0=$(cpu); curl -s -o /dev/null --max-time 1 "http://$addr$q" || true; c1=$(cpu)
sleep 5; c2=$(cpu)
echo "client gone after 1 s: $(echo "$c1 - $c0" | bc) s CPU while it waited, $(echo "$c2 - $c1" | bc) s in the 5 s after"
c3=$(cpu); t0=$(date +%s.%N); curl -s -o /dev/null "http://$addr$q"; t1=$(date +%s.%N); c4=$(cpu)
echo "client waits: the whole search $(echo "$c4 - $c3" | bc) s CPU, $(echo "$t1 - $t0" | bc) s wall"
