//! The change journal's reader (`sessiontree::changes`, through `list::all_files_stat`):
//! while a journal is held, only what it names (and what it cannot follow) is stat'ed;
//! without one, every file. The journal is written here by hand, as the watch writes it.

use sessiontree::changes::{self, Journal};
use sessiontree::list::{all_files_stat, all_files_stat_walking, FileStat};
use sessiontree_testkit::Rng;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

type Listing = Vec<(PathBuf, Option<FileStat>)>;

fn append(p: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn sizes(l: &Listing) -> Vec<(String, Option<u64>)> {
    let mut v: Vec<_> = l
        .iter()
        .map(|(p, s)| (p.display().to_string(), s.map(|s| s.size)))
        .collect();
    v.sort();
    v
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    for proj in ["--a--", "--b--"] {
        std::fs::create_dir_all(sessions.join(proj)).unwrap();
        for k in 0..3 {
            append(&sessions.join(proj).join(format!("s{k}.jsonl")), "{}\n");
        }
    }
    (dir, sessions)
}

#[test]
fn without_a_journal_every_file_is_stated() {
    let (dir, sessions) = setup();
    let agent = dir.path();
    assert!(!changes::followed(agent));
    let before = all_files_stat(agent);
    append(&sessions.join("--a--/s0.jsonl"), "{}\n");
    let after = all_files_stat(agent);
    assert_ne!(sizes(&before), sizes(&after));
    assert_eq!(sizes(&after), sizes(&all_files_stat_walking(agent)));
    // No journal, no snapshot written.
    assert!(!agent.join(changes::SNAPSHOT).exists());
}

#[test]
fn a_held_journal_is_trusted_and_only_named_files_are_stated() {
    let (dir, sessions) = setup();
    let agent = dir.path();
    let mut j = Journal::start(agent).unwrap();
    assert!(changes::followed(agent));
    // First read: a walk, saved as the snapshot of this epoch.
    let first = all_files_stat(agent);
    assert_eq!(sizes(&first), sizes(&all_files_stat_walking(agent)));
    assert!(agent.join(changes::SNAPSHOT).exists());

    // A change the journal does not name is not seen: the reader trusts it (this is what
    // makes the figure; a watch names every change).
    append(&sessions.join("--a--/s0.jsonl"), "{\"x\":1}\n");
    assert_eq!(sizes(&all_files_stat(agent)), sizes(&first));
    assert_ne!(sizes(&all_files_stat_walking(agent)), sizes(&first));

    // Named, it is.
    j.file_changed(OsStr::new("--a--"), OsStr::new("s0.jsonl"))
        .unwrap();
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );

    // A new file, a removed one, a new folder with files, a removed folder.
    append(&sessions.join("--b--/new.jsonl"), "{}\n");
    j.file_changed(OsStr::new("--b--"), OsStr::new("new.jsonl"))
        .unwrap();
    std::fs::remove_file(sessions.join("--b--/s1.jsonl")).unwrap();
    j.file_changed(OsStr::new("--b--"), OsStr::new("s1.jsonl"))
        .unwrap();
    std::fs::create_dir(sessions.join("--c--")).unwrap();
    append(&sessions.join("--c--/c.jsonl"), "{}\n");
    j.folder_changed(OsStr::new("--c--")).unwrap();
    j.folders_changed().unwrap();
    std::fs::remove_dir_all(sessions.join("--a--")).unwrap();
    j.folder_changed(OsStr::new("--a--")).unwrap();
    j.folders_changed().unwrap();
    let now = all_files_stat(agent);
    assert_eq!(sizes(&now), sizes(&all_files_stat_walking(agent)));
    assert!(now.iter().any(|(p, _)| p.ends_with("--c--/c.jsonl")));
    assert!(!now
        .iter()
        .any(|(p, _)| p.starts_with(sessions.join("--a--"))));
    // The order is the walk's (newest first, then name descending).
    let walked: Vec<_> = all_files_stat_walking(agent)
        .into_iter()
        .map(|f| f.0)
        .collect();
    let read: Vec<_> = now.into_iter().map(|f| f.0).collect();
    assert_eq!(read, walked);

    // The watch gone (its journal dropped, or killed: the lock is released either way):
    // every file is stat'ed again.
    drop(j);
    assert!(!changes::followed(agent));
    append(&sessions.join("--b--/s0.jsonl"), "{}\n");
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );
}

#[test]
fn a_new_epoch_or_a_damaged_snapshot_means_a_walk() {
    let (dir, sessions) = setup();
    let agent = dir.path();
    let j = Journal::start(agent).unwrap();
    let _ = all_files_stat(agent);
    append(&sessions.join("--a--/s2.jsonl"), "{}\n");
    // A new epoch (the watch restarted, or its queue overflowed): the snapshot is of the
    // old one, so everything is stat'ed.
    drop(j);
    let j2 = Journal::start(agent).unwrap();
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );
    // Damaged snapshots: cut, flipped, garbage, empty. None is trusted, none panics.
    let snap = agent.join(changes::SNAPSHOT);
    let good = std::fs::read(&snap).unwrap();
    let mut rng = Rng(0x5eed_1234);
    for case in 0..200 {
        let mut b = good.clone();
        match case % 4 {
            0 => b.truncate(rng.pick(b.len())),
            1 => {
                let i = rng.pick(b.len());
                b[i] ^= 1 << rng.pick(8);
            }
            2 => b = (0..rng.pick(4000)).map(|_| rng.next() as u8).collect(),
            _ => b.clear(),
        }
        std::fs::write(&snap, &b).unwrap();
        append(&sessions.join("--b--/s2.jsonl"), "{}\n");
        let got = all_files_stat(agent);
        // A flipped digit can still parse (a snapshot is only as trusted as the agent dir);
        // every other case is a walk.
        if case % 4 != 1 {
            assert_eq!(
                sizes(&got),
                sizes(&all_files_stat_walking(agent)),
                "case {case}"
            );
        }
    }
    drop(j2);
}

#[test]
fn links_and_odd_names_are_stated_every_time() {
    let (dir, sessions) = setup();
    let agent = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("t.jsonl");
    append(&target, "{}\n");
    std::os::unix::fs::symlink(&target, sessions.join("--a--/link.jsonl")).unwrap();
    // A second hard link: written through the other name, no event in this folder.
    std::fs::hard_link(
        sessions.join("--b--/s0.jsonl"),
        outside.path().join("h.jsonl"),
    )
    .unwrap();
    // Names with a newline, a percent sign, bytes that are not UTF-8.
    use std::os::unix::ffi::OsStrExt;
    let odd = [
        OsStr::new("a\nb.jsonl"),
        OsStr::new("50%.jsonl"),
        OsStr::from_bytes(b"\xff\xfe.jsonl"),
    ];
    for n in odd {
        append(&sessions.join("--a--").join(n), "{}\n");
    }
    let mut j = Journal::start(agent).unwrap();
    let _ = all_files_stat(agent);
    append(&target, "{\"more\":1}\n");
    append(&outside.path().join("h.jsonl"), "{\"more\":1}\n");
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );
    for n in odd {
        append(&sessions.join("--a--").join(n), "{}\n");
        j.file_changed(OsStr::new("--a--"), n).unwrap();
    }
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );
}

#[test]
fn forged_journal_lines_never_leave_the_sessions_folder() {
    let (dir, _sessions) = setup();
    let agent = dir.path();
    std::fs::write(agent.join("secret.jsonl"), "{}\n").unwrap();
    let j = Journal::start(agent).unwrap();
    let first = all_files_stat(agent);
    // Lines a watch never writes: escapes out of the folder, unknown kinds, bad escapes.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(agent.join(changes::JOURNAL))
        .unwrap();
    f.write_all(b"F ../secret.jsonl\nF --a--/../../secret.jsonl\nD ..\nF %2E%2E/secret.jsonl\n")
        .unwrap();
    let got = all_files_stat(agent);
    assert!(got.iter().all(|(p, _)| !p.ends_with("secret.jsonl")));
    f.write_all(b"X what\nF %zz/a.jsonl\n").unwrap();
    let got = all_files_stat(agent);
    assert_eq!(sizes(&got), sizes(&first));
    drop(j);
}

#[test]
fn the_snapshot_is_never_written_through_a_planted_link() {
    let (dir, _sessions) = setup();
    let agent = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let precious = outside.path().join("precious");
    std::fs::write(&precious, "keep me").unwrap();
    // Links at the names a reader of this process could have picked.
    for name in [
        format!(".{}.{}", changes::SNAPSHOT, std::process::id()),
        format!(".{}.tmp", changes::SNAPSHOT),
    ] {
        std::os::unix::fs::symlink(&precious, agent.join(name)).unwrap();
    }
    let j = Journal::start(agent).unwrap();
    let _ = all_files_stat(agent);
    assert!(agent.join(changes::SNAPSHOT).exists());
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(agent.join(changes::SNAPSHOT))
        .unwrap()
        .file_type()
        .is_file());
    drop(j);
}

#[test]
fn a_long_journal_past_the_snapshot_is_read_once_per_name() {
    let (dir, sessions) = setup();
    let agent = dir.path();
    let mut j = Journal::start(agent).unwrap();
    let _ = all_files_stat(agent);
    // Thousands of lines for a few names (an agent appending all day), then one more change.
    for _ in 0..5000 {
        j.file_changed(OsStr::new("--a--"), OsStr::new("s0.jsonl"))
            .unwrap();
        j.file_changed(OsStr::new("--b--"), OsStr::new("s1.jsonl"))
            .unwrap();
    }
    append(&sessions.join("--b--/s1.jsonl"), "{}\n");
    assert_eq!(
        sizes(&all_files_stat(agent)),
        sizes(&all_files_stat_walking(agent))
    );
    drop(j);
}

/// The list digest (what lets `ls` find its rows without building the file list) is the
/// same for the same list and moves with every change the journal names; with no journal,
/// or with a name that must be stat'ed at every read, there is none.
#[test]
fn the_list_digest_is_one_list_and_moves_with_every_named_change() {
    use sessiontree::list::all_files_stat_digested;
    let (dir, sessions) = setup();
    let agent = dir.path();
    assert_eq!(changes::list_digest(agent), None);
    assert_eq!(all_files_stat_digested(agent).1, None);
    let mut j = Journal::start(agent).unwrap();
    // The first read walks and saves the snapshot; the next ones read it.
    let (first, none) = all_files_stat_digested(agent);
    assert_eq!(none, None);
    let (list, d) = all_files_stat_digested(agent);
    assert_eq!(sizes(&list), sizes(&first));
    let d = d.expect("a digest through the journal");
    assert_eq!(changes::list_digest(agent), Some(d));
    assert_eq!(all_files_stat_digested(agent).1, Some(d));

    let mut seen = vec![d];
    let mut step = |j: &mut Journal, what: &dyn Fn(&mut Journal)| {
        what(j);
        let named = changes::list_digest(agent).expect("still a digest");
        assert!(!seen.contains(&named), "a named change moves the digest");
        // The read may save the list as the new snapshot: its digest is what the next
        // look finds, and stays.
        let (list, with_list) = all_files_stat_digested(agent);
        let with_list = with_list.expect("a digest with the list");
        assert!(!seen.contains(&with_list));
        assert_eq!(changes::list_digest(agent), Some(with_list));
        assert_eq!(changes::list_digest(agent), Some(with_list), "and it stays");
        assert_eq!(sizes(&list), sizes(&all_files_stat_walking(agent)));
        seen.extend([named, with_list]);
    };
    step(&mut j, &|j| {
        append(&sessions.join("--a--/s0.jsonl"), "{\"x\":1}\n");
        j.file_changed(OsStr::new("--a--"), OsStr::new("s0.jsonl"))
            .unwrap();
    });
    // The same file changed again: another line, another digest.
    step(&mut j, &|j| {
        append(&sessions.join("--a--/s0.jsonl"), "{\"x\":2}\n");
        j.file_changed(OsStr::new("--a--"), OsStr::new("s0.jsonl"))
            .unwrap();
    });
    step(&mut j, &|j| {
        std::fs::remove_file(sessions.join("--b--/s2.jsonl")).unwrap();
        j.file_changed(OsStr::new("--b--"), OsStr::new("s2.jsonl"))
            .unwrap();
    });
    step(&mut j, &|j| {
        std::fs::create_dir(sessions.join("--n--")).unwrap();
        append(&sessions.join("--n--/n.jsonl"), "{}\n");
        j.folder_changed(OsStr::new("--n--")).unwrap();
        j.folders_changed().unwrap();
    });

    // A symbolic link is stat'ed at every read: no digest for a list that holds one, while
    // the journal's lines name it and once the snapshot does.
    std::os::unix::fs::symlink(
        sessions.join("--a--/s1.jsonl"),
        sessions.join("--b--/l.jsonl"),
    )
    .unwrap();
    j.file_changed(OsStr::new("--b--"), OsStr::new("l.jsonl"))
        .unwrap();
    assert_eq!(all_files_stat_digested(agent).1, None);
    j.folder_changed(OsStr::new("--b--")).unwrap();
    assert_eq!(all_files_stat_digested(agent).1, None);
    assert_eq!(changes::list_digest(agent), None);
    std::fs::remove_file(sessions.join("--b--/l.jsonl")).unwrap();
    j.folder_changed(OsStr::new("--b--")).unwrap();
    let (_, again) = all_files_stat_digested(agent);
    assert!(again.is_some());
    assert_eq!(changes::list_digest(agent), again);

    // The watch gone: no digest.
    drop(j);
    assert_eq!(changes::list_digest(agent), None);
    assert_eq!(all_files_stat_digested(agent).1, None);
}
