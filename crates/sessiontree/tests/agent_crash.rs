//! Crash test: the `agent_loop` example is SIGKILLed at random points, restarted each time,
//! and must find exactly the operations that were in flight and end with a valid context.

use sessiontree::interrupted::{
    calls_and_results_match, detect, open_operations, CallState, OpenOperation, Scope,
};
use sessiontree_testkit::rng as xorshift;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use xorshift::Rng;

const STEPS: usize = 12;
const KILLS: usize = 16;

/// The newest modification time of the files below `dir`.
fn newest(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let m = e.metadata().ok()?;
            if m.is_dir() {
                stack.push(e.path());
            } else {
                newest = newest.max(m.modified().ok());
            }
        }
    }
    newest
}

/// The `agent_loop` example: `cargo test` builds it next to this test
/// (target/debug/examples). Run alone (`cargo test --test agent_crash`), or when that
/// binary is older than the library's sources, it is built in a target dir of its own
/// (the outer `cargo test` holds the lock on ours), which costs a full build.
fn example_binary() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().unwrap();
    let beside = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/agent_loop");
    let built = std::fs::metadata(&beside).and_then(|m| m.modified()).ok();
    let sources = [
        manifest.join("src"),
        manifest.join("examples"),
        manifest.join("../sessiontree-core/src"),
    ]
    .iter()
    .map(|d| newest(d))
    .max()
    .flatten();
    if let (Some(built), Some(sources)) = (built, sources) {
        if built >= sources {
            return beside;
        }
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../target"))
        .join("crash-example");
    let st = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--example",
            "agent_loop",
            "--manifest-path",
        ])
        .arg(manifest.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo runs");
    assert!(st.success(), "building the example");
    target.join("debug/examples/agent_loop")
}

/// What the file says, read with serde_json, independently of the library's journal code:
/// (dangling call id -> expected state) in order, and whether a turn is open.
fn expected(file: &Path) -> (Vec<(String, CallState)>, bool) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return (Vec::new(), false);
    };
    let mut calls = Vec::new();
    let mut results = HashSet::new();
    let mut started = HashSet::new();
    let mut finished = HashSet::new();
    let mut open_turn = false;
    for line in text.lines().skip(1) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue; // a torn last line
        };
        let m = &v["message"];
        match (v["type"].as_str(), m["role"].as_str()) {
            (Some("message"), Some("assistant")) => {
                for b in m["content"].as_array().unwrap() {
                    if b["type"] == "toolCall" {
                        calls.push(b["id"].as_str().unwrap().to_string());
                    }
                }
            }
            (Some("message"), Some("toolResult")) => {
                results.insert(m["toolCallId"].as_str().unwrap().to_string());
            }
            (Some("custom"), _) if v["customType"] == "sessiontree.run" => {
                let d = &v["data"];
                let id = d["toolCallId"].as_str().unwrap_or("").to_string();
                match d["event"].as_str().unwrap() {
                    "turnStarted" => open_turn = true,
                    "turnFinished" => open_turn = false,
                    "toolStarted" => {
                        started.insert(id);
                    }
                    "toolFinished" => {
                        finished.insert(id);
                    }
                    e => panic!("unknown event {e}"),
                }
            }
            _ => {}
        }
    }
    let ops = calls
        .into_iter()
        .filter(|c| !results.contains(c))
        .map(|c| {
            let st = if finished.contains(&c) {
                CallState::Finished
            } else if started.contains(&c) {
                CallState::Started
            } else {
                CallState::NotStarted
            };
            (c, st)
        })
        .collect();
    (ops, open_turn)
}

#[test]
fn killed_at_random_points_resumes_correctly() {
    let bin = example_binary();
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("crash test seed {seed} (CRASH_SEED={seed} to replay)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let work = dir.path().join("work");
    let run = || {
        let mut c = Command::new(&bin);
        c.arg("--session")
            .arg(&file)
            .args(["--steps", &STEPS.to_string(), "--delay-ms", "15", "--work"])
            .arg(&work)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut finished_early = 0;
    for _ in 0..KILLS {
        let mut child = run().spawn().unwrap();
        let ms = 1 + rng.next() % 60;
        std::thread::sleep(Duration::from_millis(ms));
        if child.try_wait().unwrap().is_some() {
            finished_early += 1;
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        if !file.exists() {
            *tally.entry("no file yet".into()).or_default() += 1;
            continue;
        }
        // What the library says was in flight must be what the file says.
        let loaded = sessiontree::load(&file).unwrap();
        let ops = open_operations(&loaded.tree);
        let (want, want_turn) = expected(&file);
        let got: Vec<(String, CallState)> = ops
            .iter()
            .filter_map(|o| match o {
                OpenOperation::ToolCall { call, state, .. } => {
                    Some((call.tool_call_id.clone(), *state))
                }
                _ => None,
            })
            .collect();
        let got_turn = ops.iter().any(|o| matches!(o, OpenOperation::Turn { .. }));
        assert_eq!(got, want, "open tool calls after a kill (seed {seed})");
        assert_eq!(got_turn, want_turn, "open turn after a kill (seed {seed})");
        for (_, st) in &got {
            *tally.entry(format!("call {st:?}")).or_default() += 1;
        }
        if got.is_empty() {
            *tally
                .entry(
                    if got_turn {
                        "turn open, no call"
                    } else {
                        "nothing open"
                    }
                    .into(),
                )
                .or_default() += 1;
        }
    }
    // Last run: to the end.
    let st = run().status().unwrap();
    assert!(st.success());
    let loaded = sessiontree::load(&file).unwrap();
    let tree = &loaded.tree;
    let path = tree.get_branch(None);
    assert!(calls_and_results_match(&path), "seed {seed}");
    assert!(detect(tree, Scope::AllBranches).is_empty(), "seed {seed}");
    assert!(open_operations(tree).is_empty(), "seed {seed}");
    // Every step asked once, in order, and answered.
    let texts: Vec<String> = sessiontree::build_context(tree, sessiontree::LeafArg::Default)
        .messages
        .iter()
        .map(|m| m.json().to_string())
        .collect();
    let users: Vec<String> = path
        .iter()
        .filter(|e| e.is_role("user"))
        .map(|e| {
            e.message_field("content")
                .unwrap()
                .as_str()
                .unwrap()
                .into_owned()
        })
        .collect();
    let want: Vec<String> = (0..STEPS).map(|k| format!("step {k}")).collect();
    assert_eq!(users, want, "seed {seed}");
    for k in 0..STEPS {
        assert!(
            texts
                .iter()
                .any(|t| t.contains(&format!("\"step {k} done\""))),
            "step {k} answered (seed {seed})"
        );
    }
    // Replay-safe steps always took effect; the others never ran twice.
    let log = std::fs::read_to_string(work.join("unsafe.log")).unwrap_or_default();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for l in log.lines() {
        *counts.entry(l).or_default() += 1;
    }
    for k in 0..STEPS {
        if k % 2 == 0 {
            assert!(
                work.join(format!("safe_{k}.txt")).exists(),
                "step {k} (seed {seed})"
            );
        } else {
            let n = counts
                .get(format!("step {k}").as_str())
                .copied()
                .unwrap_or(0);
            assert!(n <= 1, "step {k} ran {n} times (seed {seed})");
        }
    }
    let closed = path
        .iter()
        .filter(|e| e.is_role("toolResult"))
        .filter(|e| {
            e.message_field("isError")
                .is_some_and(|v| v.text() == "true")
        })
        .count();
    eprintln!(
        "crash test: {KILLS} kills ({finished_early} runs had already finished), states seen {tally:?}, \
         {} entries, {closed} calls closed as interrupted, unsafe log {} lines",
        tree.entries().len(),
        log.lines().count()
    );
}
