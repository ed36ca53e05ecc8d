//! `sessiontree watch` following OpenCode's database: what OpenCode commits (into its WAL,
//! as it runs) ends as a one-shot `import opencode` of the database would write it.

use rusqlite::Connection;
use sessiontree_testkit::home::{copies, kill, Home};
use sessiontree_testkit::opencode::LAST_USER_MESSAGE;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sessiontree");
const MAIN: &str = "ses_dce73b1eeffenoobMrgAxGFH3S";

fn fixture_db() -> PathBuf {
    sessiontree_testkit::home::import_fixtures().join("opencode-recorded/opencode.db")
}

#[test]
fn watching_opencode_follows_what_it_commits_to_its_wal() {
    let h = Home::new(BIN);
    let root = h.root.as_path();
    let data = root.join("xdg/opencode");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("opencode.db");
    std::fs::copy(fixture_db(), &db).unwrap();
    // OpenCode's database as it was before the main session's last turn, in WAL mode.
    let c = Connection::open(&db).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let last_user: String = c
        .query_row(LAST_USER_MESSAGE, [MAIN], |r| r.get(0))
        .unwrap();
    c.execute_batch(&format!(
        "CREATE TEMP TABLE m AS SELECT * FROM message WHERE session_id = '{MAIN}' AND id >= '{last_user}';
         CREATE TEMP TABLE p AS SELECT * FROM part WHERE session_id = '{MAIN}' AND message_id >= '{last_user}';
         DELETE FROM part WHERE id IN (SELECT id FROM p);
         DELETE FROM message WHERE id IN (SELECT id FROM m);
         PRAGMA wal_checkpoint(TRUNCATE);
         PRAGMA wal_autocheckpoint=0;"
    ))
    .unwrap();
    let mut w = h.watch_caught_up("--no-claude --no-codex --rescan 1 --open-quiet 1");
    let read_log = || h.watch_log();
    // Past every hold of the catch-up (the database was just written): from here on only
    // a change the watch sees brings the new turn.
    std::thread::sleep(Duration::from_secs(3));
    let before = copies(&root.join("agent"));
    assert_eq!(before.len(), 4, "{}", read_log());
    // OpenCode goes on: the turn committed into the WAL (not checkpointed).
    c.execute_batch("INSERT INTO message SELECT * FROM m; INSERT INTO part SELECT * FROM p;")
        .unwrap();
    assert!(
        std::fs::metadata(data.join("opencode.db-wal"))
            .unwrap()
            .len()
            > 0
    );
    let one_shot = |dir: &str| {
        let o = h.cmd_in(dir, &["import", "opencode"]).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        copies(&root.join(dir))
    };
    let want = one_shot("oneshot");
    // Every entry a one-shot import writes, and the same context at the leaf (a copy
    // written in steps also keeps the title entries of its earlier leaves: an entry, once
    // written, keeps its parent).
    let same = |got: &[(String, String)]| {
        got.len() == want.len()
            && got.iter().zip(&want).all(|((gn, g), (wn, w))| {
                gn == wn
                    && w.lines().all(|l| g.lines().any(|x| x == l))
                    && context(&root.join("agent"), gn) == context(&root.join("oneshot"), wn)
            })
    };
    let t = Instant::now();
    let got = loop {
        let got = copies(&root.join("agent"));
        if same(&got) || t.elapsed() > Duration::from_secs(15) {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    kill(&mut w);
    let log = read_log();
    assert!(log.contains("(opencode)"), "{log}");
    assert!(same(&got), "{log}");
    // The main session's file grew by appending.
    let main = |v: &[(String, String)]| v.iter().find(|(n, _)| n.contains(MAIN)).unwrap().1.clone();
    assert!(main(&got).starts_with(&main(&before)));
    assert!(main(&got).len() > main(&before).len());
    assert!(main(&got).contains("After compacting, RUN again"));
}

/// `sessiontree context --json` of a session file of `agent_dir`.
fn context(agent_dir: &Path, name: &str) -> String {
    let p = agent_dir.join("sessions/--home-dev-demo--").join(name);
    let o = Command::new(BIN)
        .args(["context", p.to_str().unwrap(), "--json"])
        .env("PI_CODING_AGENT_DIR", agent_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}
