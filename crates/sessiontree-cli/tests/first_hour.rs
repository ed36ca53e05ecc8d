//! What a new user meets in their first hour: a mistake is one clear error naming the path
//! (exit 2), "nothing found" says so (exit 1), no command creates or changes a file it was
//! not asked to, and outputs read well.

use sessiontree_testkit::files::snapshot;
use sessiontree_testkit::run::{stderr, stdout, with_stdin};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

/// The command with its own agent dir (which does not exist unless a test makes it).
fn st(agent: &Path) -> Command {
    sessiontree_testkit::run::command(BIN, agent)
}

fn run(agent: &Path, args: &[&str]) -> Output {
    sessiontree_testkit::run::run(BIN, agent, args)
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-session.jsonl")
}

/// Asserts exit 2 and one stderr line that names `path` once and no OS error code.
fn assert_error_naming(o: &Output, path: &str, what: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{what}: {e}");
    assert_eq!(e.lines().count(), 1, "{what}: one line: {e}");
    assert!(e.starts_with("sessiontree: "), "{what}: {e}");
    assert_eq!(e.matches(path).count(), 1, "{what}: the path once: {e}");
    assert!(!e.contains("os error"), "{what}: no OS code: {e}");
    assert!(o.stdout.is_empty(), "{what}: nothing on stdout");
}

#[test]
fn a_missing_or_wrong_path_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let missing = tmp.path().join("missing.jsonl");
    let m = missing.to_str().unwrap();
    let folder = tmp.path().to_str().unwrap();
    for args in [
        vec!["info", m],
        vec!["entries", m],
        vec!["branch", m],
        vec!["context", m],
        vec!["tree", m],
        vec!["stats", m],
        vec!["repair", m],
        vec!["fork", m, "abc"],
        vec!["export", m, "--format", "md"],
        vec!["ls", m],
        vec!["label", m, "abc", "x"],
    ] {
        let o = run(&agent, &args);
        assert_error_naming(&o, m, &format!("{args:?}"));
        assert!(stderr(&o).contains("no such file or directory"), "{args:?}");
    }
    // A folder where a file is wanted.
    let o = run(&agent, &["info", folder]);
    assert_error_naming(&o, folder, "info DIR");
    assert!(stderr(&o).contains("is a folder"));
    // A resume for a directory that does not exist and has no sessions.
    let nope = tmp.path().join("nope");
    let o = run(&agent, &["resume", "--cwd", nope.to_str().unwrap()]);
    assert_error_naming(&o, nope.to_str().unwrap(), "resume --cwd");
    // The agent dir given where a session folder is wanted gets a hint.
    std::fs::create_dir_all(agent.join("sessions/--w--")).unwrap();
    let o = run(&agent, &["ls", agent.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is an agent dir"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--all"), "{}", stderr(&o));
    assert!(!agent.join("sessiontree-index.sqlite").exists());
}

#[test]
fn nothing_found_is_said_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let before = snapshot(tmp.path());
    for args in [
        vec!["ls", "--all"],
        vec!["ls", "--all", "--json"],
        vec!["stats", "--all"],
        vec!["ls", "--cwd", tmp.path().to_str().unwrap()],
        vec!["resume", "--cwd", tmp.path().to_str().unwrap()],
    ] {
        let o = run(&agent, &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("no session"), "{args:?} says why: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    }
    assert!(!agent.exists(), "no agent dir created");
    assert_eq!(snapshot(tmp.path()), before);
    // A folder without sessions, and one with only a file that is not a session.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&agent, &["stats", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no sessions in"), "{}", stderr(&o));
    std::fs::write(empty.join("notes.jsonl"), "hello\n").unwrap();
    let o = run(&agent, &["stats", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no usage recorded"), "{}", stderr(&o));
    let o = run(
        &agent,
        &["stats", empty.join("notes.jsonl").to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a session file"), "{}", stderr(&o));
}

#[test]
fn an_unknown_entry_id_is_the_same_error_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let copy = tmp.path().join("s.jsonl");
    std::fs::copy(demo(), &copy).unwrap();
    let f = copy.to_str().unwrap();
    let before = std::fs::read(&copy).unwrap();
    for args in [
        vec!["branch", f, "--from", "nope0000"],
        vec!["context", f, "--leaf", "nope0000"],
        vec!["export", f, "--format", "md", "--leaf", "nope0000"],
        vec!["export", f, "--format", "html", "--leaf", "nope0000"],
        vec!["fork", f, "nope0000"],
        vec!["label", f, "nope0000", "x"],
    ] {
        let o = run(&agent, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("nope0000"), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        before,
        "the session is untouched"
    );
}

#[test]
fn verify_calls_a_file_that_is_no_session_unreadable() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    for (name, bytes) in [
        ("empty.jsonl", &b""[..]),
        ("binary.jsonl", &b"\x00\x01\x02\xff\xfe"[..]),
        (
            "noheader.jsonl",
            &b"{\"type\":\"message\",\"id\":\"a\"}\n"[..],
        ),
    ] {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = run(&agent, &["verify", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stdout(&o));
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name} untouched");
    }
    let o = run(&agent, &["verify", demo().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn append_says_what_is_wrong_and_takes_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let o = run(
        &agent,
        &[
            "new",
            "--cwd",
            "/w",
            "--session-dir",
            tmp.path().to_str().unwrap(),
        ],
    );
    assert!(o.status.success());
    let file = stdout(&o).trim().to_string();
    let f = file.as_str();
    let size = || std::fs::metadata(f).unwrap().len();
    let start = size();

    // Valid JSON that is not an entry is not "invalid JSON".
    for (entry, says) in [
        ("[1,2]", "not an entry"),
        ("{\"type\":\"message\"}", "\"message\" object"),
        (
            "{\"type\":\"message\",\"message\":\"hi\"}",
            "\"message\" object",
        ),
        ("{\"customType\":\"x\"}", "\"type\""),
    ] {
        let o = run(&agent, &["append", f, entry]);
        assert_eq!(o.status.code(), Some(2), "{entry}");
        let e = stderr(&o);
        assert!(e.contains(says), "{entry}: {e}");
        assert!(!e.contains("invalid JSON"), "{entry}: {e}");
    }
    assert_eq!(size(), start, "nothing appended");

    // JSON Lines on stdin: one entry per line, every id printed, in order.
    let lines = "{\"type\":\"custom\",\"customType\":\"a\"}\n\n{\"type\":\"custom\",\"customType\":\"b\"}\n";
    let o = with_stdin(st(&agent).args(["append", f, "-"]), lines.as_bytes());
    assert!(o.status.success());
    let ids: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(ids.len(), 2);
    let l = sessiontree::load(Path::new(f)).unwrap();
    let got: Vec<&str> = l.tree.entries().iter().filter_map(|e| e.id()).collect();
    assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(l.tree.entries()[1].parent.walk_id(), Some(ids[0].as_str()));

    // A bad line anywhere: nothing is appended, and the line is named.
    let after = size();
    let o = with_stdin(
        st(&agent).args(["append", f, "-"]),
        b"{\"type\":\"custom\",\"customType\":\"c\"}\n{\"type\":\"cus\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    assert_eq!(size(), after);

    // A pretty-printed object over several lines is one entry.
    let o = run(
        &agent,
        &[
            "append",
            f,
            "{\n  \"type\": \"custom\",\n  \"customType\": \"d\"\n}",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
}

#[test]
fn outputs_read_well() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let d = demo();
    let f = d.to_str().unwrap();

    // info --json: `lines` counts the file's lines (header included).
    let o = run(&agent, &["info", f, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = std::fs::read_to_string(&d).unwrap();
    assert_eq!(v["lines"], text.lines().count());
    assert_eq!(v["entryCount"], text.lines().count() - 1);

    // stats: integers for tokens, cost rounded, separators in the table, names per session.
    let o = run(&agent, &["stats", f, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["total"];
    for k in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
        assert!(t[k].is_u64(), "{k} is an integer: {t}");
    }
    let cost = t["cost"].as_f64().unwrap();
    assert_eq!((cost * 1e6).round() / 1e6, cost);
    let o = run(&agent, &["stats", f]);
    assert!(stdout(&o).contains("5,330"), "{}", stdout(&o));
    let o = run(&agent, &["stats", f, "--by", "session"]);
    let table = stdout(&o);
    assert!(table.contains("Orbit drift: explicit Euler"), "{table}");
    assert!(!table.contains("demo-session.jsonl"), "{table}");

    // entries: a header row, and the text column starts at the same place for every type.
    let o = run(&agent, &["entries", f]);
    let out = stdout(&o);
    let mut lines = out.lines();
    let head = lines.next().unwrap();
    assert!(head.contains("LINE") && head.contains("TYPE") && head.contains("TEXT"));
    let col = head.find("TEXT").unwrap();
    for l in lines {
        let before: String = l.chars().take(col).collect();
        assert!(before.ends_with("  "), "aligned: {l:?}");
    }

    // "1 message", not "1 messages".
    let l = sessiontree::load(&d).unwrap();
    let first_user = l
        .tree
        .entries()
        .iter()
        .find(|e| e.is_role("user"))
        .and_then(|e| e.id())
        .unwrap()
        .to_string();
    let o = run(&agent, &["context", f, "--leaf", &first_user]);
    assert!(stdout(&o).contains("· 1 message\n"), "{}", stdout(&o));
}

#[test]
fn shell_completions_and_man_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&agent, &["completions", shell]);
        assert!(o.status.success());
        let s = stdout(&o);
        assert!(s.contains("sessiontree") && s.contains("export"), "{shell}");
    }
    let o = run(&agent, &["man"]);
    assert!(stdout(&o).starts_with(".ie") || stdout(&o).contains(".TH sessiontree 1"));
    let pages = tmp.path().join("man");
    std::fs::create_dir(&pages).unwrap();
    let o = run(&agent, &["man", "--dir", pages.to_str().unwrap()]);
    assert!(o.status.success());
    let ls = std::fs::read_to_string(pages.join("sessiontree-ls.1")).unwrap();
    assert!(ls.contains("\\-\\-all"), "the ls page documents its flags");
    // --help explains the agent dir and the environment.
    let o = run(&agent, &["--help"]);
    let h = stdout(&o);
    assert!(h.contains("PI_CODING_AGENT_DIR") && h.contains("PI_CODING_AGENT_SESSION_DIR"));
    assert!(h.contains("Exit status"));
}

#[test]
fn side_effects_are_said() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let entry = r#"{"type":"custom","customType":"x"}"#;

    // An empty file gets a header: said once.
    let empty = tmp.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = run(&agent, &["append", empty.to_str().unwrap(), entry]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("wrote a session header").count(), 1, "{e}");

    // A version 2 file is migrated: said once.
    let old = tmp.path().join("v2.jsonl");
    std::fs::write(
        &old,
        concat!(
            r#"{"type":"session","version":2,"id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1735689601000}}"#,
            "\n"
        ),
    )
    .unwrap();
    let o = run(&agent, &["append", old.to_str().unwrap(), entry]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(
        e.matches("migrated from format version 2 to 3").count(),
        1,
        "{e}"
    );

    // A torn last line is moved aside: said once, naming where it went.
    let torn = tmp.path().join("torn.jsonl");
    let mut bytes = std::fs::read(demo()).unwrap();
    bytes.extend_from_slice(br#"{"type":"message","id":"zz"#);
    std::fs::write(&torn, &bytes).unwrap();
    let o = run(&agent, &["append", torn.to_str().unwrap(), entry]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains(".torn-"), "{e}");

    // Reading says nothing and changes nothing.
    let before = std::fs::read(&torn).unwrap();
    let o = run(&agent, &["info", torn.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&torn).unwrap(), before);
}
