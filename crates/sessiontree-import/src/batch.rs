//! Importing a set of transcripts at once: what `sessiontree import` and `sessiontree watch`
//! share, so that a watched transcript gives exactly what a one-shot import gives.
//!
//! Conversions run on every core (largest first); sessions without a parent are written at
//! once, linked ones (subagents, forks, resume copies) once their parent's path is known;
//! new files are written aside and named after one sync per file system; what a killed
//! earlier import left aside is removed.

use crate::{claude, codex, copies, opencode, Agent, Conversion, Outcome, Staged};
use sessiontree::dirs;
use sessiontree::store::Aside;
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The result of a conversion that holds no conversation (nothing is written for it).
pub const EMPTY: &str = "\u{0}empty";

/// The result of a linked session not written yet: its parent is not known and its source
/// is still being written ([`Options::hold_last`]); a later run writes it.
pub const DEFERRED: &str = "\u{0}deferred";

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| dirs::resolve(&v))
}

/// The agent's own transcript folder: Claude Code's `$CLAUDE_CONFIG_DIR/projects` (else
/// `~/.claude/projects`), Codex's `$CODEX_HOME/sessions` (else `~/.codex/sessions`).
pub fn default_root(agent: Agent) -> PathBuf {
    match agent {
        Agent::Claude => env_dir("CLAUDE_CONFIG_DIR")
            .unwrap_or_else(|| dirs::home_dir().join(".claude"))
            .join("projects"),
        Agent::Codex => env_dir("CODEX_HOME")
            .unwrap_or_else(|| dirs::home_dir().join(".codex"))
            .join("sessions"),
        Agent::OpenCode => opencode::default_root(),
    }
}

/// Every `*.jsonl` below `root` (or `root` itself), unsorted.
pub fn collect(root: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
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

/// One session of a batch: its source, what was written, and the conversion's header
/// fields (its lines and body dropped once written: memory stays one file's worth).
pub struct Done {
    pub source: PathBuf,
    pub conv: Conversion,
    /// Entries in the conversion.
    pub entries: usize,
    /// What was written, or why not ([`EMPTY`]: no conversation in the transcript).
    pub result: std::result::Result<Outcome, String>,
    pub parent_session: Option<String>,
}

/// What [`import_files`] did.
pub struct Report {
    /// Per session, in the files' order.
    pub done: Vec<Done>,
    /// Transcripts that could not be read: `path: problem`, sorted.
    pub errors: Vec<String>,
}

/// How [`import_files`] writes.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// Every session into this folder instead of Pi's folder for its cwd.
    pub session_dir: Option<&'a Path>,
    pub dry_run: bool,
    /// Called once per transcript as it is taken up (a progress bar).
    pub progress: Option<&'a (dyn Fn() + Sync)>,
    /// Sources an agent may be writing right now: their conversions are written only as
    /// far as they are final (see `settled_part`); a later run adds the rest once the
    /// source is quiet. (An entry, once written, is never rewritten.)
    pub hold_last: Option<&'a (dyn Fn(&Path) -> bool + Sync)>,
    /// Sources written a while ago but not long enough to be sure (a Codex tool call can
    /// run for minutes with its assistant message open): written up to
    /// [`Conversion::settled`] only (the last-entry rule of `hold_last` no longer applies).
    pub hold_open: Option<&'a (dyn Fn(&Path) -> bool + Sync)>,
}

/// The two holds of [`Options`], as `convert_file` takes them.
type Holds<'a> = (
    Option<&'a (dyn Fn(&Path) -> bool + Sync)>,
    Option<&'a (dyn Fn(&Path) -> bool + Sync)>,
);

/// Whether an entry can still change as its source grows: anything but a user message or
/// a tool result (an assistant message gains the rest of its response's blocks and its
/// usage; a compaction its summary; a session name its title).
fn may_change(conv: &Conversion, line: &crate::Line) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(conv.json(line)) else {
        return true;
    };
    let role = v
        .get("message")
        .and_then(|m| m.get("role"))
        .and_then(|r| r.as_str());
    !(v.get("type").and_then(|t| t.as_str()) == Some("message")
        && matches!(role, Some("user") | Some("toolResult")))
}

/// `conv` cut to what cannot change any more as its source grows: before the first entry
/// its converter keeps open ([`Conversion::settled`]), and without its last entry when
/// that one may still change.
fn settled_part(mut conv: Conversion, last: bool) -> Conversion {
    let mut keep = conv.settled.min(conv.lines.len());
    if last && keep == conv.lines.len() && conv.lines.last().is_some_and(|l| may_change(&conv, l)) {
        keep -= 1;
    }
    if keep < conv.lines.len() {
        conv.lines.truncate(keep);
        let end = conv.lines.last().map_or(0, |l| l.range.end + 1);
        conv.body.truncate(end);
        conv.settled = keep;
    }
    conv
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
    sessiontree::dirs::validate_session_id(id).ok()?;
    if let Some(p) = files.iter().find(|p| stem_of(p).ends_with(id)) {
        return Some(p.clone());
    }
    let mut all = Vec::new();
    collect(&default_root(Agent::Codex), &mut all).ok()?;
    all.into_iter().find(|p| stem_of(p).ends_with(id))
}

fn convert_file(
    agent: Agent,
    path: &Path,
    files: &[PathBuf],
    bytes: &mut Vec<u8>,
    holds: Holds<'_>,
) -> std::result::Result<Vec<Conversion>, String> {
    if agent == Agent::OpenCode {
        return opencode::convert_path(path).map(|convs| hold(convs, path, holds));
    }
    // Read into the thread's buffer: a fresh one per file would be mapped and zeroed anew.
    bytes.clear();
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_to_end(&mut f, bytes))
        .map_err(|e| format!("cannot read: {e}"))?;
    let bytes = &bytes[..];
    let stem = stem_of(path);
    let convs = match agent {
        Agent::Claude => claude::convert(bytes, &stem),
        Agent::Codex => {
            // A fork that continues from its parent's first lines needs the parent's rollout.
            let parent = match codex::fork_parent(bytes) {
                Some((id, Some(_))) => find_rollout(&id, files).and_then(|p| std::fs::read(p).ok()),
                _ => None,
            };
            vec![codex::convert_fork(bytes, &stem, parent.as_deref())]
        }
        // Read above, from the database or the JSON tree.
        Agent::OpenCode => Vec::new(),
    };
    Ok(hold(convs, path, holds))
}

/// The conversions of a source cut to what is final when the source may still be written.
fn hold(convs: Vec<Conversion>, path: &Path, holds: Holds<'_>) -> Vec<Conversion> {
    let (hold_last, hold_open) = holds;
    if hold_last.is_some_and(|hold| hold(path)) {
        convs.into_iter().map(|c| settled_part(c, true)).collect()
    } else if hold_open.is_some_and(|hold| hold(path)) {
        convs.into_iter().map(|c| settled_part(c, false)).collect()
    } else {
        convs
    }
}

/// The Claude Code transcripts among `files` that start with the same line as another one:
/// one is a resume copy of the other, which only the whole set can tell.
fn shared_starts(files: &[PathBuf]) -> HashSet<&Path> {
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
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut firsts: HashMap<String, Vec<&Path>> = HashMap::new();
    for (f, u) in files.iter().zip(first) {
        if let Some(u) = u {
            firsts.entry(u).or_default().push(f);
        }
    }
    firsts
        .into_values()
        .filter(|v| v.len() > 1)
        .flatten()
        .collect()
}

/// Imports `files` (transcripts of `agent`; sorted and deduplicated here) as one run.
pub fn import_files(agent: Agent, files: &[PathBuf], opts: Options<'_>) -> Report {
    let mut files = files.to_vec();
    files.sort();
    files.dedup();
    let files = &files[..];
    let session_dir = opts.session_dir;
    let shared_start = if agent == Agent::Claude {
        shared_starts(files)
    } else {
        HashSet::new()
    };
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
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut buf = Vec::new();
                loop {
                    let i = {
                        let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(&i) = schedule.get(i) else { break };
                    let path = &files[i];
                    if let Some(p) = opts.progress {
                        p();
                    }
                    match convert_file(
                        agent,
                        path,
                        files,
                        &mut buf,
                        (opts.hold_last, opts.hold_open),
                    ) {
                        Err(e) => guard(&errors).push((i, format!("{}: {e}", path.display()))),
                        Ok(convs) => {
                            for (k, conv) in convs.into_iter().enumerate() {
                                let order = (i << 32) + k;
                                let main_claude = matches!(agent, Agent::Claude | Agent::OpenCode)
                                    && conv.kind == "main";
                                if main_claude {
                                    guard(&copies_seen).add(&conv);
                                }
                                let copy = main_claude
                                    && (conv.copied || shared_start.contains(path.as_path()));
                                if conv.parent_source.is_some() || copy {
                                    guard(&waiting).push((order, path.clone(), conv));
                                    continue;
                                }
                                let (result, aside) =
                                    write_one(&conv, session_dir, None, opts.dry_run);
                                if let Some(aside) = aside {
                                    guard(&asides).push((order, aside));
                                }
                                let entries = conv.lines.len();
                                let mut conv = Conversion {
                                    lines: Vec::new(),
                                    ..conv
                                };
                                // The body's memory serves this thread's next conversion.
                                crate::recycle(std::mem::take(&mut conv.body));
                                guard(&done).push((
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
    let mut done = into_inner(done);
    let mut by_source: HashMap<String, PathBuf> = HashMap::new();
    for (_, d) in &done {
        if let Ok(o) = &d.result {
            by_source.insert(d.conv.source_session_id.clone(), o.path.clone());
        }
    }
    let mut waiting = into_inner(waiting);
    // Older sessions first: an original is written before its copies and forks.
    waiting.sort_by(|x, y| {
        (&x.2.timestamp, x.2.last_ms, x.0).cmp(&(&y.2.timestamp, y.2.last_ms, y.0))
    });
    let copies_seen = into_inner(copies_seen);
    let mut on_disk = copies::OnDisk::default();
    for (order, source, conv) in waiting {
        let parent_id = conv
            .parent_source
            .clone()
            .or_else(|| copies_seen.original_of(&conv).map(str::to_string));
        let parent_path = parent_id.and_then(|parent_id| {
            by_source.get(&parent_id).cloned().or_else(|| {
                let cwd = conv.cwd.clone().unwrap_or_default();
                sessiontree::folder::find_by_id(&cwd, &parent_id, session_dir)
            })
        });
        // A copy whose original was not imported with it: an earlier import's file.
        let parent_path = parent_path.or_else(|| {
            let copy = matches!(conv.agent, Agent::Claude | Agent::OpenCode)
                && conv.kind == "main"
                && conv.parent_source.is_none();
            let dir = target_dir(&conv, session_dir).ok()?;
            copy.then(|| on_disk.original_of(&conv, &dir)).flatten()
        });
        // A linked session whose parent is not known yet, from a source still being written
        // (a copy that has not yet gone past its original's lines looks like the older of
        // the two): its file is not created until the source is quiet, since the header,
        // once written, is never changed.
        let new_file =
            target_dir(&conv, session_dir).is_ok_and(|d| !d.join(conv.file_name()).exists());
        if parent_path.is_none() && new_file && opts.hold_last.is_some_and(|hot| hot(&source)) {
            done.push((
                order,
                Done {
                    source,
                    entries: conv.lines.len(),
                    conv: Conversion {
                        lines: Vec::new(),
                        body: String::new(),
                        ..conv
                    },
                    result: Err(DEFERRED.into()),
                    parent_session: None,
                },
            ));
            continue;
        }
        let parent_session = parent_path.map(|p| p.to_string_lossy().into_owned());
        let (result, aside) =
            write_one(&conv, session_dir, parent_session.as_deref(), opts.dry_run);
        if let Some(aside) = aside {
            guard(&asides).push((order, aside));
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
    link_asides(
        agent,
        into_inner(asides),
        &mut done,
        files,
        (opts.hold_last, opts.hold_open),
    );
    // New files were linked without a folder sync each: one sync per folder now, before
    // any of them is reported written.
    if !opts.dry_run {
        let mut folders: Vec<PathBuf> = done
            .iter()
            .filter_map(|(_, d)| match &d.result {
                Ok(o) if o.status == crate::Status::Created => {
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
    let mut errors = into_inner(errors);
    errors.sort();
    Report {
        done: done.into_iter().map(|(_, d)| d).collect(),
        errors: errors.into_iter().map(|(_, e)| e).collect(),
    }
}

/// A mutex's content, even after a panic of another thread while it held it.
fn guard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Makes the new files written aside durable with one sync of each file system, then gives
/// each its name. A name another writer took meanwhile: that file is completed like an
/// earlier import's (the source converted again, its missing entries appended).
fn link_asides(
    agent: Agent,
    mut asides: Vec<(usize, Aside)>,
    done: &mut [(usize, Done)],
    files: &[PathBuf],
    holds: Holds<'_>,
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
                let again =
                    convert_file(agent, &d.source, files, &mut buf, holds).and_then(|convs| {
                        let conv = convs
                            .into_iter()
                            .find(|c| c.session_id == d.conv.session_id)
                            .ok_or_else(|| "the transcript changed while importing".to_string())?;
                        let dir = path.parent().unwrap_or(Path::new("."));
                        crate::write_unsynced(&conv, dir, d.parent_session.as_deref(), false)
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
    match crate::stage(conv, &dir, parent_session, dry_run) {
        Ok(Staged::Done(o)) => (Ok(o), None),
        Ok(Staged::Aside(aside, o)) => (Ok(o), Some(aside)),
        Err(e) => (Err(e.to_string()), None),
    }
}

/// Where each imported copy came from: `<agent dir>/sessiontree-import.sources`, one JSON
/// object a line (`{"copy": PATH, "source": PATH, "agent": NAME}`; a later line for the same copy wins),
/// only ever appended to. `ls` reads it to say which copies outlived their source.
pub fn sources_file() -> PathBuf {
    dirs::agent_dir().join("sessiontree-import.sources")
}

/// Reads [`sources_file`]: copy -> source. Lines that do not parse are skipped; a missing
/// file is an empty map.
pub fn read_sources(file: &Path) -> HashMap<PathBuf, PathBuf> {
    let mut out = HashMap::new();
    let Ok((f, _)) = sessiontree::store::open_regular(file) else {
        return out;
    };
    let mut bytes = Vec::new();
    // A bounded read: the file is ours, but never trusted to size anything.
    if std::io::Read::read_to_end(&mut std::io::Read::take(&f, 256 << 20), &mut bytes).is_err() {
        return out;
    }
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(line) else {
            continue;
        };
        if let (Some(c), Some(s)) = (
            o.get("copy").and_then(|v| v.as_str()),
            o.get("source").and_then(|v| v.as_str()),
        ) {
            out.insert(PathBuf::from(c), PathBuf::from(s));
        }
    }
    out
}

/// Appends to [`sources_file`] the copies of `done` that `known` does not hold yet (and
/// adds them to it).
pub fn record_sources(
    file: &Path,
    done: &[Done],
    known: &mut HashMap<PathBuf, PathBuf>,
) -> std::io::Result<()> {
    let mut lines = String::new();
    for d in done {
        let Ok(o) = &d.result else { continue };
        if known.get(&o.path) == Some(&d.source) {
            continue;
        }
        let line = serde_json::json!({
            "copy": o.path.to_string_lossy(),
            "source": d.source.to_string_lossy(),
            "agent": d.conv.agent.name(),
        });
        lines.push_str(&line.to_string());
        lines.push('\n');
        known.insert(o.path.clone(), d.source.clone());
    }
    if lines.is_empty() {
        return Ok(());
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)?;
    std::io::Write::write_all(&mut f, lines.as_bytes())
}

/// The copies named in `file` (see [`sources_file`]) whose source no longer exists: what
/// `ls` marks "source gone". A source that cannot be looked at for another reason (a
/// folder without permission) is not taken for gone.
pub fn gone_copies(file: &Path) -> std::collections::HashSet<PathBuf> {
    read_sources(file)
        .into_iter()
        .filter(|(_, source)| {
            matches!(std::fs::symlink_metadata(source), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        })
        .map(|(copy, _)| copy)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a watch writes of a transcript cut at any line (the part that cannot change
    /// any more) is, entry for entry and byte for byte, the start of what the whole
    /// transcript converts to: appending the rest later gives a one-shot import's file.
    #[test]
    fn the_settled_part_of_a_growing_source_is_a_prefix_of_its_final_conversion() {
        let mut checked = 0;
        for src in crate::fixture_files() {
            let bytes = std::fs::read(&src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
            let codex = src.to_string_lossy().contains("codex");
            let convert = |b: &[u8]| {
                if codex {
                    vec![crate::codex::convert(b, &stem)]
                } else {
                    crate::claude::convert(b, &stem)
                }
            };
            let finals = convert(&bytes);
            let ends = bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1);
            for end in ends {
                for part in convert(&bytes[..end]) {
                    let part = settled_part(part, true);
                    let Some(fin) = finals.iter().find(|f| f.session_id == part.session_id) else {
                        continue;
                    };
                    assert!(part.lines.len() <= fin.lines.len());
                    for (a, b) in part.lines.iter().zip(&fin.lines) {
                        assert_eq!(
                            (a.id.as_str(), part.json(a)),
                            (b.id.as_str(), fin.json(b)),
                            "{} cut at byte {end}",
                            src.display()
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }
}
