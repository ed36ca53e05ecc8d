#!/usr/bin/env bash
# Records the fixtures in ../tests/fixtures/{claude-recorded,claude-attachments,
# claude-forks,codex-recorded,codex-revert}: runs the real agents (npm @anthropic-ai/claude-code, @openai/codex)
# against the scripted endpoints in this folder, in a throwaway HOME, and keeps the
# transcripts and the requests they sent.
#   record.sh OUT_DIR [all|claude|claude-attachments|claude-forks|codex|codex-compaction|codex-revert|gemini|opencode|copilot|copilot-compact]
#   (needs node, npm, python3, git; installs the agents into OUT_DIR; default: all;
#   CLAUDE_CODE_VERSION / CODEX_VERSION / GEMINI_CLI_VERSION / OPENCODE_VERSION / COPILOT_VERSION choose other
#   releases than the ones below)
# The committed fixtures were made with Claude Code 2.1.197, Codex CLI 0.171.0, Gemini CLI
# 0.61.0, OpenCode 1.18.33 and GitHub Copilot CLI 1.0.102 (Copilot:
# `copilot_fixture.py OUT_DIR/gh ../tests/fixtures/copilot-recorded`, and OUT_DIR/ghc for
# ../tests/fixtures/copilot-compact; codex-revert: record/codex_revert.py drives `codex app-server`
# to revert turns; then `codex_fixture.py OUT_DIR/cxv ../tests/fixtures/codex-revert`;
# claude-forks: `claude_fixture.py OUT_DIR/cf ../tests/fixtures/claude-forks`; OpenCode:
# `opencode_fixture.py OUT_DIR/oc ../tests/fixtures/opencode-recorded ../tests/fixtures/opencode-storage`).
# Claude Code parts: `claude_fixture.py OUT_DIR/cc ../tests/fixtures/claude-recorded` (and
# OUT_DIR/ca for ../tests/fixtures/claude-attachments) renames the paths to /home/dev/demo
# and keeps every text as Claude Code wrote and sent it: the attachment lines (agent and
# skill listings, hook output, files named with @, plan mode) and the system messages it
# rendered from them, the oracle for how the import makes them reach the model. The Codex
# fixtures had long agent-written texts (base instructions) replaced by placeholders; for
# the codex-compaction part `codex_fixture.py OUT_DIR/cxc ../tests/fixtures/codex-recorded`
# (and the same for cxr) does that and puts its rollout and resume requests into the
# fixture set.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
PART=${2:-all}
cd "$OUT"
want() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
if want claude || want claude-attachments || want claude-forks; then
  [ -x node_modules/.bin/claude ] || npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION:-2.1.197}"
fi
if want gemini; then
  [ -x node_modules/.bin/gemini ] || npm install --no-audit --no-fund --loglevel=error "@google/gemini-cli@${GEMINI_CLI_VERSION:-0.61.0}"
fi
if want codex || want codex-compaction || want codex-revert; then
  [ -x node_modules/.bin/codex ] || npm install --no-audit --no-fund --loglevel=error "@openai/codex@${CODEX_VERSION:-0.171.0}"
fi
CLAUDE=$OUT/node_modules/.bin/claude CODEX=$OUT/node_modules/.bin/codex

if want claude; then
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
fi

if want claude-attachments; then
# Claude Code's attachment lines, with hooks that add context at session start (and again
# on each resume), on every prompt, after each Bash call (two) and each Read call; a file read by a tool and then
# changed on disk; a file named with @; a turn in plan mode. Each step resumes the session.
mkdir -p ca/proj ca/.claude && (cd ca/proj && git init -q . && printf 'first line\n' > notes.txt)
cat > ca/.claude/settings.json <<'JSON'
{"hooks": {
  "SessionStart": [{"hooks": [{"type": "command", "command": "echo 'Session start hook: the demo project keeps its notes in notes.txt.'"}]}],
  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Prompt hook: answer briefly.'"}]}],
  "PostToolUse": [
    {"matcher": "Bash", "hooks": [
      {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"Tool hook: the echo ran in the demo project.\"}}'"},
      {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"Second tool hook: nothing to add.\"}}'"}]},
    {"matcher": "Read", "hooks": [{"type": "command", "command": "echo 'Read hook: plain output.'"}]}]
}}
JSON
python3 "$HERE/scripted_anthropic.py" 18436 "$OUT/ca/requests.jsonl" "$OUT/ca/proj" & S3=$!
export ANTHROPIC_BASE_URL=http://127.0.0.1:18436 ANTHROPIC_API_KEY=sk-ant-scripted
export DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
sleep 1
ca() { (cd "$OUT/ca/proj" && HOME=$OUT/ca "$CLAUDE" -p "$@" --allowedTools Bash Read --output-format json); }
SID=$(ca "Please RUN the echo command" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_id"])')
ca "Please READ the notes" --resume "$SID" >/dev/null
printf 'first line\nsecond line, added outside\n' > ca/proj/notes.txt
ca "What changed in the notes?" --resume "$SID" >/dev/null
ca "Look at @notes.txt please" --resume "$SID" >/dev/null
ca "Plan the next step" --resume "$SID" --permission-mode plan >/dev/null
ca "Out of plan mode now" --resume "$SID" >/dev/null
ca "Last question" --resume "$SID" >/dev/null
kill $S3
"$CLAUDE" --version > ca/claude-version
fi

if want claude-forks; then
# Claude Code forking a fork: a session P of two turns; F1 = `--resume P --fork-session`;
# F2 = `--resume F1 --fork-session --resume-session-at` the answer to P's first turn (its
# entries are all P's, copied into F1 and again into F2); F3 = `--resume F1 --fork-session`
# whole (it copies F1's own turn too).
mkdir -p cf/proj && (cd cf/proj && git init -q .)
python3 "$HERE/scripted_anthropic.py" 18471 "$OUT/cf/requests.jsonl" & S4=$!
export ANTHROPIC_BASE_URL=http://127.0.0.1:18471 ANTHROPIC_API_KEY=sk-ant-scripted
export DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
sleep 1
cf() { (cd "$OUT/cf/proj" && HOME=$OUT/cf "$CLAUDE" -p "$@" --output-format json) | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_id"])'; }
P=$(cf "First question")
cf "Second question" --resume "$P" >/dev/null
F1=$(cf "Fork one question" --resume "$P" --fork-session)
# The uuid of the assistant line answering the first question, in F1's file.
AT=$(python3 - "$OUT/cf/.claude/projects" "$F1" <<'PY'
import glob, json, sys
f = glob.glob(f"{sys.argv[1]}/*/{sys.argv[2]}.jsonl")[0]
lines = [json.loads(l) for l in open(f) if l.strip()]
ask = next(i for i, l in enumerate(lines) if l.get("type") == "user" and l["message"].get("content") == "First question")
print(next(l["uuid"] for l in lines[ask:] if l.get("type") == "assistant"))
PY
)
cf "Fork two question" --resume "$F1" --fork-session --resume-session-at "$AT" >/dev/null
cf "Fork three question" --resume "$F1" --fork-session >/dev/null
kill $S4
"$CLAUDE" --version > cf/claude-version
fi

if want codex; then
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
fi

if want codex-compaction; then
# Codex compacting: a tool call, a turn whose tool call reports a context over the
# configured model_auto_compact_token_limit (Codex compacts mid-turn, then continues), a
# turn after it, a turn reporting a large context again (Codex compacts before the next
# turn starts), and resumes after each compaction. Twice: in cxc with a provider of its
# own name (Codex summarizes locally: a summarization request, the summary as a user
# message) and in cxr with a provider named "OpenAI" (Codex compacts remotely: a request
# ending with a compaction trigger, answered by one opaque compaction item).
compacting() { # DIR PORT PROVIDER_NAME
  local dir=$OUT/$1
  mkdir -p "$dir/proj" "$dir/home/.codex" && (cd "$dir/proj" && git init -q .)
  cat > "$dir/home/.codex/config.toml" <<TOML
model = "gpt-5-codex"
model_provider = "scripted"
model_reasoning_effort = "medium"
approval_policy = "never"
sandbox_mode = "danger-full-access"
model_auto_compact_token_limit = 100000
[model_providers.scripted]
name = "$3"
base_url = "http://127.0.0.1:$2/v1"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
TOML
  python3 "$HERE/scripted_openai.py" "$2" "$dir/requests.jsonl" & local srv=$!
  sleep 1
  run() { (cd "$dir/proj" && HOME=$dir/home CODEX_HOME=$dir/home/.codex SCRIPTED_KEY=x "$CODEX" exec --skip-git-repo-check "$@") >/dev/null; }
  run "Please RUN the echo command"
  local id
  id=$(ls "$dir"/home/.codex/sessions/*/*/*/rollout-*.jsonl | head -1 | sed 's/.*-\([0-9a-f-]\{36\}\)\.jsonl/\1/')
  run resume "$id" "Please RUN it again with a BIG output"
  run resume "$id" "What happened after the compaction?"
  run resume "$id" "Give a BIG answer"
  run resume "$id" "Does the next turn compact first?"
  run resume "$id" "Last question"
  kill $srv
  "$CODEX" --version > "$dir/codex-version"
}
compacting cxc 18434 scripted
compacting cxr 18435 OpenAI
fi
if want codex-revert; then
# Codex reverting turns (`thread/revert` of the app server, driven over stdio by
# codex_revert.py): a turn with a tool call (`exec`); then, in the app server, a turn with
# a tool call that is reverted, a turn after the revert, another turn with a tool call,
# reverted too, and a turn after that; then a resume (`exec resume`). Each revert leaves
# the rollout as it was and writes a segment rollout continuing from before the turn.
dir=$OUT/cxv
mkdir -p "$dir/proj" "$dir/home/.codex" && (cd "$dir/proj" && git init -q .)
cat > "$dir/home/.codex/config.toml" <<TOML
model = "gpt-5-codex"
model_provider = "scripted"
model_reasoning_effort = "medium"
approval_policy = "never"
sandbox_mode = "danger-full-access"
[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:18472/v1"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
TOML
python3 "$HERE/scripted_openai.py" 18472 "$dir/requests.jsonl" & S5=$!
sleep 1
cxv() { (cd "$dir/proj" && HOME=$dir/home CODEX_HOME=$dir/home/.codex SCRIPTED_KEY=x "$@"); }
cxv "$CODEX" exec --skip-git-repo-check "Please RUN the echo command" >/dev/null
ID=$(ls "$dir"/home/.codex/sessions/*/*/*/rollout-*.jsonl | head -1 | sed 's/.*-\([0-9a-f-]\{36\}\)\.jsonl/\1/')
cxv python3 "$HERE/codex_revert.py" "$CODEX" "$ID" "turn:Please RUN it again" revert \
  "turn:After the revert question" "turn:Please RUN a third time" revert \
  "turn:After the second revert" 2> "$dir/app-server.log"
cxv "$CODEX" exec --skip-git-repo-check resume "$ID" "Resumed after the reverts" >/dev/null
kill $S5
"$CODEX" --version > "$dir/codex-version"
fi

if want gemini; then
# Gemini CLI: a tool call, resumes (each rebuilds the message list), a subagent (the
# generalist, in chats/<session id>/), a turn whose tool call reports 900,000 prompt tokens
# (the CLI compresses before its next request, mid-turn), a /rewind driven through tmux,
# then a last resume. `gemini_fixture.py OUT_DIR/gm ../tests/fixtures/gemini-recorded`
# keeps the chats and the requests sent on each resume.
mkdir -p gm/proj gm/home/.gemini && (cd gm/proj && git init -q . && printf 'first line\n' > notes.txt)
cat > gm/home/.gemini/settings.json <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}, "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}
JSON
python3 "$HERE/scripted_gemini.py" 18437 "$OUT/gm/requests.jsonl" & S4=$!
sleep 1
GEMINI=$OUT/node_modules/.bin/gemini
genv() { env HOME="$OUT/gm/home" GEMINI_API_KEY=scripted GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18437 GEMINI_CLI_TRUST_WORKSPACE=true TERM=xterm-256color "$@"; }
gm() { (cd "$OUT/gm/proj" && genv "$GEMINI" -m gemini-2.5-flash --yolo "$@" >/dev/null 2>&1); }
gm -p "Please RUN the echo command"
gm -r latest -p "What did it print?"
gm -r latest -p "Please DELEGATE this"
gm -r latest -p "BIG: please RUN it again"
gm -r latest -p "What happened after the compression?"
# /rewind to the last prompt (the list shows every user message, tool responses too), then
# a new prompt in its place.
tmux new-session -d -s gemini-record -x 160 -y 50 "cd '$OUT/gm/proj' && HOME='$OUT/gm/home' GEMINI_API_KEY=scripted GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:18437 GEMINI_CLI_TRUST_WORKSPACE=true TERM=xterm-256color '$GEMINI' -m gemini-2.5-flash --yolo -r latest"
keys() { sleep "$1"; shift; tmux send-keys -t gemini-record "$@"; }
# Waits (up to N half seconds, default a minute) until the screen shows the text.
screen() { for _ in $(seq "${2:-120}"); do tmux capture-pane -p -t gemini-record | grep -qF "$1" && return 0; sleep 0.5; done; echo "gemini: no '$1' on the screen" >&2; return 1; }
# The prompt takes keys only once the resumed history is loaded: /rewind until its list shows.
screen "Type your message"
for _ in 1 2 3 4 5 6; do keys 2 C-u; keys 1 -l "/rewind"; keys 1 Enter; screen "Stay at current position" 20 && break; keys 0 Escape; done
keys 1 Up; keys 1 Enter; screen "Rewind conversation"; keys 1 Enter; screen "What happened after the compression?"
keys 2 C-u; keys 1 -l "A new question after the rewind"; keys 1 Enter; screen "to: A new question after the rewind"
keys 2 -l "/quit"; keys 1 Enter
sleep 3; tmux kill-session -t gemini-record 2>/dev/null || true
gm -r latest -p "Last question"
kill $S4
"$GEMINI" --version > gm/gemini-version
fi
if want opencode; then
# OpenCode: `opencode serve` driven over HTTP (opencode_drive.py): a tool call, a question,
# a subagent, a revert and a prompt after it, a compaction, a fork, a revert left pending.
[ -x node_modules/.bin/opencode ] || npm install --no-audit --no-fund --loglevel=error "opencode-ai@${OPENCODE_VERSION:-1.18.33}"
OC=$(ls "$OUT"/node_modules/opencode-linux-*/bin/opencode | head -1)
mkdir -p oc/proj oc/home && (cd oc/proj && git init -q .)
python3 "$HERE/scripted_chat.py" 18440 "$OUT/oc/requests.jsonl" & S4=$!
ocenv() {
  HOME=$OUT/oc/home XDG_DATA_HOME=$OUT/oc/home/.local/share XDG_CONFIG_HOME=$OUT/oc/home/.config \
  XDG_CACHE_HOME=$OUT/oc/home/.cache XDG_STATE_HOME=$OUT/oc/home/.local/state \
  OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
  OPENCODE_CONFIG_CONTENT='{"provider":{"scripted":{"npm":"@ai-sdk/openai-compatible","name":"Scripted","options":{"baseURL":"http://127.0.0.1:18440/v1","apiKey":"x"},"models":{"m1":{"name":"Scripted M1","limit":{"context":100000,"output":4000}}}}},"model":"scripted/m1","small_model":"scripted/m1","permission":{"edit":"allow","bash":"allow","webfetch":"allow"},"autoupdate":false,"share":"disabled"}' \
  "$@"
}
(cd oc/proj && ocenv "$OC" serve --port 18441) > oc/serve.log 2>&1 & S5=$!
for _ in $(seq 60); do curl -sf http://127.0.0.1:18441/session >/dev/null && break; sleep 1; done
python3 "$HERE/opencode_drive.py" http://127.0.0.1:18441 scripted m1
kill $S5 $S4
"$OC" --version > oc/opencode-version
fi
echo "transcripts under $OUT/cc/.claude/projects, $OUT/{cx,cxc,cxr,cxv}/home/.codex/sessions, $OUT/gm/home/.gemini/tmp and $OUT/oc/home/.local/share/opencode; requests in $OUT/*/requests.jsonl"

if want copilot; then
# GitHub Copilot CLI, offline against the scripted chat endpoint (no account): a single
# turn, a tool call in a resumed run, a question in another, a `task` subagent in a last one.
[ -x node_modules/.bin/copilot ] || npm install --no-audit --no-fund --loglevel=error "@github/copilot@${COPILOT_VERSION:-1.0.102}"
mkdir -p gh/proj gh/home && (cd gh/proj && git init -q .)
python3 "$HERE/scripted_chat.py" 18451 "$OUT/gh/requests.jsonl" & S7=$!
sleep 1
gh() { (cd "$OUT/gh/proj" && HOME=$OUT/gh/home COPILOT_HOME=$OUT/gh/home/.copilot COPILOT_OFFLINE=true \
  COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:18451/v1 COPILOT_PROVIDER_API_KEY=scripted COPILOT_MODEL=gpt-4o \
  "$OUT/node_modules/.bin/copilot" --allow-all-tools --disable-client-telemetry "$@"); }
gh -p "Hello there" >/dev/null
SID=$(ls "$OUT/gh/home/.copilot/session-state" | head -1)
gh -p "Please RUN the echo command" --resume="$SID" >/dev/null
gh -p "What did it print?" --resume="$SID" >/dev/null
gh -p "Please DELEGATE this" --resume="$SID" >/dev/null
kill $S7
"$OUT/node_modules/.bin/copilot" --version > gh/copilot-version
fi

if want copilot-compact; then
# GitHub Copilot CLI's interactive commands, driven through tmux (offline, the scripted chat
# endpoint): a single turn and a tool call in `-p` runs, then the resumed session in the
# TUI: /rename, /compact, two prompts, /rewind of the last one ("Conversation only"), a
# prompt in its place. `copilot_fixture.py OUT_DIR/ghc ../tests/fixtures/copilot-compact`.
[ -x node_modules/.bin/copilot ] || npm install --no-audit --no-fund --loglevel=error "@github/copilot@${COPILOT_VERSION:-1.0.102}"
mkdir -p ghc/proj ghc/home && (cd ghc/proj && git init -q .)
python3 "$HERE/scripted_chat.py" 18452 "$OUT/ghc/requests.jsonl" & S8=$!
sleep 1
ghenv() { echo "cd '$OUT/ghc/proj' && HOME='$OUT/ghc/home' COPILOT_HOME='$OUT/ghc/home/.copilot' COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:18452/v1 COPILOT_PROVIDER_API_KEY=scripted COPILOT_MODEL=gpt-4o TERM=xterm-256color '$OUT/node_modules/.bin/copilot' --allow-all-tools --disable-client-telemetry"; }
bash -c "$(ghenv) -p 'Hello there'" >/dev/null
SID=$(ls "$OUT/ghc/home/.copilot/session-state" | head -1)
bash -c "$(ghenv) -p 'Please RUN the echo command' --resume=$SID" >/dev/null
tmux new-session -d -s copilot-record -x 200 -y 50 "$(ghenv) --resume=$SID"
keys() { sleep "$1"; shift; tmux send-keys -t copilot-record "$@"; }
# Waits (up to N half seconds, default a minute) until the screen shows the text.
screen() { for _ in $(seq "${2:-120}"); do tmux capture-pane -p -t copilot-record | grep -qF "$1" && return 0; sleep 0.5; done; echo "copilot: no '$1' on the screen" >&2; return 1; }
# The folder trust question first ("Yes": this run only).
screen "Do you trust the files in this folder?"; keys 1 Enter
keys 2 -l "/rename Demo session"; keys 1 Enter; sleep 3
keys 1 -l "/compact"; keys 1 Enter; screen "Compaction completed"
keys 2 -l "After compacting, say hi"; keys 1 Enter; screen "to: rent_datetime>"
keys 2 -l "Another question"; keys 1 Enter; screen "Another question" && sleep 5
keys 1 -l "/rewind"; keys 1 Enter; screen "Rewind to a previous point"; keys 1 Enter
screen "Conversation only"; keys 1 Enter; sleep 3
keys 1 C-u; keys 1 -l "A question after the rewind"; keys 1 Enter; screen "after the rewind" && sleep 5
keys 1 -l "/exit"; keys 1 Enter
sleep 3; tmux kill-session -t copilot-record 2>/dev/null || true
kill $S8
"$OUT/node_modules/.bin/copilot" --version > ghc/copilot-version
fi
