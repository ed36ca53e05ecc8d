//! Codex CLI rollouts (`<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`): one
//! `{timestamp, type, payload}` object per line, in the order things happened.
//!
//! * `session_meta` (the first one): the header (id, time, cwd); `forked_from_id` becomes
//!   the header's `parentSession`; the base instructions a Pi `system` message. A fork
//!   that only names how many of its parent's lines it continues from
//!   (`forked_from_ordinal_exclusive`) gets those lines first ([`convert_fork`]); later
//!   `session_meta` lines (the parent's, copied into older forks) are skipped.
//! * `turn_context`: a new model -> `model_change`, a new reasoning effort ->
//!   `thinking_level_change`.
//! * `response_item`: consecutive model output items (`reasoning`, assistant `message`,
//!   `function_call`, `custom_tool_call`, `local_shell_call`, `web_search_call`) -> one Pi
//!   assistant message (`thinking` with the item as signature, `text`, `toolCall` with the
//!   call id); `*_output` items -> `toolResult`; user messages -> `user`; the injected
//!   blocks (`<environment_context>`, `<user_instructions>`, AGENTS.md instructions, and
//!   `developer` messages) -> `custom_message` entries that reach the model, not shown.
//! * `token_usage_record` (current releases, right after a response's items), else
//!   `event_msg` `token_count` -> the usage of the assistant message it follows;
//!   `thread_rolled_back` -> the next entries continue from before the rolled-back user
//!   turns (a branch), with a `custom` entry recording it; `user_message` /
//!   `agent_message` / `agent_reasoning` / `item_completed` repeat response items and are
//!   skipped (as is a `token_count` after a usage record); other events are kept as
//!   `custom` entries.
//! * `compacted` -> a Pi `compaction` that keeps nothing before it; its
//!   `replacement_history` (what Codex continues from), when present, follows it as
//!   entries, less the message that repeats the summary.
//! * other response items -> `custom` entries holding the item.
//! * A revert (`thread/revert` of the app server) leaves the rollout as it was and writes
//!   a segment, `rollout-<time>-<thread id>_<segment id>.jsonl`, whose `session_meta` has
//!   `history_base {thread_id, end_ordinal_exclusive, end_byte_offset}`: it continues
//!   from the items of the rollout (or segment) `thread_id` names before that ordinal.
//!   [`convert_thread`] gives a thread and its segments one Pi session: each segment's
//!   entries follow the rollout's, under the entry of the last line before its base point
//!   (a `custom` `codex:revert` entry first, holding the `history_base`), so the reverted
//!   turns stay as an abandoned branch and the newest segment is the active one, written
//!   last.

use crate::jv::{obj, Obj, S, V};
use crate::node::{self, Body, Nodes};
use crate::{time_ms, Agent, Conversion, Lines, Problem};
use foldhash::HashMap;
use std::collections::BTreeMap;

/// Converts one rollout file. `file_stem` names the session when it has no `session_meta`.
pub fn convert(bytes: &[u8], file_stem: &str) -> Conversion {
    convert_fork(bytes, file_stem, None)
}

/// The session a rollout was forked from: its id, and how many of its lines the fork
/// continues from when the fork does not copy them (`forked_from_ordinal_exclusive`).
pub fn fork_parent(bytes: &[u8]) -> Option<(String, Option<usize>)> {
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))?;
    let v = crate::jv::parse(std::str::from_utf8(first).ok()?)?;
    let p = v.get("payload")?;
    let id = p.get("forked_from_id")?.as_str()?.to_string();
    let n = p
        .get("forked_from_ordinal_exclusive")
        .and_then(V::as_u64)
        .map(|n| n as usize);
    Some((id, n))
}

/// [`convert`] for a fork whose rollout starts where its parent's first lines end
/// (`forked_from_ordinal_exclusive`, newer releases): `parent` is the parent's rollout,
/// whose first lines come first, with the ids they get in the parent's own import.
pub fn convert_fork(bytes: &[u8], file_stem: &str, parent: Option<&[u8]>) -> Conversion {
    convert_thread(bytes, file_stem, parent, &[])
}

/// A segment rollout of a thread (see the module's notes on reverts): its bytes and its
/// file's stem (`rollout-<time>-<thread id>_<segment id>`).
#[derive(Clone, Copy)]
pub struct Segment<'s> {
    pub bytes: &'s [u8],
    pub stem: &'s str,
}

/// The thread and segment ids of a segment rollout's file stem
/// (`rollout-<time>-<thread id>_<segment id>`), or `None` for any other name.
pub fn segment_name(stem: &str) -> Option<(&str, &str)> {
    let (left, segment) = stem.rsplit_once('_')?;
    let thread = left.get(left.len().checked_sub(36)?..)?;
    let uuid_like = |t: &str| {
        t.len() == 36
            && t.bytes().enumerate().all(|(i, b)| {
                matches!(i, 8 | 13 | 18 | 23) == (b == b'-') && (b == b'-' || b.is_ascii_hexdigit())
            })
    };
    (uuid_like(thread) && uuid_like(segment)).then_some((thread, segment))
}

/// The time a segment was written (its `session_meta`'s, else its first line's): segments
/// of a thread are taken in this order (then by file name), each after the one it
/// continues from.
pub fn segment_time(bytes: &[u8]) -> i64 {
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace));
    first
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(crate::jv::parse)
        .and_then(|v| {
            time_ms(v.get("payload").and_then(|p| p.get("timestamp")))
                .or_else(|| time_ms(v.get("timestamp")))
        })
        .unwrap_or(0)
}

/// [`convert_fork`] for a thread whose reverts wrote segments (in the order they were
/// written, see [`segment_time`]): one session, the segments' entries after the rollout's,
/// each under the point it continues from.
pub fn convert_thread(
    bytes: &[u8],
    file_stem: &str,
    parent: Option<&[u8]>,
    segments: &[Segment<'_>],
) -> Conversion {
    let mut read_problems = Vec::new();
    let mut problems = Vec::new();
    let mut lines = Lines::new(bytes).with(&mut read_problems);
    // Lines are converted as they are read, once the session's meta (the first
    // `session_meta` line, usually the first line) and its first time are known; the
    // lines before that wait.
    let mut head = Vec::new();
    let mut meta: Option<Obj<'_>> = None;
    let mut first_time = None;
    loop {
        if let Some(m) = &meta {
            if time_ms(m.get("timestamp")).is_some() || first_time.is_some() {
                break;
            }
        }
        let Some(r) = lines.next() else { break };
        if first_time.is_none() {
            first_time = time_ms(r.1.get("timestamp"));
        }
        if meta.is_none() && r.1.get("type").and_then(V::as_str) == Some("session_meta") {
            meta = Some(
                r.1.get("payload")
                    .and_then(V::as_object)
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        head.push(r);
    }
    let meta = meta.unwrap_or_default();
    let s = |k: &str| meta.get(k).and_then(V::as_str).map(str::to_string);
    let session_id = s("id").unwrap_or_else(|| stem_id(file_stem));
    let first_ms = time_ms(meta.get("timestamp")).or(first_time).unwrap_or(0);
    let parent_source = s("forked_from_id");
    if let Some((thread, _)) = segment_name(file_stem) {
        problems.push(Problem {
            line: 1,
            message: format!(
                "a segment of thread {thread} (written by a revert), whose first rollout was not found: imported on its own"
            ),
        });
    }
    let ordinal = meta
        .get("forked_from_ordinal_exclusive")
        .and_then(V::as_u64);
    let mut c = Converter {
        nodes: Nodes::default(),
        leaf: None,
        provider: s("model_provider").unwrap_or_else(|| "openai".into()),
        model: None,
        effort: None,
        open: None,
        pending: Vec::new(),
        tool_names: HashMap::default(),
        user_turns: Vec::new(),
        skipped: BTreeMap::new(),
        problems: Vec::new(),
        last_ms: first_ms,
        seen_meta: false,
        instructions: None,
        last_assistant: None,
        context_tokens: 0.0,
        prefix: session_id.clone(),
        ordinals: Vec::new(),
        ordinal: 0,
        next_ordinal: 0,
    };
    let mut rest = head.into_iter().chain(lines).peekable();
    // The fork's own session_meta first: it names the session.
    if let Some(first) =
        rest.next_if(|r| r.1.get("type").and_then(V::as_str) == Some("session_meta"))
    {
        c.line(first.0, first.1);
    }
    match (ordinal, parent, &parent_source) {
        (Some(n), Some(pb), Some(pid)) => {
            let mut ignored = Vec::new();
            c.prefix = pid.clone();
            for (line, o) in Lines::new(pb).with(&mut ignored) {
                if line as u64 <= n {
                    c.line(line, o);
                }
            }
            c.prefix = session_id.clone();
        }
        (Some(_), None, Some(pid)) => problems.push(Problem {
            line: 1,
            message: format!(
                "forked from {pid}, whose rollout was not found: only the fork's own turns are imported"
            ),
        }),
        _ => {}
    }
    for (line, o) in rest {
        c.line(line, o);
    }
    if !segments.is_empty() {
        let own = segment_name(file_stem).map_or(session_id.as_str(), |(_, seg)| seg);
        c.segments(own, segments, &mut problems);
    }
    // What later lines could still change: the open assistant message (more blocks, its
    // stop reason) and the last one still waiting for its token count. (Lines are the
    // nodes in order; what `close` adds goes after them.)
    let settled = [
        c.open.as_ref().map(|o| o.node),
        match c.last_assistant {
            Some((n, false)) => Some(n),
            _ => None,
        },
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(c.nodes.nodes.len());
    c.close();
    problems.splice(0..0, read_problems);
    let last_ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(0);
    let (lines, body) = c.nodes.finish("codex");
    let mut all = problems;
    all.extend(c.problems);
    all.sort_by_key(|p| p.line);
    Conversion {
        agent: Agent::Codex,
        session_id: session_id.clone(),
        source_session_id: session_id.clone(),
        timestamp: sessiontree::date::iso_from_ms(first_ms),
        cwd: s("cwd"),
        parent_source: parent_source.clone(),
        kind: if parent_source.is_some() {
            "fork"
        } else {
            "main"
        },
        settled: settled.min(lines.len()),
        lines,
        body,
        last_ms,
        copied: false,
        name: None,
        problems: all,
        skipped: c.skipped,
    }
}

/// The session id at the end of `rollout-<time>-<uuid>`.
fn stem_id(stem: &str) -> String {
    if stem.len() >= 36 {
        let tail = &stem[stem.len() - 36..];
        if tail.chars().filter(|&c| c == '-').count() == 4 {
            return tail.to_string();
        }
    }
    stem.to_string()
}

struct Open {
    node: usize,
    has_tool: bool,
}

struct Converter<'a> {
    nodes: Nodes<'a>,
    leaf: Option<usize>,
    provider: String,
    model: Option<String>,
    effort: Option<String>,
    /// The assistant message being filled by consecutive output items.
    open: Option<Open>,
    /// Entries that arrived while an assistant message was open (written after it), with
    /// their lines' ordinals.
    pending: Vec<(String, i64, Body<'a>, u64)>,
    tool_names: HashMap<String, String>,
    /// User turn messages on the current branch (for rollbacks).
    user_turns: Vec<usize>,
    skipped: BTreeMap<String, usize>,
    problems: Vec<Problem>,
    last_ms: i64,
    seen_meta: bool,
    /// The last assistant message and whether a token count gave it its usage.
    last_assistant: Option<(usize, bool)>,
    /// The context size of the newest request (`last_token_usage.total_tokens` of the newest
    /// `token_count`): a compaction's `tokensBefore`.
    context_tokens: f64,
    /// Entry keys are `<prefix>:<line>`: the session whose rollout the line is from.
    prefix: String,
    /// The base instructions (sent with every request; kept across compactions).
    instructions: Option<S<'a>>,
    /// Each node's line ordinal (the line's `ordinal`, else one more than the line
    /// before's): where a revert's segment continues from is named by ordinal.
    ordinals: Vec<u64>,
    /// The ordinal of the line being converted, and of the next line without one.
    ordinal: u64,
    next_ordinal: u64,
}

fn texts(content: Option<&V<'_>>) -> Vec<String> {
    content
        .and_then(V::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|b| b.get("text").and_then(V::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Is this user-role text one of the blocks Codex injects rather than the person typed?
fn injected(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<environment_context>")
        || t.starts_with("<user_instructions>")
        || t.starts_with("# AGENTS.md instructions")
        || t.starts_with("<INSTRUCTIONS>")
        || t.starts_with("<user_shell_command>")
        || t.starts_with("<turn_aborted>")
}

fn effort_level(e: &str) -> String {
    match e {
        "none" => "off".into(),
        other => other.into(),
    }
}

impl<'a> Converter<'a> {
    /// Converts a thread's segments after its rollout (`own`: the rollout's id as segments
    /// name it, the thread id, or the segment id when the first file is itself a segment).
    fn segments(&mut self, own: &str, segments: &[Segment<'a>], problems: &mut Vec<Problem>) {
        // Where each file converted so far ended: history_base names one of them.
        let mut ends: Vec<(String, Option<usize>)> = Vec::new();
        let mut prev = own.to_string();
        let root = self.prefix.clone();
        for seg in segments {
            self.close();
            ends.push((std::mem::take(&mut prev), self.leaf));
            let Some((_, seg_id)) = segment_name(seg.stem) else {
                continue;
            };
            prev = seg_id.to_string();
            let mut read_problems = Vec::new();
            let mut lines = Lines::new(seg.bytes).with(&mut read_problems).peekable();
            let meta_line =
                lines.next_if(|r| r.1.get("type").and_then(V::as_str) == Some("session_meta"));
            let base = meta_line
                .as_ref()
                .and_then(|(_, o)| o.get("payload"))
                .and_then(|p| p.get("history_base"))
                .cloned();
            let base_file = base
                .as_ref()
                .and_then(|b| b.get("thread_id"))
                .and_then(V::as_str);
            let end = base
                .as_ref()
                .and_then(|b| b.get("end_ordinal_exclusive"))
                .and_then(V::as_u64);
            let file = format!("rollout {}", seg.stem);
            let from = match (base_file, end) {
                (Some(b), Some(end)) => match ends.iter().rev().find(|(id, _)| id == b) {
                    Some(&(_, at)) => Some(self.before_ordinal(at, end)),
                    None => {
                        problems.push(Problem {
                            line: 1,
                            message: format!(
                                "{file}: continues from {b}, which was not found: its turns follow the newest entry"
                            ),
                        });
                        None
                    }
                },
                _ => {
                    problems.push(Problem {
                        line: 1,
                        message: format!(
                            "{file}: its session_meta names no history_base: its turns follow the newest entry"
                        ),
                    });
                    None
                }
            };
            if let Some(at) = from {
                self.continue_from(at);
            }
            self.prefix = format!("{root}_{seg_id}");
            self.last_assistant = None;
            self.next_ordinal = end.unwrap_or(self.next_ordinal);
            if let Some((line, mut o)) = meta_line {
                // The segment's own session_meta repeats the thread's: the revert's mark.
                let ms = time_ms(o.get("timestamp")).unwrap_or(self.last_ms);
                self.last_ms = ms;
                self.ordinal = o
                    .get("ordinal")
                    .and_then(V::as_u64)
                    .unwrap_or(self.next_ordinal);
                self.next_ordinal = self.ordinal.saturating_add(1);
                let mut data = Obj::with_capacity(2);
                data.push_new("segment", V::from(seg_id.to_string()));
                let payload = o.remove("payload");
                let hb = payload
                    .and_then(|mut p| p.as_object_mut().and_then(|p| p.remove("history_base")));
                data.push_new("history_base", hb.unwrap_or(V::Null));
                let mut key = String::with_capacity(self.prefix.len() + 4);
                key.push_str(&self.prefix);
                key.push(':');
                key.push_str(crate::decimal(line as u64, &mut [0u8; 20]));
                self.add(
                    key,
                    ms,
                    Body::Custom {
                        custom_type: "codex:revert".into(),
                        data: V::Obj(data),
                    },
                );
            }
            for (line, o) in lines {
                self.line(line, o);
            }
            problems.extend(read_problems.into_iter().map(|p| Problem {
                line: p.line,
                message: format!("{file}: {}", p.message),
            }));
        }
    }

    /// From `at` up, the first node made from a line before ordinal `end` (`None`: the
    /// segment starts the conversation over).
    fn before_ordinal(&self, mut at: Option<usize>, end: u64) -> Option<usize> {
        while let Some(n) = at {
            if self.ordinals[n] < end {
                return Some(n);
            }
            at = self.nodes.nodes[n].parent;
        }
        None
    }

    /// Makes `at` the leaf the next entries hang under, with the state its path holds: the
    /// user turns on it (for rollbacks), its model and reasoning effort.
    fn continue_from(&mut self, at: Option<usize>) {
        self.leaf = at;
        let mut path = Vec::new();
        let mut n = at;
        while let Some(i) = n {
            path.push(i);
            n = self.nodes.nodes[i].parent;
        }
        let on_path: foldhash::HashSet<usize> = path.iter().copied().collect();
        self.user_turns.retain(|t| on_path.contains(t));
        let mut model = None;
        let mut effort = None;
        for &i in &path {
            match &self.nodes.nodes[i].body {
                Body::ModelChange { model_id, .. } if model.is_none() => {
                    model = Some(model_id.clone())
                }
                Body::ThinkingLevel(e) if effort.is_none() => effort = Some(e.clone()),
                _ => {}
            }
        }
        self.model = model;
        self.effort = effort;
    }

    fn skip(&mut self, what: &str) {
        crate::count(&mut self.skipped, what);
    }

    fn add(&mut self, key: String, ms: i64, body: Body<'a>) -> usize {
        let n = self.nodes.push(self.leaf, key, ms, body);
        self.ordinals.push(self.ordinal);
        self.leaf = Some(n);
        n
    }

    /// Adds an entry now, or after the open assistant message.
    fn add_later(&mut self, key: String, ms: i64, body: Body<'a>) {
        if self.open.is_some() {
            self.pending.push((key, ms, body, self.ordinal));
        } else {
            self.add(key, ms, body);
        }
    }

    fn close(&mut self) {
        if let Some(o) = self.open.take() {
            if let Body::Message(m) = &mut self.nodes.nodes[o.node].body {
                m.insert(
                    "stopReason",
                    V::from(if o.has_tool { "toolUse" } else { "stop" }),
                );
            }
        }
        let now = self.ordinal;
        for (k, ms, b, ordinal) in std::mem::take(&mut self.pending) {
            self.ordinal = ordinal;
            self.add(k, ms, b);
        }
        self.ordinal = now;
    }

    /// The open assistant message, opened if needed.
    fn assistant(&mut self, key: &str, ms: i64) -> usize {
        if let Some(o) = &self.open {
            return o.node;
        }
        let mut m = Obj::with_capacity(8);
        m.push_new("role", V::from("assistant"));
        m.push_new("content", V::Arr(Vec::new()));
        m.push_new("api", V::from("openai-responses"));
        m.push_new("provider", V::from(self.provider.clone()));
        m.push_new("model", V::from(self.model.clone().unwrap_or_default()));
        m.push_new("usage", node::usage(0.0, 0.0, 0.0, 0.0, None));
        m.push_new("stopReason", V::from("stop"));
        m.push_new("timestamp", V::from(ms));
        let n = self.add(key.to_string(), ms, Body::Message(m));
        self.open = Some(Open {
            node: n,
            has_tool: false,
        });
        self.last_assistant = Some((n, false));
        n
    }

    fn push_block(&mut self, key: &str, ms: i64, block: V<'a>, tool: bool) {
        let n = self.assistant(key, ms);
        if let Body::Message(m) = &mut self.nodes.nodes[n].body {
            if let Some(V::Arr(c)) = m.get_mut("content") {
                c.push(block);
            }
        }
        if tool {
            if let Some(o) = &mut self.open {
                o.has_tool = true;
            }
        }
    }

    fn line(&mut self, line: usize, mut o: Obj<'a>) {
        let ms = time_ms(o.get("timestamp")).unwrap_or(self.last_ms);
        self.last_ms = ms;
        self.ordinal = o
            .get("ordinal")
            .and_then(V::as_u64)
            .unwrap_or(self.next_ordinal);
        self.next_ordinal = self.ordinal.saturating_add(1);
        // The line's key, sized once (`format!` would grow it a few times).
        let mut key = String::with_capacity(self.prefix.len() + 24);
        key.push_str(&self.prefix);
        key.push(':');
        key.push_str(crate::decimal(line as u64, &mut [0u8; 20]));
        let ty = o.get("type").and_then(V::src_str).unwrap_or_default();
        let ty = &*ty;
        // Moved out of the line, not copied (put back for lines kept whole).
        let mut payload = o.remove("payload").unwrap_or(V::Null);
        match ty {
            "session_meta" => {
                if self.seen_meta {
                    self.skip("session_meta (copied)");
                } else {
                    self.seen_meta = true;
                    let instr = payload
                        .get("base_instructions")
                        .and_then(|b| b.get("text").or(Some(b)))
                        .filter(|v| v.is_string())
                        .or_else(|| payload.get("instructions").filter(|v| v.is_string()));
                    if let Some(V::Str(text)) = instr.filter(|t| t.as_str() != Some("")) {
                        // Codex sends these as the request's instructions: a Pi system message.
                        let text = text.clone();
                        self.instructions = Some(text.clone());
                        let mut m = Obj::with_capacity(3);
                        m.push_new("role", V::from("system"));
                        m.push_new("content", V::Str(text));
                        m.push_new("timestamp", V::from(ms));
                        self.add(key, ms, Body::Message(m));
                    }
                }
            }
            "turn_context" => {
                if let Some(model) = payload.get("model").and_then(V::as_str) {
                    if self.model.as_deref() != Some(model) {
                        self.model = Some(model.to_string());
                        let body = Body::ModelChange {
                            provider: self.provider.clone(),
                            model_id: model.to_string(),
                        };
                        self.close();
                        self.add(format!("{key}#model"), ms, body);
                    }
                }
                let effort = payload.get("effort").and_then(V::as_str).map(effort_level);
                if let Some(e) = effort {
                    if self.effort.as_ref() != Some(&e) {
                        self.effort = Some(e.clone());
                        self.close();
                        self.add(format!("{key}#effort"), ms, Body::ThinkingLevel(e));
                    }
                }
            }
            "response_item" => self.item(line, &key, ms, payload),
            "compacted" => {
                self.close();
                let summary = payload
                    .get("message")
                    .and_then(V::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut details = Obj::with_capacity(2);
                details.push_new("source", V::from("codex"));
                let history = match payload.get_mut("replacement_history") {
                    Some(V::Arr(a)) => Some(std::mem::take(a)),
                    _ => None,
                };
                if history.is_some() {
                    details.push_new("replacementHistory", V::Bool(true));
                }
                self.add(
                    key.clone(),
                    ms,
                    Body::Compaction {
                        summary,
                        tokens_before: self.context_tokens,
                        details: Some(V::Obj(details)),
                        first_kept: None,
                        system_message: self.instructions.as_ref().map(|t| {
                            obj! {"role": "system", "content": t.clone(), "timestamp": ms}
                        }),
                    },
                );
                self.user_turns.clear();
                // The history Codex continues from; the summary itself is the compaction.
                let summary_text = payload.get("message").and_then(V::as_str).unwrap_or("");
                for (i, item) in history.unwrap_or_default().into_iter().enumerate() {
                    let t = texts(item.get("content")).join("\n");
                    if !summary_text.is_empty() && t.trim_end().ends_with(summary_text.trim_end()) {
                        continue;
                    }
                    self.item(line, &format!("{key}#h{i}"), ms, item);
                }
                self.close();
            }
            "event_msg" => self.event(&key, ms, &payload),
            "token_usage_record" => self.usage_record(&payload),
            _ => {
                self.close();
                self.add(
                    key,
                    ms,
                    Body::Custom {
                        custom_type: format!("codex:{}", if ty.is_empty() { "line" } else { ty }),
                        data: {
                            o.insert("payload", payload);
                            V::Obj(o)
                        },
                    },
                );
            }
        }
    }

    /// The usage of the assistant message waiting for its token count, from a Codex
    /// usage record (`usage`) or a `token_count` event (`info.last_token_usage`).
    fn set_usage(&mut self, n: usize, u: &V<'a>) {
        let g = |k: &str| u.get(k).and_then(V::as_f64).unwrap_or(0.0);
        let cached = g("cached_input_tokens");
        let usage = node::usage(
            (g("input_tokens") - cached).max(0.0),
            g("output_tokens"),
            cached,
            g("cache_write_input_tokens"),
            u.get("total_tokens").and_then(V::as_f64),
        );
        if let Body::Message(m) = &mut self.nodes.nodes[n].body {
            m.insert("usage", usage);
        }
        self.last_assistant = Some((n, true));
    }

    /// A `token_usage_record`: current releases write one right after a response's last
    /// item, while the `token_count` of a response that called a tool comes only once the
    /// tool has run (minutes, for a build). The record's usage is the message's (the same
    /// numbers as that `token_count`'s `last_token_usage`, which is then skipped), and no
    /// item can join the message after it: it is closed, final at once.
    fn usage_record(&mut self, p: &V<'a>) {
        match (p.get("usage"), self.last_assistant) {
            (Some(u), Some((n, false))) => {
                self.set_usage(n, u);
                if self.open.as_ref().is_some_and(|o| o.node == n) {
                    self.close();
                }
            }
            _ => self.skip("token_usage_record"),
        }
    }

    fn event(&mut self, key: &str, ms: i64, p: &V<'a>) {
        let ty = p.get("type").and_then(V::as_str).unwrap_or("");
        match ty {
            "token_count" => {
                let last = p.get("info").and_then(|i| i.get("last_token_usage"));
                if let Some(t) = last.and_then(|u| u.get("total_tokens")).and_then(V::as_f64) {
                    self.context_tokens = t;
                }
                match (last, self.last_assistant) {
                    (Some(u), Some((n, false))) => self.set_usage(n, u),
                    _ => self.skip("token_count"),
                }
            }
            "user_message"
            | "agent_message"
            | "agent_reasoning"
            | "agent_reasoning_raw_content"
            | "item_started"
            | "item_completed" => self.skip(ty),
            "thread_rolled_back" => {
                self.close();
                let n = p.get("num_turns").and_then(V::as_u64).unwrap_or(0) as usize;
                if n > 0 {
                    let keep = self.user_turns.len().saturating_sub(n);
                    if let Some(&first_dropped) = self.user_turns.get(keep) {
                        self.leaf = self.nodes.nodes[first_dropped].parent;
                    }
                    self.user_turns.truncate(keep);
                }
                self.add(
                    key.to_string(),
                    ms,
                    Body::Custom {
                        custom_type: "codex:rollback".into(),
                        data: p.clone(),
                    },
                );
            }
            _ => self.add_later(
                key.to_string(),
                ms,
                Body::Custom {
                    custom_type: "codex:event".into(),
                    data: p.clone(),
                },
            ),
        }
    }

    fn item(&mut self, line: usize, key: &str, ms: i64, mut p: V<'a>) {
        let ty = p.get("type").and_then(V::as_str).unwrap_or("");
        match ty {
            "message" => {
                let role = p.get("role").and_then(V::as_str).unwrap_or("");
                match role {
                    "assistant" => {
                        for t in text_values(p.get_mut("content")) {
                            self.push_block(key, ms, node::text(t), false);
                        }
                    }
                    "user" | "developer" | "system" => {
                        self.close();
                        let all_text = texts(p.get("content")).join("\n");
                        let role_is_user = role == "user";
                        let blocks = user_content(p.get_mut("content").map(std::mem::take));
                        if !role_is_user || injected(&all_text) {
                            let custom_type = if role_is_user {
                                "codex:context"
                            } else {
                                "codex:developer"
                            };
                            self.add(
                                key.to_string(),
                                ms,
                                Body::CustomMessage {
                                    custom_type: custom_type.into(),
                                    content: V::Arr(blocks),
                                    display: false,
                                    details: None,
                                },
                            );
                        } else {
                            let mut m = Obj::with_capacity(3);
                            m.push_new("role", V::from("user"));
                            m.push_new("content", V::Arr(blocks));
                            m.push_new("timestamp", V::from(ms));
                            let n = self.add(key.to_string(), ms, Body::Message(m));
                            self.user_turns.push(n);
                        }
                    }
                    _ => {
                        self.problems.push(Problem {
                            line,
                            message: format!("message with unknown role {role:?}"),
                        });
                    }
                }
            }
            "reasoning" => {
                let mut parts: Vec<String> = p
                    .get("summary")
                    .and_then(V::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.get("text").and_then(V::as_str).map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                parts.extend(texts(p.get("content")));
                let block = obj! {
                    "type": "thinking",
                    "thinking": parts.join("\n\n"),
                    "thinkingSignature": p.to_json(),
                };
                self.push_block(key, ms, block, false);
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let call_id = p
                    .get("call_id")
                    .or_else(|| p.get("id"))
                    .and_then(V::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = match ty {
                    "local_shell_call" => "local_shell".to_string(),
                    _ => p.get("name").and_then(V::as_str).unwrap_or("").to_string(),
                };
                let args = match ty {
                    "function_call" => match p.get_mut("arguments").map(std::mem::take) {
                        Some(V::Str(s)) => {
                            let parsed = crate::jv::parse(s.as_str())
                                .filter(V::is_object)
                                .map(V::into_owned);
                            parsed.unwrap_or_else(|| obj! {"arguments": s})
                        }
                        Some(v @ V::Obj(_)) => v,
                        _ => V::Obj(Obj::new()),
                    },
                    "custom_tool_call" => {
                        let input = p.get_mut("input").map(std::mem::take);
                        obj! {"input": input.unwrap_or_else(|| V::from(""))}
                    }
                    _ => p
                        .get_mut("action")
                        .map(std::mem::take)
                        .filter(V::is_object)
                        .unwrap_or_else(|| V::Obj(Obj::new())),
                };
                self.tool_names.insert(call_id.clone(), name.clone());
                self.push_block(
                    key,
                    ms,
                    obj! {"type": "toolCall", "id": call_id, "name": name, "arguments": args},
                    true,
                );
            }
            "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
                self.close();
                let call_id = p
                    .get("call_id")
                    .and_then(V::as_str)
                    .unwrap_or("")
                    .to_string();
                let tool_name = self.tool_names.get(&call_id).cloned().unwrap_or_default();
                let (content, is_error) = match p.get_mut("output").map(std::mem::take) {
                    Some(V::Str(s)) => (vec![node::text(s)], false),
                    Some(a @ V::Arr(_)) => (user_content(Some(a)), false),
                    Some(mut o @ V::Obj(_)) => {
                        let failed = o.get("success").and_then(V::as_bool) == Some(false);
                        let c = match o.get("content") {
                            Some(V::Str(_)) | Some(V::Arr(_)) => {
                                match o.get_mut("content").map(std::mem::take) {
                                    Some(V::Str(s)) => vec![node::text(s)],
                                    a => user_content(a),
                                }
                            }
                            _ => vec![node::text(o.to_json())],
                        };
                        (c, failed)
                    }
                    _ => (Vec::new(), false),
                };
                let m = match obj! {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": tool_name,
                    "content": content,
                    "isError": is_error,
                    "timestamp": ms,
                } {
                    V::Obj(m) => m,
                    _ => unreachable!(),
                };
                self.add(key.to_string(), ms, Body::Message(m));
            }
            "web_search_call" => {
                let n = self.assistant(key, ms);
                if let Body::Message(m) = &mut self.nodes.nodes[n].body {
                    let extra = m.entry_or_insert_with("codex", || obj! {"otherItems": Vec::new()});
                    if let Some(V::Arr(a)) = extra.get_mut("otherItems") {
                        a.push(p);
                    }
                }
            }
            _ => {
                self.close();
                self.add(
                    key.to_string(),
                    ms,
                    Body::Custom {
                        custom_type: "codex:item".into(),
                        data: p,
                    },
                );
            }
        }
    }
}

/// The text values of content items, moved out.
fn text_values<'a>(content: Option<&mut V<'a>>) -> Vec<S<'a>> {
    let Some(V::Arr(a)) = content else {
        return Vec::new();
    };
    a.iter_mut()
        .filter_map(|b| match b.get_mut("text") {
            Some(V::Str(s)) => Some(std::mem::replace(s, S::from(""))),
            _ => None,
        })
        .collect()
}

/// Input content items (`input_text`, `input_image`, `output_text`) as Pi blocks.
fn user_content(content: Option<V<'_>>) -> Vec<V<'_>> {
    let mut out = Vec::new();
    let a = match content {
        Some(V::Arr(a)) => a,
        Some(V::Str(s)) => {
            out.push(node::text(s));
            return out;
        }
        _ => return out,
    };
    for mut b in a {
        match b.get("type").and_then(V::as_str) {
            Some("input_text") | Some("output_text") | Some("text") => {
                out.push(node::text(match b.get_mut("text").map(std::mem::take) {
                    Some(V::Str(s)) => s,
                    _ => S::from(""),
                }))
            }
            Some("input_image") => {
                let url = b.get("image_url").and_then(V::as_str).unwrap_or("");
                match url
                    .strip_prefix("data:")
                    .and_then(|r| r.split_once(";base64,"))
                {
                    Some((mime, data)) => out.push(node::image(data.to_string(), mime.to_string())),
                    None => out.push(node::text(format!("[image: {url}]"))),
                }
            }
            _ => {}
        }
    }
    out
}
