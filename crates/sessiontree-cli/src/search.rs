//! `sessiontree search`: full-text search over every session, a scan of the files that
//! later searches speed up with per-file summaries built in the background.

use crate::ls::parse_date;
use crate::out::Out;
use crate::safe;
use anyhow::{bail, Result};
use sessiontree::dirs;
use sessiontree::list::{self, FileStat};
use sessiontree_index::search::{Hit, Mode, Query, Unsummarized};
use sessiontree_index::summary::{self, Summaries};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
Matching: each entry's searchable text (message text, tool output, bash command and output,
summaries; not JSON keys), ASCII case-insensitive substrings. Several words: every word must
occur in the same entry, in any order. --phrase: the words as one string, spaces included.
Hits come newest first, every branch included (abandoned ones are marked).

Each hit is printed as FILE#ENTRY: context, branch, tree, export and fork take that form.

--json: {\"hits\": [...]}, each hit with path, cwd, entryId, role, timestamp, onBranch,
snippet (plain text around the first match), highlights ([start, end) character offsets of
every match inside snippet) and matches ([start, end) UTF-8 byte offsets of every match in
the entry's whole text).

The first search reads every file (a parallel scan); it then starts a background process that
writes small per-file summaries (sessiontree-search.summaries in the agent dir), with which
later searches skip files that cannot match and stop at the newest hits. The summaries never
change the hits; --no-index scans every file without them.";

#[derive(clap::Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct SearchArgs {
    /// Words that must all occur in one entry (no quotes needed), a phrase (--phrase), or
    /// a regular expression (--regex).
    #[arg(required_unless_present = "build_index", num_args = 1.., value_name = "QUERY")]
    query: Vec<String>,
    /// QUERY is a regular expression (Rust `regex` syntax).
    #[arg(long, conflicts_with = "phrase")]
    regex: bool,
    /// QUERY is one phrase (a substring, spaces included).
    #[arg(long)]
    phrase: bool,
    /// Only sessions of this working directory.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Only entries of this role: user, assistant, toolResult, bashExecution, custom,
    /// compaction, branch_summary.
    #[arg(long)]
    role: Option<String>,
    /// Only entries written at or after this date (ISO date/time, or 30m, 12h, 7d ago).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only entries written before this date.
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// At most N hits.
    #[arg(long, default_value = "50")]
    limit: usize,
    /// Search the *.jsonl files of this folder instead of every session of the agent dir.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Read every file; neither use nor build the per-file summaries.
    #[arg(long)]
    no_index: bool,
    /// Print what the search read on stderr (files scanned, ruled out, skipped).
    #[arg(long)]
    stats: bool,
    /// Bring the per-file summaries up to date and exit (what the background process runs).
    #[arg(long, hide = true)]
    build_index: bool,
    /// Read the shared archive (PostgreSQL URL; without a value, $SESSIONTREE_ARCHIVE) instead of local files.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub archive: Option<String>,
    /// Print JSON ({"hits": [...]}, see the fields below) instead of text.
    #[arg(long)]
    json: bool,
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Starts `sessiontree search --build-index` detached (stdin, stdout, stderr closed):
/// the answer never waits for it. `SESSIONTREE_NO_BACKGROUND_INDEX` turns it off.
fn spawn_builder() {
    if std::env::var_os("SESSIONTREE_NO_BACKGROUND_INDEX").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    use std::os::unix::process::CommandExt;
    let _ = std::process::Command::new(exe)
        .args(["search", "--build-index"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn();
}

fn build_index(out: &mut Out, json: bool) -> Result<bool> {
    if let Some(ms) = std::env::var("SESSIONTREE_TEST_INDEX_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    // The lowest CPU priority: a search the user starts while this runs keeps the cores.
    // SAFETY: setpriority changes nothing but this process's scheduling priority.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
    let agent = dirs::agent_dir();
    let files = list::all_files_stat(&agent);
    // One thread: the user's next commands keep the other cores.
    let store = Summaries::path_in(&agent);
    match summary::build(&store, &files, 1)? {
        Some(st) => {
            if json {
                out.line(&serde_json::to_string(&st)?)?;
            }
            Ok(true)
        }
        None => {
            eprintln!("sessiontree: another process is building the search summaries");
            Ok(false)
        }
    }
}

pub fn search(out: &mut Out, a: SearchArgs) -> Result<bool> {
    if let Some(url) = &a.archive {
        if a.dir.is_some() {
            bail!("search --archive searches the archive, not a folder: leave out --dir");
        }
        let filter = sessiontree_archive::query::Filter {
            role: a.role.clone(),
            cwd: a
                .cwd
                .as_deref()
                .map(|c| dirs::resolve(c).to_string_lossy().into_owned()),
            since_ms: a.since.as_deref().map(parse_date).transpose()?,
            until_ms: a.until.as_deref().map(parse_date).transpose()?,
        };
        let mode = if a.regex {
            sessiontree_archive::query::Mode::Regex
        } else if a.phrase {
            sessiontree_archive::query::Mode::Phrase
        } else {
            sessiontree_archive::query::Mode::Words
        };
        return crate::archive::search(
            out,
            Some(url.as_str()),
            &a.query.join(" "),
            mode,
            &filter,
            a.limit,
            a.json,
        );
    }
    if a.build_index {
        return build_index(out, a.json);
    }
    let agent = dirs::agent_dir();
    let store = Summaries::path_in(&agent);
    // The summaries load (a checksum over each record) on another core while the files
    // are listed.
    let loading = (!a.no_index).then(|| std::thread::spawn(move || Summaries::load(&store)));
    let (files, folder): (Vec<(PathBuf, Option<FileStat>)>, PathBuf) = match &a.dir {
        Some(d) => {
            let d = dirs::resolve(&d.to_string_lossy());
            if !d.is_dir() {
                bail!("{}: no such folder", d.display());
            }
            (list::with_stats(list::dir_files(&d)), d)
        }
        None => {
            let sessions = agent.join("sessions");
            if !sessions.is_dir() {
                bail!(
                    "{}: no such folder (no sessions yet; set PI_CODING_AGENT_DIR or use --dir)",
                    sessions.display()
                );
            }
            (list::all_files_stat(&agent), sessions)
        }
    };
    if !files.iter().any(|f| f.1.is_some()) {
        eprintln!("sessiontree: no session files in {}", folder.display());
        return Ok(false);
    }
    let text = a.query.join(" ");
    let q = Query {
        text,
        mode: if a.regex {
            Mode::Regex
        } else if a.phrase {
            Mode::Phrase
        } else {
            Mode::Words
        },
        cwd: a.cwd.as_deref().map(dirs::resolve),
        role: a.role.clone(),
        since_ms: a.since.as_deref().map(parse_date).transpose()?,
        until_ms: a.until.as_deref().map(parse_date).transpose()?,
        limit: a.limit,
    };
    let summaries = loading.and_then(|h| h.join().ok().flatten());
    // --no-index reads every file; otherwise a file without a summary is bounded by its
    // mtime (its entries are no newer, give or take the margin).
    let unsummarized = if a.no_index {
        Unsummarized::Unbounded
    } else {
        Unsummarized::Mtime
    };
    let (hits, st) = sessiontree_index::search::search_with(
        &files,
        &q,
        summaries.as_ref(),
        unsummarized,
        threads(),
        &|| false,
    )
    .map_err(|e| anyhow::anyhow!("invalid query: {e}"))?;
    if a.stats {
        eprintln!(
            "sessiontree: {} files: {} scanned ({} bytes, {} lines decoded, {} older candidate lines not decoded), {} ruled out by summaries, {} older than the hits",
            st.files, st.scanned, st.bytes_scanned, st.decoded_lines, st.ranked_out_lines, st.ruled_out, st.skipped_older
        );
    }
    if a.json {
        out.line(&serde_json::json!({ "hits": hits }).to_string())?;
    } else {
        for h in &hits {
            print_hit(out, h)?;
        }
    }
    // Later searches use summaries; making them never delays this answer.
    if !a.no_index
        && a.dir.is_none()
        && !summaries.is_some_and(|s| s.covers_exactly_counted(&files, st.summarized))
    {
        spawn_builder();
    }
    Ok(!hits.is_empty())
}

fn print_hit(out: &mut Out, h: &Hit) -> Result<()> {
    let branch = if h.on_branch {
        ""
    } else {
        " (abandoned branch)"
    };
    let time: String = h
        .timestamp
        .as_deref()
        .map(|t| t.chars().take(16).collect())
        .unwrap_or_else(|| "-".into());
    out.line(&format!(
        "{}  {:<13} {}#{}{}",
        safe::line(&time),
        safe::line(&h.role),
        safe::line(&h.path),
        safe::line(&h.entry_id),
        out.paint("2", branch)
    ))?;
    let s = if out.color {
        let mut s = String::new();
        let mut hl = h.highlights.iter().peekable();
        let mut open = false;
        for (i, c) in h.snippet.chars().enumerate() {
            if open && hl.peek().is_some_and(|r| r.1 == i) {
                s.push_str("\x1b[0m");
                open = false;
                hl.next();
            }
            if !open && hl.peek().is_some_and(|r| r.0 == i) {
                s.push_str("\x1b[1;33m");
                open = true;
            }
            if safe::is_unsafe(c) {
                safe::push_escaped(&mut s, c);
            } else {
                s.push(c);
            }
        }
        if open {
            s.push_str("\x1b[0m");
        }
        s
    } else {
        safe::line(&h.snippet).into_owned()
    };
    out.line(&format!("    {s}"))?;
    Ok(())
}
