"""A scripted Anthropic Messages endpoint on 127.0.0.1 for the end-to-end test of
`sessiontree mcp` with a real agent (Claude Code).

    python3 scripted_model.py REQUESTS.jsonl QUERY

Prints the port it listens on, then serves. Every request body is appended to
REQUESTS.jsonl. A request whose tools include an MCP tool named ..._search_sessions and
whose last user turn is a question (no tool result yet) is answered with a call of that
tool with {"query": QUERY}; a request carrying a tool result is answered with a short
text; anything else with a short text. Streams (SSE) when asked to."""
import itertools
import os
import sys

# The scripted endpoints' shared handler, beside the recording's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "sessiontree-import", "record"))
import scripted_http  # noqa: E402

LOG = open(sys.argv[1], "a")
QUERY = sys.argv[2]
counter = itertools.count(1)


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


class H(scripted_http.Handler):
    log = LOG

    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        body = self.read_body()
        if self.anthropic_aside():
            return
        content, stop = plan(body)
        self.anthropic_reply(body, "msg_scripted%06d" % next(counter), content, stop, 5)


scripted_http.serve(H, 0)
