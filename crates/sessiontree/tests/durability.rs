//! Durability and concurrency guarantees, and regression tests for each weakness of the
//! reference listed in FORMAT.md section 12.

mod common;

use sessiontree::{
    build_context, load, Creation, DiagnosticKind, Durability, Error, Json, LeafArg, Session,
    WriteOptions,
};
use sessiontree_testkit::agent::{user_hi as entry, HEADER as H};
use sessiontree_testkit::files::temp_file;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn opts(d: Durability) -> WriteOptions {
    WriteOptions {
        durability: d,
        creation: Creation::Eager,
        lock_wait: None,
        lock: true,
    }
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

/// A temp folder with the session `name`: the header and one entry `a1`.
fn one_entry(name: &str) -> (tempfile::TempDir, PathBuf) {
    temp_file(name, format!("{H}\n{}\n", entry("a1", None)))
}

fn lines(p: &Path) -> Vec<String> {
    let s = std::fs::read_to_string(p).unwrap();
    assert!(s.ends_with('\n'), "file must end on a clean line");
    s.lines().map(str::to_string).collect()
}

fn user(text: &str) -> Json {
    Json::from(serde_json::json!({"role":"user","content":text,"timestamp":1733234400000u64}))
}

// ---- torn tail -------------------------------------------------------------------------

#[test]
fn torn_tail_is_moved_to_sidecar_and_next_append_is_on_its_own_line() {
    let d = tempfile::tempdir().unwrap();
    let frag = r#"{"type":"message","id":"zz","parentId":"a1","mess"#;
    let content = format!("{H}\n{}\n{frag}", entry("a1", None));
    let p = write(d.path(), "t.jsonl", content.as_bytes());
    let torn_at = content.len() - frag.len();

    let mut s = Session::open(&p, opts(Durability::Entry)).unwrap();
    let id = s.append_message(&user("after the crash")).unwrap();
    drop(s);

    let side = d.path().join(format!("t.jsonl.torn-{torn_at}"));
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        frag,
        "fragment saved aside"
    );
    let ls = lines(&p);
    let last: serde_json::Value = serde_json::from_str(ls.last().unwrap()).unwrap();
    assert_eq!(last["id"], id.as_str());
    assert_eq!(
        last["parentId"], "a1",
        "the new entry hangs under the last intact entry"
    );
    let l = load(&p).unwrap();
    assert!(l.tree.contains(&id));
    // The fragment is still in the file (never rewritten in place), now a terminated
    // malformed line, not glued to the new entry.
    assert_eq!(ls[ls.len() - 2], frag);
    let kinds: Vec<_> = l.tree.diagnostics().iter().map(|d| d.kind).collect();
    assert_eq!(kinds, vec![DiagnosticKind::MalformedLine]);
}

#[test]
fn last_line_without_newline_that_parses_gets_its_newline() {
    let d = tempfile::tempdir().unwrap();
    let content = format!("{H}\n{}", entry("a1", None));
    let p = write(d.path(), "m.jsonl", content.as_bytes());
    let l = load(&p).unwrap();
    assert_eq!(l.tree.diagnostics()[0].kind, DiagnosticKind::MissingNewline);
    let mut s = Session::open(&p, opts(Durability::Entry)).unwrap();
    let id = s.append_message(&user("x")).unwrap();
    drop(s);
    let ls = lines(&p);
    assert_eq!(ls.len(), 3);
    assert_eq!(ls[1], entry("a1", None));
    let l = common::load_clean(&p);
    assert_eq!(
        l.tree
            .get_entry(&id)
            .unwrap()
            .str_field("parentId")
            .unwrap(),
        "a1"
    );
    // no sidecar for a line that was whole
    assert!(std::fs::read_dir(d.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains(".torn-")));
}

// ---- FORMAT.md 12: "No fsync" ------------------------------------------------------------

#[test]
fn weakness_no_fsync_entry_policy_syncs_every_append() {
    let d = tempfile::tempdir().unwrap();
    let mut s = Session::create("/w", Some(d.path()), opts(Durability::Entry), None).unwrap();
    for i in 0..5 {
        s.append_message(&user(&format!("m{i}"))).unwrap();
        let (len, synced) = s.durable_state().unwrap();
        assert_eq!(len, synced, "entry {i} acknowledged before it was fsynced");
        assert_eq!(len, std::fs::metadata(s.path().unwrap()).unwrap().len());
    }
}

#[test]
fn none_policy_does_not_sync_and_batch_syncs_on_demand() {
    let d = tempfile::tempdir().unwrap();
    let mut s = Session::create("/w", Some(d.path()), opts(Durability::None), None).unwrap();
    s.append_message(&user("a")).unwrap();
    let (len, synced) = s.durable_state().unwrap();
    assert!(synced < len);
    let batch = Durability::Batch {
        interval: Duration::from_secs(3600),
    };
    let mut b = Session::create("/w", Some(d.path()), opts(batch), None).unwrap();
    b.append_message(&user("a")).unwrap();
    let (len, synced) = b.durable_state().unwrap();
    assert!(synced < len, "batch waits for the interval");
    b.sync().unwrap();
    let (len, synced) = b.durable_state().unwrap();
    assert_eq!(synced, len);
    let fast = Durability::Batch {
        interval: Duration::ZERO,
    };
    let mut f = Session::create("/w", Some(d.path()), opts(fast), None).unwrap();
    f.append_message(&user("a")).unwrap();
    let (len, synced) = f.durable_state().unwrap();
    assert_eq!(synced, len, "an append after the interval fsyncs");
}

// ---- FORMAT.md 12: "torn-tail repair runs only on load ... a read writes" ---------------

#[test]
fn weakness_glued_append_after_a_torn_line_written_while_open() {
    // Another (unlocked) writer tears a line while our handle is open: our next append
    // must first move the fragment aside and end the line, never glue onto it.
    let (_d, p) = one_entry("g.jsonl");
    let mut o = opts(Durability::Entry);
    o.lock = false;
    let mut s = Session::open(&p, o).unwrap();
    let frag = r#"{"type":"custom","customType":"other","id":"b2","par"#;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(frag.as_bytes())
        .unwrap();
    let id = s.append_message(&user("mine")).unwrap();
    drop(s);
    let ls = lines(&p);
    assert_eq!(ls[ls.len() - 2], frag);
    let last: serde_json::Value = serde_json::from_str(ls.last().unwrap()).unwrap();
    assert_eq!(last["id"], id.as_str());
    assert!(load(&p).unwrap().tree.contains(&id));
}

#[test]
fn an_entry_appended_right_after_a_foreign_one_hangs_under_it() {
    // Pi does not take our lock: a line it adds while our handle is open must be seen by
    // the very next append (no window in which the new entry would fork the session).
    let (_d, p) = one_entry("f.jsonl");
    let mut s = Session::open(&p, opts(Durability::None)).unwrap();
    let mut parent = s.append_message(&user("first")).unwrap();
    for k in 0..20 {
        let foreign = format!("x{k}");
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(f, "{}", entry(&foreign, Some(&parent))).unwrap();
        drop(f);
        let mine = s.append_message(&user("mine")).unwrap();
        let e = s.tree().get_entry(&mine).unwrap();
        assert_eq!(e.parent.walk_id(), Some(foreign.as_str()), "round {k}");
        assert!(s.tree().contains(&foreign));
        parent = mine;
    }
    drop(s);
    let l = load(&p).unwrap();
    assert_eq!(l.tree.get_branch(None).len(), 2 + 2 * 20);
}

#[test]
fn weakness_no_more_appends_after_a_failed_write() {
    // After the handle saw the file in a state it cannot trust (here: shrunk under it),
    // it refuses every further write instead of appending blind.
    let (_d, p) = one_entry("s.jsonl");
    let mut s = Session::open(&p, opts(Durability::Entry)).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(H.len() as u64 + 1)
        .unwrap();
    assert!(matches!(
        s.append_message(&user("x")),
        Err(Error::Shrunk { .. })
    ));
    assert!(matches!(
        s.append_message(&user("y")),
        Err(Error::Poisoned { .. })
    ));
    assert_eq!(std::fs::metadata(&p).unwrap().len(), H.len() as u64 + 1);
}

fn snapshot(p: &Path) -> (Vec<u8>, i64, i64, u64) {
    let m = std::fs::metadata(p).unwrap();
    (
        std::fs::read(p).unwrap(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino(),
    )
}

#[test]
fn weakness_read_never_writes() {
    let d = tempfile::tempdir().unwrap();
    let torn = write(
        d.path(),
        "torn.jsonl",
        format!("{H}\n{}\n{{\"type\":\"mes", entry("a1", None)).as_bytes(),
    );
    let v1 = write(
        d.path(),
        "v1.jsonl",
        br#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"x","timestamp":2}}"#,
    );
    for p in [&torn, &v1] {
        let before = snapshot(p);
        std::thread::sleep(Duration::from_millis(20));
        let l = load(p).unwrap();
        let _ = build_context(&l.tree, LeafArg::Default);
        let _ = l.tree.tree_json();
        assert_eq!(snapshot(p), before, "{} changed by a read", p.display());
    }
    assert!(load(&v1).unwrap().migrated);
    // no sidecars, no lock files, no temp files
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
}

// ---- FORMAT.md 12: "Migration rewrites in place, and v1 migration can create duplicate ids"

#[test]
fn weakness_migration_writes_a_new_file_and_leaves_the_old_one_whole() {
    let d = tempfile::tempdir().unwrap();
    let mut v1 = String::from(
        r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    v1.push('\n');
    for i in 0..3000 {
        v1.push_str(&format!(
            r#"{{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{{"role":"user","content":"m{i}","timestamp":1}}}}"#
        ));
        v1.push('\n');
    }
    let p = write(d.path(), "v1.jsonl", v1.as_bytes());
    let ino = std::fs::metadata(&p).unwrap().ino();
    // A handle on the old file: an in-place rewrite would show through it.
    let mut old = std::fs::File::open(&p).unwrap();
    let s = Session::open(&p, opts(Durability::Entry)).unwrap();
    drop(s);
    assert_ne!(
        std::fs::metadata(&p).unwrap().ino(),
        ino,
        "migration must rename a new file in"
    );
    let mut seen = String::new();
    std::io::Read::read_to_string(&mut old, &mut seen).unwrap();
    assert_eq!(seen, v1, "the old file's bytes were touched");
    let l = load(&p).unwrap();
    assert!(!l.migrated);
    assert_eq!(l.tree.entries().len(), 3000);
    assert!(
        l.tree.diagnostics().is_empty(),
        "migrated ids must be unique and chained: {:?}",
        &l.tree.diagnostics()[..l.tree.diagnostics().len().min(3)]
    );
    // only the session (and no temp files) remain
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["v1.jsonl".to_string()]);
}

#[test]
fn weakness_migration_crash_before_rename_leaves_old_file() {
    // A failing rename (target is a non-empty folder) stands in for a crash between the
    // temp write and the rename: the target is untouched and the temp file is removed.
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("x.jsonl");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), b"k").unwrap();
    let r = sessiontree::store::atomic_replace(&target, &[b"new content\n"]);
    assert!(r.is_err());
    assert_eq!(std::fs::read(target.join("keep")).unwrap(), b"k");
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["x.jsonl".to_string()], "temp file left behind");
}

// ---- FORMAT.md 12: "A parentId cycle or a self-parent hangs or crashes it" ---------------

fn finishes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("did not finish in 20 s (hang on a cycle?)")
}

#[test]
fn weakness_cycle_or_self_parent_does_not_hang() {
    let d = tempfile::tempdir().unwrap();
    let content = format!(
        "{H}\n{}\n{}\n{}\n{}\n{}\n",
        entry("a", Some("c")),
        entry("b", Some("a")),
        entry("c", Some("b")),
        entry("s", Some("s")),
        entry("t", Some("s")),
    );
    let p = write(d.path(), "cyc.jsonl", content.as_bytes());
    let p2 = p.clone();
    let kinds = finishes(move || {
        let l = load(&p2).unwrap();
        for id in ["a", "b", "c", "s", "t"] {
            let _ = l.tree.get_branch(Some(id));
            let _ = build_context(&l.tree, LeafArg::Id(id));
        }
        let _ = l.tree.get_branch(None);
        let _ = build_context(&l.tree, LeafArg::Default);
        let _ = l.tree.get_tree();
        let _ = l.tree.tree_json();
        l.tree
            .diagnostics()
            .iter()
            .map(|d| d.kind)
            .collect::<Vec<_>>()
    });
    assert!(kinds.contains(&DiagnosticKind::Cycle), "{kinds:?}");
    // and a writer can still append to it
    let id = finishes(move || {
        let mut s = Session::open(&p, opts(Durability::None)).unwrap();
        s.append_message(&user("x")).unwrap()
    });
    assert!(!id.is_empty());
}

// ---- 6.2: a file with a bad header is never truncated --------------------------------------

#[test]
fn bad_header_file_is_never_touched_by_open() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[&[u8]] = &[
        b"[1]\n{\"type\":\"message\",\"id\":\"a\"}\n",
        b"{\"type\":\"session\"}\n{\"type\":\"message\",\"id\":\"a\"}\n",
        b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
        b"garbage\nmore garbage",
        b"\n\n   \n",
    ];
    for (i, c) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("bad{i}.jsonl"), c);
        let before = snapshot(&p);
        let r = Session::open(&p, opts(Durability::Entry));
        assert!(
            matches!(
                r,
                Err(Error::NotASession { .. }) | Err(Error::NoHeader { .. })
            ),
            "case {i}: {:?}",
            r.err()
        );
        assert_eq!(snapshot(&p), before, "case {i} was modified");
    }
    // A 0-byte file is the one case that gets a header.
    let p = write(d.path(), "empty.jsonl", b"");
    drop(Session::open(&p, opts(Durability::Entry)).unwrap());
    assert!(load(&p).is_ok());
}

// ---- FORMAT.md 12: "No lock" ------------------------------------------------------------

#[test]
fn weakness_no_lock_second_writer_is_refused_with_holder() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "l.jsonl", format!("{H}\n").as_bytes());
    let first = Session::open(&p, opts(Durability::Entry)).unwrap();
    match Session::open(&p, opts(Durability::Entry)) {
        Err(Error::Locked { path, holder }) => {
            assert_eq!(path, p);
            assert_eq!(holder.pid, Some(std::process::id()));
            assert!(holder.host.is_some());
            assert!(holder.since.is_some());
            let msg = Error::Locked { path, holder }.to_string();
            assert!(msg.contains(&std::process::id().to_string()), "{msg}");
        }
        other => panic!("expected Locked, got {:?}", other.err()),
    }
    // with a wait, the second writer gets in once the first is gone
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
    });
    let mut o = opts(Durability::Entry);
    o.lock_wait = Some(Duration::from_secs(10));
    let mut second = Session::open(&p, o).unwrap();
    second.append_message(&user("second")).unwrap();
    t.join().unwrap();
    drop(second);
    assert!(
        !sessiontree::store::lock_path(&p).exists(),
        "lock file removed on drop"
    );
}

// ---- simulated power loss (prefix model) -----------------------------------------------

/// A power loss keeps, in this model, every fsynced byte and any prefix of the bytes
/// written after the last fsync. After each acknowledged append we cut a copy of the file
/// at the fsynced length and at a random point past it, and check what survives.
#[test]
fn power_loss_prefix_model() {
    let d = tempfile::tempdir().unwrap();
    let mut seed: u64 = 0xDEAD_BEEF_1234_5679;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (name, policy) in [
        ("entry", Durability::Entry),
        (
            "batch",
            Durability::Batch {
                interval: Duration::from_millis(20),
            },
        ),
        ("none", Durability::None),
    ] {
        let dir = d.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let mut s = Session::create("/w", Some(&dir), opts(policy), None).unwrap();
        let path = s.path().unwrap().to_path_buf();
        let created_len = s.durable_state().unwrap().0;
        let mut acked: Vec<(String, u64)> = Vec::new(); // id, file length after it
        let mut lost_at_sync_cut = 0usize;
        for i in 0..60 {
            let pad = "y".repeat((rnd() % 20_000) as usize);
            let id = s
                .append_custom_entry(
                    "p",
                    Some(&Json::from(serde_json::json!({"i": i, "pad": pad}))),
                )
                .unwrap();
            if i % 7 == 0 {
                std::thread::sleep(Duration::from_millis(3));
            }
            let (len, synced) = s.durable_state().unwrap();
            acked.push((id, len));
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(bytes.len() as u64, len);
            // cut 1: only fsynced bytes survive (a new file's creation is fsynced too)
            // cut 2: fsynced bytes plus a random prefix of the rest
            // the file's creation (header) is fsynced by create_exclusive
            let synced = synced.max(created_len);
            let cut2 = synced + rnd() % (len - synced + 1);
            for (k, cut) in [synced, cut2].into_iter().enumerate() {
                let copy = dir.join(format!("cut{k}.jsonl"));
                std::fs::write(&copy, &bytes[..cut as usize]).unwrap();
                let l = load(&copy).expect("a cut file loads");
                for dg in l.tree.diagnostics() {
                    assert!(
                        matches!(dg.kind, DiagnosticKind::TornTail),
                        "{name}: cut at {cut}: {dg}"
                    );
                }
                for (id, after) in &acked {
                    let present = l.tree.contains(id);
                    if *after <= synced {
                        assert!(present, "{name}: fsynced entry {id} lost");
                    }
                    if *after <= cut {
                        assert!(present, "{name}: entry {id} within the cut lost");
                    }
                    if k == 0 && !present {
                        lost_at_sync_cut += 1;
                    }
                }
                if policy == Durability::Entry {
                    assert_eq!(synced, len, "entry policy acknowledged unsynced bytes");
                }
                if k == 0 && policy == Durability::None {
                    assert_eq!(synced, created_len, "none never fsyncs an append");
                }
                // a writer can continue after the "power loss"
                let mut w = Session::open(&copy, opts(Durability::Entry)).unwrap();
                w.append_message(&user("after")).unwrap();
                drop(w);
                let l = load(&copy).unwrap();
                assert!(l
                    .tree
                    .diagnostics()
                    .iter()
                    .all(|d| d.kind == DiagnosticKind::MalformedLine));
                std::fs::remove_file(&copy).unwrap();
                for e in std::fs::read_dir(&dir).unwrap() {
                    let p = e.unwrap().path();
                    if p.to_string_lossy().contains(".torn-") {
                        std::fs::remove_file(p).unwrap();
                    }
                }
            }
        }
        eprintln!("power-loss model [{name}]: acknowledged entries a power loss would lose, summed over 60 cut points (worst case: only fsynced bytes survive): {lost_at_sync_cut}");
        if policy == Durability::Entry {
            assert_eq!(lost_at_sync_cut, 0);
        }
    }
}

#[test]
fn lock_holds_across_symlinked_paths() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let p = write(&real, "s.jsonl", format!("{H}\n").as_bytes());
    let via_dir = d.path().join("alias");
    std::os::unix::fs::symlink(&real, &via_dir).unwrap();
    let via_file = d.path().join("link.jsonl");
    std::os::unix::fs::symlink(&p, &via_file).unwrap();
    let first = Session::open(&p, opts(Durability::Entry)).unwrap();
    for other in [via_dir.join("s.jsonl"), via_file] {
        assert!(
            matches!(
                Session::open(&other, opts(Durability::Entry)),
                Err(Error::Locked { .. })
            ),
            "{} got a second writer",
            other.display()
        );
    }
    drop(first);
    assert!(Session::open(&via_dir.join("s.jsonl"), opts(Durability::Entry)).is_ok());
}

#[test]
fn second_writer_waiting_on_a_new_file_sees_what_the_first_wrote() {
    // A opens a path that does not exist yet (file appears at the first message); B opens
    // the same path and waits for the lock. When B gets in, the file exists: B must load
    // it and continue the chain, not try to create it again.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("new.jsonl");
    let mut o = opts(Durability::Entry);
    o.creation = Creation::OnFirstMessage;
    let mut a = Session::open(&p, o).unwrap();
    let p2 = p.clone();
    let b = std::thread::spawn(move || {
        let mut o = opts(Durability::Entry);
        o.lock_wait = Some(Duration::from_secs(10));
        let mut b = Session::open(&p2, o).unwrap();
        b.append_message(&user("from b"))
    });
    std::thread::sleep(Duration::from_millis(200));
    let a_id = a.append_message(&user("from a")).unwrap();
    drop(a);
    let b_id = b.join().unwrap().expect("B appends after A");
    let l = load(&p).unwrap();
    assert_eq!(
        l.tree
            .get_entry(&b_id)
            .unwrap()
            .str_field("parentId")
            .unwrap(),
        a_id
    );
}

/// Disk full: the write fails with ENOSPC (`/dev/full` fails every write that way), the
/// error says what was not written, and the appender refuses every later write instead of
/// guessing where the file ends.
#[test]
fn disk_full_poisons_the_appender_and_says_what_was_not_written() {
    use sessiontree::store::{Appender, Durability};
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        eprintln!("SKIPPED: no /dev/full here");
        return;
    }
    let mut app = Appender::open(full, 0, Durability::None).unwrap();
    let err = app
        .append(b"{\"type\":\"custom\"}\n", &"entry abc12345")
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(msg.contains("entry abc12345 was not written"), "{msg}");
    let again = app.append(b"{}\n", &"entry next").unwrap_err();
    assert!(
        matches!(again, sessiontree::Error::Poisoned { .. }),
        "{again}"
    );
    assert!(
        again.to_string().contains("refuses further writes"),
        "{again}"
    );
}

/// Files written aside (import's many new files) have no name until linked, after one sync
/// of their file system; a taken name is refused and leaves the other file alone; nothing
/// stays behind under a temporary name either way.
#[test]
fn files_written_aside_appear_whole_only_when_linked() {
    let dir = tempfile::tempdir().unwrap();
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let aside_a = sessiontree::store::write_aside(&a, &[b"{\"x\":", b"1}\n"]).unwrap();
    let aside_b = sessiontree::store::write_aside(&b, &[b"new\n"]).unwrap();
    assert_eq!(aside_a.path(), a.as_path());
    assert!(!a.exists() && !b.exists());
    assert_eq!(names(dir.path()).len(), 2, "two files aside");
    std::fs::write(&b, b"someone else's\n").unwrap();
    sessiontree::store::sync_file_systems([dir.path()]).unwrap();
    aside_a.link().unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"{\"x\":1}\n");
    match aside_b.link() {
        Err(sessiontree::Error::Exists { path }) => assert_eq!(path, b),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&b).unwrap(), b"someone else's\n");
    assert_eq!(names(dir.path()), vec!["a.jsonl", "b.jsonl"]);
    // Dropped without a link: gone.
    let c = dir.path().join("c.jsonl");
    drop(sessiontree::store::write_aside(&c, &[b"x\n"]).unwrap());
    assert_eq!(names(dir.path()), vec!["a.jsonl", "b.jsonl"]);
}
