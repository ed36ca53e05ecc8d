//! The converters alone, in memory, on one thread: reads every `*.jsonl` under each DIR
//! once, then converts them all ROUNDS times and prints the fastest round. Separates the
//! converters' CPU from the disk (the import bench measures both).
//!   cargo run --release -p sessiontree-import --example convert_corpus -- claude|codex DIR [ROUNDS]

use std::path::Path;
use std::time::Instant;

// The allocator the command uses.
#[path = "../../sessiontree-cli/src/alloc.rs"]
mod alloc;
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(agent), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: convert_corpus claude|codex DIR [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let files = sessiontree_testkit::files::jsonl_under(Path::new(dir));
    let data: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, std::fs::read(p).unwrap())
        })
        .collect();
    let bytes: usize = data.iter().map(|d| d.1.len()).sum();
    let mut best = f64::MAX;
    let mut out_bytes = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        out_bytes = 0;
        for (stem, b) in &data {
            let convs = match agent.as_str() {
                "claude" => sessiontree_import::claude::convert(b, stem),
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
