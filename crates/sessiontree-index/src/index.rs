//! A cache of listings and message texts: SQLite (FTS5, trigram) under the agent dir.
//!
//! Schema (version [`SCHEMA_VERSION`], in `meta`):
//! * `files(id, path UNIQUE, size, mtime_ns, offset, head_hash, tail_hash, tail_len, cwd,
//!   modified_ms, drops, info)`, `state(id, state)` and `listing(id, off, len)`: per file
//!   (the large values in their own tables, so that reading a row never walks their
//!   overflow pages), the byte `offset` just past the last complete
//!   line read, the pass state at that offset (`state`, JSON of [`Acc`]: message count, first
//!   message, last activity, name, leaf, ...), FNV-1a hashes of the first 4 KiB and of the
//!   last complete line, and the listing (`info`, including a trailing unterminated line,
//!   without `allMessagesText`; `off`/`len`, where the whole Pi-shaped object, pre-serialized,
//!   is in the listing store beside the database (the `listing_store` module), so that
//!   `ls --json` only hands mapped ranges to the kernel).
//! * `links(file_id, entry_id, parent_id)`: every entry, for the current branch.
//! * `entries(rowid, file_id, entry_id, role, ts_ms, on_branch)` and `fts(text)` (FTS5,
//!   trigram, `detail=none`, same rowid): one row per entry with searchable text. Without
//!   positions the trigram index only narrows candidates; every term is then checked in Rust
//!   (`detail=none` keeps the index about a third the size and builds it much faster).
//!
//! Refresh rule per file: same size and mtime: not read. Grown past the stored offset with
//! the first 4 KiB and the last indexed line unchanged: read from the offset, resuming the
//! stored state. Anything else: read again from 0. Files gone: rows deleted. The index is a
//! cache: a file that is not SQLite or has another schema version is deleted and rebuilt.

use crate::list::{self, Acc, EntryText, FileStat, SessionInfo};
use crate::listing_store::{self, Mismatch, Store};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};

/// Stored rows by path (Fx hashing: the paths are ours, and there are thousands).
type StoredMap = rustc_hash::FxHashMap<PathBuf, Stored>;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub const SCHEMA_VERSION: &str = "sessiontree-index-8";
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
    pub path: PathBuf,
    pub rebuilt: bool,
}

#[derive(Debug)]
struct Stored {
    id: i64,
    size: u64,
    mtime_ns: i64,
    offset: u64,
    head_hash: u64,
    tail_hash: u64,
    tail_len: u64,
    /// The file's searchable texts (`entries`, `fts`, `links`) are indexed up to `offset`.
    texts: bool,
    /// Boxed: most files are unchanged, and their rows stay small.
    state: Option<Box<Acc>>,
}

#[allow(clippy::large_enum_variant)] // one per file, short-lived
enum Plan {
    Unchanged,
    Full(Option<i64>),
    /// Unchanged (this size and mtime), but its texts are behind: read again for them; the
    /// listing stays if the file still is what was stored.
    Texts {
        id: i64,
        size: u64,
        mtime_ns: i64,
    },
    Append(Stored),
}

struct Done {
    path: PathBuf,
    /// Size, times, verification bytes, and whether `rows` were gathered (and, when
    /// appending, the stored ones were complete).
    seen: Seen,
    old: Option<i64>,
    append: bool,
    pass: list::Pass,
    head_hash: u64,
    rows: Vec<EntryText>,
    prev_tail: (u64, u64),
    /// The stored listing is still right: not written again.
    keep_listing: bool,
}

fn meta_of(path: &Path) -> Option<(u64, i64, f64)> {
    let s = FileStat::of_path(path)?;
    Some((s.size, s.mtime_ns, s.mtime_ms))
}

fn head_hash(f: &mut std::fs::File, upto: u64) -> std::io::Result<(u64, u64)> {
    let n = upto.min(4096) as usize;
    let mut b = vec![0u8; n];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut b)?;
    Ok((list::fnv(&b), n as u64))
}

const SCHEMA: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER, mtime_ns INTEGER,
  offset INTEGER, head_hash INTEGER, tail_hash INTEGER, tail_len INTEGER,
  cwd TEXT, modified_ms REAL, drops INTEGER, info TEXT, texts INTEGER);
CREATE TABLE listing(id INTEGER PRIMARY KEY, off INTEGER, len INTEGER);
CREATE TABLE state(id INTEGER PRIMARY KEY, state TEXT);
CREATE TABLE links(file_id INTEGER, entry_id TEXT, parent_id TEXT);
CREATE INDEX links_file ON links(file_id);
CREATE TABLE entries(rowid INTEGER PRIMARY KEY, file_id INTEGER, entry_id TEXT, role TEXT,
  ts_ms REAL, on_branch INTEGER);
CREATE INDEX entries_file ON entries(file_id);
CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='trigram', detail='none', columnsize=0);
-- Bulk builds: bigger leaves, fewer and later merges (about 15% faster first search).
INSERT INTO fts(fts, rank) VALUES('pgsz', 32000);
INSERT INTO fts(fts, rank) VALUES('automerge', 16);
INSERT INTO fts(fts, rank) VALUES('crisismerge', 64);
";

/// Why an index file cannot be used as it is.
enum OpenError {
    Sql(rusqlite::Error),
    Store(Mismatch),
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

fn meta_u64(conn: &Connection, key: &str) -> rusqlite::Result<Option<u64>> {
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key=?1", [key], |r| r.get(0))
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()))
}

fn set_meta(conn: &Connection, key: &str, v: u64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES(?1, ?2)",
        params![key, v.to_string()],
    )?;
    Ok(())
}

/// The listing store the database describes.
fn open_store(conn: &Connection, path: &Path) -> Result<Store, OpenError> {
    let sp = listing_store::path_for(path);
    let (Some(nonce), Some(len)) = (
        meta_u64(conn, "listing_nonce")?,
        meta_u64(conn, "listing_len")?,
    ) else {
        return Err(OpenError::Store(Mismatch::Stale("not recorded".into())));
    };
    Store::open(&sp, nonce, len).map_err(OpenError::Store)
}

fn try_open(path: &Path) -> Result<(Connection, Store), OpenError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Listings and texts are large values: big pages make their overflow chains short.
    // (Only takes effect when the file is created.)
    conn.pragma_update(None, "page_size", 65536)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -65536)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Large `json` values live in overflow pages: mapped, they are read without copies.
    conn.pragma_update(None, "mmap_size", 1i64 << 32)?;
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name='meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)?;
    if !has_meta {
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if tables > 0 {
            return Err(rusqlite::Error::InvalidQuery.into());
        }
        let store = Store::create(&listing_store::path_for(path))
            .map_err(|e| OpenError::Store(Mismatch::Io(e)))?;
        conn.execute_batch(SCHEMA)?;
        conn.execute(
            "INSERT INTO meta VALUES('schema', ?1)",
            params![SCHEMA_VERSION],
        )?;
        set_meta(&conn, "listing_nonce", store.nonce)?;
        set_meta(&conn, "listing_len", listing_store::HEADER_LEN)?;
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

fn remove_db(path: &Path) {
    listing_store::remove(path);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

impl Index {
    /// The index file of an agent dir.
    pub fn default_path(agent_dir: &Path) -> PathBuf {
        agent_dir.join(FILE_NAME)
    }

    /// Opens (or creates) the index; an unusable file is deleted and rebuilt.
    pub fn open(path: &Path) -> crate::Result<Index> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(crate::error::io(d))?;
        }
        match try_open(path) {
            Ok((conn, store)) => Ok(Index {
                conn,
                store,
                compact_floor: COMPACT_FLOOR,
                path: path.to_path_buf(),
                rebuilt: false,
            }),
            Err(_) => {
                remove_db(path);
                let (conn, store) = try_open(path).map_err(open_err)?;
                Ok(Index {
                    conn,
                    store,
                    compact_floor: COMPACT_FLOOR,
                    path: path.to_path_buf(),
                    rebuilt: true,
                })
            }
        }
    }
}

fn stored(conn: &Connection) -> rusqlite::Result<StoredMap> {
    {
        let mut st = conn.prepare(
            "SELECT id, path, size, mtime_ns, offset, head_hash, tail_hash, tail_len, texts FROM files",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                PathBuf::from(r.get::<_, String>(1)?),
                Stored {
                    id: r.get(0)?,
                    size: r.get::<_, i64>(2)? as u64,
                    mtime_ns: r.get(3)?,
                    offset: r.get::<_, i64>(4)? as u64,
                    head_hash: r.get::<_, i64>(5)? as u64,
                    tail_hash: r.get::<_, i64>(6)? as u64,
                    tail_len: r.get::<_, i64>(7)? as u64,
                    texts: r.get::<_, Option<bool>>(8)?.unwrap_or(false),
                    state: None,
                },
            ))
        })?;
        rows.collect()
    }
}

impl Index {
    /// Brings the index up to date for `files`, searchable texts included; rows of files
    /// `in_scope` that are not in `files` are removed (see [`all_scope`], [`folder_scope`]).
    pub fn refresh(
        &mut self,
        files: &[PathBuf],
        in_scope: &dyn Fn(&Path) -> bool,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> crate::Result<RefreshStats> {
        let files = list::with_stats(files.to_vec());
        self.refresh_stat(&files, in_scope, threads, true, progress)
    }

    /// [`Index::refresh`] for files already stat'ed (`None`: gone, or a folder). Without
    /// `texts` only the listings are brought up to date (what `ls` needs, several times
    /// faster the first time); files whose texts are then behind are marked so, and the
    /// next refresh with `texts` (a search) reads them again.
    pub fn refresh_stat(
        &mut self,
        files: &[(PathBuf, Option<FileStat>)],
        in_scope: &dyn Fn(&Path) -> bool,
        threads: usize,
        texts: bool,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> crate::Result<RefreshStats> {
        let mut stats = RefreshStats {
            files: files.len(),
            rebuilt: self.rebuilt,
            ..Default::default()
        };
        // An immediate transaction: a second refresh waits for this one, then sees its rows.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let mut stored = stored(&tx).map_err(sql_err)?;
        let wanted: HashSet<&PathBuf> = files.iter().map(|f| &f.0).collect();
        let gone: Vec<i64> = stored
            .iter()
            .filter(|(p, _)| in_scope(p) && !wanted.contains(p))
            .map(|(_, s)| s.id)
            .collect();
        let mut work: Vec<(PathBuf, Plan)> = Vec::new();
        for (p, st) in files {
            let Some(FileStat { size, mtime_ns, .. }) = *st else {
                continue;
            };
            let plan = match stored.remove(p) {
                None => Plan::Full(None),
                // Texts wanted but behind: read again from the start.
                Some(s) if s.size == size && s.mtime_ns == mtime_ns => {
                    if texts && !s.texts {
                        Plan::Texts {
                            id: s.id,
                            size,
                            mtime_ns,
                        }
                    } else {
                        Plan::Unchanged
                    }
                }
                Some(s) if texts && !s.texts => Plan::Full(Some(s.id)),
                Some(mut s) if size >= s.offset && s.offset > 0 => {
                    let st: Option<String> = tx
                        .query_row("SELECT state FROM state WHERE id=?1", [s.id], |r| r.get(0))
                        .optional()
                        .map(Option::flatten)
                        .map_err(sql_err)?;
                    s.state = st.and_then(|t| serde_json::from_str(&t).ok().map(Box::new));
                    if s.state.is_some() {
                        Plan::Append(s)
                    } else {
                        Plan::Full(Some(s.id))
                    }
                }
                Some(s) => Plan::Full(Some(s.id)),
            };
            match plan {
                Plan::Unchanged => stats.unchanged += 1,
                plan => work.push((p.clone(), plan)),
            }
        }
        for id in &gone {
            delete_file(&tx, *id, true).map_err(sql_err)?;
            stats.removed += 1;
        }
        let total = work.len();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (send, recv) = std::sync::mpsc::sync_channel::<Done>(4);
        let mut err: Option<StoreError> = None;
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                let send = send.clone();
                let work = &work;
                let next = &next;
                s.spawn(move || loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= work.len() {
                        break;
                    }
                    if let Some(d) = process(&work[i].0, &work[i].1, texts) {
                        if send.send(d).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(send);
            let mut n = 0;
            for d in recv {
                n += 1;
                progress(n, total);
                stats.bytes_read += d.pass.bytes_read;
                stats.verify_bytes += d.seen.verify;
                if d.append {
                    stats.appended += 1;
                } else if d.old.is_some() {
                    stats.reread += 1;
                } else {
                    stats.added += 1;
                }
                if err.is_none() {
                    if let Err(e) = store(&tx, &mut self.store, d) {
                        err = Some(e);
                    }
                }
            }
        });
        if let Some(e) = err {
            return Err(match e {
                StoreError::Sql(e) => sql_err(e),
                StoreError::Io(e) => store_err(e),
            });
        }
        if total > 0 || !gone.is_empty() {
            finish_store(&mut self.store, &tx, self.compact_floor)?;
        }
        tx.commit().map_err(sql_err)?;
        self.rebuilt = false;
        Ok(stats)
    }

    /// The stored listings of files `in_scope` (unordered).
    pub fn infos(&self, in_scope: &dyn Fn(&Path) -> bool) -> crate::Result<Vec<SessionInfo>> {
        self.infos_with(in_scope, true)
    }

    /// As [`Index::infos`]; `allMessagesText` is left empty unless `with_text`.
    pub fn infos_with(
        &self,
        in_scope: &dyn Fn(&Path) -> bool,
        with_text: bool,
    ) -> crate::Result<Vec<SessionInfo>> {
        let sql = if with_text {
            "SELECT path, info, off, len FROM files JOIN listing USING(id) WHERE info IS NOT NULL"
        } else {
            "SELECT path, info, NULL, NULL FROM files WHERE info IS NOT NULL"
        };
        let mut st = self.conn.prepare(sql).map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err)? {
            let p: String = r.get(0).map_err(sql_err)?;
            if !in_scope(Path::new(&p)) {
                continue;
            }
            let info: String = r.get(1).map_err(sql_err)?;
            if let Some(mut i) = from_stored(&info) {
                let off: Option<i64> = r.get(2).map_err(sql_err)?;
                let len: Option<i64> = r.get(3).map_err(sql_err)?;
                let json = match (off, len) {
                    (Some(o), Some(l)) => {
                        Some(self.store.read(o as u64, l as u64).map_err(store_err)?)
                    }
                    _ => None,
                };
                i.all_messages_text = json
                    .and_then(|j| {
                        let v: serde_json::Value = serde_json::from_str(&j).ok()?;
                        v.get("allMessagesText")?.as_str().map(str::to_string)
                    })
                    .unwrap_or_default();
                out.push(i);
            }
        }
        Ok(out)
    }

    /// Writes the stored Pi-shaped JSON of each of `paths` (indexed sessions), joined by
    /// `,`: ranges of the mapped listing store, handed to the kernel with vectored writes
    /// (no copy here). The same bytes as [`SessionInfo::write_json`] of a full scan.
    pub fn write_json<'p>(
        &mut self,
        paths: impl IntoIterator<Item = &'p Path>,
        w: &mut dyn std::io::Write,
    ) -> crate::Result<()> {
        let paths: Vec<&Path> = paths.into_iter().collect();
        // One read transaction: the ranges and the store's nonce come from one snapshot,
        // and the store file checked against it stays open (and valid) whatever a
        // concurrent refresh does. A compaction between our snapshot and our open makes
        // the nonces differ: then try again.
        for _attempt in 0..5 {
            let tx = self.conn.transaction().map_err(sql_err)?;
            let nonce = meta_u64(&tx, "listing_nonce").map_err(sql_err)?;
            if nonce != Some(self.store.nonce) {
                let len = meta_u64(&tx, "listing_len").map_err(sql_err)?.unwrap_or(0);
                match Store::open(&self.store.path, nonce.unwrap_or(0), len) {
                    Ok(s) => self.store = s,
                    Err(Mismatch::Stale(_)) => {
                        drop(tx);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        continue;
                    }
                    Err(Mismatch::Io(e)) => return Err(store_err(e)),
                }
            }
            let mut ranges = Vec::with_capacity(paths.len());
            {
                let mut st = tx
                    .prepare_cached(
                        "SELECT off, len FROM files JOIN listing USING(id) WHERE path = ?1",
                    )
                    .map_err(sql_err)?;
                for p in &paths {
                    let path_s = p.to_string_lossy();
                    let r: Option<(Option<i64>, Option<i64>)> = st
                        .query_row([&*path_s], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                        .map_err(sql_err)?;
                    match r {
                        Some((Some(o), Some(l))) => ranges.push((o as usize, l as usize)),
                        _ => return Err(sql_err(rusqlite::Error::QueryReturnedNoRows)),
                    }
                }
            }
            let map = self.store.map().map_err(store_err)?;
            let bytes: &[u8] = &map;
            let mut slices: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(ranges.len() * 2);
            for (n, &(o, l)) in ranges.iter().enumerate() {
                let Some(b) = bytes.get(o..o + l) else {
                    return Err(store_err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("listing at {o}+{l} is past the store's end"),
                    )));
                };
                if n > 0 {
                    slices.push(std::io::IoSlice::new(b","));
                }
                slices.push(std::io::IoSlice::new(b));
            }
            crate::context::write_all_vectored(w, &mut slices)
                .map_err(crate::error::io(Path::new("<stdout>")))?;
            drop(tx);
            return Ok(());
        }
        Err(store_err(std::io::Error::other(
            "the listing store kept changing (another sessiontree compacting it?)",
        )))
    }

    /// Runs a search over the indexed texts.
    pub fn search(&self, q: &crate::search::Query) -> crate::Result<Vec<crate::search::Hit>> {
        // A search may touch much of the text; read it into the page cache, not mapped
        // (a map of the whole file would count as this process's memory).
        self.conn
            .pragma_update(None, "mmap_size", 0)
            .map_err(sql_err)?;
        crate::search::run(&self.conn, q).map_err(sql_err)
    }
}

/// After a refresh's writes: the store made durable, compacted when most of it is
/// dead, and its length recorded (all before the transaction commits).
fn finish_store(store: &mut Store, tx: &Connection, floor: u64) -> crate::Result<()> {
    let len = store.len().map_err(store_err)?;
    let live: u64 = tx
        .query_row("SELECT coalesce(sum(len), 0) FROM listing", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(sql_err)? as u64;
    let dead = len - listing_store::HEADER_LEN - live.min(len - listing_store::HEADER_LEN);
    if dead > live.max(floor) {
        // Newest first, as listings are asked for: `ls --json` then reads forward.
        let rows: Vec<(i64, u64, u64)> = tx
            .prepare(
                "SELECT id, off, len FROM listing JOIN files USING(id)
                 WHERE off IS NOT NULL ORDER BY modified_ms DESC, id",
            )
            .and_then(|mut st| {
                st.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get::<_, i64>(1)? as u64,
                        r.get::<_, i64>(2)? as u64,
                    ))
                })?
                .collect()
            })
            .map_err(sql_err)?;
        let ranges: Vec<(u64, u64)> = rows.iter().map(|r| (r.1, r.2)).collect();
        let (new, offsets) = store.compact(&ranges).map_err(store_err)?;
        let mut up = tx
            .prepare("UPDATE listing SET off=?2 WHERE id=?1")
            .map_err(sql_err)?;
        for (r, off) in rows.iter().zip(offsets) {
            up.execute(params![r.0, off as i64]).map_err(sql_err)?;
        }
        set_meta(tx, "listing_nonce", new.nonce).map_err(sql_err)?;
        set_meta(tx, "listing_len", new.len().map_err(store_err)?).map_err(sql_err)?;
        *store = new;
        return Ok(());
    }
    store.sync().map_err(store_err)?;
    set_meta(tx, "listing_len", len).map_err(sql_err)
}

/// Files in a sub-folder of `sessions` (what `list_all` covers).
pub fn all_scope(sessions: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p| p.parent().and_then(Path::parent) == Some(sessions)
}

/// Files directly in `dir`.
pub fn folder_scope(dir: &Path) -> impl Fn(&Path) -> bool + '_ {
    move |p| p.parent() == Some(dir)
}

fn open_err(e: OpenError) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME),
        source: std::io::Error::other(e.to_string()),
    }
}

fn store_err(e: std::io::Error) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME).with_extension("sqlite.listing"),
        source: e,
    }
}

fn sql_err(e: rusqlite::Error) -> crate::Error {
    crate::Error::Io {
        path: PathBuf::from(FILE_NAME),
        source: std::io::Error::other(e.to_string()),
    }
}

/// What a worker found of a file before reading it.
struct Seen {
    size: u64,
    mtime_ns: i64,
    mtime_ms: f64,
    /// Bytes read to check a grown file's prefix.
    verify: u64,
    /// Gather searchable texts.
    texts: bool,
}

fn process(path: &Path, plan: &Plan, texts: bool) -> Option<Done> {
    let (size, mtime_ns, mtime_ms) = meta_of(path)?;
    let mut f = std::fs::File::open(path).ok()?;
    let mut seen = Seen {
        size,
        mtime_ns,
        mtime_ms,
        verify: 0,
        texts,
    };
    if let Plan::Append(s) = plan {
        let ok = (|| -> std::io::Result<bool> {
            let (h, n) = head_hash(&mut f, s.offset)?;
            seen.verify += n;
            if h != s.head_hash {
                return Ok(false);
            }
            let mut tail = vec![0u8; s.tail_len as usize];
            f.seek(SeekFrom::Start(s.offset - s.tail_len))?;
            f.read_exact(&mut tail)?;
            seen.verify += s.tail_len;
            Ok(list::fnv(&tail) == s.tail_hash)
        })()
        .unwrap_or(false);
        if ok {
            return resume(path, f, s, seen);
        }
        f.seek(SeekFrom::Start(0)).ok()?;
        return full(path, f, Some(s.id), seen);
    }
    // The stored listing stands when the file read is exactly the one it was made from.
    let (old, stored) = match plan {
        Plan::Full(o) => (*o, None),
        Plan::Texts { id, size, mtime_ns } => (Some(*id), Some((*size, *mtime_ns))),
        _ => (None, None),
    };
    let mut d = full(path, f, old, seen)?;
    d.keep_listing =
        stored == Some((d.seen.size, d.seen.mtime_ns)) && d.pass.bytes_read == d.seen.size;
    Some(d)
}

fn resume(path: &Path, mut f: std::fs::File, s: &Stored, mut seen: Seen) -> Option<Done> {
    let acc = s.state.clone()?;
    f.seek(SeekFrom::Start(s.offset)).ok()?;
    let mut rows = Vec::new();
    let pass = list::pass(f, s.offset, *acc, seen.texts.then_some(&mut rows)).ok()?;
    // Appended texts extend complete ones only.
    seen.texts &= s.texts;
    Some(Done {
        path: path.to_path_buf(),
        seen,
        old: Some(s.id),
        append: true,
        pass,
        head_hash: s.head_hash,
        prev_tail: (s.tail_hash, s.tail_len),
        rows,
        keep_listing: false,
    })
}

fn full(path: &Path, f: std::fs::File, old: Option<i64>, seen: Seen) -> Option<Done> {
    let mut rows = Vec::new();
    let pass = list::pass(f, 0, Acc::new(true), seen.texts.then_some(&mut rows)).ok()?;
    let mut f = std::fs::File::open(path).ok()?;
    let head = if pass.committed_offset > 0 {
        head_hash(&mut f, pass.committed_offset).ok()?.0
    } else {
        0
    };
    Some(Done {
        path: path.to_path_buf(),
        seen,
        old,
        append: false,
        pass,
        head_hash: head,
        prev_tail: (0, 0),
        rows,
        keep_listing: false,
    })
}

fn delete_file(tx: &Connection, id: i64, row_too: bool) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM fts WHERE rowid IN (SELECT rowid FROM entries WHERE file_id=?1)",
        [id],
    )?;
    tx.execute("DELETE FROM entries WHERE file_id=?1", [id])?;
    tx.execute("DELETE FROM links WHERE file_id=?1", [id])?;
    if row_too {
        tx.execute("DELETE FROM files WHERE id=?1", [id])?;
        tx.execute("DELETE FROM state WHERE id=?1", [id])?;
        tx.execute("DELETE FROM listing WHERE id=?1", [id])?;
    }
    Ok(())
}

fn to_stored(i: &SessionInfo) -> String {
    let mut v = i.to_json();
    let o = v.as_object_mut().expect("object");
    o.remove("allMessagesText");
    o.insert("_createdMs".into(), i.created_ms.into());
    o.insert(
        "_modifiedMs".into(),
        if i.modified_ms.is_nan() {
            serde_json::Value::Null
        } else {
            i.modified_ms.into()
        },
    );
    o.insert("_drops".into(), i.reference_drops.into());
    v.to_string()
}

/// The stored listing fields (what [`to_stored`] writes; other keys are skipped).
#[derive(serde::Deserialize)]
struct StoredInfo {
    path: String,
    #[serde(default)]
    id: serde_json::Value,
    #[serde(default)]
    cwd: String,
    #[serde(default)]
    name: Option<String>,
    /// Present (even `null`) or absent: kept apart.
    #[serde(default, rename = "parentSessionPath", deserialize_with = "present")]
    parent_session_path: Option<serde_json::Value>,
    #[serde(default, rename = "_createdMs")]
    created_ms: Option<f64>,
    #[serde(default, rename = "_modifiedMs")]
    modified_ms: Option<f64>,
    #[serde(default, rename = "messageCount")]
    message_count: u64,
    #[serde(default, rename = "firstMessage")]
    first_message: String,
    #[serde(default, rename = "_drops")]
    drops: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    <serde_json::Value as serde::Deserialize>::deserialize(d).map(Some)
}

fn from_stored(s: &str) -> Option<SessionInfo> {
    let v: StoredInfo = serde_json::from_str(s).ok()?;
    Some(SessionInfo {
        path: PathBuf::from(v.path),
        id: v.id,
        cwd: v.cwd,
        name: v.name,
        parent_session_path: v.parent_session_path,
        created_ms: v.created_ms,
        modified_ms: v.modified_ms.unwrap_or(f64::NAN),
        message_count: v.message_count,
        first_message: v.first_message,
        all_messages_text: String::new(),
        reference_drops: v.drops,
    })
}

/// A failed write of one file's rows.
enum StoreError {
    Sql(rusqlite::Error),
    Io(std::io::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e)
    }
}

fn store(tx: &Connection, listings: &mut Store, d: Done) -> Result<(), StoreError> {
    let path_s = d.path.to_string_lossy().into_owned();
    let id: i64 = match d.old {
        Some(id) => {
            if !d.append {
                delete_file(tx, id, false)?;
            }
            id
        }
        None => {
            tx.execute("INSERT INTO files(path) VALUES(?1)", [&path_s])?;
            tx.last_insert_rowid()
        }
    };
    let tail = if d.append && d.pass.tail_len == 0 {
        d.prev_tail
    } else {
        (d.pass.tail_hash, d.pass.tail_len)
    };
    let state = serde_json::to_string(&d.pass.committed).unwrap_or_default();
    let committed_offset = d.pass.committed_offset;
    let leaf = d.pass.committed.leaf.clone();
    // The listing takes the pass's texts (no copy of the session's message text).
    let info = d.pass.into_full().into_info(&d.path, d.seen.mtime_ms);
    tx.execute(
        "UPDATE files SET size=?2, mtime_ns=?3, offset=?4, head_hash=?5, tail_hash=?6, tail_len=?7,
           info=?8, cwd=?9, modified_ms=?10, drops=?11, texts=?12 WHERE id=?1",
        params![
            id,
            d.seen.size as i64,
            d.seen.mtime_ns,
            committed_offset as i64,
            d.head_hash as i64,
            tail.0 as i64,
            tail.1 as i64,
            info.as_ref().map(to_stored),
            info.as_ref().map(|i| i.cwd.clone()),
            info.as_ref().map(|i| i.modified_ms),
            info.as_ref().map(|i| i.reference_drops),
            d.seen.texts,
        ],
    )?;
    tx.prepare_cached("INSERT OR REPLACE INTO state(id, state) VALUES(?1, ?2)")?
        .execute(params![id, state])?;
    if !d.keep_listing {
        let range = match &info {
            Some(i) => {
                let json = i.json_string();
                let off = listings.append(json.as_bytes()).map_err(StoreError::Io)?;
                Some((off as i64, json.len() as i64))
            }
            None => None,
        };
        tx.prepare_cached("INSERT OR REPLACE INTO listing(id, off, len) VALUES(?1, ?2, ?3)")?
            .execute(params![id, range.map(|r| r.0), range.map(|r| r.1)])?;
    }
    if !d.seen.texts {
        // Listing only: the texts stay behind (marked), for the next search to redo.
        return Ok(());
    }
    {
        let mut ins_e = tx.prepare_cached(
            "INSERT INTO entries(file_id, entry_id, role, ts_ms, on_branch) VALUES(?1,?2,?3,?4,0)",
        )?;
        let mut ins_f = tx.prepare_cached("INSERT INTO fts(rowid, text) VALUES(?1, ?2)")?;
        let mut ins_l =
            tx.prepare_cached("INSERT INTO links(file_id, entry_id, parent_id) VALUES(?1,?2,?3)")?;
        for r in d.rows {
            if r.role.is_empty() {
                ins_l.execute(params![id, r.entry_id, r.parent_id])?;
                continue;
            }
            ins_e.execute(params![id, r.entry_id, r.role, r.ts_ms])?;
            let rowid = tx.last_insert_rowid();
            ins_f.execute(params![rowid, r.text])?;
        }
    }
    // The current branch: from the leaf (last entry) up the parent links.
    let mut parents: HashMap<String, Option<String>> = HashMap::new();
    {
        let mut st = tx.prepare_cached(
            "SELECT entry_id, parent_id FROM links WHERE file_id=?1 ORDER BY rowid",
        )?;
        let rows = st.query_map([id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })?;
        for r in rows {
            let (e, p) = r?;
            parents.insert(e, p);
        }
    }
    let mut on: HashSet<String> = HashSet::new();
    let mut cur = leaf;
    while let Some(c) = cur {
        if !on.insert(c.clone()) {
            break;
        }
        cur = parents.get(&c).cloned().flatten();
    }
    let mut st =
        tx.prepare_cached("SELECT rowid, entry_id, on_branch FROM entries WHERE file_id=?1")?;
    let rows: Vec<(i64, String, bool)> = st
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut up = tx.prepare_cached("UPDATE entries SET on_branch=?2 WHERE rowid=?1")?;
    for (rowid, e, was) in rows {
        let now = on.contains(&e);
        if now != was {
            up.execute(params![rowid, now])?;
        }
    }
    Ok(())
}

impl Index {
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

/// Refreshes the index for `files` and returns their listings as a full scan would
/// ([`list::finish`] order: the given candidate order, then newest first).
pub fn listed(
    idx: &mut Index,
    files: &[(PathBuf, Option<FileStat>)],
    in_scope: &dyn Fn(&Path) -> bool,
    opts: list::ListOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> crate::Result<(Vec<SessionInfo>, RefreshStats)> {
    // Listings only: texts wait for the first search.
    let st = idx.refresh_stat(files, in_scope, opts.threads, false, progress)?;
    let pos: HashMap<&Path, usize> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (p.0.as_path(), i))
        .collect();
    let mut v: Vec<(usize, SessionInfo)> = idx
        .infos_with(in_scope, opts.with_text)?
        .into_iter()
        .filter_map(|i| pos.get(i.path.as_path()).map(|&n| (n, i)))
        .collect();
    v.sort_by_key(|x| x.0);
    let infos = v
        .into_iter()
        .map(|(_, mut i)| {
            if !opts.with_text {
                i.all_messages_text = String::new();
            }
            Some(i)
        })
        .collect();
    Ok((list::finish(infos, opts), st))
}
