//! The shared archive (`serve --archive URL`): the copies and sessions the login may read,
//! listed next to the local ones, searched, and opened in memory.
//!
//! Everything from the archive is another role's data: it is redacted and escaped like a
//! local session's text, and a session id becomes a link only when it is a plain id
//! ([`valid_id`]). Nothing fetched touches the disk: a session's bytes are parsed where
//! they arrived (`sessiontree::load_bytes`), under a name made from its checked id.
//! The connection is made read-only (`default_transaction_read_only`) with a statement
//! timeout, and is made again after it broke; listings are kept [`FRESH`], the last
//! [`CACHED`] opened sessions until their copy changes.

use crate::catalog::{valid_id, Open};
use sessiontree::list::FileStat;
use sessiontree_archive::pull::{self, Copy};
use sessiontree_archive::query::{self, Filter, Hit, Listed, Mode};
use sessiontree_archive::Archive;
use sessiontree_export::layout::Layout;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a listing (and a session's copy check) is reused before the archive is asked
/// again: `/` stays fast, and a push shows within this.
pub const FRESH: Duration = Duration::from_secs(10);
/// Archive sessions kept loaded.
const CACHED: usize = 4;
/// The longest one archive query may run (the server cancels it).
const STATEMENT_TIMEOUT: &str = "20s";

struct Kept {
    id: String,
    copy: Copy,
    checked: Instant,
    open: Arc<Open>,
}

/// One archive, shared by the server's threads.
pub struct Remote {
    url: String,
    conn: Mutex<Option<Archive>>,
    role: String,
    listing: Mutex<Option<(Instant, Arc<Vec<Listed>>)>>,
    kept: Mutex<Vec<Kept>>,
}

fn connect(url: &str) -> Result<Archive, String> {
    let mut a = Archive::open(url).map_err(|e| e.to_string())?;
    a.client
        .batch_execute(&format!(
            "SET default_transaction_read_only = on; SET statement_timeout = '{STATEMENT_TIMEOUT}'"
        ))
        .map_err(|e| sessiontree_archive::Error::from(e).to_string())?;
    Ok(a)
}

/// A copy's version as a page polls it: changes with every push of that copy.
fn copy_version(c: &Copy) -> String {
    format!("archive-{}-{}", c.version_pk, c.length)
}

impl Remote {
    /// Connects now: an archive that cannot be reached is an error before the server
    /// listens.
    pub fn connect(url: &str) -> Result<Remote, String> {
        let a = connect(url)?;
        Ok(Remote {
            url: url.to_string(),
            role: a.role.clone(),
            conn: Mutex::new(Some(a)),
            listing: Mutex::new(None),
            kept: Mutex::new(Vec::new()),
        })
    }

    /// The role the server reads the archive as (its own sessions are "yours").
    pub fn role(&self) -> &str {
        &self.role
    }

    /// Runs `f` on the connection, connecting again first when the last one broke.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Archive) -> sessiontree_archive::Result<T>,
    ) -> Result<T, String> {
        let mut g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if g.as_ref().is_none_or(|a| a.client.is_closed()) {
            *g = None;
            *g = Some(connect(&self.url)?);
        }
        let a = g.as_mut().expect("connected above");
        let r = f(a).map_err(|e| e.to_string());
        if r.is_err() && a.client.is_closed() {
            *g = None;
        }
        r
    }

    /// Every copy the login may read, newest first (at most [`FRESH`] old).
    pub fn listing(&self) -> Result<Arc<Vec<Listed>>, String> {
        if let Some((at, l)) = &*self.listing.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < FRESH {
                return Ok(l.clone());
            }
        }
        let l = Arc::new(self.with(query::list)?);
        *self.listing.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), l.clone()));
        Ok(l)
    }

    /// Entries of every visible session that match, newest first.
    pub fn search(&self, q: &str, mode: Mode, limit: usize) -> Result<Vec<Hit>, String> {
        self.with(|a| query::search_filtered(a, q, mode, &Filter::default(), limit))
    }

    /// The copy `session_bytes` would read: the login's own newest, else the newest of the
    /// one other owner (several other owners: refused, naming them).
    fn pick(&self, id: &str) -> Result<Option<Copy>, String> {
        let all: Vec<Copy> = self
            .with(|a| pull::copies(a, &[id.to_string()]))?
            .into_iter()
            .filter(|c| c.length > 0 && c.session_id == id)
            .collect();
        if let Some(c) = all.iter().find(|c| c.owner == self.role) {
            return Ok(Some(c.clone()));
        }
        let mut owners: Vec<&str> = all.iter().map(|c| c.owner.as_str()).collect();
        owners.sort_unstable();
        owners.dedup();
        if owners.len() > 1 {
            return Err(format!(
                "session {id} is in the archive from {} owners ({}): which one is meant is not known",
                owners.len(),
                owners.join(", ")
            ));
        }
        Ok(all.into_iter().next())
    }

    /// The version a page of session `id` polls (None: not in the archive).
    pub fn version(&self, id: &str) -> Result<Option<String>, String> {
        if !valid_id(id) {
            return Ok(None);
        }
        {
            let k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(k) = k.iter().find(|k| k.id == id && k.checked.elapsed() < FRESH) {
                return Ok(Some(copy_version(&k.copy)));
            }
        }
        let Some(c) = self.pick(id)? else {
            return Ok(None);
        };
        // Unchanged: the loaded session is current for another while (an open page polls
        // every second; the archive is asked once per FRESH).
        let mut k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = k
            .iter_mut()
            .find(|k| k.id == id && k.copy.version_pk == c.version_pk && k.copy.length == c.length)
        {
            k.checked = Instant::now();
        }
        Ok(Some(copy_version(&c)))
    }

    /// Session `id` from the archive, loaded in memory (None: not there, or not a plain id).
    pub fn open(&self, id: &str) -> Result<Option<(Arc<Open>, String)>, String> {
        if !valid_id(id) {
            return Ok(None);
        }
        {
            let k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(k) = k.iter().find(|k| k.id == id && k.checked.elapsed() < FRESH) {
                return Ok(Some((k.open.clone(), copy_version(&k.copy))));
            }
        }
        let Some(copy) = self.pick(id)? else {
            return Ok(None);
        };
        let reuse = {
            let mut k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            match k.iter_mut().find(|k| {
                k.id == id && k.copy.version_pk == copy.version_pk && k.copy.length == copy.length
            }) {
                Some(k) => {
                    k.checked = Instant::now();
                    Some(k.open.clone())
                }
                None => None,
            }
        };
        let version = copy_version(&copy);
        if let Some(o) = reuse {
            return Ok(Some((o, version)));
        }
        let bytes = self.with(|a| pull::fetch(a, &copy))?;
        // A name for messages only: the checked id, never a value of the archive's.
        let name = PathBuf::from(format!("{id}.jsonl"));
        let size = bytes.len() as u64;
        let loaded = sessiontree::session::load_bytes(&name, bytes)
            .map_err(|e| format!("the archive's copy of session {id}: {e}"))?;
        if loaded.tree.session_id() != id {
            return Ok(None);
        }
        let layout = Layout::new(&loaded.tree);
        let open = Arc::new(Open {
            path: name,
            stamp: FileStat {
                size,
                mtime_ns: 0,
                mtime_ms: 0.0,
                dev: 0,
                ino: 0,
                ctime_ns: 0,
            },
            loaded,
            layout,
            from: Some((copy.owner.clone(), copy.machine_name.clone())),
        });
        let mut k = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        k.retain(|k| k.id != id);
        k.insert(
            0,
            Kept {
                id: id.to_string(),
                copy,
                checked: Instant::now(),
                open: open.clone(),
            },
        );
        k.truncate(CACHED);
        Ok(Some((open, version)))
    }
}
