//! What an agent links stays small: the library's normal dependency tree (what
//! `cargo tree -p sessiontree -e normal` prints) holds no database, async runtime,
//! terminal UI, argument parser, web server or MCP crate. Those belong to the crates above
//! it (index, archive, CLI, and the capability crates).

use std::process::Command;

/// Crates that must never be in `sessiontree`'s normal dependency tree.
const FORBIDDEN: &[&str] = &[
    "rusqlite",
    "libsqlite3-sys",
    "postgres",
    "tokio-postgres",
    "tokio",
    "ratatui",
    "crossterm",
    "clap",
    "axum",
    "hyper",
    "rmcp",
];

/// The forbidden crates named in `cargo tree --prefix none` output (one `name vX.Y.Z`
/// per line).
fn forbidden_in(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| FORBIDDEN.contains(name))
        .map(str::to_string)
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_check_names_what_it_finds() {
    let tree = "sessiontree v0.1.0 (/x)\nmemchr v2.7.4\ntokio v1.40.0\nclap v4.5.0\ntokio v1.40.0 (*)\nclap_lex v0.7.0\n";
    assert_eq!(forbidden_in(tree), ["clap", "tokio"]);
    assert!(forbidden_in("sessiontree v0.1.0\nserde v1.0.0\n").is_empty());
}

#[test]
fn sessiontree_pulls_in_no_database_runtime_ui_or_server() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let o = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "-p", "sessiontree", "-e", "normal"])
        .args(["--prefix", "none", "--offline", "--locked"])
        .output()
        .expect("cargo runs");
    let tree = sessiontree_testkit::run::ok(o);
    assert!(tree.starts_with("sessiontree v"), "{tree}");
    assert!(tree.contains("sessiontree-core v"), "{tree}");
    assert_eq!(forbidden_in(&tree), Vec::<String>::new(), "{tree}");
}
