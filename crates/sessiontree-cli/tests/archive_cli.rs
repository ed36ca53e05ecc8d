//! `push`, `pull`, `sync --watch`, `share` and `--archive` through the command, against a
//! PostgreSQL cluster the test starts (`sessiontree_testkit::pg`), including
//! SIGKILLs at random points.

use sessiontree_testkit::agent::{seeded_session, user_entry};
use sessiontree_testkit::pg;
use sessiontree_testkit::run::ok;
use sessiontree_testkit::Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn st(agent: &Path) -> Command {
    sessiontree_testkit::run::command(env!("CARGO_BIN_EXE_sessiontree"), agent)
}

/// A session with `n` entries of about `size` bytes each, in Pi's layout.
fn session(agent: &Path, seed: u64, n: usize, size: usize) -> PathBuf {
    seeded_session(agent, seed, n, |i| text(i, size, seed))
}

/// The `i`th entry's text: about `size` bytes, some of them not ASCII.
fn text(i: usize, size: usize, seed: u64) -> String {
    let body: String = (0..size / 8)
        .map(|k| ["alpha ", "beta ", "ガンマ ", "delta "][(k + i) % 4])
        .collect();
    format!("s{seed} e{i} {body}")
}

fn last_id(p: &Path) -> String {
    let l = sessiontree::load(p).unwrap();
    l.tree.leaf_id().unwrap().to_string()
}

/// Appends `n` entries under the leaf, as another writer would.
fn grow(p: &Path, n: usize, size: usize, tag: u64) {
    let mut parent = format!("\"{}\"", last_id(p));
    let mut s = String::new();
    for i in 0..n {
        let eid = format!("{:08x}", (tag * 7919 + i as u64) as u32 ^ 0x5a5a_0000);
        s.push_str(&user_entry(&eid, &parent, i, &text(i, size, tag)));
        parent = format!("\"{eid}\"");
    }
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(p)
        .unwrap()
        .write_all(s.as_bytes())
        .unwrap();
}

/// The sessions under `agent` (see `session_files`), after checking that no pull left its
/// journal beside one.
fn tree_files(agent: &Path) -> Vec<(String, Vec<u8>)> {
    for (p, _) in sessiontree_testkit::files::snapshot(&agent.join("sessions")) {
        let name = p.to_string_lossy();
        assert!(
            !name.ends_with(".sessiontree-pull"),
            "a pull journal was left: {name}"
        );
    }
    sessiontree_testkit::files::session_files(agent)
}

/// Runs `args` (a `--json` push or pull) to the end twice: what the second one answers,
/// which after a converged first run has nothing left to do.
fn run_twice(agent: &Path, args: &[&str]) -> serde_json::Value {
    ok(st(agent).args(args).output().unwrap());
    serde_json::from_str(&ok(st(agent).args(args).output().unwrap())).unwrap()
}

/// Runs the command and SIGKILLs it after `delay`: whether it was killed (still running),
/// and how long it ran.
fn run_and_kill(mut cmd: Command, delay: Duration) -> (bool, Duration) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return (false, start.elapsed());
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    // SAFETY: kill on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let st = child.wait().unwrap();
    (st.code().is_none(), start.elapsed())
}

fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    ok(cmd.output().unwrap());
    t.elapsed()
}

#[test]
fn killed_push_and_pull_converge() {
    let Some(c) = pg::archive() else { return };
    let (a, b) = (c.path("a"), c.path("b"));
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut files = Vec::new();
    for i in 0..24 {
        let big = i % 6 == 0;
        files.push(session(
            &a,
            i,
            if big { 400 } else { 40 },
            if big { 8000 } else { 300 },
        ));
    }
    // How long a whole push takes, to aim the kills inside it (on a throwaway agent dir
    // pushing to a throwaway database).
    c.psql("postgres", "postgres", "CREATE DATABASE probe OWNER alice")
        .unwrap();
    let probe = c.path("probe");
    std::fs::create_dir_all(&probe).unwrap();
    ok(Command::new("cp")
        .arg("-r")
        .arg(a.join("sessions"))
        .arg(&probe)
        .output()
        .unwrap());
    let mut cmd = st(&probe);
    cmd.args(["push", "--archive", &c.url("alice", "probe")]);
    let mut window = timed(cmd);

    let mut kills = 0;
    let mut round = 0u64;
    while kills < 25 {
        round += 1;
        assert!(
            round < 200,
            "kills do not land inside push ({kills} of {round})"
        );
        // Files grow between attempts, one is rewritten now and then (a repair).
        let f = &files[rng.below(files.len() as u64) as usize];
        grow(f, 1 + rng.below(30) as usize, 20_000, round + 100);
        if round % 10 == 5 {
            let f = &files[rng.below(files.len() as u64) as usize];
            let text = std::fs::read_to_string(f).unwrap();
            let rewritten = text.replacen("alpha", "ALPHA", 1);
            sessiontree::store::atomic_replace(f, &[rewritten.as_bytes()]).unwrap();
        }
        let mut cmd = st(&a);
        cmd.args(["push", "--archive", &c.url]);
        let delay = Duration::from_micros(rng.below(window.as_micros() as u64 + 1));
        match run_and_kill(cmd, delay) {
            (true, _) => kills += 1,
            // Aim the next kills inside what a push takes now.
            (false, took) => window = took,
        }
    }
    let r = run_twice(&a, &["push", "--archive", &c.url, "--json"]);
    assert_eq!(r["bytesSent"], 0, "converged: {r}");
    assert_eq!(r["unchanged"], 24);
    // No version was stored twice, and every version is whole.
    let dup = c
        .psql(
            "alice",
            "archive",
            "SELECT count(*) FROM sessiontree.versions v JOIN sessiontree.versions w
               ON w.copy_pk = v.copy_pk AND w.seq = v.seq + 1 AND w.hash = v.hash",
        )
        .unwrap();
    assert_eq!(dup, "0");
    let bad = c
        .psql("alice", "archive",
              "SELECT count(*) FROM sessiontree.versions v WHERE v.length <>
               (SELECT coalesce(sum(length(data)), 0) FROM sessiontree.chunks WHERE version_pk = v.pk)")
        .unwrap();
    assert_eq!(bad, "0");

    // Machine b starts from the archive, then both go on, and pulls get killed.
    let mut cmd = st(&b);
    cmd.args(["pull", "--archive", &c.url]);
    ok(cmd.output().unwrap());
    assert_eq!(tree_files(&b), tree_files(&a));
    let b_files: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            b.join("sessions/--work-proj--")
                .join(f.file_name().unwrap())
        })
        .collect();
    for (i, f) in files.iter().enumerate() {
        match i % 3 {
            // a grows: b fast-forwards (big appends, so kills land inside writes)
            0 => grow(f, 30, 20_000, 500 + i as u64),
            // both grow: b gets a branch
            1 => {
                grow(f, 3, 500, 600 + i as u64);
                grow(&b_files[i], 2, 500, 700 + i as u64);
            }
            _ => {}
        }
    }
    for i in 100..106 {
        session(&a, i, 60, 3000);
    }
    let mut cmd = st(&a);
    cmd.args(["push", "--archive", &c.url]);
    ok(cmd.output().unwrap());
    let b_before: Vec<(PathBuf, Vec<u8>, String)> = b_files
        .iter()
        .map(|f| {
            let l = sessiontree::load(f).unwrap();
            let ctx = sessiontree::build_context(&l.tree, sessiontree::LeafArg::Default).to_json();
            (f.clone(), std::fs::read(f).unwrap(), ctx)
        })
        .collect();
    let probe_b = c.path("probe-b");
    ok(Command::new("cp")
        .arg("-r")
        .arg(&b)
        .arg(&probe_b)
        .output()
        .unwrap());
    let mut cmd = st(&probe_b);
    cmd.args(["pull", "--archive", &c.url]);
    let mut window = timed(cmd);
    let mut round = 0;
    while kills < 50 {
        round += 1;
        assert!(round < 200, "kills do not land inside pull ({kills})");
        let mut cmd = st(&b);
        cmd.args(["pull", "--archive", &c.url]);
        let delay = Duration::from_micros(rng.below(window.as_micros() as u64 + 1));
        let (killed, took) = run_and_kill(cmd, delay);
        if killed {
            kills += 1;
        } else {
            window = took;
            // That pull finished: give the next ones something to do (a fast-forward).
            let i = 3 * rng.below(8) as usize;
            grow(&files[i], 10, 20_000, 1000 + round);
            let mut cmd = st(&a);
            cmd.args(["push", "--archive", &c.url]);
            ok(cmd.output().unwrap());
        }
        // Whatever the kill left, every file is still a clean session file.
        for (f, before, _) in &b_before {
            let now = std::fs::read(f).unwrap();
            assert!(now.starts_with(before), "pull rewrote {}", f.display());
        }
    }
    let r = run_twice(&b, &["pull", "--archive", &c.url, "--json"]);
    assert_eq!(r["bytesWritten"], 0, "converged: {r}");

    // Fast-forwarded files equal a's; branched ones hold every entry once, the leaf's
    // context is what it was, and nothing is torn.
    for (i, (f, before, ctx)) in b_before.iter().enumerate() {
        let now = std::fs::read(f).unwrap();
        let l = sessiontree_testkit::load_clean!(f);
        let mut ids: Vec<&str> = l.tree.entries().iter().filter_map(|e| e.id()).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate entries in {}", f.display());
        match i % 3 {
            0 => assert_eq!(now, std::fs::read(&files[i]).unwrap()),
            1 => {
                let c2 =
                    sessiontree::build_context(&l.tree, sessiontree::LeafArg::Default).to_json();
                assert_eq!(&c2, ctx, "leaf moved in {}", f.display());
                let a_ids: Vec<String> = sessiontree::load(&files[i])
                    .unwrap()
                    .tree
                    .entries()
                    .iter()
                    .filter_map(|e| e.id().map(str::to_string))
                    .collect();
                assert!(a_ids.iter().all(|x| ids.contains(&x.as_str())));
            }
            _ => assert_eq!(&now, before),
        }
    }
    let names: Vec<String> = tree_files(&b).into_iter().map(|f| f.0).collect();
    assert_eq!(names.len(), 30);
}

#[test]
fn watch_pushes_appends_within_a_second_and_survives_a_restart() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    let f = session(&a, 1, 5, 100);
    let mut cmd = st(&a);
    cmd.args(["sync", "--watch", "--archive", &c.url]);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sql = "SELECT coalesce(max(length), 0) FROM sessiontree.versions";
    let archived = || c.number("alice", "archive", sql).unwrap_or(-1);
    let wait_for = |len: i64, limit: Duration| -> Option<Duration> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if archived() == len {
                return Some(t0.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    };
    let size = |p: &Path| std::fs::metadata(p).unwrap().len() as i64;
    assert!(
        wait_for(size(&f), Duration::from_secs(20)).is_some(),
        "first push"
    );
    for k in 0..3 {
        grow(&f, 1, 200, 40 + k);
        // Pushed on the file's event (`sync --watch` has no periodic rescan: without the
        // event it would never arrive). How fast (the < 1 s target) is for a benchmark to
        // measure, not for a test on a busy machine (1.3 s was seen at load 14).
        let took = wait_for(size(&f), Duration::from_secs(5)).expect("append pushed");
        eprintln!("append pushed after {took:?}");
    }
    // The server goes away; appends meanwhile; it comes back: they arrive.
    c.stop_server("fast");
    grow(&f, 2, 200, 90);
    std::thread::sleep(Duration::from_millis(1500));
    c.start_server();
    assert!(
        wait_for(size(&f), Duration::from_secs(15)).is_some(),
        "pushed after the restart"
    );
    grow(&f, 1, 200, 91);
    let took = wait_for(size(&f), Duration::from_secs(5)).expect("append after restart");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_commands_read_the_archive() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    let f = session(&a, 3, 6, 80);
    std::fs::copy("../../examples/demo-session.jsonl", a.join("sessions/--work-proj--/2025-01-01T00-00-00-000Z_01a2299a-5cff-7079-85c1-5366397fcf01.jsonl")).unwrap();
    let id = "0195".to_string() + &format!("{:04x}-0000-7000-8000-{:012x}", 3, 3);
    let mut cmd = st(&a);
    cmd.args(["push", "--archive", &c.url, "--machine", "laptop", "--json"]);
    let r: serde_json::Value = serde_json::from_str(&ok(cmd.output().unwrap())).unwrap();
    assert_eq!(r["created"], 2);
    // The URL can come from the environment.
    let mut cmd = st(&a);
    cmd.env("SESSIONTREE_ARCHIVE", &c.url)
        .args(["ls", "--archive", "--json"]);
    let out = ok(cmd.output().unwrap());
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["machine"] == "laptop" && r["owner"] == "alice"));
    assert!(rows
        .iter()
        .any(|r| r["id"] == "01a2299a-5cff-7079-85c1-5366397fcf01"
            && r["messageCount"].as_u64().unwrap() > 3));
    // Search: a word, code, CJK; machine and owner in each hit.
    for (q, want) in [
        ("integrator", true),
        ("s.vel", true),
        ("ガンマ", true),
        ("nowhere-to-be-found", false),
    ] {
        let mut cmd = st(&a);
        cmd.args(["search", q, "--archive", &c.url, "--json"]);
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(if want { 0 } else { 1 }), "{q}");
        for l in String::from_utf8(o.stdout).unwrap().lines() {
            let h: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(h["owner"], "alice");
            assert_eq!(h["machines"][0], "laptop");
        }
    }
    // The local search's filters: a cwd no session has, a time after every entry; --dir
    // makes no sense with the archive.
    for extra in [
        &["--cwd", "/no/such/place"][..],
        &["--since", "2100-01-01"][..],
    ] {
        let mut cmd = st(&a);
        cmd.args(["search", "integrator", "--archive", &c.url])
            .args(extra);
        assert_eq!(cmd.output().unwrap().status.code(), Some(1), "{extra:?}");
    }
    let mut cmd = st(&a);
    cmd.args([
        "search",
        "integrator",
        "--archive",
        &c.url,
        "--since",
        "2000-01-01",
    ]);
    assert_eq!(cmd.output().unwrap().status.code(), Some(0));
    let mut cmd = st(&a);
    cmd.args(["search", "integrator", "--archive", &c.url, "--dir", "/tmp"]);
    assert_eq!(cmd.output().unwrap().status.code(), Some(2));
    // Export straight from the archive.
    let mut cmd = st(&a);
    cmd.args(["export", &id, "--archive", &c.url, "--format", "md"]);
    let md = ok(cmd.output().unwrap());
    assert!(md.contains("s3 e5"), "{md}");
    let mut cmd = st(&a);
    cmd.args(["stats", "--archive", &c.url, "--json"]);
    ok(cmd.output().unwrap());
    // share: only to a role that exists, only your own sessions.
    let mut cmd = st(&a);
    cmd.args(["share", &id, "--with", "team", "--archive", &c.url]);
    ok(cmd.output().unwrap());
    let mut cmd = st(&a);
    cmd.args(["share", &id, "--with", "nobody", "--archive", &c.url]);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nobody"));
    // No archive given: one clear error.
    let mut cmd = st(&a);
    cmd.arg("push");
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("SESSIONTREE_ARCHIVE"));
    let _ = f;
}
