//! Interrupted work: what a crash (or a kill, or an abort) left half done on a path, how
//! to make it safe (append-only), and the run journal an agent keeps so that a restarted
//! agent knows what was in flight and whether it may be replayed.
//!
//! Detection is pure (a [`SessionTree`] in, data out). Repair appends `toolResult`
//! messages on the current branch; nothing is ever rewritten. The journal is a series of
//! `custom` entries (`customType: "sessiontree.run"`), which never reach the model's
//! context; their shapes are in `docs/run-journal.md`.

use crate::entry::{Entry, EntryType};
use crate::json::Json;
use crate::json::{Kind, Raw};
use crate::tree::SessionTree;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The `customType` of run-journal entries.
pub const JOURNAL_TYPE: &str = "sessiontree.run";

/// One thing left half done on a path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Problem {
    /// An assistant `toolCall` block with no later `toolResult` for its id on the path.
    #[serde(rename_all = "camelCase")]
    DanglingToolCall {
        /// The assistant message entry holding the call.
        entry_id: String,
        /// The call's `id` (what a `toolResult` answers with `toolCallId`).
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// `arguments` as JSON text, if present.
        arguments: Option<String>,
    },
    /// A `toolResult` message whose `toolCallId` names no earlier call on the path.
    #[serde(rename_all = "camelCase")]
    OrphanToolResult {
        /// The `toolResult` message entry.
        entry_id: String,
        /// Its `toolCallId`.
        tool_call_id: String,
        /// Its `toolName`, when it is a string.
        tool_name: Option<String>,
    },
    /// A second `toolResult` for a call that already has one on the path.
    #[serde(rename_all = "camelCase")]
    DuplicateToolResult {
        /// The second result's entry.
        entry_id: String,
        /// The call both results answer.
        tool_call_id: String,
        /// The entry holding the first result.
        first_result_id: String,
    },
    /// The last message on the path is an assistant message that stopped with
    /// `aborted` or `error`.
    #[serde(rename_all = "camelCase")]
    AbortedAssistant {
        /// The assistant message entry.
        entry_id: String,
        /// Its `stopReason` (`aborted` or `error`).
        stop_reason: String,
        /// Its `errorMessage`, when it has one.
        error_message: Option<String>,
    },
    /// A compaction on the path whose `firstKeptEntryId` names no entry.
    #[serde(rename_all = "camelCase")]
    MissingFirstKept {
        /// The compaction entry.
        entry_id: String,
        /// The id it names.
        first_kept_entry_id: String,
    },
}

impl Problem {
    /// The entry the problem is about.
    pub fn entry_id(&self) -> &str {
        match self {
            Problem::DanglingToolCall { entry_id, .. }
            | Problem::OrphanToolResult { entry_id, .. }
            | Problem::DuplicateToolResult { entry_id, .. }
            | Problem::AbortedAssistant { entry_id, .. }
            | Problem::MissingFirstKept { entry_id, .. } => entry_id,
        }
    }

    /// A one-line description for people.
    pub fn describe(&self) -> String {
        match self {
            Problem::DanglingToolCall {
                entry_id,
                tool_call_id,
                name,
                ..
            } => format!("{entry_id}: tool call {tool_call_id} ({name}) has no result"),
            Problem::OrphanToolResult {
                entry_id,
                tool_call_id,
                ..
            } => format!("{entry_id}: tool result for {tool_call_id}, which no earlier call on the path made"),
            Problem::DuplicateToolResult {
                entry_id,
                tool_call_id,
                first_result_id,
            } => format!("{entry_id}: second tool result for {tool_call_id} (first: {first_result_id})"),
            Problem::AbortedAssistant {
                entry_id,
                stop_reason,
                error_message,
            } => match error_message {
                Some(m) => format!("{entry_id}: the last assistant message stopped with {stop_reason}: {m}"),
                None => format!("{entry_id}: the last assistant message stopped with {stop_reason}"),
            },
            Problem::MissingFirstKept {
                entry_id,
                first_kept_entry_id,
            } => format!("{entry_id}: compaction keeps from {first_kept_entry_id}, which names no entry"),
        }
    }
}

/// A problem and the leaf of the branch it was found on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The leaf of the path searched (`None`: the leaf is null).
    pub leaf: Option<String>,
    #[serde(flatten)]
    /// What is wrong.
    pub problem: Problem,
}

/// Which paths to search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scope {
    /// The path from the root to the current leaf.
    #[default]
    CurrentBranch,
    /// The path to every leaf (every entry with no children). A problem on a shared
    /// prefix is reported once, with the first leaf (in file order) it was found from.
    AllBranches,
}

fn s(v: Option<Raw<'_>>) -> Option<String> {
    v.and_then(|v| v.as_str()).map(|c| c.into_owned())
}

/// The `toolCall` blocks of an assistant message entry: (id, name, arguments JSON).
pub(crate) fn tool_calls(e: &Entry) -> Vec<(String, String, Option<String>)> {
    if !e.is_role("assistant") {
        return Vec::new();
    }
    let Some(content) = e.message_field("content") else {
        return Vec::new();
    };
    content
        .elements()
        .into_iter()
        .filter(|b| b.kind() == Kind::Object)
        .filter(|b| s(b.get("type")).as_deref() == Some("toolCall"))
        .filter_map(|b| {
            let id = s(b.get("id"))?;
            let name = s(b.get("name")).unwrap_or_default();
            let args = b.get("arguments").map(|a| a.text().to_string());
            Some((id, name, args))
        })
        .collect()
}

/// A `toolCall` block found on a path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    /// The assistant message entry holding the call.
    pub entry_id: String,
    /// The call's `id`.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// `arguments` as JSON text, if present.
    pub arguments: Option<String>,
    /// The first `toolResult` entry for it on the path, if any.
    pub result_id: Option<String>,
}

/// Every tool call on a path, in order, with its first result. Also returns the problems
/// about results (orphans and duplicates) found on the way.
fn scan_calls(path: &[&Entry]) -> (Vec<Call>, Vec<Problem>) {
    let mut calls: Vec<Call> = Vec::new();
    let mut by_call: HashMap<String, usize> = HashMap::new();
    let mut problems = Vec::new();
    for e in path {
        let id = e.id().unwrap_or_default().to_string();
        if e.is_role("assistant") {
            for (call_id, name, arguments) in tool_calls(e) {
                by_call.insert(call_id.clone(), calls.len());
                calls.push(Call {
                    entry_id: id.clone(),
                    tool_call_id: call_id,
                    name,
                    arguments,
                    result_id: None,
                });
            }
        } else if e.is_role("toolResult") {
            let call_id = s(e.message_field("toolCallId")).unwrap_or_default();
            match by_call.get(&call_id) {
                None => problems.push(Problem::OrphanToolResult {
                    entry_id: id,
                    tool_call_id: call_id,
                    tool_name: s(e.message_field("toolName")),
                }),
                Some(&i) => match &calls[i].result_id {
                    Some(first) => problems.push(Problem::DuplicateToolResult {
                        entry_id: id,
                        tool_call_id: call_id,
                        first_result_id: first.clone(),
                    }),
                    None => calls[i].result_id = Some(id),
                },
            }
        }
    }
    (calls, problems)
}

/// Tool calls on a path with no result after them, in order.
pub fn dangling_calls(path: &[&Entry]) -> Vec<Call> {
    scan_calls(path)
        .0
        .into_iter()
        .filter(|c| c.result_id.is_none())
        .collect()
}

/// Problems on one path (root first), in path order of the entry they are about.
pub(crate) fn detect_path(tree: &SessionTree, path: &[&Entry]) -> Vec<Problem> {
    let (calls, result_problems) = scan_calls(path);
    let mut out: Vec<Problem> = Vec::new();
    for e in path {
        if e.entry_type == EntryType::Compaction {
            if let Some(k) = e.str_field("firstKeptEntryId") {
                if !tree.contains(&k) {
                    out.push(Problem::MissingFirstKept {
                        entry_id: e.id().unwrap_or_default().to_string(),
                        first_kept_entry_id: k.into_owned(),
                    });
                }
            }
        }
    }
    for c in calls.into_iter().filter(|c| c.result_id.is_none()) {
        out.push(Problem::DanglingToolCall {
            entry_id: c.entry_id,
            tool_call_id: c.tool_call_id,
            name: c.name,
            arguments: c.arguments,
        });
    }
    out.extend(result_problems);
    if let Some(last) = path
        .iter()
        .rev()
        .find(|e| e.entry_type == EntryType::Message)
    {
        if last.is_role("assistant") {
            if let Some(r) = s(last.message_field("stopReason")) {
                if r == "aborted" || r == "error" {
                    out.push(Problem::AbortedAssistant {
                        entry_id: last.id().unwrap_or_default().to_string(),
                        stop_reason: r,
                        error_message: s(last.message_field("errorMessage")),
                    });
                }
            }
        }
    }
    let pos: HashMap<&str, usize> = path
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.id().map(|id| (id, i)))
        .collect();
    out.sort_by_key(|p| pos.get(p.entry_id()).copied().unwrap_or(usize::MAX));
    out
}

/// Problems on the current branch or on every branch.
pub fn detect(tree: &SessionTree, scope: Scope) -> Vec<Finding> {
    match scope {
        Scope::CurrentBranch => {
            let leaf = tree.leaf_id().map(str::to_string);
            detect_path(tree, &tree.get_branch(None))
                .into_iter()
                .map(|problem| Finding {
                    leaf: leaf.clone(),
                    problem,
                })
                .collect()
        }
        Scope::AllBranches => {
            let parents: HashSet<&str> = tree
                .entries()
                .iter()
                .filter_map(|e| e.parent.walk_id())
                .filter(|p| tree.contains(p))
                .collect();
            let mut seen: HashSet<Problem> = HashSet::new();
            let mut out = Vec::new();
            let mut leaves_done: HashSet<&str> = HashSet::new();
            for e in tree.entries() {
                let Some(id) = e.id() else { continue };
                if parents.contains(id) || !leaves_done.insert(id) {
                    continue;
                }
                for problem in detect_path(tree, &tree.get_branch(Some(id))) {
                    if seen.insert(problem.clone()) {
                        out.push(Finding {
                            leaf: Some(id.to_string()),
                            problem,
                        });
                    }
                }
            }
            out
        }
    }
}

/// True when every tool call on the path has exactly one result, after it, and every
/// result answers an earlier call: the checker the repair must satisfy.
pub fn calls_and_results_match(path: &[&Entry]) -> bool {
    let (calls, problems) = scan_calls(path);
    problems.is_empty() && calls.iter().all(|c| c.result_id.is_some())
}

// ---------------------------------------------------------------------------------------
// The run journal.

/// What the journal says about one tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CallState {
    /// No journal on the path: nothing is known.
    Unknown,
    /// The journal is kept but never recorded the call starting: it did not run.
    NotStarted,
    /// Recorded as started, not as finished: it may have run, fully or in part.
    Started,
    /// Recorded as finished, but its result message is missing: it ran.
    Finished,
}

/// An event of the run journal (the `data` of a `sessiontree.run` custom entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEvent {
    /// The agent began a turn (a model request and the tools it calls).
    TurnStarted,
    /// `turn` is the id of the `turnStarted` entry.
    TurnFinished {
        /// `turn`: the id of the `turnStarted` entry it closes.
        turn: Option<String>,
    },
    /// The agent is about to run a tool call.
    ToolStarted {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// Running the call again does no harm (a read, say), so recovery may replay it.
        replay_safe: bool,
    },
    /// The tool call returned (its result message follows).
    ToolFinished {
        /// The call's id.
        tool_call_id: String,
        /// The tool reported a failure.
        is_error: bool,
    },
}

impl RunEvent {
    /// The `data` object stored for this event.
    pub fn to_json(&self) -> Json {
        let v = match self {
            RunEvent::TurnStarted => serde_json::json!({"v": 1, "event": "turnStarted"}),
            RunEvent::TurnFinished { turn } => {
                serde_json::json!({"v": 1, "event": "turnFinished", "turn": turn})
            }
            RunEvent::ToolStarted {
                tool_call_id,
                tool_name,
                replay_safe,
            } => serde_json::json!({
                "v": 1, "event": "toolStarted", "toolCallId": tool_call_id,
                "toolName": tool_name, "replaySafe": replay_safe
            }),
            RunEvent::ToolFinished {
                tool_call_id,
                is_error,
            } => serde_json::json!({
                "v": 1, "event": "toolFinished", "toolCallId": tool_call_id, "isError": is_error
            }),
        };
        Json::from(v)
    }

    /// Reads a journal entry; `None` for any other entry (or an event this version does
    /// not know).
    pub fn from_entry(e: &Entry) -> Option<RunEvent> {
        if e.entry_type != EntryType::Custom
            || e.str_field("customType").as_deref() != Some(JOURNAL_TYPE)
        {
            return None;
        }
        let d = e.field("data")?;
        let call = || s(d.get("toolCallId"));
        match s(d.get("event"))?.as_str() {
            "turnStarted" => Some(RunEvent::TurnStarted),
            "turnFinished" => Some(RunEvent::TurnFinished {
                turn: s(d.get("turn")),
            }),
            "toolStarted" => Some(RunEvent::ToolStarted {
                tool_call_id: call()?,
                tool_name: s(d.get("toolName")).unwrap_or_default(),
                replay_safe: d.get("replaySafe").is_some_and(|b| b.kind() == Kind::True),
            }),
            "toolFinished" => Some(RunEvent::ToolFinished {
                tool_call_id: call()?,
                is_error: d.get("isError").is_some_and(|b| b.kind() == Kind::True),
            }),
            _ => None,
        }
    }
}

/// Something in flight when the agent stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum OpenOperation {
    /// A turn whose `turnStarted` has no `turnFinished` after it on the path.
    #[serde(rename_all = "camelCase")]
    Turn {
        /// The `turnStarted` journal entry.
        started_entry_id: String,
    },
    /// A tool call without a result on the path.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        #[serde(flatten)]
        /// The call.
        call: Call,
        /// What the journal says about it.
        state: CallState,
        /// May be run (again) without harm: it never started, or the journal marked it
        /// replay-safe when it started. Unknown calls are never replay-safe.
        replay_safe: bool,
    },
}

struct JournalView {
    used: bool,
    started: HashMap<String, bool>,
    finished: HashSet<String>,
    open_turn: Option<String>,
}

fn journal_view(path: &[&Entry]) -> JournalView {
    let mut v = JournalView {
        used: false,
        started: HashMap::new(),
        finished: HashSet::new(),
        open_turn: None,
    };
    for e in path {
        let Some(ev) = RunEvent::from_entry(e) else {
            continue;
        };
        v.used = true;
        match ev {
            RunEvent::TurnStarted => v.open_turn = e.id().map(str::to_string),
            RunEvent::TurnFinished { .. } => v.open_turn = None,
            RunEvent::ToolStarted {
                tool_call_id,
                replay_safe,
                ..
            } => {
                v.started.insert(tool_call_id, replay_safe);
            }
            RunEvent::ToolFinished { tool_call_id, .. } => {
                v.finished.insert(tool_call_id);
            }
        }
    }
    v
}

fn state_of(j: &JournalView, call_id: &str) -> (CallState, bool) {
    if !j.used {
        return (CallState::Unknown, false);
    }
    match j.started.get(call_id) {
        None => (CallState::NotStarted, true),
        Some(&safe) if j.finished.contains(call_id) => (CallState::Finished, safe),
        Some(&safe) => (CallState::Started, safe),
    }
}

/// What was in flight on a path: the open turn (if any) first, then every tool call
/// without a result, in order.
pub(crate) fn open_operations_on(path: &[&Entry]) -> Vec<OpenOperation> {
    let j = journal_view(path);
    let mut out = Vec::new();
    if let Some(t) = &j.open_turn {
        out.push(OpenOperation::Turn {
            started_entry_id: t.clone(),
        });
    }
    for call in dangling_calls(path) {
        let (state, replay_safe) = state_of(&j, &call.tool_call_id);
        out.push(OpenOperation::ToolCall {
            call,
            state,
            replay_safe,
        });
    }
    out
}

/// What was in flight on the current branch: the open turn (if any) first, then every
/// tool call without a result, in path order.
pub fn open_operations(tree: &SessionTree) -> Vec<OpenOperation> {
    open_operations_on(&tree.get_branch(None))
}

/// The text of the result that closes an interrupted call.
pub(crate) fn interrupted_text(state: CallState) -> &'static str {
    match state {
        CallState::Unknown => "The tool call was interrupted before it returned a result (the agent stopped). It may or may not have run; check its effects before retrying.",
        CallState::Started => "The tool call was interrupted before it returned a result (the agent stopped). It had started and may have run, fully or in part; check its effects before retrying.",
        CallState::NotStarted => "The tool call was interrupted before it started (the agent stopped). It did not run.",
        CallState::Finished => "The tool call finished but its result was lost (the agent stopped). It ran; check its effects before retrying.",
    }
}

/// The `toolResult` message that closes an interrupted call (`isError: true`).
pub fn interrupted_result(call: &Call, state: CallState, timestamp_ms: u64) -> Json {
    Json::from(serde_json::json!({
        "role": "toolResult",
        "toolCallId": call.tool_call_id,
        "toolName": call.name,
        "content": [{"type": "text", "text": interrupted_text(state)}],
        "isError": true,
        "timestamp": timestamp_ms,
    }))
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
