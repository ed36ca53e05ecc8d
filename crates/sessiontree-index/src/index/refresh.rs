//! Bringing the index up to date with the files (the refresh rule is in the module docs).

use super::schema::{set_meta, sql_err, store_err};
use super::{Index, RefreshStats};
use crate::list::{self, Acc, FileStat, SessionInfo};
use crate::listing_store::{self, Store};
use crate::summary::checksum;
use rusqlite::{params, Connection, OptionalExtension};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Stored rows by path (Fx hashing: the paths are ours, and there are thousands).
/// Keyed by the path's bytes: `Path`'s own hash walks its components, which was a fifth of
/// a warm `ls` over 20,000 sessions.
type StoredMap = rustc_hash::FxHashMap<Vec<u8>, Stored>;

#[derive(Debug)]
pub(super) struct Stored {
    id: i64,
    size: u64,
    mtime_ns: i64,
    dev: u64,
    ino: u64,
    ctime_ns: i64,
    offset: u64,
    head_hash: u64,
    tail_hash: u64,
    tail_len: u64,
    /// Boxed: most files are unchanged, and their rows stay small.
    state: Option<Box<Acc>>,
}

#[allow(clippy::large_enum_variant)] // one per file, short-lived
enum Plan {
    Unchanged,
    Full(Option<i64>),
    Append(Stored),
}

struct Done {
    path: PathBuf,
    /// Size, times and verification bytes.
    seen: Seen,
    old: Option<i64>,
    append: bool,
    pass: list::Pass,
    head_hash: u64,
    prev_tail: (u64, u64),
}

/// What a worker found of a file before reading it.
struct Seen {
    stat: FileStat,
    /// Bytes read to check a grown file's prefix.
    verify: u64,
}

/// What a worker made of one planned file.
enum Outcome {
    Done(Box<Done>),
    /// Gone, unreadable, or not a regular file: its rows go.
    Unreadable(Option<i64>),
}

fn head_hash(f: &mut std::fs::File, upto: u64) -> std::io::Result<(u64, u64)> {
    let n = upto.min(4096) as usize;
    let mut b = vec![0u8; n];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut b)?;
    Ok((list::fnv(&b), n as u64))
}

/// The stored rows: all of them, or (`Some`) those of these paths, each looked up by its
/// path.
fn stored(
    conn: &Connection,
    only: Option<&[(PathBuf, Option<FileStat>)]>,
) -> rusqlite::Result<StoredMap> {
    const COLUMNS: &str =
        "SELECT id, path, size, mtime_ns, dev, ino, ctime_ns, offset, head_hash, tail_hash, tail_len FROM files";
    let row = |r: &rusqlite::Row<'_>| {
        Ok((
            r.get::<_, String>(1)?.into_bytes(),
            Stored {
                id: r.get(0)?,
                size: r.get::<_, Option<i64>>(2)?.unwrap_or(-1) as u64,
                mtime_ns: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                dev: r.get::<_, Option<i64>>(4)?.unwrap_or(0) as u64,
                ino: r.get::<_, Option<i64>>(5)?.unwrap_or(0) as u64,
                ctime_ns: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                offset: r.get::<_, Option<i64>>(7)?.unwrap_or(0) as u64,
                head_hash: r.get::<_, Option<i64>>(8)?.unwrap_or(0) as u64,
                tail_hash: r.get::<_, Option<i64>>(9)?.unwrap_or(0) as u64,
                tail_len: r.get::<_, Option<i64>>(10)?.unwrap_or(0) as u64,
                state: None,
            },
        ))
    };
    match only {
        None => {
            let n: i64 = conn.query_row("SELECT count(*) FROM files", [], |r| r.get(0))?;
            let mut out = StoredMap::with_capacity_and_hasher(
                usize::try_from(n).unwrap_or(0).min(1 << 20),
                Default::default(),
            );
            let mut st = conn.prepare(COLUMNS)?;
            for r in st.query_map([], row)? {
                let (p, s) = r?;
                out.insert(p, s);
            }
            Ok(out)
        }
        Some(files) => {
            let mut out = StoredMap::default();
            let mut st = conn.prepare(&format!("{COLUMNS} WHERE path=?1"))?;
            for (p, _) in files {
                // (Stored as `store` writes it.)
                let p = p.to_string_lossy();
                if let Some((p, s)) = st.query_row([&*p], row).optional()? {
                    out.insert(p, s);
                }
            }
            Ok(out)
        }
    }
}

impl Index {
    /// Brings the listings up to date for `files`; rows of files `in_scope` that are not in
    /// `files` are removed (see [`super::all_scope`], [`super::folder_scope`]).
    pub fn refresh(
        &mut self,
        files: &[PathBuf],
        in_scope: &dyn Fn(&Path) -> bool,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> crate::Result<RefreshStats> {
        let files = list::with_stats(files.to_vec());
        self.refresh_stat(&files, in_scope, threads, progress)
    }

    /// [`Index::refresh`] for files already stat'ed (`None`: gone, unreadable, or a folder;
    /// their rows are removed).
    pub fn refresh_stat(
        &mut self,
        files: &[(PathBuf, Option<FileStat>)],
        in_scope: &dyn Fn(&Path) -> bool,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> crate::Result<RefreshStats> {
        let print = files_print(files);
        self.refresh_printed(files, in_scope, threads, progress, &print)
    }

    /// Whether the last refresh that committed was of exactly these files with these
    /// stats ([`files_print`]), none marked damaged since: then a refresh of them would
    /// find every one unchanged.
    pub(super) fn fresh_for(&self, print: &str) -> crate::Result<bool> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key=?1", [FRESH_KEY], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql_err)?;
        Ok(v.as_deref() == Some(print))
    }

    /// [`Index::refresh_stat`] given the files' [`files_print`], recorded with the rows.
    pub(super) fn refresh_printed(
        &mut self,
        files: &[(PathBuf, Option<FileStat>)],
        in_scope: &dyn Fn(&Path) -> bool,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
        print: &str,
    ) -> crate::Result<RefreshStats> {
        self.refresh_rows(files, Some(in_scope), threads, progress, Some(print))
    }

    /// Brings the rows of exactly `files` up to date (a file without a stat loses its row),
    /// each row looked up by its path: what a few changed files cost, whatever the number
    /// of rows. No other row is touched; no print describes the rows after it.
    pub(super) fn refresh_few(
        &mut self,
        files: &[(PathBuf, Option<FileStat>)],
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> crate::Result<RefreshStats> {
        self.refresh_rows(files, None, threads, progress, None)
    }

    /// A refresh: of every row `in_scope` (rows of files not in `files` removed), or
    /// (`None`) of the rows of `files` alone; `print` recorded, or (`None`) forgotten.
    fn refresh_rows(
        &mut self,
        files: &[(PathBuf, Option<FileStat>)],
        in_scope: Option<&dyn Fn(&Path) -> bool>,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
        print: Option<&str>,
    ) -> crate::Result<RefreshStats> {
        let mut stats = RefreshStats {
            files: files.len(),
            rebuilt: self.rebuilt,
            ..Default::default()
        };
        self.captured = None;
        // An immediate transaction: a second refresh waits for this one, then sees its rows.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        // The store this handle holds may have been replaced by another process's
        // compaction since it was opened: appending to the old file would record offsets
        // that mean other bytes in the new one. Under the write lock the store file is the
        // one the database names, or the index is broken.
        if !super::queries::store_for(&mut self.store, &tx)? {
            return Err(store_err(std::io::Error::other(
                "the listing store does not match the index",
            )));
        }
        let mut stored = stored(&tx, in_scope.is_none().then_some(files)).map_err(sql_err)?;
        let wanted: rustc_hash::FxHashSet<&[u8]> = files
            .iter()
            .filter(|f| f.1.is_some())
            .map(|f| f.0.as_os_str().as_bytes())
            .collect();
        // (Looked up by path: the rows of files without a stat.)
        let in_scope = in_scope.unwrap_or(&|_| true);
        let gone: Vec<i64> = stored
            .iter()
            .filter(|(p, _)| {
                in_scope(Path::new(std::ffi::OsStr::from_bytes(p)))
                    && !wanted.contains(p.as_slice())
            })
            .map(|(_, s)| s.id)
            .collect();
        let mut work: Vec<(PathBuf, Plan)> = Vec::new();
        for (p, st) in files {
            let Some(st) = *st else { continue };
            let plan = match stored.remove(p.as_os_str().as_bytes()) {
                None => Plan::Full(None),
                Some(s)
                    if s.size == st.size
                        && s.mtime_ns == st.mtime_ns
                        && s.dev == st.dev
                        && s.ino == st.ino
                        && s.ctime_ns == st.ctime_ns =>
                {
                    Plan::Unchanged
                }
                Some(mut s)
                    if st.size >= s.offset
                        && s.offset > 0
                        && s.dev == st.dev
                        && s.ino == st.ino =>
                {
                    let state: Option<String> = tx
                        .query_row("SELECT state FROM state WHERE id=?1", [s.id], |r| r.get(0))
                        .optional()
                        .map(Option::flatten)
                        .map_err(sql_err)?;
                    s.state = state.and_then(|t| load_state(&t, s.id, &tx, &self.store));
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
            delete_file(&tx, *id).map_err(sql_err)?;
            stats.removed += 1;
        }
        let total = work.len();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (send, recv) = std::sync::mpsc::sync_channel::<Outcome>(4);
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
                    if send.send(process(&work[i].0, &work[i].1)).is_err() {
                        break;
                    }
                });
            }
            drop(send);
            let mut n = 0;
            for d in recv {
                n += 1;
                progress(n, total);
                let d = match d {
                    Outcome::Done(d) => d,
                    Outcome::Unreadable(old) => {
                        if let Some(id) = old {
                            if err.is_none() {
                                if let Err(e) = delete_file(&tx, id) {
                                    err = Some(e.into());
                                }
                            }
                            stats.removed += 1;
                        }
                        continue;
                    }
                };
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
                    if let Err(e) = store(&tx, &mut self.store, *d) {
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
        match print {
            Some(print) => {
                tx.execute(
                    "INSERT OR REPLACE INTO meta VALUES(?1, ?2)",
                    [FRESH_KEY, print],
                )
                .map_err(sql_err)?;
            }
            None => forget_print(&tx)?,
        }
        tx.commit().map_err(sql_err)?;
        self.rebuilt = false;
        Ok(stats)
    }

    /// [`Index::mark_damaged`] by path.
    pub(super) fn forget(&mut self, paths: &[PathBuf]) -> crate::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        for p in paths {
            tx.execute(
                "UPDATE files SET size=-1, offset=0, mtime_ns=0 WHERE path=?1",
                [&*p.to_string_lossy()],
            )
            .map_err(sql_err)?;
        }
        forget_print(&tx)?;
        tx.commit().map_err(sql_err)
    }

    /// Marks files whose stored listing failed its checksum: the next refresh reads them
    /// again from the start.
    pub(super) fn mark_damaged(&mut self, ids: &[i64]) -> crate::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        for id in ids {
            tx.execute(
                "UPDATE files SET size=-1, offset=0, mtime_ns=0 WHERE id=?1",
                [id],
            )
            .map_err(sql_err)?;
        }
        forget_print(&tx)?;
        tx.commit().map_err(sql_err)
    }
}

/// The meta key of the last committed refresh's [`files_print`].
const FRESH_KEY: &str = "fresh_files";

/// A digest (SHA-256) of a refresh's file list: each path with its stat (or none), in
/// order. Equal prints mean the same files in the same states (a stat's ctime cannot be
/// set back by a writer, and the digest cannot be steered to an old one), so a listing
/// that matches the print needs no row-by-row comparison.
pub(super) fn files_print(files: &[(PathBuf, Option<FileStat>)]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update((files.len() as u64).to_le_bytes());
    for (p, st) in files {
        let b = p.as_os_str().as_bytes();
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
        match st {
            None => h.update([0u8]),
            Some(st) => {
                h.update([1u8]);
                for v in [
                    st.size,
                    st.mtime_ns as u64,
                    st.dev,
                    st.ino,
                    st.ctime_ns as u64,
                ] {
                    h.update(v.to_le_bytes());
                }
            }
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Rows changed other than by a refresh: no print describes them.
fn forget_print(tx: &Connection) -> crate::Result<()> {
    tx.execute("DELETE FROM meta WHERE key=?1", [FRESH_KEY])
        .map_err(sql_err)?;
    Ok(())
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
    if dead > live.max(floor) || (floor == 0 && dead > 0) {
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

fn process(path: &Path, plan: &Plan) -> Outcome {
    let old = match plan {
        Plan::Full(o) => *o,
        Plan::Append(s) => Some(s.id),
        Plan::Unchanged => None,
    };
    match process_inner(path, plan) {
        Some(d) => Outcome::Done(Box::new(d)),
        None => Outcome::Unreadable(old),
    }
}

fn process_inner(path: &Path, plan: &Plan) -> Option<Done> {
    // Non-blocking open, regular files only: a FIFO swapped in after the walk never hangs.
    let (mut f, meta) = sessiontree::store::open_regular(path).ok()?;
    let stat = FileStat::of(&meta)?;
    let mut seen = Seen { stat, verify: 0 };
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
    let old = match plan {
        Plan::Full(o) => *o,
        _ => None,
    };
    full(path, f, old, seen)
}

fn resume(path: &Path, mut f: std::fs::File, s: &Stored, seen: Seen) -> Option<Done> {
    let acc = s.state.clone()?;
    f.seek(SeekFrom::Start(s.offset)).ok()?;
    let pass = list::pass(f, s.offset, *acc, None).ok()?;
    Some(Done {
        path: path.to_path_buf(),
        seen,
        old: Some(s.id),
        append: true,
        pass,
        head_hash: s.head_hash,
        prev_tail: (s.tail_hash, s.tail_len),
    })
}

fn full(path: &Path, f: std::fs::File, old: Option<i64>, seen: Seen) -> Option<Done> {
    let mut f2 = f.try_clone().ok()?;
    let pass = list::pass(f, 0, Acc::new(true), None).ok()?;
    let head = if pass.committed_offset > 0 {
        head_hash(&mut f2, pass.committed_offset).ok()?.0
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
    })
}

/// Marks a stored state whose `all_text` is the listing's `allMessagesText`.
const TEXT_IN_LISTING: &str = "_textInListing";

/// A stored pass state, its message text taken from the listing store when it was left
/// there; `None` (read the file again) when anything does not check out.
fn load_state(text: &str, id: i64, tx: &Connection, store: &Store) -> Option<Box<Acc>> {
    let mut v: serde_json::Value = serde_json::from_str(text).ok()?;
    let o = v.as_object_mut()?;
    let in_listing = o.remove(TEXT_IN_LISTING).is_some();
    let mut acc: Acc = serde_json::from_value(v).ok()?;
    if in_listing {
        let (off, len, sum): (i64, i64, i64) = tx
            .query_row("SELECT off, len, sum FROM listing WHERE id=?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .ok()?;
        let map = store.map().ok()?;
        let b = map.get(off as usize..(off + len) as usize)?;
        if checksum(b) != sum as u64 {
            return None;
        }
        let listing: serde_json::Value = serde_json::from_slice(b).ok()?;
        acc.all_text = listing.get("allMessagesText")?.as_str()?.to_string();
    }
    Some(Box::new(acc))
}

fn delete_file(tx: &Connection, id: i64) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM files WHERE id=?1", [id])?;
    tx.execute("DELETE FROM state WHERE id=?1", [id])?;
    tx.execute("DELETE FROM listing WHERE id=?1", [id])?;
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
        Some(id) => id,
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
    // The message text the state carries is the listing's `allMessagesText` when the
    // listing was made from exactly the committed lines: then it is kept once, in the
    // listing store, and read back from there to resume.
    let state = if d.pass.committed_offset == d.seen.stat.size && d.pass.committed.with_text {
        let mut v = serde_json::to_value(&d.pass.committed).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("all_text".into(), "".into());
            o.insert(TEXT_IN_LISTING.into(), true.into());
        }
        v.to_string()
    } else {
        serde_json::to_string(&d.pass.committed).unwrap_or_default()
    };
    let committed_offset = d.pass.committed_offset;
    let st = d.seen.stat;
    // The listing takes the pass's texts (no copy of the session's message text).
    let info = d.pass.into_full().into_info(&d.path, st.mtime_ms);
    let info_s = info.as_ref().map(to_stored);
    tx.execute(
        "UPDATE files SET size=?2, mtime_ns=?3, dev=?4, ino=?5, ctime_ns=?6, offset=?7,
           head_hash=?8, tail_hash=?9, tail_len=?10, info=?11, cwd=?12, modified_ms=?13,
           drops=?14, info_sum=?15 WHERE id=?1",
        params![
            id,
            st.size as i64,
            st.mtime_ns,
            st.dev as i64,
            st.ino as i64,
            st.ctime_ns,
            committed_offset as i64,
            d.head_hash as i64,
            tail.0 as i64,
            tail.1 as i64,
            info_s,
            info.as_ref().map(|i| i.cwd.clone()),
            info.as_ref().map(|i| i.modified_ms),
            info.as_ref().map(|i| i.reference_drops),
            info_s.as_ref().map(|s| checksum(s.as_bytes()) as i64),
        ],
    )?;
    tx.prepare_cached("INSERT OR REPLACE INTO state(id, state) VALUES(?1, ?2)")?
        .execute(params![id, state])?;
    let range = match &info {
        Some(i) => {
            let json = i.json_string();
            let off = listings.append(json.as_bytes()).map_err(StoreError::Io)?;
            Some((
                off as i64,
                json.len() as i64,
                checksum(json.as_bytes()) as i64,
            ))
        }
        None => None,
    };
    tx.prepare_cached("INSERT OR REPLACE INTO listing(id, off, len, sum) VALUES(?1, ?2, ?3, ?4)")?
        .execute(params![
            id,
            range.map(|r| r.0),
            range.map(|r| r.1),
            range.map(|r| r.2)
        ])?;
    Ok(())
}
