//! Listing and index tests. The parity test runs the reference (interop/) when available:
//! skipped with a message otherwise, unless `SESSIONTREE_REQUIRE_INTEROP=1`.

use serde_json::Value;
use sessiontree::list::{self, ListOptions};
use std::path::{Path, PathBuf};

#[path = "../../sessiontree/tests/common/mod.rs"]
mod common;
use common::interop::{available, node};

/// Sessions grouped by equal `modified` (the reference's order among ties follows its
/// candidate order, mtime then `localeCompare`; we compare tie groups as sets).
fn groups(v: &[Value]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut last: Option<Value> = None;
    for s in v {
        let m = s["modified"].clone();
        let text = serde_json::to_string(s).unwrap();
        if last.as_ref() == Some(&m) {
            out.last_mut().unwrap().push(text);
        } else {
            out.push(vec![text]);
        }
        last = Some(m);
    }
    for g in &mut out {
        g.sort();
    }
    out
}

#[test]
fn list_all_equals_the_reference() {
    if !available() {
        return;
    }
    for seed in [11u64, 12] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        node(&[
            "gen.mjs",
            "--out",
            d,
            "--seed",
            &seed.to_string(),
            "--count",
            "60",
            "--quiet",
        ]);
        let theirs: Value = serde_json::from_str(&node(&["oracle.mjs", "list-all", d])).unwrap();
        let theirs = theirs["sessions"].as_array().unwrap().clone();
        let opts = ListOptions {
            reference_parity: true,
            ..Default::default()
        };
        let ours: Vec<Value> = list::list_all(dir.path(), opts)
            .iter()
            .map(|i| i.to_json())
            .collect();
        eprintln!("seed {seed}: {} sessions listed", ours.len());
        assert!(ours.len() > 20);
        assert_eq!(ours.len(), theirs.len(), "seed {seed}: count");
        let (a, b) = (groups(&ours), groups(&theirs));
        for (x, y) in a.iter().zip(b.iter()) {
            assert_eq!(x, y, "seed {seed}");
        }
        // Without parity we list more (the sessions the reference drops), never fewer.
        let all = list::list_all(dir.path(), ListOptions::default());
        assert!(all.len() >= ours.len());
    }
}

use sessiontree_index::index::Index;
use sessiontree_index::search::{Mode, Query};
use std::io::Write;

fn line(id: &str, parent: Option<&str>, ts: u64, role: &str, text: &str) -> String {
    let p = parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into());
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{p},\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":{},\"timestamp\":{ts}}}}}\n",
        serde_json::to_string(text).unwrap()
    )
}

fn write_session(agent: &Path, cwd: &str, name: &str, body: &str) -> PathBuf {
    let dir = agent
        .join("sessions")
        .join(sessiontree::dirs::encode_cwd(Path::new(cwd)));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{name}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
    );
    std::fs::write(&p, header + body).unwrap();
    p
}

fn append(p: &Path, s: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(s.as_bytes()).unwrap();
}

fn scan_json(agent: &Path) -> Vec<Value> {
    list::list_all(agent, ListOptions::default())
        .iter()
        .map(|i| i.to_json())
        .collect()
}

/// The `ls --json` bytes of a full scan, and those the index writes for the same paths
/// (from its listing store).
fn json_bytes(idx: &mut Index, agent: &Path) -> (Vec<u8>, Vec<u8>) {
    let infos = list::list_all(agent, ListOptions::default());
    let mut scan = Vec::new();
    for (n, i) in infos.iter().enumerate() {
        if n > 0 {
            scan.push(b',');
        }
        i.write_json(&mut scan).unwrap();
    }
    let mut stored = Vec::new();
    idx.write_json(infos.iter().map(|i| i.path.as_path()), &mut stored)
        .unwrap();
    (scan, stored)
}

fn index_json(
    idx: &mut Index,
    agent: &Path,
) -> (Vec<Value>, sessiontree_index::index::RefreshStats) {
    let files = list::all_files(agent);
    let sessions = agent.join("sessions");
    let scope = sessiontree_index::index::all_scope(&sessions);
    let st = idx.refresh(&files, &scope, 2, &|_, _| {}).unwrap();
    let (scan, stored) = json_bytes(idx, agent);
    assert_eq!(
        String::from_utf8_lossy(&scan),
        String::from_utf8_lossy(&stored)
    );
    let mut v = idx.infos(&scope).unwrap();
    // Same order as a scan: candidates order, then stable sort by modified.
    let pos: std::collections::HashMap<_, _> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), i))
        .collect();
    v.sort_by_key(|i| pos[&i.path]);
    list::sort_newest_first(&mut v);
    (v.iter().map(|i| i.to_json()).collect(), st)
}

#[test]
fn index_agrees_with_a_full_scan_through_changes() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let a = write_session(
        agent,
        "/w/a",
        "a.jsonl",
        &(line("u1", None, 1000, "user", "hello foo_bar::Baz")
            + &line("a1", Some("u1"), 2000, "assistant", "你好世界 answer")),
    );
    let b = write_session(
        agent,
        "/w/b",
        "b.jsonl",
        &line("u1", None, 3000, "user", "second session"),
    );
    let _c = write_session(
        agent,
        "/w/b",
        "c.jsonl",
        &line("u1", None, 500, "user", "third"),
    );
    let ipath = Index::default_path(agent);
    let mut idx = Index::open(&ipath).unwrap();
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    assert_eq!(st.added, 3);

    // Unchanged: nothing read.
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    assert_eq!((st.unchanged, st.bytes_read), (3, 0));

    // One entry appended: only the new bytes are read.
    let extra = line("u2", Some("a1"), 9000, "user", "appended text here");
    append(&a, &extra);
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    assert_eq!(st.appended, 1);
    assert_eq!(st.bytes_read, extra.len() as u64);

    // A torn (unterminated) append, then its completion.
    append(&a, "{\"type\":\"session_info\",\"id\":\"n1\",\"parentId\":\"u2\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"name\":\"Named\"}");
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    append(&a, "\n");
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));

    // Truncation and rewrite with other content of the same length.
    let body = std::fs::read(&b).unwrap();
    std::fs::write(&b, &body[..body.len() / 2]).unwrap();
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    assert_eq!(st.reread, 1);
    std::fs::write(
        &b,
        body.iter()
            .map(|&c| if c == b'c' { b'C' } else { c })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));

    // Rename and deletion.
    let a2 = a.with_file_name("a2.jsonl");
    std::fs::rename(&a, &a2).unwrap();
    std::fs::remove_file(&b).unwrap();
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    assert_eq!(st.removed, 2);
    drop(idx);

    // A corrupt index file is rebuilt; a foreign SQLite file too.
    std::fs::write(&ipath, b"this is not sqlite at all, just text........................................................................................").unwrap();
    let mut idx = Index::open(&ipath).unwrap();
    assert!(idx.rebuilt);
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    drop(idx);
    let _ = std::fs::remove_file(&ipath);
    {
        let c = rusqlite_free_foreign_db(&ipath);
        assert!(c);
    }
    let mut idx = Index::open(&ipath).unwrap();
    assert!(idx.rebuilt);
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
}

#[test]
fn listing_store_is_compacted_and_rebuilt_when_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let mut paths = Vec::new();
    for (k, cwd) in ["/w/a", "/w/b", "/w/c"].iter().enumerate() {
        paths.push(write_session(
            agent,
            cwd,
            &format!("s{k}.jsonl"),
            &line("u1", None, 1000 + k as u64, "user", "a first message"),
        ));
    }
    let ipath = Index::default_path(agent);
    let mut idx = Index::open(&ipath).unwrap();
    idx.set_compaction_floor_for_tests(0);
    let store = idx.listing_store_path().to_path_buf();
    // A second handle that keeps reading while the first compacts.
    let mut reader = Index::open(&ipath).unwrap();
    let (v, _) = index_json(&mut reader, agent);
    assert_eq!(v, scan_json(agent));
    let mut parent = "u1".to_string();
    for round in 0..12 {
        let id = format!("m{round}");
        append(
            &paths[round % 3],
            &line(
                &id,
                Some(&parent),
                5000 + round as u64,
                "user",
                &"more text ".repeat(40),
            ),
        );
        if round % 3 == 2 {
            parent = id;
        }
        let (v, _) = index_json(&mut idx, agent);
        assert_eq!(v, scan_json(agent));
        // Live listings are what a scan prints; the store holds at most as much again.
        let (scan, _) = json_bytes(&mut idx, agent);
        let size = std::fs::metadata(&store).unwrap().len();
        assert!(
            size <= 16 + 2 * scan.len() as u64,
            "round {round}: store {size} bytes for {} live",
            scan.len()
        );
        // The other handle's store file was replaced by a compaction: it notices.
        let (scan, stored) = json_bytes(&mut reader, agent);
        assert_eq!(scan, stored, "round {round}");
    }
    drop((idx, reader));

    // A missing, truncated or foreign store makes the index rebuild itself.
    let other = tempfile::tempdir().unwrap();
    let foreign = Index::open(&Index::default_path(other.path())).unwrap();
    let foreign_store = foreign.listing_store_path().to_path_buf();
    drop(foreign);
    let damage: [&dyn Fn(); 3] = [
        &|| std::fs::remove_file(&store).unwrap(),
        &|| {
            let len = std::fs::metadata(&store).unwrap().len();
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&store)
                .unwrap();
            f.set_len(len / 2).unwrap();
        },
        &|| {
            std::fs::copy(&foreign_store, &store).unwrap();
        },
    ];
    for (k, d) in damage.iter().enumerate() {
        let mut idx = Index::open(&ipath).unwrap();
        let (v, _) = index_json(&mut idx, agent);
        assert_eq!(v, scan_json(agent));
        drop(idx);
        d();
        let mut idx = Index::open(&ipath).unwrap();
        assert!(idx.rebuilt, "damage {k} not noticed");
        let (v, _) = index_json(&mut idx, agent);
        assert_eq!(v, scan_json(agent));
    }
}

/// Writes an SQLite file with another schema, without depending on rusqlite in the tests:
/// an index with a changed schema version.
fn rusqlite_free_foreign_db(path: &Path) -> bool {
    let mut idx = Index::open(path).unwrap();
    idx.set_schema_version_for_tests("older-version").unwrap();
    drop(idx);
    true
}

fn q(text: &str, mode: Mode) -> Query {
    Query {
        text: text.into(),
        mode,
        cwd: None,
        role: None,
        since_ms: None,
        until_ms: None,
        limit: 100,
    }
}

#[test]
fn search_finds_text_and_flags_abandoned_branches() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let body = line("u1", None, 1000, "user", "please fix foo_bar::Baz now")
        + &line(
            "a1",
            Some("u1"),
            2000,
            "assistant",
            "日本語のテキストを検索する",
        )
        + &line("u2", Some("a1"), 3000, "user", "an abandoned idea zebra")
        + &line("u3", Some("a1"), 4000, "user", "the kept branch zebra");
    write_session(agent, "/w/s", "s.jsonl", &body);
    write_session(
        agent,
        "/w/t",
        "t.jsonl",
        &line("x1", None, 5000, "user", "other cwd zebra"),
    );
    let mut idx = Index::open(&Index::default_path(agent)).unwrap();
    let files = list::all_files(agent);
    let sessions = agent.join("sessions");
    idx.refresh(
        &files,
        &sessiontree_index::index::all_scope(&sessions),
        1,
        &|_, _| {},
    )
    .unwrap();

    let h = idx.search(&q("foo_bar::Baz", Mode::Words)).unwrap();
    assert_eq!(h.len(), 1);
    assert!(
        h[0].snippet.contains("[[foo_bar::Baz]]"),
        "{}",
        h[0].snippet
    );
    assert_eq!(idx.search(&q("テキスト", Mode::Words)).unwrap().len(), 1);
    assert_eq!(idx.search(&q("検索", Mode::Words)).unwrap().len(), 1); // 2 chars: LIKE
    assert_eq!(
        idx.search(&q("kept branch", Mode::Phrase)).unwrap().len(),
        1
    );
    assert_eq!(
        idx.search(&q("branch kept", Mode::Phrase)).unwrap().len(),
        0
    );
    assert_eq!(idx.search(&q("branch kept", Mode::Words)).unwrap().len(), 1);
    assert_eq!(
        idx.search(&q("nowhere_to_be_found", Mode::Words))
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        idx.search(&q(r"foo_\w+::[A-Z]az", Mode::Regex))
            .unwrap()
            .len(),
        1
    );

    let z = idx.search(&q("zebra", Mode::Words)).unwrap();
    assert_eq!(z.len(), 3);
    let by_id = |id: &str| z.iter().find(|h| h.entry_id == id).unwrap().on_branch;
    assert!(!by_id("u2"), "abandoned branch flagged");
    assert!(by_id("u3"));
    let mut only = q("zebra", Mode::Words);
    only.cwd = Some(PathBuf::from("/w/t"));
    assert_eq!(idx.search(&only).unwrap().len(), 1);
    let mut role = q("日本語", Mode::Words);
    role.role = Some("user".into());
    assert_eq!(idx.search(&role).unwrap().len(), 0);
    let mut since = q("zebra", Mode::Words);
    since.since_ms = Some(3500.0);
    assert_eq!(idx.search(&since).unwrap().len(), 2);
}

#[test]
fn listing_refreshes_leave_texts_to_the_first_search() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let a = write_session(
        agent,
        "/w/a",
        "a.jsonl",
        &line("u1", None, 1000, "user", "the walrus speaks"),
    );
    let sessions = agent.join("sessions");
    let scope = sessiontree_index::index::all_scope(&sessions);
    let mut idx = Index::open(&Index::default_path(agent)).unwrap();
    let listing = |idx: &mut Index| {
        let files = list::with_stats(list::all_files(agent));
        sessiontree_index::index::listed(idx, &files, &scope, ListOptions::default(), &|_, _| {})
            .unwrap()
    };
    let texts = |idx: &mut Index| {
        idx.refresh(&list::all_files(agent), &scope, 1, &|_, _| {})
            .unwrap()
    };
    let (v, st) = listing(&mut idx);
    assert_eq!(v.len(), 1);
    assert_eq!(st.added, 1);
    // The first search reads the file again for its texts, then finds them; the listing,
    // unchanged, is not written again.
    let store = idx.listing_store_path().to_path_buf();
    let store_len = || std::fs::metadata(&store).unwrap().len();
    let before = store_len();
    let st = texts(&mut idx);
    assert_eq!(st.reread, 1);
    assert_eq!(store_len(), before);
    assert_eq!(idx.search(&q("walrus", Mode::Words)).unwrap().len(), 1);
    // A second search reads nothing.
    let st = texts(&mut idx);
    assert_eq!((st.unchanged, st.bytes_read), (1, 0));

    // Grown while only listings were refreshed: the listing reads just the new line, and
    // the texts, now behind, are redone by the next search.
    append(
        &a,
        &line("u2", Some("u1"), 2000, "user", "a narwhal answers"),
    );
    let (v, st) = listing(&mut idx);
    assert_eq!((st.appended, v[0].message_count), (1, 2));
    assert_eq!(v, list::list_all(agent, ListOptions::default()));
    let st = texts(&mut idx);
    assert_eq!(st.reread, 1);
    assert_eq!(idx.search(&q("narwhal", Mode::Words)).unwrap().len(), 1);
    assert_eq!(idx.search(&q("walrus", Mode::Words)).unwrap().len(), 1);
    // Grown again, now seen by a search directly: only the new bytes are read.
    let extra = line("u3", Some("u2"), 3000, "user", "an orca listens");
    append(&a, &extra);
    let st = texts(&mut idx);
    assert_eq!((st.appended, st.bytes_read), (1, extra.len() as u64));
    let z = idx.search(&q("orca", Mode::Words)).unwrap();
    assert_eq!(z.len(), 1);
    assert!(z[0].on_branch);
}
