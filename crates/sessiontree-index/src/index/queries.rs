//! Reading listings back: every byte read is checked against its checksum, and `ls --json`
//! writes the listings of one snapshot (the one it listed and ordered).

use super::schema::{meta_u64, sql_err, store_err};
use super::snapshot::{self, Listing};
use super::{Index, RefreshStats};
use crate::list::{self, FileStat, SessionInfo};
use crate::listing_store::{Mismatch, Store};
use crate::summary::checksum;
use rusqlite::OptionalExtension as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Listing ranges `(off, len, sum)` by path, and the store nonce they belong to.
pub(super) struct Captured {
    nonce: u64,
    ranges: rustc_hash::FxHashMap<Vec<u8>, (u64, u64, u64)>,
}

/// Why stored listings could not be read.
pub(super) enum ReadError {
    Fatal(crate::Error),
    /// These files' stored listings failed their checksums.
    Damaged(Vec<i64>),
}

impl From<crate::Error> for ReadError {
    fn from(e: crate::Error) -> Self {
        ReadError::Fatal(e)
    }
}

fn damaged_err(what: &str) -> crate::Error {
    store_err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{what} failed its checksum"),
    ))
}

/// The stored listing fields (what `to_stored` writes; other keys are skipped).
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
    #[serde(default, rename = "importedFrom")]
    imported: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    <serde_json::Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// A row of `files` with its listing, as read (see [`decode_row`]).
struct RawRow {
    id: i64,
    path: String,
    info: String,
    /// `info_sum`, and the listing's `off`, `len` and `sum`.
    sums: (Option<i64>, Option<i64>, Option<i64>, Option<i64>),
}

/// Rows per batch handed to the decoding thread.
const BATCH: usize = 256;

/// A row's listing, checked against its checksums (and, given the store's bytes, with its
/// `allMessagesText`); the row's id when something does not match.
fn decode_row(row: RawRow, map: Option<&[u8]>) -> Result<SessionInfo, i64> {
    let RawRow {
        id,
        path,
        info,
        sums,
    } = row;
    let (Some(sum), Some(off), Some(len), Some(lsum)) = sums else {
        return Err(id);
    };
    let mut i = (checksum(info.as_bytes()) == sum as u64)
        .then(|| from_stored(&info))
        .flatten()
        .filter(|i| i.path == Path::new(&path))
        .ok_or(id)?;
    if let Some(map) = map {
        let bytes = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| map.get(o..o.checked_add(l)?));
        let json = bytes.filter(|b| checksum(b) == lsum as u64).ok_or(id)?;
        i.all_messages_text = serde_json::from_slice::<serde_json::Value>(json)
            .ok()
            .and_then(|v| v.get("allMessagesText")?.as_str().map(str::to_string))
            .unwrap_or_default();
    }
    Ok(i)
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
        imported: v.imported,
    })
}

/// Attempts at a snapshot whose store file can still be opened (a compaction between
/// reading the database and opening the store makes them differ; the next one agrees).
const ATTEMPTS: usize = 200;

/// Makes `store` the store named by the snapshot `tx` is in; `false` when that store is
/// already replaced (take a new snapshot).
pub(super) fn store_for(store: &mut Store, tx: &rusqlite::Connection) -> crate::Result<bool> {
    let nonce = meta_u64(tx, "listing_nonce").map_err(sql_err)?;
    if nonce == Some(store.nonce) {
        return Ok(true);
    }
    let len = meta_u64(tx, "listing_len").map_err(sql_err)?.unwrap_or(0);
    match Store::open(&store.path, nonce.unwrap_or(0), len) {
        Ok(s) => {
            *store = s;
            Ok(true)
        }
        Err(Mismatch::Stale(_)) => Ok(false),
        Err(Mismatch::Io(e)) => Err(store_err(e)),
    }
}

impl Index {
    /// The stored listings of files `in_scope` (unordered).
    pub fn infos(&mut self, in_scope: &dyn Fn(&Path) -> bool) -> crate::Result<Vec<SessionInfo>> {
        self.infos_with(in_scope, true)
    }

    /// The stored listings (without `allMessagesText`) of these paths, each looked up by
    /// its path; a path without one is left out. An error when one fails its checksum.
    fn infos_of(&mut self, paths: &[&Path]) -> crate::Result<Vec<SessionInfo>> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, path, info, info_sum, off, len, sum
                 FROM files LEFT JOIN listing USING(id) WHERE path=?1 AND info IS NOT NULL",
            )
            .map_err(sql_err)?;
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            let row = st
                .query_row([&*p.to_string_lossy()], |r| {
                    Ok(RawRow {
                        id: r.get(0)?,
                        path: r.get(1)?,
                        info: r.get(2)?,
                        sums: (r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
                    })
                })
                .optional()
                .map_err(sql_err)?;
            if let Some(row) = row {
                out.push(decode_row(row, None).map_err(|_| damaged_err("a stored listing"))?);
            }
        }
        Ok(out)
    }

    /// As [`Index::infos`]; `allMessagesText` is left empty unless `with_text`. The listing
    /// ranges of the same snapshot are kept for [`Index::write_json`].
    pub fn infos_with(
        &mut self,
        in_scope: &dyn Fn(&Path) -> bool,
        with_text: bool,
    ) -> crate::Result<Vec<SessionInfo>> {
        self.captured = None;
        match self.try_infos(in_scope, with_text) {
            Ok((v, _)) => Ok(v),
            Err(ReadError::Fatal(e)) => Err(e),
            Err(ReadError::Damaged(_)) => Err(damaged_err("a stored listing")),
        }
    }

    fn try_infos(
        &mut self,
        in_scope: &dyn Fn(&Path) -> bool,
        with_text: bool,
    ) -> Result<(Vec<SessionInfo>, Captured), ReadError> {
        for _ in 0..ATTEMPTS {
            let Index { conn, store, .. } = &mut *self;
            let res = (|| -> Result<Option<(Vec<SessionInfo>, Captured)>, ReadError> {
                let tx = rusqlite::Transaction::new_unchecked(
                    conn,
                    rusqlite::TransactionBehavior::Deferred,
                )
                .map_err(sql_err)?;
                if !store_for(store, &tx)? {
                    return Ok(None);
                }
                let mut st = tx
                    .prepare_cached(
                        "SELECT id, path, info, info_sum, off, len, sum
                         FROM files LEFT JOIN listing USING(id) WHERE info IS NOT NULL",
                    )
                    .map_err(sql_err)?;
                // Sized once: regrowing a list of 20,000 listings copied it into fresh
                // pages several times.
                let rows_now: i64 = tx
                    .query_row("SELECT count(*) FROM files", [], |r| r.get(0))
                    .map_err(sql_err)?;
                let n = usize::try_from(rows_now).unwrap_or(0).min(1 << 20);
                let mut rows = st.query([]).map_err(sql_err)?;
                let mut cap = Captured {
                    nonce: store.nonce,
                    ranges: rustc_hash::FxHashMap::with_capacity_and_hasher(n, Default::default()),
                };
                let map = if with_text {
                    Some(store.map().map_err(store_err)?)
                } else {
                    None
                };
                // The rows are read here while another thread checks and decodes them
                // (a listing's JSON takes as long to decode as SQLite takes to step to
                // it), in batches, in order.
                let map = map.as_deref();
                let (to_decoder, batches) = std::sync::mpsc::sync_channel::<Vec<RawRow>>(8);
                let decoded = std::thread::scope(|sc| {
                    let decoder = sc.spawn(move || {
                        let mut out = Vec::with_capacity(n);
                        let mut damaged = Vec::new();
                        for batch in batches {
                            for row in batch {
                                match decode_row(row, map) {
                                    Ok(i) => out.push(i),
                                    Err(id) => damaged.push(id),
                                }
                            }
                        }
                        (out, damaged)
                    });
                    let read = (|| -> Result<(), ReadError> {
                        let mut batch = Vec::with_capacity(BATCH);
                        while let Some(r) = rows.next().map_err(sql_err)? {
                            let id: i64 = r.get(0).map_err(sql_err)?;
                            let p: String = r.get(1).map_err(sql_err)?;
                            if !in_scope(Path::new(&p)) {
                                continue;
                            }
                            let info: String = r.get(2).map_err(sql_err)?;
                            let sum: Option<i64> = r.get(3).map_err(sql_err)?;
                            let off: Option<i64> = r.get(4).map_err(sql_err)?;
                            let len: Option<i64> = r.get(5).map_err(sql_err)?;
                            let lsum: Option<i64> = r.get(6).map_err(sql_err)?;
                            if let (Some(off), Some(len), Some(lsum)) = (off, len, lsum) {
                                cap.ranges.insert(
                                    p.as_bytes().to_vec(),
                                    (off as u64, len as u64, lsum as u64),
                                );
                            }
                            batch.push(RawRow {
                                id,
                                path: p,
                                info,
                                sums: (sum, off, len, lsum),
                            });
                            if batch.len() == BATCH {
                                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                                if to_decoder.send(full).is_err() {
                                    break;
                                }
                            }
                        }
                        if !batch.is_empty() {
                            let _ = to_decoder.send(batch);
                        }
                        Ok(())
                    })();
                    drop(to_decoder);
                    let decoded = decoder
                        .join()
                        .map_err(|_| ReadError::Fatal(damaged_err("the listing decoder")))?;
                    read.map(|()| decoded)
                })?;
                let (out, damaged) = decoded;
                if !damaged.is_empty() {
                    return Err(ReadError::Damaged(damaged));
                }
                Ok(Some((out, cap)))
            })();
            match res? {
                Some(r) => return Ok(r),
                None => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        Err(ReadError::Fatal(store_err(std::io::Error::other(
            "the listing store kept changing (another sessiontree compacting it?)",
        ))))
    }

    /// Writes the stored Pi-shaped JSON of each of `paths` (indexed sessions), joined by
    /// `,`: ranges of the mapped listing store, handed to the kernel with vectored writes
    /// (no copy here). The same bytes as [`SessionInfo::write_json`] of a full scan. The
    /// ranges are those of the [`listed`] call just before when it listed every path (one
    /// snapshot for what was listed and what is written), else of a new snapshot; every
    /// range is checked against its checksum before anything is written.
    pub fn write_json<'p>(
        &mut self,
        paths: impl IntoIterator<Item = &'p Path>,
        w: &mut dyn std::io::Write,
    ) -> crate::Result<()> {
        self.write_json_between(paths, b"", b"", w)
    }

    /// [`Index::write_json`] between `prefix` and `suffix`, all in one vectored write that
    /// starts only once every listing passed its checksum: an error leaves `w` untouched.
    /// The index is a cache, so a damaged listing (bytes, length or checksum) is a miss:
    /// its session is read again, its listing written anew, and the answer built again;
    /// only when that keeps failing is an error returned (the caller then reads the files).
    pub fn write_json_between<'p>(
        &mut self,
        paths: impl IntoIterator<Item = &'p Path>,
        prefix: &[u8],
        suffix: &[u8],
        w: &mut dyn std::io::Write,
    ) -> crate::Result<()> {
        let paths: Vec<&Path> = paths.into_iter().collect();
        let mut captured = self
            .captured
            .take()
            .filter(|c| c.nonce == self.store.nonce)
            .and_then(|c| {
                paths
                    .iter()
                    .map(|p| c.ranges.get(p.as_os_str().as_bytes()).copied())
                    .collect::<Option<Vec<_>>>()
            });
        let mut damaged = Vec::new();
        for _ in 0..3 {
            let ranges = match captured.take() {
                Some(r) => r,
                None => self.fresh_ranges(&paths)?,
            };
            let map = self.store.map().map_err(store_err)?;
            let bytes: &[u8] = &map;
            if first_damaged(bytes, &ranges).is_some() {
                damaged = all_damaged(bytes, &ranges)
                    .into_iter()
                    .map(|n| paths[n].to_path_buf())
                    .collect();
                drop(map);
                self.read_again(&damaged)?;
                continue;
            }
            let mut slices: Vec<std::io::IoSlice<'_>> = Vec::with_capacity(ranges.len() * 2 + 2);
            slices.push(std::io::IoSlice::new(prefix));
            for (n, &(o, l, _)) in ranges.iter().enumerate() {
                if n > 0 {
                    slices.push(std::io::IoSlice::new(b","));
                }
                slices.push(std::io::IoSlice::new(&bytes[o as usize..(o + l) as usize]));
            }
            slices.push(std::io::IoSlice::new(suffix));
            crate::context::write_all_vectored(w, &mut slices)
                .map_err(crate::error::io(Path::new("<stdout>")))?;
            return Ok(());
        }
        Err(damaged_err(&format!(
            "the listing of {} (again after reading it anew)",
            damaged
                .first()
                .map_or(String::new(), |p| p.display().to_string())
        )))
    }

    /// Reads the sessions at `paths` again and stores their listings anew (their stored
    /// ones were damaged).
    fn read_again(&mut self, paths: &[PathBuf]) -> crate::Result<()> {
        self.forget(paths)?;
        let files = list::with_stats(paths.to_vec());
        let set: std::collections::HashSet<&Path> = paths.iter().map(PathBuf::as_path).collect();
        self.refresh_stat(&files, &|p| set.contains(p), 1, &|_, _| {})?;
        Ok(())
    }

    /// The listing ranges of `paths` in one new snapshot (the store switched to its nonce).
    fn fresh_ranges(&mut self, paths: &[&Path]) -> crate::Result<Vec<(u64, u64, u64)>> {
        for _ in 0..ATTEMPTS {
            let Index { conn, store, .. } = &mut *self;
            let res = (|| -> crate::Result<Option<Vec<(u64, u64, u64)>>> {
                let tx = rusqlite::Transaction::new_unchecked(
                    conn,
                    rusqlite::TransactionBehavior::Deferred,
                )
                .map_err(sql_err)?;
                if !store_for(store, &tx)? {
                    return Ok(None);
                }
                let mut st = tx
                    .prepare_cached(
                        "SELECT off, len, sum FROM files JOIN listing USING(id) WHERE path = ?1",
                    )
                    .map_err(sql_err)?;
                let mut ranges = Vec::with_capacity(paths.len());
                for p in paths {
                    let path_s = p.to_string_lossy();
                    let r: Option<(Option<i64>, Option<i64>, Option<i64>)> = {
                        use rusqlite::OptionalExtension;
                        st.query_row([&*path_s], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                            .optional()
                            .map_err(sql_err)?
                    };
                    match r {
                        Some((Some(o), Some(l), Some(s))) => {
                            ranges.push((o as u64, l as u64, s as u64))
                        }
                        // No stored listing: out of bounds, so checked as damaged (read
                        // again) like one that fails its checksum.
                        _ => ranges.push((u64::MAX, u64::MAX, 0)),
                    }
                }
                Ok(Some(ranges))
            })();
            match res? {
                Some(r) => return Ok(r),
                None => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        Err(store_err(std::io::Error::other(
            "the listing store kept changing (another sessiontree compacting it?)",
        )))
    }
}

/// The first of `ranges` (offset, length, checksum) of `bytes` that is out of bounds or fails
/// its checksum. Warm `ls --json` spends most of its time here (every stored listing is
/// read once), so big batches are checked on every core: the checksum is bound by memory
/// reads, and one core does not saturate them.
fn first_damaged(bytes: &[u8], ranges: &[(u64, u64, u64)]) -> Option<usize> {
    let bad = |(o, l, sum): (u64, u64, u64)| {
        (o as usize)
            .checked_add(l as usize)
            .and_then(|end| bytes.get(o as usize..end))
            .is_none_or(|b| checksum(b) != sum)
    };
    let total = ranges.iter().fold(0u64, |a, r| a.saturating_add(r.1));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || total < 4 << 20 {
        return ranges.iter().position(|&r| bad(r));
    }
    // Contiguous groups of about equal bytes, one per thread.
    let per = total.div_ceil(threads as u64);
    let mut bounds = vec![0];
    let mut acc = 0;
    for (i, r) in ranges.iter().enumerate() {
        acc = r.1.saturating_add(acc);
        if acc >= per.saturating_mul(bounds.len() as u64) && i + 1 < ranges.len() {
            bounds.push(i + 1);
        }
    }
    bounds.push(ranges.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                s.spawn(move || ranges[a..b].iter().position(|&r| bad(r)).map(|i| a + i))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().ok().flatten())
            .min()
    })
}

/// Every one of `ranges` that [`first_damaged`] would name (the slow path, after damage).
fn all_damaged(bytes: &[u8], ranges: &[(u64, u64, u64)]) -> Vec<usize> {
    (0..ranges.len())
        .filter(|&i| first_damaged(bytes, &ranges[i..i + 1]).is_some())
        .collect()
}

/// Refreshes the index for `files` and returns their listings as a full scan would
/// ([`list::finish`] order: the given candidate order, then newest first). Listings that
/// fail their checksums are read again from their files.
pub fn listed(
    idx: &mut Index,
    files: &[(PathBuf, Option<FileStat>)],
    in_scope: &dyn Fn(&Path) -> bool,
    opts: list::ListOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> crate::Result<(Vec<SessionInfo>, RefreshStats)> {
    let print = super::refresh::files_print(files);
    listed_printed(idx, files, in_scope, opts, progress, &print)
}

/// [`listed`] as a [`Listing`]: every file's row, the ones the reference would drop kept
/// (marked), without `allMessagesText`. When `files` are the very files (paths and stats)
/// the slot of `scope_key` was made for, the rows are read back from it without touching
/// the database; else they are listed and the slot replaced. `digest`: the list digest of
/// `files` ([`sessiontree::list::all_files_stat_digested`]), kept with the rows for
/// [`super::unchanged_rows`].
pub fn listed_rows(
    idx: &mut Index,
    files: &[(PathBuf, Option<FileStat>)],
    digest: Option<&sessiontree::changes::ListDigest>,
    in_scope: &dyn Fn(&Path) -> bool,
    scope_key: &[u8],
    opts: list::ListOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> crate::Result<(Listing, RefreshStats)> {
    let print = super::refresh::files_print(files);
    if let Some(l) = snapshot::read_noting(&idx.path, scope_key, &print, digest) {
        let st = RefreshStats {
            files: files.len(),
            unchanged: files.iter().filter(|f| f.1.is_some()).count(),
            rebuilt: idx.rebuilt,
            ..Default::default()
        };
        return Ok((l, st));
    }
    let opts = list::ListOptions {
        reference_parity: false,
        with_text: false,
        ..opts
    };
    let kept = snapshot::read_any(&idx.path, scope_key);
    let (l, st) = match kept
        .as_ref()
        .map(|k| brought_up_to_date(idx, k, files, digest, &print, opts, progress))
        .transpose()?
        .flatten()
    {
        Some(done) => done,
        None => {
            let (v, st) = listed_printed(idx, files, in_scope, opts, progress, &print)?;
            (Listing::of(files, &v, &print, digest), st)
        }
    };
    snapshot::write(&idx.path, scope_key, &l);
    Ok((l, st))
}

/// The rows of `files` from the rows `kept` for another list of the same scope: a file
/// whose stat is the one kept keeps its row (as a refresh would leave its listing), the
/// others are listed through the index, and the rows are put in the listing's order again
/// (the candidate order, then newest first, as [`list::finish`] sorts). `None` when most
/// files changed: then everything is listed anew.
fn brought_up_to_date(
    idx: &mut Index,
    kept: &Listing,
    files: &[(PathBuf, Option<FileStat>)],
    digest: Option<&sessiontree::changes::ListDigest>,
    print: &str,
    opts: list::ListOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> crate::Result<Option<(Listing, RefreshStats)>> {
    use super::snapshot::{Entry, Row};
    let mut map: rustc_hash::FxHashMap<&[u8], Entry<'_>> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(files.len(), Default::default());
    for e in kept.entries() {
        map.insert(e.path.as_os_str().as_bytes(), e);
    }
    let kept = map;
    // (A file without a stat, gone or unreadable, is listed by no one.)
    let changed: Vec<(PathBuf, Option<FileStat>)> = files
        .iter()
        .filter(|(p, st)| {
            st.is_some()
                && kept
                    .get(p.as_os_str().as_bytes())
                    .is_none_or(|e| e.stat != *st)
        })
        .cloned()
        .collect();
    if changed.len() > 64 && changed.len() * 4 > files.len() {
        return Ok(None);
    }
    let (infos, mut st) = if changed.is_empty() {
        (Vec::new(), RefreshStats::default())
    } else {
        // Only these rows, looked up by path: a few files cost a few look-ups.
        let st = idx.refresh_few(&changed, opts.threads, progress)?;
        let paths: Vec<&Path> = changed.iter().map(|f| f.0.as_path()).collect();
        match idx.infos_of(&paths) {
            Ok(v) => (v, st),
            // A damaged listing: everything is listed anew (and read again where damaged).
            Err(_) => return Ok(None),
        }
    };
    st.files = files.len();
    st.unchanged = files.iter().filter(|f| f.1.is_some()).count() - changed.len();
    st.rebuilt = idx.rebuilt;
    let texts: Vec<_> = infos.iter().map(Row::texts_of).collect();
    let new: rustc_hash::FxHashMap<&[u8], Row<'_>> = infos
        .iter()
        .zip(&texts)
        .map(|(i, t)| (i.path.as_os_str().as_bytes(), Row::of(i, t)))
        .collect();
    let mut rows: Vec<Row<'_>> = Vec::with_capacity(files.len());
    for (p, stat) in files {
        let p = p.as_os_str().as_bytes();
        if stat.is_none() {
            continue;
        }
        match new.get(p) {
            Some(r) => rows.push(*r),
            // Unchanged (a changed file that is no session has no new row).
            None => {
                if let Some(r) = kept.get(p).filter(|e| e.stat == *stat).and_then(|e| e.row) {
                    rows.push(r);
                }
            }
        }
    }
    // Exactly as `list::finish` orders listings in the candidate order: the same stable
    // sort with the same comparison, so equal times keep their places.
    rows.sort_by(|a, b| {
        b.modified_ms
            .partial_cmp(&a.modified_ms)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(Some((Listing::of_rows(files, &rows, print, digest), st)))
}

fn listed_printed(
    idx: &mut Index,
    files: &[(PathBuf, Option<FileStat>)],
    in_scope: &dyn Fn(&Path) -> bool,
    opts: list::ListOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    print: &str,
) -> crate::Result<(Vec<SessionInfo>, RefreshStats)> {
    let with_stat = files.iter().filter(|f| f.1.is_some()).count();
    // The files as the last refresh saw them (what a watch's journal gives, or a stat of
    // each that finds nothing changed): their rows are read without comparing each, and
    // used if they are exactly one per file.
    if idx.fresh_for(print)? {
        if let Ok((v, cap)) = idx.try_infos(in_scope, opts.with_text) {
            let st = RefreshStats {
                files: files.len(),
                unchanged: with_stat,
                rebuilt: idx.rebuilt,
                ..Default::default()
            };
            if let Some(out) = in_file_order(files, v, opts, with_stat) {
                idx.captured = Some(cap);
                return Ok((out, st));
            }
        }
    }
    let mut st = idx.refresh_printed(files, in_scope, opts.threads, progress, print)?;
    let mut infos = None;
    let mut captured = None;
    for _ in 0..3 {
        match idx.try_infos(in_scope, opts.with_text) {
            Ok((v, cap)) => {
                infos = Some(v);
                captured = Some(cap);
                break;
            }
            Err(ReadError::Fatal(e)) => return Err(e),
            Err(ReadError::Damaged(ids)) => {
                idx.mark_damaged(&ids)?;
                st = idx.refresh_stat(files, in_scope, opts.threads, progress)?;
            }
        }
    }
    let Some(infos) = infos else {
        return Err(damaged_err(
            "a stored listing (again after reading it anew)",
        ));
    };
    // `ls --json` writes the listings of this very snapshot.
    idx.captured = captured;
    let out = in_file_order(files, infos, opts, 0).expect("no count asked for");
    Ok((out, st))
}

/// The listings of `files` in [`list::finish`] order. With `expect` > 0: `None` unless
/// every listing is of one of `files` and they are `expect`, one per file.
fn in_file_order(
    files: &[(PathBuf, Option<FileStat>)],
    infos: Vec<SessionInfo>,
    opts: list::ListOptions,
    expect: usize,
) -> Option<Vec<SessionInfo>> {
    if expect > 0 && infos.len() != expect {
        return None;
    }
    // By the path's bytes (`Path`'s hash walks its components).
    let pos: rustc_hash::FxHashMap<&[u8], usize> = files
        .iter()
        .enumerate()
        .filter(|(_, p)| expect == 0 || p.1.is_some())
        .map(|(i, p)| (p.0.as_os_str().as_bytes(), i))
        .collect();
    // Each listing put straight into its file's place (a listing is ~250 bytes: sorting
    // them as (place, listing) pairs moved every one several times).
    let mut placed: Vec<Option<SessionInfo>> = Vec::new();
    placed.resize_with(files.len(), || None);
    let mut n_placed = 0;
    for mut i in infos {
        let Some(&n) = pos.get(i.path.as_os_str().as_bytes()) else {
            if expect > 0 {
                return None;
            }
            continue;
        };
        if !opts.with_text {
            i.all_messages_text = String::new();
        }
        // (Paths are unique in the database; were a damaged one to hold a path twice,
        // the file is listed once.)
        if placed[n].is_none() {
            placed[n] = Some(i);
            n_placed += 1;
        }
    }
    if expect > 0 && n_placed != expect {
        return None;
    }
    Some(list::finish(placed, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a damaged listing (its bytes in the store, its length, offset or checksum
    /// in the database, its row gone) or a truncated store is a cache miss: `ls --json`
    /// (listed without texts, then written from the store) still writes exactly what a
    /// full scan writes, on the first run and every later one, and an answer it cannot
    /// give writes nothing.
    #[test]
    fn damaged_listings_are_read_again_and_the_answer_is_whole() {
        let a = sessiontree_testkit::AgentDir::new();
        a.numbered("/w", 5);
        let agent = a.path();
        let sessions = agent.join("sessions");
        let scope = super::super::all_scope(&sessions);
        let opts = list::ListOptions {
            with_text: false,
            ..Default::default()
        };
        let scan = || {
            let v = list::list_all(agent, list::ListOptions::default());
            let mut out = b"[".to_vec();
            for (n, i) in v.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                i.write_json(&mut out).unwrap();
            }
            out.extend_from_slice(b"]");
            out
        };
        let ls_json = |idx: &mut Index| {
            let files = list::all_files_stat(agent);
            let (v, _) = listed(idx, &files, &scope, opts, &|_, _| {}).unwrap();
            let mut out = Vec::new();
            idx.write_json_between(v.iter().map(|i| i.path.as_path()), b"[", b"]", &mut out)
                .unwrap();
            out
        };
        let ipath = Index::default_path(agent);
        let store_path = crate::listing_store::path_for(&ipath);
        let sql = |q: &str| {
            let c = rusqlite::Connection::open(&ipath).unwrap();
            c.execute_batch(q).unwrap();
        };
        let flip = || {
            let mut b = std::fs::read(&store_path).unwrap();
            let at = b.windows(15).position(|w| w == b"first message 3").unwrap();
            b[at + 14] ^= 0x01;
            std::fs::write(&store_path, &b).unwrap();
        };
        let truncate = || {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&store_path)
                .unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len - 10).unwrap();
        };
        let victim = "(SELECT id FROM files WHERE path LIKE '%s2.jsonl')";
        type Damage<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let damages: Vec<Damage> = vec![
            ("a flipped byte in the store", Box::new(flip)),
            (
                "a length past the store",
                Box::new(|| {
                    sql(&format!(
                        "UPDATE listing SET len=len+1000000 WHERE id={victim}"
                    ))
                }),
            ),
            (
                "a huge length",
                Box::new(|| {
                    sql(&format!(
                        "UPDATE listing SET len=9000000000000000000 WHERE id={victim}"
                    ))
                }),
            ),
            (
                "a length one short",
                Box::new(|| sql(&format!("UPDATE listing SET len=len-1 WHERE id={victim}"))),
            ),
            (
                "a negative offset",
                Box::new(|| sql(&format!("UPDATE listing SET off=-5 WHERE id={victim}"))),
            ),
            (
                "a wrong checksum",
                Box::new(|| sql(&format!("UPDATE listing SET sum=sum+1 WHERE id={victim}"))),
            ),
            (
                "the listing row gone",
                Box::new(|| sql(&format!("DELETE FROM listing WHERE id={victim}"))),
            ),
            (
                "a wrong info checksum",
                Box::new(|| {
                    sql(&format!(
                        "UPDATE files SET info_sum=info_sum+1 WHERE id={victim}"
                    ))
                }),
            ),
            ("a truncated store", Box::new(truncate)),
        ];
        let want = scan();
        for (what, damage) in &damages {
            let mut idx = Index::open(&ipath).unwrap();
            assert_eq!(ls_json(&mut idx), want, "before {what}");
            drop(idx);
            damage();
            for run in 0..2 {
                let mut idx = Index::open(&ipath).unwrap();
                let got = ls_json(&mut idx);
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "{what}, run {run}"
                );
                // The damaged record was rewritten: every stored range checks out now.
                let files = list::all_files_stat(agent);
                let (v, _) = listed(&mut idx, &files, &scope, opts, &|_, _| {}).unwrap();
                let paths: Vec<&Path> = v.iter().map(|i| i.path.as_path()).collect();
                let ranges = idx.fresh_ranges(&paths).unwrap();
                let map = idx.store.map().unwrap();
                assert_eq!(first_damaged(&map, &ranges), None, "{what}, run {run}");
            }
        }
        // A compaction given ranges the store does not hold (lengths from a damaged
        // database) copies none of them and allocates nothing for them.
        let idx = Index::open(&ipath).unwrap();
        let ranges = [
            (16, 5),
            (u64::MAX - 1, 9_000_000_000_000_000_000),
            (16, u64::MAX),
        ];
        let (new, offsets) = idx.store.compact(&ranges).unwrap();
        assert_eq!(offsets, vec![16, 21, 21]);
        assert_eq!(new.len().unwrap(), 21);
    }

    /// A refresh records its files' print; a listing of the same files in the same states
    /// then reads the rows without comparing each, but only uses them when they are one
    /// per file: a row gone (or one too many) behind the print's back, a file grown, a
    /// file gone, each gives what a full scan gives.
    #[test]
    fn the_fresh_print_is_used_only_when_the_rows_are_one_per_file() {
        let a = sessiontree_testkit::AgentDir::new();
        let paths = a.numbered("/w", 6);
        let agent = a.path();
        let sessions = agent.join("sessions");
        let scope = super::super::all_scope(&sessions);
        let opts = list::ListOptions {
            with_text: false,
            ..Default::default()
        };
        let scan = || -> Vec<(PathBuf, u64, String)> {
            list::list_all(agent, list::ListOptions::default())
                .into_iter()
                .map(|i| (i.path, i.message_count, i.first_message))
                .collect()
        };
        let ipath = Index::default_path(agent);
        let mut idx = Index::open(&ipath).unwrap();
        let listed_now = |idx: &mut Index| -> Vec<(PathBuf, u64, String)> {
            let files = list::all_files_stat(agent);
            let (v, _) = listed(idx, &files, &scope, opts, &|_, _| {}).unwrap();
            v.into_iter()
                .map(|i| (i.path, i.message_count, i.first_message))
                .collect()
        };
        assert_eq!(listed_now(&mut idx), scan());
        let files = list::all_files_stat(agent);
        assert!(idx
            .fresh_for(&super::super::refresh::files_print(&files))
            .unwrap());
        assert_eq!(listed_now(&mut idx), scan(), "through the print");
        let sql = |q: &str| {
            let c = rusqlite::Connection::open(&ipath).unwrap();
            c.execute_batch(q).unwrap();
        };
        // A row deleted behind the print's back: the file is listed all the same.
        sql("DELETE FROM files WHERE path LIKE '%s2.jsonl'");
        assert_eq!(listed_now(&mut idx).len(), 6);
        assert_eq!(listed_now(&mut idx), scan());
        // A row of a file that is not there: not listed.
        sql("INSERT INTO files(path, size, info, info_sum)
             SELECT path || '.gone', size, info, info_sum FROM files LIMIT 1");
        assert_eq!(listed_now(&mut idx), scan());
        // A file grown: the print differs, its new listing is read.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&paths[3])
            .unwrap();
        let line = sessiontree_testkit::agent::user_entry("zz000001", "\"u1\"", 9, "grown");
        write!(f, "{line}").unwrap();
        drop(f);
        assert_eq!(listed_now(&mut idx), scan());
        // A file gone.
        std::fs::remove_file(&paths[0]).unwrap();
        assert_eq!(listed_now(&mut idx), scan());
        assert_eq!(listed_now(&mut idx).len(), 5);
        // Damage marked: the print is forgotten.
        let files = list::all_files_stat(agent);
        let print = super::super::refresh::files_print(&files);
        assert!(idx.fresh_for(&print).unwrap());
        idx.mark_damaged(&[1]).unwrap();
        assert!(!idx.fresh_for(&print).unwrap());
        assert_eq!(listed_now(&mut idx), scan());
    }

    /// Many ranges over more bytes than the parallel threshold: each damage is found, and
    /// the first damaged range is the one named, whichever thread checked it.
    #[test]
    fn first_damaged_names_the_first_bad_range_single_and_multi_threaded() {
        for (count, len) in [(10usize, 100usize), (3000, 3000)] {
            let mut bytes = Vec::new();
            let mut ranges = Vec::new();
            for k in 0..count {
                let o = bytes.len();
                bytes.extend((0..len).map(|i| (i * 7 + k) as u8));
                ranges.push((o as u64, len as u64, checksum(&bytes[o..])));
            }
            assert_eq!(first_damaged(&bytes, &ranges), None);
            for bad in [count - 1, count / 2, 0] {
                let mut b = bytes.clone();
                b[bad * len + len / 3] ^= 1;
                assert_eq!(first_damaged(&b, &ranges), Some(bad), "{count}x{len}");
                // A later damage too: still the first one is named.
                b[(count - 1) * len] ^= 4;
                assert_eq!(first_damaged(&b, &ranges), Some(bad), "{count}x{len}");
            }
            let mut r = ranges.clone();
            r[count / 3].1 = u64::MAX - 5;
            assert_eq!(first_damaged(&bytes, &r), Some(count / 3), "out of bounds");
        }
    }
}
