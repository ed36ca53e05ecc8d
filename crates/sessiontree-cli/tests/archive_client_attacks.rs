//! The commands' side of what a value from the archive may do (see
//! crates/sessiontree-archive/tests/client_attacks.rs for the library's): `stats --archive`
//! and `export --archive` write the sessions they read into private temporary folders,
//! under names checked first, never over a file elsewhere; `sync --watch` says when its
//! password shows in the process list.

use sessiontree_testkit::pg::{self, Cluster};
use std::path::Path;
use std::process::Command;

fn st(agent: &Path, tmp: &Path) -> Command {
    let mut c = sessiontree_testkit::run::command(env!("CARGO_BIN_EXE_sessiontree"), agent);
    c.env("TMPDIR", tmp);
    c
}

fn session_text(id: &str, text: &str) -> String {
    format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":\"2025-05-01T10:00:00.000Z\",\"cwd\":\"/w\"}}\n\
         {{\"type\":\"message\",\"id\":\"e0000001\",\"parentId\":null,\"timestamp\":\"2025-05-01T10:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":{},\"timestamp\":1746093601000}}}}\n",
        serde_json::json!(id),
        serde_json::json!(text)
    )
}

/// bob, with plain psql: a session of his own under `id`, shared with alice.
fn forge(c: &Cluster, id: &str, rel: &str, text: &str) {
    let data = session_text(id, text);
    let sql = pg::forged_session_sql(id, rel, data.as_bytes(), data.len() as i64, "alice");
    c.psql("bob", "archive", &sql).unwrap();
}

/// A shared session whose id is an absolute path (or climbs out) made `stats --archive`
/// write over the file it names; its rel_path named the file of `export --archive`. Now the
/// victim's file stays as it was, nothing appears beside it, and the temporary folders
/// are gone after the command. An id of hers that bob also pushed exports as hers.
#[test]
fn archive_ids_never_name_a_file_outside_the_private_temp_folder() {
    let Some(c) = pg::archive() else { return };
    let (agent, tmp) = (c.path("agent"), c.path("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let mine = "0195aaaa-0000-7000-8000-000000000002";
    let folder = agent.join("sessions/--w--");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join(format!("2025-05-01T10-00-00-000Z_{mine}.jsonl")),
        session_text(mine, "alice wrote this"),
    )
    .unwrap();
    let o = st(&agent, &tmp)
        .args(["push", "--archive", &c.url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let victim = c.path("victim.jsonl");
    std::fs::write(&victim, "the victim's own file\n").unwrap();
    let abs = c.path("victim").display().to_string();
    forge(&c, &abs, "x", "hi");
    forge(&c, "../../escaped", "../../escaped.jsonl", "hi");
    let good = "0195aaaa-0000-7000-8000-000000000001";
    let named = format!("/{}/named-by-rel.jsonl", c.tmp().display());
    forge(&c, good, &named, "hi");
    // bob's session under alice's id, newer than hers.
    forge(&c, mine, "x", "bob wrote this");

    let o = st(&agent, &tmp)
        .args(["stats", "--archive", &c.url, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the victim's own file\n"
    );
    // 1: read, but no usage recorded in them.
    sessiontree_testkit::run::exit(&o, 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("5 sessions read"));
    let o = st(&agent, &tmp)
        .args(["export", good, "--archive", &c.url, "--format", "md"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Her id exported is her session, not bob's of the same id.
    let o = st(&agent, &tmp)
        .args(["export", mine, "--archive", &c.url, "--format", "md"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("alice wrote this") && !md.contains("bob wrote"),
        "{md}"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the victim's own file\n"
    );
    let mut beside: Vec<String> = std::fs::read_dir(c.tmp())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    beside.sort();
    assert_eq!(beside, ["agent", "tmp", "victim.jsonl"]);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temp left");
}

/// `sync --watch` runs for days: a password in `--archive` is visible in the process list
/// all that time, which it says (before it even connects).
#[test]
fn sync_watch_warns_of_a_password_on_the_command_line() {
    let t = tempfile::tempdir().unwrap();
    let o = st(t.path(), t.path())
        .args([
            "sync",
            "--watch",
            "--archive",
            "postgresql://me:hunter2@127.0.0.1:1/db?connect_timeout=1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("visible in the process list"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    let o = st(t.path(), t.path())
        .env("PGPASSWORD", "hunter2")
        .args([
            "sync",
            "--watch",
            "--archive",
            "postgresql://me@127.0.0.1:1/db?connect_timeout=1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("process list"), "{err}");
}
