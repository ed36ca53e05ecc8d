//! Typed messages against the reference: the messages Pi 1.6.0's own agent loop builds
//! (interop/messages.mjs runs it with a scripted provider) are built again with
//! `sessiontree::message` from the same values, and must come out as the same bytes, both
//! from `to_json` and in the line a session appends.

use serde_json::{json, Value};
use sessiontree::message::{
    AgentMessage, AssistantMessage, Content, CustomMessage, StopReason, ToolResultMessage, Usage,
    UserMessage,
};
use sessiontree::{Session, WriteOptions};
use sessiontree_testkit::interop::{available, node};

fn usage(v: &Value) -> Usage {
    let n = |k: &str| v[k].as_u64().unwrap();
    Usage {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite"),
        total_tokens: Some(n("totalTokens")),
        ..Usage::default()
    }
}

#[test]
fn typed_messages_are_the_bytes_pi_writes() {
    if !available() {
        eprintln!("SKIPPED typed_messages_are_the_bytes_pi_writes");
        return;
    }
    let out = node(&["messages.mjs"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    let pi: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ts = |i: usize| pi[i]["timestamp"].as_i64().unwrap();

    let ours: Vec<AgentMessage> = vec![
        UserMessage::text("echo hi").at(ts(0)).into(),
        AssistantMessage::new("faux-api", "faux", "faux-1")
            .with_thinking("The user wants an echo.")
            .with_text("Echoing.")
            .with_tool_call("call_1", "echo", json!({"text": "hi"}))
            .with_usage(usage(&pi[1]["usage"]))
            .with_stop_reason(StopReason::ToolUse)
            .at(ts(1))
            .with_thinking_level("off")
            .into(),
        ToolResultMessage::text("call_1", "echo", "hi")
            .with_details(json!({"length": 2}))
            .with_duration_ms(pi[2]["durationMs"].as_u64().unwrap())
            .at(ts(2))
            .into(),
        AssistantMessage::new("faux-api", "faux", "faux-1")
            .with_text("Done: hi")
            .with_usage(usage(&pi[3]["usage"]))
            .at(ts(3))
            .with_thinking_level("off")
            .into(),
        CustomMessage {
            details: Some(json!({"n": 1})),
            ..CustomMessage::new("note", "remember this", true).at(ts(4))
        }
        .into(),
    ];

    let dir = tempfile::tempdir().unwrap();
    let mut s = Session::create("/w", Some(dir.path()), WriteOptions::default(), None).unwrap();
    for (m, line) in ours.iter().zip(&lines) {
        let j = m.to_json().unwrap();
        assert_eq!(j.as_str(), *line);
        s.append_message(&j).unwrap();
        // Read back typed: the same message.
        let e = s.tree().leaf_entry().unwrap();
        assert_eq!(&AgentMessage::from_entry(e).unwrap().unwrap(), m);
    }
    // The file holds each message exactly as Pi built it.
    let text = std::fs::read_to_string(s.path().unwrap()).unwrap();
    let stored: Vec<&str> = text.lines().skip(1).collect();
    for (l, pi_line) in stored.iter().zip(&lines) {
        assert!(
            l.ends_with(&format!(",\"message\":{pi_line}}}")),
            "{l}\nshould end with {pi_line}"
        );
    }
    assert!(matches!(
        AgentMessage::from_entry(s.tree().leaf_entry().unwrap()),
        Some(Ok(AgentMessage::Custom(CustomMessage {
            content: Content::Text(_),
            ..
        })))
    ));
}

/// Messages of every shape the interop generator writes (every writer, hostile values,
/// unknown fields and roles): reading typed and writing back never loses or changes a
/// member. (The generator puts some members in orders Pi's agent does not use; those come
/// back in Pi's order, which the test above pins down.)
#[test]
fn typed_round_trip_keeps_every_member_of_generated_sessions() {
    if !available() {
        eprintln!("SKIPPED typed_round_trip_keeps_every_member_of_generated_sessions");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    node(&[
        "gen.mjs", "--out", out, "--seed", "7", "--count", "60", "--quiet",
    ]);
    let files = sessiontree_testkit::files::jsonl_under(dir.path());
    let (mut typed, mut other, mut exact, mut unreadable) = (0, 0, 0, 0);
    for f in &files {
        let Ok(loaded) = sessiontree::load(f) else {
            continue;
        };
        for e in loaded.tree.entries() {
            let Some(read) = AgentMessage::from_entry(e) else {
                continue;
            };
            let Ok(m) = read else {
                // Only a message entry without a message object, or what serde_json cannot
                // hold (a lone surrogate).
                unreadable += 1;
                continue;
            };
            let stored = e.message().unwrap();
            if matches!(m, AgentMessage::Other(_)) {
                other += 1;
            } else {
                typed += 1;
            }
            let back = m.to_json().unwrap();
            let canonical = sessiontree::json::canonicalize(stored.bytes()).unwrap();
            if back.as_str() == canonical {
                exact += 1;
            }
            let a: Value = serde_json::from_str(back.as_str()).unwrap();
            let b: Value = serde_json::from_str(&canonical).unwrap();
            assert_eq!(a, b, "{}:{}: a member changed", f.display(), e.line);
        }
    }
    eprintln!("{typed} typed, {other} kept whole, {exact} byte-exact, {unreadable} unreadable");
    assert!(typed > 1000 && other > 100, "{typed} typed, {other} other");
    assert!(unreadable < 10);
}
