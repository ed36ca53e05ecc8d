//! `sessiontree serve` in headless Chromium: the list, search as you type, opening a
//! session, an abandoned branch's entry and its context, the live update, a hostile
//! session, the Host check and the token, and (with PostgreSQL) an archive's copies in the
//! list with the machine filter (`export-tests/serve.mjs` drives the browser).
//!
//! Needs /usr/bin/chromium and `export-tests/node_modules` (`cd export-tests && npm ci`).
//! Without them it says so and passes, unless `SESSIONTREE_REQUIRE_BROWSER=1`, where it
//! fails. `SESSIONTREE_UPDATE_SCREENSHOT=1` also renders docs/serve-*.png.

use serde_json::{json, Value};
use sessiontree_testkit::browser;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sessiontree")
}

/// A running `sessiontree serve`; killed on drop.
struct Serve {
    child: Child,
    base: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(agent: &Path, args: &[&str]) -> Serve {
    let mut child = Command::new(bin())
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("PI_CODING_AGENT_DIR", agent)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run sessiontree serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "sessiontree: serving DIR at http://127.0.0.1:PORT/"
    let url = line
        .trim()
        .rsplit(" at ")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    Serve { child, base: url }
}

fn set_mtime(p: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}

fn line(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

const EVIL: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">";

fn ids(path: &[&sessiontree::Entry]) -> Vec<String> {
    path.iter().map(|e| e.id().unwrap().to_string()).collect()
}

#[test]
fn serve_in_headless_chromium() {
    let Some(b) = browser::find() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let folder = agent.join("sessions").join("--home-me-demo--");
    std::fs::create_dir_all(&folder).unwrap();
    // The example session (branches, labels, a compaction, a hostile message) ...
    let example = folder.join("example.jsonl");
    std::fs::copy(root().join("export-tests/example.jsonl"), &example).unwrap();
    set_mtime(&example, 1_700_000_000);
    // ... a hostile one (markup in the name, a message, a label, the cwd) ...
    let hostile_id = "0194262a-0000-7000-8000-0000000000ee";
    let hostile = folder.join("hostile.jsonl");
    let mut h = line(
        json!({"type":"session","version":3,"id":hostile_id,"timestamp":"2025-01-03T10:00:00.000Z","cwd":EVIL}),
    );
    h += &line(
        json!({"type":"message","id":"h1","parentId":null,"timestamp":"2025-01-03T10:00:01.000Z","message":{"role":"user","content":format!("pwned? {EVIL}"),"timestamp":1735898401000u64}}),
    );
    h += &line(
        json!({"type":"label","id":"h2","parentId":"h1","timestamp":"2025-01-03T10:00:02.000Z","targetId":"h1","label":EVIL}),
    );
    h += &line(
        json!({"type":"session_info","id":"h3","parentId":"h2","timestamp":"2025-01-03T10:00:03.000Z","name":format!("pwned {EVIL}")}),
    );
    std::fs::write(&hostile, h).unwrap();
    set_mtime(&hostile, 1_700_100_000);
    // ... and one that is being written (the newest).
    let live_id = "0194262a-0000-7000-8000-0000000000aa";
    let live = folder.join("live.jsonl");
    let mut l = line(
        json!({"type":"session","version":3,"id":live_id,"timestamp":"2025-01-04T10:00:00.000Z","cwd":"/home/me/live"}),
    );
    l += &line(
        json!({"type":"message","id":"v1","parentId":null,"timestamp":"2025-01-04T10:00:01.000Z","message":{"role":"user","content":"start of a live session","timestamp":1735984801000u64}}),
    );
    std::fs::write(&live, l).unwrap();
    set_mtime(&live, 1_700_200_000);

    let example_id = "0194262a-0000-7000-8000-00000000d3e0";
    let loaded = sessiontree::load(&example).unwrap();
    let t = &loaded.tree;
    let ctx = sessiontree::build_context(t, sessiontree::LeafArg::Id("b1"));
    let roles: Vec<String> = ctx.messages.iter().map(|m| m.role().unwrap()).collect();
    assert!(!on_leaf_path(t, "b1"));

    let srv = serve(&agent, &[]);
    // With PostgreSQL: an archive holding one session of alice's laptop, and a server
    // reading it beside the same local sessions.
    let cluster =
        sessiontree_testkit::pg::Cluster::start("serve_in_headless_chromium (archive step)");
    let archived_id = "0194262a-0000-7000-8000-0000000000ac";
    let archive_srv = cluster.as_ref().map(|c| {
        c.setup_roles();
        let url = c.url("alice", "archive");
        let laptop = tmp.path().join("laptop");
        let lf = laptop.join("sessions").join("--home-me-far--");
        std::fs::create_dir_all(&lf).unwrap();
        let mut a = line(
            json!({"type":"session","version":3,"id":archived_id,"timestamp":"2025-01-05T10:00:00.000Z","cwd":"/home/me/far"}),
        );
        a += &line(
            json!({"type":"message","id":"f1","parentId":null,"timestamp":"2025-01-05T10:00:01.000Z","message":{"role":"user","content":"from the laptop","timestamp":1736071201000u64}}),
        );
        std::fs::write(lf.join(format!("{archived_id}.jsonl")), a).unwrap();
        let o = Command::new(bin())
            .args(["push", "--archive", &url, "--machine", "laptop"])
            .env("PI_CODING_AGENT_DIR", &laptop)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serve(&agent, &["--archive", &url])
    });
    let token = "browser-test-token-0123456789";
    let tsrv = serve(&agent, &["--token", token]);
    let port: u16 = srv.base.rsplit(':').next().unwrap().parse().unwrap();
    let expect = json!({
        "base": srv.base,
        "port": port,
        "sessions": [live_id, hostile_id, example_id],
        // In the example's POSIX reminder and nowhere else.
        "search": {"term": "posix", "ids": [example_id]},
        "open": {"id": example_id, "rows": t.entries().len(), "leaf": t.leaf_id().unwrap(),
                 "branch": ids(&t.get_branch(None))},
        "abandoned": {"entry": "b1", "roles": roles},
        "live": {"id": live_id, "bin": bin(), "file": live,
                 "entry": json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"LIVE-APPENDED-7f3a"}],"timestamp":1735984802000u64}}).to_string(),
                 "text": "LIVE-APPENDED-7f3a"},
        "hostile": {"id": hostile_id, "entry": "h1", "text": "<script>window.__pwned=1</script>"},
        "token": {"base": tsrv.base, "token": token, "id": example_id},
    });
    let mut expect = expect;
    if let Some(a) = &archive_srv {
        expect["archive"] = json!({"base": a.base, "rows": [[archived_id, "alice", "laptop"]]});
    }
    let expect_path = tmp.path().join("expect.json");
    std::fs::write(&expect_path, expect.to_string()).unwrap();
    let stdout = b.run(
        "browser checks",
        &["serve.mjs", "--expect", expect_path.to_str().unwrap()],
    );
    let r: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(r["failures"], json!([]));
    if archive_srv.is_some() {
        assert!(
            r["archiveRows"].is_array(),
            "the archive step did not run: {r}"
        );
    }
    eprintln!(
        "serve in chromium: list {} ms, search as you type {} ms, live update {} ms",
        r["listMs"], r["searchMs"], r["liveMs"]
    );
    if std::env::var("SESSIONTREE_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        let docs = root().join("docs");
        b.run(
            "the screenshots",
            &[
                "serve.mjs",
                "--shots",
                docs.to_str().unwrap(),
                "--base",
                &srv.base,
                "--session",
                example_id,
                "--entry",
                "b1",
            ],
        );
    }
}

/// Whether `id` is on the path to the session's leaf.
fn on_leaf_path(t: &sessiontree::SessionTree, id: &str) -> bool {
    t.get_branch(None).iter().any(|e| e.id() == Some(id))
}
