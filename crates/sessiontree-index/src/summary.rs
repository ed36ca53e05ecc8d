//! Per-file search summaries: what lets a later search skip files without reading them.
//!
//! For each session file (keyed by path, and valid only while its size, mtime, device,
//! inode and ctime are what they were when it was summarized):
//! * a bitmap of the file's byte trigrams (ASCII lower-cased, hashed into about four bits
//!   per distinct trigram): a query piece whose trigrams are not all set is not in the file;
//! * whether the file is a session at all, its header cwd, and whether it holds escapes
//!   that JSON.stringify would not write (`\u0041`, `\/`: such a file is never ruled out);
//! * the newest timestamp of any searchable entry: files are read newest first and a search
//!   stops once its newest `limit` hits are certain.
//!
//! The store (`sessiontree-search.summaries` in the agent dir) is one file: a header and
//! one record per session file, each with a checksum checked on every load (a damaged
//! record is treated as missing: the file is scanned). It is rewritten whole (temporary file
//! and rename) by [`build`], which a search starts in the background; readers keep the
//! version they opened. Deleting it loses nothing.

use crate::list::{Acc, EntryText, FileStat};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "sessiontree-search.summaries";
const MAGIC: &[u8; 8] = b"STSUMM01";

const FLAG_SESSION: u32 = 1;
const FLAG_ESCAPES: u32 = 2;

/// Fixed part of a record body: size, mtime_ns, dev, ino, ctime_ns, max_ts (8 bytes each),
/// flags, bits_log2, path length, cwd length (4 bytes each).
const FIXED: usize = 6 * 8 + 4 * 4;

/// The summaries of a store, loaded and checked.
pub struct Summaries {
    data: Data,
    /// Offsets of the record bodies in `data`, found by their path's bytes (hashed as
    /// bytes: `Path`'s own hash goes component by component, and keys owned apart from
    /// `data` would cost an allocation per record).
    by_path: hashbrown::HashTable<usize>,
    /// Records whose checksum failed.
    pub damaged: usize,
}

/// A store's bytes: mapped when large (a search reads a few bits of each record; reading
/// the whole file into fresh memory was a third of a warm search over 20,000 sessions).
/// Also the bytes of the index's kept rows (`index::snapshot`).
pub(crate) enum Data {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Read(v) => v,
            Data::Mapped(m) => m,
        }
    }
}

/// Stores at least this large are mapped.
const MAP_MIN: u64 = 1 << 20;

fn read_store(path: &Path) -> Option<Data> {
    let (file, meta) = sessiontree::store::open_regular(path).ok()?;
    if meta.len() < MAP_MIN {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut v).ok()?;
        return Some(Data::Read(v));
    }
    // SAFETY: read-only and private; a store is never truncated or written in place (it is
    // written whole aside and renamed over, see [`build`]), so the mapped file keeps its
    // length. Every record is checked against its checksum before it is used.
    unsafe { memmap2::Mmap::map(&file) }.ok().map(Data::Mapped)
}

/// One file's summary (borrowed from [`Summaries`]).
#[derive(Clone, Copy)]
pub struct FileSummary<'a> {
    body: &'a [u8],
}

fn path_hash(p: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(p);
    h.finish()
}

/// The path bytes of the record whose body starts at `at` (checked by [`Summaries::load`]).
fn path_at(data: &[u8], at: usize) -> &[u8] {
    let pl = u32_at(data, at + 56) as usize;
    &data[at + FIXED..at + FIXED + pl]
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A fast 64-bit checksum (four independent multiply lanes).
pub fn checksum(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [K, K ^ 1, K ^ 2, K ^ 3];
    let mut chunks = b.chunks_exact(32);
    for c in &mut chunks {
        for (i, l) in lanes.iter_mut().enumerate() {
            let w = u64_at(c, i * 8);
            *l = (*l ^ w).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut h = b.len() as u64;
    for l in lanes {
        h = (h ^ l).wrapping_mul(K).rotate_left(31);
    }
    for &x in chunks.remainder() {
        h = (h ^ x as u64).wrapping_mul(K).rotate_left(31);
    }
    h ^ (h >> 29)
}

fn hash_gram(t: u32, bits_log2: u32) -> usize {
    (t.wrapping_mul(0x9E37_79B1) >> (32 - bits_log2)) as usize
}

impl<'a> FileSummary<'a> {
    fn stat_matches(&self, st: &FileStat) -> bool {
        let b = self.body;
        u64_at(b, 0) == st.size
            && u64_at(b, 8) as i64 == st.mtime_ns
            && u64_at(b, 16) == st.dev
            && u64_at(b, 24) == st.ino
            && u64_at(b, 32) as i64 == st.ctime_ns
    }

    /// The newest timestamp of a searchable entry (`-inf`: none has one).
    pub fn max_ts(&self) -> f64 {
        f64::from_bits(u64_at(self.body, 40))
    }

    fn flags(&self) -> u32 {
        u32_at(self.body, 48)
    }

    pub fn is_session(&self) -> bool {
        self.flags() & FLAG_SESSION != 0
    }

    /// Escapes that hide text from a literal search of the raw bytes.
    pub fn unusual_escapes(&self) -> bool {
        self.flags() & FLAG_ESCAPES != 0
    }

    fn bits_log2(&self) -> u32 {
        u32_at(self.body, 52)
    }

    pub fn cwd(&self) -> &'a str {
        let pl = u32_at(self.body, 56) as usize;
        let cl = u32_at(self.body, 60) as usize;
        std::str::from_utf8(&self.body[FIXED + pl..FIXED + pl + cl]).unwrap_or("")
    }

    fn bitmap(&self) -> &'a [u8] {
        let pl = u32_at(self.body, 56) as usize;
        let cl = u32_at(self.body, 60) as usize;
        let start = (FIXED + pl + cl).next_multiple_of(8);
        &self.body[start..]
    }

    /// Whether the file may contain `piece` (lower-case bytes) somewhere.
    pub fn may_contain(&self, piece: &[u8]) -> bool {
        let k = self.bits_log2();
        let bm = self.bitmap();
        piece.windows(3).all(|w| {
            let t = (w[0] as u32) << 16 | (w[1] as u32) << 8 | w[2] as u32;
            let i = hash_gram(t, k);
            bm[i >> 3] & (1 << (i & 7)) != 0
        })
    }
}

impl Summaries {
    /// The store's file in an agent dir.
    pub fn path_in(agent_dir: &Path) -> PathBuf {
        agent_dir.join(FILE_NAME)
    }

    /// An empty set (every file is scanned).
    pub fn empty() -> Summaries {
        Summaries {
            data: Data::Read(Vec::new()),
            by_path: hashbrown::HashTable::new(),
            damaged: 0,
        }
    }

    /// Loads a store; `None` when there is none or it is not one (damaged records are
    /// left out and counted).
    pub fn load(path: &Path) -> Option<Summaries> {
        let data = read_store(path)?;
        if data.len() < 16 || &data[..8] != MAGIC {
            return None;
        }
        // The count in the header only hints (it sizes nothing beyond what the file holds).
        let count = (u32_at(&data, 8) as usize).min(data.len() / (FIXED + 17));
        let mut by_path = hashbrown::HashTable::with_capacity(count);
        let mut damaged = 0;
        let mut at = 16;
        while at + 16 <= data.len() {
            let len = u64_at(&data, at) as usize;
            let body_at = at + 8;
            let Some(end) = body_at.checked_add(len).filter(|&e| e + 8 <= data.len()) else {
                // A damaged length: nothing after it can be trusted.
                damaged += 1;
                break;
            };
            let body = &data[body_at..end];
            let sum = u64_at(&data, end);
            at = end + 8;
            if body.len() < FIXED || checksum(body) != sum {
                damaged += 1;
                continue;
            }
            let pl = u32_at(body, 56) as usize;
            let cl = u32_at(body, 60) as usize;
            let k = u32_at(body, 52);
            let bm_start = (FIXED + pl + cl).next_multiple_of(8);
            if !(3..=27).contains(&k) || bm_start + (1usize << k) / 8 != body.len() {
                damaged += 1;
                continue;
            }
            let p = &body[FIXED..FIXED + pl];
            // A path twice (not written so): the later record counts.
            match by_path.entry(
                path_hash(p),
                |&o| path_at(&data, o) == p,
                |&o| path_hash(path_at(&data, o)),
            ) {
                hashbrown::hash_table::Entry::Occupied(mut e) => *e.get_mut() = body_at,
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert(body_at);
                }
            }
        }
        Some(Summaries {
            data,
            by_path,
            damaged,
        })
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    fn record(&self, p: &Path) -> Option<FileSummary<'_>> {
        let p = p.as_os_str().as_encoded_bytes();
        let &at = self
            .by_path
            .find(path_hash(p), |&o| path_at(&self.data, o) == p)?;
        let len = u64_at(&self.data, at - 8) as usize;
        Some(FileSummary {
            body: &self.data[at..at + len],
        })
    }

    /// The summary of `p` if it describes the file as it is now (`st`, just taken).
    pub fn get_valid(&self, p: &Path, st: &FileStat) -> Option<FileSummary<'_>> {
        self.record(p).filter(|s| s.stat_matches(st))
    }

    /// [`Summaries::covers_exactly`] from what a search counted: `summarized` of the
    /// `files` had a valid summary (`Stats::summarized`), no second look at each.
    pub fn covers_exactly_counted(
        &self,
        files: &[(PathBuf, Option<FileStat>)],
        summarized: usize,
    ) -> bool {
        let live = files.iter().filter(|f| f.1.is_some()).count();
        live == summarized && live == self.by_path.len() && self.damaged == 0
    }

    /// Whether every one of `files` has a valid summary, and no other file has one.
    pub fn covers_exactly(&self, files: &[(PathBuf, Option<FileStat>)]) -> bool {
        let valid = files
            .iter()
            .filter(|(p, st)| {
                st.as_ref()
                    .is_some_and(|st| self.get_valid(p, st).is_some())
            })
            .count();
        self.covers_exactly_counted(files, valid)
    }
}

/// Whether `buf` holds an escape JSON.stringify would not write (`\u` other than a control
/// character, `\/`), which may hide text from a literal search.
pub(crate) fn unusual_escapes(buf: &[u8]) -> bool {
    crate::escapes::unusual(buf).next().is_some()
}

/// Trigram sets, reused per thread: a 2^24-bit exact set and the list of its members.
struct Grams {
    seen: Vec<u64>,
    list: Vec<u32>,
}

impl Grams {
    fn new() -> Grams {
        Grams {
            seen: vec![0u64; (1 << 24) / 64],
            list: Vec::new(),
        }
    }

    /// The hashed bitmap of `buf`'s lower-cased trigrams; returns `bits_log2`.
    fn bitmap(&mut self, buf: &[u8], out: &mut Vec<u8>) -> u32 {
        let mut t: u32 = 0;
        for (i, &c) in buf.iter().enumerate() {
            t = ((t << 8) | c.to_ascii_lowercase() as u32) & 0xff_ffff;
            if i >= 2 {
                let w = &mut self.seen[(t >> 6) as usize];
                let bit = 1u64 << (t & 63);
                if *w & bit == 0 {
                    *w |= bit;
                    self.list.push(t);
                }
            }
        }
        let n = self.list.len().max(1);
        let k = ((n * 4).next_power_of_two().trailing_zeros()).clamp(10, 24);
        out.clear();
        out.resize((1usize << k) / 8, 0);
        for &t in &self.list {
            let i = hash_gram(t, k);
            out[i >> 3] |= 1 << (i & 7);
            self.seen[(t >> 6) as usize] = 0;
        }
        self.list.clear();
        k
    }
}

/// One file's record body, or `None` when it changed while being read (or is unreadable).
fn summarize(path: &Path, grams: &mut Grams, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    use std::io::Read;
    // Non-blocking open, regular files only (a FIFO swapped in after the walk never hangs).
    let (f, meta) = sessiontree::store::open_regular(path).ok()?;
    let before = FileStat::of(&meta)?;
    buf.clear();
    (&f).read_to_end(buf).ok()?;
    let after = FileStat::of(&f.metadata().ok()?)?;
    let now = FileStat::of_path(path)?;
    if before != after || after != now || buf.len() as u64 != after.size {
        return None;
    }
    let end = memchr::memrchr(b'\n', buf).map_or(0, |p| p + 1);
    let mut acc = Acc::new(false);
    let mut rows: Vec<EntryText> = Vec::new();
    let mut max_ts = f64::NEG_INFINITY;
    let mut a = 0;
    for nl in memchr::memchr_iter(b'\n', &buf[..end]) {
        acc.feed(&buf[a..nl], Some(&mut rows));
        if acc.not_session {
            break;
        }
        for r in rows.drain(..) {
            if let Some(t) = r.ts_ms.filter(|t| !t.is_nan()) {
                if !r.role.is_empty() && t > max_ts {
                    max_ts = t;
                }
            }
        }
        a = nl + 1;
    }
    let session = acc.header_seen && !acc.not_session;
    let mut flags = 0;
    if session {
        flags |= FLAG_SESSION;
    }
    if unusual_escapes(buf) {
        flags |= FLAG_ESCAPES;
    }
    let mut bm = Vec::new();
    let k = grams.bitmap(&buf[..end], &mut bm);
    let p = path.as_os_str().as_encoded_bytes();
    let cwd = acc.cwd.as_bytes();
    let mut body = Vec::with_capacity(FIXED + p.len() + cwd.len() + 8 + bm.len());
    for v in [
        after.size,
        after.mtime_ns as u64,
        after.dev,
        after.ino,
        after.ctime_ns as u64,
        max_ts.to_bits(),
    ] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    for v in [flags, k, p.len() as u32, cwd.len() as u32] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(p);
    body.extend_from_slice(cwd);
    body.resize(body.len().next_multiple_of(8), 0);
    body.extend_from_slice(&bm);
    Some(body)
}

/// What a build did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BuildStats {
    pub files: usize,
    pub kept: usize,
    pub summarized: usize,
    pub bytes_read: u64,
    pub store_bytes: u64,
}

/// Brings the store at `store` up to date for `files`: unchanged records are kept, others
/// made again, records of other files dropped; written to a temporary file and renamed
/// over the store. Only one build runs at a time (a lock beside the store); `None` when
/// another holds it.
pub fn build(
    store: &Path,
    files: &[(PathBuf, Option<FileStat>)],
    threads: usize,
) -> std::io::Result<Option<BuildStats>> {
    let mut lock_path = store.as_os_str().to_owned();
    lock_path.push(".lock");
    // Opened to append and never written: whatever a planted link points to is untouched.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(lock_path))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let old = Summaries::load(store).unwrap_or_else(Summaries::empty);
    let mut stats = BuildStats {
        files: files.len(),
        ..Default::default()
    };
    // Kept records by index into `files`; the rest are made on `threads` threads.
    let mut bodies: Vec<Option<Vec<u8>>> = vec![None; files.len()];
    let mut todo: Vec<usize> = Vec::new();
    for (i, (p, st)) in files.iter().enumerate() {
        let Some(st) = st else { continue };
        match old.get_valid(p, st) {
            Some(s) => {
                bodies[i] = Some(s.body.to_vec());
                stats.kept += 1;
            }
            None => todo.push(i),
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let made: std::sync::Mutex<Vec<(usize, Vec<u8>, u64)>> = Default::default();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut grams = Grams::new();
                let mut buf = Vec::new();
                let mut mine = Vec::new();
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = todo.get(n) else { break };
                    if let Some(b) = summarize(&files[i].0, &mut grams, &mut buf) {
                        mine.push((i, b, buf.len() as u64));
                    }
                }
                made.lock().expect("made").extend(mine);
            });
        }
    });
    for (i, b, read) in made.into_inner().expect("made") {
        bodies[i] = Some(b);
        stats.summarized += 1;
        stats.bytes_read += read;
    }
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    let count = bodies.iter().flatten().count() as u32;
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    for b in bodies.iter().flatten() {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
        out.extend_from_slice(&checksum(b).to_le_bytes());
    }
    let (tmp, mut f) = crate::listing_store::create_temp(store)?;
    if let Err(e) = std::io::Write::write_all(&mut f, &out) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, store)?;
    stats.store_bytes = out.len() as u64;
    drop(lock);
    Ok(Some(stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record count in a store's header is the file's word, not a size to allocate:
    /// a store claiming four billion records in 16 bytes loads as an empty one.
    #[test]
    fn a_header_claiming_more_records_than_the_file_holds_sizes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE_NAME);
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        std::fs::write(&p, &b).unwrap();
        let s = Summaries::load(&p).expect("a store");
        assert!(s.is_empty());
        assert_eq!(s.damaged, 0);
    }
}
