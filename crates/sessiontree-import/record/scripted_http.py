"""What the scripted model endpoints share (the recording's here, and the one of the MCP
end-to-end test in `mcp-tests/`): a request handler that reads each request's JSON body and
appends it to the requests log, JSON answers, Server-Sent Events, an Anthropic Messages
answer (one message, or its stream), and serving on 127.0.0.1.

A script subclasses `Handler`, sets `log` (the open REQUESTS.jsonl; `log_headers` to log
the request headers too, less the credentials) and answers in `do_POST`."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    log = None
    log_headers = False
    lock = threading.Lock()

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(404)
        self.end_headers()

    def read_body(self):
        """The request's JSON body ({} when it is not JSON), after logging it with its path."""
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw)
        except Exception:
            body = {}
        with self.lock:
            record = {"path": self.path}
            if self.log_headers:
                record["headers"] = {k.lower(): v for k, v in self.headers.items()
                                     if k.lower() not in ("authorization", "api-key")}
            record["body"] = body
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()
        return body

    def send_json(self, o):
        data = json.dumps(o).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self):
        """Starts an answer of Server-Sent Events."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()

    def anthropic_aside(self):
        """Answers a request to an Anthropic endpoint other than Messages (a token count: 100;
        anything else: {}); False for a Messages request, left to answer."""
        if "count_tokens" in self.path:
            self.send_json({"input_tokens": 100})
        elif not self.path.startswith("/v1/messages"):
            self.send_json({})
        else:
            return False
        return True

    def anthropic_reply(self, body, mid, content, stop, output_tokens):
        """Answers an Anthropic Messages request with `content` (its text, thinking and
        tool_use blocks) and `stop`: one message, or its events when the request streams
        (the stream's final usage: `output_tokens`)."""
        model = body.get("model", "claude-x")
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message = {"id": mid, "type": "message", "role": "assistant", "model": model}
        if not body.get("stream"):
            return self.send_json(dict(message, content=content, stop_reason=stop, stop_sequence=None, usage=usage))
        self.start_events()

        def ev(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        ev("message_start", {"type": "message_start",
                             "message": dict(message, content=[], stop_reason=None, stop_sequence=None, usage=usage)})
        for i, b in enumerate(content):
            if b["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": b["text"]}]
            elif b["type"] == "thinking":
                start = {"type": "thinking", "thinking": ""}
                deltas = [{"type": "thinking_delta", "thinking": b["thinking"]},
                          {"type": "signature_delta", "signature": b["signature"]}]
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(b["input"])}]
            ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
            for d in deltas:
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": output_tokens}})
        ev("message_stop", {"type": "message_stop"})


def serve(handler, port):
    """Serves `handler` on 127.0.0.1:`port`; port 0: a free one, printed first."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    if port == 0:
        print(server.server_address[1], flush=True)
    server.serve_forever()
