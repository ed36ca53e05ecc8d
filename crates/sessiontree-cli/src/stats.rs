//! `sessiontree stats`: tokens and cost from assistant `usage` and `usage` entries.
//!
//! Default: every branch (`--all-branches`), because an abandoned branch was paid for
//! too; `--branch` counts the current branch only (what the context still carries).
//! Entries copied into forks (same id and timestamp) are counted once per run.

use crate::ls::progress_bar;
use crate::out::Out;
use anyhow::Result;
use sessiontree::usage::{on_branch, records, Usage};
use sessiontree::{dirs, list};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum By {
    Model,
    Provider,
    Day,
    Session,
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// A session file or a session folder (default: the current directory's sessions).
    path: Option<PathBuf>,
    /// Every session under the agent dir.
    #[arg(long, conflicts_with = "path")]
    all: bool,
    /// Only the current branch of each session.
    #[arg(long, conflicts_with = "all_branches")]
    branch: bool,
    /// Every branch (the default).
    #[arg(long)]
    all_branches: bool,
    /// Read the shared archive (PostgreSQL URL; without a value, $SESSIONTREE_ARCHIVE) instead of local files.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub archive: Option<String>,
    #[arg(long, value_enum, default_value = "model")]
    by: By,
    #[arg(long)]
    json: bool,
}

pub fn stats(out: &mut Out, a: StatsArgs) -> Result<bool> {
    let mut a = a;
    if let Some(url) = a.archive.take() {
        // The archived sessions (one, or every visible one with --all) in a temporary folder.
        a.path = Some(match (&a.path, a.all) {
            (Some(id), _) => crate::archive::fetch_to_temp(Some(&url), &id.to_string_lossy())?,
            (None, _) => crate::archive::fetch_all_to_temp(Some(&url))?,
        });
        a.all = false;
    }
    let files: Vec<PathBuf> = if a.all {
        list::all_files(&dirs::agent_dir())
    } else {
        match &a.path {
            Some(p) if p.is_dir() => list::dir_files(p),
            Some(p) => vec![p.clone()],
            None => {
                let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
                list::dir_files(&dirs::default_session_dir(&cwd))
            }
        }
    };
    let pb = progress_bar(files.len(), "reading sessions");
    let mut groups: BTreeMap<String, Usage> = BTreeMap::new();
    let mut total = Usage::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut sessions = 0;
    for (n, f) in files.iter().enumerate() {
        if let Some(pb) = &pb {
            pb.set_position(n as u64);
        }
        let Some(recs) = records(f) else { continue };
        sessions += 1;
        let chosen: Vec<_> = if a.branch {
            on_branch(&recs)
        } else {
            recs.iter().collect()
        };
        for r in chosen {
            let Some(u) = &r.usage else { continue };
            if let Some(id) = &r.id {
                if !seen.insert((id.clone(), r.timestamp.clone())) {
                    continue;
                }
            }
            let key = match a.by {
                By::Model => format!("{}/{}", r.provider, r.model),
                By::Provider => r.provider.clone(),
                By::Day => r
                    .ts_ms
                    .filter(|t| t.is_finite() && t.abs() <= 8.64e15)
                    .map(|t| sessiontree::date::iso_from_ms(t as i64)[..10].to_string())
                    .unwrap_or_else(|| "-".into()),
                By::Session => f.to_string_lossy().into_owned(),
            };
            groups.entry(key).or_default().add(u);
            total.add(u);
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    if a.json {
        let g: Vec<serde_json::Value> = groups
            .iter()
            .map(|(k, u)| {
                let mut v = serde_json::to_value(u).unwrap_or_default();
                v["key"] = k.clone().into();
                v
            })
            .collect();
        out.line(
            &serde_json::json!({
                "by": format!("{}", match a.by { By::Model => "model", By::Provider => "provider", By::Day => "day", By::Session => "session" }),
                "branches": if a.branch { "current" } else { "all" },
                "sessions": sessions,
                "groups": g,
                "total": total,
            })
            .to_string(),
        )?;
    } else {
        let keyw = groups
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        out.line(&out.paint(
            "1",
            &format!(
                "{:<keyw$}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>13}  {:>10}",
                "GROUP",
                "RECORDS",
                "INPUT",
                "OUTPUT",
                "CACHE READ",
                "CACHE WRITE",
                "TOTAL TOKENS",
                "COST $"
            ),
        ))?;
        let row = |k: &str, u: &Usage| {
            format!(
                "{k:<keyw$}  {:>7}  {:>12}  {:>12}  {:>12}  {:>12}  {:>13}  {:>10}",
                u.records,
                num(u.input, 0),
                num(u.output, 0),
                num(u.cache_read, 0),
                num(u.cache_write, 0),
                num(u.total_tokens, 0),
                num(u.cost, 4)
            )
        };
        for (k, u) in &groups {
            out.line(&row(k, u))?;
        }
        out.line(&row("total", &total))?;
    }
    Ok(total.records > 0)
}

/// A number for the table: fixed point when reasonable, else scientific.
fn num(x: f64, decimals: usize) -> String {
    if x.is_finite() && x.abs() < 1e13 {
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}
