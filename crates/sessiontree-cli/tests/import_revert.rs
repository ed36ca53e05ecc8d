//! A Codex thread whose turns were reverted (the recorded `codex-revert` fixture: the
//! rollout and the two segments its reverts wrote), through the command: `import codex`
//! makes it one Pi session whether it finds the files together or one at a time, and
//! `watch`, which sees the rollout before its segments exist, ends with the same file,
//! only ever appended to.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

/// The thread's files in the order Codex wrote them: the rollout, then its segments.
fn thread_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sessiontree-import/tests/fixtures/codex-revert/sessions/2026/12/01");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // Rollout names start with their time; a segment's stem has `_<segment id>`.
    files.sort_by_key(|f| {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        (name.contains('_'), name)
    });
    assert_eq!(files.len(), 3);
    files
}

struct Home {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::create_dir_all(root.join("codex/sessions/2026/12/01")).unwrap();
        std::fs::create_dir_all(root.join("claude/projects")).unwrap();
        Home { _tmp: tmp, root }
    }

    fn day(&self) -> PathBuf {
        self.root.join("codex/sessions/2026/12/01")
    }

    fn cmd(&self, agent_dir: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("PI_CODING_AGENT_DIR", self.root.join(agent_dir))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("CODEX_HOME", self.root.join("codex"))
            .env("HOME", &self.root)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("SESSIONTREE_ARCHIVE");
        c
    }

    fn run(&self, agent_dir: &str, args: &[&str]) -> Output {
        self.cmd(agent_dir, args).output().unwrap()
    }

    fn json(&self, agent_dir: &str, args: &[&str]) -> Value {
        let o = self.run(agent_dir, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// The Pi session files under `agent_dir`.
    fn sessions(&self, agent_dir: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.join(agent_dir).join("sessions")];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }
}

#[test]
fn import_makes_a_reverted_thread_one_session_whichever_file_it_is_given() {
    let files = thread_files();
    // All at once, from Codex's folder.
    let h = Home::new();
    for f in &files {
        std::fs::copy(f, h.day().join(f.file_name().unwrap())).unwrap();
    }
    let rows = h.json("agent", &["import", "codex", "--json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["status"], "created");
    let sessions = h.sessions("agent");
    assert_eq!(sessions.len(), 1);
    let whole = std::fs::read(&sessions[0]).unwrap();
    // Given only a segment, the import finds the rest of the thread: nothing to add.
    let segment = h.day().join(files[2].file_name().unwrap());
    let again = h.json(
        "agent",
        &["import", "codex", "--json", segment.to_str().unwrap()],
    );
    assert_eq!(again[0]["status"], "unchanged", "{again:#}");
    assert_eq!(std::fs::read(&sessions[0]).unwrap(), whole);
    // And into a fresh agent dir, given only the newest segment: the same file.
    let rows = h.json(
        "fresh",
        &["import", "codex", "--json", segment.to_str().unwrap()],
    );
    assert_eq!(rows[0]["status"], "created", "{rows:#}");
    let fresh = h.sessions("fresh");
    assert_eq!(fresh.len(), 1);
    assert_eq!(std::fs::read(&fresh[0]).unwrap(), whole);
    let listed = h.json("agent", &["ls", "--all", "--no-index", "--json"]);
    let listed = listed["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["importedFrom"], "codex");
}

fn kill(c: &mut Child) {
    let _ = c.kill();
    let _ = c.wait();
}

#[test]
fn watch_appends_each_segment_to_the_file_it_wrote_for_the_rollout() {
    let files = thread_files();
    let h = Home::new();
    // What a one-shot import of the whole thread writes.
    let want = {
        let one = Home::new();
        for f in &files {
            std::fs::copy(f, one.day().join(f.file_name().unwrap())).unwrap();
        }
        let o = one.run("agent", &["import", "codex"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(&one.sessions("agent")[0]).unwrap()
    };
    let log = std::fs::File::create(h.root.join("watch.log")).unwrap();
    let mut w = h
        .cmd(
            "agent",
            &[
                "watch",
                "--no-claude",
                "--rescan",
                "0.5",
                "--open-quiet",
                "1",
            ],
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut seen: Vec<u8> = Vec::new();
    let mut check_appended = |h: &Home| -> Vec<u8> {
        let s = h.sessions("agent");
        assert!(s.len() <= 1, "one session: {s:?}");
        let now = s
            .first()
            .map(|p| std::fs::read(p).unwrap())
            .unwrap_or_default();
        assert!(
            now.starts_with(&seen),
            "the watched file was changed, not appended to"
        );
        seen = now.clone();
        now
    };
    let wait_for =
        |h: &Home, check: &mut dyn FnMut(&Home) -> Vec<u8>, done: &dyn Fn(&[u8]) -> bool| {
            let t = Instant::now();
            loop {
                let now = check(h);
                if done(&now) {
                    return;
                }
                if t.elapsed() > Duration::from_secs(60) {
                    panic!(
                        "the watch did not catch up:\n{}",
                        std::fs::read_to_string(h.root.join("watch.log")).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        };
    // The rollout first, whole: its turns, the one to be reverted included.
    std::fs::copy(&files[0], h.day().join(files[0].file_name().unwrap())).unwrap();
    let lines_of = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    let rollout_only = {
        let one = Home::new();
        std::fs::copy(&files[0], one.day().join(files[0].file_name().unwrap())).unwrap();
        let o = one.run("agent", &["import", "codex"]);
        assert!(o.status.success());
        std::fs::read(&one.sessions("agent")[0]).unwrap()
    };
    wait_for(&h, &mut check_appended, &|now| {
        now == rollout_only.as_slice()
    });
    // Each segment as Codex writes it: a first part, then the rest.
    for f in &files[1..] {
        let bytes = std::fs::read(f).unwrap();
        let target = h.day().join(f.file_name().unwrap());
        let half = bytes
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1)
            .nth(lines_of(&bytes) / 2)
            .unwrap();
        std::fs::write(&target, &bytes[..half]).unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let before = lines_of(&check_appended(&h));
        std::fs::write(&target, &bytes).unwrap();
        wait_for(&h, &mut check_appended, &|now| lines_of(now) > before);
    }
    wait_for(&h, &mut check_appended, &|now| now == want.as_slice());
    kill(&mut w);
}
