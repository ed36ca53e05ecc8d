//! Opening and creating session files: the lock first, then the file; a missing file
//! becomes a new session, a version 1 or 2 file is migrated on disk.

use super::load::{not_session, read_or_map};
use super::Session;
use crate::dirs;
use crate::entry::{Entry, Header};
use crate::error::{io, Error, Result};
use crate::json::write_js_string;
use crate::parse::{self, NotSession, Parsed, Tail};
use crate::store::{self, Appender, Creation, WriteOptions, WriterLock};
use crate::tree::SessionTree;
use std::path::{Path, PathBuf};

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

impl Session {
    pub(super) fn blank(
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
            notices: Vec::new(),
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
    pub(super) fn start_writing(&mut self) -> Result<()> {
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
        // Rewrites, the appender and sidecars work on the file the path resolves to: a
        // symlinked session stays a symlink to the file that gets the new lines.
        let real = store::resolve_target(&path);
        let (backing, len) = read_or_map(&real)?;
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
                let mut app = Appender::open(&real, 0, options.durability)?;
                app.append(line.as_bytes(), &"the header")?;
                app.sync()?;
                s.appender = Some(app);
                s.flushed = true;
                s.lines_seen = 1;
                s.notices.push(format!(
                    "{}: the file was empty; wrote a session header (cwd {})",
                    path.display(),
                    s.cwd
                ));
                return Ok(s);
            }
            Err(e) => return Err(not_session(&path, e)),
        };
        let mut len = len;
        let mut notices = Vec::new();
        if crate::migrate::needs_migration(&parsed.header) {
            let from = parsed
                .header
                .version()
                .map_or("1".to_string(), |v| v.to_string());
            notices.push(format!(
                "{}: migrated from format version {from} to {} (a new file renamed over the old one)",
                path.display(),
                crate::entry::CURRENT_VERSION
            ));
            drop(parsed);
            // A rewrite is always done under the lock, even by a handle opened without it
            // (a fork reading its source): two rewriters must not race.
            let _rewriting = match lock {
                Some(_) => None,
                None => Some(WriterLock::acquire(&path, options.lock_wait)?),
            };
            (parsed, len) = migrate_file(&real)?;
        }
        let cwd = parsed.header.cwd().unwrap_or_else(|| {
            std::env::current_dir()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let tail = parsed.tail;
        let lines_seen = parsed.lines;
        let appender = Appender::open(&real, len, options.durability)?;
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
            notices,
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
}

/// Migrates a version 1 or 2 file on disk (under the caller's lock): read once its last line
/// has settled, written as a new file that also gets every line a lock-less writer appended
/// meanwhile, renamed over the old one. Returns the new content, parsed, and its length.
fn migrate_file(real: &Path) -> Result<(Parsed, u64)> {
    let (file, _) = store::open_regular(real)?;
    let bytes = store::read_settled(&file, real)?;
    let mut parsed =
        parse::parse(parse::backing(bytes.clone())).map_err(|e| not_session(real, e))?;
    if !crate::migrate::migrate(&mut parsed) {
        // Another process migrated it between our two reads.
        let len = bytes.len() as u64;
        return Ok((parsed, len));
    }
    let content = migrated_content(&bytes, &parsed);
    drop(parsed);
    let carried = store::replace_carrying(real, &file, bytes.len() as u64, &[content.as_bytes()])?;
    let mut content = content.into_bytes();
    content.extend_from_slice(&carried);
    let len = content.len() as u64;
    let parsed = parse::parse(parse::backing(content)).map_err(|e| not_session(real, e))?;
    Ok((parsed, len))
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
