//! The command as a user runs it: outputs equal the library's (through the streamed,
//! memory-releasing paths too), exit codes, closed pipes, colour.

use sessiontree_testkit::gen;

use std::process::{Command, Stdio};

fn st() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sessiontree"))
}

/// A generated session large enough to be mapped, in a temp folder (kept while the
/// returned folder lives).
fn big_session() -> (tempfile::TempDir, std::path::PathBuf) {
    let mut out = Vec::new();
    gen::generate(
        &gen::Shape {
            entries: 1_500,
            target_bytes: 3_000,
            seed: 5,
        },
        &mut out,
    )
    .unwrap();
    assert!(out.len() > 2 << 20, "large enough to be mapped");
    sessiontree_testkit::files::temp_file("big.jsonl", out)
}

fn stdout_of(args: &[&str]) -> String {
    sessiontree_testkit::run::ok(st().args(args).output().unwrap())
}

#[test]
fn json_outputs_equal_the_library_on_a_mapped_file() {
    let (_dir, p) = big_session();
    let f = p.to_str().unwrap();
    let l = sessiontree::load(&p).unwrap();
    let leaf = l
        .tree
        .leaf_id()
        .map_or(sessiontree::LeafArg::Null, sessiontree::LeafArg::Id);
    assert_eq!(
        stdout_of(&["context", f, "--json"]).trim_end(),
        sessiontree::build_context(&l.tree, leaf).to_json()
    );
    assert_eq!(
        stdout_of(&["tree", f, "--json"]).trim_end(),
        l.tree.tree_json()
    );
    let entries: Vec<&str> = l.tree.entries().iter().map(|e| e.raw().text()).collect();
    assert_eq!(
        stdout_of(&["entries", f, "--json"]).trim_end(),
        format!("[{}]", entries.join(","))
    );
    let mid = l.tree.entries()[700].id().unwrap();
    assert_eq!(
        stdout_of(&["context", f, "--json", "--leaf", mid]).trim_end(),
        sessiontree::build_context(&l.tree, sessiontree::LeafArg::Id(mid)).to_json()
    );
    assert_eq!(
        stdout_of(&["context", f, "--json", "--leaf", "null"]).trim_end(),
        r#"{"messages":[],"thinkingLevel":"off","model":null}"#
    );
}

#[test]
fn exit_codes_say_done_nothing_found_or_error() {
    let (dir, p) = big_session();
    let f = p.to_str().unwrap();
    assert_eq!(
        st().args(["info", f]).output().unwrap().status.code(),
        Some(0)
    );
    // An unknown entry is an error (2), as everywhere else; 1 is "nothing found".
    let o = st().args(["branch", f, "--from", "nope"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let missing = dir.path().join("missing.jsonl");
    let o = st()
        .args(["info", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("missing.jsonl"), "{err}");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"message\"}\n").unwrap();
    let o = st()
        .args(["context", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 1"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let (_dir, p) = big_session();
    let mut child = st()
        .args(["context", p.to_str().unwrap(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close our end.
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 100];
    std::io::Read::read_exact(&mut out, &mut buf).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    sessiontree_testkit::run::exit(&o, 0);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn no_colour_when_not_a_terminal() {
    let (_dir, p) = big_session();
    let out = stdout_of(&["tree", p.to_str().unwrap()]);
    assert!(!out.contains('\u{1b}'), "escape codes in piped output");
    assert!(out.contains("◀ leaf"));
}

/// At its last entry, the context of a large session that has not changed since it was last
/// read comes from where its entries were found then: the same output every way it is asked
/// for, a folder only its owner reads, and nothing made where there is no agent dir.
#[test]
fn context_of_a_large_unchanged_session_reads_what_was_kept_and_says_the_same() {
    use sessiontree::session::kept;
    let mut out = Vec::new();
    gen::generate(
        &gen::Shape {
            entries: 1_800,
            target_bytes: 5_200,
            seed: 8,
        },
        &mut out,
    )
    .unwrap();
    assert!(out.len() as u64 > kept::KEEP_MIN);
    let (dir, p) = sessiontree_testkit::files::temp_file("large.jsonl", out);
    let f = p.to_str().unwrap();
    let agent = dir.path().join("agent");
    std::fs::create_dir(&agent).unwrap();
    let keep = agent.join(kept::DIR_NAME);
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    let run = |args: &[&str], agent: &std::path::Path, whole: bool| {
        let mut c = st();
        c.args(args).env("PI_CODING_AGENT_DIR", agent);
        if whole {
            c.env("SESSIONTREE_NO_KEPT_CONTEXT", "1");
        }
        sessiontree_testkit::run::ok(c.output().unwrap())
    };
    let asks: [&[&str]; 3] = [
        &["context", f, "--json"],
        &["context", f],
        &["context", f, "--llm", "--json"],
    ];
    for args in asks {
        let whole = run(args, &agent, true);
        assert!(!keep.exists(), "{args:?}: kept though turned off");
        assert_eq!(run(args, &agent, false), whole, "{args:?}: first read");
        assert_eq!(
            std::fs::read_dir(&keep).unwrap().count(),
            1,
            "{args:?}: one kept context"
        );
        assert_eq!(run(args, &agent, false), whole, "{args:?}: read again");
        std::fs::remove_dir_all(&keep).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    run(&["context", f], &agent, false);
    let mode = std::fs::metadata(&keep).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    // Another leaf is read whole, and says what the library says.
    let l = sessiontree::load(&p).unwrap();
    let mid = l.tree.entries()[900].id().unwrap();
    assert_eq!(
        run(&["context", f, "--json", "--leaf", mid], &agent, false).trim_end(),
        sessiontree::build_context(&l.tree, sessiontree::LeafArg::Id(mid)).to_json()
    );
    // No agent dir: the context is read, and no folder is made.
    let missing = dir.path().join("no-agent");
    run(&["context", f], &missing, false);
    assert!(!missing.exists());
}
