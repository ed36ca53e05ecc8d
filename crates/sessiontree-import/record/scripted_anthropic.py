"""A scripted Anthropic Messages endpoint for recording Claude Code transcripts.

    python3 scripted_anthropic.py PORT REQUESTS.jsonl [PROJECT_DIR]

Logs every request body to REQUESTS.jsonl and answers from a script keyed on the last user
text: "DELEGATE" -> an Agent tool call, "RUN" -> thinking + text + a Bash tool call, "READ"
-> a Read tool call of PROJECT_DIR/notes.txt, a tool result -> a text; anything else ->
"Answer N to: ...". Streams (SSE) when asked to."""
import json, sys, threading, itertools
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
LOG = open(sys.argv[2], "a")
PROJECT = sys.argv[3] if len(sys.argv) > 3 else "."
counter = itertools.count(1)
lock = threading.Lock()

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

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(404); self.end_headers()
    def do_HEAD(self):
        self.send_response(200); self.end_headers()
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        raw = self.rfile.read(n)
        try: body = json.loads(raw)
        except Exception: body = {}
        with lock:
            LOG.write(json.dumps({"path": self.path, "body": body}) + "\n"); LOG.flush()
        if "count_tokens" in self.path:
            return self.send_json({"input_tokens": 100})
        if not self.path.startswith("/v1/messages"):
            return self.send_json({})
        blocks, stop = plan(body)
        mid = "msg_fake%06d" % next(counter)
        model = body.get("model", "claude-x")
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        content = []
        for kind, v in blocks:
            if kind == "text": content.append({"type": "text", "text": v})
            elif kind == "thinking": content.append({"type": "thinking", "thinking": v, "signature": "sig" + mid})
            else: content.append(dict(type="tool_use", **v))
        if not body.get("stream"):
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                                   "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        def ev(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        ev("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
        for i, b in enumerate(content):
            if b["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            elif b["type"] == "thinking":
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": b["thinking"]}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": b["signature"]}})
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 25}})
        ev("message_stop", {"type": "message_stop"})
    def send_json(self, o):
        b = json.dumps(o).encode()
        self.send_response(200); self.send_header("content-type", "application/json"); self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
