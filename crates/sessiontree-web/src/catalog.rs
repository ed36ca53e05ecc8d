//! The sessions the server shows: the listing (through the index, as `sessiontree ls`),
//! session ids resolved to files inside the served folder, loaded sessions kept while
//! their files are unchanged, and the search (the index crate's, as `sessiontree search`).

use crate::{Config, Root};
use sessiontree::list::{self, FileStat, ListOptions, SessionInfo};
use sessiontree::{Loaded, SessionTree};
use sessiontree_export::layout::Layout;
use sessiontree_index::index::{self, Index};
use sessiontree_index::search::{self, Hit, Query};
use sessiontree_index::summary::{self, Summaries};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Sessions kept loaded (the most recently used).
const CACHED: usize = 4;

/// A loaded session and its tree layout, valid while its file's stat is `stamp`.
pub struct Open {
    pub path: PathBuf,
    pub stamp: FileStat,
    pub loaded: Loaded,
    pub layout: Layout,
    /// From the archive: its owner and machine (None: a file of the served folder).
    pub from: Option<(String, String)>,
}

impl Open {
    pub fn tree(&self) -> &SessionTree {
        &self.loaded.tree
    }
}

pub struct Catalog {
    root: Root,
    agent_dir: PathBuf,
    use_index: bool,
    index: Mutex<Option<Index>>,
    /// Session id -> file, from the last listing.
    ids: Mutex<HashMap<String, PathBuf>>,
    cache: Mutex<Vec<Arc<Open>>>,
    building: Arc<AtomicBool>,
}

/// A session id as it may appear in a URL: what Pi writes (UUIDs) and then some, never a
/// path.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// The files a search read, and how many of them had a valid summary.
type Counted<'a> = (&'a [(PathBuf, Option<FileStat>)], usize);

impl Catalog {
    pub fn new(cfg: &Config) -> Catalog {
        Catalog {
            root: cfg.root.clone(),
            agent_dir: cfg.agent_dir.clone(),
            use_index: cfg.use_index,
            index: Mutex::new(None),
            ids: Mutex::new(HashMap::new()),
            cache: Mutex::new(Vec::new()),
            building: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The session files served, with their stats.
    pub fn files(&self) -> Vec<(PathBuf, Option<FileStat>)> {
        match &self.root {
            Root::AgentDir(a) => list::all_files_stat(a),
            Root::Folder(f) => list::with_stats(list::dir_files(f)),
        }
    }

    /// Every session, newest first, through the index when it can be used.
    pub fn listing(&self) -> Vec<SessionInfo> {
        let files = self.files();
        self.listing_of(&files)
    }

    pub fn listing_of(&self, files: &[(PathBuf, Option<FileStat>)]) -> Vec<SessionInfo> {
        let opts = ListOptions {
            reference_parity: false,
            with_text: false,
            threads: threads(),
        };
        let sessions = self.agent_dir.join("sessions");
        let all = index::all_scope(&sessions);
        let folder = match &self.root {
            Root::Folder(f) => Some(index::folder_scope(f)),
            Root::AgentDir(_) => None,
        };
        let scope: &dyn Fn(&Path) -> bool = match &folder {
            Some(f) => f,
            None => &all,
        };
        let mut v = None;
        if self.use_index {
            let mut guard = self.index.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_none() {
                *guard = Index::open(&Index::default_path(&self.agent_dir)).ok();
            }
            if let Some(idx) = guard.as_mut() {
                // The rows `ls` keeps for the same scope (read back whole while no session
                // changed, else brought up to date).
                let root = match &self.root {
                    Root::Folder(f) => Some(f.as_path()),
                    Root::AgentDir(_) => None,
                };
                let key = index::rows_key(root, &sessions);
                match index::listed_rows(idx, files, None, scope, &key, opts, &|_, _| {}) {
                    Ok((l, _)) => v = Some(l.rows().iter().map(|r| r.to_info()).collect()),
                    // Opened again next time; this listing reads the files.
                    Err(_) => *guard = None,
                }
            }
        }
        let v = v.unwrap_or_else(|| {
            let paths: Vec<PathBuf> = files.iter().map(|f| f.0.clone()).collect();
            list::finish(list::scan_files(&paths, opts, &|_| {}), opts)
        });
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.clear();
        // Newest first: a copied file with the same id yields to the newer one.
        for i in &v {
            if let Some(id) = i.id.as_str().filter(|id| valid_id(id)) {
                ids.entry(id.to_string()).or_insert_with(|| i.path.clone());
            }
        }
        v
    }

    /// The file of a session id, if it is one of the served folder's (after symlinks).
    pub fn path_of(&self, id: &str) -> Option<PathBuf> {
        if !valid_id(id) {
            return None;
        }
        let known = self
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned();
        let p = match known {
            Some(p) if p.is_file() => p,
            _ => {
                self.listing();
                self.ids
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(id)
                    .cloned()?
            }
        };
        self.inside(&p).then_some(p)
    }

    /// `p` is a file of the served folder (of one of the agent dir's session folders),
    /// and not a link out of it: its real path is in its folder's real path.
    fn inside(&self, p: &Path) -> bool {
        let Some(parent) = p.parent() else {
            return false;
        };
        let folder_ok = match &self.root {
            Root::Folder(f) => parent == f.as_path(),
            Root::AgentDir(a) => parent.parent() == Some(a.join("sessions").as_path()),
        };
        if !folder_ok {
            return false;
        }
        match (std::fs::canonicalize(parent), std::fs::canonicalize(p)) {
            (Ok(folder), Ok(real)) => real.parent() == Some(folder.as_path()),
            _ => false,
        }
    }

    /// The session `id`, loaded (or as loaded before, when its file is unchanged).
    pub fn open(&self, id: &str) -> Result<Option<Arc<Open>>, String> {
        let Some(path) = self.path_of(id) else {
            return Ok(None);
        };
        let Some(stamp) = FileStat::of_path(&path) else {
            return Ok(None);
        };
        {
            let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = c.iter().position(|o| o.path == path && o.stamp == stamp) {
                let o = c.remove(i);
                c.insert(0, o.clone());
                return Ok(Some(o));
            }
        }
        let loaded = sessiontree::load(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if loaded.tree.session_id() != id {
            // Replaced by another session since the listing: list again next time.
            self.ids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
            return Ok(None);
        }
        let layout = Layout::new(&loaded.tree);
        let o = Arc::new(Open {
            path: path.clone(),
            stamp,
            loaded,
            layout,
            from: None,
        });
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.retain(|x| x.path != path);
        c.insert(0, o.clone());
        c.truncate(CACHED);
        Ok(Some(o))
    }

    /// A short stamp of the session's file (size and mtime): what the page polls.
    pub fn version(&self, id: &str) -> Option<String> {
        let p = self.path_of(id)?;
        let s = FileStat::of_path(&p)?;
        Some(format!("{}-{}-{}", s.size, s.mtime_ns, s.ino))
    }

    fn summaries(&self) -> Option<Summaries> {
        Summaries::load(&Summaries::path_in(&self.agent_dir))
    }

    /// After a search, the per-file summaries are brought up to date on one thread in the
    /// background (as `sessiontree search` starts `--build-index`): later searches skip
    /// files that cannot match.
    /// (`counted`: the served files a search read and how many of them had a valid summary
    /// as it counted them; otherwise the files are listed and looked up again.)
    fn refresh_summaries(&self, had: Option<&Summaries>, counted: Option<Counted<'_>>) {
        if !self.use_index || !matches!(self.root, Root::AgentDir(_)) {
            return;
        }
        let covered = had.is_some_and(|s| match counted {
            Some((files, n)) => s.covers_exactly_counted(files, n),
            None => s.covers_exactly(&self.files()),
        });
        if covered {
            return;
        }
        if self.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let store = Summaries::path_in(&self.agent_dir);
        let agent = self.agent_dir.clone();
        let flag = self.building.clone();
        std::thread::spawn(move || {
            let files = list::all_files_stat(&agent);
            let _ = summary::build(&store, &files, 1);
            flag.store(false, Ordering::Release);
        });
    }

    /// `sessiontree search`'s hits over the served files; `stop` is asked between files.
    pub fn search(&self, q: &Query, stop: &(dyn Fn() -> bool + Sync)) -> Result<Vec<Hit>, String> {
        let files = self.files();
        let s = self.summaries();
        let r = search::search_until(&files, q, s.as_ref(), threads(), stop);
        let counted = r.as_ref().ok().map(|(_, st)| (&files[..], st.summarized));
        self.refresh_summaries(s.as_ref(), counted);
        r.map(|(hits, _)| hits).map_err(|e| e.to_string())
    }

    /// Every session among `files` with a hit, each with its newest hit, newest first.
    pub fn search_sessions(
        &self,
        files: &[(PathBuf, Option<FileStat>)],
        q: &Query,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Hit>, String> {
        let s = self.summaries();
        let r = search::search_sessions(files, q, s.as_ref(), threads(), stop);
        // (`files` may be a part of the served files: the summaries are judged on all.)
        self.refresh_summaries(s.as_ref(), None);
        r.map(|(hits, _)| hits).map_err(|e| e.to_string())
    }
}
