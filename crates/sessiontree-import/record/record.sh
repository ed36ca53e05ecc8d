#!/usr/bin/env bash
# Records the fixtures in ../tests/fixtures/{claude,codex}-recorded: runs the real agents
# (npm @anthropic-ai/claude-code, @openai/codex) against the scripted endpoints in this
# folder, in a throwaway HOME, and keeps the transcripts and the requests they sent.
#   record.sh OUT_DIR   (needs node, npm, python3, git; installs the agents into OUT_DIR)
# The committed fixtures were made with Claude Code 2.1.197 and Codex CLI 0.171.0, then
# had their paths renamed to /home/dev/demo and long agent-written texts (attachment
# listings, base instructions) replaced by placeholders.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$OUT"
[ -x node_modules/.bin/claude ] || npm install --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code @openai/codex
CLAUDE=$OUT/node_modules/.bin/claude CODEX=$OUT/node_modules/.bin/codex

# Claude Code: a tool call, a resume, a subagent, /compact, a --fork-session copy.
mkdir -p cc/proj && (cd cc/proj && git init -q .)
python3 "$HERE/scripted_anthropic.py" 18432 "$OUT/cc/requests.jsonl" & S1=$!
export ANTHROPIC_BASE_URL=http://127.0.0.1:18432 ANTHROPIC_API_KEY=sk-ant-scripted
export DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
sleep 1
cc() { (cd "$OUT/cc/proj" && HOME=$OUT/cc "$CLAUDE" -p "$@" --allowedTools Bash Agent --output-format json); }
SID=$(cc "Please RUN the echo command" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_id"])')
cc "What did it print?" --resume "$SID" >/dev/null
cc "Please DELEGATE this" --resume "$SID" >/dev/null
cc "/compact" --resume "$SID" >/dev/null
cc "After compacting, RUN again" --resume "$SID" >/dev/null
cc "Forked question" --resume "$SID" --fork-session >/dev/null
kill $S1

# Codex: a tool call, resumes, a fork.
mkdir -p cx/proj cx/home/.codex && (cd cx/proj && git init -q .)
cat > cx/home/.codex/config.toml <<'TOML'
model = "gpt-5-codex"
model_provider = "scripted"
model_reasoning_effort = "medium"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:18433/v1"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
TOML
python3 "$HERE/scripted_openai.py" 18433 "$OUT/cx/requests.jsonl" & S2=$!
sleep 1
cx() { (cd "$OUT/cx/proj" && HOME=$OUT/cx/home CODEX_HOME=$OUT/cx/home/.codex SCRIPTED_KEY=x "$CODEX" exec --skip-git-repo-check "$@"); }
cx "Please RUN the echo command" >/dev/null
ID=$(ls "$OUT"/cx/home/.codex/sessions/*/*/*/rollout-*.jsonl | head -1 | sed 's/.*-\([0-9a-f-]\{36\}\)\.jsonl/\1/')
cx resume "$ID" "What did it print?" >/dev/null
cx resume "$ID" "Please RUN it again" >/dev/null
cx resume "$ID" "After compaction question" >/dev/null
cx fork "$ID" "Forked question" >/dev/null
kill $S2
echo "transcripts under $OUT/cc/.claude/projects and $OUT/cx/home/.codex/sessions; requests in $OUT/*/requests.jsonl"
