//! The index's listings as Pi-shaped JSON, kept in a file beside the database
//! (`<index>.listing`) so that `ls --json` hands them to the kernel without copying them:
//! the file is mapped and its ranges go out with vectored writes.
//!
//! The file is a 16-byte header (`STLIST01` and a random nonce) followed by JSON texts.
//! It is only ever appended to, inside a refresh's write transaction (which serializes
//! writers); the database keeps each listing's `(offset, len)`, the store's nonce and the
//! length it had at the last commit. A compaction writes a new file with a new nonce and
//! renames it over the old one before the transaction commits, so a reader whose snapshot
//! names one nonce either still holds that file open or sees a mismatch and retries.
//! Nothing is ever truncated or rewritten in place, so a mapped range never goes away.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"STLIST01";
pub(crate) const HEADER_LEN: u64 = 16;

/// The open store file.
pub(crate) struct Store {
    pub path: PathBuf,
    file: File,
    pub nonce: u64,
}

/// Why a store does not match its database.
#[derive(Debug)]
pub(crate) enum Mismatch {
    Io(std::io::Error),
    /// Missing, not a store, another nonce, or shorter than the database says.
    Stale(String),
}

impl Mismatch {
    fn into_io(self) -> std::io::Error {
        match self {
            Mismatch::Io(e) => e,
            Mismatch::Stale(why) => std::io::Error::other(why),
        }
    }
}

impl From<std::io::Error> for Mismatch {
    fn from(e: std::io::Error) -> Self {
        Mismatch::Io(e)
    }
}

/// The store of an index file.
pub(crate) fn path_for(index: &Path) -> PathBuf {
    let mut p = index.as_os_str().to_owned();
    p.push(".listing");
    PathBuf::from(p)
}

fn new_nonce() -> u64 {
    let b = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

impl Store {
    /// Creates an empty store (a new nonce) at `path`, replacing what is there.
    pub fn create(path: &Path) -> std::io::Result<Store> {
        let nonce = new_nonce();
        let (tmp, mut f) = create_temp(path)?;
        f.write_all(MAGIC)?;
        f.write_all(&nonce.to_le_bytes())?;
        f.sync_data()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        Store::open(path, nonce, HEADER_LEN).map_err(Mismatch::into_io)
    }

    /// Opens the store and checks that it is the one the database describes.
    pub fn open(path: &Path, nonce: u64, committed_len: u64) -> Result<Store, Mismatch> {
        let mut file = match OpenOptions::new().read(true).append(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Mismatch::Stale("missing".into()))
            }
            Err(e) => return Err(e.into()),
        };
        let mut head = [0u8; HEADER_LEN as usize];
        if file.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
            return Err(Mismatch::Stale("not a listing store".into()));
        }
        let found = u64::from_le_bytes(head[8..].try_into().expect("8 bytes"));
        if found != nonce {
            return Err(Mismatch::Stale("another store".into()));
        }
        let len = file.metadata()?.len();
        if len < committed_len {
            return Err(Mismatch::Stale(format!(
                "{len} bytes, the index needs {committed_len}"
            )));
        }
        Ok(Store {
            path: path.to_path_buf(),
            file,
            nonce,
        })
    }

    /// Appends `text`; returns its offset.
    pub fn append(&mut self, text: &[u8]) -> std::io::Result<u64> {
        let at = self.file.seek(SeekFrom::End(0))?;
        self.file.write_all(text)?;
        Ok(at)
    }

    pub fn len(&self) -> std::io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// Makes what was appended durable (before the database commits the ranges).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Writes a new store holding `ranges` of this one, in that order, and renames it over
    /// this one's path. Returns the new store and each range's new offset.
    pub fn compact(&self, ranges: &[(u64, u64)]) -> std::io::Result<(Store, Vec<u64>)> {
        use std::os::unix::fs::FileExt;
        let nonce = new_nonce();
        let (tmp, file) = create_temp(&self.path)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC)?;
        out.write_all(&nonce.to_le_bytes())?;
        let mut at = HEADER_LEN;
        let mut offsets = Vec::with_capacity(ranges.len());
        let mut buf = Vec::new();
        let have = self.file.metadata()?.len();
        for &(off, len) in ranges {
            // A range the store does not hold (a damaged length or offset in the
            // database) is not copied: its listing then fails its check and is read again.
            if off.checked_add(len).is_none_or(|end| end > have) {
                offsets.push(at);
                continue;
            }
            buf.resize(len as usize, 0);
            self.file.read_exact_at(&mut buf, off)?;
            out.write_all(&buf)?;
            offsets.push(at);
            at += len;
        }
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_data()?;
        drop(f);
        std::fs::rename(&tmp, &self.path)?;
        let store = Store::open(&self.path, nonce, at).map_err(Mismatch::into_io)?;
        Ok((store, offsets))
    }

    /// Maps the store for reading (ranges up to its current length).
    pub fn map(&self) -> std::io::Result<memmap2::Mmap> {
        // SAFETY: read-only and private; the store is never truncated or written in place
        // by sessiontree (appends past the mapped length are not seen; compaction writes a
        // new file and renames it over). Readers check every range against its checksum
        // before the kernel writes it out with vectored writes.
        unsafe { memmap2::Mmap::map(&self.file) }
    }
}

/// A new temporary file beside `path` (`<path>.tmp-<pid>-<random>`), created exclusively:
/// never a name another process chose (or planted a link at), never reused.
pub(crate) fn create_temp(path: &Path) -> std::io::Result<(PathBuf, File)> {
    loop {
        let r = uuid::Uuid::new_v4().simple().to_string();
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".tmp-{}-{}", std::process::id(), &r[..12]));
        let p = PathBuf::from(p);
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Removes a store (when its index is deleted).
pub(crate) fn remove(index: &Path) {
    let _ = std::fs::remove_file(path_for(index));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: temporary names were `<path>.tmp-<pid>`, opened with `File::create`: a
    /// link planted there had the store (or the search summaries) written through it.
    #[test]
    fn temporary_files_never_follow_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = d.path().join("index.sqlite.listing");
        let planted = PathBuf::from(format!("{}.tmp-{}", path.display(), std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let mut store = Store::create(&path).unwrap();
        let at = store.append(b"{\"a\":1}").unwrap();
        let (store, offsets) = store.compact(&[(at, 7)]).unwrap();
        assert_eq!(offsets, vec![HEADER_LEN]);
        assert_eq!(&store.map().unwrap()[16..], b"{\"a\":1}");
        let summaries = d.path().join("search.summaries");
        let planted = PathBuf::from(format!(
            "{}.tmp-{}",
            summaries.display(),
            std::process::id()
        ));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        crate::summary::build(&summaries, &[], 1).unwrap();
        assert!(summaries.is_file());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let a = create_temp(&path).unwrap().0;
        let b = create_temp(&path).unwrap().0;
        assert_ne!(a, b);
    }
}
