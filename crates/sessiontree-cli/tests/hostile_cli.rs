//! The command under hostile conditions: special files in session folders (every command
//! returns at once and says what it skipped), links at the lock path, interrupted work
//! reported by `verify` and closed by `repair --close-interrupted`.

use sessiontree_testkit::env;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");
use sessiontree_testkit::agent::HEADER as H;
use sessiontree_testkit::files::temp_file;
const U1: &str = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"list files","timestamp":1}}"#;
const A1: &str = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","timestamp":2}}"#;

/// How long a command may take. The goal is a second; a loaded test machine gets a margin
/// through `SESSIONTREE_TEST_TIMEOUT_SCALE` (a hang is forever, so any bound tells).
fn limit() -> Duration {
    let scale: f64 = env::env_or("SESSIONTREE_TEST_TIMEOUT_SCALE", 1.0);
    Duration::from_secs_f64(1.0 * scale)
}

/// Runs the command with `agent` as agent dir; kills it and fails the test if it does not
/// finish within [`limit`]. Returns (exit code, stdout, stderr, time taken).
fn run_timed(agent: &Path, cwd: &Path, args: &[&str]) -> (i32, String, String, Duration) {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break;
        }
        if start.elapsed() > limit() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`sessiontree {}` did not return within {:?}",
                args.join(" "),
                limit()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = start.elapsed();
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        took,
    )
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

#[test]
fn every_command_returns_at_once_with_a_fifo_and_a_dev_zero_link_in_the_folder() {
    let (d, work) = sessiontree_testkit::files::temp_subdir("w");
    let agent = d.path().join("agent");
    let work = work.canonicalize().unwrap();
    let folder = agent.join("sessions").join(format!(
        "--{}--",
        work.to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "-")
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let header = H.replace("\"/w\"", &format!("{:?}", work.to_string_lossy()));
    std::fs::write(
        folder.join("2024-12-03T14-00-00-000Z_s1.jsonl"),
        format!("{header}\n{U1}\n"),
    )
    .unwrap();
    let fifo = folder.join("2025-01-01T00-00-00-000Z_fifo.jsonl");
    mkfifo(&fifo);
    let zero = folder.join("2025-01-02T00-00-00-000Z_zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let folder_s = folder.to_str().unwrap();
    let fifo_s = fifo.to_str().unwrap();
    let zero_s = zero.to_str().unwrap();

    let cases: Vec<Vec<&str>> = vec![
        vec!["ls"],
        vec!["ls", "--json"],
        vec!["ls", "--no-index"],
        vec!["ls", folder_s],
        vec!["ls", "--all"],
        vec!["ls", "--all", "--json"],
        vec!["ls", "--all", "--no-index"],
        vec!["search", "list"],
        vec!["stats"],
        vec!["stats", "--all"],
        vec!["stats", folder_s],
        vec!["resume"],
        vec!["verify", folder_s],
    ];
    for args in &cases {
        let (code, out, err, took) = run_timed(&agent, &work, args);
        eprintln!("sessiontree {}: exit {code} in {took:?}", args.join(" "));
        assert!(
            code == 0 || code == 1,
            "{args:?}: exit {code}\n{out}\n{err}"
        );
        // Reported: by verify as a problem of that file, by the others on stderr.
        let report = if args[0] == "verify" {
            &out
        } else {
            assert!(!out.contains("fifo.jsonl"), "{args:?}: {out}");
            &err
        };
        assert!(
            report.contains("fifo.jsonl") && report.contains("FIFO"),
            "{args:?}: the FIFO is reported:\n{out}{err}"
        );
        assert!(
            report.contains("zero.jsonl") && report.contains("character device"),
            "{args:?}: the /dev/zero link is reported:\n{out}{err}"
        );
        if args[0] == "ls" || args[0] == "resume" {
            assert!(
                out.contains("list files") || out.contains("s1.jsonl"),
                "{args:?}: {out}"
            );
        }
    }
    // Commands given the special file itself: a clear error, exit 2, nothing created.
    for target in [fifo_s, zero_s] {
        for args in [
            vec!["info", target],
            vec!["tree", target],
            vec!["verify", target],
            vec!["repair", target],
            vec!["interrupted", target],
            vec!["append", target, r#"{"type":"custom","customType":"x"}"#],
            vec!["close-interrupted", target],
            vec!["export", target, "--format", "md"],
        ] {
            let (code, _, err, _) = run_timed(&agent, &work, &args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains("not a regular file"), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        }
    }
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".lock") || n.contains(".torn-") || n.contains(".bak-")),
        "{names:?}"
    );
    assert!(!Path::new("/dev/zero.lock").exists());
}

#[test]
fn a_lock_path_symlink_is_one_clear_error_and_the_target_is_untouched() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.jsonl");
    std::fs::write(&f, format!("{H}\n{U1}\n")).unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("s.jsonl.lock")).unwrap();
    let (code, _, err, _) = run_timed(
        d.path(),
        d.path(),
        &[
            "append",
            f.to_str().unwrap(),
            r#"{"type":"custom","customType":"x"}"#,
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("s.jsonl.lock") && err.contains("symlink"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn verify_reports_interrupted_work_at_the_leaf() {
    let (d, f) = temp_file("i.jsonl", format!("{H}\n{U1}\n{A1}\n"));
    let fs = f.to_str().unwrap();
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["verify", fs]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("call_1") && out.contains("has no result"),
        "{out}"
    );
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["verify", "--json", fs]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let file = &v["files"][0];
    assert_eq!(file["ok"], false);
    assert_eq!(file["interrupted"][0]["kind"], "danglingToolCall");
    assert_eq!(file["interrupted"][0]["toolCallId"], "call_1");
    // A folder: the file counts as one with problems.
    std::fs::write(d.path().join("clean.jsonl"), format!("{H}\n{U1}\n")).unwrap();
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["verify", d.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1 with problems"), "{out}");
    // An aborted last reply too.
    let aborted = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"part"}],"stopReason":"aborted","timestamp":2}}"#;
    std::fs::write(&f, format!("{H}\n{U1}\n{aborted}\n")).unwrap();
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["verify", fs]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("aborted"), "{out}");
}

#[test]
fn repair_close_interrupted_repairs_lines_and_closes_tool_calls() {
    let (d, f) = temp_file("r.jsonl", format!("{H}\nnot json\n{U1}\n{A1}\n"));
    let fs = f.to_str().unwrap();
    let (code, out, err, _) = run_timed(d.path(), d.path(), &["repair", fs, "--close-interrupted"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("closed"), "{out}");
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["verify", fs]);
    assert_eq!(code, 0, "{out}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(!text.contains("not json"));
    assert!(
        text.contains(r#""role":"toolResult","toolCallId":"call_1""#),
        "{text}"
    );
    // Nothing to do on either side: still exit 0, nothing written.
    let before = std::fs::read(&f).unwrap();
    let (code, out, _, _) = run_timed(d.path(), d.path(), &["repair", fs, "--close-interrupted"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    // Only interrupted work, no damaged line: the tool call is still closed.
    let g = d.path().join("g.jsonl");
    std::fs::write(&g, format!("{H}\n{U1}\n{A1}\n")).unwrap();
    let (code, out, _, _) = run_timed(
        d.path(),
        d.path(),
        &["repair", g.to_str().unwrap(), "--close-interrupted"],
    );
    assert_eq!(code, 0, "{out}");
    let (code, _, _, _) = run_timed(d.path(), d.path(), &["interrupted", g.to_str().unwrap()]);
    assert_eq!(code, 0);
}
