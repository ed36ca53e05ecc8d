//! Many `sessiontree append` processes on one file at once: the lock serializes them and
//! refresh-before-append chains every entry under the previous one.

use sessiontree_testkit::env;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn run(args: &[&str]) -> String {
    let o = Command::new(BIN).args(args).output().unwrap();
    sessiontree_testkit::run::ok(o).trim().to_string()
}

#[test]
fn concurrent_cli_appends_form_one_chain() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let file = run(&["new", "--session-dir", dir, "--cwd", dir]);
    run(&[
        "append",
        &file,
        r#"{"type":"message","message":{"role":"user","content":"start","timestamp":1}}"#,
    ]);
    let n: usize = env::env_or("SESSIONTREE_RACE_N", 40);
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(BIN)
                .args([
                    "append",
                    &file,
                    &format!(r#"{{"type":"custom","customType":"race","data":{{"n":{i}}}}}"#),
                    "--wait",
                    "30",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = Vec::new();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        ids.push(String::from_utf8(o.stdout).unwrap().trim().to_string());
    }
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with('\n'));
    let values: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line parses"))
        .collect();
    assert_eq!(values[0]["type"], "session");
    let entries = &values[1..];
    assert_eq!(entries.len(), n + 1);
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        assert!(
            seen.insert(e["id"].as_str().unwrap().to_string()),
            "duplicate id"
        );
    }
    for id in &ids {
        assert!(seen.contains(id), "acknowledged id {id} missing");
    }
    let mut ns: Vec<u64> = entries[1..]
        .iter()
        .map(|e| e["data"]["n"].as_u64().unwrap())
        .collect();
    ns.sort();
    assert_eq!(
        ns,
        (0..n as u64).collect::<Vec<_>>(),
        "every append present once"
    );
    assert!(entries[0]["parentId"].is_null());
    for w in entries.windows(2) {
        assert_eq!(
            w[1]["parentId"], w[0]["id"],
            "the appends must form one chain"
        );
    }
    // and the file verifies clean
    let o = Command::new(BIN).args(["verify", &file]).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
