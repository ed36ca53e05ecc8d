//! `sessiontree watch` following GitHub Copilot CLI's `session-state` folder: a session's
//! `events.jsonl` growing (a resumed run appending to it) ends as a one-shot
//! `import copilot` writes it, the main session's file only appended to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

fn cmd(root: &Path, agent_dir: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("PI_CODING_AGENT_DIR", root.join(agent_dir))
        .env("COPILOT_HOME", root.join("gh"))
        .env("XDG_DATA_HOME", root.join("xdg"))
        .env("CLAUDE_CONFIG_DIR", root.join("claude"))
        .env("CODEX_HOME", root.join("codex"))
        .env("GEMINI_CLI_HOME", root.join("gemini"))
        .env("HOME", root)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("SESSIONTREE_ARCHIVE");
    c
}

/// The session files under `dir`, by name, with `dir` itself renamed.
fn copies(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(folders) = std::fs::read_dir(dir.join("sessions")) else {
        return out;
    };
    for f in folders {
        for e in std::fs::read_dir(f.unwrap().path()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    text.replace(dir.to_str().unwrap(), "AGENT"),
                ));
            }
        }
    }
    out.sort();
    out
}

fn kill(c: &mut Child) {
    let _ = c.kill();
    let _ = c.wait();
}

#[test]
fn watching_copilot_follows_a_growing_event_log() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let src = recorded_log();
    let text = std::fs::read_to_string(&src).unwrap();
    let session = src.parent().unwrap().file_name().unwrap().to_owned();
    let log = root
        .join("gh/session-state")
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

    let log_path = root.join("watch.log");
    let wlog = std::fs::File::create(&log_path).unwrap();
    let mut w = cmd(
        root,
        "agent",
        &[
            "watch",
            "--no-claude",
            "--no-codex",
            "--no-gemini",
            "--no-opencode",
            "--rescan",
            "1",
        ],
    )
    .stdout(Stdio::null())
    .stderr(wlog)
    .spawn()
    .unwrap();
    let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let t = Instant::now();
    while !read_log().contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
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
    let o = cmd(root, "oneshot", &["import", "copilot"])
        .output()
        .unwrap();
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
