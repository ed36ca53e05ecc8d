//! `sessiontree verify` and `sessiontree repair`.

use crate::out::Out;
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
}

impl FileReport {
    fn ok(&self) -> bool {
        self.error.is_none() && self.diagnostics.is_empty()
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
            out.push(p);
        }
    }
    Ok(())
}

fn check(path: &Path) -> FileReport {
    match sessiontree::load(path) {
        Ok(l) => FileReport {
            path: path.to_path_buf(),
            unreadable: false,
            error: None,
            diagnostics: l.tree.diagnostics().to_vec(),
        },
        Err(e) => FileReport {
            path: path.to_path_buf(),
            // Not a session at all (empty, binary, no header) is as unreadable as an I/O
            // error: there is nothing to check (2), rather than problems in a session (1).
            unreadable: true,
            error: Some(e.to_string()),
            diagnostics: Vec::new(),
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
                eprintln!("sessiontree: {}: {e}", target.display());
                return Ok(2);
            }
        }
        Ok(_) => files.push(target.to_path_buf()),
        Err(e) => {
            eprintln!(
                "sessiontree: {}: {}",
                target.display(),
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
                serde_json::Value::Object(o)
            })
            .collect();
        out.line(&json!({ "files": arr }).to_string())?;
    } else {
        let mut bad = 0;
        for r in &reports {
            if r.ok() {
                if reports.len() == 1 {
                    out.line(&format!("{}: ok", r.path.display()))?;
                }
                continue;
            }
            bad += 1;
            if let Some(e) = &r.error {
                out.line(&format!(
                    "{}: {}",
                    r.path.display(),
                    out.paint("31", "error")
                ))?;
                out.line(&format!("  {e}"))?;
            } else {
                let n = r.diagnostics.len();
                out.line(&format!(
                    "{}: {} problem{}",
                    r.path.display(),
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
                    d.message
                ))?;
            }
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

/// Exit 0 repaired (or nothing to do), 2 refused or failed.
pub fn repair(
    out: &mut Out,
    file: &Path,
    dry_run: bool,
    cwd: Option<String>,
    wait: Option<std::time::Duration>,
) -> Result<u8> {
    use sessiontree::repair;
    let opts = repair::PlanOptions { cwd, id: None };
    crate::paths::session_file(file)?;
    let plan = match repair::plan_file(file, &opts) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "sessiontree: {}",
                crate::paths::strip_os_code(&e.to_string())
            );
            return Ok(2);
        }
    };
    if plan.is_noop() {
        out.line(&format!("{}: nothing to repair", file.display()))?;
        return Ok(0);
    }
    let verb = if dry_run { "would" } else { "will" };
    out.line(&format!("{}: repair {verb}:", file.display()))?;
    for a in &plan.actions {
        if a.line == 0 {
            out.line(&format!("  {}", a.what))?;
        } else {
            out.line(&format!(
                "  line {} (byte {}): {}",
                a.line, a.offset, a.what
            ))?;
        }
    }
    if dry_run {
        out.line("  (dry run: nothing written)")?;
        return Ok(0);
    }
    match repair::apply(file, &opts, wait) {
        Ok(r) => {
            if let Some(b) = r.backup {
                out.line(&format!("original kept as {}", b.display()))?;
            }
            out.line(&format!(
                "repaired: {} -> {} bytes",
                r.plan.original_len,
                r.plan.content.len()
            ))?;
            Ok(0)
        }
        Err(e) => {
            eprintln!(
                "sessiontree: {}",
                crate::paths::strip_os_code(&e.to_string())
            );
            Ok(2)
        }
    }
}
