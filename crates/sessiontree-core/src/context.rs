//! What the model sees: the path to the leaf, projected through compactions and context
//! edits (FORMAT.md section 9), and the role mapping for a model request (9.6).
//!
//! Messages are JSON texts: borrowed from the entry lines when a message is passed through
//! as stored, built when the rules make a new object.

use crate::date::js_date_ms;
use crate::entry::{Entry, EntryType};
use crate::json::{canonicalize, format_number, write_js_string, Kind, Raw};
use crate::tree::{LeafArg, SessionTree};
use std::borrow::Cow;

/// One message of the context, as JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// Exactly as stored in the entry.
    Stored(Raw<'a>),
    /// Built by the projection rules.
    Built(String),
}

impl<'a> Message<'a> {
    /// The message as JSON text.
    pub fn json(&self) -> &str {
        match self {
            Message::Stored(r) => r.text(),
            Message::Built(s) => s,
        }
    }

    /// The message as a JSON value (to read its fields).
    pub fn raw(&self) -> Raw<'_> {
        Raw::new_unchecked(self.json().as_bytes())
    }

    /// `role`, if the message is an object with a string role.
    pub fn role(&self) -> Option<String> {
        let r = self.raw();
        (r.kind() == Kind::Object)
            .then(|| r.get("role").and_then(|v| v.as_str()).map(Cow::into_owned))
            .flatten()
    }
}

/// The model's current provider and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model<'a> {
    /// `provider` as stored (`model_change.provider` or an assistant message's `provider`).
    pub provider: Option<Raw<'a>>,
    /// `modelId` as stored (`model_change.modelId` or an assistant message's `model`).
    pub model_id: Option<Raw<'a>>,
}

/// `buildSessionContext`'s result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context<'a> {
    /// What the model sees, in order (FORMAT.md sections 9.3 and 9.4).
    pub messages: Vec<Message<'a>>,
    /// `None` when the last thinking-level change has no value (JSON leaves the key out).
    pub thinking_level: Option<Raw<'a>>,
    /// The last model on the path (section 9.2); `None` when no entry set one (JSON `null`).
    pub model: Option<Model<'a>>,
}

const OFF: &[u8] = b"\"off\"";

/// A provenance-preserving projection: each selected entry with the messages it gives.
pub struct Projection<'a> {
    /// Each entry of the context, in context order, with the messages it gives (none for
    /// most entry types; a compaction can give two).
    pub entries: Vec<(&'a Entry, Vec<Message<'a>>)>,
    /// As [`Context::thinking_level`].
    pub thinking_level: Option<Raw<'a>>,
    /// As [`Context::model`].
    pub model: Option<Model<'a>>,
}

/// `getSessionContextSettings`: thinking level and model over the whole path. Each is set
/// by the last entry on the path that sets it, so the path is walked from its end and each
/// is read once: the fields of the entries before are never read (on a mapped session,
/// reading every assistant message's model touched a page of the file for each). Gives the
/// entries they come from: the last thinking-level change, and the last model change or
/// assistant message.
#[doc(hidden)] // plumbing between the core and the store
pub fn settings<'a>(path: &[&'a Entry]) -> (Option<&'a Entry>, Option<&'a Entry>) {
    let thinking = path
        .iter()
        .rfind(|e| e.entry_type == EntryType::ThinkingLevelChange)
        .copied();
    let model = path
        .iter()
        .rfind(|e| match e.entry_type {
            EntryType::ModelChange => true,
            EntryType::Message => e.role() == Some("assistant"),
            _ => false,
        })
        .copied();
    (thinking, model)
}

/// The thinking level the last thinking-level change on the path sets (`"off"` without one).
fn thinking_of(e: Option<&Entry>) -> Option<Raw<'_>> {
    match e {
        Some(e) => e.field("thinkingLevel"),
        None => Some(Raw::new_unchecked(OFF)),
    }
}

/// The model the last model change or assistant message on the path names.
fn model_of(e: Option<&Entry>) -> Option<Model<'_>> {
    e.map(|e| match e.entry_type {
        EntryType::ModelChange => Model {
            provider: e.field("provider"),
            model_id: e.field("modelId"),
        },
        _ => Model {
            provider: e.message_field("provider"),
            model_id: e.message_field("model"),
        },
    })
}

/// `buildContextEntries`: the last compaction, its kept range (without system messages),
/// then everything after it.
pub(crate) fn context_entries(path: Vec<&Entry>) -> Vec<&Entry> {
    let Some(ci) = path
        .iter()
        .rposition(|e| e.entry_type == EntryType::Compaction)
    else {
        return path;
    };
    let c = path[ci];
    let first_kept = c.str_field("firstKeptEntryId");
    let mut out = Vec::with_capacity(path.len() - ci);
    out.push(c);
    let mut found = false;
    for e in &path[..ci] {
        if !found && first_kept.is_some() && e.id() == first_kept.as_deref() {
            found = true;
        }
        if found && !e.is_role("system") {
            out.push(e);
        }
    }
    out.extend_from_slice(&path[ci + 1..]);
    out
}

fn ms_json(ts: Option<Raw<'_>>) -> String {
    match js_date_ms(ts) {
        Some(ms) => format_number(ms),
        None => "null".into(),
    }
}

/// Writes `{"k":v,...}` leaving out absent values, as `JSON.stringify` drops `undefined`.
fn object(fields: &[(&str, Option<&str>)]) -> String {
    let mut s = String::from("{");
    for (k, v) in fields {
        if let Some(v) = v {
            if s.len() > 1 {
                s.push(',');
            }
            write_js_string(&mut s, k);
            s.push(':');
            s.push_str(v);
        }
    }
    s.push('}');
    s
}

fn js_str(s: &str) -> String {
    let mut out = String::new();
    write_js_string(&mut out, s);
    out
}

/// `{...object, key: value}` on JSON text: first position kept, `None` drops the key.
#[doc(hidden)] // plumbing between the core and the store
pub fn with_field(obj: Raw<'_>, key: &str, value: Option<&str>) -> String {
    let members = obj.members();
    let mut order: Vec<(Cow<'_, str>, String)> = Vec::new();
    for (k, v) in members {
        match order.iter_mut().find(|(ok, _)| *ok == k) {
            Some(slot) => slot.1 = v.text().to_string(),
            None => order.push((k, v.text().to_string())),
        }
    }
    match order.iter().position(|(k, _)| k == key) {
        Some(i) => match value {
            Some(v) => order[i].1 = v.to_string(),
            None => {
                order.remove(i);
            }
        },
        None => {
            if let Some(v) = value {
                order.push((Cow::Borrowed(key), v.to_string()));
            }
        }
    }
    let s = pairs_object(order.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
    canonicalize(s.as_bytes()).unwrap_or(s)
}

/// `{"k":v,...}` from keys and JSON values, in the order given.
fn pairs_object<'k>(pairs: impl Iterator<Item = (&'k str, &'k str)>) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in pairs.enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_js_string(&mut s, k);
        s.push(':');
        s.push_str(v);
    }
    s.push('}');
    s
}

/// `sessionEntryToContextMessages`.
pub(crate) fn entry_messages(e: &Entry) -> Vec<Message<'_>> {
    match e.entry_type {
        EntryType::Message => {
            // Kinds come from what the load recorded: the message's bytes are not touched
            // here (a mapped session streams out without being read twice).
            let (Some(m), Some(kind)) = (e.message(), e.field_kind("message")) else {
                return Vec::new();
            };
            if kind != Kind::Object {
                return if kind == Kind::Null {
                    Vec::new()
                } else {
                    vec![Message::Stored(m)]
                };
            }
            let content_missing = e
                .message_field_kind("content")
                .is_none_or(|c| c == Kind::Null);
            match e.role() {
                Some("system") if content_missing => {
                    vec![Message::Built(with_field(m, "content", Some("\"\"")))]
                }
                Some("user" | "assistant" | "toolResult") if content_missing => {
                    vec![Message::Built(with_field(m, "content", Some("[]")))]
                }
                _ => vec![Message::Stored(m)],
            }
        }
        EntryType::CustomMessage => {
            let content = e
                .field("content")
                .filter(|c| !c.is_null())
                .map(|c| c.text())
                .unwrap_or("[]");
            let ts = ms_json(e.timestamp());
            vec![Message::Built(object(&[
                ("role", Some("\"custom\"")),
                ("customType", e.field("customType").map(|v| v.text())),
                ("content", Some(content)),
                ("display", e.field("display").map(|v| v.text())),
                ("details", e.field("details").map(|v| v.text())),
                ("timestamp", Some(&ts)),
            ]))]
        }
        EntryType::BranchSummary if e.field("summary").is_some_and(|s| s.truthy()) => {
            let ts = ms_json(e.timestamp());
            vec![Message::Built(object(&[
                ("role", Some("\"branchSummary\"")),
                ("summary", e.field("summary").map(|v| v.text())),
                ("fromId", e.field("fromId").map(|v| v.text())),
                ("timestamp", Some(&ts)),
            ]))]
        }
        EntryType::Compaction => {
            let ts = ms_json(e.timestamp());
            let summary = Message::Built(object(&[
                ("role", Some("\"compactionSummary\"")),
                ("summary", e.field("summary").map(|v| v.text())),
                ("tokensBefore", e.field("tokensBefore").map(|v| v.text())),
                ("timestamp", Some(&ts)),
            ]));
            match e.field("systemMessage").filter(|s| s.truthy()) {
                Some(sys) => vec![Message::Stored(sys), summary],
                None => vec![summary],
            }
        }
        _ => Vec::new(),
    }
}

/// `projectContextEntry`: an entry's messages with its latest context edit applied.
fn project_entry<'a>(e: &'a Entry, edit: Option<&'a Entry>) -> Vec<Message<'a>> {
    let messages = entry_messages(e);
    let Some(edit) = edit else { return messages };
    let Some(replacement) = edit.field("replacement") else {
        return messages;
    };
    if replacement.is_null() {
        return Vec::new();
    }
    let content = replacement.get("content");
    messages
        .into_iter()
        .map(|m| {
            let role = m.role();
            match role.as_deref() {
                Some(r @ ("user" | "assistant" | "toolResult" | "custom")) => {
                    let value = match content {
                        Some(c)
                            if c.kind() == Kind::String
                                && matches!(r, "assistant" | "toolResult") =>
                        {
                            Some(format!("[{{\"type\":\"text\",\"text\":{}}}]", c.text()))
                        }
                        Some(c) => Some(c.text().to_string()),
                        None => None,
                    };
                    Message::Built(with_field(m.raw(), "content", value.as_deref()))
                }
                _ => m,
            }
        })
        .collect()
}

/// `buildSessionProjection`.
pub fn project<'a>(tree: &'a SessionTree, leaf: LeafArg<'_>) -> Projection<'a> {
    let plan = plan(tree, leaf);
    let entries = (0..plan.selected.len())
        .map(|i| (plan.selected[i], plan.messages_of(i)))
        .collect();
    Projection {
        entries,
        thinking_level: plan.thinking_level,
        model: plan.model,
    }
}

/// The projection's selection, with messages made on demand: what streaming needs.
pub struct Plan<'a> {
    selected: Vec<&'a Entry>,
    edits: std::collections::HashMap<Cow<'a, str>, &'a Entry>,
    /// The entries the settings come from (see [`Plan::parts`]).
    setting_entries: (Option<&'a Entry>, Option<&'a Entry>),
    /// As [`Context::thinking_level`].
    pub thinking_level: Option<Raw<'a>>,
    /// As [`Context::model`].
    pub model: Option<Model<'a>>,
}

/// Selects the context's entries and settings. Only the fields the load recorded are read,
/// so a mapped session's lines are not touched (they are touched, and given back, when
/// [`Plan::write_json_releasing`] writes them).
pub fn plan<'a>(tree: &'a SessionTree, leaf: LeafArg<'_>) -> Plan<'a> {
    let path = tree.context_path(leaf);
    let (thinking, model) = settings(&path);
    Plan::from_parts(context_entries(path), thinking, model)
}

impl<'a> Plan<'a> {
    /// The plan made of its parts as [`Plan::parts`] gives them: the selected entries in
    /// order, the last thinking-level change on the path and the last model change or
    /// assistant message on it. The same parts give the same plan, whichever tree holds the
    /// entries: a reader that kept where they are need not load the whole session again.
    pub fn from_parts(
        selected: Vec<&'a Entry>,
        thinking: Option<&'a Entry>,
        model: Option<&'a Entry>,
    ) -> Plan<'a> {
        let mut edits: std::collections::HashMap<Cow<'a, str>, &'a Entry> =
            std::collections::HashMap::new();
        for e in &selected {
            if e.entry_type == EntryType::ContextEdit {
                if let Some(t) = e.str_field("targetId") {
                    edits.insert(t, e);
                }
            }
        }
        Plan {
            selected,
            edits,
            setting_entries: (thinking, model),
            thinking_level: thinking_of(thinking),
            model: model_of(model),
        }
    }

    /// What the plan is made of, for [`Plan::from_parts`]: the selected entries, and the
    /// entries the thinking level and the model come from.
    pub fn parts(&self) -> (&[&'a Entry], Option<&'a Entry>, Option<&'a Entry>) {
        (
            &self.selected,
            self.setting_entries.0,
            self.setting_entries.1,
        )
    }

    /// The context the plan gives (as [`build_context`]).
    pub fn into_context(self) -> Context<'a> {
        let messages = (0..self.selected.len())
            .flat_map(|i| self.messages_of(i))
            .collect();
        Context {
            messages,
            thinking_level: self.thinking_level,
            model: self.model,
        }
    }

    /// The messages the `i`th selected entry gives.
    pub fn messages_of(&self, i: usize) -> Vec<Message<'a>> {
        let e = self.selected[i];
        if e.entry_type == EntryType::Compaction && i > 0 {
            return Vec::new();
        }
        project_entry(e, e.id().and_then(|id| self.edits.get(id).copied()))
    }

    /// Streams the context's JSON (as [`Context::write_json`]) making each entry's messages
    /// just before writing them and giving the entry's bytes back right after, so that a
    /// mapped session is never resident whole. Messages go out with vectored writes straight
    /// from the stored bytes (no copy into a buffer); the writer sees batches of up to a few
    /// hundred slices.
    pub fn write_json_releasing<W: std::io::Write + ?Sized>(
        &self,
        w: &mut W,
    ) -> std::io::Result<()> {
        w.write_all(b"{\"messages\":[")?;
        let mut first = true;
        let mut releaser = crate::entry::Releaser::new();
        let mut batch: Vec<Message<'a>> = Vec::new();
        let mut batch_entries: Vec<&'a Entry> = Vec::new();
        let mut batch_bytes = 0usize;
        let flush = |batch: &mut Vec<Message<'a>>,
                     entries: &mut Vec<&'a Entry>,
                     first: &mut bool,
                     releaser: &mut crate::entry::Releaser,
                     w: &mut W|
         -> std::io::Result<()> {
            let mut slices: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(batch.len() * 2);
            for m in batch.iter() {
                if !*first {
                    slices.push(std::io::IoSlice::new(b","));
                }
                *first = false;
                slices.push(std::io::IoSlice::new(m.json().as_bytes()));
            }
            write_all_vectored(w, &mut slices)?;
            drop(slices);
            batch.clear();
            for e in entries.drain(..) {
                releaser.passed(e);
            }
            Ok(())
        };
        for (i, entry) in self.selected.iter().enumerate() {
            for m in self.messages_of(i) {
                batch_bytes += m.json().len();
                batch.push(m);
            }
            batch_entries.push(entry);
            if batch.len() >= 500 || batch_bytes >= 4 << 20 {
                flush(&mut batch, &mut batch_entries, &mut first, &mut releaser, w)?;
                batch_bytes = 0;
            }
        }
        flush(&mut batch, &mut batch_entries, &mut first, &mut releaser, w)?;
        w.write_all(b"]")?;
        write_settings(w, self.thinking_level.as_ref(), self.model.as_ref())
    }
}

/// `write_all` for vectored writes (short writes and interruptions continue).
pub fn write_all_vectored<W: std::io::Write + ?Sized>(
    w: &mut W,
    mut bufs: &mut [std::io::IoSlice<'_>],
) -> std::io::Result<()> {
    std::io::IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "failed to write whole buffer",
                ))
            }
            Ok(n) => std::io::IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn write_settings<W: std::io::Write + ?Sized>(
    w: &mut W,
    thinking: Option<&Raw<'_>>,
    model: Option<&Model<'_>>,
) -> std::io::Result<()> {
    if let Some(t) = thinking {
        w.write_all(b",\"thinkingLevel\":")?;
        w.write_all(t.bytes())?;
    }
    w.write_all(b",\"model\":")?;
    match model {
        None => w.write_all(b"null")?,
        Some(m) => w.write_all(
            object(&[
                ("provider", m.provider.map(|v| v.text())),
                ("modelId", m.model_id.map(|v| v.text())),
            ])
            .as_bytes(),
        )?,
    }
    w.write_all(b"}")
}

/// `buildSessionContext(leaf)`.
pub fn build_context<'a>(tree: &'a SessionTree, leaf: LeafArg<'_>) -> Context<'a> {
    plan(tree, leaf).into_context()
}

impl Context<'_> {
    /// The context as the reference's JSON: `{messages, thinkingLevel, model}`.
    pub fn to_json(&self) -> String {
        let mut v = Vec::with_capacity(
            self.messages
                .iter()
                .map(|m| m.json().len() + 1)
                .sum::<usize>()
                + 64,
        );
        self.write_json(&mut v).expect("writing to memory");
        String::from_utf8(v).expect("JSON text is UTF-8")
    }

    /// Streams the JSON (no copy of the messages is made).
    pub fn write_json<W: std::io::Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"{\"messages\":[")?;
        for (i, m) in self.messages.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            w.write_all(m.json().as_bytes())?;
        }
        w.write_all(b"]")?;
        write_settings(w, self.thinking_level.as_ref(), self.model.as_ref())
    }
}

/// The text a bash execution becomes for the model (`bashExecutionToText`).
pub fn bash_execution_text(m: Raw<'_>) -> String {
    let get = |k: &str| m.get(k);
    let js = |v: Option<Raw<'_>>| v.map_or_else(|| "undefined".to_string(), |v| v.js_string());
    let mut text = format!("Ran `{}`\n", js(get("command")));
    match get("output").filter(|o| o.truthy()) {
        Some(o) => text.push_str(&format!("```\n{}\n```", o.js_string())),
        None => text.push_str("(no output)"),
    }
    let exit = get("exitCode");
    if get("cancelled").is_some_and(|c| c.truthy()) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) =
        exit.filter(|c| !(c.is_null() || c.kind() == Kind::Number && c.as_f64() == Some(0.0)))
    {
        text.push_str(&format!(
            "\n\nCommand exited with code {}",
            code.js_string()
        ));
    }
    if get("truncated").is_some_and(|t| t.truthy()) {
        if let Some(p) = get("fullOutputPath").filter(|p| p.truthy()) {
            text.push_str(&format!(
                "\n\n[Output truncated. Full output: {}]",
                p.js_string()
            ));
        }
    }
    text
}

const COMPACTION_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX: &str = "\n</summary>";
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

fn user_text(text: &str, ts: Option<Raw<'_>>) -> String {
    let content = format!("[{{\"type\":\"text\",\"text\":{}}}]", js_str(text));
    object(&[
        ("role", Some("\"user\"")),
        ("content", Some(&content)),
        ("timestamp", ts.map(|t| t.text())),
    ])
}

/// `convertToLlm`: the messages of a context as a model request carries them.
pub fn to_llm<'a>(messages: &[Message<'a>]) -> Vec<Message<'a>> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let raw = m.raw();
        let role = m.role();
        let ts = raw.get("timestamp");
        match role.as_deref() {
            Some("bashExecution") => {
                if raw.get("excludeFromContext").is_some_and(|x| x.truthy()) {
                    continue;
                }
                out.push(Message::Built(user_text(&bash_execution_text(raw), ts)));
            }
            Some("custom") => {
                let content = match raw.get("content") {
                    Some(c) if c.kind() == Kind::String => {
                        Some(format!("[{{\"type\":\"text\",\"text\":{}}}]", c.text()))
                    }
                    Some(c) => Some(c.text().to_string()),
                    None => None,
                };
                out.push(Message::Built(object(&[
                    ("role", Some("\"user\"")),
                    ("content", content.as_deref()),
                    ("timestamp", ts.map(|t| t.text())),
                ])));
            }
            Some("branchSummary") => {
                let s = raw
                    .get("summary")
                    .map_or("undefined".into(), |v| v.js_string());
                out.push(Message::Built(user_text(
                    &format!("{BRANCH_PREFIX}{s}{BRANCH_SUFFIX}"),
                    ts,
                )));
            }
            Some("compactionSummary") => {
                let s = raw
                    .get("summary")
                    .map_or("undefined".into(), |v| v.js_string());
                out.push(Message::Built(user_text(
                    &format!("{COMPACTION_PREFIX}{s}{COMPACTION_SUFFIX}"),
                    ts,
                )));
            }
            Some("system" | "user" | "assistant" | "toolResult") => out.push(m.clone()),
            _ => {}
        }
    }
    out
}

/// A tool declaration's name as the key of the reference's `Map` (its canonical JSON, so
/// that a string and a number name stay apart).
fn tool_key(tool: Raw<'_>) -> String {
    tool.get("name")
        .map(|n| canonicalize(n.bytes()).unwrap_or_default())
        .unwrap_or_default()
}

/// `getCurrentSystemMessage`: every system message of a list folded into one (9.5).
pub fn fold_system_messages(messages: &[Message<'_>]) -> Option<String> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut tools: Vec<(String, String)> = Vec::new();
    let mut timestamp: Option<String> = None;
    for m in messages {
        if m.role().as_deref() != Some("system") {
            continue;
        }
        let raw = m.raw();
        if timestamp.is_none() {
            timestamp = raw
                .get("timestamp")
                .filter(|t| !t.is_null())
                .map(|t| t.text().to_string());
        }
        let text = match raw.get("content") {
            Some(c) if c.kind() == Kind::String => c.as_str().unwrap_or_default().into_owned(),
            Some(c) => c
                .elements()
                .iter()
                .filter(|b| b.get("type").and_then(|t| t.as_str()).as_deref() == Some("text"))
                .map(|b| b.get("text").map_or("undefined".into(), |t| t.js_string()))
                .collect::<Vec<_>>()
                .join("\n"),
            None => String::new(),
        };
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(secs) = raw.get("sections").filter(|s| s.kind() == Kind::Object) {
            // Object.entries order: canonical JSON orders index keys first, as JavaScript does.
            let canon = canonicalize(secs.bytes()).unwrap_or_default();
            for (k, v) in Raw::new_unchecked(canon.as_bytes()).members() {
                let k = k.into_owned();
                if v.is_null() {
                    sections.retain(|(n, _)| *n != k);
                } else {
                    match sections.iter_mut().find(|(n, _)| *n == k) {
                        Some(slot) => slot.1 = v.text().to_string(),
                        None => sections.push((k, v.text().to_string())),
                    }
                }
            }
        }
        for t in raw
            .get("toolsRemoved")
            .map(|r| r.elements())
            .unwrap_or_default()
        {
            let name = tool_key(t);
            tools.retain(|(n, _)| *n != name);
        }
        for t in raw
            .get("toolsAdded")
            .map(|r| r.elements())
            .unwrap_or_default()
        {
            let name = tool_key(t);
            match tools.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = t.text().to_string(),
                None => tools.push((name, t.text().to_string())),
            }
        }
    }
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    let content_json = js_str(&content.join("\n\n"));
    let sections_json = (!sections.is_empty())
        .then(|| pairs_object(sections.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
    let tools_json = (!tools.is_empty()).then(|| {
        format!(
            "[{}]",
            tools
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(",")
        )
    });
    let ts = timestamp.unwrap_or_else(|| "0".into());
    let s = object(&[
        ("role", Some("\"system\"")),
        ("content", Some(&content_json)),
        ("sections", sections_json.as_deref()),
        ("toolsAdded", tools_json.as_deref()),
        ("timestamp", Some(&ts)),
    ]);
    Some(canonicalize(s.as_bytes()).unwrap_or(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings as the reference computes them: every entry of the path in turn, the
    /// later ones overriding.
    fn settings_forward<'a>(path: &[&'a Entry]) -> (Option<Raw<'a>>, Option<Model<'a>>) {
        let mut thinking = Some(Raw::new_unchecked(OFF));
        let mut model = None;
        for e in path {
            match e.entry_type {
                EntryType::ThinkingLevelChange => thinking = e.field("thinkingLevel"),
                EntryType::ModelChange => {
                    model = Some(Model {
                        provider: e.field("provider"),
                        model_id: e.field("modelId"),
                    })
                }
                EntryType::Message if e.role() == Some("assistant") => {
                    model = Some(Model {
                        provider: e.message_field("provider"),
                        model_id: e.message_field("model"),
                    })
                }
                _ => {}
            }
        }
        (thinking, model)
    }

    /// Walked from the end, the settings are those of every entry in turn: for paths of
    /// model changes, assistant and user messages and thinking level changes, with fields
    /// present or missing, in every order.
    #[test]
    fn settings_are_those_of_the_last_entry_that_sets_them() {
        let kinds = [
            r#"{"type":"model_change","id":"a","parentId":null,"provider":"p$","modelId":"m$"}"#,
            r#"{"type":"model_change","id":"a","parentId":null,"provider":"p$"}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","provider":"q$","model":"n$","content":[]}}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":[]}}"#,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","provider":"u$","model":"v$","content":"x"}}"#,
            r#"{"type":"thinking_level_change","id":"a","parentId":null,"thinkingLevel":"t$"}"#,
            r#"{"type":"thinking_level_change","id":"a","parentId":null}"#,
            r#"{"type":"custom","id":"a","parentId":null}"#,
        ];
        let text = |r: Option<Raw<'_>>| r.map(|r| r.text().to_string());
        let shown = |(t, m): (Option<Raw<'_>>, Option<Model<'_>>)| {
            (text(t), m.map(|m| (text(m.provider), text(m.model_id))))
        };
        let mut rng = sessiontree_testkit::Rng(9);
        for _ in 0..2000 {
            let entries: Vec<Entry> = (0..rng.pick(8))
                .map(|n| {
                    let line = kinds[rng.pick(kinds.len())].replace('$', &n.to_string());
                    Entry::parse(line).expect("an entry")
                })
                .collect();
            let path: Vec<&Entry> = entries.iter().collect();
            let (t, m) = settings(&path);
            assert_eq!(
                shown((thinking_of(t), model_of(m))),
                shown(settings_forward(&path))
            );
        }
    }
}
