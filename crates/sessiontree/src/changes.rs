//! The change journal: which session files changed under `<agent dir>/sessions`, kept by a
//! running `sessiontree watch`, so that the commands that must know which files changed
//! (search, `ls`, the browser, the MCP server, the web UI: everything that calls
//! [`crate::list::all_files_stat`]) stat those only, instead of every file.
//!
//! * **`<agent dir>/sessiontree-changes`**, written by the watch alone. Its first line is
//!   `sessiontree-changes 1 <epoch>`; then one line per change: `F <folder>/<name>` (a
//!   `*.jsonl` name in a project folder was written, created, removed, renamed, or had its
//!   times, mode or links changed), `D <folder>` (read that project folder again whole),
//!   `R` (the list of project folders changed). Names are bytes with `%`, bytes below
//!   0x20 and 0x7f written `%XX`. The watch holds an exclusive `flock` on the file for as
//!   long as it follows every change; the epoch (random) names that one unbroken run. It
//!   ends the epoch (a new file, or none) when it may have missed a change: its event queue
//!   overflowed, a folder it cannot follow, its own end.
//! * **`<agent dir>/sessiontree-files`**, written by any reader: the file list with each
//!   file's stat as of an offset of one epoch's journal. A cache: torn, stale or of another
//!   epoch, it is ignored and every file stat'ed.
//!
//! A reader trusts the journal only while it is locked (the watch is alive) and of its
//! snapshot's epoch: then every change after the snapshot's offset is a line after that
//! offset (the watch follows a folder before it says it is there). Files the watch cannot
//! see change through their folder (a symbolic link, a file with other hard links, a name
//! that is not a regular file) are stat'ed every time. The file list found is the one a
//! full walk finds then, up to the changes of the last moment whose lines the watch has not
//! written yet (as if the command had started a moment earlier).
//!
//! `SESSIONTREE_NO_JOURNAL=1` makes every command walk and stat, as without a watch.

use crate::list::FileStat;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The journal's file name in the agent dir.
pub const JOURNAL: &str = "sessiontree-changes";
/// The snapshot's file name in the agent dir.
pub const SNAPSHOT: &str = "sessiontree-files";
const JOURNAL_MAGIC: &str = "sessiontree-changes 1 ";
const SNAPSHOT_MAGIC: &str = "sessiontree-files 1 ";
/// A journal longer than this past a snapshot is not read: every file is stat'ed (the watch
/// starts a new epoch long before, see [`Journal::len`]).
const MAX_DELTA: u64 = 16 << 20;
/// A snapshot larger than this is not read.
const MAX_SNAPSHOT: u64 = 256 << 20;
/// A reader rewrites the snapshot once it has applied this many journal bytes past it (or
/// read a folder again).
const RESAVE_AFTER: u64 = 16 << 10;

// ---------------------------------------------------------------------------------------
// Names on a line

fn escape(name: &[u8], out: &mut Vec<u8>) {
    for &b in name {
        if b == b'%' || b < 0x20 || b == 0x7f {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

fn unescape(s: &[u8]) -> Option<Vec<u8>> {
    if !s.contains(&b'%') {
        return Some(s.to_vec());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A number in ASCII digits of `radix` (10 or 16), no sign, no overflow.
fn digits(s: &[u8], radix: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(radix)?;
        n.checked_mul(radix as u64)?.checked_add(d as u64)
    })
}

/// One path component: never empty, `.`, `..`, or holding `/` or NUL.
fn component(s: &[u8]) -> Option<OsString> {
    let b = unescape(s)?;
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return None;
    }
    Some(OsString::from_vec(b))
}

// ---------------------------------------------------------------------------------------
// The writer (the watch)

/// The journal of a watch that follows `<agent dir>/sessions` ([module docs](self)). Dropped,
/// it removes its file (the epoch ends).
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    len: u64,
    line: Vec<u8>,
}

impl Journal {
    /// Starts a new epoch: its file written aside, locked, then renamed over the journal,
    /// so a reader finds either the old file (unlocked once its watch is gone) or this one,
    /// locked. Call it once every folder is followed.
    pub fn start(agent_dir: &Path) -> std::io::Result<Journal> {
        let path = agent_dir.join(JOURNAL);
        let epoch = uuid::Uuid::new_v4().simple().to_string();
        let tmp = agent_dir.join(format!(".{JOURNAL}.{epoch}"));
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .read(true)
            .create_new(true)
            .open(&tmp)?;
        let started = (|| {
            file.try_lock().map_err(|e| match e {
                std::fs::TryLockError::Error(e) => e,
                std::fs::TryLockError::WouldBlock => std::io::Error::other("locked"),
            })?;
            let head = format!("{JOURNAL_MAGIC}{epoch}\n");
            file.write_all(head.as_bytes())?;
            std::fs::rename(&tmp, &path)?;
            Ok(head.len() as u64)
        })();
        match started {
            Ok(len) => Ok(Journal {
                file,
                path,
                len,
                line: Vec::new(),
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Its length in bytes (a watch starts a new epoch once it is long).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing but the first line was written.
    pub fn is_empty(&self) -> bool {
        self.len <= JOURNAL_MAGIC.len() as u64 + 33
    }

    fn put(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        // One write: a reader sees the whole line or none of it past the last newline.
        let r = self.file.write_all(&self.line);
        self.len += self.line.len() as u64;
        self.line.clear();
        r
    }

    /// `F folder/name`: that file changed.
    pub fn file_changed(&mut self, folder: &OsStr, name: &OsStr) -> std::io::Result<()> {
        self.line.extend_from_slice(b"F ");
        let mut l = std::mem::take(&mut self.line);
        escape(folder.as_bytes(), &mut l);
        l.push(b'/');
        escape(name.as_bytes(), &mut l);
        self.line = l;
        self.put()
    }

    /// `D folder`: read that folder again whole.
    pub fn folder_changed(&mut self, folder: &OsStr) -> std::io::Result<()> {
        self.line.extend_from_slice(b"D ");
        let mut l = std::mem::take(&mut self.line);
        escape(folder.as_bytes(), &mut l);
        self.line = l;
        self.put()
    }

    /// `R`: the list of folders changed.
    pub fn folders_changed(&mut self) -> std::io::Result<()> {
        self.line.push(b'R');
        self.put()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Only our own file, while still holding its lock.
        let ours = match (self.file.metadata(), std::fs::symlink_metadata(&self.path)) {
            (Ok(a), Ok(b)) => crate::store::same_file(&a, &b),
            _ => false,
        };
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether a watch follows `agent_dir`'s sessions now (its journal is locked).
pub fn followed(agent_dir: &Path) -> bool {
    open_journal(agent_dir).is_some()
}

/// The journal if a watch holds it: the file, its epoch, and its first line's length.
fn open_journal(agent_dir: &Path) -> Option<(File, String, u64)> {
    let (file, _) = crate::store::open_regular(&agent_dir.join(JOURNAL)).ok()?;
    match file.try_lock_shared() {
        // Nobody follows: the journal of a watch that is gone.
        Ok(()) => {
            let _ = file.unlock();
            return None;
        }
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(_)) => return None,
    }
    let mut head = [0u8; 80];
    let n = file.read_at(&mut head, 0).ok()?;
    let nl = head[..n].iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&head[..nl]).ok()?;
    let epoch = line.strip_prefix(JOURNAL_MAGIC)?;
    if epoch.is_empty() || !epoch.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((file, epoch.to_string(), nl as u64 + 1))
}

/// The journal's bytes from `from` to its last complete line (at most [`MAX_DELTA`]), and
/// the offset after them.
fn read_from(file: &File, from: u64) -> Option<(Vec<u8>, u64)> {
    let len = file.metadata().ok()?.len();
    if from > len || len - from > MAX_DELTA {
        return None;
    }
    let mut buf = Vec::new();
    let mut f = file;
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(from)).ok()?;
    f.take(len - from).read_to_end(&mut buf).ok()?;
    let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    buf.truncate(end);
    Some((buf, from + end as u64))
}

// ---------------------------------------------------------------------------------------
// What a walk finds

/// A `*.jsonl` name of a project folder as a walk finds it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Found {
    pub name: OsString,
    /// `None`: it could not be stat'ed (a dangling link).
    pub stat: Option<FileStat>,
    /// What it is when it is not a regular file (skipped by every command).
    pub skipped: Option<&'static str>,
    /// Changes the watch may not see through the folder: a symbolic link, a file with other
    /// hard links, anything but a regular file. Stat'ed every time.
    pub volatile: bool,
}

impl Found {
    pub fn mtime_ms(&self) -> f64 {
        self.stat.map_or(f64::NEG_INFINITY, |s| s.mtime_ms)
    }
}

/// What `name` in `dir` is now (`None`: not there, or not a `*.jsonl` name).
fn found(
    dir: &Path,
    name: OsString,
    symlink: bool,
    meta: impl FnOnce() -> std::io::Result<std::fs::Metadata>,
) -> Option<Found> {
    if !name.to_string_lossy().ends_with(".jsonl") {
        return None;
    }
    // A symlink is followed as `fs::metadata` would.
    let meta = if symlink {
        std::fs::metadata(dir.join(&name))
    } else {
        meta()
    };
    let (stat, skipped, links) = match &meta {
        Ok(m) if !m.is_file() => (None, Some(crate::store::kind_name(&m.file_type())), 1),
        Ok(m) => (FileStat::of(m), None, m.nlink()),
        Err(_) => (None, None, 1),
    };
    Some(Found {
        name,
        stat,
        skipped,
        volatile: symlink || links > 1 || skipped.is_some() || stat.is_none(),
    })
}

/// Every `*.jsonl` name in `dir` (unsorted).
pub(crate) fn read_folder(dir: &Path) -> Vec<Found> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let symlink = e.file_type().map_or(true, |t| t.is_symlink());
            found(dir, e.file_name(), symlink, || e.metadata())
        })
        .collect()
}

/// `name` in `dir` again (`None`: gone).
fn restat(dir: &Path, name: &OsStr) -> Option<Found> {
    let meta = std::fs::symlink_metadata(dir.join(name)).ok()?;
    found(
        dir,
        name.to_os_string(),
        meta.file_type().is_symlink(),
        || Ok(meta),
    )
}

/// The project folders of `sessions` (folders and symbolic links).
fn folder_names(sessions: &Path) -> Option<Vec<OsString>> {
    let rd = std::fs::read_dir(sessions).ok()?;
    Some(
        rd.filter_map(|e| e.ok())
            .filter(|d| d.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
            .map(|d| d.file_name())
            .collect(),
    )
}

/// Every folder of `sessions` read, on up to 8 threads.
fn walk(sessions: &Path, names: Vec<OsString>) -> Vec<(OsString, Vec<Found>)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(names.len().max(1));
    let read = |n: &OsString| (n.clone(), read_folder(&sessions.join(n)));
    if threads <= 1 {
        return names.iter().map(read).collect();
    }
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let names = &names;
                let read = &read;
                sc.spawn(move || {
                    names
                        .iter()
                        .skip(t)
                        .step_by(threads)
                        .map(read)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("folder reader"))
            .collect()
    })
}

// ---------------------------------------------------------------------------------------
// The snapshot

struct Snapshot {
    epoch: String,
    offset: u64,
    folders: Vec<(OsString, Vec<Found>)>,
}

/// Saves `s`; its bytes when they are in place.
fn write_snapshot(agent_dir: &Path, s: &Snapshot) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + s.folders.iter().map(|f| f.1.len()).sum::<usize>() * 110);
    out.extend_from_slice(format!("{SNAPSHOT_MAGIC}{} {}\n", s.epoch, s.offset).as_bytes());
    let mut count = 0usize;
    for (folder, files) in &s.folders {
        out.extend_from_slice(b"D ");
        escape(folder.as_bytes(), &mut out);
        out.push(b'\n');
        for f in files {
            // Volatile names are stat'ed at every read: only the name is kept.
            match (&f.stat, f.volatile) {
                (Some(st), false) => out.extend_from_slice(
                    format!(
                        "f {} {} {:x} {} {} {} ",
                        st.size,
                        st.mtime_ns as u64,
                        st.mtime_ms.to_bits(),
                        st.dev,
                        st.ino,
                        st.ctime_ns as u64
                    )
                    .as_bytes(),
                ),
                _ => out.extend_from_slice(b"v "),
            }
            escape(f.name.as_bytes(), &mut out);
            out.push(b'\n');
            count += 1;
        }
    }
    out.extend_from_slice(format!("end {count} {}\n", out.len()).as_bytes());
    // A cache: written aside and renamed, not synced (a torn one fails its last line). The
    // name aside is new and random, created exclusively: never a file or link another
    // process put there.
    let tmp = agent_dir.join(format!(".{SNAPSHOT}.{}", uuid::Uuid::new_v4().simple()));
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&out))
        .and_then(|()| std::fs::rename(&tmp, agent_dir.join(SNAPSHOT)));
    if ok.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    Some(out)
}

fn read_snapshot(agent_dir: &Path, epoch: &str) -> Option<(Snapshot, Vec<u8>)> {
    let bytes = snapshot_bytes(agent_dir)?;
    Some((parse_snapshot(&bytes, epoch)?, bytes))
}

fn snapshot_bytes(agent_dir: &Path) -> Option<Vec<u8>> {
    let (file, meta) = crate::store::open_regular(&agent_dir.join(SNAPSHOT)).ok()?;
    if meta.len() > MAX_SNAPSHOT {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_SNAPSHOT).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The offset a snapshot was taken at, from its first line (nothing else parsed), when it
/// is of `epoch`.
fn snapshot_offset(bytes: &[u8], epoch: &str) -> Option<u64> {
    let nl = memchr::memchr(b'\n', bytes)?;
    let head = std::str::from_utf8(&bytes[..nl]).ok()?;
    let mut h = head.strip_prefix(SNAPSHOT_MAGIC)?.split(' ');
    if h.next()? != epoch {
        return None;
    }
    h.next()?.parse().ok()
}

/// `SESSIONTREE_NO_JOURNAL=1`: every command walks and stats, as without a watch.
fn journal_turned_off() -> bool {
    std::env::var_os("SESSIONTREE_NO_JOURNAL").is_some_and(|v| v != "0")
}

/// A digest of the file list a read through the journal finds: [`list_digest`].
pub type ListDigest = [u8; 32];

/// What a read through the journal reads: the epoch, the snapshot's bytes and the
/// journal's bytes after it. The same bytes give the same file list (see [`list_digest`]).
fn digest_of(epoch: &str, snapshot: &[u8], from: u64, delta: &[u8]) -> ListDigest {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"sessiontree list digest 1\0");
    h.update(epoch.as_bytes());
    h.update([0]);
    h.update((snapshot.len() as u64).to_le_bytes());
    h.update(snapshot);
    h.update(from.to_le_bytes());
    h.update(delta);
    h.finalize().into()
}

/// A digest of the file list [`crate::list::all_files_stat`] finds now, when a watch keeps
/// the journal and it can be had without building the list: the journal's epoch, the
/// snapshot of that epoch and the journal's lines after it, hashed, nothing parsed or
/// stat'ed. `None` when there is no such journal, or when the snapshot names something
/// that must be stat'ed at every read (a symbolic link, a file with other hard links, not
/// a regular file).
///
/// [`crate::list::all_files_stat_digested`] gives the same digest with the list it found,
/// when that list holds nothing that must be stat'ed every time. Two equal digests mean
/// the same list with the same stats: the journal of one epoch only grows, every change
/// to a listed name is a line of it, and the names its lines point to were stat'ed after
/// their lines were written. (A change whose line the watch has not written yet is not
/// seen, as by any read through the journal: as if the command had started a moment
/// earlier.)
pub fn list_digest(agent_dir: &Path) -> Option<ListDigest> {
    if journal_turned_off() {
        return None;
    }
    let (journal, epoch, head) = open_journal(agent_dir)?;
    let bytes = snapshot_bytes(agent_dir)?;
    let offset = snapshot_offset(&bytes, &epoch)?;
    if memchr::memmem::find(&bytes, b"\nv ").is_some() {
        return None;
    }
    let from = offset.max(head);
    let (delta, _) = read_from(&journal, from)?;
    Some(digest_of(&epoch, &bytes, from, &delta))
}

/// `s.splitn(n, |&b| b == sep)`, each separator found with memchr: splitting the
/// snapshot a byte at a time was 6% of a warm search.
fn split_n(s: &[u8], sep: u8, n: usize) -> impl Iterator<Item = &[u8]> {
    let (mut rest, mut left) = (Some(s), n);
    std::iter::from_fn(move || {
        let r = rest?;
        left = left.checked_sub(1)?;
        match (left > 0).then(|| memchr::memchr(sep, r)).flatten() {
            Some(i) => {
                rest = Some(&r[i + 1..]);
                Some(&r[..i])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

fn parse_snapshot(bytes: &[u8], epoch: &str) -> Option<Snapshot> {
    let body = bytes.strip_suffix(b"\n")?;
    let last = body.iter().rposition(|&b| b == b'\n')? + 1;
    let trailer = std::str::from_utf8(&body[last..]).ok()?;
    let mut t = trailer.strip_prefix("end ")?.split(' ');
    let count: usize = t.next()?.parse().ok()?;
    let len: usize = t.next()?.parse().ok()?;
    if len != last || t.next().is_some() {
        return None;
    }
    let mut lines = split_n(&body[..last - 1], b'\n', usize::MAX);
    lines.next()?;
    let offset = snapshot_offset(bytes, epoch)?;
    let mut folders: Vec<(OsString, Vec<Found>)> = Vec::new();
    let mut seen = 0usize;
    for line in lines {
        if let Some(f) = line.strip_prefix(b"D ") {
            folders.push((component(f)?, Vec::new()));
            continue;
        }
        let (_, files) = folders.last_mut()?;
        let found = if let Some(name) = line.strip_prefix(b"v ") {
            Found {
                name: component(name)?,
                stat: None,
                skipped: None,
                volatile: true,
            }
        } else {
            // Six numbers, each followed by a space, then the name (the rest of the line).
            let mut parts = split_n(line.strip_prefix(b"f ")?, b' ', 7);
            let mut num = |radix| digits(parts.next()?, radix);
            let size = num(10)?;
            let mtime_ns = num(10)? as i64;
            let mtime_ms = f64::from_bits(num(16)?);
            let dev = num(10)?;
            let ino = num(10)?;
            let ctime_ns = num(10)? as i64;
            let name = component(parts.next()?)?;
            Found {
                name,
                stat: Some(FileStat {
                    size,
                    mtime_ns,
                    mtime_ms,
                    dev,
                    ino,
                    ctime_ns,
                }),
                skipped: None,
                volatile: false,
            }
        };
        files.push(found);
        seen += 1;
    }
    (seen == count).then_some(Snapshot {
        epoch: epoch.to_string(),
        offset,
        folders,
    })
}

// ---------------------------------------------------------------------------------------
// The reader

/// Applies journal lines to `folders`; `None` when a line is not one the watch writes,
/// else whether a folder was read again (worth saving: a later read need not read it).
fn apply(sessions: &Path, folders: &mut Vec<(OsString, Vec<Found>)>, delta: &[u8]) -> Option<bool> {
    let mut reread = false;
    // Each line once: every line reads what is there now, so a name written a thousand
    // times since the snapshot is stat'ed once, and the order of lines does not matter.
    let mut seen = std::collections::HashSet::new();
    for line in delta.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if !seen.insert(line) {
            continue;
        }
        if line == b"R" || line.starts_with(b"D ") {
            reread = true;
        }
        if line == b"R" {
            let now = folder_names(sessions).unwrap_or_default();
            folders.retain(|(n, _)| now.contains(n));
            for n in now {
                if !folders.iter().any(|(f, _)| *f == n) {
                    let files = read_folder(&sessions.join(&n));
                    folders.push((n, files));
                }
            }
        } else if let Some(f) = line.strip_prefix(b"D ") {
            let name = component(f)?;
            let dir = sessions.join(&name);
            let here = std::fs::metadata(&dir).is_ok_and(|m| m.is_dir());
            let at = folders.iter().position(|(n, _)| *n == name);
            match (here, at) {
                (true, Some(i)) => folders[i].1 = read_folder(&dir),
                // Only a folder the list holds: a new one comes with its `R`.
                (true, None) => {}
                (false, Some(i)) => {
                    folders.swap_remove(i);
                }
                (false, None) => {}
            }
        } else if let Some(p) = line.strip_prefix(b"F ") {
            let slash = p.iter().position(|&b| b == b'/')?;
            let folder = component(&p[..slash])?;
            let name = component(&p[slash + 1..])?;
            let Some((_, files)) = folders.iter_mut().find(|(n, _)| *n == folder) else {
                continue;
            };
            let now = restat(&sessions.join(&folder), &name);
            let at = files.iter().position(|f| f.name == name);
            match (now, at) {
                (Some(f), Some(i)) => files[i] = f,
                (Some(f), None) => files.push(f),
                (None, Some(i)) => {
                    files.swap_remove(i);
                }
                (None, None) => {}
            }
        } else {
            return None;
        }
    }
    Some(reread)
}

/// Every `*.jsonl` name under `<agent dir>/sessions/*/` with what it is now (unsorted):
/// through the journal when a watch keeps one, else by stat'ing every file.
pub(crate) fn current(agent_dir: &Path) -> Vec<(PathBuf, Found)> {
    current_digested(agent_dir).0
}

/// [`current`], with the [`list_digest`] of what it found when it read through the
/// journal and found nothing that must be stat'ed at every read.
pub(crate) fn current_digested(agent_dir: &Path) -> (Vec<(PathBuf, Found)>, Option<ListDigest>) {
    let (folders, digest) = current_folders_digested(agent_dir);
    (flatten(&agent_dir.join("sessions"), folders), digest)
}

/// [`current`] folder by folder.
fn current_folders(agent_dir: &Path) -> Vec<(OsString, Vec<Found>)> {
    current_folders_digested(agent_dir).0
}

fn current_folders_digested(agent_dir: &Path) -> (Vec<(OsString, Vec<Found>)>, Option<ListDigest>) {
    let sessions = agent_dir.join("sessions");
    if journal_turned_off() {
        (walk_all(&sessions), None)
    } else {
        through_journal(agent_dir, &sessions).unwrap_or_else(|| (walk_all(&sessions), None))
    }
}

/// A `*.jsonl` name of a project folder as [`project_files`] finds it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectFile {
    /// `<agent dir>/sessions/<folder>/<name>`.
    pub path: PathBuf,
    /// Its stat as the journal (or the walk) has it.
    pub stat: Option<FileStat>,
    /// A regular file with one link, whose every change the watch sees through its folder:
    /// `stat` is its own. Anything else (a symbolic link, a file with other hard links, not a
    /// regular file) is for the caller to look at again, as it sees fit.
    pub plain: bool,
}

/// Every `*.jsonl` name under `<agent dir>/sessions/*/` (unsorted, symbolic links to folders
/// included), by folder name: through the change journal when a watch keeps one, else by a
/// walk on every core, as the listing finds them ([`crate::list::all_files_stat`]).
pub fn project_files(agent_dir: &Path) -> Vec<(OsString, Vec<ProjectFile>)> {
    let sessions = agent_dir.join("sessions");
    current_folders(agent_dir)
        .into_iter()
        .map(|(folder, files)| {
            let dir = sessions.join(&folder);
            let files = files
                .into_iter()
                .map(|f| ProjectFile {
                    path: dir.join(&f.name),
                    stat: f.stat,
                    plain: !f.volatile,
                })
                .collect();
            (folder, files)
        })
        .collect()
}

/// [`current`] by walking, whatever the journal says.
pub(crate) fn walked(agent_dir: &Path) -> Vec<(PathBuf, Found)> {
    flatten(
        &agent_dir.join("sessions"),
        walk_all(&agent_dir.join("sessions")),
    )
}

fn flatten(sessions: &Path, folders: Vec<(OsString, Vec<Found>)>) -> Vec<(PathBuf, Found)> {
    let mut out = Vec::with_capacity(folders.iter().map(|f| f.1.len()).sum());
    for (folder, files) in folders {
        let dir = sessions.join(folder);
        out.extend(files.into_iter().map(|f| (dir.join(&f.name), f)));
    }
    out
}

fn walk_all(sessions: &Path) -> Vec<(OsString, Vec<Found>)> {
    walk(sessions, folder_names(sessions).unwrap_or_default())
}

/// [`current`] when a watch follows the folder: the snapshot of its epoch with the journal
/// applied (or, with none, a walk saved as one), and the [`list_digest`] of what was read
/// when nothing in it must be stat'ed at every read.
#[allow(clippy::type_complexity)]
fn through_journal(
    agent_dir: &Path,
    sessions: &Path,
) -> Option<(Vec<(OsString, Vec<Found>)>, Option<ListDigest>)> {
    let (journal, epoch, head) = open_journal(agent_dir)?;
    let Some((mut snap, snap_bytes)) = read_snapshot(agent_dir, &epoch) else {
        // What the journal holds now, taken before the walk: a change during the walk is
        // after it, and read again next time.
        let (_, offset) = read_from(&journal, head)?;
        let snap = Snapshot {
            epoch,
            offset,
            folders: walk_all(sessions),
        };
        write_snapshot(agent_dir, &snap);
        return Some((snap.folders, None));
    };
    let from = snap.offset.max(head);
    let (delta, end) = read_from(&journal, from)?;
    let reread = apply(sessions, &mut snap.folders, &delta)?;
    let all_plain = snap
        .folders
        .iter()
        .all(|(_, files)| files.iter().all(|f| !f.volatile));
    // Names the watch cannot follow, stat'ed now.
    for (folder, files) in &mut snap.folders {
        if files.iter().any(|f| f.volatile) {
            let dir = sessions.join(&*folder);
            files.retain_mut(|f| {
                if !f.volatile {
                    return true;
                }
                match restat(&dir, &f.name) {
                    Some(now) => {
                        *f = now;
                        true
                    }
                    None => false,
                }
            });
        }
    }
    // The digest of what the next read finds: this list saved with no line after it, or
    // (not saved) the snapshot and the lines read here.
    let digest = if reread || end - snap.offset >= RESAVE_AFTER {
        snap.offset = end;
        let saved = write_snapshot(agent_dir, &snap);
        all_plain
            .then(|| Some(digest_of(&epoch, &saved?, end.max(head), b"")))
            .flatten()
    } else {
        all_plain.then(|| digest_of(&epoch, &snap_bytes, from, &delta))
    };
    Some((snap.folders, digest))
}

#[cfg(test)]
mod tests {
    /// `split_n` is `splitn` with memchr: the same pieces for every count, at separators
    /// first, last, doubled or missing.
    #[test]
    fn split_n_is_splitn() {
        let inputs: [&[u8]; 8] = [
            b"",
            b" ",
            b"a",
            b"a b",
            b" a b ",
            b"a  b",
            b"1 2 3 4 5 6 n m",
            b"ab",
        ];
        for s in inputs {
            for n in [0, 1, 2, 3, 7, usize::MAX] {
                let want: Vec<&[u8]> = s.splitn(n, |&b| b == b' ').collect();
                let got: Vec<&[u8]> = super::split_n(s, b' ', n).collect();
                assert_eq!(got, want, "{:?} in {n}", String::from_utf8_lossy(s));
            }
        }
    }
}
