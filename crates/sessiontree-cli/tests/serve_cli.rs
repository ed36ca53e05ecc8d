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
    let (tmp, folder) = sessiontree_testkit::files::temp_subdir("folder");
    let agent = tmp.path().join("agent");
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

/// A GET over plain TCP; the whole answer (head and body).
fn get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The command gives the server the secrets rules: a credential in a session is shown as
/// `[REDACTED:<kind>]` on the list, the session page and in search, never in full.
#[test]
fn served_pages_show_no_credential() {
    let (tmp, folder) = sessiontree_testkit::files::temp_subdir("sessions");
    let agent = tmp.path().join("agent");
    let key = format!("AKIA{}", "QYLPMN5HHHFPZAM2");
    let sid = "0199eeee-0000-7000-8000-000000000001";
    let text = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{sid}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n\
         {{\"type\":\"message\",\"id\":\"aa000001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"deploy with wombat key {key} please\",\"timestamp\":1767225601000}}}}\n"
    );
    std::fs::write(
        folder.join(format!("2026-01-01T00-00-00-000Z_{sid}.jsonl")),
        text,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .arg("serve")
        .arg(&folder)
        .args(["--listen", "127.0.0.1:0"])
        .env("PI_CODING_AGENT_DIR", &agent)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = sessiontree_testkit::run::first_line(&mut child);
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let pages = [
        get(&addr, "/"),
        get(&addr, &format!("/s/{sid}")),
        get(&addr, &format!("/s/{sid}/aa000001")),
        get(&addr, "/search?q=wombat"),
    ];
    let _ = child.kill();
    let _ = child.wait();
    for p in &pages {
        assert!(p.starts_with("HTTP/1.1 200"), "{p}");
        assert!(!p.contains(&key), "the key is served: {p}");
    }
    assert!(
        pages[1].contains("[REDACTED:aws-access-key]"),
        "{}",
        pages[1]
    );
}
