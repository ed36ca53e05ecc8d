//! The watch's change journal against the file system: after any mix of appends, new,
//! removed and renamed files and folders, times set back and files renamed into place, the
//! file list read through the journal is the one a walk finds (every stat equal), and a
//! reader trusts the journal only while the watch keeps it.
#![cfg(target_os = "linux")]

use sessiontree::changes;
use sessiontree::list::{all_files_stat, all_files_stat_walking};
use sessiontree_testkit::Rng;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

fn append(p: &Path, text: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
    {
        let _ = f.write_all(text.as_bytes());
    }
}

fn jsonl(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
    v.sort();
    v
}

fn folders(sessions: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(sessions)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// Waits until the list read through the journal is the walked one (the watch writes a
/// change's line a moment after it); a change it missed never ends the wait.
fn converges(agent: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        assert!(changes::followed(agent), "{what}: the journal is not kept");
        let read = all_files_stat(agent);
        let walked = all_files_stat_walking(agent);
        if read == walked {
            return;
        }
        if Instant::now() > deadline {
            let a: Vec<_> = read
                .iter()
                .map(|f| (f.0.display().to_string(), f.1.map(|s| s.size)))
                .collect();
            let b: Vec<_> = walked
                .iter()
                .map(|f| (f.0.display().to_string(), f.1.map(|s| s.size)))
                .collect();
            panic!("{what}: through the journal\n{a:?}\nwalked\n{b:?}");
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

#[test]
fn the_list_through_the_journal_is_the_walked_one_after_any_changes() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().to_path_buf();
    let sessions = agent.join("sessions");
    for k in 0..3 {
        let f = sessions.join(format!("--p{k}--"));
        std::fs::create_dir_all(&f).unwrap();
        for n in 0..4 {
            append(&f.join(format!("s{n}.jsonl")), "{}\n");
        }
    }
    let stop = AtomicBool::new(false);
    /// Stops the watch thread however the test ends (a failed assertion included).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        s.spawn(|| {
            sessiontree_watch::journal::keep(&agent, &stop, Duration::from_millis(200), &|m| {
                eprintln!("{m}")
            })
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while !changes::followed(&agent) {
            assert!(Instant::now() < deadline, "no journal");
            std::thread::sleep(Duration::from_millis(10));
        }
        converges(&agent, "start");
        assert!(agent.join(changes::SNAPSHOT).exists());
        // A folder made while the watch runs, then a file in it written and written again:
        // the watch follows the folder it has seen come.
        let later = sessions.join("--later--");
        std::fs::create_dir(&later).unwrap();
        append(&later.join("l.jsonl"), "{}\n");
        converges(&agent, "a new folder");
        for k in 0..3 {
            std::thread::sleep(Duration::from_millis(150));
            append(&later.join("l.jsonl"), "{\"more\":1}\n");
            converges(
                &agent,
                &format!("a file of the new folder written again ({k})"),
            );
        }
        let rounds = std::env::var("JOURNAL_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(25);
        let mut rng = Rng(0x6a6f_7572_6e61_6c31);
        let mut made = 0;
        let mut latest: Option<PathBuf> = None;
        for round in 0..rounds {
            let mut done = Vec::new();
            for _ in 0..1 + rng.pick(6) {
                let fs = folders(&sessions);
                // Half the time the newest folder: what the watch started following last.
                let folder = match &latest {
                    Some(l) if l.is_dir() && rng.pick(2) == 0 => l.clone(),
                    _ => fs[rng.pick(fs.len())].clone(),
                };
                let files = jsonl(&folder);
                let any = |rng: &mut Rng| {
                    (!files.is_empty()).then(|| files[rng.pick(files.len())].clone())
                };
                made += 1;
                match rng.pick(10) {
                    0..=2 => {
                        if let Some(f) = any(&mut rng) {
                            for _ in 0..1 + rng.pick(5) {
                                append(&f, "{\"more\":1}\n");
                            }
                            done.push("append");
                        }
                    }
                    3 => {
                        append(&folder.join(format!("n{made}.jsonl")), "{}\n");
                        done.push("new file");
                    }
                    4 => {
                        if let Some(f) = any(&mut rng) {
                            let _ = std::fs::remove_file(f);
                            done.push("remove file");
                        }
                    }
                    5 => {
                        if let Some(f) = any(&mut rng) {
                            let to = fs[rng.pick(fs.len())].join(format!("r{made}.jsonl"));
                            let _ = std::fs::rename(f, to);
                            done.push("rename file");
                        }
                    }
                    6 => {
                        // A new folder with files at once (before the watch can follow it).
                        let nf = sessions.join(format!("--new{made}--"));
                        std::fs::create_dir(&nf).unwrap();
                        latest = Some(nf.clone());
                        for n in 0..1 + rng.pick(3) {
                            append(&nf.join(format!("x{n}.jsonl")), "{}\n");
                        }
                        done.push("new folder");
                    }
                    7 => {
                        if fs.len() > 2 {
                            if rng.pick(2) == 0 {
                                let _ = std::fs::remove_dir_all(&folder);
                                done.push("remove folder");
                            } else {
                                let to = sessions.join(format!("--moved{made}--"));
                                let _ = std::fs::rename(&folder, &to);
                                latest = Some(to);
                                done.push("rename folder");
                            }
                        }
                    }
                    8 => {
                        if let Some(f) = any(&mut rng) {
                            let back = SystemTime::now()
                                - Duration::from_secs(3600 * (1 + rng.pick(50) as u64));
                            let _ = std::fs::File::options()
                                .append(true)
                                .open(f)
                                .and_then(|h| h.set_modified(back));
                            done.push("mtime set back");
                        }
                    }
                    _ => {
                        // Written under another name, renamed into place (over one or not).
                        let tmp = folder.join(format!(".tmp{made}"));
                        append(&tmp, "{}\n{}\n");
                        let to = match any(&mut rng) {
                            Some(f) if rng.pick(2) == 0 => f,
                            _ => folder.join(format!("m{made}.jsonl")),
                        };
                        let _ = std::fs::rename(&tmp, to);
                        done.push("renamed into place");
                    }
                }
            }
            converges(&agent, &format!("round {round}: {done:?}"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    // The watch gone: its journal with it, and nothing is trusted.
    assert!(!changes::followed(&agent));
    assert!(!agent.join(changes::JOURNAL).exists());
}
