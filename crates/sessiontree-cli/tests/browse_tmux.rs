//! `sessiontree browse` driven for real in a pseudo-terminal (tmux): launch, type a search,
//! open a session, move to a branch, show the context, quit; the terminal is restored.
//! Skips (visibly) without tmux; `SESSIONTREE_REQUIRE_TMUX=1` (set by CI) makes it fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A temp folder for a tmux test, or None (the test skipped) without tmux.
fn tmux_temp_dir() -> Option<tempfile::TempDir> {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("SESSIONTREE_REQUIRE_TMUX").as_deref() == Ok("1") {
            panic!("the browse end-to-end test needs tmux (apt-get install tmux)");
        }
        eprintln!("SKIPPED: browse end-to-end test: tmux is not installed");
    }
    ok.then(|| tempfile::tempdir().unwrap())
}

struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// A tmux server of its own (socket in `dir`) running `script` in a 110x30 pane.
    fn start(dir: &Path, script: &str) -> Tmux {
        let t = Tmux {
            socket: dir.join("tmux.sock"),
        };
        t.cmd(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "110",
            "-y",
            "30",
            "sh",
            "-c",
            script,
        ]);
        t
    }

    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }
    fn wait_for(&self, what: &str) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                panic!("waited 20 s for {what:?}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        self.cmd(&a);
    }
    fn text(&self, s: &str) {
        self.cmd(&["send-keys", "-t", "t", "-l", s]);
    }
    fn var(&self, v: &str) -> String {
        self.cmd(&["display-message", "-p", "-t", "t", v])
            .trim()
            .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn write_other(dir: &Path) {
    std::fs::write(
        dir.join("2025-11-28T10-00-00-000Z_0193aaaa-0000-7000-8000-000000000002.jsonl"),
        concat!(
            r#"{"type":"session","version":3,"id":"0193aaaa-0000-7000-8000-000000000002","timestamp":"2025-11-28T10:00:00.000Z","cwd":"/home/u/web"}"#,
            "\n",
            r#"{"type":"message","id":"w1","parentId":null,"timestamp":"2025-11-28T10:00:01.000Z","message":{"role":"user","content":"Why does the login page flash white?","timestamp":1764324001000}}"#,
            "\n"
        ),
    )
    .unwrap();
}

#[test]
fn browse_end_to_end_in_tmux() {
    let Some(tmp) = tmux_temp_dir() else { return };
    let agent = tmp.path().join("agent");
    let orbit = agent.join("sessions/--home-u-orbit--");
    let web = agent.join("sessions/--home-u-web--");
    std::fs::create_dir_all(&orbit).unwrap();
    std::fs::create_dir_all(&web).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-session.jsonl");
    let file = orbit.join("2025-11-29T21-00-00-000Z_01a2299a-5cff-7079-85c1-5366397fcf01.jsonl");
    std::fs::copy(&demo, &file).unwrap();
    write_other(&web);
    let bin = env!("CARGO_BIN_EXE_sessiontree");
    // After the browser: the exit status and whether the tty is back in canonical mode
    // with echo, then wait (the pane must stay to be read).
    let script = format!(
        "cd {tmp}; PI_CODING_AGENT_DIR={agent} {bin} browse; echo EXITED:$?; \
         stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; sleep 60",
        tmp = tmp.path().display(),
        agent = agent.display(),
    );
    let t = Tmux::start(tmp.path(), &script);
    t.wait_for("2 of 2 sessions");
    assert_eq!(
        t.var("#{alternate_on}"),
        "1",
        "the browser uses the alternate screen"
    );
    // "regression" is only in a later message of the demo session: the full-text index
    // finds it (by name and first message, nothing would match).
    t.text("regression");
    let s = t.wait_for("1 matching");
    assert!(s.contains("Orbit drift: explicit Euler"), "{s}");
    assert!(
        s.contains("[regression]") || s.contains("regression"),
        "{s}"
    );
    t.keys(&["Enter"]);
    t.wait_for("13 entries");
    // To the earlier sibling branch of the leaf's branch.
    t.keys(&["M-Up"]);
    t.wait_for(" ace4ec4b ·");
    t.keys(&["Enter"]);
    let s = t.wait_for("context at ace4ec4b");
    // The same context as `sessiontree context --leaf`.
    let out = Command::new(bin)
        .args([
            "context",
            file.to_str().unwrap(),
            "--leaf",
            "ace4ec4b",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = v["messages"].as_array().unwrap().len();
    assert!(
        s.contains(&format!("context at ace4ec4b · {n} messages")),
        "{n} messages expected:\n{s}"
    );
    assert!(s.contains("Before changing anything"), "{s}");
    t.keys(&["C-c"]);
    let s = t.wait_for("EXITED:");
    assert!(s.contains("EXITED:0"), "{s}");
    let s = t.wait_for("icanon");
    assert!(
        s.contains("icanon echo") && !s.contains("-icanon") && !s.contains("-echo"),
        "tty not restored: {s}"
    );
    assert_eq!(t.var("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.var("#{cursor_flag}"), "1", "cursor shown again");
    assert!(
        !s.contains("13 entries"),
        "the browser's screen is gone: {s}"
    );
}

/// `browse DIR` searches the folder's sessions in full text, as the agent dir's are:
/// "regression" is only in a later message of the demo session.
#[test]
fn browse_a_folder_searches_full_text_in_tmux() {
    let Some(tmp) = tmux_temp_dir() else { return };
    let dir = tmp.path().join("folder");
    std::fs::create_dir_all(&dir).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-session.jsonl");
    std::fs::copy(&demo, dir.join("demo.jsonl")).unwrap();
    write_other(&dir);
    let bin = env!("CARGO_BIN_EXE_sessiontree");
    let script = format!(
        "PI_CODING_AGENT_DIR={agent} {bin} browse {dir}; echo EXITED:$?; sleep 60",
        agent = tmp.path().join("agent").display(),
        dir = dir.display(),
    );
    let t = Tmux::start(tmp.path(), &script);
    t.wait_for("2 of 2 sessions");
    t.text("regression");
    let s = t.wait_for("1 matching");
    assert!(s.contains("Orbit drift: explicit Euler"), "{s}");
    assert!(!s.contains("login page flash"), "{s}");
    t.keys(&["C-c"]);
    let s = t.wait_for("EXITED:");
    assert!(s.contains("EXITED:0"), "{s}");
}
