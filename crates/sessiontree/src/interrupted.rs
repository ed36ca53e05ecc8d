//! Interrupted work: detection (from [`sessiontree_core::interrupted`], re-exported here)
//! and what needs a session file: the run journal and closing dangling tool calls.
//!
//! Repair appends `toolResult` messages on the current branch; nothing is ever
//! rewritten. The journal is a series of `custom` entries (`customType:
//! "sessiontree.run"`), which never reach the model's context; their shapes are in
//! `docs/run-journal.md`.

pub use sessiontree_core::interrupted::*;

use crate::error::Result;
use crate::session::Session;

/// Appends one journal event under the leaf; returns the entry id.
pub fn journal(session: &mut Session, event: &RunEvent) -> Result<String> {
    session.append_custom_entry(JOURNAL_TYPE, Some(&event.to_json()))
}

/// `turnStarted`; the returned id names the turn in [`journal_turn_finished`].
pub fn journal_turn_started(session: &mut Session) -> Result<String> {
    journal(session, &RunEvent::TurnStarted)
}

/// `turnFinished` for the turn `turn` names (the id [`journal_turn_started`] returned);
/// returns the entry id.
pub fn journal_turn_finished(session: &mut Session, turn: Option<&str>) -> Result<String> {
    journal(
        session,
        &RunEvent::TurnFinished {
            turn: turn.map(str::to_string),
        },
    )
}

/// To be appended just before a tool runs. `replay_safe`: running it again does no harm
/// (reads, idempotent writes).
pub fn journal_tool_started(
    session: &mut Session,
    tool_call_id: &str,
    tool_name: &str,
    replay_safe: bool,
) -> Result<String> {
    journal(
        session,
        &RunEvent::ToolStarted {
            tool_call_id: tool_call_id.to_string(),
            tool_name: tool_name.to_string(),
            replay_safe,
        },
    )
}

/// To be appended after the tool's `toolResult` message.
pub fn journal_tool_finished(
    session: &mut Session,
    tool_call_id: &str,
    is_error: bool,
) -> Result<String> {
    journal(
        session,
        &RunEvent::ToolFinished {
            tool_call_id: tool_call_id.to_string(),
            is_error,
        },
    )
}

/// Appends on the current branch one error `toolResult` per tool call that has none,
/// in call order; returns the new entry ids. Appends only; nothing when nothing dangles.
pub fn close_interrupted(session: &mut Session) -> Result<Vec<String>> {
    let ops = open_operations(session.tree());
    let mut ids = Vec::new();
    for op in ops {
        if let OpenOperation::ToolCall { call, state, .. } = op {
            ids.push(session.append_message(&interrupted_result(&call, state, now_ms()))?);
        }
    }
    Ok(ids)
}
