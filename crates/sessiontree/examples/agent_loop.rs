//! An agent loop with a scripted fake model that keeps a run journal and survives being
//! killed at any point.
//!
//! ```text
//! cargo run --example agent_loop -- --session /tmp/s.jsonl [--steps 6] [--work DIR] [--delay-ms 20]
//! ```
//!
//! Turn `k`: user "step k" -> assistant calls `bash` -> the command really runs (through
//! `sh -c`) -> toolResult -> assistant "step k done". Even steps run an idempotent command
//! (replay-safe); odd steps append to a log (not replay-safe).
//!
//! On start, if the session exists, the loop asks [`open_operations`] what was in flight:
//! replay-safe calls (and calls that never started) are run again, the others are closed
//! with an error result that says whether they may have run. Then it carries on from
//! wherever the path ends. On stderr it prints one `open: <json>` line per start.

use serde_json::json;
use sessiontree::interrupted::{
    self, interrupted_result, journal_tool_finished, journal_tool_started, journal_turn_finished,
    journal_turn_started, now_ms, open_operations, Call, OpenOperation, RunEvent,
};
use sessiontree::{Entry, Json, Session, WriteOptions};
use std::path::{Path, PathBuf};

struct Args {
    session: PathBuf,
    steps: usize,
    work: PathBuf,
    delay_ms: u64,
}

fn args() -> Args {
    let mut a = std::env::args().skip(1);
    let mut session = None;
    let mut steps = 6;
    let mut work = None;
    let mut delay_ms = 20;
    while let Some(k) = a.next() {
        let v = a.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--session" => session = Some(PathBuf::from(v)),
            "--steps" => steps = v.parse().expect("--steps N"),
            "--work" => work = Some(PathBuf::from(v)),
            "--delay-ms" => delay_ms = v.parse().expect("--delay-ms N"),
            _ => panic!("unknown option {k}"),
        }
    }
    let session = session.expect("--session FILE");
    let work = work.unwrap_or_else(|| {
        session
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ".".into())
    });
    Args {
        session,
        steps,
        work,
        delay_ms,
    }
}

/// The fake model's command for step `k`.
fn command_for(k: usize, a: &Args) -> String {
    let d = a.delay_ms as f64 / 1000.0;
    let w = a.work.display();
    if k.is_multiple_of(2) {
        format!("sleep {d}; printf 'step {k}\\n' > '{w}/safe_{k}.txt'")
    } else {
        format!("sleep {d}; echo 'step {k}' >> '{w}/unsafe.log'")
    }
}

/// The agent's policy: a command is replay-safe when it does not append.
fn replay_safe(command: &str) -> bool {
    !command.contains(">>")
}

fn assistant(content: serde_json::Value, stop: &str) -> Json {
    Json::from(json!({
        "role": "assistant", "content": content, "api": "fake", "provider": "fake",
        "model": "scripted", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": stop, "timestamp": now_ms()
    }))
}

/// Journal start, run, append the result, journal finish.
fn run_tool(s: &mut Session, call: &Call) -> sessiontree::Result<()> {
    let args: serde_json::Value = call
        .arguments
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(json!({}));
    let command = args["command"].as_str().unwrap_or("").to_string();
    journal_tool_started(s, &call.tool_call_id, &call.name, replay_safe(&command))?;
    let (text, is_error) = match std::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .output()
    {
        Ok(o) => (
            format!(
                "{}{}exit {}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr),
                o.status.code().unwrap_or(-1)
            ),
            !o.status.success(),
        ),
        Err(e) => (format!("cannot run: {e}"), true),
    };
    s.append_message(&Json::from(json!({
        "role": "toolResult", "toolCallId": call.tool_call_id, "toolName": call.name,
        "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": now_ms()
    })))?;
    journal_tool_finished(s, &call.tool_call_id, is_error)?;
    Ok(())
}

/// Replays or closes what the last run left in flight.
fn recover(s: &mut Session) -> sessiontree::Result<()> {
    let ops = open_operations(s.tree());
    eprintln!("open: {}", serde_json::to_string(&ops).unwrap());
    for op in ops {
        if let OpenOperation::ToolCall {
            call,
            state,
            replay_safe,
        } = op
        {
            if replay_safe {
                run_tool(s, &call)?;
            } else {
                s.append_message(&interrupted_result(&call, state, now_ms()))?;
            }
        }
    }
    Ok(())
}

fn step_of(e: &Entry) -> Option<usize> {
    let c = e.message_field("content")?.as_str()?;
    c.strip_prefix("step ")?.parse().ok()
}

fn main() -> sessiontree::Result<()> {
    let a = args();
    std::fs::create_dir_all(&a.work).expect("work dir");
    let existed = a.session.exists();
    let mut s = Session::open(&a.session, WriteOptions::default())?;
    if existed {
        recover(&mut s)?;
    }
    loop {
        let path = s.tree().get_branch(None);
        let last_msg = path
            .iter()
            .rposition(|e| e.entry_type == sessiontree::EntryType::Message);
        // The open turn, and whether it began after the last message.
        let mut open_turn: Option<(String, usize)> = None;
        for (i, e) in path.iter().enumerate() {
            match RunEvent::from_entry(e) {
                Some(RunEvent::TurnStarted) => {
                    open_turn = Some((e.id().unwrap_or_default().to_string(), i))
                }
                Some(RunEvent::TurnFinished { .. }) => open_turn = None,
                _ => {}
            }
        }
        let users: Vec<usize> = path
            .iter()
            .filter(|e| e.is_role("user"))
            .filter_map(|e| step_of(e))
            .collect();
        let dangling = interrupted::dangling_calls(&path);
        let last = last_msg.map(|i| path[i]);
        let role = last.and_then(|e| e.role()).map(str::to_string);
        drop(path);
        if !dangling.is_empty() {
            for c in &dangling {
                run_tool(&mut s, c)?;
            }
            continue;
        }
        match role.as_deref() {
            Some("user") => {
                let k = *users.last().expect("a step");
                let cmd = command_for(k, &a);
                s.append_message(&assistant(
                    json!([{"type": "toolCall", "id": format!("call_{k}"), "name": "bash",
                            "arguments": {"command": cmd}}]),
                    "toolUse",
                ))?;
            }
            Some("toolResult") => {
                let k = *users.last().expect("a step");
                s.append_message(&assistant(
                    json!([{"type": "text", "text": format!("step {k} done")}]),
                    "stop",
                ))?;
            }
            _ => {
                // No message yet, or the last turn's answer: finish or start a turn.
                if let Some((id, at)) = &open_turn {
                    if last_msg.is_some_and(|m| m > *at) {
                        journal_turn_finished(&mut s, Some(id))?;
                        continue;
                    }
                }
                let next = users.last().map_or(0, |k| k + 1);
                if next >= a.steps {
                    break;
                }
                if open_turn.is_none() {
                    journal_turn_started(&mut s)?;
                }
                s.append_message(&Json::from(json!({
                    "role": "user", "content": format!("step {next}"), "timestamp": now_ms()
                })))?;
            }
        }
    }
    Ok(())
}
