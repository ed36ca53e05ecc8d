"""Turns a GitHub Copilot CLI recording (record.sh's copilot part) into committed fixtures.

    python3 copilot_fixture.py RECORD_DIR FIXTURE_DIR

RECORD_DIR holds proj/ (the cwd), home/ (HOME, with .copilot/) and requests.jsonl (what the
scripted endpoint received). Copies each session's events.jsonl into
FIXTURE_DIR/session-state/<id>/events.jsonl (and its workspace.yaml) and writes FIXTURE_DIR/resume-requests.json:
for each prompt, the messages Copilot CLI sent with it (its first request for that prompt;
the system prompt left out; `compaction: true` for the request of a /compact, its prompt a
placeholder), and the messages of the very last request of the recording.
On the way the recording's paths become /home/dev/demo (cwd) and /home/dev (HOME), and the
system prompt Copilot CLI records (a long text of its own, never part of the conversation)
becomes a placeholder; nothing else is changed."""
import glob, json, os, shutil, sys

REC, FIX = (os.path.abspath(a) for a in sys.argv[1:3])
PATHS = [(os.path.join(REC, "proj"), "/home/dev/demo"), (os.path.join(REC, "home"), "/home/dev")]


def tidy(v):
    if isinstance(v, dict):
        return {k: tidy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [tidy(x) for x in v]
    if isinstance(v, str):
        for a, b in PATHS:
            v = v.replace(a, b)
    return v


shutil.rmtree(os.path.join(FIX, "session-state"), ignore_errors=True)
for src in sorted(glob.glob(os.path.join(REC, "home/.copilot/session-state/*/events.jsonl"))):
    sid = os.path.basename(os.path.dirname(src))
    dst = os.path.join(FIX, "session-state", sid, "events.jsonl")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            e = json.loads(line)
            if e.get("type") == "system.message":
                e["data"]["content"] = "(Copilot CLI's system prompt, left out of the fixture)"
                line = json.dumps(e, separators=(",", ":"), ensure_ascii=False)
            for a, b in PATHS:
                line = line.replace(a, b)
            out.write(line + "\n")
    # The session's name (`/rename` writes it only here), paths renamed as above.
    ws = os.path.join(os.path.dirname(src), "workspace.yaml")
    if os.path.exists(ws):
        text = open(ws).read()
        for a, b in PATHS:
            text = text.replace(a, b)
        with open(os.path.join(os.path.dirname(dst), "workspace.yaml"), "w") as f:
            f.write(text)

reqs = [json.loads(l) for l in open(os.path.join(REC, "requests.jsonl")) if l.strip()]


def convo(body):
    return [m for m in body.get("messages", []) if m.get("role") != "system"]


def last_user(body):
    us = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return us[-1]["content"] if us else None


out, seen = [], set()
for r in reqs:
    u = last_user(r["body"])
    if u is None or u in seen:
        continue
    seen.add(u)
    # The request /compact sends for its summary (not a prompt of the conversation).
    summary = u.startswith("Please create a detailed summary of the conversation")
    messages = tidy(convo(r["body"]))
    if summary:
        # Copilot CLI's own instructions for the summary, like its system prompt.
        u = messages[-1]["content"] = "(Copilot CLI's compaction prompt, left out of the fixture)"
    out.append({"prompt": u, "last": False, "compaction": summary, "messages": messages})
out.append({"prompt": last_user(reqs[-1]["body"]), "last": True, "messages": tidy(convo(reqs[-1]["body"]))})
with open(os.path.join(FIX, "resume-requests.json"), "w") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
shutil.copy(os.path.join(REC, "copilot-version"), os.path.join(FIX, "copilot-version"))
