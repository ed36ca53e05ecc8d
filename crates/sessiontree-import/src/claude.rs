//! Claude Code transcripts (`<config>/projects/<cwd slug>/<session id>.jsonl`, subagents in
//! `agent-<id>.jsonl` beside it or under `<session id>/subagents/`).
//!
//! The file is a tree: each line with a `uuid` names its parent in `parentUuid`. What the
//! converter does with each kind of line:
//!
//! * `assistant`: one API response is written as several lines sharing `message.id` (one
//!   content block each, chained); they become one Pi assistant message (usage and stop
//!   reason from the last line). `tool_use` -> `toolCall` (same id), `thinking` and
//!   `redacted_thinking` -> `thinking` with the signature, error messages keep their text
//!   as `errorMessage` with stop reason `error`.
//! * `user`: `tool_result` blocks -> one `toolResult` message each (same tool call id, the
//!   line's `toolUseResult` in `details`); text and images -> a `user` message. `isMeta`
//!   lines (sent to the model, hidden from the person) -> `custom_message` with
//!   `display: false`; `isVisibleInTranscriptOnly` lines (shown, never sent) -> `custom`.
//! * `system` `compact_boundary` (a new root whose `logicalParentUuid` is the old leaf) and
//!   the `isCompactSummary` user line under it -> one Pi `compaction`: after a compaction
//!   Claude Code sends the summary, the preserved segment (`compactMetadata.
//!   preservedSegment`, newer releases: the last messages before the boundary) and what
//!   follows, so the compaction keeps from the segment's head, or nothing without one.
//! * other `system` lines and lines of unknown types with a `uuid` -> `custom` entries
//!   holding the whole line (never in the model's context; they keep the tree's shape).
//! * `attachment` lines (newer releases: listings, hook output, files named with @, ...):
//!   the kinds Claude Code sends to the model -> a Pi `system` message with the text it
//!   sends (rendered as Claude Code renders them); the others -> `custom` entries.
//! * `progress` lines are dropped; lines that name them as parent hang on their parent.
//! * `summary` (with `leafUuid`) and `custom-title` lines -> the session name.
//! * Lines without a `uuid` (`file-history-snapshot`, `queue-operation`, ...) are counted
//!   as skipped. A `uuid` seen twice (resume copies) is imported once.
//! * `isSidechain` lines (subagents) become their own session whose `parentSession` is the
//!   main session.
//!
//! Entry ids are derived from the line uuids, so the same line gets the same id in every
//! file that holds a copy of it.

use crate::jv::{obj, Obj, S, V};
use crate::node::{self, Body, Nodes};
use crate::{derived_uuid, time_ms, Agent, Conversion, Lines, Problem};
use foldhash::HashMap;
use std::borrow::Cow;
use std::collections::BTreeMap;

const NAMESPACE: &str = "claude";

/// Converts one transcript file. `file_stem` is the file name without `.jsonl` (the
/// session id, or `agent-<id>` for a subagent). Gives the main session and, when the file
/// holds sidechain lines of its own, the sidechain session; a file with no conversation
/// gives conversions without lines.
pub fn convert(bytes: &[u8], file_stem: &str) -> Vec<Conversion> {
    let mut problems = Vec::new();
    let is_agent_file = file_stem.starts_with("agent-");
    let mut source_id = None;
    let mut agent_id = None;
    let (mut main, mut side) = (Builder::default(), Builder::default());
    // Each line converted as it is read, its tree still in the cache.
    for (line, o) in Lines::new(bytes).with(&mut problems) {
        if source_id.is_none() {
            source_id = o.get("sessionId").and_then(V::as_str).map(str::to_string);
        }
        if is_agent_file || o.get("isSidechain").and_then(V::as_bool) == Some(true) {
            if agent_id.is_none() {
                agent_id = o.get("agentId").and_then(V::as_str).map(str::to_string);
            }
            side.push(line, o);
        } else {
            main.push(line, o);
        }
    }
    let source_id = source_id.unwrap_or_else(|| file_stem.to_string());
    let mut out = Vec::new();
    if !is_agent_file {
        let head = std::mem::take(&mut main.head);
        // Lines copied from another session (a resume or fork copy) keep their times, so
        // the first line with a uuid is older than the copy's own first line.
        let copied = main
            .first_uuid_ms
            .flatten()
            .is_some_and(|t| t < head.first_ms);
        let mut c = main.finish(NAMESPACE);
        c.problems = problems.clone();
        let mut conv = finish(c, source_id.clone(), source_id.clone(), None, "main", head);
        conv.copied = copied;
        out.push(conv);
    }
    if side.any || is_agent_file {
        let agent = agent_id.unwrap_or_else(|| file_stem.trim_start_matches("agent-").to_string());
        let sid = if is_agent_file {
            format!("{source_id}/agent-{agent}")
        } else {
            format!("{source_id}/sidechains")
        };
        let head = std::mem::take(&mut side.head);
        let mut c = side.finish(NAMESPACE);
        if is_agent_file {
            c.problems = problems;
        }
        let id = derived_uuid(&format!("claude:{sid}"));
        out.push(finish(c, id, sid, Some(source_id), "sidechain", head));
    }
    out
}

/// What the header takes from a session's lines: the first time and cwd.
#[derive(Default)]
struct Head {
    first_ms: i64,
    cwd: Option<String>,
}

struct Built {
    last_ms: i64,
    lines: Vec<crate::Line>,
    body: String,
    name: Option<String>,
    problems: Vec<Problem>,
    skipped: BTreeMap<String, usize>,
}

fn finish(
    b: Built,
    session_id: String,
    source_session_id: String,
    parent_source: Option<String>,
    kind: &'static str,
    head: Head,
) -> Conversion {
    let Head { first_ms, cwd } = head;
    Conversion {
        agent: Agent::Claude,
        session_id,
        source_session_id,
        timestamp: sessiontree::date::iso_from_ms(first_ms),
        cwd,
        parent_source,
        kind,
        settled: b.lines.len(),
        lines: b.lines,
        body: b.body,
        last_ms: b.last_ms,
        copied: false,
        name: b.name,
        problems: b.problems,
        skipped: b.skipped,
    }
}

#[derive(Default)]
struct Group<'a> {
    uuids: Vec<Cow<'a, str>>,
    /// Tokens of the last line that had a usage: input, output, cache read, cache write.
    usage: Option<[f64; 4]>,
    stop: Option<String>,
    error: bool,
    request_id: Option<String>,
    other_blocks: Vec<V<'a>>,
}

#[derive(Default)]
struct State<'a> {
    nodes: Nodes<'a>,
    /// uuid -> the node it stands for (`None`: a dropped line at the root).
    map: HashMap<Cow<'a, str>, Option<usize>>,
    tool_names: HashMap<String, String>,
    /// message.id -> its assistant node.
    by_message_id: HashMap<String, usize>,
    groups: HashMap<usize, Group<'a>>,
    /// assistant node -> the last tool result chained after it.
    last_result: HashMap<usize, usize>,
    /// tool result node -> its assistant node.
    result_owner: HashMap<usize, usize>,
    compactions: HashMap<usize, ()>,
    skipped: BTreeMap<String, usize>,
    problems: Vec<Problem>,
}

impl State<'_> {
    fn resolve(&self, parent: Option<&str>) -> Option<usize> {
        parent.and_then(|p| self.map.get(p).copied().flatten())
    }

    fn skip(&mut self, what: &str) {
        crate::count(&mut self.skipped, what);
    }
}

/// One session's lines (the main one or the sidechains) turned into Pi entries, line by
/// line as they are read.
#[derive(Default)]
struct Builder<'a> {
    st: State<'a>,
    summaries: Vec<(Option<String>, String)>,
    title: Option<String>,
    /// The time of the last line, for a line without one; `None` until the first line with
    /// a time (the lines before it wait in `waiting`, and get that time).
    last_ms: Option<i64>,
    waiting: Vec<(usize, Obj<'a>)>,
    /// What the header takes: the first time and cwd.
    head: Head,
    /// The time of the first line with a uuid (`Some(None)`: that line has no time).
    first_uuid_ms: Option<Option<i64>>,
    any: bool,
}

impl<'a> Builder<'a> {
    fn push(&mut self, line: usize, o: Obj<'a>) {
        self.any = true;
        if self.head.cwd.is_none() {
            self.head.cwd = o.get("cwd").and_then(V::as_str).map(str::to_string);
        }
        if self.first_uuid_ms.is_none() && o.get("uuid").is_some_and(V::is_string) {
            self.first_uuid_ms = Some(time_ms(o.get("timestamp")));
        }
        if self.last_ms.is_none() {
            let Some(t) = time_ms(o.get("timestamp")) else {
                self.waiting.push((line, o));
                return;
            };
            self.head.first_ms = t;
            self.last_ms = Some(t);
            for (l, w) in std::mem::take(&mut self.waiting) {
                self.line(l, w);
            }
        }
        self.line(line, o);
    }

    fn line(&mut self, line: usize, mut o: Obj<'a>) {
        let ty = o.get("type").and_then(V::src_str).unwrap_or_default();
        let ty = &*ty;
        match ty {
            "summary" => {
                if let Some(s) = o.get("summary").and_then(V::as_str) {
                    let leaf = o.get("leafUuid").and_then(V::as_str).map(str::to_string);
                    self.summaries.push((leaf, s.to_string()));
                }
                return;
            }
            "custom-title" => {
                if let Some(s) = o.get("customTitle").and_then(V::as_str) {
                    self.title = Some(s.to_string());
                }
                return;
            }
            _ => {}
        }
        let Some(uuid) = o.get("uuid").and_then(V::src_str) else {
            self.st.skip(if ty.is_empty() { "untyped" } else { ty });
            return;
        };
        let uuid = &uuid;
        if self.st.map.contains_key(uuid) {
            self.st.skip("duplicate uuid");
            return;
        }
        let ms = time_ms(o.get("timestamp")).unwrap_or(self.last_ms.unwrap_or(0));
        self.last_ms = Some(ms);
        let parent_uuid = o.get("parentUuid").and_then(V::src_str);
        let parent_uuid = parent_uuid.as_deref();
        let node = match ty {
            "progress" => {
                self.st.skip("progress");
                self.st.resolve(parent_uuid)
            }
            "assistant" => assistant(&mut self.st, line, &mut o, uuid.clone(), parent_uuid, ms),
            "user" => user(&mut self.st, line, &mut o, uuid.clone(), parent_uuid, ms),
            "attachment" => attachment(&mut self.st, &mut o, uuid.clone(), parent_uuid, ms),
            "system" if o.get("subtype").and_then(V::as_str) == Some("compact_boundary") => {
                let logical =
                    parent_uuid.or_else(|| o.get("logicalParentUuid").and_then(V::as_str));
                let parent = self.st.resolve(logical);
                let meta = o.get("compactMetadata").cloned().unwrap_or(V::Null);
                let tokens = meta.get("preTokens").and_then(V::as_f64).unwrap_or(0.0);
                let mut details = Obj::with_capacity(3);
                details.push_new("source", V::from("claude-code"));
                details.push_new("uuid", V::from(uuid.clone()));
                if !meta.is_null() {
                    details.push_new("compactMetadata", meta.clone());
                }
                // A preserved segment (newer releases keep the last messages before the
                // boundary and send them after the summary): Pi keeps from its head.
                let head = meta
                    .get("preservedSegment")
                    .and_then(|p| p.get("headUuid"))
                    .and_then(V::as_str)
                    .and_then(|h| self.st.map.get(h).copied().flatten());
                let first_kept = head.filter(|&h| {
                    let mut cur = parent;
                    let mut steps = 0;
                    while let Some(c) = cur {
                        if c == h {
                            return true;
                        }
                        steps += 1;
                        if steps > self.st.nodes.nodes.len() {
                            break;
                        }
                        cur = self.st.nodes.nodes[c].parent;
                    }
                    false
                });
                let n = self.st.nodes.push(
                    parent,
                    uuid.clone(),
                    ms,
                    Body::Compaction {
                        summary: String::new(),
                        tokens_before: tokens,
                        details: Some(V::Obj(details)),
                        first_kept,
                        system_message: None,
                    },
                );
                self.st.compactions.insert(n, ());
                Some(n)
            }
            _ => {
                let parent = self.st.resolve(parent_uuid);
                let custom_type = if ty == "system" {
                    "claude-code:system".to_string()
                } else {
                    format!("claude-code:{}", if ty.is_empty() { "line" } else { ty })
                };
                Some(self.st.nodes.push(
                    parent,
                    uuid.clone(),
                    ms,
                    Body::Custom {
                        custom_type,
                        data: V::Obj(std::mem::take(&mut o)),
                    },
                ))
            }
        };
        self.st.map.insert(uuid.clone(), node);
    }

    fn finish(mut self, namespace: &str) -> Built {
        // No line with a time: the waiting lines get 0.
        self.last_ms.get_or_insert(0);
        for (l, w) in std::mem::take(&mut self.waiting) {
            self.line(l, w);
        }
        // Finish the assistant messages: usage and stop reason of their last line.
        let groups = std::mem::take(&mut self.st.groups);
        for (n, g) in groups {
            if let Body::Message(m) = &mut self.st.nodes.nodes[n].body {
                let has_tool = m.get("content").and_then(V::as_array).is_some_and(|c| {
                    c.iter()
                        .any(|b| b.get("type").and_then(V::as_str) == Some("toolCall"))
                });
                let stop = if g.error {
                    "error"
                } else {
                    match g.stop.as_deref() {
                        Some("tool_use") => "toolUse",
                        Some("max_tokens") | Some("model_context_window_exceeded") => "length",
                        Some(_) => "stop",
                        None if has_tool => "toolUse",
                        None => "stop",
                    }
                };
                m.insert("usage", {
                    let [input, output, read, write] = g.usage.unwrap_or_default();
                    node::usage(input, output, read, write, None)
                });
                m.insert("stopReason", V::from(stop));
                if g.error {
                    let text: Vec<&str> = m
                        .get("content")
                        .and_then(V::as_array)
                        .map(|c| {
                            c.iter()
                                .filter_map(|b| b.get("text").and_then(V::as_str))
                                .collect()
                        })
                        .unwrap_or_default();
                    m.insert("errorMessage", V::from(text.join("\n")));
                } else {
                    m.remove("errorMessage");
                }
                let ts = m.remove("timestamp");
                if let Some(ts) = ts {
                    m.insert("timestamp", ts);
                }
                let mut src = Obj::with_capacity(3);
                src.push_new("uuids", V::Arr(g.uuids.into_iter().map(V::from).collect()));
                if let Some(r) = g.request_id {
                    src.push_new("requestId", V::from(r));
                }
                if !g.other_blocks.is_empty() {
                    src.push_new("otherBlocks", V::Arr(g.other_blocks));
                }
                m.insert("claudeCode", V::Obj(src));
            }
        }
        // The name: a title the person gave, else the newest summary of a leaf in this file.
        let name = self.title.take().or_else(|| {
            self.summaries
                .iter()
                .rev()
                .find(|(leaf, _)| {
                    leaf.as_ref()
                        .is_some_and(|l| self.st.map.contains_key(l.as_str()))
                })
                .map(|(_, s)| s.clone())
        });
        if let (Some(name), Some(last)) = (name.as_ref(), self.st.nodes.nodes.len().checked_sub(1))
        {
            let clean = sessiontree::session::sanitize_name(name);
            if !clean.is_empty() {
                let key = format!("name\u{0}{}\u{0}{clean}", self.st.nodes.nodes[last].key);
                let ms = self.st.nodes.nodes[last].ms;
                self.st
                    .nodes
                    .push(Some(last), key, ms, Body::SessionInfo(clean));
            }
        }
        let last_ms = self.st.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(0);
        let (lines, body) = self.st.nodes.finish(namespace);
        Built {
            last_ms,
            lines,
            body,
            name,
            problems: std::mem::take(&mut self.st.problems),
            skipped: std::mem::take(&mut self.st.skipped),
        }
    }
}

fn usage_of(u: &V<'_>) -> Option<[f64; 4]> {
    let n = |k: &str| u.get(k).and_then(V::as_f64).unwrap_or(0.0);
    u.is_object().then(|| {
        [
            n("input_tokens"),
            n("output_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        ]
    })
}

fn assistant<'a>(
    st: &mut State<'a>,
    line: usize,
    o: &mut Obj<'a>,
    uuid: Cow<'a, str>,
    parent_uuid: Option<&str>,
    ms: i64,
) -> Option<usize> {
    let parent = st.resolve(parent_uuid);
    // The content is moved out of the line, not copied.
    let content = match o.get_mut("message").and_then(V::as_object_mut) {
        Some(m) => m.get_mut("content").map(std::mem::take),
        None => {
            st.problems.push(Problem {
                line,
                message: "assistant line without a message object".into(),
            });
            return parent;
        }
    };
    let Some(msg) = o.get("message").and_then(V::as_object) else {
        return parent;
    };
    let msg_id = msg.get("id").and_then(V::as_str).map(str::to_string);
    let mut blocks = Vec::new();
    let mut other = Vec::new();
    match content {
        Some(V::Str(s)) => blocks.push(node::text(s)),
        Some(V::Arr(a)) => {
            for mut b in a {
                match b.get("type").and_then(V::as_str) {
                    Some("text") => blocks.push(node::text(take_str(&mut b, "text"))),
                    Some("thinking") => {
                        let mut t = Obj::with_capacity(3);
                        t.push_new("type", V::from("thinking"));
                        t.push_new("thinking", V::Str(take_str(&mut b, "thinking")));
                        if let Some(V::Str(s)) = b.get_mut("signature").map(std::mem::take) {
                            t.push_new("thinkingSignature", V::Str(s));
                        }
                        blocks.push(V::Obj(t));
                    }
                    Some("redacted_thinking") => blocks.push(obj! {
                        "type": "thinking",
                        "thinking": "",
                        "thinkingSignature": take_str(&mut b, "data"),
                        "redacted": true,
                    }),
                    Some("tool_use") => {
                        let id = take_str(&mut b, "id");
                        let name = take_str(&mut b, "name");
                        st.tool_names
                            .insert(id.as_str().to_string(), name.as_str().to_string());
                        let args = match b.get_mut("input").map(std::mem::take) {
                            Some(v @ V::Obj(_)) => v,
                            Some(v) => obj! {"input": v},
                            None => V::Obj(Obj::new()),
                        };
                        blocks.push(
                            obj! {"type": "toolCall", "id": id, "name": name, "arguments": args},
                        );
                    }
                    _ => other.push(b),
                }
            }
        }
        _ => {}
    }
    let error = o.get("isApiErrorMessage").and_then(V::as_bool) == Some(true);
    // Another line of a response already seen: hang it on that message.
    if let Some(mid) = &msg_id {
        if let Some(&g) = st.by_message_id.get(mid) {
            let continues =
                parent == Some(g) || parent.is_some_and(|p| st.result_owner.get(&p) == Some(&g));
            if continues {
                if let Body::Message(m) = &mut st.nodes.nodes[g].body {
                    if let Some(V::Arr(c)) = m.get_mut("content") {
                        c.extend(blocks);
                    }
                }
                st.nodes.nodes[g].key = uuid.clone();
                let grp = st.groups.entry(g).or_default();
                grp.uuids.push(uuid.clone());
                grp.other_blocks.extend(other);
                if let Some(u) = msg.get("usage").and_then(usage_of) {
                    grp.usage = Some(u);
                }
                if let Some(s) = msg.get("stop_reason").and_then(V::as_str) {
                    grp.stop = Some(s.to_string());
                }
                grp.error |= error;
                return Some(g);
            }
        }
    }
    let model = match msg.get("model") {
        Some(V::Str(s)) => s.clone(),
        _ => S::from(""),
    };
    let mut m = Obj::with_capacity(10);
    m.push_new("role", V::from("assistant"));
    m.push_new("content", V::Arr(blocks));
    m.push_new("api", V::from("anthropic-messages"));
    m.push_new("provider", V::from("anthropic"));
    m.push_new("model", V::Str(model));
    if let Some(mid) = &msg_id {
        m.push_new("responseId", V::from(mid.clone()));
    }
    m.push_new("usage", V::Null);
    m.push_new("stopReason", V::Null);
    m.push_new("errorMessage", V::Null);
    m.push_new("timestamp", V::from(ms));
    let n = st.nodes.push(parent, uuid.clone(), ms, Body::Message(m));
    let grp = st.groups.entry(n).or_default();
    grp.uuids.push(uuid.clone());
    grp.other_blocks = other;
    grp.usage = msg.get("usage").and_then(usage_of);
    grp.stop = msg
        .get("stop_reason")
        .and_then(V::as_str)
        .map(str::to_string);
    grp.error = error;
    grp.request_id = o.get("requestId").and_then(V::as_str).map(str::to_string);
    if let Some(mid) = msg_id {
        st.by_message_id.insert(mid, n);
    }
    Some(n)
}

/// Moves a string member out of a JSON object ("" when it is not a string).
fn take_str<'a>(b: &mut V<'a>, k: &str) -> S<'a> {
    match b.get_mut(k).map(std::mem::take) {
        Some(V::Str(s)) => s,
        _ => S::from(""),
    }
}

/// User-side content blocks (text, images) as Pi blocks.
fn user_blocks<'a>(blocks: Vec<V<'a>>) -> Vec<V<'a>> {
    let mut out = Vec::new();
    for mut b in blocks {
        match b.get("type").and_then(V::as_str) {
            Some("text") => out.push(node::text(take_str(&mut b, "text"))),
            Some("image") => {
                let src = b.get_mut("source");
                let mut src = src.map(std::mem::take).unwrap_or_default();
                let data = src.get_mut("data").map(std::mem::take);
                let mime = src.get_mut("media_type").map(std::mem::take);
                match (data, mime) {
                    (Some(V::Str(d)), Some(V::Str(m))) => out.push(node::image(d, m)),
                    _ => {
                        let url = src.get("url").and_then(V::as_str).unwrap_or("");
                        out.push(node::text(format!("[image: {url}]")));
                    }
                }
            }
            Some("document") => out.push(node::text("[document]")),
            _ => {}
        }
    }
    out
}

fn text_of(content: &V<'_>) -> String {
    match content {
        V::Str(s) => s.as_str().to_string(),
        V::Arr(a) => a
            .iter()
            .filter_map(|b| b.get("text").and_then(V::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn user<'a>(
    st: &mut State<'a>,
    line: usize,
    o: &mut Obj<'a>,
    uuid: Cow<'a, str>,
    parent_uuid: Option<&str>,
    ms: i64,
) -> Option<usize> {
    let parent = st.resolve(parent_uuid);
    if !o.get("message").is_some_and(V::is_object) {
        st.problems.push(Problem {
            line,
            message: "user line without a message object".into(),
        });
        return parent;
    }
    let flag = |o: &Obj<'_>, k: &str| o.get(k).and_then(V::as_bool) == Some(true);
    let compaction = parent.filter(|p| st.compactions.contains_key(p));
    if flag(o, "isCompactSummary") {
        if let Some(c) = compaction {
            let content = o.get("message").and_then(|m| m.get("content"));
            let text = content.map(text_of).unwrap_or_default();
            if let Body::Compaction {
                summary, details, ..
            } = &mut st.nodes.nodes[c].body
            {
                *summary = text;
                if let Some(V::Obj(d)) = details {
                    d.insert("summaryUuid", V::from(uuid.clone()));
                }
            }
            return Some(c);
        }
    }
    // Shown to the person, never sent to the model: kept whole, outside the context.
    if flag(o, "isVisibleInTranscriptOnly") || flag(o, "isCompactSummary") {
        let data = V::Obj(std::mem::take(o));
        return Some(st.nodes.push(
            parent,
            uuid.clone(),
            ms,
            Body::Custom {
                custom_type: "claude-code:transcript-only".into(),
                data,
            },
        ));
    }
    let meta = flag(o, "isMeta");
    // The content and the structured tool result are moved out of the line, not copied.
    let content = o
        .get_mut("message")
        .and_then(|m| m.get_mut("content"))
        .map(std::mem::take)
        .unwrap_or(V::Null);
    let mut tool_use_result = o.remove("toolUseResult");
    let is_array = matches!(content, V::Arr(_));
    let (results, rest): (Vec<V<'a>>, Vec<V<'a>>) = match content {
        V::Arr(a) => a
            .into_iter()
            .partition(|b| b.get("type").and_then(V::as_str) == Some("tool_result")),
        other => (Vec::new(), vec![other]),
    };
    let mut cur = parent;
    let n_results = results.len();
    for (i, mut r) in results.into_iter().enumerate() {
        let owner = match cur {
            Some(c) if st.groups.contains_key(&c) => Some(c),
            Some(c) => st.result_owner.get(&c).copied(),
            None => None,
        };
        // Results of one response are one chain, even when written as siblings.
        if let (Some(c), Some(own)) = (cur, owner) {
            if c == own {
                if let Some(&last) = st.last_result.get(&own) {
                    cur = Some(last);
                }
            }
        }
        let call_id = take_str(&mut r, "tool_use_id");
        let tool_name = st
            .tool_names
            .get(call_id.as_str())
            .cloned()
            .unwrap_or_default();
        let is_error = r.get("is_error").and_then(V::as_bool).unwrap_or(false);
        let content = match r.get_mut("content").map(std::mem::take) {
            Some(V::Str(s)) => vec![node::text(s)],
            Some(V::Arr(a)) => user_blocks(a),
            _ => Vec::new(),
        };
        let mut details = Obj::with_capacity(2);
        details.push_new("uuid", V::from(uuid.clone()));
        if i + 1 == n_results {
            if let Some(t) = tool_use_result.take() {
                details.push_new("toolUseResult", t);
            }
        }
        let mut m = Obj::with_capacity(7);
        m.push_new("role", V::from("toolResult"));
        m.push_new("toolCallId", V::Str(call_id));
        m.push_new("toolName", V::from(tool_name));
        m.push_new("content", V::Arr(content));
        m.push_new("details", V::Obj(details));
        m.push_new("isError", V::Bool(is_error));
        m.push_new("timestamp", V::from(ms));
        let key = if i == 0 {
            uuid.clone()
        } else {
            Cow::Owned(format!("{uuid}#{i}"))
        };
        let n = st.nodes.push(cur, key, ms, Body::Message(m));
        if let Some(own) = owner {
            st.result_owner.insert(n, own);
            st.last_result.insert(own, n);
        }
        cur = Some(n);
    }
    if rest.is_empty() {
        return cur;
    }
    let pi_content = if is_array {
        let blocks = user_blocks(rest);
        if blocks.is_empty() {
            st.skip("unsupported user blocks");
            return cur;
        }
        V::Arr(blocks)
    } else {
        match rest.into_iter().next() {
            Some(s @ V::Str(_)) => s,
            _ => V::Arr(Vec::new()),
        }
    };
    let key = if n_results == 0 {
        uuid.clone()
    } else {
        Cow::Owned(format!("{uuid}#text"))
    };
    let body = if meta {
        Body::CustomMessage {
            custom_type: "claude-code:meta".into(),
            content: pi_content,
            display: false,
            details: Some(obj! {"uuid": uuid.clone()}),
        }
    } else {
        let mut m = Obj::with_capacity(4);
        m.push_new("role", V::from("user"));
        m.push_new("content", pi_content);
        m.push_new("timestamp", V::from(ms));
        m.push_new("claudeCode", obj! {"uuid": uuid.clone()});
        Body::Message(m)
    };
    Some(st.nodes.push(cur, key, ms, body))
}

/// An `attachment` line (newer releases): context Claude Code adds around a prompt or a tool
/// call. The kinds Claude Code sends to the model are rendered as it renders them (Claude
/// Code 2.1.197, recorded) into a Pi `system` message; it sends them as `system` messages
/// too, holding them back until its next assistant message and joining neighbours with a
/// blank line, which is what Pi's Anthropic conversion does with system messages. The line's
/// `attachment` object is kept in `claudeCode`. Kinds it does not send (hook results of
/// other events, reminders it writes from its own instructions, ...) stay `custom` entries,
/// outside the context, as before.
fn attachment<'a>(
    st: &mut State<'a>,
    o: &mut Obj<'a>,
    uuid: Cow<'a, str>,
    parent_uuid: Option<&str>,
    ms: i64,
) -> Option<usize> {
    let parent = st.resolve(parent_uuid);
    let text = o.get("attachment").and_then(attachment_text);
    let body = match text {
        Some(text) => {
            let kept = o.remove("attachment").unwrap_or(V::Null);
            let mut m = Obj::with_capacity(4);
            m.push_new("role", V::from("system"));
            m.push_new("content", V::from(text));
            m.push_new("timestamp", V::from(ms));
            m.push_new(
                "claudeCode",
                obj! {"uuid": uuid.clone(), "attachment": kept},
            );
            Body::Message(m)
        }
        None => Body::Custom {
            custom_type: "claude-code:attachment".into(),
            data: V::Obj(std::mem::take(o)),
        },
    };
    Some(st.nodes.push(parent, uuid.clone(), ms, body))
}

/// The text Claude Code sends for an attachment, or `None` for a kind it does not send (or
/// one whose rendering is not known).
fn attachment_text(a: &V<'_>) -> Option<String> {
    let s = |k: &str| a.get(k).and_then(V::as_str);
    let yes = |k: &str| a.get(k).and_then(V::as_bool) == Some(true);
    // A string, or an array of strings, as its pieces.
    fn lines<'v>(v: Option<&'v V<'_>>) -> Option<Vec<&'v str>> {
        match v? {
            V::Str(t) => Some(vec![t.as_str()]),
            V::Arr(x) => x.iter().map(V::as_str).collect(),
            _ => None,
        }
    }
    match s("type")? {
        // Hook output reaches the model for the events whose stdout is context.
        "hook_success" => {
            let event = s("hookEvent")?;
            let content = s("content").filter(|c| !c.is_empty())?;
            if !matches!(event, "SessionStart" | "UserPromptSubmit") {
                return None;
            }
            Some(format!("{} hook success: {content}", s("hookName")?))
        }
        "hook_additional_context" => {
            let content = lines(a.get("content")).filter(|c| !c.is_empty())?;
            Some(format!(
                "{} hook additional context: {}",
                s("hookName")?,
                content.join("\n")
            ))
        }
        // The first listing of a session (a later delta also names removed types; not
        // recorded yet).
        "agent_listing_delta" if yes("isInitial") => {
            let added = lines(a.get("addedLines")).filter(|c| !c.is_empty())?;
            let removed = a.get("removedTypes").and_then(V::as_array);
            if removed.is_some_and(|r| !r.is_empty()) {
                return None;
            }
            let mut t = format!(
                "Available agent types for the Agent tool:\n{}",
                added.join("\n")
            );
            if yes("showConcurrencyNote") {
                t.push_str(
                    "\n\nWhen you launch multiple agents for independent work, send them in a \
                     single message with multiple tool uses so they run concurrently.",
                );
            }
            Some(t)
        }
        "skill_listing" if yes("isInitial") => {
            let content = s("content").filter(|c| !c.is_empty())?;
            Some(format!(
                "The following skills are available for use with the Skill tool:\n\n{content}"
            ))
        }
        // A file named with @ in a prompt: sent as if the Read tool had read it whole.
        "file" => {
            let c = a.get("content")?;
            let f = c.get("file")?;
            let n = |k: &str| f.get(k).and_then(V::as_u64);
            let whole = n("startLine") == Some(1)
                && n("numLines").is_some()
                && n("numLines") == n("totalLines");
            if c.get("type").and_then(V::as_str) != Some("text") || !whole {
                return None;
            }
            let path = V::from(s("filename")?).to_json();
            let text = f.get("content")?.as_str()?;
            let mut t = format!(
                "Called the Read tool with the following input: {{\"file_path\":{path}}}\n\
                 Result of calling the Read tool:\n"
            );
            for (i, l) in text.split('\n').enumerate() {
                if i > 0 {
                    t.push('\n');
                }
                t.push_str(&format!("{}\t{l}", i + 1));
            }
            Some(t)
        }
        "plan_mode_exit" if a.get("planExists").and_then(V::as_bool) == Some(false) => Some(
            "## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run \
             tools, and take actions."
                .to_string(),
        ),
        _ => None,
    }
}
