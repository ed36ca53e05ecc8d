//! Listing and index tests. The parity test runs the reference (interop/) when available:
//! skipped with a message otherwise, unless `SESSIONTREE_REQUIRE_INTEROP=1`.

use serde_json::Value;
use sessiontree::list::{self, ListOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

fn available() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && interop_dir()
            .join("node_modules/pi16/dist/core/session-manager.js")
            .exists();
    if !ok {
        if std::env::var("SESSIONTREE_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!("interop tests need node and interop/node_modules (cd interop && npm ci)");
        }
        eprintln!("SKIPPED: interop tests need node and interop/node_modules");
    }
    ok
}

fn node(args: &[&str]) -> String {
    let out = Command::new("node")
        .current_dir(interop_dir())
        .args(args)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "node {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Sessions grouped by equal `modified` (the reference's order among ties follows its
/// candidate order, mtime then `localeCompare`; we compare tie groups as sets).
fn groups(v: &[Value]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut last: Option<Value> = None;
    for s in v {
        let m = s["modified"].clone();
        let text = serde_json::to_string(s).unwrap();
        if last.as_ref() == Some(&m) {
            out.last_mut().unwrap().push(text);
        } else {
            out.push(vec![text]);
        }
        last = Some(m);
    }
    for g in &mut out {
        g.sort();
    }
    out
}

#[test]
fn list_all_equals_the_reference() {
    if !available() {
        return;
    }
    for seed in [11u64, 12] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        node(&["gen.mjs", "--out", d, "--seed", &seed.to_string(), "--count", "60", "--quiet"]);
        let theirs: Value = serde_json::from_str(&node(&["oracle.mjs", "list-all", d])).unwrap();
        let theirs = theirs["sessions"].as_array().unwrap().clone();
        let opts = ListOptions { reference_parity: true, ..Default::default() };
        let ours: Vec<Value> = list::list_all(dir.path(), opts).iter().map(|i| i.to_json()).collect();
        eprintln!("seed {seed}: {} sessions listed", ours.len());
        assert!(ours.len() > 20);
        assert_eq!(ours.len(), theirs.len(), "seed {seed}: count");
        let (a, b) = (groups(&ours), groups(&theirs));
        for (x, y) in a.iter().zip(b.iter()) {
            assert_eq!(x, y, "seed {seed}");
        }
        // Without parity we list more (the sessions the reference drops), never fewer.
        let all = list::list_all(dir.path(), ListOptions::default());
        assert!(all.len() >= ours.len());
    }
}
