//! `search_sessions`: the search of `sessiontree search` (the index crate's scan, with the
//! per-file summaries when they are there), hits newest first.

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

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let tool = crate::tools::SEARCH;
    let a = Args::new(
        tool,
        a,
        &["query", "cwd", "since", "until", "role", "limit"],
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
    let sessions = ctx.sessions_dir();
    if !sessions.is_dir() {
        return Err(ToolError(format!(
            "there are no sessions yet: {} does not exist.",
            sessions.display()
        )));
    }
    let files = list::all_files_stat(&ctx.cfg.agent_dir);
    let q = Query {
        text: text.clone(),
        mode,
        cwd,
        role,
        since_ms: since,
        until_ms: until,
        // One more than shown: whether older hits remain.
        limit: limit + 1,
    };
    let store = Summaries::path_in(&ctx.cfg.agent_dir);
    let summaries = Summaries::load(&store);
    let (mut hits, _) =
        sessiontree_index::search::search(&files, &q, summaries.as_ref(), threads())
            .map_err(|e| ToolError(format!("{tool}: the query cannot be searched: {e}.")))?;
    if !summaries.is_some_and(|s| s.covers_exactly(&files)) {
        build_summaries(ctx, files);
    }
    let more = hits.len() > limit;
    hits.truncate(limit);
    let mut ids: HashMap<String, String> = HashMap::new();
    let budget = ctx.cfg.budget;
    let mut body = String::new();
    let mut rows = Vec::new();
    let mut last_shown: Option<&Hit> = None;
    for (n, h) in hits.iter().enumerate() {
        let id = ids
            .entry(h.path.clone())
            .or_insert_with(|| session_id(Path::new(&h.path)))
            .clone();
        let snippet = model_snippet(&*ctx.cfg.redactor, &h.snippet, &h.highlights);
        let when = h.ts_ms.map(minute).unwrap_or_else(|| "-".into());
        let branch = if h.on_branch {
            "current branch"
        } else {
            "ABANDONED branch"
        };
        let cwd = one_line(&ctx.redact(&h.cwd), 200);
        let r#ref = format!("{}#{}", h.path, h.entry_id);
        let block = format!(
            "{}. {when}  {}  session {id}  entry {}  ({branch})  cwd {cwd}\n   {snippet}\n   ref {}\n",
            n + 1,
            h.role,
            h.entry_id,
            r#ref
        );
        if !rows.is_empty() && chars(&body) + chars(&block) > budget.saturating_sub(400) {
            break;
        }
        body.push_str(&block);
        rows.push(json!({
            "sessionId": id,
            "entryId": h.entry_id,
            "role": h.role,
            "timestamp": h.timestamp.clone().map(Value::String).unwrap_or_else(|| iso(h.ts_ms)),
            "cwd": cwd,
            "onCurrentBranch": h.on_branch,
            "snippet": snippet,
            "path": h.path,
            "ref": r#ref,
        }));
        last_shown = Some(h);
    }
    let shown = rows.len();
    let older = more || shown < hits.len();
    let next_until = if older {
        last_shown.and_then(|h| h.timestamp.clone())
    } else {
        None
    };
    let what = if mode == Mode::Phrase {
        format!("the phrase \"{}\"", one_line(&text, 80))
    } else {
        format!("\"{}\"", one_line(&text, 80))
    };
    let head = if shown == 0 {
        format!("No entry matches {what}.")
    } else {
        format!(
            "{shown} hit{} for {what}, newest first{}:",
            if shown == 1 { "" } else { "s" },
            match &next_until {
                Some(t) => format!("; older hits exist: call again with until=\"{t}\""),
                None if older => "; older hits exist".into(),
                None => String::new(),
            }
        )
    };
    Ok(Answer {
        text: format!("{head}\n{body}"),
        structured: json!({
            "hits": rows,
            "moreOlder": older,
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
