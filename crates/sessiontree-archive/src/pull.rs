//! `pull`: the archive's sessions into the local session folders.
//!
//! * Copies are grouped by owner and session id: another owner's session is never merged
//!   into the user's, even under the same id.
//! * A session with no local file is created whole (temporary file, fsync, link into place:
//!   [`sessiontree::store::create_exclusive`]) from its most recently pushed copy, with the
//!   other machines' copies merged in (see [`crate::merge`]): the user's own in Pi's folder
//!   for its cwd, another owner's in `sessions/--shared--/<owner>/`, where Pi never
//!   resumes it. Names come from the archive only through [`crate::local::safe_name`].
//! * Only complete lines are written; a copy that claims more bytes than it has, or whose
//!   bytes do not match its hash, is reported and the other sessions are pulled.
//! * A session with a local file is only ever appended to, under the session's writer lock
//!   (a session whose lock is held is skipped and reported): when the local file is a byte
//!   prefix of another machine's copy it is fast-forwarded; when the copies diverged, the
//!   missing entries are appended as a branch and the leaf is put back.
//! * Every append is journaled first (`<file>.sessiontree-pull`: the length the file had and
//!   the bytes to add, fsynced), so a pull killed in the middle of a write completes that
//!   write on the next run instead of leaving a torn line. A journal is replayed only when
//!   it is this user's own plain file and the file still starts with the bytes it was
//!   made for.

use crate::local;
use crate::machine;
use crate::merge::{self, Plan};
use crate::state::State;
use crate::{io_err, sha256, Archive, Error, Result};
use sessiontree::store::WriterLock;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct PullOptions {
    pub agent_dir: PathBuf,
    /// Put every pulled session in this folder instead of Pi's per-cwd folders.
    pub session_dir: Option<PathBuf>,
    /// Only these session ids (all when empty).
    pub sessions: Vec<String>,
}

#[derive(Debug, Default, Clone)]
pub struct PullReport {
    pub sessions: usize,
    pub up_to_date: usize,
    pub created: Vec<PathBuf>,
    pub fast_forwarded: Vec<PathBuf>,
    /// (file, entries appended as a branch)
    pub branched: Vec<(PathBuf, usize)>,
    pub bytes_written: u64,
    pub skipped: Vec<Skipped>,
}

/// A session a pull did not write, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub session: String,
    /// Whose it is, when it is not the puller's own.
    pub owner: Option<String>,
    pub reason: String,
}

impl Skipped {
    fn of(who: &Who, reason: String) -> Skipped {
        Skipped {
            session: who.id.clone(),
            owner: who.owner.clone(),
            reason,
        }
    }
}

/// A session as a pull names it: its id, and its owner when that is not the puller.
struct Who {
    id: String,
    owner: Option<String>,
}

impl std::fmt::Display for Skipped {
    /// `ID`, or `ID (of "OWNER")` for another owner's session.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.owner {
            None => f.write_str(&self.session),
            Some(o) => write!(f, "{} (of {o:?})", self.session),
        }
    }
}

impl PullReport {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "sessions": self.sessions,
            "upToDate": self.up_to_date,
            "created": self.created,
            "fastForwarded": self.fast_forwarded,
            "branched": self.branched.iter().map(|(p, n)| serde_json::json!({"path": p, "entries": n})).collect::<Vec<_>>(),
            "bytesWritten": self.bytes_written,
            "skipped": self.skipped.iter().map(|s| serde_json::json!({"session": s.session, "owner": s.owner, "reason": s.reason})).collect::<Vec<_>>(),
        })
    }
}

/// One machine's copy of a session, at its latest version.
#[derive(Clone, Debug)]
pub struct Copy {
    pub session_id: String,
    pub session_pk: i64,
    pub owner: String,
    pub machine: String,
    pub machine_name: String,
    pub rel_path: String,
    pub version_pk: i64,
    pub length: i64,
    pub hash: Vec<u8>,
    pub redacted: bool,
}

/// Every copy the current role may read, newest first within a session. Only rows that
/// belong together: a version of the copy's owner under the copy's session (a version or
/// chunk another role hung under someone's copy is not that copy, whatever the policies
/// let through).
pub fn copies(archive: &mut Archive, only: &[String]) -> Result<Vec<Copy>> {
    let filter: Option<Vec<String>> = (!only.is_empty()).then(|| only.to_vec());
    let rows = archive.client.query(
        "SELECT * FROM (
             SELECT DISTINCT ON (v.copy_pk) s.session_id, s.owner::text, c.machine::text,
                    coalesce(m.name, c.machine::text), c.rel_path, v.pk, v.length, v.hash,
                    v.redaction IS NOT NULL, v.updated_at, s.pk AS spk
             FROM sessiontree.versions v
             JOIN sessiontree.copies c
                  ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
             JOIN sessiontree.sessions s ON s.pk = c.session_pk AND s.owner = c.owner
             LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner
             WHERE ($1::text[] IS NULL OR s.session_id = ANY ($1))
               AND c.owner = s.owner AND v.owner = s.owner AND v.session_pk = s.pk
             ORDER BY v.copy_pk, v.seq DESC) x
         ORDER BY 1, updated_at DESC, 6 DESC",
        &[&filter],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| Copy {
            session_id: r.get(0),
            owner: r.get(1),
            machine: r.get(2),
            machine_name: r.get(3),
            rel_path: r.get(4),
            version_pk: r.get(5),
            length: r.get(6),
            hash: r.get(7),
            redacted: r.get(8),
            session_pk: r.get(10),
        })
        .collect())
}

/// A version's bytes, checked against its length and hash. The claimed length sizes
/// nothing: the bytes are collected as they arrive, and a copy whose chunks do not add up
/// to exactly its length and hash is an error (for that session only).
pub fn fetch(archive: &mut Archive, c: &Copy) -> Result<Vec<u8>> {
    let bad = |why: String| {
        Error::msg(format!(
            "archive: session {:?} of {:?} from {:?}: {why}",
            c.session_id, c.owner, c.machine_name
        ))
    };
    if c.length < 0 {
        return Err(bad(format!("claims a length of {}", c.length)));
    }
    let rows = archive.client.query(
        "SELECT off, data FROM sessiontree.chunks
         WHERE version_pk = $1 AND off < $2 AND session_pk = $3 AND owner::text = $4
         ORDER BY off",
        &[&c.version_pk, &c.length, &c.session_pk, &c.owner],
    )?;
    let want = c.length as u64;
    let mut out = Vec::new();
    for r in rows {
        let off: i64 = r.get(0);
        let data: &[u8] = r.get(1);
        if off != out.len() as i64 {
            return Err(bad(format!(
                "chunk at {off} where {} was expected",
                out.len()
            )));
        }
        let room = (want - out.len() as u64) as usize;
        out.extend_from_slice(&data[..data.len().min(room)]);
    }
    if out.len() as u64 != want || sha256(&out) != c.hash {
        return Err(bad(format!(
            "the stored bytes ({}) do not match its length ({want}) and hash",
            out.len()
        )));
    }
    Ok(out)
}

/// The local sessions pull compares with: the user's own (by session id), and other
/// owners' under `--shared--/<owner>/` (by owner folder and session id).
struct Local {
    own: HashMap<String, PathBuf>,
    shared: HashMap<(String, String), PathBuf>,
}

fn base_dir(opts: &PullOptions) -> PathBuf {
    match &opts.session_dir {
        Some(d) => d.clone(),
        None => opts.agent_dir.join("sessions"),
    }
}

fn local_sessions(opts: &PullOptions) -> Result<Local> {
    let files = match &opts.session_dir {
        Some(d) => {
            let mut v = sessiontree::list::jsonl_files(d);
            v.sort();
            v
        }
        None => local::session_files(&opts.agent_dir, &[])?.paths(),
    };
    let mut own = HashMap::new();
    for f in files {
        if let Some(id) = local::local_id(&f) {
            own.entry(id).or_insert(f);
        }
    }
    let mut shared = HashMap::new();
    for (owner, f) in local::shared_files(&base_dir(opts)) {
        if let Some(id) = local::local_id(&f) {
            shared.entry((owner, id)).or_insert(f);
        }
    }
    Ok(Local { own, shared })
}

/// Where a session without a local file goes: the user's own in Pi's folder for its cwd
/// (the copy's folder when it is one Pi would make, else `--pulled--`), or the
/// `--session-dir`; another owner's in `--shared--/<owner>/`, where it is visibly theirs
/// and never what Pi resumes. Every part comes from [`local::safe_name`] or
/// [`local::safe_folder`]; a session whose id cannot be a file name is not written.
fn target_path(opts: &PullOptions, role: &str, c: &Copy) -> Result<PathBuf> {
    let id = &c.session_id;
    let (folder, file) = match c.rel_path.split_once('/') {
        Some((d, f)) => (Some(d), f),
        None => (None, c.rel_path.as_str()),
    };
    // The copy's file name when it is plain and names this session, else `<id>.jsonl`.
    let name = if local::safe_name(file)
        && file.ends_with(".jsonl")
        && local::id_from_name(Path::new(file)).as_deref() == Some(id.as_str())
    {
        file.to_string()
    } else if local::safe_name(&format!("{id}.jsonl")) {
        format!("{id}.jsonl")
    } else {
        return Err(Error::msg(format!(
            "its id {id:?} (owner {:?}) cannot be a file name; not written",
            c.owner
        )));
    };
    let base = base_dir(opts);
    if c.owner != role {
        return Ok(base
            .join(local::SHARED)
            .join(local::owner_folder(&c.owner))
            .join(name));
    }
    Ok(match (&opts.session_dir, folder) {
        (Some(_), _) => base.join(name),
        (None, Some(d)) if local::safe_folder(d) && file == name => base.join(d).join(name),
        (None, _) => base.join("--pulled--").join(name),
    })
}

fn journal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".sessiontree-pull");
    PathBuf::from(s)
}

/// The first line of a pull journal: a tag, the length the file had and the SHA-256 of
/// those bytes, so that a journal is only ever replayed onto the file it was made for.
const JOURNAL_TAG: &str = "sessiontree-pull-journal 1";

fn journal_header(start: u64, prefix: &[u8]) -> String {
    format!("{JOURNAL_TAG} {start} {}\n", crate::hex(&sha256(prefix)))
}

/// The journal's bytes, when it is one this user's pull wrote: a regular file (not a
/// link), owned by this user, with one name. Anything else is not replayed.
fn read_journal(jp: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let meta = match std::fs::symlink_metadata(jp) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(jp)(e)),
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let foreign = || {
        Error::msg(format!(
            "{}: not a pull journal of this user's (a link, not a plain file, another owner's or with other names); left as is, and the file not touched",
            jp.display()
        ))
    };
    if !meta.file_type().is_file() || meta.uid() != me || meta.nlink() != 1 {
        return Err(foreign());
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(jp)
        .map_err(io_err(jp))?;
    // The same file that was looked at (not one put there since).
    let m2 = f.metadata().map_err(io_err(jp))?;
    if m2.ino() != meta.ino() || m2.dev() != meta.dev() || m2.uid() != me || m2.nlink() != 1 {
        return Err(foreign());
    }
    let mut j = Vec::new();
    f.read_to_end(&mut j).map_err(io_err(jp))?;
    Ok(Some(j))
}

/// Finishes an append a killed pull left half done. Call with the writer lock held.
pub fn recover(path: &Path) -> Result<()> {
    let jp = journal_path(path);
    let Some(j) = read_journal(&jp)? else {
        return Ok(());
    };
    let bad = || Error::msg(format!("{}: not a pull journal; left as is", jp.display()));
    let nl = memchr::memchr(b'\n', &j).ok_or_else(bad)?;
    let head = std::str::from_utf8(&j[..nl]).map_err(|_| bad())?;
    let rest = head.strip_prefix(JOURNAL_TAG).ok_or_else(bad)?;
    let mut parts = rest.split_ascii_whitespace();
    let start: u64 = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let prefix_hash = parts.next().ok_or_else(bad)?;
    let block = &j[nl + 1..];
    let file = std::fs::read(path).map_err(io_err(path))?;
    if (file.len() as u64) < start {
        return Err(Error::msg(format!(
            "{}: shorter than when a pull began appending to it; left as is (journal {})",
            path.display(),
            jp.display()
        )));
    }
    if crate::hex(&sha256(&file[..start as usize])) != prefix_hash {
        return Err(Error::msg(format!(
            "{}: its first {start} bytes are not those the journal {} was made for; left as is",
            path.display(),
            jp.display()
        )));
    }
    let tail = &file[start as usize..];
    if block.starts_with(tail) {
        let rest = &block[tail.len()..];
        if !rest.is_empty() {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(io_err(path))?;
            f.write_all(rest).map_err(io_err(path))?;
            f.sync_data().map_err(io_err(path))?;
        }
    } else if !tail.starts_with(block) {
        return Err(Error::msg(format!(
            "{}: changed since a pull began appending to it; left as is (journal {})",
            path.display(),
            jp.display()
        )));
    }
    std::fs::remove_file(&jp).map_err(io_err(&jp))?;
    Ok(())
}

/// Appends `bytes` to a file whose content is `before`, journaled.
fn append(path: &Path, before: &[u8], bytes: &[u8]) -> Result<()> {
    let expected = before.len() as u64;
    let jp = journal_path(path);
    let mut j = journal_header(expected, before).into_bytes();
    j.extend_from_slice(bytes);
    sessiontree::store::atomic_replace(&jp, &[&j])?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io_err(path))?;
    let len = f.metadata().map_err(io_err(path))?.len();
    if len != expected {
        let _ = std::fs::remove_file(&jp);
        return Err(Error::msg(format!(
            "{}: changed while pulling (another writer without the lock?); left as is",
            path.display()
        )));
    }
    f.write_all(bytes).map_err(io_err(path))?;
    f.sync_data().map_err(io_err(path))?;
    std::fs::remove_file(&jp).map_err(io_err(&jp))?;
    Ok(())
}

/// Pulls every session the role may read (or the ones asked for). Copies group by owner
/// and session id: another owner's session of the same id is another session.
pub fn pull(archive: &mut Archive, opts: &PullOptions) -> Result<PullReport> {
    let me = machine::load_or_create(&opts.agent_dir, None)?;
    machine::register(archive, &me)?;
    let mut state = State::open(&opts.agent_dir, &archive.id)?;
    let all = copies(archive, &opts.sessions)?;
    let local = local_sessions(opts)?;
    let mut groups: BTreeMap<(String, String), Vec<Copy>> = BTreeMap::new();
    for c in all {
        if c.length > 0 {
            groups
                .entry((c.owner.clone(), c.session_id.clone()))
                .or_default()
                .push(c);
        }
    }
    for id in &opts.sessions {
        if !groups.keys().any(|(_, s)| s == id) {
            return Err(Error::msg(format!(
                "session {id} is not in the archive (or not visible to role {})",
                archive.role
            )));
        }
    }
    let role = archive.role.clone();
    let mut report = PullReport::default();
    let mut last_save = std::time::Instant::now();
    for ((owner, id), group) in groups {
        report.sessions += 1;
        let own = |c: &Copy| c.machine == me.id && c.owner == role;
        let found = if owner == role {
            local.own.get(&id)
        } else {
            local.shared.get(&(local::owner_folder(&owner), id.clone()))
        };
        // How the report names it: another owner's session says whose it is.
        let who = Who {
            id: id.clone(),
            owner: (owner != role).then(|| owner.clone()),
        };
        let r = match found {
            None => create(archive, opts, &who, &group, &mut state, &mut report),
            Some(path) => {
                let others: Vec<&Copy> = group.iter().filter(|c| !own(c)).collect();
                if others
                    .iter()
                    .all(|c| state.pulled.get(&c.version_pk) == Some(&c.length))
                {
                    report.up_to_date += 1;
                    continue;
                }
                update(archive, path, &who, &others, &mut state, &mut report)
            }
        };
        if let Err(e) = r {
            report.skipped.push(Skipped::of(&who, e.to_string()));
        }
        // Progress survives a kill (at most a second of it is checked again next time).
        if last_save.elapsed() > std::time::Duration::from_secs(1) {
            state.save()?;
            last_save = std::time::Instant::now();
        }
    }
    state.save()?;
    Ok(report)
}

/// The machine name a pull marker carries (`pulled from <name>`): the archive's, at most
/// 64 characters of it, so that a name cannot grow the user's file by more than that.
fn marker_name(c: &Copy) -> String {
    c.machine_name.chars().take(64).collect()
}

/// Bytes up to and including the last newline: a line still being written when the copy
/// was pushed is not written here.
fn complete_lines(mut b: Vec<u8>) -> Vec<u8> {
    let end = memchr::memrchr(b'\n', &b).map(|i| i + 1).unwrap_or(0);
    b.truncate(end);
    b
}

fn create(
    archive: &mut Archive,
    opts: &PullOptions,
    who: &Who,
    group: &[Copy],
    state: &mut State,
    report: &mut PullReport,
) -> Result<()> {
    let base = &group[0];
    let path = target_path(opts, &archive.role, base)?;
    let mut content = complete_lines(fetch(archive, base)?);
    if content.is_empty() {
        return Err(Error::msg("the archived copy has no complete line"));
    }
    let mut unread = Vec::new();
    for c in &group[1..] {
        let other = match fetch(archive, c) {
            Ok(o) => o,
            Err(e) => {
                report.skipped.push(Skipped::of(who, e.to_string()));
                unread.push(c.version_pk);
                continue;
            }
        };
        match merge::plan(&content, &other, &marker_name(c)) {
            Plan::UpToDate => {}
            Plan::FastForward(b) | Plan::Branch { bytes: b, .. } => content.extend_from_slice(&b),
            Plan::Skip(why) => report.skipped.push(Skipped::of(
                who,
                format!("copy from {:?}: {why}", c.machine_name),
            )),
        }
    }
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io_err(d))?;
    }
    match sessiontree::store::create_exclusive(&path, &[&content]) {
        Ok(()) => {}
        Err(sessiontree::Error::Exists { .. }) => {
            return Err(Error::msg(format!(
                "{}: exists but is not session {:?}; left as is",
                path.display(),
                base.session_id
            )))
        }
        Err(e) => return Err(e.into()),
    }
    report.bytes_written += content.len() as u64;
    report.created.push(path);
    for c in group.iter().filter(|c| !unread.contains(&c.version_pk)) {
        state.set_pulled(c.version_pk, c.length);
    }
    Ok(())
}

fn update(
    archive: &mut Archive,
    path: &Path,
    who: &Who,
    others: &[&Copy],
    state: &mut State,
    report: &mut PullReport,
) -> Result<()> {
    let _lock = match WriterLock::acquire(path, None) {
        Ok(l) => l,
        Err(sessiontree::Error::Locked { holder, .. }) => {
            return Err(Error::msg(format!(
                "{}: a writer holds its lock (pid {}); skipped",
                path.display(),
                holder
                    .pid
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "?".into())
            )))
        }
        Err(e) => return Err(e.into()),
    };
    recover(path)?;
    let mut local = std::fs::read(path).map_err(io_err(path))?;
    let mut changed = false;
    for c in others {
        if state.pulled.get(&c.version_pk) == Some(&c.length) {
            continue;
        }
        let other = match fetch(archive, c) {
            Ok(o) => o,
            Err(e) => {
                report.skipped.push(Skipped::of(who, e.to_string()));
                continue;
            }
        };
        match merge::plan(&local, &other, &marker_name(c)) {
            Plan::UpToDate => {}
            Plan::FastForward(b) => {
                append(path, &local, &b)?;
                local.extend_from_slice(&b);
                report.bytes_written += b.len() as u64;
                report.fast_forwarded.push(path.to_path_buf());
                changed = true;
            }
            Plan::Branch { bytes, entries, .. } => {
                append(path, &local, &bytes)?;
                local.extend_from_slice(&bytes);
                report.bytes_written += bytes.len() as u64;
                report.branched.push((path.to_path_buf(), entries));
                changed = true;
            }
            Plan::Skip(why) => {
                report.skipped.push(Skipped::of(
                    who,
                    format!("{}: copy from {:?}: {why}", path.display(), c.machine_name),
                ));
                continue;
            }
        }
        state.set_pulled(c.version_pk, c.length);
    }
    if !changed {
        report.up_to_date += 1;
    }
    Ok(())
}

#[cfg(test)]
mod report_tests {
    use super::*;

    /// Another owner's skipped session keeps its id as an id; whose it is is a field of
    /// its own (and the human line says both).
    #[test]
    fn a_skipped_session_of_another_owner_has_its_owner_apart_from_its_id() {
        let r = PullReport {
            skipped: vec![Skipped {
                session: "0193f1a2-0000-7000-8000-000000000001".into(),
                owner: Some("bob".into()),
                reason: "a writer holds its lock".into(),
            }],
            ..Default::default()
        };
        let j = r.to_json();
        assert_eq!(
            j["skipped"][0]["session"],
            "0193f1a2-0000-7000-8000-000000000001"
        );
        assert_eq!(j["skipped"][0]["owner"], "bob");
        assert_eq!(
            r.skipped[0].to_string(),
            "0193f1a2-0000-7000-8000-000000000001 (of \"bob\")"
        );
    }
}
