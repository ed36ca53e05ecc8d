"""A scripted OpenAI-compatible chat completions endpoint for recording OpenCode sessions.

    python3 scripted_chat.py PORT REQUESTS.jsonl

Logs every request body to REQUESTS.jsonl and answers (SSE when the request streams) from a
script keyed on the conversation: a title request (the system prompt asks for a title) ->
"Title N"; a summarization request (the last user text asks for a summary of the
conversation) -> "Summary N: ..."; a last message that is a tool result -> a text; the last
user text says "RUN" -> reasoning + a `bash` tool call, "DELEGATE" -> a `task` tool call
(the subagent's session), "EDIT" -> a `write` tool call; anything else -> reasoning + "Answer
N to: ...". Each response reports 900 prompt tokens and 40 completion tokens."""
import json, sys, itertools
import scripted_http

LOG = open(sys.argv[2], "a")
counter = itertools.count(1)


def text_of(m):
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def respond(body):
    """(reasoning, text, tool calls) for a request."""
    n = next(counter)
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict)]
    system = "\n".join(text_of(m) for m in msgs if m.get("role") == "system")
    tools = [t.get("function", {}).get("name") for t in body.get("tools", []) or []]
    users = [text_of(m) for m in msgs if m.get("role") == "user"]
    last_user = users[-1] if users else ""
    last = msgs[-1] if msgs else {}
    if "detailed summary of the conversation" in last_user.lower():
        # Copilot CLI's /compact (its system prompt also mentions titles).
        return None, f"Summary {n}: the user ran echo and asked about it.", []
    if not tools and "title" in system.lower():
        return None, f"Title {n}", []
    if "summary" in last_user.lower() and ("conversation" in last_user.lower() or "summarize" in last_user.lower()):
        return None, f"Summary {n}: the user ran echo and asked about it.", []
    if last.get("role") == "tool":
        return None, f"The command ran. Reply {n}.", []
    reasoning = f"Planning {n}"
    if "RUN" in last_user and "bash" in tools:
        args = {"command": "echo hello-opencode", "description": "Print a greeting"}
        return reasoning, None, [("bash", args)]
    if "DELEGATE" in last_user and "task" in tools:
        args = {"description": "Look around", "prompt": "Say what the project holds.", "subagent_type": "general"}
        params = next((t.get("function", {}).get("parameters", {}) for t in body.get("tools", [])
                       if t.get("function", {}).get("name") == "task"), {})
        if "agent_type" in params.get("properties", {}):
            # Copilot CLI's task tool.
            args = {"description": "Look around", "prompt": "Say what the project holds.",
                    "agent_type": "explore", "name": "looker"}
        return reasoning, None, [("task", args)]
    if "EDIT" in last_user and "write" in tools:
        args = {"filePath": "notes.txt", "content": f"note {n}\n"}
        return reasoning, None, [("write", args)]
    return reasoning, f"Answer {n} to: {last_user[-40:]}", []


class H(scripted_http.Handler):
    log = LOG
    log_headers = True

    def do_POST(self):
        body = self.read_body()
        reasoning, text, calls = respond(body)
        rid = "chatcmpl-%d" % next(counter)
        usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text}
            if calls:
                msg["tool_calls"] = [
                    {"id": f"call_{rid}_{i}", "type": "function", "function": {"name": nm, "arguments": json.dumps(a)}}
                    for i, (nm, a) in enumerate(calls)
                ]
            return self.send_json({"id": rid, "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                                   "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage})
        self.start_events()

        def chunk(delta, finish_reason=None, with_usage=False):
            c = {"id": rid, "object": "chat.completion.chunk", "created": 0, "model": body.get("model", ""),
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            if with_usage:
                c["usage"] = usage
            self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())

        chunk({"role": "assistant", "content": ""})
        if reasoning:
            chunk({"reasoning_content": reasoning})
        if text:
            chunk({"content": text})
        for i, (nm, a) in enumerate(calls):
            chunk({"tool_calls": [{"index": i, "id": f"call_{rid}_{i}", "type": "function",
                                   "function": {"name": nm, "arguments": json.dumps(a)}}]})
        chunk({}, finish, with_usage=True)
        self.wfile.write(b"data: [DONE]\n\n")


scripted_http.serve(H, int(sys.argv[1]))
