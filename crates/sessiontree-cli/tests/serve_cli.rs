//! `sessiontree serve`'s arguments: each mistake is one line naming it, exit 2, before
//! anything listens.

use std::process::Command;

fn serve(args: &[&str], agent: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sessiontree"))
        .arg("serve")
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("SESSIONTREE_TOKEN")
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
    let unreachable = format!(
        "host={} port=1 user=nobody dbname=nothing sslmode=disable",
        tmp.path().display()
    );
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
        // An archive that cannot be reached: said before anything listens.
        (
            vec![folder.to_str().unwrap(), "--archive", &unreachable],
            "cannot connect to the archive",
        ),
        (
            vec![
                folder.to_str().unwrap(),
                "--token-file",
                missing.to_str().unwrap(),
            ],
            "--token-file",
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
    get_with(addr, path, "").1
}

/// A GET with extra header lines: the status and the whole answer.
fn get_with(addr: &str, path: &str, extra: &str) -> (u16, String) {
    let r = sessiontree_testkit::http::get(addr.parse().unwrap(), path, extra);
    let mut head = format!("HTTP/1.1 {} \r\n", r.status);
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    (r.status, head + "\r\n" + &r.body)
}

/// Starts `sessiontree serve ARGS` on a free port; the child and the address it printed.
fn start(
    args: &[&str],
    env: &[(&str, &str)],
    agent: &std::path::Path,
) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sessiontree"));
    cmd.arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("PI_CODING_AGENT_DIR", agent)
        .env_remove("SESSIONTREE_TOKEN")
        .stdout(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    (child, addr, line)
}

/// The token can stay out of the process list: from `SESSIONTREE_TOKEN` or a file only
/// its owner reads; a file others can read is refused.
#[test]
fn the_token_from_the_environment_or_a_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let folder = tmp.path().join("sessions");
    std::fs::create_dir_all(&folder).unwrap();
    let dir = folder.to_str().unwrap();
    let token = "env-token-0123456789abcdef";
    let file = tmp.path().join("token");
    std::fs::write(&file, "file-token-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = file.to_str().unwrap();
    for (args, env, t) in [
        (vec![dir], vec![("SESSIONTREE_TOKEN", token)], token),
        (
            vec![dir, "--token-file", f],
            vec![],
            "file-token-0123456789abcdef",
        ),
        // The file wins over the environment.
        (
            vec![dir, "--token-file", f],
            vec![("SESSIONTREE_TOKEN", token)],
            "file-token-0123456789abcdef",
        ),
    ] {
        let (mut child, addr, line) = start(&args, &env, &agent);
        assert!(!line.contains(t), "the given token is not printed: {line}");
        let without = get_with(&addr, "/", "").0;
        let with = get_with(&addr, "/", &format!("Authorization: Bearer {t}\r\n")).0;
        let wrong = get_with(
            &addr,
            "/",
            "Authorization: Bearer wrong-token-0123456789ab\r\n",
        )
        .0;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!((without, with, wrong), (401, 200, 401), "{args:?} {env:?}");
    }
    // Readable by others: refused, one line, before anything listens.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, err) = serve(&[dir, "--token-file", f], &agent);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("readable by other users") && err.contains("chmod 600"),
        "{err}"
    );
    // A token in the file that is not one.
    std::fs::write(&file, "short\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, err) = serve(&[dir, "--token-file", f], &agent);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--token-file") && err.contains("at least 16"),
        "{err}"
    );
    // --token and --token-file together make no sense.
    let (code, _) = serve(&[dir, "--token-file", f, "--token", token], &agent);
    assert_eq!(code, 2);
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
    let (mut child, addr, _) = start(&[folder.to_str().unwrap()], &[], &agent);
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
