//! `sessiontree import gemini` through the binary: Gemini CLI's folder from
//! `GEMINI_CLI_HOME`, Pi's folder layout, `--json`, idempotence, `--dry-run`, exit codes;
//! and `ls` (the `G` mark, `importedFrom`), `search`, `stats`, `export` on the result.

use serde_json::Value;
use sessiontree_testkit::home::Home;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

/// Gemini CLI's folder (`$GEMINI_CLI_HOME/.gemini`) with the recorded and hand-written
/// chats, and an empty Pi agent dir.
fn home() -> Home {
    Home::with_fixtures(
        BIN,
        &[
            ("gemini-recorded/tmp", "gh/.gemini/tmp"),
            ("gemini/tmp", "gh/.gemini/tmp"),
        ],
    )
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn import_gemini_then_list_search_stats_and_export() {
    let h = home();
    let report = h.json(&["import", "gemini", "--json"]);
    let rows = report.as_array().unwrap();
    let written: Vec<&Value> = rows.iter().filter(|r| r["path"].is_string()).collect();
    // The recorded session, its subagent, the older one-file chat, the chat with bad lines.
    assert_eq!(written.len(), 4, "{report:#}");
    for r in &written {
        assert_eq!(r["status"], "created");
        assert!(r["source"].as_str().unwrap().contains("/.gemini/tmp/"));
        assert!(r["path"]
            .as_str()
            .unwrap()
            .contains("/agent/sessions/--home-dev-demo--/"));
    }
    // The files a resume leaves with only its start: skipped, saying why.
    let skipped: Vec<&Value> = rows.iter().filter(|r| r["status"] == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{report:#}");
    assert_eq!(skipped[0]["reason"], "no conversation in the transcript");
    let bad = rows
        .iter()
        .find(|r| r["source"].as_str().unwrap().contains("badlines"))
        .unwrap();
    assert_eq!(bad["problems"].as_array().unwrap().len(), 2);
    let sub = rows.iter().find(|r| r["kind"] == "sidechain").unwrap();
    assert!(sub["parentSession"].is_string());

    // Again: nothing to add, the same files.
    let again = h.json(&["import", "gemini", "--json"]);
    for r in again.as_array().unwrap() {
        if r["path"].is_string() {
            assert_eq!(r["status"], "unchanged", "{r:#}");
        }
    }

    let ls = h.json(&["ls", "--all", "--json"]);
    let sessions = ls["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    assert!(sessions.iter().all(|s| s["importedFrom"] == "gemini-cli"));
    let plain = text(&h.run(&["ls", "--all"]));
    assert_eq!(
        plain.lines().filter(|l| l.contains("G  ")).count(),
        4,
        "{plain}"
    );
    assert!(plain.contains(" G / "), "{plain}");
    assert!(plain.contains("imported from"), "{plain}");
    assert!(plain.contains("Gemini CLI"), "{plain}");

    let found = h.run(&["search", "hello-gemini"]);
    assert!(found.status.success());
    assert!(text(&found).contains("toolResult"), "{}", text(&found));

    let stats = h.run(&["stats", "--all"]);
    assert!(
        text(&stats).contains("google/gemini-2.5-flash"),
        "{}",
        text(&stats)
    );

    let main = sessions
        .iter()
        .find(|s| s["firstMessage"] == "Please RUN the echo command")
        .unwrap();
    let md = h.run(&["export", "--format", "md", main["path"].as_str().unwrap()]);
    assert!(md.status.success());
    let md = text(&md);
    assert!(md.contains("A new question after the rewind"), "{md}");
    assert!(md.contains("run_shell_command"), "{md}");
}

#[test]
fn dry_run_writes_nothing_and_a_missing_folder_is_nothing_found() {
    let h = home();
    let o = h.run(&["import", "gemini", "--dry-run", "--json"]);
    assert!(o.status.success());
    assert!(!h.root.join("agent").exists());

    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["import", "gemini"])
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .env("GEMINI_CLI_HOME", tmp.path().join("none"))
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no Gemini CLI transcripts"), "{err}");
    assert!(err.contains("$GEMINI_CLI_HOME/.gemini"), "{err}");
}
