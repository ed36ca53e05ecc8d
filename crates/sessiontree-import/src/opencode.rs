//! OpenCode sessions (`$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`): the SQLite
//! database `opencode.db` (tables `session`, `message`, `part`, each row's JSON in `data`,
//! and the append-only `event` log), or, in older installs, the JSON tree
//! `storage/{session/<project>,message/<session>,part/<message>}/<id>.json`.
//!
//! * A session: its row (id, directory, title, `parent_id`, `revert`) and its messages in
//!   id order (OpenCode's ids grow with time).
//! * A user message -> Pi `user` (text and image parts; texts OpenCode marks `ignored`
//!   are not sent and are left out); one with a `compaction` part, followed by the
//!   assistant message OpenCode marks `summary: true`, -> one Pi `compaction` keeping
//!   nothing before it (OpenCode then sends that summary and what follows).
//! * An assistant message -> per step (`step-start` .. `step-finish`) one Pi assistant
//!   message (`reasoning` -> `thinking`, `text`, `tool` -> `toolCall` with the call id and
//!   the tool's input), the step's usage and finish reason, then one `toolResult` per tool
//!   part (its output, or its error).
//! * A subagent is a child session (`parent_id`): its own Pi session with `parentSession`.
//! * A fork is a new session holding copies of its parent's messages under new ids, with
//!   the original times, and no link: entry ids are derived from what a copy keeps (role,
//!   creation time), so a copy's entries get the ids of its original's, and the original is
//!   found as for Claude Code copies ([`crate::copies`]).
//! * A revert: OpenCode deletes the reverted messages at the next prompt; they survive in
//!   the `event` log (`message.updated`, `message.part.updated`, `message.removed`) and are
//!   put back as an abandoned branch, the next prompt continuing from before them. A revert
//!   not followed by a prompt yet (the session's `revert`) leaves the messages in place: they
//!   are the abandoned branch, and a `custom` `opencode:revert` entry under the message
//!   before them is the active leaf.
//!
//! The database is opened read-only (OpenCode may be writing it: WAL mode) and read in one
//! transaction; nothing is ever written to it. Its rows' text is copied once, into arenas
//! (not a string per row), and the parts are counted per session before they are read, so
//! that each session is converted (and written, by [`convert_each`]'s caller) on the other
//! cores as soon as its last part is read.

use crate::jv::{self, obj, Obj, V};
use crate::node::{self, Body, Nodes};
use crate::{Agent, Conversion, Problem};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One session as read from the database or the JSON tree (the rows' JSON text, parsed in
/// [`convert`]).
#[derive(Clone, Debug, Default)]
pub struct SessionData {
    pub id: String,
    pub parent_id: Option<String>,
    pub directory: String,
    pub title: String,
    /// Epoch ms.
    pub time_created: i64,
    /// The session's pending revert (JSON: `{messageID, partID?, ...}`).
    pub revert: Option<String>,
    /// In id order, the messages deleted by a revert (recovered from the event log)
    /// among them.
    pub messages: Vec<MessageData>,
}

#[derive(Clone, Debug, Default)]
pub struct MessageData {
    pub id: String,
    /// Epoch ms (the row's `time_created`; the data's `time.created` wins when present).
    pub time_created: i64,
    /// The message's JSON.
    pub data: String,
    /// Its parts' JSON, in id order.
    pub parts: Vec<String>,
    /// Deleted from the tables (a revert); recovered from the event log.
    pub removed: bool,
}

/// The title OpenCode gives a session before it has one ("New session - <time>").
fn default_title(t: &str) -> bool {
    t.is_empty() || t.starts_with("New session - ") || t.starts_with("Child session - ")
}

fn parse(text: &str) -> Option<Obj<'_>> {
    match jv::parse(text)? {
        V::Obj(o) => Some(o),
        _ => None,
    }
}

fn s<'v>(o: &'v Obj<'_>, k: &str) -> Option<&'v str> {
    o.get(k).and_then(V::as_str)
}

fn num(v: Option<&V<'_>>) -> f64 {
    v.and_then(V::as_f64).unwrap_or(0.0)
}

/// Pi's usage from OpenCode's `tokens` (`{input, output, reasoning, cache: {read, write}}`).
fn usage(t: Option<&V<'_>>) -> V<'static> {
    let Some(t) = t else {
        return node::usage(0.0, 0.0, 0.0, 0.0, None);
    };
    let cache = t.get("cache");
    let (input, output) = (
        num(t.get("input")),
        num(t.get("output")) + num(t.get("reasoning")),
    );
    let (read, write) = (
        num(cache.and_then(|c| c.get("read"))),
        num(cache.and_then(|c| c.get("write"))),
    );
    let total = t.get("total").and_then(V::as_f64);
    node::usage(input, output, read, write, total)
}

/// The context size a request reported (what a compaction replaced).
fn context_size(t: Option<&V<'_>>) -> f64 {
    let Some(t) = t else { return 0.0 };
    let cache = t.get("cache");
    num(t.get("input"))
        + num(t.get("output"))
        + num(cache.and_then(|c| c.get("read")))
        + num(cache.and_then(|c| c.get("write")))
}

fn stop_reason(finish: Option<&str>, has_tool: bool) -> &'static str {
    match finish {
        Some("tool-calls") | Some("tool_calls") => "toolUse",
        Some("length") => "length",
        Some("stop") | Some("end_turn") => "stop",
        _ if has_tool => "toolUse",
        _ => "stop",
    }
}

struct Converter<'a> {
    nodes: Nodes<'a>,
    leaf: Option<usize>,
    skipped: BTreeMap<String, usize>,
    problems: Vec<Problem>,
    /// How many messages had each (role, creation time) so far: the keys.
    seen: BTreeMap<(String, i64), usize>,
    /// The context size of the newest assistant step (a compaction's `tokensBefore`).
    context: f64,
    /// A compaction request waiting for its summary: (key, ms, the user message's node
    /// parent).
    compaction: Option<(String, i64, Option<usize>)>,
}

impl<'a> Converter<'a> {
    fn skip(&mut self, what: &str) {
        crate::count(&mut self.skipped, what);
    }

    fn add(&mut self, key: String, ms: i64, body: Body<'a>) -> usize {
        let n = self.nodes.push(self.leaf, key, ms, body);
        self.leaf = Some(n);
        n
    }

    /// The key of a message: what a fork's copy keeps of it (its role and creation time,
    /// and how many such came before it).
    fn key(&mut self, role: &str, ms: i64) -> String {
        let n = self.seen.entry((role.to_string(), ms)).or_insert(0);
        *n += 1;
        format!("{role}:{ms}:{n}")
    }

    fn user(&mut self, line: usize, m: &Msg<'_>, info: &Obj<'a>, parts: Vec<Obj<'a>>) {
        let ms = time_of(info, m.time_created);
        let key = self.key("user", ms);
        let mut content = Vec::new();
        let mut compaction = false;
        for p in parts {
            match s(&p, "type").unwrap_or("") {
                "text" => {
                    if p.get("ignored").and_then(V::as_bool) == Some(true) {
                        self.skip("text (ignored)");
                        continue;
                    }
                    if let Some(V::Str(t)) = p.get("text") {
                        content.push(node::text(t.clone()));
                    }
                }
                "file" => {
                    let mime = s(&p, "mime").unwrap_or("");
                    let url = s(&p, "url").unwrap_or("");
                    match url
                        .strip_prefix("data:")
                        .and_then(|r| r.split_once(";base64,"))
                    {
                        Some((mt, data))
                            if mime.starts_with("image/") || mt.starts_with("image/") =>
                        {
                            content.push(node::image(data.to_string(), mt.to_string()))
                        }
                        _ => self.skip("file"),
                    }
                }
                "compaction" => compaction = true,
                other => {
                    let what = format!("user part {other}");
                    self.skip(&what);
                }
            }
        }
        if compaction {
            self.compaction = Some((key, ms, self.leaf));
            return;
        }
        if content.is_empty() {
            self.problems.push(Problem {
                line,
                message: format!("user message {} has no text", m.id),
            });
        }
        let mut msg = Obj::with_capacity(4);
        msg.push_new("role", V::from("user"));
        msg.push_new("content", V::Arr(content));
        msg.push_new("timestamp", V::from(ms));
        msg.push_new("opencode", obj! {"messageID": m.id.to_string()});
        self.add(key, ms, Body::Message(msg));
    }

    fn assistant(&mut self, m: &Msg<'_>, info: &Obj<'a>, parts: Vec<Obj<'a>>) {
        let ms = time_of(info, m.time_created);
        let key = self.key("assistant", ms);
        let text_of = |parts: &[Obj<'a>]| {
            parts
                .iter()
                .filter(|p| s(p, "type") == Some("text"))
                .filter_map(|p| s(p, "text"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if info.get("summary").and_then(V::as_bool) == Some(true) {
            // The summary of a compaction: the request before it is its user message.
            let (ckey, cms, parent) = self
                .compaction
                .take()
                .unwrap_or_else(|| (format!("{key}#compaction"), ms, self.leaf));
            self.leaf = parent;
            let body = Body::Compaction {
                summary: text_of(&parts),
                tokens_before: self.context,
                details: Some(obj! {"source": "opencode", "messageID": m.id.to_string()}),
                first_kept: None,
                system_message: None,
            };
            self.add(ckey, cms, body);
            return;
        }
        if let Some((ckey, cms, _)) = self.compaction.take() {
            // A compaction request without its summary (failed or still running): not the
            // compaction's id, which its summary may still take.
            self.add(
                format!("{ckey}#pending"),
                cms,
                Body::Custom {
                    custom_type: "opencode:compaction".into(),
                    data: obj! {"summary": false},
                },
            );
        }
        let provider = s(info, "providerID").unwrap_or("").to_string();
        let model = s(info, "modelID").unwrap_or("").to_string();
        // One Pi assistant message per step.
        let mut steps: Vec<Vec<Obj<'a>>> = vec![Vec::new()];
        for p in parts {
            match s(&p, "type").unwrap_or("") {
                "step-start" => {
                    if steps
                        .last()
                        .is_some_and(|l| l.iter().any(|p| s(p, "type") != Some("step-finish")))
                    {
                        steps.push(Vec::new());
                    }
                }
                "step-finish" | "reasoning" | "text" | "tool" => {
                    if let Some(l) = steps.last_mut() {
                        l.push(p);
                    }
                }
                other => {
                    let what = format!("assistant part {other}");
                    self.skip(&what);
                }
            }
        }
        let n_steps = steps.len();
        for (k, step) in steps.into_iter().enumerate() {
            let skey = if k == 0 {
                key.clone()
            } else {
                format!("{key}:s{k}")
            };
            let last_step = k + 1 == n_steps;
            let mut content = Vec::new();
            let mut results = Vec::new();
            let mut tokens = None;
            let mut finish = None;
            for mut p in step {
                match s(&p, "type").unwrap_or("") {
                    "reasoning" => {
                        let t = p.remove("text").unwrap_or_else(|| V::from(""));
                        content.push(obj! {"type": "thinking", "thinking": t});
                    }
                    "text" => {
                        if p.get("ignored").and_then(V::as_bool) == Some(true) {
                            continue;
                        }
                        let t = p.remove("text").unwrap_or_else(|| V::from(""));
                        content.push(obj! {"type": "text", "text": t});
                    }
                    "tool" => {
                        let call_id = s(&p, "callID").unwrap_or("").to_string();
                        let tool = s(&p, "tool").unwrap_or("").to_string();
                        let mut state = match p.remove("state") {
                            Some(V::Obj(o)) => o,
                            _ => Obj::new(),
                        };
                        let input = state
                            .remove("input")
                            .filter(V::is_object)
                            .unwrap_or_else(|| V::Obj(Obj::new()));
                        content.push(obj! {"type": "toolCall", "id": call_id.clone(), "name": tool.clone(), "arguments": input});
                        results.push((call_id, tool, state));
                    }
                    "step-finish" => {
                        tokens = p.remove("tokens");
                        finish = p.remove("reason");
                    }
                    _ => {}
                }
            }
            let tokens = tokens.or_else(|| {
                if last_step {
                    info.get("tokens").cloned()
                } else {
                    None
                }
            });
            let finish = finish
                .as_ref()
                .and_then(V::as_str)
                .map(str::to_string)
                .or_else(|| {
                    if last_step {
                        s(info, "finish").map(str::to_string)
                    } else {
                        None
                    }
                });
            let mut msg = Obj::with_capacity(10);
            msg.push_new("role", V::from("assistant"));
            msg.push_new("content", V::Arr(content));
            msg.push_new("api", V::from("openai-completions"));
            msg.push_new("provider", V::from(provider.clone()));
            msg.push_new("model", V::from(model.clone()));
            msg.push_new("usage", usage(tokens.as_ref()));
            let error = if last_step { info.get("error") } else { None };
            let stop = if error.is_some() {
                "error"
            } else {
                stop_reason(finish.as_deref(), !results.is_empty())
            };
            msg.push_new("stopReason", V::from(stop));
            if let Some(e) = error {
                let text = e
                    .get("data")
                    .and_then(|d| d.get("message"))
                    .or_else(|| e.get("name"))
                    .and_then(V::as_str)
                    .unwrap_or("error")
                    .to_string();
                msg.push_new("errorMessage", V::from(text));
            }
            msg.push_new("timestamp", V::from(ms));
            msg.push_new("opencode", obj! {"messageID": m.id.to_string()});
            if tokens.is_some() {
                self.context = context_size(tokens.as_ref());
            }
            self.add(skey.clone(), ms, Body::Message(msg));
            for (i, (call_id, tool, mut state)) in results.into_iter().enumerate() {
                let status = s(&state, "status").unwrap_or("").to_string();
                let end = state
                    .get("time")
                    .and_then(|t| t.get("end"))
                    .and_then(V::as_f64)
                    .map_or(ms, |f| f as i64);
                let (text, is_error) = match status.as_str() {
                    "completed" => (state.remove("output").unwrap_or_else(|| V::from("")), false),
                    "error" => (state.remove("error").unwrap_or_else(|| V::from("")), true),
                    // What OpenCode sends for a call that never finished.
                    _ => (V::from("[Tool execution was interrupted]"), true),
                };
                let text = match text {
                    t @ V::Str(_) => t,
                    other => V::from(other.to_json()),
                };
                let mut details = Obj::with_capacity(3);
                details.push_new("source", V::from("opencode"));
                details.push_new("status", V::from(status));
                if let Some(meta) = state.remove("metadata") {
                    details.push_new("metadata", meta);
                }
                let r = obj! {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": tool,
                    "content": vec![obj! {"type": "text", "text": text}],
                    "details": details,
                    "isError": is_error,
                    "timestamp": end,
                };
                if let V::Obj(r) = r {
                    self.add(format!("{skey}#r{i}"), end, Body::Message(r));
                }
            }
        }
    }
}

/// A message's creation time: its data's `time.created`, else the row's.
fn time_of(info: &Obj<'_>, row: i64) -> i64 {
    info.get("time")
        .and_then(|t| t.get("created"))
        .and_then(V::as_f64)
        .map_or(row, |f| f as i64)
}

/// Converts one session.
pub fn convert(session: &SessionData) -> Conversion {
    Rows::of(session).convert(0)
}

/// Converts session `si` of `rows`.
fn convert_rows(shared: &Shared, rows: &SessionRows) -> Conversion {
    let session = &rows.row;
    let text = |s: Span| rows.text(shared, s);
    let session_id = text(session.id);
    // Messages in id order (OpenCode's ids grow with time), each one's parts in id order.
    let n = session.messages.len();
    let mut order: Vec<usize> = (0..n).collect();
    let by_id =
        |a: &usize, b: &usize| text(session.messages[*a].id).cmp(text(session.messages[*b].id));
    if !order.is_sorted_by(|a, b| by_id(a, b).is_le()) {
        order.sort_by(by_id);
    }
    let mut rank = vec![0u32; n];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r as u32;
    }
    let rank_of = |p: &PartRow| rank.get(p.msg as usize).copied().unwrap_or(u32::MAX);
    let mut parts: Vec<&PartRow> = rows.parts.iter().collect();
    let part_order = |a: &&PartRow, b: &&PartRow| {
        rank_of(a)
            .cmp(&rank_of(b))
            .then_with(|| text(a.id).cmp(text(b.id)))
    };
    if !parts.is_sorted_by(|a, b| part_order(a, b).is_le()) {
        parts.sort_by(part_order);
    }
    let mut parts = parts.into_iter().peekable();
    let mut c = Converter {
        nodes: Nodes::default(),
        leaf: None,
        skipped: BTreeMap::new(),
        problems: Vec::new(),
        seen: BTreeMap::new(),
        context: 0.0,
        compaction: None,
    };
    let revert = session.revert.map(text).and_then(parse);
    let revert_at = revert
        .as_ref()
        .and_then(|r| s(r, "messageID"))
        .map(str::to_string);
    // Where the messages a pending revert takes back hang (the leaf before them).
    let mut before_revert: Option<Option<usize>> = None;
    // Where the messages deleted by a revert hang: the next live message continues there.
    let mut branch: Option<Option<usize>> = None;
    let mut first_ms = None;
    let mut settled = None;
    for (line, &k) in order.iter().enumerate() {
        let row = &session.messages[k];
        let mut own = Vec::new();
        while let Some(p) = parts.next_if(|p| rank_of(p) as usize == line) {
            own.push(text(p.data));
        }
        let line = line + 1;
        let m = Msg {
            id: text(row.id),
            time_created: row.time_created,
            removed: row.removed,
        };
        // Parsed as each message is converted (its tree still in the cache); the values
        // borrow the rows' text, which outlives the conversion's nodes.
        let Some(info) = parse(text(row.data)) else {
            c.problems.push(Problem {
                line,
                message: format!("message {}: its data is not a JSON object", m.id),
            });
            continue;
        };
        let mut good = Vec::with_capacity(own.len());
        for (k, p) in own.into_iter().enumerate() {
            match parse(p) {
                Some(p) => good.push(p),
                None => c.problems.push(Problem {
                    line,
                    message: format!("message {}: part {} is not a JSON object", m.id, k + 1),
                }),
            }
        }
        if m.removed {
            if branch.is_none() {
                branch = Some(c.leaf);
            }
        } else if let Some(b) = branch.take() {
            c.leaf = b;
            c.compaction = None;
        }
        if revert_at.as_deref() == Some(m.id) && !m.removed {
            before_revert = Some(c.leaf);
        }
        let ms = time_of(&info, m.time_created);
        first_ms = Some(first_ms.map_or(ms, |f: i64| f.min(ms)));
        match s(&info, "role") {
            Some("user") => c.user(line, &m, &info, good),
            Some("assistant") => {
                let open = info.get("time").and_then(|t| t.get("completed")).is_none()
                    && info.get("error").is_none();
                if open && settled.is_none() {
                    settled = Some(c.nodes.nodes.len());
                }
                c.assistant(&m, &info, good)
            }
            other => c.problems.push(Problem {
                line,
                message: format!("message {} has unknown role {other:?}", m.id),
            }),
        }
    }
    if let Some((ckey, cms, _)) = c.compaction.take() {
        c.add(
            format!("{ckey}#pending"),
            cms,
            Body::Custom {
                custom_type: "opencode:compaction".into(),
                data: obj! {"summary": false},
            },
        );
    }
    if let (Some(at), Some(r)) = (before_revert, revert) {
        c.leaf = at;
        c.add(
            format!("revert:{}", revert_at.unwrap_or_default()),
            session
                .time_created
                .max(c.nodes.nodes.last().map_or(0, |n| n.ms)),
            Body::Custom {
                custom_type: "opencode:revert".into(),
                data: V::Obj(r),
            },
        );
    }
    let title = sessiontree::session::sanitize_name(text(session.title));
    if !default_title(&title) && !c.nodes.nodes.is_empty() {
        let ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(0);
        // Under the leaf, keyed by it too: once the session goes on, its title is a new
        // entry under the new leaf (an entry, once written, keeps its parent).
        let under = c.leaf.map_or("", |l| &c.nodes.nodes[l].key).to_string();
        c.add(
            format!("title:{under}:{title}"),
            ms,
            Body::SessionInfo(title.clone()),
        );
    }
    let last_ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(0);
    let (lines, body) = c.nodes.finish("opencode");
    // A database holds many sessions: each problem names its own (the line is the
    // message's place in it).
    for p in &mut c.problems {
        p.message = format!("session {session_id}: {}", p.message);
    }
    let directory = text(session.directory);
    let parent_id = session.parent_id.map(|p| text(p).to_string());
    let copied = parent_id.is_none() && first_ms.is_some_and(|f| f < session.time_created);
    Conversion {
        agent: Agent::OpenCode,
        session_id: session_id.to_string(),
        source_session_id: session_id.to_string(),
        timestamp: sessiontree::date::iso_from_ms(session.time_created),
        cwd: (!directory.is_empty()).then(|| directory.to_string()),
        kind: if parent_id.is_some() {
            "sidechain"
        } else {
            "main"
        },
        parent_source: parent_id,
        last_ms,
        copied,
        settled: settled.unwrap_or(lines.len()).min(lines.len()),
        lines,
        body,
        name: (!default_title(&title)).then(|| title.clone()),
        problems: c.problems,
        skipped: c.skipped,
    }
}

// ---- reading ------------------------------------------------------------------------

/// OpenCode's data folder: `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
pub fn default_root() -> PathBuf {
    std::env::var("XDG_DATA_HOME")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| sessiontree::dirs::resolve(&v))
        .unwrap_or_else(|| sessiontree::dirs::home_dir().join(".local/share"))
        .join("opencode")
}

/// Is `p` a session file of the JSON tree (`storage/session/<project>/<id>.json`)?
fn storage_session(p: &Path) -> bool {
    let parent = p.parent();
    p.extension().is_some_and(|x| x == "json")
        && parent
            .and_then(Path::parent)
            .is_some_and(|d| d.file_name().is_some_and(|n| n == "session"))
        && parent
            .and_then(Path::parent)
            .and_then(Path::parent)
            .is_some_and(|d| d.file_name().is_some_and(|n| n == "storage"))
}

/// The sources below `root` (or `root` itself): `opencode.db` files and the session files
/// of `storage/` trees.
pub fn collect(root: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(root)?;
    if meta.is_file() {
        out.push(root.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let p = e.path();
            let name = e.file_name();
            let Ok(t) = std::fs::metadata(&p).map(|m| m.file_type()) else {
                continue;
            };
            if t.is_dir() {
                // Messages and parts are read with their session; the rest is not sessions.
                let skip = d.file_name().is_some_and(|n| n == "storage")
                    && !name.to_string_lossy().eq("session");
                if !skip && name != "snapshot" && name != "log" && name != "bin" {
                    stack.push(p);
                }
            } else if t.is_file() && (name == "opencode.db" || storage_session(&p)) {
                out.push(p);
            }
        }
    }
    Ok(())
}

/// Converts every session of a source: a database, or one session file of a JSON tree
/// (skipped, as empty, when the database next to the tree holds the same session: OpenCode
/// copied the tree into it). In the database's order.
pub fn convert_path(path: &Path) -> Result<Vec<Conversion>, String> {
    let out = std::sync::Mutex::new(Vec::new());
    convert_each(path, &|k, conv| {
        out.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((k, conv))
    })?;
    let mut out = out.into_inner().unwrap_or_else(|e| e.into_inner());
    out.sort_unstable_by_key(|x| x.0);
    Ok(out.into_iter().map(|x| x.1).collect())
}

/// [`convert_path`], each conversion given to `f` with its place in the database's order
/// as soon as it is made. One database holds every session: they are converted on every
/// core while the rest are read (the batch's threads share out files, and this is one
/// file), and `f` (which writes each one) runs on those threads too, so that no
/// conversion waits for the others in memory.
pub fn convert_each(path: &Path, f: &(dyn Fn(usize, Conversion) + Sync)) -> Result<(), String> {
    if storage_session(path) {
        if let Some(s) = read_storage_session(path)? {
            f(0, convert(&s));
        }
        return Ok(());
    }
    let mut c = open_db(path)?;
    let tx = c.transaction().map_err(err)?;
    let (shared, sessions) = read_front(&tx)?;
    let (send, recv) = std::sync::mpsc::channel::<(usize, SessionRows)>();
    let recv = std::sync::Mutex::new(recv);
    let shared = &shared;
    let work = || loop {
        let job = recv.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok((i, rows)) = job else { break };
        f(i, convert_rows(shared, &rows));
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        // While this thread reads, the other cores convert; then this one and more
        // threads join (twice the cores, as the batch: a thread held up writing leaves
        // its core to another).
        let early = cores.saturating_sub(1).max(1);
        for _ in 0..early {
            s.spawn(work);
        }
        let read = read_parts(&tx, shared, sessions, &mut |i, rows| {
            // The receivers live until every job is taken.
            let _ = send.send((i, rows));
        });
        drop(send);
        for _ in early + 1..2 * cores {
            s.spawn(work);
        }
        work();
        read
    })
}

fn open_db(path: &Path) -> Result<rusqlite::Connection, String> {
    use rusqlite::OpenFlags;
    // Read-only, never creating: OpenCode may be writing it (WAL), the import never does.
    let c = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| format!("cannot open the database: {e}"))?;
    let _ = c.busy_timeout(std::time::Duration::from_secs(5));
    Ok(c)
}

fn err(e: rusqlite::Error) -> String {
    format!("cannot read the database: {e}")
}

/// Where a text of a session's rows is: which arena, which chunk, and the bytes there.
#[derive(Clone, Copy, Debug)]
struct Span {
    buf: u8,
    chunk: u32,
    start: usize,
    end: usize,
}

/// Texts one after the other in chunks that never move or grow once full (a buffer that
/// doubled would copy and touch its memory twice: a database's rows are hundreds of MB).
#[derive(Default)]
struct Arena {
    chunks: Vec<String>,
}

/// The largest chunk; a longer text has a chunk of its own. Chunks start small (a
/// session's own arena holds only its parts) and double up to this.
const CHUNK: usize = 1 << 20;
const FIRST_CHUNK: usize = 16 << 10;

impl Arena {
    fn text(&self, s: Span) -> &str {
        &self.chunks[s.chunk as usize][s.start..s.end]
    }
}

/// `t` appended to arena `which` (`arena`).
fn push(arena: &mut Arena, which: u8, t: &str) -> Span {
    let fits = arena
        .chunks
        .last()
        .is_some_and(|c| c.capacity() - c.len() >= t.len());
    if !fits {
        let last = arena
            .chunks
            .last()
            .map_or(FIRST_CHUNK / 2, String::capacity);
        let size = (2 * last).clamp(FIRST_CHUNK, CHUNK).max(t.len());
        arena.chunks.push(String::with_capacity(size));
    }
    let chunk = arena.chunks.len() - 1;
    let c = &mut arena.chunks[chunk];
    let start = c.len();
    c.push_str(t);
    Span {
        buf: which,
        chunk: chunk as u32,
        start,
        end: c.len(),
    }
}

/// Arenas: the sessions' rows, the messages', the messages recovered from the event log
/// (these three read first and shared by every session: [`Shared`]), and each session's
/// own for its parts.
const SESSIONS: u8 = 0;
const MESSAGES: u8 = 1;
const RECOVERED: u8 = 2;
const PARTS: u8 = 3;

/// The text of the rows read before the parts, which every session's rows point into.
#[derive(Default)]
struct Shared {
    bufs: [Arena; 3],
}

/// One session's rows: its row and messages (in [`Shared`]), its parts (in its own
/// arena, given to a converter as soon as they are all read).
struct SessionRows {
    row: SessionRow,
    parts: Vec<PartRow>,
    text: Arena,
}

struct SessionRow {
    id: Span,
    parent_id: Option<Span>,
    directory: Span,
    title: Span,
    /// Epoch ms.
    time_created: i64,
    revert: Option<Span>,
    /// In the order read (converted in id order, see [`MessageData`]).
    messages: Vec<MessageRow>,
}

struct MessageRow {
    id: Span,
    time_created: i64,
    data: Span,
    removed: bool,
}

struct PartRow {
    /// Its message in [`SessionRow::messages`].
    msg: u32,
    id: Span,
    data: Span,
}

impl SessionRows {
    fn new(row: SessionRow) -> Self {
        SessionRows {
            row,
            parts: Vec::new(),
            text: Arena::default(),
        }
    }

    fn text<'d>(&'d self, shared: &'d Shared, s: Span) -> &'d str {
        if s.buf == PARTS {
            self.text.text(s)
        } else {
            shared.bufs[s.buf as usize].text(s)
        }
    }

    fn push_part(&mut self, msg: u32, id: &str, data: &str) {
        let id = push(&mut self.text, PARTS, id);
        let data = push(&mut self.text, PARTS, data);
        self.parts.push(PartRow { msg, id, data });
    }
}

/// A message as the converter reads it.
struct Msg<'d> {
    id: &'d str,
    /// Epoch ms (the row's).
    time_created: i64,
    removed: bool,
}

/// Every session of a source, read ([`read_db`]).
pub struct Rows {
    shared: Shared,
    sessions: Vec<SessionRows>,
}

impl Rows {
    /// How many sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Converts the `i`-th session (in id order).
    pub fn convert(&self, i: usize) -> Conversion {
        convert_rows(&self.shared, &self.sessions[i])
    }

    /// The rows of one session.
    fn of(s: &SessionData) -> Rows {
        let mut shared = Shared::default();
        let b = &mut shared.bufs[SESSIONS as usize];
        let row = SessionRow {
            id: push(b, SESSIONS, &s.id),
            parent_id: s.parent_id.as_deref().map(|p| push(b, SESSIONS, p)),
            directory: push(b, SESSIONS, &s.directory),
            title: push(b, SESSIONS, &s.title),
            time_created: s.time_created,
            revert: s.revert.as_deref().map(|r| push(b, SESSIONS, r)),
            messages: Vec::new(),
        };
        let mut rows = SessionRows::new(row);
        for (k, m) in s.messages.iter().enumerate() {
            let b = &mut shared.bufs[MESSAGES as usize];
            rows.row.messages.push(MessageRow {
                id: push(b, MESSAGES, &m.id),
                time_created: m.time_created,
                data: push(b, MESSAGES, &m.data),
                removed: m.removed,
            });
            // Kept in the order given: part ids that sort them so.
            for (j, p) in m.parts.iter().enumerate() {
                rows.push_part(k as u32, &format!("{j:020}"), p);
            }
        }
        Rows {
            shared,
            sessions: vec![rows],
        }
    }
}

/// Column `i` of a row as text, borrowed from SQLite (copied once, into an arena);
/// anything but UTF-8 text is an error, as for `get::<String>`.
fn text_at<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    use rusqlite::types::{Type, ValueRef};
    match r.get_ref(i)? {
        ValueRef::Text(b) => match simdutf8::basic::from_utf8(b) {
            Ok(t) => Ok(t),
            Err(_) => Err(rusqlite::Error::FromSqlConversionFailure(
                i,
                Type::Text,
                match std::str::from_utf8(b) {
                    Err(e) => Box::new(e),
                    Ok(_) => "not UTF-8".into(),
                },
            )),
        },
        other => Err(rusqlite::Error::InvalidColumnType(
            i,
            r.as_ref().column_name(i).unwrap_or("").to_string(),
            other.data_type(),
        )),
    }
}

/// Message id -> (session, its place in the session's messages).
type MessageAt<'s> = foldhash::HashMap<&'s str, (u32, u32)>;

/// What is read before the parts: the sessions (in id order), their messages, and the
/// messages the event log recovers (with their parts).
fn read_front(tx: &rusqlite::Transaction<'_>) -> Result<(Shared, Vec<SessionRows>), String> {
    let mut shared = Shared::default();
    let mut sessions: Vec<SessionRows> = Vec::new();
    {
        let b = &mut shared.bufs[SESSIONS as usize];
        let mut q = tx
            .prepare("SELECT id, parent_id, directory, title, time_created, revert FROM session ORDER BY id")
            .map_err(err)?;
        let mut rows = q.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let id = r.get::<_, String>(0).map_err(err)?;
            let parent_id = r.get::<_, Option<String>>(1).map_err(err)?;
            let directory = r.get::<_, Option<String>>(2).map_err(err)?;
            let title = r.get::<_, Option<String>>(3).map_err(err)?;
            let time_created = r.get::<_, Option<i64>>(4).map_err(err)?.unwrap_or(0);
            let revert = r.get::<_, Option<String>>(5).map_err(err)?;
            sessions.push(SessionRows::new(SessionRow {
                id: push(b, SESSIONS, &id),
                parent_id: parent_id.map(|p| push(b, SESSIONS, &p)),
                directory: push(b, SESSIONS, directory.as_deref().unwrap_or("")),
                title: push(b, SESSIONS, title.as_deref().unwrap_or("")),
                time_created,
                revert: revert.map(|r| push(b, SESSIONS, &r)),
                messages: Vec::new(),
            }));
        }
    }
    let [sbuf, mbuf, _] = &mut shared.bufs;
    // Session id -> its place (a later row of the same id wins, as before).
    let mut at: foldhash::HashMap<&str, u32> = Default::default();
    for (i, s) in sessions.iter().enumerate() {
        at.insert(sbuf.text(s.row.id), i as u32);
    }
    {
        let mut q = tx
            .prepare("SELECT id, session_id, time_created, data FROM message")
            .map_err(err)?;
        let mut rows = q.query([]).map_err(err)?;
        // A session's messages come one after the other: its place looked up once.
        let mut last: Option<(String, u32)> = None;
        while let Some(r) = rows.next().map_err(err)? {
            let id = text_at(r, 0).map_err(err)?;
            let sid = text_at(r, 1).map_err(err)?;
            let t = r.get::<_, Option<i64>>(2).map_err(err)?.unwrap_or(0);
            let data = text_at(r, 3).map_err(err)?;
            let si = match &last {
                Some((l, si)) if l == sid => *si,
                _ => {
                    let Some(&si) = at.get(sid) else { continue };
                    last = Some((sid.to_string(), si));
                    si
                }
            };
            let (id, data) = (push(mbuf, MESSAGES, id), push(mbuf, MESSAGES, data));
            sessions[si as usize].row.messages.push(MessageRow {
                id,
                time_created: t,
                data,
                removed: false,
            });
        }
    }
    // Messages a revert deleted: the event log still has them.
    let has_events = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'event'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(err)?
        > 0;
    let recovered = if has_events {
        let live = message_at(mbuf, &sessions);
        recover_removed(tx, &at, &live)?
    } else {
        Vec::new()
    };
    drop(at);
    let rbuf = &mut shared.bufs[RECOVERED as usize];
    for r in recovered {
        let s = &mut sessions[r.session];
        let k = s.row.messages.len() as u32;
        s.row.messages.push(MessageRow {
            id: push(rbuf, RECOVERED, &r.id),
            time_created: r.time_created,
            data: push(rbuf, RECOVERED, &r.info),
            removed: true,
        });
        for (pid, p) in &r.parts {
            s.push_part(k, pid, p);
        }
    }
    Ok((shared, sessions))
}

/// Where each live message is (a later row of the same id wins, as before).
fn message_at<'s>(mbuf: &'s Arena, sessions: &[SessionRows]) -> MessageAt<'s> {
    let mut live: MessageAt<'s> = Default::default();
    live.reserve(sessions.iter().map(|s| s.row.messages.len()).sum());
    for (si, s) in sessions.iter().enumerate() {
        for (k, m) in s.row.messages.iter().enumerate() {
            if !m.removed {
                live.insert(mbuf.text(m.id), (si as u32, k as u32));
            }
        }
    }
    live
}

/// Reads the parts into their sessions, and gives each session (its index, its rows) to
/// `done` as soon as its last part is read: the parts are counted per session first (a
/// pass over the table that reads no text but the message ids), so that converting the
/// sessions read so far goes on while the rest are read. Every session is given, once.
fn read_parts(
    tx: &rusqlite::Transaction<'_>,
    shared: &Shared,
    sessions: Vec<SessionRows>,
    done: &mut dyn FnMut(usize, SessionRows),
) -> Result<(), String> {
    let live = message_at(&shared.bufs[MESSAGES as usize], &sessions);
    let mut sessions: Vec<Option<SessionRows>> = sessions.into_iter().map(Some).collect();
    let mut left = vec![0usize; sessions.len()];
    {
        let mut q = tx.prepare("SELECT message_id FROM part").map_err(err)?;
        let mut rows = q.query([]).map_err(err)?;
        // A message's parts come one after the other: its place looked up once.
        let mut last: Option<(String, u32)> = None;
        while let Some(r) = rows.next().map_err(err)? {
            let mid = text_at(r, 0).map_err(err)?;
            match &last {
                Some((l, si)) if l == mid => left[*si as usize] += 1,
                _ => {
                    if let Some(&(si, _)) = live.get(mid) {
                        left[si as usize] += 1;
                        last = Some((mid.to_string(), si));
                    }
                }
            }
        }
    }
    for (si, s) in sessions.iter_mut().enumerate() {
        if left[si] == 0 {
            if let Some(s) = s.take() {
                done(si, s);
            }
        }
    }
    {
        let mut q = tx
            .prepare("SELECT message_id, id, data FROM part")
            .map_err(err)?;
        let mut rows = q.query([]).map_err(err)?;
        let mut last: Option<(String, (u32, u32))> = None;
        while let Some(r) = rows.next().map_err(err)? {
            let mid = text_at(r, 0).map_err(err)?;
            let id = text_at(r, 1).map_err(err)?;
            let data = text_at(r, 2).map_err(err)?;
            let (si, k) = match &last {
                Some((l, at)) if l == mid => *at,
                _ => {
                    let Some(&at) = live.get(mid) else { continue };
                    last = Some((mid.to_string(), at));
                    at
                }
            };
            let si = si as usize;
            // One snapshot: the same rows as the count. (Were it otherwise, the part is
            // an error, never lost: the session would have been given without it.)
            let Some(s) = sessions[si].as_mut() else {
                return Err(format!(
                    "cannot read the database: part {id} was not there when the parts were counted"
                ));
            };
            s.push_part(k, id, data);
            left[si] -= 1;
            if left[si] == 0 {
                if let Some(s) = sessions[si].take() {
                    done(si, s);
                }
            }
        }
    }
    for (si, s) in sessions.into_iter().enumerate() {
        if let Some(s) = s {
            done(si, s);
        }
    }
    Ok(())
}

/// Every session of an OpenCode database, read in one transaction (one snapshot, while
/// OpenCode may be writing), in id order.
pub fn read_db(path: &Path) -> Result<Rows, String> {
    let mut c = open_db(path)?;
    let tx = c.transaction().map_err(err)?;
    let (shared, sessions) = read_front(&tx)?;
    let mut all = Vec::with_capacity(sessions.len());
    read_parts(&tx, &shared, sessions, &mut |si, s| all.push((si, s)))?;
    all.sort_unstable_by_key(|x| x.0);
    Ok(Rows {
        shared,
        sessions: all.into_iter().map(|x| x.1).collect(),
    })
}

/// A message deleted from the tables that the event log holds.
struct Recovered {
    session: usize,
    id: String,
    time_created: i64,
    info: String,
    /// Its parts (id, JSON), in id order.
    parts: Vec<(String, String)>,
}

/// The messages deleted from the tables that the event log holds (`message.removed` of a
/// message with `message.updated` events), each with its parts' last state.
fn recover_removed(
    tx: &rusqlite::Transaction<'_>,
    at: &foldhash::HashMap<&str, u32>,
    live: &MessageAt<'_>,
) -> Result<Vec<Recovered>, String> {
    use std::collections::HashMap;
    let mut q = tx
        .prepare(
            "SELECT aggregate_id, type, data FROM event WHERE type LIKE 'message.%' \
             ORDER BY aggregate_id, seq",
        )
        .map_err(err)?;
    let rows = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(err)?;
    // message id -> (session, last info JSON); part id -> (message id, last part JSON).
    let mut infos: HashMap<String, (String, String)> = HashMap::new();
    let mut parts: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut removed: Vec<String> = Vec::new();
    for row in rows {
        let (sid, ty, data) = row.map_err(err)?;
        let kind = ty.rsplit_once('.').map_or(ty.as_str(), |(k, v)| {
            if v.bytes().all(|b| b.is_ascii_digit()) {
                k
            } else {
                ty.as_str()
            }
        });
        let Some(o) = parse(&data) else { continue };
        match kind {
            "message.updated" => {
                if let Some(info) = o.get("info") {
                    if let Some(id) = info.get("id").and_then(V::as_str) {
                        if !live.contains_key(id) {
                            infos.insert(id.to_string(), (sid.clone(), info.to_json()));
                        }
                    }
                }
            }
            "message.part.updated" => {
                if let Some(p) = o.get("part") {
                    let pid = p.get("id").and_then(V::as_str);
                    let mid = p.get("messageID").and_then(V::as_str);
                    if let (Some(pid), Some(mid)) = (pid, mid) {
                        if !live.contains_key(mid) {
                            parts.insert(pid.to_string(), (mid.to_string(), p.to_json()));
                        }
                    }
                }
            }
            "message.part.removed" => {
                if let Some(pid) = o.get("partID").and_then(V::as_str) {
                    parts.remove(pid);
                }
            }
            "message.removed" => {
                if let Some(mid) = o.get("messageID").and_then(V::as_str) {
                    if !live.contains_key(mid) {
                        removed.push(mid.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    let mut by_message: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for (pid, (mid, data)) in parts {
        by_message.entry(mid).or_default().push((pid, data));
    }
    removed.sort();
    removed.dedup();
    let mut out = Vec::new();
    for mid in removed {
        let Some((sid, info)) = infos.remove(&mid) else {
            continue;
        };
        let Some(&si) = at.get(sid.as_str()) else {
            continue;
        };
        let t = parse(&info).map_or(0, |o| time_of(&o, 0));
        out.push(Recovered {
            session: si as usize,
            parts: by_message.remove(&mid).unwrap_or_default(),
            id: mid,
            time_created: t,
            info,
        });
    }
    Ok(out)
}

fn read_json(path: &Path) -> Result<String, String> {
    let (mut f, _) =
        sessiontree::store::open_regular(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut s = String::new();
    std::io::Read::read_to_string(&mut f, &mut s).map_err(|e| format!("cannot read: {e}"))?;
    Ok(s)
}

/// The JSON files of a folder, sorted by name (OpenCode's ids grow with time).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// One session of a JSON tree: `storage/session/<project>/<id>.json`, its messages in
/// `storage/message/<id>/`, their parts in `storage/part/<message id>/`. `None` when the
/// database next to the tree holds the session.
pub fn read_storage_session(path: &Path) -> Result<Option<SessionData>, String> {
    let text = read_json(path)?;
    let o = parse(&text).ok_or("not a JSON object")?;
    let id = s(&o, "id")
        .map(str::to_string)
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let storage = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .ok_or("not in a storage folder")?;
    if let Some(root) = storage.parent() {
        let db = root.join("opencode.db");
        if db.is_file() {
            if let Ok(c) = open_db(&db) {
                let held = c
                    .query_row("SELECT count(*) FROM session WHERE id = ?1", [&id], |r| {
                        r.get::<_, i64>(0)
                    })
                    .unwrap_or(0);
                if held > 0 {
                    return Ok(None);
                }
            }
        }
    }
    let time = o.get("time");
    let mut session = SessionData {
        id: id.clone(),
        parent_id: s(&o, "parentID").map(str::to_string),
        directory: s(&o, "directory").unwrap_or("").to_string(),
        title: s(&o, "title").unwrap_or("").to_string(),
        time_created: time
            .and_then(|t| t.get("created"))
            .and_then(V::as_f64)
            .unwrap_or(0.0) as i64,
        revert: o.get("revert").filter(|r| r.is_object()).map(V::to_json),
        messages: Vec::new(),
    };
    if sessiontree::dirs::validate_session_id(&id).is_err() {
        // Never made a path from (the conversion refuses the id too).
        return Ok(Some(session));
    }
    for m in json_files(&storage.join("message").join(&id)) {
        let Ok(data) = read_json(&m) else { continue };
        let mid = m
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let t = parse(&data).map_or(0, |o| time_of(&o, 0));
        let parts = json_files(&storage.join("part").join(&mid))
            .iter()
            .filter_map(|p| read_json(p).ok())
            .collect();
        session.messages.push(MessageData {
            id: mid,
            time_created: t,
            data,
            parts,
            removed: false,
        });
    }
    Ok(Some(session))
}
