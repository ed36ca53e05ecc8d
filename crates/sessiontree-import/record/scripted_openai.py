"""A scripted OpenAI Responses endpoint for recording Codex CLI rollouts.

    python3 scripted_openai.py PORT REQUESTS.jsonl [INPUT_TOKENS]

Logs every request body to REQUESTS.jsonl and answers (SSE) from a script keyed on the last
user text: "RUN" -> reasoning + a shell tool call, a tool output -> a text, Codex's
compaction prompt -> "Summary N: ...", a remote compaction request (input ending with a
`compaction_trigger`) -> one opaque `compaction` item, the summary Codex continues from
after compacting -> "Continuing from the summary. Reply N.", anything else -> reasoning +
"Answer N to: ...".
Each response reports 900 input tokens (INPUT_TOKENS when given); the first response to a
turn whose user text says "BIG" reports 200,000, so that Codex, configured with a small
model_auto_compact_token_limit, compacts (mid-turn after a tool call, else before the
next turn)."""
import json, sys, itertools
import scripted_http
LOG = open(sys.argv[2], "a")
counter = itertools.count(1)
BIG = int(sys.argv[3]) if len(sys.argv) > 3 else 0
BIG_DONE = set()

def texts(item):
    return "\n".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))

def plan(body):
    """The output items and whether to report a large token usage."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    out = respond(body, items)
    users = [texts(i) for i in items if i.get("type") == "message" and i.get("role") == "user"]
    big = bool(users) and "BIG" in users[-1] and users[-1] not in BIG_DONE
    if big:
        BIG_DONE.add(users[-1])
    return out, big

def respond(body, items):
    n = next(counter)
    tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
    last = items[-1] if items else {}
    if last.get("type") == "compaction_trigger":
        # Remote compaction (providers named "OpenAI"): one opaque compaction item.
        return [{"type": "compaction", "id": f"cmp_{n}", "encrypted_content": f"opaque-compaction-{n}"}]
    if last.get("type") in ("function_call_output", "custom_tool_call_output"):
        return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"The command ran. Reply {n}."}]}]
    users = [texts(i) for i in items if i.get("type") == "message" and i.get("role") == "user"]
    text = users[-1] if users else ""
    if "summary" in text.lower() and "checkpoint" in text.lower() or "CONTEXT CHECKPOINT" in text:
        return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Summary {n}: the user ran echo twice."}]}]
    if text.startswith("Another language model started to solve this problem"):
        return [{"type": "message", "id": f"msg_{n}", "role": "assistant", "content": [{"type": "output_text", "text": f"Continuing from the summary. Reply {n}."}]}]
    out = [{"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": f"**Planning {n}**"}], "encrypted_content": f"enc{n}"}]
    if "RUN" in text:
        name = next((t for t in ("shell", "shell_command", "exec_command") if t in tools), tools[0] if tools else "shell")
        args = {"command": ["bash", "-lc", "echo hello-codex"]} if name == "shell" else ({"command": "echo hello-codex"} if name == "shell_command" else {"cmd": "echo hello-codex"})
        out.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n:04d}", "name": name, "arguments": json.dumps(args)})
        return out
    out.append({"type": "message", "id": f"msg_{n}", "role": "assistant", "content": [{"type": "output_text", "text": f"Answer {n} to: {text[-40:]}"}]})
    return out

class H(scripted_http.Handler):
    log = LOG

    def do_POST(self):
        body = self.read_body()
        items, big = plan(body)
        rid = "resp_%d" % next(counter)
        self.start_events()
        def ev(data):
            self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
        ev({"type": "response.created", "response": {"id": rid}})
        for it in items:
            ev({"type": "response.output_item.done", "item": it})
        inp = 200000 if big else (BIG or 900)
        ev({"type": "response.completed", "response": {"id": rid, "usage": {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 100}, "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": inp + 40}}})

scripted_http.serve(H, int(sys.argv[1]))
