"""A scripted Gemini API endpoint (generateContent / streamGenerateContent) for recording
Gemini CLI sessions.

    python3 scripted_gemini.py PORT REQUESTS.jsonl

Logs every request (path and body) to REQUESTS.jsonl and answers from a script keyed on the
request: the compression prompt (a system instruction asking for a <state_snapshot>) ->
"<state_snapshot>Summary N ...</state_snapshot>"; a request ending with a function
response -> "The command ran. Reply N." (in a subagent's chat: a `complete_task` call);
a user text with "RUN" -> a thought and a `run_shell_command` call; "DELEGATE" -> an
`invoke_agent` call of the generalist subagent; "BIG" -> the answer (or tool call) reports 900,000 prompt tokens (so
the CLI, at its default threshold, compresses before its next request, in the middle of a
turn after a tool call); a utility request with a
JSON response schema -> a small JSON object; anything else -> a thought and
"Answer N to: ...". Streaming requests get SSE chunks (the thought, then the parts).
"""
import json, sys, itertools
import scripted_http

LOG = open(sys.argv[2], "a")
counter = itertools.count(1)


def parts_text(content):
    return "".join(p.get("text", "") for p in content.get("parts") or [] if isinstance(p, dict) and not p.get("thought"))


def tool_names(body):
    out = []
    for t in body.get("tools") or []:
        for f in t.get("functionDeclarations") or []:
            out.append(f.get("name"))
    return out


def plan(body):
    """(parts, prompt tokens) of the scripted answer."""
    n = next(counter)
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    system = json.dumps(body.get("systemInstruction") or body.get("system_instruction") or "")
    tools = tool_names(body)
    last = contents[-1] if contents else {}
    last_text = parts_text(last)
    cfg = body.get("generationConfig") or {}
    if "<state_snapshot>" in system:
        return [{"text": f"<state_snapshot>\nSummary {n}: the user ran echo and asked questions.\n</state_snapshot>"}], 300
    if cfg.get("responseMimeType") == "application/json" or cfg.get("responseJsonSchema") or cfg.get("responseSchema"):
        schema = json.dumps(cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {})
        if "next_speaker" in schema:
            obj = {"reasoning": "The model answered.", "next_speaker": "user"}
        elif "complexity" in schema or "model_choice" in schema:
            obj = {"reasoning": "simple", "model_choice": "flash"}
        else:
            obj = {}
        return [{"text": json.dumps(obj)}], 100
    if any(p.get("functionResponse") for p in last.get("parts") or [] if isinstance(p, dict)):
        if "complete_task" in tools:
            return [{"functionCall": {"name": "complete_task", "args": {"result": {"response": f"Investigated. Finding {n}."}}}}], 900
        return [{"text": f"The command ran. Reply {n}."}], 900
    thought = {"text": f"**Planning {n}**\nI will answer.", "thought": True}
    if "complete_task" in tools:
        return [thought, {"functionCall": {"name": "complete_task", "args": {"result": {"response": f"Investigated. Finding {n}."}}}}], 900
    tokens = 900000 if "BIG" in last_text else 900
    if "RUN" in last_text and "run_shell_command" in tools:
        return [thought, {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hello-gemini", "description": "Print a greeting"}}}], tokens
    if "DELEGATE" in last_text and "invoke_agent" in tools:
        return [thought, {"functionCall": {"name": "invoke_agent", "args": {"agent_name": "generalist", "prompt": "Look at the project and report what notes.txt holds."}}}], 900
    return [thought, {"text": f"Answer {n} to: {last_text[-40:]}"}], tokens


class H(scripted_http.Handler):
    log = LOG

    def do_POST(self):
        body = self.read_body()
        if ":countTokens" in self.path:
            return self.send_json({"totalTokens": 100})
        with self.lock:
            parts, prompt_tokens = plan(body)
        usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": 20, "totalTokenCount": prompt_tokens + 20}
        final = {"candidates": [{"content": {"role": "model", "parts": [p for p in parts if not p.get("thought")]}, "finishReason": "STOP", "index": 0}], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}
        if ":streamGenerateContent" in self.path:
            self.start_events()
            thoughts = [p for p in parts if p.get("thought")]
            if thoughts:
                first = {"candidates": [{"content": {"role": "model", "parts": thoughts}, "index": 0}], "modelVersion": "gemini-2.5-flash"}
                self.wfile.write(f"data: {json.dumps(first)}\r\n\r\n".encode())
            self.wfile.write(f"data: {json.dumps(final)}\r\n\r\n".encode())
            self.wfile.flush()
            return
        final["candidates"][0]["content"]["parts"] = parts
        self.send_json(final)


scripted_http.serve(H, int(sys.argv[1]))
