//! `prune` against a PostgreSQL cluster the test starts (`sessiontree_testkit::pg`): only
//! files the archive holds byte for byte go, whatever the archive's own hash column says; `du` by agent and project; the service files `service install` writes,
//! checked by `systemd-analyze verify` when it is installed.

use serde_json::Value;
use sessiontree_testkit::agent::seeded_session;
use sessiontree_testkit::home::Home;
use sessiontree_testkit::pg;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

fn st(agent: &Path) -> Command {
    sessiontree_testkit::run::command(env!("CARGO_BIN_EXE_sessiontree"), agent)
}

fn ok(o: &Output) -> String {
    sessiontree_testkit::run::ok(o.clone())
}

/// A Pi session of `n` user entries in `<agent>/sessions/--work-proj--`.
fn session(agent: &Path, seed: u64, n: usize) -> PathBuf {
    seeded_session(agent, seed, n, |i| format!("s{seed} e{i} hello"))
}

fn age(p: &Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn prune_deletes_only_what_the_archive_holds_byte_for_byte() {
    let Some(c) = pg::archive() else { return };
    let agent = c.path("agent");
    let pushed = session(&agent, 1, 5); // in the archive as it is: goes
    let grown = session(&agent, 2, 5); // grew after the push: stays
    let tampered = session(&agent, 3, 5); // the archive's bytes changed behind its hash column
    let locked = session(&agent, 4, 5); // a writer holds its lock: stays
    let recent = session(&agent, 5, 5); // changed just now: not even a candidate
    ok(&st(&agent)
        .args(["push", "--archive", &c.url])
        .output()
        .unwrap());
    let unpushed = session(&agent, 6, 5); // never pushed: stays
    std::fs::OpenOptions::new()
        .append(true)
        .open(&grown)
        .unwrap()
        .write_all_line();
    // Same length, other bytes, in the stored chunks only: the hash column a client wrote
    // still says "the same", the bytes do not.
    let id3 = "01950003-0000-7000-8000-000000000003";
    c.psql(
        "postgres",
        "archive",
        &format!(
            "UPDATE sessiontree.chunks SET data = overlay(data placing 'X'::bytea from 3 for 1)
             WHERE session_pk = (SELECT pk FROM sessiontree.sessions WHERE session_id = '{id3}')"
        ),
    )
    .unwrap();
    for p in [&pushed, &grown, &tampered, &locked, &unpushed] {
        age(p, 40);
    }
    let before: Vec<(PathBuf, Vec<u8>)> = [&pushed, &grown, &tampered, &locked, &recent, &unpushed]
        .iter()
        .map(|p| (p.to_path_buf(), std::fs::read(p).unwrap()))
        .collect();
    let lock = sessiontree::store::WriterLock::acquire(&locked, None).unwrap();

    // --dry-run: says what would go, removes nothing.
    let o = st(&agent)
        .args([
            "prune",
            "--older-than",
            "30d",
            "--dry-run",
            "--json",
            "--archive",
            &c.url,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    let deleted: Vec<&str> = sessiontree_testkit::json::strs(&v["deleted"], "path");
    assert_eq!(deleted, vec![pushed.to_str().unwrap()], "{v:#}");
    let reason = |p: &Path| {
        v["kept"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["path"] == p.to_str().unwrap())
            .map(|k| k["reason"].as_str().unwrap().to_string())
    };
    assert!(reason(&grown).unwrap().contains("differs"), "{v:#}");
    assert!(reason(&tampered).unwrap().contains("differs"), "{v:#}");
    assert!(reason(&locked).unwrap().contains("in use"), "{v:#}");
    assert!(
        reason(&unpushed).unwrap().contains("not in the archive"),
        "{v:#}"
    );
    assert_eq!(reason(&recent), None, "{v:#}");
    assert_eq!(
        v["freed"],
        std::fs::metadata(&pushed).unwrap().len(),
        "{v:#}"
    );
    for (p, b) in &before {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{}", p.display());
    }

    // For real: the one file goes, the rest is as it was.
    let prune = || {
        st(&agent)
            .args(["prune", "--older-than", "30d", "--archive", &c.url])
            .output()
            .unwrap()
    };
    let out = ok(&prune());
    assert!(
        out.contains(&format!("deleted {}", pushed.display())),
        "{out}"
    );
    assert!(out.contains("deleted 1 files"), "{out}");
    assert!(!pushed.exists());
    for (p, b) in before.iter().filter(|(p, _)| p != &pushed) {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{}", p.display());
    }
    // Its writer gone, the locked one (pushed, unchanged) goes too.
    drop(lock);
    let out = ok(&prune());
    assert!(
        out.contains(&format!("deleted {}", locked.display())),
        "{out}"
    );
    assert!(!locked.exists());
    // Nothing left to prune: exit 1.
    sessiontree_testkit::run::exit(&prune(), 1);
}

/// A copy `prune` deleted is not written again by the next import or watch catch-up while
/// its transcript is unchanged (the archive holds it); it comes back once the transcript
/// grows, or when asked with `import --include-pruned`.
#[test]
fn a_pruned_copy_is_not_imported_again_until_its_transcript_grows() {
    let Some(c) = pg::archive() else { return };
    let url = c.url.clone();
    let h = Home::new(env!("CARGO_BIN_EXE_sessiontree"));
    let agent = h.root.join("agent");
    let claude = h.root.join("claude");
    let proj = claude.join("projects/-home-dev-shop");
    std::fs::create_dir_all(&proj).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../sessiontree-import/tests/fixtures/claude/1f4d2a9b-3c8e-4b7a-a2f6-9d0e5c7b1a03.jsonl",
    );
    let source = proj.join("1f4d2a9b-3c8e-4b7a-a2f6-9d0e5c7b1a03.jsonl");
    let all = std::fs::read_to_string(&fixture).unwrap();
    let lines: Vec<&str> = all.split_inclusive('\n').collect();
    // All but the last line now; the last one later (the transcript grows).
    std::fs::write(&source, lines[..lines.len() - 1].concat()).unwrap();
    let run = |args: &[&str]| h.run(args);
    let v: Value = serde_json::from_str(&ok(&run(&["import", "claude", "--json"]))).unwrap();
    let copy = PathBuf::from(v[0]["path"].as_str().unwrap());
    let first = std::fs::read(&copy).unwrap();
    ok(&run(&["push", "--archive", &url]));
    age(&copy, 40);
    let out = ok(&run(&["prune", "--older-than", "30d", "--archive", &url]));
    assert!(out.contains("deleted 1 files"), "{out}");
    assert!(!copy.exists());
    let ledger = std::fs::read_to_string(agent.join("sessiontree-import.pruned")).unwrap();
    assert!(ledger.contains(copy.to_str().unwrap()), "{ledger}");

    // The transcript as it was: the next import leaves the copy pruned, and says so.
    let o = run(&["import", "claude", "--json"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v[0]["status"], "pruned", "{v:#}");
    assert!(!copy.exists());
    let o = run(&["import", "claude"]);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--include-pruned"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!copy.exists());
    // A watch's catch-up does not bring it back either.
    let mut w = h
        .cmd_in("agent", &["watch", "--rescan", "1", "--no-codex"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = agent.join("sessiontree-watch.status");
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&status).is_ok_and(|s| s.contains("caught up"))
        && t0.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let _ = w.kill();
    let _ = w.wait();
    assert!(
        std::fs::read_to_string(&status).is_ok_and(|s| s.contains("caught up")),
        "{:?}",
        std::fs::read_to_string(&status)
    );
    assert!(!copy.exists(), "watch wrote a pruned copy again");

    // Asked for, it would be written again.
    let v: Value = serde_json::from_str(&ok(&run(&[
        "import",
        "claude",
        "--include-pruned",
        "--dry-run",
        "--json",
    ])))
    .unwrap();
    assert_eq!(v[0]["status"], "created", "{v:#}");
    assert!(!copy.exists());
    // The transcript grew: the copy comes back, whole.
    std::fs::write(&source, &all).unwrap();
    let v: Value = serde_json::from_str(&ok(&run(&["import", "claude", "--json"]))).unwrap();
    assert_eq!(v[0]["status"], "created", "{v:#}");
    assert!(std::fs::read(&copy).unwrap().len() > first.len());
}

trait AppendLine {
    fn write_all_line(self);
}

impl AppendLine for std::fs::File {
    fn write_all_line(mut self) {
        use std::io::Write;
        self.write_all(b"{\"type\":\"label\",\"id\":\"0badf00d\",\"parentId\":null,\"timestamp\":\"2025-04-01T00:01:00.000Z\",\"targetId\":\"x\",\"label\":\"l\"}\n").unwrap();
    }
}

#[test]
fn du_shows_the_space_by_agent_and_by_project() {
    let h = Home::new(env!("CARGO_BIN_EXE_sessiontree"));
    let agent = h.root.join("agent");
    let claude = h.root.join("claude");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../sessiontree-import/tests/fixtures/claude-inline");
    let proj = claude.join("projects/-home-dev-inline");
    std::fs::create_dir_all(&proj).unwrap();
    for e in std::fs::read_dir(&fixtures).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, proj.join(p.file_name().unwrap())).unwrap();
    }
    let pi = session(&agent, 7, 3);
    let run = |args: &[&str]| h.run(args);
    ok(&run(&["import", "claude"]));
    let v: Value = serde_json::from_str(&ok(&run(&["du", "--json"]))).unwrap();
    let agents = v["agents"].as_array().unwrap();
    let of = |name: &str| agents.iter().find(|a| a["agent"] == name).cloned();
    assert_eq!(of("pi").unwrap()["files"], 1, "{v:#}");
    assert_eq!(
        of("pi").unwrap()["bytes"],
        std::fs::metadata(&pi).unwrap().len(),
        "{v:#}"
    );
    assert!(
        of("claude-code").unwrap()["files"].as_u64().unwrap() >= 1,
        "{v:#}"
    );
    let projects = v["projects"].as_array().unwrap();
    assert!(projects.iter().any(|p| p["cwd"] == "/work/proj"), "{v:#}");
    assert_eq!(
        v["total"]["files"].as_u64().unwrap(),
        agents
            .iter()
            .map(|a| a["files"].as_u64().unwrap())
            .sum::<u64>()
    );
    let src = v["sources"].as_array().unwrap();
    assert!(
        src.iter()
            .any(|s| s["agent"] == "claude" && s["files"] == 1),
        "{v:#}"
    );
    let text = ok(&run(&["du"]));
    assert!(
        text.contains("/work/proj") && text.contains("claude-code"),
        "{text}"
    );
    // sessiontree's own caches: the listing index `ls` builds, counted file by file.
    let cache = |v: &Value, name: &str| {
        v["caches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cache"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {v:#}"))
    };
    assert_eq!(cache(&v, "kept contexts")["files"], 0, "{v:#}");
    ok(&run(&["ls", "--all"]));
    let v: Value = serde_json::from_str(&ok(&run(&["du", "--json"]))).unwrap();
    let index: Vec<_> = std::fs::read_dir(&agent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("sessiontree-index.sqlite") && p.is_file()
        })
        .collect();
    let rows = agent.join("sessiontree-index.sqlite.rows");
    let in_rows: Vec<_> = std::fs::read_dir(&rows)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    let files = index.iter().chain(&in_rows);
    let bytes: u64 = files.clone().map(|p| p.metadata().unwrap().len()).sum();
    assert!(bytes > 0 && !index.is_empty(), "{index:?}");
    let listing = cache(&v, "listing index");
    assert_eq!(listing["files"], files.count() as u64, "{v:#}");
    assert_eq!(listing["bytes"], bytes, "{v:#}");
    let text = ok(&run(&["du"]));
    assert!(
        text.contains("sessiontree's caches") && text.contains("listing index"),
        "{text}"
    );
}

#[test]
fn the_service_files_are_what_systemd_and_launchd_accept() {
    let t = tempfile::tempdir().unwrap();
    let o = st(&t.path().join("agent"))
        .args(["service", "install", "--dry-run"])
        .env("HOME", t.path())
        .env("XDG_CONFIG_HOME", t.path().join("config"))
        .env("CODEX_HOME", t.path().join("my codex%"))
        .output()
        .unwrap();
    let out = ok(&o);
    let (first, unit) = out.split_once('\n').unwrap();
    assert_eq!(
        first,
        format!(
            "# {}",
            t.path()
                .join("config/systemd/user/sessiontree-watch.service")
                .display()
        )
    );
    assert!(unit.contains(" watch\n"), "{unit}");
    assert!(unit.contains("%%"), "{unit}");
    // Nothing was written or started.
    assert!(!t.path().join("config").exists());
    // An archive reaches the service as SESSIONTREE_ARCHIVE; one with a password is refused
    // (it would sit in the service file), pointing to ~/.pgpass, and nothing is printed.
    let service = |url: &str| {
        st(&t.path().join("agent"))
            .args(["service", "install", "--dry-run", "--archive", url])
            .env("HOME", t.path())
            .env("XDG_CONFIG_HOME", t.path().join("config"))
            .output()
            .unwrap()
    };
    let with = ok(&service("postgresql://me@db.example/sessions"));
    assert!(
        with.contains("Environment=\"SESSIONTREE_ARCHIVE=postgresql://me@db.example/sessions\"\n"),
        "{with}"
    );
    let o = service("postgresql://me:s3cret@db.example/sessions");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("~/.pgpass") && !err.contains("s3cret"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    assert!(!t.path().join("config").exists());
    let Some(analyze) = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("SKIPPED the systemd-analyze check: systemd-analyze is not installed (Debian package systemd)");
        return;
    };
    let file = t.path().join("sessiontree-watch.service");
    std::fs::write(&file, unit).unwrap();
    let runtime = t.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let verify = || {
        let mut cmd = Command::new(analyze);
        cmd.args(["verify", "--user"]).arg(&file);
        cmd.env("XDG_RUNTIME_DIR", &runtime).output().unwrap()
    };
    let o = verify();
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The checker does catch a bad unit: the same with an unknown key and a missing program.
    let bad =
        unit.replace("Nice=10", "Nicee=10")
            .replacen("ExecStart=\"", "ExecStart=\"/nonexistent", 1);
    std::fs::write(&file, bad).unwrap();
    assert!(!verify().stderr.is_empty());
}

/// `watch --archive`: a transcript written into Claude Code's folder is copied and the copy
/// pushed; a line appended later reaches the archive too.
#[test]
fn watch_with_an_archive_pushes_the_copies_it_writes() {
    let Some(c) = pg::archive() else { return };
    let agent = c.path("agent");
    let proj = c.path("claude/projects/-home-dev-inline");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(c.path("codex/sessions")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../sessiontree-import/tests/fixtures/claude-inline/4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07.jsonl",
    );
    let bytes = std::fs::read(&fixture).unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let src = proj.join("4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07.jsonl");
    std::fs::write(&src, lines[..lines.len() - 1].concat()).unwrap();
    let mut child = st(&agent)
        .args(["watch", "--archive", &c.url])
        .env("CLAUDE_CONFIG_DIR", c.path("claude"))
        .env("CODEX_HOME", c.path("codex"))
        .env("HOME", c.tmp())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sql = "SELECT coalesce(sum(v.length), 0) FROM sessiontree.versions v";
    let archived = || c.number("alice", "archive", sql).unwrap_or(-1);
    let local = || -> i64 {
        let mut n = 0;
        let mut stack = vec![agent.join("sessions")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    n += std::fs::metadata(&p).unwrap().len() as i64;
                }
            }
        }
        n
    };
    let settled = |limit: Duration| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < limit {
            let l = local();
            if l > 0 && archived() == l {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    };
    assert!(settled(Duration::from_secs(30)), "first copies pushed");
    let before = local();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&src)
        .unwrap()
        .write_all_bytes(lines[lines.len() - 1]);
    let t0 = std::time::Instant::now();
    while local() == before && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(local() > before, "the appended line was not copied");
    assert!(
        settled(Duration::from_secs(30)),
        "the grown copy was not pushed"
    );
    let _ = child.kill();
    let _ = child.wait();
}

trait WriteAll {
    fn write_all_bytes(self, b: &[u8]);
}

impl WriteAll for std::fs::File {
    fn write_all_bytes(mut self, b: &[u8]) {
        use std::io::Write;
        self.write_all(b).unwrap();
    }
}
