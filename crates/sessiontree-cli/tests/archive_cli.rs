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

/// Sessions with usage in Pi's layout: assistant messages of two models over two days, a
/// `usage` entry, a record without an id, a session name, a branch (an entry whose parent
/// is not the one before it), and a fork whose first entries are copies of its parent's
/// (same ids and timestamps, counted once).
fn usage_sessions(agent: &Path) -> Vec<PathBuf> {
    let mut r = Rng(77);
    let folder = agent.join("sessions/--u--");
    std::fs::create_dir_all(&folder).unwrap();
    let mut files = Vec::new();
    let mut parent_lines: Vec<String> = Vec::new();
    for s in 0..4u64 {
        let id = format!("0196bbbb-0000-7000-8000-{s:012x}");
        let start = 1748772000000u64 + s * 50_000_000; // from 2025-06-01T10:00Z, days apart
        let iso = |ms: u64| sessiontree::date::iso_from_ms(ms as i64);
        let path = folder.join(sessiontree::dirs::session_file_name(&iso(start), &id));
        let mut lines = vec![format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"{}\",\"cwd\":\"/u\"{}}}",
            iso(start),
            if s == 3 {
                format!(",\"parentSession\":{:?}", files[0])
            } else {
                String::new()
            }
        )];
        let mut parent = "null".to_string();
        let mut ids: Vec<String> = Vec::new();
        if s == 3 {
            // The fork: its parent's first six entries, as they were.
            lines.extend(parent_lines.iter().take(6).cloned());
            parent = format!("\"{}\"", ids_of(&parent_lines[5]));
        }
        for n in 0..30u64 {
            let ts = start + n * 3_000_000; // the last ones on the next day
            let eid = format!("{:08x}", r.next() as u32);
            if n == 20 && ids.len() > 5 {
                parent = format!("\"{}\"", ids[ids.len() - 5]); // a branch
            }
            let usage = format!(
                "{{\"input\":{},\"output\":{},\"cacheRead\":{},\"cacheWrite\":{},\"totalTokens\":{},\"cost\":{{\"total\":{}}}}}",
                r.below(5000),
                r.below(900),
                r.below(20000),
                r.below(300),
                r.below(30000),
                r.below(1000) as f64 / 1000.0
            );
            let model = ["claude-sonnet-4-5", "gpt-5"][(r.below(2)) as usize];
            let provider = if model == "gpt-5" {
                "openai"
            } else {
                "anthropic"
            };
            let line = match n % 5 {
                0 => format!(
                    "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"message\":{{\"role\":\"user\",\"content\":\"question {s}-{n}\",\"timestamp\":{ts}}}}}",
                    iso(ts)
                ),
                4 if n == 14 => format!(
                    "{{\"type\":\"usage\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"provider\":\"{provider}\",\"model\":\"{model}\",\"usage\":{usage}}}",
                    iso(ts)
                ),
                4 if n == 24 => format!(
                    // No id: never taken for another record.
                    "{{\"type\":\"usage\",\"timestamp\":\"{}\",\"provider\":\"{provider}\",\"model\":\"{model}\",\"usage\":{usage}}}",
                    iso(ts)
                ),
                _ => format!(
                    "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"answer {s}-{n}\"}}],\"provider\":\"{provider}\",\"model\":\"{model}\",\"usage\":{usage},\"stopReason\":\"stop\",\"timestamp\":{ts}}}}}",
                    iso(ts)
                ),
            };
            lines.push(line);
            if !(n % 5 == 4 && n == 24) {
                parent = format!("\"{eid}\"");
                ids.push(eid);
            }
        }
        if s == 1 {
            lines.push(format!(
                "{{\"type\":\"session_info\",\"id\":\"{:08x}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"name\":\"the named one\"}}",
                r.next() as u32,
                iso(start + 99_000_000)
            ));
        }
        if s == 0 {
            parent_lines = lines[1..].to_vec();
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        // Modified in the order made (local stats read the newest file first).
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_750_000_000 + s))
            .unwrap();
        files.push(path);
    }
    files
}

fn ids_of(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// `stats` as JSON, with the arguments given (`--archive URL` or `--all`).
fn stats_json(agent: &Path, args: &[&str]) -> serde_json::Value {
    let mut cmd = st(agent);
    cmd.arg("stats").args(args).arg("--json");
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("no usage kept"),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `stats --archive` without an id sums the usage kept at push time, and that is exactly
/// what `stats` finds in the same sessions' files, for every grouping and both branch
/// choices, also after an append moved a session's leaf to another branch. A version
/// without usage rows (as one pushed before schema 5) makes it read every session's bytes,
/// and say so.
#[test]
fn stats_of_the_archive_are_the_local_stats_of_the_same_sessions() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    let files = usage_sessions(&a);
    let same = |round: &str| {
        for by in ["model", "provider", "day", "session"] {
            for branch in ["--all-branches", "--branch"] {
                let local = stats_json(&a, &["--all", "--by", by, branch]);
                let archived = stats_json(&a, &["--archive", &c.url, "--by", by, branch]);
                assert_eq!(archived, local, "{round}: --by {by} {branch}");
                assert!(local["total"]["records"].as_u64().unwrap() > 10);
            }
        }
    };
    let mut cmd = st(&a);
    cmd.args(["push", "--archive", &c.url]);
    ok(cmd.output().unwrap());
    same("first push");
    let all = stats_json(&a, &["--all"]);
    assert_eq!(all["sessions"], 4);
    // The fork's copies of its parent's records count once.
    let fork_only = stats_json(&a, &[files[3].to_str().unwrap()]);
    let parent_only = stats_json(&a, &[files[0].to_str().unwrap()]);
    assert!(
        all["total"]["records"].as_u64().unwrap()
            < fork_only["total"]["records"].as_u64().unwrap()
                + parent_only["total"]["records"].as_u64().unwrap()
                + stats_json(&a, &[files[1].to_str().unwrap()])["total"]["records"]
                    .as_u64()
                    .unwrap()
                + stats_json(&a, &[files[2].to_str().unwrap()])["total"]["records"]
                    .as_u64()
                    .unwrap()
    );
    // An append whose parent is an older entry: the current branch changes.
    let text = std::fs::read_to_string(&files[2]).unwrap();
    let old = ids_of(text.lines().nth(3).unwrap());
    std::fs::write(
        &files[2],
        format!(
            "{text}{{\"type\":\"message\",\"id\":\"feedf00d\",\"parentId\":\"{old}\",\"timestamp\":\"2025-06-09T10:00:00.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":7,\"output\":8,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":15,\"cost\":{{\"total\":0.5}}}},\"stopReason\":\"stop\",\"timestamp\":1749463200000}}}}\n"
        ),
    )
    .unwrap();
    let mut cmd = st(&a);
    cmd.args(["push", "--archive", &c.url]);
    ok(cmd.output().unwrap());
    same("after an append on another branch");
    // What is summed is the kept sums: a group changed in the server shows (one none of
    // whose records another session holds, so no copy of them is counted instead).
    c.psql(
        "postgres",
        "archive",
        "UPDATE sessiontree.usage_sums SET cost = cost + 1000
         WHERE (version_pk, provider, model, day, in_all, in_branch) = (
             SELECT version_pk, provider, model, day, in_all, in_branch
             FROM sessiontree.usage_sums g
             WHERE in_all AND NOT EXISTS (SELECT 1 FROM sessiontree.usage_sums o
                                          WHERE o.version_pk <> g.version_pk AND o.eid && g.eid)
             ORDER BY version_pk, provider, model, day, in_branch LIMIT 1)",
    )
    .unwrap();
    let changed = stats_json(&a, &["--archive", &c.url]);
    let local = stats_json(&a, &["--all"]);
    let cost = |v: &serde_json::Value| v["total"]["cost"].as_f64().unwrap();
    assert!((cost(&changed) - cost(&local) - 1000.0).abs() < 1e-6);
    // A version without kept usage: every session's bytes are read instead, and said.
    c.psql(
        "postgres",
        "archive",
        "UPDATE sessiontree.versions SET usage_length = NULL
         WHERE pk = (SELECT min(pk) FROM sessiontree.versions)",
    )
    .unwrap();
    let mut cmd = st(&a);
    cmd.args(["stats", "--archive", &c.url, "--json"]);
    let o = cmd.output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no usage kept at push time"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, local);
}
