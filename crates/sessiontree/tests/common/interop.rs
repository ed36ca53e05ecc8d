//! Shared by the tests that drive the reference implementation through `interop/`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

pub fn available() -> bool {
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
        say_skipped("interop tests need node and interop/node_modules (cd interop && npm ci)");
    }
    ok
}

/// Says that a test skipped its real work, where `cargo test` shows it: straight to the
/// process's stderr (libtest captures `eprintln!` of passing tests and shows it only with
/// `--nocapture`).
pub fn say_skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

pub fn node(args: &[&str]) -> String {
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
