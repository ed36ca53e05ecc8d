//! The `sessiontree` command as a library: its arguments ([`Cli`], [`Cmd`]), the command
//! functions (one module per command or family) and the output helpers ([`out`],
//! [`paths`]). The binary (`src/main.rs`) parses, calls [`run`] and turns the outcome into
//! the exit status with [`exit`]; benchmarks and tests call the modules directly.
//!
//! A new subcommand is a module file here, a `pub mod` line below, a variant of [`Cmd`]
//! and an arm in [`run`]'s `match`.
// The doc comments of the arguments are clap's `--help` text, written for a terminal as
// it shows them: `<file>.bak-<time>`, `[REDACTED:<kind>]` and `[label]` are literal there.
#![allow(rustdoc::invalid_html_tags)]

pub mod archive;
pub mod browse;
pub mod export;
pub mod import;
pub mod interrupted;
pub mod ls;
pub mod mcp;
pub mod out;
pub mod paths;
pub mod rows;
pub mod safe;
pub mod search;
pub mod secrets;
pub mod serve;
pub mod show;
pub mod stats;
pub mod status;
pub mod target;
pub mod verify;
pub mod watch;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand, ValueEnum};
use out::Out;
use sessiontree::{Creation, Durability, LeafArg, Session, WriteOptions};
use status::{found, report_notices, report_skipped, Outcome};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "sessiontree",
    version,
    about = "Find, read, branch, repair and trust coding-agent sessions (Pi's JSONL format).",
    after_help = "\
Where sessions live:
  The agent dir is $PI_CODING_AGENT_DIR, else ~/.pi/agent. Pi keeps each working
  directory's sessions in <agent dir>/sessions/--<cwd with / as ->--/, one .jsonl file
  per session; $PI_CODING_AGENT_SESSION_DIR (or --session-dir) puts them in one folder
  instead. `ls`, `resume`, `search` and `stats` look there; the index lives in
  <agent dir>/sessiontree-index.sqlite (a cache: deleting it loses nothing).

Exit status: 0 done, 1 nothing found (or problems found, for verify and interrupted),
2 error (a wrong path, an unknown entry id, a file that is not a session)."
)]
/// The command line: one subcommand.
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// `--durability`: when appended entries reach the disk.
#[derive(Clone, Copy, ValueEnum)]
pub enum DurabilityArg {
    /// Written to the OS, no fsync (the reference's behaviour).
    None,
    /// fsync after every entry.
    Entry,
    /// Group commit: fsync at most every 50 ms and at exit.
    Batch,
}

/// The options of every command that writes to a session.
#[derive(clap::Args, Clone)]
pub struct WriteArgs {
    /// When appended entries reach the disk.
    #[arg(long, value_enum, default_value = "entry")]
    pub durability: DurabilityArg,
    /// Wait up to this many seconds for another writer to finish.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
}

impl WriteArgs {
    /// The store's write options these flags ask for.
    pub fn options(&self) -> WriteOptions {
        WriteOptions {
            durability: match self.durability {
                DurabilityArg::None => Durability::None,
                DurabilityArg::Entry => Durability::Entry,
                DurabilityArg::Batch => Durability::Batch {
                    interval: Duration::from_millis(50),
                },
            },
            creation: Creation::Eager,
            lock_wait: self.wait.map(Duration::from_secs_f64),
            lock: true,
        }
    }
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Header, leaf, name, counts and load diagnostics.
    Info {
        /// The session file (.jsonl).
        file: PathBuf,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// All entries in file order (= getEntries).
    Entries {
        /// The session file (.jsonl).
        file: PathBuf,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The path from the root to an entry, default the leaf (= getBranch). FILE#ID = --from ID.
    Branch {
        /// The session file (.jsonl).
        file: PathBuf,
        /// The entry to end at (default: the leaf).
        #[arg(long, value_name = "ID")]
        from: Option<String>,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What the model sees at the leaf (= buildSessionContext). FILE#ID = --leaf ID.
    Context {
        /// The session file (.jsonl).
        file: PathBuf,
        /// An entry id, or `null` for the empty context.
        #[arg(long, value_name = "ID|null")]
        leaf: Option<String>,
        /// Map roles as for a model request (bash runs, summaries and custom messages become user text).
        #[arg(long)]
        llm: bool,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The whole tree, every branch (= getTree). ● on the leaf's path (FILE#ID: on ID's path), ○ off it, ◀ leaf, [label].
    #[allow(rustdoc::broken_intra_doc_links)] // (`--help` text, not a link)
    Tree {
        /// The session file (.jsonl).
        file: PathBuf,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a new session's header and print its path.
    New {
        /// The session's working directory (default: the current one).
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        /// Session folder (else $PI_CODING_AGENT_SESSION_DIR, else <agent dir>/sessions/<cwd folder>).
        #[arg(long, value_name = "DIR")]
        session_dir: Option<String>,
        /// Use this session id instead of a new UUID v7.
        #[arg(long)]
        id: Option<String>,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// Append entries given as JSON without id, parentId and timestamp (one object, or JSON Lines on stdin: one entry per line); prints each new id.
    Append {
        /// The session file (.jsonl).
        file: PathBuf,
        /// The parent (default: the leaf, the last entry).
        #[arg(long, value_name = "ID", conflicts_with = "root")]
        parent: Option<String>,
        /// Start a new root (parentId null).
        #[arg(long)]
        root: bool,
        /// The entry, or `-` to read it from standard input.
        entry: String,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// Set the label of an entry; without LABEL, clear it.
    Label {
        /// The session file (.jsonl).
        file: PathBuf,
        /// The entry id (8 hex characters in Pi 1.6 sessions).
        id: String,
        /// The label text.
        label: Option<String>,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// Name the session.
    Name {
        /// The session file (.jsonl).
        file: PathBuf,
        /// The session name (what `/resume` and `ls` show).
        name: String,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// A new session file holding the path to an entry (FILE ID, or FILE#ID); prints its path.
    Fork {
        /// The session file (.jsonl).
        file: PathBuf,
        /// The entry id (8 hex characters in Pi 1.6 sessions); or give FILE#ID.
        id: Option<String>,
        /// `at` keeps the entry; `before` (a user message) keeps its parent and prints the message text on stderr.
        #[arg(long, value_enum, default_value = "at")]
        position: Position,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// Check session files (a file, or every *.jsonl below a folder): exit 0 clean, 1 problems, 2 unreadable.
    Verify {
        /// A session file, or a folder: every *.jsonl below it.
        path: PathBuf,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Drop malformed, torn and extra-header lines (original kept as <file>.bak-<time>).
    Repair {
        /// The session file (.jsonl).
        file: PathBuf,
        /// Only say what would be done.
        #[arg(long)]
        dry_run: bool,
        /// Working directory for a rebuilt header, when the file's header is unreadable.
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        /// Wait up to this many seconds for another writer to finish.
        #[arg(long, value_name = "SECONDS")]
        wait: Option<f64>,
        /// Then also close interrupted work as `close-interrupted` does (an error result
        /// appended for every tool call on the current branch left without one).
        #[arg(long)]
        close_interrupted: bool,
    },
    /// Work a crash left half done: tool calls without results, orphan results, an aborted last reply, a compaction keeping a missing entry. Exit 1 when any.
    Interrupted {
        /// The session file (.jsonl).
        file: PathBuf,
        /// Every branch, not only the path from the root to the leaf.
        #[arg(long)]
        all_branches: bool,
        /// Print JSON (Pi's object shapes and field names) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Append an error result for every tool call on the current branch that has none; prints their ids.
    CloseInterrupted {
        /// The session file (.jsonl).
        file: PathBuf,
        #[command(flatten)]
        write: WriteArgs,
    },
    /// Export for reading or sharing: one self-contained HTML page, Markdown, or a branch as a new session file.
    Export(export::Args),
    /// List sessions, newest first (Pi's SessionInfo with --json); ⑂ marks a fork. Exit 1 when none.
    Ls(ls::LsArgs),
    /// Full-text search over every session's messages. Exit 1 when nothing matches.
    Search(search::SearchArgs),
    /// Print the most recent session file of a folder (what Pi's --continue opens). Exit 1 when none.
    Resume(ls::ResumeArgs),
    /// Tokens and cost, by model, provider, day or session. Exit 1 when no usage.
    Stats(stats::StatsArgs),
    /// Send sessions to the shared archive (PostgreSQL): new ones whole, grown ones' new bytes.
    Push(archive::PushArgs),
    /// Bring the archive's sessions here: new files, caught-up files, other machines' branches.
    Pull(archive::PullArgs),
    /// Push, then pull; with --watch, keep pushing every change.
    Sync(archive::SyncArgs),
    /// Let a PostgreSQL role's members read one of your archived sessions.
    Share(archive::ShareArgs),
    /// Full-screen browser: every session, searched as you type; a session's tree, branches and context.
    Browse(browse::Args),
    /// A read-only web UI: every session, search as you type, trees, what the model saw at any entry.
    Serve(serve::ServeArgs),
    /// Import Claude Code transcripts, Codex rollouts, Gemini CLI chats, OpenCode or GitHub Copilot CLI sessions as Pi sessions, every branch kept; prints the written paths.
    Import(import::ImportArgs),
    /// Credentials in sessions (every branch, every text field): FILE#ID, kind, field, masked preview. Exit 0 none, 1 found, 2 error.
    Secrets(secrets::Args),
    /// Serve the sessions to coding agents over MCP (stdio): search, list, read, usage; read-only, credentials redacted.
    Mcp(mcp::McpArgs),
    /// Keep a Pi copy of every Claude Code, Codex, Gemini CLI, OpenCode and GitHub Copilot CLI session as it is written, and a journal of Pi's own sessions folder (foreground; one log line per event on stderr).
    Watch(watch::WatchArgs),
    /// Run `watch` at login: install, uninstall or ask about the systemd user unit / launchd agent.
    #[command(subcommand)]
    Service(watch::ServiceCmd),
    /// Delete local session files older than DURATION that the archive holds byte for byte.
    Prune(watch::PruneArgs),
    /// Where the space goes: session files by agent and by project, and the agents' own folders.
    Du(watch::DuArgs),
    /// Print a shell completion script: `sessiontree completions bash > ~/.local/share/bash-completion/completions/sessiontree`.
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `sessiontree man > ~/.local/share/man/man1/sessiontree.1`.
    Man {
        /// Write one page per command (sessiontree.1, sessiontree-ls.1, ...) into this folder
        /// instead, and print their paths.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `fork --position`.
#[derive(Clone, Copy, ValueEnum)]
pub enum Position {
    At,
    Before,
}

/// What the process exits with after [`run`]: the archive's clean-up done and skipped
/// files reported first; an error is printed on one line and gives 2.
pub fn exit(result: Result<Outcome>) -> ExitCode {
    archive::cleanup();
    report_skipped();
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::NothingFound) => ExitCode::from(1),
        Ok(Outcome::Code(c)) => ExitCode::from(c),
        Err(e) => {
            eprintln!("sessiontree: {}", paths::one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// Loads a session for a read command. The session lives until the process ends: it is
/// leaked on purpose, since freeing a large session's index entry by entry only costs time
/// when the process is about to exit anyway.
fn load(file: &std::path::Path) -> Result<&'static sessiontree::Loaded> {
    paths::session_file(file)?;
    let l = sessiontree::load(file)?;
    Ok(Box::leak(Box::new(l)))
}

fn read_entry_arg(arg: &str) -> Result<String> {
    if arg == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("reading the entry from standard input")?;
        Ok(s)
    } else {
        Ok(arg.to_string())
    }
}

/// The entries given to `append`: one JSON value (which may span lines), or JSON Lines,
/// one entry per line. Every line is checked before anything is appended.
fn entry_texts(text: &str, arg: &str) -> Result<Vec<String>> {
    let from = if arg == "-" {
        "standard input"
    } else {
        "the argument"
    };
    if text.trim().is_empty() {
        bail!("no entry given on {from}: append takes a JSON object, or one per line");
    }
    if sessiontree::Json::parse(text.trim()).is_ok() {
        return Ok(vec![text.trim().to_string()]);
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Err(e) = sessiontree::Json::parse(line) {
            bail!("{from}, line {}: {e} (append takes one JSON object, or JSON Lines: one entry per line)", i + 1);
        }
        out.push(line.to_string());
    }
    Ok(out)
}

/// Runs one command line's subcommand, its output written to standard output.
pub fn run(cli: Cli) -> Result<Outcome> {
    let mut out = Out::new();
    let outcome = match cli.cmd {
        Cmd::Info { file, json } => {
            let l = load(&file)?;
            show::info(&mut out, &file, l, json)?;
            Outcome::Done
        }
        Cmd::Entries { file, json } => {
            let l = load(&file)?;
            show::entries(&mut out, &l.tree, json)?;
            if l.tree.entries().is_empty() {
                Outcome::NothingFound
            } else {
                Outcome::Done
            }
        }
        Cmd::Branch { file, from, json } => {
            let (file, from) = target::with_flag(&file, from, "--from")?;
            let l = load(&file)?;
            if let Some(id) = &from {
                if !l.tree.contains(id) {
                    bail!("{}: no entry {id}", file.display());
                }
            }
            let path = l.tree.get_branch(from.as_deref());
            show::entry_list(&mut out, &l.tree, &path, json)?;
            if path.is_empty() {
                Outcome::NothingFound
            } else {
                Outcome::Done
            }
        }
        Cmd::Context {
            file,
            leaf,
            llm,
            json,
        } => {
            let (file, leaf) = target::with_flag(&file, leaf, "--leaf")?;
            // At the last entry, a large session's context is read from where its entries
            // were found last time, when the file has not changed since.
            use sessiontree::session::kept;
            let keep_in = (leaf.is_none() && !kept::disabled())
                .then(|| sessiontree::dirs::agent_dir().join(kept::DIR_NAME));
            if let Some(dir) = &keep_in {
                paths::session_file(&file)?;
                if let Some(k) = kept::kept_context(&file, dir) {
                    show::context_plan(&mut out, k.plan(), json, llm)?;
                    return Ok(Outcome::Done);
                }
            }
            let before = kept::FileKey::now(&file);
            let l = load(&file)?;
            let arg = match leaf.as_deref() {
                None => l.tree.leaf_arg(),
                Some("null") => LeafArg::Null,
                Some(id) => {
                    if !l.tree.contains(id) {
                        bail!("{}: no entry {id}", file.display());
                    }
                    LeafArg::Id(id)
                }
            };
            let plan = sessiontree::context::plan(&l.tree, arg);
            if let (Some(dir), Some(before)) = (&keep_in, before) {
                kept::keep_context(&file, dir, before, l, &plan);
            }
            show::context_plan(&mut out, plan, json, llm)?;
            Outcome::Done
        }
        Cmd::Tree { file, json } => {
            let (file, focus) = target::with_flag(&file, None, "")?;
            let l = load(&file)?;
            if let Some(id) = focus.as_deref().filter(|id| !l.tree.contains(id)) {
                bail!("{}: no entry {id}", file.display());
            }
            if json {
                l.tree.write_tree_json(&mut out)?;
                out.line("")?;
            } else {
                show::tree(&mut out, &l.tree, focus.as_deref(), ls::width())?;
            }
            Outcome::Done
        }
        Cmd::New {
            cwd,
            session_dir,
            id,
            write,
        } => {
            let cwd = match cwd {
                Some(c) => c,
                None => std::env::current_dir()?.to_string_lossy().into_owned(),
            };
            let dir = sessiontree::dirs::session_dir_override(session_dir.as_deref());
            let s = Session::create(&cwd, dir.as_deref(), write.options(), id.as_deref())?;
            out.line(&s.path().expect("a file session").display().to_string())?;
            Outcome::Done
        }
        Cmd::Append {
            file,
            parent,
            root,
            entry,
            write,
        } => {
            let text = read_entry_arg(&entry)?;
            let entries = entry_texts(&text, &entry)?;
            let mut s = open_existing(&file, &write)?;
            let mut parent = if root { Some(None) } else { parent.map(Some) };
            for (n, e) in entries.iter().enumerate() {
                let id = s.append_json(e, parent.take()).with_context(|| {
                    let which = if entries.len() > 1 {
                        format!(
                            " (entry {} of {}; the ones before it were appended)",
                            n + 1,
                            entries.len()
                        )
                    } else {
                        String::new()
                    };
                    format!("cannot append to {}{which}", file.display())
                })?;
                report_notices(&mut s);
                out.line(&id)?;
            }
            Outcome::Done
        }
        Cmd::Label {
            file,
            id,
            label,
            write,
        } => {
            let mut s = open_existing(&file, &write)?;
            let new = s
                .append_label_change(&id, label.as_deref())
                .with_context(|| format!("cannot label in {}", file.display()))?;
            report_notices(&mut s);
            out.line(&new)?;
            Outcome::Done
        }
        Cmd::Name { file, name, write } => {
            let mut s = open_existing(&file, &write)?;
            let new = s
                .append_session_info(&name)
                .with_context(|| format!("cannot name {}", file.display()))?;
            report_notices(&mut s);
            out.line(&new)?;
            Outcome::Done
        }
        Cmd::Fork {
            file,
            id,
            position,
            write,
        } => {
            let (file, id) = match target::with_flag(&file, id, "ID")? {
                (f, Some(id)) => (f, id),
                (f, None) => bail!("{}: which entry? (FILE ID or FILE#ID)", f.display()),
            };
            paths::session_file(&file)?;
            let f = Session::fork_at(
                &file,
                &id,
                matches!(position, Position::Before),
                write.options(),
            )
            .with_context(|| format!("cannot fork {}", file.display()))?;
            out.line(&f.path.display().to_string())?;
            if let Some(t) = f.text {
                eprintln!("{}", safe::text(&t));
            }
            Outcome::Done
        }
        Cmd::Verify { path, json } => Outcome::Code(verify::verify(&mut out, &path, json)?),
        Cmd::Repair {
            file,
            dry_run,
            cwd,
            wait,
            close_interrupted,
        } => Outcome::Code(verify::repair(
            &mut out,
            &file,
            dry_run,
            cwd,
            wait.map(Duration::from_secs_f64),
            close_interrupted,
        )?),
        Cmd::Interrupted {
            file,
            all_branches,
            json,
        } => match interrupted::list(&mut out, &file, all_branches, json)? {
            true => Outcome::Code(1),
            false => Outcome::Done,
        },
        Cmd::Ls(a) => found(ls::ls(&mut out, a)?),
        Cmd::Search(a) => found(search::search(&mut out, a)?),
        Cmd::Resume(a) => found(ls::resume(&mut out, a)?),
        Cmd::Stats(a) => found(stats::stats(&mut out, a)?),
        Cmd::Push(a) => archive::push_cmd(&mut out, a).map(|_| Outcome::Done)?,
        Cmd::Pull(a) => archive::pull_cmd(&mut out, a).map(|_| Outcome::Done)?,
        Cmd::Sync(a) => archive::sync_cmd(a).map(|_| Outcome::Done)?,
        Cmd::Share(a) => archive::share_cmd(a).map(|_| Outcome::Done)?,
        Cmd::Browse(a) => {
            browse::run(a)?;
            Outcome::Done
        }
        Cmd::Serve(a) => serve::serve(a).map(|_| Outcome::Done)?,
        Cmd::Import(a) => import::import(&mut out, a)?,
        Cmd::Secrets(a) => Outcome::Code(secrets::run(&mut out, a)?),
        Cmd::Mcp(a) => mcp::run(a).map(|_| Outcome::Done)?,
        Cmd::Watch(a) => watch::watch(a)?,
        Cmd::Service(c) => watch::service_cmd(&mut out, c)?,
        Cmd::Prune(a) => watch::prune(&mut out, a)?,
        Cmd::Du(a) => watch::du(&mut out, a)?,
        Cmd::CloseInterrupted { file, write } => {
            interrupted::close(&mut out, &file, write.options())?;
            Outcome::Done
        }
        Cmd::Export(args) => {
            export::run(args)?;
            Outcome::Done
        }
        Cmd::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "sessiontree", &mut buf);
            out.write_str(&String::from_utf8_lossy(&buf))?;
            Outcome::Done
        }
        Cmd::Man { dir } => {
            let cmd = <Cli as clap::CommandFactory>::command();
            match dir {
                None => {
                    let mut buf = Vec::new();
                    clap_mangen::Man::new(cmd).render(&mut buf)?;
                    out.write_str(&String::from_utf8_lossy(&buf))?;
                }
                Some(dir) => {
                    paths::folder(&dir)?;
                    let mut pages = vec![("sessiontree".to_string(), cmd.clone())];
                    for sub in cmd.get_subcommands() {
                        let name = format!("sessiontree-{}", sub.get_name());
                        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
                        pages.push((name, sub.clone().name(leaked)));
                    }
                    for (name, page) in pages {
                        let path = dir.join(format!("{name}.1"));
                        let mut buf = Vec::new();
                        clap_mangen::Man::new(page).render(&mut buf)?;
                        std::fs::write(&path, buf)
                            .with_context(|| format!("cannot write {}", path.display()))?;
                        out.line(&path.display().to_string())?;
                    }
                }
            }
            Outcome::Done
        }
    };
    out.finish()?;
    Ok(outcome)
}

fn open_existing(file: &std::path::Path, write: &WriteArgs) -> Result<Session> {
    if !file.exists() {
        bail!(
            "{}: no such file or directory (create a session with `sessiontree new`)",
            file.display()
        );
    }
    paths::session_file(file)?;
    Session::open(file, write.options())
        .with_context(|| format!("cannot open {} for writing", file.display()))
}

#[cfg(test)]
mod tests {
    use super::Cli;

    /// Every argument and flag of every command says what it is for in `--help`.
    #[test]
    fn every_argument_is_described() {
        let mut missing = Vec::new();
        let mut stack = vec![(
            String::from("sessiontree"),
            <Cli as clap::CommandFactory>::command(),
        )];
        while let Some((path, cmd)) = stack.pop() {
            if cmd.get_about().is_none() && path != "sessiontree help" {
                missing.push(path.clone());
            }
            for a in cmd.get_arguments() {
                let builtin = matches!(a.get_id().as_str(), "help" | "version");
                if !builtin && a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {}", a.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub.clone()));
            }
        }
        assert!(missing.is_empty(), "no description: {missing:#?}");
    }
}
