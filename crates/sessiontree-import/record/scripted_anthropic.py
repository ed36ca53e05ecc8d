"""A scripted Anthropic Messages endpoint for recording Claude Code transcripts.

    python3 scripted_anthropic.py PORT REQUESTS.jsonl [PROJECT_DIR]

Logs every request body to REQUESTS.jsonl and answers from a script keyed on the last user
text: "DELEGATE" -> an Agent tool call, "RUN" -> thinking + text + a Bash tool call, "READ"
-> a Read tool call of PROJECT_DIR/notes.txt, a tool result -> a text; anything else ->
"Answer N to: ...". Streams (SSE) when asked to."""
import sys, itertools
import scripted_http
LOG = open(sys.argv[2], "a")
PROJECT = sys.argv[3] if len(sys.argv) > 3 else "."
counter = itertools.count(1)

def last_user(body):
    msgs = [m for m in body.get("messages", []) if m.get("role") in ("user", "assistant")]
    if not msgs or msgs[-1]["role"] != "user": return "", False
    c = msgs[-1].get("content")
    if isinstance(c, str): return c, False
    texts = [b.get("text", "") for b in c if b.get("type") == "text" and not b.get("text", "").startswith("<system-reminder>")]
    has_result = any(b.get("type") == "tool_result" for b in c)
    return "\n".join(texts), has_result

def plan(body):
    text, has_result = last_user(body)
    tools = [t.get("name") for t in body.get("tools", [])]
    n = next(counter)
    if has_result:
        return [("text", f"The command ran. Reply {n}.")], "end_turn"
    if "DELEGATE" in text and "Agent" in tools:
        return [("text", "Delegating."), ("tool_use", {"id": f"toolu_fake{n:04d}", "name": "Agent", "input": {"description": "Look around", "prompt": "List what you can see and RUN one echo", "subagent_type": "general-purpose"}})], "tool_use"
    if "RUN" in text and "Bash" in tools:
        return [("thinking", f"I should run a command ({n})."), ("text", "Running it."),
                ("tool_use", {"id": f"toolu_fake{n:04d}", "name": "Bash", "input": {"command": "echo hello-from-tool", "description": "Echo"}})], "tool_use"
    if "READ" in text and "Read" in tools:
        return [("text", "Reading it."), ("tool_use", {"id": f"toolu_fake{n:04d}", "name": "Read", "input": {"file_path": f"{PROJECT}/notes.txt"}})], "tool_use"
    return [("text", f"Answer {n} to: {text[-60:]}")], "end_turn"

class H(scripted_http.Handler):
    log = LOG

    def do_HEAD(self):
        self.send_response(200); self.end_headers()

    def do_POST(self):
        body = self.read_body()
        if self.anthropic_aside():
            return
        blocks, stop = plan(body)
        mid = "msg_fake%06d" % next(counter)
        content = []
        for kind, v in blocks:
            if kind == "text": content.append({"type": "text", "text": v})
            elif kind == "thinking": content.append({"type": "thinking", "thinking": v, "signature": "sig" + mid})
            else: content.append(dict(type="tool_use", **v))
        self.anthropic_reply(body, mid, content, stop, 25)

scripted_http.serve(H, int(sys.argv[1]))
