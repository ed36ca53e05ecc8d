//! `sessiontree import copilot` through the binary: GitHub Copilot CLI's folder from
//! `COPILOT_HOME`, Pi's folder layout, `--json`, idempotence, `--dry-run`, exit codes; and
//! `ls` (the `H` mark, `importedFrom`), `search`, `stats`, `export` on the result.

use sessiontree_testkit::home::Home;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

#[test]
fn import_copilot_then_list_search_stats_and_export() {
    let h = Home::with_agent_fixtures(BIN, "copilot");
    let report = h.json(&["import", "copilot", "--json"]);
    let rows = report.as_array().unwrap();
    // The recorded session, its subagent, the hand-written one.
    assert_eq!(rows.len(), 3, "{report:#}");
    for r in rows {
        assert_eq!(r["status"], "created", "{r:#}");
        assert!(r["source"].as_str().unwrap().ends_with("/events.jsonl"));
        assert!(r["path"]
            .as_str()
            .unwrap()
            .contains("/agent/sessions/--home-dev-demo--/"));
    }
    let sub = rows.iter().find(|r| r["kind"] == "sidechain").unwrap();
    assert!(sub["parentSession"].is_string(), "{sub:#}");
    let bad = rows
        .iter()
        .find(|r| r["problems"].as_array().is_some_and(|p| !p.is_empty()))
        .unwrap();
    assert_eq!(bad["problems"].as_array().unwrap().len(), 2, "{bad:#}");

    // Again: nothing to add, the same files.
    let again = h.json(&["import", "copilot", "--json"]);
    for r in again.as_array().unwrap() {
        assert_eq!(r["status"], "unchanged", "{r:#}");
    }

    let (sessions, plain) = h.listed_imports("copilot-cli", "H  ", 3);
    assert!(plain.contains("H imported from"), "{plain}");

    h.check_search_and_stats("hello-opencode", "github-copilot/gpt-4o");

    h.check_export_md(
        &sessions,
        "List the files",
        &["A new question after the rewind", "bash"],
    );
}

#[test]
fn dry_run_writes_nothing_and_a_missing_folder_is_nothing_found() {
    Home::with_agent_fixtures(BIN, "copilot").check_dry_run_writes_nothing("copilot");
    let wanted = [
        "no GitHub Copilot CLI transcripts",
        "$COPILOT_HOME/session-state",
    ];
    sessiontree_testkit::home::check_import_nothing_found(BIN, "copilot", "COPILOT_HOME", &wanted);
}

/// The recorded `/compact` and `/rename` (`copilot-compact`): `ls` shows the name the
/// session was given (`workspace.yaml`); a session without that file is named by its
/// first prompt as typed, never with the `<current_datetime>` block the CLI adds to it.
#[test]
fn ls_shows_the_copilot_name_and_the_compaction_is_a_pi_compaction() {
    let h = Home::with_fixtures(
        BIN,
        &[
            ("copilot-recorded/session-state", "copilot/session-state"),
            ("copilot/session-state", "copilot/session-state"),
            ("copilot-compact/session-state", "copilot/session-state"),
        ],
    );
    let report = h.json(&["import", "copilot", "--json"]);
    assert_eq!(report.as_array().unwrap().len(), 4, "{report:#}");
    let ls = h.json(&["ls", "--all", "--json"]);
    let sessions = ls["sessions"].as_array().unwrap();
    let named = sessions
        .iter()
        .find(|s| s["name"] == "Demo session")
        .unwrap_or_else(|| panic!("{ls:#}"));
    assert!(sessions
        .iter()
        .any(|s| s["name"] == "Hello there" && s["id"] != named["id"]));
    let plain = String::from_utf8(h.run(&["ls", "--all"]).stdout).unwrap();
    assert!(plain.contains("Demo session"), "{plain}");
    assert!(!plain.contains("current_datetime"), "{plain}");
    let file = std::fs::read_to_string(named["path"].as_str().unwrap()).unwrap();
    assert!(file.contains(r#""type":"compaction""#), "{file}");
    assert!(!file.contains("copilot-cli:compaction_complete"), "{file}");
}
