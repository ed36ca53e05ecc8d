//! Crash-test writer: `crash_writer FILE none|entry|batch [SEED]`.
//!
//! Opens FILE (creating the session if missing), then appends `custom` entries whose
//! payload is 1 B to 300 KB, forever. After each append returns it prints the entry's id
//! on its own line of stdout (flushed): that line means "acknowledged". A test kills this
//! process with SIGKILL and checks that every acknowledged id is in the file.

use sessiontree::{Creation, Durability, Json, Session, WriteOptions};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = Path::new(&args[1]);
    let durability = match args.get(2).map(String::as_str).unwrap_or("entry") {
        "none" => Durability::None,
        "entry" => Durability::Entry,
        "batch" => Durability::Batch {
            interval: Duration::from_millis(20),
        },
        other => panic!("unknown durability {other}"),
    };
    let mut seed: u64 = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15 ^ std::process::id() as u64)
        | 1;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let options = WriteOptions {
        durability,
        creation: Creation::Eager,
        lock_wait: Some(Duration::from_secs(30)),
        lock: true,
    };
    let mut s = Session::open(path, options).expect("open");
    let stdout = std::io::stdout();
    let mut n = 0u64;
    loop {
        // Sizes spread over orders of magnitude: 1 B .. 300 KB.
        let size = match rnd() % 4 {
            0 => 1 + rnd() % 100,
            1 => 1 + rnd() % 4_000,
            2 => 1 + rnd() % 60_000,
            _ => 1 + rnd() % 300_000,
        } as usize;
        let pad = "x".repeat(size);
        let data = Json::from(serde_json::json!({ "n": n, "pad": pad }));
        let id = s.append_custom_entry("crash", Some(&data)).expect("append");
        let mut out = stdout.lock();
        writeln!(out, "{id}").expect("stdout");
        out.flush().expect("stdout");
        n += 1;
    }
}
