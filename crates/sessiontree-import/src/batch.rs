//! Importing a set of transcripts at once: what `sessiontree import` and `sessiontree watch`
//! share, so that a watched transcript gives exactly what a one-shot import gives.
//!
//! Conversions run on every core (largest first); sessions without a parent are written at
//! once, linked ones (subagents, forks, resume copies) once their parent's path is known;
//! new files are written aside and named after one sync per file system; what a killed
//! earlier import left aside is removed.

use crate::{claude, codex, copies, copilot, gemini, opencode, Agent, Conversion, Outcome, Staged};
use sessiontree::dirs;
use sessiontree::store::Aside;
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The result of a conversion that holds no conversation (nothing is written for it).
pub const EMPTY: &str = "\u{0}empty";

/// The result of a copy `prune` deleted that is not written again: its source has not grown
/// since (see [`Options::pruned`]).
pub const PRUNED: &str = "\u{0}pruned";

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
        Agent::Gemini => env_dir("GEMINI_CLI_HOME")
            .unwrap_or_else(dirs::home_dir)
            .join(".gemini"),
        Agent::OpenCode => opencode::default_root(),
        Agent::Copilot => copilot::default_root().join("session-state"),
    }
}

/// The transcripts of `agent` below `root` (or `root` itself), unsorted: every `*.jsonl`,
/// for Gemini CLI its chat files ([`gemini::is_chat`]; a `session-*.json` of an older
/// release is left out when the CLI made a `.jsonl` of it on resume).
pub fn collect_for(agent: Agent, root: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    match agent {
        Agent::Gemini => {}
        Agent::OpenCode => return crate::opencode::collect(root, out),
        Agent::Copilot => return copilot::collect(root, out),
        Agent::Claude | Agent::Codex => return collect(root, out),
    }
    let start = out.len();
    let meta = std::fs::metadata(root)?;
    if meta.is_file() {
        out.push(root.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            match std::fs::metadata(&p).map(|m| m.file_type()) {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && gemini::is_chat(&p) => out.push(p),
                _ => {}
            }
        }
    }
    let mut k = start;
    while k < out.len() {
        let p = &out[k];
        let converted = p.extension().is_some_and(|x| x == "json") && {
            let mut l = p.clone().into_os_string();
            l.push("l");
            Path::new(&l).exists()
        };
        if converted {
            out.swap_remove(k);
        } else {
            k += 1;
        }
    }
    Ok(())
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
    /// Copies `prune` deleted ([`read_pruned`]: copy -> its source's length then): such a
    /// copy is not written again while its source is no longer than that (the archive
    /// holds it; recreating it would only fill the disk `prune` freed).
    pub pruned: Option<&'a HashMap<PathBuf, u64>>,
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

/// Whether an entry, last in its conversion, is one the source's next lines may replace: a
/// compaction without its summary, or the session's name.
fn open_at_end(conv: &Conversion, line: &crate::Line) -> bool {
    let json = conv.json(line);
    if json.starts_with(r#"{"type":"session_info","#) {
        return true;
    }
    if !json.starts_with(r#"{"type":"compaction","#) {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .is_some_and(|v| v.get("summary").and_then(|s| s.as_str()) == Some(""))
}

/// `conv` cut to what cannot change any more as its source grows: before the first entry
/// its converter keeps open ([`Conversion::settled`]), and without its last entry when
/// that one may still change. The flag: nothing was cut (the conversion is whole, its last
/// line the source's active leaf).
fn settled_part(mut conv: Conversion, last: bool) -> (Conversion, bool) {
    let mut keep = conv.settled.min(conv.lines.len());
    if last && keep == conv.lines.len() && conv.lines.last().is_some_and(|l| may_change(&conv, l)) {
        keep -= 1;
    }
    // A compaction whose summary has not followed yet (Claude Code writes the boundary,
    // then the summary as the next line), or the session's name at the end (a later title
    // line replaces it): open until the source is quiet for good.
    if keep == conv.lines.len() && conv.lines.last().is_some_and(|l| open_at_end(&conv, l)) {
        keep -= 1;
    }
    if keep < conv.lines.len() {
        conv.lines.truncate(keep);
        let end = conv.lines.last().map_or(0, |l| l.range.end + 1);
        conv.body.truncate(end);
        conv.settled = keep;
        return (conv, false);
    }
    (conv, true)
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

/// The segment rollouts Codex writes when a turn is reverted
/// (`rollout-<time>-<thread id>_<segment id>.jsonl`), by thread id: those among the files
/// of a run, and those under the sessions folders (Codex's, and the one each file of the
/// run is in), looked for once per run, the first time a thread needs them. A thread's
/// rollout is converted with all its segments, so the import of either file, alone or
/// with the other, in any order, gives the same session.
struct Segments<'f> {
    files: &'f [PathBuf],
    found: std::sync::OnceLock<Found>,
}

/// Under the folders looked in: segments by thread id, and the other rollouts.
type Found = (HashMap<String, Vec<PathBuf>>, Vec<PathBuf>);

impl<'f> Segments<'f> {
    fn new(files: &'f [PathBuf]) -> Self {
        Segments {
            files,
            found: std::sync::OnceLock::new(),
        }
    }

    /// The folder a rollout's sessions tree starts at (`<root>/YYYY/MM/DD/rollout-...`),
    /// else the rollout's own folder.
    fn root_of(path: &Path) -> Option<PathBuf> {
        let day = path.parent()?;
        let digits = |p: &Path, n: usize| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|s| s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        };
        let month = day.parent()?;
        let year = month.parent()?;
        if digits(day, 2) && digits(month, 2) && digits(year, 4) {
            year.parent().map(Path::to_path_buf)
        } else {
            Some(day.to_path_buf())
        }
    }

    fn found(&self) -> &Found {
        self.found.get_or_init(|| {
            let mut roots: Vec<PathBuf> =
                self.files.iter().filter_map(|f| Self::root_of(f)).collect();
            roots.push(default_root(Agent::Codex));
            roots.sort();
            roots.dedup();
            let mut all = Vec::new();
            for r in roots {
                // A folder that cannot be read has no segments to add.
                let _ = collect(&r, &mut all);
            }
            let mut out: HashMap<String, Vec<PathBuf>> = HashMap::new();
            let mut rollouts = Vec::new();
            for p in all {
                match codex::segment_name(&stem_of(&p)) {
                    Some((thread, _)) => out.entry(thread.to_string()).or_default().push(p),
                    None => rollouts.push(p),
                }
            }
            rollouts.sort();
            (out, rollouts)
        })
    }

    /// The first rollout of thread `id`: among the files of the run, else under the
    /// folders looked in.
    fn base(&self, id: &str) -> Option<PathBuf> {
        let is_base = |f: &&PathBuf| {
            let s = stem_of(f);
            s.ends_with(id) && codex::segment_name(&s).is_none()
        };
        sessiontree::dirs::validate_session_id(id).ok()?;
        self.files
            .iter()
            .find(is_base)
            .or_else(|| self.found().1.iter().find(is_base))
            .cloned()
    }

    /// The segments of thread `id` (one path per file name, the run's own first).
    fn of(&self, id: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        let run = self
            .files
            .iter()
            .filter(|f| codex::segment_name(&stem_of(f)).is_some_and(|(t, _)| t == id));
        let found = self.found().0.get(id).into_iter().flatten();
        for p in run.chain(found) {
            if !out.iter().any(|q| q.file_name() == p.file_name()) {
                out.push(p.clone());
            }
        }
        out
    }
}

/// A Codex rollout converted with the rest of its thread: the thread's rollout and every
/// segment a revert wrote. A segment whose thread's rollout (or an earlier segment of it)
/// is among the files of the run gives nothing (that file's conversion holds it). Also
/// gives the file the thread is being written to now (the newest segment), and whether
/// that one is outside the run.
fn convert_codex(
    path: &Path,
    bytes: &[u8],
    files: &[PathBuf],
    segments: &Segments<'_>,
) -> std::result::Result<(Vec<Conversion>, PathBuf, bool), String> {
    let stem = stem_of(path);
    let read =
        |p: &Path| std::fs::read(p).map_err(|e| format!("{}: cannot read: {e}", p.display()));
    let (thread, base) = match codex::segment_name(&stem) {
        Some((thread, _)) => {
            let is_base = |f: &PathBuf| {
                let s = stem_of(f);
                s.ends_with(thread) && codex::segment_name(&s).is_none()
            };
            let first_segment = files
                .iter()
                .find(|f| codex::segment_name(&stem_of(f)).is_some_and(|(t, _)| t == thread));
            if files.iter().any(is_base) || first_segment.is_some_and(|f| f != path) {
                return Ok((Vec::new(), path.to_path_buf(), false));
            }
            (thread.to_string(), segments.base(thread))
        }
        None => (stem_id_of(&stem), None),
    };
    let base_bytes = match &base {
        Some(b) => Some(read(b)?),
        None => None,
    };
    let (main_path, main_bytes): (&Path, &[u8]) = match (&base, &base_bytes) {
        (Some(b), Some(bb)) => (b, bb),
        _ => (path, bytes),
    };
    let main_stem = stem_of(main_path);
    let mut segs: Vec<(i64, PathBuf, Vec<u8>)> = Vec::new();
    for p in segments.of(&thread) {
        if p.file_name() == main_path.file_name() {
            continue;
        }
        let b = if p == path { bytes.to_vec() } else { read(&p)? };
        segs.push((codex::segment_time(&b), p, b));
    }
    segs.sort_by(|a, b| (a.0, a.1.file_name()).cmp(&(b.0, b.1.file_name())));
    let stems: Vec<String> = segs.iter().map(|s| stem_of(&s.1)).collect();
    let list: Vec<codex::Segment<'_>> = segs
        .iter()
        .zip(&stems)
        .map(|(s, stem)| codex::Segment { bytes: &s.2, stem })
        .collect();
    // A fork that continues from its parent's first lines needs the parent's rollout.
    let parent = match codex::fork_parent(main_bytes) {
        Some((id, Some(_))) => find_rollout(&id, files).and_then(|p| std::fs::read(p).ok()),
        _ => None,
    };
    let conv = codex::convert_thread(main_bytes, &main_stem, parent.as_deref(), &list);
    let (hot, outside) = match segs.last() {
        Some((_, p, _)) => (p.clone(), !files.contains(p)),
        None => (main_path.to_path_buf(), false),
    };
    Ok((vec![conv], hot, outside))
}

/// The session id at the end of a rollout's file stem.
fn stem_id_of(stem: &str) -> String {
    stem.get(stem.len().saturating_sub(36)..)
        .unwrap_or(stem)
        .to_string()
}

fn convert_file(
    agent: Agent,
    path: &Path,
    files: &[PathBuf],
    bytes: &mut Vec<u8>,
    holds: Holds<'_>,
    segments: &Segments<'_>,
) -> std::result::Result<Vec<(Conversion, bool)>, String> {
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
    let (convs, hot, outside) = match agent {
        Agent::Claude => (claude::convert(bytes, &stem), path.to_path_buf(), false),
        Agent::Codex => convert_codex(path, bytes, files, segments)?,
        Agent::Gemini => {
            let (cwd, parent) = gemini::context_of(path);
            let conv = gemini::convert(bytes, &stem, cwd.as_deref(), parent.as_deref());
            (vec![conv], path.to_path_buf(), false)
        }
        Agent::Copilot => (
            copilot::convert_all_named(
                bytes,
                &copilot::folder_id(path),
                copilot::workspace_name(path).as_deref(),
            ),
            path.to_path_buf(),
            false,
        ),
        // Read above, from the database or the JSON tree.
        Agent::OpenCode => (Vec::new(), path.to_path_buf(), false),
    };
    let (hold_last, _) = holds;
    Ok(if outside && hold_last.is_some() {
        // The segment being written is not among the files watched in this run: written
        // only as far as its converter keeps nothing open.
        convs.into_iter().map(|c| settled_part(c, false)).collect()
    } else {
        hold(convs, &hot, holds)
    })
}

/// The conversions of a source cut to what is final when the source may still be written,
/// each with whether it is whole.
fn hold(convs: Vec<Conversion>, hot: &Path, holds: Holds<'_>) -> Vec<(Conversion, bool)> {
    convs.into_iter().map(|c| hold_one(c, hot, holds)).collect()
}

/// [`hold`] of one conversion.
fn hold_one(conv: Conversion, hot: &Path, holds: Holds<'_>) -> (Conversion, bool) {
    let (hold_last, hold_open) = holds;
    if hold_last.is_some_and(|hold| hold(hot)) {
        settled_part(conv, true)
    } else if hold_open.is_some_and(|hold| hold(hot)) {
        settled_part(conv, false)
    } else {
        (conv, true)
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
    let segments = Segments::new(files);

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
    let waiting: Mutex<Vec<(usize, PathBuf, Conversion, bool)>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());
    // New files written aside, by order: linked after one sync of their file systems.
    let asides: Mutex<Vec<(usize, Aside)>> = Mutex::new(Vec::new());
    // Twice the cores: a thread held up by the disk (page cache writes are throttled when
    // writeback falls behind) leaves its core to another. (Once per core measures the same.)
    let threads =
        (2 * std::thread::available_parallelism().map_or(1, |n| n.get())).min(files.len().max(1));
    // One conversion: written now, or set aside until its parent is written.
    let handle = |i: usize, path: &PathBuf, k: usize, conv: Conversion, whole: bool| {
        let order = (i << 32) + k;
        let main_claude = matches!(agent, Agent::Claude | Agent::OpenCode) && conv.kind == "main";
        if main_claude {
            guard(&copies_seen).add(&conv);
        }
        let copy = main_claude && (conv.copied || shared_start.contains(path.as_path()));
        if conv.parent_source.is_some() || copy {
            guard(&waiting).push((order, path.clone(), conv, whole));
            return;
        }
        let (result, aside) = write_one(
            &conv,
            whole,
            (path, opts.pruned),
            session_dir,
            None,
            opts.dry_run,
        );
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
    };
    let holds = (opts.hold_last, opts.hold_open);
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
                    if agent == Agent::OpenCode {
                        // A database holds many sessions: each one written as soon as it
                        // is converted, on the converter's threads.
                        let each = |k: usize, conv: Conversion| {
                            let (conv, whole) = hold_one(conv, path, holds);
                            handle(i, path, k, conv, whole);
                        };
                        if let Err(e) = opencode::convert_each(path, &each) {
                            guard(&errors).push((i, format!("{}: {e}", path.display())));
                        }
                        continue;
                    }
                    match convert_file(agent, path, files, &mut buf, holds, &segments) {
                        Err(e) => guard(&errors).push((i, format!("{}: {e}", path.display()))),
                        Ok(convs) => {
                            for (k, (conv, whole)) in convs.into_iter().enumerate() {
                                handle(i, path, k, conv, whole);
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
    for (order, source, conv, whole) in waiting {
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
        // the two): its file is not created until the source is quiet for good (the wait
        // of `hold_open`: a resume copy can sit at its original's lines while the user
        // types), since the header, once written, is never changed.
        let new_file =
            target_dir(&conv, session_dir).is_ok_and(|d| !d.join(conv.file_name()).exists());
        let writing = opts.hold_last.is_some_and(|hot| hot(&source))
            || opts.hold_open.is_some_and(|warm| warm(&source));
        if parent_path.is_none() && new_file && writing {
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
        let (result, aside) = write_one(
            &conv,
            whole,
            (&source, opts.pruned),
            session_dir,
            parent_session.as_deref(),
            opts.dry_run,
        );
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
        &segments,
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
    segments: &Segments<'_>,
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
                let again = convert_file(agent, &d.source, files, &mut buf, holds, segments)
                    .and_then(|convs| {
                        let (conv, whole) = convs
                            .into_iter()
                            .find(|c| c.0.session_id == d.conv.session_id)
                            .ok_or_else(|| "the transcript changed while importing".to_string())?;
                        let dir = path.parent().unwrap_or(Path::new("."));
                        let parent = d.parent_session.as_deref();
                        crate::write_part_unsynced(&conv, dir, parent, false, whole)
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
    whole: bool,
    (source, pruned): (&Path, Option<&HashMap<PathBuf, u64>>),
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
    let was_pruned = |path: &Path| {
        let Some(&len) = pruned.and_then(|p| p.get(path)) else {
            return false;
        };
        std::fs::symlink_metadata(path).is_err()
            && std::fs::metadata(source).is_ok_and(|m| m.len() <= len)
    };
    if conv.path_in(&dir).is_ok_and(|p| was_pruned(&p)) {
        return (Err(PRUNED.into()), None);
    }
    match crate::stage_part(conv, &dir, parent_session, dry_run, whole) {
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

/// What `prune` deleted: `<agent dir>/sessiontree-import.pruned`, one JSON object a line
/// (`{"copy": PATH, "source": PATH, "sourceBytes": N, "pruned": ISO-TIME}`), only ever
/// appended to. Import and watch do not write such a copy again while its source is no
/// longer than `sourceBytes` (`import --include-pruned` does).
pub fn pruned_file_in(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessiontree-import.pruned")
}

/// Reads a [`pruned_file_in`] file: copy -> its source's length when it was pruned (a later
/// line for the same copy wins). Lines that do not parse are skipped; a missing file is an
/// empty map.
pub fn read_pruned(file: &Path) -> HashMap<PathBuf, u64> {
    let mut out = HashMap::new();
    let Ok((f, _)) = sessiontree::store::open_regular(file) else {
        return out;
    };
    let mut bytes = Vec::new();
    if std::io::Read::read_to_end(&mut std::io::Read::take(&f, 256 << 20), &mut bytes).is_err() {
        return out;
    }
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(line) else {
            continue;
        };
        if let (Some(c), Some(n)) = (
            o.get("copy").and_then(|v| v.as_str()),
            o.get("sourceBytes").and_then(|v| v.as_u64()),
        ) {
            out.insert(PathBuf::from(c), n);
        }
    }
    out
}

/// Appends to the [`pruned_file_in`] file one line per deleted copy: (copy, its source, the
/// source's length now).
pub fn record_pruned(file: &Path, pruned: &[(PathBuf, PathBuf, u64)]) -> std::io::Result<()> {
    if pruned.is_empty() {
        return Ok(());
    }
    let now = sessiontree::date::now_iso();
    let mut lines = String::new();
    for (copy, source, len) in pruned {
        let line = serde_json::json!({
            "copy": copy.to_string_lossy(),
            "source": source.to_string_lossy(),
            "sourceBytes": len,
            "pruned": now,
        });
        lines.push_str(&line.to_string());
        lines.push('\n');
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)?;
    std::io::Write::write_all(&mut f, lines.as_bytes())?;
    f.sync_data()
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

    /// `part`'s entries are the first of `fin`'s, id for id and byte for byte (`at` says
    /// where the source was cut, for the failure).
    fn assert_starts(part: &Conversion, fin: &Conversion, at: &dyn std::fmt::Display) {
        assert!(part.lines.len() <= fin.lines.len(), "{at}");
        for (a, b) in part.lines.iter().zip(&fin.lines) {
            assert_eq!(
                (a.id.as_str(), part.json(a)),
                (b.id.as_str(), fin.json(b)),
                "{at}"
            );
        }
    }

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
            let in_gemini = src.to_string_lossy().contains("/gemini");
            let (cwd, parent) = crate::gemini::context_of(&src);
            let in_copilot = src.to_string_lossy().contains("/copilot");
            let convert = |b: &[u8]| {
                if in_copilot {
                    crate::copilot::convert_all(b, "fixture")
                } else if in_gemini {
                    vec![crate::gemini::convert(
                        b,
                        &stem,
                        cwd.as_deref(),
                        parent.as_deref(),
                    )]
                } else if codex {
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
                    let part = settled_part(part, true).0;
                    let Some(fin) = finals.iter().find(|f| f.session_id == part.session_id) else {
                        continue;
                    };
                    let at = format!("{} cut at byte {end}", src.display());
                    assert_starts(&part, fin, &at);
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }

    /// A Codex rollout cut right after a response's usage record (its tool still running,
    /// or the agent gone) converts, as it is, to the start of the finished rollout's
    /// conversion: a watch that writes it whole once the rollout was quiet for
    /// `--open-quiet` has the message's usage and stop reason right, although the
    /// response's `token_count` comes only after the tool ran.
    #[test]
    fn a_codex_rollout_cut_after_a_usage_record_is_the_start_of_its_final_conversion() {
        let mut checked = 0;
        for src in crate::fixture_files() {
            if !src.to_string_lossy().contains("codex") {
                continue;
            }
            let bytes = std::fs::read(&src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
            let fin = crate::codex::convert(&bytes, &stem);
            let mut end = 0;
            for line in bytes.split_inclusive(|&b| b == b'\n') {
                end += line.len();
                let record = br#""type":"token_usage_record""#;
                if !line.windows(record.len()).any(|w| w == record) {
                    continue;
                }
                let part = crate::codex::convert(&bytes[..end], &stem);
                assert_starts(&part, &fin, &format!("{} cut at byte {end}", src.display()));
                checked += 1;
            }
        }
        assert!(checked >= 30, "{checked}");
    }

    /// The same for a Codex thread whose newest segment (written by a revert) is growing:
    /// what a watch writes of the thread while Codex writes that segment is the start of
    /// the thread's final conversion.
    #[test]
    fn the_settled_part_of_a_thread_with_a_growing_segment_is_a_prefix_of_its_final_conversion() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex-revert/sessions/2026/12/01");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let read: Vec<(Vec<u8>, String)> = files
            .iter()
            .map(|f| (std::fs::read(f).unwrap(), stem_of(f)))
            .collect();
        let (base, mut segs): (Vec<_>, Vec<_>) = read
            .iter()
            .partition(|(_, s)| codex::segment_name(s).is_none());
        segs.sort_by_key(|(b, s)| (codex::segment_time(b), s.clone()));
        assert_eq!((base.len(), segs.len()), (1, 2));
        let (base_bytes, base_stem) = base[0];
        fn list<'s>(
            first: &'s (Vec<u8>, String),
            last: &'s [u8],
            stem: &'s str,
        ) -> Vec<codex::Segment<'s>> {
            vec![
                codex::Segment {
                    bytes: &first.0,
                    stem: &first.1,
                },
                codex::Segment { bytes: last, stem },
            ]
        }
        let newest = &segs[1].0;
        let fin = codex::convert_thread(
            base_bytes,
            base_stem,
            None,
            &list(segs[0], newest, &segs[1].1),
        );
        // The segments' entries follow the rollout's.
        assert!(fin.lines.len() > codex::convert(base_bytes, base_stem).lines.len() + 20);
        let mut checked = 0;
        for end in (0..newest.len()).filter(|&i| newest[i] == b'\n') {
            let part = codex::convert_thread(
                base_bytes,
                base_stem,
                None,
                &list(segs[0], &newest[..=end], &segs[1].1),
            );
            for last in [true, false] {
                let part = settled_part(part.clone(), last).0;
                assert_starts(&part, &fin, &format!("cut at byte {end}"));
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked}");
    }

    /// What a watch writes of a Claude Code transcript quiet for a second but not for good
    /// (`hold_open`), cut between two responses (an agent writes a response's lines
    /// together), is entry for entry the start of what the whole transcript converts to: a
    /// compaction waits for its summary, the session's name for a later title.
    #[test]
    fn the_part_written_while_a_source_may_still_grow_is_a_prefix_of_its_final_conversion() {
        let mut checked = 0;
        for src in crate::fixture_files() {
            if src.to_string_lossy().contains("codex") {
                continue;
            }
            let bytes = std::fs::read(&src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
            let finals = crate::claude::convert(&bytes, &stem);
            let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
            let response = |l: &[u8]| {
                serde_json::from_slice::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| v["message"]["id"].as_str().map(str::to_string))
            };
            let mut end = 0;
            for (i, l) in lines.iter().enumerate() {
                end += l.len();
                let next = lines.get(i + 1).copied();
                if next.is_some_and(|n| response(n).is_some() && response(n) == response(l)) {
                    continue;
                }
                for part in crate::claude::convert(&bytes[..end], &stem) {
                    let part = settled_part(part, false).0;
                    let Some(fin) = finals.iter().find(|f| f.session_id == part.session_id) else {
                        continue;
                    };
                    let at = format!("{} cut after line {}", src.display(), i + 1);
                    assert_starts(&part, fin, &at);
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// A source seen whole (quiet) and then again while it is being written (its last
    /// entry held back, though already in the file): the second look adds nothing. The
    /// held-back conversion's last line is not the source's active leaf, so no entry
    /// moving the leaf to it may be appended (a one-shot import never writes one).
    #[test]
    fn a_held_back_look_after_a_whole_one_adds_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut checked = 0;
        for (n, src) in crate::fixture_files().iter().enumerate() {
            if src.to_string_lossy().contains("codex") {
                continue;
            }
            let bytes = std::fs::read(src).unwrap();
            let stem = src.file_stem().unwrap().to_string_lossy().into_owned();
            let ends = bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1);
            for end in ends {
                let dir = tmp.path().join(format!("{n}-{end}"));
                for conv in crate::claude::convert(&bytes[..end], &stem) {
                    if conv.lines.is_empty() {
                        continue;
                    }
                    crate::write(&conv, &dir, None, false).unwrap();
                    let (part, whole) = settled_part(conv, true);
                    if whole || part.lines.is_empty() {
                        continue;
                    }
                    let o = crate::write_part_unsynced(&part, &dir, None, false, whole).unwrap();
                    assert_eq!(
                        (o.status, o.added),
                        (crate::Status::Unchanged, 0),
                        "{} cut at byte {end}",
                        src.display()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "{checked}");
    }
    /// A resume copy that has not yet gone past its original's lines cannot be told from
    /// its original: while its transcript may still grow (written recently: `hold_open`)
    /// its file is not created (its header, never changed later, would lack the link);
    /// once quiet for good it is written as a one-shot import writes it.
    #[test]
    fn a_resume_copy_still_at_its_originals_lines_waits_until_quiet_for_good() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
        let tmp = tempfile::tempdir().unwrap();
        let original = tmp
            .path()
            .join("8e2b6c3d-7a19-4f0e-b1d4-6c2f9e1a5b02.jsonl");
        let copy = tmp
            .path()
            .join("2c9a7e4f-5d1b-4a8e-9f3c-7e6d5b4a3c05.jsonl");
        std::fs::copy(fixtures.join(original.file_name().unwrap()), &original).unwrap();
        let all = std::fs::read(fixtures.join(copy.file_name().unwrap())).unwrap();
        let head: Vec<u8> = all
            .split_inclusive(|&b| b == b'\n')
            .take(2)
            .flatten()
            .copied()
            .collect();
        std::fs::write(&copy, head).unwrap();
        let out = tmp.path().join("out");
        let files = [original.clone(), copy.clone()];
        let result_of_copy = |warm: bool| {
            let hold = move |_: &Path| warm;
            let r = import_files(
                Agent::Claude,
                &files,
                Options {
                    session_dir: Some(&out),
                    hold_open: Some(&hold),
                    ..Options::default()
                },
            );
            let d = r.done.into_iter().find(|d| d.source == copy).unwrap();
            d.result.map(|o| o.status)
        };
        assert_eq!(result_of_copy(true), Err(DEFERRED.to_string()));
        assert_eq!(result_of_copy(false), Ok(crate::Status::Created));
    }
}
