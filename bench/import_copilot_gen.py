"""Synthetic GitHub Copilot CLI event logs for bench/import_copilot.sh (seeded, deterministic).

    python3 bench/import_copilot_gen.py OUT_DIR COUNT TOTAL_MB

Writes OUT_DIR/session-state/<session id>/events.jsonl, shaped as Copilot CLI 1.0.102
writes them (tests/fixtures/copilot-recorded, copilot-compact): `session.start`, then runs
of turns, each run after the first opened by `session.resume` and every run closed by
`session.shutdown`. A turn: `user.message` (with the `<current_datetime>` block in
`transformedContent`), the system prompt as `system.message` (the CLI records it again at
each prompt of an interactive run: 27-31 KB in the recordings; here 8 KB, once per run),
`assistant.turn_start`, `session.usage_record`, an `assistant.message` with a shell call,
`tool.execution_start`, `tool.execution_complete` (its output sized so that the total
comes to about TOTAL_MB), `assistant.turn_end`, then the answer. Now and then a manual
compaction (`session.compaction_start` / `_complete` with a summary) and a title
(`session.title_changed`)."""
import os, random, sys

import genlib
from genlib import WORDS, line, ts, uid

out, count, mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(20261202)
per_file = mb * 1e6 / max(count, 1)
SYSTEM = "You are the GitHub Copilot CLI, a terminal assistant built by GitHub. " + " ".join(
    random.Random(7).choice(WORDS) for _ in range(1600))


def words(n):
    return genlib.words(rng, n)


for k in range(count):
    sid = uid(k, 0)
    t = 1780000000000 + k * 3_600_000
    cwd = f"/home/dev/project-{k % 40}"
    n = 0
    prev = None
    lines = []
    size = 0

    def ev(ty, data, dt=10):
        global n, prev, t, size
        n += 1
        t += dt
        e = {"type": ty, "data": data, "id": uid(k, n), "timestamp": ts(t), "parentId": prev}
        prev = e["id"]
        s = line(e)
        lines.append(s)
        size += len(s)

    ev("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
                         "startTime": ts(t), "selectedModel": "gpt-4o", "reasoningEffort": "medium",
                         "context": {"cwd": cwd, "gitRoot": cwd, "branch": "main"}, "alreadyInUse": False})
    turn = 0
    run = 0
    while size < per_file:
        if run > 0:
            ev("session.resume", {"resumeTime": ts(t), "eventCount": n, "selectedModel": "gpt-4o",
                                  "reasoningEffort": "medium", "context": {"cwd": cwd}}, 2000)
        run += 1
        for i in range(rng.randint(2, 5)):
            turn += 1
            prompt = f"Turn {turn}: " + words(20)
            now = ts(t)
            ev("user.message", {"content": prompt,
                                "transformedContent": f"<current_datetime>{now[:-1]}+00:00</current_datetime>\n\n{prompt}",
                                "messageId": uid(k, 10000 + turn), "supportedNativeDocumentMimeTypes": [],
                                "delivery": "idle", "interactionId": uid(k, 20000 + turn), "turnId": "0"}, 5000)
            if i == 0:
                ev("system.message", {"role": "system", "content": SYSTEM,
                                      "metadata": {"variables": {"cwd": cwd}}})
            ev("assistant.turn_start", {"turnId": "0", "interactionId": uid(k, 20000 + turn)})
            usage = {"model": "gpt-4o", "inputTokens": 900 + 50 * turn, "outputTokens": 40, "cacheReadTokens": 100,
                     "cacheWriteTokens": 0, "cost": 0.0, "duration": 32}
            ev("session.usage_record", {"usage": usage})
            cid = f"call_{k}_{turn}"
            args = {"command": f"cat file{turn}.txt", "description": "Show the file"}
            ev("assistant.message", {"messageId": uid(k, 30000 + turn), "model": "gpt-4o", "content": "",
                                     "toolRequests": [{"toolCallId": cid, "name": "bash", "arguments": args,
                                                       "type": "function"}],
                                     "reasoningText": f"Planning {turn}: " + words(12),
                                     "interactionId": uid(k, 20000 + turn), "outputTokens": 40}, 300)
            ev("tool.execution_start", {"toolCallId": cid, "toolName": "bash", "arguments": args, "turnId": "0"})
            output = words(max(10, int(rng.expovariate(1 / (per_file / 40)) / 5)))
            ev("tool.execution_complete", {"toolCallId": cid, "model": "gpt-4o", "turnId": "0", "success": True,
                                           "result": {"content": output + "\n<shellId: 0 completed with exit code 0>",
                                                      "detailedContent": output[:400]},
                                           "toolTelemetry": {}}, 600)
            ev("assistant.turn_end", {"turnId": "0"})
            ev("assistant.turn_start", {"turnId": "1", "interactionId": uid(k, 20000 + turn)})
            ev("session.usage_record", {"usage": usage})
            ev("assistant.message", {"messageId": uid(k, 40000 + turn), "model": "gpt-4o", "content": words(40),
                                     "toolRequests": [], "reasoningText": words(8),
                                     "interactionId": uid(k, 20000 + turn), "outputTokens": 60}, 500)
            ev("assistant.turn_end", {"turnId": "1"})
            if turn == 2:
                ev("session.title_changed", {"title": f"Project {k} work"})
            if turn % 9 == 0:
                attempt = uid(k, 50000 + turn)
                ev("session.compaction_start", {"compactionAttemptId": attempt, "model": "gpt-4o", "trigger": "manual"})
                ev("session.compaction_complete", {"success": True, "outcome": "applied",
                                                   "compactionAttemptId": attempt,
                                                   "preCompactionMessagesLength": 6 * turn,
                                                   "messagesRemoved": 6 * turn - 1,
                                                   "preCompactionTokens": 900 + 50 * turn,
                                                   "summaryContent": "<overview>\n" + words(80) + "\n</overview>",
                                                   "trigger": "manual", "checkpointNumber": turn // 9}, 900)
        ev("session.shutdown", {"shutdownType": "routine", "totalPremiumRequests": 0, "currentModel": "gpt-4o"}, 100)
    d = os.path.join(out, "session-state", sid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "events.jsonl"), "w") as f:
        f.writelines(lines)
