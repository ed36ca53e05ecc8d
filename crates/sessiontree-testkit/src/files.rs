//! Files below a folder: every `*.jsonl` (transcripts, sessions), and every file with its
//! bytes (to prove that a command created or changed nothing).

use std::path::{Path, PathBuf};

/// Every `*.jsonl` file below `dir`, sorted; an unreadable folder is an error (a test that
/// found no transcripts would prove nothing).
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
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

/// Every `sessions/<folder>/*.jsonl` of the agent dir `agent`, by its path below
/// `sessions/`, with its bytes, sorted: what two machines' agent dirs compare by.
pub fn session_files(agent: &Path) -> Vec<(String, Vec<u8>)> {
    let base = agent.join("sessions");
    let mut out = Vec::new();
    for d in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "jsonl") {
                let rel = p
                    .strip_prefix(&base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Every file and folder below `dir`, sorted, each file with its bytes (a folder with
/// none): two snapshots compare equal when nothing below `dir` was created, removed or
/// changed. A folder that cannot be read counts as empty.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    snapshot_into(dir, &mut out);
    out.sort();
    out
}

fn snapshot_into(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            snapshot_into(&p, out);
            out.push((p, Vec::new()));
        } else {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((p, bytes));
        }
    }
}

/// Copies the folder `from` into `to` (created), recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for e in entries {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}

/// The names of the entries of `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut v: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Writes `bytes` over the start of the file `p` in place (the same inode, nothing
/// truncated) and sets its modification time back to what it was: an edit that a check of
/// size and time alone cannot see.
pub fn overwrite_unseen(p: &Path, bytes: &[u8]) {
    use std::io::Write;
    let meta = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut f = std::fs::File::options().write(true).open(p).unwrap();
    f.write_all(bytes).unwrap();
    f.set_modified(meta.modified().unwrap()).unwrap();
}

/// Replaces the file `p` with a new one (a new inode, renamed over it, as `sed -i` does)
/// holding `bytes`, with the old file's modification time.
pub fn replace_unseen(p: &Path, bytes: &[u8]) {
    let meta = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let tmp = p.with_extension("replacing");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    std::fs::rename(&tmp, p).unwrap();
}

/// A file named `name` holding `text` in a fresh temp folder (removed when the folder is
/// dropped): the folder and the file's path.
pub fn temp_file(name: &str, text: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("st-test")
        .tempdir()
        .unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (dir, p)
}

/// A fresh temp folder (removed when dropped) and its subfolder `name` (created).
pub fn temp_subdir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("st-test")
        .tempdir()
        .unwrap();
    let sub = dir.path().join(name);
    std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{}: {e}", sub.display()));
    (dir, sub)
}
