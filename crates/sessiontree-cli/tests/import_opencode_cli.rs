//! `sessiontree import opencode` through the binary: OpenCode's data folder from
//! XDG_DATA_HOME (its database and the `storage/` tree of older releases), idempotence,
//! `--json`, exit codes; and `ls`, `search`, `stats`, `export`, `context` on the result.

use serde_json::Value;
use sessiontree_testkit::files::copy_dir;
use sessiontree_testkit::home::Home;
use sessiontree_testkit::run::stdout;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn fixtures() -> PathBuf {
    sessiontree_testkit::home::import_fixtures()
}

/// OpenCode's data folder (`$XDG_DATA_HOME/opencode`) with the recorded database, and
/// an empty Pi agent dir.
fn home() -> Home {
    let h = Home::new(BIN);
    let data = h.root.join("xdg/opencode");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(
        fixtures().join("opencode-recorded/opencode.db"),
        data.join("opencode.db"),
    )
    .unwrap();
    h
}

#[test]
fn import_opencode_then_list_search_stats_and_export() {
    let h = home();
    let o = h.run(&["import", "opencode"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let paths: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(paths.len(), 4, "3 sessions and a subagent");
    let folder = h.root.join("agent/sessions/--home-dev-demo--");
    for p in &paths {
        assert!(Path::new(p).starts_with(&folder), "{p}");
    }
    // Again: nothing to add, and --json says so per session, with its source.
    let again = h.json(&["import", "opencode", "--json"]);
    let again = again.as_array().unwrap();
    assert_eq!(again.len(), 4);
    for s in again {
        assert_eq!(s["status"], "unchanged", "{s}");
        assert_eq!(s["agent"], "opencode");
        assert!(s["source"]
            .as_str()
            .unwrap()
            .ends_with("opencode/opencode.db"));
        assert!(paths.contains(&s["path"].as_str().unwrap().to_string()));
    }
    let sub = again.iter().find(|s| s["kind"] == "sidechain").unwrap();
    assert!(sub["parentSession"]
        .as_str()
        .unwrap()
        .contains("ses_dce73b1eeffenoobMrgAxGFH3S"));

    for listing in [
        h.json(&["ls", "--all", "--json"]),
        h.json(&["ls", "--all", "--no-index", "--json"]),
    ] {
        let sessions = listing["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 4);
        for s in sessions {
            assert_eq!(s["importedFrom"], "opencode", "{s}");
        }
        let names: Vec<&str> = sessions.iter().filter_map(|s| s["name"].as_str()).collect();
        assert!(names.contains(&"Title 1 (fork #1)"), "{names:?}");
        // The subagent and the fork name their parent.
        let linked = sessions
            .iter()
            .filter(|s| s["parentSessionPath"].is_string())
            .count();
        assert_eq!(linked, 2);
    }
    let table = stdout(&h.run(&["ls", "--all"]));
    assert!(
        table.contains(" O / ") && table.contains("imported from") && table.contains("OpenCode"),
        "{table}"
    );
    let marked = table
        .lines()
        .skip(1)
        .filter(|l| {
            l.get(16..).is_some_and(|r| {
                r.trim_start()
                    .split("  ")
                    .next()
                    .is_some_and(|c| c.ends_with('O'))
            })
        })
        .count();
    assert_eq!(marked, 4, "{table}");

    // The reverted turn is in the file (an abandoned branch), searchable; the context is
    // what OpenCode continues from.
    let hits = h.json(&["search", "A question to take back", "--phrase", "--json"]);
    assert!(
        hits.to_string().contains("ses_dce73b1eeffenoobMrgAxGFH3S"),
        "{hits}"
    );
    let main = paths
        .iter()
        .find(|p| p.contains("ses_dce73b1eeffenoobMrgAxGFH3S"))
        .unwrap();
    let ctx = h.json(&["context", main, "--json"]).to_string();
    assert!(
        ctx.contains("Summary 19") && ctx.contains("After compacting, RUN again"),
        "{ctx}"
    );
    assert!(!ctx.contains("A question to take back"), "{ctx}");

    let stats = h.json(&["stats", "--all", "--json"]).to_string();
    assert!(stats.contains("m1"), "{stats}");
    let md = h.run(&["export", main, "--format", "md"]);
    assert!(md.status.success());
    assert!(stdout(&md).contains("After compacting, RUN again"));
}

/// A data folder with the database and the JSON tree it was copied from: each session
/// once (the database's); the tree alone imports too.
#[test]
fn the_storage_tree_imports_and_a_session_also_in_the_database_is_taken_once() {
    let h = home();
    let data = h.root.join("xdg/opencode");
    copy_dir(
        &fixtures().join("opencode-storage/storage"),
        &data.join("storage"),
    );
    let all = h.json(&["import", "opencode", "--json"]);
    let written: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["status"] == "created")
        .collect();
    assert_eq!(written.len(), 4, "{all}");
    for s in &written {
        assert!(
            s["source"].as_str().unwrap().ends_with("opencode.db"),
            "{s}"
        );
    }
    std::fs::remove_file(data.join("opencode.db")).unwrap();
    let out = h.root.join("tree");
    let tree = h.json(&[
        "import",
        "opencode",
        data.join("storage").to_str().unwrap(),
        "--session-dir",
        out.to_str().unwrap(),
        "--json",
    ]);
    let tree = tree.as_array().unwrap();
    assert_eq!(tree.len(), 4, "{tree:?}");
    for s in tree {
        assert_eq!(s["status"], "created", "{s}");
        assert!(
            s["source"].as_str().unwrap().contains("/storage/session/"),
            "{s}"
        );
    }
}

#[test]
fn no_opencode_folder_is_nothing_found_and_says_where_it_looked() {
    let h = home();
    std::fs::remove_dir_all(h.root.join("xdg")).unwrap();
    let o = h.run(&["import", "opencode"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no OpenCode transcripts"), "{err}");
    assert!(err.contains("$XDG_DATA_HOME/opencode"), "{err}");
}
