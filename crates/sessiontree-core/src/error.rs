//! Typed errors. Each names the file (and line) it is about.

use std::path::PathBuf;

/// Who holds a session's write lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: Option<u32>,
    /// The holder's host name (a lock on a shared file system may be held elsewhere).
    pub host: Option<String>,
    /// When the holder took the lock (ISO time).
    pub since: Option<String>,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.pid, &self.host, &self.since) {
            (None, None, None) => write!(f, "another process"),
            (pid, host, since) => {
                write!(
                    f,
                    "process {}",
                    pid.map_or("?".to_string(), |p| p.to_string())
                )?;
                if let Some(h) = host {
                    write!(f, " on {h}")?;
                }
                if let Some(s) = since {
                    write!(f, " since {s}")?;
                }
                Ok(())
            }
        }
    }
}

/// Everything a sessiontree operation can fail with. Each names the file (or entry) it is
/// about; the message says what to do where there is something to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A read, write, lock or rename failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file the operation was on.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },

    /// The first parsed line is not a valid header: the file is not a session (Pi throws
    /// "not a valid pi session"). Nothing was written to it.
    #[error("{}: not a session file: line {line}: {reason} (the file was left untouched)", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the first parsed line.
        line: u64,
        /// Why it is not a header.
        reason: String,
    },

    /// No line of the file parses to a JSON value (a file of blank or malformed lines).
    /// Nothing was written to it.
    #[error("{}: no session header (the file holds no JSON line; left untouched)", path.display())]
    NoHeader {
        /// The file.
        path: PathBuf,
    },

    /// Another process holds the session's writer lock.
    #[error("{}: session is being written by {holder}; try again later or pass a wait timeout", path.display())]
    Locked {
        /// The session file.
        path: PathBuf,
        /// Who holds the lock, as far as its lock file says.
        holder: LockHolder,
    },

    /// An earlier write of this handle failed; what is on disk is unknown, so it refuses
    /// to write more. Reopening repairs the file's end and continues.
    #[error("{}: a previous write failed ({what}); this handle refuses further writes: reopen the session to repair and continue", path.display())]
    Poisoned {
        /// The session file.
        path: PathBuf,
        /// The failure that poisoned the handle.
        what: String,
    },

    /// The file got shorter while this handle had it open: someone else rewrote it.
    #[error("{}: the file shrank from {expected} to {found} bytes while open; refusing to write", path.display())]
    Shrunk {
        /// The session file.
        path: PathBuf,
        /// The length this handle knew.
        expected: u64,
        /// The length found.
        found: u64,
    },

    /// A path that must be a regular file is a FIFO, a device, a folder or a socket (or a
    /// link to one): it was not read, and nothing was created beside it.
    #[error("{}: not a regular file ({what}); not read, nothing written beside it", path.display())]
    NotRegular {
        /// The path given.
        path: PathBuf,
        /// What is there ("a FIFO", "a character device", ...).
        what: &'static str,
    },

    /// Something other than a lock file of ours sits at `<file>.lock` (a symlink, a hard
    /// link, a folder, a FIFO, a device, another user's file): it is never followed, opened
    /// for writing or truncated.
    #[error("{}: the lock path holds {what}, not a lock file sessiontree made; refusing to use it (nothing was written; remove it if no writer runs)", path.display())]
    LockPath {
        /// The lock path.
        path: PathBuf,
        /// What is there.
        what: String,
    },

    /// A rewrite (migration, repair) found its file replaced by another or shrunk before it
    /// could rename the new one into place; nothing was replaced.
    #[error("{}: the file was replaced or shrank during the rewrite ({what}); nothing was replaced, try again", path.display())]
    Raced {
        /// The file being rewritten.
        path: PathBuf,
        /// What changed.
        what: String,
    },

    /// A file that must be new (a new session, a fork) already exists; it was not touched.
    #[error("{}: already exists", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },

    /// No entry has this id (`branch`, a label, a context edit, a fork point).
    #[error("entry {0} not found")]
    EntryNotFound(String),

    /// A context edit's target is not on the path from the root to the leaf.
    #[error("entry {0} is not on the active branch")]
    NotOnBranch(String),

    /// A context edit's target gives the model no content to replace (only
    /// `custom_message` entries and user, assistant and tool result messages do).
    #[error("entry {0} does not contribute editable model content")]
    NotEditable(String),

    /// A context edit's replacement is neither `null` nor an object with a string or array
    /// `content`.
    #[error("context edit replacement must be null or contain string/array content")]
    BadReplacement,

    /// A fork "before" an entry needs that entry to be a user message (its text is handed
    /// back to be edited and sent again).
    #[error("a fork before an entry needs a user message; {0} is not one")]
    NotAUserMessage(String),

    /// A caller-chosen session id that Pi would reject (FORMAT.md section 2).
    #[error("invalid session id {0:?}: it must be non-empty, contain only alphanumeric characters, '-', '_' and '.', and start and end with an alphanumeric character")]
    InvalidSessionId(String),

    /// Text given as JSON is not JSON (or a value does not have the expected shape).
    #[error("invalid JSON: {0}")]
    Json(String),

    /// Valid JSON that is not an entry sessiontree (or Pi) would write.
    #[error("not an entry: {0}")]
    NotAnEntry(String),

    /// The operation needs a file and the session lives in memory only.
    #[error("the session is in memory only; it has no file")]
    InMemory,
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Maps an I/O error on `path` to [`Error::Io`] naming it: `.map_err(io(path))`.
pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
