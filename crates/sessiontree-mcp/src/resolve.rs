//! Which session file a `session` argument names: an id, a unique id prefix, a path, or
//! `FILE#ENTRY` as a search hit's `ref`. A path must lie under `<agent dir>/sessions`
//! (after links are resolved): a request never chooses a file outside the folder the
//! server serves.

use crate::answer::one_line;
use crate::args::{fail, ToolError};
use crate::Ctx;
use std::path::{Path, PathBuf};

/// A session file and the entry named with it (`FILE#ENTRY`, `ID#ENTRY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub path: PathBuf,
    pub id: String,
    pub entry: Option<String>,
    /// Not a file here: the archive's copy of session `id` (`path` is empty).
    pub archived: bool,
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.ends_with(".jsonl") || s.starts_with('~')
}

pub fn resolve(ctx: &Ctx, arg: &str) -> Result<Target, ToolError> {
    let arg = arg.trim();
    let shown = one_line(arg, 120);
    if looks_like_path(arg) {
        let whole = sessiontree::dirs::resolve(arg);
        let (file, entry) = if whole.exists() {
            (whole, None)
        } else {
            match arg.rsplit_once('#') {
                Some((f, e)) if !f.is_empty() && !e.is_empty() && !e.contains('/') => {
                    (sessiontree::dirs::resolve(f), Some(e.to_string()))
                }
                _ => (whole, None),
            }
        };
        let path = inside(ctx, &file, &shown)?;
        let id = sessiontree::folder::read_header(&path)
            .map(|h| h.id)
            .ok_or_else(|| {
                ToolError(format!(
                    "{shown} is not a session file (no session header on its first line)."
                ))
            })?;
        return Ok(Target {
            path,
            id,
            entry,
            archived: false,
        });
    }
    let (id_arg, entry) = match arg.split_once('#') {
        Some((i, e)) if !i.is_empty() && !e.is_empty() => (i, Some(e.to_string())),
        _ => (arg, None),
    };
    let all = match (crate::list::sessions(ctx), &ctx.cfg.archive) {
        (Ok(v), _) => v,
        (Err(_), Some(_)) => Vec::new(),
        (Err(e), None) => return Err(e),
    };
    let want = id_arg.to_lowercase();
    let exact: Vec<_> = all
        .iter()
        .filter(|i| crate::list::id_text(i).to_lowercase() == want)
        .collect();
    let found = if exact.is_empty() {
        all.iter()
            .filter(|i| crate::list::id_text(i).to_lowercase().starts_with(&want))
            .collect()
    } else {
        exact
    };
    match found.as_slice() {
        [] if ctx.cfg.archive.is_some() => archived(ctx, id_arg, entry, &shown),
        [] => fail!(
            "no session has the id or id prefix {shown:?} (list_sessions shows the ids; a path or FILE#ENTRY works too)."
        ),
        [one] => Ok(Target {
            path: inside(ctx, &one.path, &shown)?,
            id: crate::list::id_text(one),
            entry,
            archived: false,
        }),
        many => {
            // The same id in several files (a copy, a fork kept the id): the most recently
            // active one when the id was given whole, else ask for more characters.
            let ids: Vec<String> = many.iter().map(|i| crate::list::id_text(i)).collect();
            if ids.iter().all(|i| i.to_lowercase() == want) {
                return Ok(Target {
                    path: inside(ctx, &many[0].path, &shown)?,
                    id: ids[0].clone(),
                    entry,
                    archived: false,
                });
            }
            let mut some: Vec<&str> = ids.iter().map(|s| s.as_str()).take(5).collect();
            if many.len() > 5 {
                some.push("…");
            }
            fail!(
                "{shown:?} is the start of {} session ids ({}): give more of the id.",
                many.len(),
                some.join(", ")
            )
        }
    }
}

/// A session id or id prefix no local session has, in the archive: the one session it
/// names there (the copy read is chosen when it is loaded).
fn archived(
    ctx: &Ctx,
    id_arg: &str,
    entry: Option<String>,
    shown: &str,
) -> Result<Target, ToolError> {
    let Some(remote) = &ctx.cfg.archive else {
        fail!("{shown}: no such session.");
    };
    let want = id_arg.to_lowercase();
    let copies = remote.with(crate::tools::READ, |a| {
        sessiontree_archive::pull::copies(a, &[])
    })?;
    let mut ids: Vec<&str> = copies
        .iter()
        .filter(|c| c.length > 0)
        .map(|c| c.session_id.as_str())
        .filter(|i| i.to_lowercase().starts_with(&want))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if let Some(exact) = ids.iter().find(|i| i.to_lowercase() == want) {
        ids = vec![exact];
    }
    match ids.as_slice() {
        [] => fail!(
            "no session here or in the archive has the id or id prefix {shown:?} (list_sessions shows the ids; a path or FILE#ENTRY works too)."
        ),
        [one] => Ok(Target {
            path: PathBuf::new(),
            id: one.to_string(),
            entry,
            archived: true,
        }),
        many => {
            let mut some: Vec<&str> = many.iter().copied().take(5).collect();
            if many.len() > 5 {
                some.push("…");
            }
            fail!(
                "{shown:?} is the start of {} session ids in the archive ({}): give more of the id.",
                many.len(),
                some.join(", ")
            )
        }
    }
}

/// `file` after resolving links, if it is a regular file under the sessions folder.
fn inside(ctx: &Ctx, file: &Path, shown: &str) -> Result<PathBuf, ToolError> {
    let root = ctx.sessions_dir();
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let real = match std::fs::canonicalize(file) {
        Ok(p) => p,
        Err(_) => fail!("{shown}: no such session file."),
    };
    // A folder under sessions/ may be a link to one elsewhere (the listing follows such
    // links): a file the listing itself finds is served under the name it finds it by.
    let listed = || {
        let lexical = sessiontree::dirs::resolve(&file.to_string_lossy());
        sessiontree::list::all_files_stat(&ctx.cfg.agent_dir)
            .iter()
            .any(|(p, st)| st.is_some() && *p == lexical)
    };
    if !real.starts_with(&root) && !listed() {
        fail!(
            "{shown} is not under {}: only the sessions there can be read.",
            root.display()
        );
    }
    match std::fs::metadata(&real) {
        Ok(m) if m.is_file() => Ok(real),
        Ok(m) if m.is_dir() => fail!("{shown} is a folder, not a session file."),
        Ok(_) => fail!("{shown} is not a regular file (a pipe or device is never read)."),
        Err(_) => fail!("{shown}: no such session file."),
    }
}
