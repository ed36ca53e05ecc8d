//! `sessiontree browse [FILE|DIR]`: a full-screen terminal browser of sessions.
//!
//! `state` is the pure part (state + key -> state, plus an effect to perform), `render`
//! draws a state, `rows` lays out a tree. This file is the edge: the terminal, the index,
//! the files, and the search worker.

pub mod render;
pub mod state;
#[cfg(test)]
mod tests;

use crate::rows;
use anyhow::{Context as _, Result};
use crossterm::event::{self, Event, KeyEventKind};
use sessiontree::list::{self, ListOptions};
use sessiontree::{dirs, Durability, Session, WriteOptions};
use sessiontree_index::index;
use sessiontree_index::search::{Mode, Query};
use sessiontree_index::summary::Summaries;
use state::{App, Archived, Effect, Hits, Job, ListState, TreeState};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// A session file (opens its tree) or a folder of sessions. Default: every session
    /// under the agent dir.
    pub path: Option<PathBuf>,
}

/// Messages from the search worker.
enum Worker {
    Ready,
    /// Hits of a query; `true` when the search is complete, else what it found so far.
    Hits(String, std::result::Result<Hits, String>, bool),
}

/// Files one step of the list's search reads before it may report what it found so far.
const SEARCH_CHUNK: usize = 32;

/// The sessions of the agent dir (`None`) or of a folder, newest first, through the index.
pub fn sessions(dir: Option<&Path>) -> Result<Vec<list::SessionInfo>> {
    Ok(listed(dir)?.0)
}

/// [`sessions`] with their marks from [`archived`], made from the stats the listing took
/// (one `stat` per file, not two: at 20,000 pushed sessions the second was as long as the
/// rest of the first frame).
pub fn sessions_marked(
    dir: Option<&Path>,
    agent: &Path,
) -> Result<(Vec<list::SessionInfo>, HashMap<PathBuf, Archived>)> {
    let (v, files) = listed(dir)?;
    let marks = archived(agent, &v, &files);
    Ok((v, marks))
}

/// The listing and the stats of the files it was made from.
#[allow(clippy::type_complexity)]
fn listed(
    dir: Option<&Path>,
) -> Result<(
    Vec<list::SessionInfo>,
    Vec<(PathBuf, Option<list::FileStat>)>,
)> {
    let agent = dirs::agent_dir();
    let opts = ListOptions {
        reference_parity: false,
        with_text: false,
        threads: 2,
    };
    // The rows `ls` keeps (see `ls::listing_rows`): found from a running watch's journal
    // alone when no session changed, the files' stats with them.
    let sessions = agent.join("sessions");
    let key = index::rows_key(dir, &sessions);
    let quick = dir
        .is_none()
        .then(|| index::unchanged_rows(&agent))
        .flatten();
    let (l, files) = match (quick, dir) {
        (Some(l), _) => {
            let files = l
                .entries()
                .map(|e| (e.path.to_path_buf(), e.stat))
                .collect();
            (l, files)
        }
        (None, None) => {
            let (files, digest) = list::all_files_stat_digested(&agent);
            let scope = index::all_scope(&sessions);
            let l = crate::ls::listing_rows(&files, digest.as_ref(), &scope, &key, opts, true)?;
            (l, files)
        }
        (None, Some(d)) => {
            let files = list::with_stats(list::dir_files(d));
            let scope = index::folder_scope(d);
            let l = crate::ls::listing_rows(&files, None, &scope, &key, opts, true)?;
            (l, files)
        }
    };
    let v = l.rows().iter().map(|r| r.to_info()).collect();
    Ok((v, files))
}

/// Which of `sessions` a `sessiontree push` from this agent dir has archived, and whether
/// each file is still what was pushed, from the push's local state
/// (`<agent dir>/sessiontree-archive/<archive id>.json`, one per archive): no archive is
/// contacted, and each file's stamp now is its stat in `files` (the listing's).
pub fn archived(
    agent: &Path,
    sessions: &[list::SessionInfo],
    files: &[(PathBuf, Option<list::FileStat>)],
) -> HashMap<PathBuf, Archived> {
    use sessiontree_archive::state::{FileStamp, State};
    use std::os::unix::ffi::OsStrExt;
    let mut out: HashMap<PathBuf, Archived> = HashMap::new();
    let Ok(dir) = std::fs::read_dir(agent.join("sessiontree-archive")) else {
        return out;
    };
    let states: Vec<State> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?;
            Some(State::load(agent, id))
        })
        .filter(|s| !s.pushed.is_empty())
        .collect();
    if states.is_empty() {
        return out;
    }
    let stamps: HashMap<&[u8], &list::FileStat> = files
        .iter()
        .filter_map(|(p, st)| Some((p.as_os_str().as_bytes(), st.as_ref()?)))
        .collect();
    let now = |p: &Path| {
        stamps
            .get(p.as_os_str().as_bytes())
            .and_then(|st| FileStamp::of_listing(st))
            .or_else(|| std::fs::metadata(p).ok().map(|m| FileStamp::of(&m)))
    };
    for s in sessions {
        let mut best: Option<Archived> = None;
        for st in &states {
            let Some((stamp, _, _)) = st.pushed(&s.path) else {
                continue;
            };
            let Some(now) = now(&s.path) else {
                continue;
            };
            let a = Archived {
                pushed_size: stamp.size,
                size_now: now.size,
                changed: *stamp != now,
            };
            // Several archives: the one that holds the file as it is wins.
            if best.is_none_or(|b| b.changed && (!a.changed || a.pushed_size > b.pushed_size)) {
                best = Some(a);
            }
        }
        if let Some(a) = best {
            out.insert(s.path.clone(), a);
        }
    }
    out
}

/// The imported copies whose transcript its agent deleted, as `ls` marks them.
fn source_gone() -> std::collections::HashSet<PathBuf> {
    sessiontree_import::batch::gone_copies(&sessiontree_import::batch::sources_file())
}

/// Loads a session for the tree view.
pub fn open(path: &Path) -> Result<TreeState> {
    let l = sessiontree::load(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(TreeState::new(path.to_path_buf(), l))
}

/// `[[`/`]]` around each highlighted range (character offsets) of a snippet.
fn mark(snippet: &str, highlights: &[(usize, usize)]) -> String {
    let mut o = String::with_capacity(snippet.len() + highlights.len() * 4);
    for (i, c) in snippet.chars().enumerate() {
        if highlights.iter().any(|h| h.0 == i) {
            o.push_str("[[");
        }
        if highlights.iter().any(|h| h.1 == i && h.0 < i) {
            o.push_str("]]");
        }
        o.push(c);
    }
    if highlights.iter().any(|h| h.1 == snippet.chars().count()) {
        o.push_str("]]");
    }
    o
}

/// The search worker's end of the channels: queries in (each with its generation), hits out.
pub struct SearchWorker {
    tx: mpsc::Sender<(u64, String)>,
    rx: mpsc::Receiver<Worker>,
    /// The generation of the newest query sent: a search of an older one stops early.
    newest: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl SearchWorker {
    /// Starts the full-text search of `files` (the agent dir's sessions, or a folder's) on
    /// its own thread.
    pub fn start(agent: PathBuf, files: Option<Vec<PathBuf>>) -> SearchWorker {
        let (qtx, qrx) = mpsc::channel();
        let (wtx, wrx) = mpsc::channel();
        let newest = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let n2 = newest.clone();
        std::thread::spawn(move || search_worker(agent, files, qrx, wtx, n2));
        SearchWorker {
            tx: qtx,
            rx: wrx,
            newest,
        }
    }

    fn send(&self, q: String) {
        let g = self
            .newest
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let _ = self.tx.send((g, q));
    }
}

/// Sessions matching `text`: the search of `sessiontree search` (words, any case, in
/// message texts), grouped by session (every session with a hit, however many entries
/// match elsewhere), each with its newest hit's snippet marked. `stop` ends it early.
pub fn search_sessions(
    files: &[(PathBuf, Option<list::FileStat>)],
    summaries: Option<&Summaries>,
    text: &str,
    stop: &(dyn Fn() -> bool + Sync),
) -> std::result::Result<Hits, String> {
    let query = Query {
        text: text.to_string(),
        mode: Mode::Words,
        cwd: None,
        role: None,
        since_ms: None,
        until_ms: None,
        limit: usize::MAX,
    };
    sessiontree_index::search::search_sessions(files, &query, summaries, 2, stop)
        .map(|(hits, _)| {
            hits.into_iter()
                .map(|h| {
                    let snip = mark(&h.snippet, &h.highlights);
                    (h.path, snip)
                })
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// The full-text search on its own thread: answers queries, the newest first (a search
/// overtaken by a newer query stops and is not answered).
fn search_worker(
    agent: PathBuf,
    files: Option<Vec<PathBuf>>,
    rx: mpsc::Receiver<(u64, String)>,
    tx: mpsc::Sender<Worker>,
    newest: std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    let mut files = match files {
        None => list::all_files_stat(&agent),
        Some(f) => list::with_stats(f),
    };
    // The newest files first: the top of the list fills in first.
    files.sort_by(|a, b| {
        let t = |f: &(PathBuf, Option<list::FileStat>)| f.1.as_ref().map_or(0, |s| s.mtime_ns);
        t(b).cmp(&t(a))
    });
    let summaries = Summaries::load(&Summaries::path_in(&agent));
    if tx.send(Worker::Ready).is_err() {
        return;
    }
    while let Ok(mut q) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        let (g, text) = q;
        let stop = || newest.load(std::sync::atomic::Ordering::Relaxed) != g;
        // In steps of a few files, newest first; what was found so far is reported after
        // the first step and then every 50 ms, so that the first screen of matches shows
        // before the last file is read.
        let mut found = Hits::new();
        let mut error = None;
        let mut reported = std::time::Instant::now();
        for (n, chunk) in files.chunks(SEARCH_CHUNK).enumerate() {
            if stop() {
                break;
            }
            match search_sessions(chunk, summaries.as_ref(), &text, &stop) {
                Ok(h) => found.extend(h),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
            let last = (n + 1) * SEARCH_CHUNK >= files.len();
            // The first step's matches at once (the top of the list), then every 50 ms.
            if !last && (n == 0 || reported.elapsed() >= Duration::from_millis(50)) && !stop() {
                reported = std::time::Instant::now();
                if tx
                    .send(Worker::Hits(text.clone(), Ok(found.clone()), false))
                    .is_err()
                {
                    return;
                }
            }
        }
        if stop() {
            continue;
        }
        let r = match error {
            Some(e) => Err(e),
            None => Ok(found),
        };
        if tx.send(Worker::Hits(text, r, true)).is_err() {
            return;
        }
    }
}

fn write_options() -> WriteOptions {
    WriteOptions {
        durability: Durability::Entry,
        creation: sessiontree::Creation::Eager,
        // Never wait: a held lock is reported with its holder.
        lock_wait: None,
        lock: true,
    }
}

fn open_for_writing(file: &Path) -> Result<Session> {
    Session::open(file, write_options())
        .with_context(|| format!("cannot open {} for writing", file.display()))
}

/// Performs a confirmed action; returns the line to show and whether the session changed.
pub fn perform(job: &Job, tree: Option<&TreeState>) -> Result<(String, bool)> {
    Ok(match job {
        Job::Label { file, id, label } => {
            let mut s = open_for_writing(file)?;
            s.append_label_change(id, label.as_deref())?;
            let what = match label {
                Some(l) => format!("labelled {id} {l:?}"),
                None => format!("cleared the label of {id}"),
            };
            (what, true)
        }
        Job::Rename { file, name } => {
            let mut s = open_for_writing(file)?;
            s.append_session_info(name)?;
            (format!("named the session {name:?}"), true)
        }
        Job::Fork { file, id } => {
            let f = Session::fork_at(file, id, false, write_options())
                .with_context(|| format!("cannot fork {}", file.display()))?;
            (format!("forked at {id} into {}", f.path.display()), false)
        }
        Job::CloseInterrupted { file } => {
            let mut s = open_for_writing(file)?;
            let ids = sessiontree::interrupted::close_interrupted(&mut s)?;
            (
                if ids.is_empty() {
                    "no dangling tool calls on the current branch".into()
                } else {
                    format!("appended {} error results", ids.len())
                },
                !ids.is_empty(),
            )
        }
        Job::Export {
            file,
            leaf,
            markdown,
            out,
        } => {
            if out.exists() {
                anyhow::bail!("{}: already exists; choose another name", out.display());
            }
            let loaded;
            let tree = match tree {
                Some(t) if t.path == *file => &t.loaded.tree,
                _ => {
                    loaded = sessiontree::load(file)
                        .with_context(|| format!("cannot read {}", file.display()))?;
                    &loaded.tree
                }
            };
            let opts = sessiontree_export::ExportOptions {
                leaf: (!leaf.is_empty()).then(|| leaf.clone()),
                all_branches: false,
                no_thinking: false,
                no_tool_output: false,
                no_images: false,
                redact: Vec::new(),
                keep_secrets: false,
            };
            let text = if *markdown {
                sessiontree_export::markdown(tree, &opts)?
            } else {
                sessiontree_export::html(tree, &opts)?
            };
            crate::export::write_atomic(out, text.as_bytes())
                .with_context(|| format!("cannot write {}", out.display()))?;
            (format!("wrote {}", out.display()), false)
        }
        Job::Resume { .. } => (String::new(), false),
    })
}

/// A path for the title, the home folder as `~`.
fn tilde(p: &Path) -> String {
    let home = dirs::home_dir();
    match p.strip_prefix(&home) {
        Ok(rest) if home.parent().is_some() => format!("~/{}", rest.display()),
        _ => p.display().to_string(),
    }
}

/// Whether `pi` is on PATH.
fn pi_on_path() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("pi"))
            .find(|c| c.is_file())
    })
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@%,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub fn run(a: Args) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("browse needs a terminal (standard input and output are not both one)");
    }
    // Everything that can fail before the screen is taken, with a plain error.
    let mut worker: Option<SearchWorker> = None;
    let mut app = match &a.path {
        Some(p) if p.is_file() => App::with_tree(open(p)?),
        Some(p) if p.is_dir() => {
            let d = dirs::resolve(&p.to_string_lossy());
            let agent = dirs::agent_dir();
            let (v, marks) = sessions_marked(Some(&d), &agent)?;
            // The folder's files, searched as the agent dir's are.
            worker = Some(SearchWorker::start(agent, Some(list::dir_files(&d))));
            App::with_list(
                ListState::new(v, None, tilde(&d), false)
                    .with_archived(marks)
                    .with_source_gone(source_gone()),
            )
        }
        Some(p) => anyhow::bail!("{}: no such file or folder", p.display()),
        None => {
            let agent = dirs::agent_dir();
            let (v, marks) = sessions_marked(None, &agent)?;
            let cwd = std::env::current_dir()
                .ok()
                .map(|c| dirs::resolve(&c.to_string_lossy()));
            worker = Some(SearchWorker::start(agent.clone(), None));
            App::with_list(
                ListState::new(v, cwd, tilde(&agent.join("sessions")), false)
                    .with_archived(marks)
                    .with_source_gone(source_gone()),
            )
        }
    };
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let r = event_loop(&mut terminal, &mut app, worker.as_ref());
    ratatui::restore();
    let resume = r?;
    if let Some(file) = resume {
        let f = shell_quote(&file.to_string_lossy());
        match pi_on_path() {
            Some(pi) => {
                let st = std::process::Command::new(pi)
                    .arg("--session")
                    .arg(&file)
                    .status()
                    .context("cannot run pi")?;
                if !st.success() {
                    anyhow::bail!("pi --session {f} exited with {st}");
                }
            }
            None => {
                println!("pi --session {f}");
                eprintln!("sessiontree: pi is not on PATH; the command above resumes the session");
            }
        }
    }
    Ok(())
}

/// Draws, reads keys, performs effects; returns the session to resume, if any.
fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    worker: Option<&SearchWorker>,
) -> Result<Option<PathBuf>> {
    let mut dirty = true;
    loop {
        if dirty {
            let size = terminal.size()?;
            let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
            app.set_page(render::page_for(app, area));
            terminal.draw(|f| render::draw(f, app))?;
            dirty = false;
        }
        if app.busy() && !event::poll(Duration::ZERO)? {
            // A search scanning a large session: a slice of it, then a frame (a key
            // typed meanwhile is read first and replaces or stops the search).
            let until = std::time::Instant::now() + Duration::from_millis(30);
            while app.busy() && std::time::Instant::now() < until {
                app.tick(state::TICK_SEARCH_BYTES);
                if event::poll(Duration::ZERO)? {
                    break;
                }
            }
            dirty = true;
            continue;
        }
        if event::poll(Duration::from_millis(40))? {
            // Everything already typed, then one frame.
            loop {
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        let eff = app.key(k);
                        if let Some(path) = effect(app, eff, worker)? {
                            return Ok(Some(path));
                        }
                    }
                    Event::Resize(..) => {}
                    Event::Paste(s) => {
                        for c in s.chars().filter(|c| !c.is_control()) {
                            let k = crossterm::event::KeyEvent::new(
                                crossterm::event::KeyCode::Char(c),
                                crossterm::event::KeyModifiers::NONE,
                            );
                            let eff = app.key(k);
                            effect(app, eff, worker)?;
                        }
                    }
                    _ => {}
                }
                if app.quit || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
            dirty = true;
            if app.quit {
                return Ok(None);
            }
        }
        if let Some(w) = worker {
            while let Ok(m) = w.rx.try_recv() {
                dirty = true;
                match m {
                    Worker::Ready => {
                        if let Effect::Search(q) = app.text_ready() {
                            w.send(q);
                        }
                    }
                    Worker::Hits(q, Ok(h), true) => app.hits(q, h),
                    Worker::Hits(q, Ok(h), false) => app.partial_hits(q, h),
                    Worker::Hits(q, Err(e), _) => {
                        app.status = Some(format!("search {q:?} failed: {e}"));
                        app.hits(q, Hits::new());
                    }
                }
            }
        }
    }
}

/// Performs one effect. Returns the file to resume when the user confirmed a resume.
fn effect(app: &mut App, eff: Effect, worker: Option<&SearchWorker>) -> Result<Option<PathBuf>> {
    match eff {
        Effect::None | Effect::Quit => {}
        Effect::Search(q) => {
            if let Some(w) = worker {
                w.send(q);
            }
        }
        Effect::Open(p) => match open(&p) {
            Ok(t) => app.open(t),
            Err(e) => app.status = Some(format!("{e:#}")),
        },
        Effect::Run(Job::Resume { file }) => {
            app.quit = true;
            return Ok(Some(file));
        }
        Effect::Run(job) => match perform(&job, app.tree.as_ref()) {
            Ok((msg, changed)) => {
                if changed {
                    reload(app);
                }
                app.status = Some(msg);
            }
            Err(e) => app.status = Some(format!("{e:#}")),
        },
    }
    Ok(None)
}

/// Reads the open session again after a write, keeping the selected entry, the filter
/// and the context pane.
fn reload(app: &mut App) {
    let Some(old) = app.tree.as_ref() else {
        return;
    };
    let id = old.sel_id().map(str::to_string);
    let (filter, context) = (old.filter, old.context);
    match open(&old.path.clone()) {
        Ok(mut t) => {
            t.filter = filter;
            t.context = context;
            t.rebuild(None);
            let row = id
                .as_deref()
                .and_then(|id| t.loaded.tree.get_entry(id))
                .and_then(|e| rows::index_of(&t.loaded.tree, e))
                .map(|i| t.layout.row_of[i as usize]);
            match row {
                Some(r) => t.select_row(r),
                None => t.goto_leaf(),
            }
            app.open(t);
        }
        Err(e) => app.status = Some(format!("{e:#}")),
    }
}
