//! Where a load's time and memory go: `phases FILE` prints milliseconds for each phase of
//! `context --json` (the map, the scan on all cores, the index, the projection, the writing,
//! the drop), then for the scan of the bytes read (one thread, then all) and the index, and the process's resident memory after a full load
//! (`sessiontree::load`, mapped), as JSON. A diagnostic tool for performance work.

use std::time::Instant;

// The allocator the `sessiontree` command uses, so that figures match the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss() -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .filter(|l| {
            l.starts_with("VmRSS")
                || l.starts_with("RssAnon")
                || l.starts_with("RssFile")
                || l.starts_with("VmHWM")
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
        + &faults()
}

/// Page faults so far (minor, major), from /proc/self/stat.
fn faults() -> String {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state(0) ... minflt is field 10 of stat (index 7 here).
    format!(
        ", faults: {} minor, {} major",
        f.get(7).unwrap_or(&"?"),
        f.get(9).unwrap_or(&"?")
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: phases FILE")?;
    if std::env::args().nth(2).as_deref() == Some("--rss") {
        let (backing, _) = sessiontree::session::read_or_map(std::path::Path::new(&path))?;
        let parsed = sessiontree::parse::parse(backing).map_err(|e| format!("{e:?}"))?;
        println!("after parse: {}", rss());
        let tree = sessiontree::SessionTree::from_parsed(parsed);
        println!("after index: {}", rss());
        drop(tree);
        let l = sessiontree::load(std::path::Path::new(&path))?;
        println!("after load ({} entries): {}", l.tree.entries().len(), rss());
        let leaf = l
            .tree
            .leaf_id()
            .map_or(sessiontree::LeafArg::Null, sessiontree::LeafArg::Id);
        let p = sessiontree::context::plan(&l.tree, leaf);
        println!("after projection: {}", rss());
        p.write_json_releasing(&mut std::io::sink())?;
        println!("after writing the context: {}", rss());
        return Ok(());
    }
    // As `sessiontree context FILE --json` does it: mapped, scanned on every core, indexed,
    // projected, written (to a sink).
    let t = Instant::now();
    let (backing, _) = sessiontree::session::read_or_map(std::path::Path::new(&path))?;
    let map_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let parsed = sessiontree::parse::parse(backing).map_err(|e| format!("{e:?}"))?;
    let scan_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let tree = sessiontree::SessionTree::from_parsed(parsed);
    let index_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let leaf = tree
        .leaf_id()
        .map_or(sessiontree::LeafArg::Null, sessiontree::LeafArg::Id);
    let p = sessiontree::context::plan(&tree, leaf);
    let plan_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    p.write_json_releasing(&mut std::io::sink())?;
    let write_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    drop(tree);
    let drop_ms = t.elapsed().as_secs_f64() * 1e3;
    println!("{{\"mapped\":true,\"map_ms\":{map_ms:.1},\"scan_ms\":{scan_ms:.1},\"index_ms\":{index_ms:.1},\"plan_ms\":{plan_ms:.1},\"write_ms\":{write_ms:.1},\"drop_ms\":{drop_ms:.1}}}");
    let bytes = std::fs::read(&path)?;
    let buf = sessiontree::parse::backing(bytes);
    for threads in [1, 2] {
        let t = Instant::now();
        let parsed = sessiontree::parse::parse_with_threads(buf.clone(), threads)
            .map_err(|e| format!("{e:?}"))?;
        let scan_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let tree = sessiontree::SessionTree::from_parsed(parsed);
        let index_ms = t.elapsed().as_secs_f64() * 1e3;
        println!("{{\"threads\":{threads},\"scan_ms\":{scan_ms:.1},\"index_ms\":{index_ms:.1},\"entries\":{}}}", tree.entries().len());
    }
    Ok(())
}
