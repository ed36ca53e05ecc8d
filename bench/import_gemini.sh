#!/usr/bin/env bash
# Gemini CLI import benchmark: COUNT synthetic chats (~TOTAL_MB, bench/import_gemini_gen.py:
# tool calls, resumes with rebuilt lists, rewinds) imported into an empty agent dir, against
# `ls --all --no-index --json` over the result (bench/import_agent.sh).
#   bench/import_gemini.sh [DATA_DIR] [COUNT] [TOTAL_MB]
exec bash "$(dirname "$0")/import_agent.sh" gemini GEMINI_CLI_HOME '*.jsonl' "$@"
