//! `sessiontree search`: full-text search over every session (through the index).

use crate::ls::{open_index, parse_date, progress_bar};
use crate::out::Out;
use anyhow::{bail, Result};
use sessiontree::{dirs, list};
use sessiontree_index::index;
use sessiontree_index::search::{Mode, Query};

#[derive(clap::Args)]
pub struct SearchArgs {
    /// Words that must all occur (substrings, any ASCII case), a phrase, or a regex.
    query: String,
    /// QUERY is a regular expression (Rust `regex` syntax).
    #[arg(long, conflicts_with = "phrase")]
    regex: bool,
    /// QUERY is one phrase (a substring, spaces included).
    #[arg(long)]
    phrase: bool,
    /// Only sessions of this working directory.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Only entries of this role: user, assistant, toolResult, bashExecution, custom,
    /// compaction, branch_summary.
    #[arg(long)]
    role: Option<String>,
    /// Only entries written at or after this date (ISO date/time, or 30m, 12h, 7d ago).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only entries written before this date.
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// At most N hits.
    #[arg(long, default_value = "50")]
    limit: usize,
    /// Print JSON (Pi's object shapes and field names) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn search(out: &mut Out, a: SearchArgs) -> Result<bool> {
    let agent = dirs::agent_dir();
    let sessions = agent.join("sessions");
    let Some(mut idx) = open_index() else {
        bail!("search needs the index");
    };
    let files = list::all_files(&agent);
    let pb = progress_bar(files.len(), "indexing");
    idx.refresh(&files, &index::all_scope(&sessions), 2, &|n, _| {
        if let Some(pb) = &pb {
            pb.set_position(n as u64)
        }
    })?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let q = Query {
        text: a.query.clone(),
        mode: if a.regex {
            Mode::Regex
        } else if a.phrase {
            Mode::Phrase
        } else {
            Mode::Words
        },
        cwd: a.cwd.as_deref().map(dirs::resolve),
        role: a.role.clone(),
        since_ms: a.since.as_deref().map(parse_date).transpose()?,
        until_ms: a.until.as_deref().map(parse_date).transpose()?,
        limit: a.limit,
    };
    let hits = idx.search(&q)?;
    if a.json {
        out.line(&serde_json::json!({ "hits": hits }).to_string())?;
    } else {
        for h in &hits {
            let branch = if h.on_branch {
                ""
            } else {
                " (abandoned branch)"
            };
            out.line(&format!(
                "{}  {:<13} {}#{}{}",
                h.timestamp
                    .as_deref()
                    .map(|t| &t[..16.min(t.len())])
                    .unwrap_or("-"),
                h.role,
                h.path,
                h.entry_id,
                out.paint("2", branch)
            ))?;
            let s = if out.color {
                h.snippet
                    .replace("[[", "\x1b[1;33m")
                    .replace("]]", "\x1b[0m")
            } else {
                h.snippet.clone()
            };
            out.line(&format!("    {s}"))?;
        }
    }
    Ok(!hits.is_empty())
}
