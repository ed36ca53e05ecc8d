//! Putting a conversion on disk. A new Pi file appears whole or not at all (written aside,
//! linked into place, failing if the name exists); an existing one (an earlier import of
//! the same source) is only appended to, under the session's writer lock: the entries it
//! lacks, then, if the source's active leaf would not be the last line, one `custom`
//! entry under that leaf so that Pi's "last line is the leaf" rule picks it.

use crate::jv::{obj, V};
use crate::{fnv, Conversion};
use sessiontree::parse::Tail;
use sessiontree::store::{self, Appender, WriterLock};
use sessiontree::{Durability, Error, Result};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A new file (with `--dry-run`: would be).
    Created,
    /// Entries were appended to the file of an earlier import.
    Appended,
    /// The file already holds everything.
    Unchanged,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Appended => "appended",
            Status::Unchanged => "unchanged",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub path: PathBuf,
    pub status: Status,
    /// Entries written (or that would be).
    pub added: usize,
}

/// Writes `conv` into the folder `dir` as `<timestamp>_<id>.jsonl`.
pub fn write(
    conv: &Conversion,
    dir: &Path,
    parent_session: Option<&str>,
    dry_run: bool,
) -> Result<Outcome> {
    let out = write_unsynced(conv, dir, parent_session, dry_run)?;
    if out.status == Status::Created && !dry_run {
        store::sync_folder(dir)?;
    }
    Ok(out)
}

/// A conversion on its way to disk: see [`stage`].
#[derive(Debug)]
pub enum Staged {
    /// Written (an earlier import's file completed, or nothing to add), or a dry run.
    Done(Outcome),
    /// A new file written aside, with the outcome it has once linked: sync its file system
    /// ([`store::sync_file_systems`]), then [`store::Aside::link`] it; if the name was taken
    /// meanwhile, complete that file with [`write_unsynced`] instead.
    Aside(store::Aside, Outcome),
}

/// [`write_unsynced`] for writers of many files: a new file is only written aside, so that
/// one sync of the file system makes all of them durable before any gets its name.
pub fn stage(
    conv: &Conversion,
    dir: &Path,
    parent_session: Option<&str>,
    dry_run: bool,
) -> Result<Staged> {
    let path = dir.join(conv.file_name());
    if dry_run || path.exists() {
        return write_unsynced(conv, dir, parent_session, dry_run).map(Staged::Done);
    }
    let header = prepare_new(conv, dir, parent_session)?;
    let aside = store::write_aside(&path, &[header.as_bytes(), conv.body.as_bytes()])?;
    Ok(Staged::Aside(aside, created(conv, path)))
}

/// Makes the folder of a new file; gives the file's header line (with its newline).
fn prepare_new(conv: &Conversion, dir: &Path, parent_session: Option<&str>) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut header = conv.header_line(parent_session);
    header.push('\n');
    Ok(header)
}

fn created(conv: &Conversion, path: PathBuf) -> Outcome {
    Outcome {
        path,
        status: Status::Created,
        added: conv.lines.len(),
    }
}

/// [`write()`] without the folder's fsync after creating a file: the new file's content is on
/// disk before its name appears, but the name is durable only after
/// [`store::sync_folder`]`(dir)`, which the caller does once for a batch of files (before
/// it reports them written).
pub fn write_unsynced(
    conv: &Conversion,
    dir: &Path,
    parent_session: Option<&str>,
    dry_run: bool,
) -> Result<Outcome> {
    let path = dir.join(conv.file_name());
    if !path.exists() {
        if dry_run {
            return Ok(created(conv, path));
        }
        let header = prepare_new(conv, dir, parent_session)?;
        let made =
            store::create_exclusive_unsynced(&path, &[header.as_bytes(), conv.body.as_bytes()]);
        match made {
            Ok(()) => return Ok(created(conv, path)),
            // Someone else created it meanwhile: complete it like an earlier import.
            Err(Error::Exists { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let _lock = if dry_run {
        None
    } else {
        Some(WriterLock::acquire(&path, Some(Duration::from_secs(10)))?)
    };
    let loaded = sessiontree::load(&path)?;
    let tree = &loaded.tree;
    if tree.session_id() != conv.session_id {
        return Err(Error::Json(format!(
            "{} holds session {}, not {}",
            path.display(),
            tree.session_id(),
            conv.session_id
        )));
    }
    let mut bytes = Vec::new();
    let mut added = 0;
    let mut ids: HashSet<&str> = HashSet::new();
    for l in &conv.lines {
        if !tree.contains(&l.id) {
            bytes.extend_from_slice(conv.json(l).as_bytes());
            bytes.push(b'\n');
            added += 1;
            ids.insert(&l.id);
        }
    }
    let last_written = conv
        .lines
        .iter()
        .rev()
        .find(|l| ids.contains(l.id.as_str()));
    let want = conv.lines.last();
    let leaf_after = match last_written {
        Some(l) => Some(l.id.as_str()),
        None => tree.leaf_id(),
    };
    if let Some(want) = want {
        if leaf_after != Some(want.id.as_str()) {
            // Move the leaf back to the source's active entry without rewriting anything.
            let n = tree.entry_count() + added;
            let mut salt = 0u64;
            let id = loop {
                let h = fnv(&[
                    b"leaf",
                    want.id.as_bytes(),
                    n.to_string().as_bytes(),
                    salt.to_string().as_bytes(),
                ]);
                let id = format!("{:08x}", (h >> 32) as u32);
                if !tree.contains(&id) && !ids.contains(id.as_str()) {
                    break id;
                }
                salt += 1;
            };
            let ts = tree
                .get_entry(&want.id)
                .and_then(|e| {
                    e.timestamp()
                        .and_then(|t| t.as_str())
                        .map(|t| t.into_owned())
                })
                .or_else(|| {
                    crate::jv::parse(conv.json(want))
                        .and_then(|v| v.get("timestamp").and_then(V::as_str).map(str::to_string))
                })
                .unwrap_or_else(|| conv.timestamp.clone());
            let line = obj! {
                "type": "custom",
                "customType": "sessiontree-import:leaf",
                "data": obj! {"leaf": want.id.as_str()},
                "id": id,
                "parentId": want.id.as_str(),
                "timestamp": ts,
            }
            .to_json();
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            added += 1;
        }
    }
    if added == 0 {
        return Ok(Outcome {
            path,
            status: Status::Unchanged,
            added,
        });
    }
    if !dry_run {
        if !matches!(loaded.tail, Tail::Clean) {
            return Err(Error::Json(format!(
                "{} does not end with a complete line; run `sessiontree repair` on it first",
                path.display()
            )));
        }
        let mut app = Appender::open(&path, loaded.len, Durability::Entry)?;
        app.append(&bytes, &"imported entries")?;
    }
    Ok(Outcome {
        path,
        status: Status::Appended,
        added,
    })
}
