//! `sessiontree ls` and `sessiontree resume`: listing sessions (FORMAT.md section 11).

use crate::out::Out;
use anyhow::{Context as _, Result};
use sessiontree::list::{self, ListOptions, SessionInfo};
use sessiontree::{dirs, folder};
use sessiontree_index::index::{self, Index, Row};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct LsArgs {
    /// A session folder to list (every *.jsonl in it, any cwd). Default: the sessions of
    /// the current directory (or --cwd).
    dir: Option<PathBuf>,
    /// Every session under the agent dir (`<agent dir>/sessions/*/`).
    #[arg(long, conflicts_with = "dir")]
    all: bool,
    /// The working directory whose sessions to list; with --all or DIR, a filter on the
    /// sessions' cwd.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Session folder for the cwd (else $PI_CODING_AGENT_SESSION_DIR, else the default).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<String>,
    /// Only sessions modified at or after this date (ISO date/time, or 30m, 12h, 7d ago).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Only sessions modified before this date.
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only sessions whose name (or, unnamed, first message) contains TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    name: Option<String>,
    /// At most N sessions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Read the shared archive (PostgreSQL URL; without a value, $SESSIONTREE_ARCHIVE) instead of local files.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub archive: Option<String>,
    /// Read every file instead of using the index.
    #[arg(long)]
    no_index: bool,
    /// Leave out what Pi's listing leaves out: sessions with a null message content or a
    /// non-string name, which Pi drops silently.
    #[arg(long)]
    reference: bool,
    /// Pi's SessionInfo objects: {"sessions": [...]} (with allMessagesText).
    #[arg(long)]
    json: bool,
}

/// A date argument as epoch ms: an ISO date/time, or `N[smhdw]` ago.
pub fn parse_date(s: &str) -> Result<f64> {
    let t = s.trim();
    if let Some(unit) = t.chars().last().filter(|c| "smhdw".contains(*c)) {
        if let Ok(n) = t[..t.len() - 1].parse::<f64>() {
            let ms = match unit {
                's' => 1e3,
                'm' => 6e4,
                'h' => 3.6e6,
                'd' => 8.64e7,
                _ => 6.048e8,
            };
            return Ok(sessiontree::date::now_ms() as f64 - n * ms);
        }
    }
    sessiontree::date::parse_iso(t)
        .with_context(|| format!("not a date: {s} (use 2025-01-31, 2025-01-31T12:00Z or 7d)"))
}

/// Opens the index of the agent dir; `None` (with a warning) when it cannot be used.
pub fn open_index() -> Option<Index> {
    let path = Index::default_path(&dirs::agent_dir());
    match Index::open(&path) {
        Ok(i) => Some(i),
        Err(e) => {
            eprintln!(
                "sessiontree: index unavailable ({}); reading every file",
                crate::safe::line(&e.to_string())
            );
            None
        }
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8)
}

/// Lists `files` (in candidate order) with or without the index. With the index,
/// `allMessagesText` is left empty: [`write_json`] takes it from the index's stored JSON.
pub fn listing(
    files: &[(PathBuf, Option<list::FileStat>)],
    in_scope: &dyn Fn(&Path) -> bool,
    opts: ListOptions,
    use_index: bool,
) -> Result<(Vec<SessionInfo>, Option<Index>)> {
    let pb = crate::out::progress_bar(files.len(), "reading sessions");
    let tick = |n: usize| {
        if let Some(pb) = &pb {
            pb.set_position(n as u64);
        }
    };
    let no_text = ListOptions {
        with_text: false,
        ..opts
    };
    let indexed = use_index.then(open_index).flatten().and_then(|mut idx| {
        match index::listed(&mut idx, files, in_scope, no_text, &|n, _| tick(n)) {
            Ok((v, _)) => Some((v, idx)),
            Err(e) => {
                eprintln!(
                    "sessiontree: index not usable ({}); reading every file",
                    crate::safe::line(&e.to_string())
                );
                None
            }
        }
    });
    let out = match indexed {
        Some((v, idx)) => (v, Some(idx)),
        None => {
            let paths: Vec<PathBuf> = files.iter().map(|f| f.0.clone()).collect();
            (
                list::finish(list::scan_files(&paths, opts, &tick), opts),
                None,
            )
        }
    };
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok(out)
}

/// `{"sessions":[...]}`, streamed: from the index's stored JSON when there is one. Nothing
/// is written before the answer is known to be whole: the index checks every stored
/// listing first (a damaged one is read again from its session); if it cannot answer,
/// the sessions are read from their files.
pub fn write_json(
    out: &mut Out,
    v: &[SessionInfo],
    idx: Option<&mut Index>,
    opts: ListOptions,
) -> Result<()> {
    let (head, tail) = (b"{\"sessions\":[", b"]}\n");
    if let Some(idx) = idx {
        match idx.write_json_between(v.iter().map(|i| i.path.as_path()), head, tail, out) {
            Ok(()) => return Ok(()),
            Err(e) => eprintln!(
                "sessiontree: index not usable ({}); reading every file",
                crate::safe::line(&e.to_string())
            ),
        }
        // Listed from the index without the texts: read them (and the rest) from the files.
        let paths: Vec<PathBuf> = v.iter().map(|i| i.path.clone()).collect();
        let opts = ListOptions {
            with_text: true,
            ..opts
        };
        let read: Vec<SessionInfo> = list::scan_files(&paths, opts, &|_| {})
            .into_iter()
            .flatten()
            .collect();
        return write_infos(out, &read, head, tail);
    }
    write_infos(out, v, head, tail)
}

fn write_infos(out: &mut Out, v: &[SessionInfo], head: &[u8], tail: &[u8]) -> Result<()> {
    use std::io::Write;
    out.write_all(head)?;
    for (n, i) in v.iter().enumerate() {
        if n > 0 {
            out.write_str(",")?;
        }
        i.write_json(out)?;
    }
    out.write_all(tail)?;
    Ok(())
}

/// [`write_json`] with `"sourceGone": true` in the listings of copies that outlived their
/// source (read back and written again: only when there is one).
fn write_json_marked(
    out: &mut Out,
    v: &[SessionInfo],
    from_index: bool,
    opts: ListOptions,
    gone: &std::collections::HashSet<PathBuf>,
) -> Result<()> {
    // Listed from the index without the texts: read them from the files.
    let read: Vec<SessionInfo>;
    let v = if from_index {
        let paths: Vec<PathBuf> = v.iter().map(|i| i.path.clone()).collect();
        let opts = ListOptions {
            with_text: true,
            ..opts
        };
        read = list::scan_files(&paths, opts, &|_| {})
            .into_iter()
            .flatten()
            .collect();
        &read[..]
    } else {
        v
    };
    let mut buf: Vec<u8> = b"[".to_vec();
    for (n, i) in v.iter().enumerate() {
        if n > 0 {
            buf.push(b',');
        }
        i.write_json(&mut buf)?;
    }
    buf.push(b']');
    let mut list: serde_json::Value = serde_json::from_slice(&buf)?;
    if let Some(list) = list.as_array_mut() {
        for s in list {
            let is_gone = s
                .get("path")
                .and_then(|p| p.as_str())
                .is_some_and(|p| gone.contains(Path::new(p)));
            if let (true, Some(o)) = (is_gone, s.as_object_mut()) {
                o.insert("sourceGone".into(), true.into());
            }
        }
    }
    out.line(&serde_json::json!({ "sessions": list }).to_string())
}

pub fn ls(out: &mut Out, a: LsArgs) -> Result<bool> {
    if let Some(url) = &a.archive {
        return crate::archive::ls(out, Some(url.as_str()), a.json, a.limit);
    }
    let opts = ListOptions {
        reference_parity: a.reference,
        with_text: a.json,
        threads: threads(),
    };
    let agent = dirs::agent_dir();
    let sessions_dir = agent.join("sessions");
    let cwd_arg = a.cwd.clone();
    let cwd_now = || -> Result<String> {
        Ok(match &cwd_arg {
            Some(c) => c.clone(),
            None => std::env::current_dir()?.to_string_lossy().into_owned(),
        })
    };
    let where_ = if a.all {
        if !sessions_dir.is_dir() {
            // Nothing to list, and no index to create: the agent dir stays as it is.
            eprintln!(
                "sessiontree: no sessions: {} does not exist (the agent dir is $PI_CODING_AGENT_DIR, else ~/.pi/agent)",
                sessions_dir.display()
            );
            return Ok(false);
        }
        format!("under {}", sessions_dir.display())
    } else if let Some(d) = &a.dir {
        crate::paths::folder(d)?;
        format!("in {}", d.display())
    } else {
        let cwd = cwd_now()?;
        let sd = dirs::session_dir_override(a.session_dir.as_deref());
        let (dir, _) = list::folder_for(&cwd, sd.as_deref());
        if !dir.is_dir() {
            if !Path::new(&cwd).is_dir() {
                anyhow::bail!("{cwd}: no such directory, and no sessions recorded for it");
            }
            eprintln!(
                "sessiontree: no sessions for {cwd} (its session folder {} does not exist)",
                dir.display()
            );
            return Ok(false);
        }
        format!("for {cwd}")
    };
    // The table of every session when no session changed since the last one: its rows
    // as they were, found from a running watch's journal alone (no file list built).
    let quick = (a.all && !a.json && !a.no_index)
        .then(|| index::unchanged_rows(&agent))
        .flatten();
    // Which files (and the digest of their list), in which index scope, and which cwd to
    // keep.
    let (files, digest, folder, keep_cwd) = if quick.is_some() {
        (Vec::new(), None, None, a.cwd.clone())
    } else if a.all {
        let (files, digest) = list::all_files_stat_digested(&agent);
        (files, digest, None, a.cwd.clone())
    } else if let Some(d) = &a.dir {
        let d = dirs::resolve(&d.to_string_lossy());
        (
            list::with_stats(list::dir_files(&d)),
            None,
            Some(d),
            a.cwd.clone(),
        )
    } else {
        let cwd = cwd_now()?;
        let sd = dirs::session_dir_override(a.session_dir.as_deref());
        let (dir, filter) = list::folder_for(&cwd, sd.as_deref());
        (
            list::with_stats(list::dir_files(&dir)),
            None,
            Some(dir),
            filter.then_some(cwd),
        )
    };
    let all_scope = index::all_scope(&sessions_dir);
    let folder_scope = folder.as_deref().map(index::folder_scope);
    let scope: &dyn Fn(&Path) -> bool = match &folder_scope {
        Some(f) => f,
        None => &all_scope,
    };
    let filters = Filters {
        cwd: keep_cwd.as_deref().map(dirs::resolve),
        since: a.since.as_deref().map(parse_date).transpose()?,
        until: a.until.as_deref().map(parse_date).transpose()?,
        name: a.name.as_deref().map(str::to_lowercase),
    };
    // Imported copies whose transcript its agent deleted (the copy is all that is left).
    let gone = sessiontree_import::batch::gone_copies(&sessiontree_import::batch::sources_file());
    let found = if a.json {
        let (mut v, mut idx) = listing(&files, scope, opts, !a.no_index)?;
        v.retain(|i| {
            filters.keep(
                &i.cwd,
                i.modified_ms,
                i.name.as_deref().unwrap_or(&i.first_message),
            )
        });
        if let Some(l) = a.limit {
            v.truncate(l);
        }
        if v.iter().any(|i| gone.contains(&i.path)) {
            write_json_marked(out, &v, idx.is_some(), opts, &gone)?;
        } else {
            write_json(out, &v, idx.as_mut(), opts)?;
        }
        !v.is_empty()
    } else {
        // The table needs no listing's JSON: the rows, read back whole while the files stay
        // the same.
        let l = match quick {
            Some(l) => l,
            None => {
                let key = index::rows_key(folder.as_deref(), &sessions_dir);
                listing_rows(&files, digest.as_ref(), scope, &key, opts, !a.no_index)?
            }
        };
        let mut rows = l.rows();
        rows.retain(|r| {
            !(opts.reference_parity && r.reference_drops)
                && filters.keep(r.cwd, r.modified_ms, r.title())
        });
        if let Some(l) = a.limit {
            rows.truncate(l);
        }
        if !rows.is_empty() {
            table(out, &rows, &gone)?;
        }
        !rows.is_empty()
    };
    if !found {
        let filtered = a.since.is_some() || a.until.is_some() || a.name.is_some();
        eprintln!(
            "sessiontree: no sessions {where_}{}",
            if filtered { " match the filters" } else { "" }
        );
    }
    Ok(found)
}

/// What `ls` keeps of a listing: `--cwd`, `--since`, `--until`, `--name`.
struct Filters {
    /// The resolved cwd the sessions must have.
    cwd: Option<PathBuf>,
    since: Option<f64>,
    until: Option<f64>,
    /// Lowercase.
    name: Option<String>,
}

impl Filters {
    fn keep(&self, cwd: &str, modified_ms: f64, title: &str) -> bool {
        self.cwd.as_ref().is_none_or(|c| list::cwd_matches(cwd, c))
            && self.since.is_none_or(|t| modified_ms >= t)
            && self.until.is_none_or(|t| modified_ms < t)
            && self
                .name
                .as_ref()
                .is_none_or(|n| title.to_lowercase().contains(n))
    }
}

/// The listing's rows of `files` (every one, the reference's drops marked): from the index
/// (see [`index::listed_rows`]) or, without one, by reading every file.
pub fn listing_rows(
    files: &[(PathBuf, Option<list::FileStat>)],
    digest: Option<&sessiontree::changes::ListDigest>,
    in_scope: &dyn Fn(&Path) -> bool,
    scope_key: &[u8],
    opts: ListOptions,
    use_index: bool,
) -> Result<index::Listing> {
    let opts = ListOptions {
        reference_parity: false,
        with_text: false,
        ..opts
    };
    if let Some(mut idx) = use_index.then(open_index).flatten() {
        let pb = crate::out::progress_bar(files.len(), "reading sessions");
        let tick = |n: usize, _| {
            if let Some(pb) = &pb {
                pb.set_position(n as u64);
            }
        };
        let got = index::listed_rows(&mut idx, files, digest, in_scope, scope_key, opts, &tick);
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        match got {
            Ok((l, _)) => return Ok(l),
            Err(e) => eprintln!(
                "sessiontree: index not usable ({}); reading every file",
                crate::safe::line(&e.to_string())
            ),
        }
    }
    let (v, _) = listing(files, in_scope, opts, false)?;
    Ok(index::Listing::of(files, &v, "", None))
}

/// Output width: $COLUMNS, else the terminal's, else 160.
pub fn width() -> usize {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return c;
    }
    if std::io::stdout().is_terminal() {
        let (_, w) = console::Term::stdout().size();
        return w as usize;
    }
    160
}

fn table(out: &mut Out, v: &[Row<'_>], gone: &std::collections::HashSet<PathBuf>) -> Result<()> {
    let home = dirs::home_dir().to_string_lossy().into_owned();
    let color = out.color;
    write_table(out, v, gone, width().max(60), &home, color)?;
    Ok(())
}

/// The marks after a session's message count: forked, and which agent it was imported
/// from (when the list holds an imported one).
fn marks(i: &Row<'_>, any_imported: bool) -> (&'static str, &'static str) {
    let fork = if i.is_fork() { "⑂" } else { " " };
    let imported = match i.imported {
        _ if !any_imported => "",
        Some("claude-code") => "C",
        Some("codex") => "X",
        Some("gemini-cli") => "G",
        Some("opencode") => "O",
        Some("copilot-cli") => "H",
        Some(_) => "I",
        None => " ",
    };
    (fork, imported)
}

/// A session's cwd as the table shows it: `~` for the home folder, made safe for a
/// terminal, and its width in columns.
fn shown_cwd(cwd: &str, home: &str) -> (String, usize) {
    use crate::rows::width as columns;
    let cwd = match cwd.strip_prefix(home) {
        Some(rest) if !home.is_empty() && home != "/" => {
            std::borrow::Cow::Owned(format!("~{rest}"))
        }
        _ => std::borrow::Cow::Borrowed(cwd),
    };
    let cwd = crate::safe::line(&cwd).into_owned();
    let w = columns(&cwd);
    (cwd, w)
}

/// A shown cwd cut to `cwdw` columns: the end of the path says most, so what fits after an
/// ellipsis is kept.
fn cut_cwd(c: String, w: usize, cwdw: usize) -> String {
    if w <= cwdw {
        return c;
    }
    let mut tail: Vec<char> = Vec::new();
    let mut w = 1;
    for ch in c.chars().rev() {
        let cw = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
        if w + cw > cwdw {
            break;
        }
        w += cw;
        tail.push(ch);
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

/// The table of `ls` for a line of `w` columns: a header, one row per session, and a key
/// to the marks. Built a row at a time into one reused line: the cwd of each project is
/// made safe, measured and cut once (20,000 sessions have a few hundred), a title is cut
/// where it stops fitting.
fn write_table(
    o: &mut dyn std::io::Write,
    v: &[Row<'_>],
    gone: &std::collections::HashSet<PathBuf>,
    w: usize,
    home: &str,
    color: bool,
) -> std::io::Result<()> {
    use crate::rows::{fit_into, width as columns};
    let paint = |code: &str, s: &str| -> String {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let any_imported = v.iter().any(|i| i.imported.is_some());
    // Each distinct cwd once: (shown, its width), then cut to the column.
    let mut cwds: rustc_hash::FxHashMap<&str, (String, usize)> = Default::default();
    let mut msgw = 4;
    let mut widest_cwd = 0;
    let fork_w = columns("⑂");
    for i in v {
        let e = cwds.entry(i.cwd).or_insert_with(|| shown_cwd(i.cwd, home));
        widest_cwd = widest_cwd.max(e.1);
        let (fork, imported) = marks(i, any_imported);
        let digits = i.message_count.checked_ilog10().unwrap_or(0) as usize + 1;
        let fw = if fork == " " { 1 } else { fork_w };
        msgw = msgw.max(digits + fw + imported.len());
    }
    let cwdw = widest_cwd.min(w / 3).max(3);
    let cwds: rustc_hash::FxHashMap<&str, String> = cwds
        .into_iter()
        .map(|(k, (c, cw))| (k, cut_cwd(c, cw, cwdw)))
        .collect();
    // modified(16) + 2 + msgs + 2 + title + 2 + cwd
    let titlew = w.saturating_sub(16 + 2 + msgw + 2 + 2 + cwdw).max(10);
    let head = format!(
        "{:<16}  {:>msgw$}  {:<titlew$}  {}",
        "MODIFIED", "MSGS", "NAME / FIRST MESSAGE", "CWD"
    );
    o.write_all(paint("1", &head).as_bytes())?;
    o.write_all(b"\n")?;
    let (mut line, mut title) = (String::new(), String::new());
    for i in v {
        use std::fmt::Write as _;
        line.clear();
        // MODIFIED: `YYYY-MM-DD HH:MM`, or `-`, padded to 16.
        crate::rows::push_minute(&mut line, i.modified_ms);
        let used = line.len();
        line.extend(std::iter::repeat_n(' ', 16usize.saturating_sub(used) + 2));
        // MSGS, right-aligned, with its marks.
        let (fork, imported) = marks(i, any_imported);
        let digits = i.message_count.checked_ilog10().unwrap_or(0) as usize + 1;
        let fw = if fork == " " { 1 } else { fork_w };
        let npad = msgw.saturating_sub(digits + fw + imported.len());
        line.extend(std::iter::repeat_n(' ', npad));
        let _ = write!(line, "{}{fork}{imported}  ", i.message_count);
        // NAME / FIRST MESSAGE, made safe and cut where it stops fitting.
        let t = i.title();
        // (Its width as a whole: a sequence can be wider than its characters.)
        let tw = if !gone.is_empty() && gone.contains(i.path) {
            fit_into(&mut title, &format!("(source gone) {t}"), titlew)
        } else {
            fit_into(&mut title, t, titlew)
        };
        line.push_str(&title);
        line.extend(std::iter::repeat_n(' ', titlew.saturating_sub(tw) + 2));
        line.push_str(&cwds[i.cwd]);
        line.push('\n');
        o.write_all(line.as_bytes())?;
    }
    if v.iter().any(|i| i.is_fork()) {
        let key = "⑂ forked from another session (its header names a parentSession)";
        o.write_all(paint("2", key).as_bytes())?;
        o.write_all(b"\n")?;
    }
    if any_imported {
        let key = "C / X / G / O / H imported from Claude Code / Codex / Gemini CLI / OpenCode / GitHub Copilot CLI (sessiontree import)";
        o.write_all(paint("2", key).as_bytes())?;
        o.write_all(b"\n")?;
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ResumeArgs {
    /// The working directory (default: the current one).
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Session folder (else $PI_CODING_AGENT_SESSION_DIR, else the default).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<String>,
    /// {"path": ...}
    #[arg(long)]
    json: bool,
}

/// Prints the most recent session of a folder (the valid file with the newest mtime).
pub fn resume(out: &mut Out, a: ResumeArgs) -> Result<bool> {
    let cwd = match a.cwd {
        Some(c) => c,
        None => std::env::current_dir()?.to_string_lossy().into_owned(),
    };
    let sd = dirs::session_dir_override(a.session_dir.as_deref());
    let p = folder::most_recent(&cwd, sd.as_deref());
    if p.is_none() {
        if !Path::new(&cwd).is_dir() && a.session_dir.is_none() {
            anyhow::bail!("{cwd}: no such directory, and no sessions recorded for it");
        }
        eprintln!("sessiontree: no session to resume for {cwd}");
    }
    if a.json {
        out.line(
            &serde_json::json!({ "path": p.as_ref().map(|p| p.to_string_lossy()) }).to_string(),
        )?;
    } else if let Some(p) = &p {
        out.line(&crate::safe::path(p))?;
    }
    Ok(p.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A time as the table showed it before [`crate::rows::push_minute`].
    fn fmt_ms(ms: f64) -> String {
        if ms.is_finite() && ms.abs() <= 8.64e15 {
            let iso = sessiontree::date::iso_from_ms(ms as i64);
            [&iso[..10], " ", &iso[11..16]].concat()
        } else {
            "-".into()
        }
    }

    /// The table as it was built before [`write_table`] (a row of owned strings per
    /// session, every cwd measured per row), lines collected.
    fn table_as_before(
        out: &mut Vec<String>,
        color: bool,
        w: usize,
        home: &str,
        v: &[SessionInfo],
        gone: &std::collections::HashSet<PathBuf>,
    ) -> Result<()> {
        let paint = |code: &str, s: &str| {
            if color {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        // A mark column for imported sessions only when the list holds one.
        let any_imported = v.iter().any(|i| i.imported.is_some());
        // (The title borrowed: a first message can be long, and only what fits is shown.)
        let rows: Vec<(String, String, std::borrow::Cow<'_, str>, String)> = v
            .iter()
            .map(|i| {
                let mut title = std::borrow::Cow::Borrowed(match &i.name {
                    Some(n) => n.as_str(),
                    None => i.first_message.as_str(),
                });
                if !gone.is_empty() && gone.contains(&i.path) {
                    title = format!("(source gone) {title}").into();
                }
                let cwd = match i.cwd.strip_prefix(home) {
                    Some(rest) if !home.is_empty() && home != "/" => format!("~{rest}"),
                    _ => i.cwd.clone(),
                };
                // The title is made safe where it is cut to fit; the cwd here.
                let cwd = crate::safe::line(&cwd).into_owned();
                let fork = if i.is_fork() { "⑂" } else { " " };
                let imported = match i.imported.as_deref() {
                    _ if !any_imported => "",
                    Some("claude-code") => "C",
                    Some("codex") => "X",
                    Some("gemini-cli") => "G",
                    Some("opencode") => "O",
                    Some("copilot-cli") => "H",
                    Some(_) => "I",
                    None => " ",
                };
                (
                    fmt_ms(i.modified_ms),
                    format!("{}{fork}{imported}", i.message_count),
                    title,
                    cwd,
                )
            })
            .collect();
        // Widths in terminal columns (a CJK character or an emoji takes two).
        use crate::rows::{fit, width as columns};
        let msgw = rows.iter().map(|r| columns(&r.1)).max().unwrap_or(1).max(4);
        let cwdw = rows
            .iter()
            .map(|r| columns(&r.3))
            .max()
            .unwrap_or(3)
            .min(w / 3)
            .max(3);
        // modified(16) + 2 + msgs + 2 + title + 2 + cwd
        let titlew = w.saturating_sub(16 + 2 + msgw + 2 + 2 + cwdw).max(10);
        out.push(paint(
            "1",
            &format!(
                "{:<16}  {:>msgw$}  {:<titlew$}  {}",
                "MODIFIED", "MSGS", "NAME / FIRST MESSAGE", "CWD"
            ),
        ));
        for (m, n, t, c) in rows {
            let t = fit(&t, titlew);
            let pad = titlew.saturating_sub(columns(&t));
            let c = if columns(&c) > cwdw {
                // The end of the path says most: keep what fits after an ellipsis.
                let mut tail: Vec<char> = Vec::new();
                let mut w = 1;
                for ch in c.chars().rev() {
                    let cw = unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
                    if w + cw > cwdw {
                        break;
                    }
                    w += cw;
                    tail.push(ch);
                }
                std::iter::once('…').chain(tail.into_iter().rev()).collect()
            } else {
                c
            };
            let npad = msgw.saturating_sub(columns(&n));
            out.push(format!(
                "{m:<16}  {}{n}  {t}{}  {c}",
                " ".repeat(npad),
                " ".repeat(pad)
            ));
        }
        if v.iter().any(|i| i.is_fork()) {
            out.push(paint(
                "2",
                "⑂ forked from another session (its header names a parentSession)",
            ));
        }
        if any_imported {
            out.push(paint(
                "2",
                "C / X / G / O / H imported from Claude Code / Codex / Gemini CLI / OpenCode / GitHub Copilot CLI (sessiontree import)",
            ));
        }
        Ok(())
    }

    /// The table is the one it was, byte for byte, over rows of every shape: titles and
    /// cwds of controls, wide characters, spaces and lengths around the column, forks,
    /// every import mark, sources gone, invalid dates, colour on and off.
    #[test]
    fn the_table_is_the_one_built_row_by_row() {
        let mut rng = sessiontree_testkit::rng::Rng(0x7ab1e);
        let texts = [
            "",
            " ",
            "fix the build",
            "  lead  and  trail  ",
            "a\x1b[2Jb",
            "\u{202e}evil",
            "日本語テキスト",
            "😀 emoji",
            "tab\there\nnewline",
            &"long ".repeat(80),
            &"x".repeat(300),
        ];
        let cwds = [
            "",
            "/home/u",
            "/home/u/proj",
            "/home/user2/x",
            "/tmp/a\x1bb",
            "/srv/日本/project",
            &format!("/home/u/{}", "deep/".repeat(40)),
            "/",
        ];
        let imports = [
            None,
            Some("claude-code"),
            Some("codex"),
            Some("gemini-cli"),
            Some("opencode"),
            Some("copilot-cli"),
            Some("other"),
        ];
        for round in 0..300 {
            let n = rng.pick(12);
            let v: Vec<SessionInfo> = (0..n)
                .map(|k| SessionInfo {
                    path: PathBuf::from(format!("/s/{round}/{k}.jsonl")),
                    id: serde_json::Value::Null,
                    cwd: cwds[rng.pick(cwds.len())].to_string(),
                    name: (rng.pick(3) == 0).then(|| texts[rng.pick(texts.len())].to_string()),
                    parent_session_path: match rng.pick(3) {
                        0 => None,
                        1 => Some(serde_json::Value::Null),
                        _ => Some("/p.jsonl".into()),
                    },
                    created_ms: None,
                    modified_ms: [f64::NAN, 0.0, 1.7e12, -1e13, 9e15, 1.7654321e12][rng.pick(6)],
                    message_count: [0, 7, 10, 999, 12345678][rng.pick(5)],
                    first_message: texts[rng.pick(texts.len())].to_string(),
                    all_messages_text: String::new(),
                    reference_drops: false,
                    imported: if rng.pick(4) == 0 {
                        imports[rng.pick(imports.len())].map(str::to_string)
                    } else {
                        None
                    },
                })
                .collect();
            let gone: std::collections::HashSet<PathBuf> = v
                .iter()
                .filter(|_| rng.pick(5) == 0)
                .map(|i| i.path.clone())
                .collect();
            let w = [0, 60, 80, 120, 160, 300][rng.pick(6)].max(60);
            let home = ["/home/u", "", "/"][rng.pick(3)];
            let color = rng.pick(2) == 0;
            let mut before = Vec::new();
            table_as_before(&mut before, color, w, home, &v, &gone).unwrap();
            let before: String = before.iter().map(|l| format!("{l}\n")).collect();
            let mut now = Vec::new();
            let l = index::Listing::of(&[], &v, "", None);
            write_table(&mut now, &l.rows(), &gone, w, home, color).unwrap();
            assert_eq!(String::from_utf8(now).unwrap(), before, "round {round}");
        }
    }
}
