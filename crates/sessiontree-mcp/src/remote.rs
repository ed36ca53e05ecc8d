//! The shared archive (`sessiontree mcp --archive`): one connection, opened at start,
//! opened again on the next call after it broke. Everything read through it is what the
//! archive's row-level security lets the login read: its own sessions from every machine
//! and the sessions shared with a role it is a member of.

use crate::args::ToolError;
use sessiontree_archive::Archive;
use std::path::Path;
use std::sync::Mutex;

/// An archive the server answers from besides the agent dir.
pub struct Remote {
    url: String,
    role: String,
    here: String,
    conn: Mutex<Option<Archive>>,
}

impl Remote {
    /// Connects to `url` (a libpq URL or keyword string); the error is one line naming
    /// what failed. `agent_dir` names this machine as the archive knows it (the name
    /// `push` registered), else the host name.
    pub fn connect(url: &str, agent_dir: &Path) -> Result<Remote, String> {
        let a = Archive::open(url).map_err(|e| e.to_string())?;
        Ok(Remote {
            url: url.to_string(),
            role: a.role.clone(),
            here: machine_name(agent_dir),
            conn: Mutex::new(Some(a)),
        })
    }

    /// The role the server reads the archive as: the owner of the local sessions.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// This machine's name (the owner of the agent dir's files).
    pub fn here(&self) -> &str {
        &self.here
    }

    /// Runs `f` on the connection (opened again first when it broke); a failure is a tool
    /// error of `tool`, and a broken connection is dropped so that the next call retries.
    pub(crate) fn with<T>(
        &self,
        tool: &str,
        f: impl FnOnce(&mut Archive) -> sessiontree_archive::Result<T>,
    ) -> Result<T, ToolError> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_ref().is_none_or(|a| a.client.is_closed()) {
            *guard = None;
            match Archive::open(&self.url) {
                Ok(a) => *guard = Some(a),
                Err(e) => {
                    return Err(ToolError(format!(
                        "{tool}: the archive cannot be reached ({}); call again to retry.",
                        crate::answer::one_line(&e.to_string(), 300)
                    )))
                }
            }
        }
        let Some(a) = guard.as_mut() else {
            unreachable!("opened above")
        };
        match f(a) {
            Ok(v) => Ok(v),
            Err(e) => {
                if a.client.is_closed() {
                    *guard = None;
                }
                Err(ToolError(format!(
                    "{tool}: the archive failed: {}.",
                    crate::answer::one_line(&e.to_string(), 300)
                )))
            }
        }
    }
}

/// The machine name `push` registered for this agent dir (its `sessiontree-machine.json`),
/// else the host name; read only, never created.
fn machine_name(agent_dir: &Path) -> String {
    let file = sessiontree_archive::machine::machine_file(agent_dir);
    let stored = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string));
    stored
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "this machine".into())
}
