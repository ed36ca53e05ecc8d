//! Full-text search over the index: words (all must occur), a phrase, or a regex.
//!
//! Words and phrases of 3 characters or more go through FTS5's trigram index (substring,
//! ASCII case-insensitive); shorter ones fall back to `LIKE`. A regex is matched in Rust
//! over the rows the other filters leave.

use rusqlite::Connection;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Words,
    Phrase,
    Regex,
}

#[derive(Clone, Debug)]
pub struct Query {
    pub text: String,
    pub mode: Mode,
    /// Only sessions whose header cwd resolves to this.
    pub cwd: Option<PathBuf>,
    pub role: Option<String>,
    pub since_ms: Option<f64>,
    pub until_ms: Option<f64>,
    pub limit: usize,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub path: String,
    pub cwd: String,
    pub entry_id: String,
    pub role: String,
    pub timestamp: Option<String>,
    /// The entry is on the session's current branch (root to the last entry).
    pub on_branch: bool,
    /// The text around the first match, the match between `[[` and `]]`.
    pub snippet: String,
    #[serde(skip)]
    pub match_range: (usize, usize),
}

fn fts_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn like_escape(s: &str) -> String {
    let mut o = String::from("%");
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            o.push('\\');
        }
        o.push(c);
    }
    o.push('%');
    o
}

/// Finds `needle` in `hay`, ASCII case-insensitively (as the trigram tokenizer matches).
fn find_ci(hay: &str, needle: &str) -> Option<(usize, usize)> {
    if needle.is_empty() {
        return None;
    }
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    (0..=h.len().checked_sub(n.len())?)
        .find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n) && hay.is_char_boundary(i))
        .map(|i| (i, i + n.len()))
}

/// Up to `ctx` characters either side of the match, the match marked `[[...]]`.
pub fn snippet(text: &str, (a, b): (usize, usize), ctx: usize) -> String {
    let start = text[..a]
        .char_indices()
        .rev()
        .nth(ctx.saturating_sub(1))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let end = text[b..]
        .char_indices()
        .nth(ctx)
        .map(|(i, _)| b + i)
        .unwrap_or(text.len());
    let clean = |s: &str| s.replace(['\n', '\r', '\t'], " ");
    format!(
        "{}{}[[{}]]{}{}",
        if start > 0 { "…" } else { "" },
        clean(&text[start..a]),
        clean(&text[a..b]),
        clean(&text[b..end]),
        if end < text.len() { "…" } else { "" }
    )
}

pub(crate) fn run(conn: &Connection, q: &Query) -> rusqlite::Result<Vec<Hit>> {
    let mut wh: Vec<String> = Vec::new();
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    let terms: Vec<String> = match q.mode {
        Mode::Words => q.text.split_whitespace().map(str::to_string).collect(),
        Mode::Phrase => vec![q.text.clone()],
        Mode::Regex => Vec::new(),
    };
    let re = if q.mode == Mode::Regex {
        Some(
            regex::Regex::new(&q.text)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?,
        )
    } else {
        None
    };
    let long: Vec<&String> = terms.iter().filter(|t| t.chars().count() >= 3).collect();
    if !long.is_empty() {
        // The index has no positions (detail=none): ask for every trigram of every term,
        // then check the terms themselves below.
        let mut grams: Vec<String> = Vec::new();
        for t in &long {
            let cs: Vec<char> = t.to_lowercase().chars().collect();
            for w in cs.windows(3) {
                let g: String = w.iter().collect();
                if !grams.contains(&g) {
                    grams.push(g);
                }
            }
        }
        wh.push("fts MATCH ?".into());
        args.push(
            grams
                .iter()
                .map(|g| fts_quote(g))
                .collect::<Vec<_>>()
                .join(" AND ")
                .into(),
        );
    }
    for t in terms.iter().filter(|t| t.chars().count() < 3) {
        wh.push("fts.text LIKE ? ESCAPE '\\'".into());
        args.push(like_escape(t).into());
    }
    if let Some(r) = &q.role {
        wh.push("e.role = ?".into());
        args.push(r.clone().into());
    }
    if let Some(s) = q.since_ms {
        wh.push("e.ts_ms >= ?".into());
        args.push(s.into());
    }
    if let Some(u) = q.until_ms {
        wh.push("e.ts_ms < ?".into());
        args.push(u.into());
    }
    let sql = format!(
        "SELECT f.path, f.cwd, e.entry_id, e.role, e.ts_ms, e.on_branch, e.rowid
         FROM fts JOIN entries e ON e.rowid = fts.rowid JOIN files f ON f.id = e.file_id
         {} ORDER BY e.ts_ms DESC, e.rowid DESC",
        if wh.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", wh.join(" AND "))
        }
    );
    // Texts are fetched one by one: sorting rows with their texts would hold them all.
    let mut text_of = conn.prepare("SELECT text FROM fts WHERE rowid = ?1")?;
    let mut st = conn.prepare(&sql)?;
    let mut rows = st.query(rusqlite::params_from_iter(args))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if out.len() >= q.limit {
            break;
        }
        let cwd: String = r.get::<_, Option<String>>(1)?.unwrap_or_default();
        if let Some(want) = &q.cwd {
            if !crate::list::cwd_matches(&cwd, want) {
                continue;
            }
        }
        let rowid: i64 = r.get(6)?;
        let text: String = text_of.query_row([rowid], |r| r.get(0))?;
        let m = match &re {
            Some(re) => match re.find(&text) {
                Some(m) => (m.start(), m.end()),
                None => continue,
            },
            None => {
                let found: Option<Vec<(usize, usize)>> =
                    terms.iter().map(|t| find_ci(&text, t)).collect();
                match found {
                    Some(f) if !f.is_empty() => f[0],
                    Some(_) => (0, 0),
                    None => continue,
                }
            }
        };
        let ts: Option<f64> = r.get(4)?;
        out.push(Hit {
            path: r.get(0)?,
            cwd,
            entry_id: r.get(2)?,
            role: r.get(3)?,
            timestamp: ts
                .filter(|t| t.is_finite() && t.abs() <= 8.64e15)
                .map(|t| crate::date::iso_from_ms(t as i64)),
            on_branch: r.get(5)?,
            snippet: snippet(&text, m, 40),
            match_range: m,
        });
    }
    Ok(out)
}
