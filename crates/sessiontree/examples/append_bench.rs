//! Appends N messages through the library and prints microseconds per entry, as JSON.
//! `append_bench FILE N POLICY` where POLICY is none|entry|batch. FILE may exist (it is
//! opened, e.g. a 250 MB session) or not (a new session is created there).

use sessiontree::{Creation, Durability, Json, Session, WriteOptions};

// The allocator the `sessiontree` command uses, so that figures match the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let n: usize = args[2].parse()?;
    let durability = match args.get(3).map(String::as_str) {
        Some("entry") => Durability::Entry,
        Some("batch") => Durability::Batch {
            interval: Duration::from_millis(50),
        },
        _ => Durability::None,
    };
    let opts = WriteOptions {
        durability,
        creation: Creation::Eager,
        ..Default::default()
    };
    let t_open = Instant::now();
    let mut s = Session::open(&path, opts)?;
    let open_ms = t_open.elapsed().as_secs_f64() * 1e3;
    let msg = Json::parse(
        r#"{"role":"user","content":[{"type":"text","text":"a message of ordinary size, with a few words so that the line is about three hundred bytes long, like a short prompt typed by a person at a terminal"}],"timestamp":1733234400000}"#,
    )?;
    let t = Instant::now();
    for _ in 0..n {
        s.append_message(&msg)?;
    }
    s.sync()?;
    let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "{{\"open_ms\":{open_ms:.1},\"us_per_entry\":{us:.2},\"entries_per_s\":{:.0}}}",
        1e6 / us
    );
    Ok(())
}
