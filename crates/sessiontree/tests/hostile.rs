//! Hostile conditions around the store: links and odd objects at the lock path, sessions
//! reached through symlinks, special files in session folders, taken sidecar names, lines
//! still being written, temp files of killed rewrites. Each test names the attack.

mod common;

use sessiontree::{load, repair, Creation, Durability, Error, Json, Session, WriteOptions};
use sessiontree_testkit::agent::{user_hi as entry, HEADER as H};
use std::path::{Path, PathBuf};
use std::time::Duration;

const H2: &str =
    r#"{"type":"session","version":2,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#;

fn opts() -> WriteOptions {
    WriteOptions {
        durability: Durability::Entry,
        creation: Creation::Eager,
        lock_wait: None,
        lock: true,
    }
}

fn user(text: &str) -> Json {
    Json::from(serde_json::json!({"role":"user","content":text,"timestamp":1733234400000u64}))
}

fn session_file(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("{H}\n{}\n", entry("a1", None))).unwrap();
    p
}

fn lock_of(p: &Path) -> PathBuf {
    PathBuf::from(format!("{}.lock", p.display()))
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success());
}

/// Runs `f` on a thread; fails the test if it does not return within `secs`.
fn within<T: Send + 'static>(secs: f64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs_f64(secs)) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not return within {secs} s"),
    }
}

use sessiontree_testkit::files::names;

// ---- the lock file never follows links ---------------------------------------------------

/// A session whose lock path `link` makes a link to another file (the victim): opening the
/// session is refused with an error naming the lock and `says`, and the victim is as it was.
fn lock_linked_to_a_victim(
    link: fn(&Path, &Path) -> std::io::Result<()>,
    says: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = session_file(d.path(), "s.jsonl");
    let victim = d.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    link(&victim, &lock_of(&p)).unwrap();
    let e = Session::open(&p, opts()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("s.jsonl.lock") && msg.contains(says), "{msg}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    (d, p, victim)
}

#[test]
fn lock_symlink_to_another_file_is_refused_and_the_target_untouched() {
    let (_d, p, victim) =
        lock_linked_to_a_victim(|v, l| std::os::unix::fs::symlink(v, l), "symlink");

    // repair takes the same lock.
    std::fs::write(&p, format!("{H}\nnot json\n{}\n", entry("a1", None))).unwrap();
    assert!(repair::apply(&p, &Default::default(), None).is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(lock_of(&p))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn lock_symlink_to_the_session_itself_leaves_the_session_whole() {
    let d = tempfile::tempdir().unwrap();
    let p = session_file(d.path(), "s.jsonl");
    let before = std::fs::read(&p).unwrap();
    std::os::unix::fs::symlink(&p, lock_of(&p)).unwrap();
    let e = Session::open(&p, opts()).unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert!(load(&p).unwrap().tree.contains("a1"));
}

#[test]
fn lock_hard_link_to_another_file_is_refused() {
    lock_linked_to_a_victim(|v, l| std::fs::hard_link(v, l), "link");
}

#[test]
fn lock_path_that_is_a_folder_or_fifo_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let p = session_file(d.path(), "dir.jsonl");
    std::fs::create_dir(lock_of(&p)).unwrap();
    let e = Session::open(&p, opts()).unwrap_err();
    assert!(e.to_string().contains("folder"), "{e}");

    let q = session_file(d.path(), "fifo.jsonl");
    mkfifo(&lock_of(&q));
    let q2 = q.clone();
    let e = within(2.0, "open with a FIFO lock", move || {
        Session::open(&q2, opts()).map(|_| ())
    })
    .unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
}

#[test]
fn lock_holder_info_is_written_only_after_the_lock_is_ours() {
    let d = tempfile::tempdir().unwrap();
    let p = session_file(d.path(), "s.jsonl");
    let s = Session::open(&p, opts()).unwrap();
    let info = std::fs::read_to_string(lock_of(&p)).unwrap();
    assert!(
        info.contains(&format!("\"pid\":{}", std::process::id())),
        "{info}"
    );
    // A second writer that fails to lock does not touch the holder's record.
    let e = Session::open(&p, opts()).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert_eq!(std::fs::read_to_string(lock_of(&p)).unwrap(), info);
    drop(s);
    assert!(!lock_of(&p).exists());
}

// ---- rewrites through a symlinked session act on the real file ----------------------------

/// `<tmp>/real/s.jsonl` holding `text`, and the link `<tmp>/links/s.jsonl` to it.
fn linked(text: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let (real_dir, link_dir) = (d.path().join("real"), d.path().join("links"));
    std::fs::create_dir_all(&real_dir).unwrap();
    std::fs::create_dir_all(&link_dir).unwrap();
    let real = real_dir.join("s.jsonl");
    std::fs::write(&real, text).unwrap();
    let link = link_dir.join("s.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    (d, real, link)
}

#[test]
fn migration_through_a_symlink_rewrites_the_real_file_and_keeps_the_link() {
    let (_d, real, link) = linked(&format!("{H2}\n{}\n", entry("a1", None)));

    let mut s = Session::open(&link, opts()).unwrap();
    let id = s.append_message(&user("through the link")).unwrap();
    drop(s);

    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let l = load(&real).unwrap();
    assert!(l.tree.contains(&id), "the real file holds the new entry");
    assert_eq!(l.tree.header().version(), Some(3.0));
    assert_eq!(
        names(link.parent().unwrap()),
        vec!["s.jsonl"],
        "nothing left beside the link"
    );
}

#[test]
fn repair_through_a_symlink_repairs_the_real_file_with_backup_beside_it() {
    let damaged = format!("{H}\nnot json\n{}\n", entry("a1", None));
    let (_d, real, link) = linked(&damaged);

    let r = repair::apply(&link, &Default::default(), None).unwrap();
    let backup = r.backup.unwrap();
    assert_eq!(
        backup.parent().unwrap(),
        real.parent().unwrap().canonicalize().unwrap()
    );
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), damaged);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        format!("{H}\n{}\n", entry("a1", None))
    );
    assert_eq!(names(link.parent().unwrap()), vec!["s.jsonl"]);
}

#[test]
fn torn_sidecar_through_a_symlink_lands_beside_the_real_file() {
    let content = format!("{H}\n{}\n{{\"type\":\"mess", entry("a1", None));
    let (_d, real, link) = linked(&content);
    let mut s = Session::open(&link, opts()).unwrap();
    s.append_message(&user("x")).unwrap();
    drop(s);
    assert_eq!(names(link.parent().unwrap()), vec!["s.jsonl"]);
    assert!(names(real.parent().unwrap())
        .iter()
        .any(|n| n.starts_with("s.jsonl.torn-")));
}

// ---- special files are never read, never get a lock or sidecar ----------------------------

#[test]
fn special_files_are_refused_by_load_and_open_at_once() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("f.jsonl");
    mkfifo(&fifo);
    let zero = d.path().join("z.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for p in [fifo, zero] {
        let p2 = p.clone();
        let e = within(1.0, "load of a special file", move || load(&p2).map(|_| ())).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let p2 = p.clone();
        let e = within(1.0, "open of a special file", move || {
            Session::open(&p2, opts()).map(|_| ())
        })
        .unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let p2 = p.clone();
        assert!(within(1.0, "repair of a special file", move || {
            repair::apply(&p2, &Default::default(), None).map(|_| ())
        })
        .is_err());
        assert!(!lock_of(&p).exists(), "no lock beside {}", p.display());
    }
    assert!(!Path::new("/dev/zero.lock").exists());
    assert_eq!(names(d.path()), vec!["f.jsonl", "z.jsonl"]);
}

#[test]
fn listings_skip_special_files_quickly() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("sessions").join("--w--");
    std::fs::create_dir_all(&dir).unwrap();
    session_file(&dir, "2024-12-03T14-00-00-000Z_s1.jsonl");
    mkfifo(&dir.join("fifo.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
    let agent = d.path().to_path_buf();
    let all = within(1.0, "list_all", move || {
        sessiontree::list::list_all(&agent, Default::default())
    });
    assert_eq!(all.len(), 1);
    let dir2 = dir.clone();
    let one = within(1.0, "list_dir", move || {
        sessiontree::list::list_dir(&dir2, Default::default())
    });
    assert_eq!(one.len(), 1);
    let dir2 = dir.clone();
    let recent = within(1.0, "most_recent", move || {
        sessiontree::folder::most_recent("/w", Some(&dir2))
    });
    assert!(recent
        .unwrap()
        .ends_with("2024-12-03T14-00-00-000Z_s1.jsonl"));
}

// ---- torn tails: free sidecar names, lines still being written -----------------------------

#[test]
fn taken_sidecar_name_gets_a_free_one_and_both_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let frag = r#"{"type":"message","id":"zz","mess"#;
    let content = format!("{H}\n{}\n{frag}", entry("a1", None));
    let p = d.path().join("t.jsonl");
    std::fs::write(&p, &content).unwrap();
    let at = content.len() - frag.len();
    let taken = d.path().join(format!("t.jsonl.torn-{at}"));
    std::fs::write(&taken, "someone else's bytes").unwrap();

    let mut s = Session::open(&p, opts()).unwrap();
    s.append_message(&user("after")).unwrap();
    drop(s);
    assert_eq!(
        std::fs::read_to_string(&taken).unwrap(),
        "someone else's bytes"
    );
    let sides: Vec<_> = names(d.path())
        .into_iter()
        .filter(|n| n.starts_with("t.jsonl.torn-") && *n != format!("t.jsonl.torn-{at}"))
        .collect();
    assert_eq!(sides.len(), 1, "{sides:?}");
    assert_eq!(
        std::fs::read_to_string(d.path().join(&sides[0])).unwrap(),
        frag
    );
}

#[test]
fn a_last_line_still_being_written_is_not_taken_for_a_torn_tail() {
    let d = tempfile::tempdir().unwrap();
    let line = entry("b2", Some("a1"));
    let (head, rest) = line.split_at(line.len() / 2);
    let p = d.path().join("g.jsonl");
    std::fs::write(&p, format!("{H}\n{}\n{head}", entry("a1", None))).unwrap();

    let mut s = Session::open(&p, opts()).unwrap();
    // Another (lock-less) writer finishes its line a moment later, in pieces.
    let p2 = p.clone();
    let rest = format!("{rest}\n");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&p2).unwrap();
        for chunk in rest.as_bytes().chunks(rest.len() / 3 + 1) {
            std::thread::sleep(Duration::from_millis(15));
            f.write_all(chunk).unwrap();
        }
    });
    let id = s.append_message(&user("mine")).unwrap();
    writer.join().unwrap();
    drop(s);

    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.contains(&format!("{line}\n")),
        "the other line is whole:\n{text}"
    );
    assert!(
        !names(d.path()).iter().any(|n| n.contains(".torn-")),
        "no sidecar for a line in progress"
    );
    let l = common::load_clean(&p);
    assert_eq!(
        l.tree.get_entry(&id).unwrap().parent.walk_id(),
        Some("b2"),
        "our entry hangs under the line that was being written"
    );
}

// ---- temp files of killed rewrites ---------------------------------------------------------

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn stale_temp_files_of_dead_rewrites_are_removed_on_the_next_rewrite() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    std::fs::write(&p, format!("{H2}\n{}\n", entry("a1", None))).unwrap();
    // Written an hour ago.
    let old = |p: &Path, text: &str| {
        std::fs::write(p, text).unwrap();
        let f = std::fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
    };
    let dead = dead_pid();
    let stale = d.path().join(format!(".s.jsonl.tmp-{dead}-deadbeef"));
    let stale_side = d
        .path()
        .join(format!(".s.jsonl.torn-77.tmp-{dead}-0123abcd"));
    for p in [&stale, &stale_side] {
        old(p, "old copy");
    }
    // Kept: a fresh one (its rewrite may still run elsewhere), one of a live process, and
    // files that only look similar.
    let fresh = d
        .path()
        .join(format!(".s.jsonl.tmp-{}-cafecafe", dead_pid()));
    std::fs::write(&fresh, "new copy").unwrap();
    let live = d.path().join(".s.jsonl.tmp-1-0badf00d");
    old(&live, "init's");
    let other = d.path().join(format!(".t.jsonl.tmp-{dead}-deadbeef"));
    let similar = d.path().join(format!(".s.jsonl.x.tmp-{dead}-deadbeef"));
    for p in [&other, &similar] {
        old(p, "not ours");
    }

    // Migration is a rewrite.
    drop(Session::open(&p, opts()).unwrap());
    let n = names(d.path());
    assert!(
        !n.contains(&stale.file_name().unwrap().to_string_lossy().into_owned()),
        "{n:?}"
    );
    for keep in [&fresh, &live, &other] {
        assert!(keep.exists(), "{} kept", keep.display());
    }
    assert!(load(&p).unwrap().tree.header().version() == Some(3.0));
}

/// A killed import leaves every new file of its run under a temporary name (they are named
/// only after one sync): the next import into the folder removes those of dead processes
/// once untouched for a while, and nothing else.
#[test]
fn stale_temp_files_of_a_dead_bulk_writer_are_removed_folder_wide() {
    let d = tempfile::tempdir().unwrap();
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    let dead = dead_pid();
    let age = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap()
    };
    let stale: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            d.path().join(format!(
                ".2025-10-02T09-00-00-000Z_{n}.jsonl.tmp-{dead}-deadbeef"
            ))
        })
        .collect();
    for p in &stale {
        std::fs::write(p, "half an import").unwrap();
        age(p);
    }
    let fresh = d
        .path()
        .join(format!(".f.jsonl.tmp-{}-cafecafe", dead_pid()));
    std::fs::write(&fresh, "a run in progress elsewhere").unwrap();
    let live = d.path().join(".l.jsonl.tmp-1-0badf00d");
    let not_temp = d.path().join(format!(".n.jsonl.tmp-{dead}-nothex00"));
    let session = d.path().join(format!("s.jsonl.tmp-{dead}-deadbeef"));
    let other = d.path().join(format!(".o.txt.tmp-{dead}-deadbeef"));
    for p in [&live, &not_temp, &session, &other] {
        std::fs::write(p, "keep").unwrap();
        age(p);
    }
    let mut removed = sessiontree::store::clean_stale_temps_in(d.path());
    removed.sort();
    assert_eq!(removed, stale);
    for keep in [&fresh, &live, &not_temp, &session, &other] {
        assert!(keep.exists(), "{} kept", keep.display());
    }
}

#[test]
fn a_fork_never_migrates_its_source_under_another_writers_lock() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("old.jsonl");
    let content = format!("{H2}\n{}\n", entry("a1", None));
    std::fs::write(&p, &content).unwrap();
    let held = sessiontree::store::WriterLock::acquire(&p, None).unwrap();
    let e = Session::fork_at(&p, "a1", false, opts()).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        content,
        "source untouched"
    );
    drop(held);
    let f = Session::fork_at(&p, "a1", false, opts()).unwrap();
    assert!(load(&f.path).unwrap().tree.contains("a1"));
}
