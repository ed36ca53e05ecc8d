//! `sessiontree serve`'s arguments: each mistake is one line naming it, exit 2, before
//! anything listens.

use std::process::Command;

fn serve(args: &[&str], agent: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .arg("serve")
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .output()
        .expect("run sessiontree serve");
    assert!(out.stdout.is_empty(), "nothing served");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn mistakes_are_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let folder = tmp.path().join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    let missing = tmp.path().join("missing");
    let file = folder.join("x.jsonl");
    std::fs::write(&file, "").unwrap();
    for (args, says) in [
        (vec![], "no such folder"),
        (
            vec![missing.to_str().unwrap()],
            "missing: no such file or directory",
        ),
        (vec![file.to_str().unwrap()], "not a folder"),
        (
            vec![folder.to_str().unwrap(), "--listen", "localhost"],
            "--listen localhost: not an address and port",
        ),
        (
            vec![folder.to_str().unwrap(), "--token", "short"],
            "--token: the token must be at least 16 characters",
        ),
        (
            vec![
                folder.to_str().unwrap(),
                "--token",
                "spaces are not ok in it",
            ],
            "--token: the token may only hold",
        ),
        (
            vec![folder.to_str().unwrap(), "--public-url", "ftp://x"],
            "--public-url ftp://x: not a URL",
        ),
    ] {
        let (code, err) = serve(&args, &agent);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
