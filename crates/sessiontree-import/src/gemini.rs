//! Gemini CLI chats (`<GEMINI_CLI_HOME>/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`,
//! subagents in `chats/<parent session id>/<id>.jsonl`; older releases wrote one
//! `session-*.json` per session). Gemini CLI keeps one ordered list of messages and
//! writes every change to it as a line:
//!
//! * a metadata line (`sessionId`, `projectHash`, `startTime`, `kind`: `main` or
//!   `subagent`), again at each resume; the header comes from the first one;
//! * a message record (`{id, timestamp, type: user|gemini|info|error|warning, content,
//!   toolCalls, thoughts, tokens, model}`): an id seen before replaces that message in its
//!   place (a response gains its tool calls and token counts this way), a new one is
//!   appended;
//! * `{"$set": {...}}`: metadata; `$set.messages` replaces the whole list (a resume writes
//!   the list it rebuilt, a compression the `<state_snapshot>` summary and what it kept);
//! * `{"$rewindTo": id}`: drops that message and everything after it.
//!
//! The Pi tree follows the list: a message becomes entries under the previous message's;
//! a replaced list keeps the entries of the messages it still holds unchanged (a resume's
//! rebuilt list adds nothing) and continues from the last of them; a rewind continues from
//! before the dropped message (the dropped turns stay, a branch no longer active), marked
//! by a `gemini-cli:rewind` custom entry; a list that starts with a `<state_snapshot>`
//! summary the old one did not hold is a Pi `compaction` (keeping nothing before it),
//! followed by the messages kept with it.
//!
//! Messages: `user` text and images -> `user`; `user` function responses -> one
//! `toolResult` each (Gemini CLI records the responses it sends as a user message); the
//! `<session_context>` / `<hook_context>` blocks the CLI writes as user messages (made anew
//! at each start, dropped from the list by a rewind) -> `custom` entries, outside the
//! context; `gemini` -> `assistant` (thoughts -> `thinking`, text, function calls ->
//! `toolCall` with the id the model sent: the file's `<tool>__<id>` less its prefix); a
//! call whose result only the call itself records (older releases) -> its `toolResult`
//! after it; `info` / `error` / `warning` (shown, never sent) -> `custom` entries.
//! After a resume Gemini CLI's rebuilt list also holds each earlier response's results a
//! second time, as `<message id>_response`: such a message, when another one of the list
//! holds the same results, is left out (counted).

use crate::jv::{obj, Obj, S, V};
use crate::node::{self, Body, Nodes};
use crate::{time_ms, Agent, Conversion, Lines, Problem};
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;

/// The cwd of the chat at `path`: the `.project_root` file Gemini CLI keeps in the project's
/// folder (`tmp/<project>/`, the parent of `chats/`), and the parent session id of a
/// subagent chat (`chats/<parent id>/<id>.jsonl`).
pub fn context_of(path: &std::path::Path) -> (Option<String>, Option<String>) {
    let dir = path.parent();
    let name = |p: Option<&std::path::Path>| {
        p.and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    };
    let (project, parent) = match dir {
        Some(d) if name(Some(d)).as_deref() == Some("chats") => (d.parent(), None),
        Some(d) if name(d.parent()).as_deref() == Some("chats") => {
            (d.parent().and_then(|c| c.parent()), name(Some(d)))
        }
        _ => (None, None),
    };
    let cwd = project.and_then(|p| {
        let text = std::fs::read_to_string(p.join(".project_root")).ok()?;
        let t = text.trim_end_matches(['\n', '\r']);
        (!t.is_empty() && !t.contains('\n')).then(|| t.to_string())
    });
    (cwd, parent)
}

/// Whether `path` is a Gemini CLI chat file: `session-*.jsonl` / `session-*.json` in a
/// `chats/` folder, or a subagent's `*.jsonl` one folder below.
pub fn is_chat(path: &std::path::Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let parent = |p: &std::path::Path| {
        p.parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "chats")
    };
    if name.starts_with("session-") && (name.ends_with(".jsonl") || name.ends_with(".json")) {
        return true;
    }
    name.ends_with(".jsonl") && path.parent().is_some_and(parent)
}

/// Converts one chat file. `cwd` and `parent` as [`context_of`] finds them.
pub fn convert(
    bytes: &[u8],
    file_stem: &str,
    cwd: Option<&str>,
    parent: Option<&str>,
) -> Conversion {
    let mut problems = Vec::new();
    // An older release's chat: one JSON document (often pretty-printed).
    // (Checked on the bytes first: a chat of lines starts and ends so too, and its whole
    // text is checked once more by `Lines`.)
    let trimmed = bytes.trim_ascii();
    let whole = (trimmed.first() == Some(&b'{') && trimmed.last() == Some(&b'}'))
        .then(|| simdutf8::basic::from_utf8(bytes).ok())
        .flatten()
        .and_then(crate::jv::parse)
        .filter(|v| v.get("messages").is_some_and(|m| m.as_array().is_some()));
    let complete = whole.is_some();
    let records: Vec<(usize, Obj<'_>)> = match whole {
        Some(V::Obj(o)) => vec![(1, o)],
        _ => Lines::new(bytes).with(&mut problems).collect(),
    };
    let meta = records
        .iter()
        .find(|(_, r)| r.get("sessionId").is_some_and(V::is_string))
        .map(|(_, r)| r.clone())
        .unwrap_or_default();
    let s = |k: &str| meta.get(k).and_then(V::as_str).map(str::to_string);
    let session_id = s("sessionId").unwrap_or_else(|| file_stem.to_string());
    let first_ms = time_ms(meta.get("startTime"))
        .or_else(|| {
            records
                .iter()
                .find_map(|(_, r)| time_ms(r.get("timestamp")))
        })
        .unwrap_or(0);
    let subagent = s("kind").as_deref() == Some("subagent");
    let mut c = Converter {
        nodes: Nodes::default(),
        list: Vec::new(),
        root: None,
        answered: HashSet::default(),
        synth: false,
        complete,
        problems: Vec::new(),
        skipped: BTreeMap::new(),
        last_ms: first_ms,
        tokens: 0.0,
        conversation: false,
        seen: HashSet::default(),
        summary: None,
        keys: HashSet::default(),
    };
    let mut seen_meta = false;
    for (line, r) in records {
        c.record(line, r, &mut seen_meta);
    }
    // The last message can still change (a response gains its calls and tokens).
    let settled = c
        .list
        .last()
        .filter(|i| i.kind == "gemini")
        .map_or(c.nodes.nodes.len(), |i| i.first);
    let last_ms = c.nodes.nodes.iter().map(|n| n.ms).max().unwrap_or(first_ms);
    let conversation = c.conversation;
    let summary = c.summary.take();
    let (lines, body) = c.nodes.finish("gemini-cli");
    let (lines, body) = if conversation {
        (lines, body)
    } else {
        // Only the context block a start writes (every resume leaves such a file): no
        // conversation.
        crate::recycle(body);
        (Vec::new(), String::new())
    };
    problems.extend(c.problems);
    problems.sort_by_key(|p| p.line);
    Conversion {
        agent: Agent::Gemini,
        session_id: session_id.clone(),
        source_session_id: session_id,
        timestamp: sessiontree::date::iso_from_ms(first_ms),
        cwd: cwd.map(str::to_string),
        parent_source: parent.map(str::to_string).filter(|_| subagent),
        kind: if subagent { "sidechain" } else { "main" },
        last_ms,
        copied: false,
        settled: settled.min(lines.len()),
        lines,
        body,
        name: summary,
        problems,
        skipped: c.skipped,
    }
}

/// The content of a message as parts (a string is one text part).
fn parts<'v, 'a>(content: Option<&'v V<'a>>) -> Vec<std::borrow::Cow<'v, V<'a>>> {
    match content {
        Some(V::Arr(a)) => a
            .iter()
            .map(|p| match p {
                V::Str(s) => std::borrow::Cow::Owned(obj! {"text": s.clone()}),
                p => std::borrow::Cow::Borrowed(p),
            })
            .collect(),
        Some(V::Str(s)) if !s.as_str().is_empty() => {
            vec![std::borrow::Cow::Owned(obj! {"text": s.clone()})]
        }
        Some(o @ V::Obj(_)) => vec![std::borrow::Cow::Borrowed(o)],
        _ => Vec::new(),
    }
}

/// The id the model sent for a call: the file's `<tool>__<id>` less its prefix.
fn wire_id(id: &str) -> &str {
    id.split_once("__").map_or(id, |(_, w)| w)
}

/// One message of the list and its entries.
struct Item<'a> {
    id: String,
    /// `user`, `gemini`, `context`, `other`.
    kind: &'static str,
    /// What the message converts to, less times and token counts: equal means the same
    /// entries.
    sig: Sig,
    /// The entry before its entries (the leaf before it).
    before: Option<usize>,
    /// Its last entry (`before` for a message without entries).
    last: Option<usize>,
    /// Index of its first node.
    first: usize,
    /// The key its entries' keys start with.
    keys: Vec<String>,
    /// The message record.
    src: Obj<'a>,
}

struct Converter<'a> {
    nodes: Nodes<'a>,
    list: Vec<Item<'a>>,
    /// The keys given so far (a message made again gets a key of its own).
    keys: HashSet<String>,
    /// The leaf before the list's first message (the context blocks).
    root: Option<usize>,
    /// The call ids the user messages of the list being converted answer.
    answered: HashSet<String>,
    /// Whether a response's calls whose results no user message of the list holds get
    /// them from the call itself (older releases recorded them only there): in a list, for
    /// every response but the last (the next message shows no answer is coming), and for
    /// the last too in an older release's whole-document chat.
    synth: bool,
    /// The chat is one whole document (an older release's `.json`).
    complete: bool,
    problems: Vec<Problem>,
    skipped: BTreeMap<String, usize>,
    last_ms: i64,
    /// The newest prompt token count (a compression's `tokensBefore`).
    tokens: f64,
    /// Whether any message other than a context block was seen.
    conversation: bool,
    /// Context blocks already given an entry.
    seen: HashSet<String>,
    summary: Option<String>,
}

/// A converted message: its Pi entries (key suffix, body) and signature.
struct Converted<'a> {
    kind: &'static str,
    entries: Vec<(&'static str, Body<'a>)>,
    sig: Sig,
}

fn text_of(p: &V<'_>) -> Option<String> {
    p.get("text").and_then(V::as_str).map(str::to_string)
}

fn is_context(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<session_context>") || t.starts_with("<hook_context>")
}

impl<'a> Converter<'a> {
    fn skip(&mut self, what: &str) {
        crate::count(&mut self.skipped, what);
    }

    fn leaf(&self) -> Option<usize> {
        self.list.last().map_or(self.root, |i| i.last)
    }

    fn record(&mut self, line: usize, mut r: Obj<'a>, seen_meta: &mut bool) {
        if let Some(id) = r.get("$rewindTo").and_then(V::as_str).map(str::to_string) {
            let at = self.list.iter().position(|i| i.id == id);
            let before = match at {
                Some(p) => self.list[p].before,
                None => self.root,
            };
            self.list.truncate(at.unwrap_or(0));
            // The last line must be the leaf: a mark of the rewind under it.
            let ms = self.last_ms;
            let n = self.nodes.push(
                before,
                format!("rewind:{line}"),
                ms,
                Body::Custom {
                    custom_type: "gemini-cli:rewind".into(),
                    data: V::Obj(r),
                },
            );
            match self.list.last_mut() {
                Some(i) => i.last = Some(n),
                None => self.root = Some(n),
            }
            return;
        }
        if r.get("id").is_some_and(V::is_string) {
            self.message(line, r);
            return;
        }
        if let Some(V::Obj(set)) = r.get_mut("$set") {
            if let Some(V::Str(s)) = set.get("summary") {
                self.summary = Some(s.as_str().to_string());
            }
            match set.remove("messages") {
                Some(V::Arr(list)) => self.set_list(line, list),
                _ => self.skip("$set"),
            }
            return;
        }
        if r.get("sessionId").is_some_and(V::is_string) {
            if *seen_meta {
                self.skip("metadata (resume)");
            }
            *seen_meta = true;
            if let Some(V::Arr(list)) = r.remove("messages") {
                self.set_list(line, list);
            }
            return;
        }
        self.problems.push(Problem {
            line,
            message: "not a Gemini CLI chat record (no id, $set, $rewindTo or sessionId)".into(),
        });
    }

    /// A message record: replaces the message with its id, or is appended.
    fn message(&mut self, line: usize, m: Obj<'a>) {
        let id = m.get("id").and_then(V::as_str).unwrap_or("").to_string();
        let ms = time_ms(m.get("timestamp")).unwrap_or(self.last_ms);
        self.last_ms = self.last_ms.max(ms);
        self.synth = false;
        let conv = self.convert_message(&m, ms);
        if conv.kind == "context" {
            self.context_block(&id, ms, conv);
            return;
        }
        match self.list.iter().position(|i| i.id == id) {
            Some(p) if self.list[p].sig == conv.sig => {
                // The same entries; a newer token count for the last response.
                if p + 1 == self.list.len() {
                    self.refresh_last(conv);
                }
            }
            Some(p)
                if p + 1 == self.list.len()
                    && self.list[p]
                        .last
                        .is_some_and(|l| l + 1 == self.nodes.nodes.len()) =>
            {
                // The last message grew (a response gained its calls): its entries, not
                // final yet, are made again.
                let item = self.list.pop().expect("p is the last");
                self.nodes.nodes.truncate(item.first);
                for k in item.keys {
                    self.keys.remove(&k);
                }
                self.append(&id, line, ms, conv, m);
            }
            Some(p) => {
                // An earlier message changed (Gemini CLI replaces only its newest one, but
                // the format allows it): the list with it replaced, from it on a branch.
                let list: Vec<V<'a>> = self
                    .list
                    .iter()
                    .enumerate()
                    .map(|(k, i)| {
                        if k == p {
                            V::Obj(m.clone())
                        } else {
                            V::Obj(i.src.clone())
                        }
                    })
                    .collect();
                self.set_list(line, list);
            }
            None => self.append(&id, line, ms, conv, m),
        }
    }

    /// Newer token counts (and times) of the last response, in place.
    fn refresh_last(&mut self, conv: Converted<'a>) {
        let Some(item) = self.list.last() else { return };
        if item.first + conv.entries.len() != self.nodes.nodes.len() {
            return;
        }
        for (k, (_, body)) in conv.entries.into_iter().enumerate() {
            self.nodes.nodes[item.first + k].body = body;
        }
    }

    fn append(&mut self, id: &str, line: usize, ms: i64, conv: Converted<'a>, src: Obj<'a>) {
        let leaf = self.leaf();
        self.push_after(leaf, id, line, ms, conv, src);
    }

    /// Adds a message's entries under `leaf`, as the list's last message. Keys come from
    /// its id the first time it gets entries; a copy made on a branch names its line too.
    fn push_after(
        &mut self,
        leaf: Option<usize>,
        id: &str,
        line: usize,
        ms: i64,
        conv: Converted<'a>,
        src: Obj<'a>,
    ) {
        if conv.kind != "context" {
            self.conversation = true;
        }
        let first = self.nodes.nodes.len();
        let mut at = leaf;
        let base = if self.keys.contains(id) {
            format!("{id}@{line}")
        } else {
            id.to_string()
        };
        self.keys.insert(base.clone());
        for (suffix, body) in conv.entries {
            let key = format!("{base}{suffix}");
            at = Some(self.nodes.push(at, key, ms, body));
        }
        self.list.push(Item {
            id: id.to_string(),
            kind: conv.kind,
            sig: conv.sig,
            before: leaf,
            last: at,
            first,
            keys: vec![base],
            src,
        });
    }

    /// A context block: one entry the first time it is seen, outside the list.
    fn context_block(&mut self, id: &str, ms: i64, conv: Converted<'a>) {
        if !self.seen.insert(id.to_string()) {
            self.skip("context block (again)");
            return;
        }
        let leaf = self.leaf();
        let mut at = leaf;
        for (suffix, body) in conv.entries {
            at = Some(self.nodes.push(at, format!("{id}{suffix}"), ms, body));
        }
        match self.list.last_mut() {
            Some(i) => i.last = at,
            None => self.root = at,
        }
    }

    /// `$set.messages` (and an older release's whole list): the new list keeps the entries
    /// of the messages it shares with the current one from the start, and continues from
    /// the last of them.
    fn set_list(&mut self, line: usize, list: Vec<V<'a>>) {
        let mut msgs: Vec<(String, i64, Converted<'a>, Obj<'a>)> = Vec::new();
        // Results another message of the list holds: a `_response` copy is left out.
        let mut held: HashMap<String, usize> = HashMap::default();
        self.answered.clear();
        for m in &list {
            if m.get("type").and_then(V::as_str) != Some("user") {
                continue;
            }
            let own = m.get("id").and_then(V::as_str).unwrap_or("");
            for p in parts(m.get("content")) {
                if let Some(fid) = p
                    .get("functionResponse")
                    .and_then(|f| f.get("id"))
                    .and_then(V::as_str)
                {
                    self.answered.insert(wire_id(fid).to_string());
                    if !own.ends_with("_response") {
                        *held.entry(wire_id(fid).to_string()).or_default() += 1;
                    }
                }
            }
        }
        let count = list.len();
        for (k, m) in list.into_iter().enumerate() {
            self.synth = self.complete || k + 1 < count;
            let V::Obj(m) = m else {
                self.problems.push(Problem {
                    line,
                    message: "a message of the list is not an object".into(),
                });
                continue;
            };
            let Some(id) = m.get("id").and_then(V::as_str).map(str::to_string) else {
                self.problems.push(Problem {
                    line,
                    message: "a message of the list has no id".into(),
                });
                continue;
            };
            if id.ends_with("_response") && is_repeat(&m, &held) {
                self.skip("tool results (repeated by a resume)");
                continue;
            }
            let ms = time_ms(m.get("timestamp")).unwrap_or(self.last_ms);
            let conv = self.convert_message(&m, ms);
            msgs.push((id, ms, conv, m));
        }
        // A compression: the list now starts with a summary the old one did not hold.
        let snapshot = msgs
            .iter()
            .position(|(_, _, c, _)| c.kind != "context")
            .filter(|&p| msgs[p].2.kind == "snapshot")
            .filter(|&p| !self.list.iter().any(|i| i.id == msgs[p].0));
        if let Some(p) = snapshot {
            let mut it = msgs.into_iter();
            for (id, ms, conv, _) in it.by_ref().take(p) {
                self.context_block(&id, ms, conv);
            }
            let (id, ms, conv, src) = it.next().expect("the snapshot is in the list");
            let leaf = self.leaf();
            self.list.clear();
            self.root = leaf;
            self.push_after(leaf, &id, line, ms, conv, src);
            for (id, ms, conv, src) in it {
                if conv.kind == "context" {
                    self.context_block(&id, ms, conv);
                } else {
                    self.append_new(&id, line, ms, conv, src);
                }
            }
            return;
        }
        let mut keep = 0;
        let mut msgs = msgs.into_iter().peekable();
        // Context blocks first (given an entry when new); then the shared messages.
        while let Some((id, _, conv, _)) = msgs.peek() {
            if conv.kind == "context" {
                let (id, ms, conv, _) = msgs.next().expect("peeked");
                self.context_block(&id, ms, conv);
                continue;
            }
            match self.list.get(keep) {
                Some(i) if i.id == *id && i.sig == conv.sig => {
                    keep += 1;
                    msgs.next();
                }
                _ => break,
            }
        }
        if keep < self.list.len() {
            self.list.truncate(keep);
        }
        for (id, ms, conv, src) in msgs {
            if conv.kind == "context" {
                self.context_block(&id, ms, conv);
                continue;
            }
            self.append_new(&id, line, ms, conv, src);
        }
    }

    fn append_new(&mut self, id: &str, line: usize, ms: i64, conv: Converted<'a>, src: Obj<'a>) {
        self.last_ms = self.last_ms.max(ms);
        self.append(id, line, ms, conv, src);
    }

    /// A message's Pi entries.
    fn convert_message(&mut self, m: &Obj<'a>, ms: i64) -> Converted<'a> {
        let ty = m.get("type").and_then(V::as_str).unwrap_or("");
        let id = m.get("id").and_then(V::as_str).unwrap_or("");
        let mark = || obj! {"id": id.to_string()};
        match ty {
            "user" => {
                let ps = parts(m.get("content"));
                let mut entries = Vec::new();
                let mut blocks = Vec::new();
                let mut sig = Sig::new("user");
                let mut all_text = String::new();
                for (k, p) in ps.iter().enumerate() {
                    if let Some(fr) = p.get("functionResponse") {
                        let (result, s) = tool_result(fr, ms, &mark());
                        sig.push_sig(&s);
                        entries.push((SUFFIXES[k.min(SUFFIXES.len() - 1)], result));
                    } else if let Some(V::Str(t)) = p.get("text") {
                        all_text.push_str(t.as_str());
                        sig.push_str(t.source_text());
                        blocks.push(node::text(t.clone()));
                    } else if let Some(d) = p.get("inlineData") {
                        let data = d.get("data").and_then(V::as_str).unwrap_or("").to_string();
                        let mime = d
                            .get("mimeType")
                            .and_then(V::as_str)
                            .unwrap_or("application/octet-stream")
                            .to_string();
                        sig.push_str(&data);
                        if mime.starts_with("image/") {
                            blocks.push(node::image(data, mime));
                        } else {
                            blocks.push(node::text(format!("[{mime} data]")));
                        }
                    }
                }
                if entries.is_empty() && is_context(&all_text) {
                    return Converted {
                        kind: "context",
                        entries: vec![(
                            "",
                            Body::Custom {
                                custom_type: "gemini-cli:context".into(),
                                data: V::Obj(m.clone()),
                            },
                        )],
                        sig,
                    };
                }
                let snapshot =
                    entries.is_empty() && all_text.trim_start().starts_with("<state_snapshot>");
                if snapshot {
                    return Converted {
                        kind: "snapshot",
                        entries: vec![(
                            "",
                            Body::Compaction {
                                summary: all_text,
                                tokens_before: self.tokens,
                                details: Some(obj! {"source": "gemini-cli", "id": id.to_string()}),
                                first_kept: None,
                                system_message: None,
                            },
                        )],
                        sig,
                    };
                }
                if !blocks.is_empty() {
                    let mut u = Obj::with_capacity(4);
                    u.push_new("role", V::from("user"));
                    u.push_new("content", V::Arr(blocks));
                    u.push_new("timestamp", V::from(ms));
                    u.push_new("geminiCli", mark());
                    entries.push(("", Body::Message(u)));
                }
                if entries.is_empty() {
                    entries.push((
                        "",
                        Body::Custom {
                            custom_type: "gemini-cli:user".into(),
                            data: V::Obj(m.clone()),
                        },
                    ));
                }
                Converted {
                    kind: "user",
                    entries,
                    sig,
                }
            }
            "gemini" => {
                let mut content = Vec::new();
                let mut sig = Sig::new("gemini");
                let ps = parts(m.get("content"));
                let from_content = ps.iter().any(|p| p.get("functionCall").is_some());
                let thought_parts = ps
                    .iter()
                    .any(|p| p.get("thought").and_then(V::as_bool) == Some(true));
                if !thought_parts {
                    for t in m
                        .get("thoughts")
                        .and_then(V::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let subject = t.get("subject").and_then(V::as_str).unwrap_or("");
                        let desc = t.get("description").and_then(V::as_str).unwrap_or("");
                        let text = if subject.is_empty() {
                            desc.to_string()
                        } else {
                            format!("**{subject}** {desc}")
                        };
                        sig.push_str(&text);
                        content.push(obj! {"type": "thinking", "thinking": text});
                    }
                }
                let mut calls: Vec<(String, String, V<'a>)> = Vec::new();
                for p in &ps {
                    if p.get("thought").and_then(V::as_bool) == Some(true) {
                        let t = text_of(p).unwrap_or_default();
                        sig.push_str(&t);
                        let mut b = Obj::with_capacity(3);
                        b.push_new("type", V::from("thinking"));
                        b.push_new("thinking", V::from(t));
                        if let Some(V::Str(sg)) = p.get("thoughtSignature") {
                            b.push_new("thinkingSignature", V::Str(sg.clone()));
                        }
                        content.push(V::Obj(b));
                    } else if let Some(V::Str(t)) = p.get("text") {
                        sig.push_str(t.source_text());
                        content.push(node::text(t.clone()));
                    } else if let Some(fc) = p.get("functionCall") {
                        let name = fc.get("name").and_then(V::as_str).unwrap_or("").to_string();
                        let cid = fc
                            .get("id")
                            .and_then(V::as_str)
                            .map(wire_id)
                            .unwrap_or("")
                            .to_string();
                        let args = fc
                            .get("args")
                            .cloned()
                            .filter(V::is_object)
                            .unwrap_or_else(|| V::Obj(Obj::new()));
                        calls.push((cid, name, args));
                    }
                }
                let tool_calls = m.get("toolCalls").and_then(V::as_array);
                if !from_content {
                    for tc in tool_calls.into_iter().flatten() {
                        let name = tc.get("name").and_then(V::as_str).unwrap_or("").to_string();
                        let cid = tc
                            .get("id")
                            .and_then(V::as_str)
                            .map(wire_id)
                            .unwrap_or("")
                            .to_string();
                        let args = tc
                            .get("args")
                            .cloned()
                            .filter(V::is_object)
                            .unwrap_or_else(|| V::Obj(Obj::new()));
                        calls.push((cid, name, args));
                    }
                }
                let n_calls = calls.len();
                // The arguments' JSON, for the signature, in one buffer for every call.
                let mut json = String::new();
                for (cid, name, args) in calls {
                    sig.push_str(&cid);
                    sig.push_str(&name);
                    json.clear();
                    args.write(&mut json);
                    sig.push_str(&json);
                    content.push(
                        obj! {"type": "toolCall", "id": cid, "name": name, "arguments": args},
                    );
                }
                let tokens = m.get("tokens");
                let g = |k: &str| {
                    tokens
                        .and_then(|t| t.get(k))
                        .and_then(V::as_f64)
                        .unwrap_or(0.0)
                };
                if g("input") > 0.0 {
                    self.tokens = g("input");
                }
                let cached = g("cached");
                let usage = node::usage(
                    (g("input") - cached).max(0.0),
                    g("output") + g("thoughts"),
                    cached,
                    0.0,
                    tokens.and_then(|t| t.get("total")).and_then(V::as_f64),
                );
                let mut a = Obj::with_capacity(10);
                a.push_new("role", V::from("assistant"));
                a.push_new("content", V::Arr(content));
                a.push_new("api", V::from("google-generative-ai"));
                a.push_new("provider", V::from("google"));
                a.push_new(
                    "model",
                    V::from(m.get("model").and_then(V::as_str).unwrap_or("").to_string()),
                );
                a.push_new("usage", usage);
                a.push_new(
                    "stopReason",
                    V::from(if n_calls == 0 { "stop" } else { "toolUse" }),
                );
                a.push_new("timestamp", V::from(ms));
                a.push_new("geminiCli", mark());
                let mut entries = vec![("", Body::Message(a))];
                // Results only the call records (no user message answers it).
                let mut k = 0;
                for tc in tool_calls.into_iter().flatten() {
                    let cid = tc.get("id").and_then(V::as_str).map(wire_id).unwrap_or("");
                    if !self.synth || self.answered.contains(cid) {
                        continue;
                    }
                    for p in parts(tc.get("result")) {
                        if let Some(fr) = p.get("functionResponse") {
                            let (result, s) = tool_result(fr, ms, &mark());
                            sig.push_sig(&s);
                            entries
                                .push((RESULT_SUFFIXES[k.min(RESULT_SUFFIXES.len() - 1)], result));
                            k += 1;
                        }
                    }
                }
                Converted {
                    kind: "gemini",
                    entries,
                    sig,
                }
            }
            other => {
                let kind = if other.is_empty() { "message" } else { other };
                let mut sig = Sig::new(kind);
                sig.push_str(&m.get("content").map(V::to_json).unwrap_or_default());
                Converted {
                    kind: "other",
                    entries: vec![(
                        "",
                        Body::Custom {
                            custom_type: format!("gemini-cli:{kind}"),
                            data: V::Obj(m.clone()),
                        },
                    )],
                    sig,
                }
            }
        }
    }
}

/// Key suffixes of a message's second and later entries.
const SUFFIXES: [&str; 9] = ["", "#1", "#2", "#3", "#4", "#5", "#6", "#7", "#8+"];
const RESULT_SUFFIXES: [&str; 8] = ["#r0", "#r1", "#r2", "#r3", "#r4", "#r5", "#r6", "#r7+"];

/// Whether a `_response` message of a rebuilt list holds only results another message of
/// the list holds too.
fn is_repeat(m: &Obj<'_>, held: &HashMap<String, usize>) -> bool {
    let ps = parts(m.get("content"));
    !ps.is_empty()
        && ps.iter().all(|p| {
            p.get("functionResponse")
                .and_then(|f| f.get("id"))
                .and_then(V::as_str)
                .is_some_and(|id| held.contains_key(wire_id(id)))
        })
}

/// A function response as a Pi tool result, and its signature.
fn tool_result<'a>(fr: &V<'a>, ms: i64, mark: &V<'a>) -> (Body<'a>, Sig) {
    let id = fr
        .get("id")
        .and_then(V::as_str)
        .map(wire_id)
        .unwrap_or("")
        .to_string();
    let name = fr.get("name").and_then(V::as_str).unwrap_or("").to_string();
    let response = fr.get("response");
    let (text, is_error): (S<'a>, bool) = match response {
        Some(r) => match (r.get("output"), r.get("error")) {
            (Some(V::Str(s)), _) => (s.clone(), false),
            (_, Some(V::Str(e))) => (e.clone(), true),
            _ => (S::from(r.to_json()), r.get("error").is_some()),
        },
        None => (S::from(""), false),
    };
    let mut sig = Sig::new("result");
    sig.push_str(&id);
    sig.push_str(text.source_text());
    let mut details = Obj::with_capacity(2);
    details.push_new("source", V::from("gemini-cli"));
    details.push_new("geminiCli", mark.clone());
    let mut m = Obj::with_capacity(7);
    m.push_new("role", V::from("toolResult"));
    m.push_new("toolCallId", V::from(id));
    m.push_new("toolName", V::from(name));
    m.push_new("content", V::Arr(vec![node::text(text)]));
    m.push_new("details", V::Obj(details));
    m.push_new("isError", V::Bool(is_error));
    m.push_new("timestamp", V::from(ms));
    (Body::Message(m), sig)
}

/// What a message converts to, hashed (over its parts' source texts): two versions of a message
/// with the same signature give the same entries.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Sig(u64);

impl Sig {
    fn new(kind: &str) -> Sig {
        let mut s = Sig(0xcbf2_9ce4_8422_2325);
        s.push_str(kind);
        s
    }

    fn push_str(&mut self, t: &str) {
        // foldhash over the part (long tool outputs at memory speed), mixed into the sum
        // with its length, so that parts do not run into each other.
        let h = std::hash::BuildHasher::hash_one(
            &foldhash::fast::FixedState::with_seed(0x5eed_6e31),
            t.as_bytes(),
        );
        self.0 = (self.0 ^ h).wrapping_mul(0x0100_0000_01b3).rotate_left(29) ^ t.len() as u64;
    }

    fn push_sig(&mut self, o: &Sig) {
        self.0 = (self.0 ^ o.0)
            .wrapping_mul(0x0100_0000_01b3)
            .rotate_left(29);
    }
}
