//! Typed errors. Each names the file (and line) it is about.

use std::path::PathBuf;

/// Who holds a session's write lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: Option<u32>,
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

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{}: not a session file: line {line}: {reason} (the file was left untouched)", path.display())]
    NotASession {
        path: PathBuf,
        line: u64,
        reason: String,
    },

    #[error("{}: no session header (the file holds no JSON line; left untouched)", path.display())]
    NoHeader { path: PathBuf },

    #[error("{}: session is being written by {holder}; try again later or pass a wait timeout", path.display())]
    Locked { path: PathBuf, holder: LockHolder },

    #[error("{}: a previous write failed ({what}); this handle refuses further writes: reopen the session to repair and continue", path.display())]
    Poisoned { path: PathBuf, what: String },

    #[error("{}: the file shrank from {expected} to {found} bytes while open; refusing to write", path.display())]
    Shrunk {
        path: PathBuf,
        expected: u64,
        found: u64,
    },

    #[error("{}: already exists", path.display())]
    Exists { path: PathBuf },

    #[error("entry {0} not found")]
    EntryNotFound(String),

    #[error("entry {0} is not on the active branch")]
    NotOnBranch(String),

    #[error("entry {0} does not contribute editable model content")]
    NotEditable(String),

    #[error("context edit replacement must be null or contain string/array content")]
    BadReplacement,

    #[error("a fork before an entry needs a user message; {0} is not one")]
    NotAUserMessage(String),

    #[error("invalid session id {0:?}: it must be non-empty, contain only alphanumeric characters, '-', '_' and '.', and start and end with an alphanumeric character")]
    InvalidSessionId(String),

    #[error("invalid JSON: {0}")]
    Json(String),

    #[error("the session is in memory only; it has no file")]
    InMemory,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Maps an I/O error on `path` to [`Error::Io`] naming it: `.map_err(io(path))`.
pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
