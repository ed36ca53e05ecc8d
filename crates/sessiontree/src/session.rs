//! The session handle: a [`SessionTree`] plus, for sessions on disk, the file it is
//! appended to. Reading goes through `Deref` to the tree; every append builds the line
//! exactly as the reference would, writes it, and only then adds it to memory.

use crate::context::{self, with_field};
use crate::dirs;
use crate::entry::{js_trim, Entry, EntryType, Header};
use crate::error::{io, Error, Result};
use crate::json::{canonicalize, write_js_string, Raw};
use crate::parse::{self, NotSession, Parsed, Tail};
use crate::store::{self, Appender, Creation, WriteOptions, WriterLock};
use crate::tree::{LeafArg, SessionTree};
use std::path::{Path, PathBuf};

pub use crate::json::Json;

/// A parsed file: the tree and how the file looked.
pub struct Loaded {
    /// The entries, the leaf and the labels (migrated to version 3 in memory).
    pub tree: SessionTree,
    /// The file was version 1 or 2 and was migrated in memory.
    pub migrated: bool,
    /// How the file ended (a torn last line is reported, not repaired, by a load).
    pub tail: Tail,
    /// Bytes read.
    pub len: u64,
}

/// Reads a session file without writing anything (no lock, no repair, no migration on disk).
pub fn load(path: &Path) -> Result<Loaded> {
    let (backing, len) = read_or_map(path)?;
    load_backing(path, backing, len)
}

/// A session file's bytes as [`load`] gets them, for [`crate::parse::parse`]: read when
/// small or older than version 3, mapped otherwise (scanned ranges are then given back to
/// the kernel as the parse goes).
pub fn read_or_map(path: &Path) -> Result<(crate::entry::Backing, u64)> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let size = file.metadata().map_err(io(path))?.len();
    // Pi rewrites version 1 and 2 files in place when it opens them (truncating first), and
    // a mapped file that shrinks would fault: such files are read, never mapped.
    let current =
        || crate::folder::read_header(path).is_some_and(|h| !crate::migrate::needs_migration(&h));
    if size < MMAP_MIN || !current() {
        let mut bytes = Vec::with_capacity(size as usize);
        std::io::Read::read_to_end(&mut &file, &mut bytes).map_err(io(path))?;
        let len = bytes.len() as u64;
        return Ok((parse::backing(bytes), len));
    }
    // SAFETY: the map is read-only and private. Version 3 session files are only ever
    // appended to (appends past the mapped length are not seen); no writer of the format
    // truncates them (the reference truncates only to migrate older versions, read above).
    let map = unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(io(path))?;
    let len = map.len() as u64;
    Ok((std::sync::Arc::new(Mapped(map)), len))
}

/// Files at least this large are mapped instead of read.
const MMAP_MIN: u64 = 1 << 20;

struct Mapped(memmap2::Mmap);

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl crate::entry::Buffer for Mapped {
    fn release(&self, range: std::ops::Range<usize>) {
        // Whole pages inside the range only.
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = range.end / PAGE * PAGE;
        if end > start {
            // SAFETY: the map is private and read-only, never written through: dropped pages
            // are read again from the file (which is only ever appended to) when touched.
            let _ = unsafe {
                self.0.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }
}

fn load_backing(path: &Path, backing: crate::entry::Backing, len: u64) -> Result<Loaded> {
    let mut parsed = parse::parse(backing).map_err(|e| not_session(path, e))?;
    let migrated = crate::migrate::migrate(&mut parsed);
    let tail = parsed.tail;
    Ok(Loaded {
        tree: SessionTree::from_parsed(parsed),
        migrated,
        tail,
        len,
    })
}

/// [`load`] for bytes already read; `path` names them in errors.
pub fn load_bytes(path: &Path, bytes: Vec<u8>) -> Result<Loaded> {
    let len = bytes.len() as u64;
    load_backing(path, parse::backing(bytes), len)
}

fn not_session(path: &Path, e: NotSession) -> Error {
    match e {
        NotSession::NoContent => Error::NoHeader {
            path: path.to_path_buf(),
        },
        NotSession::BadHeader { line, reason } => Error::NotASession {
            path: path.to_path_buf(),
            line,
            reason,
        },
    }
}

/// A header line as the reference writes it.
pub fn header_line(id: &str, timestamp: &str, cwd: &str, parent_session: Option<&str>) -> String {
    let mut s = String::from("{\"type\":\"session\",\"version\":3,\"id\":");
    write_js_string(&mut s, id);
    s.push_str(",\"timestamp\":");
    write_js_string(&mut s, timestamp);
    s.push_str(",\"cwd\":");
    write_js_string(&mut s, cwd);
    if let Some(p) = parent_session {
        s.push_str(",\"parentSession\":");
        write_js_string(&mut s, p);
    }
    s.push('}');
    s
}

/// Names an entry in an error message, formatted only when one is made.
struct EntryName<'a>(&'a Entry);

impl std::fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {}", self.0.id().unwrap_or("?"))
    }
}

/// Which parent a new entry gets.
enum ParentOf {
    Leaf,
    Given(Option<String>),
}

/// Builds an entry line with the reference's key order: `custom` and `custom_message` put
/// their own fields before id/parentId/timestamp, every other type after. `None` values
/// are left out, as `JSON.stringify` leaves out `undefined`.
fn entry_line(
    ty: &str,
    id: &str,
    parent: Option<&str>,
    ts: &str,
    fields: &[(&str, Option<&str>)],
) -> String {
    let mut s = String::with_capacity(
        128 + id.len()
            + parent.map_or(0, str::len)
            + fields
                .iter()
                .map(|(k, v)| k.len() + v.map_or(0, str::len) + 4)
                .sum::<usize>(),
    );
    s.push_str("{\"type\":");
    write_js_string(&mut s, ty);
    let envelope = |s: &mut String| {
        s.push_str(",\"id\":");
        write_js_string(s, id);
        s.push_str(",\"parentId\":");
        match parent {
            Some(p) => write_js_string(s, p),
            None => s.push_str("null"),
        }
        s.push_str(",\"timestamp\":");
        write_js_string(s, ts);
    };
    let fields_first = matches!(ty, "custom" | "custom_message");
    if !fields_first {
        envelope(&mut s);
    }
    for (k, v) in fields {
        if let Some(v) = v {
            s.push(',');
            write_js_string(&mut s, k);
            s.push(':');
            s.push_str(v);
        }
    }
    if fields_first {
        envelope(&mut s);
    }
    s.push('}');
    s
}

/// What a fork from an entry produced.
#[derive(Debug)]
pub struct Forked {
    /// The new session file.
    pub path: PathBuf,
    /// For a fork before a user message: the message's text, to edit and resend.
    pub text: Option<String>,
}

/// A session being read and written.
pub struct Session {
    tree: SessionTree,
    cwd: String,
    session_dir: PathBuf,
    path: Option<PathBuf>,
    persist: bool,
    options: WriteOptions,
    lock: Option<WriterLock>,
    appender: Option<Appender>,
    flushed: bool,
    tail: Tail,
    lines_seen: u64,
}

impl Drop for Session {
    fn drop(&mut self) {
        // Close the appender (its final fsync under Batch) before the lock is released, so
        // the next writer never starts while our last entries are still being synced.
        drop(self.appender.take());
        drop(self.lock.take());
    }
}

impl std::ops::Deref for Session {
    type Target = SessionTree;
    fn deref(&self) -> &SessionTree {
        &self.tree
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.tree.session_id())
            .field("path", &self.path)
            .finish()
    }
}

impl Session {
    fn blank(
        cwd: String,
        session_dir: PathBuf,
        persist: bool,
        options: WriteOptions,
        id: Option<&str>,
        parent_session: Option<&str>,
    ) -> Result<Session> {
        if let Some(id) = id {
            dirs::validate_session_id(id)?;
        }
        let id = id.map(str::to_string).unwrap_or_else(dirs::new_session_id);
        let ts = crate::date::now_iso();
        let header =
            Header::parse(header_line(&id, &ts, &cwd, parent_session)).expect("valid header");
        let path = persist.then(|| session_dir.join(dirs::session_file_name(&ts, &id)));
        Ok(Session {
            tree: SessionTree::new(header),
            cwd,
            session_dir,
            path,
            persist,
            options,
            lock: None,
            appender: None,
            flushed: false,
            tail: Tail::Clean,
            lines_seen: 0,
        })
    }

    /// A session that lives in memory only.
    pub fn in_memory(cwd: &str) -> Session {
        let cwd = dirs::resolve(cwd).to_string_lossy().into_owned();
        Session::blank(
            cwd,
            PathBuf::new(),
            false,
            WriteOptions::default(),
            None,
            None,
        )
        .expect("no id given")
    }

    /// A new session for `cwd`, in `session_dir` or the cwd's default folder.
    pub fn create(
        cwd: &str,
        session_dir: Option<&Path>,
        options: WriteOptions,
        id: Option<&str>,
    ) -> Result<Session> {
        let cwd = dirs::resolve(cwd).to_string_lossy().into_owned();
        let dir = match session_dir {
            Some(d) => dirs::resolve(&d.to_string_lossy()),
            None => dirs::default_session_dir(&cwd),
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let mut s = Session::blank(cwd, dir, true, options, id, None)?;
        s.start_writing()?;
        Ok(s)
    }

    /// Takes the lock on the (possibly not yet existing) file and writes eagerly if asked.
    fn start_writing(&mut self) -> Result<()> {
        let path = self.path.clone().ok_or(Error::InMemory)?;
        if self.options.lock && self.lock.is_none() {
            self.lock = Some(WriterLock::acquire(&path, self.options.lock_wait)?);
        }
        if self.options.creation == Creation::Eager && !self.flushed {
            self.flush_new(None)?;
        }
        Ok(())
    }

    /// Opens a session file for writing (takes its lock). A missing file becomes a new
    /// session at that path; a 0-byte file gets a header; a v1/v2 file is migrated by
    /// writing a new file and renaming it over the old one. A file that is not a session
    /// is an error and is left untouched.
    pub fn open(path: &Path, options: WriteOptions) -> Result<Session> {
        let path = dirs::resolve(&path.to_string_lossy());
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if !path.exists() {
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        }
        // Lock first, then look: a writer we waited for may have created the file.
        let lock = if options.lock {
            Some(WriterLock::acquire(&path, options.lock_wait)?)
        } else {
            None
        };
        if !path.exists() {
            let cwd = std::env::current_dir()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut s = Session::blank(cwd, dir, true, options, None, None)?;
            s.path = Some(path);
            s.lock = lock;
            s.start_writing()?;
            return Ok(s);
        }
        let (backing, len) = read_or_map(&path)?;
        let mut parsed = match parse::parse(backing.clone()) {
            Ok(p) => p,
            Err(NotSession::NoContent) if len == 0 => {
                let cwd = std::env::current_dir()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let mut s = Session::blank(cwd, dir, true, options, None, None)?;
                s.path = Some(path.clone());
                s.lock = lock;
                let line = format!("{}\n", s.tree.header().text());
                let mut app = Appender::open(&path, 0, options.durability)?;
                app.append(line.as_bytes(), &"the header")?;
                app.sync()?;
                s.appender = Some(app);
                s.flushed = true;
                s.lines_seen = 1;
                return Ok(s);
            }
            Err(e) => return Err(not_session(&path, e)),
        };
        let mut len = len;
        if crate::migrate::migrate(&mut parsed) {
            let content = migrated_content((*backing).as_ref(), &parsed);
            store::atomic_replace(&path, &[content.as_bytes()])?;
            len = content.len() as u64;
            parsed = parse::parse(parse::backing(content.into_bytes()))
                .map_err(|e| not_session(&path, e))?;
        }
        let cwd = parsed.header.cwd().unwrap_or_else(|| {
            std::env::current_dir()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let tail = parsed.tail;
        let lines_seen = parsed.lines;
        let appender = Appender::open(&path, len, options.durability)?;
        Ok(Session {
            tree: SessionTree::from_parsed(parsed),
            cwd,
            session_dir: dir,
            path: Some(path),
            persist: true,
            options,
            lock,
            appender: Some(appender),
            flushed: true,
            tail,
            lines_seen,
        })
    }

    /// Opens the most recently modified session of the folder, or creates a new one.
    pub fn continue_recent(
        cwd: &str,
        session_dir: Option<&Path>,
        options: WriteOptions,
    ) -> Result<Session> {
        match crate::folder::most_recent(cwd, session_dir) {
            Some(p) => {
                let mut s = Session::open(&p, options)?;
                s.cwd = dirs::resolve(cwd).to_string_lossy().into_owned();
                Ok(s)
            }
            None => Session::create(cwd, session_dir, options, None),
        }
    }

    /// Copies every entry of `source` (all branches) into a new session of `target_cwd`,
    /// whose header names the source as its parent. Created whole, exclusively.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        session_dir: Option<&Path>,
        options: WriteOptions,
        id: Option<&str>,
    ) -> Result<Session> {
        let source = dirs::resolve(&source.to_string_lossy());
        let loaded = load(&source)?;
        let cwd = dirs::resolve(target_cwd).to_string_lossy().into_owned();
        let dir = match session_dir {
            Some(d) => dirs::resolve(&d.to_string_lossy()),
            None => dirs::default_session_dir(&cwd),
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let src = source.to_string_lossy().into_owned();
        let mut s = Session::blank(cwd, dir, true, options, id, Some(&src))?;
        for e in loaded.tree.entries() {
            let text = canonicalize(e.raw().bytes()).expect("valid");
            s.tree.commit(Entry::parse(text).expect("valid"));
        }
        s.start_writing()?;
        if !s.flushed {
            s.flush_new(None)?;
        }
        Ok(s)
    }

    /// The session file; `None` for an in-memory session. A new session has its path
    /// before the file exists ([`Session::is_flushed`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The working directory the session belongs to (the header's `cwd`).
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The folder the session's file is (or will be) in.
    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    /// The entries, the leaf and the labels, as appended so far.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// True once the file exists on disk.
    pub fn is_flushed(&self) -> bool {
        self.flushed
    }

    /// Moves the leaf to an existing entry.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        self.tree.branch(id)
    }

    /// The leaf becomes null: the next entry is a new root.
    pub fn reset_leaf(&mut self) {
        self.tree.reset_leaf()
    }

    /// fsyncs everything appended so far (for [`store::Durability::Batch`]).
    pub fn sync(&mut self) -> Result<()> {
        match &mut self.appender {
            Some(a) => a.sync(),
            None => Ok(()),
        }
    }

    /// Bytes of the file written or seen by this handle, and how many of them it has
    /// fsynced: `(len, synced)`. `None` while the session has no file.
    pub fn durable_state(&self) -> Option<(u64, u64)> {
        self.appender.as_ref().map(|a| (a.len(), a.synced_len()))
    }

    /// Reads lines other writers appended since we last looked, so that the next entry
    /// goes under the latest leaf instead of starting a sibling branch blind.
    pub fn refresh(&mut self) -> Result<usize> {
        let Some(app) = &mut self.appender else {
            return Ok(0);
        };
        let Some(growth) = app.growth()? else {
            return Ok(0);
        };
        let header = self.tree.header().clone();
        let first_line = self.lines_seen + 1;
        let nl = memchr::memchr_iter(b'\n', &growth.bytes).count() as u64;
        let parsed = parse::parse_from(parse::backing(growth.bytes), 0, first_line, Some(header))
            .expect("header given");
        self.lines_seen += nl;
        self.tail = match parsed.tail {
            Tail::Torn { offset } => Tail::Torn {
                offset: offset + growth.from,
            },
            t => t,
        };
        let n = parsed.entries.len();
        for mut e in parsed.entries {
            e.offset += growth.from;
            self.tree.commit(e);
        }
        Ok(n)
    }

    /// Makes the file end on a clean line before our first write after a torn or
    /// unterminated last line. The torn bytes are first copied to a sidecar file.
    fn fix_tail(&mut self) -> Result<()> {
        let Some(app) = &mut self.appender else {
            return Ok(());
        };
        match self.tail {
            Tail::Clean => return Ok(()),
            Tail::MissingNewline => {}
            Tail::Torn { offset } => {
                let path = app.path().to_path_buf();
                let mut fragment = Vec::new();
                {
                    use std::io::{Read, Seek, SeekFrom};
                    let mut f = std::fs::File::open(&path).map_err(io(&path))?;
                    f.seek(SeekFrom::Start(offset)).map_err(io(&path))?;
                    f.take(app.len() - offset)
                        .read_to_end(&mut fragment)
                        .map_err(io(&path))?;
                }
                store::save_torn_tail(&path, offset, &fragment)?;
            }
        }
        app.append(b"\n", &"the newline that ends the previous line")?;
        self.lines_seen += 1;
        self.tail = Tail::Clean;
        Ok(())
    }

    fn wants_file(&self, next: Option<&Entry>) -> bool {
        let all = self.tree.entries().iter().chain(next);
        match self.options.creation {
            Creation::Eager => true,
            Creation::OnFirstMessage => all
                .into_iter()
                .any(|e| e.is_role("user") || e.is_role("assistant")),
            Creation::OnFirstAssistant => all.into_iter().any(|e| e.is_role("assistant")),
        }
    }

    /// Creates the file with the header, every entry so far and `next`, in one go.
    fn flush_new(&mut self, next: Option<&Entry>) -> Result<()> {
        let path = self.path.clone().ok_or(Error::InMemory)?;
        let mut content = String::new();
        content.push_str(self.tree.header().text());
        content.push('\n');
        for e in self.tree.entries().iter().chain(next) {
            content.push_str(e.text());
            content.push('\n');
        }
        store::create_exclusive(&path, &[content.as_bytes()])?;
        self.appender = Some(Appender::open(
            &path,
            content.len() as u64,
            self.options.durability,
        )?);
        self.lines_seen = 1 + self.tree.entries().len() as u64 + next.is_some() as u64;
        self.flushed = true;
        Ok(())
    }

    fn persist(&mut self, entry: &Entry) -> Result<()> {
        if !self.persist {
            return Ok(());
        }
        if !self.flushed {
            if self.wants_file(Some(entry)) {
                self.flush_new(Some(entry))?;
            }
            return Ok(());
        }
        self.fix_tail()?;
        let appender = self.appender.as_mut().ok_or(Error::InMemory)?;
        match entry.line_bytes() {
            Some(line) => appender.append(line, &EntryName(entry))?,
            None => appender.append(format!("{}\n", entry.text()).as_bytes(), &EntryName(entry))?,
        }
        self.lines_seen += 1;
        Ok(())
    }

    fn append_with(
        &mut self,
        parent: ParentOf,
        build: impl FnOnce(&SessionTree, &str, Option<&str>, &str) -> Result<String>,
    ) -> Result<String> {
        // Lines other (non-locking) writers appended are read before every entry, so the
        // new one hangs under the true leaf (an fstat when nothing changed).
        self.refresh()?;
        let id = self.tree.generate_id();
        let parent = match parent {
            ParentOf::Leaf => self.tree.leaf_id().map(str::to_string),
            ParentOf::Given(p) => p,
        };
        let ts = crate::date::now_iso();
        let mut text = build(&self.tree, &id, parent.as_deref(), &ts)?;
        text.push('\n');
        let entry = Entry::parse_line(text).map_err(|e| Error::Json(e.to_string()))?;
        self.persist(&entry)?;
        self.tree.commit(entry);
        Ok(id)
    }

    fn append_fields(
        &mut self,
        ty: &'static str,
        fields: &[(&'static str, Option<&str>)],
    ) -> Result<String> {
        self.append_with(ParentOf::Leaf, |_, id, parent, ts| {
            Ok(entry_line(ty, id, parent, ts, fields))
        })
    }

    /// Appends a message under the leaf.
    pub fn append_message(&mut self, message: &Json) -> Result<String> {
        self.append_fields("message", &[("message", Some(message.as_str()))])
    }

    /// Appends a `thinking_level_change` (`"off"`, `"low"`, `"high"`, ...) under the leaf;
    /// returns its id.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String> {
        self.append_fields(
            "thinking_level_change",
            &[("thinkingLevel", Some(Json::string(level).as_str()))],
        )
    }

    /// Appends a `model_change` under the leaf (the model the context reports from here
    /// on); returns its id.
    pub fn append_model_change(&mut self, provider: &str, model_id: &str) -> Result<String> {
        self.append_fields(
            "model_change",
            &[
                ("provider", Some(Json::string(provider).as_str())),
                ("modelId", Some(Json::string(model_id).as_str())),
            ],
        )
    }

    /// Spend outside a message; `note` is stored only when non-empty.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: &Json,
        note: Option<&str>,
    ) -> Result<String> {
        let note = note
            .filter(|n| !n.is_empty())
            .map(|n| Json::string(n).into_string());
        self.append_fields(
            "usage",
            &[
                ("kind", Some(Json::string(kind).as_str())),
                ("provider", Some(Json::string(provider).as_str())),
                ("model", Some(Json::string(model).as_str())),
                ("usage", Some(usage.as_str())),
                ("note", note.as_deref()),
            ],
        )
    }

    /// A compaction: `first_kept` `None` keeps nothing before it. Its `systemMessage` is the
    /// fold of the system messages in the context at the leaf.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept: Option<&str>,
        tokens_before: f64,
        details: Option<&Json>,
        from_hook: Option<bool>,
        usage: Option<&Json>,
    ) -> Result<String> {
        let summary = Json::string(summary).into_string();
        let first_kept = first_kept.map(|f| Json::string(f).into_string());
        let tokens = Json::parse(&crate::json::format_number(tokens_before))
            .unwrap_or(Json::null())
            .into_string();
        let details = details.map(|d| d.as_str().to_string());
        let usage = usage.map(|u| u.as_str().to_string());
        let from_hook = from_hook.map(|b| Json::bool(b).into_string());
        self.append_with(ParentOf::Leaf, move |tree, id, parent, ts| {
            let leaf = match tree.leaf_id() {
                Some(l) => LeafArg::Id(l),
                None => LeafArg::Null,
            };
            let messages = context::build_context(tree, leaf).messages;
            let sys = context::fold_system_messages(&messages).map(|s| {
                let ms = crate::date::parse_iso(ts)
                    .map(crate::json::format_number)
                    .unwrap_or_else(|| "null".into());
                with_field(Raw::new_unchecked(s.as_bytes()), "timestamp", Some(&ms))
            });
            let first = first_kept.unwrap_or_else(|| Json::string(id).into_string());
            Ok(entry_line(
                "compaction",
                id,
                parent,
                ts,
                &[
                    ("summary", Some(&summary)),
                    ("firstKeptEntryId", Some(&first)),
                    ("tokensBefore", Some(&tokens)),
                    ("details", details.as_deref()),
                    ("usage", usage.as_deref()),
                    ("fromHook", from_hook.as_deref()),
                    ("systemMessage", sys.as_deref()),
                ],
            ))
        })
    }

    /// Extension state: never in the model's context.
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<&Json>,
    ) -> Result<String> {
        self.append_fields(
            "custom",
            &[
                ("customType", Some(Json::string(custom_type).as_str())),
                ("data", data.map(Json::as_str)),
            ],
        )
    }

    /// An extension message that the model sees.
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: &Json,
        display: bool,
        details: Option<&Json>,
    ) -> Result<String> {
        self.append_fields(
            "custom_message",
            &[
                ("customType", Some(Json::string(custom_type).as_str())),
                ("content", Some(content.as_str())),
                ("display", Some(if display { "true" } else { "false" })),
                ("details", details.map(Json::as_str)),
            ],
        )
    }

    /// Sets (non-empty) or clears (`None` or empty) the label of an existing entry.
    pub fn append_label_change(&mut self, target_id: &str, label: Option<&str>) -> Result<String> {
        if !self.tree.contains(target_id) {
            return Err(Error::EntryNotFound(target_id.to_string()));
        }
        let label = label.map(|l| Json::string(l).into_string());
        self.append_fields(
            "label",
            &[
                ("targetId", Some(Json::string(target_id).as_str())),
                ("label", label.as_deref()),
            ],
        )
    }

    /// Names the session: runs of CR/LF become one space, then the name is trimmed.
    pub fn append_session_info(&mut self, name: &str) -> Result<String> {
        self.append_fields(
            "session_info",
            &[("name", Some(Json::string(&sanitize_name(name)).as_str()))],
        )
    }

    /// A branch-local edit of an earlier model-visible entry: `None` drops it from the
    /// context, otherwise its content is replaced (`replacement` must hold string or array
    /// `content`).
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<&Json>,
    ) -> Result<String> {
        let replacement = match replacement {
            None => "null".to_string(),
            Some(r) => {
                let content = r.raw().get("content");
                match content {
                    Some(c)
                        if matches!(
                            c.kind(),
                            crate::json::Kind::String | crate::json::Kind::Array
                        ) =>
                    {
                        r.as_str().to_string()
                    }
                    _ => return Err(Error::BadReplacement),
                }
            }
        };
        let target = self
            .tree
            .get_entry(target_id)
            .ok_or_else(|| Error::EntryNotFound(target_id.to_string()))?;
        if !self
            .tree
            .get_branch(None)
            .iter()
            .any(|e| e.id() == Some(target_id))
        {
            return Err(Error::NotOnBranch(target_id.to_string()));
        }
        let role = match target.entry_type {
            EntryType::CustomMessage => "custom",
            EntryType::Message => match target.role() {
                Some(r @ ("user" | "assistant" | "toolResult")) => r,
                _ => return Err(Error::NotEditable(target_id.to_string())),
            },
            _ => return Err(Error::NotEditable(target_id.to_string())),
        };
        let replacement = if replacement != "null" && matches!(role, "assistant" | "toolResult") {
            let r = Raw::new_unchecked(replacement.as_bytes());
            match r
                .get("content")
                .filter(|c| c.kind() == crate::json::Kind::String)
            {
                Some(c) => format!(
                    "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}",
                    c.text()
                ),
                None => replacement,
            }
        } else {
            replacement
        };
        let target = Json::string(target_id).into_string();
        self.append_fields(
            "context_edit",
            &[
                ("targetId", Some(target.as_str())),
                ("replacement", Some(replacement.as_str())),
            ],
        )
    }

    /// Moves the leaf to `target` (or null) and appends a summary of the abandoned branch
    /// there; `fromId` is the old leaf (`"root"` when there was none).
    pub fn branch_with_summary(
        &mut self,
        target: Option<&str>,
        summary: &str,
        details: Option<&Json>,
        from_hook: Option<bool>,
        usage: Option<&Json>,
    ) -> Result<String> {
        if let Some(t) = target {
            if !self.tree.contains(t) {
                return Err(Error::EntryNotFound(t.to_string()));
            }
        }
        self.refresh()?;
        let from = Json::string(self.tree.leaf_id().unwrap_or("root")).into_string();
        match target {
            Some(t) => self.tree.branch(t)?,
            None => self.tree.reset_leaf(),
        }
        let summary = Json::string(summary).into_string();
        let details = details.map(|d| d.as_str().to_string());
        let usage = usage.map(|u| u.as_str().to_string());
        let from_hook = from_hook.map(|b| Json::bool(b).into_string());
        self.append_with(
            ParentOf::Given(target.map(str::to_string)),
            move |_, id, parent, ts| {
                Ok(entry_line(
                    "branch_summary",
                    id,
                    parent,
                    ts,
                    &[
                        ("fromId", Some(&from)),
                        ("summary", Some(&summary)),
                        ("details", details.as_deref()),
                        ("usage", usage.as_deref()),
                        ("fromHook", from_hook.as_deref()),
                    ],
                ))
            },
        )
    }

    /// Appends an entry given as a JSON object without id, parentId and timestamp (the
    /// command line's `append`). Known types go through their typed method, so the same
    /// validation and key order apply; other types keep their fields in the given order.
    pub fn append_json(&mut self, object: &str, parent: Option<Option<String>>) -> Result<String> {
        let canon = Json::parse(object)?;
        let raw = canon.raw();
        if raw.kind() != crate::json::Kind::Object {
            return Err(Error::NotAnEntry("an entry must be a JSON object".into()));
        }
        let ty = raw
            .get("type")
            .and_then(|t| t.as_str())
            .map(|t| t.into_owned())
            .ok_or_else(|| Error::NotAnEntry("the entry needs a string \"type\"".into()))?;
        if ty == "session" {
            return Err(Error::NotAnEntry(
                "a session header cannot be appended".into(),
            ));
        }
        if ty == "message" {
            // Pi writes a message entry only for a message object with a role.
            let m = raw
                .get("message")
                .filter(|m| m.kind() == crate::json::Kind::Object);
            if m.and_then(|m| m.get("role"))
                .and_then(|r| r.as_str())
                .is_none()
            {
                return Err(Error::NotAnEntry(
                    "a message entry needs a \"message\" object with a string \"role\"".into(),
                ));
            }
        }
        if let Some(p) = &parent {
            match p {
                Some(id) => self.tree.branch(id)?,
                None => self.tree.reset_leaf(),
            }
        }
        let s = |k: &str| raw.get(k).and_then(|v| v.as_str()).map(|v| v.into_owned());
        let j = |k: &str| {
            raw.get(k)
                .map(|v| Json::from_text_unchecked(v.text().to_string()))
        };
        match ty.as_str() {
            "label" => {
                let target = s("targetId").ok_or_else(|| {
                    Error::NotAnEntry("a label needs a string \"targetId\"".into())
                })?;
                let label = raw.get("label").filter(|l| !l.is_null());
                if let Some(l) = label {
                    if l.kind() != crate::json::Kind::String {
                        return Err(Error::NotAnEntry("\"label\" must be a string".into()));
                    }
                }
                return self
                    .append_label_change(&target, label.and_then(|l| l.as_str()).as_deref());
            }
            "session_info" => {
                let name = s("name").ok_or_else(|| {
                    Error::NotAnEntry("session_info needs a string \"name\"".into())
                })?;
                return self.append_session_info(&name);
            }
            "context_edit" => {
                let target = s("targetId").ok_or_else(|| {
                    Error::NotAnEntry("context_edit needs a string \"targetId\"".into())
                })?;
                let rep = raw.get("replacement").ok_or(Error::BadReplacement)?;
                let rep =
                    (!rep.is_null()).then(|| Json::from_text_unchecked(rep.text().to_string()));
                return self.append_context_edit(&target, rep.as_ref());
            }
            "compaction" => {
                let summary = s("summary").ok_or_else(|| {
                    Error::NotAnEntry("compaction needs a string \"summary\"".into())
                })?;
                let tokens = raw
                    .get("tokensBefore")
                    .and_then(|t| t.as_f64())
                    .ok_or_else(|| {
                        Error::NotAnEntry("compaction needs a number \"tokensBefore\"".into())
                    })?;
                let from_hook = raw.get("fromHook").map(|b| b.truthy());
                let first = s("firstKeptEntryId");
                if let Some(f) = &first {
                    if !self.tree.contains(f) {
                        return Err(Error::EntryNotFound(f.clone()));
                    }
                }
                return self.append_compaction(
                    &summary,
                    first.as_deref(),
                    tokens,
                    j("details").as_ref(),
                    from_hook,
                    j("usage").as_ref(),
                );
            }
            "branch_summary" if parent.is_none() => {
                let summary = s("summary").ok_or_else(|| {
                    Error::NotAnEntry("branch_summary needs a string \"summary\"".into())
                })?;
                let from_hook = raw.get("fromHook").map(|b| b.truthy());
                let leaf = self.tree.leaf_id().map(str::to_string);
                return self.branch_with_summary(
                    leaf.as_deref(),
                    &summary,
                    j("details").as_ref(),
                    from_hook,
                    j("usage").as_ref(),
                );
            }
            _ => {}
        }
        let order: &[&str] = match ty.as_str() {
            "message" => &["message"],
            "thinking_level_change" => &["thinkingLevel"],
            "model_change" => &["provider", "modelId"],
            "custom" => &["customType", "data"],
            "custom_message" => &["customType", "content", "display", "details"],
            "usage" => &["kind", "provider", "model", "usage", "note"],
            "branch_summary" => &["fromId", "summary", "details", "usage", "fromHook"],
            _ => &[],
        };
        let members = raw.members();
        for reserved in ["id", "parentId", "timestamp"] {
            if members.iter().any(|(k, _)| k == reserved) {
                return Err(Error::NotAnEntry(format!(
                    "\"{reserved}\" is filled in by sessiontree; leave it out"
                )));
            }
        }
        let mut fields: Vec<(String, Option<String>)> = order
            .iter()
            .map(|k| (k.to_string(), raw.get(k).map(|v| v.text().to_string())))
            .collect();
        for (k, v) in &members {
            if k != "type" && !order.contains(&k.as_ref()) {
                fields.push((k.to_string(), Some(v.text().to_string())));
            }
        }
        self.append_with(ParentOf::Leaf, move |_, id, parent, ts| {
            let f: Vec<(&str, Option<&str>)> = fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref()))
                .collect();
            let line = entry_line(&ty, id, parent, ts, &f);
            // Keys that are array indices would move in JavaScript: write the canonical form.
            Ok(canonicalize(line.as_bytes()).unwrap_or(line))
        })
    }

    /// A new session holding the path root..`leaf` without its label entries, re-chained,
    /// with the labels on that path re-created at its end. This handle moves to the new
    /// session (as the reference's does); returns its path.
    pub fn create_branched_session(&mut self, leaf: &str) -> Result<Option<PathBuf>> {
        let entries = branched_entries(&self.tree, leaf)?;
        let old_path = self.path.clone();
        let parent_session = if self.persist {
            old_path.as_ref().map(|p| p.to_string_lossy().into_owned())
        } else {
            None
        };
        let mut next = Session::blank(
            self.cwd.clone(),
            self.session_dir.clone(),
            self.persist,
            self.options,
            None,
            parent_session.as_deref(),
        )?;
        for e in entries {
            next.tree.commit(e);
        }
        // Release the old file before taking the new one.
        self.appender = None;
        self.lock = None;
        *self = next;
        if self.persist {
            let eager = self.options.creation;
            self.start_writing()?;
            if !self.flushed && (eager == Creation::Eager || self.wants_file(None)) {
                self.flush_new(None)?;
            }
        }
        Ok(self.path.clone())
    }

    /// Pi's /fork and /clone: a new session file with the path up to and including `id`
    /// (`before == false`), or up to the parent of the user message `id` (`before == true`,
    /// which also hands back the message's text). The new file is written at once.
    pub fn fork_at(source: &Path, id: &str, before: bool, options: WriteOptions) -> Result<Forked> {
        let mut opts = options;
        opts.creation = Creation::Eager;
        let mut s = Session::open(
            source,
            WriteOptions {
                lock: false,
                ..opts
            },
        )?;
        s.options = opts;
        let entry = s
            .tree
            .get_entry(id)
            .ok_or_else(|| Error::EntryNotFound(id.to_string()))?
            .clone();
        let (target, text) = if before {
            if !entry.is_role("user") {
                return Err(Error::NotAUserMessage(id.to_string()));
            }
            let text = message_text(&entry, "\n");
            (
                entry
                    .parent
                    .walk_id()
                    .filter(|p| s.tree.contains(p))
                    .map(str::to_string),
                Some(text),
            )
        } else {
            (Some(id.to_string()), None)
        };
        let path = match target {
            Some(t) => s.create_branched_session(&t)?,
            None => {
                let src = s.path.clone().map(|p| p.to_string_lossy().into_owned());
                let mut n = Session::blank(
                    s.cwd.clone(),
                    s.session_dir.clone(),
                    true,
                    opts,
                    None,
                    src.as_deref(),
                )?;
                n.start_writing()?;
                n.path.clone()
            }
        };
        Ok(Forked {
            path: path.ok_or(Error::InMemory)?,
            text,
        })
    }

    /// Pi's /tree: moves the leaf to `target` in place. A user or custom message moves the
    /// leaf to its parent and hands back its text (to edit and resend). With `summary`, a
    /// branch summary of the abandoned path is appended at the new position; with `label`,
    /// the target is labelled.
    pub fn navigate(
        &mut self,
        target: &str,
        summary: Option<&str>,
        label: Option<&str>,
    ) -> Result<Option<String>> {
        let entry = self
            .tree
            .get_entry(target)
            .ok_or_else(|| Error::EntryNotFound(target.to_string()))?
            .clone();
        let (new_leaf, text) = if entry.is_role("user")
            || entry.entry_type == EntryType::CustomMessage
            || entry.is_role("custom")
        {
            (
                entry
                    .parent
                    .walk_id()
                    .filter(|p| self.tree.contains(p))
                    .map(str::to_string),
                Some(message_text(&entry, "\n")),
            )
        } else {
            (Some(target.to_string()), None)
        };
        match summary {
            Some(s) => {
                self.branch_with_summary(new_leaf.as_deref(), s, None, None, None)?;
            }
            None => match &new_leaf {
                Some(l) => self.tree.branch(l)?,
                None => self.tree.reset_leaf(),
            },
        }
        if let Some(l) = label {
            self.append_label_change(target, Some(l))?;
        }
        Ok(text)
    }

    /// The entries of the branch being left when moving from the leaf to `target`: from
    /// the leaf back to (not including) their common ancestor, leaf first.
    pub fn abandoned_path(&self, target: &str) -> Vec<&Entry> {
        let to: std::collections::HashSet<&str> = self
            .tree
            .get_branch(Some(target))
            .iter()
            .filter_map(|e| e.id())
            .collect();
        let mut from = self.tree.get_branch(None);
        from.reverse();
        from.into_iter()
            .take_while(|e| !e.id().is_some_and(|id| to.contains(id)))
            .collect()
    }
}

/// The entries of a session branched at `leaf` (`createBranchedSession` without the file):
/// the path root..`leaf` without its label entries, each re-chained to the previous kept
/// one, a compaction's `firstKeptEntryId` naming a dropped label moved to the next kept
/// entry; then one fresh, chained label entry for every label currently set on the path,
/// keeping the label's time. Pure: nothing is written.
pub fn branched_entries(tree: &SessionTree, leaf: &str) -> Result<Vec<Entry>> {
    let path: Vec<&Entry> = tree.get_branch(Some(leaf));
    if path.is_empty() {
        return Err(Error::EntryNotFound(leaf.to_string()));
    }
    let mut kept: Vec<Entry> = Vec::new();
    let mut replacement: std::collections::HashMap<String, String> =
        std::collections::HashMap::new();
    let mut pending_labels: Vec<String> = Vec::new();
    let mut parent: Option<String> = None;
    for e in path {
        let id = e.id().unwrap_or_default().to_string();
        if e.entry_type == EntryType::Label {
            pending_labels.push(id);
            continue;
        }
        for l in pending_labels.drain(..) {
            replacement.insert(l, id.clone());
        }
        let parent_json = parent
            .as_ref()
            .map_or("null".to_string(), |p| Json::string(p).into_string());
        let mut text = with_field(e.raw(), "parentId", Some(&parent_json));
        if e.entry_type == EntryType::Compaction {
            if let Some(first) = e.str_field("firstKeptEntryId") {
                if first != id {
                    if let Some(r) = replacement.get(first.as_ref()) {
                        text = with_field(
                            Raw::new_unchecked(text.as_bytes()),
                            "firstKeptEntryId",
                            Some(&Json::string(r).into_string()),
                        );
                    }
                }
            }
        }
        kept.push(Entry::parse(text).expect("valid"));
        parent = Some(id);
    }
    let mut used: std::collections::HashSet<String> = kept
        .iter()
        .filter_map(|e| e.id().map(str::to_string))
        .collect();
    let labels: Vec<(String, String, Option<String>)> = tree
        .labels()
        .into_iter()
        .filter(|(t, _)| used.contains(*t))
        .map(|(t, l)| (t.to_string(), l.label.clone(), l.timestamp.clone()))
        .collect();
    let mut last = parent;
    for (target, label, ts) in labels {
        let id = fresh_id(&used);
        used.insert(id.clone());
        let target_json = Json::string(&target).into_string();
        let parent_json = last.as_ref().map(|p| Json::string(p).into_string());
        let mut s = String::from("{\"type\":\"label\",\"id\":");
        write_js_string(&mut s, &id);
        s.push_str(",\"parentId\":");
        s.push_str(parent_json.as_deref().unwrap_or("null"));
        if let Some(ts) = &ts {
            s.push_str(",\"timestamp\":");
            s.push_str(ts);
        }
        s.push_str(",\"targetId\":");
        s.push_str(&target_json);
        s.push_str(",\"label\":");
        s.push_str(&label);
        s.push('}');
        kept.push(Entry::parse(canonicalize(s.as_bytes()).expect("valid")).expect("valid"));
        last = Some(id);
    }
    Ok(kept)
}

/// An entry id not in `used` (as [`SessionTree::generate_id`] draws them).
fn fresh_id(used: &std::collections::HashSet<String>) -> String {
    for _ in 0..100 {
        let u = uuid::Uuid::new_v4().simple().to_string();
        let id = &u[..8];
        if !used.contains(id) {
            return id.to_string();
        }
    }
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// Runs of CR/LF become one space, then JavaScript's trim.
pub fn sanitize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            in_run = false;
            out.push(c);
        }
    }
    js_trim(&out).to_string()
}

/// A message's text: its string content, or its text blocks joined by `sep`.
pub fn message_text(e: &Entry, sep: &str) -> String {
    let content = if e.entry_type == EntryType::CustomMessage {
        e.field("content")
    } else {
        e.message_field("content")
    };
    match content {
        Some(c) if c.kind() == crate::json::Kind::String => {
            c.as_str().unwrap_or_default().into_owned()
        }
        Some(c) => c
            .elements()
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()).as_deref() == Some("text"))
            .filter_map(|b| b.get("text").map(|t| t.js_string()))
            .collect::<Vec<_>>()
            .join(sep),
        None => String::new(),
    }
}

/// The lines a migrated file is written with: the new header and entries, and every other
/// line (malformed, non-entry) exactly as it was, in its place.
fn migrated_content(original: &[u8], parsed: &Parsed) -> String {
    let mut by_offset: std::collections::HashMap<u64, &Entry> = std::collections::HashMap::new();
    for e in &parsed.entries {
        by_offset.insert(e.offset, e);
    }
    let mut out = String::with_capacity(original.len() + original.len() / 8);
    let mut pos = 0usize;
    let mut line_no = 0u64;
    while pos < original.len() {
        let end = memchr::memchr(b'\n', &original[pos..]).map_or(original.len(), |i| pos + i);
        line_no += 1;
        let line = &original[pos..end];
        if line_no == parsed.header.line {
            out.push_str(parsed.header.text());
        } else if let Some(e) = by_offset.get(&(pos as u64)) {
            out.push_str(e.text());
        } else {
            out.push_str(&String::from_utf8_lossy(line));
        }
        out.push('\n');
        pos = end + 1;
    }
    out
}
