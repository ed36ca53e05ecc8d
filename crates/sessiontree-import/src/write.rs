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
    stage_part(conv, dir, parent_session, dry_run, true)
}

/// [`stage`] of a conversion that may be cut short (`whole` false: entries at its end held
/// back while the source is still being written, see [`write_part_unsynced`]).
pub fn stage_part(
    conv: &Conversion,
    dir: &Path,
    parent_session: Option<&str>,
    dry_run: bool,
    whole: bool,
) -> Result<Staged> {
    let path = conv.path_in(dir)?;
    if dry_run || std::fs::symlink_metadata(&path).is_ok() {
        return write_part_unsynced(conv, dir, parent_session, dry_run, whole).map(Staged::Done);
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

/// Whether the file at `path` holds exactly the header and body `conv` writes. Any failure
/// to read it is a "no": the caller then loads it and reports what is wrong.
fn holds_exactly(path: &Path, conv: &Conversion, parent_session: Option<&str>) -> bool {
    let header = conv.header_line(parent_session);
    let want = header.len() as u64 + 1 + conv.body.len() as u64;
    let Ok((file, meta)) = store::open_regular(path) else {
        return false;
    };
    if meta.len() != want {
        return false;
    }
    let mut bytes = Vec::with_capacity(want as usize);
    // One byte more than expected is read if there is one: a file that grew meanwhile.
    if std::io::Read::read_to_end(&mut std::io::Read::take(&file, want + 1), &mut bytes).is_err() {
        return false;
    }
    let (head, body) = bytes.split_at(bytes.len().min(header.len()));
    bytes.len() as u64 == want
        && head == header.as_bytes()
        && body.first() == Some(&b'\n')
        && &body[1..] == conv.body.as_bytes()
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
    write_part_unsynced(conv, dir, parent_session, dry_run, true)
}

/// [`write_unsynced`] of a conversion that may be cut short: with `whole` false, entries at
/// its end were held back (its source is still being written), so its last line is not the
/// source's active leaf, and an earlier, whole conversion may already have written more of
/// it. Its missing entries are appended, but the leaf is never moved to its last line.
pub fn write_part_unsynced(
    conv: &Conversion,
    dir: &Path,
    parent_session: Option<&str>,
    dry_run: bool,
    whole: bool,
) -> Result<Outcome> {
    let path = conv.path_in(dir)?;
    if std::fs::symlink_metadata(&path).is_err() {
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
    // Only a file of its own is appended to: never through a link (to a file outside the
    // folder, or to another session), never to what import did not write.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refused(
            &path,
            "a symbolic link, not a file this import wrote; nothing written",
        ));
    }
    // The file of an earlier import that nothing touched since is byte for byte what this
    // conversion writes: then there is nothing to add, seen without parsing the file (or
    // taking its lock: nothing is written). Anything else takes the full way below.
    if holds_exactly(&path, conv, parent_session) {
        return Ok(Outcome {
            path,
            status: Status::Unchanged,
            added: 0,
        });
    }
    let _lock = if dry_run {
        None
    } else {
        Some(WriterLock::acquire(&path, Some(Duration::from_secs(10)))?)
    };
    let loaded = sessiontree::load(&path)?;
    let tree = &loaded.tree;
    if tree.session_id() != conv.session_id {
        return Err(refused(
            &path,
            &format!(
                "holds session {}, not {}; nothing written",
                tree.session_id(),
                conv.session_id
            ),
        ));
    }
    if !conv.marked(tree.header()) {
        return Err(refused(
            &path,
            &format!(
                "not written by an import of {} session {} (its header has no such importedFrom mark): \
                 import only appends to files it created; nothing written",
                conv.agent.source_name(),
                conv.source_session_id
            ),
        ));
    }
    let mut bytes: Vec<u8> = Vec::new();
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
    // A conversion cut short does not know the source's active leaf.
    let want = conv.lines.last().filter(|_| whole);
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
    // A file whose last line is incomplete: an append of an earlier import killed between
    // two pages of its one write (the kernel stops a write at a page for a fatal signal).
    // That line is the start of what this append writes there, and is completed by
    // appending the rest; nothing is rewritten. Any other incomplete line is not ours.
    let fix = match loaded.tail {
        Tail::Clean => TailFix::Clean,
        _ if dry_run => TailFix::Clean,
        Tail::MissingNewline => {
            if own_last_line(&path, conv)? {
                TailFix::Newline
            } else {
                TailFix::NotOurs
            }
        }
        Tail::Torn { offset } if added > 0 => {
            let fragment = read_from(&path, offset, loaded.len)?;
            if !fragment.is_empty() && bytes.starts_with(&fragment) {
                TailFix::Rest(fragment.len())
            } else {
                TailFix::NotOurs
            }
        }
        Tail::Torn { .. } => TailFix::NotOurs,
    };
    if added == 0 && !matches!(fix, TailFix::Newline) {
        return Ok(Outcome {
            path,
            status: Status::Unchanged,
            added,
        });
    }
    if !dry_run {
        let bytes = match fix {
            TailFix::Clean => bytes,
            TailFix::Rest(n) => bytes.split_off(n),
            TailFix::Newline => {
                let mut b = b"\n".to_vec();
                b.extend_from_slice(&bytes);
                b
            }
            TailFix::NotOurs => {
                return Err(refused(
                    &path,
                    "does not end with a complete line; run `sessiontree repair` on it first",
                ))
            }
        };
        let mut app = Appender::open_no_follow(&path, loaded.len, Durability::Entry)?;
        app.append(&bytes, &"imported entries")?;
    }
    Ok(Outcome {
        path,
        status: Status::Appended,
        added,
    })
}

/// How an append treats the file's last line.
enum TailFix {
    /// Complete (or a dry run): nothing to do.
    Clean,
    /// The first `n` bytes of the append are already there, cut off by a kill: the rest
    /// is written.
    Rest(usize),
    /// The last line is a whole entry of this conversion without its newline: the newline
    /// goes first.
    Newline,
    /// Not what an import of this conversion would write: refused.
    NotOurs,
}

/// The bytes of `path` from `from` to `to`.
fn read_from(path: &Path, from: u64, to: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let (mut f, _) = store::open_regular(path)?;
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut out = Vec::new();
    f.take(to.saturating_sub(from))
        .read_to_end(&mut out)
        .map_err(io)?;
    Ok(out)
}

/// Whether the last line of `path` (one without its newline) is, byte for byte, the line
/// `conv` writes for the entry it names.
fn own_last_line(path: &Path, conv: &Conversion) -> Result<bool> {
    let (file, meta) = store::open_regular(path)?;
    drop(file);
    // The longest line this conversion writes bounds what needs reading.
    let longest = conv.lines.iter().map(|l| l.range.len()).max().unwrap_or(0) as u64;
    let from = meta.len().saturating_sub(longest + 1);
    let tail = read_from(path, from, meta.len())?;
    let line = match memchr::memrchr(b'\n', &tail) {
        Some(i) => &tail[i + 1..],
        None if from == 0 => &tail[..],
        None => return Ok(false),
    };
    let id = crate::jv::parse(std::str::from_utf8(line).unwrap_or(""))
        .and_then(|v| v.get("id").and_then(V::as_str).map(str::to_string));
    Ok(id.is_some_and(|id| {
        conv.lines
            .iter()
            .any(|l| l.id == id && conv.json(l).as_bytes() == line)
    }))
}

/// An error naming the file import refused to write to, and why.
fn refused(path: &Path, why: &str) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(why.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An earlier import's file is taken as complete without loading it only when it is
    /// byte for byte the conversion's (and then loading it would find every entry, with
    /// the source's active leaf last); any change to it takes the full way.
    #[test]
    fn only_an_untouched_earlier_import_is_complete_without_loading_it() {
        let tmp = tempfile::tempdir().unwrap();
        let mut checked = 0;
        for (k, src) in crate::fixture_files().iter().enumerate() {
            let bytes = std::fs::read(src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy();
            let convs = if src.parent().unwrap().ends_with("codex")
                || src.parent().unwrap().ends_with("codex-recorded")
            {
                vec![crate::codex::convert(&bytes, &stem)]
            } else {
                crate::claude::convert(&bytes, &stem)
            };
            for (n, conv) in convs.iter().enumerate() {
                if conv.lines.is_empty() {
                    continue;
                }
                let dir = tmp.path().join(format!("{k}-{n}"));
                let parent = Some("/elsewhere/parent.jsonl");
                let path = write(conv, &dir, parent, false).unwrap().path;
                assert!(holds_exactly(&path, conv, parent), "{}", src.display());
                let loaded = sessiontree::load(&path).unwrap();
                for l in &conv.lines {
                    assert!(loaded.tree.contains(&l.id));
                }
                assert_eq!(
                    loaded.tree.leaf_id(),
                    conv.lines.last().map(|l| l.id.as_str())
                );
                // Another header (the parent's path changed) is not the same file.
                assert!(!holds_exactly(&path, conv, None));
                let original = std::fs::read(&path).unwrap();
                let mut changed = Vec::new();
                // Pi went on with the session.
                let mut more = original.clone();
                more.extend_from_slice(
                    br#"{"type":"label","id":"0badf00d","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":"x","label":"l"}"#,
                );
                more.push(b'\n');
                changed.push(more);
                // The same length, one byte different (in the last entry).
                let mut flipped = original.clone();
                let at = flipped.len() - 3;
                flipped[at] ^= 0x01;
                changed.push(flipped);
                // Cut short.
                changed.push(original[..original.len() - 1].to_vec());
                for c in changed {
                    std::fs::write(&path, &c).unwrap();
                    assert!(!holds_exactly(&path, conv, parent), "{}", src.display());
                }
                std::fs::write(&path, &original).unwrap();
                // Not a regular file: not read at all.
                std::fs::remove_file(&path).unwrap();
                std::fs::create_dir(&path).unwrap();
                assert!(!holds_exactly(&path, conv, parent));
                checked += 1;
            }
        }
        assert!(checked >= 16, "{checked}");
    }
    /// The first `n` entries of `conv`, as an import of its source's start writes them.
    fn first(conv: &Conversion, n: usize) -> Conversion {
        let mut c = conv.clone();
        c.lines.truncate(n);
        c.body
            .truncate(c.lines.last().map_or(0, |l| l.range.end + 1));
        c.settled = c.settled.min(n);
        c
    }

    /// A kill in the middle of an import's append leaves the file ending in the first bytes
    /// of that one write (cut at any byte: the kernel stops at a page, wherever the page
    /// falls in the lines). The next import completes the line it finds cut off and the
    /// file ends byte for byte as a one-shot import's; an incomplete line that is not the
    /// start of what it would write is refused, the file left as it was.
    #[test]
    fn an_append_cut_off_by_a_kill_is_completed_by_the_next_import() {
        let tmp = tempfile::tempdir().unwrap();
        let mut checked = 0;
        for (k, src) in crate::fixture_files().iter().enumerate() {
            let bytes = std::fs::read(src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy();
            let convs = if src.to_string_lossy().contains("codex") {
                vec![crate::codex::convert(&bytes, &stem)]
            } else {
                crate::claude::convert(&bytes, &stem)
            };
            for (n, conv) in convs.iter().enumerate() {
                if conv.lines.len() < 3 {
                    continue;
                }
                let whole = conv.to_bytes(None);
                let before = first(conv, conv.lines.len() / 2);
                let start = before.to_bytes(None).len();
                let rest = &whole[start..];
                // Some thirty cuts anywhere, and each line cut just before its newline.
                let step = (rest.len() / 30).max(1);
                let mut cuts: Vec<usize> = (1..rest.len()).step_by(step).collect();
                cuts.extend(memchr::memchr_iter(b'\n', rest).filter(|&i| i > 0));
                // A newline can fall on a step: each cut once (each has its own folder).
                cuts.sort_unstable();
                cuts.dedup();
                for cut in cuts {
                    let dir = tmp.path().join(format!("{k}-{n}-{cut}"));
                    let path = write(&before, &dir, None, false).unwrap().path;
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&path)
                        .unwrap();
                    std::io::Write::write_all(&mut f, &rest[..cut]).unwrap();
                    let o = write(conv, &dir, None, false)
                        .unwrap_or_else(|e| panic!("{} cut at {cut}: {e}", src.display()));
                    assert_eq!(o.status, Status::Appended);
                    assert_eq!(
                        std::fs::read(&path).unwrap(),
                        whole,
                        "{} cut at {cut} of {}",
                        src.display(),
                        rest.len()
                    );
                    checked += 1;
                }
                // Not the start of what this import writes: refused, nothing written.
                let dir = tmp.path().join(format!("{k}-{n}-other"));
                let path = write(&before, &dir, None, false).unwrap().path;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                std::io::Write::write_all(&mut f, br#"{"type":"message","id":"0ther"#).unwrap();
                let kept = std::fs::read(&path).unwrap();
                let e = write(conv, &dir, None, false).unwrap_err().to_string();
                assert!(e.contains("does not end with a complete line"), "{e}");
                assert_eq!(std::fs::read(&path).unwrap(), kept);
            }
        }
        assert!(checked > 500, "{checked}");
    }
}
