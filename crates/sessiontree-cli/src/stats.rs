//! `sessiontree stats`: tokens and cost from assistant `usage` and `usage` entries.
//!
//! Default: every branch (`--all-branches`), because an abandoned branch was paid for
//! too; `--branch` counts the current branch only (what the context still carries).
//! Entries copied into forks (same id and timestamp) are counted once per run.

use crate::out::progress_bar;
use crate::out::Out;
use anyhow::{Context, Result};
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
    /// What a row of the table is.
    #[arg(long, value_enum, default_value = "model")]
    by: By,
    /// Print JSON (Pi's object shapes and field names) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn stats(out: &mut Out, a: StatsArgs) -> Result<bool> {
    let mut a = a;
    if let Some(url) = a.archive.take() {
        let Some(id) = &a.path else {
            // Every visible session: the usage kept at push time.
            let (sessions, groups) = archive_usage(&url, &a)?;
            let mut total = Usage::default();
            for u in groups.values() {
                total.add(u);
            }
            return report(out, &a, sessions, groups, total, "in the archive");
        };
        // The archived session in a temporary folder.
        a.path = Some(crate::archive::fetch_to_temp(
            Some(&url),
            &id.to_string_lossy(),
        )?);
        a.all = false;
    }
    let single = a.path.as_ref().filter(|p| !p.is_dir()).cloned();
    let (files, where_): (Vec<PathBuf>, String) = if a.all {
        let sessions = dirs::agent_dir().join("sessions");
        (
            list::all_files(&dirs::agent_dir()),
            format!("under {}", sessions.display()),
        )
    } else {
        match &a.path {
            Some(p) if p.is_dir() => {
                crate::paths::folder(p)?;
                (list::dir_files(p), format!("in {}", p.display()))
            }
            Some(p) => {
                crate::paths::session_file(p)?;
                (vec![p.clone()], format!("in {}", p.display()))
            }
            None => {
                let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
                let dir = dirs::default_session_dir(&cwd);
                (list::dir_files(&dir), format!("for {cwd}"))
            }
        }
    };
    if files.is_empty() {
        eprintln!("sessiontree: no sessions {where_}");
        return Ok(false);
    }
    // Sessions by name (else first message, else file name) for --by session.
    let titles: std::collections::HashMap<PathBuf, String> = if matches!(a.by, By::Session) {
        let opts = list::ListOptions::default();
        list::scan_files(&files, opts, &|_| {})
            .into_iter()
            .flatten()
            .map(|i| {
                let title = i
                    .name
                    .clone()
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or_else(|| crate::out::preview(&i.first_message, 48));
                (i.path.clone(), title)
            })
            .collect()
    } else {
        Default::default()
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
        let Some(recs) = records(f) else {
            if let Some(p) = &single {
                anyhow::bail!(
                    "{}: not a session file (no session header on its first line)",
                    p.display()
                );
            }
            continue;
        };
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
                By::Day => sessiontree::usage::day_of(r.ts_ms),
                By::Session => match titles.get(f) {
                    Some(t) if !t.is_empty() => t.clone(),
                    _ => f
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                },
            };
            groups.entry(key).or_default().add(u);
            total.add(u);
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    report(out, &a, sessions, groups, total, &where_)
}

/// `stats --archive` without an id, from the usage rows kept at push time: (sessions read,
/// sums per group). A session without them (pushed before the archive's schema version 5
/// and not migrated, or rows that do not describe its bytes) is summed from its bytes, and
/// that is said.
fn archive_usage(url: &str, a: &StatsArgs) -> Result<(usize, BTreeMap<String, Usage>)> {
    use sessiontree_archive::usage;
    let mut ar =
        sessiontree_archive::Archive::open(&sessiontree_archive::conn::archive_url(Some(url))?)?;
    let by = match a.by {
        By::Model => usage::By::Model,
        By::Provider => usage::By::Provider,
        By::Day => usage::By::Day,
        By::Session => usage::By::Session,
    };
    let found = usage::stats(&mut ar, by, a.branch)?;
    if !found.unknown.is_empty() {
        eprintln!(
            "sessiontree: {} of {} archived sessions have no usage kept at push time (pushed before the archive's schema 5?): read from their bytes",
            found.unknown.len(),
            found.sessions
        );
    }
    for (id, why) in &found.skipped {
        eprintln!(
            "sessiontree: skipped session {}: {}",
            crate::safe::line(id),
            crate::safe::line(why)
        );
    }
    let mut groups: BTreeMap<String, Usage> = BTreeMap::new();
    for (key, u) in found.groups {
        let key = match by {
            // As for local files: the session's name, else its first message, else its
            // file name.
            usage::By::Session => {
                let s = key
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| found.known.get(i))
                    .context("archive: a usage group of an unknown session")?;
                let title = s
                    .name
                    .clone()
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or_else(|| crate::out::preview(&s.first_message, 48));
                if title.is_empty() {
                    s.file_name.clone()
                } else {
                    title
                }
            }
            _ => key,
        };
        groups.entry(key).or_default().add(&u);
    }
    Ok((found.sessions - found.skipped.len(), groups))
}

/// Prints the sums (a table, or `--json`); whether any record was found.
fn report(
    out: &mut Out,
    a: &StatsArgs,
    sessions: usize,
    groups: BTreeMap<String, Usage>,
    total: Usage,
    where_: &str,
) -> Result<bool> {
    if a.json {
        let g: Vec<serde_json::Value> = groups
            .iter()
            .map(|(k, u)| {
                let mut v = usage_json(u);
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
                "total": usage_json(&total),
            })
            .to_string(),
        )?;
    } else {
        // Model, provider and session names are the files' text: made safe to show.
        let shown: Vec<(String, &Usage)> = groups
            .iter()
            .map(|(k, u)| (crate::safe::line(k).into_owned(), u))
            .collect();
        let keyw = shown
            .iter()
            .map(|(k, _)| k.chars().count())
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
                sessiontree::usage::thousands(u.records as f64),
                num(u.input, 0),
                num(u.output, 0),
                num(u.cache_read, 0),
                num(u.cache_write, 0),
                num(u.total_tokens, 0),
                num(u.cost, 4)
            )
        };
        for (k, u) in &shown {
            out.line(&row(k, u))?;
        }
        out.line(&row("total", &total))?;
    }
    if total.records == 0 {
        eprintln!(
            "sessiontree: no usage recorded {where_} ({sessions} session{} read)",
            if sessions == 1 { "" } else { "s" }
        );
    }
    Ok(total.records > 0)
}

/// A number for the table: whole tokens with thousands separators, cost with 4 decimals;
/// scientific notation past what fits.
fn num(x: f64, decimals: usize) -> String {
    if !(x.is_finite() && x.abs() < 1e13) {
        return format!("{x:.3e}");
    }
    if decimals == 0 {
        return sessiontree::usage::thousands(x);
    }
    let s = format!("{x:.decimals$}");
    match s.split_once('.') {
        Some((int, frac)) => format!(
            "{}.{frac}",
            sessiontree::usage::thousands(int.parse::<f64>().unwrap_or(0.0))
        ),
        None => s,
    }
}

/// Usage for --json: token counts as integers (providers report whole tokens; sums of
/// them are whole too), cost rounded to a millionth of a dollar.
fn usage_json(u: &Usage) -> serde_json::Value {
    let int = |x: f64| -> serde_json::Value {
        if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
            serde_json::json!(x as i64)
        } else if x.is_finite() {
            serde_json::json!(x.round() as i64)
        } else {
            serde_json::Value::Null
        }
    };
    let cost = if u.cost.is_finite() {
        serde_json::json!((u.cost * 1e6).round() / 1e6)
    } else {
        serde_json::Value::Null
    };
    serde_json::json!({
        "records": u.records,
        "input": int(u.input),
        "output": int(u.output),
        "cacheRead": int(u.cache_read),
        "cacheWrite": int(u.cache_write),
        "totalTokens": int(u.total_tokens),
        "cost": cost,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_well() {
        assert_eq!(sessiontree::usage::thousands(1234567.0), "1,234,567");
        assert_eq!(sessiontree::usage::thousands(999.0), "999");
        assert_eq!(sessiontree::usage::thousands(-1000.0), "-1,000");
        assert_eq!(super::num(12345.67891, 4), "12,345.6789");
        assert_eq!(super::num(5330.0, 0), "5,330");
    }
}
