"""Turns a Codex recording (record.sh's codex-compaction or codex-revert part) into
committed fixtures.

    python3 codex_fixture.py RECORD_DIR FIXTURE_DIR

RECORD_DIR holds proj/ (the cwd), home/ (HOME, with .codex/sessions) and requests.jsonl
(what the scripted endpoint received). Writes each rollout into FIXTURE_DIR/sessions/...
and puts into FIXTURE_DIR/resume-requests.json, for every `exec resume`, the input Codex
sent with the resumed prompt (entries of other rollouts are kept). On the way: the
recording's paths become /home/dev/demo (cwd) and /home/dev (HOME); long texts Codex
writes itself (base instructions, skills and permissions blocks) become placeholders, the
same placeholder for the same text in rollout and requests; the base instructions of a
request (its first developer message) are named as such, since Codex adapts them at run
time. The environment context and the compaction summaries are kept as they are."""
import glob, json, os, sys

REC, FIX = (os.path.abspath(a) for a in sys.argv[1:3])
PATHS = [(os.path.join(REC, "proj"), "/home/dev/demo"), (os.path.join(REC, "home"), "/home/dev")]
LONG = 300
KEEP = ("<environment_context>", "Another language model started to solve this problem")
holders = {}


def tidy(v):
    if isinstance(v, dict):
        return {k: tidy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [tidy(x) for x in v]
    if isinstance(v, str):
        for a, b in PATHS:
            v = v.replace(a, b)
        if len(v) > LONG and not v.lstrip().startswith(KEEP):
            v = holders.setdefault(v, f"[left out of the fixture] #{len(holders)}")
    return v


def text(item):
    return "\n".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))


def is_prompt(item):
    return (
        item.get("type") == "message"
        and item.get("role") == "user"
        and not text(item).lstrip().startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md"))
    )


def dump(l):
    return json.dumps(l, ensure_ascii=False, separators=(",", ":")) + "\n"


entries = []
rollouts = {}
for src in sorted(glob.glob(os.path.join(REC, "home/.codex/sessions/*/*/*/rollout-*.jsonl"))):
    rel = os.path.relpath(src, os.path.join(REC, "home/.codex"))
    # A file's id: the thread's (a rollout) or the segment's (after the `_`).
    rollouts[os.path.basename(src)[: -len(".jsonl")][-36:]] = (rel, [tidy(json.loads(l)) for l in open(src) if l.strip()])
# A segment's history_base names its end by ordinal and by byte offset in the file it
# continues; the offset is set again for that file as written here (its texts shortened).
for rel, lines in rollouts.values():
    base = lines[0]["payload"].get("history_base") if lines[0]["type"] == "session_meta" else None
    if base and base["thread_id"] in rollouts:
        offset = 0
        for l in rollouts[base["thread_id"]][1]:
            if l.get("ordinal", -1) >= base["end_ordinal_exclusive"]:
                break
            offset += len(dump(l).encode())
        base["end_byte_offset"] = offset
for rel, lines in sorted(rollouts.values()):
    dst = os.path.join(FIX, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "w") as f:
        for l in lines:
            f.write(dump(l))
    prompts = [text(l["payload"]) for l in lines if l["type"] == "response_item" and is_prompt(l["payload"])]
    # A segment a revert wrote (its session_meta names a history_base) continues the
    # thread: each of its prompts was sent with the history before it.
    segment = lines[0]["type"] == "session_meta" and "history_base" in lines[0]["payload"]
    entries.append((rel, prompts if segment else prompts[1:]))

requests = [json.loads(l)["body"] for l in open(os.path.join(REC, "requests.jsonl")) if l.strip()]
out = []
for rel, prompts in entries:
    seen = {}
    # The first prompt of a thread's rollout started the session (`exec`); the others were
    # resumes (or turns after a revert).
    for p in prompts:
        seen[p] = seen.get(p, 0) + 1
        if seen[p] > 1:
            continue
        # The first request that ends with the prompt: what Codex sent when it resumed with it.
        body = next(
            b for b in requests if b.get("input") and is_prompt(b["input"][-1]) and text(b["input"][-1]) == p
        )
        inp = json.loads(json.dumps(body["input"]))
        if inp[0].get("role") == "developer":
            inp[0]["content"] = [
                {"type": "input_text", "text": "[the base instructions as Codex sent them, left out of the fixture]"}
            ]
        inp = tidy(inp)
        out.append({"rollout": rel, "prompt": p, "occurrence": 1, "input": inp})

path = os.path.join(FIX, "resume-requests.json")
old = json.load(open(path)) if os.path.exists(path) else []
mine = {rel for rel, _ in entries}
new = [e for e in old if e["rollout"] not in mine] + out
with open(path, "w") as f:
    json.dump(new, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(f"{len(entries)} rollout(s), {len(out)} resume request(s) -> {FIX}")
