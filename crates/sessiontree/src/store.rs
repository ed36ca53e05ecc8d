//! The I/O layer: one appender per session file, its lock, durability, and atomic
//! rewrites. Nothing here ever truncates a session file or rewrites one in place.

use crate::error::{io, Error, LockHolder, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
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
/// fsyncs a folder: names linked, renamed or removed in it are durable afterwards.
pub fn sync_folder(dir: &Path) -> Result<()> {
    sync_dir(dir)
}

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

/// What a file type is, in words, for errors.
pub fn kind_name(ft: &std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a folder"
    } else if ft.is_symlink() {
        "a symlink"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a regular file"
    }
}

/// Opens an existing file for reading, only if it is a regular file (symlinks followed).
/// The open is non-blocking, so a FIFO never hangs it, and the type is checked on the
/// opened handle (`fstat`), so nothing but a regular file is ever read.
pub fn open_regular(path: &Path) -> Result<(File, std::fs::Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io(path))?;
    let meta = file.metadata().map_err(io(path))?;
    if !meta.file_type().is_file() {
        return Err(Error::NotRegular {
            path: path.to_path_buf(),
            what: kind_name(&meta.file_type()),
        });
    }
    Ok((file, meta))
}

/// A last line without `\n` counts as torn only once the file's size has not changed for
/// this long: a writer that takes no lock (Pi) may be in the middle of writing it.
pub const TAIL_SETTLE: Duration = Duration::from_millis(60);
/// How long a growing last line is waited for at most.
pub const TAIL_MAX_WAIT: Duration = Duration::from_secs(2);

/// Waits until `file`'s size has stayed the same for [`TAIL_SETTLE`] (at most
/// [`TAIL_MAX_WAIT`]); returns the size then.
pub fn settle(file: &File, path: &Path) -> Result<u64> {
    let start = Instant::now();
    let mut size = file.metadata().map_err(io(path))?.len();
    let mut since = Instant::now();
    while since.elapsed() < TAIL_SETTLE && start.elapsed() < TAIL_MAX_WAIT {
        std::thread::sleep(Duration::from_millis(5));
        let now = file.metadata().map_err(io(path))?.len();
        if now != size {
            size = now;
            since = Instant::now();
        }
    }
    Ok(size)
}

/// Reads a whole file through `file`. When it does not end with `\n`, its last line may
/// still be being written by another process: the size is watched until it settles and
/// the rest is read, so that the bytes returned end where a writer stopped.
pub fn read_settled(file: &File, path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut f = file;
    f.seek(SeekFrom::Start(0)).map_err(io(path))?;
    f.read_to_end(&mut bytes).map_err(io(path))?;
    while bytes.last().is_some_and(|&b| b != b'\n') {
        let size = settle(file, path)?;
        if size <= bytes.len() as u64 {
            break;
        }
        f.seek(SeekFrom::Start(bytes.len() as u64))
            .map_err(io(path))?;
        f.read_to_end(&mut bytes).map_err(io(path))?;
    }
    Ok(bytes)
}

/// Temporary files are named `.<file>.tmp-<pid>-<random>`: recognizably ours, and whose.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let r = uuid::Uuid::new_v4().simple().to_string();
    parent_of(path).join(format!(".{name}.tmp-{}-{}", std::process::id(), &r[..8]))
}

/// A temp file of a rewrite is stale when its process is gone and it was last written this
/// long ago.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes temp copies of `path` (and of its sidecars and backups) left by killed
/// rewrites: named `.<file>[.torn-…|.bak-…].tmp-<pid>-<8 hex>`, regular files, their
/// process no longer running, untouched for [`STALE_TEMP_AGE`]. Called by the next
/// rewrite of that file, under its lock. Returns what was removed.
pub fn clean_stale_temps(path: &Path) -> Vec<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    clean_temps(&parent_of(path), Some(&format!(".{name}")))
}

/// [`clean_stale_temps`] for every session file of a folder (`.<name>.jsonl….tmp-…`): what
/// a killed writer of many files (import, which writes a run's new files aside before
/// naming them) left there. Returns what was removed.
pub fn clean_stale_temps_in(dir: &Path) -> Vec<PathBuf> {
    clean_temps(dir, None)
}

fn clean_temps(dir: &Path, own: Option<&str>) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let entry_name = e.file_name().to_string_lossy().into_owned();
        // Temp files of the file itself and of its sidecars and backups:
        // `.<file>.tmp-…`, `.<file>.torn-<offset>….tmp-…`, `.<file>.bak-<time>….tmp-…`.
        let rest = match own {
            Some(own) => entry_name.strip_prefix(own),
            None => entry_name.strip_prefix('.').and_then(|r| {
                let at = r.find(".jsonl")?;
                Some(&r[at + ".jsonl".len()..])
            }),
        };
        let Some(rest) = rest else {
            continue;
        };
        let Some((middle, rest)) = rest.rsplit_once(".tmp-") else {
            continue;
        };
        if !(middle.is_empty() || middle.starts_with(".torn-") || middle.starts_with(".bak-")) {
            continue;
        }
        let Some((pid, tag)) = rest.split_once('-') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if tag.len() != 8 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        if pid == std::process::id() || pid_alive(pid) {
            continue;
        }
        let Ok(m) = e.metadata() else { continue };
        let old = m
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a >= STALE_TEMP_AGE);
        if m.file_type().is_file() && old && std::fs::remove_file(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

fn write_temp(path: &Path, content: &[&[u8]]) -> Result<PathBuf> {
    let (tmp, _) = write_temp_open(path, content)?;
    Ok(tmp)
}

fn write_temp_open(path: &Path, content: &[&[u8]]) -> Result<(PathBuf, File)> {
    write_temp_open_with(path, content, true)
}

fn write_temp_open_with(path: &Path, content: &[&[u8]], sync: bool) -> Result<(PathBuf, File)> {
    let tmp = temp_path(path);
    let mut file = None;
    let result = (|| -> std::io::Result<()> {
        // O_APPEND: after the rename, lines carried over must land after anything another
        // writer appended to the new file meanwhile.
        let mut f = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&tmp)?;
        for c in content {
            f.write_all(c)?;
        }
        if sync {
            f.sync_all()?;
        }
        file = Some(f);
        Ok(())
    })();
    match (result, file) {
        (Ok(()), Some(f)) => Ok((tmp, f)),
        (r, _) => {
            let _ = std::fs::remove_file(&tmp);
            Err(Error::Io {
                path: tmp,
                source: r
                    .err()
                    .unwrap_or_else(|| std::io::Error::other("temp file")),
            })
        }
    }
}

/// Replaces `path` with `content`: a new file is written and fsynced, renamed over the
/// old one, and the folder fsynced. A crash leaves either the old or the new file whole.
/// For a session file that another process may append to, use [`replace_carrying`].
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

/// What the old file gained past `upto`: whole lines (a last line still being written is
/// waited for, see [`settle`]).
fn gained(old: &File, path: &Path, upto: u64) -> Result<Vec<u8>> {
    let size = old.metadata().map_err(io(path))?.len();
    if size < upto {
        return Err(Error::Raced {
            path: path.to_path_buf(),
            what: format!("it shrank from {upto} to {size} bytes"),
        });
    }
    if size == upto {
        return Ok(Vec::new());
    }
    let mut bytes = Vec::new();
    let mut f = old;
    f.seek(SeekFrom::Start(upto)).map_err(io(path))?;
    f.read_to_end(&mut bytes).map_err(io(path))?;
    while bytes.last().is_some_and(|&b| b != b'\n') {
        let now = settle(old, path)?;
        if now <= upto + bytes.len() as u64 {
            break;
        }
        f.seek(SeekFrom::Start(upto + bytes.len() as u64))
            .map_err(io(path))?;
        f.read_to_end(&mut bytes).map_err(io(path))?;
    }
    Ok(bytes)
}

pub(crate) fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.ino() == b.ino() && a.dev() == b.dev()
}

/// Replaces the session file `path` (the real file, symlinks already resolved) with
/// `content`, made from its first `read_len` bytes, without losing what a writer that takes
/// no lock (Pi) appends meanwhile. `old` is an open handle on the file being replaced.
///
/// After the new file is written, what the old one gained since it was read is appended
/// to it, until nothing more arrives; then it is fsynced and renamed over the old one.
/// After the rename the old inode is looked at twice more (at once and shortly after) for
/// lines from a writer that opened it before the rename, and those are appended to the
/// new file too. Returns the bytes carried over. Stale temp files of killed rewrites are
/// cleaned up first.
pub fn replace_carrying(
    path: &Path,
    old: &File,
    read_len: u64,
    content: &[&[u8]],
) -> Result<Vec<u8>> {
    clean_stale_temps(path);
    let old_meta = old.metadata().map_err(io(path))?;
    let (tmp, mut new) = write_temp_open(path, content)?;
    let fail = |tmp: &Path, e: Error| {
        let _ = std::fs::remove_file(tmp);
        e
    };
    let mut carried = Vec::new();
    let mut upto = read_len;
    loop {
        match std::fs::symlink_metadata(path) {
            Ok(m) if same_file(&m, &old_meta) => {}
            _ => {
                return Err(fail(
                    &tmp,
                    Error::Raced {
                        path: path.to_path_buf(),
                        what: "another file took its name".into(),
                    },
                ))
            }
        }
        let more = gained(old, path, upto).map_err(|e| fail(&tmp, e))?;
        if more.is_empty() {
            break;
        }
        new.write_all(&more).map_err(|e| {
            fail(
                &tmp,
                Error::Io {
                    path: tmp.clone(),
                    source: e,
                },
            )
        })?;
        upto += more.len() as u64;
        carried.extend_from_slice(&more);
    }
    if let Err(e) = new.sync_all().and_then(|()| std::fs::rename(&tmp, path)) {
        return Err(fail(
            &tmp,
            Error::Io {
                path: path.to_path_buf(),
                source: e,
            },
        ));
    }
    // A writer that opened the old file just before the rename writes into the old inode.
    for pause in [Duration::ZERO, Duration::from_millis(10)] {
        std::thread::sleep(pause);
        let more = gained(old, path, upto)?;
        if more.is_empty() {
            continue;
        }
        new.write_all(&more).map_err(io(path))?;
        new.sync_all().map_err(io(path))?;
        upto += more.len() as u64;
        carried.extend_from_slice(&more);
    }
    sync_dir(&parent_of(path))?;
    Ok(carried)
}

/// Creates `path` with `content`, failing if it exists. The file appears whole or not at
/// all: it is written to a temporary name and linked into place.
pub fn create_exclusive(path: &Path, content: &[&[u8]]) -> Result<()> {
    create_exclusive_unsynced(path, content)?;
    sync_dir(&parent_of(path))
}

/// [`create_exclusive`] without the folder's fsync: the file's content is on disk before
/// its name appears (so it still appears whole or not at all), but the name itself is
/// durable only once the caller calls [`sync_folder`] on its folder. For writers of many
/// new files (import), one folder sync per batch instead of one per file.
pub fn create_exclusive_unsynced(path: &Path, content: &[&[u8]]) -> Result<()> {
    // Written and synced aside, then linked (the temporary name goes either way).
    Aside {
        tmp: write_temp(path, content)?,
        path: path.to_path_buf(),
    }
    .link()
}

/// A new file written beside its final name: its content not yet synced, its name not yet
/// there. For writers of many new files (import): write each aside, make them all durable
/// at once with [`sync_file_systems`], then [`Aside::link`] each. Each file still appears
/// whole or not at all, with its content on disk before its name. Dropped without being
/// linked, the file goes.
#[derive(Debug)]
pub struct Aside {
    tmp: PathBuf,
    path: PathBuf,
}

/// Writes `content` aside for `path` (see [`Aside`]). Where the file systems cannot be
/// synced at once (not Linux), the file is synced here.
pub fn write_aside(path: &Path, content: &[&[u8]]) -> Result<Aside> {
    let (tmp, _file) = write_temp_open_with(path, content, !cfg!(target_os = "linux"))?;
    // Start writing it to disk now, without waiting: the sync at the end then finds most
    // of the run's files written already.
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; only asks the kernel to start writeback.
        unsafe {
            libc::sync_file_range(_file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    Ok(Aside {
        tmp,
        path: path.to_path_buf(),
    })
}

impl Aside {
    /// The name the file will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the file its name, failing with [`Error::Exists`] if the name is taken. Call
    /// [`sync_file_systems`] for its folder first.
    pub fn link(self) -> Result<()> {
        match std::fs::hard_link(&self.tmp, &self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::Exists {
                path: self.path.clone(),
            }),
            Err(e) => Err(Error::Io {
                path: self.path.clone(),
                source: e,
            }),
        }
    }
}

impl Drop for Aside {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Puts everything written to the file systems of `folders` on disk: one `syncfs` per file
/// system (Linux; elsewhere [`write_aside`] synced each file already). One flush of the
/// disk instead of one per file; it also waits for what other programs wrote there.
pub fn sync_file_systems<'p>(folders: impl IntoIterator<Item = &'p Path>) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let mut done = std::collections::HashSet::new();
        for d in folders {
            let f = File::open(d).map_err(io(d))?;
            let dev = f.metadata().map_err(io(d))?.dev();
            if !done.insert(dev) {
                continue;
            }
            // SAFETY: a valid open descriptor; syncfs reads nothing from memory.
            if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
                return Err(Error::Io {
                    path: d.to_path_buf(),
                    source: std::io::Error::last_os_error(),
                });
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = folders;
    Ok(())
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

fn holder_from(text: &str) -> LockHolder {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    LockHolder {
        pid: v.get("pid").and_then(|p| p.as_u64()).map(|p| p as u32),
        host: v.get("host").and_then(|h| h.as_str()).map(str::to_string),
        since: v.get("since").and_then(|h| h.as_str()).map(str::to_string),
    }
}

fn holder_of(file: &File) -> LockHolder {
    let mut buf = vec![0u8; 4096];
    let n = file.read_at(&mut buf, 0).unwrap_or(0);
    holder_from(&String::from_utf8_lossy(&buf[..n]))
}

/// The real location of a session file: symlinks resolved for an existing file, or for
/// the folder of one that does not exist yet. Falls back to the path as given. Every
/// rewrite, lock, sidecar and backup of a session works on this path, so a symlinked
/// session is never replaced by a regular file.
pub fn resolve_target(session: &Path) -> PathBuf {
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

fn lock_refused(path: &Path, what: String) -> Error {
    Error::LockPath {
        path: path.to_path_buf(),
        what,
    }
}

fn describe_object(path: &Path, m: &std::fs::Metadata) -> Option<String> {
    let ft = m.file_type();
    if ft.is_symlink() {
        let to = std::fs::read_link(path)
            .map(|t| format!(" to {}", t.display()))
            .unwrap_or_default();
        return Some(format!("a symlink{to}"));
    }
    if !ft.is_file() {
        return Some(kind_name(&ft).to_string());
    }
    if m.nlink() > 1 {
        return Some(format!(
            "a file with {} hard links (another name points to it)",
            m.nlink()
        ));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me {
        return Some(format!("a file owned by user {} (we are {me})", m.uid()));
    }
    None
}

/// Opens (creating it if missing) the lock file at `path`, refusing anything that is not
/// a plain lock file: a symlink is never followed (`O_NOFOLLOW`), and the opened object
/// must be a regular file with one link, owned by us. Nothing is truncated or written.
fn open_lock_file(path: &Path) -> Result<File> {
    // Look before opening: a device or FIFO at the lock path is never even opened.
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if let Some(what) = describe_object(path, &m) {
            return Err(lock_refused(path, what));
        }
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => lock_refused(path, "a symlink".into()),
            Some(libc::EISDIR) => lock_refused(path, "a folder".into()),
            _ => Error::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
    let m = file.metadata().map_err(io(path))?;
    if let Some(what) = describe_object(path, &m) {
        return Err(lock_refused(path, what));
    }
    Ok(file)
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
    /// writers reaching one file through different paths still exclude each other. It is
    /// never taken for a session path that is not a regular file (a FIFO, a device), and
    /// the lock file itself must be a plain file of ours (see `open_lock_file`). Who holds
    /// the lock is written into it only once the lock is ours.
    pub fn acquire(session: &Path, wait: Option<Duration>) -> Result<WriterLock> {
        let target = resolve_target(session);
        if let Ok(m) = std::fs::metadata(&target) {
            if !m.file_type().is_file() {
                return Err(Error::NotRegular {
                    path: session.to_path_buf(),
                    what: kind_name(&m.file_type()),
                });
            }
        }
        let path = lock_path(&target);
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            let file = open_lock_file(&path)?;
            match file.try_lock() {
                Ok(()) => {
                    // The holder before us may have removed the file after we opened it:
                    // the lock only counts if our handle is still the file at the path.
                    let same = match (file.metadata(), std::fs::symlink_metadata(&path)) {
                        (Ok(a), Ok(b)) => same_file(&a, &b) && a.nlink() == 1,
                        _ => false,
                    };
                    if !same {
                        continue;
                    }
                    let info = serde_json::json!({
                        "pid": std::process::id(),
                        "host": hostname(),
                        "since": crate::date::now_iso(),
                    });
                    // The file is verified to be ours and locked: only now is it written.
                    let _ = file.set_len(0);
                    let _ = file.write_all_at(info.to_string().as_bytes(), 0);
                    return Ok(WriterLock { path, file });
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = holder_of(&file);
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
        // sees that it no longer is the file at the path and tries again. Only our own file
        // is removed, never something that took its name.
        let ours = match (self.file.metadata(), std::fs::symlink_metadata(&self.path)) {
            (Ok(a), Ok(b)) => same_file(&a, &b),
            _ => false,
        };
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
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
        Appender::open_with(path, len, durability, 0)
    }

    /// [`Appender::open`] for a writer that appends only to files of its own (import):
    /// a symbolic link at `path` is refused (`O_NOFOLLOW`), never written through.
    pub fn open_no_follow(path: &Path, len: u64, durability: Durability) -> Result<Appender> {
        Appender::open_with(path, len, durability, libc::O_NOFOLLOW)
    }

    fn open_with(path: &Path, len: u64, durability: Durability, flags: i32) -> Result<Appender> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .custom_flags(flags)
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
        self.growth_from(None)
    }

    /// Waits until the file's size settles (see [`settle`]) and returns it.
    pub fn settle(&self) -> Result<u64> {
        settle(&self.file, &self.path)
    }

    /// [`Appender::growth`]; when the file grew and `rewind` is given (the start of a last
    /// line that looked torn), the bytes are read from there instead: that line was still
    /// being written.
    pub fn growth_from(&mut self, rewind: Option<u64>) -> Result<Option<Growth>> {
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
        if let Some(r) = rewind.filter(|&r| r < self.len) {
            self.len = r;
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

fn holds_exactly(side: &Path, fragment: &[u8]) -> bool {
    let Ok(f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(side)
    else {
        return false;
    };
    match f.metadata() {
        Ok(m) if m.file_type().is_file() && m.len() == fragment.len() as u64 => {}
        _ => return false,
    }
    let mut buf = Vec::with_capacity(fragment.len());
    (&f).take(fragment.len() as u64 + 1)
        .read_to_end(&mut buf)
        .is_ok()
        && buf == fragment
}

/// Copies the torn last line of a file to `<file>.torn-<offset>` (fsynced) so that the
/// bytes are never lost, and returns the sidecar's path. When that name is taken (by an
/// earlier fragment at the same offset, or anything else), the next free name
/// `<file>.torn-<offset>-<n>` is used: a sidecar is created exclusively, never
/// overwritten, and an existing one is never taken for this fragment. `path` is the real
/// file (symlinks resolved), so the sidecar lands beside it.
pub(crate) fn save_torn_tail(path: &Path, offset: u64, fragment: &[u8]) -> Result<PathBuf> {
    for n in 0u32.. {
        let mut s = path.as_os_str().to_owned();
        if n == 0 {
            s.push(format!(".torn-{offset}"));
        } else {
            s.push(format!(".torn-{offset}-{n}"));
        }
        let side = PathBuf::from(s);
        match create_exclusive(&side, &[fragment]) {
            Ok(()) => return Ok(side),
            // The same fragment saved by an earlier run that died before ending the line.
            Err(Error::Exists { .. }) if holds_exactly(&side, fragment) => return Ok(side),
            Err(Error::Exists { .. }) if n < 10_000 => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}
