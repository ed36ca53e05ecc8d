//! `sessiontree export`: a session as one self-contained HTML page, Markdown, or a branch
//! as a standalone session file.

use anyhow::{Context as _, Result};
use clap::ValueEnum;
use sessiontree_export::{self as export, ExportOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// One self-contained page: the whole tree, every branch, navigable.
    Html,
    /// The current branch (or --leaf, or --all-branches) as Markdown.
    Md,
    /// The current branch as a new session file (parentSession = FILE).
    Jsonl,
}

#[derive(clap::Args)]
pub struct Args {
    /// The session file (.jsonl; FILE#ID = --leaf ID).
    pub file: PathBuf,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Read the shared archive (PostgreSQL URL; without a value, $SESSIONTREE_ARCHIVE) instead of local files.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    pub archive: Option<String>,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// The branch end to export or highlight (default: the leaf).
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Markdown: one section per leaf.
    #[arg(long)]
    pub all_branches: bool,
    /// Leave out thinking blocks.
    #[arg(long)]
    pub no_thinking: bool,
    /// Replace tool results and bash output with a note.
    #[arg(long)]
    pub no_tool_output: bool,
    /// Replace images with a note.
    #[arg(long)]
    pub no_images: bool,
    /// Replace every match of this regular expression with [REDACTED] (repeatable).
    #[allow(rustdoc::broken_intra_doc_links)] // (`--help` text, not a link)
    #[arg(long, value_name = "REGEX")]
    pub redact: Vec<String>,
    /// Keep credentials (by default each one `sessiontree secrets` finds becomes [REDACTED:<kind>]).
    #[allow(rustdoc::broken_intra_doc_links)] // (`--help` text, not a link)
    #[arg(long)]
    pub keep_secrets: bool,
}

pub fn run(mut args: Args) -> Result<()> {
    if let Some(url) = args.archive.take() {
        // FILE is a session id in the archive.
        args.file = crate::archive::fetch_to_temp(Some(&url), &args.file.to_string_lossy())?;
    }
    // A search hit pasted as FILE#ID: ID is the leaf.
    (args.file, args.leaf) = crate::target::with_flag(&args.file, args.leaf.take(), "--leaf")?;
    crate::paths::session_file(&args.file)?;
    let loaded = sessiontree::load(&args.file)?;
    let tree = &loaded.tree;
    let mut redact = Vec::new();
    for r in &args.redact {
        redact.push(regex::Regex::new(r).with_context(|| format!("bad --redact {r:?}"))?);
    }
    if let Some(id) = &args.leaf {
        if !tree.contains(id) {
            anyhow::bail!("{}: no entry {id}", args.file.display());
        }
    }
    let opts = ExportOptions {
        leaf: args.leaf.clone(),
        all_branches: args.all_branches,
        no_thinking: args.no_thinking,
        no_tool_output: args.no_tool_output,
        no_images: args.no_images,
        redact,
        keep_secrets: args.keep_secrets,
    };
    let text = match args.format {
        Format::Html => export::html(tree, &opts)?,
        Format::Md => export::markdown(tree, &opts)?,
        Format::Jsonl => {
            let source = absolute(&args.file);
            export::jsonl(tree, &source, &opts)?
        }
    };
    if let Some(out) = &args.output {
        if let (Ok(a), Ok(b)) = (
            std::fs::canonicalize(out),
            std::fs::canonicalize(&args.file),
        ) {
            if a == b {
                anyhow::bail!(
                    "{}: the output would replace the session itself",
                    out.display()
                );
            }
        }
    }
    match &args.output {
        Some(out) => write_atomic(out, text.as_bytes())
            .with_context(|| format!("cannot write {}", out.display()))?,
        None => {
            let mut o = std::io::stdout().lock();
            if let Err(e) = o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(e.into());
                }
            }
        }
    }
    Ok(())
}

fn absolute(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Writes a temporary file next to `out` and renames it over. The temporary file has a
/// random name (`.<name>.tmp-<pid>-<random>`) and is created exclusively: a file or a
/// link planted at a name never receives the bytes, and no name is reused.
pub(crate) fn write_atomic(out: &Path, bytes: &[u8]) -> std::io::Result<()> {
    sessiontree::store::atomic_replace(out, &[bytes]).map_err(|e| match e {
        sessiontree::Error::Io { source, .. } => source,
        e => std::io::Error::other(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    /// Issue 24: the temporary name was `.<name>.tmp-<pid>`, opened with `File::create`:
    /// a link planted there had the export written through it (into any file the user
    /// can write), and then became the output.
    #[test]
    fn a_link_planted_at_the_old_temporary_name_is_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = d.path().join("out.html");
        let planted = d
            .path()
            .join(format!(".out.html.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        super::write_atomic(&out, b"<html>").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&out).unwrap(), b"<html>");
        // Written again: a new temporary name each time, the output replaced.
        super::write_atomic(&out, b"<html>2").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"<html>2");
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 3, "{left:?}");
    }
}
