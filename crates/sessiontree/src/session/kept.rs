//! The context of a large session kept between reads: where its entries are, not what
//! they say.
//!
//! Reading the context of a 250 MB session means reading and checking all of its bytes
//! (each line's validity, every id and parent decide the path). When the file has not
//! changed since the last such read, the answer is the same: so a read keeps, in a small
//! file of its own, *where* the context's entries are (offset, length, line and id of each
//! selected entry, and of the entries the thinking level and the model come from), keyed by
//! the file's identity as `stat` gives it. The next read of the unchanged file parses only
//! those lines, from a map of the file, and builds the same plan from them
//! ([`Plan::from_parts`]).
//!
//! Only what cannot drift is trusted:
//!
//! * The key is the device, inode, size, modification and change times (nanoseconds). Any
//!   write to the file moves its change time, which no unprivileged process can set back.
//!   A file changed less than [`SETTLE`] before it was read is not kept, so that a second
//!   write within one tick of a coarse clock cannot leave the key as it was.
//! * The file is stat'ed before it is loaded and again after: a file that changed while it
//!   was read is not kept.
//! * A kept file is checked whole (SHA-256 of its content) and every number in it is
//!   bounded by its own length before anything is allocated; each line it names must start
//!   a line of the session, end at its newline, parse as an entry and carry the id it was
//!   kept with. Anything else is a miss: the session is read whole, as without a kept file.
//!   A forged kept file (only its owner can write the folder) can at worst select other
//!   whole entries of the same session, which the session's writer could have written.

use crate::context::Plan;
use crate::entry::Entry;
use crate::parse::LineAt;
use sha2::{Digest, Sha256};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The folder, inside the agent dir, that kept contexts go in.
pub const DIR_NAME: &str = "sessiontree-context";

/// Sessions smaller than this are read whole: it takes a few milliseconds.
pub const KEEP_MIN: u64 = 8 << 20;

/// A file changed more recently than this before it was read is not kept.
pub const SETTLE: Duration = Duration::from_secs(2);

/// At most this many kept contexts stay in the folder (the least recently kept go).
const KEEP_MAX: usize = 32;

const MAGIC: &[u8; 8] = b"STCTX002";

/// A file's identity as `stat` gives it: any write moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    /// The key of what `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The key of the file at `path` now (`None` when it cannot be stat'ed).
    pub fn now(path: &Path) -> Option<FileKey> {
        std::fs::metadata(path).ok().map(|m| FileKey::of(&m))
    }

    /// Whether the file's last change was at least [`SETTLE`] before `at`.
    fn settled_at(&self, at: SystemTime) -> bool {
        let Some(at) = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_secs()).ok())
        else {
            return false;
        };
        // Whole seconds, rounded against the file: a change in the same or the previous
        // second as `at - SETTLE` is too recent.
        self.ctime.0 < at - SETTLE.as_secs() as i64
    }

    fn write(&self, out: &mut Vec<u8>) {
        for n in [self.dev, self.ino, self.size] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        for n in [self.mtime.0, self.mtime.1, self.ctime.0, self.ctime.1] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn read(r: &mut Reader<'_>) -> Option<FileKey> {
        Some(FileKey {
            dev: r.u64()?,
            ino: r.u64()?,
            size: r.u64()?,
            mtime: (r.u64()? as i64, r.u64()? as i64),
            ctime: (r.u64()? as i64, r.u64()? as i64),
        })
    }
}

/// The entries a kept context names, read from the session: [`KeptContext::plan`] is the
/// plan a whole load would give.
pub struct KeptContext {
    entries: Vec<Entry>,
    selected: Vec<usize>,
    thinking: Option<usize>,
    model: Option<usize>,
}

impl KeptContext {
    /// The plan of the session's context at its last entry.
    pub fn plan(&self) -> Plan<'_> {
        Plan::from_parts(
            self.selected.iter().map(|&i| &self.entries[i]).collect(),
            self.thinking.map(|i| &self.entries[i]),
            self.model.map(|i| &self.entries[i]),
        )
    }
}

/// Whether kept contexts are turned off (`SESSIONTREE_NO_KEPT_CONTEXT=1`: every read of a
/// context reads the whole session, for measuring that read).
pub fn disabled() -> bool {
    std::env::var_os("SESSIONTREE_NO_KEPT_CONTEXT").is_some_and(|v| v != "0")
}

/// Where the context of the session at `file` is kept in `dir` (named by the SHA-256 of the
/// file's canonical path, which the kept file also holds).
fn kept_path(dir: &Path, canonical: &Path) -> PathBuf {
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(name)
}

/// The context of `file` at its last entry as kept in `dir`, when the file has not changed
/// since it was kept; `None` otherwise (then read the session whole, and
/// [`keep_context`]).
pub fn kept_context(file: &Path, dir: &Path) -> Option<KeptContext> {
    let Kept {
        canonical,
        key,
        refs,
        base,
    } = read_kept(file, dir)?;
    // The file stat'ed is the file mapped.
    let (opened, meta) = crate::store::open_regular(file).ok()?;
    let now = FileKey::of(&meta);
    if now != key {
        let kept = appended(file, opened, now, &key, &refs, base.as_ref()?)?;
        if let Some(tail) = &kept.tail {
            rekeep(file, dir, &canonical, now, &kept, tail);
        }
        return Some(kept.context);
    }
    let backing = super::load::map_opened(opened, key.size)?;
    let entries = kept_entries(&backing, &refs)?;
    backing.scanned();
    Some(KeptContext {
        entries,
        selected: (0..refs.selected).collect(),
        thinking: refs.thinking,
        model: refs.model,
    })
}

/// A sound kept context of a file: its canonical path and what was kept of it.
struct Kept {
    canonical: PathBuf,
    key: FileKey,
    refs: Refs,
    base: Option<Base>,
}

/// What `dir` keeps for `file`, when that is a whole, well-formed kept context of this very
/// file (its canonical path) as large as a kept file can be.
fn read_kept(file: &Path, dir: &Path) -> Option<Kept> {
    let canonical = std::fs::canonicalize(file).ok()?;
    let bytes = read_small(&kept_path(dir, &canonical))?;
    let (key, path, refs, base) = decode(&bytes)?;
    if path != canonical.as_os_str().as_encoded_bytes() || key.size < KEEP_MIN {
        return None;
    }
    Some(Kept {
        canonical,
        key,
        refs,
        base,
    })
}

/// The entries `refs` names, read from `backing`, when each is there with its id.
fn kept_entries(backing: &crate::entry::Backing, refs: &Refs) -> Option<Vec<Entry>> {
    let lines: Vec<LineAt> = refs.lines.iter().map(|(at, _)| *at).collect();
    let entries = crate::parse::entries_at(backing, &lines)?;
    let same_ids = entries
        .iter()
        .zip(&refs.lines)
        .all(|(e, (_, id))| e.id().map(str::as_bytes) == id.as_deref());
    same_ids.then_some(entries)
}

/// The context of a file that grew since its context was kept, when only entries were
/// appended that continue its last entry, one after the other: the kept part's bytes are
/// unchanged (its checksums), every appended entry's parent is the entry before it, none is
/// a compaction and none has an id the file had or the tail repeats (so no parent before
/// resolves elsewhere). Anything else is `None`: the file is read whole.
fn appended(
    file: &Path,
    opened: std::fs::File,
    now: FileKey,
    key: &FileKey,
    refs: &Refs,
    base: &Base,
) -> Option<Appended> {
    // A tail longer than a quarter of what was kept is read whole, and kept again.
    if (now.dev, now.ino) != (key.dev, key.ino)
        || now.size <= key.size
        || now.size - key.size > key.size / 4
    {
        return None;
    }
    if sums(&opened, key.size)?.0 != base.blocks {
        return None;
    }
    let backing = super::load::map_opened(opened, now.size)?;
    let bytes: &[u8] = (*backing).as_ref();
    let old = usize::try_from(key.size).ok()?;
    if bytes[old - 1] != b'\n' {
        return None;
    }
    let header = crate::folder::read_header(file)?;
    let tail = crate::parse::parse_from(backing.clone(), old, base.lines + 1, Some(header)).ok()?;
    let mut parent: &[u8] = &base.leaf;
    let mut ids = std::collections::HashSet::new();
    for e in &tail.entries {
        let id = e.id()?;
        let continues = matches!(&e.parent, crate::Parent::Id(p) if p.as_bytes() == parent);
        if !continues
            || e.entry_type == crate::EntryType::Compaction
            || base.ids.binary_search(&id_sum(id)).is_ok()
            || !ids.insert(id)
        {
            return None;
        }
        parent = id.as_bytes();
    }
    let mut entries = kept_entries(&backing, refs)?;
    backing.scanned();
    let kept = entries.len();
    let tail_refs: Vec<&Entry> = tail.entries.iter().collect();
    let (thinking, model) = crate::context::settings(&tail_refs);
    let at = |e: Option<&Entry>| {
        e.and_then(|e| tail.entries.iter().position(|t| std::ptr::eq(t, e)))
            .map(|i| kept + i)
    };
    let (thinking, model) = (at(thinking).or(refs.thinking), at(model).or(refs.model));
    let appended = tail.entries.len();
    // What the file is now, for keeping it again: only when it ends with a newline.
    let next = (tail.tail == crate::parse::Tail::Clean).then(|| Base {
        lines: base.lines + tail.lines,
        blocks: base.blocks.clone(),
        leaf: tail
            .entries
            .last()
            .and_then(|e| e.id())
            .map_or_else(|| base.leaf.clone(), |id| id.as_bytes().to_vec()),
        ids: {
            let mut ids = base.ids.clone();
            ids.extend(tail.entries.iter().filter_map(|e| e.id()).map(id_sum));
            ids.sort_unstable();
            ids.dedup();
            ids
        },
    });
    entries.extend(tail.entries);
    Some(Appended {
        context: KeptContext {
            entries,
            selected: (0..refs.selected).chain(kept..kept + appended).collect(),
            thinking,
            model,
        },
        tail: next,
    })
}

/// A context read on after appended entries, and the [`Base`] of the file as it is now
/// (its checksums still those of the part kept before; `None` when the file does not end
/// with a newline).
struct Appended {
    context: KeptContext,
    tail: Option<Base>,
}

/// Keeps the context read on after appended entries as the file's context now, when the
/// file is settled and unchanged since: the next read starts from there (the checksums of
/// the part kept before are kept, the rest summed now). Best effort, as [`keep_context`].
fn rekeep(file: &Path, dir: &Path, canonical: &Path, now: FileKey, kept: &Appended, next: &Base) {
    if !now.settled_at(SystemTime::now()) {
        return;
    }
    let Some(refs) = refs_of(&kept.context.plan()) else {
        return;
    };
    let Ok((opened, meta)) = crate::store::open_regular(file) else {
        return;
    };
    if FileKey::of(&meta) != now {
        return;
    }
    // The last block kept may have been short: it is summed again with what follows.
    let whole = next.blocks.len().saturating_sub(1);
    let Some((fresh, _)) = sums_from(&opened, whole, now.size) else {
        return;
    };
    let mut base = next.clone();
    base.blocks.truncate(whole);
    base.blocks.extend(fresh);
    write_if_unchanged(file, dir, canonical, now, &refs, Some(&base));
}

/// Writes what is kept of `file`, if its times are still `key` now that it was read.
fn write_if_unchanged(
    file: &Path,
    dir: &Path,
    canonical: &Path,
    key: FileKey,
    refs: &Refs,
    base: Option<&Base>,
) {
    if FileKey::now(file) != Some(key) {
        return;
    }
    let bytes = encode(&key, canonical.as_os_str().as_encoded_bytes(), refs, base);
    let _ = write_kept(dir, &kept_path(dir, canonical), &bytes);
}

/// An id as the kept list of a file's ids holds it.
fn id_sum(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

/// Bytes checked together: an appended file's kept part is checked block by block, on all
/// cores.
const BLOCK: usize = 8 << 20;

/// The checksum (XXH3-128) of each [`BLOCK`] of the first `len` bytes of `file` (the last
/// block shorter), and how many `\n` they hold; `None` when they cannot be read. Each thread
/// reads its blocks a window at a time into a buffer that stays in its core's cache (the
/// file is not mapped: on some machines mapping its pages costs more than copying them).
fn sums(file: &std::fs::File, len: u64) -> Option<(Vec<u128>, u64)> {
    sums_from(file, 0, len)
}

/// [`sums`] of the blocks from the `first`.
fn sums_from(file: &std::fs::File, first: usize, len: u64) -> Option<(Vec<u128>, u64)> {
    use std::os::unix::fs::FileExt;
    const WINDOW: usize = 256 << 10;
    let n = usize::try_from(len.div_ceil(BLOCK as u64)).ok()?;
    if first > n {
        return None;
    }
    let one = |k: usize, window: &mut Vec<u8>| -> Option<(u128, u64)> {
        let start = (k * BLOCK) as u64;
        let end = (start + BLOCK as u64).min(len);
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut lines = 0u64;
        let mut at = start;
        while at < end {
            let take = ((end - at) as usize).min(WINDOW);
            window.resize(take, 0);
            file.read_exact_at(window, at).ok()?;
            hasher.update(window);
            lines += memchr::memchr_iter(b'\n', window).count() as u64;
            at += take as u64;
        }
        Some((hasher.digest128(), lines))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min((n - first).max(1));
    let next = std::sync::atomic::AtomicUsize::new(first);
    let work = || {
        let mut window = Vec::with_capacity(WINDOW);
        let mut mine = Vec::new();
        loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if k >= n {
                break mine;
            }
            mine.push((k, one(k, &mut window)));
        }
    };
    let mut done: Vec<(usize, Option<(u128, u64)>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (1..threads).map(|_| sc.spawn(work)).collect();
        let mut all = work();
        for h in handles {
            all.extend(h.join().expect("checksum thread"));
        }
        all
    });
    done.sort_unstable_by_key(|(k, _)| *k);
    let mut blocks = Vec::with_capacity(n - first);
    let mut lines = 0;
    for (_, d) in done {
        let (sum, l) = d?;
        blocks.push(sum);
        lines += l;
    }
    Some((blocks, lines))
}

/// What a kept context knows of the whole file, for a read after entries were appended:
/// the checksums of its bytes, its lines, its last entry's id and every id it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Base {
    /// `\n`s in the file: the next line's number is one more.
    lines: u64,
    blocks: Vec<u128>,
    leaf: Vec<u8>,
    /// [`id_sum`] of every id in the file, sorted, each once.
    ids: Vec<u64>,
}

/// The [`Base`] of `loaded`, the file at `file` with key `before`: when it ends with a
/// newline and its last entry, which has an id, is the leaf.
fn base_of(file: &Path, before: FileKey, loaded: &super::Loaded) -> Option<Base> {
    if loaded.tail != crate::parse::Tail::Clean {
        return None;
    }
    let last = loaded.tree.entries().last()?;
    let leaf = loaded.tree.leaf_entry()?;
    if !std::ptr::eq(last, leaf) {
        return None;
    }
    let leaf = leaf.id()?.as_bytes().to_vec();
    let (opened, meta) = crate::store::open_regular(file).ok()?;
    if FileKey::of(&meta) != before {
        return None;
    }
    let (blocks, lines) = sums(&opened, before.size)?;
    let mut ids: Vec<u64> = loaded
        .tree
        .entries()
        .iter()
        .filter_map(|e| e.id())
        .map(id_sum)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Some(Base {
        lines,
        blocks,
        leaf,
        ids,
    })
}

/// Keeps where the context `plan` of `file`, loaded as `loaded`, is, when the file is large,
/// current and settled, and still has the key `before` it had before it was loaded.
/// Best effort: a kept context that cannot be written is not kept, and nothing else
/// changes.
pub fn keep_context(
    file: &Path,
    dir: &Path,
    before: FileKey,
    loaded: &super::Loaded,
    plan: &Plan<'_>,
) {
    let now = SystemTime::now();
    if before.size < KEEP_MIN
        || loaded.len != before.size
        || loaded.migrated
        || !before.settled_at(now)
        || FileKey::now(file) != Some(before)
    {
        return;
    }
    let Ok(canonical) = std::fs::canonicalize(file) else {
        return;
    };
    let Some(refs) = refs_of(plan) else {
        return;
    };
    let base = base_of(file, before, loaded);
    // The bytes summed are those loaded: the file did not change meanwhile.
    write_if_unchanged(file, dir, &canonical, before, &refs, base.as_ref());
}

/// Sessions larger than this are not read whole ahead of a read ([`keep_ahead`]): their
/// first `context` reads them.
pub const AHEAD_MAX: u64 = 1 << 30;

/// What [`keep_ahead`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// The kept context was already that of the file as it is.
    Current,
    /// Read on from what was kept (only entries were appended), and kept again.
    ReadOn,
    /// Read whole, and kept.
    Whole,
    /// Nothing kept: the file is small, too large, not settled, not a regular file, changed
    /// while it was read, or keeping is off.
    No,
}

/// Keeps the context of the session `file` at its last entry in `dir` ahead of the next
/// read of it, as `context` would keep it (the watch does this once a large session it
/// follows has settled): nothing when what is kept is current, read on from it when only
/// entries were appended, else the whole session read. Only a settled regular file between
/// [`KEEP_MIN`] and [`AHEAD_MAX`] bytes (not a link) is read.
pub fn keep_ahead(file: &Path, dir: &Path) -> Ahead {
    let regular = std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_file());
    let Some(before) = FileKey::now(file).filter(|_| regular && !disabled()) else {
        return Ahead::No;
    };
    if !(KEEP_MIN..=AHEAD_MAX).contains(&before.size) || !before.settled_at(SystemTime::now()) {
        return Ahead::No;
    }
    let current = || is_current(file, dir);
    if current() {
        return Ahead::Current;
    }
    if kept_context(file, dir).is_some() && current() {
        return Ahead::ReadOn;
    }
    let Ok(loaded) = super::load::load(file) else {
        return Ahead::No;
    };
    let plan = crate::context::plan(&loaded.tree, loaded.tree.leaf_arg());
    keep_context(file, dir, before, &loaded, &plan);
    if current() {
        Ahead::Whole
    } else {
        Ahead::No
    }
}

/// Whether a sound kept context of `file` is in `dir` for the file as it is now (the
/// next `context` of it reads only the context's own lines). Reads nothing of the session.
pub fn is_current(file: &Path, dir: &Path) -> bool {
    read_kept(file, dir).is_some_and(|k| FileKey::now(file) == Some(k.key))
}

/// Where the entries of `plan` are; `None` when one of them has no line of its own.
fn refs_of(plan: &Plan<'_>) -> Option<Refs> {
    let (selected, thinking, model) = plan.parts();
    let mut lines: Vec<&Entry> = selected.to_vec();
    fn index_of<'e>(e: Option<&'e Entry>, lines: &mut Vec<&'e Entry>) -> Option<usize> {
        let e = e?;
        Some(match lines.iter().rposition(|l| std::ptr::eq(*l, e)) {
            Some(i) => i,
            None => {
                lines.push(e);
                lines.len() - 1
            }
        })
    }
    let thinking = index_of(thinking, &mut lines);
    let model = index_of(model, &mut lines);
    let mut refs = Refs {
        lines: Vec::with_capacity(lines.len()),
        selected: selected.len(),
        thinking,
        model,
    };
    for e in lines {
        // An entry whose text is not the file's bytes (made in memory, or read with U+FFFD
        // for bytes that are not UTF-8): nothing to keep, the file is read whole each time.
        let at = LineAt::of(e)?;
        refs.lines.push((at, e.id().map(|s| s.as_bytes().to_vec())));
    }
    Some(refs)
}

/// The lines a kept context names: the selected entries first, then the setting entries
/// that are not among them; each with its id.
#[derive(Clone)]
struct Refs {
    lines: Vec<Line>,
    selected: usize,
    thinking: Option<usize>,
    model: Option<usize>,
}

/// Where a line is, and its entry's id.
type Line = (LineAt, Option<Vec<u8>>);

const NONE: u32 = u32::MAX;

fn encode(key: &FileKey, path: &[u8], refs: &Refs, base: Option<&Base>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + path.len() + refs.lines.len() * 48);
    out.extend_from_slice(MAGIC);
    key.write(&mut out);
    out.extend_from_slice(&(path.len() as u32).to_le_bytes());
    out.extend_from_slice(path);
    let index = |i: Option<usize>| i.map_or(NONE, |i| i as u32);
    for n in [
        refs.lines.len() as u32,
        refs.selected as u32,
        index(refs.thinking),
        index(refs.model),
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    for (at, id) in &refs.lines {
        for n in [at.offset, at.len, at.line] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&at.ordinal.to_le_bytes());
        match id {
            Some(id) => {
                out.extend_from_slice(&(id.len() as u32).to_le_bytes());
                out.extend_from_slice(id);
            }
            None => out.extend_from_slice(&NONE.to_le_bytes()),
        }
    }
    match base {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            out.extend_from_slice(&b.lines.to_le_bytes());
            out.extend_from_slice(&(b.blocks.len() as u32).to_le_bytes());
            for sum in &b.blocks {
                out.extend_from_slice(&sum.to_le_bytes());
            }
            out.extend_from_slice(&(b.leaf.len() as u32).to_le_bytes());
            out.extend_from_slice(&b.leaf);
            out.extend_from_slice(&(b.ids.len() as u32).to_le_bytes());
            for id in &b.ids {
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

/// The key, canonical path, lines and base of a kept context; `None` for anything that is
/// not one whole, well-formed kept context.
fn decode(bytes: &[u8]) -> Option<(FileKey, &[u8], Refs, Option<Base>)> {
    let body_len = bytes.len().checked_sub(32)?;
    let (body, sum) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != sum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC {
        return None;
    }
    let key = FileKey::read(&mut r)?;
    let path_len = r.u32()? as usize;
    let path = r.take(path_len)?;
    let n = r.u32()? as usize;
    let selected = r.u32()? as usize;
    let index = |i: u32| -> Option<Option<usize>> {
        match i {
            NONE => Some(None),
            i if (i as usize) < n => Some(Some(i as usize)),
            _ => None,
        }
    };
    let thinking = index(r.u32()?)?;
    let model = index(r.u32()?)?;
    // Each line takes at least 32 bytes: a count the rest cannot hold is refused before
    // anything is allocated for it.
    if selected > n || n > r.0.len() / 32 {
        return None;
    }
    let mut lines = Vec::with_capacity(n);
    for _ in 0..n {
        let at = LineAt {
            offset: r.u64()?,
            len: r.u64()?,
            line: r.u64()?,
            ordinal: r.u32()?,
        };
        let id = match r.u32()? {
            NONE => None,
            len => Some(r.take(len as usize)?.to_vec()),
        };
        lines.push((at, id));
    }
    let base = match r.take(1)? {
        [0] => None,
        [1] => {
            let lines = r.u64()?;
            let n = r.u32()? as usize;
            if n > r.0.len() / 16 {
                return None;
            }
            let mut blocks = Vec::with_capacity(n);
            for _ in 0..n {
                blocks.push(u128::from_le_bytes(r.take(16)?.try_into().ok()?));
            }
            let leaf_len = r.u32()? as usize;
            let leaf = r.take(leaf_len)?.to_vec();
            let n = r.u32()? as usize;
            if n > r.0.len() / 8 {
                return None;
            }
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(r.u64()?);
            }
            // Looked up by halving: kept sorted, each once.
            if ids.windows(2).any(|w| w[0] >= w[1]) {
                return None;
            }
            Some(Base {
                lines,
                blocks,
                leaf,
                ids,
            })
        }
        _ => return None,
    };
    if !r.0.is_empty() {
        return None;
    }
    Some((
        key,
        path,
        Refs {
            lines,
            selected,
            thinking,
            model,
        },
        base,
    ))
}

/// Reads little-endian numbers and byte strings off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// A kept file's bytes, when it is a regular file of a sane size (a kept context names a
/// few thousand lines; this bounds what a forged one can make a read allocate).
fn read_small(path: &Path) -> Option<Vec<u8>> {
    const MAX: u64 = 64 << 20;
    let (file, meta) = crate::store::open_regular(path).ok()?;
    if meta.len() > MAX {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(&file, MAX), &mut bytes).ok()?;
    Some(bytes)
}

/// Writes `bytes` to `path` in `dir` whole (a new file renamed over the old one), making the
/// folder (owner only) when it is missing, and drops the least recently kept files beyond
/// [`KEEP_MAX`].
fn write_kept(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // Only inside an agent dir that exists: a read never makes one.
    let parent = dir.parent().unwrap_or(dir);
    if !parent.is_dir() {
        return Ok(());
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        std::io::Write::write_all(&mut f, bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return written;
    }
    prune(dir);
    Ok(())
}

/// Removes the oldest kept files beyond [`KEEP_MAX`] (and temporary files left by a read
/// that died, once they are a minute old).
fn prune(dir: &Path) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut kept: Vec<(SystemTime, PathBuf)> = Vec::new();
    for e in read.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if e.file_name().as_encoded_bytes().starts_with(b".tmp-") {
            if now
                .duration_since(modified)
                .is_ok_and(|d| d > Duration::from_secs(60))
            {
                let _ = std::fs::remove_file(e.path());
            }
            continue;
        }
        kept.push((modified, e.path()));
    }
    if kept.len() > KEEP_MAX {
        kept.sort();
        for (_, p) in &kept[..kept.len() - KEEP_MAX] {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs() -> Refs {
        Refs {
            lines: vec![
                (
                    LineAt {
                        offset: 10,
                        len: 20,
                        line: 2,
                        ordinal: 1,
                    },
                    Some(b"a1".to_vec()),
                ),
                (
                    LineAt {
                        offset: 31,
                        len: 5,
                        line: 3,
                        ordinal: 2,
                    },
                    None,
                ),
            ],
            selected: 1,
            thinking: None,
            model: Some(1),
        }
    }

    fn key() -> FileKey {
        FileKey {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (4, 5),
            ctime: (6, 7),
        }
    }

    fn base() -> Base {
        Base {
            lines: 9,
            blocks: vec![1 << 100, 7],
            leaf: b"e9".to_vec(),
            ids: vec![3, 5, 1 << 60],
        }
    }

    #[test]
    fn a_kept_context_reads_back_as_written() {
        for b in [None, Some(base())] {
            let bytes = encode(&key(), b"/a/b.jsonl", &refs(), b.as_ref());
            let (k, path, r, got) = decode(&bytes).expect("decodes");
            assert_eq!(k, key());
            assert_eq!(path, b"/a/b.jsonl");
            assert_eq!(r.lines, refs().lines);
            assert_eq!((r.selected, r.thinking, r.model), (1, None, Some(1)));
            assert_eq!(got, b);
        }
    }

    /// Every cut and every changed byte of a kept file is refused, and forged files whose
    /// checksum is right but whose counts lie never allocate what they claim or panic.
    #[test]
    fn a_damaged_or_forged_kept_context_is_refused() {
        let bytes = encode(&key(), b"/a/b.jsonl", &refs(), Some(&base()));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert!(decode(&b).is_none(), "byte {i} changed");
        }
        let mut rng = sessiontree_testkit::Rng(41);
        for _ in 0..20_000 {
            let mut body = bytes[..bytes.len() - 32].to_vec();
            for _ in 0..1 + rng.pick(4) {
                let i = rng.pick(body.len());
                body[i] = rng.pick(256) as u8;
            }
            if rng.pick(3) == 0 {
                body.truncate(rng.pick(body.len()));
            }
            let sum = Sha256::digest(&body);
            body.extend_from_slice(&sum);
            if let Some((_, _, r, b)) = decode(&body) {
                assert!(b.is_none_or(|b| b.ids.windows(2).all(|w| w[0] < w[1])));
                assert!(r.selected <= r.lines.len());
                assert!(r.thinking.is_none_or(|i| i < r.lines.len()));
                assert!(r.model.is_none_or(|i| i < r.lines.len()));
            }
        }
    }

    /// A kept file that is whole but names lines that are not there (moved, cut, another
    /// id, past the end, inside a line) is a miss, never a panic or a wrong entry.
    #[test]
    fn a_kept_context_naming_lines_that_are_not_there_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let mut bytes = Vec::new();
        sessiontree_testkit::gen::generate(
            &sessiontree_testkit::gen::Shape {
                entries: 1_800,
                target_bytes: 5_200,
                seed: 5,
            },
            &mut bytes,
        )
        .unwrap();
        std::fs::write(&file, &bytes).unwrap();
        let keep = dir.path().join(DIR_NAME);
        std::fs::create_dir(&keep).unwrap();
        let canonical = std::fs::canonicalize(&file).unwrap();
        let loaded = crate::load(&file).unwrap();
        let plan = crate::context::plan(&loaded.tree, crate::LeafArg::Default);
        let honest = refs_of(&plan).expect("every entry has its line");
        assert!(honest.lines.len() > 2);
        let write = |refs: &Refs| {
            let key = FileKey::now(&file).unwrap();
            let b = encode(&key, canonical.as_os_str().as_encoded_bytes(), refs, None);
            std::fs::write(kept_path(&keep, &canonical), b).unwrap();
        };
        write(&honest);
        assert!(
            kept_context(&file, &keep).is_some(),
            "the honest file is read"
        );
        let size = bytes.len() as u64;
        type Forge = fn(&mut Line, u64);
        let forgeries: [(&str, Forge); 6] = [
            ("moved by a byte", |l, _| l.0.offset += 1),
            ("a byte shorter", |l, _| l.0.len -= 1),
            ("a byte longer", |l, _| l.0.len += 1),
            ("another id", |l, _| l.1 = Some(b"not-its-id".to_vec())),
            ("past the end", |l, size| l.0.offset = size + 10),
            ("near the end of numbers", |l, _| l.0.offset = u64::MAX - 3),
        ];
        for (what, forge) in forgeries {
            for i in [0, honest.lines.len() / 2, honest.lines.len() - 1] {
                let mut refs = Refs {
                    lines: honest.lines.clone(),
                    ..honest
                };
                forge(&mut refs.lines[i], size);
                write(&refs);
                assert!(kept_context(&file, &keep).is_none(), "{what} (line {i})");
            }
        }
        // Named under another file's path: not this file's.
        let key = FileKey::now(&file).unwrap();
        let b = encode(&key, b"/elsewhere.jsonl", &honest, None);
        std::fs::write(kept_path(&keep, &canonical), b).unwrap();
        assert!(kept_context(&file, &keep).is_none());
    }

    #[test]
    fn a_change_within_the_settle_time_is_too_recent_to_keep() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let mut k = key();
        k.ctime = (997, 999_999_999);
        assert!(k.settled_at(at));
        k.ctime = (998, 0);
        assert!(!k.settled_at(at));
        k.ctime = (1000, 0);
        assert!(!k.settled_at(at));
    }
}
