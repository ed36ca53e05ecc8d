//! `sessiontree import` through the binary: default source folders from CLAUDE_CONFIG_DIR /
//! CODEX_HOME, Pi's folder layout under the agent dir, idempotence, --dry-run, --json, exit
//! codes; and `ls`, `search`, `stats`, `export` on the imported sessions.

use sessiontree_testkit::env;
use sessiontree_testkit::rng as xorshift;

use serde_json::Value;
use sessiontree_testkit::files::copy_dir;
use sessiontree_testkit::home::Home;
use sessiontree_testkit::run::stdout;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn fixtures() -> PathBuf {
    sessiontree_testkit::home::import_fixtures()
}

/// Claude Code's and Codex's folders as the agents lay them out, and an empty Pi agent dir.
fn home() -> Home {
    Home::with_fixtures(
        BIN,
        &[
            ("claude", "claude/projects/-home-dev-shop"),
            ("codex", "codex/sessions/2025/10/03"),
            ("codex-recorded/sessions", "codex/sessions"),
        ],
    )
}

/// Where the imported sessions of the fixtures' project go.
fn folder(h: &Home) -> PathBuf {
    h.root.join("agent/sessions/--home-dev-shop--")
}

#[test]
fn import_then_list_search_stats_and_export() {
    let h = home();
    let o = h.run(&["import", "claude"]);
    sessiontree_testkit::run::exit(&o, 0);
    let paths: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(paths.len(), 6);
    for p in &paths {
        assert!(Path::new(p).starts_with(folder(&h)), "{p}");
    }
    // The malformed lines are reported with file and line, and the rest imported.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("5d0f7c1e-2b0a-4c61-9f51-0d6a7e3b9a01.jsonl:19: not valid JSON"),
        "{err}"
    );
    let o = h.run(&["import", "codex"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).lines().count(), 8);
    // A fork that continues from its parent's first lines holds them: Pi resumes it whole.
    let fork = stdout(&o)
        .lines()
        .find(|p| p.contains("01a22bc6-ddbf-7672-857c-6a9755e51338"))
        .unwrap()
        .to_string();
    let ctx = h.json(&["context", &fork, "--json"]).to_string();
    assert!(
        ctx.contains("Please RUN the echo command") && ctx.contains("Forked question"),
        "{ctx}"
    );

    let ls = h.json(&["ls", "--all", "--json"]);
    let sessions = ls["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 14);
    let names: Vec<&str> = sessions.iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&"Coupon total fix in cart"), "{names:?}");
    let no_index = h.json(&["ls", "--all", "--no-index", "--json"]);
    assert_eq!(no_index["sessions"].as_array().unwrap().len(), 14);
    // Every imported session is recognised as such (an addition to Pi's fields), with and
    // without the index: the six Claude Code files and the six Codex ones.
    for listing in [&ls, &no_index] {
        let agent_of = |p: &str| {
            listing["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["path"] == p)
                .map(|s| s["importedFrom"].clone())
                .unwrap()
        };
        for p in &paths {
            assert_eq!(agent_of(p), "claude-code", "{p}");
        }
        for p in stdout(&o).lines() {
            assert_eq!(agent_of(p), "codex", "{p}");
        }
    }
    // The table marks them too, with a legend; a folder without imports shows neither.
    let table = h.run(&["ls", "--all"]);
    let text = stdout(&table);
    // The MSGS cell: count, fork mark, import mark.
    let counts = |m: char| {
        text.lines()
            .skip(1)
            .filter_map(|l| l.get(16..))
            .filter(|r| {
                r.trim_start()
                    .split("  ")
                    .next()
                    .is_some_and(|cell| cell.ends_with(m))
            })
            .count()
    };
    assert_eq!(counts('C'), 6, "{text}");
    assert_eq!(counts('X'), 8, "{text}");
    assert!(
        text.contains("C / X / G / O / H imported from Claude Code / Codex / Gemini CLI / OpenCode / GitHub Copilot CLI"),
        "{text}"
    );
    let forked = sessions
        .iter()
        .filter(|s| s["parentSessionPath"].is_string())
        .count();
    assert_eq!(
        forked, 4,
        "the subagent, the Claude resume copy and the Codex forks name their parent"
    );

    let hits = h.json(&["search", "coupon", "--json"]);
    assert!(hits.to_string().contains("5d0f7c1e"), "{hits}");
    let hits = h.json(&["search", "Reads now use column", "--phrase", "--json"]);
    assert!(
        hits.to_string()
            .contains("0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a03"),
        "{hits}"
    );

    let stats = h.json(&["stats", "--all", "--json"]).to_string();
    assert!(stats.contains("claude-sonnet-4-5-20250929"), "{stats}");
    assert!(stats.contains("gpt-5-codex"), "{stats}");

    let basic = std::fs::read_dir(folder(&h))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("5d0f7c1e"))
        .unwrap();
    let md = h.run(&["export", basic.to_str().unwrap(), "--format", "md"]);
    assert!(md.status.success());
    assert!(stdout(&md).contains("Tests pass now: 12 passed."));
    let html = h.run(&["export", basic.to_str().unwrap(), "--format", "html"]);
    assert!(html.status.success());
}

#[test]
fn import_is_idempotent_and_reports_as_json() {
    let h = home();
    let first = h.json(&["import", "codex", "--json"]);
    let snapshot: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(folder(&h))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    assert_eq!(snapshot.len(), 4);
    assert_eq!(first.as_array().unwrap().len(), 8);
    for s in first.as_array().unwrap() {
        assert_eq!(s["status"], "created");
        assert!(s["source"].as_str().unwrap().ends_with(".jsonl"));
        assert!(s["path"].as_str().unwrap().ends_with(".jsonl"));
    }
    let rollout = first
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == "0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a01")
        .unwrap();
    assert_eq!(rollout["problems"][0]["line"], 15);
    assert_eq!(rollout["skipped"]["user_message"], 1);

    let again = h.json(&["import", "codex", "--json"]);
    for s in again.as_array().unwrap() {
        assert_eq!(s["status"], "unchanged", "{s}");
        assert_eq!(s["added"], 0);
    }
    for (p, bytes) in snapshot {
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{}", p.display());
    }
}

#[test]
fn dry_run_writes_nothing_and_errors_name_the_file() {
    let h = home();
    let o = h.run(&["import", "claude", "--dry-run", "--json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["status"] == "created"));
    assert!(!h.root.join("agent").exists(), "a dry run created files");

    let out = h.root.join("elsewhere");
    let o = h.run(&[
        "import",
        "claude",
        h.root
            .join("claude/projects/-home-dev-shop/8e2b6c3d-7a19-4f0e-b1d4-6c2f9e1a5b02.jsonl")
            .to_str()
            .unwrap(),
        "--session-dir",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);

    let missing = h.root.join("no/such/file.jsonl");
    let o = h.run(&["import", "claude", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no/such/file.jsonl"));

    let empty = h.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = h.run(&["import", "codex", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "nothing to import");
    assert!(String::from_utf8_lossy(&o.stderr).contains("no Codex transcripts under"));
}

/// Claude Code's resume and fork copies (`--resume` in older releases: a new file with the
/// whole history; `--fork-session`: a new file starting with the copied context) record no
/// link to where they came from; the import links each to its original with
/// `parentSession`, whatever order the files are found in, and not the other way round.
#[test]
fn claude_resume_and_fork_copies_are_linked_to_their_original() {
    let h = home();
    copy_dir(
        &fixtures().join("claude-recorded"),
        &h.root.join("claude/projects/-home-dev-demo"),
    );
    let all = h.json(&["import", "claude", "--json"]);
    let by_id = |id: &str| -> Value {
        all.as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == id)
            .unwrap_or_else(|| panic!("{id} in {all:#}"))
            .clone()
    };
    let header = |s: &Value| -> Value {
        let text = std::fs::read_to_string(s["path"].as_str().unwrap()).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    for (copy, original) in [
        // --fork-session of the recorded session (Claude Code 2.1.197)
        (
            "cb94987c-b200-4f6e-9102-ef6dd61e0d01",
            "2eb18699-69bc-4917-863b-8879884dd4b1",
        ),
        // a resume copy of the whole history (hand-written, older layout)
        (
            "2c9a7e4f-5d1b-4a8e-9f3c-7e6d5b4a3c05",
            "8e2b6c3d-7a19-4f0e-b1d4-6c2f9e1a5b02",
        ),
    ] {
        let (c, o) = (by_id(copy), by_id(original));
        assert_eq!(c["parentSession"], o["path"], "{copy}");
        assert_eq!(header(&c)["parentSession"], o["path"], "{copy}");
        assert!(o.get("parentSession").is_none(), "{original}: {o}");
        assert!(header(&o).get("parentSession").is_none(), "{original}");
    }
    // Sessions that share nothing stay unlinked.
    assert!(by_id("5d0f7c1e-2b0a-4c61-9f51-0d6a7e3b9a01")
        .get("parentSession")
        .is_none());

    // A copy imported without its original: no link, and no error.
    let alone = home();
    let only = fixtures().join("claude-recorded/cb94987c-b200-4f6e-9102-ef6dd61e0d01.jsonl");
    let v = alone.json(&["import", "claude", "--json", only.to_str().unwrap()]);
    assert_eq!(v[0]["status"], "created");
    assert!(v[0].get("parentSession").is_none(), "{v}");

    // Imported in separate runs, original first: a copy that shows it is one (lines older
    // than the file's own first line, as Claude Code 2.1.197 writes --fork-session and
    // resume copies) is linked to the original's file from the earlier run, as when both
    // come in one run. (A copy known only by sharing its first line with another
    // transcript is linked only within one run.)
    let apart = home();
    let (copy, original) = (
        "claude-recorded/cb94987c-b200-4f6e-9102-ef6dd61e0d01.jsonl",
        "claude-recorded/2eb18699-69bc-4917-863b-8879884dd4b1.jsonl",
    );
    {
        let o = apart.json(&[
            "import",
            "claude",
            "--json",
            fixtures().join(original).to_str().unwrap(),
        ]);
        let c = apart.json(&[
            "import",
            "claude",
            "--json",
            fixtures().join(copy).to_str().unwrap(),
        ]);
        let main_of = |v: &Value| -> Value {
            v.as_array()
                .unwrap()
                .iter()
                .find(|s| s["kind"] == "main")
                .unwrap()
                .clone()
        };
        let (o, c) = (main_of(&o), main_of(&c));
        assert_eq!(c["parentSession"], o["path"], "{copy}: {c}");
        assert_eq!(header(&c)["parentSession"], o["path"], "{copy}");
    }
}

/// A long import shows a progress bar on a terminal (`script` gives the command one), and
/// nothing but the written paths when its output is a pipe.
#[test]
fn long_imports_show_progress_on_a_terminal_only() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("projects/-home-dev-many");
    std::fs::create_dir_all(&src).unwrap();
    for n in 0..210 {
        let sid = format!("00000000-0000-4000-8000-{n:012}");
        let line = |uuid: &str, parent: &str, ty: &str, content: &str| {
            format!(
                r#"{{"parentUuid":{parent},"isSidechain":false,"cwd":"/home/dev/many","sessionId":"{sid}","type":"{ty}","message":{{"role":"{ty}","content":"{content}"}},"uuid":"{uuid}","timestamp":"2025-10-02T09:00:0{n2}.000Z"}}"#,
                n2 = n % 10
            )
        };
        let text = format!(
            "{}\n",
            line(&format!("u-{n}"), "null", "user", &format!("question {n}"))
        );
        std::fs::write(src.join(format!("{sid}.jsonl")), text).unwrap();
    }
    let out = tmp.path().join("out");
    let cmd = format!(
        "{BIN} import claude {} --session-dir {}",
        src.display(),
        out.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("NO_COLOR", "1")
        .output()
        .expect("`script` (util-linux) runs the command on a terminal");
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{shown}");
    assert!(shown.contains("importing transcripts"), "{shown}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 210);

    let again = Command::new(BIN)
        .args(["import", "claude", src.to_str().unwrap(), "--session-dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stderr), "");
    assert_eq!(String::from_utf8_lossy(&again.stdout).lines().count(), 210);
}

/// Without Claude Code's or Codex's folder (never used here, or another config dir), the
/// import finds nothing (exit 1) and says which folder it looked for and how to point it
/// elsewhere; a PATH that does not exist is an error (exit 2) naming it.
#[test]
fn a_missing_agent_folder_is_nothing_found_and_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    for (agent, folder, var) in [
        ("claude", ".claude/projects", "$CLAUDE_CONFIG_DIR"),
        ("codex", ".codex/sessions", "$CODEX_HOME"),
    ] {
        let o = Command::new(BIN)
            .args(["import", agent])
            .env("HOME", tmp.path())
            .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&tmp.path().join(folder).display().to_string()),
            "{err}"
        );
        assert!(err.contains("does not exist") && err.contains(var), "{err}");
        assert!(o.stdout.is_empty());
    }
    let missing = tmp.path().join("nowhere.jsonl");
    let o = Command::new(BIN)
        .args(["import", "claude", missing.to_str().unwrap()])
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(missing.to_str().unwrap()));
}

/// New files are written aside and named only after one sync for the whole run. Two
/// sources that make the same Pi file (a transcript copied to a second folder) meet at
/// that point: one file is created, the other source completes it like an earlier
/// import, and nothing is left behind under a temporary name.
#[test]
fn two_sources_of_one_session_in_one_run_make_one_file() {
    let h = home();
    let src = h.root.join("codex/sessions/2025/10/03");
    let copy = h.root.join("codex/sessions/copy");
    copy_dir(&src, &copy);
    let out = h.json(&["import", "codex", "--json"]);
    let rows = out.as_array().unwrap();
    let by_status = |s: &str| rows.iter().filter(|r| r["status"] == s).count();
    let originals = std::fs::read_dir(&src).unwrap().count();
    assert!(originals >= 2, "{originals}");
    assert_eq!(rows.len(), 8 + originals, "{out:#}");
    assert_eq!(by_status("unchanged"), originals, "{out:#}");
    assert_eq!(by_status("created"), 8, "{out:#}");
    for r in rows {
        let twin = rows
            .iter()
            .filter(|x| x["sessionId"] == r["sessionId"])
            .count();
        assert!(twin == 1 || twin == 2);
        assert!(r["path"].as_str().is_some(), "{r}");
    }
    let mut names: Vec<String> = Vec::new();
    let mut stack = vec![h.root.join("agent/sessions")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                names.push(p.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    assert!(names.iter().all(|n| n.ends_with(".jsonl")), "{names:?}");
    assert_eq!(names.len(), 8, "{names:?}");
    // Each file is what a single import writes.
    let again = h.json(&["import", "codex", "--json"]);
    assert!(again
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "unchanged"));
}

/// SIGKILLed at random points, an import never leaves a session file that is not whole:
/// every `*.jsonl` in the result is byte for byte what an uninterrupted import writes, the
/// next run completes the set, and the temporary files the killed runs left are removed
/// by a later import once they are old.
#[test]
fn killed_imports_leave_only_whole_files_and_the_next_run_completes_them() {
    let kills: usize = env::env_or("SESSIONTREE_IMPORT_KILLS", 25);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("codex/sessions/2025/10/03");
    std::fs::create_dir_all(&src).unwrap();
    // 300 distinct rollouts made from one fixture (a new session id each).
    let fixture = fixtures()
        .join("codex/rollout-2025-10-03T14-00-00-0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a01.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let old_id = "0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a01";
    for n in 0..300 {
        let id = format!("0199a5b2-7c3d-7e4f-8a1b-{n:012}");
        std::fs::write(
            src.join(format!("rollout-2025-10-03T14-00-00-{id}.jsonl")),
            text.replace(old_id, &id),
        )
        .unwrap();
    }
    let import = |agent: &Path| {
        let mut c = Command::new(BIN);
        c.args(["import", "codex"])
            .env("PI_CODING_AGENT_DIR", agent)
            .env("CODEX_HOME", tmp.path().join("codex"))
            .env("HOME", tmp.path())
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };
    let files = |agent: &Path| -> Vec<(String, Vec<u8>)> {
        let dir = agent.join("sessions/--home-dev-shop--");
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().path())
                    .map(|p| {
                        let name = p.file_name().unwrap().to_string_lossy().into_owned();
                        let bytes = if name.ends_with(".jsonl") {
                            std::fs::read(&p).unwrap()
                        } else {
                            Vec::new()
                        };
                        (name, bytes)
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let reference = tmp.path().join("reference");
    let t = std::time::Instant::now();
    assert!(import(&reference).status().unwrap().success());
    let full = t.elapsed();
    let want: std::collections::HashMap<String, Vec<u8>> = files(&reference).into_iter().collect();
    assert_eq!(want.len(), 300);

    let agent = tmp.path().join("killed");
    let mut rng = xorshift::Rng(0x9e37_79b9_7f4a_7c15);
    let mut cut_short = 0;
    for _ in 0..kills {
        let delay = full.mul_f64(rng.below(1000) as f64 / 1000.0);
        let mut child = import(&agent).spawn().unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            cut_short += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        for (name, bytes) in files(&agent) {
            if name.ends_with(".jsonl") {
                assert!(
                    want.get(&name) == Some(&bytes),
                    "{name} is not what an uninterrupted import writes"
                );
            } else {
                // Temp files of the killed run, and lock files (of files it was completing).
                let temp = name.starts_with('.') && name.contains(".jsonl.tmp-");
                assert!(temp || name.ends_with(".jsonl.lock"), "{name}");
            }
        }
    }
    assert!(cut_short > 0, "no run was killed before it finished");
    assert!(import(&agent).status().unwrap().success());
    let got = files(&agent);
    let sessions: Vec<&(String, Vec<u8>)> =
        got.iter().filter(|f| f.0.ends_with(".jsonl")).collect();
    assert_eq!(sessions.len(), 300);
    for (name, bytes) in sessions {
        assert!(want.get(name) == Some(bytes), "{name}");
    }
    // Left-over temp files of the killed runs: gone with the next import once old.
    let dir = agent.join("sessions/--home-dev-shop--");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for (name, _) in got.iter().filter(|f| f.0.contains(".jsonl.tmp-")) {
        std::fs::File::options()
            .write(true)
            .open(dir.join(name))
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    }
    // A new source makes the next run write into the folder.
    let id = "0199a5b2-7c3d-7e4f-8a1b-999999999999";
    std::fs::write(
        src.join(format!("rollout-2025-10-03T14-00-00-{id}.jsonl")),
        text.replace(old_id, id),
    )
    .unwrap();
    assert!(import(&agent).status().unwrap().success());
    let left: Vec<String> = files(&agent)
        .into_iter()
        .map(|f| f.0)
        .filter(|n| n.contains(".jsonl.tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    eprintln!("import kill test: {kills} kills, {cut_short} cut a run short");
}

/// A two-line Claude Code transcript of session `sid` in /home/dev/x, first line at
/// 2025-10-02T09:00:03.111Z (so its Pi file is `2025-10-02T09-00-03-111Z_<sid>.jsonl`).
fn transcript(dir: &Path, sid: &str) -> PathBuf {
    let line = |v: Value| serde_json::to_string(&v).unwrap();
    let text = [
        line(
            serde_json::json!({"parentUuid":null,"isSidechain":false,"cwd":"/home/dev/x",
            "sessionId":sid,"type":"user","message":{"role":"user","content":"hello"},
            "uuid":"c1a00001-0000-4000-8000-000000000001","timestamp":"2025-10-02T09:00:03.111Z"}),
        ),
        line(
            serde_json::json!({"parentUuid":"c1a00001-0000-4000-8000-000000000001",
            "isSidechain":false,"cwd":"/home/dev/x","sessionId":sid,"type":"assistant",
            "message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
                "content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",
                "usage":{"input_tokens":3,"output_tokens":2}},
            "uuid":"c1a00002-0000-4000-8000-000000000002","timestamp":"2025-10-02T09:00:04.000Z"}),
        ),
    ];
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("t.jsonl");
    std::fs::write(&p, text.join("\n") + "\n").unwrap();
    p
}

/// Every file below `root`, with its bytes (links as their target's path).
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.push((p, t.to_string_lossy().into_owned().into_bytes()));
            } else if m.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Issue 24: a transcript's session id becomes a file name only when it is a session id
/// Pi accepts: `/../../x` (with a matching `<time>_` folder present) or `../x` would have
/// written outside the session folder. Such a transcript is reported and skipped (exit 2)
/// and nothing is written anywhere.
#[test]
fn import_refuses_a_session_id_that_is_a_path() {
    for sid in [
        "/../../escape",
        "../escape",
        "a/../../escape",
        "x\u{1b}]52;c;QQ==\u{7}",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let src = transcript(&root.join("src"), sid);
        let sessions = root.join("deep/sessions");
        std::fs::create_dir_all(sessions.join("2025-10-02T09-00-03-111Z_")).unwrap();
        let before = snapshot(root);
        let o = Command::new(BIN)
            .args(["import", "claude", src.to_str().unwrap(), "--session-dir"])
            .arg(&sessions)
            .env("PI_CODING_AGENT_DIR", root.join("agent"))
            .env("HOME", root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{sid}: {err}");
        assert!(
            err.contains("t.jsonl") && err.contains("invalid session id"),
            "{err}"
        );
        assert!(!err.contains('\u{1b}'), "{err}");
        assert!(o.stdout.is_empty());
        assert_eq!(snapshot(root), before, "{sid}: something was written");
    }
}

/// Issue 24: import appends only to files it created, marked in their header with the
/// source it imported. A native Pi session (or any unmarked file) with the transcript's
/// id, cwd and time, and a symbolic link at the file's name, are refused in one line
/// naming the file; nothing is written. An earlier import's file is still completed.
#[test]
fn import_appends_only_to_files_it_created() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let sid = "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f";
    let src = transcript(&root.join("src"), sid);
    let name = format!("2025-10-02T09-00-03-111Z_{sid}.jsonl");
    let import = |dir: &Path| {
        Command::new(BIN)
            .args([
                "import",
                "claude",
                src.to_str().unwrap(),
                "--json",
                "--session-dir",
            ])
            .arg(dir)
            .env("PI_CODING_AGENT_DIR", root.join("agent"))
            .env("HOME", root)
            .output()
            .unwrap()
    };
    // A marked file: an earlier import's.
    let first = root.join("first");
    let o = import(&first);
    sessiontree_testkit::run::exit(&o, 0);
    let marked = std::fs::read_to_string(first.join(&name)).unwrap();
    let header: Value = serde_json::from_str(marked.lines().next().unwrap()).unwrap();
    assert_eq!(
        header["importedFrom"],
        serde_json::json!({"agent": "claude-code", "sessionId": sid})
    );
    // Cut to its header and first entry, it is completed by the next import.
    let short: String = marked.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(first.join(&name), &short).unwrap();
    let o = import(&first);
    sessiontree_testkit::run::exit(&o, 0);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "appended");
    assert_eq!(std::fs::read_to_string(first.join(&name)).unwrap(), marked);

    // A native Pi session under the same name, id, cwd and time.
    let native = root.join("native");
    std::fs::create_dir_all(&native).unwrap();
    let pi = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{sid}\",\"timestamp\":\"2025-10-02T09:00:03.111Z\",\"cwd\":\"/home/dev/x\"}}\n\
         {{\"type\":\"message\",\"id\":\"aa11bb22\",\"parentId\":null,\"timestamp\":\"2025-10-02T09:10:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"my own work\",\"timestamp\":1759396200000}}}}\n"
    );
    std::fs::write(native.join(&name), &pi).unwrap();
    // A link at the name, to a marked file elsewhere that lacks entries.
    let linked = root.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    let outside = root.join("outside.jsonl");
    std::fs::write(&outside, &short).unwrap();
    std::os::unix::fs::symlink(&outside, linked.join(&name)).unwrap();
    for (dir, why) in [
        (&native, "import only appends to files it created"),
        (&linked, "symbolic link"),
    ] {
        let before = snapshot(root);
        let o = import(dir);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&name) && err.contains(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(
            snapshot(root),
            before,
            "{}: something was written",
            dir.display()
        );
    }
    assert_eq!(std::fs::read_to_string(native.join(&name)).unwrap(), pi);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), short);
}
