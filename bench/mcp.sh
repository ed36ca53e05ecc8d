#!/usr/bin/env bash
# `sessiontree mcp` round trips through a real MCP client (mcp-tests/client.mjs, the official
# TypeScript SDK), warm: search_sessions, list_sessions, and read_session of the 276 MB
# session's context page (first page, and a page from the middle with the cursor), on the
# 2,000-session corpus of bench/search.sh plus that session.
#   bench/mcp.sh [DATA_DIR]        (REPEAT=N calls each, default 15; medians and ranges)
# Needs node and mcp-tests/node_modules (cd mcp-tests && npm ci). Generated data stays in
# DATA_DIR (default /tmp/sessiontree-bench-mcp), never in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/tmp/sessiontree-bench-mcp}
REPEAT=${REPEAT:-15}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build -q --release -p sessiontree-cli --bin sessiontree
cargo build -q --release -p sessiontree --example gen_sessions --example gen_session
BIN=$CARGO_TARGET_DIR/release/sessiontree
if [ ! -d "$DATA/sessions" ]; then
  "$CARGO_TARGET_DIR/release/examples/gen_sessions" "$DATA" 2000 530
fi
mkdir -p "$DATA/sessions/--big--"
BIG=$DATA/sessions/--big--/big.jsonl
[ -f "$BIG" ] || "$CARGO_TARGET_DIR/release/examples/gen_session" 50000 5500 7 > "$BIG"
export PI_CODING_AGENT_DIR=$DATA
echo "data: $(find "$DATA/sessions" -name '*.jsonl' | wc -l) files, $(du -sm "$DATA/sessions" | cut -f1) MB; big session $(du -m "$BIG" | cut -f1) MB; $(nproc) cores; load $(cut -d' ' -f1 /proc/loadavg)"
# Warm: the listing index and the search summaries exist, the files are in the page cache.
"$BIN" ls --all --json > /dev/null
"$BIN" search --build-index > /dev/null
cat "$DATA"/sessions/*/*.jsonl > /dev/null
BIG_ID=$(head -c 4096 "$BIG" | head -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# The cursor of a page in the middle of the big context (from a first read).
MID=$(echo "[{\"name\":\"read_session\",\"arguments\":{\"session\":\"$BIG_ID\"}}]" \
  | node mcp-tests/client.mjs "$BIN" mcp | tail -1 \
  | python3 -c 'import json,sys; c=json.load(sys.stdin)["pages"][0]["result"]["structuredContent"]["nextCursor"]; v,i,o,a=c.split(":",3); print(f"{v}:{int(i)*400}:0:{a}")')
calls=$(cat <<JSON
[
 {"name": "search_sessions", "arguments": {"query": "quokka_marker"}, "repeat": $REPEAT},
 {"name": "search_sessions", "arguments": {"query": "quokka_marker Needle", "limit": 5}, "repeat": $REPEAT},
 {"name": "list_sessions", "arguments": {}, "repeat": $REPEAT},
 {"name": "list_sessions", "arguments": {"limit": 200}, "repeat": $REPEAT},
 {"name": "read_session", "arguments": {"session": "$BIG_ID"}, "repeat": $REPEAT},
 {"name": "read_session", "arguments": {"session": "$BIG_ID", "cursor": "$MID"}, "repeat": $REPEAT},
 {"name": "read_session", "arguments": {"session": "$BIG_ID", "view": "tree"}, "repeat": $REPEAT},
 {"name": "usage_summary", "arguments": {}, "repeat": 3}
]
JSON
)
# The big session alone, first read: the load is part of it (the server keeps it after).
cold=$(echo "[{\"name\":\"read_session\",\"arguments\":{\"session\":\"$BIG_ID\"}}]" \
  | node mcp-tests/client.mjs "$BIN" mcp | tail -1 | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["pages"][0]["ms"],1))')
echo "read_session of the big session, first call of a server (load included): $cold ms"
echo "$calls" | node mcp-tests/client.mjs "$BIN" mcp | python3 -c '
import json, sys, statistics
for line in sys.stdin:
    o = json.loads(line)
    if "pages" not in o:
        continue
    ms = [p["ms"] for p in o["pages"]]
    r = o["pages"][-1]["result"]
    chars = len(r["content"][0]["text"])
    err = " ERROR" if r.get("isError") else ""
    args = json.dumps({k: v for k, v in o["arguments"].items() if k != "session"})
    name = o["name"]
    print(f"{name:16} {args[:60]:60} median {statistics.median(ms):7.1f} ms  ({min(ms):.1f}-{max(ms):.1f}, n={len(ms)}), {chars} chars{err}")
'
