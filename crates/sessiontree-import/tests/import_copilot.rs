//! GitHub Copilot CLI sessions: the recorded fixture (`tests/fixtures/copilot-recorded`,
//! Copilot CLI 1.0.102 driven by `record/record.sh copilot`, offline against the scripted
//! chat endpoint: a single turn, then a tool call and a question, each in a resumed run)
//! and a hand-written one (`tests/fixtures/copilot`, written for these tests, not by the
//! CLI: a failed tool call, a `session.snapshot_rewind`, a title, lines that cannot be
//! read). Checked:
//!
//! * the conversation in sessiontree's context is what Copilot CLI sent to the model: for
//!   every prompt, the log cut before that prompt imports to the messages the CLI sent with
//!   it (less the prompt), and the whole log to its last request;
//! * a rewind leaves a branch, a failed call is an error result, bad lines are problems
//!   naming their line and the rest imports;
//! * every line is canonical, importing twice gives the same bytes, a grown log is
//!   completed by appending;
//! * Pi 1.6.0 opens every result with no rewrite and its `buildSessionContext()` equals
//!   sessiontree's at every leaf (needs node and `interop/node_modules`).

use serde_json::{json, Value};

use sessiontree_import::{copilot, write, Agent, Conversion, Status};
use std::path::{Path, PathBuf};

mod common;
use common::{
    assistant_events, entries, fixtures, header, our_context, resume_requests, source_when_sent,
    Imported,
};
use sessiontree_testkit::interop;

fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    sessiontree_import::batch::collect_for(Agent::Copilot, dir, &mut out).unwrap();
    out.sort();
    out
}

fn convert(p: &Path) -> Conversion {
    copilot::convert(&std::fs::read(p).unwrap(), &copilot::folder_id(p))
}

fn import_all(dir: &Path) -> Vec<Imported> {
    common::import_folders(&["copilot-recorded", "copilot"], dir, import_folder)
}

fn import_folder(folder: &Path, dir: &Path) -> Vec<Imported> {
    let mut out = Vec::new();
    for f in logs(folder) {
        let mut main_path = None;
        // The main session first, then its subagents, linked to it.
        for conv in copilot::convert_all(&std::fs::read(&f).unwrap(), &copilot::folder_id(&f)) {
            assert!(!conv.lines.is_empty(), "{}", f.display());
            let parent = conv
                .parent_source
                .as_ref()
                .map(|_| main_path.clone().expect("the main session first"));
            let o = write(&conv, dir, parent.as_deref(), false).unwrap();
            assert_eq!(o.status, Status::Created, "{}", f.display());
            if conv.parent_source.is_none() {
                main_path = Some(o.path.to_string_lossy().into_owned());
            }
            out.push(Imported {
                source: f.clone(),
                conv,
                path: o.path,
            });
        }
    }
    out
}

/// The conversation of a Pi context as events: user texts, assistant texts and tool
/// calls, tool results (thinking is not compared: Copilot CLI does not send the model's
/// reasoning back).
fn pi_events(ctx: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in ctx["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "user" => {
                for b in m["content"].as_array().unwrap() {
                    if b["type"] == "text" {
                        out.push(json!(["user", b["text"]]));
                    }
                }
            }
            "assistant" => assistant_events(m, "model", &mut out),
            "toolResult" => {
                let t: Vec<&str> = m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                out.push(json!(["result", m["toolCallId"], t.join("\n")]));
            }
            r => panic!("unexpected role {r}"),
        }
    }
    out
}

/// The chat messages Copilot CLI sent (the system prompt already left out by the
/// recording), as the same events.
fn request_events(messages: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages.as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "user" => out.push(json!(["user", m["content"]])),
            "assistant" => {
                if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
                    out.push(json!(["model", t]));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let args: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                    out.push(json!(["call", c["id"], c["function"]["name"], args]));
                }
            }
            "tool" => out.push(json!(["result", m["tool_call_id"], m["content"]])),
            r => panic!("unexpected role {r} in a Copilot CLI request"),
        }
    }
    out
}

#[test]
fn recorded_sessions_hold_what_copilot_cli_sent() {
    let dir = fixtures().join("copilot-recorded");
    let requests = resume_requests(&dir);
    let src = logs(&dir).pop().expect("the recorded session");
    let text = std::fs::read_to_string(&src).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    // The main session and the subagent's.
    let whole = copilot::convert_all(text.as_bytes(), "x");
    assert_eq!(whole.len(), 2);
    for (n, r) in requests.iter().enumerate() {
        let mut expected = request_events(&r["messages"]);
        // Whose request: the session holding the prompt (the last: the main one).
        let mut owner = whole[0].session_id.clone();
        // The log as it was when the prompt was sent: up to its user message.
        let (cut_text, prompt_line) = source_when_sent(&text, r, &mut expected, |v, prompt| {
            v["type"] == "user.message" && v["data"]["transformedContent"] == prompt
        });
        if let Some(v) = prompt_line {
            owner = whole
                .iter()
                .find(|c| {
                    c.body
                        .contains(&format!("\"copilotCli\":{{\"id\":{}", v["id"]))
                })
                .map(|c| c.session_id.clone())
                .unwrap();
        }
        let cut_src = tmp
            .path()
            .join(format!("p{n}/session-state/{}", copilot::folder_id(&src)))
            .join("events.jsonl");
        std::fs::create_dir_all(cut_src.parent().unwrap()).unwrap();
        std::fs::write(&cut_src, cut_text).unwrap();
        let conv = copilot::convert_all(&std::fs::read(&cut_src).unwrap(), "x")
            .into_iter()
            .find(|c| c.session_id == owner);
        let Some(conv) = conv.filter(|c| !c.lines.is_empty()) else {
            // Before the session's first prompt: nothing sent yet.
            assert!(expected.is_empty(), "{expected:?}");
            checked += 1;
            continue;
        };
        assert!(conv.problems.is_empty(), "{:?}", conv.problems);
        if conv.lines.is_empty() {
            // Before the first prompt: nothing sent yet.
            assert!(expected.is_empty(), "{expected:?}");
            checked += 1;
            continue;
        }
        // The whole log also holds the answer to its last request.
        let out = tmp.path().join(format!("out{n}"));
        common::check_sent(&conv, &out, pi_events, r, &expected);
        checked += 1;
    }
    assert!(checked >= 6, "{checked}");
    // The recording holds a tool call and its result, across resumes.
    let all = import_folder(&dir, &tmp.path().join("all"));
    let ev = pi_events(&our_context(&all[0].path));
    assert!(ev.iter().any(|e| e[0] == "call"), "{ev:?}");
    assert!(ev.iter().any(|e| e[0] == "result"), "{ev:?}");
    assert_eq!(ev.iter().filter(|e| e[0] == "user").count(), 4, "{ev:?}");
    // The subagent: its own session, linked to the main one; its answer is the main
    // session's task result.
    let sub = &whole[1];
    assert_eq!(sub.kind, "sidechain");
    assert_eq!(
        sub.parent_source.as_deref(),
        Some(whole[0].session_id.as_str())
    );
    let o = write(sub, &tmp.path().join("sub"), Some("/main.jsonl"), false).unwrap();
    let sev = pi_events(&our_context(&o.path));
    let answer = sev.last().unwrap();
    assert_eq!(answer[0], "model");
    assert!(
        ev.iter().any(|e| e[0] == "result" && e[2] == answer[1]),
        "{ev:?} {sev:?}"
    );
}

#[test]
fn a_rewind_branches_a_failed_call_is_an_error_and_bad_lines_are_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let all = import_folder(&fixtures().join("copilot"), tmp.path());
    let i = &all[0];
    let lines: Vec<usize> = i.conv.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![7, 11], "{:?}", i.conv.problems);
    assert_eq!(i.conv.name.as_deref(), Some("Files"));
    assert_eq!(
        pi_events(&our_context(&i.path)),
        vec![
            json!(["user", "List the files"]),
            json!(["call", "call_1", "bash", {"command": "ls /nope"}]),
            json!(["result", "call_1", "ls: cannot access '/nope'"]),
            json!(["model", "There is no such folder."]),
            json!(["user", "A new question after the rewind"]),
            json!(["model", "A new answer."]),
        ]
    );
    let es = entries(&i.path);
    let result = es
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["message"]["isError"], true);
    assert_eq!(result["message"]["toolName"], "bash");
    // The rewound turn stays in the file, off the active path, under a mark.
    assert!(es
        .iter()
        .any(|e| e["message"]["content"][0]["text"] == "Try again"));
    let mark = es
        .iter()
        .find(|e| e["customType"] == "copilot-cli:rewind")
        .unwrap();
    let answer = es
        .iter()
        .find(|e| e["message"]["content"][0]["text"] == "There is no such folder.")
        .unwrap();
    assert_eq!(mark["parentId"], answer["id"]);
    // Usage from the record before the response.
    let first = es
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(first["message"]["usage"]["input"], 400);
    assert_eq!(first["message"]["usage"]["cacheRead"], 100);
    assert_eq!(first["message"]["content"][0]["thinking"], "Look first");
    let head = header(&i.path);
    assert_eq!(head["importedFrom"]["agent"], "copilot-cli");
    assert_eq!(head["cwd"], "/home/dev/demo");
}

#[test]
fn every_line_is_canonical_and_importing_twice_gives_the_same_bytes() {
    let written = common::check_importing_twice(import_all);
    // The recorded session, its subagent, the hand-written one.
    assert_eq!(written, 3);
}

/// The recorded log cut at several lines (the last one torn), imported, then the whole
/// one: only appended to, and the result reads as a fresh import's.
#[test]
fn a_grown_log_is_completed_by_appending() {
    let src = logs(&fixtures().join("copilot-recorded")).pop().unwrap();
    let text = std::fs::read_to_string(&src).unwrap();
    let appended = common::grown_sources_are_appended_to(
        &text,
        |tmp| tmp.join("s/events.jsonl"),
        convert,
        |grown, fresh, cut| {
            // The name written under the cut log's leaf stays where it was (an entry, once
            // written, keeps its parent); the grown log's comes under its own leaf.
            let fresh = std::fs::read_to_string(fresh).unwrap();
            let grown: String = std::fs::read_to_string(grown)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with(r#"{"type":"session_info","#) || fresh.contains(*l))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(grown, fresh, "cut at line {cut}")
        },
    );
    assert!(appended >= 3, "{appended}");
}

#[test]
fn pi_opens_every_import_and_builds_the_same_context() {
    let test = "pi_opens_every_import_and_builds_the_same_context (copilot)";
    let Some((all, compared)) = common::pi_builds_the_same_contexts(test, import_all) else {
        return;
    };
    for (i, n) in all.iter().zip(compared) {
        assert!(n > 0, "{}", i.source.display());
    }
}

/// The recorded `/compact`, `/rename` and `/rewind` (`tests/fixtures/copilot-compact`,
/// Copilot CLI 1.0.102 driven through tmux by `record.sh copilot-compact`): the compaction
/// is a Pi `compaction` keeping nothing before it, as the CLI kept nothing but its summary
/// message; for every prompt the log cut before it imports to what the CLI sent with it
/// (the CLI's summary message holding the compaction's summary), the whole log to its last
/// request; the rewound prompt is gone from the log (the CLI removed its events); the
/// session's name is the `/rename` title from `workspace.yaml`, else the first prompt
/// without its `<current_datetime>` block.
#[test]
fn the_recorded_compaction_rewind_and_rename_are_what_copilot_cli_kept() {
    let dir = fixtures().join("copilot-compact");
    let requests: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("resume-requests.json")).unwrap())
            .unwrap();
    let src = logs(&dir).pop().expect("the recorded session");
    let text = std::fs::read_to_string(&src).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let summary_of = |events: &mut Vec<Value>| {
        // Copilot CLI sends the summary as a user message of its own wording (the earlier
        // prompts, then the summary); Pi sends the compaction's summary.
        for e in events.iter_mut() {
            let t = e[1].as_str().unwrap_or("").to_string();
            if e[0] == "user"
                && t.starts_with("Some of the conversation history has been summarized")
            {
                let s = t.split("<summary>\n").nth(1).unwrap();
                *e = json!(["summary", s.strip_suffix("\n</summary>\n").unwrap()]);
            }
        }
    };
    let (mut checked, mut rewound) = (0, Vec::new());
    for (n, r) in requests.as_array().unwrap().iter().enumerate() {
        if r["compaction"] == true {
            continue;
        }
        let mut expected = request_events(&r["messages"]);
        summary_of(&mut expected);
        let cut_text = if r["last"] == true {
            text.clone()
        } else {
            let prompt = r["prompt"].as_str().unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let Some(cut) = lines.iter().position(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["type"] == "user.message" && v["data"]["transformedContent"] == prompt
            }) else {
                rewound.push(prompt.rsplit('\n').next().unwrap().to_string());
                continue;
            };
            assert_eq!(expected.pop(), Some(json!(["user", prompt])));
            lines[..cut].iter().map(|l| format!("{l}\n")).collect()
        };
        let conv = copilot::convert(cut_text.as_bytes(), "x");
        assert!(conv.problems.is_empty(), "{:?}", conv.problems);
        if conv.lines.is_empty() {
            assert!(expected.is_empty(), "{expected:?}");
            checked += 1;
            continue;
        }
        let o = write(&conv, &tmp.path().join(format!("out{n}")), None, false).unwrap();
        let ctx = our_context(&o.path);
        let mut got = Vec::new();
        for m in ctx["messages"].as_array().unwrap() {
            if m["role"] == "compactionSummary" {
                got.push(json!(["summary", m["summary"]]));
            } else {
                let one = json!({"messages": [m]});
                got.extend(pi_events(&one));
            }
        }
        if r["last"] == true {
            assert_eq!(got.pop().unwrap()[0], "model");
        }
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap(),
            "before {:?}",
            r["prompt"]
        );
        checked += 1;
    }
    assert_eq!(checked, 5);
    assert_eq!(rewound, vec!["Another question"]);
    // The compaction entry: the CLI's summary and token count, keeping nothing before it.
    let whole = copilot::convert(text.as_bytes(), "x");
    let o = write(&whole, &tmp.path().join("whole"), None, false).unwrap();
    let es = entries(&o.path);
    let c = es.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["firstKeptEntryId"], c["id"]);
    assert_eq!(c["tokensBefore"], 12483);
    assert!(c["summary"].as_str().unwrap().starts_with("Summary 7:"));
    assert!(!es
        .iter()
        .any(|e| e["customType"] == "copilot-cli:compaction_complete"));
    // The name: without workspace.yaml, the first prompt as typed; with it, the /rename.
    let last = es.last().unwrap();
    assert_eq!(last["type"], "session_info");
    assert_eq!(last["name"], "Hello there");
    assert_eq!(
        copilot::workspace_name(&src).as_deref(),
        Some("Demo session")
    );
    let named = copilot::convert_all_named(text.as_bytes(), "x", Some("Demo session"));
    assert_eq!(named[0].name.as_deref(), Some("Demo session"));
    let o = write(&named[0], &tmp.path().join("named"), None, false).unwrap();
    let es = entries(&o.path);
    assert_eq!(es.last().unwrap()["name"], "Demo session");
    assert_eq!(
        sessiontree::load(&o.path).unwrap().tree.name().as_deref(),
        Some("Demo session")
    );
    // Pi 1.6.0 opens it as it is and builds the same context (the compaction's) at every
    // leaf.
    if !interop::available() {
        interop::say_skipped("the recorded compaction in Pi (copilot)");
        return;
    }
    let dump = interop::oracle_dump(&[o.path.as_path()], &tmp.path().join("oracle.json"), &[]);
    let v: Value = serde_json::from_slice(&dump).unwrap();
    let r = &v["results"][0];
    assert!(r["error"].is_null(), "{}", r["error"]);
    assert_eq!(r["fileChange"], "none");
    assert_eq!(r["nonCanonicalLines"], json!([]));
    assert!(common::contexts_equal_pis(r, &o.path, &o.path.display()) > 0);
}
