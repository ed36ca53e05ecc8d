//! `watch`, `service`, `prune` and `du` (crate `sessiontree-watch`).

use crate::out::Out;
use anyhow::{bail, Result};
use sessiontree::dirs;
use sessiontree_archive::conn::archive_url;
use sessiontree_archive::Archive;
use sessiontree_import::Agent;
use sessiontree_watch::{clean, disk, service, status, Config, Source};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[derive(clap::Args)]
pub struct WatchArgs {
    /// Another folder of Claude Code transcripts to follow (repeatable).
    #[arg(long, value_name = "DIR")]
    pub claude: Vec<PathBuf>,
    /// Another folder of Codex rollouts to follow (repeatable).
    #[arg(long, value_name = "DIR")]
    pub codex: Vec<PathBuf>,
    /// Another Gemini CLI folder (a `.gemini` or part of it) to follow (repeatable).
    #[arg(long, value_name = "DIR")]
    pub gemini: Vec<PathBuf>,
    /// Another OpenCode data folder to follow (repeatable).
    #[arg(long, value_name = "DIR")]
    pub opencode: Vec<PathBuf>,
    /// Another GitHub Copilot CLI folder (`session-state` or part of it) to follow
    /// (repeatable).
    #[arg(long, value_name = "DIR")]
    pub copilot: Vec<PathBuf>,
    /// Leave Claude Code's own folder out.
    #[arg(long)]
    pub no_claude: bool,
    /// Leave Codex's own folder out.
    #[arg(long)]
    pub no_codex: bool,
    /// Leave Gemini CLI's own folder out.
    #[arg(long)]
    pub no_gemini: bool,
    /// Leave OpenCode's own folder out.
    #[arg(long)]
    pub no_opencode: bool,
    /// Leave GitHub Copilot CLI's own folder out.
    #[arg(long)]
    pub no_copilot: bool,
    /// Write every copy into this folder instead of Pi's folder for its cwd.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<String>,
    /// Also push what changed to this archive (default: $SESSIONTREE_ARCHIVE when set).
    #[arg(long, value_name = "URL")]
    pub archive: Option<String>,
    /// Seconds between rescans (each transcript `stat`ed: the fallback for missed events).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub rescan: f64,
    /// No inotify: find changes by the rescan alone (for folders whose changes raise no
    /// events, such as some network file systems; use a short --rescan).
    #[arg(long)]
    pub poll: bool,
    /// Seconds a transcript must stay unchanged before the entries its agent may still add
    /// to are written (a Codex turn's message, open while its tool calls run).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub open_quiet: f64,
}

fn sources(a: &WatchArgs) -> Vec<Source> {
    let mut out = Vec::new();
    for s in sessiontree_watch::default_sources() {
        let left_out = match s.agent {
            Agent::Claude => a.no_claude,
            Agent::Codex => a.no_codex,
            Agent::Gemini => a.no_gemini,
            Agent::OpenCode => a.no_opencode,
            Agent::Copilot => a.no_copilot,
        };
        if !left_out {
            out.push(s);
        }
    }
    let named = a
        .claude
        .iter()
        .map(|d| (Agent::Claude, d))
        .chain(a.codex.iter().map(|d| (Agent::Codex, d)))
        .chain(a.gemini.iter().map(|d| (Agent::Gemini, d)))
        .chain(a.opencode.iter().map(|d| (Agent::OpenCode, d)))
        .chain(a.copilot.iter().map(|d| (Agent::Copilot, d)));
    for (agent, d) in named {
        let root = std::path::absolute(d).unwrap_or_else(|_| d.clone());
        let s = Source { agent, root };
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

pub fn watch(a: WatchArgs) -> Result<crate::Outcome> {
    let srcs = sources(&a);
    if srcs.is_empty() {
        bail!("nothing to watch: every agent was left out and no folder named");
    }
    let mut cfg = Config::new(dirs::agent_dir(), srcs);
    cfg.session_dir = dirs::session_dir_override(a.session_dir.as_deref());
    cfg.archive = match &a.archive {
        Some(u) => Some(u.clone()),
        None => std::env::var("SESSIONTREE_ARCHIVE")
            .ok()
            .filter(|v| !v.is_empty()),
    };
    if !(a.rescan.is_finite() && a.rescan >= 0.1) {
        bail!("--rescan {}: give at least 0.1 seconds", a.rescan);
    }
    cfg.rescan = Duration::from_secs_f64(a.rescan.min(86_400.0));
    cfg.poll = a.poll;
    if !(a.open_quiet.is_finite() && a.open_quiet >= 1.0) {
        bail!("--open-quiet {}: give at least 1 second", a.open_quiet);
    }
    cfg.open_quiet = Duration::from_secs_f64(a.open_quiet.min(86_400.0));
    let stop = AtomicBool::new(false);
    let mut log = |line: &str| {
        eprintln!("{} sessiontree watch: {line}", sessiontree::date::now_iso());
    };
    sessiontree_watch::run(&cfg, &stop, &mut log).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(crate::Outcome::Done)
}

#[derive(clap::Subcommand)]
pub enum ServiceCmd {
    /// Write the login service (systemd user unit / launchd agent) and start it.
    Install {
        /// Print the file that would be written (and where); write and start nothing.
        #[arg(long)]
        dry_run: bool,
        /// The service also pushes to this archive (kept in the file as SESSIONTREE_ARCHIVE;
        /// a URL with a password is refused: put the password in ~/.pgpass).
        #[arg(long, value_name = "URL")]
        archive: Option<String>,
    },
    /// Stop the service and remove its file.
    Uninstall,
    /// Whether the service is installed and running, and what the watch last did.
    Status {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub fn service_cmd(out: &mut Out, cmd: ServiceCmd) -> Result<crate::Outcome> {
    let kind = service::Kind::here();
    let home = dirs::home_dir();
    match cmd {
        ServiceCmd::Install {
            dry_run: true,
            archive,
        } => {
            let exe = std::env::current_exe()?;
            let text = service::file_text(kind, &exe, &home, archive.as_deref())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            out.line(&format!(
                "# {}",
                clean(&service::file_path(kind, &home).to_string_lossy())
            ))?;
            out.write_str(&text)?;
            Ok(crate::Outcome::Done)
        }
        ServiceCmd::Install {
            dry_run: false,
            archive,
        } => {
            let exe = std::env::current_exe()?;
            let done = service::install(kind, &exe, &home, archive.as_deref())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            for d in done {
                out.line(&d)?;
            }
            Ok(crate::Outcome::Done)
        }
        ServiceCmd::Uninstall => {
            let done = service::uninstall(kind, &home).map_err(|e| anyhow::anyhow!("{e}"))?;
            if done.is_empty() {
                eprintln!("sessiontree: no service installed");
                return Ok(crate::Outcome::NothingFound);
            }
            for d in done {
                out.line(&d)?;
            }
            Ok(crate::Outcome::Done)
        }
        ServiceCmd::Status { json } => {
            let file = service::file_path(kind, &home);
            let installed = file.exists();
            let agent_dir = dirs::agent_dir();
            let running = status::is_running(&agent_dir);
            let st = status::Status::read(&agent_dir);
            let manager = if installed {
                service::manager_state(kind)
            } else {
                None
            };
            if json {
                let v = serde_json::json!({
                    "installed": installed,
                    "file": file.to_string_lossy(),
                    "service": manager,
                    "running": running,
                    "watch": st.as_ref().map(|s| s.to_json()),
                });
                out.line(&serde_json::to_string_pretty(&v)?)?;
            } else {
                out.line(&if installed {
                    format!(
                        "service: installed ({}){}",
                        clean(&file.to_string_lossy()),
                        manager.map(|m| format!(", {m}")).unwrap_or_default()
                    )
                } else {
                    "service: not installed".to_string()
                })?;
                out.line(&format!(
                    "watch: {}",
                    if running { "running" } else { "not running" }
                ))?;
                if let Some(s) = &st {
                    if running {
                        out.line(&format!("  pid {} since {}", s.pid, clean(&s.started)))?;
                    }
                    out.line(&format!(
                        "  last: {} ({})",
                        clean(&s.last_event),
                        clean(&s.last_time)
                    ))?;
                    out.line(&format!("  entries written: {}", s.imported))?;
                }
            }
            Ok(if running {
                crate::Outcome::Done
            } else {
                crate::Outcome::NothingFound
            })
        }
    }
}

#[derive(clap::Args)]
pub struct PruneArgs {
    /// Only files last changed longer ago than this (30d, 12h, 90m, 2w).
    #[arg(long, value_name = "DURATION", value_parser = disk::parse_duration)]
    pub older_than: Duration,
    /// Say what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object: every old file, deleted or kept and why, and the space freed.
    #[arg(long)]
    pub json: bool,
    /// Session folder (else $PI_CODING_AGENT_SESSION_DIR, else <agent dir>/sessions).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<String>,
    /// PostgreSQL connection URL or string (default: $SESSIONTREE_ARCHIVE).
    #[arg(long, value_name = "URL")]
    pub archive: Option<String>,
}

pub fn prune(out: &mut Out, a: PruneArgs) -> Result<crate::Outcome> {
    let root =
        dirs::session_dir_override(a.session_dir.as_deref()).unwrap_or_else(dirs::sessions_dir);
    let mut ar = Archive::open(&archive_url(a.archive.as_deref())?)?;
    let items = disk::prune(&mut ar, &root, &dirs::agent_dir(), a.older_than, a.dry_run)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let freed: u64 = items
        .iter()
        .filter(|i| i.kept.is_none())
        .map(|i| i.bytes)
        .sum();
    let n = items.iter().filter(|i| i.kept.is_none()).count();
    if a.json {
        let v = serde_json::json!({
            "dryRun": a.dry_run,
            "deleted": items.iter().filter(|i| i.kept.is_none()).map(|i| serde_json::json!({"path": i.path.to_string_lossy(), "sessionId": i.session_id, "bytes": i.bytes})).collect::<Vec<_>>(),
            "kept": items.iter().filter_map(|i| i.kept.as_ref().map(|why| serde_json::json!({"path": i.path.to_string_lossy(), "sessionId": i.session_id, "bytes": i.bytes, "reason": why}))).collect::<Vec<_>>(),
            "freed": freed,
        });
        out.line(&serde_json::to_string_pretty(&v)?)?;
    } else {
        let verb = if a.dry_run { "would delete" } else { "deleted" };
        for i in &items {
            match &i.kept {
                None => out.line(&format!(
                    "{verb} {} ({})",
                    clean(&i.path.to_string_lossy()),
                    disk::human_bytes(i.bytes)
                ))?,
                Some(why) => eprintln!(
                    "sessiontree: kept {}: {}",
                    clean(&i.path.to_string_lossy()),
                    why
                ),
            }
        }
        out.line(&format!(
            "{} {n} files, {} {}",
            verb,
            disk::human_bytes(freed),
            if a.dry_run { "would be freed" } else { "freed" }
        ))?;
    }
    Ok(if n > 0 {
        crate::Outcome::Done
    } else {
        crate::Outcome::NothingFound
    })
}

#[derive(clap::Args)]
pub struct DuArgs {
    /// One JSON object: totals by agent, by project, the agents' own folders and sessiontree's caches.
    #[arg(long)]
    pub json: bool,
    /// Session folder (else $PI_CODING_AGENT_SESSION_DIR, else <agent dir>/sessions).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<String>,
}

/// sessiontree's caches in `agent`, as `du` shows them: the files each crate keeps there.
fn caches(agent: &std::path::Path) -> Vec<disk::Cache> {
    let index = sessiontree_index::Index::default_path(agent);
    let beside = |suffix: &str| {
        let mut p = index.clone().into_os_string();
        p.push(suffix);
        PathBuf::from(p)
    };
    vec![
        disk::Cache {
            name: "listing index",
            paths: ["", "-wal", "-shm", "-journal", ".listing", ".rows"]
                .iter()
                .map(|s| beside(s))
                .collect(),
        },
        disk::Cache {
            name: "search summaries",
            paths: vec![sessiontree_index::summary::Summaries::path_in(agent)],
        },
        disk::Cache {
            name: "kept contexts",
            paths: vec![agent.join(sessiontree::session::kept::DIR_NAME)],
        },
    ]
}

pub fn du(out: &mut Out, a: DuArgs) -> Result<crate::Outcome> {
    let root =
        dirs::session_dir_override(a.session_dir.as_deref()).unwrap_or_else(dirs::sessions_dir);
    let copies = disk::copies_by_agent(&sessiontree_import::batch::sources_file());
    let r = disk::du(
        &root,
        &sessiontree_watch::default_sources(),
        &copies,
        &caches(&dirs::agent_dir()),
    );
    if a.json {
        out.line(&serde_json::to_string_pretty(&r.to_json())?)?;
    } else {
        for l in r.lines() {
            out.line(&l)?;
        }
    }
    Ok(
        if r.total.files > 0 || r.sources.iter().any(|s| s.2.files > 0) {
            crate::Outcome::Done
        } else {
            crate::Outcome::NothingFound
        },
    )
}
