//! Every `*.jsonl` file below a folder, sorted: the transcripts the import's tests and its
//! corpus example read. (Included by path where it is used.)

use std::path::{Path, PathBuf};

/// Every `*.jsonl` file below `dir`, sorted; an unreadable folder is an error (a test that
/// found no transcripts would prove nothing).
pub fn under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
