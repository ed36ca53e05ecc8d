//! `list_sessions` (the local listing merged with the archive's, when there is one), and
//! the listing the other tools resolve session ids with.

use crate::answer::{chars, one_line, Answer};
use crate::args::{fail, iso, minute, Args, ToolError};
use crate::Ctx;
use serde_json::{json, Map, Value};
use sessiontree::list::{self, ListOptions, SessionInfo};
use sessiontree_index::index::{self, Index};
use std::collections::{HashMap, HashSet};

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Every session under the agent dir, most recently active first: through the listing
/// index when it can be used (as `sessiontree ls --all`), else by reading every file.
pub fn sessions(ctx: &Ctx) -> Result<Vec<SessionInfo>, ToolError> {
    let sessions = ctx.sessions_dir();
    if !sessions.is_dir() {
        fail!(
            "there are no sessions yet: {} does not exist.",
            sessions.display()
        );
    }
    let files = list::all_files_stat(&ctx.cfg.agent_dir);
    let opts = ListOptions {
        reference_parity: false,
        with_text: false,
        threads: threads(),
    };
    let scope = index::all_scope(&sessions);
    let mut guard = ctx.state.index.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        match Index::open(&Index::default_path(&ctx.cfg.agent_dir)) {
            Ok(i) => *guard = Some(i),
            Err(e) => eprintln!("sessiontree mcp: index unavailable ({e}); reading every file"),
        }
    }
    if let Some(idx) = guard.as_mut() {
        // The rows `ls --all` keeps (read back whole while no session changed, else brought
        // up to date).
        let key = index::rows_key(None, &sessions);
        match index::listed_rows(idx, &files, None, &scope, &key, opts, &|_, _| {}) {
            Ok((l, _)) => return Ok(l.rows().iter().map(|r| r.to_info()).collect()),
            Err(e) => {
                eprintln!("sessiontree mcp: index not usable ({e}); reading every file");
                *guard = None;
            }
        }
    }
    drop(guard);
    let paths: Vec<_> = files.into_iter().map(|f| f.0).collect();
    Ok(list::finish(list::scan_files(&paths, opts, &|_| {}), opts))
}

/// The agent that wrote a session, for people and models.
pub fn agent(i: &SessionInfo) -> &'static str {
    agent_of(i.imported.as_deref())
}

/// The header's id as text.
pub fn id_text(i: &SessionInfo) -> String {
    id_text_of(&i.id)
}

/// A header id (JSON) as text.
pub fn id_text_of(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// One row of a listing, local or from the archive, before it is shown.
struct Row {
    modified_ms: f64,
    key: String,
    id: String,
    title: String,
    message_count: u64,
    agent: &'static str,
    cwd: String,
    /// The recorded cwd, unredacted, for the `cwd` argument.
    raw_cwd: String,
    fork: bool,
    json: Value,
    /// `owner@machine` for the text, with an archive.
    whence: Option<String>,
}

fn agent_of(imported: Option<&str>) -> &'static str {
    match imported {
        Some("claude-code") => "Claude Code",
        Some("codex") => "Codex",
        Some("gemini-cli") => "Gemini CLI",
        Some("opencode") => "OpenCode",
        Some("copilot-cli") => "GitHub Copilot CLI",
        Some(_) => "imported",
        None => "Pi",
    }
}

/// Per local session id, the machines whose archived copies it has.
type Archived = HashMap<String, Vec<String>>;

/// The archive's sessions as rows, one per owner and session (its newest copy, with every
/// machine that holds one), and per local session id the machines of its archived copies.
fn archive_rows(
    ctx: &Ctx,
    remote: &crate::remote::Remote,
    local_ids: &HashSet<String>,
) -> Result<(Vec<Row>, Archived), ToolError> {
    let listed = remote.with(crate::tools::LIST, sessiontree_archive::query::list_brief)?;
    // Newest first: the first copy of a session is the one shown.
    let mut groups: Vec<(String, String, Vec<&sessiontree_archive::query::Listed>)> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    for l in &listed {
        let k = (l.owner.clone(), l.session_id.clone());
        match at.get(&k) {
            Some(&i) => groups[i].2.push(l),
            None => {
                at.insert(k, groups.len());
                groups.push((l.owner.clone(), l.session_id.clone(), vec![l]));
            }
        }
    }
    let mut rows = Vec::new();
    let mut archived_local: HashMap<String, Vec<String>> = HashMap::new();
    for (owner, id, copies) in groups {
        let mut machines: Vec<String> = Vec::new();
        for c in &copies {
            if !machines.contains(&c.machine) {
                machines.push(c.machine.clone());
            }
        }
        if owner == remote.role() && local_ids.contains(&id) {
            archived_local.entry(id).or_default().extend(machines);
            continue;
        }
        let newest = copies[0];
        let info = &newest.info;
        let s = |k: &str| info.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let name = s("name");
        let first = s("firstMessage").unwrap_or_default();
        let title = one_line(&ctx.redact(name.as_deref().unwrap_or(&first)), 120);
        let raw_cwd = s("cwd").unwrap_or_default();
        let cwd = ctx.redact(&raw_cwd).into_owned();
        let count = info
            .get("messageCount")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let agent = agent_of(s("importedFrom").as_deref());
        let fork = info
            .get("parentSessionPath")
            .and_then(|p| p.as_str())
            .map(str::to_string);
        let created = s("created").and_then(|c| sessiontree::date::parse_iso(&c));
        rows.push(Row {
            modified_ms: newest.modified_ms,
            key: crate::page::key(&["archive", &owner, &id]),
            title: title.clone(),
            message_count: count,
            agent,
            cwd: cwd.clone(),
            raw_cwd,
            fork: fork.is_some(),
            whence: Some(format!("{owner}@{}", newest.machine)),
            json: json!({
                "id": id,
                "title": title,
                "name": name,
                "firstMessage": one_line(&ctx.redact(&first), 300),
                "cwd": cwd,
                "path": null,
                "created": iso(created),
                "modified": iso(Some(newest.modified_ms)),
                "messageCount": count,
                "agent": agent,
                "forkedFrom": fork,
                "local": false,
                "owner": owner,
                "machine": newest.machine,
                "machines": machines,
            }),
            id,
        });
    }
    Ok((rows, archived_local))
}

/// A hash of the arguments a cursor is only valid with.
fn args_hash(cwd: Option<&std::path::Path>, since: Option<&str>, query: Option<&str>) -> String {
    let c = cwd
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::page::key(&["list", &c, since.unwrap_or(""), query.unwrap_or("")])[..8].to_string()
}

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let tool = crate::tools::LIST;
    let a = Args::new(tool, a, &["cwd", "since", "query", "limit", "cursor"])?;
    let cwd = a.str("cwd")?.map(sessiontree::dirs::resolve);
    let since = a.date("since")?;
    let query = a.str("query")?.map(str::to_lowercase);
    let limit = a.limit("limit", 20, 200)?;
    // As given: an age ("7d") moves with the clock, the cursor stays valid.
    let hash = args_hash(cwd.as_deref(), a.str("since")?, query.as_deref());
    let cursor = a
        .str("cursor")?
        .map(|c| crate::page::Cursor::decode(tool, "l1", &hash, c))
        .transpose()?;
    let local = match (sessions(ctx), &ctx.cfg.archive) {
        (Ok(v), _) => v,
        // With an archive, no local sessions yet is an empty local side.
        (Err(_), Some(_)) => Vec::new(),
        (Err(e), None) => return Err(e),
    };
    let local_ids: HashSet<String> = local.iter().map(id_text).collect();
    let (remote_rows, archived) = match &ctx.cfg.archive {
        Some(r) => archive_rows(ctx, r, &local_ids)?,
        None => (Vec::new(), HashMap::new()),
    };
    let mut rows: Vec<Row> = Vec::with_capacity(local.len() + remote_rows.len());
    for i in &local {
        let id = id_text(i);
        let title = one_line(
            &ctx.redact(i.name.as_deref().unwrap_or(&i.first_message)),
            120,
        );
        let cwd = ctx.redact(&i.cwd).into_owned();
        let fork = i
            .parent_session_path
            .as_ref()
            .and_then(|p| p.as_str())
            .map(|p| p.to_string());
        let mut json = json!({
            "id": id,
            "title": title,
            "name": i.name,
            "firstMessage": one_line(&ctx.redact(&i.first_message), 300),
            "cwd": cwd,
            "path": i.path.to_string_lossy(),
            "created": iso(i.created_ms),
            "modified": iso(Some(i.modified_ms)),
            "messageCount": i.message_count,
            "agent": agent(i),
            "forkedFrom": fork,
        });
        let mut whence = None;
        if let Some(r) = &ctx.cfg.archive {
            let on = archived.get(&id).cloned().unwrap_or_default();
            json["local"] = json!(true);
            json["owner"] = json!(r.role());
            json["machine"] = json!(r.here());
            json["archivedOn"] = json!(on);
            whence = Some(format!("{}@{} (here)", r.role(), r.here()));
        }
        rows.push(Row {
            modified_ms: i.modified_ms,
            key: crate::page::key(&["local", &i.path.to_string_lossy()]),
            id,
            title,
            message_count: i.message_count,
            agent: agent(i),
            cwd,
            raw_cwd: i.cwd.clone(),
            fork: fork.is_some(),
            json,
            whence,
        });
    }
    rows.extend(remote_rows);
    if let Some(c) = &cwd {
        rows.retain(|r| list::cwd_matches(&r.raw_cwd, c));
    }
    if let Some(t) = since {
        rows.retain(|r| r.modified_ms >= t);
    }
    if let Some(q) = &query {
        rows.retain(|r| {
            r.title.to_lowercase().contains(q.as_str())
                || r.json["firstMessage"]
                    .as_str()
                    .is_some_and(|f| f.to_lowercase().contains(q.as_str()))
        });
    }
    rows.sort_by(|a, b| {
        crate::page::order((Some(a.modified_ms), &a.key), (Some(b.modified_ms), &b.key))
    });
    let matching = rows.len();
    if let Some(c) = &cursor {
        rows.retain(|r| c.admits(Some(r.modified_ms), &r.key));
    }
    let budget = ctx.cfg.budget;
    let mut text = String::new();
    let mut shown_rows = Vec::new();
    let mut shown = Vec::new();
    for r in rows.iter().take(limit) {
        let line = format!(
            "- {}  {}  {} msgs  {}  cwd {}{}{}\n  {}\n",
            r.id,
            minute(r.modified_ms),
            r.message_count,
            r.agent,
            one_line(&r.cwd, 200),
            if r.fork { "  (fork)" } else { "" },
            r.whence
                .as_deref()
                .map(|w| format!("  [{w}]"))
                .unwrap_or_default(),
            r.title,
        );
        if !shown_rows.is_empty() && chars(&text) + chars(&line) > budget.saturating_sub(300) {
            break;
        }
        text.push_str(&line);
        shown_rows.push(r.json.clone());
        shown.push((Some(r.modified_ms), r.key.clone()));
    }
    let n = shown_rows.len();
    let next = if n < rows.len() {
        crate::page::Cursor::after(cursor.as_ref(), &shown).map(|c| c.encode("l1", &hash))
    } else {
        None
    };
    let head = if matching == 0 {
        "No sessions match.".to_string()
    } else if cursor.is_some() && n == 0 {
        "No more sessions.".to_string()
    } else if cursor.is_some() {
        format!(
            "{matching} sessions match; {n} more after the previous page (most recently active first):"
        )
    } else if n < matching {
        format!(
            "{matching} sessions match; the {n} most recently active (narrow with cwd, since or query, or page on with the cursor):"
        )
    } else {
        format!(
            "{n} session{} (most recently active first):",
            if n == 1 { "" } else { "s" }
        )
    };
    let tail = match &next {
        Some(c) => format!("(more: call again with cursor \"{c}\")\n"),
        None => String::new(),
    };
    Ok(Answer {
        text: format!("{head}\n{text}{tail}"),
        structured: json!({
            "sessions": shown_rows,
            "matching": matching,
            "shown": n,
            "nextCursor": next,
        }),
    })
}
