//! `ls`, `resume`, `search`, `stats` through the binary; parity with the reference when
//! interop/ is set up (skipped otherwise, unless SESSIONTREE_REQUIRE_INTEROP=1).

use serde_json::Value;
use sessiontree_testkit::interop;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn interop() -> Option<std::path::PathBuf> {
    interop::available().then(interop::interop_dir)
}

fn run(agent: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(BIN)
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
    )
}

fn node(dir: &Path, args: &[&str]) -> String {
    sessiontree_testkit::run::ok(
        Command::new("node")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap(),
    )
}

/// Sessions as sets within groups of equal `modified` (tie order is the reference's
/// candidate order, which uses localeCompare).
fn groups(v: &Value) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut last = None;
    for s in v["sessions"].as_array().unwrap() {
        let t = serde_json::to_string(s).unwrap();
        if last.as_ref() == Some(&s["modified"]) {
            out.last_mut().unwrap().push(t);
        } else {
            out.push(vec![t]);
        }
        last = Some(s["modified"].clone());
    }
    out.iter_mut().for_each(|g| g.sort());
    out
}

#[test]
fn ls_and_resume_match_the_reference() {
    let Some(inter) = interop() else { return };
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let a = agent.to_str().unwrap();
    node(
        &inter,
        &[
            "gen.mjs", "--out", a, "--seed", "21", "--count", "40", "--quiet",
        ],
    );
    let theirs: Value =
        serde_json::from_str(&node(&inter, &["oracle.mjs", "list-all", a])).unwrap();
    for args in [
        vec!["ls", "--all", "--json", "--reference", "--no-index"],
        vec!["ls", "--all", "--json", "--reference"],
        vec!["ls", "--all", "--json", "--reference"],
    ] {
        let (rc, out) = run(agent, &args);
        assert_eq!(rc, 0);
        let ours: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(groups(&ours), groups(&theirs), "{args:?}");
    }
    let (_, all) = run(agent, &["ls", "--all", "--json"]);
    let all: Value = serde_json::from_str(&all).unwrap();
    assert!(
        all["sessions"].as_array().unwrap().len() >= theirs["sessions"].as_array().unwrap().len()
    );

    // One folder with --cwd, and resume.
    for cwd in ["/work/proj-alpha", "/work/hostile"] {
        let folder = agent
            .join("sessions")
            .join(sessiontree::dirs::encode_cwd(Path::new(cwd)));
        let t: Value = serde_json::from_str(&node(
            &inter,
            &["oracle.mjs", "list", folder.to_str().unwrap()],
        ))
        .unwrap();
        let (_, o) = run(
            agent,
            &["ls", folder.to_str().unwrap(), "--json", "--reference"],
        );
        assert_eq!(
            groups(&serde_json::from_str(&o).unwrap()),
            groups(&t),
            "{cwd}"
        );
        let r: Value = serde_json::from_str(&node(
            &inter,
            &["oracle.mjs", "recent", folder.to_str().unwrap()],
        ))
        .unwrap();
        let (rc, o) = run(agent, &["resume", "--cwd", cwd, "--json"]);
        let ours: Value = serde_json::from_str(&o).unwrap();
        assert_eq!(ours["path"], r["path"], "{cwd}");
        assert_eq!(rc, if r["path"].is_null() { 1 } else { 0 });
    }
}

#[test]
fn exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    assert_eq!(run(agent, &["ls", "--all"]).0, 1);
    // A directory that does not exist and has no sessions is a mistake (2); an existing
    // one without sessions is "nothing found" (1).
    assert_eq!(run(agent, &["resume", "--cwd", "/nowhere"]).0, 2);
    assert_eq!(
        run(agent, &["resume", "--cwd", agent.to_str().unwrap()]).0,
        1
    );
    let d = agent.join("sessions/--w-p--");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("s.jsonl"),
        concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w/p"}"#, "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"find the needle_in::Haystack","timestamp":1735689601000}}"#, "\n",
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"total":0.5}},"timestamp":1735689602000}}"#, "\n",
        ),
    )
    .unwrap();
    let (rc, o) = run(agent, &["ls", "--all", "--json"]);
    assert_eq!(rc, 0);
    let v: Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["sessions"][0]["messageCount"], 2);
    assert_eq!(v["sessions"][0]["modified"], "2025-01-01T00:00:02.000Z");
    let (rc, o) = run(agent, &["search", "needle_in::Haystack", "--json"]);
    assert_eq!(rc, 0);
    let v: Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["hits"][0]["entryId"], "u1");
    assert_eq!(v["hits"][0]["onBranch"], true);
    assert_eq!(run(agent, &["search", "absent_word_xyz"]).0, 1);
    let (rc, o) = run(agent, &["stats", "--all", "--json"]);
    assert_eq!(rc, 0);
    let v: Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["total"]["totalTokens"], 15.0);
    assert_eq!(v["total"]["cost"], 0.5);
    assert_eq!(run(agent, &["ls", "--all", "--since", "not a date"]).0, 2);
    let (rc, _) = run(agent, &["ls", "--all", "--since", "2030-01-01"]);
    assert_eq!(rc, 1);
}

/// `ls --json` through the index (first build, warm, after an append, with filters) prints
/// exactly the bytes of a full scan: the index stores each listing pre-serialized.
#[test]
fn indexed_json_is_byte_identical_to_a_full_scan() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    for (k, cwd) in ["/w/a", "/w/b"].iter().enumerate() {
        let d = agent.join(format!("sessions/--w-{k}--"));
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..5 {
            let text = format!("q\"uote \\ tab\t nl\n é 😀 \u{7f} \u{2028} {k}{i}");
            let t = 1735689601000u64 + (k * 10 + i) as u64 * 1000;
            let mut s = format!(
                r#"{{"type":"session","version":3,"id":"s{k}{i}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{cwd}"{}}}"#,
                if i == 2 {
                    r#","parentSession":"/x/y.jsonl""#
                } else {
                    ""
                }
            ) + "\n";
            s += &format!(
                r#"{{"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":{},"timestamp":{t}}}}}"#,
                serde_json::to_string(&text).unwrap()
            );
            s += "\n";
            if i % 2 == 0 {
                s += r#"{"type":"session_info","id":"n1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z","name":"named ✓"}"#;
                s += "\n";
            }
            std::fs::write(d.join(format!("f{i}.jsonl")), s).unwrap();
        }
    }
    let check = |args: &[&str]| {
        let mut with: Vec<&str> = args.to_vec();
        with.push("--no-index");
        let (rc1, a) = run(agent, args);
        let (rc2, b) = run(agent, &with);
        assert_eq!((rc1, &a), (rc2, &b), "{args:?}");
    };
    check(&["ls", "--all", "--json"]);
    check(&["ls", "--all", "--json"]);
    check(&["ls", "--all", "--json", "--cwd", "/w/b", "--limit", "3"]);
    check(&["ls", "--all", "--json", "--name", "NAMED"]);
    check(&["ls", "--all"]);
    let f = agent.join("sessions/--w-0--/f1.jsonl");
    let mut s = std::fs::read_to_string(&f).unwrap();
    s += r#"{"type":"message","id":"a9","parentId":"u1","timestamp":"2025-01-01T00:00:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"appended"}],"timestamp":1735689999000}}"#;
    s += "\n";
    std::fs::write(&f, s).unwrap();
    check(&["ls", "--all", "--json"]);
    check(&[
        "ls",
        agent.join("sessions/--w-1--").to_str().unwrap(),
        "--json",
    ]);
}

/// The `ls` table lines up in terminal columns: CJK, emoji and fullwidth titles (two
/// columns a character) are cut and padded by width, so the CWD column starts at the same
/// column on every row and no row is wider than $COLUMNS.
#[test]
fn ls_table_aligns_wide_titles_by_terminal_columns() {
    use unicode_width::UnicodeWidthStr;
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let titles = [
        "plain ascii title",
        "日本語のセッションを要約してください全角文字の幅は二列です日本語のセッションを要約してください全角文字",
        "emoji 🌳🌲 and ｗｉｄｅ text",
        "short",
        "한국어도 됩니다",
    ];
    for (k, t) in titles.iter().enumerate() {
        let cwd = format!("/w/projekt-{k}");
        let d = agent.join("sessions").join(format!("--w-projekt-{k}--"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("s.jsonl"),
            format!(
                "{}\n{}\n",
                serde_json::json!({"type":"session","version":3,"id":format!("s{k}"),"timestamp":"2025-01-01T00:00:00.000Z","cwd":cwd}),
                serde_json::json!({"type":"message","id":"u1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":t,"timestamp":1735689601000u64 + k as u64}}),
            ),
        )
        .unwrap();
    }
    for cols in ["80", "100", "60"] {
        let o = Command::new(BIN)
            .args(["ls", "--all"])
            .env("PI_CODING_AGENT_DIR", agent)
            .env("COLUMNS", cols)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        let out = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1 + titles.len(), "{out}");
        let starts: Vec<usize> = lines
            .iter()
            .map(|l| {
                let at = l.rfind("/w/projekt-").or_else(|| l.rfind("CWD")).unwrap();
                UnicodeWidthStr::width(&l[..at])
            })
            .collect();
        assert!(
            starts.iter().all(|&s| s == starts[0]),
            "COLUMNS={cols}: CWD starts at {starts:?}\n{out}"
        );
        for l in &lines {
            assert!(
                UnicodeWidthStr::width(*l) <= cols.parse().unwrap(),
                "COLUMNS={cols}: too wide: {l}"
            );
        }
    }
}

/// Issue 24: a damaged listing in the index's store made `ls --all --json` print a partial
/// `{"sessions":[` and exit 2 on every run. The index is a cache: the damaged listing is
/// read again from its session, and the answer is whole and equals a full scan's.
#[test]
fn ls_json_is_whole_after_the_index_store_is_damaged() {
    let a = sessiontree_testkit::AgentDir::new();
    a.numbered("/w", 4);
    let agent = a.path();
    let (c, scan) = run(agent, &["ls", "--all", "--json", "--no-index"]);
    assert_eq!(c, 0);
    let (c, indexed) = run(agent, &["ls", "--all", "--json"]);
    assert_eq!((c, &indexed), (0, &scan));
    let store = agent.join("sessiontree-index.sqlite.listing");
    let mut b = std::fs::read(&store).unwrap();
    let at = b.windows(15).position(|w| w == b"first message 2").unwrap();
    b[at + 14] ^= 1;
    std::fs::write(&store, &b).unwrap();
    for run_no in 0..2 {
        let (c, out) = run(agent, &["ls", "--all", "--json"]);
        assert_eq!(c, 0, "run {run_no}: {out}");
        serde_json::from_str::<Value>(&out).expect("whole JSON");
        assert_eq!(out, scan, "run {run_no}");
    }
    // A truncated store: rebuilt.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&store)
        .unwrap();
    f.set_len(f.metadata().unwrap().len() - 7).unwrap();
    let (c, out) = run(agent, &["ls", "--all", "--json"]);
    assert_eq!((c, &out), (0, &scan));
}

/// The table of every session read back whole while a watch's journal says nothing changed
/// (the rows kept under the file list's digest, no list built) is the table a full scan
/// prints, after each kind of change the journal names: an appended entry, a new session,
/// a renamed one, a removed one, a new project; and a damaged kept table is not used.
#[test]
fn the_table_kept_under_the_journal_is_the_table_of_the_files() {
    use sessiontree::changes::Journal;
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let sessions = agent.join("sessions");
    let write = |folder: &str, name: &str, cwd: &str, text: &str, ms: u64| {
        let d = sessions.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(d.join(name))
            .unwrap();
        use std::io::Write;
        if f.metadata().unwrap().len() == 0 {
            writeln!(f, "{}", serde_json::json!({"type":"session","version":3,"id":format!("{folder}{name}"),"timestamp":"2025-01-01T00:00:00.000Z","cwd":cwd})).unwrap();
        }
        writeln!(f, "{}", serde_json::json!({"type":"message","id":format!("m{ms}"),"parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":text,"timestamp":ms}})).unwrap();
    };
    for k in 0..6u64 {
        write(
            "--w-a--",
            &format!("s{k}.jsonl"),
            "/w/a",
            &format!("task {k} in a"),
            1_735_689_600_000 + k,
        );
        write(
            "--w-b--",
            &format!("s{k}.jsonl"),
            "/w/b",
            &format!("task {k} in b"),
            1_735_689_700_000 + k,
        );
    }
    let table = |env: &[(&str, &str)], extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["ls", "--all"])
            .args(extra)
            .env("PI_CODING_AGENT_DIR", agent)
            .env("COLUMNS", "120");
        c.env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env("SESSIONTREE_NO_BACKGROUND_INDEX", "1");
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let scanned = || table(&[("SESSIONTREE_NO_JOURNAL", "1")], &["--no-index"]);
    let kept = || sessiontree_index::index::unchanged_rows(agent).map(|l| l.len());
    let mut j = Journal::start(agent).unwrap();
    // The first reads walk, save the snapshot, build the index and keep the rows.
    for _ in 0..3 {
        assert_eq!(table(&[], &[]), scanned());
    }
    assert_eq!(
        kept(),
        Some(12),
        "the rows are kept under the list's digest"
    );
    let check = |what: &str| {
        assert_eq!(kept(), None, "{what}: the change moves the digest");
        for round in 0..3 {
            assert_eq!(table(&[], &[]), scanned(), "{what}, read {round}");
        }
        assert!(kept().is_some(), "{what}: kept again");
        // Without the journal every file is stat'ed: the kept rows of a file whose stat is
        // the one kept are used, the others listed anew.
        assert_eq!(
            table(&[("SESSIONTREE_NO_JOURNAL", "1")], &[]),
            scanned(),
            "{what}, stat'ed"
        );
    };
    write(
        "--w-a--",
        "s2.jsonl",
        "/w/a",
        "a later message",
        1_735_689_900_000,
    );
    j.file_changed(OsStr::new("--w-a--"), OsStr::new("s2.jsonl"))
        .unwrap();
    check("an appended entry");
    write(
        "--w-b--",
        "new.jsonl",
        "/w/b",
        "a new session",
        1_735_689_950_000,
    );
    j.file_changed(OsStr::new("--w-b--"), OsStr::new("new.jsonl"))
        .unwrap();
    check("a new session");
    std::fs::rename(
        sessions.join("--w-b--/s0.jsonl"),
        sessions.join("--w-b--/s9.jsonl"),
    )
    .unwrap();
    j.file_changed(OsStr::new("--w-b--"), OsStr::new("s0.jsonl"))
        .unwrap();
    j.file_changed(OsStr::new("--w-b--"), OsStr::new("s9.jsonl"))
        .unwrap();
    check("a renamed session");
    std::fs::remove_file(sessions.join("--w-a--/s4.jsonl")).unwrap();
    j.file_changed(OsStr::new("--w-a--"), OsStr::new("s4.jsonl"))
        .unwrap();
    check("a removed session");
    write(
        "--w-c--",
        "c.jsonl",
        "/w/c",
        "a new project",
        1_735_690_000_000,
    );
    j.folder_changed(OsStr::new("--w-c--")).unwrap();
    j.folders_changed().unwrap();
    check("a new project");
    // Filters apply to the kept rows as to any.
    assert_eq!(
        table(&[], &["--name", "TASK 3", "--limit", "1"]),
        table(
            &[("SESSIONTREE_NO_JOURNAL", "1")],
            &["--no-index", "--name", "TASK 3", "--limit", "1"]
        )
    );
    // A damaged kept table is read anew from the index.
    let index = sessiontree_index::Index::default_path(agent);
    let slots = std::fs::read_dir(format!("{}.rows", index.display())).unwrap();
    for s in slots {
        let p = s.unwrap().path();
        let mut b = std::fs::read(&p).unwrap();
        let at = b.len() - 5;
        b[at] ^= 0x01;
        std::fs::write(&p, b).unwrap();
    }
    assert_eq!(kept(), None);
    assert_eq!(table(&[], &[]), scanned());
    assert!(kept().is_some());
    drop(j);
    assert_eq!(table(&[], &[]), scanned());
}
