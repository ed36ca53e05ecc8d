"""A scripted Anthropic Messages endpoint on 127.0.0.1 for the end-to-end test of
`sessiontree mcp` with a real agent (Claude Code).

    python3 scripted_model.py REQUESTS.jsonl QUERY

Prints the port it listens on, then serves. Every request body is appended to
REQUESTS.jsonl. A request whose tools include an MCP tool named ..._search_sessions and
whose last user turn is a question (no tool result yet) is answered with a call of that
tool with {"query": QUERY}; a request carrying a tool result is answered with a short
text; anything else with a short text. Streams (SSE) when asked to."""
import itertools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(sys.argv[1], "a")
QUERY = sys.argv[2]
counter = itertools.count(1)
lock = threading.Lock()


def last_user(body):
    msgs = [m for m in body.get("messages", []) if m.get("role") in ("user", "assistant")]
    if not msgs or msgs[-1]["role"] != "user":
        return False
    c = msgs[-1].get("content")
    return isinstance(c, list) and any(b.get("type") == "tool_result" for b in c)


def plan(body):
    n = next(counter)
    search = [t.get("name") for t in body.get("tools", []) if str(t.get("name", "")).endswith("search_sessions")]
    if last_user(body):
        return [{"type": "text", "text": f"Found it ({n})."}], "end_turn"
    if search:
        return [{"type": "tool_use", "id": f"toolu_mcp{n:04d}", "name": search[0], "input": {"query": QUERY}}], "tool_use"
    return [{"type": "text", "text": f"Answer {n}."}], "end_turn"


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(404)
        self.end_headers()

    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw)
        except Exception:
            body = {}
        with lock:
            LOG.write(json.dumps({"path": self.path, "body": body}) + "\n")
            LOG.flush()
        if "count_tokens" in self.path:
            return self.send_json({"input_tokens": 100})
        if not self.path.startswith("/v1/messages"):
            return self.send_json({})
        content, stop = plan(body)
        mid = "msg_scripted%06d" % next(counter)
        model = body.get("model", "claude-x")
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self.send_json({"id": mid, "type": "message", "role": "assistant", "model": model,
                                   "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

        def ev(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        ev("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                                                                 "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
        for i, b in enumerate(content):
            if b["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}})
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
        ev("message_stop", {"type": "message_stop"})

    def send_json(self, o):
        b = json.dumps(o).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
