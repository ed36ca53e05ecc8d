//! The tools: names (stable, client configurations name them), descriptions a model can
//! act on, and JSON input schemas.

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const SEARCH: &str = "search_sessions";
pub const LIST: &str = "list_sessions";
pub const READ: &str = "read_session";
pub const USAGE: &str = "usage_summary";

/// Roles a search can be limited to (as `sessiontree search --role`).
pub const ROLES: &[&str] = &[
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "compaction",
    "branch_summary",
];

pub const VIEWS: &[&str] = &["context", "branch", "tree", "entry"];
pub const BY: &[&str] = &["model", "provider", "day", "session"];

pub const INSTRUCTIONS: &str = "\
Past coding-agent sessions on this machine (Pi, and Claude Code / Codex sessions imported \
into Pi's format), every branch included. A session is a tree: retries and edits leave \
abandoned branches, the current branch is what the model last saw. Use search_sessions to \
find where something was said (newest first), list_sessions to see recent sessions, \
read_session to read one (what the model saw, a branch, the whole tree, or one entry), and \
usage_summary for tokens and cost. With a shared archive configured, searches, listings and \
reads also cover the archive's sessions (other machines', and those shared with you), with \
the owner and machine of each. Answers are bounded; pass nextCursor back as cursor to read \
on. Credentials in answers are replaced by [REDACTED:<kind>]. Nothing is ever written.";

const DATE: &str =
    "an ISO date or date-time (2025-01-31, 2025-01-31T12:00Z) or an age: 30m, 12h, 7d, 2w";

fn schema(props: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let v = json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    });
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("a JSON object literal"),
    }
}

fn read_only(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// Every tool, in the order a client lists them.
pub fn all() -> Vec<Tool> {
    vec![
        Tool::new(
            SEARCH,
            "Full-text search over every past session's messages, tool output and summaries \
             (not JSON keys), abandoned branches included. Every word of `query` must occur in \
             the same entry, in any order, ASCII case-insensitive; put the query in double \
             quotes for an exact phrase. Hits come newest first, each with the session id, \
             the entry id, role, time, working directory, a snippet around the match, whether \
             the entry is on the session's current branch or an abandoned one, and a `ref` \
             (FILE#ENTRY, or ID#ENTRY for an archived copy) to pass to read_session as \
             `session` to read around it. With an archive configured, hits also come from \
             the shared archive (every machine's copies of your sessions and sessions \
             shared with you), each with its `owner` and `machine`. For older hits pass \
             the answer's nextCursor back as `cursor` (with the same other arguments).",
            schema(
                json!({
                    "query": {"type": "string", "description": "Words that must all occur in one entry (any order, any case), or \"an exact phrase\" in double quotes."},
                    "cwd": {"type": "string", "description": "Only sessions of this working directory (absolute path)."},
                    "since": {"type": "string", "description": format!("Only entries written at or after this time: {DATE}.")},
                    "until": {"type": "string", "description": format!("Only entries written before this time: {DATE}.")},
                    "role": {"type": "string", "enum": ROLES, "description": "Only entries of this role: user (what the user typed), assistant (the model's replies), toolResult (tool output), bashExecution (commands the user ran), custom, compaction or branch_summary (summaries)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "At most this many hits (default 20)."},
                    "cursor": {"type": "string", "description": "nextCursor from the previous page of the same search: the hits after it."}
                }),
                &["query"],
            ),
        )
        .annotate(read_only("Search past sessions")),
        Tool::new(
            LIST,
            "Past sessions, most recently active first: id, name (or the first user \
             message), working directory, when it was created and last active, how many \
             messages, which agent wrote it (Pi, Claude Code, Codex) and, for a fork, the \
             session it was forked from. With an archive configured, the archive's sessions \
             too, each with its `owner` and `machine` (a session that is here is listed \
             once, with the machines of its archived copies). Pass an id to read_session \
             to read one; pass nextCursor back as `cursor` for the next page.",
            schema(
                json!({
                    "cwd": {"type": "string", "description": "Only sessions of this working directory (absolute path)."},
                    "since": {"type": "string", "description": format!("Only sessions active at or after this time: {DATE}.")},
                    "query": {"type": "string", "description": "Only sessions whose name or first user message contains this text (any case). To find sessions by anything said in them, use search_sessions."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20, "description": "At most this many sessions (default 20)."},
                    "cursor": {"type": "string", "description": "nextCursor from the previous page of the same listing: the sessions after it."}
                }),
                &[],
            ),
        )
        .annotate(read_only("List past sessions")),
        Tool::new(
            READ,
            "Reads one session. view \"context\" (default): exactly the messages the model \
             saw at the session's leaf, or at `entry` (what it would see from there; \
             compactions applied). \"branch\": every entry on the path from the root to the \
             leaf or `entry`. \"tree\": every branch, one line per entry, with labels, the \
             current path marked * and the leaf marked <leaf. \"entry\": one entry whole (its \
             JSON). Long answers come in pages: pass the returned nextCursor back as \
             `cursor` (with the same session, entry and view) to read on.",
            schema(
                json!({
                    "session": {"type": "string", "description": "A session id, a unique prefix of one, a session file's path, or FILE#ENTRY (ID#ENTRY for an archived copy) as search_sessions gives in `ref`. With an archive configured, an id no local session has is read from the archive."},
                    "entry": {"type": "string", "description": "An entry id: the leaf for context and branch, the entry to show for entry (required there unless session is FILE#ENTRY)."},
                    "view": {"type": "string", "enum": VIEWS, "default": "context", "description": "context, branch, tree or entry (see the tool's description)."},
                    "cursor": {"type": "string", "description": "nextCursor from the previous page of the same read."}
                }),
                &["session"],
            ),
        )
        .annotate(read_only("Read a past session")),
        Tool::new(
            USAGE,
            "Tokens and cost recorded in every session (assistant usage and usage entries, \
             every branch, an entry copied into forks counted once), summed by model, \
             provider, day or session, with the total first. The sessions on this machine \
             only (not the archive's).",
            schema(
                json!({
                    "since": {"type": "string", "description": format!("Only usage recorded at or after this time: {DATE}.")},
                    "by": {"type": "string", "enum": BY, "default": "model", "description": "What one row is: model (provider/model), provider, day (UTC) or session."}
                }),
                &[],
            ),
        )
        .annotate(read_only("Token usage and cost")),
    ]
}
