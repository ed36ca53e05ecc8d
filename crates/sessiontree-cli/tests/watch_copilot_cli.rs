//! `sessiontree watch` following GitHub Copilot CLI's `session-state` folder: a session's
//! `events.jsonl` growing (a resumed run appending to it) ends as a one-shot
//! `import copilot` writes it, the main session's file only appended to.

use sessiontree_testkit::home::{copies, kill, Home};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn recorded_log() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sessiontree-import/tests/fixtures/copilot-recorded/session-state");
    let session = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    session.join("events.jsonl")
}

#[test]
fn watching_copilot_follows_a_growing_event_log() {
    let h = Home::new(BIN);
    let root = h.root.as_path();
    let src = recorded_log();
    let text = std::fs::read_to_string(&src).unwrap();
    let session = src.parent().unwrap().file_name().unwrap().to_owned();
    let log = root
        .join("copilot/session-state")
        .join(session)
        .join("events.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    // The log before its last resumed run (the subagent's): up to the last resume.
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .iter()
        .rposition(|l| l.contains("\"type\":\"session.resume\""))
        .unwrap();
    let head: String = lines[..cut].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, &head).unwrap();

    let mut w = h.watch_caught_up(
        "--no-claude --no-codex --no-gemini --no-opencode --rescan 1 --open-quiet 1",
    );
    let read_log = || h.watch_log();
    let t = Instant::now();
    let before = loop {
        let b = copies(&root.join("agent"));
        if !b.is_empty() || t.elapsed() > Duration::from_secs(15) {
            break b;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(before.len(), 1, "{}", read_log());
    // Copilot CLI resumes the session: the rest of the log appended.
    std::fs::write(&log, &text).unwrap();
    let o = h.run_in("oneshot", &["import", "copilot"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = copies(&root.join("oneshot"));
    assert_eq!(want.len(), 2, "the main session and its subagent");
    let t = Instant::now();
    let got = loop {
        let got = copies(&root.join("agent"));
        if got == want || t.elapsed() > Duration::from_secs(20) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    kill(&mut w);
    let wl = read_log();
    assert_eq!(got, want, "{wl}");
    assert!(wl.contains("(copilot)"), "{wl}");
    // The main session's file grew by appending.
    assert!(got[0].1.starts_with(&before[0].1) || got[1].1.starts_with(&before[0].1));
}
