//! The I/O layer: one appender per session file, its lock, durability, and atomic
//! rewrites. Nothing here ever truncates a session file or rewrites one in place.

use crate::error::{io, Error, LockHolder, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// When appended entries reach the disk (see ARCHITECTURE.md, "Durability").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Written to the OS with one `write`; no fsync (what the reference does).
    None,
    /// fsync after every entry: an acknowledged entry survives power loss.
    Entry,
    /// Group commit: fsync when an append comes at least `interval` after the last fsync,
    /// at [`crate::Session::sync`], and when the session is dropped.
    Batch {
        /// How long after the last fsync an append triggers the next one.
        interval: Duration,
    },
}

/// When a new session's file is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creation {
    /// At the first user or assistant message (Pi 1.6). Setup entries alone leave no file.
    OnFirstMessage,
    /// At the first assistant message (Pi 0.83, the seed).
    OnFirstAssistant,
    /// The header is written at once.
    Eager,
}

/// How a session is opened for writing.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// When appended lines reach stable storage.
    pub durability: Durability,
    /// When a new session's file appears.
    pub creation: Creation,
    /// Wait this long for another writer's lock; `None` fails at once.
    pub lock_wait: Option<Duration>,
    /// Take the writer lock (on by default; off only for tests of the reference's behaviour).
    pub lock: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            durability: Durability::Entry,
            creation: Creation::OnFirstMessage,
            lock_wait: None,
            lock: true,
        }
    }
}

/// fsyncs a folder, so that a created or renamed file's name is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).map_err(io(dir))?;
    d.sync_all().map_err(io(dir))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let r = uuid::Uuid::new_v4().simple().to_string();
    parent_of(path).join(format!(".{name}.tmp-{}-{}", std::process::id(), &r[..8]))
}

fn write_temp(path: &Path, content: &[&[u8]]) -> Result<PathBuf> {
    let tmp = temp_path(path);
    let result = (|| -> std::io::Result<()> {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        for c in content {
            f.write_all(c)?;
        }
        f.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Io {
            path: tmp,
            source: e,
        });
    }
    Ok(tmp)
}

/// Replaces `path` with `content`: a new file is written and fsynced, renamed over the
/// old one, and the folder fsynced. A crash leaves either the old or the new file whole.
pub fn atomic_replace(path: &Path, content: &[&[u8]]) -> Result<()> {
    let tmp = write_temp(path, content)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: e,
        });
    }
    sync_dir(&parent_of(path))
}

/// Creates `path` with `content`, failing if it exists. The file appears whole or not at
/// all: it is written to a temporary name and linked into place.
pub fn create_exclusive(path: &Path, content: &[&[u8]]) -> Result<()> {
    let tmp = write_temp(path, content)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => sync_dir(&parent_of(path)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Exists {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(Error::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// The lock file of a session: `<file>.lock` beside it.
pub fn lock_path(session: &Path) -> PathBuf {
    let mut s = session.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Reads who holds a lock, from the lock file's content.
pub(crate) fn read_holder(lock_file: &Path) -> LockHolder {
    let text = std::fs::read_to_string(lock_file).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    LockHolder {
        pid: v.get("pid").and_then(|p| p.as_u64()).map(|p| p as u32),
        host: v.get("host").and_then(|h| h.as_str()).map(str::to_string),
        since: v.get("since").and_then(|h| h.as_str()).map(str::to_string),
    }
}

/// The real location of a session file: symlinks resolved for an existing file, or for
/// the folder of one that does not exist yet. Falls back to the path as given.
fn canonical_target(session: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(session) {
        return p;
    }
    match (session.parent(), session.file_name()) {
        (Some(_), Some(name)) => match std::fs::canonicalize(parent_of(session)) {
            Ok(d) => d.join(name),
            Err(_) => session.to_path_buf(),
        },
        _ => session.to_path_buf(),
    }
}

/// An exclusive advisory lock (flock) on a session's lock file, held while writing.
/// The kernel releases it when the holder dies, so a crashed writer never blocks others.
#[derive(Debug)]
pub struct WriterLock {
    path: PathBuf,
    file: File,
}

impl WriterLock {
    /// Takes the lock for `session`, waiting up to `wait` for another holder.
    ///
    /// The lock file sits beside the file the path resolves to (symlinks followed), so two
    /// writers reaching one file through different paths still exclude each other.
    pub fn acquire(session: &Path, wait: Option<Duration>) -> Result<WriterLock> {
        let path = lock_path(&canonical_target(session));
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))?;
            match file.try_lock() {
                Ok(()) => {
                    // The holder before us may have removed the file after we opened it:
                    // the lock only counts if our handle is still the file at the path.
                    let same = match (file.metadata(), std::fs::metadata(&path)) {
                        (Ok(a), Ok(b)) => {
                            use std::os::unix::fs::MetadataExt;
                            a.ino() == b.ino() && a.dev() == b.dev()
                        }
                        _ => false,
                    };
                    if !same {
                        continue;
                    }
                    let mut f = &file;
                    let info = serde_json::json!({
                        "pid": std::process::id(),
                        "host": hostname(),
                        "since": crate::date::now_iso(),
                    });
                    let _ = file.set_len(0);
                    let _ = f.write_all(info.to_string().as_bytes());
                    return Ok(WriterLock { path, file });
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = read_holder(&path);
                    match deadline {
                        Some(d) if Instant::now() < d => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        _ => {
                            return Err(Error::Locked {
                                path: session.to_path_buf(),
                                holder,
                            })
                        }
                    }
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::Io { path, source: e }),
            }
        }
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Remove the file while still holding the lock; a waiter that opened the old file
        // sees that it no longer is the file at the path and tries again.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The append side of one session file.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: File,
    /// Bytes of the file this appender has seen or written.
    len: u64,
    durability: Durability,
    last_sync: Instant,
    unsynced: bool,
    /// Bytes this appender knows to be on stable storage (after its last fsync).
    synced_len: u64,
    poisoned: Option<String>,
}

/// Lines that appeared in the file since the appender last looked.
pub struct Growth {
    /// Where the new bytes start in the file.
    pub from: u64,
    /// Everything appended since, as read (the last line may still be incomplete).
    pub bytes: Vec<u8>,
}

impl Appender {
    /// Opens an existing file for appending; `len` is how much of it the caller has read.
    pub fn open(path: &Path, len: u64, durability: Durability) -> Result<Appender> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io(path))?;
        Ok(Appender {
            path: path.to_path_buf(),
            file,
            len,
            durability,
            last_sync: Instant::now(),
            unsynced: false,
            synced_len: 0,
            poisoned: None,
        })
    }

    /// The file appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length as far as this appender knows: what the caller had read, plus what
    /// it appended or saw appended since ([`Appender::growth`]).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when [`Appender::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many bytes of the file this appender has fsynced (0 until its first fsync).
    /// Under [`Durability::Entry`] it equals [`Appender::len`] after every append.
    pub fn synced_len(&self) -> u64 {
        self.synced_len
    }

    fn check(&self) -> Result<()> {
        match &self.poisoned {
            Some(what) => Err(Error::Poisoned {
                path: self.path.clone(),
                what: what.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Reads what other writers appended since we last looked (none when the size is unchanged).
    pub fn growth(&mut self) -> Result<Option<Growth>> {
        self.check()?;
        // The file's end by `lseek` (cheaper than `fstat`; the descriptor is O_APPEND, so its
        // position does not decide where writes go, and reads below seek first).
        let size = (&self.file)
            .seek(SeekFrom::End(0))
            .map_err(io(&self.path))?;
        if size == self.len {
            return Ok(None);
        }
        if size < self.len {
            self.poisoned = Some(format!("the file shrank from {} to {size} bytes", self.len));
            return Err(Error::Shrunk {
                path: self.path.clone(),
                expected: self.len,
                found: size,
            });
        }
        let mut bytes = Vec::with_capacity((size - self.len) as usize);
        let mut f = &self.file;
        f.seek(SeekFrom::Start(self.len)).map_err(io(&self.path))?;
        f.take(size - self.len)
            .read_to_end(&mut bytes)
            .map_err(io(&self.path))?;
        let from = self.len;
        self.len += bytes.len() as u64;
        Ok(Some(Growth { from, bytes }))
    }

    /// Appends bytes with one `write` (O_APPEND), then applies the durability policy.
    /// On failure the appender is poisoned: the error says how much was written.
    pub fn append(&mut self, bytes: &[u8], what: &dyn std::fmt::Display) -> Result<()> {
        self.check()?;
        let mut written = 0usize;
        let mut f = &self.file;
        while written < bytes.len() {
            match f.write(&bytes[written..]) {
                Ok(0) => {
                    return Err(self.poison(
                        what,
                        written,
                        bytes.len(),
                        std::io::Error::new(std::io::ErrorKind::WriteZero, "wrote nothing"),
                    ))
                }
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.poison(what, written, bytes.len(), e)),
            }
        }
        self.len += bytes.len() as u64;
        self.unsynced = true;
        match self.durability {
            Durability::None => Ok(()),
            Durability::Entry => self.sync(),
            Durability::Batch { interval } => {
                if self.last_sync.elapsed() >= interval {
                    self.sync()
                } else {
                    Ok(())
                }
            }
        }
    }

    fn poison(
        &mut self,
        what: &dyn std::fmt::Display,
        written: usize,
        total: usize,
        e: std::io::Error,
    ) -> Error {
        let state = if written == 0 {
            format!("{what} was not written")
        } else {
            format!("{what} was cut off after {written} of {total} bytes; the next open moves the fragment aside")
        };
        self.poisoned = Some(format!("{e}; {state}"));
        self.len += written as u64;
        Error::Io {
            path: self.path.clone(),
            source: std::io::Error::new(e.kind(), format!("{e}; {state}")),
        }
    }

    /// fsyncs what was appended.
    pub fn sync(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        if let Err(e) = self.file.sync_data() {
            // After a failed fsync the page cache state is unknown: refuse further writes.
            self.poisoned = Some(format!("fsync failed: {e}"));
            return Err(Error::Io {
                path: self.path.clone(),
                source: e,
            });
        }
        self.unsynced = false;
        self.synced_len = self.len;
        self.last_sync = Instant::now();
        Ok(())
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        if self.poisoned.is_none() && matches!(self.durability, Durability::Batch { .. }) {
            let _ = self.sync();
        }
    }
}

/// Copies the torn last line of a file to `<file>.torn-<offset>` (fsynced) so that the
/// bytes are never lost, and returns the sidecar's path.
pub(crate) fn save_torn_tail(path: &Path, offset: u64, fragment: &[u8]) -> Result<PathBuf> {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".torn-{offset}"));
    let side = PathBuf::from(s);
    if side.exists() {
        return Ok(side);
    }
    let tmp = write_temp(&side, &[fragment])?;
    std::fs::rename(&tmp, &side).map_err(io(&side))?;
    sync_dir(&parent_of(path))?;
    Ok(side)
}
