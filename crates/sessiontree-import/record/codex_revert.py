"""Drives `codex app-server` over stdio (JSON-RPC, one message a line) to revert turns.

    python3 codex_revert.py CODEX THREAD_ID STEP...

Resumes thread THREAD_ID, then runs each STEP: `turn:TEXT` runs a turn with that prompt;
`revert` reverts the last turn run here (`thread/revert` with `beforeTurnId` = its id: the
durable history goes back to before it), so the next turn continues from the history
before it. Codex keeps the rollout as it was and writes the history after the revert to a
new rollout file, `rollout-<time>-<thread id>_<segment id>.jsonl`, whose `session_meta`
names its base (`history_base`). The environment (HOME, CODEX_HOME, the provider's key) is
the caller's; the cwd is the thread's. Prints the JSON-RPC traffic to stderr."""
import json, subprocess, sys

codex, thread, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
ids = iter(range(1, 1000))


def send(msg):
    print(">>", json.dumps(msg)[:300], file=sys.stderr)
    proc.stdin.write(json.dumps(msg) + "\n")
    proc.stdin.flush()


def read():
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("app-server closed its output")
    msg = json.loads(line)
    print("<<", line.strip()[:300], file=sys.stderr)
    return msg


def call(method, params):
    n = next(ids)
    send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == n and "method" not in msg:
            if "error" in msg:
                raise SystemExit(f"{method}: {msg['error']}")
            return msg["result"]
        if "method" in msg and "id" in msg:
            # A request of the server (an approval): decline it.
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"decision": "decline"}})


def turn(text):
    started = call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text, "text_elements": []}]})
    turn_id = started["turn"]["id"]
    while True:
        msg = read()
        if msg.get("method") == "turn/completed" and msg["params"]["turn"]["id"] == turn_id:
            return turn_id
        if "method" in msg and "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"decision": "decline"}})


call("initialize", {"clientInfo": {"name": "sessiontree-record", "title": None, "version": "1"}, "capabilities": None})
send({"jsonrpc": "2.0", "method": "initialized"})
call("thread/resume", {"threadId": thread, "excludeTurns": True})
last = None
for step in steps:
    if step == "revert":
        call("thread/revert", {"threadId": thread, "beforeTurnId": last})
    else:
        last = turn(step.removeprefix("turn:"))
proc.stdin.close()
proc.wait(timeout=30)
