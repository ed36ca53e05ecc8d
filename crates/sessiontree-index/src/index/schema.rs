//! The index's SQLite schema, opening (and rebuilding an unusable file), and its errors.

use super::FILE_NAME;
use crate::listing_store::{self, Mismatch, Store};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

pub const SCHEMA_VERSION: &str = "sessiontree-index-11";

pub(super) const SCHEMA: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER, mtime_ns INTEGER,
  dev INTEGER, ino INTEGER, ctime_ns INTEGER,
  offset INTEGER, head_hash INTEGER, tail_hash INTEGER, tail_len INTEGER,
  cwd TEXT, modified_ms REAL, drops INTEGER, info TEXT, info_sum INTEGER);
CREATE TABLE listing(id INTEGER PRIMARY KEY, off INTEGER, len INTEGER, sum INTEGER);
CREATE TABLE state(id INTEGER PRIMARY KEY, state TEXT);
";

/// Why an index file cannot be used as it is.
pub(super) enum OpenError {
    Sql(rusqlite::Error),
    Store(Mismatch),
}

impl OpenError {
    /// The file is not this index (another schema, not SQLite, a store that does not
    /// match): delete and rebuild. Anything else (busy, I/O) is reported, never deleted:
    /// another process may be using the index.
    pub(super) fn is_unusable(&self) -> bool {
        match self {
            OpenError::Store(Mismatch::Stale(_)) => true,
            OpenError::Store(Mismatch::Io(_)) => false,
            OpenError::Sql(rusqlite::Error::InvalidQuery) => true,
            OpenError::Sql(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt
            ),
            OpenError::Sql(_) => false,
        }
    }
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        OpenError::Sql(e)
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Sql(e) => write!(f, "{e}"),
            OpenError::Store(Mismatch::Io(e)) => write!(f, "listing store: {e}"),
            OpenError::Store(Mismatch::Stale(why)) => write!(f, "listing store: {why}"),
        }
    }
}

pub(super) fn meta_u64(conn: &Connection, key: &str) -> rusqlite::Result<Option<u64>> {
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key=?1", [key], |r| r.get(0))
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()))
}

pub(super) fn set_meta(conn: &Connection, key: &str, v: u64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES(?1, ?2)",
        params![key, v.to_string()],
    )?;
    Ok(())
}

/// The listing store the database describes.
pub(super) fn open_store(conn: &Connection, path: &Path) -> Result<Store, OpenError> {
    let sp = listing_store::path_for(path);
    let (Some(nonce), Some(len)) = (
        meta_u64(conn, "listing_nonce")?,
        meta_u64(conn, "listing_len")?,
    ) else {
        return Err(OpenError::Store(Mismatch::Stale("not recorded".into())));
    };
    Store::open(&sp, nonce, len).map_err(OpenError::Store)
}

pub(super) fn try_open(path: &Path) -> Result<(Connection, Store), OpenError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Listings are large values: big pages make their overflow chains short.
    // (Only takes effect when the file is created.)
    conn.pragma_update(None, "page_size", 65536)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -65536)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Large values live in overflow pages: mapped, they are read without copies.
    conn.pragma_update(None, "mmap_size", 1i64 << 32)?;
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name='meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)?;
    if !has_meta {
        // Created under the write lock: two processes creating it at once do it once.
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if tables > 0 {
            let again: i64 = tx.query_row(
                "SELECT count(*) FROM sqlite_master WHERE name='meta'",
                [],
                |r| r.get(0),
            )?;
            drop(tx);
            if again == 0 {
                return Err(rusqlite::Error::InvalidQuery.into());
            }
            return try_open(path);
        }
        let store = Store::create(&listing_store::path_for(path))
            .map_err(|e| OpenError::Store(Mismatch::Io(e)))?;
        tx.execute_batch(SCHEMA)?;
        tx.execute(
            "INSERT INTO meta VALUES('schema', ?1)",
            params![SCHEMA_VERSION],
        )?;
        set_meta(&tx, "listing_nonce", store.nonce)?;
        set_meta(&tx, "listing_len", listing_store::HEADER_LEN)?;
        tx.commit()?;
        return Ok((conn, store));
    }
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
            r.get(0)
        })
        .optional()?;
    if v.as_deref() != Some(SCHEMA_VERSION) {
        return Err(rusqlite::Error::InvalidQuery.into());
    }
    let store = match open_store(&conn, path) {
        Ok(s) => s,
        Err(OpenError::Store(Mismatch::Stale(_))) => {
            // A compaction by another process may sit between our read of the database
            // and of the store: under the write lock nobody compacts, so ask again there.
            let tx = rusqlite::Transaction::new_unchecked(
                &conn,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            let s = open_store(&tx, path);
            tx.rollback()?;
            s?
        }
        Err(e) => return Err(e),
    };
    Ok((conn, store))
}

pub(super) fn remove_db(path: &Path) {
    listing_store::remove(path);
    super::snapshot::remove_all(path);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

pub(super) fn open_err(e: OpenError) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME),
        source: std::io::Error::other(e.to_string()),
    }
}

pub(super) fn store_err(e: std::io::Error) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME).with_extension("sqlite.listing"),
        source: e,
    }
}

pub(super) fn sql_err(e: rusqlite::Error) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME),
        source: std::io::Error::other(e.to_string()),
    }
}
