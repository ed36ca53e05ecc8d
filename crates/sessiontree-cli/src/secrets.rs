//! `sessiontree secrets`: the credentials in sessions (every line, so every branch), each
//! as FILE#ID, kind, field and a masked preview. Exit 0 none, 1 found, 2 error.

use crate::out::Out;
use anyhow::{bail, Result};
use serde_json::json;
use sessiontree_secrets::{scan_session, Finding};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const AFTER_HELP: &str = "\
Detected: private key blocks (PEM, OpenSSH), GCP service-account keys and API keys, Google AI
keys, AWS access key ids and secret keys, Azure connection strings and SAS tokens, GitHub
tokens (classic, fine-grained, app, OAuth; checksum verified), GitLab, Slack (bot, user,
webhook URLs), Stripe live keys, OpenAI, Anthropic, Hugging Face, npm and PyPI tokens, JWTs,
URLs with a password, and password=/secret:/api_key= assignments with a high-entropy value.
Ids, types, timestamps and the providers' signatures are never reported.

Each finding: FILE#ID (FILE:LINE for the header or a line without an id), the kind, the
field (a JSON path in the entry, such as message.content[2].text) and a masked preview (its
first characters, never more than a quarter, and its length): the secret itself is never
printed, in text or JSON.

--json: {\"findings\": [{path, line, entryId, header, kind, field, preview}], \"files\": N,
\"filesWithFindings\": M, \"errors\": [{path, error}]}.

Exports redact what this finds by default (export --keep-secrets keeps it); push
--redact-secrets redacts it before it leaves for the archive.";

#[derive(clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// A session file, or a folder: every *.jsonl below it.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub path: Option<PathBuf>,
    /// Every session of the agent dir.
    #[arg(long)]
    pub all: bool,
    /// Print JSON ({"findings": [...]}, see below) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Every `*.jsonl` below `dir`, sorted; folders are entered, links to folders are not.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut items: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>()?;
    items.sort_by_key(|e| e.file_name());
    for e in items {
        let p = e.path();
        let ft = e.file_type()?;
        if ft.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    Ok(())
}

enum FileResult {
    Scanned(Vec<Finding>),
    /// Not a regular file (found in a folder walk): skipped, reported by the walk.
    Skipped,
    Error(String),
}

fn scan_file(path: &Path, buf: &mut Vec<u8>) -> FileResult {
    use std::io::Read;
    buf.clear();
    let (f, m) = match sessiontree::store::open_regular(path) {
        Ok(x) => x,
        Err(sessiontree::Error::NotRegular { what, .. }) => {
            sessiontree::folder::note_skipped(path.to_path_buf(), what);
            return FileResult::Skipped;
        }
        Err(e) => return FileResult::Error(crate::paths::strip_os_code(&e.to_string())),
    };
    // The size is only a hint for the first allocation: the read goes to the end.
    buf.reserve((m.len() as usize).min(1 << 30) + 1);
    if let Err(e) = (&f).read_to_end(buf) {
        return FileResult::Error(format!("{}: {}", path.display(), crate::paths::os_text(&e)));
    }
    let scan = scan_session(buf);
    if !scan.session {
        return FileResult::Error(format!(
            "{}: not a session file (its first line is not a session header)",
            path.display()
        ));
    }
    FileResult::Scanned(scan.findings)
}

fn files_of(a: &Args) -> Result<Vec<PathBuf>> {
    if a.all {
        let agent = sessiontree::dirs::agent_dir();
        if !agent.join("sessions").is_dir() {
            bail!(
                "{}: no such folder (no sessions yet; set PI_CODING_AGENT_DIR or give a folder)",
                agent.join("sessions").display()
            );
        }
        return Ok(sessiontree::list::all_files(&agent));
    }
    let path = a.path.clone().expect("clap requires PATH without --all");
    // A search hit pasted as FILE#ID: the file is scanned.
    let path = crate::target::parse(&path).file;
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            let mut files = Vec::new();
            collect(&path, &mut files).map_err(|e| {
                anyhow::anyhow!("{}: {}", path.display(), crate::paths::os_text(&e))
            })?;
            Ok(files)
        }
        _ => {
            crate::paths::session_file(&path)?;
            Ok(vec![path])
        }
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Exit 0 none found, 1 found, 2 error (a file that could not be read or is not a session).
pub fn run(out: &mut Out, a: Args) -> Result<u8> {
    let files = files_of(&a)?;
    let pb = crate::out::progress_bar(files.len(), "scanning for secrets");
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<FileResult>> = (0..files.len()).map(|_| None).collect();
    let parts: Vec<Vec<(usize, FileResult)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads().min(files.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut buf = Vec::new();
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = files.get(i) else { break };
                        mine.push((i, scan_file(p, &mut buf)));
                        if let Some(pb) = &pb {
                            pb.inc(1);
                        }
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    for (i, r) in parts.into_iter().flatten() {
        results[i] = Some(r);
    }
    let mut findings = 0;
    let mut with = 0;
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut json_findings = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let path = &files[i];
        match r {
            Some(FileResult::Scanned(f)) => {
                if !f.is_empty() {
                    with += 1;
                }
                findings += f.len();
                for x in f {
                    if a.json {
                        json_findings.push(json!({
                            "path": path.display().to_string(),
                            "line": x.line,
                            "entryId": x.entry_id,
                            "header": x.header,
                            "kind": x.kind,
                            "field": x.field,
                            "preview": x.preview,
                        }));
                    } else {
                        let at = match &x.entry_id {
                            Some(id) => format!("{}#{}", path.display(), id),
                            None => format!("{}:{}", path.display(), x.line),
                        };
                        out.line(&format!(
                            "{}  {}  {}  {}",
                            crate::safe::line(&at),
                            out.paint("33", x.kind),
                            crate::safe::line(&x.field),
                            crate::safe::line(&x.preview)
                        ))?;
                    }
                }
            }
            Some(FileResult::Skipped) => {}
            Some(FileResult::Error(e)) => errors.push((i, e.clone())),
            None => errors.push((i, format!("{}: not scanned", path.display()))),
        }
    }
    if a.json {
        let errs: Vec<_> = errors
            .iter()
            .map(|(i, e)| json!({"path": files[*i].display().to_string(), "error": e}))
            .collect();
        out.line(
            &json!({
                "findings": json_findings,
                "files": files.len(),
                "filesWithFindings": with,
                "errors": errs,
            })
            .to_string(),
        )?;
    }
    for (_, e) in &errors {
        eprintln!("sessiontree: {}", crate::safe::line(e));
    }
    if !a.json {
        eprintln!(
            "{findings} credential{} in {with} of {} file{}",
            if findings == 1 { "" } else { "s" },
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    }
    Ok(if !errors.is_empty() {
        2
    } else if findings > 0 {
        1
    } else {
        0
    })
}

/// `share` without `--allow-secrets`: an error naming the entries when the connected
/// role's archived copies of the session hold a credential.
pub fn refuse_leaky_share(ar: &mut sessiontree_archive::Archive, id: &str) -> Result<()> {
    let found = sessiontree_archive::secrets::in_archive(ar, id)?;
    if found.is_empty() {
        return Ok(());
    }
    let mut entries: Vec<String> = Vec::new();
    for (machine, f) in &found {
        let at = match &f.entry_id {
            Some(e) => format!("{e} ({}, from {machine})", f.kind),
            None => format!("line {} ({}, from {machine})", f.line, f.kind),
        };
        if !entries.contains(&at) {
            entries.push(at);
        }
    }
    let more = entries.len().saturating_sub(10);
    entries.truncate(10);
    let list = crate::safe::line(&entries.join(", ")).into_owned();
    bail!(
        "share: session {} holds {} credential{} in the archive: {list}{}; push it again with \
         --redact-secrets, or share anyway with --allow-secrets",
        crate::safe::line(id),
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}
