//! Where the space is (`sessiontree du`) and safe cleanup (`sessiontree prune`).
//!
//! `prune` deletes a local session file (Pi's own or an imported copy) only when all of
//! these hold at the moment it deletes it: it was last modified longer ago than asked and
//! more than a minute ago; its writer lock is free (and is held by prune while it looks
//! and deletes, so no writer of ours can start meanwhile); the archive holds a version of
//! the same session whose bytes, hashed by the server, have the file's length and SHA-256;
//! and the file did not change between the hash and the deletion. A symlink is never
//! followed or deleted. Nothing else is ever deleted (not the agents' own transcripts).
//! An imported copy that goes is recorded in `<agent dir>/sessiontree-import.pruned` with its
//! source's length: import and watch do not write it again until the source grows.

use crate::{clean, show, Error, Result};
use sessiontree::store::WriterLock;
use sessiontree_archive::digest::{stored_digests, Stored};
use sessiontree_archive::Archive;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A file changed this recently is never pruned, whatever `--older-than` says.
pub const RECENT: Duration = Duration::from_secs(60);

/// `30d`, `12h`, `90m`, `45s`, `2w` (a number and a unit).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?}: give a unit (s, m, h, d or w), e.g. 30d"))?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: not a duration (e.g. 30d, 12h, 90m)"))?;
    let secs = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (s, m, h, d or w)")),
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{s:?}: too long"))
}

/// Every regular `*.jsonl` under `root` (symlinks are not followed), with its metadata.
fn session_files(root: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
                out.push((p, m));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The header's `id` and `cwd` (the first line, read up to 64 KiB).
fn header_of(path: &Path) -> Option<(String, String)> {
    let (f, _) = sessiontree::store::open_regular(path).ok()?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&f, 64 << 10), &mut buf).ok()?;
    let line = buf.split(|&b| b == b'\n').next()?;
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    if v.get("type")?.as_str()? != "session" {
        return None;
    }
    Some((
        v.get("id")?.as_str()?.to_string(),
        v.get("cwd")
            .and_then(|c| c.as_str())
            .unwrap_or("")
            .to_string(),
    ))
}

/// Space by one key.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    pub files: u64,
    pub bytes: u64,
}

impl Usage {
    fn add(&mut self, bytes: u64) {
        self.files += 1;
        self.bytes += bytes;
    }
}

/// What `du` found.
#[derive(Debug, Default)]
pub struct DiskReport {
    /// Pi's session files by who wrote them: `pi`, or the agent an import copied from.
    pub by_agent: BTreeMap<String, Usage>,
    /// By session folder: (folder, the cwd its sessions name) -> usage.
    pub by_project: BTreeMap<PathBuf, (String, Usage)>,
    /// The agents' own transcript folders.
    pub sources: Vec<(String, PathBuf, Usage)>,
    pub total: Usage,
    /// sessiontree's own caches in the agent dir (rebuilt when deleted), by name.
    pub caches: Vec<(String, Usage)>,
}

/// One of sessiontree's caches for [`du`]: its name and the files and folders it is made of
/// (a folder counts the regular files directly in it; links are not followed).
pub struct Cache {
    pub name: &'static str,
    pub paths: Vec<PathBuf>,
}

/// The space `paths` take: regular files, and the regular files directly in folders.
fn cache_usage(paths: &[PathBuf]) -> Usage {
    let mut u = Usage::default();
    for p in paths {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if m.is_file() {
            u.add(m.len());
        } else if m.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                if let Ok(m) = std::fs::symlink_metadata(e.path()) {
                    if m.is_file() {
                        u.add(m.len());
                    }
                }
            }
        }
    }
    u
}

/// Walks the session folders under `sessions`, the agents' own folders and sessiontree's
/// caches.
pub fn du(
    sessions: &Path,
    sources: &[crate::Source],
    copies: &HashMap<PathBuf, String>,
    caches: &[Cache],
) -> DiskReport {
    let mut r = DiskReport::default();
    for c in caches {
        r.caches.push((c.name.to_string(), cache_usage(&c.paths)));
    }
    for (p, m) in session_files(sessions) {
        let agent = copies.get(&p).cloned().unwrap_or_else(|| "pi".to_string());
        r.by_agent.entry(agent).or_default().add(m.len());
        let folder = p.parent().unwrap_or(sessions).to_path_buf();
        let e = r
            .by_project
            .entry(folder)
            .or_insert_with(|| (String::new(), Usage::default()));
        if e.0.is_empty() {
            if let Some((_, cwd)) = header_of(&p) {
                e.0 = cwd;
            }
        }
        e.1.add(m.len());
        r.total.add(m.len());
    }
    for s in sources {
        let mut u = Usage::default();
        for (_, m) in session_files(&s.root) {
            u.add(m.len());
        }
        r.sources
            .push((s.agent.name().to_string(), s.root.clone(), u));
    }
    r
}

/// The copies named in the import's sources file, with the agent each came from.
pub fn copies_by_agent(sources_file: &Path) -> HashMap<PathBuf, String> {
    let mut out = HashMap::new();
    let Ok((f, _)) = sessiontree::store::open_regular(sources_file) else {
        return out;
    };
    let mut bytes = Vec::new();
    if std::io::Read::read_to_end(&mut std::io::Read::take(&f, 256 << 20), &mut bytes).is_err() {
        return out;
    }
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let agent = match v.get("agent").and_then(|a| a.as_str()) {
            Some("claude") => "claude-code",
            Some("codex") => "codex",
            Some("gemini") => "gemini-cli",
            Some("opencode") => "opencode",
            Some("copilot") => "copilot-cli",
            _ => continue,
        };
        if let Some(c) = v.get("copy").and_then(|c| c.as_str()) {
            out.insert(PathBuf::from(c), agent.to_string());
        }
    }
    out
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

impl DiskReport {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "total": {"files": self.total.files, "bytes": self.total.bytes},
            "agents": self.by_agent.iter().map(|(a, u)| serde_json::json!({"agent": a, "files": u.files, "bytes": u.bytes})).collect::<Vec<_>>(),
            "projects": self.by_project.iter().map(|(f, (cwd, u))| serde_json::json!({"folder": f.to_string_lossy(), "cwd": cwd, "files": u.files, "bytes": u.bytes})).collect::<Vec<_>>(),
            "sources": self.sources.iter().map(|(a, root, u)| serde_json::json!({"agent": a, "root": root.to_string_lossy(), "files": u.files, "bytes": u.bytes})).collect::<Vec<_>>(),
            "caches": self.caches.iter().map(|(name, u)| serde_json::json!({"cache": name, "files": u.files, "bytes": u.bytes})).collect::<Vec<_>>(),
        })
    }

    /// The human table, a line each (paths and cwds escaped for the terminal).
    pub fn lines(&self) -> Vec<String> {
        let row = |name: &str, u: &Usage| {
            format!(
                "  {:>10}  {:>6} files  {}",
                human_bytes(u.bytes),
                u.files,
                name
            )
        };
        let mut out = vec!["Pi session files by agent:".to_string()];
        for (a, u) in &self.by_agent {
            out.push(row(a, u));
        }
        out.push(row("total", &self.total));
        out.push("by project (largest first):".to_string());
        let mut projects: Vec<_> = self.by_project.iter().collect();
        projects.sort_by(|a, b| b.1 .1.bytes.cmp(&a.1 .1.bytes).then(a.0.cmp(b.0)));
        for (folder, (cwd, u)) in projects {
            let name = if cwd.is_empty() {
                show(folder)
            } else {
                clean(cwd)
            };
            out.push(row(&name, u));
        }
        out.push("the agents' own transcripts:".to_string());
        for (a, root, u) in &self.sources {
            out.push(row(&format!("{a} ({})", show(root)), u));
        }
        if !self.caches.is_empty() {
            out.push("sessiontree's caches (rebuilt when deleted):".to_string());
            for (name, u) in &self.caches {
                out.push(row(name, u));
            }
        }
        out
    }
}

/// One file `prune` deleted (or, with `--dry-run`, would), or left and why.
#[derive(Clone, Debug)]
pub struct PruneItem {
    pub path: PathBuf,
    pub bytes: u64,
    pub session_id: String,
    /// `None`: deleted (would be); else why not.
    pub kept: Option<String>,
}

/// Deletes the session files under `sessions` older than `older_than` that the archive holds
/// byte for byte. Only candidates (old enough) are reported, deleted or kept with a reason.
pub fn prune(
    archive: &mut Archive,
    sessions: &Path,
    agent_dir: &Path,
    older_than: Duration,
    dry_run: bool,
) -> Result<Vec<PruneItem>> {
    let now = SystemTime::now();
    let age = |m: &std::fs::Metadata| {
        m.modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .unwrap_or_default()
    };
    let cutoff = older_than.max(RECENT);
    let mut candidates = Vec::new();
    for (p, m) in session_files(sessions) {
        if age(&m) <= cutoff {
            continue;
        }
        match header_of(&p) {
            Some((id, _)) => candidates.push((p, m, id)),
            None => candidates.push((p, m, String::new())),
        }
    }
    let ids: Vec<String> = {
        let mut v: Vec<String> = candidates
            .iter()
            .filter(|c| !c.2.is_empty())
            .map(|c| c.2.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let stored = stored_digests(archive, &ids).map_err(|e| Error(clean(&e.to_string())))?;
    // An imported copy that goes is recorded with its source's length, so that import and
    // watch do not write it again from the unchanged source.
    let sources =
        sessiontree_import::batch::read_sources(&agent_dir.join("sessiontree-import.sources"));
    let mut pruned = Vec::new();
    let mut out = Vec::new();
    for (path, meta, id) in candidates {
        let kept = check_and_delete(&path, &meta, &id, stored.get(&id), cutoff, dry_run);
        if kept.is_none() && !dry_run {
            if let Some(src) = sources.get(&path) {
                if let Ok(m) = std::fs::metadata(src) {
                    pruned.push((path.clone(), src.clone(), m.len()));
                }
            }
        }
        out.push(PruneItem {
            path,
            bytes: meta.len(),
            session_id: id,
            kept,
        });
    }
    let ledger = sessiontree_import::batch::pruned_file_in(agent_dir);
    sessiontree_import::batch::record_pruned(&ledger, &pruned)
        .map_err(|e| Error(format!("{}: {}", show(&ledger), clean(&e.to_string()))))?;
    Ok(out)
}

/// Deletes one file if every condition holds; else says why not.
fn check_and_delete(
    path: &Path,
    meta: &std::fs::Metadata,
    id: &str,
    stored: Option<&Vec<Stored>>,
    cutoff: Duration,
    dry_run: bool,
) -> Option<String> {
    if id.is_empty() {
        return Some("not a session file (no header)".into());
    }
    let Some(stored) = stored else {
        return Some("not in the archive".into());
    };
    // Held while hashing and deleting: no writer of ours starts meanwhile.
    let _lock = match WriterLock::acquire(path, None) {
        Ok(l) => l,
        Err(sessiontree::Error::Locked { holder, .. }) => {
            return Some(format!(
                "in use (writer lock held by {})",
                clean(&holder.to_string())
            ))
        }
        Err(e) => return Some(clean(&e.to_string())),
    };
    let Ok((file, m)) = sessiontree::store::open_regular(path) else {
        return Some("cannot be read".into());
    };
    if m.ino() != meta.ino() || m.len() != meta.len() || m.mtime() != meta.mtime() {
        return Some("changed while pruning".into());
    }
    let digest = {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        let mut r = std::io::BufReader::with_capacity(1 << 20, file);
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match std::io::Read::read(&mut r, &mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    h.update(&buf[..k]);
                    n += k as u64;
                }
                Err(_) => return Some("cannot be read".into()),
            }
        }
        if n != m.len() {
            return Some("changed while pruning".into());
        }
        h.finalize().to_vec()
    };
    let same = stored
        .iter()
        .any(|s| s.length == m.len() as i64 && s.sha256 == digest);
    if !same {
        return Some("the archive's copy differs (push it first)".into());
    }
    // Looked at again right before deleting: the hash stands for what is deleted.
    match std::fs::symlink_metadata(path) {
        Ok(now) if now.ino() == m.ino() && now.len() == m.len() && now.mtime() == m.mtime() => {}
        _ => return Some("changed while pruning".into()),
    }
    let recent = now_age(&m) <= cutoff;
    if recent {
        return Some("changed in the last minute".into());
    }
    if dry_run {
        return None;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {
            if let Some(dir) = path.parent() {
                let _ = sessiontree::store::sync_folder(dir);
            }
            None
        }
        Err(e) => Some(format!("cannot delete: {e}")),
    }
}

fn now_age(m: &std::fs::Metadata) -> Duration {
    m.modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("30d").unwrap(),
            Duration::from_secs(30 * 86_400)
        );
        assert_eq!(parse_duration("90m").unwrap(), Duration::from_secs(5400));
        assert_eq!(
            parse_duration("2w").unwrap(),
            Duration::from_secs(14 * 86_400)
        );
        assert_eq!(parse_duration("45s").unwrap(), Duration::from_secs(45));
        for bad in ["", "30", "d", "3x", "-1d", "99999999999999999999d", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
