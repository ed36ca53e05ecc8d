//! `sessiontree verify` and `sessiontree repair`.

use crate::out::Out;
use crate::safe;
use anyhow::Result;
use serde_json::json;
use std::path::{Path, PathBuf};

/// What verify found in one file.
struct FileReport {
    path: PathBuf,
    /// Could not read the file at all (I/O).
    unreadable: bool,
    /// Not a session (bad header) or could not read.
    error: Option<String>,
    diagnostics: Vec<sessiontree::Diagnostic>,
    /// Work left half done at the leaf (dangling tool calls, an aborted last reply, ...):
    /// a model API rejects the session on resume until it is closed.
    interrupted: Vec<sessiontree::interrupted::Finding>,
    /// Tool calls left without a result earlier on the branch, past which Pi went on
    /// (it answers them for the provider): worth a note, not a problem.
    notes: Vec<sessiontree::interrupted::Finding>,
}

impl FileReport {
    fn ok(&self) -> bool {
        self.error.is_none() && self.diagnostics.is_empty() && self.interrupted.is_empty()
    }
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut items: Vec<_> = std::fs::read_dir(path)?.collect::<std::io::Result<Vec<_>>>()?;
    items.sort_by_key(|e| e.file_name());
    for e in items {
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            // Special files are pushed too: `check` reports them without reading them.
            out.push(p);
        }
    }
    Ok(())
}

fn check(path: &Path) -> FileReport {
    match sessiontree::load(path) {
        Ok(l) => {
            let (notes, interrupted) = crate::interrupted::findings(&l.tree, false)
                .into_iter()
                .partition(|f| crate::interrupted::resumed_past(&l.tree, f));
            FileReport {
                path: path.to_path_buf(),
                unreadable: false,
                error: None,
                diagnostics: l.tree.diagnostics().to_vec(),
                interrupted,
                notes,
            }
        }
        Err(e) => FileReport {
            path: path.to_path_buf(),
            // Not a session at all (empty, binary, no header) is as unreadable as an I/O
            // error: there is nothing to check (2), rather than problems in a session (1).
            // A FIFO or device found in a folder is skipped and reported (1).
            unreadable: !matches!(e, sessiontree::Error::NotRegular { .. }),
            error: Some(e.to_string()),
            diagnostics: Vec::new(),
            interrupted: Vec::new(),
            notes: Vec::new(),
        },
    }
}

/// Exit 0 clean, 1 problems found, 2 could not read.
pub fn verify(out: &mut Out, target: &Path, json_out: bool) -> Result<u8> {
    let mut files = Vec::new();
    let meta = std::fs::metadata(target);
    match meta {
        Ok(m) if m.is_dir() => {
            if let Err(e) = collect(target, &mut files) {
                eprintln!(
                    "sessiontree: {}: {}",
                    safe::path(target),
                    safe::line(&e.to_string())
                );
                return Ok(2);
            }
        }
        Ok(m) if !m.is_file() => {
            eprintln!(
                "sessiontree: {}: not a regular file ({}); not read",
                safe::path(target),
                sessiontree::store::kind_name(&m.file_type())
            );
            return Ok(2);
        }
        Ok(_) => files.push(target.to_path_buf()),
        Err(e) => {
            eprintln!(
                "sessiontree: {}: {}",
                safe::path(target),
                crate::paths::os_text(&e)
            );
            return Ok(2);
        }
    }
    let reports: Vec<FileReport> = files.iter().map(|f| check(f)).collect();
    if json_out {
        let arr: Vec<_> = reports
            .iter()
            .map(|r| {
                let mut o = serde_json::Map::new();
                o.insert("path".into(), json!(r.path.display().to_string()));
                o.insert("ok".into(), json!(r.ok()));
                if let Some(e) = &r.error {
                    o.insert("error".into(), json!(e));
                }
                o.insert(
                    "diagnostics".into(),
                    serde_json::to_value(&r.diagnostics).expect("serializable"),
                );
                o.insert(
                    "interrupted".into(),
                    serde_json::to_value(&r.interrupted).expect("serializable"),
                );
                o.insert(
                    "notes".into(),
                    serde_json::to_value(&r.notes).expect("serializable"),
                );
                serde_json::Value::Object(o)
            })
            .collect();
        out.line(&json!({ "files": arr }).to_string())?;
    } else {
        let mut bad = 0;
        for r in &reports {
            if r.ok() {
                if reports.len() == 1 || !r.notes.is_empty() {
                    out.line(&format!("{}: ok", safe::path(&r.path)))?;
                }
                print_notes(out, r)?;
                continue;
            }
            bad += 1;
            if let Some(e) = &r.error {
                out.line(&format!(
                    "{}: {}",
                    safe::path(&r.path),
                    out.paint("31", "error")
                ))?;
                out.line(&format!("  {}", safe::line(e)))?;
            } else {
                let n = r.diagnostics.len() + r.interrupted.len();
                out.line(&format!(
                    "{}: {} problem{}",
                    safe::path(&r.path),
                    n,
                    if n == 1 { "" } else { "s" }
                ))?;
            }
            for d in &r.diagnostics {
                let kind = serde_json::to_value(d.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                out.line(&format!(
                    "  line {} (byte {}) {}: {}",
                    d.line,
                    d.offset,
                    out.paint("33", &kind),
                    safe::line(&d.message)
                ))?;
            }
            for f in &r.interrupted {
                out.line(&format!(
                    "  {}: {} (resuming would send this to the model; `sessiontree close-interrupted` or `repair --close-interrupted` closes it)",
                    out.paint("33", "interrupted"),
                    safe::line(&f.problem.describe())
                ))?;
            }
            print_notes(out, r)?;
        }
        if reports.len() != 1 {
            out.line(&format!(
                "{} file{} checked, {} ok, {} with problems",
                reports.len(),
                if reports.len() == 1 { "" } else { "s" },
                reports.len() - bad,
                bad
            ))?;
        }
    }
    Ok(if reports.iter().any(|r| r.unreadable) {
        2
    } else if reports.iter().all(|r| r.ok()) {
        0
    } else {
        1
    })
}

fn print_notes(out: &mut Out, r: &FileReport) -> Result<()> {
    for f in &r.notes {
        out.line(&format!(
            "  {}: {} (Pi went on past it and answers it with an error result; nothing to do)",
            out.paint("2", "note"),
            safe::line(&f.problem.describe())
        ))?;
    }
    Ok(())
}

/// Exit 0 repaired (or nothing to do), 2 refused or failed. With `close_interrupted`,
/// after the lines are repaired, what `close-interrupted` does is done too (results
/// appended for tool calls left without one).
pub fn repair(
    out: &mut Out,
    file: &Path,
    dry_run: bool,
    cwd: Option<String>,
    wait: Option<std::time::Duration>,
    close_interrupted: bool,
) -> Result<u8> {
    use sessiontree::repair;
    let opts = repair::PlanOptions { cwd, id: None };
    crate::paths::session_file(file)?;
    let plan = match repair::plan_file(file, &opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "sessiontree: {}",
                safe::line(&crate::paths::strip_os_code(&e.to_string()))
            );
            return Ok(2);
        }
    };
    if plan.is_noop() {
        out.line(&format!("{}: nothing to repair", safe::path(file)))?;
    } else {
        let verb = if dry_run { "would" } else { "will" };
        out.line(&format!("{}: repair {verb}:", safe::path(file)))?;
        for a in &plan.actions {
            if a.line == 0 {
                out.line(&format!("  {}", safe::line(&a.what)))?;
            } else {
                out.line(&format!(
                    "  line {} (byte {}): {}",
                    a.line,
                    a.offset,
                    safe::line(&a.what)
                ))?;
            }
        }
    }
    if dry_run {
        if close_interrupted {
            if let Ok(l) = sessiontree::session::load_bytes(file, plan.content.clone()) {
                let open = sessiontree::interrupted::open_operations(&l.tree)
                    .into_iter()
                    .filter(|o| {
                        matches!(o, sessiontree::interrupted::OpenOperation::ToolCall { .. })
                    })
                    .count();
                if open > 0 {
                    out.line(&format!(
                        "  would close {open} interrupted tool call{}",
                        if open == 1 { "" } else { "s" }
                    ))?;
                }
            }
        }
        if !plan.is_noop() || close_interrupted {
            out.line("  (dry run: nothing written)")?;
        }
        return Ok(0);
    }
    if !plan.is_noop() {
        match repair::apply(file, &opts, wait) {
            Ok(r) => {
                if let Some(b) = r.backup {
                    out.line(&format!("original kept as {}", safe::path(&b)))?;
                }
                if r.carried > 0 {
                    out.line(&format!(
                        "kept {} bytes another writer appended during the repair",
                        r.carried
                    ))?;
                }
                out.line(&format!(
                    "repaired: {} -> {} bytes",
                    r.plan.original_len,
                    r.plan.content.len() as u64 + r.carried
                ))?;
            }
            Err(e) => {
                eprintln!(
                    "sessiontree: {}",
                    safe::line(&crate::paths::strip_os_code(&e.to_string()))
                );
                return Ok(2);
            }
        }
    }
    if close_interrupted {
        let options = sessiontree::WriteOptions {
            lock_wait: wait,
            creation: sessiontree::Creation::Eager,
            ..Default::default()
        };
        match crate::interrupted::close_quiet(file, options) {
            Ok(ids) if ids.is_empty() => out.line("no interrupted tool calls to close")?,
            Ok(ids) => {
                out.line(&format!(
                    "closed {} interrupted tool call{}:",
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" }
                ))?;
                for id in ids {
                    out.line(&format!("  {}", safe::line(&id)))?;
                }
            }
            Err(e) => {
                eprintln!("sessiontree: {}", safe::line(&format!("{e:#}")));
                return Ok(2);
            }
        }
    }
    Ok(0)
}
