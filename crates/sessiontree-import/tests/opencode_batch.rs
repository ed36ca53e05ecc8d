//! OpenCode's database through the batch driver (what `sessiontree import opencode` and
//! `watch` run): forks linked to their parent by content, subagents by `parent_id`; the
//! database read while OpenCode writes it (WAL) and never written; a session that grew
//! completed by appending; a row that cannot be read reported, the rest imported.

use rusqlite::Connection;
use sessiontree_import::batch::{self, Options};
use sessiontree_import::{Agent, Status};
use sessiontree_testkit::opencode::LAST_USER_MESSAGE;
use std::path::{Path, PathBuf};

fn fixture_db() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode-recorded/opencode.db")
}

const MAIN: &str = "ses_dce73b1eeffenoobMrgAxGFH3S";
const FORK: &str = "ses_dce73701effehwJRy2ZaCq6PGV";
const CHILD: &str = "ses_dce738c9cffeQloytBLdRJDzn5";

fn import(db: &Path, out: &Path) -> batch::Report {
    batch::import_files(
        Agent::OpenCode,
        &[db.to_path_buf()],
        Options {
            session_dir: Some(out),
            ..Default::default()
        },
    )
}

fn done<'a>(r: &'a batch::Report, id: &str) -> &'a batch::Done {
    r.done
        .iter()
        .find(|d| d.conv.session_id == id)
        .unwrap_or_else(|| panic!("{id} not imported"))
}

fn path_of(r: &batch::Report, id: &str) -> PathBuf {
    done(r, id).result.as_ref().unwrap().path.clone()
}

fn entries(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn opencode_forks_and_subagents_are_linked() {
    let tmp = tempfile::tempdir().unwrap();
    let r = import(&fixture_db(), tmp.path());
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.done.len(), 4);
    let main = path_of(&r, MAIN);
    let parent = |id: &str| {
        sessiontree::load(&path_of(&r, id))
            .unwrap()
            .tree
            .header()
            .parent_session()
    };
    // The subagent names its parent; the fork, which OpenCode does not link, is linked by
    // the messages it copied.
    assert_eq!(parent(CHILD).as_deref(), main.to_str());
    assert_eq!(parent(FORK).as_deref(), main.to_str());
    assert_eq!(parent(MAIN), None);
    assert_eq!(done(&r, FORK).conv.kind, "main");
    assert!(done(&r, FORK).conv.copied);
    // The copies have the ids of what they copy: the fork's first three entries (the
    // first turn) are the main session's.
    let ids = |p: &Path| -> Vec<String> {
        entries(p)[1..]
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (m, f) = (ids(&main), ids(&path_of(&r, FORK)));
    assert_eq!(f[..4], m[..4]);
    assert!(!m.contains(&f[4]));
    // Importing again writes nothing.
    let again = import(&fixture_db(), tmp.path());
    for d in &again.done {
        assert_eq!(d.result.as_ref().unwrap().status, Status::Unchanged);
    }
}

fn copy_db(to: &Path) -> PathBuf {
    let p = to.join("opencode.db");
    std::fs::copy(fixture_db(), &p).unwrap();
    p
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// OpenCode keeps its database in WAL mode and writes while it runs: the import reads the
/// last committed state, does not wait for an open write, and changes no byte of the
/// database or its WAL.
#[test]
fn the_database_is_read_while_opencode_writes_it_and_never_written() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let db = copy_db(&data);
    let writer = Connection::open(&db).unwrap();
    let mode: String = writer
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // A committed change (in the WAL only, not yet checkpointed): a new prompt of the
    // pending-revert session is visible to the import...
    writer
        .execute_batch(
            "PRAGMA wal_autocheckpoint=0;
             INSERT INTO message VALUES ('msg_zzzz0001', 'ses_dce736bfaffer8VmkCtazoUObh', 1796127700000, 1796127700000, '{\"role\":\"user\",\"time\":{\"created\":1796127700000}}');
             INSERT INTO part VALUES ('prt_zzzz0001', 'msg_zzzz0001', 'ses_dce736bfaffer8VmkCtazoUObh', 1796127700000, 1796127700000, '{\"type\":\"text\",\"text\":\"Committed in the WAL\"}');",
        )
        .unwrap();
    // ... one still open is not (and is not waited for).
    writer
        .execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO part VALUES ('prt_zzzz0002', 'msg_zzzz0001', 'ses_dce736bfaffer8VmkCtazoUObh', 1796127700001, 1796127700001, '{\"type\":\"text\",\"text\":\"Not committed\"}');",
        )
        .unwrap();
    let before = snapshot(&data);
    assert!(before.iter().any(|(n, _)| n == "opencode.db-wal"));
    let out = tmp.path().join("out");
    let r = import(&db, &out);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let text = std::fs::read_to_string(path_of(&r, "ses_dce736bfaffer8VmkCtazoUObh")).unwrap();
    assert!(text.contains("Committed in the WAL"));
    assert!(!text.contains("Not committed"));
    assert_eq!(
        snapshot(&data),
        before,
        "the import changed the database's files"
    );
    writer.execute_batch("ROLLBACK").unwrap();
}

/// A session that went on after an import is completed by appending: the earlier file is
/// kept byte for byte as the start of the new one, and the result is a fresh import's.
#[test]
fn a_session_that_grew_is_completed_by_appending() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let db = copy_db(&data);
    let c = Connection::open(&db).unwrap();
    // The database as it was before the main session's last turn.
    let last_user: String = c
        .query_row(LAST_USER_MESSAGE, [MAIN], |r| r.get(0))
        .unwrap();
    let saved: Vec<(String, String)> = {
        let mut q = c
            .prepare("SELECT id, data FROM message WHERE session_id = ?1 AND id >= ?2")
            .unwrap();
        q.query_map([MAIN, last_user.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(saved.len() >= 2);
    let full = data.join("full.db");
    std::fs::copy(&db, &full).unwrap();
    c.execute(
        "DELETE FROM part WHERE session_id = ?1 AND message_id >= ?2",
        [MAIN, last_user.as_str()],
    )
    .unwrap();
    c.execute(
        "DELETE FROM message WHERE session_id = ?1 AND id >= ?2",
        [MAIN, last_user.as_str()],
    )
    .unwrap();
    drop(c);
    let out = tmp.path().join("out");
    let first = import(&db, &out);
    let p = path_of(&first, MAIN);
    let head = std::fs::read(&p).unwrap();
    let grown = import(&full, &out);
    let o = done(&grown, MAIN).result.as_ref().unwrap();
    assert_eq!(o.status, Status::Appended);
    assert_eq!(o.path, p);
    let after = std::fs::read(&p).unwrap();
    assert!(after.starts_with(&head), "only appended");
    let fresh = import(&full, &tmp.path().join("fresh"));
    let (a, b) = (
        sessiontree::load(&p).unwrap(),
        sessiontree::load(&path_of(&fresh, MAIN)).unwrap(),
    );
    let ctx = |l: &sessiontree::Loaded| {
        let leaf = l
            .tree
            .leaf_id()
            .map_or(sessiontree::LeafArg::Null, sessiontree::LeafArg::Id);
        sessiontree::build_context(&l.tree, leaf).to_json()
    };
    assert_eq!(ctx(&a), ctx(&b));
}

/// A row whose JSON cannot be read is reported (session, message, part), and the rest of
/// the session is imported.
#[test]
fn a_damaged_row_is_a_problem_and_the_rest_imports() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_db(tmp.path());
    let c = Connection::open(&db).unwrap();
    let part: String = c
        .query_row(
            "SELECT id FROM part WHERE session_id = ?1 AND data LIKE '%What did it print%'",
            [MAIN],
            |r| r.get(0),
        )
        .unwrap();
    c.execute(
        "UPDATE part SET data = '{\"type\":\"text\",' WHERE id = ?1",
        [&part],
    )
    .unwrap();
    drop(c);
    let r = import(&db, &tmp.path().join("out"));
    let d = done(&r, MAIN);
    assert_eq!(d.conv.problems.len(), 2, "{:?}", d.conv.problems);
    assert!(d
        .conv
        .problems
        .iter()
        .any(|p| p.message.contains("is not a JSON object")));
    assert!(d
        .conv
        .problems
        .iter()
        .any(|p| p.message.contains("has no text")));
    let prefix = format!("session {MAIN}: ");
    assert!(d
        .conv
        .problems
        .iter()
        .all(|p| p.message.starts_with(&prefix)));
    let text = std::fs::read_to_string(&d.result.as_ref().unwrap().path).unwrap();
    assert!(text.contains("After compacting, RUN again"));
    // The user's question is gone (the assistant's answer quoting it stays).
    assert!(!text.contains("\"text\":\"What did it print?\""));
    assert!(text.contains("Answer 7 to: What did it print?"));
}

/// The rows as OpenCode may leave them: every session's messages and parts stored in no
/// order, one session's rows between another's (sessions run side by side, a message's
/// parts rewritten later). The import reads each session's rows as it finds them, and
/// converts a session once its last part is read: the same files as from the database in
/// order.
#[test]
fn rows_stored_out_of_order_and_interleaved_give_the_same_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = copy_db(tmp.path());
    let c = Connection::open(&db).unwrap();
    // (Not deleting the parts with their messages.)
    c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    // Every row moved to the end of its table in an order that mixes sessions and
    // messages: by a hash of the row's id.
    for table in ["message", "part"] {
        c.execute_batch(&format!(
            "CREATE TABLE shuffled AS SELECT * FROM {table} \
             ORDER BY (unicode(substr(id, -1)) * 7919 + length(data)) % 13, id DESC;
             DELETE FROM {table};
             INSERT INTO {table} SELECT * FROM shuffled;
             DROP TABLE shuffled;"
        ))
        .unwrap();
    }
    // The parts really are out of order and sessions interleaved.
    let sessions: Vec<String> = c
        .prepare("SELECT session_id FROM part ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let changes = sessions.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(changes > 10, "sessions changed {changes} times");
    drop(c);
    let (a, b) = (tmp.path().join("in-order"), tmp.path().join("shuffled"));
    let r = import(&fixture_db(), &a);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let s = import(&db, &b);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(r.done.len(), 4);
    // The same files, but for the folder a linked session's header names.
    let shown = |dir: &Path| {
        snapshot(dir)
            .into_iter()
            .map(|(name, bytes)| {
                let text = String::from_utf8(bytes).unwrap();
                (
                    name,
                    text.replace(&dir.to_string_lossy().into_owned(), "DIR"),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(&a), shown(&b));
    for (x, y) in r.done.iter().zip(&s.done) {
        assert_eq!(x.conv.session_id, y.conv.session_id);
        assert_eq!(x.conv.problems, y.conv.problems);
    }
}
