//! The byte prefilter's throughput on the *.jsonl files below a folder, single-threaded
//! and with the files already in memory: the vector path (AVX-512 VBMI, where the CPU has
//! it), the byte-at-a-time path every other CPU takes, and `scan_session` as a whole.
//! Figures only (CPU time of this thread where Linux reports it, else wall time).
//!
//!   cargo run --release -p sessiontree-secrets --example prefilter_speed -- DIR

use std::path::{Path, PathBuf};
use std::time::Instant;

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let Ok(rd) = std::fs::read_dir(p) else {
            eprintln!("{}: cannot read the folder", p.display());
            return;
        };
        for e in rd.flatten() {
            walk(&e.path(), out);
        }
    } else if p.extension().is_some_and(|x| x == "jsonl") {
        out.push(p.to_path_buf());
    }
}

/// Seconds this thread has run (`/proc/thread-self/schedstat`), if the system says.
fn cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(s.split_whitespace().next()?.parse::<f64>().ok()? / 1e9)
}

fn time(name: &str, bufs: &[Vec<u8>], f: impl Fn(&[u8]) -> usize) {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let (t0, c0) = (Instant::now(), cpu());
    let hits: usize = bufs.iter().map(|b| f(b)).sum();
    let wall = t0.elapsed().as_secs_f64();
    let s = match (c0, cpu()) {
        (Some(a), Some(b)) => b - a,
        _ => wall,
    };
    println!(
        "{name:32} {s:7.3} s  {:6.2} GB/s  (wall {wall:.3} s; files with a hit: {hits})",
        total as f64 / s / 1e9
    );
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: prefilter_speed DIR");
        std::process::exit(2);
    };
    let mut files = Vec::new();
    walk(Path::new(&dir), &mut files);
    let bufs: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    let mib = bufs.iter().map(|b| b.len()).sum::<usize>() / (1 << 20);
    println!("{} files, {mib} MiB", bufs.len());
    time("prefilter (this CPU's path)", &bufs, |b| {
        sessiontree_secrets::next_hit_fast(b, 0).is_some() as usize
    });
    time("prefilter (byte at a time)", &bufs, |b| {
        sessiontree_secrets::next_hit_portable(b, 0).is_some() as usize
    });
    time("scan_session", &bufs, |b| {
        (!sessiontree_secrets::scan_session(b).findings.is_empty()) as usize
    });
}
