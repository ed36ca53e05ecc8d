//! `push --redact-secrets` and `share`'s refusal, against a PostgreSQL cluster the test
//! starts (`sessiontree_testkit::pg`): what the archive holds after a
//! redacted push has no credential left, and a session whose archived copy holds one is
//! only shared with --allow-secrets.

use serde_json::Value;
use sessiontree_testkit::creds;
use sessiontree_testkit::pg::{self, Cluster};
use sessiontree_testkit::run::ok;
use std::path::{Path, PathBuf};
use std::process::Command;

fn st(agent: &Path) -> Command {
    sessiontree_testkit::run::command(env!("CARGO_BIN_EXE_sessiontree"), agent)
}

const ID: &str = "0195aaaa-0000-7000-8000-00000000beef";

/// A session under `agent` with every true positive, one entry each; the secrets.
fn leaky(agent: &Path) -> (PathBuf, Vec<String>) {
    let dir = agent.join("sessions/--work-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = format!(
        r#"{{"type":"session","version":3,"id":"{ID}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/proj"}}"#
    );
    text.push('\n');
    let mut secrets = Vec::new();
    let mut parent = Value::Null;
    for (i, (_, t, secret)) in creds::true_positives().into_iter().enumerate() {
        let (line, _) = creds::fields(&t).swap_remove(i % 9);
        let mut v: Value = serde_json::from_str(&line).unwrap();
        let id = format!("e{i:07x}");
        v["id"] = Value::String(id.clone());
        v["parentId"] = parent;
        parent = Value::String(id);
        text.push_str(&serde_json::to_string(&v).unwrap());
        text.push('\n');
        secrets.push(secret);
    }
    let f = dir.join(format!("2026-01-01T00-00-00-000Z_{ID}.jsonl"));
    std::fs::write(&f, text).unwrap();
    (f, secrets)
}

#[test]
fn redacted_push_leaves_no_credential_and_share_refuses_an_exact_one() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    let (f, secrets) = leaky(&a);
    // Exact by default: the archive holds the credentials, so share refuses.
    ok(st(&a).args(["push", "--archive", &c.url]).output().unwrap());
    let o = st(&a)
        .args(["share", ID, "--with", "team", "--archive", &c.url])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("credential") && err.contains("e0000000 (private-key"),
        "{err}"
    );
    assert!(
        err.contains("--allow-secrets") && err.lines().count() == 1,
        "{err}"
    );
    for s in &secrets {
        assert!(!err.contains(s.as_str()));
    }
    let shares = |c: &Cluster| {
        c.number(
            "alice",
            "archive",
            "SELECT count(*) FROM sessiontree.shares",
        )
    };
    // `share ID --with team` with more arguments.
    let share = |more: &[&str]| {
        let mut cmd = st(&a);
        cmd.args(["share", ID, "--with", "team", "--archive", &c.url])
            .args(more);
        ok(cmd.output().unwrap())
    };
    assert_eq!(shares(&c), Some(0));
    // --allow-secrets shares anyway; revoke.
    share(&["--allow-secrets"]);
    assert_eq!(shares(&c), Some(1));
    share(&["--revoke"]);
    // Pushed redacted: a new version without any credential, and share goes through.
    let r: Value = serde_json::from_str(&ok(st(&a)
        .args(["push", "--redact-secrets", "--archive", &c.url, "--json"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(r["newVersions"], 1, "{r}");
    let stored = c
        .psql(
            "alice",
            "archive",
            "SELECT string_agg(convert_from(k.data, 'UTF8'), '' ORDER BY k.off)
             FROM sessiontree.chunks k
             WHERE k.version_pk = (SELECT max(pk) FROM sessiontree.versions)",
        )
        .unwrap();
    assert!(stored.contains("[REDACTED:private-key]"), "{stored}");
    for s in &secrets {
        assert!(!stored.contains(s.as_str()), "{s} in the archive");
    }
    share(&[]);
    assert_eq!(shares(&c), Some(1));
    // What another machine pulls is the redacted session: every line parses, ids kept.
    let b = c.path("b");
    std::fs::create_dir_all(&b).unwrap();
    ok(st(&b).args(["pull", "--archive", &c.url]).output().unwrap());
    let pulled = std::fs::read_to_string(
        b.join("sessions/--work-proj--")
            .join(f.file_name().unwrap()),
    )
    .unwrap();
    let local = std::fs::read_to_string(&f).unwrap();
    assert_eq!(pulled.lines().count(), local.lines().count());
    for (x, y) in pulled.lines().zip(local.lines()) {
        let (vx, vy): (Value, Value) = (
            serde_json::from_str(x).unwrap(),
            serde_json::from_str(y).unwrap(),
        );
        assert_eq!(vx["id"], vy["id"]);
        assert_eq!(vx["parentId"], vy["parentId"]);
    }
    let p = b
        .join("sessions/--work-proj--")
        .join(f.file_name().unwrap());
    assert_eq!(
        st(&b)
            .args(["secrets", p.to_str().unwrap()])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    // The local file stays as it was.
    assert!(secrets.iter().all(|s| local.contains(s.as_str())));
}
