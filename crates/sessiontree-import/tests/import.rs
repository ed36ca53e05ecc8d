//! Imports every fixture under `tests/fixtures/` (hand-written Claude Code transcripts and
//! Codex rollouts covering every line type, branches, compaction, sidechains, forks,
//! multi-line responses and malformed lines) and checks:
//!
//! * the conversation in sessiontree's context is the one the source agent would send on
//!   resume, computed here by a small independent model of each agent's own rule (Claude
//!   Code: walk `parentUuid` up from the newest message, stop at a compaction boundary;
//!   Codex: replay the rollout, a compaction replaces the history, a rollback drops turns);
//! * every written line is canonical, the files load without diagnostics, and importing
//!   again gives identical bytes and writes nothing;
//! * a grown source is completed by appending, and then reads like a fresh import;
//! * Pi 1.6.0 opens every result and its `buildSessionContext()` equals sessiontree's
//!   (needs node and `interop/node_modules`; skipped visibly without them unless
//!   `SESSIONTREE_REQUIRE_INTEROP=1`).

use serde_json::{json, Value};
use sessiontree::json::{Kind, Raw};
use sessiontree::{build_context, LeafArg};
use sessiontree_import::{claude, codex, opencode, write, Conversion, Status};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sessiontree_testkit::interop;

mod common;
use common::{fixtures, norm};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = sessiontree_testkit::files::jsonl_under(dir);
    // Main sessions before the subagents that name them.
    out.sort_by_key(|p| p.to_string_lossy().contains("/agent-"));
    out
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// The segments a Codex revert wrote for thread `thread` beside its rollout in `dir`, in
/// the order they were written.
fn codex_segments(dir: &Path, thread: &str) -> Vec<PathBuf> {
    let mut segs: Vec<PathBuf> = files(dir)
        .into_iter()
        .filter(|f| codex::segment_name(&stem(f)).is_some_and(|(t, _)| t == thread))
        .collect();
    segs.sort_by_key(|f| (codex::segment_time(&std::fs::read(f).unwrap()), stem(f)));
    segs
}

fn convert(agent: &str, p: &Path) -> Vec<Conversion> {
    let bytes = std::fs::read(p).unwrap();
    let dir = p.parent().unwrap();
    if agent == "codex" {
        if let Some((thread, _)) = codex::segment_name(&stem(p)) {
            // The thread's rollout, beside it, is converted with its segments.
            if files(dir).iter().any(|f| stem(f).ends_with(thread)) {
                return Vec::new();
            }
        }
        let segs = codex_segments(dir, &stem(p)[stem(p).len().saturating_sub(36)..]);
        if !segs.is_empty() {
            let bytes_of: Vec<(Vec<u8>, String)> = segs
                .iter()
                .map(|f| (std::fs::read(f).unwrap(), stem(f)))
                .collect();
            let list: Vec<codex::Segment<'_>> = bytes_of
                .iter()
                .map(|(b, s)| codex::Segment { bytes: b, stem: s })
                .collect();
            return vec![codex::convert_thread(&bytes, &stem(p), None, &list)];
        }
    }
    match agent {
        "claude" => claude::convert(&bytes, &stem(p)),
        _ => {
            // A fork that continues from its parent's first lines: the parent's rollout,
            // found beside it by id.
            let parent = codex::fork_parent(&bytes).and_then(|(id, n)| {
                n?;
                let dir = p.parent().unwrap();
                files(dir).into_iter().find(|f| stem(f).ends_with(&id))
            });
            let pb = parent.map(|f| std::fs::read(f).unwrap());
            vec![codex::convert_fork(&bytes, &stem(p), pb.as_deref())]
        }
    }
}

struct Imported {
    source: PathBuf,
    agent: &'static str,
    conv: Conversion,
    path: PathBuf,
}

/// Imports every fixture of both agents into `dir`.
fn import_all(dir: &Path) -> Vec<Imported> {
    let mut out = Vec::new();
    for (agent, folder) in [
        ("claude", "claude"),
        ("claude", "claude-recorded"),
        ("claude", "claude-attachments"),
        ("claude", "claude-inline"),
        ("claude", "claude-forks"),
        ("codex", "codex"),
        ("codex", "codex-recorded"),
        ("codex", "codex-revert"),
        ("opencode", "opencode-recorded"),
        ("opencode", "opencode-storage"),
    ] {
        if agent == "opencode" {
            out.extend(import_opencode(folder, &dir.join(folder)));
            continue;
        }
        let mut by_source: HashMap<String, PathBuf> = HashMap::new();
        let mut later = Vec::new();
        for f in files(&fixtures().join(folder)) {
            for conv in convert(agent, &f) {
                if conv.lines.is_empty() {
                    continue;
                }
                if conv.parent_source.is_some() {
                    later.push((f.clone(), conv));
                    continue;
                }
                let o = write(&conv, dir, None, false).unwrap();
                assert_eq!(o.status, Status::Created, "{}", f.display());
                by_source.insert(conv.source_session_id.clone(), o.path.clone());
                out.push(Imported {
                    source: f.clone(),
                    agent,
                    conv,
                    path: o.path,
                });
            }
        }
        for (f, conv) in later {
            let parent = by_source
                .get(conv.parent_source.as_ref().unwrap())
                .unwrap_or_else(|| panic!("{}: parent not imported", f.display()))
                .to_string_lossy()
                .into_owned();
            let o = write(&conv, dir, Some(&parent), false).unwrap();
            out.push(Imported {
                source: f,
                agent,
                conv,
                path: o.path,
            });
        }
    }
    out
}

/// The sessions of an OpenCode fixture (a database, or a `storage/` tree), each written
/// into `dir` (a subagent with its parent's path; a fork without one: linking forks is the
/// batch's, tested in `opencode_forks_and_subagents_are_linked`).
fn import_opencode(folder: &str, dir: &Path) -> Vec<Imported> {
    let mut sources = Vec::new();
    opencode::collect(&fixtures().join(folder), &mut sources).unwrap();
    sources.sort();
    let mut convs = Vec::new();
    for f in sources {
        for conv in opencode::convert_path(&f).unwrap() {
            convs.push((f.clone(), conv));
        }
    }
    // Parents before the children that name them.
    convs.sort_by_key(|(_, c)| c.parent_source.is_some());
    let mut by_source: HashMap<String, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for (f, conv) in convs {
        let parent = conv.parent_source.as_ref().map(|p| {
            by_source
                .get(p)
                .unwrap_or_else(|| panic!("{}: parent not imported", f.display()))
                .to_string_lossy()
                .into_owned()
        });
        let o = write(&conv, dir, parent.as_deref(), false).unwrap();
        assert_eq!(o.status, Status::Created, "{}", f.display());
        by_source.insert(conv.source_session_id.clone(), o.path.clone());
        out.push(Imported {
            source: f,
            agent: "opencode",
            conv,
            path: o.path,
        });
    }
    out
}

fn ours(raw: Raw<'_>) -> Value {
    match raw.kind() {
        Kind::Null => Value::Null,
        Kind::True => Value::Bool(true),
        Kind::False => Value::Bool(false),
        Kind::Number => json!(raw.as_f64().unwrap()),
        Kind::String => Value::String(raw.as_str().unwrap().into_owned()),
        Kind::Array => Value::Array(raw.elements().into_iter().map(ours).collect()),
        Kind::Object => Value::Object(
            raw.members()
                .into_iter()
                .map(|(k, v)| (k.into_owned(), ours(v)))
                .collect(),
        ),
    }
}

fn our_context(path: &Path) -> Value {
    let l = sessiontree::load(path).unwrap();
    let leaf = l.tree.leaf_id().map_or(LeafArg::Null, LeafArg::Id);
    let ctx = build_context(&l.tree, leaf);
    ours(Raw::parse(ctx.to_json().as_bytes()).unwrap())
}

fn texts(c: &Value) -> Vec<Value> {
    match c {
        Value::String(s) => vec![json!(["user", s])],
        Value::Array(a) => a
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => Some(json!(["user", b["text"]])),
                Some("image") => Some(json!(["image", b["mimeType"]])),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

/// A system message's text, or any content's (a string, or text blocks joined by "\n").
fn system_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The conversation a Pi context sends, as comparable events.
fn pi_events(ctx: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in ctx["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "custom" if m["customType"].as_str().unwrap().starts_with("codex:") => {
                for t in texts(&m["content"]) {
                    out.push(json!(["context", t[1]]));
                }
            }
            "user" | "custom" => out.extend(texts(&m["content"])),
            // Claude Code's attachments, as it sends them.
            "system" if m.get("claudeCode").is_some() => {
                out.push(json!(["system", system_text(&m["content"])]))
            }
            // The base instructions (what Codex records; it adapts them to the tools at run time).
            "system" => out.push(json!(["instructions"])),
            "compactionSummary" => out.push(json!(["summary", m["summary"]])),
            "assistant" => {
                out.push(json!([
                    "response",
                    m.get("responseId").cloned().unwrap_or(json!(""))
                ]));
                if m["stopReason"] == "error" {
                    out.push(json!(["error", m["errorMessage"]]));
                    continue;
                }
                for b in m["content"].as_array().unwrap() {
                    match b["type"].as_str() {
                        Some("text") => out.push(json!(["assistant", b["text"]])),
                        Some("toolCall") => {
                            out.push(json!(["call", b["id"], b["name"], b["arguments"]]))
                        }
                        _ => {}
                    }
                }
            }
            "toolResult" => out.push(sessiontree_testkit::json::tool_result_event(m)),
            r => panic!("unexpected role {r}"),
        }
    }
    out
}

fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// Claude Code's rule: the newest message is the leaf; walk `parentUuid` to the root (a
/// compaction boundary is a root); send user and assistant lines, the compact summary
/// included, transcript-only lines left out.
/// `side`: the subagent's lines of a file (all of an `agent-*` file, the `isSidechain`
/// ones of a main file), else the main conversation's.
fn claude_events(p: &Path, side: bool) -> Vec<Value> {
    let agent_file = stem(p).starts_with("agent-");
    let lines: Vec<Value> = read_jsonl(p)
        .into_iter()
        .filter(|l| agent_file || (l["isSidechain"] == true) == side)
        .collect();
    let by_uuid: HashMap<&str, &Value> = lines
        .iter()
        .filter_map(|l| Some((l["uuid"].as_str()?, l)))
        .collect();
    let leaf = lines
        .iter()
        .rev()
        .find(|l| l["uuid"].is_string() && matches!(l["type"].as_str(), Some("user" | "assistant")))
        .unwrap();
    let mut path = vec![leaf];
    while let Some(p) = path.last().unwrap()["parentUuid"].as_str() {
        path.push(by_uuid[p]);
    }
    path.reverse();
    // A compaction with a preserved segment: the segment (head..tail, before the boundary)
    // is sent right after the summary.
    let seg = &path[0]["compactMetadata"]["preservedSegment"];
    if let (Some(head), Some(tail), Some(anchor)) = (
        seg["headUuid"].as_str(),
        seg["tailUuid"].as_str(),
        seg["anchorUuid"].as_str(),
    ) {
        if !path.iter().any(|l| l["uuid"] == tail) {
            let mut part = vec![by_uuid[tail]];
            while part.last().unwrap()["uuid"] != head {
                part.push(by_uuid[part.last().unwrap()["parentUuid"].as_str().unwrap()]);
            }
            part.reverse();
            let at = path.iter().position(|l| l["uuid"] == anchor).unwrap() + 1;
            path.splice(at..at, part);
        }
    }
    let mut out = Vec::new();
    let mut last_mid = None;
    for l in path {
        let msg = &l["message"];
        match l["type"].as_str().unwrap() {
            "user" => {
                last_mid = None;
                if l["isCompactSummary"] == true {
                    out.push(json!(["summary", msg["content"]]));
                    continue;
                }
                if l["isVisibleInTranscriptOnly"] == true {
                    continue;
                }
                match &msg["content"] {
                    Value::String(s) => out.push(json!(["user", s])),
                    Value::Array(a) => {
                        for b in a {
                            match b["type"].as_str().unwrap() {
                                "tool_result" => out.push(claude_result(b)),
                                "text" => out.push(json!(["user", b["text"]])),
                                "image" => out.push(json!(["image", b["source"]["media_type"]])),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            "assistant" => {
                let mid = msg["id"].clone();
                if last_mid.as_ref() != Some(&mid) {
                    out.push(json!(["response", mid]));
                    last_mid = Some(mid);
                }
                if l["isApiErrorMessage"] == true {
                    let t: Vec<&str> = sessiontree_testkit::json::present(&msg["content"], "text");
                    out.push(json!(["error", t.join("\n")]));
                    continue;
                }
                for b in msg["content"].as_array().unwrap() {
                    match b["type"].as_str().unwrap() {
                        "text" => out.push(json!(["assistant", b["text"]])),
                        "tool_use" => out.push(json!(["call", b["id"], b["name"], b["input"]])),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn codex_text(item: &Value) -> String {
    item["content"].as_array().map_or(String::new(), |a| {
        a.iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn injected(t: &str) -> bool {
    [
        "<environment_context>",
        "# AGENTS.md instructions",
        "<user_instructions>",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// Codex's rule: replay the rollout into a history; a compaction replaces it, a rollback
/// drops the newest user turns; the base instructions go first.
/// The lines of a Codex thread's history as its newest file holds it: a segment a revert
/// wrote continues from the lines of the file its `history_base` names before
/// `end_byte_offset` (that file's history, when it is a segment too).
fn codex_lineage(dir: &Path, file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let base = &first["payload"]["history_base"];
    if base.is_null() {
        return read_jsonl(file);
    }
    let id = base["thread_id"].as_str().unwrap();
    let end = base["end_byte_offset"].as_u64().unwrap() as usize;
    let base_file = files(dir)
        .into_iter()
        .find(|f| stem(f).ends_with(id))
        .unwrap();
    let base_text = std::fs::read_to_string(&base_file).unwrap();
    let own = base_text[..end].lines().count();
    let mut lines = codex_lineage(dir, &base_file);
    // The base file's lines come last in its lineage.
    let total = base_text.lines().count();
    lines.truncate(lines.len() - (total - own));
    // The segment's own session_meta repeats the thread's.
    lines.extend(read_jsonl(file).into_iter().skip(1));
    lines
}

fn codex_events(p: &Path) -> Vec<Value> {
    let mut lines = read_jsonl(p);
    // A thread whose turns were reverted: its history is its newest segment's.
    let dir = p.parent().unwrap();
    if let Some(newest) = codex_segments(dir, &stem(p)[stem(p).len().saturating_sub(36)..]).last() {
        lines = codex_lineage(dir, newest);
    }
    let mut out = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    let mut first_meta = true;
    // A fork that continues from its parent's first lines replays those first.
    if let Some(n) = lines[0]["payload"]["forked_from_ordinal_exclusive"].as_u64() {
        let pid = lines[0]["payload"]["forked_from_id"]
            .as_str()
            .unwrap()
            .to_string();
        let parent = files(p.parent().unwrap())
            .into_iter()
            .find(|f| stem(f).ends_with(&pid))
            .unwrap();
        let mut all = vec![lines[0].clone()];
        all.extend(read_jsonl(&parent).into_iter().take(n as usize));
        all.extend(lines.into_iter().skip(1));
        lines = all;
    }
    for l in &lines {
        let pl = &l["payload"];
        match l["type"].as_str().unwrap() {
            "session_meta" if first_meta => {
                first_meta = false;
                if pl["base_instructions"]["text"].is_string() {
                    out.push(json!(["instructions"]));
                }
            }
            "response_item" => items.push(pl.clone()),
            "compacted" => {
                let s = pl["message"].as_str().unwrap();
                let mut next = vec![json!({"type": "summary", "text": s})];
                for it in pl["replacement_history"].as_array().into_iter().flatten() {
                    // A remote compaction has no readable summary (an opaque item instead).
                    if s.is_empty() || !codex_text(it).ends_with(s) {
                        next.push(it.clone());
                    }
                }
                items = next;
            }
            "event_msg" if pl["type"] == "thread_rolled_back" => {
                let n = pl["num_turns"].as_u64().unwrap() as usize;
                let users: Vec<usize> = items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| {
                        it["type"] == "message"
                            && it["role"] == "user"
                            && !injected(&codex_text(it))
                    })
                    .map(|(i, _)| i)
                    .collect();
                items.truncate(users[users.len() - n]);
            }
            _ => {}
        }
    }
    let mut in_response = false;
    for it in items {
        let assistant_side = matches!(
            it["type"].as_str(),
            Some("reasoning" | "function_call" | "custom_tool_call")
        ) || (it["type"] == "message" && it["role"] == "assistant");
        if assistant_side && !in_response {
            out.push(json!(["response", ""]));
        }
        in_response = assistant_side;
        match it["type"].as_str().unwrap() {
            "summary" => out.push(json!(["summary", it["text"]])),
            "message" => {
                let context = it["role"] == "developer" || injected(&codex_text(&it));
                for b in it["content"].as_array().unwrap() {
                    match b["type"].as_str().unwrap() {
                        "output_text" => out.push(json!(["assistant", b["text"]])),
                        "input_text" if context => out.push(json!(["context", b["text"]])),
                        "input_text" => out.push(json!(["user", b["text"]])),
                        "input_image" => {
                            let mime = b["image_url"]
                                .as_str()
                                .unwrap()
                                .trim_start_matches("data:")
                                .split(';')
                                .next()
                                .unwrap()
                                .to_string();
                            out.push(json!(["image", mime]))
                        }
                        _ => {}
                    }
                }
            }
            "function_call" => {
                let args: Value = serde_json::from_str(it["arguments"].as_str().unwrap()).unwrap();
                out.push(json!(["call", it["call_id"], it["name"], args]))
            }
            "custom_tool_call" => {
                out.push(json!(["call", it["call_id"], it["name"], {"input": it["input"]}]))
            }
            "function_call_output" | "custom_tool_call_output" => {
                out.push(json!(["result", it["call_id"], it["output"], false]))
            }
            _ => {}
        }
    }
    out
}

#[test]
fn imported_sessions_are_the_conversation_the_agent_would_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_all(tmp.path());
    assert_eq!(
        all.iter().filter(|i| i.agent == "claude").count(),
        16,
        "5 sessions, 1 subagent; recorded: 2 sessions, 1 subagent; attachments: 1 session; \
         inline: 1 session, 1 subagent; forks: 1 session, 3 forks"
    );
    assert_eq!(
        all.iter().filter(|i| i.agent == "codex").count(),
        9,
        "4 rollouts; recorded: 3 sessions, 1 fork; revert: 1 thread of a rollout and 2 segments"
    );
    assert_eq!(
        all.iter().filter(|i| i.agent == "opencode").count(),
        8,
        "recorded: 3 sessions, 1 subagent; the same in a storage tree"
    );
    for i in &all {
        common::check_loads_clean(&i.path, &i.conv);
        let mut got = pi_events(&our_context(&i.path));
        let expected = match i.agent {
            "claude" => claude_events(&i.source, i.conv.kind == "sidechain"),
            "opencode" => {
                // The conversation OpenCode sent on its last request: the context without
                // the answer to it (the response the scripted model gave last).
                let last = got.iter().rposition(|e| e[0] == "response").unwrap();
                got.truncate(last);
                opencode_last_request(&i.conv.session_id, &i.path)
            }
            _ => codex_events(&i.source),
        };
        // How attachments are rendered and placed is checked against the requests Claude
        // Code sent (recorded_claude_code_sessions_hold_what_claude_code_sent_on_resume);
        // this model of the resume rule leaves them out.
        got.retain(|e| e[0] != "system");
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap(),
            "{}",
            i.source.display()
        );
    }
}

/// What OpenCode sent for the turns of its sessions (`requests.json` of the recording:
/// `{session, messages}`, the system prompt left out), in order.
fn opencode_requests() -> Vec<(String, Value)> {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("opencode-recorded/requests.json")).unwrap(),
    )
    .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["session"].as_str().unwrap().to_string(),
                r["messages"].clone(),
            )
        })
        .collect()
}

/// The compaction summaries of a Pi file.
fn summaries(path: &Path) -> Vec<String> {
    read_jsonl(path)
        .iter()
        .filter(|e| e["type"] == "compaction")
        .map(|e| e["summary"].as_str().unwrap().to_string())
        .collect()
}

/// An OpenCode request's messages as [`pi_events`] gives a context (`thinking` also
/// `reasoning_content` as ["thinking", text] when `thinking` is set). OpenCode sends a
/// compaction as the user's "What did we do so far?" answered by the summary; Pi sends one
/// summary message: the pair is one ["summary", text] here.
fn opencode_request_events(messages: &Value, summaries: &[String], thinking: bool) -> Vec<Value> {
    let ms = messages.as_array().unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < ms.len() {
        let m = &ms[i];
        let text = |m: &Value| system_text(&m["content"]);
        match m["role"].as_str().unwrap() {
            "user" => {
                let next = ms.get(i + 1);
                if let Some(n) = next.filter(|n| n["role"] == "assistant") {
                    if summaries.contains(&text(n)) {
                        out.push(json!(["summary", text(n)]));
                        i += 2;
                        continue;
                    }
                }
                out.push(json!(["user", text(m)]));
            }
            "assistant" => {
                out.push(json!(["response", ""]));
                if thinking {
                    if let Some(r) = m["reasoning_content"].as_str() {
                        out.push(json!(["thinking", r]));
                    }
                }
                let t = text(m);
                if !t.is_empty() {
                    out.push(json!(["assistant", t]));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let args: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                    out.push(json!(["call", c["id"], c["function"]["name"], args]));
                }
            }
            "tool" => out.push(json!(["result", m["tool_call_id"], text(m), false])),
            r => panic!("unexpected role {r} in an OpenCode request"),
        }
        i += 1;
    }
    out
}

/// The text of the user message a session's pending revert takes back, from the JSON tree
/// of the recording (`storage/session/*/<id>.json` names it, its part holds the text).
fn opencode_reverted_text(session: &str) -> Option<String> {
    let storage = fixtures().join("opencode-storage/storage");
    for project in std::fs::read_dir(storage.join("session")).unwrap() {
        let f = project.unwrap().path().join(format!("{session}.json"));
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let v: Value = serde_json::from_str(&text).unwrap();
        let mid = v["revert"]["messageID"].as_str()?.to_string();
        let mut out = Vec::new();
        for p in std::fs::read_dir(storage.join("part").join(&mid)).unwrap() {
            let p: Value =
                serde_json::from_str(&std::fs::read_to_string(p.unwrap().path()).unwrap()).unwrap();
            if let Some(t) = p["text"].as_str() {
                out.push(t.to_string());
            }
        }
        return Some(out.join("\n"));
    }
    None
}

/// What OpenCode would send next for a session, as events: the last request it sent for
/// it (for a session with a revert pending, the last one before the reverted prompt: the
/// later ones are the branch the revert takes back).
fn opencode_last_request(session: &str, path: &Path) -> Vec<Value> {
    let reverted = opencode_reverted_text(session);
    let sent_reverted = |m: &Value| {
        reverted.as_ref().is_some_and(|t| {
            m.as_array()
                .unwrap()
                .iter()
                .any(|x| x["role"] == "user" && x["content"].as_str() == Some(t))
        })
    };
    let (_, messages) = opencode_requests()
        .into_iter()
        .rev()
        .find(|(s, m)| s == session && !sent_reverted(m))
        .unwrap_or_else(|| panic!("no request recorded for {session}"));
    opencode_request_events(&messages, &summaries(path), false)
}

/// Every request OpenCode sent for a session is the context of an entry of its import
/// (reasoning included): the turns a revert deleted from OpenCode's tables (recovered from
/// its event log) too, and the conversation after a compaction.
#[test]
fn every_request_opencode_sent_is_a_context_of_its_import() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_opencode("opencode-recorded", tmp.path());
    let mut checked = 0;
    for (session, messages) in opencode_requests() {
        let i = all
            .iter()
            .find(|i| i.conv.session_id == session)
            .unwrap_or_else(|| panic!("{session} not imported"));
        let want = opencode_request_events(&messages, &summaries(&i.path), true);
        let l = sessiontree::load(&i.path).unwrap();
        let found = l.tree.entries().iter().filter_map(|e| e.id()).any(|id| {
            let ctx = build_context(&l.tree, LeafArg::Id(id));
            let ctx = ours(Raw::parse(ctx.to_json().as_bytes()).unwrap());
            opencode_context_events(&ctx) == want
        });
        assert!(
            found,
            "{session}: no entry has the context OpenCode sent:\n{}",
            serde_json::to_string_pretty(&want).unwrap()
        );
        checked += 1;
    }
    assert_eq!(checked, 13);
}

/// [`pi_events`] with the assistant's thinking as ["thinking", text].
fn opencode_context_events(ctx: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in ctx["messages"].as_array().unwrap() {
        let one = json!({"messages": [m]});
        let mut e = pi_events(&one);
        if m["role"] == "assistant" {
            let thinking: Vec<Value> = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["type"] == "thinking")
                .map(|b| json!(["thinking", b["thinking"]]))
                .collect();
            e.splice(1..1, thinking);
        }
        out.extend(e);
    }
    out
}

fn find<'a>(all: &'a [Imported], name: &str) -> &'a Imported {
    all.iter()
        .find(|i| i.source.to_string_lossy().contains(name))
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

#[test]
fn what_each_kind_of_line_becomes() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_all(tmp.path());
    let basic = find(&all, "5d0f7c1e");
    // Two malformed lines are reported by line number; the rest imports.
    let lines: Vec<usize> = basic.conv.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![19, 20]);
    assert_eq!(basic.conv.skipped.get("progress"), Some(&1));
    assert_eq!(basic.conv.skipped.get("queue-operation"), Some(&1));
    assert_eq!(basic.conv.skipped.get("file-history-snapshot"), Some(&1));
    assert_eq!(basic.conv.name.as_deref(), Some("Coupon total fix in cart"));
    let l = sessiontree::load(&basic.path).unwrap();
    assert_eq!(l.tree.name().as_deref(), Some("Coupon total fix in cart"));
    let ctx = our_context(&basic.path);
    let msgs = ctx["messages"].as_array().unwrap();
    // Four lines of msg_01AAA are one message: thinking with its signature, text, two calls.
    let first = msgs
        .iter()
        .find(|m| m["responseId"] == "msg_01AAA")
        .unwrap();
    let kinds: Vec<&str> = sessiontree_testkit::json::strs(&first["content"], "type");
    assert_eq!(kinds, ["thinking", "text", "toolCall", "toolCall"]);
    assert_eq!(
        first["content"][0]["thinkingSignature"],
        "EqQBCkYIBxgCKkD0sig"
    );
    assert_eq!(first["usage"]["output"], 187.0, "usage of the last line");
    assert_eq!(first["usage"]["cacheRead"], 9000.0);
    assert_eq!(first["stopReason"], "toolUse");
    let redacted = msgs
        .iter()
        .find(|m| m["responseId"] == "msg_01BBB")
        .unwrap();
    assert_eq!(redacted["content"][0]["redacted"], true);
    assert_eq!(
        redacted["content"][0]["thinkingSignature"],
        "RXJyb3IgZGF0YSBzZWFsZWQ="
    );
    // Meta lines reach the model but are not shown; results keep Claude Code's structured result.
    let meta = msgs.iter().find(|m| m["role"] == "custom").unwrap();
    assert_eq!(meta["display"], false);
    let edit = msgs
        .iter()
        .find(|m| m["toolCallId"] == "toolu_01Edit")
        .unwrap();
    assert_eq!(edit["toolName"], "Edit");
    assert!(edit["details"]["toolUseResult"]["structuredPatch"].is_array());
    let bash = msgs
        .iter()
        .find(|m| m["toolCallId"] == "toolu_01Bash")
        .unwrap();
    assert_eq!(bash["isError"], true);
    // System lines stay in the tree as custom entries, outside the context.
    let customs: Vec<String> = entries_where(&l, "type", "custom")
        .map(|e| e.id().unwrap().to_string())
        .collect();
    assert_eq!(customs.len(), 2);

    // Rewinds: every branch kept, the newest one is the leaf's.
    let rewind = find(&all, "8e2b6c3d");
    let mut l = sessiontree::load(&rewind.path).unwrap();
    let first_answer = rewind.conv.lines[1].id.clone();
    assert_eq!(l.tree.get_children(&first_answer).len(), 2);
    assert_eq!(
        l.tree.name().as_deref(),
        Some("sorting notes"),
        "the title, not the summary"
    );

    // Compaction: a Pi compaction that keeps nothing before it, the summary from Claude Code.
    let compact = find(&all, "1f4d2a9b");
    let ctx = our_context(&compact.path);
    assert_eq!(ctx["messages"][0]["role"], "compactionSummary");
    assert_eq!(ctx["messages"][0]["tokensBefore"], 48213.0);
    let l = sessiontree::load(&compact.path).unwrap();
    let c = entries_where(&l, "type", "compaction").next().unwrap();
    // Its parent is the message before the boundary: the tree stays one tree.
    assert!(matches!(&c.parent, sessiontree::Parent::Id(p) if **p == *compact.conv.lines[5].id));

    // The subagent is its own session, linked to its parent's file.
    let side = all.iter().find(|i| i.conv.kind == "sidechain").unwrap();
    let main = find(&all, "6a3e8d1c-9b2f-4e5a-8c7d-1b0a9f8e7d04.jsonl");
    let l = sessiontree::load(&side.path).unwrap();
    assert_eq!(
        l.tree.header().parent_session().as_deref(),
        Some(main.path.to_str().unwrap())
    );

    // A resumed copy shares the copied lines' ids with the original.
    let resumed = find(&all, "2c9a7e4f");
    for id in rewind.conv.lines.iter().take(2).map(|l| &l.id) {
        assert!(resumed.conv.lines.iter().any(|l| &l.id == id));
    }

    // Codex: model and effort changes, usage from token counts, a fork linked to its parent.
    let cx = find(&all, "6a01");
    let l = sessiontree::load(&cx.path).unwrap();
    let types: Vec<String> = l
        .tree
        .entries()
        .iter()
        .map(|e| e.str_field("type").unwrap().into_owned())
        .collect();
    assert_eq!(types.iter().filter(|t| *t == "model_change").count(), 2);
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "thinking_level_change")
            .count(),
        2
    );
    assert_eq!(cx.conv.problems.len(), 1);
    let ctx = our_context(&cx.path);
    assert_eq!(ctx["model"]["modelId"], "gpt-5");
    assert_eq!(ctx["thinkingLevel"], "high");
    let a = ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(a["usage"]["input"], 1104.0);
    assert_eq!(a["usage"]["cacheRead"], 4096.0);
    let fork = find(&all, "6a04");
    let parent = find(&all, "6a02");
    let l = sessiontree::load(&fork.path).unwrap();
    assert_eq!(
        l.tree.header().parent_session().as_deref(),
        Some(parent.path.to_str().unwrap())
    );
}

#[test]
fn importing_again_gives_the_same_bytes_and_adds_nothing() {
    let (a, b, first, second) = common::import_twice(import_all);
    for (x, y) in first.iter().zip(&second) {
        assert_eq!(x.path.file_name(), y.path.file_name());
        let (bx, by) = (
            std::fs::read(&x.path).unwrap(),
            std::fs::read(&y.path).unwrap(),
        );
        // Same bytes, apart from the parentSession path (the folder differs).
        let strip = |v: Vec<u8>, dir: &Path| {
            String::from_utf8(v)
                .unwrap()
                .replace(dir.to_str().unwrap(), "DIR")
        };
        assert_eq!(
            strip(bx, a.path()),
            strip(by, b.path()),
            "{}",
            x.source.display()
        );
    }
    for i in &first {
        common::check_writing_again_adds_nothing(&i.path, &i.conv, i.path.parent().unwrap());
    }
}

#[test]
fn a_grown_source_is_completed_by_appending() {
    for (agent, name, cut) in [
        (
            "claude",
            "claude/8e2b6c3d-7a19-4f0e-b1d4-6c2f9e1a5b02.jsonl",
            6,
        ),
        (
            "claude",
            "claude/5d0f7c1e-2b0a-4c61-9f51-0d6a7e3b9a01.jsonl",
            9,
        ),
        (
            "codex",
            "codex/rollout-2025-10-03T15-00-00-0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a02.jsonl",
            7,
        ),
    ] {
        let src = fixtures().join(name);
        let text = std::fs::read_to_string(&src).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let part = tmp.path().join("src").join(src.file_name().unwrap());
        std::fs::create_dir_all(part.parent().unwrap()).unwrap();
        let head: String = text.lines().take(cut).map(|l| format!("{l}\n")).collect();
        // ... and a torn half line, as an agent in the middle of a write leaves it.
        let torn = &text.lines().nth(cut).unwrap()[..20];
        std::fs::write(&part, format!("{head}{torn}")).unwrap();
        let out = tmp.path().join("out");
        let c1 = convert(agent, &part).remove(0);
        assert!(
            c1.problems.is_empty(),
            "a torn last line is not a problem yet"
        );
        let o1 = write(&c1, &out, None, false).unwrap();
        assert_eq!(o1.status, Status::Created);
        std::fs::write(&part, &text).unwrap();
        let c2 = convert(agent, &part).remove(0);
        let o2 = write(&c2, &out, None, false).unwrap();
        assert_eq!(o2.status, Status::Appended, "{name}");
        assert_eq!(o2.path, o1.path);
        let grown = std::fs::read_to_string(&o2.path).unwrap();
        assert!(
            grown.starts_with(&String::from_utf8(c1.to_bytes(None)).unwrap()),
            "only appended"
        );
        // The leaf is the source's active leaf, and the context is a fresh import's.
        let fresh = tmp.path().join("fresh");
        let o3 = write(&c2, &fresh, None, false).unwrap();
        let mut a = our_context(&o2.path);
        let mut b = our_context(&o3.path);
        assert_eq!(pi_events(&a), pi_events(&b), "{name}");
        a["messages"] = json!(null);
        b["messages"] = json!(null);
        assert_eq!(a, b);
        assert_eq!(
            write(&c2, &out, None, false).unwrap().status,
            Status::Unchanged
        );
    }
}

#[test]
fn pi_opens_every_import_and_builds_the_same_context() {
    let test = "pi_opens_every_import_and_builds_the_same_context";
    let Some((_tmp, all, results)) = common::pi_opens_all(test, import_all, |i| {
        (i.source.as_path(), i.path.as_path(), &i.conv)
    }) else {
        return;
    };
    for (i, r) in all.iter().zip(&results) {
        let file = i.source.display();
        assert_eq!(
            r["entries"].as_array().unwrap().len(),
            i.conv.lines.len(),
            "{file}"
        );
        assert_eq!(
            r["name"],
            json!(sessiontree::load(&i.path).unwrap().tree.name()),
            "{file}"
        );
        let theirs = r["contexts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == "default")
            .unwrap();
        assert_eq!(
            norm(&theirs["context"]),
            norm(&our_context(&i.path)),
            "{file}: Pi's context differs"
        );
        // And every other leaf (each branch) too.
        for c in r["contexts"].as_array().unwrap() {
            if let (Some("id"), Some(leaf)) = (c["kind"].as_str(), c["leaf"].as_str()) {
                let l = sessiontree::load(&i.path).unwrap();
                let ctx = build_context(&l.tree, LeafArg::Id(leaf));
                let o = ours(Raw::parse(ctx.to_json().as_bytes()).unwrap());
                assert_eq!(norm(&c["context"]), norm(&o), "{file}: context at {leaf}");
            }
        }
    }
}

/// The conversation in a request Claude Code sent to the model, as events. Its `system`
/// messages (the attachments it rendered) are events with their text; the
/// `<system-reminder>` text Claude Code puts first in every request (the date and
/// CLAUDE.md context, made anew for each request, never written to the transcript) is left
/// out.
fn request_events(messages: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages.as_array().unwrap() {
        let role = m["role"].as_str().unwrap();
        if role == "assistant" {
            out.push(json!(["response", ""]));
        }
        if role == "system" {
            out.push(json!(["system", system_text(&m["content"])]));
            continue;
        }
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => vec![],
        };
        let last = blocks.len().saturating_sub(1);
        for (i, b) in blocks.into_iter().enumerate() {
            match (role, b["type"].as_str().unwrap()) {
                ("user", "text") => {
                    let mut t = b["text"].as_str().unwrap();
                    // Claude Code sends consecutive user lines as one message, each text but
                    // the last ended by "\n"; Pi sends them as they are stored.
                    if i < last {
                        t = t.strip_suffix('\n').unwrap_or(t);
                    }
                    if t.starts_with("<system-reminder>") {
                    } else if t
                        .starts_with("This session is being continued from a previous conversation")
                    {
                        out.push(json!(["summary", t]));
                    } else {
                        out.push(json!(["user", t]));
                    }
                }
                ("user", "image") => out.push(json!(["image", b["source"]["media_type"]])),
                ("user", "tool_result") => out.push(claude_result(&b)),
                ("assistant", "text") => out.push(json!(["assistant", b["text"]])),
                ("assistant", "tool_use") => {
                    out.push(json!(["call", b["id"], b["name"], b["input"]]))
                }
                _ => {}
            }
        }
    }
    out
}

/// Pi's Anthropic conversion holds a `system` message back until the next assistant
/// message, so neighbours arrive together (Claude Code sends them as one message, texts
/// joined by a blank line): the events of a Pi context in the order they reach the model.
fn as_sent(events: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut held: Vec<String> = Vec::new();
    for e in events {
        if e[0] == "system" {
            held.push(e[1].as_str().unwrap().to_string());
            continue;
        }
        if e[0] == "response" && !held.is_empty() {
            out.push(json!(["system", held.join("\n\n")]));
            held.clear();
        }
        out.push(e);
    }
    if !held.is_empty() {
        out.push(json!(["system", held.join("\n\n")]));
    }
    out
}

/// How each attachment Claude Code sent begins (a system message may join several).
fn attachment_starts(t: &str) -> bool {
    let hook = t.split_once(' ').is_some_and(|(name, rest)| {
        name.chars().all(|c| c.is_ascii_alphanumeric() || c == ':')
            && (rest.starts_with("hook success: ") || rest.starts_with("hook additional context: "))
    });
    hook || [
        "Available agent types for the Agent tool:",
        "The following skills are available for use with the Skill tool:",
        "Called the Read tool with the following input:",
        "## Exited Plan Mode",
        PLAN_MODE,
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// The start of the plan mode reminder: Claude Code writes it from its own instructions,
/// which the transcript's `plan_mode` line does not hold, so the import cannot send it.
const PLAN_MODE: &str = "Plan mode is active.";

/// A system text Claude Code sent, less the attachments the import cannot reproduce (the
/// plan mode reminder): split where a blank line is followed by the start of an attachment.
fn reproducible(text: &str) -> String {
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut from = 0;
    while let Some(p) = text[from..].find("\n\n").map(|p| p + from) {
        if attachment_starts(&text[p + 2..]) {
            pieces.push(&text[start..p]);
            start = p + 2;
        }
        from = p + 2;
    }
    pieces.push(&text[start..]);
    pieces.retain(|p| !p.starts_with(PLAN_MODE));
    pieces.join("\n\n")
}

/// Transcripts written by Claude Code itself (2.1.197, driven against a scripted model on
/// 127.0.0.1: a tool call, a resume, a subagent, `/compact` with a preserved segment, a
/// `--fork-session` copy; and in `claude-attachments` hooks that add context at session
/// start, on each prompt and after tool calls, a file named with @, plan mode) and the
/// requests it sent to the model when it resumed them. The import of the transcript as it
/// was just before each resume must hold the conversation of that request: same user
/// texts, assistant texts, tool calls with ids and arguments, results, responses,
/// compaction summary and the attachments' system texts, in order.
///
/// What Pi's format cannot say, stated here: Claude Code sends neighbouring attachments as
/// one system message (texts joined by a blank line), Pi keeps one system message per
/// attachment line and its Anthropic conversion sends them together, held back to the
/// same place (`as_sent`); and the plan mode reminder, which Claude Code writes from its
/// own instructions (the line holds only the plan file's path), is not in the import's
/// context (`reproducible`).
#[test]
fn recorded_claude_code_sessions_hold_what_claude_code_sent_on_resume() {
    let mut checked_system = 0;
    for folder in ["claude-recorded", "claude-attachments", "claude-forks"] {
        checked_system += recorded_claude_resumes(folder);
    }
    assert!(
        checked_system >= 8,
        "system messages compared: {checked_system}"
    );
}

/// One recorded resume: the import of the transcript as it was just before the prompt that
/// resumed it, and the conversation Claude Code sent for that prompt (as events, less the
/// prompt itself and its own attachments, which come after it in the transcript).
struct Resume {
    label: String,
    model: String,
    imported: PathBuf,
    sent: Vec<Value>,
}

fn recorded_resumes(folder: &str, tmp: &Path) -> Vec<Resume> {
    let dir = fixtures().join(folder);
    let requests = common::resume_requests(&dir);
    let mut out = Vec::new();
    for (n, r) in requests.iter().enumerate() {
        let name = r["transcript"].as_str().unwrap();
        let prompt = r["prompt"].as_str().unwrap();
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cut = lines
            .iter()
            .position(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["type"] == "user" && v["message"]["content"] == prompt
            })
            .unwrap_or_else(|| panic!("{name}: no prompt {prompt:?}"));
        let src = tmp.join(format!("{folder}-src{n}")).join(name);
        common::write_first_lines(&src, &lines, cut);
        let conv = convert("claude", &src).remove(0);
        assert!(conv.problems.is_empty(), "{:?}", conv.problems);
        let o = write(&conv, &tmp.join(format!("{folder}-out{n}")), None, false).unwrap();
        let mut sent: Vec<Value> = request_events(&r["messages"])
            .into_iter()
            .filter_map(|e| {
                if e[0] != "system" {
                    return Some(e);
                }
                let t = reproducible(e[1].as_str().unwrap());
                (!t.is_empty()).then(|| json!(["system", t]))
            })
            .collect();
        // The new prompt's own attachments (written after it) follow it.
        while sent.last().is_some_and(|e| e[0] == "system") {
            sent.pop();
        }
        assert_eq!(
            sent.pop(),
            Some(json!(["user", prompt])),
            "the request ends with the new prompt"
        );
        out.push(Resume {
            label: format!("{folder}/{name} before {prompt:?}"),
            model: r["model"].as_str().unwrap().to_string(),
            imported: o.path,
            sent,
        });
    }
    out
}

/// Checks one folder's resume requests; gives how many system messages it compared.
fn recorded_claude_resumes(folder: &str) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let mut systems = 0;
    for r in recorded_resumes(folder, tmp.path()) {
        let got: Vec<Value> = as_sent(pi_events(&our_context(&r.imported)))
            .into_iter()
            .map(|e| {
                if e[0] == "response" {
                    json!(["response", ""])
                } else {
                    e
                }
            })
            .collect();
        systems += r.sent.iter().filter(|e| e[0] == "system").count();
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&r.sent).unwrap(),
            "{}",
            r.label
        );
    }
    systems
}

/// The request Pi 1.6.0 itself builds when it resumes an import (its Anthropic provider,
/// for the model Claude Code used, taken before sending) holds what Claude Code sent on
/// the same resume: the same conversation, the attachments' system texts in the same
/// places. What differs, and how it is moved here before comparing (nothing is dropped
/// but the plan mode reminder the import cannot write, see `reproducible`):
///
/// * Pi sends the context's first message, when it is a system message (a session start
///   hook's output written before the first prompt), as the request's system prompt;
///   Claude Code sends it with the attachments after the first prompt;
/// * Pi sends neighbouring system messages one by one, Claude Code as one (texts joined by
///   a blank line);
/// * Pi frames a compaction summary in its own words (`<summary>` tags), Claude Code sends
///   the summary line's text as it is.
#[test]
fn pi_resuming_an_import_sends_what_claude_code_sent() {
    if !interop::available() {
        interop::say_skipped("pi_resuming_an_import_sends_what_claude_code_sent");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut resumes = recorded_resumes("claude-recorded", tmp.path());
    resumes.extend(recorded_resumes("claude-attachments", tmp.path()));
    resumes.extend(recorded_resumes("claude-forks", tmp.path()));
    let model = resumes[0].model.clone();
    assert!(resumes.iter().all(|r| r.model == model));
    let mut args = vec!["request.mjs".to_string(), "--model".into(), model];
    args.extend(
        resumes
            .iter()
            .map(|r| r.imported.to_string_lossy().into_owned()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out: Value = serde_json::from_str(&interop::node(&args)).unwrap();
    let out = out.as_array().unwrap();
    assert_eq!(out.len(), resumes.len());
    let (mut systems, mut heads) = (0, 0);
    for (r, pi) in resumes.iter().zip(out) {
        assert!(pi["error"].is_null(), "{}: {}", r.label, pi["error"]);
        assert_eq!(pi["supportsMidConvoSystemMessages"], true, "{}", r.label);
        let mut events = request_events(&pi["messages"]);
        if !pi["system"].is_null() {
            heads += 1;
            let head = system_text(&pi["system"]);
            // First of the attachments Claude Code holds back to its first response.
            let mut at = events
                .iter()
                .position(|e| e[0] == "response")
                .unwrap_or(events.len());
            while at > 0 && events[at - 1][0] == "system" {
                at -= 1;
            }
            events.insert(at, json!(["system", head]));
        }
        let mut got: Vec<Value> = Vec::new();
        for e in events {
            let joined = match (got.last_mut(), e[0].as_str()) {
                (Some(last), Some("system")) if last[0] == "system" => {
                    last[1] = json!(format!(
                        "{}\n\n{}",
                        last[1].as_str().unwrap(),
                        e[1].as_str().unwrap()
                    ));
                    true
                }
                _ => false,
            };
            if joined {
                continue;
            }
            match e[1].as_str().and_then(pi_summary) {
                Some(summary) if e[0] == "user" => got.push(json!(["summary", summary])),
                _ => got.push(e),
            }
        }
        systems += got.iter().filter(|e| e[0] == "system").count();
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&r.sent).unwrap(),
            "{}",
            r.label
        );
    }
    assert!(
        systems >= 8 && heads >= 1,
        "system messages {systems}, heads {heads}"
    );
}

/// The summary in Pi's framing of a compaction summary (a sentence, then the summary in
/// `<summary>` tags), or `None` for any other text.
fn pi_summary(t: &str) -> Option<String> {
    let start = t.find("<summary>\n")? + "<summary>\n".len();
    let end = t.rfind("\n</summary>")?;
    Some(t[start..end].to_string())
}

/// Claude Code's `attachment` lines (recorded from Claude Code 2.1.197): the kinds it sends
/// to the model become Pi `system` messages in the context, in the transcript's order,
/// holding the line's attachment; the kinds it does not send (output of hooks on other
/// events than session start and prompt submit), and those it writes from its own
/// instructions (plan mode, task reminders), stay `custom` entries outside the context,
/// holding the whole line.
#[test]
fn claude_code_attachments_reach_the_model_as_system_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_all(tmp.path());
    let rec = find(&all, "claude-attachments");
    let source = read_jsonl(&rec.source);
    let attachments: Vec<&Value> = source
        .iter()
        .filter(|l| l["type"] == "attachment")
        .collect();
    let ctx = our_context(&rec.path);
    let systems: Vec<&Value> = ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    let sent: Vec<&Value> = attachments
        .iter()
        .copied()
        .filter(|l| {
            let a = &l["attachment"];
            match a["type"].as_str().unwrap() {
                "hook_success" => {
                    a["hookEvent"] == "SessionStart" || a["hookEvent"] == "UserPromptSubmit"
                }
                "plan_mode" | "task_reminder" => false,
                _ => true,
            }
        })
        .collect();
    assert_eq!(systems.len(), sent.len());
    assert!(sent.len() >= 12, "{}", sent.len());
    for (m, l) in systems.iter().zip(&sent) {
        assert_eq!(m["claudeCode"]["uuid"], l["uuid"]);
        assert_eq!(norm(&m["claudeCode"]["attachment"]), norm(&l["attachment"]));
    }
    let text = |kind: &str| -> Vec<&str> {
        systems
            .iter()
            .filter(|m| m["claudeCode"]["attachment"]["type"] == kind)
            .map(|m| m["content"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        text("hook_success")[0],
        "SessionStart:startup hook success: Session start hook: the demo project keeps its \
         notes in notes.txt."
    );
    assert_eq!(
        text("hook_additional_context"),
        [
            "PostToolUse:Bash hook additional context: Tool hook: the echo ran in the demo \
             project.",
            "PostToolUse:Bash hook additional context: Second tool hook: nothing to add."
        ]
    );
    assert_eq!(
        text("file"),
        ["Called the Read tool with the following input: \
          {\"file_path\":\"/home/dev/demo/notes.txt\"}\nResult of calling the Read tool:\n\
          1\tfirst line\n2\tsecond line, added outside\n3\t"]
    );
    assert!(text("agent_listing_delta")[0].starts_with("Available agent types"));
    assert!(text("skill_listing")[0].starts_with("The following skills are available"));
    // The rest: custom entries holding the line, outside the context.
    let l = sessiontree::load(&rec.path).unwrap();
    let customs: Vec<Value> = entries_where(&l, "type", "custom")
        .map(|e| ours(e.raw()))
        .collect();
    let kept: Vec<&Value> = attachments
        .iter()
        .copied()
        .filter(|l| !sent.iter().any(|s| s["uuid"] == l["uuid"]))
        .collect();
    assert_eq!(customs.len(), kept.len());
    assert!(kept.len() >= 5, "{}", kept.len());
    for (c, l) in customs.iter().zip(&kept) {
        assert_eq!(c["customType"], "claude-code:attachment");
        assert_eq!(norm(&c["data"]), norm(l));
    }
}

/// Rollouts written by Codex CLI 0.171.0 (against a scripted model on 127.0.0.1: tool
/// calls, resumes, a fork that continues from its parent's first lines, automatic
/// compactions in the middle of a turn and before a turn, summarized locally and remotely)
/// and the inputs it sent to the
/// model when it resumed them: the import of the rollout as it was just before each resume
/// holds that input's conversation (context blocks, user texts, assistant texts, tool calls
/// with ids and arguments, outputs, responses, the compaction summary), in order.
///
/// One difference is Pi's format itself: after a compaction Codex sends the history it
/// kept (`replacement_history`: earlier user messages, fresh context blocks) with the
/// summary last (a user message when Codex summarized locally, an opaque `compaction` item
/// when the provider compacted remotely), while Pi always sends a compaction's summary
/// first; so the summary is compared at the head of the history, everything else in
/// Codex's order.
#[test]
fn recorded_codex_sessions_hold_what_codex_sent_on_resume() {
    // codex-revert: each turn after a `thread/revert` (the request Codex sent next holds
    // the history before the reverted turn) and a resume after two reverts.
    for folder in ["codex-recorded", "codex-revert"] {
        recorded_codex_resumes(folder);
    }
}

fn recorded_codex_resumes(folder: &str) {
    let dir = fixtures().join(folder);
    let requests = common::resume_requests(&dir);
    let tmp = tempfile::tempdir().unwrap();
    for (n, r) in requests.iter().enumerate() {
        let rel = r["rollout"].as_str().unwrap();
        let prompt = r["prompt"].as_str().unwrap();
        let occurrence = r["occurrence"].as_u64().unwrap() as usize;
        let text = std::fs::read_to_string(dir.join(rel)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cut = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["type"] == "response_item"
                    && v["payload"]["role"] == "user"
                    && codex_text(&v["payload"]) == prompt
            })
            .nth(occurrence - 1)
            .unwrap_or_else(|| panic!("{rel}: no prompt {prompt:?}"))
            .0;
        // The parent of a fork stays beside it, whole.
        let src_dir = tmp.path().join(format!("src{n}"));
        std::fs::create_dir_all(&src_dir).unwrap();
        for f in files(&dir.join("sessions")) {
            std::fs::copy(&f, src_dir.join(f.file_name().unwrap())).unwrap();
        }
        let src = src_dir.join(Path::new(rel).file_name().unwrap());
        common::write_first_lines(&src, &lines, cut);
        // A thread as it was then: the segments its reverts wrote later were not there
        // yet, and it is imported from its first rollout.
        let id = stem(&src)[stem(&src).len() - 36..].to_string();
        let thread = codex::segment_name(&stem(&src)).map_or(id, |(t, _)| t.to_string());
        let segs = codex_segments(&src_dir, &thread);
        if let Some(at) = segs.iter().position(|f| *f == src) {
            for later in &segs[at + 1..] {
                std::fs::remove_file(later).unwrap();
            }
        } else {
            for later in &segs {
                std::fs::remove_file(later).unwrap();
            }
        }
        let src = files(&src_dir)
            .into_iter()
            .find(|f| stem(f).ends_with(&thread))
            .unwrap();
        let conv = convert("codex", &src).remove(0);
        assert!(conv.problems.is_empty(), "{:?}", conv.problems);
        let o = write(&conv, &tmp.path().join(format!("out{n}")), None, false).unwrap();
        let got = pi_events(&our_context(&o.path));
        // The summaries of the compactions before the resume, as Codex sends them.
        let summaries: Vec<Value> = lines[..cut]
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["type"] == "compacted")
            .map(|v| v["payload"]["message"].clone())
            .collect();
        let mut expected = Vec::new();
        let mut in_response = false;
        for it in r["input"].as_array().unwrap() {
            let ty = it["type"].as_str().unwrap();
            let assistant_side = matches!(ty, "reasoning" | "function_call" | "custom_tool_call")
                || it["role"] == "assistant";
            if assistant_side && !in_response {
                expected.push(json!(["response", ""]));
            }
            in_response = assistant_side;
            match ty {
                // The base instructions come first, as a developer message.
                "message" if expected.is_empty() && it["role"] == "developer" => {
                    expected.push(json!(["instructions"]))
                }
                "message" if it["role"] == "user" && summaries.contains(&json!(codex_text(it))) => {
                    expected.push(json!(["summary", codex_text(it)]))
                }
                // A remote compaction's summary: encrypted, readable only by the model's
                // server; Codex records an empty message for it.
                "compaction" => expected.push(json!(["summary", ""])),
                "message" => {
                    let t = codex_text(it);
                    let label = match it["role"].as_str().unwrap() {
                        "assistant" => "assistant",
                        "developer" => "context",
                        _ if injected(&t) => "context",
                        _ => "user",
                    };
                    for b in it["content"].as_array().unwrap() {
                        expected.push(json!([label, b["text"]]));
                    }
                }
                "function_call" => {
                    let args: Value =
                        serde_json::from_str(it["arguments"].as_str().unwrap()).unwrap();
                    expected.push(json!(["call", it["call_id"], it["name"], args]));
                }
                "function_call_output" | "custom_tool_call_output" => {
                    expected.push(json!(["result", it["call_id"], it["output"], false]))
                }
                _ => {}
            }
        }
        assert_eq!(
            expected.pop(),
            Some(json!(["user", prompt])),
            "the input ends with the new prompt"
        );
        // Only the newest summary is sent; Pi sends it first, after the instructions.
        let at: Vec<usize> = (0..expected.len())
            .filter(|&i| expected[i][0] == "summary")
            .collect();
        assert!(at.len() <= 1, "{rel}: {} summaries sent", at.len());
        if let Some(&i) = at.first() {
            assert_eq!(
                expected[i][1],
                *summaries.last().unwrap(),
                "{rel}: Codex sent the newest summary"
            );
            let s = expected.remove(i);
            expected.insert(usize::from(expected[0] == json!(["instructions"])), s);
        }
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap(),
            "{rel} before {prompt:?} ({occurrence})"
        );
    }
}

/// Older Claude Code releases wrote a subagent's lines (`isSidechain: true`) into the main
/// transcript, between the Task call and its result. They become their own session, linked
/// to the main one, and stay out of the main conversation.
#[test]
fn inline_sidechain_lines_become_a_subagent_session_of_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_all(tmp.path());
    let mine: Vec<&Imported> = all
        .iter()
        .filter(|i| i.source.to_string_lossy().contains("claude-inline"))
        .collect();
    assert_eq!(mine.len(), 2);
    let main = mine.iter().find(|i| i.conv.kind == "main").unwrap();
    let side = mine.iter().find(|i| i.conv.kind == "sidechain").unwrap();
    assert_eq!(main.conv.session_id, "4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07");
    assert_eq!(
        side.conv.parent_source.as_deref(),
        Some(main.conv.source_session_id.as_str())
    );
    assert_ne!(side.conv.session_id, main.conv.session_id);
    let header = |p: &Path| -> Value {
        let text = std::fs::read_to_string(p).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    assert_eq!(
        header(&side.path)["parentSession"],
        json!(main.path.to_string_lossy())
    );
    assert!(header(&main.path).get("parentSession").is_none());
    // The subagent's search is in its session only; the main one has the Task call and its
    // result, and is named by the summary.
    assert!(!main.conv.body.contains("toolu_inl_grep"));
    assert!(side.conv.body.contains("toolu_inl_grep"));
    assert!(main.conv.body.contains("toolu_inl_task"));
    assert_eq!(
        main.conv.name.as_deref(),
        Some("Coupon total lookup with a subagent")
    );
    let ctx = pi_events(&our_context(&side.path));
    assert_eq!(
        ctx.first(),
        Some(&json!([
            "user",
            "Search the cart module for where the coupon total is computed and report file and line."
        ]))
    );
    assert_eq!(
        ctx.last(),
        Some(&json!([
            "assistant",
            "The coupon total is computed in cart/total.py at line 42 (apply_coupon)."
        ]))
    );
}

/// A Codex compaction keeps how big the context was when Codex compacted: the newest
/// request's `last_token_usage.total_tokens` before the `compacted` line becomes the Pi
/// compaction's `tokensBefore` (0 only where no token count came before it).
#[test]
fn codex_compactions_keep_the_context_size_they_replaced() {
    let mut checked = 0;
    for dir in ["codex", "codex-recorded"] {
        for p in files(&fixtures().join(dir)) {
            let source = read_jsonl(&p);
            let mut expected = Vec::new();
            let mut last = 0.0;
            for l in &source {
                let pl = &l["payload"];
                if l["type"] == "event_msg" && pl["type"] == "token_count" {
                    if let Some(t) = pl["info"]["last_token_usage"]["total_tokens"].as_f64() {
                        last = t;
                    }
                }
                if l["type"] == "compacted" {
                    expected.push(last);
                }
            }
            let convs = convert("codex", &p);
            let got: Vec<f64> = convs
                .iter()
                .flat_map(|c| {
                    c.lines
                        .iter()
                        .map(|l| serde_json::from_str::<Value>(c.json(l)).unwrap())
                        .filter(|v| v["type"] == "compaction")
                        .map(|v| v["tokensBefore"].as_f64().unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
            // A fork repeats its parent's compactions first; the file's own are the last.
            assert!(
                got.ends_with(&expected),
                "{}: {got:?} vs {expected:?}",
                p.display()
            );
            checked += expected.iter().filter(|&&t| t > 0.0).count();
        }
    }
    assert!(
        checked >= 2,
        "recorded compactions with a token count: {checked}"
    );
}

/// The sessions of `claude-forks` (recorded from Claude Code 2.1.197 by `record.sh
/// claude-forks`): P, two turns; F1 = `--resume P --fork-session`; F2 = `--resume F1
/// --fork-session --resume-session-at` P's first answer (every entry of F2 but its own turn
/// is P's, copied into F1 and from there into F2); F3 = `--resume F1 --fork-session` (it
/// copies F1's own turn too).
const FORK_P: &str = "d2ecd95f-94ce-4047-98e3-2cf782303e6a";
const FORK_F1: &str = "19fb95c2-347e-4e90-b0cc-0f3620ce384c";
const FORK_F2: &str = "c61044d0-405a-4fb6-abf0-c77305fbf743";
const FORK_F3: &str = "5ac2e1d7-ee19-4c07-8fb6-ede2ad63a61d";

/// Session id -> the session id its file's `parentSession` names, of the Pi files in `dir`.
fn parents_in(dir: &Path) -> std::collections::BTreeMap<String, Option<String>> {
    let mut ids = HashMap::new();
    let mut parents = Vec::new();
    for f in files(dir) {
        let l = sessiontree::load(&f).unwrap();
        let id = l.tree.session_id().to_string();
        ids.insert(f.to_string_lossy().into_owned(), id.clone());
        parents.push((id, l.tree.header().parent_session()));
    }
    parents
        .into_iter()
        .map(|(id, p)| {
            let p = p.map(|p| ids.get(&p).cloned().unwrap_or(p));
            (id, p)
        })
        .collect()
}

/// A fork's `parentSession` names the session the entries it shares were first written in:
/// a fork of a fork cut back to its parent's copied entries links to their original, not
/// to the fork it copied them from; a fork that copies the first fork's own turn links to
/// it. The same whichever way the files come: all in one run, or one run per file as
/// Claude Code writes them (each fork's original then known only from the earlier import's
/// files), in either order of the two forks of F1.
#[test]
fn a_fork_of_a_fork_links_to_where_its_entries_were_first_written() {
    use sessiontree_import::batch::{import_files, Options};
    use sessiontree_import::Agent;
    let dir = fixtures().join("claude-forks");
    let src = |id: &str| dir.join(format!("{id}.jsonl"));
    let expected: std::collections::BTreeMap<String, Option<String>> = [
        (FORK_P, None),
        (FORK_F1, Some(FORK_P)),
        (FORK_F2, Some(FORK_P)),
        (FORK_F3, Some(FORK_F1)),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.map(str::to_string)))
    .collect();
    let tmp = tempfile::tempdir().unwrap();
    let runs: [&[&[&str]]; 3] = [
        &[&[FORK_F3, FORK_F2, FORK_F1, FORK_P]],
        &[&[FORK_P], &[FORK_F1], &[FORK_F2], &[FORK_F3]],
        &[&[FORK_P], &[FORK_F1], &[FORK_F3], &[FORK_F2]],
    ];
    let mut results = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        let out = tmp.path().join(format!("out{n}"));
        for ids in run.iter() {
            let files: Vec<PathBuf> = ids.iter().map(|id| src(id)).collect();
            let report = import_files(
                Agent::Claude,
                &files,
                Options {
                    session_dir: Some(&out),
                    ..Options::default()
                },
            );
            assert!(report.errors.is_empty(), "{:?}", report.errors);
            for d in &report.done {
                assert!(d.result.is_ok(), "{}", d.source.display());
            }
        }
        assert_eq!(parents_in(&out), expected, "run {n}: {run:?}");
        let bytes: Vec<(String, String)> = files(&out)
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                (
                    f.file_name().unwrap().to_string_lossy().into_owned(),
                    text.replace(out.to_str().unwrap(), "DIR"),
                )
            })
            .collect();
        results.push(bytes);
    }
    // The same files, byte for byte, whichever way they came.
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0], results[2]);
}

/// A Codex thread whose turns were reverted (`codex-revert`, recorded from Codex 0.171.0:
/// the rollout and the two segments its reverts wrote) is one Pi session whichever way its
/// files come: all in one run; one run per file as Codex writes them (what `watch` does:
/// the rollout is imported before the segments exist, and each segment is then appended
/// to that file, the reverted turns already written staying as the abandoned branch); the
/// newest segment first (its rollout and the other segment found beside it). Same bytes
/// every way, and importing again adds nothing.
#[test]
fn a_reverted_codex_thread_is_one_session_whichever_way_its_files_come() {
    use sessiontree_import::batch::{import_files, Options};
    use sessiontree_import::{Agent, Status};
    let src = fixtures().join("codex-revert/sessions");
    let all = files(&src);
    let base = all
        .iter()
        .find(|f| codex::segment_name(&stem(f)).is_none())
        .unwrap()
        .clone();
    let mut order = vec![base.clone()];
    order.extend(codex_segments(
        base.parent().unwrap(),
        &stem(&base)[stem(&base).len() - 36..],
    ));
    assert_eq!(order.len(), 3);
    let tmp = tempfile::tempdir().unwrap();
    let run = |files: &[PathBuf], out: &Path| {
        let report = import_files(
            Agent::Codex,
            files,
            Options {
                session_dir: Some(out),
                ..Options::default()
            },
        );
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        report
            .done
            .into_iter()
            .map(|d| {
                let o = d
                    .result
                    .unwrap_or_else(|e| panic!("{}: {e}", d.source.display()));
                assert!(d.conv.problems.is_empty(), "{:?}", d.conv.problems);
                (o.path, o.status)
            })
            .collect::<Vec<_>>()
    };
    // A run of the one file `f`: one session, created by the first run (`k == 0`), then
    // `later`.
    let run_one = |f: &Path, out: &Path, k: usize, later: Status| {
        let done = run(&[f.to_path_buf()], out);
        assert_eq!(done.len(), 1);
        let want = if k == 0 { Status::Created } else { later };
        assert_eq!(done[0].1, want, "{}", f.display());
    };
    let only_file = |out: &Path| {
        let f = files(out);
        assert_eq!(f.len(), 1, "one session: {f:?}");
        std::fs::read(&f[0]).unwrap()
    };

    let out0 = tmp.path().join("one-run");
    let done = run(&all, &out0);
    assert_eq!(done.len(), 1, "the segments are the rollout's session");
    let whole = only_file(&out0);

    // As Codex writes them, one run each.
    let live = tmp.path().join("live/2026/12/01");
    std::fs::create_dir_all(&live).unwrap();
    let out1 = tmp.path().join("as-written");
    let mut before = Vec::new();
    for (k, f) in order.iter().enumerate() {
        let copy = live.join(f.file_name().unwrap());
        std::fs::copy(f, &copy).unwrap();
        run_one(&copy, &out1, k, Status::Appended);
        let now = only_file(&out1);
        assert!(now.starts_with(&before), "only appended");
        before = now;
    }
    assert_eq!(before, whole);

    // The newest segment first, then the others.
    let out2 = tmp.path().join("newest-first");
    for (k, f) in order.iter().rev().enumerate() {
        run_one(f, &out2, k, Status::Unchanged);
    }
    assert_eq!(only_file(&out2), whole);

    // Again, in one run.
    let done = run(&all, &out0);
    assert_eq!(done[0].1, Status::Unchanged);
    assert_eq!(only_file(&out0), whole);

    // The active branch is the newest segment's, written last; the reverted turns are
    // on branches of their own.
    let l = sessiontree::load(&files(&out0)[0]).unwrap();
    let ctx = our_context(&files(&out0)[0]);
    let users: Vec<Value> = pi_events(&ctx)
        .into_iter()
        .filter(|e| e[0] == "user")
        .map(|e| e[1].clone())
        .collect();
    assert_eq!(
        users,
        json!([
            "Please RUN the echo command",
            "After the revert question",
            "After the second revert",
            "Resumed after the reverts"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    let reverts = entries_where(&l, "customType", "codex:revert").count();
    assert_eq!(reverts, 2);
}

/// The entries of `l` whose string field `field` is `value`.
fn entries_where<'a>(
    l: &'a sessiontree::Loaded,
    field: &'a str,
    value: &'a str,
) -> impl Iterator<Item = &'a sessiontree::Entry> {
    l.tree
        .entries()
        .iter()
        .filter(move |e| e.str_field(field).as_deref() == Some(value))
}

/// A Claude Code `tool_result` block as the conversation tests compare it: `["result", id,
/// text, is_error]` (a list of blocks is its texts, one a line).
fn claude_result(b: &Value) -> Value {
    let t = system_text(&b["content"]);
    json!(["result", b["tool_use_id"], t, b["is_error"] == true])
}
