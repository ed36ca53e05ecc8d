#!/usr/bin/env python3
"""Synthetic Claude Code transcripts and Codex rollouts for the import benchmark.

    python3 bench/import_gen.py OUT_DIR COUNT TOTAL_MB [SEED]

Writes COUNT transcripts (half Claude Code under OUT_DIR/claude/projects/<slug>/, half
Codex under OUT_DIR/codex/sessions/YYYY/MM/DD/) of about TOTAL_MB together, seeded. The
shapes follow the agents' formats: multi-line responses sharing message.id, tool calls and
results (with Claude Code's structured toolUseResult), progress and bookkeeping lines,
rewinds, compaction boundaries; Codex turn contexts, reasoning, function calls, token counts.
"""
import json
import os
import random
import sys

out, count, total_mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
per_file = total_mb * 1e6 / count
WORDS = ("alpha beta gamma delta cart coupon total price item order invoice refund tax "
         "parser token stream buffer index query cache vector branch commit merge").split()


def text(n):
    return " ".join(rng.choice(WORDS) for _ in range(max(1, n // 6)))


def code(n):
    lines, size = [], 0
    while size < n:
        l = f"    {rng.choice(WORDS)}_{rng.randint(0, 999)} = {rng.choice(WORDS)}({rng.randint(0, 99)})"
        lines.append(l)
        size += len(l) + 1
    return "\n".join(lines)


def dumps(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False) + "\n"


def clock(start, month):
    """Timestamps in `month` of 2025 from `start` (seconds), each 1 to 30 s after the last."""
    t = [start]

    def ts():
        t[0] += rng.randint(1, 30)
        s = t[0]
        return "2025-%02d-%02dT%02d:%02d:%02d.%03dZ" % (month, 1 + s // 86400 % 28, s // 3600 % 24, s // 60 % 60, s % 60, rng.randint(0, 999))
    return ts


def claude(path, sid, cwd, start):
    ts = clock(start, 9)

    n = [0]

    def uid():
        n[0] += 1
        return "%08x-%04x-4%03x-8%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), n[0])

    def base(typ, parent, **kw):
        d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
             "version": "2.0.14", "gitBranch": "main", "type": typ}
        d.update(kw)
        d["uuid"] = uid()
        d["timestamp"] = ts()
        return d

    size, leaf, turns = 0, None, []
    with open(path, "w") as f:
        def w(o):
            nonlocal size
            s = dumps(o)
            f.write(s)
            size += len(s)
            return o.get("uuid")

        w({"type": "queue-operation", "operation": "dequeue", "timestamp": ts(), "sessionId": sid})
        while size < per_file:
            if turns and rng.random() < 0.05:
                leaf = rng.choice(turns)  # a rewind: continue from an earlier message
            if rng.random() < 0.01 and leaf:
                b = base("system", None, subtype="compact_boundary", content="Conversation compacted", level="info",
                         compactMetadata={"trigger": "auto", "preTokens": rng.randint(100000, 160000)}, logicalParentUuid=leaf)
                leaf = w(b)
                leaf = w(base("user", leaf, message={"role": "user", "content": "This session is being continued from a previous conversation. Summary:\n" + text(2000)},
                              isCompactSummary=True, isVisibleInTranscriptOnly=True))
            u = w(base("user", leaf, message={"role": "user", "content": text(rng.randint(40, 400))}))
            turns.append(u)
            w({"type": "file-history-snapshot", "messageId": u, "snapshot": {"messageId": u, "trackedFileBackups": {}, "timestamp": ts()}, "isSnapshotUpdate": False})
            leaf = u
            for _ in range(rng.randint(1, 4)):
                mid = "msg_01" + "%020x" % rng.getrandbits(80)
                usage = {"input_tokens": rng.randint(1, 50), "cache_creation_input_tokens": rng.randint(0, 5000),
                         "cache_read_input_tokens": rng.randint(0, 90000), "output_tokens": rng.randint(1, 900), "service_tier": "standard"}
                msg = lambda blocks, stop=None: {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                                                 "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
                leaf = w(base("assistant", leaf, message=msg([{"type": "thinking", "thinking": text(rng.randint(100, 1500)), "signature": "Eq" + "%040x" % rng.getrandbits(160)}]), requestId="req_" + mid[-10:]))
                leaf = w(base("assistant", leaf, message=msg([{"type": "text", "text": text(rng.randint(50, 600))}]), requestId="req_" + mid[-10:]))
                tid = "toolu_01" + "%020x" % rng.getrandbits(80)
                fp = f"{cwd}/src/{rng.choice(WORDS)}.py"
                leaf = w(base("assistant", leaf, message=msg([{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": fp}}], "tool_use"), requestId="req_" + mid[-10:]))
                leaf = w(base("progress", leaf, data={"type": "hook_progress", "hookEvent": "PreToolUse"}, toolUseID=tid, parentToolUseID=tid))
                body = code(rng.randint(1000, 9000))
                leaf = w(base("user", leaf, message={"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": body}]},
                              toolUseResult={"type": "text", "file": {"filePath": fp, "content": body, "numLines": body.count("\n") + 1}}))
            mid = "msg_01" + "%020x" % rng.getrandbits(80)
            leaf = w(base("assistant", leaf, message={"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                                                      "content": [{"type": "text", "text": text(rng.randint(100, 1200))}], "stop_reason": "end_turn",
                                                      "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 300}}))
            leaf = w(base("system", leaf, subtype="turn_duration", durationMs=rng.randint(1000, 90000), isMeta=False))
        f.write(dumps({"type": "summary", "summary": text(40), "leafUuid": leaf}))


def codex(path, sid, cwd, start):
    ts = clock(start, 10)

    size = 0
    with open(path, "w") as f:
        def w(typ, payload):
            nonlocal size
            s = dumps({"timestamp": ts(), "type": typ, "payload": payload})
            f.write(s)
            size += len(s)

        w("session_meta", {"id": sid, "timestamp": ts(), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.46.0",
                           "source": "cli", "model_provider": "openai", "base_instructions": {"text": text(3000)}})
        w("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]})
        turn = 0
        while size < per_file:
            turn += 1
            w("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5-codex", "effort": "medium", "summary": "auto"})
            prompt = text(rng.randint(40, 400))
            w("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
            w("event_msg", {"type": "user_message", "message": prompt, "images": []})
            for _ in range(rng.randint(1, 4)):
                w("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text(200)}], "content": None, "encrypted_content": "gAAAA" + "%0400x" % rng.getrandbits(1600)})
                cid = "call_" + "%024x" % rng.getrandbits(96)
                w("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", "cat src/x.py"]}), "call_id": cid})
                w("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 9000, "cached_input_tokens": 8000, "output_tokens": 300, "reasoning_output_tokens": 100, "total_tokens": 9300}}})
                w("response_item", {"type": "function_call_output", "call_id": cid, "output": json.dumps({"output": code(rng.randint(1000, 9000)), "metadata": {"exit_code": 0}})})
            answer = text(rng.randint(100, 1200))
            w("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]})
            w("event_msg", {"type": "agent_message", "message": answer})
            if turn > 3 and rng.random() < 0.03:
                w("event_msg", {"type": "thread_rolled_back", "num_turns": 1})


for i in range(count):
    cwd = "/home/bench/project%02d" % (i % 20)
    sid = "%08x-%04x-4%03x-8%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), i)
    start = i * 5000
    if i % 2 == 0:
        d = os.path.join(out, "claude", "projects", cwd.replace("/", "-"))
        os.makedirs(d, exist_ok=True)
        claude(os.path.join(d, sid + ".jsonl"), sid, cwd, start)
    else:
        d = os.path.join(out, "codex", "sessions", "2025", "10", "%02d" % (1 + i % 28))
        os.makedirs(d, exist_ok=True)
        codex(os.path.join(d, f"rollout-2025-10-01T00-00-00-{sid}.jsonl"), sid, cwd, start)
