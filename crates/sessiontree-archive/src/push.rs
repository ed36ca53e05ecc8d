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
//! Files go in batches, one transaction each: a push killed at any point leaves whole
//! batches, and the next push continues from what the archive holds. Bytes are uploaded
//! with `COPY` (binary) into a temporary table and moved with one `INSERT ... SELECT`
//! (PostgreSQL refuses `COPY FROM` into a table with row-level security).

use crate::machine::{self, Machine};
use crate::state::{FileStamp, State};
use crate::{hex, io_err, sha256, Archive, Error, Result};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use sessiontree::list::{Acc, EntryText};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A chunk holds at most this many bytes (cut after a newline when there is one).
pub const CHUNK: usize = 1 << 20;
/// A transaction carries about this many bytes, or this many files.
const BATCH_BYTES: usize = 64 << 20;
const BATCH_FILES: usize = 400;

pub struct PushOptions {
    pub agent_dir: PathBuf,
    /// Files or folders; empty: every session under `<agent dir>/sessions`.
    pub paths: Vec<PathBuf>,
    /// Names (or renames) this machine.
    pub machine_name: Option<String>,
    /// Patterns whose matches are replaced by `[REDACTED]` before upload.
    pub redact: Vec<regex::bytes::Regex>,
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

/// Session files to consider: each FILE, the `*.jsonl` of each DIR and of its sub-folders.
pub fn session_files(agent_dir: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let roots: Vec<PathBuf> = if paths.is_empty() {
        vec![agent_dir.join("sessions")]
    } else {
        paths.to_vec()
    };
    let mut out = Vec::new();
    for r in roots {
        let meta = match std::fs::metadata(&r) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && paths.is_empty() => continue,
            Err(e) => return Err(io_err(&r)(e)),
        };
        if meta.is_file() {
            out.push(r);
            continue;
        }
        let mut files = sessiontree::list::jsonl_files(&r);
        if let Ok(rd) = std::fs::read_dir(&r) {
            for e in rd.flatten() {
                if e.path().is_dir() {
                    files.extend(sessiontree::list::jsonl_files(&e.path()));
                }
            }
        }
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

/// The archive's latest version of one of this machine's copies.
#[derive(Clone, Debug)]
struct Remote {
    version_pk: i64,
    length: i64,
    hash: Vec<u8>,
    src_length: i64,
    redaction: String,
}

/// The redaction key stored with a version ("" = byte-exact).
pub fn redaction_key(redact: &[regex::bytes::Regex]) -> String {
    if redact.is_empty() {
        return String::new();
    }
    let joined: Vec<&str> = redact.iter().map(|r| r.as_str()).collect();
    format!("sha256:{}", hex(&sha256(joined.join("\0").as_bytes())))
}

/// Applies the patterns to complete lines (`bytes` ends with `\n` or is empty). A line that
/// no longer parses after a raw replacement (the match crossed JSON syntax) is redacted
/// inside its string values instead.
pub fn redact(bytes: &[u8], redact: &[regex::bytes::Regex]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let mut l = line.to_vec();
        let mut changed = false;
        for r in redact {
            if r.is_match(&l) {
                l = r.replace_all(&l, &b"[REDACTED]"[..]).into_owned();
                changed = true;
            }
        }
        if changed && serde_json::from_slice::<serde_json::Value>(l.trim_ascii_end()).is_err() {
            if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(line) {
                redact_value(&mut v, redact);
                l = serde_json::to_vec(&v).unwrap_or_default();
                l.push(b'\n');
            }
            // A line that did not parse before stays as raw-redacted.
        }
        out.extend_from_slice(&l);
    }
    out
}

fn redact_value(v: &mut serde_json::Value, redact: &[regex::bytes::Regex]) {
    match v {
        serde_json::Value::String(s) => {
            let mut b = s.as_bytes().to_vec();
            for r in redact {
                b = r.replace_all(&b, &b"[REDACTED]"[..]).into_owned();
            }
            *s = String::from_utf8_lossy(&b).into_owned();
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| redact_value(x, redact)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| redact_value(x, redact)),
        _ => {}
    }
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
    Version,
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
    texts: Vec<Text>,
}

/// A search row: the entry's text (NUL made a space: PostgreSQL text cannot hold it) and
/// its trigram codes.
struct Text {
    off: i64,
    entry: EntryText,
    body: String,
    tri: Vec<i32>,
}

/// Listing info and search texts of archived content; texts only for lines at or after `from`.
fn describe(content: &[u8], rel_path: &str, from: usize) -> (serde_json::Value, Vec<Text>) {
    let mut acc = Acc::new(false);
    let mut texts = Vec::new();
    let mut pos = 0;
    for line in content.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if pos >= from {
            let mut rows = Vec::new();
            acc.feed(body, Some(&mut rows));
            texts.extend(rows.into_iter().map(|entry| {
                let body = entry.text.replace('\0', " ");
                Text {
                    off: pos as i64,
                    tri: crate::trigram::of(&body),
                    body,
                    entry,
                }
            }));
        } else {
            acc.feed(body, None);
        }
        pos += line.len();
    }
    let info = acc
        .into_info(Path::new(rel_path), 0.0)
        .map(|i| i.to_json())
        .unwrap_or(serde_json::Value::Null);
    (info, texts)
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

/// Pushes the sessions. `progress` is told each file's outcome.
pub fn push(archive: &mut Archive, opts: &PushOptions) -> Result<PushReport> {
    let me = machine::load_or_create(&opts.agent_dir, opts.machine_name.as_deref())?;
    register_machine(archive, &me)?;
    let mut state = State::load(&opts.agent_dir, &archive.id);
    let files = session_files(&opts.agent_dir, &opts.paths)?;
    let remote = remote_copies(archive, &me)?;
    let rkey = redaction_key(&opts.redact);
    let mut report = PushReport::default();
    let mut batch: Vec<Planned> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut seen_ids: HashMap<String, PathBuf> = HashMap::new();

    for path in files {
        report.files += 1;
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                report.skipped.push((path, e.to_string()));
                continue;
            }
        };
        let stamp = FileStamp::of(&meta);
        // Unchanged since the last comparison, and the archive still holds that state:
        // decided from the file name's session id and a stat, without reading the file.
        if let (Some(r), Some((st, key, h))) = (
            crate::pull::id_from_name(&path).and_then(|id| remote.get(&id)),
            state.pushed(&path),
        ) {
            if *st == stamp
                && *key == rkey
                && r.redaction == rkey
                && *h == hex(&r.hash)
                && r.src_length as u64 <= stamp.size
            {
                report.unchanged += 1;
                continue;
            }
        }
        let Some((session_id, cwd, created)) = read_session_id(&path) else {
            report
                .skipped
                .push((path, "not a session file (no valid header)".into()));
            continue;
        };
        if let Some(first) = seen_ids.get(&session_id) {
            report.skipped.push((
                path.clone(),
                format!("same session id as {} (pushed that one)", first.display()),
            ));
            continue;
        }
        seen_ids.insert(session_id.clone(), path.clone());
        let r = remote.get(&session_id);
        let raw = std::fs::read(&path).map_err(io_err(&path))?;
        let stamp = std::fs::metadata(&path)
            .map(|m| FileStamp::of(&m))
            .unwrap_or(stamp);
        let (content, src_length) = if opts.redact.is_empty() {
            let n = raw.len() as i64;
            (raw, n)
        } else {
            // Only complete lines: a torn line could redact differently once complete.
            let end = memchr::memrchr(b'\n', &raw).map(|i| i + 1).unwrap_or(0);
            (redact(&raw[..end], &opts.redact), end as i64)
        };
        let hash = sha256(&content);
        let rel_path = rel_path_for(&cwd, &path);
        let op = match r {
            Some(r)
                if r.redaction == rkey
                    && r.length as usize <= content.len()
                    && sha256(&content[..r.length as usize]) == r.hash =>
            {
                if r.length as usize == content.len() {
                    report.unchanged += 1;
                    state.set_pushed(&path, stamp, &rkey, &hex(&hash));
                    continue;
                }
                report.appended += 1;
                Op::Append {
                    version_pk: r.version_pk,
                    from: r.length,
                }
            }
            Some(_) => {
                report.new_versions += 1;
                Op::Version
            }
            None => {
                report.created += 1;
                Op::Version
            }
        };
        let from = match op {
            Op::Append { from, .. } => from as usize,
            Op::Version => 0,
        };
        let (info, texts) = describe(&content, &rel_path, from);
        report.bytes_sent += (content.len() - from) as u64;
        batch_bytes += content.len() - from;
        batch.push(Planned {
            path,
            stamp,
            session_id,
            cwd,
            created,
            rel_path,
            content,
            src_length,
            hash,
            op,
            info,
            texts,
        });
        if batch_bytes >= BATCH_BYTES || batch.len() >= BATCH_FILES {
            flush(archive, &me, &rkey, &mut batch, &mut state)?;
            batch_bytes = 0;
        }
    }
    flush(archive, &me, &rkey, &mut batch, &mut state)?;
    state.save()?;
    Ok(report)
}

/// Records (or renames) this machine in the archive.
pub fn register_machine(archive: &mut Archive, me: &Machine) -> Result<()> {
    archive.client.execute(
        "INSERT INTO sessiontree.machines (id, name) VALUES ($1::text::uuid, $2)
         ON CONFLICT (owner, id) DO UPDATE SET name = EXCLUDED.name, last_seen = now()",
        &[&me.id, &me.name],
    )?;
    Ok(())
}

fn remote_copies(archive: &mut Archive, me: &Machine) -> Result<HashMap<String, Remote>> {
    let rows = archive.client.query(
        // DISTINCT ON, not a LATERAL subquery per copy: under row-level security the
        // latter costs a policy check per probe (350 ms instead of 20 for 2,000 copies).
        "SELECT DISTINCT ON (v.copy_pk) s.session_id, v.pk, v.length, v.hash, v.src_length,
                coalesce(v.redaction, '')
         FROM sessiontree.versions v
         JOIN sessiontree.copies c ON c.pk = v.copy_pk
         JOIN sessiontree.sessions s ON s.pk = c.session_pk
         WHERE c.machine = $1::text::uuid AND c.owner = current_user
         ORDER BY v.copy_pk, v.seq DESC",
        &[&me.id],
    )?;
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
                    redaction: r.get(5),
                },
            )
        })
        .collect())
}

fn flush(
    archive: &mut Archive,
    me: &Machine,
    rkey: &str,
    batch: &mut Vec<Planned>,
    state: &mut State,
) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let redaction: Option<&str> = (!rkey.is_empty()).then_some(rkey);
    let mut tx = archive.client.transaction()?;
    tx.batch_execute(
        "CREATE TEMP TABLE IF NOT EXISTS st_chunks
             (version_pk bigint, session_pk bigint, off bigint, data bytea) ON COMMIT DELETE ROWS;
         ALTER TABLE st_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
         CREATE TEMP TABLE IF NOT EXISTS st_texts
             (version_pk bigint, session_pk bigint, off bigint, entry_id text, role text,
              ts text, body text, tri int4[]) ON COMMIT DELETE ROWS;",
    )?;
    let up_session = tx.prepare(
        "INSERT INTO sessiontree.sessions (session_id, cwd, created) VALUES ($1, $2, $3)
         ON CONFLICT (owner, session_id) DO UPDATE SET cwd = EXCLUDED.cwd
         RETURNING pk",
    )?;
    let up_copy = tx.prepare(
        "INSERT INTO sessiontree.copies (session_pk, machine, rel_path) VALUES ($1, $2::text::uuid, $3)
         ON CONFLICT (session_pk, machine) DO UPDATE SET rel_path = EXCLUDED.rel_path
         RETURNING pk",
    )?;
    let new_version = tx.prepare(
        "INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length, redaction, info)
         VALUES ($1, $2, (SELECT coalesce(max(seq), 0) + 1 FROM sessiontree.versions WHERE copy_pk = $1),
                 $3, $4, $5, $6, $7::text::jsonb)
         RETURNING pk",
    )?;
    let grow = tx.prepare(
        "UPDATE sessiontree.versions SET length = $3, hash = $4, src_length = $5, info = $6::text::jsonb,
                updated_at = now()
         WHERE pk = $1 AND length = $2
         RETURNING session_pk",
    )?;
    let mut rows: Vec<(i64, i64, i64, &[u8])> = Vec::new();
    let mut text_rows: Vec<(i64, i64, &Text)> = Vec::new();
    for p in batch.iter() {
        let info = p.info.to_string();
        let (vpk, spk, from) = match p.op {
            Op::Version => {
                let spk: i64 = tx
                    .query_one(&up_session, &[&p.session_id, &p.cwd, &p.created])?
                    .get(0);
                let cpk: i64 = tx.query_one(&up_copy, &[&spk, &me.id, &p.rel_path])?.get(0);
                let vpk: i64 = tx
                    .query_one(
                        &new_version,
                        &[
                            &cpk,
                            &spk,
                            &(p.content.len() as i64),
                            &p.hash,
                            &p.src_length,
                            &redaction,
                            &info,
                        ],
                    )?
                    .get(0);
                (vpk, spk, 0i64)
            }
            Op::Append { version_pk, from } => {
                let r = tx.query_opt(
                    &grow,
                    &[
                        &version_pk,
                        &from,
                        &(p.content.len() as i64),
                        &p.hash,
                        &p.src_length,
                        &info,
                    ],
                )?;
                let Some(r) = r else {
                    return Err(Error::msg(format!(
                        "{}: the archive's copy changed during this push (another push from this machine?); push again",
                        p.path.display()
                    )));
                };
                (version_pk, r.get(0), from)
            }
        };
        for (off, data) in chunks(&p.content[from as usize..], from) {
            rows.push((vpk, spk, off, data));
        }
        for t in &p.texts {
            text_rows.push((vpk, spk, t));
        }
    }
    {
        let w = tx.copy_in(
            "COPY st_chunks (version_pk, session_pk, off, data) FROM STDIN (FORMAT binary)",
        )?;
        let mut w = BinaryCopyInWriter::new(w, &[Type::INT8, Type::INT8, Type::INT8, Type::BYTEA]);
        for (v, s, o, d) in &rows {
            w.write(&[v, s, o, d])?;
        }
        w.finish()?;
    }
    {
        let w = tx.copy_in(
            "COPY st_texts (version_pk, session_pk, off, entry_id, role, ts, body, tri) FROM STDIN (FORMAT binary)",
        )?;
        let mut w = BinaryCopyInWriter::new(
            w,
            &[
                Type::INT8,
                Type::INT8,
                Type::INT8,
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::INT4_ARRAY,
            ],
        );
        for (v, s, t) in &text_rows {
            let ts = t.entry.ts_ms.map(|m| format!("{m}"));
            w.write(&[
                v,
                s,
                &t.off,
                &t.entry.entry_id,
                &t.entry.role,
                &ts,
                &t.body,
                &t.tri,
            ])?;
        }
        w.finish()?;
    }
    tx.batch_execute(
        "INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
             SELECT version_pk, session_pk, off, data FROM st_chunks;
         INSERT INTO sessiontree.texts (version_pk, session_pk, off, entry_id, role, ts, body, tri)
             SELECT version_pk, session_pk, off, entry_id, role, ts, body, tri FROM st_texts;",
    )?;
    tx.commit()?;
    for p in batch.drain(..) {
        state.set_pushed(&p.path, p.stamp, rkey, &hex(&p.hash));
    }
    state.save()?;
    Ok(())
}
