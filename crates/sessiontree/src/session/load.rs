//! Reading a session file without writing anything: the bytes read or mapped, parsed,
//! migrated in memory.

use crate::error::{io, Error, Result};
use crate::parse::{self, NotSession, Tail};
use crate::store;
use crate::tree::SessionTree;
use std::path::Path;

/// A parsed file: the tree and how the file looked.
pub struct Loaded {
    /// The entries, the leaf and the labels (migrated to version 3 in memory).
    pub tree: SessionTree,
    /// The file was version 1 or 2 and was migrated in memory.
    pub migrated: bool,
    /// How the file ended (a torn last line is reported, not repaired, by a load).
    pub tail: Tail,
    /// Bytes read.
    pub len: u64,
}

/// Reads a session file without writing anything (no lock, no repair, no migration on disk).
pub fn load(path: &Path) -> Result<Loaded> {
    let (backing, len) = read_or_map(path)?;
    load_backing(path, backing, len)
}

/// A session file's bytes as [`load`] gets them, for [`crate::parse::parse`]: read when
/// small or older than version 3, mapped otherwise (scanned ranges are then given back to
/// the kernel as the parse goes).
pub fn read_or_map(path: &Path) -> Result<(crate::entry::Backing, u64)> {
    // Only a regular file is read: a FIFO or a link to a device is an error at once.
    let (file, meta) = store::open_regular(path)?;
    let size = meta.len();
    // Pi rewrites version 1 and 2 files in place when it opens them (truncating first), and
    // a mapped file that shrinks would fault: such files are read, never mapped.
    let current =
        || crate::folder::read_header(path).is_some_and(|h| !crate::migrate::needs_migration(&h));
    if size < MMAP_MIN || !current() {
        let mut bytes = Vec::with_capacity(size as usize);
        std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(io(path))?;
        let len = bytes.len() as u64;
        return Ok((parse::backing(bytes), len));
    }
    // SAFETY: the map is read-only and private. Version 3 session files are only ever
    // appended to (appends past the mapped length are not seen); no writer of the format
    // truncates them (the reference truncates only to migrate older versions, read above).
    let map = unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(io(path))?;
    let len = map.len() as u64;
    let file = std::sync::RwLock::new(Some(file));
    Ok((std::sync::Arc::new(Mapped(map, file)), len))
}

/// `file`, opened as a version 3 session of `len` bytes, mapped (`None` when it cannot be,
/// or when it is not `len` bytes long).
pub(super) fn map_opened(file: std::fs::File, len: u64) -> Option<crate::entry::Backing> {
    // SAFETY: as in `read_or_map`: the map is read-only and private, and a version 3 session
    // is only ever appended to (the caller checked the file's key: it is such a session).
    let map = unsafe { memmap2::MmapOptions::new().map(&file) }.ok()?;
    if map.len() as u64 != len {
        return None;
    }
    let file = std::sync::RwLock::new(Some(file));
    Some(std::sync::Arc::new(Mapped(map, file)))
}

/// Files at least this large are mapped instead of read.
const MMAP_MIN: u64 = 1 << 20;

/// A mapped file, and the file while it is scanned (read for the scan's copies; closed
/// after, so that a session kept in memory holds no descriptor).
struct Mapped(memmap2::Mmap, std::sync::RwLock<Option<std::fs::File>>);

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl crate::entry::Buffer for Mapped {
    fn read_at(&self, at: usize, dst: &mut [u8]) -> bool {
        use std::os::unix::fs::FileExt;
        // A file shorter than the map (never, for a version 3 file) fails the read; the
        // rest is then read in place.
        let file = self.1.read().unwrap_or_else(|e| e.into_inner());
        at + dst.len() <= self.0.len()
            && file
                .as_ref()
                .is_some_and(|f| f.read_exact_at(dst, at as u64).is_ok())
    }

    fn scanned(&self) {
        self.1.write().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn release(&self, range: std::ops::Range<usize>) {
        // Whole pages inside the range only.
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = range.end / PAGE * PAGE;
        if end > start {
            // SAFETY: the map is private and read-only, never written through: dropped pages
            // are read again from the file (which is only ever appended to) when touched.
            let _ = unsafe {
                self.0.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}

fn load_backing(path: &Path, backing: crate::entry::Backing, len: u64) -> Result<Loaded> {
    let mut parsed = parse::parse(backing).map_err(|e| not_session(path, e))?;
    let migrated = crate::migrate::migrate(&mut parsed);
    let tail = parsed.tail;
    Ok(Loaded {
        tree: SessionTree::from_parsed(parsed),
        migrated,
        tail,
        len,
    })
}

/// [`load`] for bytes already read; `path` names them in errors.
pub fn load_bytes(path: &Path, bytes: Vec<u8>) -> Result<Loaded> {
    let len = bytes.len() as u64;
    load_backing(path, parse::backing(bytes), len)
}

pub(super) fn not_session(path: &Path, e: NotSession) -> Error {
    match e {
        NotSession::NoContent => Error::NoHeader {
            path: path.to_path_buf(),
        },
        NotSession::BadHeader { line, reason } => Error::NotASession {
            path: path.to_path_buf(),
            line,
            reason,
        },
    }
}
