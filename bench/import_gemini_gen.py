"""Synthetic Gemini CLI chats for bench/import_gemini.sh (seeded, deterministic).

    python3 bench/import_gemini_gen.py OUT_DIR COUNT TOTAL_MB

Writes OUT_DIR/.gemini/tmp/p<k>/chats/session-<time>-<id8>.jsonl (and each project's
.project_root), shaped as Gemini CLI 0.61 writes them: a metadata line, the context block
as a $set list, then turns (the prompt, the response written again with its tool call and
result, the function response as a user message, the answer, $set lastUpdated lines), a
resume every few turns (a metadata line and the rebuilt list of every message so far, each
earlier response's results again under <id>_response), and now and then a /rewind. Tool
outputs are sized so that the total comes to about TOTAL_MB."""
import os, random, sys

import genlib
from genlib import line, ts, uid

out, count, mb = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(20261201)
per_file = mb * 1e6 / max(count, 1)


def words(n):
    return genlib.words(rng, n)


for k in range(count):
    proj = os.path.join(out, ".gemini/tmp", f"p{k % 40}")
    os.makedirs(os.path.join(proj, "chats"), exist_ok=True)
    root = os.path.join(proj, ".project_root")
    if not os.path.exists(root):
        with open(root, "w") as f:
            f.write(f"/home/dev/project-{k % 40}\n")
    sid = uid(k, 0)
    t = 1780000000000 + k * 3_600_000
    meta = {"sessionId": sid, "projectHash": f"{k:064x}", "startTime": ts(t), "lastUpdated": ts(t), "kind": "main"}
    ctx = {"id": f"{k:032x}", "timestamp": ts(t), "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI.\n" + words(60) + "\n</session_context>"}]}
    parts = [line(meta), line({"$set": {"messages": [ctx], "lastUpdated": ts(t)}})]
    size = sum(map(len, parts))
    msgs = [ctx]
    n = 1
    turn = 0
    while size < per_file:
        turn += 1
        t += 5000
        user = {"id": uid(k, n), "timestamp": ts(t), "type": "user", "content": [{"text": f"Turn {turn}: " + words(20)}]}
        n += 1
        out_text = words(max(10, int(rng.expovariate(1 / (per_file / 60)) / 4)))
        cid = f"run_shell_command_{t}_0"
        gem = {"id": uid(k, n), "timestamp": ts(t + 300), "type": "gemini", "content": "", "thoughts": [{"subject": f"Step {turn}", "description": words(12), "timestamp": ts(t + 200)}], "tokens": {"input": 1000 + 50 * turn, "output": 40, "cached": 0, "thoughts": 10, "tool": 0, "total": 1050 + 50 * turn}, "model": "gemini-2.5-flash"}
        n += 1
        result = [{"functionResponse": {"id": f"run_shell_command__{cid}", "name": "run_shell_command", "response": {"output": out_text}}}]
        gem2 = dict(gem, toolCalls=[{"id": f"run_shell_command__{cid}", "name": "run_shell_command", "args": {"command": f"cat file{turn}.txt"}, "result": result, "status": "success", "timestamp": ts(t + 900), "resultDisplay": out_text[:200], "displayName": "Shell", "description": "", "renderOutputAsMarkdown": False}])
        fr = {"id": uid(k, n), "timestamp": ts(t + 901), "type": "user", "content": [{"functionResponse": {"id": cid, "name": "run_shell_command", "response": {"output": out_text}}}]}
        n += 1
        ans = {"id": uid(k, n), "timestamp": ts(t + 1500), "type": "gemini", "content": words(40), "thoughts": [], "tokens": {"input": 2000, "output": 60, "cached": 500, "thoughts": 0, "tool": 0, "total": 2060}, "model": "gemini-2.5-flash"}
        n += 1
        new = [line(user), line({"$set": {"lastUpdated": ts(t)}}), line(gem), line(gem2), line(fr), line(ans), line({"$set": {"lastUpdated": ts(t + 1500)}})]
        msgs += [user, gem2, fr, ans]
        if turn % 7 == 0:
            # A /rewind of the last turn, then the next turn goes on from before it.
            new.append(line({"$rewindTo": user["id"]}))
            msgs = msgs[:-4]
        elif turn % 5 == 0:
            # A resume: a metadata line, then the rebuilt list.
            rebuilt = []
            for m in msgs:
                if m.get("toolCalls"):
                    c = m["toolCalls"][0]
                    rm = dict(m, content=[{"text": "**x** y", "thought": True}, {"functionCall": {"id": c["id"].split("__", 1)[1], "name": c["name"], "args": c["args"]}}])
                    rebuilt.append(rm)
                    rebuilt.append({"id": m["id"] + "_response", "timestamp": m["timestamp"], "type": "user", "content": c["result"]})
                else:
                    rebuilt.append(m)
            new.append(line(dict(meta, startTime=ts(t + 2000))))
            new.append(line({"$set": {"messages": [ctx]}}))
            new.append(line({"$set": {"sessionId": sid}}))
            new.append(line({"$set": {"messages": rebuilt, "lastUpdated": ts(t + 2000)}}))
            msgs = [m for m in rebuilt if not m["id"].endswith("_response")]
        parts += new
        size += sum(map(len, new))
    name = f"session-{ts(1780000000000 + k * 3_600_000)[:16].replace(':', '-')}-{sid[:8]}.jsonl"
    with open(os.path.join(proj, "chats", name), "w") as f:
        f.writelines(parts)
