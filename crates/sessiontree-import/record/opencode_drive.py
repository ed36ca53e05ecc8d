"""Drives a running `opencode serve` through its HTTP API: the scenario of the OpenCode
fixtures (record.sh's opencode part).

    python3 opencode_drive.py http://127.0.0.1:PORT PROVIDER MODEL

Session A: a tool call; a question; a subagent (the `task` tool: a child session); a
question that is then reverted (POST /revert to it) and a prompt after the revert (OpenCode
deletes the reverted messages then; they stay in its `event` log); a compaction
(POST /summarize); a tool call after it. Session B: a fork of A at its second prompt (POST
/fork with that message: the messages before it copied under new ids), continued with one
prompt. Session C: a single turn left with a revert pending (reverted, no prompt after it:
the messages are still in the tables, the session's `revert` names the first one)."""
import json, sys, urllib.request

URL, PROVIDER, MODEL = sys.argv[1:4]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        raw = r.read()
    return json.loads(raw) if raw.strip() else None


def new_session():
    return call("POST", "/session", {})["id"]


def prompt(sid, text):
    out = call("POST", f"/session/{sid}/message", {
        "model": {"providerID": PROVIDER, "modelID": MODEL},
        "parts": [{"type": "text", "text": text}],
    })
    return out


def user_messages(sid):
    msgs = call("GET", f"/session/{sid}/message")
    return [m["info"] for m in msgs if m["info"]["role"] == "user"]


a = new_session()
prompt(a, "Please RUN the echo command")
prompt(a, "What did it print?")
prompt(a, "Please DELEGATE this")
prompt(a, "A question to take back")
taken_back = user_messages(a)[-1]["id"]
call("POST", f"/session/{a}/revert", {"messageID": taken_back})
prompt(a, "After the revert")
call("POST", f"/session/{a}/summarize", {"providerID": PROVIDER, "modelID": MODEL})
prompt(a, "After compacting, RUN again")

second = user_messages(a)[1]["id"]
b = call("POST", f"/session/{a}/fork", {"messageID": second})["id"]
prompt(b, "Forked question")

c = new_session()
prompt(c, "A single question")
prompt(c, "Another question to take back")
call("POST", f"/session/{c}/revert", {"messageID": user_messages(c)[-1]["id"]})
print(json.dumps({"main": a, "fork": b, "pending_revert": c}))
