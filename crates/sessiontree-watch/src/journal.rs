//! The watch's side of the change journal ([`sessiontree::changes`]): follows
//! `<agent dir>/sessions` and every project folder in it through inotify (its own
//! instance, one watch per folder) and writes a line for every change of a `*.jsonl` name,
//! so that search, `ls` and the browser stat only those files.
//!
//! The order that makes the journal complete: a folder is followed before the line that
//! says it is there is written, and an epoch starts only once every folder is followed.
//! Whenever a change may have been missed (the event queue overflowed, a folder could not
//! be followed, the sessions folder itself moved) the epoch ends and a new one starts from
//! scratch; readers then stat every file once. Only local file systems are followed (a
//! network one changes without events): elsewhere no journal is kept.
//!
//! Writes to one file come in bursts (Pi appends an entry at a time): the first change of a
//! name is written at once, the ones after it within [`COALESCE`] as one more line at its
//! end, so a reader is never more than that behind.

use sessiontree::changes::Journal;
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Changes of one name within this long after a line for it are written as one more line.
pub const COALESCE: Duration = Duration::from_millis(100);
/// A journal this long is replaced by a new epoch (readers stat every file once).
const ROTATE_AT: u64 = 4 << 20;

/// The sessions folder: its project folders coming and going, and itself.
const ROOT_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;
/// A project folder: its files' writes and metadata changes too.
const FOLDER_MASK: u32 = ROOT_MASK | libc::IN_MODIFY | libc::IN_ATTRIB;

/// File systems whose changes all come as inotify events (a network or FUSE file system
/// can change without one).
fn local_fs(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path and a zeroed struct the call fills.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    const LOCAL: [i64; 11] = [
        0xEF53,     // ext2/3/4
        0x58465342, // xfs
        0x9123683E, // btrfs
        0x01021994, // tmpfs
        0xF2F52010, // f2fs
        0x2FC12FC1, // zfs
        0xCA451A4E, // bcachefs
        0x3153464A, // jfs
        0x52654973, // reiserfs
        0x794C7630, // overlayfs
        0x858458F6, // ramfs
    ];
    LOCAL.contains(&(st.f_type as i64))
}

/// Why an epoch ended.
enum End {
    /// Asked to stop.
    Stopped,
    /// Start again now (the queue overflowed, the journal grew long).
    Again,
    /// Start again later: what could not be followed.
    Broken(String),
}

struct Follower {
    fd: std::os::fd::OwnedFd,
    sessions: PathBuf,
    root: i32,
    /// Watch descriptor -> the folder names it stands for (two links to one folder share it).
    folders: HashMap<i32, Vec<OsString>>,
    journal: Option<Journal>,
    /// Line key -> when its last line was written, and whether it changed since.
    recent: HashMap<(u8, OsString, OsString), (Instant, bool)>,
    /// Session files that changed -> when they last did; sent to [`keep_ahead`] once they
    /// have been quiet for [`AHEAD_AFTER`].
    settling: HashMap<PathBuf, Instant>,
    ahead: std::sync::mpsc::Sender<PathBuf>,
}

impl Follower {
    fn add(&mut self, name: &OsStr) -> Result<(), String> {
        let dir = self.sessions.join(name);
        if !std::fs::metadata(&dir).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        if !local_fs(&dir) {
            return Err(format!("{}: not a local file system", dir.display()));
        }
        let c = CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a valid inotify descriptor and a NUL-terminated path.
        let wd = unsafe {
            libc::inotify_add_watch(
                std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                c.as_ptr(),
                FOLDER_MASK,
            )
        };
        if wd < 0 {
            let e = std::io::Error::last_os_error();
            // Gone again before it could be followed: its `R` line says so.
            if e.kind() == std::io::ErrorKind::NotFound {
                return Ok(());
            }
            return Err(format!("{}: cannot follow ({e})", dir.display()));
        }
        let names = self.folders.entry(wd).or_default();
        if !names.iter().any(|n| n == name) {
            names.push(name.to_os_string());
        }
        Ok(())
    }

    fn forget(&mut self, name: &OsStr) {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        self.folders.retain(|wd, names| {
            names.retain(|n| n != name);
            if names.is_empty() {
                // SAFETY: a valid inotify descriptor; a stale wd only fails.
                unsafe { libc::inotify_rm_watch(fd, *wd) };
                false
            } else {
                true
            }
        });
    }

    fn start(sessions: &Path, ahead: std::sync::mpsc::Sender<PathBuf>) -> Result<Follower, String> {
        if !local_fs(sessions) {
            return Err(format!("{}: not a local file system", sessions.display()));
        }
        // SAFETY: plain syscall; the descriptor is owned below.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(format!("inotify: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor owned by nothing else.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
        let c = CString::new(sessions.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let root = unsafe { libc::inotify_add_watch(raw, c.as_ptr(), ROOT_MASK) };
        if root < 0 {
            return Err(format!(
                "{}: cannot follow ({})",
                sessions.display(),
                std::io::Error::last_os_error()
            ));
        }
        let mut f = Follower {
            fd,
            sessions: sessions.to_path_buf(),
            root,
            folders: HashMap::new(),
            journal: None,
            recent: HashMap::new(),
            settling: HashMap::new(),
            ahead,
        };
        let names: Vec<OsString> = std::fs::read_dir(sessions)
            .map_err(|e| format!("{}: {e}", sessions.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        for n in names {
            f.add(&n)?;
        }
        Ok(f)
    }

    /// Writes the line for `key` now, or marks it to be written at the end of its window.
    fn note(&mut self, kind: u8, folder: &OsStr, name: &OsStr) -> std::io::Result<()> {
        let key = (kind, folder.to_os_string(), name.to_os_string());
        let now = Instant::now();
        match self.recent.get_mut(&key) {
            Some((at, changed)) if now.duration_since(*at) < COALESCE => {
                *changed = true;
                Ok(())
            }
            _ => {
                self.recent.insert(key.clone(), (now, false));
                self.write(&key)
            }
        }
    }

    fn write(&mut self, key: &(u8, OsString, OsString)) -> std::io::Result<()> {
        let Some(j) = self.journal.as_mut() else {
            return Ok(());
        };
        match key.0 {
            b'F' => j.file_changed(&key.1, &key.2),
            b'D' => j.folder_changed(&key.1),
            _ => j.folders_changed(),
        }
    }

    /// The lines whose window ended with changes in it; forgets quiet names.
    fn flush(&mut self) -> std::io::Result<()> {
        let now = Instant::now();
        let due: Vec<_> = self
            .recent
            .iter()
            .filter(|(_, (at, changed))| *changed && now.duration_since(*at) >= COALESCE)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            self.recent.insert(k.clone(), (now, false));
            self.write(&k)?;
        }
        self.recent
            .retain(|_, (at, changed)| *changed || now.duration_since(*at) < COALESCE);
        Ok(())
    }

    /// Reads and writes down the events there are; `Some` when the epoch ends.
    fn events(&mut self, buf: &mut [u8]) -> Option<End> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        loop {
            // SAFETY: reading into a buffer of the given length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                return match e.kind() {
                    std::io::ErrorKind::WouldBlock => None,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => Some(End::Broken(format!("inotify: {e}"))),
                };
            }
            let n = n as usize;
            let head = std::mem::size_of::<libc::inotify_event>();
            let mut at = 0;
            while at + head <= n {
                // SAFETY: the kernel writes whole events; read unaligned from the buffer.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let len = ev.len as usize;
                let raw = &buf[at + head..(at + head + len).min(n)];
                let name = OsStr::from_bytes(
                    &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())],
                );
                at += head + len;
                if let Some(end) = self.event(ev.wd, ev.mask, name) {
                    return Some(end);
                }
            }
        }
    }

    fn event(&mut self, wd: i32, mask: u32, name: &OsStr) -> Option<End> {
        if mask & libc::IN_Q_OVERFLOW != 0 {
            return Some(End::Again);
        }
        let io = |r: std::io::Result<()>| r.err().map(|e| End::Broken(format!("journal: {e}")));
        if wd == self.root {
            if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED) != 0 {
                return Some(End::Broken(format!(
                    "{}: moved or removed",
                    self.sessions.display()
                )));
            }
            if name.is_empty() {
                return None;
            }
            if mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                // Followed first, then said to be there.
                if let Err(e) = self.add(name) {
                    return Some(End::Broken(e));
                }
            } else {
                self.forget(name);
            }
            let empty = OsString::new();
            return io(self
                .note(b'D', name, &empty)
                .and_then(|()| self.note(b'R', &empty, &empty)));
        }
        // An event of a folder no longer followed (its watch was just removed): nothing.
        let names = self.folders.get(&wd).cloned()?;
        if mask & (libc::IN_IGNORED | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
            if mask & libc::IN_IGNORED != 0 {
                self.folders.remove(&wd);
            }
            let empty = OsString::new();
            for n in &names {
                if let Some(end) = io(self.note(b'D', n, &empty)) {
                    return Some(end);
                }
            }
            return None;
        }
        if name.to_string_lossy().ends_with(".jsonl") {
            for n in &names {
                if mask & (libc::IN_MODIFY | libc::IN_MOVED_TO) != 0 {
                    let file = self.sessions.join(n).join(name);
                    self.settling.insert(file, Instant::now());
                }
                if let Some(end) = io(self.note(b'F', n, name)) {
                    return Some(end);
                }
            }
        }
        None
    }

    /// Sends the files that have been quiet long enough to be kept ahead.
    fn settled(&mut self) {
        let now = Instant::now();
        let ahead = &self.ahead;
        self.settling.retain(|file, at| {
            now.duration_since(*at) < AHEAD_AFTER || ahead.send(file.clone()).is_err()
        });
    }

    /// Follows until the epoch ends.
    fn run(&mut self, agent_dir: &Path, stop: &AtomicBool) -> End {
        match Journal::start(agent_dir) {
            Ok(j) => self.journal = Some(j),
            Err(e) => {
                return End::Broken(format!(
                    "{}: {e}",
                    agent_dir.join(sessiontree::changes::JOURNAL).display()
                ))
            }
        }
        let mut buf = vec![0u8; 64 * 1024];
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.fd);
        while !stop.load(Ordering::Relaxed) {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, COALESCE.as_millis() as i32 / 2) };
            if let Some(end) = self.events(&mut buf) {
                return end;
            }
            if let Err(e) = self.flush() {
                return End::Broken(format!("journal: {e}"));
            }
            self.settled();
            if self.journal.as_ref().is_some_and(|j| j.len() > ROTATE_AT) {
                return End::Again;
            }
        }
        End::Stopped
    }
}

/// Keeps the change journal of `agent_dir` until `stop` is set, starting a new epoch
/// whenever one ends; `log` is told why one could not be kept (then it is tried again
/// every `retry`).
pub fn keep(agent_dir: &Path, stop: &AtomicBool, retry: Duration, log: &dyn Fn(&str)) {
    let (ahead, settled) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| keep_ahead(agent_dir, settled, stop));
        follow(agent_dir, stop, retry, log, ahead);
    });
}

/// A session file quiet this long after a change has its context kept ahead of a read
/// (a little more than the time a kept context waits for a file to settle).
pub const AHEAD_AFTER: Duration = Duration::from_millis(3200);

/// When the watch starts, the contexts of at most this many of the newest large sessions
/// changed within [`AHEAD_RECENT`] are kept (fewer than a kept-context folder holds).
pub const AHEAD_AT_START: usize = 8;
/// See [`AHEAD_AT_START`].
pub const AHEAD_RECENT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Keeps the contexts of the newest large sessions when the watch starts, then of the
/// large session files it is sent, as `context` would, so that the first `context` of them
/// reads only the context's own lines; one file at a time, until every sender is gone or
/// `stop` is set.
fn keep_ahead(agent_dir: &Path, settled: std::sync::mpsc::Receiver<PathBuf>, stop: &AtomicBool) {
    use sessiontree::session::kept;
    let dir = agent_dir.join(kept::DIR_NAME);
    // False once asked to stop (checked between two files).
    let keep = |files: Vec<PathBuf>| {
        for f in &files {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            kept::keep_ahead(f, &dir);
        }
        true
    };
    if !keep(newest_large(&agent_dir.join("sessions"))) {
        return;
    }
    while let Ok(first) = settled.recv() {
        let mut files: Vec<PathBuf> = std::iter::once(first).chain(settled.try_iter()).collect();
        files.sort();
        files.dedup();
        if !keep(files) {
            return;
        }
    }
}

/// The newest [`AHEAD_AT_START`] session files under `sessions` (one folder level, as Pi
/// keeps them) large enough to keep a context for, changed within [`AHEAD_RECENT`]; regular
/// files only.
fn newest_large(sessions: &Path) -> Vec<PathBuf> {
    use sessiontree::session::kept;
    let since = std::time::SystemTime::now()
        .checked_sub(AHEAD_RECENT)
        .unwrap_or(std::time::UNIX_EPOCH);
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let entries = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten();
    for folder in entries(sessions) {
        if !folder.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for e in entries(&folder.path()) {
            if !e.file_name().as_encoded_bytes().ends_with(b".jsonl") {
                continue;
            }
            // (Not followed: a link's own type.)
            let Ok(m) = e.metadata() else { continue };
            let modified = m.modified().unwrap_or(std::time::UNIX_EPOCH);
            if m.is_file()
                && (kept::KEEP_MIN..=kept::AHEAD_MAX).contains(&m.len())
                && modified >= since
            {
                found.push((modified, e.path()));
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.truncate(AHEAD_AT_START);
    found.into_iter().map(|(_, p)| p).collect()
}

fn follow(
    agent_dir: &Path,
    stop: &AtomicBool,
    retry: Duration,
    log: &dyn Fn(&str),
    ahead: std::sync::mpsc::Sender<PathBuf>,
) {
    let sessions = agent_dir.join("sessions");
    let mut last_trouble = String::new();
    while !stop.load(Ordering::Relaxed) {
        let _ = std::fs::create_dir_all(&sessions);
        let end = match Follower::start(&sessions, ahead.clone()) {
            Ok(mut f) => f.run(agent_dir, stop),
            Err(e) => End::Broken(e),
        };
        match end {
            End::Stopped => return,
            End::Again => continue,
            End::Broken(why) => {
                if why != last_trouble {
                    log(&format!(
                        "change journal not kept: {why}; trying again every {} s",
                        retry.as_secs()
                    ));
                    last_trouble = why;
                }
                let until = Instant::now() + retry;
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}
