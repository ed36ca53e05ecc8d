//! `sessiontree import copilot` through the binary: GitHub Copilot CLI's folder from
//! `COPILOT_HOME`, Pi's folder layout, `--json`, idempotence, `--dry-run`, exit codes; and
//! `ls` (the `H` mark, `importedFrom`), `search`, `stats`, `export` on the result.

use serde_json::Value;
use sessiontree_testkit::files::copy_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sessiontree-import/tests/fixtures")
}

struct Home {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    /// Copilot CLI's folder (`$COPILOT_HOME`) with the recorded and hand-written sessions,
    /// and an empty Pi agent dir.
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for f in ["copilot-recorded", "copilot"] {
            copy_dir(
                &fixtures().join(f).join("session-state"),
                &root.join("gh/session-state"),
            );
        }
        Home { _tmp: tmp, root }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("COPILOT_HOME", self.root.join("gh"))
            .env("HOME", &self.root)
            .env("NO_COLOR", "1")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn import_copilot_then_list_search_stats_and_export() {
    let h = Home::new();
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

    let ls = h.json(&["ls", "--all", "--json"]);
    let sessions = ls["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3);
    assert!(sessions.iter().all(|s| s["importedFrom"] == "copilot-cli"));
    let plain = text(&h.run(&["ls", "--all"]));
    assert_eq!(
        plain.lines().filter(|l| l.contains("H  ")).count(),
        3,
        "{plain}"
    );
    assert!(plain.contains("H imported from"), "{plain}");

    let found = h.run(&["search", "hello-opencode"]);
    assert!(found.status.success());
    assert!(text(&found).contains("toolResult"), "{}", text(&found));

    let stats = h.run(&["stats", "--all"]);
    assert!(
        text(&stats).contains("github-copilot/gpt-4o"),
        "{}",
        text(&stats)
    );

    let hand = sessions
        .iter()
        .find(|s| s["firstMessage"] == "List the files")
        .unwrap();
    let md = h.run(&["export", "--format", "md", hand["path"].as_str().unwrap()]);
    assert!(md.status.success());
    let md = text(&md);
    assert!(md.contains("A new question after the rewind"), "{md}");
    assert!(md.contains("bash"), "{md}");
}

#[test]
fn dry_run_writes_nothing_and_a_missing_folder_is_nothing_found() {
    let h = Home::new();
    let o = h.run(&["import", "copilot", "--dry-run", "--json"]);
    assert!(o.status.success());
    assert!(!h.root.join("agent").exists());

    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["import", "copilot"])
        .env("PI_CODING_AGENT_DIR", tmp.path().join("agent"))
        .env("COPILOT_HOME", tmp.path().join("none"))
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no GitHub Copilot CLI transcripts"), "{err}");
    assert!(err.contains("$COPILOT_HOME/session-state"), "{err}");
}

/// The recorded `/compact` and `/rename` (`copilot-compact`): `ls` shows the name the
/// session was given (`workspace.yaml`); a session without that file is named by its
/// first prompt as typed, never with the `<current_datetime>` block the CLI adds to it.
#[test]
fn ls_shows_the_copilot_name_and_the_compaction_is_a_pi_compaction() {
    let h = Home::new();
    copy_dir(
        &fixtures().join("copilot-compact/session-state"),
        &h.root.join("gh/session-state"),
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
    let plain = text(&h.run(&["ls", "--all"]));
    assert!(plain.contains("Demo session"), "{plain}");
    assert!(!plain.contains("current_datetime"), "{plain}");
    let file = std::fs::read_to_string(named["path"].as_str().unwrap()).unwrap();
    assert!(file.contains(r#""type":"compaction""#), "{file}");
    assert!(!file.contains("copilot-cli:compaction_complete"), "{file}");
}
