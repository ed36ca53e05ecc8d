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
//! The database is opened read-only (OpenCode may be writing it: WAL mode); nothing is
//! ever written to it.

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

    fn user(&mut self, line: usize, m: &MessageData, info: &Obj<'a>, parts: Vec<Obj<'a>>) {
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
        msg.push_new("opencode", obj! {"messageID": m.id.clone()});
        self.add(key, ms, Body::Message(msg));
    }

    fn assistant(&mut self, m: &MessageData, info: &Obj<'a>, parts: Vec<Obj<'a>>) {
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
                details: Some(obj! {"source": "opencode", "messageID": m.id.clone()}),
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
            msg.push_new("opencode", obj! {"messageID": m.id.clone()});
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
    let mut c = Converter {
        nodes: Nodes::default(),
        leaf: None,
        skipped: BTreeMap::new(),
        problems: Vec::new(),
        seen: BTreeMap::new(),
        context: 0.0,
        compaction: None,
    };
    let revert = session.revert.as_deref().and_then(parse);
    let revert_at = revert
        .as_ref()
        .and_then(|r| s(r, "messageID"))
        .map(str::to_string);
    // Where the messages a pending revert takes back hang (the leaf before them).
    let mut before_revert: Option<Option<usize>> = None;
    // Where the messages deleted by a revert hang: the next live message continues there.
    let mut branch: Option<Option<usize>> = None;
    let mut first_ms = None;
    // The parsed rows live as long as the conversion's nodes.
    let datas: Vec<(Option<Obj<'_>>, Vec<Option<Obj<'_>>>)> = session
        .messages
        .iter()
        .map(|m| (parse(&m.data), m.parts.iter().map(|p| parse(p)).collect()))
        .collect();
    let mut settled = None;
    for (line, (m, (info, parts))) in session.messages.iter().zip(datas).enumerate() {
        let line = line + 1;
        let Some(info) = info else {
            c.problems.push(Problem {
                line,
                message: format!("message {}: its data is not a JSON object", m.id),
            });
            continue;
        };
        let mut good = Vec::with_capacity(parts.len());
        for (k, p) in parts.into_iter().enumerate() {
            match p {
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
        if revert_at.as_deref() == Some(m.id.as_str()) && !m.removed {
            before_revert = Some(c.leaf);
        }
        let ms = time_of(&info, m.time_created);
        first_ms = Some(first_ms.map_or(ms, |f: i64| f.min(ms)));
        match s(&info, "role") {
            Some("user") => c.user(line, m, &info, good),
            Some("assistant") => {
                let open = info.get("time").and_then(|t| t.get("completed")).is_none()
                    && info.get("error").is_none();
                if open && settled.is_none() {
                    settled = Some(c.nodes.nodes.len());
                }
                c.assistant(m, &info, good)
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
    let title = sessiontree::session::sanitize_name(&session.title);
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
        p.message = format!("session {}: {}", session.id, p.message);
    }
    let copied = session.parent_id.is_none() && first_ms.is_some_and(|f| f < session.time_created);
    Conversion {
        agent: Agent::OpenCode,
        session_id: session.id.clone(),
        source_session_id: session.id.clone(),
        timestamp: sessiontree::date::iso_from_ms(session.time_created),
        cwd: (!session.directory.is_empty()).then(|| session.directory.clone()),
        parent_source: session.parent_id.clone(),
        kind: if session.parent_id.is_some() {
            "sidechain"
        } else {
            "main"
        },
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
/// copied the tree into it).
pub fn convert_path(path: &Path) -> Result<Vec<Conversion>, String> {
    if storage_session(path) {
        let Some(s) = read_storage_session(path)? else {
            return Ok(Vec::new());
        };
        return Ok(vec![convert(&s)]);
    }
    let sessions = read_db(path)?;
    // One database holds every session: converted on every core (the batch's threads
    // share out files, and this is one file), in the database's order.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = sessions.len().div_ceil(cores).max(1);
    Ok(std::thread::scope(|s| {
        let parts: Vec<_> = sessions
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(convert).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    }))
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

/// Every session of an OpenCode database, read in one transaction (one snapshot, while
/// OpenCode may be writing).
pub fn read_db(path: &Path) -> Result<Vec<SessionData>, String> {
    let mut c = open_db(path)?;
    let tx = c.transaction().map_err(err)?;
    let mut sessions: Vec<SessionData> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = Default::default();
    {
        let mut q = tx
            .prepare("SELECT id, parent_id, directory, title, time_created, revert FROM session ORDER BY id")
            .map_err(err)?;
        let rows = q
            .query_map([], |r| {
                Ok(SessionData {
                    id: r.get(0)?,
                    parent_id: r.get(1)?,
                    directory: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    title: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                    time_created: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                    revert: r.get(5)?,
                    messages: Vec::new(),
                })
            })
            .map_err(err)?;
        for s in rows {
            let s = s.map_err(err)?;
            at.insert(s.id.clone(), sessions.len());
            sessions.push(s);
        }
    }
    let mut msg_at: std::collections::HashMap<String, (usize, usize)> = Default::default();
    {
        let mut q = tx
            // Read in table order and sorted here: SQLite sorting every row (no index
            // holds them) costs more than reading them.
            .prepare("SELECT id, session_id, time_created, data FROM message")
            .map_err(err)?;
        let rows = q
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(err)?;
        let mut all = Vec::new();
        for row in rows {
            all.push(row.map_err(err)?);
        }
        all.sort_unstable_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        for (id, sid, t, data) in all {
            let Some(&si) = at.get(&sid) else { continue };
            let mi = sessions[si].messages.len();
            msg_at.insert(id.clone(), (si, mi));
            sessions[si].messages.push(MessageData {
                id,
                time_created: t,
                data,
                parts: Vec::new(),
                removed: false,
            });
        }
    }
    {
        let mut q = tx
            .prepare("SELECT message_id, id, data FROM part")
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
        let mut all = Vec::new();
        for row in rows {
            all.push(row.map_err(err)?);
        }
        all.sort_unstable_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        for (mid, _, data) in all {
            if let Some(&(si, mi)) = msg_at.get(&mid) {
                sessions[si].messages[mi].parts.push(data);
            }
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
    if has_events {
        recover_removed(&tx, &mut sessions, &at, &msg_at)?;
    }
    Ok(sessions)
}

/// Puts back the messages deleted from the tables that the event log holds
/// (`message.removed` of a message with `message.updated` events), each with its parts'
/// last state, into their sessions in id order.
fn recover_removed(
    tx: &rusqlite::Transaction<'_>,
    sessions: &mut [SessionData],
    at: &std::collections::HashMap<String, usize>,
    live: &std::collections::HashMap<String, (usize, usize)>,
) -> Result<(), String> {
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
    let mut by_message: HashMap<String, Vec<String>> = HashMap::new();
    for (_, (mid, data)) in parts {
        by_message.entry(mid).or_default().push(data);
    }
    removed.sort();
    removed.dedup();
    let mut touched = Vec::new();
    for mid in removed {
        let Some((sid, info)) = infos.remove(&mid) else {
            continue;
        };
        let Some(&si) = at.get(&sid) else { continue };
        let t = parse(&info).map_or(0, |o| time_of(&o, 0));
        sessions[si].messages.push(MessageData {
            parts: by_message.remove(&mid).unwrap_or_default(),
            id: mid,
            time_created: t,
            data: info,
            removed: true,
        });
        touched.push(si);
    }
    touched.sort_unstable();
    touched.dedup();
    for si in touched {
        sessions[si].messages.sort_by(|a, b| a.id.cmp(&b.id));
    }
    Ok(())
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
