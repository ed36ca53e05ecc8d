//! Appending: every entry type built as the reference builds it, written, then added to
//! memory; lines of other writers read first; a torn or unterminated tail fixed before
//! the first write.

use super::Session;
use crate::context::{self, with_field};
use crate::entry::{js_trim, Entry, EntryType};
use crate::error::{io, Error, Result};
use crate::json::{canonicalize, write_js_string, Json, Raw};
use crate::parse::{self, Tail};
use crate::store::{self, Appender, Creation};
use crate::tree::SessionTree;

/// Names an entry in an error message, formatted only when one is made.
struct EntryName<'a>(&'a Entry);

impl std::fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {}", self.0.id().unwrap_or("?"))
    }
}

/// Which parent a new entry gets.
enum ParentOf {
    Leaf,
    Given(Option<String>),
}

/// Builds an entry line with the reference's key order: `custom` and `custom_message` put
/// their own fields before id/parentId/timestamp, every other type after. `None` values
/// are left out, as `JSON.stringify` leaves out `undefined`.
fn entry_line(
    ty: &str,
    id: &str,
    parent: Option<&str>,
    ts: &str,
    fields: &[(&str, Option<&str>)],
) -> String {
    let mut s = String::with_capacity(
        128 + id.len()
            + parent.map_or(0, str::len)
            + fields
                .iter()
                .map(|(k, v)| k.len() + v.map_or(0, str::len) + 4)
                .sum::<usize>(),
    );
    s.push_str("{\"type\":");
    write_js_string(&mut s, ty);
    let envelope = |s: &mut String| {
        s.push_str(",\"id\":");
        write_js_string(s, id);
        s.push_str(",\"parentId\":");
        match parent {
            Some(p) => write_js_string(s, p),
            None => s.push_str("null"),
        }
        s.push_str(",\"timestamp\":");
        write_js_string(s, ts);
    };
    let fields_first = matches!(ty, "custom" | "custom_message");
    if !fields_first {
        envelope(&mut s);
    }
    for (k, v) in fields {
        if let Some(v) = v {
            s.push(',');
            write_js_string(&mut s, k);
            s.push(':');
            s.push_str(v);
        }
    }
    if fields_first {
        envelope(&mut s);
    }
    s.push('}');
    s
}

impl Session {
    /// Reads lines other writers appended since we last looked, so that the next entry
    /// goes under the latest leaf instead of starting a sibling branch blind.
    pub fn refresh(&mut self) -> Result<usize> {
        let Some(app) = &mut self.appender else {
            return Ok(0);
        };
        // A torn-looking last line that grew was still being written: read it again from
        // its start, with what followed.
        let rewind = match self.tail {
            Tail::Torn { offset } => Some(offset),
            _ => None,
        };
        let Some(growth) = app.growth_from(rewind)? else {
            return Ok(0);
        };
        let header = self.tree.header().clone();
        let first_line = self.lines_seen + 1;
        let nl = memchr::memchr_iter(b'\n', &growth.bytes).count() as u64;
        let parsed = parse::parse_from(parse::backing(growth.bytes), 0, first_line, Some(header))
            .expect("header given");
        self.lines_seen += nl;
        self.tail = match parsed.tail {
            Tail::Torn { offset } => Tail::Torn {
                offset: offset + growth.from,
            },
            t => t,
        };
        let n = parsed.entries.len();
        for mut e in parsed.entries {
            e.offset += growth.from;
            self.tree.commit(e);
        }
        Ok(n)
    }

    /// Makes the file end on a clean line before our first write after a torn or
    /// unterminated last line. The torn bytes are first copied to a sidecar file.
    ///
    /// A last line without `\n` may be one another (lock-less) writer is still writing:
    /// it counts as torn only once the file's size has not changed for
    /// [`store::TAIL_SETTLE`]. If it grew, the new bytes are read (from the start of that
    /// line) as any other writer's lines are, and the tail is looked at again.
    fn fix_tail(&mut self) -> Result<()> {
        loop {
            let Some(app) = &mut self.appender else {
                return Ok(());
            };
            match self.tail {
                Tail::Clean => return Ok(()),
                Tail::MissingNewline => {
                    if app.settle()? != app.len() {
                        self.refresh()?;
                        continue;
                    }
                }
                Tail::Torn { offset } => {
                    if app.settle()? != app.len() {
                        self.refresh()?;
                        continue;
                    }
                    let path = app.path().to_path_buf();
                    let mut fragment = Vec::new();
                    {
                        use std::io::{Read, Seek, SeekFrom};
                        let (mut f, _) = store::open_regular(&path)?;
                        f.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
                        f.take(app.len() - offset)
                            .read_to_end(&mut fragment)
                            .map_err(io(&path))?;
                    }
                    let side = store::save_torn_tail(&path, offset, &fragment)?;
                    self.notices.push(format!(
                        "{}: the last line ({} bytes from byte {offset}) was cut off by an interrupted write; copied to {} and ended with a newline",
                        path.display(),
                        fragment.len(),
                        side.display()
                    ));
                }
            }
            let app = self.appender.as_mut().ok_or(Error::InMemory)?;
            app.append(b"\n", &"the newline that ends the previous line")?;
            self.lines_seen += 1;
            self.tail = Tail::Clean;
            return Ok(());
        }
    }

    /// What this handle did on its own that its user should hear about (a torn last line
    /// moved aside), oldest first; taking them clears the list.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    pub(super) fn wants_file(&self, next: Option<&Entry>) -> bool {
        let all = self.tree.entries().iter().chain(next);
        match self.options.creation {
            Creation::Eager => true,
            Creation::OnFirstMessage => all
                .into_iter()
                .any(|e| e.is_role("user") || e.is_role("assistant")),
            Creation::OnFirstAssistant => all.into_iter().any(|e| e.is_role("assistant")),
        }
    }

    /// Creates the file with the header, every entry so far and `next`, in one go.
    pub(super) fn flush_new(&mut self, next: Option<&Entry>) -> Result<()> {
        let path = self.path.clone().ok_or(Error::InMemory)?;
        let mut content = String::new();
        content.push_str(self.tree.header().text());
        content.push('\n');
        for e in self.tree.entries().iter().chain(next) {
            content.push_str(e.text());
            content.push('\n');
        }
        store::create_exclusive(&path, &[content.as_bytes()])?;
        self.appender = Some(Appender::open(
            &path,
            content.len() as u64,
            self.options.durability,
        )?);
        self.lines_seen = 1 + self.tree.entries().len() as u64 + next.is_some() as u64;
        self.flushed = true;
        Ok(())
    }

    fn persist(&mut self, entry: &Entry) -> Result<()> {
        if !self.persist {
            return Ok(());
        }
        if !self.flushed {
            if self.wants_file(Some(entry)) {
                self.flush_new(Some(entry))?;
            }
            return Ok(());
        }
        self.fix_tail()?;
        let appender = self.appender.as_mut().ok_or(Error::InMemory)?;
        match entry.line_bytes() {
            Some(line) => appender.append(line, &EntryName(entry))?,
            None => appender.append(format!("{}\n", entry.text()).as_bytes(), &EntryName(entry))?,
        }
        self.lines_seen += 1;
        Ok(())
    }

    fn append_with(
        &mut self,
        parent: ParentOf,
        build: impl FnOnce(&SessionTree, &str, Option<&str>, &str) -> Result<String>,
    ) -> Result<String> {
        // Lines other (non-locking) writers appended are read before every entry, so the
        // new one hangs under the true leaf (an fstat when nothing changed).
        self.refresh()?;
        // Before choosing the parent: a last line still being written becomes an entry.
        if self.tail != Tail::Clean {
            self.fix_tail()?;
        }
        let id = self.tree.generate_id();
        let parent = match parent {
            ParentOf::Leaf => self.tree.leaf_id().map(str::to_string),
            ParentOf::Given(p) => p,
        };
        let ts = crate::date::now_iso();
        let mut text = build(&self.tree, &id, parent.as_deref(), &ts)?;
        text.push('\n');
        let entry = Entry::parse_line(text).map_err(|e| Error::Json(e.to_string()))?;
        self.persist(&entry)?;
        self.tree.commit(entry);
        Ok(id)
    }

    fn append_fields(
        &mut self,
        ty: &'static str,
        fields: &[(&'static str, Option<&str>)],
    ) -> Result<String> {
        self.append_with(ParentOf::Leaf, |_, id, parent, ts| {
            Ok(entry_line(ty, id, parent, ts, fields))
        })
    }

    /// Appends a message under the leaf.
    pub fn append_message(&mut self, message: &Json) -> Result<String> {
        self.append_fields("message", &[("message", Some(message.as_str()))])
    }

    /// Appends a `thinking_level_change` (`"off"`, `"low"`, `"high"`, ...) under the leaf;
    /// returns its id.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        self.append_fields(
            "thinking_level_change",
            &[("thinkingLevel", Some(Json::string(level).as_str()))],
        )
    }

    /// Appends a `model_change` under the leaf (the model the context reports from here
    /// on); returns its id.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        self.append_fields(
            "model_change",
            &[
                ("provider", Some(Json::string(provider).as_str())),
                ("modelId", Some(Json::string(model_id).as_str())),
            ],
        )
    }

    /// Spend outside a message; `note` is stored only when non-empty.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: &Json,
        note: Option<&str>,
    ) -> Result<String> {
        let note = note
            .filter(|n| !n.is_empty())
            .map(|n| Json::string(n).into_string());
        self.append_fields(
            "usage",
            &[
                ("kind", Some(Json::string(kind).as_str())),
                ("provider", Some(Json::string(provider).as_str())),
                ("model", Some(Json::string(model).as_str())),
                ("usage", Some(usage.as_str())),
                ("note", note.as_deref()),
            ],
        )
    }

    /// A compaction: `first_kept` `None` keeps nothing before it. Its `systemMessage` is the
    /// fold of the system messages in the context at the leaf.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept: Option<&str>,
        tokens_before: f64,
        details: Option<&Json>,
        from_hook: Option<bool>,
        usage: Option<&Json>,
    ) -> Result<String> {
        let summary = Json::string(summary).into_string();
        let first_kept = first_kept.map(|f| Json::string(f).into_string());
        let tokens = Json::parse(&crate::json::format_number(tokens_before))
            .unwrap_or(Json::null())
            .into_string();
        let details = details.map(|d| d.as_str().to_string());
        let usage = usage.map(|u| u.as_str().to_string());
        let from_hook = from_hook.map(|b| Json::bool(b).into_string());
        self.append_with(ParentOf::Leaf, move |tree, id, parent, ts| {
            let messages = context::build_context(tree, tree.leaf_arg()).messages;
            let sys = context::fold_system_messages(&messages).map(|s| {
                let ms = crate::date::parse_iso(ts)
                    .map(crate::json::format_number)
                    .unwrap_or_else(|| "null".into());
                with_field(Raw::new_unchecked(s.as_bytes()), "timestamp", Some(&ms))
            });
            let first = first_kept.unwrap_or_else(|| Json::string(id).into_string());
            Ok(entry_line(
                "compaction",
                id,
                parent,
                ts,
                &[
                    ("summary", Some(&summary)),
                    ("firstKeptEntryId", Some(&first)),
                    ("tokensBefore", Some(&tokens)),
                    ("details", details.as_deref()),
                    ("usage", usage.as_deref()),
                    ("fromHook", from_hook.as_deref()),
                    ("systemMessage", sys.as_deref()),
                ],
            ))
        })
    }

    /// Extension state: never in the model's context.
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<&Json>,
    ) -> Result<String> {
        self.append_fields(
            "custom",
            &[
                ("customType", Some(Json::string(custom_type).as_str())),
                ("data", data.map(Json::as_str)),
            ],
        )
    }

    /// An extension message that the model sees.
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: &Json,
        display: bool,
        details: Option<&Json>,
    ) -> Result<String> {
        self.append_fields(
            "custom_message",
            &[
                ("customType", Some(Json::string(custom_type).as_str())),
                ("content", Some(content.as_str())),
                ("display", Some(if display { "true" } else { "false" })),
                ("details", details.map(Json::as_str)),
            ],
        )
    }

    /// Sets (non-empty) or clears (`None` or empty) the label of an existing entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.tree.contains(target_id) {
            return Err(Error::EntryNotFound(target_id.to_string()));
        }
        let label = label.map(|l| Json::string(l).into_string());
        self.append_fields(
            "label",
            &[
                ("targetId", Some(Json::string(target_id).as_str())),
                ("label", label.as_deref()),
            ],
        )
    }

    /// Names the session: runs of CR/LF become one space, then the name is trimmed.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        self.append_fields(
            "session_info",
            &[("name", Some(Json::string(&sanitize_name(name)).as_str()))],
        )
    }

    /// A branch-local edit of an earlier model-visible entry: `None` drops it from the
    /// context, otherwise its content is replaced (`replacement` must hold string or array
    /// `content`).
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<&Json>,
    ) -> Result<String> {
        let replacement = match replacement {
            None => "null".to_string(),
            Some(r) => {
                let content = r.raw().get("content");
                match content {
                    Some(c)
                        if matches!(
                            c.kind(),
                            crate::json::Kind::String | crate::json::Kind::Array
                        ) =>
                    {
                        r.as_str().to_string()
                    }
                    _ => return Err(Error::BadReplacement),
                }
            }
        };
        let target = self
            .tree
            .get_entry(target_id)
            .ok_or_else(|| Error::EntryNotFound(target_id.to_string()))?;
        if !self
            .tree
            .get_branch(None)
            .iter()
            .any(|e| e.id() == Some(target_id))
        {
            return Err(Error::NotOnBranch(target_id.to_string()));
        }
        let role = match target.entry_type {
            EntryType::CustomMessage => "custom",
            EntryType::Message => match target.role() {
                Some(r @ ("user" | "assistant" | "toolResult")) => r,
                _ => return Err(Error::NotEditable(target_id.to_string())),
            },
            _ => return Err(Error::NotEditable(target_id.to_string())),
        };
        let replacement = if replacement != "null" && matches!(role, "assistant" | "toolResult") {
            let r = Raw::new_unchecked(replacement.as_bytes());
            match r
                .get("content")
                .filter(|c| c.kind() == crate::json::Kind::String)
            {
                Some(c) => format!(
                    "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}",
                    c.text()
                ),
                None => replacement,
            }
        } else {
            replacement
        };
        let target = Json::string(target_id).into_string();
        self.append_fields(
            "context_edit",
            &[
                ("targetId", Some(target.as_str())),
                ("replacement", Some(replacement.as_str())),
            ],
        )
    }

    /// Moves the leaf to `target` (or null) and appends a summary of the abandoned branch
    /// there; `fromId` is the old leaf (`"root"` when there was none).
    pub fn branch_with_summary(
        &mut self,
        target: Option<&str>,
        summary: &str,
        details: Option<&Json>,
        from_hook: Option<bool>,
        usage: Option<&Json>,
    ) -> Result<String> {
        if let Some(t) = target {
            if !self.tree.contains(t) {
                return Err(Error::EntryNotFound(t.to_string()));
            }
        }
        self.refresh()?;
        let from = Json::string(self.tree.leaf_id().unwrap_or("root")).into_string();
        match target {
            Some(t) => self.tree.branch(t)?,
            None => self.tree.reset_leaf(),
        }
        let summary = Json::string(summary).into_string();
        let details = details.map(|d| d.as_str().to_string());
        let usage = usage.map(|u| u.as_str().to_string());
        let from_hook = from_hook.map(|b| Json::bool(b).into_string());
        self.append_with(
            ParentOf::Given(target.map(str::to_string)),
            move |_, id, parent, ts| {
                Ok(entry_line(
                    "branch_summary",
                    id,
                    parent,
                    ts,
                    &[
                        ("fromId", Some(&from)),
                        ("summary", Some(&summary)),
                        ("details", details.as_deref()),
                        ("usage", usage.as_deref()),
                        ("fromHook", from_hook.as_deref()),
                    ],
                ))
            },
        )
    }

    /// Appends an entry given as a JSON object without id, parentId and timestamp (the
    /// command line's `append`). Known types go through their typed method, so the same
    /// validation and key order apply; other types keep their fields in the given order.
    pub fn append_json(&mut self, object: &str, parent: Option<Option<String>>) -> Result<String> {
        let canon = Json::parse(object)?;
        let raw = canon.raw();
        if raw.kind() != crate::json::Kind::Object {
            return Err(Error::NotAnEntry("an entry must be a JSON object".into()));
        }
        let ty = raw
            .get("type")
            .and_then(|t| t.as_str())
            .map(|t| t.into_owned())
            .ok_or_else(|| Error::NotAnEntry("the entry needs a string \"type\"".into()))?;
        if ty == "session" {
            return Err(Error::NotAnEntry(
                "a session header cannot be appended".into(),
            ));
        }
        if ty == "message" {
            // Pi writes a message entry only for a message object with a role.
            let m = raw
                .get("message")
                .filter(|m| m.kind() == crate::json::Kind::Object);
            if m.and_then(|m| m.get("role"))
                .and_then(|r| r.as_str())
                .is_none()
            {
                return Err(Error::NotAnEntry(
                    "a message entry needs a \"message\" object with a string \"role\"".into(),
                ));
            }
        }
        if let Some(p) = &parent {
            match p {
                Some(id) => self.tree.branch(id)?,
                None => self.tree.reset_leaf(),
            }
        }
        let s = |k: &str| raw.get(k).and_then(|v| v.as_str()).map(|v| v.into_owned());
        let j = |k: &str| {
            raw.get(k)
                .map(|v| Json::from_text_unchecked(v.text().to_string()))
        };
        match ty.as_str() {
            "label" => {
                let target = s("targetId").ok_or_else(|| {
                    Error::NotAnEntry("a label needs a string \"targetId\"".into())
                })?;
                let label = raw.get("label").filter(|l| !l.is_null());
                if let Some(l) = label {
                    if l.kind() != crate::json::Kind::String {
                        return Err(Error::NotAnEntry("\"label\" must be a string".into()));
                    }
                }
                return self
                    .append_label_change(&target, label.and_then(|l| l.as_str()).as_deref());
            }
            "session_info" => {
                let name = s("name").ok_or_else(|| {
                    Error::NotAnEntry("session_info needs a string \"name\"".into())
                })?;
                return self.append_session_info(&name);
            }
            "context_edit" => {
                let target = s("targetId").ok_or_else(|| {
                    Error::NotAnEntry("context_edit needs a string \"targetId\"".into())
                })?;
                let rep = raw.get("replacement").ok_or(Error::BadReplacement)?;
                let rep =
                    (!rep.is_null()).then(|| Json::from_text_unchecked(rep.text().to_string()));
                return self.append_context_edit(&target, rep.as_ref());
            }
            "compaction" => {
                let summary = s("summary").ok_or_else(|| {
                    Error::NotAnEntry("compaction needs a string \"summary\"".into())
                })?;
                let tokens = raw
                    .get("tokensBefore")
                    .and_then(|t| t.as_f64())
                    .ok_or_else(|| {
                        Error::NotAnEntry("compaction needs a number \"tokensBefore\"".into())
                    })?;
                let from_hook = raw.get("fromHook").map(|b| b.truthy());
                let first = s("firstKeptEntryId");
                if let Some(f) = &first {
                    if !self.tree.contains(f) {
                        return Err(Error::EntryNotFound(f.clone()));
                    }
                }
                return self.append_compaction(
                    &summary,
                    first.as_deref(),
                    tokens,
                    j("details").as_ref(),
                    from_hook,
                    j("usage").as_ref(),
                );
            }
            "branch_summary" if parent.is_none() => {
                let summary = s("summary").ok_or_else(|| {
                    Error::NotAnEntry("branch_summary needs a string \"summary\"".into())
                })?;
                let from_hook = raw.get("fromHook").map(|b| b.truthy());
                let leaf = self.tree.leaf_id().map(str::to_string);
                return self.branch_with_summary(
                    leaf.as_deref(),
                    &summary,
                    j("details").as_ref(),
                    from_hook,
                    j("usage").as_ref(),
                );
            }
            _ => {}
        }
        let order: &[&str] = match ty.as_str() {
            "message" => &["message"],
            "thinking_level_change" => &["thinkingLevel"],
            "model_change" => &["provider", "modelId"],
            "custom" => &["customType", "data"],
            "custom_message" => &["customType", "content", "display", "details"],
            "usage" => &["kind", "provider", "model", "usage", "note"],
            "branch_summary" => &["fromId", "summary", "details", "usage", "fromHook"],
            _ => &[],
        };
        let members = raw.members();
        for reserved in ["id", "parentId", "timestamp"] {
            if members.iter().any(|(k, _)| k == reserved) {
                return Err(Error::NotAnEntry(format!(
                    "\"{reserved}\" is filled in by sessiontree; leave it out"
                )));
            }
        }
        let mut fields: Vec<(String, Option<String>)> = order
            .iter()
            .map(|k| (k.to_string(), raw.get(k).map(|v| v.text().to_string())))
            .collect();
        for (k, v) in &members {
            if k != "type" && !order.contains(&k.as_ref()) {
                fields.push((k.to_string(), Some(v.text().to_string())));
            }
        }
        self.append_with(ParentOf::Leaf, move |_, id, parent, ts| {
            let f: Vec<(&str, Option<&str>)> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref()))
                .collect();
            let line = entry_line(&ty, id, parent, ts, &f);
            // Keys that are array indices would move in JavaScript: write the canonical form.
            Ok(canonicalize(line.as_bytes()).unwrap_or(line))
        })
    }
}

/// Runs of CR/LF become one space, then JavaScript's trim.
pub fn sanitize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            in_run = false;
            out.push(c);
        }
    }
    js_trim(&out).to_string()
}
