//! Interrupted work: detection, repair and the run journal.

use serde_json::json;
use sessiontree::interrupted::{
    self, calls_and_results_match, close_interrupted, detect, open_operations, CallState,
    OpenOperation, Problem, RunEvent, Scope,
};
use sessiontree::{Json, LeafArg, Session};

fn msg(s: &mut Session, v: serde_json::Value) -> String {
    s.append_message(&Json::from(v)).unwrap()
}

fn user(s: &mut Session, text: &str) -> String {
    msg(s, json!({"role":"user","content":text,"timestamp":1}))
}

fn assistant_calls(s: &mut Session, calls: &[(&str, &str)], stop: &str) -> String {
    let content: Vec<_> = calls
        .iter()
        .map(|(id, name)| json!({"type":"toolCall","id":id,"name":name,"arguments":{"command":"ls"}}))
        .collect();
    msg(
        s,
        json!({"role":"assistant","content":content,"api":"x","provider":"p","model":"m",
               "usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":stop,"timestamp":2}),
    )
}

fn result(s: &mut Session, call: &str, name: &str) -> String {
    msg(
        s,
        json!({"role":"toolResult","toolCallId":call,"toolName":name,
               "content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":3}),
    )
}

fn problems(s: &Session, scope: Scope) -> Vec<Problem> {
    detect(s.tree(), scope)
        .into_iter()
        .map(|f| f.problem)
        .collect()
}

#[test]
fn clean_path_has_no_problems() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    assistant_calls(&mut s, &[("c1", "bash"), ("c2", "read")], "toolUse");
    result(&mut s, "c1", "bash");
    result(&mut s, "c2", "read");
    assert!(problems(&s, Scope::CurrentBranch).is_empty());
    assert!(calls_and_results_match(&s.tree().get_branch(None)));
}

#[test]
fn detects_dangling_tool_call() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    let a = assistant_calls(&mut s, &[("c1", "bash"), ("c2", "read")], "toolUse");
    result(&mut s, "c1", "bash");
    let p = problems(&s, Scope::CurrentBranch);
    assert_eq!(
        p,
        vec![Problem::DanglingToolCall {
            entry_id: a,
            tool_call_id: "c2".into(),
            name: "read".into(),
            arguments: Some(r#"{"command":"ls"}"#.into()),
        }]
    );
}

#[test]
fn result_before_call_is_orphan_and_call_dangles() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    let r = result(&mut s, "c1", "bash");
    let a = assistant_calls(&mut s, &[("c1", "bash")], "toolUse");
    let p = problems(&s, Scope::CurrentBranch);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        matches!(&p[0], Problem::OrphanToolResult { entry_id, tool_call_id, .. } if *entry_id == r && tool_call_id == "c1")
    );
    assert!(matches!(&p[1], Problem::DanglingToolCall { entry_id, .. } if *entry_id == a));
}

#[test]
fn detects_orphan_and_duplicate_results() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    assistant_calls(&mut s, &[("c1", "bash")], "toolUse");
    let r1 = result(&mut s, "c1", "bash");
    let r2 = result(&mut s, "c1", "bash");
    let r3 = result(&mut s, "nope", "bash");
    let p = problems(&s, Scope::CurrentBranch);
    assert_eq!(
        p,
        vec![
            Problem::DuplicateToolResult {
                entry_id: r2,
                tool_call_id: "c1".into(),
                first_result_id: r1
            },
            Problem::OrphanToolResult {
                entry_id: r3,
                tool_call_id: "nope".into(),
                tool_name: Some("bash".into())
            },
        ]
    );
}

#[test]
fn detects_aborted_or_error_assistant_at_leaf_only() {
    for reason in ["aborted", "error"] {
        let mut s = Session::in_memory("/tmp");
        user(&mut s, "hi");
        let a = assistant_calls(&mut s, &[], reason);
        // A journal entry after it does not hide it: the last *message* counts.
        interrupted::journal_turn_finished(&mut s, None).unwrap();
        let p = problems(&s, Scope::CurrentBranch);
        assert_eq!(
            p,
            vec![Problem::AbortedAssistant {
                entry_id: a,
                stop_reason: reason.into(),
                error_message: None
            }]
        );
        // Not at the leaf any more: no problem.
        user(&mut s, "again");
        assert!(problems(&s, Scope::CurrentBranch).is_empty());
    }
}

#[test]
fn detects_compaction_keeping_missing_entry() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    let c = s
        .append_compaction("sum", Some("ghost"), 10.0, None, None, None)
        .unwrap();
    let p = problems(&s, Scope::CurrentBranch);
    assert_eq!(
        p,
        vec![Problem::MissingFirstKept {
            entry_id: c,
            first_kept_entry_id: "ghost".into()
        }]
    );
}

#[test]
fn all_branches_finds_problems_off_the_current_branch() {
    let mut s = Session::in_memory("/tmp");
    let u = user(&mut s, "hi");
    let a = assistant_calls(&mut s, &[("c1", "bash")], "toolUse");
    let bad_leaf = s.tree().leaf_id().unwrap().to_string();
    s.branch(&u).unwrap();
    assistant_calls(&mut s, &[], "stop");
    assert!(problems(&s, Scope::CurrentBranch).is_empty());
    let all = detect(s.tree(), Scope::AllBranches);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].leaf.as_deref(), Some(bad_leaf.as_str()));
    assert!(
        matches!(&all[0].problem, Problem::DanglingToolCall { entry_id, .. } if *entry_id == a)
    );
}

#[test]
fn close_interrupted_appends_one_result_per_dangling_call_and_checker_passes() {
    let mut s = Session::in_memory("/tmp");
    user(&mut s, "hi");
    assistant_calls(
        &mut s,
        &[("c1", "bash"), ("c2", "read"), ("c3", "edit")],
        "toolUse",
    );
    result(&mut s, "c2", "read");
    let before = s.tree().entries().len();
    assert!(!calls_and_results_match(&s.tree().get_branch(None)));
    let ids = close_interrupted(&mut s).unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(s.tree().entries().len(), before + 2, "appends only");
    let path = s.tree().get_branch(None);
    assert!(calls_and_results_match(&path));
    assert!(problems(&s, Scope::CurrentBranch).is_empty());
    let e = s.tree().get_entry(&ids[0]).unwrap();
    assert_eq!(
        e.message_field("toolCallId").unwrap().as_str().unwrap(),
        "c1"
    );
    assert_eq!(
        e.message_field("toolName").unwrap().as_str().unwrap(),
        "bash"
    );
    assert_eq!(e.message_field("isError").unwrap().text(), "true");
    let text = e.message_field("content").unwrap().elements()[0]
        .get("text")
        .unwrap()
        .as_str()
        .unwrap()
        .into_owned();
    assert!(text.contains("may or may not have run"), "{text}");
    // Idempotent: nothing left to close.
    assert!(close_interrupted(&mut s).unwrap().is_empty());
    // The results reach the model's context.
    let ctx = sessiontree::build_context(s.tree(), LeafArg::Default);
    assert_eq!(ctx.messages.len(), 5);
}

#[test]
fn journal_round_trip_and_open_operations() {
    let mut s = Session::in_memory("/tmp");
    let turn = interrupted::journal_turn_started(&mut s).unwrap();
    user(&mut s, "hi");
    assistant_calls(
        &mut s,
        &[("c1", "bash"), ("c2", "bash"), ("c3", "read"), ("c4", "x")],
        "toolUse",
    );
    interrupted::journal_tool_started(&mut s, "c1", "bash", false).unwrap();
    result(&mut s, "c1", "bash");
    interrupted::journal_tool_finished(&mut s, "c1", false).unwrap();
    interrupted::journal_tool_started(&mut s, "c2", "bash", false).unwrap();
    interrupted::journal_tool_started(&mut s, "c4", "x", true).unwrap();
    interrupted::journal_tool_finished(&mut s, "c4", true).unwrap();
    // Round trip of every event through the stored entries.
    let events: Vec<RunEvent> = s
        .tree()
        .entries()
        .iter()
        .filter_map(RunEvent::from_entry)
        .collect();
    assert_eq!(
        events,
        vec![
            RunEvent::TurnStarted,
            RunEvent::ToolStarted {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                replay_safe: false
            },
            RunEvent::ToolFinished {
                tool_call_id: "c1".into(),
                is_error: false
            },
            RunEvent::ToolStarted {
                tool_call_id: "c2".into(),
                tool_name: "bash".into(),
                replay_safe: false
            },
            RunEvent::ToolStarted {
                tool_call_id: "c4".into(),
                tool_name: "x".into(),
                replay_safe: true
            },
            RunEvent::ToolFinished {
                tool_call_id: "c4".into(),
                is_error: true
            },
        ]
    );
    let ops = open_operations(s.tree());
    let summary: Vec<(String, CallState, bool)> = ops
        .iter()
        .filter_map(|o| match o {
            OpenOperation::ToolCall {
                call,
                state,
                replay_safe,
            } => Some((call.tool_call_id.clone(), *state, *replay_safe)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops[0],
        OpenOperation::Turn {
            started_entry_id: turn.clone()
        }
    );
    assert_eq!(
        summary,
        vec![
            ("c2".into(), CallState::Started, false),
            ("c3".into(), CallState::NotStarted, true),
            ("c4".into(), CallState::Finished, true),
        ]
    );
    // Journal entries never reach the model.
    let ctx = sessiontree::build_context(s.tree(), LeafArg::Default);
    assert_eq!(ctx.messages.len(), 3);
    let ids = close_interrupted(&mut s).unwrap();
    let texts: Vec<String> = ids
        .iter()
        .map(|id| {
            s.tree()
                .get_entry(id)
                .unwrap()
                .message_field("content")
                .unwrap()
                .elements()[0]
                .get("text")
                .unwrap()
                .as_str()
                .unwrap()
                .into_owned()
        })
        .collect();
    assert!(texts[0].contains("may have run"), "{}", texts[0]);
    assert!(texts[1].contains("did not run"), "{}", texts[1]);
    assert!(texts[2].contains("It ran"), "{}", texts[2]);
    interrupted::journal_turn_finished(&mut s, Some(&turn)).unwrap();
    assert!(open_operations(s.tree()).is_empty());
}

#[test]
fn journal_entry_shape_is_as_documented() {
    let mut s = Session::in_memory("/tmp");
    let id = interrupted::journal_tool_started(&mut s, "c1", "bash", true).unwrap();
    let text = s.tree().get_entry(&id).unwrap().text().to_string();
    assert!(
        text.starts_with(r#"{"type":"custom","customType":"sessiontree.run","data":{"v":1,"event":"toolStarted","toolCallId":"c1","toolName":"bash","replaySafe":true},"id":""#),
        "{text}"
    );
}

#[test]
fn journal_entries_do_not_change_the_context() {
    let mut plain = Session::in_memory("/tmp");
    let mut journaled = Session::in_memory("/tmp");
    for (s, j) in [(&mut plain, false), (&mut journaled, true)] {
        let t = j.then(|| interrupted::journal_turn_started(s).unwrap());
        user(s, "hi");
        assistant_calls(s, &[("c1", "bash")], "toolUse");
        if j {
            interrupted::journal_tool_started(s, "c1", "bash", true).unwrap();
        }
        result(s, "c1", "bash");
        if j {
            interrupted::journal_tool_finished(s, "c1", false).unwrap();
        }
        assistant_calls(s, &[], "stop");
        if j {
            interrupted::journal_turn_finished(s, t.as_deref()).unwrap();
        }
    }
    let a = sessiontree::build_context(plain.tree(), LeafArg::Default).to_json();
    let b = sessiontree::build_context(journaled.tree(), LeafArg::Default).to_json();
    assert_eq!(a, b);
    assert!(open_operations(journaled.tree()).is_empty());
}
