//! The converters alone, in memory, on one thread: reads every transcript under each DIR
//! once, then converts them all ROUNDS times and prints the fastest round. Separates the
//! converters' CPU from the disk (the import benches measure both). For `opencode`, DIR is
//! a database (or a folder holding `opencode.db`): reading its rows and converting them
//! are timed apart.
//!   cargo run --release -p sessiontree-import --example convert_corpus -- claude|codex|gemini|copilot|opencode DIR [ROUNDS]

use std::path::{Path, PathBuf};
use std::time::Instant;

// The allocator the command uses.
#[path = "../../sessiontree-cli/src/alloc.rs"]
mod alloc;
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(agent), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: convert_corpus claude|codex|gemini|copilot|opencode DIR [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    if agent == "opencode" {
        return opencode(Path::new(dir), rounds);
    }
    let files: Vec<PathBuf> = sessiontree_testkit::files::jsonl_under(Path::new(dir))
        .into_iter()
        .filter(|p| agent != "copilot" || sessiontree_import::copilot::is_events(p))
        .collect();
    let data: Vec<(PathBuf, String, Vec<u8>)> = files
        .iter()
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (p.clone(), stem, std::fs::read(p).unwrap())
        })
        .collect();
    let bytes: usize = data.iter().map(|d| d.2.len()).sum();
    let mut best = f64::MAX;
    let mut out_bytes = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        out_bytes = 0;
        for (path, stem, b) in &data {
            let convs = match agent.as_str() {
                "claude" => sessiontree_import::claude::convert(b, stem),
                "gemini" => vec![sessiontree_import::gemini::convert(b, stem, None, None)],
                "copilot" => sessiontree_import::copilot::convert_all(
                    b,
                    &sessiontree_import::copilot::folder_id(path),
                ),
                _ => vec![sessiontree_import::codex::convert(b, stem)],
            };
            for c in convs {
                out_bytes += c.body.len();
                sessiontree_import::recycle(c.body);
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{} files, {:.0} MB in, {:.0} MB out: best of {rounds} {:.3} s ({:.0} MB/s)",
        data.len(),
        bytes as f64 / 1e6,
        out_bytes as f64 / 1e6,
        best,
        bytes as f64 / 1e6 / best
    );
}

/// Reading an OpenCode database's rows, and converting its sessions, timed apart.
fn opencode(path: &Path, rounds: usize) {
    let db = if path.is_dir() {
        path.join("opencode.db")
    } else {
        path.to_path_buf()
    };
    let (mut read, mut conv) = (f64::MAX, f64::MAX);
    let (mut sessions, mut out_bytes) = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        let data = sessiontree_import::opencode::read_db(&db).unwrap();
        read = read.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        sessions = data.len();
        out_bytes = 0;
        for i in 0..data.len() {
            let c = data.convert(i);
            out_bytes += c.body.len();
            sessiontree_import::recycle(c.body);
        }
        conv = conv.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{sessions} sessions, {:.0} MB out: reading the rows {read:.3} s, converting {conv:.3} s (best of {rounds}, one thread)",
        out_bytes as f64 / 1e6
    );
}
