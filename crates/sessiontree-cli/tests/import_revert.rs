//! A Codex thread whose turns were reverted (the recorded `codex-revert` fixture: the
//! rollout and the two segments its reverts wrote), through the command: `import codex`
//! makes it one Pi session whether it finds the files together or one at a time, and
//! `watch`, which sees the rollout before its segments exist, ends with the same file,
//! only ever appended to.

use sessiontree_testkit::home::Home;
use std::path::{Path, PathBuf};
use std::process::Child;
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

/// Codex's and Claude Code's folders, empty.
fn home() -> Home {
    let h = Home::new(BIN);
    std::fs::create_dir_all(day(&h)).unwrap();
    std::fs::create_dir_all(h.root.join("claude/projects")).unwrap();
    h
}

/// The Codex sessions folder of the recorded thread's day.
fn day(h: &Home) -> PathBuf {
    h.root.join("codex/sessions/2026/12/01")
}

#[test]
fn import_makes_a_reverted_thread_one_session_whichever_file_it_is_given() {
    let files = thread_files();
    // All at once, from Codex's folder.
    let h = home();
    for f in &files {
        std::fs::copy(f, day(&h).join(f.file_name().unwrap())).unwrap();
    }
    let rows = h.json_in("agent", &["import", "codex", "--json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["status"], "created");
    let sessions = h.sessions("agent");
    assert_eq!(sessions.len(), 1);
    let whole = std::fs::read(&sessions[0]).unwrap();
    // Given only a segment, the import finds the rest of the thread: nothing to add.
    let segment = day(&h).join(files[2].file_name().unwrap());
    let again = h.json_in(
        "agent",
        &["import", "codex", "--json", segment.to_str().unwrap()],
    );
    assert_eq!(again[0]["status"], "unchanged", "{again:#}");
    assert_eq!(std::fs::read(&sessions[0]).unwrap(), whole);
    // And into a fresh agent dir, given only the newest segment: the same file.
    let rows = h.json_in(
        "fresh",
        &["import", "codex", "--json", segment.to_str().unwrap()],
    );
    assert_eq!(rows[0]["status"], "created", "{rows:#}");
    let fresh = h.sessions("fresh");
    assert_eq!(fresh.len(), 1);
    assert_eq!(std::fs::read(&fresh[0]).unwrap(), whole);
    let listed = h.json_in("agent", &["ls", "--all", "--no-index", "--json"]);
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
    let h = home();
    // What a one-shot import of the whole thread writes.
    let want = {
        let one = home();
        for f in &files {
            std::fs::copy(f, day(&one).join(f.file_name().unwrap())).unwrap();
        }
        let o = one.run_in("agent", &["import", "codex"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(&one.sessions("agent")[0]).unwrap()
    };
    let mut w = h.spawn_watch(&["--no-claude", "--rescan", "0.5", "--open-quiet", "1"]);
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
                    panic!("the watch did not catch up:\n{}", h.watch_log());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        };
    // The rollout first, whole: its turns, the one to be reverted included.
    std::fs::copy(&files[0], day(&h).join(files[0].file_name().unwrap())).unwrap();
    let lines_of = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    let rollout_only = {
        let one = home();
        std::fs::copy(&files[0], day(&one).join(files[0].file_name().unwrap())).unwrap();
        let o = one.run_in("agent", &["import", "codex"]);
        assert!(o.status.success());
        std::fs::read(&one.sessions("agent")[0]).unwrap()
    };
    wait_for(&h, &mut check_appended, &|now| {
        now == rollout_only.as_slice()
    });
    // Each segment as Codex writes it: a first part, then the rest.
    for f in &files[1..] {
        let bytes = std::fs::read(f).unwrap();
        let target = day(&h).join(f.file_name().unwrap());
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
