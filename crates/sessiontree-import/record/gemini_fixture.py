"""Turns a Gemini CLI recording (record.sh's gemini part) into committed fixtures.

    python3 gemini_fixture.py RECORD_DIR FIXTURE_DIR

RECORD_DIR holds proj/ (the cwd), home/ (HOME, with .gemini/) and requests.jsonl (what the
scripted endpoint received). Copies every chat under home/.gemini/tmp/<project>/chats/ (and
the project's .project_root) into FIXTURE_DIR/tmp/..., and writes FIXTURE_DIR/
resume-requests.json: for each prompt given to a resumed session, the contents Gemini CLI
sent with it (its first request for that prompt), and the contents of the very last request
of the recording. On the way the recording's paths become /home/dev/demo (cwd) and
/home/dev (HOME); nothing else is changed."""
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


def tidy_line(line):
    # On the text itself: the line stays byte for byte what Gemini CLI wrote otherwise.
    line = line.rstrip("\n")
    for a, b in PATHS:
        line = line.replace(a, b)
    return line


tmp = os.path.join(REC, "home/.gemini/tmp")
shutil.rmtree(os.path.join(FIX, "tmp"), ignore_errors=True)
chats = []
for src in sorted(glob.glob(os.path.join(tmp, "*/chats/**/*.jsonl"), recursive=True)):
    rel = os.path.relpath(src, REC + "/home/.gemini")
    dst = os.path.join(FIX, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            if line.strip():
                out.write(tidy_line(line) + "\n")
    chats.append(rel)
for root in glob.glob(os.path.join(tmp, "*/.project_root")):
    dst = os.path.join(FIX, os.path.relpath(root, REC + "/home/.gemini"))
    with open(root) as f, open(dst, "w") as out:
        out.write(tidy(f.read()))


def last_text(contents):
    if not contents:
        return None
    last = contents[-1]
    if last.get("role") != "user":
        return None
    texts = [p.get("text") for p in last.get("parts") or [] if "text" in p]
    return texts[-1] if texts else None


requests = [json.loads(l)["body"] for l in open(os.path.join(REC, "requests.jsonl"))]
main = [c for c in chats if os.path.basename(c).startswith("session-")]
# The chat holding the conversation (every resume also leaves a file with only its start).
def size(c):
    return os.path.getsize(os.path.join(FIX, c))
chat = max(main, key=size)
out, seen = [], set()
prompts = []
for line in open(os.path.join(FIX, chat)):
    r = json.loads(line)
    if r.get("type") == "user" and isinstance(r.get("content"), list):
        t = "".join(p.get("text", "") for p in r["content"])
        if t and not t.startswith("<") and t not in prompts:
            prompts.append(t)
for body in requests:
    t = last_text(body.get("contents"))
    if t in prompts and t not in seen and "invoke_agent" in json.dumps(body.get("tools", [])):
        seen.add(t)
        out.append({"chat": chat, "prompt": t, "occurrence": 1, "contents": tidy(body["contents"])})
last = next(b for b in reversed(requests) if "invoke_agent" in json.dumps(b.get("tools", [])))
out.append({"chat": chat, "last": True, "contents": tidy(last["contents"])})
with open(os.path.join(FIX, "resume-requests.json"), "w") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(f"{len(chats)} chats, {len(out)} requests")
