//! `sessiontree watch` driven as a process, on the recorded transcripts of the import
//! fixtures: transcripts grown line by line, new ones appearing, sources deleted, the watch
//! killed with -9 at random points and restarted, two watches at once; at the end every Pi
//! copy must be byte for byte what a one-shot `sessiontree import` of the final sources
//! writes. `SESSIONTREE_WATCH_KILLS` sets how many kills (default 10).

use sessiontree_testkit::home::kill;
use sessiontree_testkit::{env, rng as xorshift};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sessiontree-import/tests/fixtures")
}

/// Every file under `dir`, by its path relative to `dir`.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                // A file can go between the listing and the read (the watch's temporary
                // files, renamed into place): what is compared is what stays.
                let bytes = match std::fs::read(&p) {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => panic!("{}: {e}", p.display()),
                };
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// The transcripts the agents would write: (agent, path under its root, full content).
fn transcripts() -> Vec<(&'static str, PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for (agent, from, to) in [
        ("claude", "claude", "projects/-home-dev-shop"),
        ("claude", "claude-recorded", "projects/-home-dev-demo"),
        ("claude", "claude-attachments", "projects/-home-dev-att"),
        ("claude", "claude-inline", "projects/-home-dev-inline"),
        ("codex", "codex", "sessions/2025/10/03"),
        ("codex", "codex-recorded/sessions", "sessions"),
    ] {
        for (rel, bytes) in files_under(&fixtures().join(from)) {
            if rel.extension().is_some_and(|e| e == "jsonl") {
                out.push((agent, Path::new(to).join(rel), bytes));
            }
        }
    }
    out
}

struct Home {
    tmp: std::cell::RefCell<Option<tempfile::TempDir>>,
    root: PathBuf,
}

impl Home {
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::create_dir_all(root.join("claude/projects")).unwrap();
        std::fs::create_dir_all(root.join("codex/sessions")).unwrap();
        Home {
            tmp: std::cell::RefCell::new(Some(tmp)),
            root,
        }
    }

    /// The folder, kept after the test (for a look at a failure).
    fn keep(&self) -> PathBuf {
        if let Some(t) = self.tmp.borrow_mut().take() {
            let _ = t.keep();
        }
        self.root.clone()
    }

    fn agent_root(&self, agent: &str) -> PathBuf {
        self.root.join(agent)
    }

    fn cmd(&self, agent_dir: &str, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("PI_CODING_AGENT_DIR", self.root.join(agent_dir))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("CODEX_HOME", self.root.join("codex"))
            .env("HOME", &self.root)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("SESSIONTREE_ARCHIVE");
        c
    }

    fn run(&self, agent_dir: &str, args: &[&str]) -> Output {
        self.cmd(agent_dir, args).output().unwrap()
    }

    /// `sessiontree watch` in the background, its stderr in `log`.
    fn watch(&self, extra: &[&str], log: &str) -> Child {
        // A short wait for the entries a Codex turn keeps open (30 s by default).
        let mut args = vec!["watch", "--open-quiet", "5"];
        if !extra.contains(&"--rescan") {
            args.extend(["--rescan", "2"]);
        }
        args.extend_from_slice(extra);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join(log))
            .unwrap();
        self.cmd("agent", &args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// What a one-shot import of the sources as they are now writes, in a fresh agent dir.
    fn one_shot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let dir = format!("oneshot-{}", rand_suffix());
        for agent in ["claude", "codex"] {
            let o = self.run(&dir, &["import", agent]);
            assert!(
                o.status.code() == Some(0) || o.status.code() == Some(1),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        copies(&self.root.join(&dir), &self.root.join("agent"))
    }

    fn watched(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let a = self.root.join("agent");
        copies(&a, &a)
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(name)).unwrap_or_default()
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The session files under `agent_dir/sessions`, their bytes with `agent_dir` written as
/// `as_dir` (a header's parentSession names its parent's path).
fn copies(agent_dir: &Path, as_dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let from = agent_dir.to_string_lossy().into_owned();
    let to = as_dir.to_string_lossy().into_owned();
    files_under(&agent_dir.join("sessions"))
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|(p, b)| {
            let s = String::from_utf8(b).unwrap().replace(&from, &to);
            (p, s.into_bytes())
        })
        .collect()
}

/// Waits until the watched copies are the one-shot import's, byte for byte; on timeout,
/// fails naming the first difference: per file, the first line that differs in both
/// versions, the campaign's seed (`what`), and the folder, kept for a look.
fn wait_equal(h: &Home, log: &str, timeout: Duration, what: &str) {
    let want = h.one_shot();
    assert!(!want.is_empty());
    let t = Instant::now();
    loop {
        let got = h.watched();
        if got == want {
            return;
        }
        if t.elapsed() > timeout {
            let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
            let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
            let differ: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v))
                .map(|(k, v)| {
                    let g = &got[k];
                    let (w, gl): (Vec<&[u8]>, Vec<&[u8]>) = (
                        v.split(|&b| b == b'\n').collect(),
                        g.split(|&b| b == b'\n').collect(),
                    );
                    let at = (0..w.len().max(gl.len()))
                        .find(|&i| w.get(i) != gl.get(i))
                        .unwrap_or(0);
                    let show = |l: Option<&&[u8]>| {
                        l.map_or("(no such line)".to_string(), |l| {
                            String::from_utf8_lossy(l).into_owned()
                        })
                    };
                    format!(
                        "{} (want {} bytes, got {}); first different line {} (1-based):\n  one-shot: {}\n  watched:  {}",
                        k.display(),
                        v.len(),
                        g.len(),
                        at + 1,
                        show(w.get(at)),
                        show(gl.get(at)),
                    )
                })
                .collect();
            let kept = h.keep();
            panic!(
                "{what}: copies differ from a one-shot import after {timeout:?} (folder kept: {}):\nmissing {missing:?}\nextra {extra:?}\ndiffer:\n{}\nlog:\n{}",
                kept.display(),
                differ.join("\n"),
                h.log(log)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Writes the transcripts line by line in a random order of files: some exist before,
/// the rest appear meanwhile; each write is whole lines (as the agents write them).
struct Grower {
    items: Vec<(PathBuf, Vec<Vec<u8>>, usize)>,
    /// Per transcript, the one it was forked, copied or spawned from: written whole before
    /// it starts, as the agents do (a fork's first lines come from its parent).
    parent: Vec<Option<usize>>,
    rng: xorshift::Rng,
}

fn copy_of_src(item: &(&'static str, PathBuf, Vec<u8>), h: &Home) -> String {
    h.agent_root(item.0)
        .join(&item.1)
        .to_string_lossy()
        .into_owned()
}

/// Which transcript each one's session links to (`parentSession`), as a one-shot import of
/// all of them says: index -> parent index.
fn parents(items: &[(&'static str, PathBuf, Vec<u8>)]) -> Vec<Option<usize>> {
    let h = Home::new();
    for (agent, rel, bytes) in items {
        let p = h.agent_root(agent).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let mut copy_of: BTreeMap<String, String> = BTreeMap::new();
    let mut parent_of: BTreeMap<String, String> = BTreeMap::new();
    for agent in ["claude", "codex"] {
        let o = h.run("agent", &["import", agent, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for s in v.as_array().unwrap() {
            let (Some(src), Some(path)) = (s["source"].as_str(), s["path"].as_str()) else {
                continue;
            };
            copy_of.insert(path.to_string(), src.to_string());
            // (A transcript holding its own subagents, inline, is its own parent: left out.)
            if let Some(ps) = s["parentSession"].as_str() {
                parent_of
                    .entry(src.to_string())
                    .or_insert_with(|| ps.to_string());
            }
        }
    }
    items
        .iter()
        .map(|(agent, rel, _)| {
            let src = h.agent_root(agent).join(rel).to_string_lossy().into_owned();
            let parent_src = copy_of.get(parent_of.get(&src)?)?;
            items
                .iter()
                .position(|(a, r, _)| h.agent_root(a).join(r).to_string_lossy() == *parent_src)
                .filter(|&p| {
                    h.agent_root(agent).join(rel).to_string_lossy() != *copy_of_src(&items[p], &h)
                })
        })
        .collect()
}

/// Where the burst of lines an agent writes together, started by `lines[at..end]`, ends:
/// after a Codex response's output items, through the usage line that closes the response;
/// after a Claude Code compaction boundary, through its summary.
fn burst_end(lines: &[Vec<u8>], at: usize, end: usize) -> usize {
    let parse = |l: &[u8]| serde_json::from_slice::<serde_json::Value>(l).ok();
    let Some(last) = parse(&lines[end - 1]) else {
        return end;
    };
    if last["type"] == "system" && last["subtype"] == "compact_boundary" {
        return (end + 1).min(lines.len());
    }
    let output = |v: &serde_json::Value| {
        let p = &v["payload"];
        v["type"] == "response_item"
            && (matches!(
                p["type"].as_str(),
                Some(
                    "reasoning"
                        | "function_call"
                        | "custom_tool_call"
                        | "local_shell_call"
                        | "web_search_call"
                )
            ) || (p["type"] == "message" && p["role"] == "assistant"))
    };
    if !(at..end).any(|i| parse(&lines[i]).is_some_and(|v| output(&v))) {
        return end;
    }
    let mut i = end;
    while let Some(v) = lines.get(i).and_then(|l| parse(l)) {
        let usage = v["type"] == "token_usage_record"
            || (v["type"] == "event_msg" && v["payload"]["type"] == "token_count");
        let quiet_event = v["type"] == "event_msg"
            && matches!(
                v["payload"]["type"].as_str(),
                Some("item_completed" | "item_started" | "agent_message" | "agent_reasoning")
            );
        if usage {
            return i + 1;
        }
        if !(output(&v) || quiet_event) {
            // The response ended without a usage line where it was cut: nothing to add.
            return end;
        }
        i += 1;
    }
    end
}

impl Grower {
    fn new(h: &Home, seed: u64) -> Grower {
        let all = transcripts();
        let parent = parents(&all);
        assert!(
            parent.iter().filter(|p| p.is_some()).count() >= 4,
            "{parent:?}"
        );
        let items = all
            .into_iter()
            .map(|(agent, rel, bytes)| {
                let lines: Vec<Vec<u8>> = bytes
                    .split_inclusive(|&b| b == b'\n')
                    .map(<[u8]>::to_vec)
                    .collect();
                (h.agent_root(agent).join(rel), lines, 0)
            })
            .collect();
        Grower {
            items,
            parent,
            rng: xorshift::Rng(seed),
        }
    }

    /// The first `k` lines of every other transcript, before any watch runs.
    fn head_start(&mut self) {
        for i in (0..self.items.len()).step_by(2) {
            if self.parent[i].is_some() {
                continue;
            }
            let k = 1 + self.rng.pick(self.items[i].1.len());
            for _ in 0..k {
                self.step_file(i);
            }
        }
    }

    fn step_file(&mut self, i: usize) -> bool {
        let (path, lines, at) = &mut self.items[i];
        if *at >= lines.len() {
            return false;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*path)
            .unwrap();
        // Claude Code writes the lines of one response (one `message.id`) together.
        let id = |l: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(l)
                .ok()
                .filter(|v| v["type"] == "assistant")
                .and_then(|v| v["message"]["id"].as_str().map(str::to_string))
        };
        let first = id(&lines[*at]);
        let mut end = *at + 1;
        while first.is_some() && end < lines.len() && id(&lines[end]) == first {
            end += 1;
        }
        f.write_all(&lines[*at..end].concat()).unwrap();
        // Codex writes a response's items and the usage that ends them within milliseconds
        // (a usage record, or in older releases the `token_count` right after them), and
        // Claude Code a compaction's boundary with its summary: the rest of such a burst
        // follows at once, in its own write (a watch may still look in between). A writer
        // pausing inside one for longer than `--open-quiet` is taken as gone.
        let burst = burst_end(lines, *at, end);
        if burst > end {
            f.write_all(&lines[end..burst].concat()).unwrap();
        }
        *at = burst;
        true
    }

    /// One to three lines of a random unfinished transcript; false when all are written.
    fn step(&mut self) -> bool {
        let done = |i: usize| self.items[i].2 >= self.items[i].1.len();
        let open: Vec<usize> = (0..self.items.len())
            .filter(|&i| !done(i) && self.parent[i].is_none_or(done))
            .collect();
        if open.is_empty() {
            assert!(
                (0..self.items.len()).all(done),
                "transcripts left unwritten: {:?}",
                self.parent
            );
            return false;
        }
        let i = open[self.rng.pick(open.len())];
        for _ in 0..1 + self.rng.pick(3) {
            self.step_file(i);
        }
        true
    }
}

#[test]
fn growing_and_new_transcripts_end_as_a_one_shot_import_and_copies_outlive_sources() {
    let h = Home::new();
    let mut g = Grower::new(&h, 0x5eed_0001);
    g.head_start();
    let mut w = h.watch(&[], "watch.log");
    while g.step() {
        std::thread::sleep(Duration::from_millis(g.rng.below(25)));
    }
    wait_equal(&h, "watch.log", Duration::from_secs(60), "growing");
    let log = h.log("watch.log");
    assert!(log.contains("caught up:"), "{log}");
    assert!(log.contains("appended "), "{log}");

    // A source deleted by its agent: the copy stays as it was, the log says so, and a
    // restarted watch (catching up without it) leaves it alone too.
    let before = h.watched();
    let gone = h
        .agent_root("claude")
        .join("projects/-home-dev-inline/4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07.jsonl");
    std::fs::remove_file(&gone).unwrap();
    let t = Instant::now();
    while !h.log("watch.log").contains("source gone: ") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        h.log("watch.log").contains("source gone: "),
        "{}",
        h.log("watch.log")
    );
    kill(&mut w);
    let mut w = h.watch(&[], "watch2.log");
    let t = Instant::now();
    while !h.log("watch2.log").contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    kill(&mut w);
    assert_eq!(
        h.watched(),
        before,
        "a copy changed after its source was deleted"
    );

    // `ls` says which copies outlived their source.
    let o = h.run("agent", &["ls", "--all", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let gone_ones: Vec<&serde_json::Value> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("sourceGone") == Some(&serde_json::Value::Bool(true)))
        .collect();
    // The transcript held a subagent inline: two sessions came from it, both marked.
    assert_eq!(gone_ones.len(), 2, "{v:#}");
    assert!(
        gone_ones
            .iter()
            .any(|s| s["id"] == "4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07"),
        "{v:#}"
    );
    let o = h.run("agent", &["ls", "--all"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches("(source gone)").count(), 2, "{text}");
}

#[test]
fn kill_9_at_random_points_then_restart_misses_nothing_and_duplicates_nothing() {
    let kills: usize = env::env_or("SESSIONTREE_WATCH_KILLS", 10);
    // `SESSIONTREE_WATCH_SEED` replays a campaign's choices (which transcript grows, when
    // the kill comes); the timing of the watch itself still varies from run to run.
    let seed: u64 = env::env_or("SESSIONTREE_WATCH_SEED", 0x5eed_0002);
    let what = format!("{kills} kills, SESSIONTREE_WATCH_SEED={seed}");
    eprintln!("kill campaign: {what}");
    let h = Home::new();
    let mut g = Grower::new(&h, seed.max(1));
    g.head_start();
    let mut rng = xorshift::Rng((seed ^ 0x0001_0001_0001_0001).max(1));
    // The writing is spread over all the kills (a step writes two lines on average).
    let lines: usize = g.items.iter().map(|i| i.1.len()).sum();
    let per_kill = (lines / (2 * kills.max(1))).max(1);
    for k in 0..kills {
        let mut w = h.watch(&[], "kills.log");
        let until = Instant::now() + Duration::from_millis(50 + rng.below(600));
        // The agents keep writing while the watch runs, is killed, and is down.
        let mut steps = 0;
        while Instant::now() < until {
            if steps < per_kill {
                if !g.step() {
                    break;
                }
                steps += 1;
            }
            std::thread::sleep(Duration::from_millis(rng.below(15)));
        }
        kill(&mut w);
        if k % 3 == 0 {
            for _ in 0..rng.pick(6) {
                g.step();
            }
        }
    }
    while g.step() {}
    let mut w = h.watch(&[], "kills.log");
    wait_equal(&h, "kills.log", Duration::from_secs(60), &what);
    kill(&mut w);
    // The index-free listing reads every copy: no duplicate ids anywhere.
    for (p, bytes) in h.watched() {
        let mut ids = std::collections::HashSet::new();
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            if let Some(id) = v.get("id").and_then(|i| i.as_str()) {
                assert!(ids.insert(id.to_string()), "{}: {id} twice", p.display());
            }
        }
    }
}

#[test]
fn a_second_watch_on_the_same_agent_dir_refuses_naming_the_first() {
    let h = Home::new();
    let mut w = h.watch(&[], "one.log");
    let t = Instant::now();
    while !h.log("one.log").contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = h.run("agent", &["watch"]);
    kill(&mut w);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("another watch is running") && err.contains(&format!("process {}", w.id())),
        "{err}"
    );
    // Once it is gone (killed: the kernel let go of its lock), a new one starts.
    let mut w2 = h.watch(&[], "two.log");
    let t = Instant::now();
    while !h.log("two.log").contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&mut w2);
    assert!(
        h.log("two.log").contains("caught up:"),
        "{}",
        h.log("two.log")
    );
}

#[test]
fn polling_alone_finds_changes_and_leaving_an_agent_out_ignores_it() {
    let h = Home::new();
    let mut g = Grower::new(&h, 0x5eed_0004);
    while g.step() {}
    // Codex left out: only Claude Code's sessions are copied; no inotify at all.
    let mut w = h.watch(&["--poll", "--rescan", "0.3", "--no-codex"], "poll.log");
    let t = Instant::now();
    while !h.log("poll.log").contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let extra = h
        .agent_root("claude")
        .join("projects/-home-dev-new/11111111-2222-4333-8444-555555555555.jsonl");
    std::fs::create_dir_all(extra.parent().unwrap()).unwrap();
    let src =
        std::fs::read(fixtures().join("claude-inline/4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07.jsonl"))
            .unwrap();
    let text = String::from_utf8(src).unwrap().replace(
        "4e7b1c2d-8a3f-4b6e-9d1c-2f3a4b5c6d07",
        "11111111-2222-4333-8444-555555555555",
    );
    std::fs::write(&extra, text).unwrap();
    let t = Instant::now();
    let found = loop {
        let got = h.watched();
        if got.keys().any(|k| {
            k.to_string_lossy()
                .contains("11111111-2222-4333-8444-555555555555")
        }) {
            break true;
        }
        if t.elapsed() > Duration::from_secs(20) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    kill(&mut w);
    let log = h.log("poll.log");
    assert!(found, "{log}");
    assert!(log.contains("polling "), "{log}");
    assert!(!log.contains("(codex)"), "{log}");
    let got = h.watched();
    assert!(
        got.keys().all(|k| {
            let k = k.to_string_lossy();
            !k.contains("0199a5b2") && !k.contains("01a22")
        }),
        "{:?}",
        got.keys()
    );
}

/// A large Pi session written under a watch has its context kept ahead once it settles:
/// the first `context` after the agent's turn reads only the context's own lines (what is
/// kept is current for the file as it is) and says what a whole read says; after the next
/// turn's entries, what is kept follows them. A large session written before the watch
/// started is kept ahead when it starts.
#[test]
fn a_large_session_written_under_a_watch_has_its_context_kept_ahead() {
    use sessiontree::session::kept;
    use sessiontree_testkit::gen;
    let h = Home::new();
    let agent = h.root.join("agent");
    let folder = agent.join("sessions").join("--work-proj--");
    std::fs::create_dir_all(&folder).unwrap();
    let large = |seed: u64| {
        let mut bytes = Vec::new();
        let shape = gen::Shape {
            entries: 1_800,
            target_bytes: 5_200,
            seed,
        };
        gen::generate(&shape, &mut bytes).unwrap();
        assert!(bytes.len() as u64 > kept::KEEP_MIN);
        bytes
    };
    let before = folder.join("2026-12-07T09-00-00-000Z_before.jsonl");
    std::fs::write(&before, large(9)).unwrap();
    std::thread::sleep(kept::SETTLE + Duration::from_millis(1100));
    let keep = agent.join(kept::DIR_NAME);
    assert!(!kept::is_current(&before, &keep));
    let mut w = h.watch(&[], "ahead.log");
    let t = Instant::now();
    while !h.log("ahead.log").contains("caught up:") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let bytes = large(8);
    // Written a few entries at a time, as an agent writes.
    let file = folder.join("2026-12-07T10-00-00-000Z_ahead.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .unwrap();
    for chunk in bytes
        .split_inclusive(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .chunks(200)
    {
        f.write_all(&chunk.concat()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let current_of = |file: &Path, what: &str, w: &mut Child| {
        let t = Instant::now();
        while !kept::is_current(file, &keep) {
            if t.elapsed() > Duration::from_secs(30) {
                kill(w);
                panic!("{what}: not kept ahead\n{}", h.log("ahead.log"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let current = |what: &str, w: &mut Child| current_of(&file, what, w);
    current_of(&before, "written before the watch started", &mut w);
    let context = |whole: bool| {
        let mut c = h.cmd("agent", &["context", file.to_str().unwrap(), "--json"]);
        if whole {
            c.env("SESSIONTREE_NO_KEPT_CONTEXT", "1");
        }
        sessiontree_testkit::run::ok(c.output().unwrap())
    };
    current("written", &mut w);
    assert_eq!(context(false), context(true), "written");

    let l = sessiontree::load(&file).unwrap();
    let leaf = l.tree.leaf_id().unwrap().to_string();
    assert_eq!(l.tree.entries().last().unwrap().id(), Some(leaf.as_str()));
    f.write_all(
        format!(
            "{{\"type\":\"custom\",\"customType\":\"turn\",\"id\":\"a1b2c3d4\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-12-07T10:30:00.000Z\"}}\n"
        )
        .as_bytes(),
    )
    .unwrap();
    current("after the next turn", &mut w);
    assert_eq!(context(false), context(true), "after the next turn");
    kill(&mut w);
}
