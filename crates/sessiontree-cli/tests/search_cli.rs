//! `search` through the binary: the first search answers without waiting for the summaries,
//! several words need no quotes, hits paste into other commands as FILE#ID, missing and
//! empty folders are said; and `ls --json` stays whole while other processes grow sessions
//! and compact the listing store.

use serde_json::Value;
use sessiontree_testkit::agent::{message as msg, write_session as session};
use sessiontree_testkit::run::{stderr as err, stdout as out};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn cmd(agent: &Path, args: &[&str]) -> Command {
    let mut c = sessiontree_testkit::run::command(BIN, agent);
    c.args(args);
    c
}

fn run(agent: &Path, args: &[&str]) -> Output {
    sessiontree_testkit::run::run(BIN, agent, args)
}

fn hits(o: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_str(&out(o)).unwrap();
    v["hits"].as_array().unwrap().clone()
}

#[test]
fn first_search_answers_before_the_summaries_exist() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    for k in 0..30 {
        let word = if k == 11 {
            "the theme selector"
        } else {
            "plain words here"
        };
        session(
            agent,
            "/w/p",
            &format!("s{k:02}.jsonl"),
            &(msg("u1", None, 1000 + k, "user", word)
                + &msg("a1", Some("u1"), 2000 + k, "assistant", "an answer")),
        );
    }
    let store = agent.join("sessiontree-search.summaries");
    // The background builder waits 3 s before it starts: a search that waited for it
    // would find the summaries there when it returns.
    let o = cmd(agent, &["search", "theme", "selector", "--json", "--stats"])
        .env("SESSIONTREE_TEST_INDEX_DELAY_MS", "3000")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(!store.exists(), "the first search waited for the summaries");
    let first = hits(&o);
    assert_eq!(first.len(), 1);
    assert!(err(&o).contains("30 files: 30 scanned"), "{}", err(&o));
    // They appear in the background.
    let t = Instant::now();
    while !store.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no summaries after 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = run(agent, &["search", "theme", "selector", "--json", "--stats"]);
    assert_eq!(hits(&o), first);
    assert!(err(&o).contains("1 scanned"), "{}", err(&o));
    assert!(err(&o).contains("29 ruled out"), "{}", err(&o));
    let o = run(
        agent,
        &["search", "theme", "selector", "--json", "--no-index"],
    );
    assert_eq!(hits(&o), first);
}

#[test]
fn words_without_quotes_offsets_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    // No sessions folder at all: an error naming it.
    let o = run(agent, &["search", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("sessions: no such folder"), "{}", err(&o));
    // A sessions folder without sessions: said, exit 1.
    std::fs::create_dir_all(agent.join("sessions")).unwrap();
    let o = run(agent, &["search", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("no session files in"), "{}", err(&o));
    let o = run(agent, &["search", "x", "--dir", "/no/such/folder/here"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("/no/such/folder/here: no such folder"),
        "{}",
        err(&o)
    );

    let p = session(
        agent,
        "/w/p",
        "s.jsonl",
        &(msg(
            "u1",
            None,
            1000,
            "user",
            "Fix the selector of the theme, then the Theme.",
        ) + &msg("u2", Some("u1"), 2000, "user", "only theme here")),
    );
    let o = run(agent, &["search", "theme", "selector", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let h = hits(&o);
    assert_eq!(h.len(), 1, "both words must occur");
    assert_eq!(h[0]["entryId"], "u1");
    assert_eq!(h[0]["path"], p.to_string_lossy().as_ref());
    assert_eq!(
        h[0]["snippet"],
        "Fix the selector of the theme, then the Theme."
    );
    let r = |v: &Value| -> Vec<(u64, u64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| (x[0].as_u64().unwrap(), x[1].as_u64().unwrap()))
            .collect()
    };
    // Every occurrence of every word, any ASCII case.
    assert_eq!(r(&h[0]["matches"]), vec![(8, 16), (24, 29), (40, 45)]);
    assert_eq!(r(&h[0]["highlights"]), vec![(8, 16), (24, 29), (40, 45)]);
    // --phrase keeps the words together; --help documents the fields.
    assert_eq!(
        run(agent, &["search", "--phrase", "theme", "selector"])
            .status
            .code(),
        Some(1)
    );
    let help = out(&run(agent, &["search", "--help"]));
    assert!(
        help.contains("every word must") && help.contains("highlights"),
        "{help}"
    );
    // In a folder given with --dir.
    let o = run(
        agent,
        &[
            "search",
            "only",
            "theme",
            "--dir",
            &p.parent().unwrap().to_string_lossy(),
        ],
    );
    assert!(out(&o).contains("#u2"), "{}", out(&o));
}

#[test]
fn hits_paste_as_file_hash_id() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let body = msg("u1", None, 1000, "user", "start")
        + &msg("a1", Some("u1"), 2000, "assistant", "the walrus idea")
        + &msg("u2", Some("a1"), 3000, "user", "abandoned walrus path")
        + &msg("u3", Some("a1"), 4000, "user", "the kept path");
    let p = session(agent, "/w/p", "s.jsonl", &body);
    // A real file name with '#' in it.
    let odd = session(
        agent,
        "/w/p",
        "odd#name.jsonl",
        &msg("x1", None, 500, "user", "hash walrus"),
    );
    let o = run(agent, &["search", "abandoned", "walrus"]);
    let first = out(&o);
    let hit = first
        .split_whitespace()
        .find(|w| w.contains("#u2"))
        .unwrap()
        .to_string();
    assert_eq!(hit, format!("{}#u2", p.display()));
    assert!(first.contains("(abandoned branch)"));
    let same = |a: &[&str], b: &[&str]| {
        let (x, y) = (run(agent, a), run(agent, b));
        assert_eq!(x.status.code(), Some(0), "{a:?}: {}", err(&x));
        assert_eq!(out(&x), out(&y), "{a:?} vs {b:?}");
    };
    let ps = p.to_string_lossy();
    same(
        &["context", &hit, "--json"],
        &["context", &ps, "--leaf", "u2", "--json"],
    );
    same(
        &["branch", &hit, "--json"],
        &["branch", &ps, "--from", "u2", "--json"],
    );
    same(
        &["export", &hit, "--format", "md"],
        &["export", &ps, "--format", "md", "--leaf", "u2"],
    );
    let tree = out(&run(agent, &["tree", &hit]));
    assert!(
        tree.lines().any(|l| l.contains("u2") && l.contains('◀')),
        "{tree}"
    );
    assert_ne!(tree, out(&run(agent, &["tree", &ps])));
    let f = run(agent, &["fork", &hit]);
    assert_eq!(f.status.code(), Some(0), "{}", err(&f));
    let forked = out(&f).trim().to_string();
    let ctx = out(&run(agent, &["context", &forked, "--json"]));
    assert!(ctx.contains("abandoned walrus path") && !ctx.contains("the kept path"));
    // Conflicting ids, and a file name with '#'.
    let o = run(agent, &["context", &hit, "--leaf", "u3"]);
    assert_eq!(o.status.code(), Some(2));
    let os = odd.to_string_lossy();
    assert_eq!(run(agent, &["context", &os]).status.code(), Some(0));
    let o = run(agent, &["context", &format!("{os}#x1"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("hash walrus"));
}

/// Issue 11: `ls --all --json` while sessions grow and other processes refresh and compact
/// the listing store: every run prints complete, valid JSON in which every session is
/// consistent (its messages, count, first message and text all of one moment), or fails
/// with exit 2; never a silent wrong answer.
#[test]
fn concurrent_ls_json_is_whole_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().to_path_buf();
    let n = 24;
    let mut paths = Vec::new();
    for k in 0..n {
        paths.push(session(
            &agent,
            &format!("/w/p{}", k % 4),
            &format!("s{k:02}.jsonl"),
            &msg("m0", None, 1000, "user", &text(k, 0)),
        ));
    }
    assert_eq!(
        run(&agent, &["ls", "--all", "--json"]).status.code(),
        Some(0)
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    // Growth: one message at a time, each whole line in one write.
    {
        let stop = stop.clone();
        let paths = paths.clone();
        workers.push(std::thread::spawn(move || {
            use std::io::Write;
            let mut count = vec![1usize; paths.len()];
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = i % paths.len();
                let j = count[k];
                let line = msg(
                    &format!("m{j}"),
                    Some(&format!("m{}", j - 1)),
                    1000 + j as u64,
                    "user",
                    &text(k, j),
                );
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&paths[k])
                    .unwrap();
                f.write_all(line.as_bytes()).unwrap();
                count[k] += 1;
                i += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        }));
    }
    // Refreshers that compact the store on every change.
    for _ in 0..2 {
        let stop = stop.clone();
        let agent = agent.clone();
        workers.push(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let o = cmd(&agent, &["ls", "--all"])
                    .env("SESSIONTREE_INDEX_COMPACT_FLOOR", "0")
                    .output()
                    .unwrap();
                assert!(matches!(o.status.code(), Some(0 | 2)), "{}", err(&o));
            }
        }));
    }
    let check = |stdout: &str| -> Result<(), String> {
        let v: Value = serde_json::from_str(stdout).map_err(|e| format!("not JSON: {e}"))?;
        let s = v["sessions"].as_array().ok_or("no sessions array")?;
        if s.len() != n {
            return Err(format!("{} sessions, not {n}", s.len()));
        }
        for x in s {
            let path = x["path"].as_str().ok_or("no path")?;
            let k: usize = path.rsplit('/').next().unwrap()[1..3].parse().unwrap();
            let count = x["messageCount"].as_u64().ok_or("no count")? as usize;
            let want: Vec<String> = (0..count).map(|j| text(k, j)).collect();
            if x["allMessagesText"] != want.join(" ") || x["firstMessage"] != text(k, 0) {
                return Err(format!("{path}: text does not match {count} messages"));
            }
        }
        Ok(())
    };
    let (mut ok, mut failed) = (0, 0);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let mut readers = Vec::new();
        for _ in 0..3 {
            let agent = agent.clone();
            readers.push(std::thread::spawn(move || {
                let mut c = cmd(&agent, &["ls", "--all", "--json"]);
                if rand_bit() {
                    c.env("SESSIONTREE_INDEX_COMPACT_FLOOR", "0");
                }
                c.output().unwrap()
            }));
        }
        for r in readers {
            let o = r.join().unwrap();
            match o.status.code() {
                Some(0) => {
                    if let Err(e) = check(&out(&o)) {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        panic!("ls --json exit 0 with a wrong answer: {e}\n{}", out(&o));
                    }
                    ok += 1;
                }
                Some(2) => {
                    assert!(!err(&o).is_empty());
                    eprintln!("exit 2: {}", err(&o).trim());
                    failed += 1;
                }
                c => panic!("exit {c:?}: {}", err(&o)),
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    eprintln!("concurrent ls --json: {ok} whole answers, {failed} errors (exit 2)");
    assert!(ok >= 5, "{ok} whole answers, {failed} errors");
}

/// Message `j` of session `k`. The first is large: every listing a refresh writes again
/// holds it, so the store fills with dead listings and is compacted on its own (without
/// the test's forced compactions too).
fn text(k: usize, j: usize) -> String {
    let pad = if j == 0 { 10_000 } else { j % 7 * 20 };
    format!("s{k} m{j} {}", "pad ".repeat(pad))
}

fn rand_bit() -> bool {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        .is_multiple_of(2)
}

/// Sets a file's mtime to `ms` after the epoch.
fn set_mtime(p: &Path, ms: u64) {
    std::fs::File::options()
        .append(true)
        .open(p)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + Duration::from_millis(ms))
        .unwrap();
}

#[test]
fn the_first_search_reads_newest_mtimes_first_and_no_index_reads_every_file() {
    const HOUR: u64 = 3_600_000;
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    // Ten sessions a day apart, each file's mtime its last entry's time.
    for k in 0..10u64 {
        let t = (k + 1) * 24 * HOUR;
        let p = session(
            agent,
            "/w/p",
            &format!("s{k}.jsonl"),
            &(msg("u1", None, t, "user", "the walrus")
                + &msg("a1", Some("u1"), t + 1, "assistant", "a walrus answer")),
        );
        set_mtime(&p, t + 1);
    }
    // One whose mtime was set back (to the 5th day) from its only entry's time (the 20th):
    // the newest hit of all is in it.
    let back = session(
        agent,
        "/w/p",
        "back.jsonl",
        &msg("u1", None, 20 * 24 * HOUR, "user", "the newest walrus"),
    );
    set_mtime(&back, 5 * 24 * HOUR);
    let search = |extra: &[&str]| {
        let mut args = vec!["search", "walrus", "--limit", "2", "--json", "--stats"];
        args.extend_from_slice(extra);
        let o = cmd(agent, &args)
            .env("SESSIONTREE_NO_BACKGROUND_INDEX", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let files: Vec<String> = hits(&o)
            .iter()
            .map(|h| {
                h["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        (files, err(&o))
    };
    // Newest mtime first: the hits of s9, and the files after the one each thread had
    // begun are never read.
    let (files, stats) = search(&[]);
    assert_eq!(files, ["s9.jsonl", "s9.jsonl"], "{stats}");
    let number_before = |what: &str| -> usize {
        let at = stats
            .find(what)
            .unwrap_or_else(|| panic!("{what}: {stats}"));
        let digits: String = stats[..at]
            .chars()
            .rev()
            .skip_while(|c| *c == ' ')
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.chars().rev().collect::<String>().parse().unwrap()
    };
    assert!(number_before(" scanned") <= 2, "{stats}");
    assert!(number_before(" older than the hits") >= 9, "{stats}");
    // --no-index assumes nothing of mtimes.
    let (files, stats) = search(&["--no-index"]);
    assert_eq!(files, ["back.jsonl", "s9.jsonl"], "{stats}");
    assert!(stats.contains("11 files: 11 scanned"), "{stats}");
}

/// A shell command the user ran in Pi (`!cmd`: a `bashExecution` message, which has a
/// command and an output but no `content`) is found by its command and by its output, with
/// and without summaries, and `--role bashExecution` finds only it.
#[test]
fn commands_the_user_ran_are_found_by_command_and_output() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let bash = r#"{"type":"message","id":"b1","parentId":"u1","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"bashExecution","command":"cargo build --features zebrafish","output":"error[E0433]: unresolved import `okapi_marker`","exitCode":101,"cancelled":false,"truncated":false,"timestamp":3000}}"#;
    session(
        agent,
        "/w/p",
        "s1.jsonl",
        &(msg("u1", None, 1000, "user", "build it") + bash + "\n"),
    );
    // No search starts a background build here: the second round builds the summaries.
    let run = |agent: &Path, args: &[&str]| {
        cmd(agent, args)
            .env("SESSIONTREE_NO_BACKGROUND_INDEX", "1")
            .output()
            .unwrap()
    };
    for build in [false, true] {
        if build {
            let o = run(agent, &["search", "--build-index"]);
            assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        }
        for (word, extra) in [("zebrafish", None), ("okapi_marker", Some("bashExecution"))] {
            let mut args = vec!["search", word, "--json"];
            if let Some(r) = extra {
                args.extend(["--role", r]);
            }
            let o = run(agent, &args);
            assert_eq!(o.status.code(), Some(0), "{word}: {}", err(&o));
            let h = hits(&o);
            assert_eq!(h.len(), 1, "{h:?}");
            assert_eq!(h[0]["entryId"], "b1");
            assert_eq!(h[0]["role"], "bashExecution");
        }
        let o = run(
            agent,
            &["search", "build", "--role", "bashExecution", "--json"],
        );
        assert_eq!(
            hits(&o).len(),
            1,
            "only the command, not the user's message"
        );
    }
}
