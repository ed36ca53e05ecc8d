//! A listing kept whole: the finished rows of one file list (what [`super::listed`] gives
//! for it, newest first), in a compact file beside the index, keyed by the list's print
//! ([`super::refresh::files_print`]: every path with its size, times, device and inode).
//!
//! A warm `ls --all` over 20,000 sessions spent most of its time getting the answer it gave
//! the time before: stepping SQLite through 20,000 rows, decoding each listing's JSON,
//! putting each into its file's place and sorting them again. When the files are the same
//! as the last time (the same print), the rows are read back from one file instead, as
//! borrowed views into one buffer: no listing decoded, no string copied.
//!
//! Files: `<index>.rows/<scope>`, one per scope (all sessions, one folder: a digest of the
//! caller's scope key), at most [`SLOTS`]; each is written to a temporary name and renamed.
//! A slot is a cache like the rest of the index: one that is torn, damaged, of another
//! print or of another index version is not used, and is replaced by the next answer.
//!
//! With a watch running, the print itself needs the whole file list, built and hashed.
//! A slot also keeps the [`ListDigest`] of the list it was made for, when the list was
//! read through the watch's journal: [`read_by_digest`] finds the rows of an unchanged
//! folder from that digest alone ([`sessiontree::changes::list_digest`]: the journal's
//! bytes hashed, no list built).
//!
//! When the files changed, the slot of the scope is brought up to date instead of made
//! anew ([`super::listed_rows`]): every file whose stat is the one kept keeps its row, only
//! the others are asked of the index, and the rows are put in order again.
//!
//! Layout (integers little-endian): `STROWS02`, the index schema version (length-prefixed),
//! the print (64 hex bytes), the list digest (a byte 0 or 1, then 32 bytes, zero when there
//! is none), the number of files and of rows (u32 each), the body's length (u64) and
//! checksum ([`checksum`], u64), then the body: one entry per file in the list's order, then
//! the rows' order as entry numbers (u32 each). An entry is the path, the stat (optional:
//! size, mtime in ns, mtime in ms as f64 bits, device, inode, ctime in ns, u64 each) and the
//! listing (optional: the header's id as JSON, the cwd, the name (optional), the parent
//! session as JSON (optional), the created time (optional f64), the modified time (f64),
//! the message count (u64), the first message, whether the reference drops it (u8), the
//! agent it was imported from (optional)). A string is its length (u32) and its bytes,
//! UTF-8 but for the path; an optional value a byte 0 or 1 before it.

use crate::list::{FileStat, SessionInfo};
use crate::summary::{checksum, Data};
use sessiontree::changes::ListDigest;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"STROWS02";
/// Slots kept; the ones written longest ago go first.
pub const SLOTS: usize = 16;
/// A slot larger than this is not read.
const MAX_LEN: u64 = 1 << 30;
/// A print's length (SHA-256 in hex).
const PRINT_LEN: usize = 64;

/// What a slot must be of to be used.
#[derive(Clone, Copy)]
enum Want<'a> {
    Print(&'a str),
    Digest(&'a ListDigest),
    /// Of any list (to be brought up to date).
    Any,
}

/// The fewest bytes an entry takes (an empty path, no stat, no listing): bounds the count
/// a header may claim before anything is sized by it.
const MIN_ENTRY: usize = 4 + 1 + 1;

/// One session's listing, borrowed from a [`Listing`] (or from a [`SessionInfo`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row<'a> {
    pub path: &'a Path,
    /// The header's `id`, as JSON.
    pub id_json: &'a str,
    pub cwd: &'a str,
    pub name: Option<&'a str>,
    /// The header's `parentSession` as JSON, when the key is present.
    pub parent_json: Option<&'a str>,
    pub created_ms: Option<f64>,
    pub modified_ms: f64,
    pub message_count: u64,
    pub first_message: &'a str,
    pub reference_drops: bool,
    pub imported: Option<&'a str>,
}

impl<'a> Row<'a> {
    /// The JSON texts a row of `i` holds: its id, and its parent session when the key is
    /// there.
    pub fn texts_of(i: &SessionInfo) -> (String, Option<String>) {
        (
            i.id.to_string(),
            i.parent_session_path.as_ref().map(|p| p.to_string()),
        )
    }

    /// The row of `i`, its JSON texts those [`Row::texts_of`] gave.
    pub fn of(i: &'a SessionInfo, texts: &'a (String, Option<String>)) -> Row<'a> {
        Row {
            path: &i.path,
            id_json: &texts.0,
            cwd: &i.cwd,
            name: i.name.as_deref(),
            parent_json: texts.1.as_deref(),
            created_ms: i.created_ms,
            modified_ms: i.modified_ms,
            message_count: i.message_count,
            first_message: &i.first_message,
            reference_drops: i.reference_drops,
            imported: i.imported.as_deref(),
        }
    }

    /// The listing this row holds (without `allMessagesText`, as the index keeps it). The
    /// JSON texts it holds are read back as values (a text that is not JSON, which no row
    /// made here holds, reads as `null`).
    pub fn to_info(&self) -> SessionInfo {
        let json = |t: &str| serde_json::from_str(t).unwrap_or(serde_json::Value::Null);
        SessionInfo {
            path: self.path.to_path_buf(),
            id: json(self.id_json),
            cwd: self.cwd.to_string(),
            name: self.name.map(str::to_string),
            parent_session_path: self.parent_json.map(json),
            created_ms: self.created_ms,
            modified_ms: self.modified_ms,
            message_count: self.message_count,
            first_message: self.first_message.to_string(),
            all_messages_text: String::new(),
            reference_drops: self.reference_drops,
            imported: self.imported.map(str::to_string),
        }
    }

    /// As [`SessionInfo::is_fork`]: the header names a parent session (not `null`).
    pub fn is_fork(&self) -> bool {
        self.parent_json.is_some_and(|p| p != "null")
    }

    /// The name, else the first message (what a listing shows as its title).
    pub fn title(&self) -> &str {
        self.name.unwrap_or(self.first_message)
    }
}

/// The finished rows of one file list, in one buffer: every file of the list with its stat
/// and its listing (none for a file that is not a session), then the listed ones in the
/// order the listing gives them.
pub struct Listing {
    buf: Data,
    /// Where each file's entry starts in `buf`.
    entries: Vec<u32>,
    /// Where the order (u32 entry numbers) starts in `buf`.
    order_at: usize,
    count: usize,
}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing")
            .field("files", &self.entries.len())
            .field("rows", &self.count)
            .finish()
    }
}

/// One file of a [`Listing`]: its path, its stat as listed, its listing.
pub struct Entry<'a> {
    pub path: &'a Path,
    pub stat: Option<FileStat>,
    pub row: Option<Row<'a>>,
}

impl Listing {
    /// The listing of `files` whose listings are `infos`, in the order given (a file
    /// without one is not a session), as a slot keeps it under `print` (and the list's
    /// digest, when known).
    pub fn of(
        files: &[(PathBuf, Option<FileStat>)],
        infos: &[SessionInfo],
        print: &str,
        digest: Option<&ListDigest>,
    ) -> Listing {
        let texts: Vec<_> = infos.iter().map(Row::texts_of).collect();
        let rows: Vec<Row<'_>> = infos
            .iter()
            .zip(&texts)
            .map(|(i, t)| Row::of(i, t))
            .collect();
        Listing::of_rows(files, &rows, print, digest)
    }

    /// [`Listing::of`] given rows.
    pub fn of_rows(
        files: &[(PathBuf, Option<FileStat>)],
        rows: &[Row<'_>],
        print: &str,
        digest: Option<&ListDigest>,
    ) -> Listing {
        use std::os::unix::ffi::OsStrExt;
        let mut by_path: rustc_hash::FxHashMap<&[u8], usize> =
            rustc_hash::FxHashMap::with_capacity_and_hasher(rows.len(), Default::default());
        for (n, r) in rows.iter().enumerate() {
            by_path.insert(r.path.as_os_str().as_bytes(), n);
        }
        // Sized once, the header written first and its counts and checksum set at the end
        // (a listing of 20,000 sessions is 12 MB: regrowing it, or copying it once more,
        // was a fifth of an `ls` after one append).
        let strings: usize = rows
            .iter()
            .map(|r| {
                r.id_json.len()
                    + r.cwd.len()
                    + r.name.map_or(0, str::len)
                    + r.parent_json.map_or(0, str::len)
                    + r.first_message.len()
                    + r.imported.map_or(0, str::len)
                    + 64
            })
            .sum::<usize>()
            + files
                .iter()
                .map(|f| f.0.as_os_str().len() + 64)
                .sum::<usize>();
        let mut buf = Vec::with_capacity(strings + rows.len() * 8 + 256);
        buf.extend_from_slice(MAGIC);
        put_str(&mut buf, super::SCHEMA_VERSION);
        let pb = &print.as_bytes()[..print.len().min(PRINT_LEN)];
        buf.extend_from_slice(pb);
        buf.resize(buf.len() + PRINT_LEN - pb.len(), b'-');
        buf.push(u8::from(digest.is_some()));
        buf.extend_from_slice(digest.unwrap_or(&[0; 32]));
        let counts_at = buf.len();
        buf.extend_from_slice(&[0; 4 + 4 + 8 + 8]);
        let body = buf.len();
        let mut entries = Vec::with_capacity(files.len());
        // Entry number of each row.
        let mut entry_of = vec![u32::MAX; rows.len()];
        let mut put =
            |buf: &mut Vec<u8>, path: &Path, stat: Option<&FileStat>, row: Option<&Row<'_>>| {
                entries.push(buf.len() as u32);
                put_bytes(buf, path.as_os_str().as_bytes());
                match stat {
                    Some(st) => {
                        buf.push(1);
                        for v in [
                            st.size,
                            st.mtime_ns as u64,
                            st.mtime_ms.to_bits(),
                            st.dev,
                            st.ino,
                            st.ctime_ns as u64,
                        ] {
                            buf.extend_from_slice(&v.to_le_bytes());
                        }
                    }
                    None => buf.push(0),
                }
                match row {
                    Some(r) => {
                        buf.push(1);
                        put_row(buf, r);
                    }
                    None => buf.push(0),
                }
                entries.len() as u32 - 1
            };
        for (path, stat) in files {
            let at = by_path.get(path.as_os_str().as_bytes()).copied();
            let e = put(&mut buf, path, stat.as_ref(), at.map(|k| &rows[k]));
            if let Some(k) = at.filter(|&k| entry_of[k] == u32::MAX) {
                entry_of[k] = e;
            }
        }
        // Rows of no listed file (a listing made without the file list).
        for (k, r) in rows.iter().enumerate() {
            if entry_of[k] == u32::MAX {
                entry_of[k] = put(&mut buf, r.path, None, Some(r));
            }
        }
        let order_at = buf.len();
        for e in &entry_of {
            buf.extend_from_slice(&e.to_le_bytes());
        }
        let sum = checksum(&buf[body..]);
        let len = (buf.len() - body) as u64;
        let mut counts = Vec::with_capacity(24);
        counts.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        counts.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        counts.extend_from_slice(&len.to_le_bytes());
        counts.extend_from_slice(&sum.to_le_bytes());
        buf[counts_at..body].copy_from_slice(&counts);
        // (Every string written is UTF-8, every length its own: what `parse` checks.)
        Listing {
            buf: Data::Read(buf),
            entries,
            order_at,
            count: rows.len(),
        }
    }

    /// A slot's bytes, when they are whole, of this index version and of what is wanted.
    fn parse(buf: Data, want: Want<'_>) -> Option<Listing> {
        let mut r = Reader { b: &buf, at: 0 };
        if r.take(MAGIC.len())? != MAGIC || r.str()? != super::SCHEMA_VERSION {
            return None;
        }
        let print = r.take(PRINT_LEN)?;
        let digest = r.opt(|r| r.take(32))?;
        // (Zeros in place of a missing digest.)
        if digest.is_none() && r.take(32)? != [0; 32] {
            return None;
        }
        let matches = match want {
            Want::Print(p) => print == p.as_bytes(),
            Want::Digest(d) => digest == Some(&d[..]),
            Want::Any => true,
        };
        if !matches {
            return None;
        }
        let files = r.u32()? as usize;
        let count = r.u32()? as usize;
        let len = usize::try_from(r.u64()?).ok()?;
        let sum = r.u64()?;
        let body = r.at;
        if buf.len() - body != len || checksum(&buf[body..]) != sum || files > len / MIN_ENTRY {
            return None;
        }
        // Every entry well formed (lengths inside the body, UTF-8), the order naming
        // listed entries, and nothing after it.
        let mut entries = Vec::with_capacity(files);
        let mut listed = Vec::with_capacity(files);
        let mut r = Reader { b: &buf, at: body };
        for _ in 0..files {
            entries.push(u32::try_from(r.at).ok()?);
            listed.push(entry(&mut r)?.row.is_some());
        }
        let order_at = r.at;
        if buf.len() - order_at != count.checked_mul(4)? {
            return None;
        }
        for _ in 0..count {
            let e = r.u32()? as usize;
            if !*listed.get(e)? {
                return None;
            }
        }
        Some(Listing {
            buf,
            entries,
            order_at,
            count,
        })
    }

    fn entry(&self, n: usize) -> Option<Entry<'_>> {
        let mut r = Reader {
            b: &self.buf,
            at: *self.entries.get(n)? as usize,
        };
        entry(&mut r)
    }

    /// The rows, in order.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut order = Reader {
            b: &self.buf,
            at: self.order_at,
        };
        // (Checked whole when made or read, [`Listing::parse`]. Sized once: grown a row at
        // a time, the list of 20,000 rows was copied over and over.)
        let mut out = Vec::with_capacity(self.count);
        for _ in 0..self.count {
            if let Some(row) = order
                .u32()
                .and_then(|e| self.entry(e as usize))
                .and_then(|e| e.row)
            {
                out.push(row);
            }
        }
        out
    }

    /// Every file of the list, in its order.
    pub fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        (0..self.entries.len()).filter_map(|n| self.entry(n))
    }

    pub fn len(&self) -> usize {
        self.count
    }

    /// The list digest this listing is kept under.
    fn digest(&self) -> Option<&[u8]> {
        let at = self.digest_at();
        (self.buf.get(at) == Some(&1)).then(|| &self.buf[at + 1..at + 33])
    }

    /// Keeps it under `d` too.
    fn set_digest(&mut self, d: &ListDigest) {
        let at = self.digest_at();
        let mut b = self.buf.to_vec();
        b[at] = 1;
        b[at + 1..at + 33].copy_from_slice(d);
        self.buf = Data::Read(b);
    }

    fn digest_at(&self) -> usize {
        MAGIC.len() + 4 + super::SCHEMA_VERSION.len() + PRINT_LEN
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    // (A listing's strings are far below 4 GiB: a session's first message is one line.)
    let s = &s[..s.len().min(u32::MAX as usize)];
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    // (Cut at a character: what is read back is UTF-8.)
    let mut n = s.len().min(u32::MAX as usize);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    put_bytes(b, &s.as_bytes()[..n]);
}

fn put_opt_str(b: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            b.push(1);
            put_str(b, s);
        }
        None => b.push(0),
    }
}

fn put_row(b: &mut Vec<u8>, r: &Row<'_>) {
    put_str(b, r.id_json);
    put_str(b, r.cwd);
    put_opt_str(b, r.name);
    put_opt_str(b, r.parent_json);
    match r.created_ms {
        Some(t) => {
            b.push(1);
            b.extend_from_slice(&t.to_le_bytes());
        }
        None => b.push(0),
    }
    b.extend_from_slice(&r.modified_ms.to_le_bytes());
    b.extend_from_slice(&r.message_count.to_le_bytes());
    put_str(b, r.first_message);
    b.push(u8::from(r.reference_drops));
    put_opt_str(b, r.imported);
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn f64(&mut self) -> Option<f64> {
        Some(f64::from_bits(self.u64()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        simdutf8::basic::from_utf8(self.bytes()?).ok()
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.u8()? {
            0 => Some(None),
            1 => f(self).map(Some),
            _ => None,
        }
    }
}

fn entry<'a>(r: &mut Reader<'a>) -> Option<Entry<'a>> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(r.bytes()?));
    let stat = r.opt(|r| {
        Some(FileStat {
            size: r.u64()?,
            mtime_ns: r.u64()? as i64,
            mtime_ms: r.f64()?,
            dev: r.u64()?,
            ino: r.u64()?,
            ctime_ns: r.u64()? as i64,
        })
    })?;
    let row = r.opt(|r| row(r, path))?;
    Some(Entry { path, stat, row })
}

fn row<'a>(r: &mut Reader<'a>, path: &'a Path) -> Option<Row<'a>> {
    Some(Row {
        path,
        id_json: r.str()?,
        cwd: r.str()?,
        name: r.opt(Reader::str)?,
        parent_json: r.opt(Reader::str)?,
        created_ms: r.opt(Reader::f64)?,
        modified_ms: r.f64()?,
        message_count: r.u64()?,
        first_message: r.str()?,
        reference_drops: match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        },
        imported: r.opt(Reader::str)?,
    })
}

/// The slot folder of an index file.
fn dir_for(index: &Path) -> PathBuf {
    let mut p = index.as_os_str().to_owned();
    p.push(".rows");
    PathBuf::from(p)
}

/// The slot of a scope.
fn slot(index: &Path, scope_key: &[u8]) -> PathBuf {
    use sha2::Digest;
    let d = sha2::Sha256::digest(scope_key);
    let name: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
    dir_for(index).join(name)
}

/// The listing kept for `scope_key` when it is of `print`.
pub(super) fn read(index: &Path, scope_key: &[u8], print: &str) -> Option<Listing> {
    read_slot(index, scope_key, Want::Print(print))
}

/// The listing kept for `scope_key` when it was made for a file list of this digest
/// ([`sessiontree::changes::list_digest`]).
pub(super) fn read_by_digest(
    index: &Path,
    scope_key: &[u8],
    digest: &ListDigest,
) -> Option<Listing> {
    read_slot(index, scope_key, Want::Digest(digest))
}

/// [`read`] when the print matches; a slot that lacks `digest` is written again with it.
pub(super) fn read_noting(
    index: &Path,
    scope_key: &[u8],
    print: &str,
    digest: Option<&ListDigest>,
) -> Option<Listing> {
    let mut l = read(index, scope_key, print)?;
    if let Some(d) = digest.filter(|d| l.digest() != Some(&d[..])) {
        l.set_digest(d);
        write(index, scope_key, &l);
    }
    Some(l)
}

/// The listing kept for `scope_key`, of whatever list.
pub(super) fn read_any(index: &Path, scope_key: &[u8]) -> Option<Listing> {
    read_slot(index, scope_key, Want::Any)
}

fn read_slot(index: &Path, scope_key: &[u8], want: Want<'_>) -> Option<Listing> {
    let f = std::fs::File::open(slot(index, scope_key)).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_LEN {
        return None;
    }
    // (Made here, or the slot file mapped: read in place.)
    // SAFETY: a slot is written whole under a temporary name and renamed into place,
    // never written to after (see the module docs); the mapping is read-only.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    Listing::parse(Data::Mapped(map), want)
}

/// Keeps `l` as the listing of `scope_key` (best effort: a cache that cannot be written is
/// only slower next time). Slots beyond [`SLOTS`] are removed, oldest first.
pub(super) fn write(index: &Path, scope_key: &[u8], l: &Listing) {
    let dir = dir_for(index);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = slot(index, scope_key);
    let Ok((tmp, mut f)) = crate::listing_store::create_temp(&path) else {
        return;
    };
    if f.write_all(&l.buf).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return;
    }
    prune(&dir);
}

fn prune(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut slots: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, e.path()))
        })
        .collect();
    if slots.len() <= SLOTS {
        return;
    }
    slots.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (_, p) in &slots[SLOTS..] {
        let _ = std::fs::remove_file(p);
    }
}

/// Removes every slot (when the index is deleted).
pub(super) fn remove_all(index: &Path) {
    let _ = std::fs::remove_dir_all(dir_for(index));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(k: u64) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(format!("/s/--p--/{k}.jsonl")),
            id: serde_json::Value::String(format!("id-{k}")),
            cwd: "/home/u/p".into(),
            name: k.is_multiple_of(2).then(|| format!("name {k} ✓")),
            parent_session_path: match k % 3 {
                0 => None,
                1 => Some(serde_json::Value::Null),
                _ => Some("/s/x.jsonl".into()),
            },
            created_ms: (!k.is_multiple_of(4)).then_some(1.5e12 + k as f64),
            modified_ms: if k == 5 { f64::NAN } else { 1.6e12 - k as f64 },
            message_count: k * 7,
            first_message: "first\nmessage \u{202e}".repeat(k as usize % 3),
            all_messages_text: String::new(),
            reference_drops: k.is_multiple_of(5),
            imported: k.is_multiple_of(6).then(|| "codex".to_string()),
        }
    }

    fn stat(k: u64) -> FileStat {
        FileStat {
            size: k * 100,
            mtime_ns: -(k as i64),
            mtime_ms: k as f64 / 3.0,
            dev: k + 1,
            ino: u64::MAX - k,
            ctime_ns: k as i64 * 7,
        }
    }

    /// The files of `infos` (every third without a stat), with a file that is not a session
    /// first.
    fn files_of(infos: &[SessionInfo]) -> Vec<(PathBuf, Option<FileStat>)> {
        let mut v = vec![(
            PathBuf::from("/s/--p--/not-a-session.jsonl"),
            Some(stat(999)),
        )];
        v.extend(
            infos
                .iter()
                .enumerate()
                .map(|(k, i)| (i.path.clone(), (k % 3 != 1).then(|| stat(k as u64)))),
        );
        v
    }

    /// What is written is what is read back, every field; anything else in a slot (another
    /// print or version, a flipped or missing byte, a row count a header lies about) is not
    /// used.
    #[test]
    fn a_slot_reads_back_its_rows_and_nothing_else() {
        let infos: Vec<SessionInfo> = (0..40).map(info).collect();
        let print = "ab".repeat(32);
        let mut infos = infos;
        // The rows in another order than the files'.
        infos.reverse();
        let files = files_of(&infos);
        let l = Listing::of(&files, &infos, &print, None);
        let entries: Vec<_> = l
            .entries()
            .map(|e| (e.path.to_path_buf(), e.stat, e.row.is_some()))
            .collect();
        let want: Vec<_> = files
            .iter()
            .map(|(p, st)| (p.clone(), *st, !p.ends_with("not-a-session.jsonl")))
            .collect();
        assert_eq!(entries, want);
        let back = Listing::parse(Data::Read(l.buf.to_vec()), Want::Print(&print)).expect("whole");
        let rows = back.rows();
        // (Compared as text: a NaN time is not equal to itself.)
        assert_eq!(
            format!("{:?}", l.rows()),
            format!("{rows:?}"),
            "as made, as read back"
        );
        assert_eq!(rows.len(), infos.len());
        for (r, i) in rows.iter().zip(&infos) {
            assert_eq!(r.path, i.path);
            assert_eq!(r.id_json, i.id.to_string());
            assert_eq!(r.cwd, i.cwd);
            assert_eq!(r.name, i.name.as_deref());
            assert_eq!(
                r.parent_json.map(str::to_string),
                i.parent_session_path.as_ref().map(|p| p.to_string())
            );
            assert_eq!(r.is_fork(), i.is_fork());
            assert_eq!(r.created_ms, i.created_ms);
            assert_eq!(r.modified_ms.to_bits(), i.modified_ms.to_bits());
            assert_eq!(r.message_count, i.message_count);
            assert_eq!(r.first_message, i.first_message);
            assert_eq!(r.reference_drops, i.reference_drops);
            assert_eq!(r.imported, i.imported.as_deref());
            let back = r.to_info();
            assert_eq!(back.to_json(), i.to_json());
            assert_eq!(back.reference_drops, i.reference_drops);
        }
        assert!(
            Listing::parse(Data::Read(l.buf.to_vec()), Want::Print(&"cd".repeat(32))).is_none()
        );
        for at in [0, 9, 30, 100, l.buf.len() / 2, l.buf.len() - 1] {
            let mut b = l.buf.to_vec();
            b[at] ^= 0x20;
            assert!(
                Listing::parse(Data::Read(b), Want::Print(&print)).is_none(),
                "byte {at} flipped"
            );
        }
        for cut in [0, 10, 90, l.buf.len() - 1] {
            assert!(
                Listing::parse(Data::Read(l.buf[..cut].to_vec()), Want::Print(&print)).is_none()
            );
        }
        let mut longer = l.buf.to_vec();
        longer.push(0);
        assert!(Listing::parse(Data::Read(longer), Want::Print(&print)).is_none());
        // A header claiming more rows than its body can hold, checksum and all.
        let mut lie = Listing::of(&files, &infos, &print, None).buf.to_vec();
        let at = MAGIC.len() + 4 + super::super::SCHEMA_VERSION.len() + print.len() + 33;
        lie[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Listing::parse(Data::Read(lie), Want::Print(&print)).is_none());
        // Not a slot at all, of every length.
        let mut rng = sessiontree_testkit::rng::Rng(0x5107);
        for n in 0..300 {
            let b: Vec<u8> = (0..n).map(|_| rng.pick(256) as u8).collect();
            assert!(Listing::parse(Data::Read(b), Want::Print(&print)).is_none());
        }
    }

    /// A slot whose checksum matches its body (anyone who can write the agent dir can make
    /// one) is still checked whole: random bodies, and valid ones with bytes changed, are
    /// refused or read without a panic, whatever lengths and counts they claim.
    #[test]
    fn a_forged_slot_with_a_right_checksum_never_panics() {
        let infos: Vec<SessionInfo> = (0..6).map(info).collect();
        let print = "ef".repeat(32);
        let valid = Listing::of(&files_of(&infos), &infos, &print, None)
            .buf
            .to_vec();
        let head = MAGIC.len() + 4 + super::super::SCHEMA_VERSION.len() + PRINT_LEN + 33;
        let forge = |files: u32, rows: u32, body: &[u8]| {
            let mut b = valid[..head].to_vec();
            b.extend_from_slice(&files.to_le_bytes());
            b.extend_from_slice(&rows.to_le_bytes());
            b.extend_from_slice(&(body.len() as u64).to_le_bytes());
            b.extend_from_slice(&checksum(body).to_le_bytes());
            b.extend_from_slice(body);
            b
        };
        let mut rng = sessiontree_testkit::rng::Rng(0xf0_49ed);
        let valid_body = valid[head + 24..].to_vec();
        let mut read = 0;
        for n in 0..3000 {
            let body: Vec<u8> = if n % 2 == 0 {
                (0..rng.pick(200)).map(|_| rng.pick(256) as u8).collect()
            } else {
                let mut b = valid_body.clone();
                for _ in 0..1 + rng.pick(3) {
                    let at = rng.pick(b.len());
                    b[at] = [0, 1, 2, 0xff, 0x80, rng.pick(256) as u8][rng.pick(6)];
                }
                b.truncate(b.len() - rng.pick(3) * rng.pick(8));
                b
            };
            let (files, rows) = (rng.pick(10) as u32, rng.pick(10) as u32);
            let claims = [(files, rows), (7, 6), (u32::MAX, 6), (7, u32::MAX)];
            let (f, r) = claims[rng.pick(claims.len())];
            if let Some(l) = Listing::parse(Data::Read(forge(f, r, &body)), Want::Print(&print)) {
                read += 1;
                let _ = l.rows();
                let _ = l.entries().count();
            }
        }
        // Some of the changed valid bodies are still whole slots (a changed time or count).
        assert!(read > 0);
    }

    /// Slots are per scope, replaced whole, and at most [`SLOTS`] are kept.
    #[test]
    fn slots_are_per_scope_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let index = d.path().join("i.sqlite");
        let (p1, p2) = ("11".repeat(32), "22".repeat(32));
        let infos: Vec<SessionInfo> = (0..3).map(info).collect();
        write(
            &index,
            b"all",
            &Listing::of(&files_of(&infos), &infos, &p1, None),
        );
        write(&index, b"folder", &Listing::of(&[], &infos[..1], &p2, None));
        assert_eq!(read(&index, b"all", &p1).unwrap().len(), 3);
        assert!(read(&index, b"all", &p2).is_none());
        assert_eq!(read(&index, b"folder", &p2).unwrap().len(), 1);
        write(
            &index,
            b"all",
            &Listing::of(&files_of(&infos[..2]), &infos[..2], &p2, None),
        );
        assert!(read(&index, b"all", &p1).is_none());
        assert_eq!(read(&index, b"all", &p2).unwrap().len(), 2);
        for k in 0..SLOTS + 5 {
            write(
                &index,
                format!("scope {k}").as_bytes(),
                &Listing::of(&files_of(&infos), &infos, &p1, None),
            );
        }
        let kept = std::fs::read_dir(dir_for(&index)).unwrap().count();
        // Kept under a list digest: found by it, and by the print as before; a slot read by
        // its print is given the digest of the list it was read for.
        let (d1, d2) = ([1u8; 32], [2u8; 32]);
        write(
            &index,
            b"d",
            &Listing::of(&files_of(&infos), &infos, &p1, Some(&d1)),
        );
        assert_eq!(read_by_digest(&index, b"d", &d1).unwrap().len(), 3);
        assert!(read_by_digest(&index, b"d", &d2).is_none());
        assert!(read_by_digest(&index, b"all", &d1).is_none());
        assert_eq!(read_noting(&index, b"d", &p1, Some(&d2)).unwrap().len(), 3);
        assert!(read_by_digest(&index, b"d", &d1).is_none());
        assert_eq!(read_by_digest(&index, b"d", &d2).unwrap().len(), 3);
        assert!(read_noting(&index, b"d", &p2, Some(&d1)).is_none());
        assert_eq!(read_by_digest(&index, b"d", &d2).unwrap().len(), 3);
        assert_eq!(kept, SLOTS);
        remove_all(&index);
        assert!(!dir_for(&index).exists());
    }
}
