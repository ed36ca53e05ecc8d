"""Turns a Claude Code recording of record.sh into a fixture set.

    python3 claude_fixture.py RUN_DIR FIXTURE_DIR

RUN_DIR is a part's folder (OUT_DIR/cc or OUT_DIR/ca: the HOME Claude Code ran with, the
project in RUN_DIR/proj, the requests in RUN_DIR/requests.jsonl). Writes into FIXTURE_DIR
the transcripts (`<session id>.jsonl`, subagents under `<session id>/subagents/`) and
`resume-requests.json`: for every prompt that continued a session (`--resume`,
`--fork-session`), the messages of the first request Claude Code sent for it. Machine paths
are renamed (project -> /home/dev/demo, HOME -> /home/dev); every text, the rendered
attachments included, is kept as Claude Code wrote and sent it. `cache_control` marks are
dropped from the requests (they say where the prompt cache ends, nothing about content)."""
import glob, json, os, sys

run, dest = os.path.abspath(sys.argv[1]), sys.argv[2]
proj = os.path.join(run, "proj")
slug = proj.replace("/", "-").replace(".", "-")
renames = [(proj, "/home/dev/demo"), (run, "/home/dev"), (slug, "-home-dev-demo")]


def clean(v):
    if isinstance(v, str):
        for a, b in renames:
            v = v.replace(a, b)
        return v
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if k != "cache_control"}
    return v


def dump(v):
    # Claude Code writes its lines with JSON.stringify: compact, non-ASCII as it is.
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


folder = os.path.join(run, ".claude", "projects", slug)
mains = {}
for src in sorted(glob.glob(os.path.join(folder, "**", "*.jsonl"), recursive=True)):
    rel = os.path.relpath(src, folder)
    out = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    lines = [json.loads(l) for l in open(src, encoding="utf-8") if l.strip()]
    with open(out, "w", encoding="utf-8") as f:
        for l in lines:
            f.write(dump(clean(l)) + "\n")
    if os.sep not in rel:
        mains[rel[: -len(".jsonl")]] = (rel, lines)


def prompt_of(message):
    c = message.get("content")
    if isinstance(c, str):
        return c
    texts = [b.get("text", "") for b in c if b.get("type") == "text"]
    texts = [t for t in texts if not t.startswith("<system-reminder>")]
    return texts[-1] if texts else None


resumes, seen = [], set()
for line in open(os.path.join(run, "requests.jsonl"), encoding="utf-8"):
    body = json.loads(line)["body"]
    msgs = [m for m in body.get("messages", []) if m["role"] != "system"]
    if not msgs or msgs[-1]["role"] != "user":
        continue
    try:
        sid = json.loads(body["metadata"]["user_id"])["session_id"]
    except (KeyError, ValueError):
        continue
    prompt = prompt_of(msgs[-1])
    if sid not in mains or prompt is None or (sid, prompt) in seen:
        continue
    rel, lines = mains[sid]
    # A prompt that continued the session: messages come before its line.
    at = next((i for i, l in enumerate(lines)
               if l.get("type") == "user" and l["message"].get("content") == prompt), None)
    if at is None or not any(l.get("type") in ("user", "assistant") for l in lines[:at]):
        continue
    seen.add((sid, prompt))
    resumes.append({"transcript": rel, "prompt": clean(prompt), "model": body.get("model"),
                    "messages": clean(body["messages"])})

with open(os.path.join(dest, "resume-requests.json"), "w", encoding="utf-8") as f:
    json.dump(resumes, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(f"{len(mains)} sessions, {len(resumes)} resume requests -> {dest}")
