//! `sessiontree tree` stays readable on deep sessions: indented only where the tree forks,
//! the indentation bounded, every line within the terminal's width with its text shown.

use std::process::Command;
use unicode_width::UnicodeWidthStr;

/// A chain, then `forks` nested forks: every new branch forks again, so the last entry is
/// `forks` levels deep (the shape of long agent sessions with many retries).
fn deep_session(forks: usize) -> String {
    let mut t = 1_764_450_000_000u64;
    let mut lines = vec![r#"{"type":"session","version":3,"id":"deep","timestamp":"2025-11-29T21:00:00.000Z","cwd":"/w"}"#.to_string()];
    let mut push = |id: &str, parent: &str, role: &str, text: &str| {
        t += 1000;
        let iso = sessiontree::date::iso_from_ms(t as i64);
        let p = if parent.is_empty() {
            "null".to_string()
        } else {
            format!("\"{parent}\"")
        };
        lines.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"{iso}","message":{{"role":"{role}","content":"{text}","timestamp":{t}}}}}"#
        ));
    };
    push("r0", "", "user", "start");
    let mut last = "r0".to_string();
    for f in 0..forks {
        push(&format!("a{f}"), &last, "user", "abandoned attempt");
        push(
            &format!("b{f}"),
            &last,
            "user",
            "try again with a smaller step",
        );
        last = format!("b{f}");
    }
    push(
        "end",
        &last,
        "user",
        "The deepest answer: energy is conserved to 1e-9 now",
    );
    lines.join("\n") + "\n"
}

#[test]
fn deep_tree_fits_80_columns_and_shows_the_deepest_text() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.jsonl");
    std::fs::write(&p, deep_session(200)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .args(["tree", p.to_str().unwrap()])
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for l in text.lines() {
        assert!(l.width() <= 80, "{} columns: {l}", l.width());
    }
    let last = text.lines().last().unwrap();
    assert!(
        last.contains("end user The deepest answer: energy"),
        "{last}"
    );
    // Levels that do not fit are counted in a marker, not drawn.
    assert!(last.trim_start().starts_with("195›"), "{last}");
    // A single-child chain stays in the root's column.
    assert!(
        text.lines().nth(1).unwrap().starts_with("● r0 user start"),
        "{text}"
    );
}
