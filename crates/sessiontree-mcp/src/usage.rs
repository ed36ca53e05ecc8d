//! `usage_summary`: tokens and cost as `sessiontree stats --all` computes them (every
//! branch; an entry copied into forks, same id and timestamp, counted once), optionally
//! from a time on.

use crate::answer::{chars, one_line, Answer};
use crate::args::{Args, ToolError};
use crate::Ctx;
use serde_json::{json, Map, Value};
use sessiontree::usage::{records, Record, Usage};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

fn usage_json(u: &Usage) -> Value {
    let int = |x: f64| -> Value {
        if x.is_finite() && x.abs() < 9.0e15 {
            json!(x.round() as i64)
        } else {
            Value::Null
        }
    };
    let cost = if u.cost.is_finite() {
        json!((u.cost * 1e6).round() / 1e6)
    } else {
        Value::Null
    };
    json!({
        "records": u.records,
        "input": int(u.input),
        "output": int(u.output),
        "cacheRead": int(u.cache_read),
        "cacheWrite": int(u.cache_write),
        "totalTokens": int(u.total_tokens),
        "cost": cost,
    })
}

/// 1234567 -> "1,234,567"; scientific notation past what fits.
fn thousands(x: f64) -> String {
    if !(x.is_finite() && x.abs() < 1e15) {
        return format!("{x:.3e}");
    }
    sessiontree::usage::thousands(x)
}

fn line(key: &str, u: &Usage) -> String {
    format!(
        "{key}: {} tokens (input {}, output {}, cache read {}, cache write {}), ${:.4}, {} records",
        thousands(u.total_tokens),
        thousands(u.input),
        thousands(u.output),
        thousands(u.cache_read),
        thousands(u.cache_write),
        if u.cost.is_finite() { u.cost } else { 0.0 },
        u.records
    )
}

/// Every file's records, read on all cores, in the given order.
fn read_all(files: &[PathBuf]) -> Vec<Option<Vec<Record>>> {
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: Vec<std::sync::Mutex<Option<Vec<Record>>>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let r = records(f);
                *out[i].lock().unwrap_or_else(|p| p.into_inner()) = r;
            });
        }
    });
    out.into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

pub fn run(ctx: &Ctx, a: &Map<String, Value>) -> Result<Answer, ToolError> {
    let a = Args::new(crate::tools::USAGE, a, &["since", "by"])?;
    let since = a.date("since")?;
    let by = a.choice("by", crate::tools::BY, "model")?;
    let sessions_dir = ctx.sessions_dir();
    if !sessions_dir.is_dir() {
        return Err(ToolError(format!(
            "there are no sessions yet: {} does not exist.",
            sessions_dir.display()
        )));
    }
    // Regular files only (a FIFO named *.jsonl is never opened).
    let files: Vec<PathBuf> = sessiontree::list::all_files_stat(&ctx.cfg.agent_dir)
        .into_iter()
        .filter(|f| f.1.is_some())
        .map(|f| f.0)
        .collect();
    let titles: HashMap<PathBuf, String> = if by == "session" {
        crate::list::sessions(ctx)?
            .into_iter()
            .map(|i| {
                let t = i
                    .name
                    .clone()
                    .filter(|n| !n.trim().is_empty())
                    .map(|n| ctx.redact(&n).into_owned())
                    .unwrap_or_else(|| one_line(&ctx.redact(&i.first_message), 60));
                (i.path, format!("{t} ({})", crate::list::id_text_of(&i.id)))
            })
            .collect()
    } else {
        HashMap::new()
    };
    let mut groups: BTreeMap<String, Usage> = BTreeMap::new();
    let mut total = Usage::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut sessions = 0;
    for (f, recs) in files.iter().zip(read_all(&files)) {
        let Some(recs) = recs else { continue };
        sessions += 1;
        for r in &recs {
            let Some(u) = &r.usage else { continue };
            if let Some(t) = since {
                if !r.ts_ms.is_some_and(|ms| ms >= t) {
                    continue;
                }
            }
            if let Some(id) = &r.id {
                if !seen.insert((id.clone(), r.timestamp.clone())) {
                    continue;
                }
            }
            let key = match by {
                "provider" => r.provider.clone(),
                "day" => r
                    .ts_ms
                    .filter(|t| t.is_finite() && t.abs() <= 8.64e15)
                    .map(|t| sessiontree::date::iso_from_ms(t as i64)[..10].to_string())
                    .unwrap_or_else(|| "-".into()),
                "session" => titles.get(f).cloned().unwrap_or_else(|| {
                    f.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                }),
                _ => format!("{}/{}", r.provider, r.model),
            };
            groups.entry(key).or_default().add(u);
            total.add(u);
        }
    }
    // The biggest first: by cost, then tokens; days newest first.
    let mut rows: Vec<(String, Usage)> = groups.into_iter().collect();
    if by == "day" {
        rows.reverse();
    } else {
        rows.sort_by(|a, b| {
            b.1.cost
                .total_cmp(&a.1.cost)
                .then(b.1.total_tokens.total_cmp(&a.1.total_tokens))
        });
    }
    let mut text = format!(
        "{} in {sessions} session{}{}, by {by}:\n",
        line("Total", &total),
        if sessions == 1 { "" } else { "s" },
        match since {
            Some(t) => format!(" since {}", crate::args::minute(t)),
            None => String::new(),
        }
    );
    if total.records == 0 {
        text = format!(
            "No usage recorded{} in {sessions} session{}.\n",
            match since {
                Some(t) => format!(" since {}", crate::args::minute(t)),
                None => String::new(),
            },
            if sessions == 1 { "" } else { "s" }
        );
    }
    let mut shown = Vec::new();
    for (k, u) in &rows {
        let key = one_line(&ctx.redact(k), 160);
        let l = format!("- {}\n", line(&key, u));
        if chars(&text) + chars(&l) > ctx.cfg.budget.saturating_sub(200) {
            break;
        }
        text.push_str(&l);
        let mut v = usage_json(u);
        v["key"] = key.into();
        shown.push(v);
    }
    if shown.len() < rows.len() {
        text.push_str(&format!(
            "({} smaller groups not shown; ask with since for a shorter period)\n",
            rows.len() - shown.len()
        ));
    }
    Ok(Answer {
        text,
        structured: json!({
            "by": by,
            "branches": "all",
            "since": since.map(|t| crate::args::iso(Some(t))),
            "sessions": sessions,
            "total": usage_json(&total),
            "groups": shown,
            "groupsNotShown": rows.len() - shown.len(),
        }),
    })
}
