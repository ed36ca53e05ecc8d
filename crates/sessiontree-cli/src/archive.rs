//! `push`, `pull`, `sync`, `share`, and `--archive` for the read commands: sessions in a
//! shared PostgreSQL archive (crate `sessiontree-archive`).

use crate::out::Out;
use anyhow::{Context as _, Result};
use sessiontree::dirs;
use sessiontree_archive::conn::archive_url;
use sessiontree_archive::pull::{pull, PullOptions, PullReport};
use sessiontree_archive::push::{push, PushOptions, PushReport};
use sessiontree_archive::redact::Redaction;
use sessiontree_archive::{local, query, Archive};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// The archive to use: a libpq URL or `key=value` string. Passwords come from the URL,
/// PGPASSWORD or the password file (PGPASSFILE, ~/.pgpass), never from a flag of their own.
#[derive(clap::Args, Clone)]
pub struct ArchiveArg {
    /// PostgreSQL connection URL or string (default: $SESSIONTREE_ARCHIVE).
    #[arg(long, value_name = "URL")]
    archive: Option<String>,
}

impl ArchiveArg {
    fn open(&self) -> Result<Archive> {
        let url = archive_url(self.archive.as_deref())?;
        Ok(Archive::open(&url)?)
    }
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// Session files or folders (default: every session under the agent dir).
    paths: Vec<PathBuf>,
    #[command(flatten)]
    archive: ArchiveArg,
    /// Name (or rename) this machine in the archive (default: the host name).
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
    /// Replace matches of this regex with [REDACTED] before upload (repeatable). The
    /// archived copy is then marked redacted and is not byte-identical to the file.
    #[arg(long, value_name = "REGEX")]
    redact: Vec<String>,
    /// Replace every credential `sessiontree secrets` finds with [REDACTED:<kind>] before upload.
    #[arg(long)]
    redact_secrets: bool,
    /// One JSON object with the counts instead of a summary line.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct PullArgs {
    /// Only this session (repeatable).
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
    #[command(flatten)]
    archive: ArchiveArg,
    /// Put pulled sessions in this folder (default: Pi's per-cwd folders under the agent
    /// dir; also $PI_CODING_AGENT_SESSION_DIR).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<String>,
    /// One JSON object with what was created, caught up, branched and skipped.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct SyncArgs {
    #[command(flatten)]
    archive: ArchiveArg,
    /// Keep watching the session folders and push every change (until interrupted).
    #[arg(long)]
    watch: bool,
    /// Name (or rename) this machine in the archive (default: the host name).
    #[arg(long, value_name = "NAME")]
    machine: Option<String>,
    /// Replace matches of this regex with [REDACTED] before upload (repeatable).
    #[arg(long, value_name = "REGEX")]
    redact: Vec<String>,
    /// Replace every credential `sessiontree secrets` finds with [REDACTED:<kind>] before upload.
    #[arg(long)]
    redact_secrets: bool,
    /// JSON objects (push, then pull counts) instead of summary lines.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ShareArgs {
    /// The session id.
    id: String,
    /// The PostgreSQL role whose members may read it.
    #[arg(long = "with", value_name = "ROLE")]
    with: String,
    /// Take the share back instead.
    #[arg(long)]
    revoke: bool,
    /// Share even when the archived copy holds credentials (see `sessiontree secrets`).
    #[arg(long)]
    allow_secrets: bool,
    #[command(flatten)]
    archive: ArchiveArg,
}

/// The redactors of a push: each `--redact` pattern, then (with `--redact-secrets`) every
/// credential the secrets rules detect.
fn redaction(v: &[String], secrets: bool) -> Result<Redaction> {
    let patterns = v
        .iter()
        .map(|r| regex::bytes::Regex::new(r).with_context(|| format!("--redact {r:?}")))
        .collect::<Result<Vec<_>>>()?;
    let r = Redaction::from(patterns);
    Ok(if secrets {
        r.with(std::sync::Arc::new(sessiontree_archive::secrets::Secrets))
    } else {
        r
    })
}

fn print_push(out: &mut Out, r: &PushReport, json: bool) -> Result<()> {
    if json {
        return out.line(&r.to_json().to_string());
    }
    out.line(&format!(
        "pushed {} files: {} new, {} grown, {} rewritten (new version), {} unchanged; {} bytes sent",
        r.files, r.created, r.appended, r.new_versions, r.unchanged, r.bytes_sent
    ))?;
    for (p, why) in &r.skipped {
        eprintln!(
            "sessiontree: skipped {}: {}",
            crate::safe::path(p),
            crate::safe::line(why)
        );
    }
    Ok(())
}

fn print_pull(out: &mut Out, r: &PullReport, json: bool) -> Result<()> {
    if json {
        return out.line(&r.to_json().to_string());
    }
    for p in &r.created {
        out.line(&format!("new        {}", crate::safe::path(p)))?;
    }
    for p in &r.fast_forwarded {
        out.line(&format!("caught up  {}", crate::safe::path(p)))?;
    }
    for (p, n) in &r.branched {
        out.line(&format!(
            "branch     {} (+{n} entries, leaf kept)",
            crate::safe::path(p)
        ))?;
    }
    out.line(&format!(
        "pulled {} sessions: {} new, {} caught up, {} with new branches, {} up to date",
        r.sessions,
        r.created.len(),
        r.fast_forwarded.len(),
        r.branched.len(),
        r.up_to_date
    ))?;
    for s in &r.skipped {
        eprintln!(
            "sessiontree: skipped session {}: {}",
            crate::safe::line(&s.to_string()),
            crate::safe::line(&s.reason)
        );
    }
    Ok(())
}

pub fn push_cmd(out: &mut Out, a: PushArgs) -> Result<()> {
    let mut ar = a.archive.open()?;
    let r = push(
        &mut ar,
        &PushOptions {
            agent_dir: dirs::agent_dir(),
            paths: a.paths,
            machine_name: a.machine,
            redact: redaction(&a.redact, a.redact_secrets)?,
        },
    )?;
    print_push(out, &r, a.json)
}

pub fn pull_cmd(out: &mut Out, a: PullArgs) -> Result<()> {
    let mut ar = a.archive.open()?;
    let r = pull(
        &mut ar,
        &PullOptions {
            agent_dir: dirs::agent_dir(),
            session_dir: dirs::session_dir_override(a.session_dir.as_deref()),
            sessions: a.sessions,
        },
    )?;
    print_pull(out, &r, a.json)
}

pub fn sync_cmd(a: SyncArgs) -> Result<()> {
    // Its own output, flushed before watching (the watch never returns to flush it).
    let mut o = Out::new();
    let out = &mut o;
    let opts = PushOptions {
        agent_dir: dirs::agent_dir(),
        paths: vec![],
        machine_name: a.machine,
        redact: redaction(&a.redact, a.redact_secrets)?,
    };
    let url = archive_url(a.archive.archive.as_deref())?;
    if a.watch && a.archive.archive.is_some() && sessiontree_archive::conn::has_password(&url) {
        eprintln!(
            "sessiontree: warning: the password in --archive stays visible in the process list \
             for as long as `sync --watch` runs; put it in PGPASSFILE (~/.pgpass) or PGPASSWORD instead"
        );
    }
    let mut ar = Archive::open(&url)?;
    let r = push(&mut ar, &opts)?;
    print_push(out, &r, a.json)?;
    let r = pull(
        &mut ar,
        &PullOptions {
            agent_dir: opts.agent_dir.clone(),
            session_dir: None,
            sessions: vec![],
        },
    )?;
    print_pull(out, &r, a.json)?;
    if !a.watch {
        return o.finish();
    }
    drop(ar);
    o.finish()?;
    let stop = AtomicBool::new(false);
    let json = a.json;
    sessiontree_archive::watch::watch(&url, &opts, &stop, |ev| match ev {
        sessiontree_archive::watch::Event::Pushed(r) => {
            let mut o = Out::new();
            let _ = print_push(&mut o, &r, json);
            let _ = o.finish();
        }
        sessiontree_archive::watch::Event::Trouble(m) => {
            eprintln!(
                "sessiontree: {} (retrying)",
                crate::safe::line(&m.to_string())
            );
        }
    })?;
    Ok(())
}

pub fn share_cmd(a: ShareArgs) -> Result<()> {
    let mut ar = a.archive.open()?;
    if a.revoke {
        if !query::unshare(&mut ar, &a.id, &a.with)? {
            anyhow::bail!("session {} was not shared with {}", a.id, a.with);
        }
    } else {
        if !a.allow_secrets {
            crate::secrets::refuse_leaky_share(&mut ar, &a.id)?;
        }
        query::share(&mut ar, &a.id, &a.with)?;
    }
    Ok(())
}

/// `ls --archive`: every visible copy, newest first, Pi's SessionInfo plus where it is.
pub fn ls(out: &mut Out, url: Option<&str>, json: bool, limit: Option<usize>) -> Result<bool> {
    let mut ar = Archive::open(&archive_url(url)?)?;
    let mut all = query::list(&mut ar)?;
    if let Some(n) = limit {
        all.truncate(n);
    }
    for l in &all {
        if json {
            let mut v = l.info.clone();
            if let Some(o) = v.as_object_mut() {
                o.insert("machine".into(), l.machine.clone().into());
                o.insert("owner".into(), l.owner.clone().into());
                o.insert("redacted".into(), l.redacted.into());
            }
            out.line(&v.to_string())?;
        } else {
            let s = |k: &str| {
                l.info
                    .get(k)
                    .and_then(|x| x.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            let first: String = s("firstMessage").chars().take(60).collect();
            out.line(&format!(
                "{}  {}  {}@{}  {}  {}",
                crate::safe::line(&s("modified")),
                crate::safe::line(&l.session_id),
                crate::safe::line(&l.owner),
                crate::safe::line(&l.machine),
                crate::safe::line(&s("cwd")),
                crate::safe::line(&first.replace('\n', " "))
            ))?;
        }
    }
    Ok(!all.is_empty())
}

/// `search --archive`: entries of every visible session, with machine and owner.
pub fn search(
    out: &mut Out,
    url: Option<&str>,
    q: &str,
    mode: query::Mode,
    filter: &query::Filter,
    limit: usize,
    json: bool,
) -> Result<bool> {
    let mut ar = Archive::open(&archive_url(url)?)?;
    let hits = query::search_filtered(&mut ar, q, mode, filter, limit)?;
    for h in &hits {
        if json {
            out.line(
                &serde_json::json!({
                    "sessionId": h.session_id,
                    "entryId": h.entry_id,
                    "role": h.role,
                    "timestamp": h.ts_ms,
                    "owner": h.owner,
                    "machines": h.machines,
                    "text": h.text,
                })
                .to_string(),
            )?;
        } else {
            let lower = h.text.to_lowercase();
            let w = q.split_whitespace().next().unwrap_or("").to_lowercase();
            let at = lower.find(&w).unwrap_or(0).min(h.text.len());
            let mut start = at.saturating_sub(40);
            while !h.text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (at + 80).min(h.text.len());
            while !h.text.is_char_boundary(end) {
                end += 1;
            }
            out.line(&format!(
                "{} {} {} [{}@{}] {}",
                crate::safe::line(&h.session_id),
                crate::safe::line(&h.entry_id),
                crate::safe::line(&h.role),
                crate::safe::line(&h.owner),
                crate::safe::line(&h.machines.join(",")),
                crate::safe::line(&h.text[start..end].replace('\n', " "))
            ))?;
        }
    }
    Ok(!hits.is_empty())
}

static TEMP: std::sync::Mutex<Vec<local::TempDir>> = std::sync::Mutex::new(Vec::new());

/// A private new folder for sessions fetched from the archive (`mkdtemp`: a random name,
/// mode 0700, never one that existed), removed by [`cleanup`].
fn temp_dir() -> Result<PathBuf> {
    let dir = local::private_temp_dir("sessiontree-archive-")?;
    let p = dir.path().to_path_buf();
    TEMP.lock().unwrap_or_else(|e| e.into_inner()).push(dir);
    Ok(p)
}

/// Removes the folders [`fetch_to_temp`] made.
pub fn cleanup() {
    TEMP.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// For `export ID --archive` and `stats ID --archive`: the session's most recently pushed
/// copy in a private temporary file (removed at exit by [`cleanup`]); the user's own when
/// another owner has a session of the same id. The file's name is
/// the copy's when that is a plain name, else the id's, else `session.jsonl`.
pub fn fetch_to_temp(url: Option<&str>, id: &str) -> Result<PathBuf> {
    let mut ar = Archive::open(&archive_url(url)?)?;
    // The user's own copy first (the newest of those), then other owners': another owner
    // may have pushed a session under the same id.
    let all = sessiontree_archive::pull::copies(&mut ar, &[id.to_string()])?;
    let c = all
        .into_iter()
        .filter(|c| c.length > 0)
        .min_by_key(|c| c.owner != ar.role)
        .with_context(|| {
            format!(
                "session {id:?} is not in the archive (or not visible to role {:?})",
                ar.role
            )
        })?;
    let bytes = sessiontree_archive::pull::fetch(&mut ar, &c)?;
    let dir = temp_dir()?;
    let file = c.rel_path.rsplit('/').next().unwrap_or("");
    let by_id = format!("{}.jsonl", c.session_id);
    let name = if local::safe_name(file) && file.ends_with(".jsonl") {
        file
    } else if local::safe_name(&by_id) {
        &by_id
    } else {
        "session.jsonl"
    };
    Ok(local::write_new(&dir, name, &bytes)?)
}
