//! Counts what the rules report in any JSONL files (session or not: Claude Code and Codex
//! transcripts too), by kind, with each finding's file, line and field: how the false
//! positive rate is measured on recorded transcripts.
//!
//!   cargo run -p sessiontree-secrets --example scan_jsonl -- DIR_OR_FILE...

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let Ok(rd) = std::fs::read_dir(p) else {
            eprintln!("{}: cannot read the folder", p.display());
            return;
        };
        let mut items: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        items.sort();
        for i in items {
            walk(&i, out);
        }
    } else if p.extension().is_some_and(|x| x == "jsonl") {
        out.push(p.to_path_buf());
    }
}

fn main() {
    let mut files = Vec::new();
    for a in std::env::args().skip(1) {
        walk(Path::new(&a), &mut files);
    }
    let (mut bytes, mut lines, mut candidates) = (0usize, 0usize, 0usize);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &files {
        let Ok(b) = std::fs::read(f) else {
            eprintln!("{}: cannot read", f.display());
            continue;
        };
        bytes += b.len();
        lines += b.iter().filter(|&&c| c == b'\n').count();
        let s = sessiontree_secrets::scan_session(&b);
        candidates += s.candidates;
        for x in s.findings {
            *kinds.entry(x.kind).or_default() += 1;
            println!(
                "{}:{}  {}  {}  {}",
                f.display(),
                x.line,
                x.kind,
                x.field,
                x.preview
            );
        }
    }
    println!(
        "{} files, {bytes} bytes, {lines} lines, {candidates} candidate lines, findings: {kinds:?}",
        files.len()
    );
}
