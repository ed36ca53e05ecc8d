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
//! Layout (integers little-endian): `STROWS01`, the index schema version (length-prefixed),
//! the print (64 hex bytes), the list digest (a byte 0 or 1, then 32 bytes, zero when
//! there is none), the row count (u32), the body's length (u64) and checksum
//! ([`checksum`], u64), then the body: per row, the path, the header's id as JSON, the cwd,
//! the name (optional), the parent session as JSON (optional), the created time (optional
//! f64), the modified time (f64), the message count (u64), the first message, whether the
//! reference drops it (u8), the agent it was imported from (optional). A string is its
//! length (u32) and UTF-8 bytes; an optional value a byte 0 or 1 before it.

use crate::list::SessionInfo;
use crate::summary::checksum;
use sessiontree::changes::ListDigest;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"STROWS01";
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
}

/// The fewest bytes a row takes (its fixed fields and empty strings): bounds the row count
/// a header may claim before anything is sized by it.
const MIN_ROW: usize = 4 * 4 + 1 + 1 + 1 + 8 + 8 + 1 + 1;

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

impl Row<'_> {
    /// As [`SessionInfo::is_fork`]: the header names a parent session (not `null`).
    pub fn is_fork(&self) -> bool {
        self.parent_json.is_some_and(|p| p != "null")
    }

    /// The name, else the first message (what a listing shows as its title).
    pub fn title(&self) -> &str {
        self.name.unwrap_or(self.first_message)
    }
}

/// A slot's bytes: made here, or the slot file mapped (read in place: a slot is never
/// written to after it is renamed into place, only replaced).
enum Bytes {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// The finished rows of one file list, in one buffer.
pub struct Listing {
    buf: Bytes,
    /// Where the body starts in `buf`.
    body: usize,
    count: usize,
}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing")
            .field("rows", &self.count)
            .finish()
    }
}

impl Listing {
    /// The rows of `infos` (in their order), as a slot stores them under `print` (and the
    /// list's digest, when known).
    pub fn of(infos: &[SessionInfo], print: &str, digest: Option<&ListDigest>) -> Listing {
        let mut body = Vec::with_capacity(infos.len() * 256);
        for i in infos {
            put_row(&mut body, i);
        }
        let mut buf = Vec::with_capacity(body.len() + 128);
        buf.extend_from_slice(MAGIC);
        put_str(&mut buf, super::SCHEMA_VERSION);
        buf.extend_from_slice(print.as_bytes());
        buf.push(u8::from(digest.is_some()));
        buf.extend_from_slice(digest.unwrap_or(&[0; 32]));
        buf.extend_from_slice(&(infos.len() as u32).to_le_bytes());
        buf.extend_from_slice(&(body.len() as u64).to_le_bytes());
        buf.extend_from_slice(&checksum(&body).to_le_bytes());
        let start = buf.len();
        buf.extend_from_slice(&body);
        Listing {
            buf: Bytes::Owned(buf),
            body: start,
            count: infos.len(),
        }
    }

    /// A slot's bytes, when they are whole, of this index version and of what is wanted.
    fn parse(buf: Bytes, want: Want<'_>) -> Option<Listing> {
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
        };
        if !matches {
            return None;
        }
        let count = r.u32()? as usize;
        let len = usize::try_from(r.u64()?).ok()?;
        let sum = r.u64()?;
        let body = r.at;
        if buf.len() - body != len || checksum(&buf[body..]) != sum || count > len / MIN_ROW + 1 {
            return None;
        }
        let l = Listing { buf, body, count };
        // Every row well formed (lengths inside the body, UTF-8), and nothing after them.
        let mut r = Reader {
            b: &l.buf[l.body..],
            at: 0,
        };
        for _ in 0..l.count {
            row(&mut r)?;
        }
        (r.at == r.b.len()).then_some(l)
    }

    /// The rows, in order.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut r = Reader {
            b: &self.buf[self.body..],
            at: 0,
        };
        let mut out = Vec::with_capacity(self.count);
        // (Checked whole when read, [`Listing::parse`]; one made here holds what it was
        // given, but for a string cut at 4 GiB: the rows end there.)
        while out.len() < self.count {
            match row(&mut r) {
                Some(row) => out.push(row),
                None => break,
            }
        }
        out
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
        self.buf = Bytes::Owned(b);
    }

    fn digest_at(&self) -> usize {
        MAGIC.len() + 4 + super::SCHEMA_VERSION.len() + PRINT_LEN
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    // (A listing's strings are far below 4 GiB: a session's first message is one line.)
    let s = &s.as_bytes()[..s.len().min(u32::MAX as usize)];
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
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

fn put_row(b: &mut Vec<u8>, i: &SessionInfo) {
    use std::os::unix::ffi::OsStrExt;
    let path = i.path.as_os_str().as_bytes();
    b.extend_from_slice(&(path.len() as u32).to_le_bytes());
    b.extend_from_slice(path);
    put_str(b, &i.id.to_string());
    put_str(b, &i.cwd);
    put_opt_str(b, i.name.as_deref());
    put_opt_str(
        b,
        i.parent_session_path
            .as_ref()
            .map(|p| p.to_string())
            .as_deref(),
    );
    match i.created_ms {
        Some(t) => {
            b.push(1);
            b.extend_from_slice(&t.to_le_bytes());
        }
        None => b.push(0),
    }
    b.extend_from_slice(&i.modified_ms.to_le_bytes());
    b.extend_from_slice(&i.message_count.to_le_bytes());
    put_str(b, &i.first_message);
    b.push(u8::from(i.reference_drops));
    put_opt_str(b, i.imported.as_deref());
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

fn row<'a>(r: &mut Reader<'a>) -> Option<Row<'a>> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(r.bytes()?));
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
pub fn read_by_digest(index: &Path, scope_key: &[u8], digest: &ListDigest) -> Option<Listing> {
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

fn read_slot(index: &Path, scope_key: &[u8], want: Want<'_>) -> Option<Listing> {
    let f = std::fs::File::open(slot(index, scope_key)).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_LEN {
        return None;
    }
    // SAFETY: a slot is written whole under a temporary name and renamed into place,
    // never written to after (see the module docs); the mapping is read-only.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    Listing::parse(Bytes::Mapped(map), want)
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

    /// What is written is what is read back, every field; anything else in a slot (another
    /// print or version, a flipped or missing byte, a row count a header lies about) is not
    /// used.
    #[test]
    fn a_slot_reads_back_its_rows_and_nothing_else() {
        let infos: Vec<SessionInfo> = (0..40).map(info).collect();
        let print = "ab".repeat(32);
        let l = Listing::of(&infos, &print, None);
        let back =
            Listing::parse(Bytes::Owned(l.buf.to_vec()), Want::Print(&print)).expect("whole");
        let rows = back.rows();
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
        }
        assert!(
            Listing::parse(Bytes::Owned(l.buf.to_vec()), Want::Print(&"cd".repeat(32))).is_none()
        );
        for at in [0, 9, 30, 100, l.buf.len() / 2, l.buf.len() - 1] {
            let mut b = l.buf.to_vec();
            b[at] ^= 0x20;
            assert!(
                Listing::parse(Bytes::Owned(b), Want::Print(&print)).is_none(),
                "byte {at} flipped"
            );
        }
        for cut in [0, 10, 90, l.buf.len() - 1] {
            assert!(
                Listing::parse(Bytes::Owned(l.buf[..cut].to_vec()), Want::Print(&print)).is_none()
            );
        }
        let mut longer = l.buf.to_vec();
        longer.push(0);
        assert!(Listing::parse(Bytes::Owned(longer), Want::Print(&print)).is_none());
        // A header claiming more rows than its body can hold, checksum and all.
        let mut lie = Listing::of(&infos, &print, None).buf.to_vec();
        let at = MAGIC.len() + 4 + super::super::SCHEMA_VERSION.len() + print.len() + 33;
        lie[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Listing::parse(Bytes::Owned(lie), Want::Print(&print)).is_none());
        // Not a slot at all, of every length.
        let mut rng = sessiontree_testkit::rng::Rng(0x5107);
        for n in 0..300 {
            let b: Vec<u8> = (0..n).map(|_| rng.pick(256) as u8).collect();
            assert!(Listing::parse(Bytes::Owned(b), Want::Print(&print)).is_none());
        }
    }

    /// Slots are per scope, replaced whole, and at most [`SLOTS`] are kept.
    #[test]
    fn slots_are_per_scope_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let index = d.path().join("i.sqlite");
        let (p1, p2) = ("11".repeat(32), "22".repeat(32));
        let infos: Vec<SessionInfo> = (0..3).map(info).collect();
        write(&index, b"all", &Listing::of(&infos, &p1, None));
        write(&index, b"folder", &Listing::of(&infos[..1], &p2, None));
        assert_eq!(read(&index, b"all", &p1).unwrap().len(), 3);
        assert!(read(&index, b"all", &p2).is_none());
        assert_eq!(read(&index, b"folder", &p2).unwrap().len(), 1);
        write(&index, b"all", &Listing::of(&infos[..2], &p2, None));
        assert!(read(&index, b"all", &p1).is_none());
        assert_eq!(read(&index, b"all", &p2).unwrap().len(), 2);
        for k in 0..SLOTS + 5 {
            write(
                &index,
                format!("scope {k}").as_bytes(),
                &Listing::of(&infos, &p1, None),
            );
        }
        let kept = std::fs::read_dir(dir_for(&index)).unwrap().count();
        // Kept under a list digest: found by it, and by the print as before; a slot read by
        // its print is given the digest of the list it was read for.
        let (d1, d2) = ([1u8; 32], [2u8; 32]);
        write(&index, b"d", &Listing::of(&infos, &p1, Some(&d1)));
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
