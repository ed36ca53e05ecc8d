//! `search_sessions`: the search of `sessiontree search` (the index crate's scan, with the
//! per-file summaries when they are there), merged with the archive's search when there is
//! one (a hit both have is the local one, noting the archive's machines), newest first.

use crate::answer::{chars, one_line, Answer};
use crate::args::{iso, minute, Args, ToolError};
use crate::Ctx;
use serde_json::{json, Map, Value};
use sessiontree::list::{self, FileStat};
use sessiontree_index::search::{Hit, Mode, Query};
use sessiontree_index::summary::{self, Summaries};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// The session id in a file's header: its first line, read alone when it is short.
fn session_id(path: &Path) -> String {
    let first = sessiontree::store::open_regular(path)
        .ok()
        .and_then(|(f, _)| {
            let mut buf = Vec::new();
            f.take(64 * 1024).read_to_end(&mut buf).ok()?;
            let nl = memchr_newline(&buf)?;
            sessiontree::Header::parse(String::from_utf8_lossy(&buf[..nl]).into_owned())
        });
    match first.or_else(|| sessiontree::folder::read_header(path)) {
        Some(h) => h.id,
        None => String::new(),
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// A snippet cut inside a word at either end (`…abc`) loses the cut word: a credential
/// cut in two is no longer recognisable as one, so no part of it is shown. Matches
/// (highlights, in characters) are kept whole.
fn without_cut_words(snippet: &str, highlights: &[(usize, usize)]) -> String {
    let cs: Vec<char> = snippet.chars().collect();
    let first = highlights.first().map(|h| h.0).unwrap_or(cs.len());
    let last = highlights.last().map(|h| h.1).unwrap_or(0);
    let mut start = 0;
    let mut end = cs.len();
    if cs.first() == Some(&'…') {
        let mut i = 1;
        while i < first.min(cs.len()) && !cs[i].is_whitespace() {
            i += 1;
        }
        if i > 1 {
            start = i;
        }
    }
    if cs.len() > 1 && cs.last() == Some(&'…') {
        let mut j = cs.len() - 1;
        while j > last.max(start) && !cs[j - 1].is_whitespace() {
            j -= 1;
        }
        if j < cs.len() - 1 {
            end = j;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&cs[start.min(end)..end]);
    let out = out.trim().to_string();
    if end < cs.len() && !out.ends_with('…') {
        return format!("{out} …");
    }
    out
}

/// A hit's snippet as the model gets it: the words its ends cut through removed (the
/// highlights are offsets into the snippet as found, so this comes first), then redacted:
/// every token left is whole. On one line.
fn model_snippet(r: &dyn crate::Redact, snippet: &str, highlights: &[(usize, usize)]) -> String {
    one_line(&r.redact(&without_cut_words(snippet, highlights)), 400)
}

/// Starts building the search summaries in the background (one thread, one build at a
/// time), as `sessiontree search` does after a search that found them missing or stale.
fn build_summaries(ctx: &Ctx, files: Vec<(PathBuf, Option<FileStat>)>) {
    if ctx.state.building.swap(true, Ordering::SeqCst) {
        return;
    }
    let state = ctx.state.clone();
    let store = Summaries::path_in(&ctx.cfg.agent_dir);
    let spawned = std::thread::Builder::new()
        .name("search-summaries".into())
        .spawn(move || {
            if let Err(e) = summary::build(&store, &files, 1) {
                eprintln!(
                    "sessiontree mcp: cannot write the search summaries {}: {e}",
                    store.display()
                );
            }
            state.building.store(false, Ordering::SeqCst);
        });
    if spawned.is_err() {
        ctx.state.building.store(false, Ordering::SeqCst);
    }
}

/// One hit before it is shown: local (a file here) or from the archive.
struct Item {
    t: Option<f64>,
    key: String,
    session: String,
    entry: String,
    role: String,
    timestamp: Value,
    cwd: String,
    /// On the session's current branch (`None`: not known, an archived copy).
    on_branch: Option<bool>,
    snippet: String,
    path: Option<String>,
    r#ref: String,
    /// With an archive: the owner, the machines holding the entry, whether it is here.
    owner: Option<String>,
    machines: Vec<String>,
    local: bool,
    /// For a local hit, the machines whose archived copies hold the same entry.
    archived_on: Vec<String>,
}

/// Hits without a time are reached by asking for this many more (they come last).
const TIMELESS_REACH: usize = 5_000;
/// The most hits one call asks a source for.
const MOST: usize = 20_000;

/// A window of `text` around the first occurrence of the query's first word (ASCII case
/// insensitive; the start when none is found), with `…` where it is cut, and the match
/// in characters.
fn window(text: &str, query: &str) -> (String, Vec<(usize, usize)>) {
    let word = query.split_whitespace().next().unwrap_or("");
    let cs: Vec<char> = text
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect();
    let w: Vec<char> = word.chars().collect();
    let at = (!w.is_empty())
        .then(|| {
            (0..cs.len().saturating_sub(w.len() - 1)).find(|&i| {
                cs[i..i + w.len()]
                    .iter()
                    .zip(&w)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
            })
        })
        .flatten();
    let (m0, m1) = at.map_or((0, 0), |i| (i, i + w.len()));
    let from = m0.saturating_sub(80);
    let to = (m1 + 200).min(cs.len());
    let mut out = String::new();
    let mut shift = 0;
    if from > 0 {
        out.push('…');
        shift = 1;
    }
    out.extend(&cs[from..to]);
    if to < cs.len() {
        out.push('…');
    }
    let hl = if at.is_some() {
        vec![(m0 - from + shift, m1 - from + shift)]
    } else {
        Vec::new()
    };
    (out, hl)
}

fn args_hash(parts: &[&str]) -> String {
    let mut all = vec!["search"];
    all.extend_from_slice(parts);
    crate::page::key(&all)[..8].to_string()
}

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let tool = crate::tools::SEARCH;
    let a = Args::new(
        tool,
        a,
        &["query", "cwd", "since", "until", "role", "limit", "cursor"],
    )?;
    let raw = a.required("query")?.trim();
    let (text, mode) = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(p) if !p.trim().is_empty() => (p.to_string(), Mode::Phrase),
        _ => (raw.to_string(), Mode::Words),
    };
    let role = match a.str("role")? {
        None => None,
        Some(_) => Some(a.choice("role", crate::tools::ROLES, "user")?.to_string()),
    };
    let limit = a.limit("limit", 20, 100)?;
    let since = a.date("since")?;
    let until = a.date("until")?;
    let cwd = a.str("cwd")?.map(sessiontree::dirs::resolve);
    let hash = args_hash(&[
        raw,
        a.str("cwd")?.unwrap_or(""),
        a.str("since")?.unwrap_or(""),
        a.str("until")?.unwrap_or(""),
        role.as_deref().unwrap_or(""),
    ]);
    let cursor = a
        .str("cursor")?
        .map(|c| crate::page::Cursor::decode(tool, "s1", &hash, c))
        .transpose()?;
    let remote = ctx.cfg.archive.as_ref();
    let sessions = ctx.sessions_dir();
    let here = sessions.is_dir();
    if !here && remote.is_none() {
        return Err(ToolError(format!(
            "there are no sessions yet: {} does not exist.",
            sessions.display()
        )));
    }
    // The cursor's time is the newest a later page may show (inclusive; `until` is not).
    let until_eff = match cursor.as_ref().and_then(|c| c.bound) {
        Some(b) => Some(until.map_or(b + 1.0, |u| u.min(b + 1.0))),
        None => until,
    };
    let files = if here {
        list::all_files_stat(&ctx.cfg.agent_dir)
    } else {
        Vec::new()
    };
    let store = Summaries::path_in(&ctx.cfg.agent_dir);
    let summaries = if here { Summaries::load(&store) } else { None };
    let seen = cursor.as_ref().map_or(0, |c| c.seen.len());
    let mut want = limit + 1 + seen;
    if cursor.as_ref().is_some_and(|c| c.bound.is_none()) {
        want += TIMELESS_REACH;
    }
    let mut ids: HashMap<String, String> = HashMap::new();
    // How many of the files had a valid summary, as the search here counted them (set
    // exactly when this machine's files are searched).
    let mut summarized = None;
    let (items, truncated) = loop {
        let local: Vec<Hit> = if here {
            let q = Query {
                text: text.clone(),
                mode,
                cwd: cwd.clone(),
                role: role.clone(),
                since_ms: since,
                until_ms: until_eff,
                limit: want,
            };
            let (hits, st) =
                sessiontree_index::search::search(&files, &q, summaries.as_ref(), threads())
                    .map_err(|e| {
                        ToolError(format!("{tool}: the query cannot be searched: {e}."))
                    })?;
            summarized = Some(st.summarized);
            hits
        } else {
            Vec::new()
        };
        let archived = match remote {
            Some(r) => {
                let filter = sessiontree_archive::query::Filter {
                    role: role.clone(),
                    cwd: cwd.as_ref().map(|c| c.to_string_lossy().into_owned()),
                    since_ms: since,
                    until_ms: until_eff,
                };
                let m = match mode {
                    Mode::Phrase => sessiontree_archive::query::Mode::Phrase,
                    _ => sessiontree_archive::query::Mode::Words,
                };
                r.with(tool, |ar| {
                    sessiontree_archive::query::search_filtered(ar, &text, m, &filter, want)
                })?
            }
            None => Vec::new(),
        };
        // A source that gave all it was asked for may hold more: nothing older than its
        // last hit is shown from the other (the next page starts there).
        let mut horizons: Vec<Option<f64>> = Vec::new();
        if local.len() >= want {
            horizons.push(crate::page::time(local.last().and_then(|h| h.ts_ms)));
        }
        if archived.len() >= want {
            horizons.push(crate::page::time(archived.last().and_then(|h| h.ts_ms)));
        }
        let mut items: Vec<Item> = Vec::new();
        let mut by_entry: HashMap<(String, String), usize> = HashMap::new();
        for h in &local {
            let id = ids
                .entry(h.path.clone())
                .or_insert_with(|| session_id(Path::new(&h.path)))
                .clone();
            by_entry.insert((id.clone(), h.entry_id.clone()), items.len());
            items.push(Item {
                t: h.ts_ms,
                key: crate::page::key(&["local", &h.path, &h.entry_id]),
                session: id,
                entry: h.entry_id.clone(),
                role: h.role.clone(),
                timestamp: h
                    .timestamp
                    .clone()
                    .map(Value::String)
                    .unwrap_or_else(|| iso(h.ts_ms)),
                cwd: h.cwd.clone(),
                on_branch: Some(h.on_branch),
                snippet: model_snippet(&*ctx.cfg.redactor, &h.snippet, &h.highlights),
                path: Some(h.path.clone()),
                r#ref: format!("{}#{}", h.path, h.entry_id),
                owner: remote.map(|r| r.role().to_string()),
                machines: remote
                    .map(|r| vec![r.here().to_string()])
                    .unwrap_or_default(),
                local: true,
                archived_on: Vec::new(),
            });
        }
        for h in &archived {
            if let Some(r) = remote {
                if h.owner == r.role() {
                    if let Some(&i) = by_entry.get(&(h.session_id.clone(), h.entry_id.clone())) {
                        items[i].archived_on.extend(h.machines.iter().cloned());
                        continue;
                    }
                }
            }
            let (snip, hl) = window(&h.text, &text);
            items.push(Item {
                t: h.ts_ms,
                key: crate::page::key(&["archive", &h.owner, &h.session_id, &h.entry_id]),
                session: h.session_id.clone(),
                entry: h.entry_id.clone(),
                role: h.role.clone(),
                timestamp: iso(h.ts_ms),
                cwd: String::new(),
                on_branch: None,
                snippet: model_snippet(&*ctx.cfg.redactor, &snip, &hl),
                path: None,
                r#ref: format!("{}#{}", h.session_id, h.entry_id),
                owner: Some(h.owner.clone()),
                machines: h.machines.clone(),
                local: false,
                archived_on: Vec::new(),
            });
        }
        items.retain(|it| {
            cursor.as_ref().is_none_or(|c| c.admits(it.t, &it.key))
                && horizons.iter().all(|h| match (h, crate::page::time(it.t)) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(h), Some(t)) => t >= *h,
                })
        });
        items.sort_by(|x, y| crate::page::order((x.t, &x.key), (y.t, &y.key)));
        let truncated = !horizons.is_empty();
        if items.len() > limit || !truncated || want >= MOST {
            break (items, truncated);
        }
        want = (want * 4).min(MOST);
    };
    if let Some(n) = summarized {
        if !summaries
            .as_ref()
            .is_some_and(|s| s.covers_exactly_counted(&files, n))
        {
            build_summaries(ctx, files);
        }
    }
    let mut items = items;
    // The archive's hits learn their session's cwd (one query for the page's sessions).
    if let Some(r) = remote {
        let mut want_ids: Vec<String> = items
            .iter()
            .take(limit)
            .filter(|i| !i.local)
            .map(|i| i.session.clone())
            .collect();
        want_ids.sort_unstable();
        want_ids.dedup();
        if !want_ids.is_empty() {
            let cwds = r.with(tool, |ar| {
                sessiontree_archive::query::session_cwds(ar, &want_ids)
            })?;
            let cwds: HashMap<(String, String), String> =
                cwds.into_iter().map(|(i, o, c)| ((i, o), c)).collect();
            for it in items.iter_mut().filter(|i| !i.local) {
                let k = (it.session.clone(), it.owner.clone().unwrap_or_default());
                if let Some(c) = cwds.get(&k) {
                    it.cwd = c.clone();
                }
            }
        }
    }
    let budget = ctx.cfg.budget;
    let mut body = String::new();
    let mut rows = Vec::new();
    let mut shown: Vec<(Option<f64>, String)> = Vec::new();
    for (n, h) in items.iter().take(limit).enumerate() {
        let when = h.t.map(minute).unwrap_or_else(|| "-".into());
        let branch = match h.on_branch {
            Some(true) => "current branch",
            Some(false) => "ABANDONED branch",
            None => "archived copy",
        };
        let cwd = one_line(&ctx.redact(&h.cwd), 200);
        let whence = match &h.owner {
            Some(o) => format!(
                "  [{o}@{}{}]",
                h.machines.join(","),
                if h.local { " (here)" } else { "" }
            ),
            None => String::new(),
        };
        let block = format!(
            "{}. {when}  {}  session {}  entry {}  ({branch})  cwd {cwd}{whence}\n   {}\n   ref {}\n",
            n + 1,
            h.role,
            h.session,
            h.entry,
            h.snippet,
            h.r#ref
        );
        if !rows.is_empty() && chars(&body) + chars(&block) > budget.saturating_sub(500) {
            break;
        }
        body.push_str(&block);
        let mut row = json!({
            "sessionId": h.session,
            "entryId": h.entry,
            "role": h.role,
            "timestamp": h.timestamp,
            "cwd": cwd,
            "onCurrentBranch": h.on_branch,
            "snippet": h.snippet,
            "path": h.path,
            "ref": h.r#ref,
        });
        if let Some(o) = &h.owner {
            row["owner"] = json!(o);
            row["machine"] = json!(h.machines.first());
            row["machines"] = json!(h.machines);
            row["local"] = json!(h.local);
            if h.local {
                let mut on = h.archived_on.clone();
                on.sort_unstable();
                on.dedup();
                row["archivedOn"] = json!(on);
            }
        }
        rows.push(row);
        shown.push((h.t, h.key.clone()));
    }
    let n = rows.len();
    let older = n < items.len() || truncated;
    let next = if older {
        crate::page::Cursor::after(cursor.as_ref(), &shown).map(|c| c.encode("s1", &hash))
    } else {
        None
    };
    let next_until = match (&next, items.get(n.wrapping_sub(1))) {
        (Some(_), Some(h)) => h.timestamp.as_str().map(str::to_string),
        _ => None,
    };
    let what = if mode == Mode::Phrase {
        format!("the phrase \"{}\"", one_line(&text, 80))
    } else {
        format!("\"{}\"", one_line(&text, 80))
    };
    let head = if n == 0 && cursor.is_some() {
        format!("No more entries match {what}.")
    } else if n == 0 {
        format!("No entry matches {what}.")
    } else {
        format!(
            "{n} hit{} for {what}, newest first{}:",
            if n == 1 { "" } else { "s" },
            match &next {
                Some(c) => format!("; older hits exist: call again with cursor \"{c}\""),
                None => String::new(),
            }
        )
    };
    Ok(Answer {
        text: format!("{head}\n{body}"),
        structured: json!({
            "hits": rows,
            "moreOlder": next.is_some(),
            "nextCursor": next,
            "nextUntil": next_until,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::without_cut_words;

    #[test]
    fn cut_words_at_the_edges_go() {
        // "…KEN-123 the match here and the rest…" with "match" highlighted.
        let s = "…KEN-123 the match here and tr…";
        let hl = [(13, 18)];
        assert_eq!(without_cut_words(s, &hl), "… the match here and …");
        // No cut: unchanged.
        assert_eq!(without_cut_words("a match b", &[(2, 7)]), "a match b");
        // A match inside the cut word stays, from its start.
        assert_eq!(without_cut_words("…abcmatch x", &[(4, 9)]), "…match x");
    }

    /// Redacting first would shorten the text under the highlights: the cut word at the end
    /// (here half of a key) would then be kept.
    #[test]
    fn cut_words_go_before_redaction() {
        let r = crate::Patterns::new(&["S3CRET-[a-z]+".into()]).unwrap();
        let s = "…xy S3CRET-aaaaaaaaaaaaaaaaaaaaaaaa the match here and AKIAIOSFO…";
        let m = s.chars().position(|c| c == 'm').unwrap();
        let out = super::model_snippet(&r, s, &[(m, m + 5)]);
        assert_eq!(out, "… [redacted] the match here and …");
    }
}
