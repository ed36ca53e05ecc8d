//! The commands' side of what a value from the archive may do (see
//! crates/sessiontree-archive/tests/client_attacks.rs for the library's): `stats --archive`
//! and `export --archive` write the sessions they read into private temporary folders,
//! under names checked first, never over a file elsewhere; `sync --watch` says when its
//! password shows in the process list.

#[path = "../../sessiontree-archive/tests/common/mod.rs"]
mod pg;

use pg::Cluster;
use std::path::Path;
use std::process::Command;

fn st(agent: &Path, tmp: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sessiontree"));
    c.env("PI_CODING_AGENT_DIR", agent)
        .env("TMPDIR", tmp)
        .env_remove("SESSIONTREE_ARCHIVE")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env("NO_COLOR", "1");
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
    let h: String = data.bytes().map(|b| format!("{b:02x}")).collect();
    let mine = format!("owner = current_user AND session_id = $q${id}$q$");
    let sql = format!(
        "INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ($q${id}$q$, '/w');
         INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
             SELECT pk, gen_random_uuid(), $q${rel}$q$ FROM sessiontree.sessions WHERE {mine};
         INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
             SELECT c.pk, c.session_pk, 1, {n}, sha256(decode('{h}', 'hex')), {n}
             FROM sessiontree.copies c JOIN sessiontree.sessions s ON s.pk = c.session_pk
             WHERE s.{mine};
         INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
             SELECT v.pk, v.session_pk, 0, decode('{h}', 'hex')
             FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
             WHERE s.{mine};
         INSERT INTO sessiontree.shares (session_pk, grantee)
             SELECT pk, 'alice' FROM sessiontree.sessions WHERE {mine};",
        n = data.len()
    );
    c.psql("bob", "archive", &sql).unwrap();
}

/// A shared session whose id is an absolute path (or climbs out) made `stats --archive`
/// write over the file it names; its rel_path named the file of `export --archive`. Now the
/// victim's file stays as it was, nothing appears beside it, and the temporary folders
/// are gone after the command. An id of hers that bob also pushed exports as hers.
#[test]
fn archive_ids_never_name_a_file_outside_the_private_temp_folder() {
    let Some(c) = Cluster::start("archive_ids_never_name_a_file_outside") else {
        return;
    };
    c.setup_roles();
    let t = tempfile::tempdir().unwrap();
    let (agent, tmp) = (t.path().join("agent"), t.path().join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let url = c.url("alice", "archive");
    let mine = "0195aaaa-0000-7000-8000-000000000002";
    let folder = agent.join("sessions/--w--");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join(format!("2025-05-01T10-00-00-000Z_{mine}.jsonl")),
        session_text(mine, "alice wrote this"),
    )
    .unwrap();
    let o = st(&agent, &tmp)
        .args(["push", "--archive", &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let victim = t.path().join("victim.jsonl");
    std::fs::write(&victim, "the victim's own file\n").unwrap();
    let abs = t.path().join("victim").display().to_string();
    forge(&c, &abs, "x", "hi");
    forge(&c, "../../escaped", "../../escaped.jsonl", "hi");
    let good = "0195aaaa-0000-7000-8000-000000000001";
    let named = format!("/{}/named-by-rel.jsonl", t.path().display());
    forge(&c, good, &named, "hi");
    // bob's session under alice's id, newer than hers.
    forge(&c, mine, "x", "bob wrote this");

    let o = st(&agent, &tmp)
        .args(["stats", "--archive", &url, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the victim's own file\n"
    );
    // 1: read, but no usage recorded in them.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("5 sessions read"));
    let o = st(&agent, &tmp)
        .args(["export", good, "--archive", &url, "--format", "md"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Her id exported is her session, not bob's of the same id.
    let o = st(&agent, &tmp)
        .args(["export", mine, "--archive", &url, "--format", "md"])
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
    let mut beside: Vec<String> = std::fs::read_dir(t.path())
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
