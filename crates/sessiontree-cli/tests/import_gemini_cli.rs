//! `sessiontree import gemini` through the binary: Gemini CLI's folder from
//! `GEMINI_CLI_HOME`, Pi's folder layout, `--json`, idempotence, `--dry-run`, exit codes;
//! and `ls` (the `G` mark, `importedFrom`), `search`, `stats`, `export` on the result.

use serde_json::Value;
use sessiontree_testkit::home::Home;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

#[test]
fn import_gemini_then_list_search_stats_and_export() {
    let h = Home::with_agent_fixtures(BIN, "gemini");
    let report = h.json(&["import", "gemini", "--json"]);
    let rows = sessiontree_testkit::json::array(&report);
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

    let (sessions, plain) = h.listed_imports("gemini-cli", "G  ", 4);
    assert!(plain.contains(" G / "), "{plain}");
    assert!(plain.contains("imported from"), "{plain}");
    assert!(plain.contains("Gemini CLI"), "{plain}");

    h.check_search_and_stats("hello-gemini", "google/gemini-2.5-flash");

    let first = "Please RUN the echo command";
    h.check_export_md(
        &sessions,
        first,
        &["A new question after the rewind", "run_shell_command"],
    );
}

#[test]
fn dry_run_writes_nothing_and_a_missing_folder_is_nothing_found() {
    Home::with_agent_fixtures(BIN, "gemini").check_dry_run_writes_nothing("gemini");
    let wanted = ["no Gemini CLI transcripts", "$GEMINI_CLI_HOME/.gemini"];
    sessiontree_testkit::home::check_import_nothing_found(
        BIN,
        "gemini",
        "GEMINI_CLI_HOME",
        &wanted,
    );
}
