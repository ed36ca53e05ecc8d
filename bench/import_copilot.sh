#!/usr/bin/env bash
# GitHub Copilot CLI import benchmark: COUNT synthetic event logs (~TOTAL_MB,
# bench/import_copilot_gen.py: tool calls, resumes, system prompts, compactions, titles)
# imported into an empty agent dir, against `ls --all --no-index --json` over the result
# (bench/import_agent.sh).
#   bench/import_copilot.sh [DATA_DIR] [COUNT] [TOTAL_MB]
exec bash "$(dirname "$0")/import_agent.sh" copilot COPILOT_HOME events.jsonl "$@"
