//! Session folders: finding sessions without reading their bodies.

use crate::dirs;
use crate::entry::Header;
use crate::json::scan;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How far into a file the header is looked for.
pub(crate) const HEADER_SCAN_LIMIT: usize = 1024 * 1024;

/// The header of a session file: the first line that parses, if it is a valid header,
/// looked for within the first MiB. `None` for anything else (best effort, as discovery is).
pub fn read_header(path: &Path) -> Option<Header> {
    let (f, _) = crate::store::open_regular(path).ok()?;
    let mut buf = Vec::new();
    f.take(HEADER_SCAN_LIMIT as u64 + 1)
        .read_to_end(&mut buf)
        .ok()?;
    let mut pos = 0;
    let mut line_no = 0;
    while pos < buf.len() {
        let end = memchr::memchr(b'\n', &buf[pos..]).map(|i| pos + i);
        let line_end = match end {
            Some(e) => e,
            None if buf.len() > HEADER_SCAN_LIMIT => return None,
            None => buf.len(),
        };
        line_no += 1;
        let line = String::from_utf8_lossy(&buf[pos..line_end]).into_owned();
        pos = line_end + 1;
        if scan::is_blank(line.as_bytes()) {
            continue;
        }
        let Ok(s) = scan::scan(line.as_bytes()) else {
            continue;
        };
        if !crate::json::Raw::new_unchecked(&line.as_bytes()[s.top.clone()]).truthy() {
            continue;
        }
        let mut h = Header::parse(line)?;
        h.line = line_no;
        return Some(h);
    }
    None
}

static SKIPPED: std::sync::Mutex<Vec<(PathBuf, &'static str)>> = std::sync::Mutex::new(Vec::new());

/// Notes a `*.jsonl` name that a folder walk skipped because it is not a regular file.
pub fn note_skipped(path: PathBuf, what: &'static str) {
    let mut v = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if !v.iter().any(|(p, _)| *p == path) {
        v.push((path, what));
    }
}

/// The `*.jsonl` names folder walks skipped since the last call (FIFOs, devices, folders,
/// links to them), with what each is: for a command to report them. Each path once.
pub fn take_skipped() -> Vec<(PathBuf, &'static str)> {
    std::mem::take(&mut *SKIPPED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Whether a folder entry is a regular file (a symlink is followed). Anything else is
/// noted with [`note_skipped`]: walks never read a FIFO or a device.
pub fn regular_entry(e: &std::fs::DirEntry) -> bool {
    let ft = match e.file_type() {
        Ok(t) if t.is_file() => return true,
        Ok(t) if t.is_symlink() => std::fs::metadata(e.path()).map(|m| m.file_type()),
        Ok(t) => Ok(t),
        Err(err) => Err(err),
    };
    match ft {
        Ok(t) if t.is_file() => true,
        Ok(t) => {
            note_skipped(e.path(), crate::store::kind_name(&t));
            false
        }
        // A dangling link or a file gone meanwhile: nothing to read, nothing to say.
        Err(_) => false,
    }
}

/// `*.jsonl` files of a folder in Node's `readdirSync` order: libuv's scandir sorts names
/// (byte order), which decides ties in mtime and which of two same-id files is found.
/// Only regular files (see [`regular_entry`]).
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl") && regular_entry(e))
        .map(|e| e.path())
        .collect();
    v.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    v
}

/// The folder sessions of `cwd` live in, and whether headers must be filtered by cwd
/// (a custom folder may hold sessions of several cwds).
pub fn folder_for(cwd: &str, session_dir: Option<&Path>) -> (PathBuf, bool) {
    let default = dirs::default_session_dir(cwd);
    match session_dir {
        Some(d) => {
            let d = dirs::resolve(&d.to_string_lossy());
            let filter = d != default;
            (d, filter)
        }
        None => (default, false),
    }
}

fn cwd_matches(header: &Header, resolved_cwd: &Path) -> bool {
    match header.cwd() {
        Some(c) if !c.is_empty() => dirs::resolve(&c) == resolved_cwd,
        _ => false,
    }
}

/// The valid session file with the newest mtime (`continueRecent`).
pub fn most_recent(cwd: &str, session_dir: Option<&Path>) -> Option<PathBuf> {
    let (dir, filter) = folder_for(cwd, session_dir);
    let resolved = dirs::resolve(cwd);
    // Node's `mtimeMs` (a double: sub-microsecond differences compare equal), stable sort
    // in directory order, as the reference's `findMostRecentSession`.
    let mut files: Vec<(PathBuf, f64)> = jsonl_files(&dir)
        .into_iter()
        .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, node_mtime_ms(&m))))
        .collect();
    files.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    files
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| match read_header(p) {
            Some(h) => !filter || cwd_matches(&h, &resolved),
            None => false,
        })
}

/// The file of the session with exactly this id (`findById`).
pub fn find_by_id(cwd: &str, id: &str, session_dir: Option<&Path>) -> Option<PathBuf> {
    let (dir, filter) = folder_for(cwd, session_dir);
    let resolved = dirs::resolve(cwd);
    jsonl_files(&dir)
        .into_iter()
        .find(|p| match read_header(p) {
            Some(h) => h.id == id && (!filter || cwd_matches(&h, &resolved)),
            None => false,
        })
}

/// `fs.Stats.mtimeMs` as Node computes it: seconds * 1000 + nanoseconds / 1e6, in doubles.
#[cfg(unix)]
pub(crate) fn node_mtime_ms(m: &std::fs::Metadata) -> f64 {
    use std::os::unix::fs::MetadataExt;
    m.mtime() as f64 * 1000.0 + m.mtime_nsec() as f64 / 1e6
}

/// `fs.Stats.mtimeMs` (milliseconds since the epoch, fractional).
#[cfg(not(unix))]
pub(crate) fn node_mtime_ms(m: &std::fs::Metadata) -> f64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(f64::NAN)
}
