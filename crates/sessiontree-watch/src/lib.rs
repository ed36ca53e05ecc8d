//! # sessiontree-watch
//!
//! `sessiontree watch`: follows the coding agents' transcript folders (Claude Code's
//! projects, Codex's sessions, any folder named) and keeps a Pi copy of every transcript as
//! it is written, through the same batch import `sessiontree import` runs
//! ([`sessiontree_import::batch`]), so a watched transcript gives what a one-shot import
//! gives. Changes are seen through inotify (the `notify` crate); a periodic rescan that only
//! `stat`s catches what events missed (network folders, an overflowed queue).
//!
//! * **Catch-up first.** At start every transcript is imported (the copies of an earlier
//!   run only compared, nothing rewritten), so whatever was written while no watch ran
//!   is taken in: a kill at any point loses nothing, and the writer's append-what-is-missing
//!   makes a second pass add no duplicate.
//! * **An entry is written once it is final.** The last entry of a transcript that changed
//!   within [`Config::quiet`] may still grow (Claude Code writes a response block by block;
//!   Codex adds to the turn's message): it is held back until the next line follows it or
//!   the transcript is quiet, then written. Nothing once written is rewritten.
//! * **Copies outlive their source.** A transcript that disappears is logged; its copy is
//!   left as it is. Nothing here ever deletes a file because a source went away.
//! * **A pruned copy stays pruned.** A copy `prune` deleted (the archive holds it) is not
//!   written again while its source has not grown since ([`batch::read_pruned`]).
//! * **One watch per agent dir**: the lock `<agent dir>/sessiontree-watch.lock` (the same
//!   lock as a session writer's), held while running; a second one is refused naming it.
//! * **Quiet when idle**: no timer reads files; the rescan only stats, every
//!   [`Config::rescan`].
//! * **A journal of the sessions folder** (Linux, [`journal`]): every change of a session
//!   file under `<agent dir>/sessions`, so that search, `ls` and the browser stat only the
//!   files that changed ([`sessiontree::changes`]).
//!
//! [`disk`] is `du` and `prune`; [`service`] the login service (systemd user unit, launchd
//! agent); [`status`] the small file a running watch keeps up to date.

pub mod disk;
#[cfg(target_os = "linux")]
pub mod journal;
pub mod service;
pub mod status;

use notify::{RecursiveMode, Watcher};
use sessiontree::store::WriterLock;
use sessiontree_import::batch::{self, Done};
use sessiontree_import::Agent;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// An error: one line naming the file or folder and what went wrong.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// A folder of transcripts of one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub agent: Agent,
    pub root: PathBuf,
}

/// What to watch and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// Pi's agent dir: the lock, the status file and (by default) the copies live there.
    pub agent_dir: PathBuf,
    pub sources: Vec<Source>,
    /// Every copy into this folder instead of Pi's folder for its cwd.
    pub session_dir: Option<PathBuf>,
    /// Push what changed to this archive (as `sync --watch` does).
    pub archive: Option<String>,
    /// How often every folder is walked and each transcript `stat`ed (the fallback for
    /// missed events).
    pub rescan: Duration,
    /// A transcript unchanged this long has its last entry written too (an agent writes
    /// a response's lines together).
    pub quiet: Duration,
    /// A transcript unchanged this long has the entries its converter keeps open written
    /// too (a Codex turn's assistant message, open while its tool calls run).
    pub open_quiet: Duration,
    /// After an event, how long to wait for more before importing (one import per burst).
    pub settle: Duration,
    /// No inotify: only the rescan (folders where events do not arrive, such as some
    /// network file systems).
    pub poll: bool,
}

impl Config {
    /// Pi's agent dir and the agents' own folders, with the default intervals.
    pub fn new(agent_dir: PathBuf, sources: Vec<Source>) -> Config {
        Config {
            agent_dir,
            sources,
            session_dir: None,
            archive: None,
            rescan: Duration::from_secs(30),
            quiet: Duration::from_millis(1000),
            open_quiet: Duration::from_secs(30),
            settle: Duration::from_millis(50),
            poll: false,
        }
    }
}

/// The agents' own folders: Claude Code's, Codex's, Gemini CLI's, OpenCode's and GitHub
/// Copilot CLI's.
pub fn default_sources() -> Vec<Source> {
    [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::OpenCode,
        Agent::Copilot,
    ]
    .into_iter()
    .map(|agent| Source {
        agent,
        root: batch::default_root(agent),
    })
    .collect()
}

/// Control characters of a path or message shown on a terminal, escaped: file names and
/// lock files are not ours to trust.
pub fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn show(p: &Path) -> String {
    clean(&p.to_string_lossy())
}

/// What `stat` says of a transcript; a change of any field means "look again".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    len: u64,
    mtime: (i64, i64),
    ino: u64,
}

fn stat(p: &Path) -> Option<Stat> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    if !m.is_file() {
        return None;
    }
    let mut st = Stat {
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ino: m.ino(),
    };
    // OpenCode's database in WAL mode: what it writes goes to the WAL first.
    if p.file_name().is_some_and(|n| n == OPENCODE_DB) {
        if let Ok(w) = std::fs::metadata(p.with_file_name("opencode.db-wal")) {
            st.len = st.len.wrapping_add(w.len());
            st.mtime = st.mtime.max((w.mtime(), w.mtime_nsec()));
        }
    }
    Some(st)
}

/// OpenCode's database: the one source of an OpenCode data folder the watch follows (the
/// `storage/` tree of older releases is for `import`).
const OPENCODE_DB: &str = "opencode.db";

/// The database a change of OpenCode's database, WAL or rollback journal is a change of
/// (not its `-shm`, which readers write too).
fn opencode_db_of(p: &Path) -> Option<PathBuf> {
    let name = p.file_name()?.to_str()?;
    matches!(
        name,
        "opencode.db" | "opencode.db-wal" | "opencode.db-journal"
    )
    .then(|| p.with_file_name(OPENCODE_DB))
}

/// The transcripts of a source: an OpenCode data folder's database, else every `*.jsonl`.
fn walk_source(s: &Source) -> Vec<PathBuf> {
    if s.agent == Agent::OpenCode {
        let db = s.root.join(OPENCODE_DB);
        return if db.is_file() { vec![db] } else { Vec::new() };
    }
    walk(&s.root)
}

fn modified(s: &Stat) -> SystemTime {
    let (sec, nsec) = s.mtime;
    if sec < 0 {
        return SystemTime::UNIX_EPOCH;
    }
    SystemTime::UNIX_EPOCH + Duration::new(sec as u64, nsec.clamp(0, 999_999_999) as u32)
}

/// Every `*.jsonl` under `root` (none when it does not exist). Symlinked folders are not
/// entered (a link to a parent would make the walk endless); a symlinked transcript is
/// taken when it resolves to a regular file.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl")
                && (ft.is_file() || (ft.is_symlink() && p.is_file()))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One transcript as the watch knows it.
struct Known {
    /// What it looked like when it was last imported (None: not imported yet).
    imported: Option<Stat>,
    /// Imported without its last entry or its open entries: imported again once it is this
    /// old (unchanged).
    held: Option<Duration>,
    /// The Pi copies made of it.
    copies: Vec<PathBuf>,
}

/// The running watch.
struct Watch<'a> {
    cfg: &'a Config,
    known: BTreeMap<PathBuf, Known>,
    /// Claude Code transcripts by their first line's uuid: a resume copy shares it with its
    /// original, and the two are imported together, as one `import` run would.
    firsts: HashMap<String, BTreeSet<PathBuf>>,
    first_of: HashMap<PathBuf, String>,
    sources_file: PathBuf,
    recorded: HashMap<PathBuf, PathBuf>,
    status: status::Status,
    log: &'a mut dyn FnMut(&str),
}

impl Watch<'_> {
    fn agent_of(&self, p: &Path) -> Option<Agent> {
        self.cfg
            .sources
            .iter()
            .filter(|s| p.starts_with(&s.root))
            .max_by_key(|s| s.root.as_os_str().len())
            .map(|s| s.agent)
    }

    fn note_first(&mut self, p: &Path, agent: Agent) {
        if agent != Agent::Claude || self.first_of.contains_key(p) {
            return;
        }
        let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
        if stem.is_some_and(|s| s.starts_with("agent-")) {
            return;
        }
        let Ok(f) = std::fs::File::open(p) else {
            return;
        };
        if let Some(u) = sessiontree_import::copies::first_uuid(std::io::BufReader::new(f)) {
            self.firsts
                .entry(u.clone())
                .or_default()
                .insert(p.to_path_buf());
            self.first_of.insert(p.to_path_buf(), u);
        }
    }

    /// Imports `paths` (changed or new transcripts), with the transcripts that share a
    /// first line with one of them; logs what was written.
    fn import(&mut self, paths: BTreeSet<PathBuf>) {
        let now = SystemTime::now();
        let mut by_agent: BTreeMap<&'static str, (Agent, BTreeSet<PathBuf>)> = BTreeMap::new();
        let mut stats: HashMap<PathBuf, Stat> = HashMap::new();
        for p in paths {
            let Some(agent) = self.agent_of(&p) else {
                continue;
            };
            let Some(st) = stat(&p) else { continue };
            stats.insert(p.clone(), st);
            self.note_first(&p, agent);
            let set = &mut by_agent
                .entry(agent.name())
                .or_insert((agent, BTreeSet::new()))
                .1;
            if let Some(same) = self.first_of.get(&p).and_then(|u| self.firsts.get(u)) {
                for q in same {
                    if q.exists() {
                        set.insert(q.clone());
                    }
                }
            }
            set.insert(p);
        }
        for (_, (agent, set)) in by_agent {
            let files: Vec<PathBuf> = set.into_iter().collect();
            for f in &files {
                if !stats.contains_key(f) {
                    if let Some(st) = stat(f) {
                        stats.insert(f.clone(), st);
                    }
                }
            }
            let age = |p: &Path| {
                stats
                    .get(p)
                    .map(|s| now.duration_since(modified(s)).unwrap_or(Duration::MAX))
            };
            let (quiet, open_quiet) = (self.cfg.quiet, self.cfg.open_quiet);
            let hot = |p: &Path| age(p).is_some_and(|a| a < quiet);
            let warm = |p: &Path| age(p).is_some_and(|a| a < open_quiet);
            // Read at each import: a `prune` may run while the watch does.
            let pruned = batch::read_pruned(&batch::pruned_file_in(&self.cfg.agent_dir));
            let report = batch::import_files(
                agent,
                &files,
                batch::Options {
                    session_dir: self.cfg.session_dir.as_deref(),
                    dry_run: false,
                    progress: None,
                    hold_last: Some(&hot),
                    hold_open: Some(&warm),
                    pruned: Some(&pruned),
                },
            );
            for e in &report.errors {
                (self.log)(&format!("error: {}", clean(e)));
                self.status.event(format!("error: {e}"));
            }
            let mut failed: BTreeSet<&Path> = BTreeSet::new();
            for d in &report.done {
                self.report_done(d, &mut failed);
            }
            if let Err(e) =
                batch::record_sources(&self.sources_file, &report.done, &mut self.recorded)
            {
                (self.log)(&format!(
                    "error: {}: {}",
                    show(&self.sources_file),
                    clean(&e.to_string())
                ));
            }
            for f in &files {
                let Some(st) = stats.get(f) else { continue };
                let held = if hot(f) {
                    Some(quiet)
                } else if warm(f) {
                    Some(open_quiet)
                } else {
                    None
                };
                let k = self.known.entry(f.clone()).or_insert(Known {
                    imported: None,
                    held: None,
                    copies: Vec::new(),
                });
                // A transcript that failed is looked at again at the next change or rescan.
                k.imported = (!failed.contains(f.as_path())).then_some(*st);
                k.held = held;
                for d in report.done.iter().filter(|d| &d.source == f) {
                    if let Ok(o) = &d.result {
                        if !k.copies.contains(&o.path) {
                            k.copies.push(o.path.clone());
                        }
                    }
                }
            }
        }
        self.status.save(&self.cfg.agent_dir);
    }

    fn report_done<'d>(&mut self, d: &'d Done, failed: &mut BTreeSet<&'d Path>) {
        match &d.result {
            Ok(o) => {
                if o.status == sessiontree_import::Status::Unchanged {
                    return;
                }
                let msg = format!(
                    "{} {} -> {} (+{} entries)",
                    o.status.name(),
                    show(&d.source),
                    show(&o.path),
                    o.added
                );
                (self.log)(&msg);
                self.status.imported += o.added as u64;
                self.status.event(msg);
            }
            Err(e) if e == batch::EMPTY || e == batch::DEFERRED || e == batch::PRUNED => {}
            Err(e) => {
                failed.insert(&d.source);
                let msg = format!("error: {}: {}", show(&d.source), clean(e));
                (self.log)(&msg);
                self.status.event(msg);
            }
        }
    }

    /// Every folder walked, every transcript `stat`ed: the ones that changed since they
    /// were imported, and the ones that went away.
    fn rescan(&mut self) -> BTreeSet<PathBuf> {
        let mut changed = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for s in &self.cfg.sources {
            for p in walk_source(s) {
                let st = stat(&p);
                let k = self.known.get(&p);
                if st.is_some() && (k.is_none() || k.and_then(|k| k.imported) != st) {
                    changed.insert(p.clone());
                }
                seen.insert(p);
            }
        }
        let gone: Vec<PathBuf> = self
            .known
            .keys()
            .filter(|p| !seen.contains(*p))
            .cloned()
            .collect();
        for p in gone {
            self.gone(&p);
        }
        changed
    }

    /// A transcript that disappeared: said once; its copies stay as they are.
    fn gone(&mut self, p: &Path) {
        if p.exists() {
            return;
        }
        if let Some(k) = self.known.remove(p) {
            let copies: Vec<String> = k.copies.iter().map(|c| show(c)).collect();
            let msg = if copies.is_empty() {
                format!("source gone: {}", show(p))
            } else {
                format!(
                    "source gone: {} (copy kept: {})",
                    show(p),
                    copies.join(", ")
                )
            };
            (self.log)(&msg);
            self.status.event(msg);
            self.status.save(&self.cfg.agent_dir);
        }
        if let Some(u) = self.first_of.remove(p) {
            if let Some(s) = self.firsts.get_mut(&u) {
                s.remove(p);
            }
        }
    }

    /// Held-back transcripts that are quiet now (imported again, whole), and when the next
    /// one will be.
    fn due(&self, now: SystemTime) -> (BTreeSet<PathBuf>, Option<Duration>) {
        let mut due = BTreeSet::new();
        let mut next: Option<Duration> = None;
        for (p, k) in &self.known {
            let Some(wait) = k.held else { continue };
            let Some(st) = k.imported else { continue };
            // A modification time in the future (a clock set back) does not hold anything.
            let age = now.duration_since(modified(&st)).unwrap_or(Duration::MAX);
            if age >= wait {
                due.insert(p.clone());
            } else {
                let left = wait - age;
                next = Some(next.map_or(left, |n| n.min(left)));
            }
        }
        (due, next)
    }
}

/// Takes the single-watch lock of `agent_dir`; a running watch is named.
pub fn lock(agent_dir: &Path) -> Result<WriterLock> {
    std::fs::create_dir_all(agent_dir).map_err(|e| Error(format!("{}: {e}", show(agent_dir))))?;
    let anchor = agent_dir.join("sessiontree-watch");
    match WriterLock::acquire(&anchor, None) {
        Ok(l) => Ok(l),
        Err(sessiontree::Error::Locked { holder, .. }) => Err(Error(format!(
            "{}: another watch is running ({}); stop it first",
            show(agent_dir),
            clean(&holder.to_string())
        ))),
        Err(e) => Err(Error(clean(&e.to_string()))),
    }
}

/// Runs until `stop` is set: catches up, then follows every source. Each event is one call
/// of `log` (a line without its newline).
pub fn run(cfg: &Config, stop: &AtomicBool, log: &mut dyn FnMut(&str)) -> Result<()> {
    let _lock = lock(&cfg.agent_dir)?;
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        // Writes, creations, removals and renames only: our own reads (a walk opening a
        // folder, an import reading a transcript) raise access events, which would
        // otherwise start the next walk, forever.
        if let Ok(ev) = res {
            // (Metadata changes too: reading a folder may update its access time.)
            let wanted = match ev.kind {
                notify::EventKind::Modify(notify::event::ModifyKind::Metadata(_)) => false,
                notify::EventKind::Create(_)
                | notify::EventKind::Modify(_)
                | notify::EventKind::Remove(_) => true,
                _ => false,
            };
            if wanted {
                for p in ev.paths {
                    let _ = tx.send(p);
                }
            }
        }
    })
    .map_err(|e| Error(format!("cannot watch files: {e}")))?;
    // Folders not there yet (an agent never run here) are watched once a rescan finds them.
    let mut watched: BTreeSet<PathBuf> = BTreeSet::new();
    let mut watch_roots =
        |watcher: &mut notify::RecommendedWatcher, log: &mut dyn FnMut(&str), first: bool| {
            for s in &cfg.sources {
                if watched.contains(&s.root) {
                    continue;
                }
                if cfg.poll {
                    if first {
                        log(&format!(
                            "polling {} ({}) every {} s",
                            show(&s.root),
                            s.agent.name(),
                            cfg.rescan.as_secs_f64()
                        ));
                    }
                    continue;
                }
                if !s.root.is_dir() {
                    if first {
                        log(&format!(
                            "{}: not there (yet); looked for again every {} s",
                            show(&s.root),
                            cfg.rescan.as_secs_f64()
                        ));
                    }
                    continue;
                }
                // OpenCode's database is at the top of its folder (whose snapshots are
                // large git trees not to follow).
                let mode = if s.agent == Agent::OpenCode {
                    RecursiveMode::NonRecursive
                } else {
                    RecursiveMode::Recursive
                };
                match watcher.watch(&s.root, mode) {
                    Ok(()) => {
                        log(&format!("watching {} ({})", show(&s.root), s.agent.name()));
                        watched.insert(s.root.clone());
                    }
                    Err(e) => log(&format!(
                        "{}: cannot watch ({}); rescanned every {} s",
                        show(&s.root),
                        clean(&e.to_string()),
                        cfg.rescan.as_secs_f64()
                    )),
                }
            }
        };
    watch_roots(&mut watcher, log, true);
    let sources_file = cfg.agent_dir.join("sessiontree-import.sources");
    let recorded = batch::read_sources(&sources_file);
    let mut w = Watch {
        cfg,
        known: BTreeMap::new(),
        firsts: HashMap::new(),
        first_of: HashMap::new(),
        sources_file,
        recorded,
        status: status::Status::starting(cfg),
        log,
    };
    std::thread::scope(|scope| {
        // The archive side runs beside, pushing what lands in the agent dir.
        if let Some(url) = &cfg.archive {
            scope.spawn(|| push_until(url, &cfg.agent_dir, stop));
        }
        // The change journal of the sessions folder, for the commands that read it.
        #[cfg(target_os = "linux")]
        scope.spawn(|| {
            journal::keep(&cfg.agent_dir, stop, cfg.rescan, &|m| {
                eprintln!("sessiontree watch: {}", clean(m))
            })
        });
        let r = follow(&mut w, &mut watcher, &mut watch_roots, &rx, stop);
        // The pusher stops with the watch (an error ends both).
        stop.store(true, Ordering::Relaxed);
        r
    })
}

type Roots<'c> = dyn FnMut(&mut notify::RecommendedWatcher, &mut dyn FnMut(&str), bool) + 'c;

fn follow(
    w: &mut Watch<'_>,
    watcher: &mut notify::RecommendedWatcher,
    watch_roots: &mut Roots<'_>,
    rx: &mpsc::Receiver<PathBuf>,
    stop: &AtomicBool,
) -> Result<()> {
    let cfg = w.cfg;

    // Catch-up: everything already there, as one import run per agent.
    let t = Instant::now();
    let all = w.rescan();
    let n = all.len();
    w.import(all);
    let msg = format!(
        "caught up: {n} transcripts in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    (w.log)(&msg);
    w.status.event(msg);
    w.status.save(&cfg.agent_dir);

    let mut next_rescan = Instant::now() + cfg.rescan;
    let mut dirty: BTreeSet<PathBuf> = BTreeSet::new();
    while !stop.load(Ordering::Relaxed) {
        let (due, next_due) = w.due(SystemTime::now());
        if !due.is_empty() {
            w.import(due);
            continue;
        }
        // Sleep until an event, the next quiet transcript, the rescan, or a look at `stop`.
        let mut wait = next_rescan.saturating_duration_since(Instant::now());
        if let Some(d) = next_due {
            wait = wait.min(d + Duration::from_millis(5));
        }
        wait = wait.min(Duration::from_millis(500));
        match rx.recv_timeout(wait) {
            Ok(p) => {
                dirty.insert(p);
                // One import per burst of writes.
                let until = Instant::now() + cfg.settle;
                while let Some(left) = until.checked_duration_since(Instant::now()) {
                    match rx.recv_timeout(left) {
                        Ok(p) => {
                            dirty.insert(p);
                        }
                        Err(_) => break,
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if Instant::now() >= next_rescan {
            watch_roots(watcher, w.log, false);
            let changed = w.rescan();
            dirty.extend(changed);
            next_rescan = Instant::now() + cfg.rescan;
        }
        if dirty.is_empty() {
            continue;
        }
        let mut todo = BTreeSet::new();
        for p in std::mem::take(&mut dirty) {
            let opencode = w.agent_of(&p) == Some(Agent::OpenCode);
            let p = if opencode {
                match opencode_db_of(&p) {
                    Some(db) => db,
                    None => continue,
                }
            } else {
                p
            };
            if opencode || p.extension().is_some_and(|e| e == "jsonl") {
                match stat(&p) {
                    Some(st) => {
                        if w.known.get(&p).and_then(|k| k.imported) != Some(st) {
                            todo.insert(p);
                        }
                    }
                    None => w.gone(&p),
                }
            } else if p.is_dir() {
                // A new folder (a new project): what is in it already.
                for f in walk(&p) {
                    if w.known.get(&f).and_then(|k| k.imported) != stat(&f) {
                        todo.insert(f);
                    }
                }
            } else if !p.exists() {
                // A folder removed: its transcripts are gone.
                let under: Vec<PathBuf> = w
                    .known
                    .keys()
                    .filter(|k| k.starts_with(&p))
                    .cloned()
                    .collect();
                for f in under {
                    w.gone(&f);
                }
            }
        }
        if !todo.is_empty() {
            w.import(todo);
        }
    }
    w.status.running = false;
    w.status.event("stopped".into());
    w.status.save(&cfg.agent_dir);
    Ok(())
}

/// `--archive URL`: `sync --watch`'s pusher on the agent dir's sessions, until `stop`.
fn push_until(url: &str, agent_dir: &Path, stop: &AtomicBool) {
    let opts = sessiontree_archive::push::PushOptions {
        agent_dir: agent_dir.to_path_buf(),
        paths: vec![],
        machine_name: None,
        redact: Default::default(),
    };
    let r = sessiontree_archive::watch::watch(url, &opts, stop, |ev| match ev {
        sessiontree_archive::watch::Event::Pushed(r) => eprintln!(
            "sessiontree watch: pushed {} files ({} new, {} appended, {} new versions)",
            r.files, r.created, r.appended, r.new_versions
        ),
        sessiontree_archive::watch::Event::Trouble(m) => {
            eprintln!("sessiontree watch: archive: {} (retrying)", clean(&m))
        }
    });
    if let Err(e) = r {
        eprintln!("sessiontree watch: archive: {}", clean(&e.to_string()));
    }
}
