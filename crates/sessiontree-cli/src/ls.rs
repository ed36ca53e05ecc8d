//! `sessiontree ls` and `sessiontree resume`: listing sessions (FORMAT.md section 11).

use crate::out::Out;
use anyhow::{Context as _, Result};
use sessiontree::list::{self, ListOptions, SessionInfo};
use sessiontree::{dirs, folder};
use sessiontree_index::index::{self, Index};
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

fn fmt_ms(ms: f64) -> String {
    if ms.is_finite() && ms.abs() <= 8.64e15 {
        let iso = sessiontree::date::iso_from_ms(ms as i64);
        format!("{} {}", &iso[..10], &iso[11..16])
    } else {
        "-".into()
    }
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
    // Which files, in which index scope, and which cwd to keep.
    let (files, folder, keep_cwd) = if a.all {
        (list::all_files_stat(&agent), None, a.cwd.clone())
    } else if let Some(d) = &a.dir {
        let d = dirs::resolve(&d.to_string_lossy());
        (
            list::with_stats(list::dir_files(&d)),
            Some(d),
            a.cwd.clone(),
        )
    } else {
        let cwd = cwd_now()?;
        let sd = dirs::session_dir_override(a.session_dir.as_deref());
        let (dir, filter) = list::folder_for(&cwd, sd.as_deref());
        (
            list::with_stats(list::dir_files(&dir)),
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
    let (mut v, mut idx) = listing(&files, scope, opts, !a.no_index)?;
    if let Some(c) = &keep_cwd {
        let r = dirs::resolve(c);
        v.retain(|i| list::cwd_matches(&i.cwd, &r));
    }
    if let Some(s) = &a.since {
        let t = parse_date(s)?;
        v.retain(|i| i.modified_ms >= t);
    }
    if let Some(u) = &a.until {
        let t = parse_date(u)?;
        v.retain(|i| i.modified_ms < t);
    }
    if let Some(n) = &a.name {
        let n = n.to_lowercase();
        v.retain(|i| {
            i.name
                .as_deref()
                .unwrap_or(&i.first_message)
                .to_lowercase()
                .contains(&n)
        });
    }
    if let Some(l) = a.limit {
        v.truncate(l);
    }
    // Imported copies whose transcript its agent deleted (the copy is all that is left).
    let gone = sessiontree_import::batch::gone_copies(&sessiontree_import::batch::sources_file());
    if a.json {
        if v.iter().any(|i| gone.contains(&i.path)) {
            write_json_marked(out, &v, idx.is_some(), opts, &gone)?;
        } else {
            write_json(out, &v, idx.as_mut(), opts)?;
        }
    } else if !v.is_empty() {
        table(out, &v, &gone)?;
    }
    if v.is_empty() {
        let filtered = a.since.is_some() || a.until.is_some() || a.name.is_some();
        eprintln!(
            "sessiontree: no sessions {where_}{}",
            if filtered { " match the filters" } else { "" }
        );
    }
    Ok(!v.is_empty())
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

fn table(
    out: &mut Out,
    v: &[SessionInfo],
    gone: &std::collections::HashSet<PathBuf>,
) -> Result<()> {
    let w = width().max(60);
    let home = dirs::home_dir().to_string_lossy().into_owned();
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
            let cwd = match i.cwd.strip_prefix(&home) {
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
    out.line(&out.paint(
        "1",
        &format!(
            "{:<16}  {:>msgw$}  {:<titlew$}  {}",
            "MODIFIED", "MSGS", "NAME / FIRST MESSAGE", "CWD"
        ),
    ))?;
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
        out.line(&format!(
            "{m:<16}  {}{n}  {t}{}  {c}",
            " ".repeat(npad),
            " ".repeat(pad)
        ))?;
    }
    if v.iter().any(|i| i.is_fork()) {
        out.line(&out.paint(
            "2",
            "⑂ forked from another session (its header names a parentSession)",
        ))?;
    }
    if any_imported {
        out.line(&out.paint(
            "2",
            "C / X / G / O / H imported from Claude Code / Codex / Gemini CLI / OpenCode / GitHub Copilot CLI (sessiontree import)",
        ))?;
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
