//! In-process timings of one load: `context_bench FILE` prints JSON with the milliseconds
//! to load (read or map, parse, index), to walk the path to the leaf, and to build the
//! context and write its JSON to a sink.

use sessiontree::{build_context, LeafArg};
use std::time::Instant;

// The allocator the `sessiontree` command uses, so that figures match the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path =
        std::path::PathBuf::from(std::env::args().nth(1).ok_or("usage: context_bench FILE")?);
    let t = Instant::now();
    let loaded = sessiontree::load(&path)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let path_len = loaded.tree.get_branch(None).len();
    let walk_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let leaf = loaded.tree.leaf_id().map_or(LeafArg::Null, LeafArg::Id);
    let ctx = build_context(&loaded.tree, leaf);
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut sink = std::io::sink();
    let t = Instant::now();
    ctx.write_json(&mut sink)?;
    let write_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{{\"load_ms\":{load_ms:.1},\"path_entries\":{path_len},\"walk_ms\":{walk_ms:.2},\"context_ms\":{build_ms:.1},\"write_ms\":{write_ms:.1},\"messages\":{}}}",
        ctx.messages.len()
    );
    Ok(())
}
