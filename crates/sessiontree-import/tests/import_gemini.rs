//! Gemini CLI chats: the recorded fixture (`tests/fixtures/gemini-recorded`, Gemini CLI
//! 0.61.0 driven by `record/record.sh gemini` against a scripted model: a tool call,
//! resumes, a subagent, a compression in the middle of a turn, a `/rewind`, a last resume)
//! and hand-written ones (`tests/fixtures/gemini`: an older release's one-file `.json`
//! chat, a subagent, malformed lines). Checked:
//!
//! * the conversation in sessiontree's context is what Gemini CLI sent to the model: for
//!   every resumed prompt, the chat cut before that prompt imports to the contents the CLI
//!   sent with it (less the prompt), and the whole chat to its last request;
//! * resumes add no entries, a rewind leaves a branch, a compression is a Pi compaction, a
//!   subagent is its own session linked to its parent;
//! * every line is canonical, importing twice gives the same bytes, a grown chat is
//!   completed by appending;
//! * Pi 1.6.0 opens every result with no rewrite and its `buildSessionContext()` equals
//!   sessiontree's at every leaf (needs node and `interop/node_modules`).

use serde_json::{json, Value};
use sessiontree_import::{gemini, write, Conversion, Status};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
use common::{
    assistant_events, entries, fixtures, header, our_context, resume_requests, source_when_sent,
    Imported,
};

fn chats(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    sessiontree_import::batch::collect_for(sessiontree_import::Agent::Gemini, dir, &mut out)
        .unwrap();
    out.sort();
    out
}

fn convert(p: &Path) -> Conversion {
    let (cwd, parent) = gemini::context_of(p);
    let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
    gemini::convert(
        &std::fs::read(p).unwrap(),
        &stem,
        cwd.as_deref(),
        parent.as_deref(),
    )
}

/// Imports every chat of `folder` into `dir`, subagents after their parents.
fn import_folder(folder: &Path, dir: &Path) -> Vec<Imported> {
    let mut out = Vec::new();
    let mut by_source: HashMap<String, PathBuf> = HashMap::new();
    let mut later = Vec::new();
    for f in chats(folder) {
        let conv = convert(&f);
        if conv.lines.is_empty() {
            continue;
        }
        if conv.parent_source.is_some() {
            later.push((f, conv));
            continue;
        }
        let o = write(&conv, dir, None, false).unwrap();
        assert_eq!(o.status, Status::Created, "{}", f.display());
        by_source.insert(conv.source_session_id.clone(), o.path.clone());
        out.push(Imported {
            source: f,
            conv,
            path: o.path,
        });
    }
    for (f, conv) in later {
        let parent = by_source
            .get(conv.parent_source.as_ref().unwrap())
            .map(|p| p.to_string_lossy().into_owned());
        let o = write(&conv, dir, parent.as_deref(), false).unwrap();
        out.push(Imported {
            source: f,
            conv,
            path: o.path,
        });
    }
    out
}

fn import_all(dir: &Path) -> Vec<Imported> {
    common::import_folders(&["gemini-recorded", "gemini"], dir, import_folder)
}

/// The conversation of a Pi context as events: user texts, the compaction summary,
/// assistant texts and tool calls, tool results (thinking is not compared: Gemini CLI
/// does not send the model's thoughts back).
fn pi_events(ctx: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in ctx["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "user" => match &m["content"] {
                Value::String(s) => out.push(json!(["user", s])),
                Value::Array(a) => {
                    for b in a {
                        if b["type"] == "text" {
                            out.push(json!(["user", b["text"]]));
                        }
                    }
                }
                _ => {}
            },
            "compactionSummary" => out.push(json!(["user", m["summary"]])),
            "assistant" => assistant_events(m, "model", &mut out),
            "toolResult" => out.push(sessiontree_testkit::json::tool_result_event(m)),
            r => panic!("unexpected role {r}"),
        }
    }
    out
}

/// The contents Gemini CLI sent, as the same events. Left out, as stated in the docs: the
/// `<session_context>` block the CLI makes anew at each start (the import keeps it outside
/// the context), and, after a resume, the second copy of each earlier response's results
/// (the CLI sends them twice; the import keeps one).
fn request_events(contents: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for c in contents.as_array().unwrap() {
        let role = c["role"].as_str().unwrap();
        let mut results_here: Vec<Value> = Vec::new();
        for p in c["parts"].as_array().unwrap() {
            if p["thought"] == true {
                continue;
            }
            if let Some(t) = p["text"].as_str() {
                if role == "user" && t.trim_start().starts_with("<session_context>") {
                    continue;
                }
                out.push(json!([if role == "user" { "user" } else { "model" }, t]));
            } else if let Some(fc) = p.get("functionCall") {
                out.push(json!(["call", fc["id"], fc["name"], fc["args"]]));
            } else if let Some(fr) = p.get("functionResponse") {
                let r = &fr["response"];
                let (text, err) = match (r.get("output"), r.get("error")) {
                    (Some(Value::String(s)), _) => (s.clone(), false),
                    (_, Some(Value::String(e))) => (e.clone(), true),
                    _ => (r.to_string(), r.get("error").is_some()),
                };
                let e = json!(["result", fr["id"], text, err]);
                if results_here.contains(&e) {
                    continue;
                }
                results_here.push(e.clone());
                out.push(e);
            }
        }
    }
    out
}

#[test]
fn recorded_chats_hold_what_gemini_cli_sent() {
    let dir = fixtures().join("gemini-recorded");
    let requests = resume_requests(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (n, r) in requests.iter().enumerate() {
        let rel = r["chat"].as_str().unwrap();
        let src = dir.join(rel);
        let text = std::fs::read_to_string(&src).unwrap();
        let mut expected = request_events(&r["contents"]);
        // The chat as it was when the prompt was sent: up to its user message.
        let (cut_text, _) = source_when_sent(&text, r, &mut expected, |v, prompt| {
            v["type"] == "user" && v["content"][0]["text"] == prompt
        });
        // The chat in a folder of its own, with its project's root beside it.
        let project = tmp.path().join(format!("p{n}/tmp/demo"));
        std::fs::create_dir_all(project.join("chats")).unwrap();
        std::fs::write(project.join(".project_root"), "/home/dev/demo\n").unwrap();
        let cut_src = project.join("chats").join(src.file_name().unwrap());
        std::fs::write(&cut_src, cut_text).unwrap();
        let conv = convert(&cut_src);
        assert!(conv.problems.is_empty(), "{:?}", conv.problems);
        // The whole chat also holds the answer to its last request.
        let out = tmp.path().join(format!("out{n}"));
        common::check_sent(&conv, &out, pi_events, r, &expected);
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}

#[test]
fn resumes_add_nothing_a_rewind_branches_a_compression_is_a_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_folder(&fixtures().join("gemini-recorded"), tmp.path());
    let main: Vec<&Imported> = all.iter().filter(|i| i.conv.kind == "main").collect();
    // Every resume also left a file holding only the start's context block: nothing to
    // import there.
    assert_eq!(main.len(), 1, "one chat holds the conversation");
    let m = main[0];
    let es = entries(&m.path);
    // Each user prompt once (five resumes rebuilt the list): no copies.
    let prompts: Vec<&str> = es
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .filter_map(|e| e["message"]["content"][0]["text"].as_str())
        .collect();
    let mut unique = prompts.clone();
    unique.sort();
    unique.dedup();
    let big = prompts.iter().filter(|p| p.starts_with("BIG")).count();
    // The prompt of the compressed turn is kept by the compression under a new id: once
    // before the compaction, once after it.
    assert_eq!(big, 2, "{prompts:?}");
    assert_eq!(prompts.len(), unique.len() + 1, "{prompts:?}");
    // One compaction, keeping nothing before it, with the snapshot as its summary.
    let comp: Vec<&Value> = es.iter().filter(|e| e["type"] == "compaction").collect();
    assert_eq!(comp.len(), 1);
    assert!(comp[0]["summary"]
        .as_str()
        .unwrap()
        .starts_with("<state_snapshot>"));
    assert_eq!(comp[0]["firstKeptEntryId"], comp[0]["id"]);
    assert_eq!(comp[0]["tokensBefore"], 900000);
    // The rewind: a mark entry, and the rewound prompt's turn stays off the active path.
    let rewinds: Vec<&Value> = es
        .iter()
        .filter(|e| e["customType"] == "gemini-cli:rewind")
        .collect();
    assert_eq!(rewinds.len(), 1);
    let ctx = our_context(&m.path);
    let sent: Vec<Value> = pi_events(&ctx);
    assert!(sent.contains(&json!(["user", "A new question after the rewind"])));
    assert!(!sent.contains(&json!(["user", "What happened after the compression?"])));
    assert!(prompts.contains(&"What happened after the compression?"));
    // The header names the source.
    let head = header(&m.path);
    assert_eq!(head["importedFrom"]["agent"], "gemini-cli");
    assert_eq!(head["cwd"], "/home/dev/demo");
    // The subagent: its own session, linked to the main one.
    let sub: Vec<&Imported> = all.iter().filter(|i| i.conv.kind == "sidechain").collect();
    assert_eq!(sub.len(), 1);
    let sh = header(&sub[0].path);
    assert_eq!(sh["parentSession"], json!(m.path.to_string_lossy()));
    assert_eq!(
        sub[0].conv.parent_source.as_deref(),
        Some(m.conv.source_session_id.as_str())
    );
}

#[test]
fn every_line_is_canonical_and_importing_twice_gives_the_same_bytes() {
    let written = common::check_importing_twice(import_all);
    assert!(written >= 4, "{written}");
}

/// A chat cut at every line, imported, then the whole one: only appended to, and the
/// result reads as a fresh import's.
#[test]
fn a_grown_chat_is_completed_by_appending() {
    let src = chats(&fixtures().join("gemini-recorded"))
        .into_iter()
        .map(|p| (std::fs::metadata(&p).unwrap().len(), p))
        .max()
        .unwrap()
        .1;
    let text = std::fs::read_to_string(&src).unwrap();
    let appended = common::grown_sources_are_appended_to(
        &text,
        |tmp| tmp.join("chats").join(src.file_name().unwrap()),
        convert,
        |grown, fresh, cut| {
            assert_eq!(
                pi_events(&our_context(grown)),
                pi_events(&our_context(fresh)),
                "cut at line {cut}"
            )
        },
    );
    assert!(appended >= 3, "{appended}");
}

#[test]
fn older_one_file_chats_subagents_and_bad_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_folder(&fixtures().join("gemini"), tmp.path());
    let legacy = all
        .iter()
        .find(|i| i.source.extension().is_some_and(|x| x == "json"))
        .expect("the one-file chat");
    // Tool results only the call held (older releases): a toolResult after the call.
    let ev = pi_events(&our_context(&legacy.path));
    assert_eq!(
        ev,
        vec![
            json!(["user", "List the files"]),
            json!(["call", "ls-1", "list_directory", {"path": "."}]),
            json!(["result", "ls-1", "notes.txt", false]),
            json!(["model", "There is one file, notes.txt."]),
            json!(["user", "Thanks"]),
            json!(["model", "You are welcome."]),
        ]
    );
    // Gemini CLI's info line is kept outside the context.
    let es = entries(&legacy.path);
    assert!(es.iter().any(|e| e["customType"] == "gemini-cli:info"));
    let bad = all
        .iter()
        .find(|i| i.source.to_string_lossy().contains("bad"))
        .expect("the chat with bad lines");
    let lines: Vec<usize> = bad.conv.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![3, 4], "{:?}", bad.conv.problems);
    assert_eq!(
        pi_events(&our_context(&bad.path)),
        vec![json!(["user", "Hello"]), json!(["model", "Hi."])]
    );
}

#[test]
fn pi_opens_every_import_and_builds_the_same_context() {
    let test = "pi_opens_every_import_and_builds_the_same_context (gemini)";
    common::pi_builds_the_same_contexts(test, import_all);
}
