//! The session handle: a [`SessionTree`] plus, for sessions on disk, the file it is
//! appended to. Reading goes through `Deref` to the tree; every append builds the line
//! exactly as the reference would, writes it, and only then adds it to memory.
//!
//! Split along its seams: `load` (read-only loading), `open` (opening and
//! creating files, migration on disk), `append` (every append, the tail and other
//! writers' lines), `fork` (sessions made from sessions: forks, branched sessions,
//! navigation), `kept` (where a large session's context is, kept between reads).

mod append;
mod fork;
pub mod kept;
mod load;
mod open;

pub use crate::json::Json;
pub use append::sanitize_name;
pub use fork::{branched_entries, message_text, Forked};
pub use load::{load, load_bytes, read_or_map, Loaded};
pub use open::header_line;

use crate::error::Result;
use crate::parse::Tail;
use crate::store::{Appender, WriteOptions, WriterLock};
use crate::tree::SessionTree;
use std::path::{Path, PathBuf};

/// A session being read and written.
pub struct Session {
    tree: SessionTree,
    cwd: String,
    session_dir: PathBuf,
    path: Option<PathBuf>,
    persist: bool,
    options: WriteOptions,
    lock: Option<WriterLock>,
    appender: Option<Appender>,
    flushed: bool,
    tail: Tail,
    lines_seen: u64,
    notices: Vec<String>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Close the appender (its final fsync under Batch) before the lock is released, so
        // the next writer never starts while our last entries are still being synced.
        drop(self.appender.take());
        drop(self.lock.take());
    }
}

impl std::ops::Deref for Session {
    type Target = SessionTree;
    fn deref(&self) -> &SessionTree {
        &self.tree
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.tree.session_id())
            .field("path", &self.path)
            .finish()
    }
}

impl Session {
    /// The session file; `None` for an in-memory session. A new session has its path
    /// before the file exists ([`Session::is_flushed`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The working directory the session belongs to (the header's `cwd`).
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The folder the session's file is (or will be) in.
    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    /// The entries, the leaf and the labels, as appended so far.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// True once the file exists on disk.
    pub fn is_flushed(&self) -> bool {
        self.flushed
    }

    /// Moves the leaf to an existing entry.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        self.tree.branch(id)
    }

    /// The leaf becomes null: the next entry is a new root.
    pub fn reset_leaf(&mut self) {
        self.tree.reset_leaf()
    }

    /// fsyncs everything appended so far (for [`crate::store::Durability::Batch`]).
    pub fn sync(&mut self) -> Result<()> {
        match &mut self.appender {
            Some(a) => a.sync(),
            None => Ok(()),
        }
    }

    /// Bytes of the file written or seen by this handle, and how many of them it has
    /// fsynced: `(len, synced)`. `None` while the session has no file.
    pub fn durable_state(&self) -> Option<(u64, u64)> {
        self.appender.as_ref().map(|a| (a.len(), a.synced_len()))
    }
}
