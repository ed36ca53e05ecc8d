//! A cache of session listings (what `ls` prints): SQLite under the agent dir, with the
//! Pi-shaped JSON of each listing in a store file beside it. Full-text search keeps no
//! index here: it scans the files ([`crate::search`]) with per-file summaries
//! ([`crate::summary`]).
//!
//! * `schema`: tables, opening, rebuilding an unusable file.
//! * `refresh`: bringing the rows up to date with the files.
//! * `queries`: reading listings back ([`Index::infos`], [`Index::write_json`], [`listed`],
//!   [`listed_rows`]).
//! * `snapshot`: a file list's finished rows kept whole, read back while the files stay
//!   the same ([`Listing`]).
//!
//! Schema (version [`SCHEMA_VERSION`], in `meta`):
//! * `files(id, path UNIQUE, size, mtime_ns, dev, ino, ctime_ns, offset, head_hash,
//!   tail_hash, tail_len, cwd, modified_ms, drops, info, info_sum)`, `state(id, state)` and
//!   `listing(id, off, len, sum)`: per file (the large values in their own tables, so that
//!   reading a row never walks their overflow pages), the byte `offset` just past the last
//!   complete line read, the pass state at that offset (`state`, JSON of
//!   [`crate::list::Acc`]), FNV-1a hashes of the first 4 KiB and of the last complete line,
//!   and the listing (`info`, without `allMessagesText`; `off`/`len`, where the whole
//!   Pi-shaped object, pre-serialized, is in the listing store beside the database
//!   (`listing_store`)). `info_sum` and `sum` are checksums of those bytes, checked
//!   whenever they are read: a damaged listing is read again from its session file.
//!
//! Refresh rule per file: same size, mtime, device, inode and ctime: not read (an edit
//! that restores size and mtime still changes the ctime; `sed -i` makes a new inode).
//! Same inode, grown past the stored offset with the first 4 KiB and the last indexed line
//! unchanged: read from the offset, resuming the stored state. Anything else: read again
//! from 0. Files gone, unreadable or no longer sessions: rows deleted (a full scan leaves
//! them out too). The index is a cache: a file that is not SQLite or has another schema
//! version is deleted and rebuilt.

mod queries;
mod refresh;
mod schema;
mod snapshot;

pub use queries::{listed, listed_rows};
pub use schema::SCHEMA_VERSION;
pub use snapshot::{Entry, Listing, Row};

use crate::listing_store::Store;
use rusqlite::Connection;
use schema::{open_err, remove_db, sql_err, try_open};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "sessiontree-index.sqlite";

/// Dead bytes the listing store may hold before it is compacted (and at most its live size).
const COMPACT_FLOOR: u64 = 8 << 20;

/// What a refresh did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RefreshStats {
    pub files: usize,
    pub unchanged: usize,
    pub appended: usize,
    pub reread: usize,
    pub added: usize,
    pub removed: usize,
    /// Bytes of session files read (bodies), not counting prefix checks.
    pub bytes_read: u64,
    /// Bytes read to check that a grown file's prefix is unchanged.
    pub verify_bytes: u64,
    /// The index file was unusable and was rebuilt.
    pub rebuilt: bool,
}

pub struct Index {
    conn: Connection,
    store: Store,
    /// The listing store is compacted when its dead bytes exceed its live bytes and this.
    compact_floor: u64,
    /// Listing ranges read by the last [`listed`], from the same snapshot (and the store
    /// `nonce` they belong to): `ls --json` writes exactly what it listed. Used once.
    captured: Option<queries::Captured>,
    pub path: PathBuf,
    pub rebuilt: bool,
}

impl Index {
    /// The index file of an agent dir.
    pub fn default_path(agent_dir: &Path) -> PathBuf {
        agent_dir.join(FILE_NAME)
    }

    /// Opens (or creates) the index; a file that is not this index is deleted and rebuilt.
    /// `SESSIONTREE_INDEX_COMPACT_FLOOR` (bytes) overrides when the listing store is
    /// compacted (tests force compactions with 0).
    pub fn open(path: &Path) -> crate::Result<Index> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(crate::error::io(d))?;
        }
        let floor = std::env::var("SESSIONTREE_INDEX_COMPACT_FLOOR")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(COMPACT_FLOOR);
        let (conn, store, rebuilt) = match try_open(path) {
            Ok((conn, store)) => (conn, store, false),
            Err(e) if e.is_unusable() => {
                remove_db(path);
                let (conn, store) = try_open(path).map_err(open_err)?;
                (conn, store, true)
            }
            Err(e) => return Err(open_err(e)),
        };
        Ok(Index {
            conn,
            store,
            compact_floor: floor,
            captured: None,
            path: path.to_path_buf(),
            rebuilt,
        })
    }

    #[doc(hidden)]
    pub fn set_compaction_floor_for_tests(&mut self, bytes: u64) {
        self.compact_floor = bytes;
    }

    /// The listing store's file (beside the database).
    pub fn listing_store_path(&self) -> &Path {
        &self.store.path
    }

    #[doc(hidden)]
    pub fn set_schema_version_for_tests(&mut self, v: &str) -> crate::Result<()> {
        self.conn
            .execute("UPDATE meta SET value=?1 WHERE key='schema'", [v])
            .map_err(sql_err)?;
        Ok(())
    }
}

/// The key of the rows kept for one folder's sessions, or (`None`) for every session under
/// `sessions` ([`listed_rows`], [`unchanged_rows`]).
pub fn rows_key(folder: Option<&Path>, sessions: &Path) -> Vec<u8> {
    let (kind, dir): (&[u8], &Path) = match folder {
        Some(f) => (b"folder\0", f),
        None => (b"all\0", sessions),
    };
    [kind, dir.as_os_str().as_encoded_bytes()].concat()
}

/// The rows kept for every session under `agent_dir` ([`listed_rows`] with the scope of
/// [`rows_key`]`(None, ..)`), when a running watch's journal says the file list is the very
/// one they were kept for: found from the journal alone, no file list built, no database
/// opened (see [`sessiontree::changes::list_digest`]).
pub fn unchanged_rows(agent_dir: &Path) -> Option<Listing> {
    let digest = sessiontree::changes::list_digest(agent_dir)?;
    let key = rows_key(None, &agent_dir.join("sessions"));
    snapshot::read_by_digest(&Index::default_path(agent_dir), &key, &digest)
}

/// Files in a sub-folder of `sessions` (what `list_all` covers).
pub fn all_scope(sessions: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p| under_by_bytes(sessions, p, 2) || p.parent().and_then(Path::parent) == Some(sessions)
}

/// Files directly in `dir`.
pub fn folder_scope(dir: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p| under_by_bytes(dir, p, 1) || p.parent() == Some(dir)
}

/// Whether `p` is `dir` followed by exactly `depth` plain components (no `.`, `..` or
/// empty one), judged on the bytes: what the scopes mostly see (paths the listing made by
/// joining names), at a fraction of the cost of `Path::parent`, which parses components.
/// False says nothing (the caller asks `Path` then); true is what `Path` would say.
fn under_by_bytes(dir: &Path, p: &Path, depth: usize) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (d, p) = (dir.as_os_str().as_bytes(), p.as_os_str().as_bytes());
    if d.is_empty() || d.ends_with(b"/") || !p.starts_with(d) || p.get(d.len()) != Some(&b'/') {
        return false;
    }
    // `dir` itself must be in the form `Path` compares equal byte for byte: no `.`/empty
    // component inside it (a `/./` or `//` would be normalised away).
    if d.windows(2).any(|w| w == b"//") || d.windows(3).any(|w| w == b"/./") || d.ends_with(b"/.") {
        return false;
    }
    let rest = &p[d.len() + 1..];
    let mut parts = 0;
    for c in rest.split(|&b| b == b'/') {
        if c.is_empty() || c == b"." || c == b".." {
            return false;
        }
        parts += 1;
    }
    parts == depth
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte check never says yes where `Path` says no, and says yes for the paths the
    /// listing makes.
    #[test]
    fn scopes_judged_on_bytes_agree_with_path() {
        let dirs = [
            "/s",
            "/a/sessions",
            "/a/sessions/",
            "/a//sessions",
            "/a/./sessions",
            "/a/../s",
            "rel/s",
            ".",
            "/a/s/.",
        ];
        let tails = [
            "x/y.jsonl",
            "x/y",
            "x",
            "x/y/z",
            "./y",
            "x/./y",
            "x//y",
            "../y",
            "x/..",
            "x/.",
            "/x/y",
            "x/y/",
            "",
            ".x/y",
            "x/..y",
        ];
        for d in dirs {
            for t in tails {
                for sep in ["/", "", "//"] {
                    let p = format!("{d}{sep}{t}");
                    let (d, p) = (Path::new(d), Path::new(&p));
                    let slow_all = p.parent().and_then(Path::parent) == Some(d);
                    let slow_folder = p.parent() == Some(d);
                    if under_by_bytes(d, p, 2) {
                        assert!(slow_all, "{p:?} under {d:?} (2)");
                    }
                    if under_by_bytes(d, p, 1) {
                        assert!(slow_folder, "{p:?} under {d:?} (1)");
                    }
                    assert_eq!(all_scope(d)(p), slow_all, "{p:?} {d:?}");
                    assert_eq!(folder_scope(d)(p), slow_folder, "{p:?} {d:?}");
                }
            }
        }
        let s = Path::new("/home/u/.pi/agent/sessions");
        assert!(under_by_bytes(s, &s.join("--w--/2026_x.jsonl"), 2));
        assert!(under_by_bytes(
            &s.join("--w--"),
            &s.join("--w--/2026_x.jsonl"),
            1
        ));
    }
}
