//! GitHub Copilot CLI sessions (`<COPILOT_HOME>/session-state/<session id>/events.jsonl`,
//! `COPILOT_HOME` else `~/.copilot`). Copilot CLI writes one event a line,
//! `{type, data, id, timestamp, parentId}`, each event's `parentId` the event before it
//! (a resume continues the chain after the last run's `session.shutdown`):
//!
//! * `session.start` (`sessionId`, `startTime`, `context.cwd`): the header;
//! * `user.message`: a Pi `user` message holding `transformedContent` (the prompt as the
//!   CLI sent it to the model: with the `<current_datetime>` block it adds), else `content`;
//! * `assistant.message`: an `assistant` message (`reasoningText` -> `thinking`, `content`
//!   -> text, `toolRequests` -> `toolCall`s with the ids the model sent), its usage from the
//!   `session.usage_record` before it;
//! * `tool.execution_complete`: a `toolResult` (`result.content`, or `error.message` when
//!   the call failed), named after its `tool.execution_start`;
//! * `session.snapshot_rewind`: the events from `upToEventId` on are dropped: a
//!   `copilot-cli:rewind` custom entry under the event before it (the dropped turns stay,
//!   a branch no longer active);
//! * `session.compaction_complete` with a summary: a Pi `compaction` (`summaryContent`,
//!   `preCompactionTokens`), keeping what the CLI keeps (see `kept_from`); one without a
//!   summary (failed, cancelled), `session.error`, `session.warning`, `session.info`,
//!   `session.model_change`: `custom` entries, outside the context;
//! * `session.title_changed`: the session's name, a `session_info` under the leaf (without
//!   a title: the first prompt as typed, Copilot CLI's own name for the session).
//!
//! Every other event (turn starts and ends, usage records, resumes, shutdowns, the system
//! prompt, streaming deltas, ...) has no Pi equivalent: skipped and counted. Events are
//! only ever appended, so every entry is final when written.

use crate::jv::{obj, Obj, V};
use crate::node::{self, Body, Nodes};
use crate::{time_ms, Agent, Conversion, Lines, Problem};
use foldhash::{HashMap, HashMapExt};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Copilot CLI's data folder: `$COPILOT_HOME`, else `~/.copilot`.
pub fn default_root() -> PathBuf {
    std::env::var("COPILOT_HOME")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| sessiontree::dirs::resolve(&v))
        .unwrap_or_else(|| sessiontree::dirs::home_dir().join(".copilot"))
}

/// Whether `path` is a session's event log: `events.jsonl` (in its session's folder).
pub fn is_events(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "events.jsonl")
}

/// The event logs below `root` (or `root` itself), unsorted.
pub fn collect(root: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(root)?;
    if meta.is_file() {
        out.push(root.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            match std::fs::metadata(&p).map(|m| m.file_type()) {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && is_events(&p) => out.push(p),
                _ => {}
            }
        }
    }
    Ok(())
}

/// The session id a log's folder names (`session-state/<id>/events.jsonl`).
pub fn folder_id(path: &Path) -> String {
    path.parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "copilot".to_string())
}

/// The session's name in `workspace.yaml` next to its log (`name:`, what `/rename` sets,
/// or the name the CLI made from the first prompt), when that file is there, at most
/// 64 KiB, and its `name` a scalar read here (plain, single- or double-quoted, folded over
/// indented lines); else `None`. Copilot CLI 1.0.102 writes a `/rename` only there (no
/// event), so without it a renamed session would lose its title.
pub fn workspace_name(events: &Path) -> Option<String> {
    use std::io::Read;
    let path = events.with_file_name("workspace.yaml");
    // Only a regular file (opening a FIFO would wait).
    if !std::fs::metadata(&path).ok()?.is_file() {
        return None;
    }
    let f = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    f.take(64 * 1024).read_to_string(&mut text).ok()?;
    yaml_name(&text)
}

/// The top-level `name:` scalar of a YAML mapping (see [`workspace_name`]).
fn yaml_name(text: &str) -> Option<String> {
    let mut lines = text.lines();
    let first = lines.by_ref().find_map(|l| l.strip_prefix("name:"))?;
    // Continuation lines of a folded scalar are indented.
    let mut parts = vec![first.trim()];
    for l in lines {
        if l.starts_with([' ', '\t']) && !l.trim().is_empty() {
            parts.push(l.trim());
        } else {
            break;
        }
    }
    let raw = parts.join(" ");
    let name = if let Some(inner) = raw.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        // Double-quoted YAML escapes are JSON's for what a name holds.
        serde_json::from_str::<String>(&format!("\"{inner}\"")).ok()?
    } else if let Some(inner) = raw.strip_prefix('\'') {
        inner.strip_suffix('\'')?.replace("''", "'")
    } else if raw.starts_with(['|', '>', '&', '*', '!', '[', '{']) {
        // Block scalars, anchors, tags, collections: not a name this reads.
        return None;
    } else {
        // A plain scalar ends before a comment.
        raw.split(" #").next().unwrap_or("").trim().to_string()
    };
    (!name.is_empty() && name != "~" && name != "null").then_some(name)
}

struct Converter<'a> {
    nodes: Nodes<'a>,
    /// Event id -> the entry before it, and the entry that stands for it (or for the last
    /// one before it).
    at: HashMap<String, (Option<usize>, Option<usize>)>,
    /// The entry after the last event read.
    leaf: Option<usize>,
    /// Tool names by call id (from `tool.execution_start` and the calls).
    tools: HashMap<String, String>,
    /// The last usage record (for the assistant message after it).
    usage: Option<V<'a>>,
    problems: Vec<Problem>,
    skipped: BTreeMap<String, usize>,
    name: Option<String>,
    /// The first prompt as the person typed it (`content`): what Copilot CLI names a
    /// session until it is renamed.
    first_prompt: Option<String>,
    conversation: bool,
}

/// Converts one session's `events.jsonl`: the main session (first), then one session per
/// subagent. `folder_id`: the session id its folder names (used when the log has no
/// `session.start`).
///
/// A subagent's events (from its `subagent.started` to its `subagent.completed` /
/// `subagent.failed`, and every event whose `parentToolCallId` names its `task` call; not
/// the call's own `tool.execution_*`) are
/// in the same chain as the main session's; they become a session of their own, linked to
/// the main one, and the main session continues from the `task` call to its result.
pub fn convert_all(bytes: &[u8], folder_id: &str) -> Vec<Conversion> {
    convert_all_named(bytes, folder_id, None)
}

/// [`convert_all`], the main session named `name` (its `workspace.yaml` name, see
/// [`workspace_name`]) when given, before any title the log holds.
pub fn convert_all_named(bytes: &[u8], folder_id: &str, name: Option<&str>) -> Vec<Conversion> {
    let mut problems = Vec::new();
    let records: Vec<(usize, Obj<'_>)> = Lines::new(bytes).with(&mut problems).collect();
    let start = records
        .iter()
        .find(|(_, r)| r.get("type").and_then(V::as_str) == Some("session.start"))
        .and_then(|(_, r)| r.get("data"))
        .and_then(V::as_object)
        .cloned()
        .unwrap_or_default();
    let session_id = start
        .get("sessionId")
        .and_then(V::as_str)
        .unwrap_or(folder_id)
        .to_string();
    let cwd = start
        .get("context")
        .and_then(|c| c.get("cwd"))
        .and_then(V::as_str)
        .map(str::to_string);
    let first_ms = time_ms(start.get("startTime"))
        .or_else(|| {
            records
                .iter()
                .find_map(|(_, r)| time_ms(r.get("timestamp")))
        })
        .unwrap_or(0);
    // Which events are a subagent's: by the `task` call id.
    let mut main = Vec::with_capacity(records.len());
    let mut subs: Vec<(String, Vec<(usize, Obj<'_>)>)> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for (line, r) in records {
        let ty = r.get("type").and_then(V::as_str).unwrap_or("");
        let data = r.get("data");
        // (Borrowed: most events name a call, a copy each was an allocation per event.)
        let call = |k: &str| data.and_then(|d| d.get(k)).and_then(V::as_str);
        let owner: Option<String> = match ty {
            "subagent.started" => {
                if let Some(c) = call("toolCallId") {
                    open.push(c.to_string());
                }
                None
            }
            "subagent.completed" | "subagent.failed" => {
                if let Some(c) = call("toolCallId") {
                    open.retain(|o| o != c);
                }
                None
            }
            // The `task` call's own result (written before or after `subagent.completed`).
            _ if call("toolCallId").is_some_and(|c| open.iter().any(|o| o == c)) => None,
            _ => match call("parentToolCallId") {
                Some(c) => Some(c.to_string()),
                None => open.last().cloned(),
            },
        };
        match owner {
            Some(c) => match subs.iter_mut().find(|(id, _)| *id == c) {
                Some((_, v)) => v.push((line, r)),
                None => subs.push((c, vec![(line, r)])),
            },
            None => main.push((line, r)),
        }
    }
    let mut out = vec![convert_events(
        main,
        Agent::Copilot,
        session_id.clone(),
        session_id.clone(),
        cwd.clone(),
        None,
        first_ms,
        problems,
        name,
    )];
    for (call, events) in subs {
        let source = format!("{session_id}:{call}");
        let ms = events
            .iter()
            .find_map(|(_, r)| time_ms(r.get("timestamp")))
            .unwrap_or(first_ms);
        out.push(convert_events(
            events,
            Agent::Copilot,
            crate::derived_uuid(&source),
            source,
            cwd.clone(),
            Some(session_id.clone()),
            ms,
            Vec::new(),
            None,
        ));
    }
    out
}

/// The main session of a log ([`convert_all`]'s first).
pub fn convert(bytes: &[u8], folder_id: &str) -> Conversion {
    convert_all(bytes, folder_id)
        .into_iter()
        .next()
        .expect("a main session")
}

#[allow(clippy::too_many_arguments)]
fn convert_events<'a>(
    records: Vec<(usize, Obj<'a>)>,
    agent: Agent,
    session_id: String,
    source_session_id: String,
    cwd: Option<String>,
    parent: Option<String>,
    first_ms: i64,
    mut problems: Vec<Problem>,
    workspace_name: Option<&str>,
) -> Conversion {
    let mut c = Converter {
        nodes: Nodes::default(),
        at: HashMap::with_capacity(records.len()),
        leaf: None,
        tools: HashMap::new(),
        usage: None,
        problems: Vec::new(),
        skipped: BTreeMap::new(),
        name: None,
        first_prompt: None,
        conversation: false,
    };
    let mut last_ms = first_ms;
    for (line, r) in records {
        let ms = time_ms(r.get("timestamp")).unwrap_or(last_ms);
        last_ms = last_ms.max(ms);
        c.event(line, r, ms);
    }
    let conversation = c.conversation;
    // The session's name under the leaf: its `workspace.yaml` name (where `/rename` writes
    // it), else its title (`session.title_changed`), else its first prompt as typed,
    // without the `<current_datetime>` block the CLI adds (Copilot CLI's own name for it
    // until it is renamed: `workspace.yaml`'s `name` with `user_named: false`). Keyed by
    // the leaf too: once the session goes on, the name is a new entry under the new leaf
    // (an entry, once written, keeps its parent).
    let name = workspace_name
        .map(str::to_string)
        .or_else(|| c.name.clone())
        .or_else(|| c.first_prompt.clone());
    if let (Some(name), Some(leaf), true) = (name, c.leaf, conversation) {
        let clean = sessiontree::session::sanitize_name(&name);
        if !clean.is_empty() {
            let ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(first_ms);
            let key = format!("name\u{0}{}\u{0}{clean}", c.nodes.nodes[leaf].key);
            c.nodes.push(Some(leaf), key, ms, Body::SessionInfo(clean));
        }
    }
    let last_ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(first_ms);
    let (lines, body) = c.nodes.finish(if parent.is_some() {
        "copilot-cli/subagent"
    } else {
        "copilot-cli"
    });
    let (lines, body) = if conversation {
        (lines, body)
    } else {
        crate::recycle(body);
        (Vec::new(), String::new())
    };
    problems.extend(c.problems);
    problems.sort_by_key(|p| p.line);
    Conversion {
        agent,
        session_id,
        source_session_id,
        timestamp: sessiontree::date::iso_from_ms(first_ms),
        cwd,
        kind: if parent.is_some() {
            "sidechain"
        } else {
            "main"
        },
        parent_source: parent,
        last_ms,
        copied: false,
        settled: lines.len(),
        lines,
        body,
        name: c.name.or_else(|| workspace_name.map(str::to_string)),
        problems,
        skipped: c.skipped,
    }
}

/// A compaction that took place (`success` not false, a summary): its summary and the
/// conversation's tokens before it.
fn compacted(data: &Obj<'_>) -> Option<(String, f64)> {
    if data.get("success").and_then(V::as_bool) == Some(false) {
        return None;
    }
    let summary = data.get("summaryContent").and_then(V::as_str)?;
    if summary.is_empty() {
        return None;
    }
    let tokens = data
        .get("preCompactionTokens")
        .and_then(V::as_f64)
        .unwrap_or(0.0);
    Some((summary.to_string(), tokens))
}

fn text_or_empty<'a>(o: &Obj<'a>, k: &str) -> String {
    o.get(k).and_then(V::as_str).unwrap_or("").to_string()
}

impl<'a> Converter<'a> {
    fn skip(&mut self, what: &str) {
        crate::count(&mut self.skipped, what);
    }

    /// The entry an event continues from: its parent event's, else (an unknown parent:
    /// a log cut at its start) the last one.
    fn parent_of(&self, r: &Obj<'a>) -> Option<usize> {
        match r.get("parentId").and_then(V::as_str) {
            Some(p) => match self.at.get(p) {
                Some((_, n)) => *n,
                None => self.leaf,
            },
            None if r.get("parentId").is_some_and(V::is_null) => None,
            None => self.leaf,
        }
    }

    fn place(&mut self, id: String, before: Option<usize>, n: Option<usize>) {
        if !id.is_empty() {
            self.at.insert(id, (before, n));
        }
        self.leaf = n;
    }

    fn push(&mut self, parent: Option<usize>, id: &str, ms: i64, body: Body<'a>) -> usize {
        let key = if id.is_empty() {
            format!("#{}", self.nodes.nodes.len())
        } else {
            id.to_string()
        };
        self.nodes.push(parent, key, ms, body)
    }

    fn event(&mut self, line: usize, mut r: Obj<'a>, ms: i64) {
        let Some(ty) = r.get("type").and_then(V::as_str).map(str::to_string) else {
            self.problems.push(Problem {
                line,
                message: "not a Copilot CLI event (no type)".into(),
            });
            return;
        };
        let id = r.get("id").and_then(V::as_str).unwrap_or("").to_string();
        let parent = self.parent_of(&r);
        // Taken out of the event, not copied: a copy per event was a tenth of the import's
        // time in allocations.
        let data = match r.remove("data") {
            Some(V::Obj(o)) => o,
            _ => Obj::default(),
        };
        let custom = |kind: &str| Body::Custom {
            custom_type: format!("copilot-cli:{kind}"),
            data: V::Obj(data.clone()),
        };
        let n = match ty.as_str() {
            "user.message" => {
                let text = match data.get("transformedContent") {
                    Some(V::Str(s)) => s.clone(),
                    _ => match data.get("content") {
                        Some(V::Str(s)) => s.clone(),
                        _ => crate::jv::S::from(""),
                    },
                };
                self.conversation = true;
                if self.first_prompt.is_none() {
                    self.first_prompt = data
                        .get("content")
                        .and_then(V::as_str)
                        .or_else(|| data.get("transformedContent").and_then(V::as_str))
                        .map(str::to_string);
                }
                let mut u = Obj::with_capacity(4);
                u.push_new("role", V::from("user"));
                u.push_new("content", V::Arr(vec![node::text(text)]));
                u.push_new("timestamp", V::from(ms));
                u.push_new("copilotCli", obj! {"id": id.clone()});
                Some(self.push(parent, &id, ms, Body::Message(u)))
            }
            "assistant.message" => {
                self.conversation = true;
                Some(self.assistant(parent, &id, ms, &data))
            }
            "tool.execution_start" => {
                let cid = text_or_empty(&data, "toolCallId");
                let name = text_or_empty(&data, "toolName");
                if !cid.is_empty() && !name.is_empty() {
                    self.tools.insert(cid, name);
                }
                self.skip(&ty);
                parent
            }
            "tool.execution_complete" => Some(self.tool_result(parent, &id, ms, &data)),
            "session.usage_record" => {
                self.usage = data.get("usage").cloned();
                self.skip(&ty);
                parent
            }
            "session.snapshot_rewind" => {
                // Back to before the first removed event.
                let back = data
                    .get("upToEventId")
                    .and_then(V::as_str)
                    .and_then(|u| self.at.get(u))
                    .map_or(parent, |(before, _)| *before);
                Some(self.push(back, &id, ms, custom("rewind")))
            }
            "session.title_changed" => {
                if let Some(t) = data.get("title").and_then(V::as_str) {
                    self.name = Some(t.to_string());
                }
                self.skip(&ty);
                parent
            }
            "session.compaction_complete" if compacted(&data).is_some() => {
                let (summary, tokens_before) = compacted(&data).unwrap_or_default();
                let first_kept = self.kept_from(parent, &data);
                Some(self.push(
                    parent,
                    &id,
                    ms,
                    Body::Compaction {
                        summary,
                        tokens_before,
                        details: None,
                        first_kept,
                        system_message: None,
                    },
                ))
            }
            "session.compaction_complete"
            | "session.error"
            | "session.warning"
            | "session.info"
            | "session.model_change" => {
                let kind = ty.trim_start_matches("session.").to_string();
                Some(self.push(parent, &id, ms, custom(&kind)))
            }
            _ => {
                self.skip(&ty);
                parent
            }
        };
        self.place(id, parent, n);
    }

    /// The entry a compaction keeps from: Copilot CLI replaces the conversation's messages
    /// (`preCompactionMessagesLength`, the system prompt not counted) by one summary
    /// message, `messagesRemoved` being how many fewer there are after it; the messages
    /// left besides the summary are the newest ones. Recorded (`copilot-compact`, a manual
    /// `/compact`): none left, so the compaction keeps nothing before it (`None`).
    /// Otherwise the `kept`-th message entry back on the path from `parent` (every Copilot
    /// message is one Pi message: an assistant message with its calls, each tool result).
    fn kept_from(&self, parent: Option<usize>, data: &Obj<'a>) -> Option<usize> {
        let n = |k: &str| data.get(k).and_then(V::as_f64).filter(|v| *v >= 0.0);
        let kept = match (n("preCompactionMessagesLength"), n("messagesRemoved")) {
            (Some(before), Some(removed)) => before - removed - 1.0,
            _ => 0.0,
        };
        if kept < 1.0 {
            return None;
        }
        let mut left = kept;
        let mut at = parent;
        let mut first = None;
        // Bounded by the path's length: a parent is always an earlier node.
        while let Some(i) = at {
            let node = &self.nodes.nodes[i];
            match node.body {
                Body::Message(_) => {
                    first = Some(i);
                    left -= 1.0;
                    if left < 1.0 {
                        break;
                    }
                }
                // Nothing from before an earlier compaction.
                Body::Compaction { .. } => break,
                _ => {}
            }
            at = node.parent;
        }
        first
    }

    fn assistant(&mut self, parent: Option<usize>, id: &str, ms: i64, data: &Obj<'a>) -> usize {
        let mut content = Vec::new();
        if let Some(V::Str(t)) = data.get("reasoningText") {
            if !t.as_str().is_empty() {
                let mut b = Obj::with_capacity(3);
                b.push_new("type", V::from("thinking"));
                b.push_new("thinking", V::Str(t.clone()));
                if let Some(V::Str(sg)) = data.get("reasoningOpaque") {
                    b.push_new("thinkingSignature", V::Str(sg.clone()));
                }
                content.push(V::Obj(b));
            }
        }
        if let Some(V::Str(t)) = data.get("content") {
            if !t.as_str().is_empty() {
                content.push(node::text(t.clone()));
            }
        }
        let mut calls = 0;
        for tr in data
            .get("toolRequests")
            .and_then(V::as_array)
            .into_iter()
            .flatten()
        {
            let cid = tr
                .get("toolCallId")
                .and_then(V::as_str)
                .unwrap_or("")
                .to_string();
            let name = tr.get("name").and_then(V::as_str).unwrap_or("").to_string();
            let args = match tr.get("arguments") {
                Some(a @ V::Obj(_)) => a.clone(),
                // Arguments the model sent as text that is not an object.
                Some(V::Str(s)) => crate::jv::parse(s.as_str())
                    .filter(V::is_object)
                    .map(V::into_owned)
                    .unwrap_or_else(|| obj! {"input": s.clone()}),
                _ => V::Obj(Obj::new()),
            };
            if !cid.is_empty() && !name.is_empty() {
                self.tools
                    .entry(cid.clone())
                    .or_insert_with(|| name.clone());
            }
            calls += 1;
            content.push(obj! {"type": "toolCall", "id": cid, "name": name, "arguments": args});
        }
        let usage = self.usage.take();
        let g = |k: &str| {
            usage
                .as_ref()
                .and_then(|u| u.get(k))
                .and_then(V::as_f64)
                .unwrap_or(0.0)
        };
        let cached = g("cacheReadTokens");
        let usage = node::usage(
            (g("inputTokens") - cached).max(0.0),
            g("outputTokens"),
            cached,
            g("cacheWriteTokens"),
            None,
        );
        let mut a = Obj::with_capacity(10);
        a.push_new("role", V::from("assistant"));
        a.push_new("content", V::Arr(content));
        a.push_new("api", V::from("openai-completions"));
        a.push_new("provider", V::from("github-copilot"));
        a.push_new("model", V::from(text_or_empty(data, "model")));
        a.push_new("usage", usage);
        a.push_new(
            "stopReason",
            V::from(if calls == 0 { "stop" } else { "toolUse" }),
        );
        a.push_new("timestamp", V::from(ms));
        a.push_new("copilotCli", obj! {"id": id.to_string()});
        self.push(parent, id, ms, Body::Message(a))
    }

    fn tool_result(&mut self, parent: Option<usize>, id: &str, ms: i64, data: &Obj<'a>) -> usize {
        let cid = text_or_empty(data, "toolCallId");
        let name = self.tools.get(&cid).cloned().unwrap_or_default();
        let ok = data.get("success").and_then(V::as_bool) != Some(false);
        let result = data.get("result");
        let text = match (result.and_then(|r| r.get("content")), data.get("error")) {
            (Some(V::Str(s)), _) if ok => s.clone(),
            (_, Some(e)) if !ok => match e.get("message").or(Some(e)) {
                Some(V::Str(s)) => s.clone(),
                Some(v) => crate::jv::S::from(v.to_json()),
                None => crate::jv::S::from(""),
            },
            (Some(V::Str(s)), _) => s.clone(),
            _ => crate::jv::S::from(""),
        };
        let mut m = Obj::with_capacity(7);
        m.push_new("role", V::from("toolResult"));
        m.push_new("toolCallId", V::from(cid));
        m.push_new("toolName", V::from(name));
        m.push_new("content", V::Arr(vec![node::text(text)]));
        m.push_new(
            "details",
            obj! {"source": "copilot-cli", "copilotCli": obj! {"id": id.to_string()}},
        );
        m.push_new("isError", V::Bool(!ok));
        m.push_new("timestamp", V::from(ms));
        self.push(parent, id, ms, Body::Message(m))
    }
}

#[cfg(test)]
mod tests {
    use super::yaml_name;

    #[test]
    fn workspace_names_are_read_as_yaml_scalars() {
        let doc = |v: &str| format!("id: x\ncwd: /a\nname: {v}\nuser_named: true\n");
        assert_eq!(
            yaml_name(&doc("Demo session")).as_deref(),
            Some("Demo session")
        );
        assert_eq!(yaml_name(&doc("plain # note")).as_deref(), Some("plain"));
        assert_eq!(yaml_name(&doc("'it''s'")).as_deref(), Some("it's"));
        assert_eq!(
            yaml_name(&doc(r#""a \"b\" \u00e9\n""#)).as_deref(),
            Some("a \"b\" \u{e9}\n")
        );
        assert_eq!(
            yaml_name("name: a long name\n  folded here\nuser_named: false\n").as_deref(),
            Some("a long name folded here")
        );
        assert_eq!(yaml_name(&doc("|")), None);
        assert_eq!(yaml_name(&doc("")), None);
        assert_eq!(yaml_name(&doc("'unterminated")), None);
        assert_eq!(yaml_name("id: x\n"), None);
        // Only the top level: an indented `name:` belongs to something else.
        assert_eq!(yaml_name("repo:\n  name: inner\n"), None);
    }
}
