//! The status file a running watch keeps: `<agent dir>/sessiontree-watch.status`, one JSON
//! object (pid, start, the sources, the last event and when, entries written so far),
//! replaced whole (written aside, renamed) after each event: never while idle.
//! `sessiontree service status` reads it; whether the watch still runs is asked of the lock,
//! not of this file.

use crate::Config;
use std::path::{Path, PathBuf};

/// What a watch says about itself.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub pid: u32,
    pub started: String,
    pub sources: Vec<String>,
    pub running: bool,
    pub last_event: String,
    pub last_time: String,
    /// Entries written into copies since the start.
    pub imported: u64,
}

/// Where the status file of `agent_dir` is.
pub fn path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessiontree-watch.status")
}

impl Status {
    pub(crate) fn starting(cfg: &Config) -> Status {
        Status {
            pid: std::process::id(),
            started: sessiontree::date::now_iso(),
            sources: cfg
                .sources
                .iter()
                .map(|s| format!("{} {}", s.agent.name(), s.root.display()))
                .collect(),
            running: true,
            last_event: "starting".into(),
            last_time: sessiontree::date::now_iso(),
            imported: 0,
        }
    }

    pub(crate) fn event(&mut self, what: String) {
        self.last_event = what;
        self.last_time = sessiontree::date::now_iso();
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "pid": self.pid,
            "started": self.started,
            "sources": self.sources,
            "running": self.running,
            "lastEvent": self.last_event,
            "lastTime": self.last_time,
            "imported": self.imported,
        })
    }

    /// Replaces the status file (errors are ignored: the status is a courtesy).
    pub(crate) fn save(&self, agent_dir: &Path) {
        let file = path(agent_dir);
        let tmp = agent_dir.join(format!(
            ".sessiontree-watch.status.tmp-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&tmp);
        let body = self.to_json().to_string();
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, body.as_bytes()));
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    /// Reads the status file of `agent_dir` (at most 64 KiB of it); `None` when there is none
    /// or it is not one.
    pub fn read(agent_dir: &Path) -> Option<Status> {
        let (f, _) = sessiontree::store::open_regular(&path(agent_dir)).ok()?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&f, 64 << 10), &mut bytes).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        Some(Status {
            pid: v.get("pid").and_then(|x| x.as_u64()).unwrap_or(0) as u32,
            started: s("started"),
            sources: v
                .get("sources")
                .and_then(|x| x.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            running: v.get("running").and_then(|x| x.as_bool()).unwrap_or(false),
            last_event: s("lastEvent"),
            last_time: s("lastTime"),
            imported: v.get("imported").and_then(|x| x.as_u64()).unwrap_or(0),
        })
    }
}

/// Whether a watch holds the lock of `agent_dir` now (asked of the lock itself: a watch
/// killed with -9 left `running: true` in its status file).
pub fn is_running(agent_dir: &Path) -> bool {
    let anchor = agent_dir.join("sessiontree-watch");
    match sessiontree::store::WriterLock::acquire(&anchor, None) {
        Ok(_lock) => false,
        Err(sessiontree::Error::Locked { .. }) => true,
        Err(_) => false,
    }
}
