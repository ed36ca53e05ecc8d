//! The archive against a real PostgreSQL server started by the test (see common/mod.rs).

mod common;

use common::{opts, pg, pull_opts, session_ids, Cluster, PASSWORD};
use sessiontree_archive::pull::pull;
use sessiontree_archive::push::push;
use sessiontree_archive::{query, Archive};
use sessiontree_testkit::files::session_files as files;
use sessiontree_testkit::Rng;
use std::path::{Path, PathBuf};

const WORDS: &[&str] = &[
    "orbit",
    "drift",
    "euler",
    "fn step(s: &mut State)",
    "日本語のテキスト",
    "ünïcödé",
    "\\\"quoted\\\"",
    "energy",
    "integrator",
    "token=sk-live-123456",
    "regression",
];

/// A session file in Pi's layout under `agent/sessions`, `n` entries; `extra` lines are
/// inserted after the third entry (e.g. a malformed line); `torn` ends the file mid-line.
fn write_session(
    agent: &Path,
    cwd: &str,
    n: usize,
    seed: u64,
    extra: &[&str],
    torn: bool,
) -> PathBuf {
    let mut r = Rng(seed * 2654435761 + 1);
    let id = uuid::Uuid::from_u128(
        ((seed as u128) << 64) | 0x7000_8000_0000_0000u128 | r.next() as u128,
    );
    let folder = agent
        .join("sessions")
        .join(sessiontree::dirs::encode_cwd(Path::new(cwd)));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!(
        "2025-03-0{}T10-00-00-000Z_{id}.jsonl",
        seed % 9 + 1
    ));
    let mut s = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-03-01T10:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
    );
    let mut parent: Option<String> = None;
    for i in 0..n {
        let eid = r.hex8();
        let p = parent
            .as_ref()
            .map(|p| format!("\"{p}\""))
            .unwrap_or("null".into());
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let text: Vec<&str> = (0..6)
            .map(|_| WORDS[(r.next() % WORDS.len() as u64) as usize])
            .collect();
        let text = format!("{} #{seed}-{i}", text.join(" "));
        let msg = if role == "user" {
            format!(
                "{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":{}}}",
                1740823200000u64 + i as u64
            )
        } else {
            format!("{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"api\":\"x\",\"provider\":\"p\",\"model\":\"m\",\"usage\":{{\"input\":1,\"output\":2,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":3,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":{}}}", 1740823200000u64 + i as u64)
        };
        s.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{p},\"timestamp\":\"2025-03-01T10:00:{:02}.000Z\",\"message\":{msg}}}\n",
            i % 60
        ));
        if i == 2 {
            for e in extra {
                s.push_str(e);
                s.push('\n');
            }
        }
        parent = Some(eid);
    }
    if torn {
        s.push_str("{\"type\":\"message\",\"id\":\"deadbeef\",\"parentId\":nu");
    }
    std::fs::write(&path, s).unwrap();
    path
}

/// Stored versions are whole: chunks without gaps or overlaps add up to the length.
fn assert_archive_consistent(c: &Cluster) {
    let bad = c
        .psql(
            "postgres",
            "archive",
            "SELECT v.pk FROM sessiontree.versions v
             WHERE v.length <> (SELECT coalesce(sum(length(data)), 0) FROM sessiontree.chunks WHERE version_pk = v.pk)
                OR EXISTS (SELECT 1 FROM (SELECT off, lead(off) OVER (ORDER BY off) AS nxt, length(data) AS n
                                          FROM sessiontree.chunks WHERE version_pk = v.pk) x
                           WHERE x.nxt IS NOT NULL AND x.nxt <> x.off + x.n)",
        )
        .unwrap();
    assert_eq!(bad, "", "versions whose chunks do not add up");
}

fn count(c: &Cluster, user: &str, sql: &str) -> i64 {
    c.psql(user, "archive", sql).unwrap().parse().unwrap()
}

#[test]
fn two_machines_push_then_a_third_pulls_byte_identical() {
    let Some(c) = pg::archive() else { return };
    let (a, b, third) = (c.path("a"), c.path("b"), c.path("c"));
    for i in 0..4 {
        write_session(&a, "/work/alpha", 6 + i, i as u64, &[], false);
    }
    // Lines sessiontree cannot parse, CRLF and a BOM-less odd line survive; a torn tail
    // waits until it is complete.
    write_session(
        &a,
        "/work/alpha",
        8,
        10,
        &["{not json", "", "42", "{\"type\":\"message\"\r"],
        false,
    );
    write_session(&a, "/work/beta", 5, 11, &[], true);
    for i in 0..3 {
        write_session(&b, "/work/gamma", 4 + i, 20 + i as u64, &[], false);
    }

    let mut ar = Archive::open(&c.url).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.files, r.created, r.skipped.len()), (6, 6, 0), "{r:?}");
    let r = push(&mut ar, &opts(&b)).unwrap();
    assert_eq!(r.created, 3);
    let chunks = count(&c, "alice", "SELECT count(*) FROM sessiontree.chunks");
    let bytes = count(
        &c,
        "alice",
        "SELECT sum(length(data)) FROM sessiontree.chunks",
    );

    // Twice adds nothing.
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.unchanged, r.bytes_sent), (6, 0), "{r:?}");
    // Without the local state, the file is read and still found unchanged.
    std::fs::remove_dir_all(a.join("sessiontree-archive")).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.unchanged, r.bytes_sent), (6, 0), "{r:?}");
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.chunks"),
        chunks
    );

    // A grown file sends only its new bytes.
    let grown = files(&a)[0].0.clone();
    let line = "{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"abcdef01\",\"parentId\":null,\"timestamp\":\"2025-03-01T11:00:00.000Z\"}\n";
    let gp = a.join("sessions").join(&grown);
    let mut content = std::fs::read(&gp).unwrap();
    content.extend_from_slice(line.as_bytes());
    std::fs::write(&gp, &content).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.appended, r.bytes_sent), (1, line.len() as u64), "{r:?}");
    assert_eq!(
        count(
            &c,
            "alice",
            "SELECT sum(length(data)) FROM sessiontree.chunks"
        ),
        bytes + line.len() as i64
    );
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.versions"),
        9
    );

    // A third machine pulls everything, byte for byte, up to each file's last complete
    // line (a torn tail may be a line still being written: it is never pushed).
    let r = pull(&mut ar, &pull_opts(&third)).unwrap();
    assert_eq!((r.created.len(), r.skipped.len()), (9, 0), "{r:?}");
    let mut want = files(&a);
    want.extend(files(&b));
    for (_, bytes) in want.iter_mut() {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(end);
    }
    want.sort();
    assert_eq!(files(&third), want);
    let r = pull(&mut ar, &pull_opts(&third)).unwrap();
    assert!(r.created.is_empty() && r.bytes_written == 0, "{r:?}");

    // --session-dir puts them in one folder.
    let flat = c.path("flat");
    let mut po = pull_opts(&c.path("d"));
    po.session_dir = Some(flat.clone());
    pull(&mut ar, &po).unwrap();
    assert_eq!(std::fs::read_dir(&flat).unwrap().count(), 9);
    assert_archive_consistent(&c);

    // The machines have names and stable ids.
    let ida = std::fs::read_to_string(a.join("sessiontree-machine.json")).unwrap();
    push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(
        ida,
        std::fs::read_to_string(a.join("sessiontree-machine.json")).unwrap()
    );
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.machines"),
        4
    );
}

#[test]
fn a_rewritten_file_becomes_a_new_version() {
    let Some(c) = pg::archive() else { return };
    let mut ar = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    let p = write_session(&a, "/w", 6, 1, &["{broken"], false);
    let old = std::fs::read(&p).unwrap();
    push(&mut ar, &opts(&a)).unwrap();
    // What `repair` does: the malformed line goes, the file is replaced and then grows.
    let text = String::from_utf8(old.clone())
        .unwrap()
        .replace("{broken\n", "");
    let new = format!("{text}{}", "{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"abcdef01\",\"parentId\":null,\"timestamp\":\"2025-03-01T11:00:00.000Z\"}\n");
    assert!(new.len() > old.len());
    sessiontree::store::atomic_replace(&p, &[new.as_bytes()]).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.new_versions, r.appended), (1, 0), "{r:?}");
    let versions = c
        .psql(
            "alice",
            "archive",
            "SELECT seq || ':' || length FROM sessiontree.versions ORDER BY seq",
        )
        .unwrap();
    assert_eq!(versions, format!("1:{}\n2:{}", old.len(), new.len()));
    // The old version is kept whole; a pull brings the new one.
    let third = c.path("c");
    pull(&mut ar, &pull_opts(&third)).unwrap();
    assert_eq!(files(&third)[0].1, new.as_bytes());
    assert_archive_consistent(&c);
}

#[test]
fn redacted_push_keeps_secrets_home_and_says_so() {
    let Some(c) = pg::archive() else { return };
    let mut ar = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    for i in 0..3 {
        write_session(&a, "/w", 12, i, &[], false);
    }
    let mut o = opts(&a);
    o.redact = vec![regex::bytes::Regex::new("sk-live-[0-9]+").unwrap()].into();
    push(&mut ar, &o).unwrap();
    assert_eq!(
        count(
            &c,
            "postgres",
            "SELECT count(*) FROM sessiontree.chunks WHERE position('sk-live'::bytea in data) > 0"
        ),
        0
    );
    assert_eq!(
        count(
            &c,
            "postgres",
            "SELECT count(*) FROM sessiontree.versions WHERE redaction IS NULL"
        ),
        0
    );
    let r = push(&mut ar, &o).unwrap();
    assert_eq!(r.bytes_sent, 0, "{r:?}");
    let third = c.path("c");
    pull(&mut ar, &pull_opts(&third)).unwrap();
    for (_, b) in files(&third) {
        let s = String::from_utf8(b).unwrap();
        assert!(!s.contains("sk-live") && s.contains("[REDACTED]"));
        for l in s.lines() {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
    }
}

/// Pi 1.6.0 (interop/) present? Skips visibly, or fails when required.
fn pi_available() -> bool {
    sessiontree_testkit::interop::available()
}

/// What Pi 1.6.0 sees in a file: the oracle's dump.
fn pi_dump(file: &Path) -> serde_json::Value {
    let out = sessiontree_testkit::interop::node(&[
        "oracle.mjs",
        "dump",
        file.to_str().unwrap(),
        "--no-llm",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["results"][0].clone()
}

fn default_context(dump: &serde_json::Value) -> serde_json::Value {
    sessiontree_testkit::interop::default_context(dump)
        .unwrap()
        .clone()
}

fn our_context(path: &Path) -> (String, Option<String>) {
    let l = sessiontree::load(path).unwrap();
    let ctx = sessiontree::build_context(&l.tree, sessiontree::LeafArg::Default).to_json();
    (ctx, l.tree.leaf_id().map(str::to_string))
}

fn ids(path: &Path) -> Vec<String> {
    let l = sessiontree::load(path).unwrap();
    l.tree
        .entries()
        .iter()
        .filter_map(|e| e.id().map(str::to_string))
        .collect()
}

fn say(path: &Path, text: &str) -> String {
    let mut s = sessiontree::Session::open(path, sessiontree::WriteOptions::default()).unwrap();
    let u = s
        .append_message(
            &sessiontree::Json::parse(&format!(
                "{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1740900000000}}"
            ))
            .unwrap(),
        )
        .unwrap();
    s.append_message(&sessiontree::Json::parse(&format!(
        "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"re: {text}\"}}],\"api\":\"x\",\"provider\":\"p\",\"model\":\"m2\",\"usage\":{{\"input\":1,\"output\":1,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":2,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":1740900000001}}"
    )).unwrap())
    .unwrap();
    u
}

#[test]
fn diverged_session_keeps_both_branches_and_the_leaf() {
    let Some(c) = pg::archive() else { return };
    let mut ar = Archive::open(&c.url).unwrap();
    let (a, b) = (c.path("a"), c.path("b"));
    let mut oa = opts(&a);
    oa.machine_name = Some("laptop".into());
    let mut ob = opts(&b);
    ob.machine_name = Some("desk".into());
    let pa = write_session(&a, "/w", 6, 7, &[], false);
    push(&mut ar, &oa).unwrap();
    let r = pull(&mut ar, &pull_opts(&b)).unwrap();
    assert_eq!(r.created.len(), 1);
    let pb = r.created[0].clone();
    assert_eq!(std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());

    // Both machines go on with the session.
    say(&pa, "mine on the laptop");
    let theirs = say(&pb, "theirs on the desk");
    say(&pb, "more from the desk");
    push(&mut ar, &oa).unwrap();
    push(&mut ar, &ob).unwrap();
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.copies"),
        2
    );

    let before = std::fs::read(&pa).unwrap();
    let (ctx_before, leaf_before) = our_context(&pa);
    let snapshot = c.path("before.jsonl");
    std::fs::write(&snapshot, &before).unwrap();

    let r = pull(&mut ar, &pull_opts(&a)).unwrap();
    assert_eq!(r.branched, vec![(pa.clone(), 4)], "{r:?}");
    let after = std::fs::read(&pa).unwrap();
    assert!(after.starts_with(&before), "pull only appends");
    let (ctx_after, leaf_after) = our_context(&pa);
    assert_eq!(
        ctx_after, ctx_before,
        "the context at the leaf is unchanged"
    );
    let l = sessiontree::load(&pa).unwrap();
    let leaf = l.tree.get_entry(leaf_after.as_deref().unwrap()).unwrap();
    assert_eq!(leaf.entry_type, sessiontree::EntryType::Label);
    assert_eq!(
        leaf.parent.walk_id(),
        leaf_before.as_deref(),
        "the marker hangs under the old leaf"
    );
    let b_ids = ids(&pb);
    let a_ids = ids(&pa);
    assert!(
        b_ids.iter().all(|i| a_ids.contains(i)),
        "every entry of the desk's copy is here"
    );
    let tip = b_ids.last().unwrap();
    assert_eq!(
        l.tree.get_label(tip).map(|x| x.label.as_str()),
        Some("\"pulled from desk\"")
    );
    assert!(a_ids.contains(&theirs));

    if pi_available() {
        let pb4 = pi_dump(&snapshot);
        let pa4 = pi_dump(&pa);
        assert_eq!(pa4["error"], serde_json::Value::Null);
        assert_eq!(
            default_context(&pa4),
            default_context(&pb4),
            "Pi sees the same context"
        );
        let pi_ids: Vec<&str> = sessiontree_testkit::json::present(&pa4["entries"], "id");
        assert!(
            b_ids.iter().all(|i| pi_ids.contains(&i.as_str())),
            "Pi has the new branch"
        );
        assert_eq!(pa4["labels"][tip]["label"], "pulled from desk");
        // ...in its tree: the desk's first entry is a child of the shared entry.
        let parent_of_theirs = l
            .tree
            .get_entry(&theirs)
            .unwrap()
            .parent
            .walk_id()
            .unwrap()
            .to_string();
        let kids: Vec<&str> = pa4["children"][&parent_of_theirs]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x.as_str())
            .collect();
        assert!(
            kids.contains(&theirs.as_str()) && kids.len() == 2,
            "{kids:?}"
        );
    }

    // The other way: the desk gets the laptop's entries, not the laptop's marker.
    push(&mut ar, &oa).unwrap();
    let (ctx_b, _) = our_context(&pb);
    let r = pull(&mut ar, &pull_opts(&b)).unwrap();
    assert_eq!(r.branched, vec![(pb.clone(), 2)], "{r:?}");
    assert_eq!(our_context(&pb).0, ctx_b);
    let marker_a = leaf_after.unwrap();
    assert!(!ids(&pb).contains(&marker_a));
    // And then it is quiet: syncing back and forth adds nothing.
    push(&mut ar, &ob).unwrap();
    let (na, nb) = (
        std::fs::read(&pa).unwrap().len(),
        std::fs::read(&pb).unwrap().len(),
    );
    for _ in 0..2 {
        pull(&mut ar, &pull_opts(&a)).unwrap();
        push(&mut ar, &oa).unwrap();
        pull(&mut ar, &pull_opts(&b)).unwrap();
        push(&mut ar, &ob).unwrap();
    }
    assert_eq!(std::fs::read(&pa).unwrap().len(), na);
    assert_eq!(std::fs::read(&pb).unwrap().len(), nb);
    // A pull skips a session whose writer lock is held.
    say(&pb, "one more on the desk");
    push(&mut ar, &ob).unwrap();
    let held = sessiontree::store::WriterLock::acquire(&pa, None).unwrap();
    let r = pull(&mut ar, &pull_opts(&a)).unwrap();
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert!(r.skipped[0].reason.contains("lock"), "{r:?}");
    // Named by its id alone (it is the puller's own), in the JSON report too.
    assert_eq!(r.skipped[0].owner, None, "{r:?}");
    assert_eq!(
        r.to_json()["skipped"][0]["session"],
        r.skipped[0].session.as_str()
    );
    assert!(
        std::fs::read_to_string(&pa)
            .unwrap()
            .contains(&format!("\"id\":\"{}\"", r.skipped[0].session)),
        "{r:?}"
    );
    assert_eq!(std::fs::read(&pa).unwrap().len(), na);
    drop(held);
    let r = pull(&mut ar, &pull_opts(&a)).unwrap();
    assert_eq!(r.branched.len(), 1, "{r:?}");
}

#[test]
fn row_level_security_keeps_other_roles_out() {
    let Some(c) = pg::archive() else { return };
    let mut alice = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    let shared = write_session(&a, "/w", 8, 1, &[], false);
    write_session(&a, "/w", 8, 2, &[], false);
    push(&mut alice, &opts(&a)).unwrap();
    let tables = [
        "sessions", "copies", "versions", "chunks", "machines", "shares",
    ];
    for tb in tables {
        assert_eq!(
            count(&c, "bob", &format!("SELECT count(*) FROM sessiontree.{tb}")),
            0,
            "{tb}"
        );
    }
    // The search ranges are read only through the search function, which shows bob nothing.
    let e = c
        .psql("bob", "archive", "SELECT count(*) FROM sessiontree.grams")
        .unwrap_err();
    assert!(e.contains("permission denied"), "{e}");
    let all_texts = "SELECT count(*) FROM sessiontree.search_grams(NULL, NULL, NULL, 1000000)";
    assert_eq!(count(&c, "bob", all_texts), 0);
    assert!(count(&c, "alice", all_texts) > 0);
    // bob can neither change alice's rows nor forge his way in.
    // (Stored bytes are never updated, not even by their owner: schema version 4.)
    let e = c
        .psql("bob", "archive", "UPDATE sessiontree.chunks SET data = 'x'")
        .unwrap_err();
    assert!(e.contains("permission denied"), "{e}");
    c.psql("bob", "archive", "DELETE FROM sessiontree.sessions")
        .unwrap();
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.sessions"),
        2
    );
    assert_eq!(
        count(
            &c,
            "alice",
            "SELECT count(*) FROM sessiontree.chunks WHERE data = 'x'"
        ),
        0
    );
    let e = c
        .psql(
            "bob",
            "archive",
            "INSERT INTO sessiontree.sessions (owner, session_id) VALUES ('alice', 'x')",
        )
        .unwrap_err();
    assert!(e.contains("row-level security"), "{e}");
    let pk = c
        .psql(
            "alice",
            "archive",
            "SELECT min(pk) FROM sessiontree.sessions",
        )
        .unwrap();
    let e = c
        .psql(
            "bob",
            "archive",
            &format!("INSERT INTO sessiontree.shares (session_pk, grantee) VALUES ({pk}, 'bob')"),
        )
        .unwrap_err();
    assert!(e.contains("owner"), "{e}");
    assert_eq!(
        count(&c, "bob", "SELECT count(*) FROM sessiontree.sessions"),
        0
    );

    // Shared with a team bob is not in: still nothing. In the team: that one session.
    let sid = sessiontree::folder::read_header(&shared).unwrap().id;
    query::share(&mut alice, &sid, "team").unwrap();
    assert_eq!(
        count(&c, "bob", "SELECT count(*) FROM sessiontree.sessions"),
        0
    );
    c.psql("postgres", "postgres", "GRANT team TO bob").unwrap();
    assert_eq!(
        count(&c, "bob", "SELECT count(*) FROM sessiontree.sessions"),
        1
    );
    assert_eq!(session_ids(&c, "bob"), sid);
    assert!(count(&c, "bob", "SELECT count(*) FROM sessiontree.chunks") > 0);
    assert_eq!(
        count(
            &c,
            "bob",
            "SELECT count(DISTINCT session_pk) FROM sessiontree.search_grams(NULL, NULL, NULL, 1000000)"
        ),
        1
    );
    assert_eq!(
        count(&c, "bob", "SELECT count(*) FROM sessiontree.machines"),
        1
    );

    // bob, as himself over TCP with TLS and a password, pulls what he may read.
    let mut bob = Archive::open(&format!(
        "postgresql://bob:{PASSWORD}@127.0.0.1:{}/archive?sslmode=require",
        c.port
    ))
    .unwrap();
    assert_eq!(bob.role, "bob");
    let bd = c.path("bob");
    let r = pull(&mut bob, &pull_opts(&bd)).unwrap();
    assert_eq!(r.created.len(), 1);
    assert_eq!(
        std::fs::read(&r.created[0]).unwrap(),
        std::fs::read(&shared).unwrap()
    );
    let hits = query::search(&mut bob, "integrator", query::Mode::Words, None, 50).unwrap();
    assert!(hits
        .iter()
        .all(|h| h.session_id == sid && h.owner == "alice"));
    assert!(!hits.is_empty());
    // bob's own sessions stay his; the shared one he pulled is alice's (it lies in
    // sessions/--shared--/alice/) and is not pushed as his.
    assert!(r.created[0].starts_with(bd.join("sessions/--shared--/alice")));
    write_session(&bd, "/b", 3, 9, &[], false);
    push(&mut bob, &opts(&bd)).unwrap();
    assert_eq!(
        count(
            &c,
            "alice",
            "SELECT count(*) FROM sessiontree.sessions WHERE owner = 'bob'"
        ),
        0
    );
    assert_eq!(
        count(
            &c,
            "bob",
            "SELECT count(*) FROM sessiontree.sessions WHERE owner = 'bob'"
        ),
        1
    );
    assert_eq!(
        count(&c, "bob", "SELECT count(*) FROM sessiontree.sessions"),
        2
    );
    // Taken back.
    assert!(query::unshare(&mut alice, &sid, "team").unwrap());
    assert_eq!(
        count(
            &c,
            "bob",
            "SELECT count(*) FROM sessiontree.sessions WHERE owner = 'alice'"
        ),
        0
    );
    assert_eq!(
        count(
            &c,
            "bob",
            &format!(
                "SELECT count(*) FROM sessiontree.search_grams(NULL, NULL, NULL, 1000000)
                 WHERE session_pk IN ({})",
                c.psql(
                    "alice",
                    "archive",
                    "SELECT string_agg(pk::text, ',') FROM sessiontree.sessions"
                )
                .unwrap()
            )
        ),
        0
    );
}

/// (session id, owner) of every hit, sorted, without repeats.
fn hit_sessions(ar: &mut Archive, q: &str, mode: query::Mode) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = query::search(ar, q, mode, None, 100)
        .unwrap()
        .into_iter()
        .map(|h| (h.session_id, h.owner))
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn archive_search_sees_shared_sessions_and_nothing_else() {
    let Some(c) = pg::archive() else { return };
    let mut alice = Archive::open(&c.url).unwrap();
    let (a, b) = (c.path("a"), c.path("b"));
    let shared = write_session(&a, "/w", 4, 1, &[], false);
    say(&shared, "wombat shared with the team");
    let private = write_session(&a, "/w", 4, 2, &[], false);
    say(&private, "wombat kept private");
    push(&mut alice, &opts(&a)).unwrap();
    let mut bob = Archive::open(&c.url("bob", "archive")).unwrap();
    let own = write_session(&b, "/b", 4, 3, &[], false);
    say(&own, "wombat of bob's");
    push(&mut bob, &opts(&b)).unwrap();
    let id = |p: &Path| sessiontree::folder::read_header(p).unwrap().id;
    let (shared, private, own) = (id(&shared), id(&private), id(&own));
    let al = |s: &str| (s.to_string(), "alice".to_string());
    let bo = |s: &str| (s.to_string(), "bob".to_string());
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    use query::Mode::*;

    // Before any share: each sees only their own, whatever the kind of search.
    assert_eq!(hit_sessions(&mut bob, "wombat", Words), vec![bo(&own)]);
    assert_eq!(
        hit_sessions(&mut alice, "WOMBAT", Words),
        sorted(vec![al(&shared), al(&private)])
    );
    for (q, mode) in [("kept private", Phrase), ("wombat.*team", Regex)] {
        assert_eq!(hit_sessions(&mut bob, q, mode), vec![], "{q}");
    }
    // Shared with a role bob is not in: nothing more.
    query::share(&mut alice, &shared, "team").unwrap();
    assert_eq!(hit_sessions(&mut bob, "wombat", Words), vec![bo(&own)]);
    // bob in the team: the shared session, never the private one.
    c.psql("postgres", "postgres", "GRANT team TO bob").unwrap();
    assert_eq!(
        hit_sessions(&mut bob, "wombat", Words),
        sorted(vec![al(&shared), bo(&own)])
    );
    assert_eq!(
        hit_sessions(&mut bob, "wombat shared", Words),
        vec![al(&shared)]
    );
    assert_eq!(hit_sessions(&mut bob, "kept private", Phrase), vec![]);
    assert_eq!(hit_sessions(&mut bob, "wombat.*private", Regex), vec![]);
    assert_eq!(
        hit_sessions(&mut bob, "wombat.*team", Regex),
        vec![al(&shared)]
    );
    // ... also when bob calls the function himself with no condition at all.
    let pks = |who: &str, ids: &[&str]| {
        c.psql(
            "postgres",
            "archive",
            &format!(
                "SELECT string_agg(pk::text, ',' ORDER BY pk) FROM sessiontree.sessions
                 WHERE owner = '{who}' AND session_id IN ('{}')",
                ids.join("','")
            ),
        )
        .unwrap()
    };
    let visible = |user: &str| {
        c.psql(
            user,
            "archive",
            "SELECT string_agg(DISTINCT session_pk::text, ',' ORDER BY session_pk::text)
             FROM sessiontree.search_grams(NULL, NULL, NULL, 1000000)",
        )
        .unwrap()
    };
    let mut expect: Vec<String> = vec![pks("alice", &[&shared]), pks("bob", &[&own])];
    expect.sort();
    assert_eq!(visible("bob"), expect.join(","));
    // alice still does not see bob's.
    assert_eq!(
        hit_sessions(&mut alice, "wombat", Words),
        sorted(vec![al(&shared), al(&private)])
    );
    // Out of the team, or the share taken back: gone again.
    c.psql("postgres", "postgres", "REVOKE team FROM bob")
        .unwrap();
    assert_eq!(hit_sessions(&mut bob, "wombat", Words), vec![bo(&own)]);
    c.psql("postgres", "postgres", "GRANT team TO bob").unwrap();
    assert_eq!(hit_sessions(&mut bob, "wombat", Words).len(), 2);
    assert!(query::unshare(&mut alice, &shared, "team").unwrap());
    assert_eq!(hit_sessions(&mut bob, "wombat", Words), vec![bo(&own)]);
    assert_eq!(visible("bob"), pks("bob", &[&own]));

    // The function uses the trigram index for a plain role (bob, not the table's owner):
    // with sequential scans priced out, the plan of its query names the index.
    let plan = c
        .psql_with_notices(
            "postgres",
            "archive",
            "LOAD 'auto_explain';
             SET auto_explain.log_min_duration = 0;
             SET auto_explain.log_nested_statements = on;
             SET auto_explain.log_level = notice;
             SET enable_seqscan = off;
             SET SESSION AUTHORIZATION bob;
             SELECT count(*) FROM sessiontree.search_grams('{1,2}', NULL, NULL, 10);",
        )
        .unwrap();
    assert!(plan.contains("grams_tri"), "{plan}");
}

#[test]
fn passwords_come_from_the_environment_or_the_password_file() {
    let Some(c) = pg::archive() else { return };
    let url = c.tcp_url("alice", "archive", "?sslmode=require");
    std::env::remove_var("PGPASSWORD");
    std::env::set_var("PGPASSFILE", c.path("none"));
    let e = Archive::open(&url)
        .err()
        .expect("no password, no connection");
    assert!(e.to_string().contains("password"), "{e}");
    std::env::set_var("PGPASSWORD", PASSWORD);
    let mut ar = Archive::open(&url).unwrap();
    let ssl = ar
        .client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get::<_, bool>(0);
    assert!(ssl, "sslmode=require gives TLS");
    std::env::remove_var("PGPASSWORD");
    let pass = c.path("pgpass");
    std::fs::write(
        &pass,
        format!(
            "# comment\nother:*:*:*:nope\n127.0.0.1:{}:archive:alice:{PASSWORD}\n",
            c.port
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::env::set_var("PGPASSFILE", &pass);
    Archive::open(&url).unwrap();
    // The server's certificate checked, host name included.
    let crt = c.data().join("server.crt");
    let full = format!(
        "postgresql://alice@localhost:{}/archive?sslmode=verify-full&sslrootcert={}",
        c.port,
        crt.display()
    );
    std::fs::write(&pass, format!("*:{}:archive:alice:{PASSWORD}\n", c.port)).unwrap();
    Archive::open(&full).unwrap();
    // A password file others can read is ignored, as libpq does.
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(Archive::open(&url).is_err());
    std::env::remove_var("PGPASSFILE");
}

#[test]
fn server_restarted_mid_push_then_push_converges() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    for i in 0..60 {
        write_session(&a, &format!("/w{}", i % 3), 1500, i, &[], false);
    }
    Archive::open(&c.url).unwrap();
    let a2 = a.clone();
    let u2 = c.url.clone();
    let h = std::thread::spawn(move || {
        let mut ar = Archive::open(&u2).unwrap();
        push(&mut ar, &opts(&a2))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.stop_server("fast");
    c.start_server();
    let first = h.join().unwrap();
    assert!(
        first.is_err(),
        "the restart should have cut the push short: {first:?}"
    );
    let mut ar = Archive::open(&c.url).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert!(r.created > 0 && r.skipped.is_empty(), "{r:?}");
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.unchanged, r.bytes_sent), (60, 0));
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.versions"),
        60
    );
    assert_archive_consistent(&c);
    let third = c.path("c");
    pull(&mut ar, &pull_opts(&third)).unwrap();
    assert_eq!(files(&third), files(&a));
}

#[test]
fn an_archive_of_schema_2_migrates_and_its_texts_are_found() {
    let Some(c) = pg::archive() else { return };
    // The archive as the sessiontree of schema 2 left it, with a session of alice's and one of
    // bob's, their bytes and their texts.
    let mut raw = sessiontree_archive::conn::connect(&c.url).unwrap();
    assert_eq!(
        sessiontree_archive::schema::migrate_to(&mut raw, 2).unwrap(),
        vec![1, 2]
    );
    drop(raw);
    for (who, sid) in [("alice", "s-alice"), ("bob", "s-bob")] {
        let bytes = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{sid}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n\
             {{\"type\":\"message\",\"id\":\"e1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"an old Numbat of {who}\",\"timestamp\":1735689601000}}}}\n"
        );
        let data = format!("convert_to('{bytes}', 'UTF8')");
        c.psql(
            who,
            "archive",
            &format!(
                "INSERT INTO sessiontree.machines (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'm');
                 INSERT INTO sessiontree.sessions (session_id, cwd) VALUES ('{sid}', '/w');
                 INSERT INTO sessiontree.copies (session_pk, machine, rel_path)
                     SELECT pk, '00000000-0000-4000-8000-000000000001', 'x/{sid}.jsonl'
                     FROM sessiontree.sessions WHERE session_id = '{sid}';
                 INSERT INTO sessiontree.versions (copy_pk, session_pk, seq, length, hash, src_length)
                     SELECT c.pk, c.session_pk, 1, octet_length({data}), sha256({data}),
                            octet_length({data})
                     FROM sessiontree.copies c
                     JOIN sessiontree.sessions s ON s.pk = c.session_pk WHERE s.session_id = '{sid}';
                 INSERT INTO sessiontree.chunks (version_pk, session_pk, off, data)
                     SELECT v.pk, v.session_pk, 0, {data}
                     FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
                     WHERE s.session_id = '{sid}';
                 INSERT INTO sessiontree.texts (version_pk, session_pk, off, entry_id, role, ts, body)
                     SELECT v.pk, v.session_pk, 0, 'e1', 'user', '1735689601000', 'an old Numbat of {who}'
                     FROM sessiontree.versions v JOIN sessiontree.sessions s ON s.pk = v.session_pk
                     WHERE s.session_id = '{sid}';"
            ),
        )
        .unwrap();
    }
    // The owner connects with this sessiontree: version 7 computes the search ranges of
    // every owner's sessions from their bytes, and the copy of their texts is gone.
    let mut alice = Archive::open(&c.url).unwrap();
    assert_eq!(
        c.psql(
            "postgres",
            "archive",
            "SELECT count(*), count(DISTINCT owner), (SELECT max(version) FROM sessiontree.migrations),
                    to_regclass('sessiontree.texts') IS NULL
             FROM sessiontree.grams"
        )
        .unwrap(),
        format!("2|2|{}|t", sessiontree_archive::schema::latest())
    );
    let mut bob = Archive::open(&c.url("bob", "archive")).unwrap();
    for (ar, who) in [(&mut alice, "alice"), (&mut bob, "bob")] {
        let hits = query::search(ar, "numbat", query::Mode::Words, None, 10).unwrap();
        assert_eq!(hits.len(), 1, "{who}");
        assert_eq!(hits[0].owner, who);
        assert_eq!(hits[0].text, format!("an old Numbat of {who}"));
        assert_eq!(hits[0].ts_ms, Some(1735689601000.0));
    }
}

#[test]
fn a_push_of_many_batches_over_two_connections_is_whole() {
    let Some(c) = pg::archive() else { return };
    let a = c.path("a");
    // 1,300 files: four batches of at most 400, the middle ones taken by the second
    // connection when it is free.
    for i in 0..1300 {
        write_session(&a, &format!("/w{}", i % 7), 3, i, &[], false);
    }
    let mut ar = Archive::open(&c.url).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.created, r.skipped.len()), (1300, 0), "{r:?}");
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.unchanged, r.bytes_sent), (1300, 0));
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.versions"),
        1300
    );
    assert_archive_consistent(&c);
    let third = c.path("c");
    pull(&mut ar, &pull_opts(&third)).unwrap();
    assert_eq!(files(&third), files(&a));
    let hits = query::search(&mut ar, "#1299-2", query::Mode::Words, None, 10).unwrap();
    assert_eq!(hits.len(), 1);
}

#[test]
fn archive_search_filters_by_cwd_and_time_like_the_local_search() {
    let Some(c) = pg::archive() else { return };
    let mut alice = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    let here = write_session(&a, "/w", 4, 1, &[], false);
    say(&here, "wombat here");
    let there = write_session(&a, "/x", 4, 2, &[], false);
    say(&there, "wombat there");
    push(&mut alice, &opts(&a)).unwrap();
    let here = sessiontree::folder::read_header(&here).unwrap().id;
    // say(): the user's entry at 1740900000000, the answer ("re: ...") a millisecond later.
    let find = |ar: &mut Archive, f: query::Filter| {
        let mut v: Vec<(String, Option<f64>)> =
            query::search_filtered(ar, "wombat", query::Mode::Words, &f, 50)
                .unwrap()
                .into_iter()
                .map(|h| (h.session_id, h.ts_ms))
                .collect();
        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
        v
    };
    assert_eq!(find(&mut alice, query::Filter::default()).len(), 4);
    let only_here = find(
        &mut alice,
        query::Filter {
            cwd: Some("/w".into()),
            ..Default::default()
        },
    );
    assert_eq!(only_here.len(), 2);
    assert!(only_here.iter().all(|h| h.0 == here));
    let questions = find(
        &mut alice,
        query::Filter {
            until_ms: Some(1740900000001.0),
            ..Default::default()
        },
    );
    assert_eq!(questions.len(), 2);
    assert!(questions.iter().all(|h| h.1 == Some(1740900000000.0)));
    let answers = find(
        &mut alice,
        query::Filter {
            cwd: Some("/x".into()),
            since_ms: Some(1740900000001.0),
            ..Default::default()
        },
    );
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].1, Some(1740900000001.0));
    let none = find(
        &mut alice,
        query::Filter {
            since_ms: Some(1740900000002.0),
            ..Default::default()
        },
    );
    assert!(none.is_empty());
}

#[test]
fn archive_search_gives_the_newest_hits_whatever_the_limit_and_however_times_interleave() {
    let Some(c) = pg::archive() else { return };
    let mut alice = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    let folder = a.join("sessions").join("--w--");
    std::fs::create_dir_all(&folder).unwrap();
    // 12 sessions whose entries interleave in time; two of them over a megabyte (several
    // ranges each); a third of the entries hold the word, one in a tool result.
    let t0 = 1_740_000_000_000u64;
    let mut expect: Vec<(u64, String, String)> = Vec::new(); // (time, session, entry)
    for s in 0..12u64 {
        let id = format!("0193aaaa-0000-7000-8000-{s:012}");
        let mut text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-03-01T10:00:00.000Z\",\"cwd\":\"/w\"}}\n"
        );
        let mut parent = "null".to_string();
        for i in 0..40u64 {
            let ts = t0 + (i * 12 + (s * 5) % 12) * 1000;
            let eid = format!("{s:02}{i:06}");
            let pad = if s % 6 == 1 {
                "lorem ".repeat(5000)
            } else {
                String::new()
            };
            let hit = (s * 7 + i) % 3 == 0;
            let words = if hit { "a Numbat here" } else { "other words" };
            let (role, content) = if i % 5 == 4 {
                (
                    "toolResult",
                    format!("[{{\"type\":\"text\",\"text\":\"{words} {s}-{i} {pad}\"}}]"),
                )
            } else {
                ("user", format!("\"{words} {s}-{i} {pad}\""))
            };
            let extra = if role == "toolResult" {
                ",\"toolCallId\":\"t\",\"toolName\":\"bash\",\"isError\":false"
            } else {
                ""
            };
            text.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"2025-03-01T10:00:00.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":{content}{extra},\"timestamp\":{ts}}}}}\n"
            ));
            parent = format!("\"{eid}\"");
            if hit {
                expect.push((ts, id.clone(), eid));
            }
        }
        std::fs::write(
            folder.join(format!("2025-03-01T10-00-00-000Z_{id}.jsonl")),
            text,
        )
        .unwrap();
    }
    push(&mut alice, &opts(&a)).unwrap();
    assert_eq!(
        count(&c, "alice", "SELECT count(*) FROM sessiontree.versions"),
        12
    );
    // The two large sessions are cut into several ranges, of at most a chunk each.
    assert_eq!(
        c.psql(
            "postgres",
            "archive",
            "SELECT count(*) FILTER (WHERE n > 1), max(m) <= 1048576 FROM
                 (SELECT count(*) n, max(len) m FROM sessiontree.grams GROUP BY version_pk) x"
        )
        .unwrap(),
        "2|t"
    );
    expect.sort_by_key(|e| std::cmp::Reverse(e.0));
    for limit in [1, 2, 5, 17, 60, 1000] {
        let got: Vec<(u64, String, String)> =
            query::search(&mut alice, "numbat", query::Mode::Words, None, limit)
                .unwrap()
                .into_iter()
                .map(|h| (h.ts_ms.unwrap() as u64, h.session_id, h.entry_id))
                .collect();
        let want: Vec<_> = expect.iter().take(limit).cloned().collect();
        assert_eq!(got, want, "limit {limit}");
    }
    // By role: only the tool results, newest first.
    let got: Vec<String> = query::search(
        &mut alice,
        "numbat",
        query::Mode::Words,
        Some("toolResult"),
        3,
    )
    .unwrap()
    .into_iter()
    .map(|h| h.entry_id)
    .collect();
    let want: Vec<String> = expect
        .iter()
        .filter(|e| e.2[2..].parse::<u64>().unwrap() % 5 == 4)
        .take(3)
        .map(|e| e.2.clone())
        .collect();
    assert_eq!(got, want);
    // A regex reads ranges newest first as well.
    let got = query::search(
        &mut alice,
        "N.mbat here 1[01]-",
        query::Mode::Regex,
        None,
        4,
    )
    .unwrap();
    let want: Vec<_> = expect
        .iter()
        .filter(|e| e.1.ends_with("10") || e.1.ends_with("11"))
        .take(4)
        .map(|e| e.2.clone())
        .collect();
    assert_eq!(
        got.into_iter().map(|h| h.entry_id).collect::<Vec<_>>(),
        want
    );
    // A regex whose literal no range holds finds nothing; one whose words an alternation
    // hides (no literal for the index) still finds its hits.
    assert!(
        query::search(&mut alice, "wombat[0-9]", query::Mode::Regex, None, 5)
            .unwrap()
            .is_empty()
    );
    let got = query::search(
        &mut alice,
        "(Numbat|nothing) here 3-",
        query::Mode::Regex,
        None,
        50,
    )
    .unwrap();
    assert_eq!(
        got.len(),
        expect.iter().filter(|e| e.1.ends_with("03")).count()
    );
}

/// A push whose local state is in step with the archive's count of this machine's changes
/// asks about the changed files alone. Any other change to the machine's copies (a copy
/// removed, a version rewritten by another client of the same user) puts the state out of
/// step: the next push compares every file again and puts back what the archive lost.
#[test]
fn a_push_in_step_asks_only_about_changed_files_and_sees_every_other_change() {
    let Some(c) = pg::archive() else { return };
    let mut ar = Archive::open(&c.url).unwrap();
    let a = c.path("a");
    let paths: Vec<PathBuf> = (1..=4)
        .map(|i| write_session(&a, "/w", 5, i, &[], false))
        .collect();
    let quiet = |r: &sessiontree_archive::push::PushReport| {
        (r.created, r.appended, r.new_versions, r.unchanged, r.asked)
    };
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(
        quiet(&r),
        (4, 0, 0, 0, None),
        "the first push reads every copy"
    );
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(
        quiet(&r),
        (0, 0, 0, 4, Some(0)),
        "nothing changed: nothing asked"
    );
    let grow = |p: &Path, id: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
        writeln!(f, "{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":\"2025-03-01T11:00:00.000Z\"}}").unwrap();
    };
    grow(&paths[1], "a0000001");
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(quiet(&r), (0, 1, 0, 3, Some(1)));

    // Another client of the same user removes a copy: the next push reads every copy and
    // sends that session again.
    c.psql(
        "alice",
        "archive",
        "DELETE FROM sessiontree.copies WHERE pk = (SELECT min(pk) FROM sessiontree.copies)",
    )
    .unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(quiet(&r), (1, 0, 0, 3, None), "a removed copy went unseen");
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(quiet(&r), (0, 0, 0, 4, Some(0)), "in step again");

    // A version written by another client (here its listing, rewritten as it was).
    c.psql(
        "alice",
        "archive",
        "UPDATE sessiontree.versions SET info = info WHERE pk = (SELECT max(pk) FROM sessiontree.versions)",
    )
    .unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(
        quiet(&r),
        (0, 0, 0, 4, None),
        "a rewritten version went unseen"
    );

    // A push of one named file while out of step compares that file only, so the state
    // stays out of step until a push of every file.
    let last = sessiontree_archive::local::id_from_name(&paths[3]).unwrap();
    c.psql(
        "alice",
        "archive",
        &format!(
            "DELETE FROM sessiontree.copies WHERE session_pk =
                 (SELECT pk FROM sessiontree.sessions WHERE session_id = '{last}')"
        ),
    )
    .unwrap();
    let one = sessiontree_archive::push::PushOptions {
        paths: vec![paths[0].clone()],
        ..opts(&a)
    };
    let r = push(&mut ar, &one).unwrap();
    assert_eq!(r.asked, None);
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.created, r.asked), (1, None), "{r:?}");
    // A new file and a grown one in step: only those two asked about.
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(r.asked, Some(0));
    write_session(&a, "/w", 3, 5, &[], false);
    grow(&paths[2], "a0000002");
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!(quiet(&r), (1, 1, 0, 3, Some(2)));

    // A second agent dir of the same machine (its machine file copied) pushing a session
    // of its own moves the count: the first state is out of step and reads every copy.
    let b = c.path("b");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::copy(
        a.join("sessiontree-machine.json"),
        b.join("sessiontree-machine.json"),
    )
    .unwrap();
    write_session(&b, "/v", 3, 6, &[], false);
    push(&mut ar, &opts(&b)).unwrap();
    let r = push(&mut ar, &opts(&a)).unwrap();
    assert_eq!((r.unchanged, r.asked), (5, None));

    // Every session's bytes are the archive's, as a pull into an empty folder shows.
    let third = c.path("c");
    pull(&mut ar, &pull_opts(&third)).unwrap();
    let pulled: Vec<Vec<u8>> = files(&third).into_iter().map(|f| f.1).collect();
    for p in &paths {
        let mine = std::fs::read(p).unwrap();
        assert!(
            pulled.contains(&mine),
            "{} not in the archive as it is",
            p.display()
        );
    }
    assert_archive_consistent(&c);
}
