//! `sessiontree interrupted` / `close-interrupted` end to end.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sessiontree"))
}

#[test]
fn lists_then_closes_interrupted_calls() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::write(
        &f,
        concat!(
            r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-000000000000","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}"#, "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","timestamp":2}}"#, "\n",
        ),
    )
    .unwrap();
    let o = bin().arg("interrupted").arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("a1: tool call call_1 (bash) has no result"),
        "{text}"
    );
    let o = bin()
        .args(["interrupted", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["kind"], "danglingToolCall");
    assert_eq!(v[0]["toolCallId"], "call_1");
    assert_eq!(v[0]["entryId"], "a1");
    assert_eq!(v[0]["leaf"], "a1");

    let o = bin().arg("close-interrupted").arg(&f).output().unwrap();
    let ids = sessiontree_testkit::run::exit(&o, 0);
    assert_eq!(ids.lines().count(), 1);
    let o = bin().arg("interrupted").arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
    let last = std::fs::read_to_string(&f).unwrap();
    let last = last.lines().last().unwrap();
    assert!(
        last.contains(r#""role":"toolResult","toolCallId":"call_1","toolName":"bash""#),
        "{last}"
    );
    assert!(last.contains(r#""isError":true"#));
}
