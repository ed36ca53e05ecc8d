//! For the tests that drive the reference implementation through `interop/` (its npm
//! packages installed by `cd interop && npm ci`).

use std::path::PathBuf;
use std::process::Command;

/// The workspace's `interop/` folder.
pub fn interop_dir() -> PathBuf {
    crate::root().join("interop")
}

/// Whether node and the reference's packages are there; if not, says that the test is
/// skipped (or panics under `SESSIONTREE_REQUIRE_INTEROP=1`, as CI sets).
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

/// A temp folder for a test that drives the reference; None (the test skipped, see
/// [`available`]) without node and the reference's packages.
pub fn temp_dir() -> Option<tempfile::TempDir> {
    available().then(|| {
        tempfile::Builder::new()
            .prefix("st-interop")
            .tempdir()
            .unwrap()
    })
}

/// `count` sessions from the reference's seeded generator (`gen.mjs`, with `extra`
/// arguments) in `dir`: each file with its entry in the generator's manifest.
pub fn generate(
    dir: &std::path::Path,
    seed: u64,
    count: u64,
    extra: &[&str],
) -> Vec<(PathBuf, serde_json::Value)> {
    let d = dir.to_str().unwrap();
    let (s, c) = (seed.to_string(), count.to_string());
    let mut args = vec![
        "gen.mjs", "--out", d, "--seed", &s, "--count", &c, "--quiet",
    ];
    args.extend_from_slice(extra);
    node(&args);
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    crate::json::array(&manifest["files"])
        .iter()
        .map(|f| (dir.join(f["path"].as_str().unwrap()), f.clone()))
        .collect()
}

/// Says that a test skipped its real work, where `cargo test` shows it: straight to the
/// process's stderr (libtest captures `eprintln!` of passing tests and shows it only with
/// `--nocapture`).
pub fn say_skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// Runs `node ARGS` in `interop/`; its stdout (panics when node fails).
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

/// What the reference reads in `files`, one `node oracle.mjs dump` for all of them (with
/// `extra` arguments): the dump's JSON text, also left in `out` (the file list beside it,
/// in `<out>.list`).
pub fn oracle_dump<P: AsRef<std::path::Path>>(
    files: &[P],
    out: &std::path::Path,
    extra: &[&str],
) -> Vec<u8> {
    let list = out.with_extension("list");
    let names: Vec<String> = files
        .iter()
        .map(|p| p.as_ref().to_string_lossy().into_owned())
        .collect();
    std::fs::write(&list, names.join("\n")).unwrap();
    let mut args = vec![
        "oracle.mjs",
        "dump",
        "--list-file",
        list.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    node(&args);
    std::fs::read(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}

/// The context the reference builds for a session's default leaf, from one of the dump's
/// `results` (None when it has none; panics when `contexts` is not an array).
pub fn default_context(result: &serde_json::Value) -> Option<&serde_json::Value> {
    crate::json::array(&result["contexts"])
        .iter()
        .find(|c| c["kind"] == "default")
        .map(|c| &c["context"])
}
