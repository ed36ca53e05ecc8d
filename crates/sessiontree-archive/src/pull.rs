//! `pull`: the archive's sessions into the local session folders.
//!
//! * A session with no local file is created whole (temporary file, fsync, link into place:
//!   [`sessiontree::store::create_exclusive`]) from its most recently pushed copy, with the
//!   other machines' copies merged in (see [`crate::merge`]).
//! * A session with a local file is only ever appended to, under the session's writer lock
//!   (a session whose lock is held is skipped and reported): when the local file is a byte
//!   prefix of another machine's copy it is fast-forwarded; when the copies diverged, the
//!   missing entries are appended as a branch and the leaf is put back.
//! * Every append is journaled first (`<file>.sessiontree-pull`: the length the file had and
//!   the bytes to add, fsynced), so a pull killed in the middle of a write completes that
//!   write on the next run instead of leaving a torn line.

use crate::machine;
use crate::merge::{self, Plan};
use crate::state::State;
use crate::{io_err, sha256, Archive, Error, Result};
use sessiontree::store::WriterLock;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

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
    /// (session id, why)
    pub skipped: Vec<(String, String)>,
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
            "skipped": self.skipped.iter().map(|(s, r)| serde_json::json!({"session": s, "reason": r})).collect::<Vec<_>>(),
        })
    }
}

/// One machine's copy of a session, at its latest version.
#[derive(Clone, Debug)]
pub struct Copy {
    pub session_id: String,
    pub owner: String,
    pub machine: String,
    pub machine_name: String,
    pub rel_path: String,
    pub version_pk: i64,
    pub length: i64,
    pub hash: Vec<u8>,
    pub redacted: bool,
}

/// Every copy the current role may read, newest first within a session.
pub fn copies(archive: &mut Archive, only: &[String]) -> Result<Vec<Copy>> {
    let filter: Option<Vec<String>> = (!only.is_empty()).then(|| only.to_vec());
    let rows = archive.client.query(
        "SELECT * FROM (
             SELECT DISTINCT ON (v.copy_pk) s.session_id, s.owner::text, c.machine::text,
                    coalesce(m.name, c.machine::text), c.rel_path, v.pk, v.length, v.hash,
                    v.redaction IS NOT NULL, v.updated_at
             FROM sessiontree.versions v
             JOIN sessiontree.copies c
                  ON c.pk = v.copy_pk AND c.session_pk = v.session_pk AND c.owner = v.owner
             JOIN sessiontree.sessions s ON s.pk = c.session_pk AND s.owner = c.owner
             LEFT JOIN sessiontree.machines m ON m.id = c.machine AND m.owner = c.owner
             WHERE ($1::text[] IS NULL OR s.session_id = ANY ($1))
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
        })
        .collect())
}

/// A version's bytes, checked against its length and hash.
pub fn fetch(archive: &mut Archive, c: &Copy) -> Result<Vec<u8>> {
    let rows = archive.client.query(
        "SELECT off, data FROM sessiontree.chunks
         WHERE version_pk = $1 AND off < $2 AND owner = $3 ORDER BY off",
        &[&c.version_pk, &c.length, &c.owner],
    )?;
    let mut out = Vec::with_capacity(c.length as usize);
    for r in rows {
        let off: i64 = r.get(0);
        let data: &[u8] = r.get(1);
        if off != out.len() as i64 {
            return Err(Error::msg(format!(
                "archive: session {} from {}: chunk at {off} where {} was expected",
                c.session_id,
                c.machine_name,
                out.len()
            )));
        }
        out.extend_from_slice(data);
    }
    out.truncate(c.length as usize);
    if out.len() as i64 != c.length || sha256(&out) != c.hash {
        return Err(Error::msg(format!(
            "archive: session {} from {}: stored bytes do not match their length and hash",
            c.session_id, c.machine_name
        )));
    }
    Ok(out)
}

/// The session id a Pi file name carries (`<time>_<id>.jsonl`, id a UUID).
pub fn id_from_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let stem = name.strip_suffix(".jsonl")?;
    let (_, id) = stem.rsplit_once('_')?;
    uuid::Uuid::parse_str(id).is_ok().then(|| id.to_string())
}

/// The session id of a local file: from its name, else its header.
fn local_id(path: &Path) -> Option<String> {
    id_from_name(path).or_else(|| sessiontree::folder::read_header(path).map(|h| h.id))
}

fn local_sessions(opts: &PullOptions) -> Result<HashMap<String, PathBuf>> {
    let files = match &opts.session_dir {
        Some(d) => {
            let mut v = sessiontree::list::jsonl_files(d);
            v.sort();
            v
        }
        None => crate::push::session_files(&opts.agent_dir, &[])?,
    };
    let mut map = HashMap::new();
    for f in files {
        if let Some(id) = local_id(&f) {
            map.entry(id).or_insert(f);
        }
    }
    Ok(map)
}

/// Where a session without a local file goes.
fn target_path(opts: &PullOptions, rel_path: &str, session_id: &str) -> PathBuf {
    let rel = Path::new(rel_path);
    let safe = rel.components().count() == 2
        && rel.components().all(|c| matches!(c, Component::Normal(_)))
        && rel_path.ends_with(".jsonl");
    let name = if safe {
        rel.file_name().unwrap().to_string_lossy().into_owned()
    } else {
        format!("{session_id}.jsonl")
    };
    match &opts.session_dir {
        Some(d) => d.join(name),
        None if safe => opts.agent_dir.join("sessions").join(rel),
        None => opts
            .agent_dir
            .join("sessions")
            .join("--pulled--")
            .join(name),
    }
}

fn journal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".sessiontree-pull");
    PathBuf::from(s)
}

/// Finishes an append a killed pull left half done. Call with the writer lock held.
pub fn recover(path: &Path) -> Result<()> {
    let jp = journal_path(path);
    let j = match std::fs::read(&jp) {
        Ok(j) => j,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(&jp)(e)),
    };
    let bad = || Error::msg(format!("{}: not a pull journal; left as is", jp.display()));
    let nl = memchr::memchr(b'\n', &j).ok_or_else(bad)?;
    let start: u64 = std::str::from_utf8(&j[..nl])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let block = &j[nl + 1..];
    let file = std::fs::read(path).map_err(io_err(path))?;
    if (file.len() as u64) < start {
        return Err(Error::msg(format!(
            "{}: shorter than when a pull began appending to it; left as is (journal {})",
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

/// Appends `bytes` to a file that must be `expected` bytes long, journaled.
fn append(path: &Path, expected: u64, bytes: &[u8]) -> Result<()> {
    let jp = journal_path(path);
    let mut j = format!("{expected}\n").into_bytes();
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

/// Pulls every session the role may read (or the ones asked for).
pub fn pull(archive: &mut Archive, opts: &PullOptions) -> Result<PullReport> {
    let me = machine::load_or_create(&opts.agent_dir, None)?;
    crate::push::register_machine(archive, &me)?;
    let mut state = State::load(&opts.agent_dir, &archive.id);
    let all = copies(archive, &opts.sessions)?;
    let local = local_sessions(opts)?;
    let mut groups: BTreeMap<String, Vec<Copy>> = BTreeMap::new();
    for c in all {
        if c.length > 0 {
            groups.entry(c.session_id.clone()).or_default().push(c);
        }
    }
    for id in &opts.sessions {
        if !groups.contains_key(id) {
            return Err(Error::msg(format!(
                "session {id} is not in the archive (or not visible to role {})",
                archive.role
            )));
        }
    }
    let mut report = PullReport::default();
    let mut last_save = std::time::Instant::now();
    for (id, group) in groups {
        report.sessions += 1;
        let own = |c: &Copy| c.machine == me.id && c.owner == archive.role;
        let r = match local.get(&id) {
            None => create(archive, opts, &id, &group, &mut state, &mut report),
            Some(path) => {
                let others: Vec<&Copy> = group.iter().filter(|c| !own(c)).collect();
                if others
                    .iter()
                    .all(|c| state.pulled.get(&c.version_pk) == Some(&c.length))
                {
                    report.up_to_date += 1;
                    continue;
                }
                update(archive, path, &others, &mut state, &mut report)
            }
        };
        if let Err(e) = r {
            report.skipped.push((id, e.to_string()));
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

fn create(
    archive: &mut Archive,
    opts: &PullOptions,
    id: &str,
    group: &[Copy],
    state: &mut State,
    report: &mut PullReport,
) -> Result<()> {
    let base = &group[0];
    let mut content = fetch(archive, base)?;
    for c in &group[1..] {
        let other = fetch(archive, c)?;
        match merge::plan(&content, &other, &c.machine_name) {
            Plan::UpToDate => {}
            Plan::FastForward(b) | Plan::Branch { bytes: b, .. } => content.extend_from_slice(&b),
            Plan::Skip(why) => report.skipped.push((
                id.to_string(),
                format!("copy from {}: {why}", c.machine_name),
            )),
        }
    }
    let path = target_path(opts, &base.rel_path, id);
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io_err(d))?;
    }
    match sessiontree::store::create_exclusive(&path, &[&content]) {
        Ok(()) => {}
        Err(sessiontree::Error::Exists { .. }) => {
            return Err(Error::msg(format!(
                "{}: exists but is not session {id}; left as is",
                path.display()
            )))
        }
        Err(e) => return Err(e.into()),
    }
    report.bytes_written += content.len() as u64;
    report.created.push(path);
    for c in group {
        state.set_pulled(c.version_pk, c.length);
    }
    Ok(())
}

fn update(
    archive: &mut Archive,
    path: &Path,
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
        let other = fetch(archive, c)?;
        match merge::plan(&local, &other, &c.machine_name) {
            Plan::UpToDate => {}
            Plan::FastForward(b) => {
                append(path, local.len() as u64, &b)?;
                local.extend_from_slice(&b);
                report.bytes_written += b.len() as u64;
                report.fast_forwarded.push(path.to_path_buf());
                changed = true;
            }
            Plan::Branch { bytes, entries, .. } => {
                append(path, local.len() as u64, &bytes)?;
                local.extend_from_slice(&bytes);
                report.bytes_written += bytes.len() as u64;
                report.branched.push((path.to_path_buf(), entries));
                changed = true;
            }
            Plan::Skip(why) => {
                report.skipped.push((
                    c.session_id.clone(),
                    format!("{}: copy from {}: {why}", path.display(), c.machine_name),
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
