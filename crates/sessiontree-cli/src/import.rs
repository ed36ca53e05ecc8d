//! `sessiontree import claude|codex|gemini|opencode|copilot [PATH...]`: Claude Code
//! transcripts, Codex CLI rollouts, Gemini CLI chats, OpenCode and GitHub Copilot CLI
//! sessions as Pi sessions, in the session
//! folder of each one's cwd (or `--session-dir`).

use crate::out::Out;
use crate::safe;
use anyhow::Result;
use clap::ValueEnum;
use serde_json::{json, Value};
use sessiontree::dirs;
use sessiontree_import::{batch, Agent};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AgentArg {
    /// Claude Code (`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`).
    Claude,
    /// Codex CLI (`$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    Codex,
    /// Gemini CLI (`$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`).
    Gemini,
    /// OpenCode (`$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`: `opencode.db`
    /// and the `storage/` tree of older releases).
    Opencode,
    /// GitHub Copilot CLI (`$COPILOT_HOME/session-state`, else `~/.copilot/session-state`).
    Copilot,
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// Whose transcripts: claude (Claude Code), codex (Codex CLI), gemini (Gemini CLI),
    /// opencode (OpenCode) or copilot (GitHub Copilot CLI).
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// Transcript files or folders of them (default: the agent's own folder).
    pub paths: Vec<PathBuf>,
    /// Write every session into this folder instead of Pi's folder for its cwd.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<String>,
    /// Say what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON array: per session its source, path, status and counts.
    #[arg(long)]
    pub json: bool,
    /// Write again the copies `prune` deleted (by default one is written again only once
    /// its source has grown since).
    #[arg(long)]
    pub include_pruned: bool,
}

impl AgentArg {
    pub fn agent(self) -> Agent {
        match self {
            AgentArg::Claude => Agent::Claude,
            AgentArg::Codex => Agent::Codex,
            AgentArg::Gemini => Agent::Gemini,
            AgentArg::Opencode => Agent::OpenCode,
            AgentArg::Copilot => Agent::Copilot,
        }
    }
}

pub fn import(out: &mut Out, a: ImportArgs) -> Result<crate::status::Outcome> {
    let roots = if a.paths.is_empty() {
        vec![batch::default_root(a.agent.agent())]
    } else {
        a.paths.clone()
    };
    let mut files = Vec::new();
    let mut failed = false;
    // The agent's own folder missing (never used on this machine, or another config dir)
    // is "nothing found", said plainly; a PATH given that does not exist is an error.
    let mut no_default_folder = false;
    for r in &roots {
        if a.paths.is_empty() && !r.exists() {
            no_default_folder = true;
            continue;
        }
        if let Err(e) = batch::collect_for(a.agent.agent(), r, &mut files) {
            eprintln!(
                "sessiontree: {}: {}",
                safe::path(r),
                safe::line(&e.to_string())
            );
            failed = true;
        }
    }
    files.sort();
    files.dedup();
    let session_dir = dirs::session_dir_override(a.session_dir.as_deref());
    // Many transcripts take a while: a bar on stderr when it is a terminal.
    let pb = crate::out::progress_bar(files.len(), "importing transcripts");
    let tick = || {
        if let Some(pb) = &pb {
            pb.inc(1);
        }
    };
    let pruned = if a.include_pruned {
        Default::default()
    } else {
        batch::read_pruned(&batch::pruned_file_in(&dirs::agent_dir()))
    };
    let report = batch::import_files(
        a.agent.agent(),
        &files,
        batch::Options {
            session_dir: session_dir.as_deref(),
            dry_run: a.dry_run,
            progress: Some(&tick),
            hold_last: None,
            hold_open: None,
            pruned: Some(&pruned),
        },
    );
    if !a.dry_run {
        // Where each copy came from, for `ls` to say which ones outlived their source.
        let file = batch::sources_file();
        let mut known = batch::read_sources(&file);
        if let Err(e) = batch::record_sources(&file, &report.done, &mut known) {
            eprintln!(
                "sessiontree: {}: {}",
                safe::path(&file),
                safe::line(&e.to_string())
            );
        }
    }
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let (done, errors) = (report.done, report.errors);
    for e in &errors {
        eprintln!("sessiontree: {}", safe::line(e));
        failed = true;
    }

    let mut json_out = Vec::new();
    let mut any = false;
    let mut pruned_kept = 0;
    for d in &done {
        for p in &d.conv.problems {
            eprintln!(
                "sessiontree: {}:{}: {}",
                safe::path(&d.source),
                p.line,
                safe::line(&p.message)
            );
        }
        let mut obj = json!({
            "source": d.source.to_string_lossy(),
            "agent": d.conv.agent.name(),
            "kind": d.conv.kind,
            "sessionId": d.conv.session_id,
            "sourceSessionId": d.conv.source_session_id,
            "cwd": d.conv.cwd,
            "entries": d.entries,
            "skipped": d.conv.skipped,
            "problems": d.conv.problems.iter().map(|p| json!({"line": p.line, "message": p.message})).collect::<Vec<_>>(),
        });
        if let Some(p) = &d.parent_session {
            obj["parentSession"] = json!(p);
        }
        match &d.result {
            Ok(o) => {
                any = true;
                obj["path"] = json!(o.path.to_string_lossy());
                obj["status"] = json!(o.status.name());
                obj["added"] = json!(o.added);
                if !a.json {
                    out.line(&safe::path(&o.path))?;
                }
            }
            Err(e) if e == batch::EMPTY => {
                obj["path"] = Value::Null;
                obj["status"] = json!("skipped");
                obj["reason"] = json!("no conversation in the transcript");
            }
            Err(e) if e == batch::PRUNED => {
                any = true;
                pruned_kept += 1;
                obj["path"] = Value::Null;
                obj["status"] = json!("pruned");
                obj["reason"] = json!("its copy was pruned and the transcript has not grown since");
            }
            Err(e) => {
                failed = true;
                eprintln!("sessiontree: {}: {}", safe::path(&d.source), safe::line(e));
                obj["path"] = Value::Null;
                obj["status"] = json!("error");
                obj["error"] = json!(e);
            }
        }
        json_out.push(obj);
    }
    for e in &errors {
        let (source, msg) = e.split_once(": ").unwrap_or((e.as_str(), ""));
        json_out.push(json!({"source": source, "path": null, "status": "error", "error": msg}));
    }
    if a.json {
        out.line(&serde_json::to_string_pretty(&json_out)?)?;
    }
    if pruned_kept > 0 && !a.json {
        eprintln!(
            "sessiontree: {pruned_kept} copies deleted by prune not written again (their transcripts have not grown since; --include-pruned writes them)"
        );
    }
    let agent_name = match a.agent {
        AgentArg::Claude => "Claude Code",
        AgentArg::Codex => "Codex",
        AgentArg::Gemini => "Gemini CLI",
        AgentArg::Opencode => "OpenCode",
        AgentArg::Copilot => "GitHub Copilot CLI",
    };
    if no_default_folder && !any {
        let (var, home) = match a.agent {
            AgentArg::Claude => ("$CLAUDE_CONFIG_DIR/projects", "~/.claude/projects"),
            AgentArg::Codex => ("$CODEX_HOME/sessions", "~/.codex/sessions"),
            AgentArg::Gemini => ("$GEMINI_CLI_HOME/.gemini", "~/.gemini"),
            AgentArg::Opencode => ("$XDG_DATA_HOME/opencode", "~/.local/share/opencode"),
            AgentArg::Copilot => ("$COPILOT_HOME/session-state", "~/.copilot/session-state"),
        };
        eprintln!(
            "sessiontree: no {agent_name} transcripts: {} does not exist ({agent_name}'s folder is {var}, else {home}; or give the transcripts' PATH)",
            safe::path(&roots[0])
        );
    } else if !failed && !any {
        let where_: Vec<String> = roots.iter().map(|r| safe::path(r)).collect();
        eprintln!(
            "sessiontree: no {agent_name} transcripts under {}",
            where_.join(", ")
        );
    }
    Ok(if failed {
        crate::status::Outcome::Code(2)
    } else if any {
        crate::status::Outcome::Done
    } else {
        crate::status::Outcome::NothingFound
    })
}
