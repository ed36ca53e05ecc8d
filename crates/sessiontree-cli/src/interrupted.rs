//! `sessiontree interrupted` and `sessiontree close-interrupted`: work a crash left half
//! done, found and made safe (appends only). Reusable by `verify` and `repair`.

use crate::out::Out;
use anyhow::{Context as _, Result};
use sessiontree::interrupted::{self, Finding, Problem, Scope};
use sessiontree::{EntryType, Session, SessionTree, WriteOptions};
use std::path::Path;

/// The findings on a tree, for `verify` and friends.
pub fn findings(tree: &SessionTree, all_branches: bool) -> Vec<Finding> {
    let scope = if all_branches {
        Scope::AllBranches
    } else {
        Scope::CurrentBranch
    };
    interrupted::detect(tree, scope)
}

/// Whether Pi went on past a dangling tool call on the current branch: a later message
/// that the model sees as a user or assistant turn (a user message, a reply, a bash run,
/// a custom message, a summary) or a compaction follows it. Pi then answers the call for
/// the provider (an error result "No result provided" when it builds the request), so
/// resuming works; only a call with nothing but results after it is interrupted work at
/// the leaf.
pub fn resumed_past(tree: &SessionTree, f: &Finding) -> bool {
    let Problem::DanglingToolCall { entry_id, .. } = &f.problem else {
        return false;
    };
    let path = tree.get_branch(None);
    let Some(at) = path.iter().position(|e| e.id() == Some(entry_id.as_str())) else {
        return false;
    };
    path[at + 1..].iter().any(|e| match e.entry_type {
        EntryType::Message => e.role() != Some("toolResult"),
        EntryType::CustomMessage | EntryType::Compaction | EntryType::BranchSummary => true,
        _ => false,
    })
}

/// Prints findings: one line each, or a JSON array. Returns how many there were.
pub fn print_findings(out: &mut Out, found: &[Finding], json: bool) -> Result<usize> {
    if json {
        out.line(&serde_json::to_string(found)?)?;
    } else {
        for f in found {
            let what = crate::safe::line(&f.problem.describe()).into_owned();
            match &f.leaf {
                Some(l) => out.line(&format!("{what} (branch to {})", crate::safe::line(l)))?,
                None => out.line(&what)?,
            }
        }
    }
    Ok(found.len())
}

/// `sessiontree interrupted FILE`: true when something was found.
pub fn list(out: &mut Out, file: &Path, all_branches: bool, json: bool) -> Result<bool> {
    let l = sessiontree::load(file).with_context(|| format!("cannot read {}", file.display()))?;
    let found = findings(&l.tree, all_branches);
    Ok(print_findings(out, &found, json)? > 0)
}

/// `sessiontree close-interrupted FILE`: appends the results, prints their ids.
pub fn close(out: &mut Out, file: &Path, options: WriteOptions) -> Result<Vec<String>> {
    let ids = close_quiet(file, options)?;
    for id in &ids {
        out.line(id)?;
    }
    Ok(ids)
}

/// Appends an error result for every tool call on the current branch that has none (what
/// `close-interrupted` does; `repair --close-interrupted` too); returns their ids.
pub fn close_quiet(file: &Path, options: WriteOptions) -> Result<Vec<String>> {
    if !file.exists() {
        anyhow::bail!("{}: no such file", file.display());
    }
    let mut s = Session::open(file, options)
        .with_context(|| format!("cannot open {} for writing", file.display()))?;
    let ids = interrupted::close_interrupted(&mut s)
        .with_context(|| format!("cannot append to {}", file.display()))?;
    crate::status::report_notices(&mut s);
    Ok(ids)
}
