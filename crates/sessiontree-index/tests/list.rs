//! Listing and index tests. The parity test runs the reference (interop/) when available:
//! skipped with a message otherwise, unless `SESSIONTREE_REQUIRE_INTEROP=1`.

use serde_json::Value;
use sessiontree::list::{self, ListOptions};
use std::path::{Path, PathBuf};

use sessiontree_testkit::interop::{available, node};

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

use sessiontree_testkit::agent::{message as line, write_session};

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

/// A session written by `sessiontree import` is recognised by the marks the import leaves
/// in its entries, in a full scan and in the index (also when the mark only arrives in an
/// appended part, which the index reads by resuming its stored pass), and `ls --json`
/// carries it as `importedFrom`; Pi's own sessions, custom entries of other extensions
/// included, are not marked.
#[test]
fn imported_sessions_are_marked_from_the_entries_the_import_writes() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let claude_user = "{\"type\":\"message\",\"id\":\"c1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1000,\"claudeCode\":{\"uuid\":\"u-1\"}}}\n";
    let claude = write_session(agent, "/w/a", "claude.jsonl", claude_user);
    let codex_ctx = "{\"type\":\"custom_message\",\"customType\":\"codex:context\",\"content\":[],\"display\":false,\"id\":\"x0\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n";
    let codex = write_session(
        agent,
        "/w/a",
        "codex.jsonl",
        &(codex_ctx.to_string() + &line("x1", Some("x0"), 2000, "user", "go")),
    );
    let tool = "{\"type\":\"message\",\"id\":\"t1\",\"parentId\":\"p1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"call_1\",\"toolName\":\"shell\",\"content\":[],\"details\":{\"source\":\"codex\"},\"isError\":false,\"timestamp\":3000}}\n";
    let later = write_session(
        agent,
        "/w/b",
        "later.jsonl",
        &line("p1", None, 2500, "user", "first part: nothing imported yet"),
    );
    let pi_ext = "{\"type\":\"custom\",\"customType\":\"my-extension:state\",\"data\":{},\"id\":\"e1\",\"parentId\":\"u1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n";
    let pi = write_session(
        agent,
        "/w/b",
        "pi.jsonl",
        &(line(
            "u1",
            None,
            500,
            "user",
            "a Pi session mentioning claudeCode and codex:",
        ) + pi_ext),
    );
    let marks = |v: &[Value]| -> Vec<(String, Option<String>)> {
        let mut m: Vec<_> = v
            .iter()
            .map(|s| {
                (
                    s["path"]
                        .as_str()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_string(),
                    s.get("importedFrom")
                        .map(|a| a.as_str().unwrap().to_string()),
                )
            })
            .collect();
        m.sort();
        m
    };
    let ipath = Index::default_path(agent);
    let mut idx = Index::open(&ipath).unwrap();
    let (v, _) = index_json(&mut idx, agent);
    assert_eq!(v, scan_json(agent));
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        marks(&v),
        vec![
            ("claude.jsonl".into(), some("claude-code")),
            ("codex.jsonl".into(), some("codex")),
            ("later.jsonl".into(), None),
            ("pi.jsonl".into(), None),
        ]
    );
    // The mark arrives in an appended part: read from the stored pass state.
    append(&later, tool);
    let (v, st) = index_json(&mut idx, agent);
    assert_eq!(st.appended, 1);
    assert_eq!(v, scan_json(agent));
    assert_eq!(marks(&v)[2], ("later.jsonl".into(), some("codex")));
    let infos = idx
        .infos(&sessiontree_index::index::all_scope(
            &agent.join("sessions"),
        ))
        .unwrap();
    let by_name = |n: &str| {
        infos
            .iter()
            .find(|i| i.path.file_name().unwrap() == n)
            .unwrap()
            .imported
            .clone()
    };
    assert_eq!(by_name("claude.jsonl"), some("claude-code"));
    assert_eq!(by_name("pi.jsonl"), None);
    let _ = (claude, codex, pi);
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
    Query::new(text, mode, 100)
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
    let files = list::all_files_stat(agent);
    let search = |q: &Query| {
        sessiontree_index::search::search(&files, q, None, 2)
            .unwrap()
            .0
    };

    let h = search(&q("foo_bar::Baz", Mode::Words));
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].snippet, "please fix foo_bar::Baz now");
    assert_eq!(h[0].highlights, vec![(11, 23)]);
    assert_eq!(h[0].matches, vec![(11, 23)]);
    assert_eq!(search(&q("テキスト", Mode::Words)).len(), 1);
    assert_eq!(search(&q("検索", Mode::Words)).len(), 1);
    assert_eq!(search(&q("kept branch", Mode::Phrase)).len(), 1);
    assert_eq!(search(&q("branch kept", Mode::Phrase)).len(), 0);
    let both = search(&q("branch kept", Mode::Words));
    assert_eq!(both.len(), 1);
    // Every word highlighted, in text order.
    assert_eq!(both[0].highlights, vec![(4, 8), (9, 15)]);
    assert_eq!(search(&q("nowhere_to_be_found", Mode::Words)).len(), 0);
    assert_eq!(search(&q(r"foo_\w+::[A-Z]az", Mode::Regex)).len(), 1);

    let z = search(&q("zebra", Mode::Words));
    assert_eq!(z.len(), 3);
    let by_id = |id: &str| z.iter().find(|h| h.entry_id == id).unwrap().on_branch;
    assert!(!by_id("u2"), "abandoned branch flagged");
    assert!(by_id("u3"));
    let mut only = q("zebra", Mode::Words);
    only.cwd = Some(PathBuf::from("/w/t"));
    assert_eq!(search(&only).len(), 1);
    let mut role = q("日本語", Mode::Words);
    role.role = Some("user".into());
    assert_eq!(search(&role).len(), 0);
    let mut since = q("zebra", Mode::Words);
    since.since_ms = Some(3500.0);
    assert_eq!(search(&since).len(), 2);
}

/// Issue 11: the index never answers from damaged or stale data.
#[test]
fn index_notices_damage_in_place_edits_replacements_and_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let mut paths = Vec::new();
    for k in 0..4 {
        paths.push(write_session(
            agent,
            "/w/a",
            &format!("s{k}.jsonl"),
            &line("u1", None, 1000 + k, "user", &format!("first message {k}")),
        ));
    }
    let ipath = Index::default_path(agent);
    let sessions = agent.join("sessions");
    let scope = sessiontree_index::index::all_scope(&sessions);
    let listed = |idx: &mut Index| -> Vec<u8> {
        let files = list::all_files_stat(agent);
        let (v, _) = sessiontree_index::index::listed(
            idx,
            &files,
            &scope,
            ListOptions::default(),
            &|_, _| {},
        )
        .unwrap();
        let mut out = Vec::new();
        idx.write_json(v.iter().map(|i| i.path.as_path()), &mut out)
            .unwrap();
        out
    };
    let scanned = || {
        let mut out = Vec::new();
        for (n, i) in list::list_all(agent, ListOptions::default())
            .iter()
            .enumerate()
        {
            if n > 0 {
                out.push(b',');
            }
            i.write_json(&mut out).unwrap();
        }
        out
    };
    let mut idx = Index::open(&ipath).unwrap();
    assert_eq!(listed(&mut idx), scanned());

    // One flipped byte in the listing store: noticed, that listing read again.
    let store = idx.listing_store_path().to_path_buf();
    drop(idx);
    let mut b = std::fs::read(&store).unwrap();
    let at = b.windows(15).position(|w| w == b"first message 2").unwrap();
    b[at + 14] = b'7';
    std::fs::write(&store, &b).unwrap();
    let mut idx = Index::open(&ipath).unwrap();
    assert_eq!(listed(&mut idx), scanned());

    // An in-place edit that restores size and mtime.
    let p = &paths[1];
    let meta = std::fs::metadata(p).unwrap();
    let body = std::fs::read_to_string(p)
        .unwrap()
        .replace("first message 1", "first massage 1");
    sessiontree_testkit::files::overwrite_unseen(p, body.as_bytes());
    assert_eq!(std::fs::metadata(p).unwrap().len(), meta.len());
    assert_eq!(listed(&mut idx), scanned());
    assert!(String::from_utf8_lossy(&listed(&mut idx)).contains("first massage 1"));

    // Replaced by a new inode of the same size and mtime (what sed -i does).
    let p = &paths[2];
    let body = std::fs::read_to_string(p)
        .unwrap()
        .replace("first message 2", "FIRST MESSAGE 2");
    sessiontree_testkit::files::replace_unseen(p, body.as_bytes());
    assert_eq!(listed(&mut idx), scanned());
    assert!(String::from_utf8_lossy(&listed(&mut idx)).contains("FIRST MESSAGE 2"));

    // Unreadable: a dangling link, a folder, no longer a session. A scan leaves them out;
    // so does the index.
    std::fs::remove_file(&paths[0]).unwrap();
    std::os::unix::fs::symlink(agent.join("nowhere"), &paths[0]).unwrap();
    std::fs::remove_file(&paths[1]).unwrap();
    std::fs::create_dir(&paths[1]).unwrap();
    let meta = std::fs::metadata(&paths[3]).unwrap();
    let body =
        std::fs::read_to_string(&paths[3])
            .unwrap()
            .replacen("\"session\"", "\"sessioN\"", 1);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&paths[3])
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&paths[3])
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    let got = listed(&mut idx);
    assert_eq!(got, scanned());
    assert_eq!(list::list_all(agent, ListOptions::default()).len(), 1);
}

/// The rows `ls` keeps per scope ([`sessiontree_index::index::listed_rows`]) are what a
/// full scan lists, in its order (ties in time kept in the candidate order), through every
/// kind of change: appends, new, removed, renamed and re-timed sessions, files that are no
/// sessions or stop being one, times that tie or are invalid. Kept rows of files whose stat
/// is unchanged are reused; the rest are listed anew.
#[test]
fn kept_rows_follow_every_change_as_a_full_scan_lists() {
    use sessiontree_index::index::{listed_rows, rows_key, Row};
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path();
    let sessions = agent.join("sessions");
    let mut rng = sessiontree_testkit::Rng(0x0b5e_55ed);
    let cwds = ["/w/a", "/w/b", "/w/c"];
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut n = 0;
    let mut new_session = |rng: &mut sessiontree_testkit::Rng, paths: &mut Vec<PathBuf>| {
        n += 1;
        let cwd = cwds[rng.pick(cwds.len())];
        let body = match rng.pick(6) {
            // No message: modified is the header's time.
            0 => String::new(),
            _ => line(
                "u1",
                None,
                1000 * rng.pick(4) as u64,
                "user",
                &format!("task {n}"),
            ),
        };
        let p = write_session(agent, cwd, &format!("s{n}.jsonl"), &body);
        paths.push(p);
    };
    for _ in 0..20 {
        new_session(&mut rng, &mut paths);
    }
    let ipath = Index::default_path(agent);
    let mut idx = Index::open(&ipath).unwrap();
    let key = rows_key(None, &sessions);
    let scope = sessiontree_index::index::all_scope(&sessions);
    let opts = ListOptions::default();
    let shown = |r: &Row<'_>| {
        (
            r.path.to_path_buf(),
            r.modified_ms.to_bits(),
            r.message_count,
            r.name.map(str::to_string),
            r.first_message.to_string(),
            r.cwd.to_string(),
        )
    };
    let shown_infos = |v: &[list::SessionInfo]| -> Vec<_> {
        let texts: Vec<_> = v.iter().map(Row::texts_of).collect();
        v.iter()
            .zip(&texts)
            .map(|(i, t)| shown(&Row::of(i, t)))
            .collect()
    };
    for round in 0..80 {
        match rng.pick(8) {
            0 => new_session(&mut rng, &mut paths),
            1 if !paths.is_empty() => {
                let p = paths.swap_remove(rng.pick(paths.len()));
                std::fs::remove_file(p).unwrap();
            }
            2 if !paths.is_empty() => {
                let k = rng.pick(paths.len());
                let to = paths[k].with_file_name(format!("r{round}.jsonl"));
                std::fs::rename(&paths[k], &to).unwrap();
                paths[k] = to;
            }
            3 if !paths.is_empty() => {
                // Another file's mtime: candidates in another order, times tied.
                let (a, b) = (rng.pick(paths.len()), rng.pick(paths.len()));
                let t = std::fs::metadata(&paths[a]).unwrap().modified().unwrap();
                let f = std::fs::File::options()
                    .write(true)
                    .open(&paths[b])
                    .unwrap();
                f.set_modified(t).unwrap();
            }
            4 => {
                // A file that is no session, then perhaps one that stops being one.
                let d = sessions.join("--w-a--");
                std::fs::write(d.join(format!("junk{round}.jsonl")), b"not json\n").unwrap();
                if !paths.is_empty() && rng.pick(2) == 0 {
                    let p = paths.swap_remove(rng.pick(paths.len()));
                    std::fs::write(p, b"{\"type\":\"nothing\"}\n").unwrap();
                }
            }
            5 if !paths.is_empty() => {
                let p = &paths[rng.pick(paths.len())];
                let text = format!("{{\"type\":\"session_info\",\"id\":\"n{round}\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"name\":\"named {round}\"}}\n");
                append(p, &text);
            }
            _ if !paths.is_empty() => {
                let p = &paths[rng.pick(paths.len())];
                let ts = 1000 * rng.pick(6) as u64;
                append(p, &line(&format!("x{round}"), None, ts, "user", "more"));
            }
            _ => {}
        }
        let files = list::all_files_stat(agent);
        let (l, st) = listed_rows(&mut idx, &files, None, &scope, &key, opts, &|_, _| {}).unwrap();
        let got: Vec<_> = l.rows().iter().map(shown).collect();
        let want = shown_infos(&list::list_all(agent, opts));
        assert_eq!(got, want, "round {round}");
        // The rows the index keeps for `ls --json` agree too (the kept rows' refreshes
        // touch only the changed files' rows).
        if round % 4 == 0 {
            let (v, _) =
                sessiontree_index::index::listed(&mut idx, &files, &scope, opts, &|_, _| {})
                    .unwrap();
            assert_eq!(shown_infos(&v), want, "round {round}: listed");
        }
        // Asked again with nothing changed: from the kept rows, the same.
        let (again, st2) =
            listed_rows(&mut idx, &files, None, &scope, &key, opts, &|_, _| {}).unwrap();
        assert_eq!(again.rows().iter().map(shown).collect::<Vec<_>>(), want);
        assert_eq!((st2.reread, st2.appended, st2.added), (0, 0, 0));
        // A change of one file (two at most) reads that file: the others' rows are kept.
        if round > 0 {
            assert!(
                st.added + st.reread + st.appended <= 2,
                "round {round}: {st:?}"
            );
        }
    }
}
