//! `sessiontree import claude|codex [PATH...]`: Claude Code transcripts and Codex CLI
//! rollouts as Pi sessions, in the session folder of each one's cwd (or `--session-dir`).

use crate::out::Out;
use crate::safe;
use anyhow::Result;
use clap::ValueEnum;
use serde_json::{json, Value};
use sessiontree::dirs;
use sessiontree::store::Aside;
use sessiontree_import::{claude, codex, copies, Conversion, Outcome, Staged};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AgentArg {
    /// Claude Code (`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`).
    Claude,
    /// Codex CLI (`$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    Codex,
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// Whose transcripts: claude (Claude Code) or codex (Codex CLI).
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// Transcript files or folders of them (default: the agent's own folder).
    pub paths: Vec<PathBuf>,
    /// Write every session into this folder instead of Pi's folder for its cwd.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<String>,
    /// Say what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON array: per session its source, path, status and counts.
    #[arg(long)]
    pub json: bool,
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| dirs::resolve(&v))
}

fn default_root(agent: AgentArg) -> PathBuf {
    match agent {
        AgentArg::Claude => env_dir("CLAUDE_CONFIG_DIR")
            .unwrap_or_else(|| dirs::home_dir().join(".claude"))
            .join("projects"),
        AgentArg::Codex => env_dir("CODEX_HOME")
            .unwrap_or_else(|| dirs::home_dir().join(".codex"))
            .join("sessions"),
    }
}

/// Every `*.jsonl` below `root` (or `root` itself), sorted.
fn collect(root: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(root)?;
    if meta.is_file() {
        out.push(root.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let p = e.path();
            let ft = std::fs::metadata(&p).map(|m| m.file_type());
            match ft {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && p.extension().is_some_and(|x| x == "jsonl") => out.push(p),
                _ => {}
            }
        }
    }
    Ok(())
}

struct Done {
    source: PathBuf,
    /// The conversion, its lines dropped once written (memory stays one file's worth).
    conv: Conversion,
    entries: usize,
    result: std::result::Result<Outcome, String>,
    parent_session: Option<String>,
}

fn target_dir(
    conv: &Conversion,
    session_dir: Option<&Path>,
) -> std::result::Result<PathBuf, String> {
    match (session_dir, &conv.cwd) {
        (Some(d), _) => Ok(d.to_path_buf()),
        (None, Some(cwd)) if !cwd.is_empty() => Ok(dirs::default_session_dir(cwd)),
        _ => Err("the transcript names no working directory; give --session-dir".into()),
    }
}

fn stem_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The rollout of Codex session `id`: among the files being imported, else under Codex's
/// sessions folder (rollout names end with the session id).
fn find_rollout(id: &str, files: &[PathBuf]) -> Option<PathBuf> {
    // The id is the transcript's: an empty or odd one would match any file name.
    dirs::validate_session_id(id).ok()?;
    if let Some(p) = files.iter().find(|p| stem_of(p).ends_with(id)) {
        return Some(p.clone());
    }
    let mut all = Vec::new();
    collect(&default_root(AgentArg::Codex), &mut all).ok()?;
    all.into_iter().find(|p| stem_of(p).ends_with(id))
}

fn convert_file(
    agent: AgentArg,
    path: &Path,
    files: &[PathBuf],
    bytes: &mut Vec<u8>,
) -> std::result::Result<Vec<Conversion>, String> {
    // Read into the thread's buffer: a fresh one per file would be mapped and zeroed anew.
    bytes.clear();
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, bytes))
        .map_err(|e| format!("cannot read: {e}"))?;
    let bytes = &bytes[..];
    let stem = stem_of(path);
    Ok(match agent {
        AgentArg::Claude => claude::convert(bytes, &stem),
        AgentArg::Codex => {
            // A fork that continues from its parent's first lines needs the parent's rollout.
            let parent = match codex::fork_parent(bytes) {
                Some((id, Some(_))) => find_rollout(&id, files).and_then(|p| std::fs::read(p).ok()),
                _ => None,
            };
            vec![codex::convert_fork(bytes, &stem, parent.as_deref())]
        }
    })
}

pub fn import(out: &mut Out, a: ImportArgs) -> Result<crate::status::Outcome> {
    let roots = if a.paths.is_empty() {
        vec![default_root(a.agent)]
    } else {
        a.paths.clone()
    };
    let mut files = Vec::new();
    let mut failed = false;
    // The agent's own folder missing (never used on this machine, or another config dir)
    // is "nothing found", said plainly; a PATH given that does not exist is an error.
    let mut no_default_folder = false;
    for r in &roots {
        if a.paths.is_empty() && !r.exists() {
            no_default_folder = true;
            continue;
        }
        if let Err(e) = collect(r, &mut files) {
            eprintln!(
                "sessiontree: {}: {}",
                safe::path(r),
                safe::line(&e.to_string())
            );
            failed = true;
        }
    }
    files.sort();
    files.dedup();
    let session_dir = dirs::session_dir_override(a.session_dir.as_deref());

    // Claude Code transcripts that start with the same line as another one: one is a
    // resume copy of the other, which only the whole set can tell.
    let mut shared_start: HashSet<&Path> = HashSet::new();
    if a.agent == AgentArg::Claude {
        // Each file's first line, read on every core.
        let first_of = |f: &PathBuf| {
            if stem_of(f).starts_with("agent-") {
                return None;
            }
            std::fs::File::open(f)
                .ok()
                .and_then(|r| copies::first_uuid(std::io::BufReader::new(r)))
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = files.len().div_ceil(cores).max(1);
        let first: Vec<Option<String>> = std::thread::scope(|s| {
            let parts: Vec<_> = files
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().map(first_of).collect::<Vec<_>>()))
                .collect();
            parts
                .into_iter()
                .flat_map(|h| h.join().expect("first-line reader"))
                .collect()
        });
        let mut firsts: HashMap<String, Vec<&Path>> = HashMap::new();
        for (f, u) in files.iter().zip(first) {
            if let Some(u) = u {
                firsts.entry(u).or_default().push(f);
            }
        }
        shared_start.extend(firsts.into_values().filter(|v| v.len() > 1).flatten());
    }
    let copies_seen = Mutex::new(copies::Copies::default());

    // Convert (and write what needs no parent) on every core; sessions linked to a parent
    // (subagents, forks, resume copies) wait until every parent's path is known.
    let next = Mutex::new(0usize);
    // Largest transcripts first: the threads then finish together instead of one of them
    // converting a big file alone at the end. (Results keep the files' order.)
    let mut schedule: Vec<usize> = (0..files.len()).collect();
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .collect();
    schedule.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let done: Mutex<Vec<(usize, Done)>> = Mutex::new(Vec::new());
    let waiting: Mutex<Vec<(usize, PathBuf, Conversion)>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    // New files written aside, by order: linked after one sync of their file systems.
    let asides: Mutex<Vec<(usize, Aside)>> = Mutex::new(Vec::new());
    // Twice the cores: a thread held up by the disk (page cache writes are throttled when
    // writeback falls behind) leaves its core to another. (Once per core measures the same.)
    let threads =
        (2 * std::thread::available_parallelism().map_or(1, |n| n.get())).min(files.len().max(1));
    // Many transcripts take a while: a bar on stderr when it is a terminal.
    let pb = crate::ls::progress_bar(files.len(), "importing transcripts");
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut buf = Vec::new();
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(&i) = schedule.get(i) else { break };
                    let path = &files[i];
                    if let Some(pb) = &pb {
                        pb.inc(1);
                    }
                    match convert_file(a.agent, path, &files, &mut buf) {
                        Err(e) => errors
                            .lock()
                            .unwrap()
                            .push((i, format!("{}: {e}", path.display()))),
                        Ok(convs) => {
                            for (k, conv) in convs.into_iter().enumerate() {
                                let order = i * 4 + k;
                                let main_claude =
                                    a.agent == AgentArg::Claude && conv.kind == "main";
                                if main_claude {
                                    copies_seen.lock().unwrap().add(&conv);
                                }
                                let copy = main_claude
                                    && (conv.copied || shared_start.contains(path.as_path()));
                                if conv.parent_source.is_some() || copy {
                                    waiting.lock().unwrap().push((order, path.clone(), conv));
                                    continue;
                                }
                                let (result, aside) =
                                    write_one(&conv, session_dir.as_deref(), None, a.dry_run);
                                if let Some(aside) = aside {
                                    asides.lock().unwrap().push((order, aside));
                                }
                                let entries = conv.lines.len();
                                let mut conv = Conversion {
                                    lines: Vec::new(),
                                    ..conv
                                };
                                // The body's memory serves this thread's next conversion.
                                sessiontree_import::recycle(std::mem::take(&mut conv.body));
                                done.lock().unwrap().push((
                                    order,
                                    Done {
                                        source: path.clone(),
                                        conv,
                                        entries,
                                        result,
                                        parent_session: None,
                                    },
                                ));
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let mut done = done.into_inner().unwrap();
    let mut by_source: HashMap<String, PathBuf> = HashMap::new();
    for (_, d) in &done {
        if let Ok(o) = &d.result {
            by_source.insert(d.conv.source_session_id.clone(), o.path.clone());
        }
    }
    let mut waiting = waiting.into_inner().unwrap();
    // Older sessions first: an original is written before its copies and forks.
    waiting.sort_by(|x, y| {
        (&x.2.timestamp, x.2.last_ms, x.0).cmp(&(&y.2.timestamp, y.2.last_ms, y.0))
    });
    let copies_seen = copies_seen.into_inner().unwrap();
    let mut on_disk = copies::OnDisk::default();
    for (order, source, conv) in waiting {
        let parent_id = conv
            .parent_source
            .clone()
            .or_else(|| copies_seen.original_of(&conv).map(str::to_string));
        let parent_path = parent_id.and_then(|parent_id| {
            by_source.get(&parent_id).cloned().or_else(|| {
                let cwd = conv.cwd.clone().unwrap_or_default();
                sessiontree::folder::find_by_id(&cwd, &parent_id, session_dir.as_deref())
            })
        });
        // A copy whose original was not imported with it: an earlier import's file.
        let parent_path = parent_path.or_else(|| {
            let copy = conv.agent == sessiontree_import::Agent::Claude
                && conv.kind == "main"
                && conv.parent_source.is_none();
            let dir = target_dir(&conv, session_dir.as_deref()).ok()?;
            copy.then(|| on_disk.original_of(&conv, &dir)).flatten()
        });
        let parent_session = parent_path.map(|p| p.to_string_lossy().into_owned());
        let (result, aside) = write_one(
            &conv,
            session_dir.as_deref(),
            parent_session.as_deref(),
            a.dry_run,
        );
        if let Some(aside) = aside {
            asides.lock().unwrap().push((order, aside));
        }
        if let Ok(o) = &result {
            by_source.insert(conv.source_session_id.clone(), o.path.clone());
        }
        let entries = conv.lines.len();
        done.push((
            order,
            Done {
                source,
                conv: Conversion {
                    lines: Vec::new(),
                    body: String::new(),
                    ..conv
                },
                entries,
                result,
                parent_session,
            },
        ));
    }
    link_asides(a.agent, asides.into_inner().unwrap(), &mut done, &files);
    // New files were linked without a folder sync each: one sync per folder now, before
    // any of them is reported written.
    if !a.dry_run {
        let mut folders: Vec<PathBuf> = done
            .iter()
            .filter_map(|(_, d)| match &d.result {
                Ok(o) if o.status == sessiontree_import::Status::Created => {
                    o.path.parent().map(Path::to_path_buf)
                }
                _ => None,
            })
            .collect();
        folders.sort();
        folders.dedup();
        for f in folders {
            if let Err(e) = sessiontree::store::sync_folder(&f) {
                for (_, d) in done.iter_mut() {
                    if matches!(&d.result, Ok(o) if o.path.parent() == Some(f.as_path())) {
                        d.result = Err(format!("{e}"));
                    }
                }
            }
        }
    }
    done.sort_by_key(|d| d.0);
    let mut errors = errors.into_inner().unwrap();
    errors.sort();
    for (_, e) in &errors {
        eprintln!("sessiontree: {}", safe::line(e));
        failed = true;
    }

    let mut json_out = Vec::new();
    let mut any = false;
    for (_, d) in &done {
        for p in &d.conv.problems {
            eprintln!(
                "sessiontree: {}:{}: {}",
                safe::path(&d.source),
                p.line,
                safe::line(&p.message)
            );
        }
        let mut obj = json!({
            "source": d.source.to_string_lossy(),
            "agent": d.conv.agent.name(),
            "kind": d.conv.kind,
            "sessionId": d.conv.session_id,
            "sourceSessionId": d.conv.source_session_id,
            "cwd": d.conv.cwd,
            "entries": d.entries,
            "skipped": d.conv.skipped,
            "problems": d.conv.problems.iter().map(|p| json!({"line": p.line, "message": p.message})).collect::<Vec<_>>(),
        });
        if let Some(p) = &d.parent_session {
            obj["parentSession"] = json!(p);
        }
        match &d.result {
            Ok(o) => {
                any = true;
                obj["path"] = json!(o.path.to_string_lossy());
                obj["status"] = json!(o.status.name());
                obj["added"] = json!(o.added);
                if !a.json {
                    out.line(&safe::path(&o.path))?;
                }
            }
            Err(e) if e == EMPTY => {
                obj["path"] = Value::Null;
                obj["status"] = json!("skipped");
                obj["reason"] = json!("no conversation in the transcript");
            }
            Err(e) => {
                failed = true;
                eprintln!("sessiontree: {}: {}", safe::path(&d.source), safe::line(e));
                obj["path"] = Value::Null;
                obj["status"] = json!("error");
                obj["error"] = json!(e);
            }
        }
        json_out.push(obj);
    }
    for (_, e) in &errors {
        let (source, msg) = e.split_once(": ").unwrap_or((e.as_str(), ""));
        json_out.push(json!({"source": source, "path": null, "status": "error", "error": msg}));
    }
    if a.json {
        out.line(&serde_json::to_string_pretty(&json_out)?)?;
    }
    let agent_name = match a.agent {
        AgentArg::Claude => "Claude Code",
        AgentArg::Codex => "Codex",
    };
    if no_default_folder && !any {
        let (var, home) = match a.agent {
            AgentArg::Claude => ("$CLAUDE_CONFIG_DIR/projects", "~/.claude/projects"),
            AgentArg::Codex => ("$CODEX_HOME/sessions", "~/.codex/sessions"),
        };
        eprintln!(
            "sessiontree: no {agent_name} transcripts: {} does not exist ({agent_name}'s folder is {var}, else {home}; or give the transcripts' PATH)",
            roots[0].display()
        );
    } else if !failed && !any {
        let where_: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        eprintln!(
            "sessiontree: no {agent_name} transcripts under {}",
            where_.join(", ")
        );
    }
    Ok(if failed {
        crate::status::Outcome::Code(2)
    } else if any {
        crate::status::Outcome::Done
    } else {
        crate::status::Outcome::NothingFound
    })
}

const EMPTY: &str = "\u{0}empty";

/// Makes the new files written aside durable with one sync of each file system, then gives
/// each its name. A name another writer took meanwhile: that file is completed like an
/// earlier import's (the source converted again, its missing entries appended).
fn link_asides(
    agent: AgentArg,
    mut asides: Vec<(usize, Aside)>,
    done: &mut [(usize, Done)],
    files: &[PathBuf],
) {
    if asides.is_empty() {
        return;
    }
    asides.sort_by_key(|x| x.0);
    let at: HashMap<usize, usize> = done.iter().enumerate().map(|(i, d)| (d.0, i)).collect();
    let mut folders: Vec<PathBuf> = asides
        .iter()
        .filter_map(|(_, x)| x.path().parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    // What an earlier, killed import left written aside here goes (the dead process's
    // files, untouched for a while).
    for f in &folders {
        sessiontree::store::clean_stale_temps_in(f);
    }
    if let Err(e) = sessiontree::store::sync_file_systems(folders.iter().map(PathBuf::as_path)) {
        // Dropped unlinked: the files written aside go.
        for (order, _) in asides {
            if let Some(&i) = at.get(&order) {
                done[i].1.result = Err(e.to_string());
            }
        }
        return;
    }
    let mut buf = Vec::new();
    for (order, aside) in asides {
        let Some(&i) = at.get(&order) else { continue };
        let d = &mut done[i].1;
        match aside.link() {
            Ok(()) => {}
            Err(sessiontree::Error::Exists { path }) => {
                let again = convert_file(agent, &d.source, files, &mut buf).and_then(|convs| {
                    let conv = convs
                        .into_iter()
                        .find(|c| c.session_id == d.conv.session_id)
                        .ok_or_else(|| "the transcript changed while importing".to_string())?;
                    let dir = path.parent().unwrap_or(Path::new("."));
                    sessiontree_import::write_unsynced(
                        &conv,
                        dir,
                        d.parent_session.as_deref(),
                        false,
                    )
                    .map_err(|e| e.to_string())
                });
                d.result = again;
            }
            Err(e) => d.result = Err(e.to_string()),
        }
    }
}

/// Writes a conversion; a new file is only written aside (linked once every new file of
/// the run is on disk).
fn write_one(
    conv: &Conversion,
    session_dir: Option<&Path>,
    parent_session: Option<&str>,
    dry_run: bool,
) -> (std::result::Result<Outcome, String>, Option<Aside>) {
    if conv.lines.is_empty() {
        return (Err(EMPTY.into()), None);
    }
    let dir = match target_dir(conv, session_dir) {
        Ok(d) => d,
        Err(e) => return (Err(e), None),
    };
    match sessiontree_import::stage(conv, &dir, parent_session, dry_run) {
        Ok(Staged::Done(o)) => (Ok(o), None),
        Ok(Staged::Aside(aside, o)) => (Ok(o), Some(aside)),
        Err(e) => (Err(e.to_string()), None),
    }
}
