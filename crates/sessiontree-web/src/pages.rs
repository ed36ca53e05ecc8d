//! The pages, as HTML strings. Every session text goes through [`Html::text`]; ids in
//! links through [`Html::path_part`].

use crate::catalog::{valid_id, Catalog, Open};
use crate::html::Html;
use crate::remote::Remote;
use crate::Redactor;
use serde::Deserialize;
use sessiontree::json::{Kind, Raw};
use sessiontree::list::SessionInfo;
use sessiontree::{Entry, EntryType, LeafArg, SessionTree};
use sessiontree_archive::query::{Listed, Mode as ArchiveMode};
use sessiontree_export::layout::{self, NONE};
use sessiontree_index::search::{Hit, Mode, Query};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// Tree rows shown on each side of the focused row.
pub const TREE_WINDOW: usize = 150;
/// Entries of the branch shown before the focused one.
pub const BRANCH_WINDOW: usize = 100;
/// Context messages shown (the last ones before the entry).
pub const CONTEXT_WINDOW: usize = 60;
/// Characters of one text block shown; the rest is cut with a note.
pub const TEXT_CAP: usize = 20_000;
/// Columns of a tree row's indentation (deeper levels collapse into `N›`).
const INDENT: usize = 36;
/// Hits on the search page.
const HITS: usize = 100;

/// Query parameters of the list.
#[derive(Default, Deserialize)]
pub struct ListParams {
    pub q: Option<String>,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    /// A machine of the archive, or `here` (the served folder's files).
    pub machine: Option<String>,
    /// An owner (role) of the archive's copies.
    pub owner: Option<String>,
    pub part: Option<String>,
}

/// Query parameters of the search page.
#[derive(Default, Deserialize)]
pub struct SearchParams {
    pub q: Option<String>,
    pub mode: Option<String>,
}

/// Query parameters of a session page.
#[derive(Default, Deserialize)]
pub struct SessionParams {
    /// The tree row the tree window is centred on.
    pub row: Option<usize>,
    /// One past the last branch entry shown.
    pub end: Option<usize>,
    /// One past the last context message shown.
    pub ctx: Option<usize>,
    pub part: Option<String>,
}

fn shell(h: &mut Html, title: &str, live: Option<(&str, &str)>) {
    h.raw("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .raw("<meta name=\"referrer\" content=\"no-referrer\"><title>")
        .text(title)
        .raw(" · sessiontree</title><link rel=\"stylesheet\" href=\"/assets/style.css\">")
        .raw("<script src=\"/assets/app.js\" defer></script></head><body");
    if let Some((id, version)) = live {
        h.raw(" data-live=\"/api/version/")
            .path_part(id)
            .raw("\" data-version=\"")
            .plain(version)
            .raw("\"");
    }
    h.raw("><header class=\"top\"><a class=\"home\" href=\"/\">sessiontree</a>")
        .raw("<form class=\"topsearch\" action=\"/search\" method=\"get\" role=\"search\">")
        .raw("<input type=\"search\" name=\"q\" placeholder=\"search every session\" aria-label=\"search every session\">")
        .raw("</form></header>\n<main id=\"main\">");
}

fn end(h: &mut Html) {
    h.raw("</main></body></html>\n");
}

fn when(ms: f64) -> String {
    if ms.is_finite() && ms.abs() <= 8.64e15 {
        let iso = sessiontree::date::iso_from_ms(ms as i64);
        format!("{} {}", &iso[..10], &iso[11..16])
    } else {
        "-".into()
    }
}

/// At most `n` characters of `s`, whitespace folded, with `…` when cut.
fn cut_chars(s: &str, n: usize) -> String {
    let mut out = String::new();
    let mut space = false;
    for (count, c) in s.chars().enumerate() {
        if count >= n {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            if !space && !out.is_empty() {
                out.push(' ');
            }
            space = true;
        } else if !c.is_control() {
            out.push(c);
            space = false;
        }
    }
    out
}

fn agent_key(imported: Option<&str>) -> &'static str {
    match imported {
        Some("claude-code") => "claude-code",
        Some("codex") => "codex",
        Some("gemini-cli") => "gemini-cli",
        Some("opencode") => "opencode",
        Some("copilot-cli") => "copilot-cli",
        Some(_) => "imported",
        None => "pi",
    }
}

fn agent_name(key: &str) -> &'static str {
    match key {
        "claude-code" => "Claude Code",
        "codex" => "Codex",
        "gemini-cli" => "Gemini CLI",
        "opencode" => "OpenCode",
        "copilot-cli" => "GitHub Copilot CLI",
        "imported" => "imported",
        _ => "Pi",
    }
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A date filter's bound: `YYYY-MM-DD` (whole days: `until` includes its day) or an ISO
/// date-time.
fn day_ms(s: &str, until: bool) -> Option<f64> {
    let t = sessiontree::date::parse_iso(s)?;
    let whole_day = s.len() == 10;
    Some(if until && whole_day { t + 8.64e7 } else { t })
}

/// A snippet with its matches marked: the snippet is redacted whole first; when that
/// changes it, it is shown without marks (the offsets would no longer fit).
fn snippet(h: &mut Html, text: &str, highlights: &[(usize, usize)]) {
    let red = (h.redactor())(text);
    h.raw("<div class=\"snippet\">");
    if red != text {
        h.plain(&red);
    } else {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let byte = |ci: usize| chars.get(ci).map(|c| c.0).unwrap_or(text.len());
        let mut at = 0;
        for &(s, e) in highlights {
            let (s, e) = (byte(s), byte(e));
            if s < at || e < s {
                continue;
            }
            h.plain(&text[at..s])
                .raw("<mark>")
                .plain(&text[s..e])
                .raw("</mark>");
            at = e;
        }
        h.plain(&text[at..]);
    }
    h.raw("</div>");
}

/// What a page reads: the served folder, the archive (with `--archive`), and whether the
/// client is still there (a search stops when it went away).
pub struct Sources<'a> {
    pub cat: &'a Catalog,
    pub remote: Option<&'a Remote>,
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// Archive hits asked for by the list's search as you type (one per session is kept).
const ARCHIVE_LIST_HITS: usize = 1000;

/// One row of the list: a local session, or a copy in the archive.
struct Row<'a> {
    /// A plain session id (the row links to it), else None.
    id: Option<&'a str>,
    title: &'a str,
    cwd: &'a str,
    modified_ms: f64,
    messages: u64,
    agent: &'static str,
    fork: bool,
    /// The archive's owner and machine; None: a file of the served folder.
    from: Option<(&'a str, &'a str)>,
    /// The local file (for the search).
    path: Option<&'a std::path::Path>,
}

/// A row's newest hit: where it links and what the list shows of it.
struct ListHit {
    entry_id: String,
    snippet: String,
    highlights: Vec<(usize, usize)>,
    ts_ms: f64,
}

impl ListHit {
    fn local(h: Hit) -> ListHit {
        let ts_ms = h
            .ts_ms
            .or_else(|| {
                h.timestamp
                    .as_deref()
                    .and_then(sessiontree::date::parse_iso)
            })
            .unwrap_or(f64::NEG_INFINITY);
        ListHit {
            entry_id: h.entry_id,
            snippet: h.snippet,
            highlights: h.highlights,
            ts_ms,
        }
    }
}

/// The machine filter's value for the served folder's own files.
const HERE: &str = "here";

fn local_row(i: &SessionInfo) -> Row<'_> {
    Row {
        id: i.id.as_str().filter(|id| valid_id(id)),
        title: i.name.as_deref().unwrap_or(&i.first_message),
        cwd: &i.cwd,
        modified_ms: i.modified_ms,
        messages: i.message_count,
        agent: agent_key(i.imported.as_deref()),
        fork: i.is_fork(),
        from: None,
        path: Some(&i.path),
    }
}

fn archive_row(l: &Listed) -> Row<'_> {
    let s = |k: &str| l.info.get(k).and_then(|v| v.as_str());
    Row {
        id: Some(l.session_id.as_str()).filter(|id| valid_id(id)),
        title: s("name")
            .filter(|n| !n.trim().is_empty())
            .or(s("firstMessage"))
            .unwrap_or(""),
        cwd: s("cwd").unwrap_or(""),
        modified_ms: l.modified_ms,
        messages: l
            .info
            .get("messageCount")
            .and_then(|v| v.as_u64())
            .unwrap_or(0),
        agent: agent_key(s("importedFrom")),
        fork: l
            .info
            .get("parentSessionPath")
            .is_some_and(|p| !p.is_null()),
        from: Some((l.owner.as_str(), l.machine.as_str())),
        path: None,
    }
}

/// A window of an archive hit's text around its first match, with every word of the
/// query marked (character offsets): the text is redacted whole before it is cut.
fn archive_snippet(
    redact: &Redactor,
    text: &str,
    q: &str,
    mode: Mode,
) -> (String, Vec<(usize, usize)>) {
    let red = redact(text);
    let chars: Vec<char> = red
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    let low: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let words: Vec<Vec<char>> = match mode {
        Mode::Words => q
            .split_whitespace()
            .map(|w| {
                w.chars()
                    .map(|c| c.to_lowercase().next().unwrap_or(c))
                    .collect()
            })
            .collect(),
        Mode::Phrase => vec![q
            .chars()
            .map(|c| c.to_lowercase().next().unwrap_or(c))
            .collect()],
        Mode::Regex => vec![],
    };
    let find = |w: &[char], from: usize| -> Option<usize> {
        if w.is_empty() || w.len() > low.len() {
            return None;
        }
        (from..=low.len() - w.len()).find(|&i| low[i..i + w.len()] == *w)
    };
    let first = words.iter().filter_map(|w| find(w, 0)).min().unwrap_or(0);
    let start = first.saturating_sub(60);
    let end = (first + 140).min(chars.len());
    let mut marks: Vec<(usize, usize)> = Vec::new();
    for w in &words {
        let mut at = start;
        while let Some(i) = find(w, at) {
            if i + w.len() > end {
                break;
            }
            marks.push((i - start, i - start + w.len()));
            at = i + w.len();
        }
    }
    marks.sort_unstable();
    let mut kept: Vec<(usize, usize)> = Vec::new();
    for m in marks {
        if kept.last().is_none_or(|l| m.0 >= l.1) {
            kept.push(m);
        }
    }
    let mut s = String::new();
    if start > 0 {
        s.push('…');
        for m in &mut kept {
            *m = (m.0 + 1, m.1 + 1);
        }
    }
    s.extend(&chars[start..end]);
    if end < chars.len() {
        s.push('…');
    }
    (s, kept)
}

/// `owner@machine`, marked as the archive's.
fn from_badge(h: &mut Html, owner: &str, machine: &str) {
    h.raw("<span class=\"from\" title=\"in the archive\"><span class=\"owner\">")
        .text(owner)
        .raw("</span>@<span class=\"machine\">")
        .text(machine)
        .raw("</span></span>");
}

/// A listing of the archive or, when it cannot be read, a problem line for the page.
fn archive_listing(remote: Option<&Remote>, problems: &mut Vec<String>) -> Arc<Vec<Listed>> {
    match remote.map(|r| r.listing()) {
        Some(Ok(l)) => l,
        Some(Err(e)) => {
            problems.push(format!("the archive could not be read: {e}"));
            Arc::new(Vec::new())
        }
        None => Arc::new(Vec::new()),
    }
}

/// `/`: every session newest first, filtered; with `q`, the sessions with a hit. With an
/// archive, its copies too, with their owner and machine (filters for both).
pub fn list(src: &Sources, p: &ListParams, redact: &Redactor) -> Result<String, String> {
    let cat = src.cat;
    let files = cat.files();
    let local = cat.listing_of(&files);
    let mut problems: Vec<String> = Vec::new();
    let archived = archive_listing(src.remote, &mut problems);
    let mut all: Vec<Row> = local.iter().map(local_row).collect();
    all.extend(archived.iter().map(archive_row));
    all.sort_by(|a, b| b.modified_ms.total_cmp(&a.modified_ms));
    let count_of = |key: &dyn Fn(&Row) -> Option<String>| {
        let mut count: HashMap<String, usize> = HashMap::new();
        for r in &all {
            if let Some(k) = key(r) {
                *count.entry(k).or_default() += 1;
            }
        }
        let mut v: Vec<(String, usize)> = count.into_iter().collect();
        v.sort();
        v
    };
    let projects = count_of(&|r| Some(r.cwd.to_string()));
    let machines = count_of(&|r| r.from.map(|f| f.1.to_string()));
    let owners = count_of(&|r| r.from.map(|f| f.0.to_string()));
    let project = nonempty(&p.project);
    let agent = nonempty(&p.agent);
    let machine = nonempty(&p.machine);
    let owner = nonempty(&p.owner);
    let mut bound = |v: &Option<String>, until: bool, what: &str| {
        nonempty(v).and_then(|s| {
            let t = day_ms(s, until);
            if t.is_none() {
                problems.push(format!("{what}: not a date: {s} (use 2025-01-31)"));
            }
            t
        })
    };
    let since = bound(&p.since, false, "since");
    let until = bound(&p.until, true, "until");
    let me = src.remote.map(|r| r.role());
    let shown: Vec<&Row> = all
        .iter()
        .filter(|r| project.is_none_or(|c| r.cwd == c))
        .filter(|r| agent.is_none_or(|a| r.agent == a))
        .filter(|r| since.is_none_or(|t| r.modified_ms >= t))
        .filter(|r| until.is_none_or(|t| r.modified_ms < t))
        .filter(|r| {
            machine.is_none_or(|m| match r.from {
                Some((_, rm)) => rm == m,
                None => m == HERE,
            })
        })
        .filter(|r| {
            owner.is_none_or(|o| match r.from {
                Some((ro, _)) => ro == o,
                // The served folder's sessions are the user's own.
                None => me == Some(o),
            })
        })
        .collect();
    let q = nonempty(&p.q);
    // With a query: the rows of `shown` with a hit, newest hit first.
    let hits: Option<Vec<(&Row, ListHit)>> = match q {
        None => None,
        Some(q) => {
            let wanted: HashSet<&std::path::Path> = shown.iter().filter_map(|r| r.path).collect();
            let subset: Vec<_> = files
                .iter()
                .filter(|f| wanted.contains(f.0.as_path()))
                .cloned()
                .collect();
            let by_path: HashMap<PathBuf, &Row> = shown
                .iter()
                .filter_map(|r| r.path.map(|p| (p.to_path_buf(), *r)))
                .collect();
            let query = Query {
                text: q.to_string(),
                mode: Mode::Words,
                cwd: None,
                role: None,
                since_ms: None,
                until_ms: None,
                limit: usize::MAX,
            };
            let found = cat.search_sessions(&subset, &query, src.stop)?;
            if (src.stop)() {
                return Err("the request went away".into());
            }
            let mut v: Vec<(&Row, ListHit)> = found
                .into_iter()
                .filter_map(|h| {
                    let r = by_path.get(&PathBuf::from(&h.path))?;
                    Some((*r, ListHit::local(h)))
                })
                .collect();
            let remote_rows = shown.iter().any(|r| r.from.is_some());
            if let (Some(remote), true) = (src.remote, remote_rows) {
                match remote.search(q, ArchiveMode::Words, ARCHIVE_LIST_HITS) {
                    Ok(found) => {
                        // The newest hit of each archived session (hits come newest first).
                        let mut seen: HashSet<(&str, &str)> = HashSet::new();
                        for ah in &found {
                            if !seen.insert((ah.session_id.as_str(), ah.owner.as_str())) {
                                continue;
                            }
                            let (snip, marks) = archive_snippet(redact, &ah.text, q, Mode::Words);
                            for r in shown.iter().filter(|r| {
                                r.from.is_some_and(|(o, m)| {
                                    o == ah.owner && ah.machines.iter().any(|x| x == m)
                                }) && r.id == Some(ah.session_id.as_str())
                            }) {
                                v.push((
                                    *r,
                                    ListHit {
                                        entry_id: ah.entry_id.clone(),
                                        snippet: snip.clone(),
                                        highlights: marks.clone(),
                                        ts_ms: ah.ts_ms.unwrap_or(f64::NEG_INFINITY),
                                    },
                                ));
                            }
                        }
                    }
                    Err(e) => problems.push(format!("the archive could not be searched: {e}")),
                }
            }
            // Stable: local hits keep the search's order among equal times.
            v.sort_by(|a, b| b.1.ts_ms.total_cmp(&a.1.ts_ms));
            Some(v)
        }
    };
    let mut h = Html::new(redact);
    let fragment = p.part.as_deref() == Some("list");
    if fragment {
        h.raw("<!doctype html>\n<html><body>");
    } else {
        shell(&mut h, "sessions", None);
        h.raw("<form id=\"filters\" class=\"filters\" action=\"/\" method=\"get\">")
            .raw("<input id=\"q\" type=\"search\" name=\"q\" autocomplete=\"off\" autofocus placeholder=\"search as you type (every word in one entry)\" aria-label=\"search\" value=\"")
            .plain(q.unwrap_or(""))
            .raw("\">");
        let select = |h: &mut Html,
                      name: &'static str,
                      every: &'static str,
                      first: Option<(&'static str, &'static str)>,
                      values: &[(String, usize)],
                      chosen: Option<&str>| {
            h.raw("<select name=\"")
                .raw(name)
                .raw("\" id=\"")
                .raw(name)
                .raw("\" aria-label=\"")
                .raw(name)
                .raw("\"><option value=\"\">")
                .raw(every)
                .raw("</option>");
            if let Some((v, label)) = first {
                h.raw("<option value=\"").raw(v).raw("\"");
                if chosen == Some(v) {
                    h.raw(" selected");
                }
                h.raw(">").raw(label).raw("</option>");
            }
            for (c, n) in values {
                h.raw("<option value=\"").text(c).raw("\"");
                if chosen == Some(c.as_str()) {
                    h.raw(" selected");
                }
                h.raw(">")
                    .text(c)
                    .raw(" (")
                    .num(*n as u64)
                    .raw(")</option>");
            }
            h.raw("</select>");
        };
        select(&mut h, "project", "every project", None, &projects, project);
        h.raw("<select name=\"agent\" id=\"agent\" aria-label=\"agent\"><option value=\"\">every agent</option>");
        for a in [
            "pi",
            "claude-code",
            "codex",
            "gemini-cli",
            "opencode",
            "copilot-cli",
        ] {
            h.raw("<option value=\"").plain(a).raw("\"");
            if agent == Some(a) {
                h.raw(" selected");
            }
            h.raw(">").plain(agent_name(a)).raw("</option>");
        }
        h.raw("</select>");
        if src.remote.is_some() {
            select(
                &mut h,
                "machine",
                "every machine",
                Some((HERE, "this folder")),
                &machines,
                machine,
            );
            select(&mut h, "owner", "every owner", None, &owners, owner);
        }
        h.raw("<label>from <input type=\"date\" name=\"since\" id=\"since\" value=\"")
            .plain(nonempty(&p.since).unwrap_or(""))
            .raw("\"></label><label>to <input type=\"date\" name=\"until\" id=\"until\" value=\"")
            .plain(nonempty(&p.until).unwrap_or(""))
            .raw("\"></label><noscript><button>filter</button></noscript></form>");
    }
    h.raw("<div id=\"sessions\">");
    for pr in &problems {
        h.raw("<p class=\"problem\">").text(pr).raw("</p>");
    }
    let total = hits.as_ref().map(|v| v.len()).unwrap_or(shown.len());
    h.raw("<p class=\"count\" id=\"count\">").num(total as u64);
    match q {
        Some(q) => {
            h.raw(if total == 1 {
                " session matches "
            } else {
                " sessions match "
            })
            .raw("<q>")
            .plain(q)
            .raw("</q> · <a href=\"/search?q=")
            .path_part(q)
            .raw("\">every hit</a>");
        }
        None => {
            h.raw(if total == 1 { " session" } else { " sessions" });
            if total != all.len() {
                h.raw(" of ").num(all.len() as u64);
            }
        }
    }
    h.raw("</p><ol class=\"sessions\">");
    let row = |h: &mut Html, r: &Row, hit: Option<&ListHit>| {
        h.raw("<li class=\"session\"");
        if let Some(id) = r.id {
            h.raw(" data-id=\"").path_part(id).raw("\"");
        }
        if let Some((o, m)) = r.from {
            h.raw(" data-owner=\"")
                .text(o)
                .raw("\" data-machine=\"")
                .text(m)
                .raw("\"");
        }
        h.raw(">");
        match r.id {
            Some(id) => {
                h.raw("<a class=\"open\" href=\"/s/").path_part(id);
                if let Some(hit) = hit {
                    h.raw("/").path_part(&hit.entry_id);
                }
                h.raw("\">");
            }
            None => {
                h.raw("<span class=\"open\" title=\"no usable session id\">");
            }
        }
        h.raw("<span class=\"when\">")
            .plain(&when(r.modified_ms))
            .raw("</span> <span class=\"agent agent-")
            .plain(r.agent)
            .raw("\">")
            .plain(agent_name(r.agent))
            .raw("</span> <span class=\"title\">");
        if r.title.trim().is_empty() {
            h.raw("(no messages)");
        } else {
            h.text(&cut_chars(r.title, 160));
        }
        h.raw("</span>")
            .raw(if r.id.is_some() { "</a>" } else { "</span>" })
            .raw(" <span class=\"meta\">");
        if let Some((o, m)) = r.from {
            from_badge(h, o, m);
            h.raw(" · ");
        }
        h.num(r.messages)
            .raw(" msgs · <span class=\"cwd\">")
            .text(r.cwd)
            .raw("</span>")
            .raw(if r.fork { " · fork" } else { "" })
            .raw("</span>");
        if let Some(hit) = hit {
            snippet(h, &hit.snippet, &hit.highlights);
        }
        h.raw("</li>");
    };
    match &hits {
        Some(v) => {
            for (r, hit) in v {
                row(&mut h, r, Some(hit));
            }
        }
        None => {
            for r in &shown {
                row(&mut h, r, None);
            }
        }
    }
    h.raw("</ol></div>");
    if fragment {
        h.raw("</body></html>\n");
    } else {
        end(&mut h);
    }
    Ok(h.finish())
}

/// `/search?q=`: the hits of `sessiontree search`, newest first, each linking to its entry;
/// with an archive, then its hits, each with its owner and machines.
pub fn search(src: &Sources, p: &SearchParams, redact: &Redactor) -> Result<String, String> {
    let cat = src.cat;
    let q = nonempty(&p.q).unwrap_or("");
    let mode = match p.mode.as_deref() {
        Some("phrase") => Mode::Phrase,
        Some("regex") => Mode::Regex,
        _ => Mode::Words,
    };
    let mut h = Html::new(redact);
    shell(&mut h, if q.is_empty() { "search" } else { q }, None);
    h.raw("<form class=\"filters\" action=\"/search\" method=\"get\"><input id=\"q\" type=\"search\" name=\"q\" aria-label=\"search\" value=\"")
        .plain(q)
        .raw("\"><select name=\"mode\" aria-label=\"match\">");
    for (v, label, m) in [
        ("words", "every word", Mode::Words),
        ("phrase", "phrase", Mode::Phrase),
        ("regex", "regular expression", Mode::Regex),
    ] {
        h.raw("<option value=\"").plain(v).raw("\"");
        if m == mode {
            h.raw(" selected");
        }
        h.raw(">").plain(label).raw("</option>");
    }
    h.raw("</select><button>search</button></form><div id=\"hits\">");
    if q.is_empty() {
        h.raw("<p class=\"count\">type words to search every session</p></div>");
        end(&mut h);
        return Ok(h.finish());
    }
    let query = Query {
        text: q.to_string(),
        mode,
        cwd: None,
        role: None,
        since_ms: None,
        until_ms: None,
        limit: HITS,
    };
    let hits = match cat.search(&query, src.stop) {
        Ok(v) => v,
        Err(e) => {
            h.raw("<p class=\"problem\">invalid query: ")
                .plain(&e)
                .raw("</p></div>");
            end(&mut h);
            return Ok(h.finish());
        }
    };
    if (src.stop)() {
        // Nobody is waiting for the page: the listing and the archive are not asked.
        return Err("the request went away".into());
    }
    let infos = cat.listing();
    let by_path: HashMap<&std::path::Path, &SessionInfo> =
        infos.iter().map(|i| (i.path.as_path(), i)).collect();
    h.raw("<p class=\"count\" id=\"count\">")
        .num(hits.len() as u64);
    h.raw(if hits.len() == 1 { " hit" } else { " hits" });
    if hits.len() == HITS {
        h.raw(" (the newest ").num(HITS as u64).raw(")");
    }
    h.raw("</p><ol class=\"hits\">");
    for hit in &hits {
        let info = by_path.get(std::path::Path::new(&hit.path));
        let sid = info.and_then(|i| i.id.as_str()).filter(|id| valid_id(id));
        let title = match info {
            Some(i) => i.name.as_deref().unwrap_or(&i.first_message),
            None => &hit.path,
        };
        let when = hit
            .timestamp
            .as_deref()
            .map(|t| &t[..16.min(t.len())])
            .unwrap_or("-");
        hit_row(&mut h, sid, &hit.entry_id, when, &hit.role, title, None);
        if !hit.on_branch {
            h.raw(" <span class=\"abandoned\">abandoned branch</span>");
        }
        snippet(&mut h, &hit.snippet, &hit.highlights);
        h.raw("</li>");
    }
    h.raw("</ol>");
    if let Some(remote) = src.remote {
        let amode = match mode {
            Mode::Words => ArchiveMode::Words,
            Mode::Phrase => ArchiveMode::Phrase,
            Mode::Regex => ArchiveMode::Regex,
        };
        h.raw("<h2>In the archive</h2>");
        match remote.search(q, amode, HITS) {
            Ok(found) => {
                let listing = remote.listing().unwrap_or_default();
                let titles: HashMap<(&str, &str), &str> = listing
                    .iter()
                    .map(|x| {
                        (
                            (x.session_id.as_str(), x.owner.as_str()),
                            archive_row(x).title,
                        )
                    })
                    .collect();
                h.raw("<p class=\"count\" id=\"archive-count\">")
                    .num(found.len() as u64)
                    .raw(if found.len() == 1 { " hit" } else { " hits" })
                    .raw("</p><ol class=\"hits archive\">");
                for ah in &found {
                    let sid = Some(ah.session_id.as_str()).filter(|id| valid_id(id));
                    let when = ah.ts_ms.map(when).unwrap_or_else(|| "-".into());
                    let title = titles
                        .get(&(ah.session_id.as_str(), ah.owner.as_str()))
                        .copied()
                        .unwrap_or(&ah.session_id);
                    hit_row(
                        &mut h,
                        sid,
                        &ah.entry_id,
                        &when,
                        &ah.role,
                        title,
                        Some((&ah.owner, &ah.machines.join(", "))),
                    );
                    let (snip, marks) = archive_snippet(redact, &ah.text, q, mode);
                    snippet(&mut h, &snip, &marks);
                    h.raw("</li>");
                }
                h.raw("</ol>");
            }
            Err(e) => {
                h.raw("<p class=\"problem\">the archive could not be searched: ")
                    .text(&e)
                    .raw("</p>");
            }
        }
    }
    h.raw("</div>");
    end(&mut h);
    Ok(h.finish())
}

/// The start of a hit's row (its `<li>` is closed by the caller after the snippet).
fn hit_row(
    h: &mut Html,
    sid: Option<&str>,
    entry_id: &str,
    when: &str,
    role: &str,
    title: &str,
    from: Option<(&str, &str)>,
) {
    h.raw("<li class=\"hit\">");
    match sid {
        Some(sid) => {
            h.raw("<a class=\"open\" href=\"/s/")
                .path_part(sid)
                .raw("/")
                .path_part(entry_id)
                .raw("\">");
        }
        None => {
            h.raw("<span class=\"open\">");
        }
    }
    h.raw("<span class=\"when\">")
        .plain(when)
        .raw("</span> <span class=\"role\">")
        .text(role)
        .raw("</span> <span class=\"title\">")
        .text(&cut_chars(title, 120))
        .raw("</span>")
        .raw(if sid.is_some() { "</a>" } else { "</span>" });
    if let Some((o, m)) = from {
        h.raw(" ");
        from_badge(h, o, m);
    }
}

/// A one-line description of an entry for its tree row.
fn row_text(e: &Entry) -> (String, String) {
    let s = |r: Option<Raw<'_>>| r.map(|v| v.js_string()).unwrap_or_default();
    match e.entry_type {
        EntryType::Message => {
            let role = e.role().unwrap_or("message").to_string();
            let text = match e.role() {
                Some("bashExecution") => format!("$ {}", s(e.message_field("command"))),
                Some("toolResult") => format!(
                    "{}: {}",
                    s(e.message_field("toolName")),
                    sessiontree::session::message_text(e, " ")
                ),
                Some("assistant") => {
                    let calls: Vec<String> = e
                        .message_field("content")
                        .map(|c| c.elements())
                        .unwrap_or_default()
                        .iter()
                        .filter(|b| {
                            b.get("type").and_then(|t| t.as_str()).as_deref() == Some("toolCall")
                        })
                        .map(|b| s(b.get("name")))
                        .collect();
                    let text = sessiontree::session::message_text(e, " ");
                    match (text.is_empty(), calls.is_empty()) {
                        (_, true) => text,
                        (true, false) => format!("→ {}", calls.join(", ")),
                        (false, false) => format!("{text} → {}", calls.join(", ")),
                    }
                }
                _ => sessiontree::session::message_text(e, " "),
            };
            (role, text)
        }
        EntryType::CustomMessage => (
            "custom_message".into(),
            sessiontree::session::message_text(e, " "),
        ),
        EntryType::Compaction | EntryType::BranchSummary => {
            (e.entry_type.name().to_string(), s(e.field("summary")))
        }
        EntryType::ModelChange => (
            "model_change".into(),
            format!("{}/{}", s(e.field("provider")), s(e.field("modelId"))),
        ),
        EntryType::ThinkingLevelChange => {
            ("thinking_level_change".into(), s(e.field("thinkingLevel")))
        }
        EntryType::Label => (
            "label".into(),
            format!(
                "{} ← {}",
                e.str_field("targetId").unwrap_or_default(),
                e.field("label")
                    .map(|v| v.js_string())
                    .unwrap_or_else(|| "(cleared)".into())
            ),
        ),
        EntryType::SessionInfo => ("session_info".into(), s(e.field("name"))),
        ref t => (
            t.name().to_string(),
            e.str_field("customType")
                .map(|c| c.into_owned())
                .unwrap_or_default(),
        ),
    }
}

/// A text block, cut at [`TEXT_CAP`] characters.
fn text_block(h: &mut Html, class: &'static str, s: &str) {
    h.raw("<div class=\"").raw(class).raw("\">");
    match s.char_indices().nth(TEXT_CAP) {
        Some((cut, _)) => {
            h.text(&s[..cut])
                .raw("<span class=\"note\"> … ")
                .num(s[cut..].chars().count() as u64)
                .raw(" more characters (sessiontree entries shows them)</span>");
        }
        None => {
            h.text(s);
        }
    }
    h.raw("</div>");
}

fn content_blocks(h: &mut Html, content: Option<Raw<'_>>) {
    let Some(c) = content else {
        return;
    };
    if c.kind() == Kind::String {
        text_block(h, "text", &c.js_string());
        return;
    }
    for b in c.elements() {
        let ty = b
            .get("type")
            .and_then(|t| t.as_str())
            .map(|t| t.into_owned())
            .unwrap_or_default();
        let field = |k: &str| b.get(k).map(|v| v.js_string()).unwrap_or_default();
        match ty.as_str() {
            "text" => text_block(h, "text", &field("text")),
            "thinking" => {
                h.raw("<details class=\"thinking\"><summary>thinking</summary>");
                text_block(h, "text", &field("thinking"));
                h.raw("</details>");
            }
            "toolCall" => {
                h.raw("<details class=\"call\"><summary>→ ")
                    .text(&field("name"))
                    .raw("</summary>");
                text_block(
                    h,
                    "code",
                    b.get("arguments").map(|a| a.text()).unwrap_or(""),
                );
                h.raw("</details>");
            }
            "image" => {
                h.raw("<span class=\"note\">[image ")
                    .text(&field("mimeType"))
                    .raw("]</span>");
            }
            other => {
                h.raw("<span class=\"note\">[").text(other).raw("]</span>");
            }
        }
    }
}

/// A message (an entry's `message`, or one of a context's): its blocks, tool results and
/// bash runs folded.
fn message(h: &mut Html, m: Raw<'_>) {
    let role = m
        .get("role")
        .and_then(|r| r.as_str())
        .map(|r| r.into_owned())
        .unwrap_or_default();
    let field = |k: &str| m.get(k).map(|v| v.js_string()).unwrap_or_default();
    match role.as_str() {
        "toolResult" => {
            let error = m.get("isError").is_some_and(|e| e.truthy());
            h.raw(if error {
                "<details class=\"result error\"><summary>← "
            } else {
                "<details class=\"result\"><summary>← "
            })
            .text(&field("toolName"))
            .raw(if error { " failed" } else { " result" })
            .raw("</summary>");
            content_blocks(h, m.get("content"));
            h.raw("</details>");
        }
        "bashExecution" => {
            h.raw("<details class=\"bash\"><summary>$ ")
                .text(&field("command"))
                .raw("</summary>");
            text_block(h, "code", &field("output"));
            if let Some(code) = m.get("exitCode").filter(|c| !c.is_null()) {
                h.raw("<span class=\"note\">exit ")
                    .text(&code.js_string())
                    .raw("</span>");
            }
            h.raw("</details>");
        }
        "branchSummary" | "compactionSummary" => {
            h.raw("<div class=\"summary\">")
                .raw(if role == "branchSummary" {
                    "branch summary"
                } else {
                    "compaction summary"
                })
                .raw("</div>");
            text_block(h, "text", &field("summary"));
        }
        _ => content_blocks(h, m.get("content")),
    }
}

fn entry_body(h: &mut Html, e: &Entry) {
    let s = |r: Option<Raw<'_>>| r.map(|v| v.js_string()).unwrap_or_default();
    match e.entry_type {
        EntryType::Message => {
            if let Some(m) = e.message() {
                message(h, m);
            }
        }
        EntryType::CustomMessage => content_blocks(h, e.field("content")),
        EntryType::Compaction => {
            h.raw("<div class=\"summary\">compaction: what came before, as the model saw it from here</div>");
            text_block(h, "text", &s(e.field("summary")));
        }
        EntryType::BranchSummary => {
            h.raw("<div class=\"summary\">summary of the branch left at ")
                .text(&e.str_field("fromId").unwrap_or_default())
                .raw("</div>");
            text_block(h, "text", &s(e.field("summary")));
        }
        _ => {
            let (_, t) = row_text(e);
            h.raw("<div class=\"meta\">")
                .text(&cut_chars(&t, 400))
                .raw("</div>");
        }
    }
}

fn kind_class(kind: &str) -> &'static str {
    match kind {
        "user" => "k-user",
        "assistant" => "k-assistant",
        "toolResult" => "k-tool",
        "bashExecution" => "k-bash",
        "compaction" => "k-compaction",
        "branch_summary" => "k-branch",
        "label" | "session_info" | "model_change" | "thinking_level_change" => "k-meta",
        _ => "k-other",
    }
}

fn label_of(t: &SessionTree, id: &str) -> Option<String> {
    t.get_label(id).map(|l| Raw::trusted(&l.label).js_string())
}

fn entry_link(h: &mut Html, sid: &str, e: &Entry) {
    h.raw("/s/").path_part(sid);
    if let Some(id) = e.id() {
        h.raw("/").path_part(id);
    }
}

/// `/s/<id>` and `/s/<id>/<entry>`: the tree around the entry (default the leaf), the
/// branch up to it, and at an entry what the model saw there. `None`: no such entry.
pub fn session(
    o: &Open,
    entry: Option<&str>,
    p: &SessionParams,
    version: &str,
    redact: &Redactor,
) -> Option<String> {
    let t = o.tree();
    let sid = t.session_id().to_string();
    if let Some(e) = entry {
        if !t.contains(e) {
            return None;
        }
    }
    let leaf = t.leaf_id();
    let focus = entry.or(leaf);
    let lay = &o.layout;
    let on_focus = layout::on_path(t, focus);
    let on_leaf = if entry.is_some() {
        layout::on_path(t, None)
    } else {
        on_focus.clone()
    };
    let focus_idx = focus
        .and_then(|f| t.get_entry(f))
        .and_then(|e| layout::index_of(t, e));
    let title = t
        .name()
        .or_else(|| {
            t.entries()
                .iter()
                .find(|e| e.is_role("user"))
                .map(|e| sessiontree::session::message_text(e, " "))
        })
        .unwrap_or_else(|| sid.clone());
    let mut h = Html::new(redact);
    let fragment = p.part.as_deref() == Some("main");
    if fragment {
        h.raw("<!doctype html>\n<html><body><main id=\"main\">");
    } else {
        shell(&mut h, &cut_chars(&title, 80), Some((&sid, version)));
    }
    h.raw("<section class=\"head\"><h1>")
        .text(&cut_chars(&title, 200))
        .raw("</h1><p class=\"meta\">")
        .plain(&sid)
        .raw(" · <span class=\"cwd\">")
        .text(&t.header().cwd().unwrap_or_default())
        .raw("</span> · ")
        .num(t.entries().len() as u64)
        .raw(" entries");
    match &o.from {
        Some((owner, machine)) => {
            h.raw(" · ");
            from_badge(&mut h, owner, machine);
        }
        None => {
            if let Some(name) = o.path.file_name() {
                h.raw(" · ").text(&name.to_string_lossy());
            }
        }
    }
    h.raw("</p>");
    if let (Some(e), Some(fi)) = (entry, focus_idx) {
        h.raw("<p class=\"at\">at entry <a class=\"permalink\" href=\"/s/")
            .path_part(&sid)
            .raw("/")
            .path_part(e)
            .raw("\">")
            .text(e)
            .raw("</a>");
        if !on_leaf[fi as usize] {
            h.raw(" · <span class=\"abandoned\">abandoned branch</span> (not on the path to the leaf)");
        }
        h.raw(" · <a href=\"/s/")
            .path_part(&sid)
            .raw("\">current leaf</a></p>");
    }
    h.raw("</section><div class=\"panes\"><nav class=\"tree\" id=\"tree\" aria-label=\"tree\">");
    // The tree window.
    let rows = &lay.rows;
    let n = rows.len();
    let focus_row = focus_idx
        .map(|i| lay.row_of[i as usize])
        .filter(|&r| r != NONE);
    let centre = p
        .row
        .unwrap_or(focus_row.unwrap_or(0) as usize)
        .min(n.saturating_sub(1));
    let lo = centre.saturating_sub(TREE_WINDOW);
    let hi = (centre + TREE_WINDOW).min(n);
    let page_link = |h: &mut Html, row: usize, label: &'static str, count: usize| {
        h.raw("<a class=\"page\" href=\"/s/").path_part(&sid);
        if let Some(e) = entry {
            h.raw("/").path_part(e);
        }
        h.raw("?row=")
            .num(row as u64)
            .raw("\">")
            .raw(label)
            .raw(" (")
            .num(count as u64)
            .raw(")</a>");
    };
    if lo > 0 {
        page_link(&mut h, lo.saturating_sub(TREE_WINDOW), "▲ earlier rows", lo);
    }
    for (ri, row) in rows.iter().enumerate().take(hi).skip(lo) {
        let e = t.entry_at(row.node);
        let (kind, text) = row_text(e);
        let here = on_focus[row.node as usize];
        h.raw("<a class=\"row ").raw(kind_class(&kind));
        if here {
            h.raw(" on");
        }
        if focus_row == Some(ri as u32) {
            h.raw(" focus");
        }
        h.raw("\" href=\"");
        entry_link(&mut h, &sid, e);
        h.raw("\"");
        if let Some(id) = e.id() {
            h.raw(" data-id=\"").path_part(id).raw("\"");
        }
        h.raw("><span class=\"pre\">")
            .plain(&lay.prefix(row, INDENT))
            .raw("</span><span class=\"dot\">")
            .raw(if here { "●" } else { "○" })
            .raw("</span> <span class=\"id\">")
            .text(e.id().unwrap_or("?"))
            .raw("</span> <span class=\"kind\">")
            .text(&kind)
            .raw("</span> <span class=\"txt\">")
            .text(&cut_chars(&text, 100))
            .raw("</span>");
        if let Some(l) = e.id().and_then(|id| label_of(t, id)) {
            h.raw(" <span class=\"label\">[").text(&l).raw("]</span>");
        }
        if e.id().is_some() && e.id() == leaf {
            h.raw(" <span class=\"leaf\">◀ leaf</span>");
        }
        h.raw("</a>");
    }
    if hi < n {
        page_link(
            &mut h,
            (hi + TREE_WINDOW).min(n - 1),
            "▼ later rows",
            n - hi,
        );
    }
    h.raw("</nav><div class=\"reading\"><section class=\"branch\" id=\"branch\"><h2>")
        .raw(if entry.is_some() {
            "The branch up to this entry"
        } else {
            "The current branch"
        })
        .raw("</h2>");
    let branch = t.get_branch(focus);
    let bend = p.end.unwrap_or(branch.len()).min(branch.len());
    let bstart = bend.saturating_sub(BRANCH_WINDOW);
    let branch_link = |h: &mut Html, end: usize, label: &'static str, count: usize| {
        h.raw("<a class=\"page\" href=\"/s/").path_part(&sid);
        if let Some(e) = entry {
            h.raw("/").path_part(e);
        }
        h.raw("?end=")
            .num(end as u64)
            .raw("#branch\">")
            .raw(label)
            .raw(" (")
            .num(count as u64)
            .raw(")</a>");
    };
    if bstart > 0 {
        branch_link(&mut h, bstart, "▲ earlier entries", bstart);
    }
    for e in &branch[bstart..bend] {
        let (kind, _) = row_text(e);
        h.raw("<article class=\"entry ").raw(kind_class(&kind));
        if e.id().is_some() && e.id() == focus {
            h.raw(" focus");
        }
        h.raw("\"");
        if let Some(id) = e.id() {
            h.raw(" data-id=\"").path_part(id).raw("\"");
        }
        h.raw("><header><a class=\"eid\" href=\"");
        entry_link(&mut h, &sid, e);
        h.raw("\">")
            .text(e.id().unwrap_or("?"))
            .raw("</a> <span class=\"kind\">")
            .text(&kind)
            .raw("</span>");
        if let Some(ts) = e.timestamp() {
            h.raw(" <time>").text(&ts.js_string()).raw("</time>");
        }
        if let Some(l) = e.id().and_then(|id| label_of(t, id)) {
            h.raw(" <span class=\"label\">[").text(&l).raw("]</span>");
        }
        h.raw("</header>");
        entry_body(&mut h, e);
        h.raw("</article>");
    }
    if bend < branch.len() {
        branch_link(
            &mut h,
            (bend + BRANCH_WINDOW).min(branch.len()),
            "▼ later entries",
            branch.len() - bend,
        );
    }
    h.raw("</section>");
    if let Some(e) = entry {
        let ctx = sessiontree::build_context(t, LeafArg::Id(e));
        let n = ctx.messages.len();
        let cend = p.ctx.unwrap_or(n).min(n);
        let cstart = cend.saturating_sub(CONTEXT_WINDOW);
        h.raw("<section class=\"context\" id=\"context\"><h2>What the model saw here</h2><p class=\"meta\" id=\"ctx-count\">")
            .num(n as u64)
            .raw(if n == 1 { " message" } else { " messages" });
        if let Some(m) = &ctx.model {
            h.raw(" · model ")
                .text(&m.provider.map(|p| p.js_string()).unwrap_or_default())
                .raw("/")
                .text(&m.model_id.map(|p| p.js_string()).unwrap_or_default());
        }
        if let Some(tl) = ctx.thinking_level {
            h.raw(" · thinking ").text(&tl.js_string());
        }
        h.raw(" (as <code>sessiontree context --leaf</code>)</p>");
        let ctx_link = |h: &mut Html, end: usize, label: &'static str, count: usize| {
            h.raw("<a class=\"page\" href=\"/s/")
                .path_part(&sid)
                .raw("/")
                .path_part(e)
                .raw("?ctx=")
                .num(end as u64)
                .raw("#context\">")
                .raw(label)
                .raw(" (")
                .num(count as u64)
                .raw(")</a>");
        };
        if cstart > 0 {
            ctx_link(&mut h, cstart, "▲ earlier messages", cstart);
        }
        for (i, m) in ctx.messages[cstart..cend].iter().enumerate() {
            let raw = m.raw();
            let role = m.role().unwrap_or_else(|| "?".into());
            h.raw("<article class=\"msg\" data-n=\"")
                .num((cstart + i) as u64)
                .raw("\"><header><span class=\"kind\">")
                .text(&role)
                .raw("</span></header>");
            message(&mut h, raw);
            h.raw("</article>");
        }
        if cend < n {
            ctx_link(
                &mut h,
                (cend + CONTEXT_WINDOW).min(n),
                "▼ later messages",
                n - cend,
            );
        }
        h.raw("</section>");
    }
    h.raw("</div></div>");
    if fragment {
        h.raw("</main></body></html>\n");
    } else {
        end(&mut h);
    }
    Some(h.finish())
}

/// A page that says one thing (an error, nothing found).
pub fn notice(title: &str, line: &str, redact: &Redactor) -> String {
    let mut h = Html::new(redact);
    shell(&mut h, title, None);
    h.raw("<p class=\"problem\">").plain(line).raw("</p>");
    end(&mut h);
    h.finish()
}
