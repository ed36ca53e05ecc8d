//! Crash campaign: the `crash_writer` example appends entries of 1 B..300 KB and prints
//! each id once `append` returned; we SIGKILL it at a random moment and check the file.
//!
//! Fast by default (10 kills per policy); `SESSIONTREE_CRASH_RUNS=N` runs N per policy.
//! A SIGKILL loses no acknowledged entry under any policy, `none` included, because the
//! page cache survives a process kill; only power loss separates the policies.

use sessiontree::{load, Creation, DiagnosticKind, Durability, Json, Session, WriteOptions};
use sessiontree_testkit::env;
use sessiontree_testkit::rng as xorshift;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use xorshift::Rng;

fn writer_bin() -> PathBuf {
    // target/debug/deps/crash-xxxx -> target/debug/examples/crash_writer
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().unwrap().parent().unwrap();
    let bin = debug.join("examples").join("crash_writer");
    if !bin.exists() {
        let st = Command::new(env!("CARGO"))
            .args(["build", "-p", "sessiontree", "--example", "crash_writer"])
            .status()
            .unwrap();
        assert!(st.success());
    }
    bin
}

#[derive(Default, Debug)]
struct Tally {
    kills: u32,
    torn: u32,
    acked: usize,
    lost: usize,
}

fn opts() -> WriteOptions {
    WriteOptions {
        durability: Durability::Entry,
        creation: Creation::Eager,
        lock_wait: Some(Duration::from_secs(10)),
        lock: true,
    }
}

fn check(file: &Path, acked: &[String], tally: &mut Tally) {
    let l = load(file).expect("the file loads after a kill");
    let mut torn = false;
    for d in l.tree.diagnostics() {
        match d.kind {
            DiagnosticKind::TornTail => torn = true,
            // A fragment torn by an earlier kill, moved aside and terminated by the next writer.
            DiagnosticKind::MalformedLine => {
                let side = PathBuf::from(format!("{}.torn-{}", file.display(), d.offset));
                assert!(side.exists(), "malformed line without a sidecar: {d}");
            }
            _ => panic!("unexpected diagnostic after a kill: {d}"),
        }
    }
    if torn {
        tally.torn += 1;
    }
    for id in acked {
        if !l.tree.contains(id) {
            tally.lost += 1;
        }
    }
    tally.acked += acked.len();
    // One chain: every entry's parent is the entry before it in the file.
    let es = l.tree.entries();
    for w in es.windows(2) {
        assert_eq!(
            w[1].str_field("parentId").as_deref(),
            w[0].id(),
            "entries must form one chain"
        );
    }
    // A fresh writer after the crash: its entry lands on a clean line.
    let mut s = Session::open(file, opts()).expect("reopen after the kill");
    let id = s
        .append_custom_entry("after", Some(&Json::from(serde_json::json!({"ok": true}))))
        .unwrap();
    drop(s);
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(*bytes.last().unwrap(), b'\n');
    let last = bytes[..bytes.len() - 1]
        .rsplit(|b| *b == b'\n')
        .next()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(last).expect("last line is whole JSON");
    assert_eq!(v["id"], id.as_str());
}

fn campaign(policy: &str, runs: u32, seed: u64) -> Tally {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("crash.jsonl");
    {
        let mut s = Session::open(&file, opts()).unwrap();
        s.append_message(&Json::from(
            serde_json::json!({"role":"user","content":"start","timestamp":1}),
        ))
        .unwrap();
    }
    let bin = writer_bin();
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    for run in 0..runs {
        let mut child = Command::new(&bin)
            .arg(&file)
            .arg(policy)
            .arg((seed + run as u64).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(20 + rng.next() % 250));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acked = reader.join().unwrap();
        tally.kills += 1;
        check(&file, &acked, &mut tally);
    }
    tally
}

#[test]
fn crash_campaign_sigkill() {
    let runs: u32 = env::env_or("SESSIONTREE_CRASH_RUNS", 10);
    let mut total = Vec::new();
    for (i, policy) in ["entry", "none", "batch"].iter().enumerate() {
        let t = campaign(policy, runs, 0xC0FFEE + 1000 * i as u64);
        eprintln!(
            "crash campaign [{policy}]: kills={} torn_tails={} acknowledged={} lost={}",
            t.kills, t.torn, t.acked, t.lost
        );
        total.push((policy, t));
    }
    for (policy, t) in &total {
        assert_eq!(
            t.lost, 0,
            "policy {policy} lost acknowledged entries after SIGKILL"
        );
    }
}
