//! `push`: local session files into the archive.
//!
//! For each file the archive's latest version of this machine's copy is compared with the
//! file: when the SHA-256 of the file's first `length` bytes equals the hash the archive
//! keeps for its `length` bytes, only the bytes after them are sent (an append); when it
//! does not (the file was rewritten by a repair or a migration, or shrank), the whole file
//! becomes a new version, the old one kept. An unchanged file is recognised from the local
//! state (device, inode, size, mtime) without reading it, and still only when the archive
//! holds the hash recorded for it.
//!
//! What the archive holds is asked in one of two ways. The archive counts the changes to
//! each machine's copies (`sessiontree.machine_changes`, schema version 8: any write of a
//! version or removal of a copy, by whatever client) and every push transaction counts its
//! own and reads the count back. When the local state is in step with the count (every
//! change since it was saved was this state's own), the files whose stamps it records are
//! what the archive holds, and only the copies of the other files are asked for; else the
//! newest version of every copy of this machine is read and every file compared with it.
//!
//! Only complete lines are sent (a line still being written goes with the next push), and
//! with `--redact` every value that leaves the machine is redacted ([`crate::redact`]).
//!
//! Files go in batches, one transaction each: a push killed at any point leaves whole
//! batches, and the next push continues from what the archive holds. Bytes are uploaded
//! with `COPY` (binary) into a temporary table and moved with one `INSERT ... SELECT`
//! (PostgreSQL refuses `COPY FROM` into a table with row-level security).

use crate::grams::Gram;
use crate::local::{id_from_name, session_files, sessions_unsorted, sort_walked};
use crate::machine::{self, Machine};
use crate::redact::Redaction;
use crate::state::{FileStamp, State};
use crate::{hex, io_err, sha256, Archive, Error, Result};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use sessiontree::list::Acc;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A chunk holds at most this many bytes (cut after a newline when there is one).
pub const CHUNK: usize = 1 << 20;
/// A transaction carries about this many bytes, or this many files.
const BATCH_BYTES: usize = 16 << 20;
const BATCH_FILES: usize = 400;

pub struct PushOptions {
    pub agent_dir: PathBuf,
    /// Files or folders; empty: every session under `<agent dir>/sessions`.
    pub paths: Vec<PathBuf>,
    /// Names (or renames) this machine.
    pub machine_name: Option<String>,
    /// What is replaced by `[REDACTED]` in everything the push sends (see [`crate::redact`]).
    pub redact: Redaction,
}

#[derive(Debug, Default, Clone)]
pub struct PushReport {
    pub files: usize,
    pub unchanged: usize,
    pub created: usize,
    pub appended: usize,
    pub new_versions: usize,
    pub bytes_sent: u64,
    pub skipped: Vec<(PathBuf, String)>,
    /// How many sessions' copies the archive was asked about, when the local state was in
    /// step with it (`None`: every copy of this machine was read).
    pub asked: Option<usize>,
}

impl PushReport {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "files": self.files,
            "unchanged": self.unchanged,
            "created": self.created,
            "appended": self.appended,
            "newVersions": self.new_versions,
            "bytesSent": self.bytes_sent,
            "skipped": self.skipped.iter().map(|(p, r)| serde_json::json!({"path": p, "reason": r})).collect::<Vec<_>>(),
        })
    }
}

/// The copies asked for, by session id.
type Remotes = HashMap<String, Remote>;

/// The archive's latest version of one of this machine's copies.
#[derive(Clone, Debug)]
struct Remote {
    version_pk: i64,
    length: i64,
    hash: Vec<u8>,
    src_length: i64,
    redacted: bool,
    /// How many bytes of the version its usage sums describe (schema version 6).
    usage_length: Option<i64>,
}

/// Splits bytes into chunks of at most [`CHUNK`], cut after a newline where possible.
pub fn chunks(bytes: &[u8], base: i64) -> Vec<(i64, &[u8])> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let mut end = (pos + CHUNK).min(bytes.len());
        if end < bytes.len() {
            if let Some(nl) = memchr::memrchr(b'\n', &bytes[pos..end]) {
                end = pos + nl + 1;
            }
        }
        out.push((base + pos as i64, &bytes[pos..end]));
        pos = end;
    }
    out
}

enum Op {
    /// A new session, copy or version: all of `content`.
    Version { new_copy: bool },
    /// Append `content[from..]` to an existing version.
    Append { version_pk: i64, from: i64 },
}

struct Planned {
    path: PathBuf,
    stamp: FileStamp,
    session_id: String,
    cwd: String,
    created: String,
    rel_path: String,
    content: Vec<u8>,
    src_length: i64,
    hash: Vec<u8>,
    op: Op,
    info: serde_json::Value,
    /// The search ranges of the bytes this push sends (see [`crate::grams`]).
    grams: Vec<Gram>,
    /// The usage sums of all of `content` (kept beside the version, schema version 6).
    groups: Vec<crate::usage::Group>,
    /// Which of `groups` the archive does not have as they are (all, but for an append to a
    /// version whose sums describe its bytes: those that changed).
    changed: Vec<usize>,
    /// An append after which the version may hold groups that `groups` has not (a key that
    /// went, or sums that do not describe the version's bytes): those are deleted.
    clean: bool,
}

/// Listing info and search ranges of archived content; ranges only for lines at or after
/// `from` (a line boundary: the length of what the archive has), cut where the upload cuts
/// its chunks.
fn describe(content: &[u8], rel_path: &str, from: usize) -> (serde_json::Value, Vec<Gram>) {
    let mut acc = Acc::new(false);
    let from = from.min(content.len());
    for line in content[..from].split_inclusive(|&b| b == b'\n') {
        acc.feed(line.strip_suffix(b"\n").unwrap_or(line), None);
    }
    let starts: Vec<i64> = chunks(&content[from..], from as i64)
        .iter()
        .map(|c| c.0)
        .collect();
    let grams = crate::grams::build(content, from, &starts, |line, rows| {
        acc.feed(line, Some(rows))
    });
    let info = acc
        .into_info(Path::new(rel_path), 0.0)
        .map(|i| i.to_json())
        .unwrap_or(serde_json::Value::Null);
    (info, grams)
}

fn read_session_id(path: &Path) -> Option<(String, String, String)> {
    let h = sessiontree::folder::read_header(path)?;
    let ts = h
        .timestamp()
        .and_then(|t| t.as_str().map(|s| s.into_owned()))
        .unwrap_or_default();
    Some((h.id.clone(), h.cwd().unwrap_or_default(), ts))
}

/// Where Pi keeps a session of this cwd, under `sessions/`: `--encoded-cwd--/file.jsonl`.
fn rel_path_for(cwd: &str, path: &Path) -> String {
    let folder = sessiontree::dirs::encode_cwd(Path::new(cwd));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{folder}/{name}")
}

/// The local state's record of pushed files (see [`State::pushed`]).
type Pushed = std::collections::BTreeMap<String, (FileStamp, String, String)>;

/// What the reading side found for one file.
enum Item {
    Unchanged {
        path: PathBuf,
        stamp: Option<(FileStamp, String)>,
    },
    Skipped(PathBuf, String),
    Send(Box<Planned>),
    /// This many files unchanged, with nothing to record.
    UnchangedCount(usize),
}

/// Reads and prepares the files (hashing, listing info, search ranges and their trigrams),
/// handing each outcome to `out`. Runs beside the uploads, so that the client's work and
/// the server's overlap.
fn plan_files(
    files: Vec<(PathBuf, Option<FileStamp>)>,
    remote: &HashMap<String, Remote>,
    state: &Pushed,
    opts: &PushOptions,
    rkey: &str,
    out: std::sync::mpsc::SyncSender<Result<Item>>,
) {
    let mut seen_ids: HashMap<String, PathBuf> = HashMap::new();
    // Files unchanged since the state says, counted here and sent as one item: one
    // message per file through the channel (a wake-up of the other thread each) was a
    // fifth of a push after one append over 20,000 sessions.
    let mut quiet = 0usize;
    for (path, walked) in files {
        let item = plan_file(path, walked, remote, state, opts, rkey, &mut seen_ids);
        if let Ok(Item::Unchanged { stamp: None, .. }) = item {
            quiet += 1;
            continue;
        }
        let stop = item.is_err();
        if out.send(item).is_err() || stop {
            return;
        }
    }
    if quiet > 0 {
        let _ = out.send(Ok(Item::UnchangedCount(quiet)));
    }
}

/// Plans one file; `walked` is its stamp as the walk took it, if it did.
fn plan_file(
    path: PathBuf,
    walked: Option<FileStamp>,
    remote: &HashMap<String, Remote>,
    state: &Pushed,
    opts: &PushOptions,
    rkey: &str,
    seen_ids: &mut HashMap<String, PathBuf>,
) -> Result<Item> {
    let stamp = match stamp_now(&path, walked) {
        Ok(s) => s,
        Err(e) => return Ok(Item::Skipped(path, e.to_string())),
    };
    let redacting = !opts.redact.is_empty();
    // Unchanged since the last comparison, and the archive still holds that state:
    // decided from the file name's session id and a stat, without reading the file.
    if let (Some(r), Some((st, key, h))) = (
        id_from_name(&path).and_then(|id| remote.get(&opts.redact.text(&id))),
        state.get(path.to_string_lossy().as_ref()),
    ) {
        if *st == stamp
            && key == rkey
            && r.redacted == redacting
            && *h == hex(&r.hash)
            && r.src_length as u64 <= stamp.size
        {
            return Ok(Item::Unchanged { path, stamp: None });
        }
    }
    let Some((session_id, cwd, created)) = read_session_id(&path) else {
        return Ok(Item::Skipped(
            path,
            "not a session file (no valid header)".into(),
        ));
    };
    // What leaves the machine is redacted, the values that go with the bytes included.
    let (session_id, cwd_out, created) = (
        opts.redact.text(&session_id),
        opts.redact.text(&cwd),
        opts.redact.text(&created),
    );
    if let Some(first) = seen_ids.get(&session_id) {
        let why = format!("same session id as {} (pushed that one)", first.display());
        return Ok(Item::Skipped(path, why));
    }
    seen_ids.insert(session_id.clone(), path.clone());
    let r = remote.get(&session_id);
    let mut raw = std::fs::read(&path).map_err(io_err(&path))?;
    let stamp = std::fs::metadata(&path)
        .map(|m| FileStamp::of(&m))
        .unwrap_or(stamp);
    // Only complete lines: a line being written now would reach the other machines torn
    // (and a torn line could redact differently once complete). It goes with the push
    // after it is finished.
    let end = memchr::memrchr(b'\n', &raw).map(|i| i + 1).unwrap_or(0);
    if end == 0 {
        return Ok(Item::Skipped(path, "no complete line yet".into()));
    }
    raw.truncate(end);
    let content = if redacting {
        opts.redact.lines(&raw)
    } else {
        raw
    };
    let src_length = end as i64;
    let hash = sha256(&content);
    let rel_path = opts.redact.text(&rel_path_for(&cwd, &path));
    let op = match r {
        Some(r)
            if r.redacted == redacting
                && r.length >= 0
                && r.length as usize <= content.len()
                && sha256(&content[..r.length as usize]) == r.hash =>
        {
            if r.length as usize == content.len() {
                return Ok(Item::Unchanged {
                    path,
                    stamp: Some((stamp, hex(&hash))),
                });
            }
            Op::Append {
                version_pk: r.version_pk,
                from: r.length,
            }
        }
        Some(_) => Op::Version { new_copy: false },
        None => Op::Version { new_copy: true },
    };
    let from = match op {
        Op::Append { from, .. } => from as usize,
        Op::Version { .. } => 0,
    };
    let (info, grams) = describe(&content, &rel_path, from);
    let groups = crate::usage::groups(&crate::usage::rows(&content));
    // An append to a version whose sums describe its bytes: only the groups that changed
    // (an appended record, a leaf moved to another branch) are written; usually none.
    let (changed, clean) = match (&op, r) {
        (Op::Append { from, .. }, Some(r)) if r.usage_length == Some(*from) => {
            let old = crate::usage::groups(&crate::usage::rows(&content[..*from as usize]));
            let keys: HashMap<_, &crate::usage::Group> = old.iter().map(|g| (g.key(), g)).collect();
            let changed = (0..groups.len())
                .filter(|&i| keys.get(&groups[i].key()) != Some(&&groups[i]))
                .collect();
            let new: std::collections::HashSet<_> = groups.iter().map(|g| g.key()).collect();
            (changed, old.iter().any(|g| !new.contains(&g.key())))
        }
        (Op::Append { .. }, _) => ((0..groups.len()).collect(), true),
        (Op::Version { .. }, _) => ((0..groups.len()).collect(), false),
    };
    Ok(Item::Send(Box::new(Planned {
        path,
        stamp,
        session_id,
        cwd: cwd_out,
        created,
        rel_path,
        content,
        src_length,
        hash,
        op,
        info,
        grams,
        groups,
        changed,
        clean,
    })))
}

/// True when the state records `path` as pushed at the stamp it has now, with the same
/// redaction: while the state is in step with the archive ([`State::in_step`]), the archive
/// holds what the state records for it. Only files whose name carries their session id, as
/// the comparison with every copy requires too.
fn pushed_as_it_is(state: &State, path: &Path, walked: Option<&FileStamp>, rkey: &str) -> bool {
    let Some((st, key, _)) = state.pushed(path) else {
        return false;
    };
    let Ok(stamp) = stamp_now(path, walked.cloned()) else {
        return false;
    };
    *st == stamp && key == rkey && id_from_name(path).is_some()
}

/// A file's stamp: as the walk took it, else stat'ed now.
fn stamp_now(path: &Path, walked: Option<FileStamp>) -> std::io::Result<FileStamp> {
    walked.map_or_else(|| std::fs::metadata(path).map(|m| FileStamp::of(&m)), Ok)
}

/// Pushes the sessions.
pub fn push(archive: &mut Archive, opts: &PushOptions) -> Result<PushReport> {
    let mut me = machine::load_or_create(&opts.agent_dir, opts.machine_name.as_deref())?;
    // The machine's name leaves the machine too.
    me.name = opts.redact.text(&me.name);
    // The archive is asked for its count of this machine's changes while the local state is
    // read and the files listed; when the state is not in step with it, for the newest
    // version of every copy too, still beside the walk.
    let archive_id = archive.id.clone();
    let (asked, found) = std::thread::scope(|scope| {
        let read = scope.spawn(|| State::open(&opts.agent_dir, &archive_id));
        let asked = scope.spawn(|| -> Result<(i64, State, Option<Remotes>)> {
            let count = machine_changes(archive, &me)?;
            let state = read
                .join()
                .unwrap_or_else(|_| Err(Error::msg("push: the state thread panicked")))?;
            let every = if state.in_step(&me.id) == Some(count) {
                None
            } else {
                Some(remote_copies(archive, &me, None)?)
            };
            Ok((count, state, every))
        });
        // Under `sessions/` the files are sorted once the unchanged ones are left out.
        let files = if opts.paths.is_empty() {
            sessions_unsorted(&opts.agent_dir)
        } else {
            session_files(&opts.agent_dir, &opts.paths)
        };
        let asked = asked
            .join()
            .unwrap_or_else(|_| Err(Error::msg("push: the query thread panicked")));
        (asked, files)
    });
    let ((count, mut state, every), found) = (asked?, found?);
    let mut files = found.files;
    let rkey = opts.redact.local_key();
    let mut report = PushReport {
        files: files.len(),
        ..PushReport::default()
    };
    for l in found.links {
        report.skipped.push((
            l,
            "a symbolic link; not followed (push the file itself)".into(),
        ));
    }
    // Whether the state can be in step after this push: it was before, or every file was
    // compared with every copy.
    let whole = every.is_none() || opts.paths.is_empty();
    let sessions = opts.agent_dir.join("sessions");
    let (remote, planning_state) = match every {
        Some(every) => {
            if opts.paths.is_empty() {
                sort_walked(&sessions, &mut files);
            }
            (every, state.pushed.clone())
        }
        None => {
            files.retain(|(path, walked)| !pushed_as_it_is(&state, path, walked.as_ref(), &rkey));
            if opts.paths.is_empty() {
                sort_walked(&sessions, &mut files);
            }
            report.unchanged = report.files - files.len();
            // What the state says of the files left, for planning them beside the uploads
            // (which record into the state).
            let planning: Pushed = files
                .iter()
                .filter_map(|(p, _)| state.pushed.get_key_value(p.to_string_lossy().as_ref()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let ids: Vec<String> = files
                .iter()
                .filter_map(|(path, _)| read_session_id(path))
                .map(|(id, _, _)| opts.redact.text(&id))
                .collect();
            report.asked = Some(ids.len());
            let remote = if ids.is_empty() {
                HashMap::new()
            } else {
                remote_copies(archive, &me, Some(&ids))?
            };
            (remote, planning)
        }
    };
    // The count after each transaction of this push.
    let mut counts: Vec<Option<i64>> = Vec::new();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Item>>(64);
    // A second connection uploads every other full batch: the server's work (index
    // entries, TOAST, WAL) is most of a large push and one backend uses one core.
    let (to_helper, helper_rx) = std::sync::mpsc::sync_channel::<Vec<Planned>>(0);
    let (helper_done, done_rx) = std::sync::mpsc::channel::<Done>();
    let record = |state: &mut State, counts: &mut Vec<Option<i64>>, done: Done| -> Result<()> {
        if !done.files.is_empty() {
            counts.push(done.count);
        }
        for (path, stamp, hash) in done.files {
            state.set_pushed(&path, stamp, &rkey, &hash);
        }
        state.save()
    };
    std::thread::scope(|scope| -> Result<()> {
        scope.spawn(|| plan_files(files, &remote, &planning_state, opts, &rkey, tx));
        let url = archive.url.clone();
        let (me2, rkey2) = (me.clone(), rkey.clone());
        let mut helper = Some((to_helper, helper_rx, helper_done));
        let mut helper_thread = None;
        let mut helper_to: Option<std::sync::mpsc::SyncSender<Vec<Planned>>> = None;
        let mut batch: Vec<Planned> = Vec::new();
        let mut batch_bytes = 0usize;
        // On an error the receiver is dropped, which stops the reading side.
        for item in rx {
            match item? {
                Item::Unchanged { path, stamp } => {
                    report.unchanged += 1;
                    if let Some((stamp, hash)) = stamp {
                        state.set_pushed(&path, stamp, &rkey, &hash);
                    }
                }
                Item::UnchangedCount(n) => report.unchanged += n,
                Item::Skipped(path, why) => report.skipped.push((path, why)),
                Item::Send(p) => {
                    let from = match p.op {
                        Op::Append { from, .. } => {
                            report.appended += 1;
                            from as usize
                        }
                        Op::Version { new_copy: true } => {
                            report.created += 1;
                            0
                        }
                        Op::Version { new_copy: false } => {
                            report.new_versions += 1;
                            0
                        }
                    };
                    report.bytes_sent += (p.content.len() - from) as u64;
                    batch_bytes += p.content.len() - from;
                    batch.push(*p);
                    if batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_FILES {
                        batch_bytes = 0;
                        // The helper starts with the second full batch, when the push is
                        // large enough to be worth a connection.
                        if let Some((to, from, done)) = helper.take() {
                            let (url, me2, rkey2) = (url.clone(), me2.clone(), rkey2.clone());
                            helper_thread = Some(scope.spawn(move || -> Result<()> {
                                let mut ar = Archive::open(&url)?;
                                for mut b in from {
                                    let d = flush(&mut ar, &me2, &rkey2, &mut b)?;
                                    if done.send(d).is_err() {
                                        break;
                                    }
                                }
                                Ok(())
                            }));
                            let d = flush(archive, &me, &rkey, &mut batch)?;
                            record(&mut state, &mut counts, d)?;
                            helper_to = Some(to);
                        } else {
                            match helper_to
                                .as_ref()
                                .map(|t| t.try_send(std::mem::take(&mut batch)))
                            {
                                Some(Ok(())) => {}
                                Some(Err(std::sync::mpsc::TrySendError::Full(b)))
                                | Some(Err(std::sync::mpsc::TrySendError::Disconnected(b))) => {
                                    batch = b;
                                    let d = flush(archive, &me, &rkey, &mut batch)?;
                                    record(&mut state, &mut counts, d)?;
                                }
                                None => unreachable!("the helper is started first"),
                            }
                        }
                        while let Ok(d) = done_rx.try_recv() {
                            record(&mut state, &mut counts, d)?;
                        }
                    }
                }
            }
        }
        let d = flush(archive, &me, &rkey, &mut batch)?;
        record(&mut state, &mut counts, d)?;
        drop(helper_to);
        if let Some(h) = helper_thread {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::msg("push: the upload thread panicked")));
            // What the helper committed is recorded even when it failed later.
            while let Ok(d) = done_rx.try_recv() {
                record(&mut state, &mut counts, d)?;
            }
            r?;
        }
        Ok(())
    })?;
    // In step again when this push's transactions were the changes right after the count
    // it started from, one each: no other writer's change came between (every change is
    // counted, and a count is taken under the row's lock).
    let mut got: Vec<i64> = counts.iter().filter_map(|c| *c).collect();
    got.sort_unstable();
    let next = counts.len() == got.len() && got.iter().zip(count + 1..).all(|(g, want)| *g == want);
    state.set_in_step(&me.id, (whole && next).then(|| count + got.len() as i64));
    state.save()?;
    Ok(report)
}

/// Registers this machine and reads the archive's count of changes to its copies (0 before
/// the first).
fn machine_changes(archive: &mut Archive, me: &Machine) -> Result<i64> {
    let sql = format!(
        "WITH registered AS ({} RETURNING 1)
         SELECT coalesce((SELECT n FROM sessiontree.machine_changes
                          WHERE owner = current_user AND machine = $1::text::uuid), 0)",
        machine::REGISTER
    );
    let row = archive
        .client
        .query_typed_one(&sql, &[(&me.id, Type::TEXT), (&me.name, Type::TEXT)])?;
    Ok(row.get(0))
}

/// The archive's latest version of each of this machine's copies, or of the copies of the
/// sessions `only` names.
fn remote_copies(
    archive: &mut Archive,
    me: &Machine,
    only: Option<&[String]>,
) -> Result<HashMap<String, Remote>> {
    let sql = format!(
        // DISTINCT ON, not a LATERAL subquery per copy: under row-level security the
        // latter costs a policy check per probe (350 ms instead of 20 for 2,000 copies).
        // Only rows of the user's own, tied together: a version another role hung under
        // this copy is not this machine's copy (whatever the policies let through).
        "SELECT DISTINCT ON (v.copy_pk) s.session_id, v.pk, v.length, v.hash, v.src_length,
                v.redaction IS NOT NULL, v.usage_length
         FROM sessiontree.versions v
         JOIN sessiontree.copies c
              ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
         JOIN sessiontree.sessions s ON s.pk = c.session_pk AND s.owner = c.owner
         WHERE c.machine = $1::text::uuid AND c.owner = current_user
           AND s.owner = current_user AND v.owner = current_user
           AND v.session_pk = c.session_pk {}
         ORDER BY v.copy_pk, v.seq DESC",
        if only.is_some() {
            "AND s.session_id = ANY ($2::text[])"
        } else {
            ""
        }
    );
    let rows = match only {
        Some(ids) => archive
            .client
            .query_typed(&sql, &[(&me.id, Type::TEXT), (&ids, Type::TEXT_ARRAY)])?,
        None => archive.client.query_typed(&sql, &[(&me.id, Type::TEXT)])?,
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.get::<_, String>(0),
                Remote {
                    version_pk: r.get(1),
                    length: r.get(2),
                    hash: r.get(3),
                    src_length: r.get(4),
                    redacted: r.get(5),
                    usage_length: r.get(6),
                },
            )
        })
        .collect())
}

/// What a transaction committed: each file as the local state records it, and the archive's
/// count of this machine's changes after it (`None`: no transaction, or not counted).
#[derive(Default)]
struct Done {
    files: Vec<(PathBuf, FileStamp, String)>,
    count: Option<i64>,
}

/// Uploads a batch in one transaction; the files it committed.
fn flush(
    archive: &mut Archive,
    me: &Machine,
    rkey: &str,
    batch: &mut Vec<Planned>,
) -> Result<Done> {
    if batch.is_empty() {
        return Ok(Done::default());
    }
    let sent: usize = batch
        .iter()
        .map(|p| match p.op {
            Op::Append { from, .. } => p.content.len() - from as usize,
            Op::Version { .. } => p.content.len(),
        })
        .sum();
    let gram_count: usize = batch.iter().map(|p| p.grams.len()).sum();
    if sent < (1 << 20)
        && gram_count <= 200
        && batch.iter().all(|p| matches!(p.op, Op::Append { .. }))
    {
        return append_small(archive, me, batch);
    }
    // That the version is redacted, not by what: a digest of the patterns would confirm a
    // guessed secret to anyone who reads the version.
    let redaction: Option<&str> = (!rkey.is_empty()).then_some("redacted");
    let mut tx = archive.client.transaction()?;
    // Sessions, copies and versions for the whole batch in a few statements (one round
    // trip per file and statement was most of the time of a first push on a busy machine).
    let new: Vec<&Planned> = batch
        .iter()
        .filter(|p| matches!(p.op, Op::Version { .. }))
        .collect();
    let mut made: HashMap<&str, (i64, i64)> = HashMap::new(); // session id -> (version, session)
    if !new.is_empty() {
        let ids: Vec<&str> = new.iter().map(|p| p.session_id.as_str()).collect();
        let cwds: Vec<&str> = new.iter().map(|p| p.cwd.as_str()).collect();
        let created: Vec<&str> = new.iter().map(|p| p.created.as_str()).collect();
        let rels: Vec<&str> = new.iter().map(|p| p.rel_path.as_str()).collect();
        let lens: Vec<i64> = new.iter().map(|p| p.content.len() as i64).collect();
        let hashes: Vec<&[u8]> = new.iter().map(|p| p.hash.as_slice()).collect();
        let srcs: Vec<i64> = new.iter().map(|p| p.src_length).collect();
        let infos: Vec<String> = new.iter().map(|p| p.info.to_string()).collect();
        let rows = tx.query_typed(
            "WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
                        WITH ORDINALITY AS u(sid, cwd, created, n)),
             s AS (INSERT INTO sessiontree.sessions (session_id, cwd, created)
                   SELECT sid, cwd, created FROM u
                   ON CONFLICT (owner, session_id) DO UPDATE SET cwd = EXCLUDED.cwd
                   RETURNING pk, session_id)
             SELECT u.sid, s.pk FROM u JOIN s ON s.session_id = u.sid ORDER BY u.n",
            &[
                (&ids, Type::TEXT_ARRAY),
                (&cwds, Type::TEXT_ARRAY),
                (&created, Type::TEXT_ARRAY),
            ],
        )?;
        let spks: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
        if spks.len() != new.len() {
            return Err(Error::msg(
                "archive: a session of this push was not recorded",
            ));
        }
        let rows = tx.query_typed(
            "INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
             SELECT s, $3::text::uuid, r FROM unnest($1::int8[], $2::text[]) AS u(s, r)
             ON CONFLICT (session_pk, machine) DO UPDATE SET rel_path = EXCLUDED.rel_path
             RETURNING session_pk, pk",
            &[
                (&spks, Type::INT8_ARRAY),
                (&rels, Type::TEXT_ARRAY),
                (&me.id, Type::TEXT),
            ],
        )?;
        let cpk: HashMap<i64, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let cpks: Vec<i64> = spks
            .iter()
            .map(|s| cpk.get(s).copied())
            .collect::<Option<_>>()
            .ok_or_else(|| Error::msg("archive: a copy of this push was not recorded"))?;
        let rows = tx.query_typed(
            "INSERT INTO sessiontree.versions
                 (copy_pk, session_pk, seq, length, hash, src_length, redaction, info,
                  usage_length)
             SELECT c, s, (SELECT coalesce(max(seq), 0) + 1 FROM sessiontree.versions
                           WHERE copy_pk = u.c),
                    len, hash, src, $7, info::jsonb, len
             FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::bytea[], $5::int8[], $6::text[])
                  AS u(c, s, len, hash, src, info)
             RETURNING session_pk, pk",
            &[
                (&cpks, Type::INT8_ARRAY),
                (&spks, Type::INT8_ARRAY),
                (&lens, Type::INT8_ARRAY),
                (&hashes, Type::BYTEA_ARRAY),
                (&srcs, Type::INT8_ARRAY),
                (&infos, Type::TEXT_ARRAY),
                (&redaction, Type::TEXT),
            ],
        )?;
        let vpk: HashMap<i64, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        for (p, s) in new.iter().zip(&spks) {
            let v = vpk
                .get(s)
                .ok_or_else(|| Error::msg("archive: a version of this push was not recorded"))?;
            made.insert(p.session_id.as_str(), (*v, *s));
        }
    }
    let grown: Vec<&Planned> = batch
        .iter()
        .filter(|p| matches!(p.op, Op::Append { .. }))
        .collect();
    let mut grew: HashMap<i64, i64> = HashMap::new(); // version -> session
    if !grown.is_empty() {
        let u = Appended::of(grown.iter().copied());
        // Conditional on the length this push saw: two pushes racing cannot both append.
        let rows = tx.query_typed(
            "UPDATE sessiontree.versions v
             SET length = u.len, hash = u.hash, src_length = u.src, info = u.info::jsonb,
                 usage_length = u.len, updated_at = now()
             FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::bytea[], $5::int8[], $6::text[])
                  AS u(pk, old, len, hash, src, info)
             WHERE v.pk = u.pk AND v.length = u.old
             RETURNING v.pk, v.session_pk",
            &u.params(),
        )?;
        grew = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        if let Some(p) = grown
            .iter()
            .zip(&u.vpks)
            .find(|(_, v)| !grew.contains_key(v))
        {
            return Err(Error::msg(format!(
                "{}: the archive's copy changed during this push (another push from this machine?); push again",
                p.0.path.display()
            )));
        }
    }
    let mut rows: Vec<(i64, i64, i64, &[u8])> = Vec::new();
    let mut gram_rows: Vec<(i64, i64, &Gram)> = Vec::new();
    let mut sums = crate::usage::SumColumns::default();
    let mut cleaned: Vec<i64> = Vec::new();
    for p in batch.iter() {
        let (vpk, spk, from) = match p.op {
            Op::Version { .. } => {
                let (v, s) = made[p.session_id.as_str()];
                (v, s, 0i64)
            }
            Op::Append { version_pk, from } => (version_pk, grew[&version_pk], from),
        };
        if matches!(p.op, Op::Append { .. }) && (p.clean || !p.changed.is_empty()) {
            // Its groups are written whole again.
            cleaned.push(vpk);
            sums.add(vpk, spk, &p.groups);
        } else {
            sums.add(vpk, spk, p.changed.iter().map(|&i| &p.groups[i]));
        }
        for (off, data) in chunks(&p.content[from as usize..], from) {
            rows.push((vpk, spk, off, data));
        }
        for g in &p.grams {
            gram_rows.push((vpk, spk, g));
        }
    }
    let small = rows.iter().map(|r| r.3.len()).sum::<usize>() < (1 << 20) && gram_rows.len() <= 200;
    if small {
        // A few rows (a push after an append): two plain statements, no temporary tables.
        let cols = (
            rows.iter().map(|r| r.0).collect::<Vec<i64>>(),
            rows.iter().map(|r| r.1).collect::<Vec<i64>>(),
            rows.iter().map(|r| r.2).collect::<Vec<i64>>(),
            rows.iter().map(|r| r.3).collect::<Vec<&[u8]>>(),
        );
        tx.execute_typed(
            "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
             SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::bytea[])",
            &[
                (&cols.0, Type::INT8_ARRAY),
                (&cols.1, Type::INT8_ARRAY),
                (&cols.2, Type::INT8_ARRAY),
                (&cols.3, Type::BYTEA_ARRAY),
            ],
        )?;
        if !gram_rows.is_empty() {
            let g = crate::grams::Columns::of(gram_rows.iter().map(|r| (r.0, r.1, r.2)));
            tx.execute_typed(
                "INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, oldest, tri)
                 SELECT v, s, o, l, n, d, tri::int2[]
                 FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::float8[],
                             $6::float8[], $7::text[]) AS u(v, s, o, l, n, d, tri)",
                &g.params(),
            )?;
        }
    } else {
        copy_rows(&mut tx, &rows, &gram_rows)?;
    }
    if !cleaned.is_empty() {
        tx.execute_typed(
            "DELETE FROM sessiontree.usage_sums WHERE version_pk = ANY ($1)",
            &[(&cleaned, Type::INT8_ARRAY)],
        )?;
    }
    if !sums.is_empty() {
        tx.execute_typed(
            &crate::usage::insert_sums(1, "g.s", "current_user", ""),
            &sums.params(),
        )?;
    }
    let count: Option<i64> = tx
        .query_typed_one(
            "SELECT sessiontree.count_change($1::text::uuid)",
            &[(&me.id, Type::TEXT)],
        )?
        .get(0);
    tx.commit()?;
    Ok(Done {
        files: batch
            .drain(..)
            .map(|p| (p.path, p.stamp, hex(&p.hash)))
            .collect(),
        count,
    })
}

/// The columns of the conditional version update of an append (`$1`..`$6`: version, length
/// the push saw, new length, hash, source length, listing), from the planned appends.
struct Appended<'a> {
    vpks: Vec<i64>,
    froms: Vec<i64>,
    lens: Vec<i64>,
    hashes: Vec<&'a [u8]>,
    srcs: Vec<i64>,
    infos: Vec<String>,
}

impl<'a> Appended<'a> {
    fn of(planned: impl Iterator<Item = &'a Planned>) -> Self {
        let mut u = Appended {
            vpks: Vec::new(),
            froms: Vec::new(),
            lens: Vec::new(),
            hashes: Vec::new(),
            srcs: Vec::new(),
            infos: Vec::new(),
        };
        for p in planned {
            if let Op::Append { version_pk, from } = p.op {
                u.vpks.push(version_pk);
                u.froms.push(from);
                u.lens.push(p.content.len() as i64);
                u.hashes.push(p.hash.as_slice());
                u.srcs.push(p.src_length);
                u.infos.push(p.info.to_string());
            }
        }
        u
    }

    fn params(&self) -> [(&(dyn postgres::types::ToSql + Sync), Type); 6] {
        [
            (&self.vpks, Type::INT8_ARRAY),
            (&self.froms, Type::INT8_ARRAY),
            (&self.lens, Type::INT8_ARRAY),
            (&self.hashes, Type::BYTEA_ARRAY),
            (&self.srcs, Type::INT8_ARRAY),
            (&self.infos, Type::TEXT_ARRAY),
        ]
    }
}

/// The keys of usage groups as columns: version, provider, model, day, in_all, in_branch.
#[derive(Default)]
struct GroupKeys<'a>(
    Vec<i64>,
    Vec<&'a str>,
    Vec<&'a str>,
    Vec<&'a str>,
    Vec<bool>,
    Vec<bool>,
);

/// Appends to a few versions (the push after an entry was added) in one statement, so one
/// round trip: the conditional version update, the new chunks and the new search ranges, the
/// latter two only for the versions the update matched.
fn append_small(archive: &mut Archive, me: &Machine, batch: &mut Vec<Planned>) -> Result<Done> {
    let mut u = Appended::of(batch.iter());
    let mut ch: (Vec<i64>, Vec<i64>, Vec<&[u8]>) = Default::default();
    for (p, (v, from)) in batch.iter().zip(u.vpks.iter().zip(&u.froms)) {
        for (off, data) in chunks(&p.content[*from as usize..], *from) {
            ch.0.push(*v);
            ch.1.push(off);
            ch.2.push(data);
        }
    }
    // The session is the version's (joined below): 0 stands for it here.
    let g = crate::grams::Columns::of(
        batch
            .iter()
            .zip(&u.vpks)
            .flat_map(|(p, v)| p.grams.iter().map(|g| (*v, 0, g))),
    );
    let rest: [(&(dyn postgres::types::ToSql + Sync), Type); 9] = [
        (&ch.0, Type::INT8_ARRAY),
        (&ch.1, Type::INT8_ARRAY),
        (&ch.2, Type::BYTEA_ARRAY),
        (&g.v, Type::INT8_ARRAY),
        (&g.off, Type::INT8_ARRAY),
        (&g.len, Type::INT8_ARRAY),
        (&g.newest, Type::FLOAT8_ARRAY),
        (&g.oldest, Type::FLOAT8_ARRAY),
        (&g.tri, Type::TEXT_ARRAY),
    ];
    let mut sums = crate::usage::SumColumns::default();
    // The versions that may hold groups they no longer have, with every key they have now.
    let mut clean: Vec<i64> = Vec::new();
    let mut keys = GroupKeys::default();
    for (p, v) in batch.iter().zip(&u.vpks) {
        // The session is the version's (joined below): 0 stands for it here.
        sums.add(*v, 0, p.changed.iter().map(|&i| &p.groups[i]));
        if p.clean {
            clean.push(*v);
            for g in &p.groups {
                keys.0.push(*v);
                keys.1.push(&g.provider);
                keys.2.push(&g.model);
                keys.3.push(&g.day);
                keys.4.push(g.in_all);
                keys.5.push(g.in_branch);
            }
        }
    }
    let sums_params = sums.params();
    let clean_params: [(&(dyn postgres::types::ToSql + Sync), Type); 7] = [
        (&clean, Type::INT8_ARRAY),
        (&keys.0, Type::INT8_ARRAY),
        (&keys.1, Type::TEXT_ARRAY),
        (&keys.2, Type::TEXT_ARRAY),
        (&keys.3, Type::TEXT_ARRAY),
        (&keys.4, Type::BOOL_ARRAY),
        (&keys.5, Type::BOOL_ARRAY),
    ];
    // Usually an append changes no usage group (a user message has none): then the
    // statement is the one without them (a third of its planning).
    let mut params = [&u.params()[..], &rest[..]].concat();
    // The count of this machine's changes: this statement's own, read back.
    params.push((&me.id, Type::TEXT));
    let k = 17 + crate::usage::SUM_PARAMS;
    let usage_sql = if sums.is_empty() && clean.is_empty() {
        String::new()
    } else {
        params.extend_from_slice(&sums_params);
        params.extend_from_slice(&clean_params);
        format!(
            ",
         -- The groups that changed, and (where keys may have gone) the ones that went:
         -- never the same rows.
         us AS ({} {}),
         ud AS (DELETE FROM sessiontree.usage_sums x USING up
                WHERE x.version_pk = up.pk AND x.version_pk = ANY (${}::int8[])
                  AND NOT EXISTS (
                      SELECT 1 FROM unnest(${}::int8[], ${}::text[], ${}::text[], ${}::text[],
                                           ${}::bool[], ${}::bool[]) AS k(v, p, m, d, a, b)
                      WHERE k.v = x.version_pk AND k.p = x.provider AND k.m = x.model
                        AND k.d = x.day AND k.a = x.in_all AND k.b = x.in_branch))",
            crate::usage::insert_sums(
                17,
                "up.session_pk",
                "current_user",
                "JOIN up ON up.pk = g.v"
            ),
            crate::usage::SUMS_UPSERT,
            k,
            k + 1,
            k + 2,
            k + 3,
            k + 4,
            k + 5,
            k + 6,
        )
    };
    // Conditional on the length this push saw: two pushes racing cannot both append.
    let sql = format!(
        "WITH u AS (SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::bytea[],
                                         $5::int8[], $6::text[]) AS u(pk, old, len, hash, src, info)),
         up AS (UPDATE sessiontree.versions v
                SET length = u.len, hash = u.hash, src_length = u.src, info = u.info::jsonb,
                    usage_length = u.len, updated_at = now()
                FROM u WHERE v.pk = u.pk AND v.length = u.old
                RETURNING v.pk, v.session_pk),
         ch AS (INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                SELECT c.v, up.session_pk, c.o, c.d
                FROM unnest($7::int8[], $8::int8[], $9::bytea[]) AS c(v, o, d)
                JOIN up ON up.pk = c.v),
         gr AS (INSERT INTO sessiontree.grams
                    (version_pk, session_pk, off, len, newest, oldest, tri)
                SELECT t.v, up.session_pk, t.o, t.l, t.n, t.d, t.tri::int2[]
                FROM unnest($10::int8[], $11::int8[], $12::int8[], $13::float8[], $14::float8[],
                            $15::text[]) AS t(v, o, l, n, d, tri)
                JOIN up ON up.pk = t.v){usage_sql}
         SELECT sessiontree.count_change($16::text::uuid), array(SELECT pk FROM up)"
    );
    let row = archive.client.query_typed_one(&sql, &params)?;
    let count: Option<i64> = row.get(0);
    let vpks = std::mem::take(&mut u.vpks);
    let matched: std::collections::HashSet<i64> = row.get::<_, Vec<i64>>(1).into_iter().collect();
    let mut done = Vec::new();
    let mut changed = None;
    for (p, v) in batch.drain(..).zip(&vpks) {
        if matched.contains(v) {
            done.push((p.path, p.stamp, hex(&p.hash)));
        } else if changed.is_none() {
            changed = Some(p.path);
        }
    }
    // The others were committed whole (each version with its own chunks and ranges); this
    // one was left alone, and the next push compares it again.
    if let Some(path) = changed {
        return Err(Error::msg(format!(
            "{}: the archive's copy changed during this push (another push from this machine?); push again",
            path.display()
        )));
    }
    Ok(Done { files: done, count })
}

/// Many rows: binary COPY into temporary tables, then one INSERT ... SELECT each
/// (PostgreSQL refuses COPY FROM into a table with row-level security).
fn copy_rows(
    tx: &mut postgres::Transaction,
    rows: &[(i64, i64, i64, &[u8])],
    gram_rows: &[(i64, i64, &Gram)],
) -> Result<()> {
    tx.batch_execute(
        "CREATE TEMP TABLE IF NOT EXISTS st_chunks
             (version_pk bigint, session_pk bigint, off bigint, data bytea) ON COMMIT DELETE ROWS;
         ALTER TABLE st_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
         CREATE TEMP TABLE IF NOT EXISTS st_grams
             (version_pk bigint, session_pk bigint, off bigint, len bigint, newest float8,
              oldest float8, tri int2[]) ON COMMIT DELETE ROWS;
         ALTER TABLE st_grams ALTER COLUMN tri SET STORAGE EXTERNAL;",
    )?;
    {
        let w = tx.copy_in(
            "COPY st_chunks (version_pk, session_pk, off, data) FROM STDIN (FORMAT binary)",
        )?;
        let mut w = BinaryCopyInWriter::new(w, &[Type::INT8, Type::INT8, Type::INT8, Type::BYTEA]);
        for (v, s, o, d) in rows {
            w.write(&[v, s, o, d])?;
        }
        w.finish()?;
    }
    {
        let w = tx.copy_in(
            "COPY st_grams (version_pk, session_pk, off, len, newest, oldest, tri) FROM STDIN (FORMAT binary)",
        )?;
        let mut w = BinaryCopyInWriter::new(
            w,
            &[
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::FLOAT8,
                Type::FLOAT8,
                Type::INT2_ARRAY,
            ],
        );
        for (v, s, g) in gram_rows {
            w.write(&[v, s, &g.off, &g.len, &g.newest, &g.oldest, &g.tri])?;
        }
        w.finish()?;
    }
    tx.batch_execute(
        "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
             SELECT version_pk, session_pk, off, data FROM st_chunks ORDER BY version_pk, off;
         INSERT INTO sessiontree.grams (version_pk, session_pk, off, len, newest, oldest, tri)
             SELECT version_pk, session_pk, off, len, newest, oldest, tri FROM st_grams;",
    )?;
    Ok(())
}
