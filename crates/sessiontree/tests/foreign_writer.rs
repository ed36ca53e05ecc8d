//! The real reference (Pi 1.6.0) appending while sessiontree rewrites the same files.
//!
//! Pi takes no lock: it appends each entry with `appendFileSync` on the path. A repair or a
//! migration reads the file, writes a new one and renames it over the old one; whatever Pi
//! appends between the read and the rename must end up in the new file. Here Pi appends in
//! bursts (file after file, 1 ms apart, into files of 1 MiB) and, as soon as a burst starts on a file, sessiontree
//! migrates it (version 2 files) or repairs it again and again (a garbage line is appended
//! before each repair, so that each one rewrites) while the burst goes on. Every entry Pi
//! acknowledged must be in its file, once, and every file must load clean.
//!
//! Needs `node` and `interop/node_modules`; skips visibly without them, fails when
//! `SESSIONTREE_REQUIRE_INTEROP=1`. `SESSIONTREE_RACE_FILES` (default 10) sets the number
//! of files, `SESSIONTREE_RACE_BURST` (default 36) the appends per file.

use sessiontree::{load, repair, Creation, Durability, Session, WriteOptions};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use sessiontree_testkit::interop::{available, interop_dir};

use sessiontree_testkit::env_or;

fn header(version: u32, id: &str) -> String {
    format!(
        r#"{{"type":"session","version":{version},"id":"{id}","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}}"#
    )
}

#[test]
fn interop_pi_appends_survive_concurrent_repair_and_migration() {
    if !available() {
        eprintln!("SKIPPED interop_pi_appends_survive_concurrent_repair_and_migration");
        return;
    }
    let files_n = env_or("SESSIONTREE_RACE_FILES", 10).max(2);
    let burst = env_or("SESSIONTREE_RACE_BURST", 36).max(1);
    // On tmpfs, when there is one: fsync costs nothing there, so Pi's appends are not held
    // up behind our fsyncs and land inside the rewrites' windows far more often.
    let shm = std::path::Path::new("/dev/shm");
    let d = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap_or_else(|_| tempfile::tempdir().unwrap())
    } else {
        tempfile::tempdir().unwrap()
    };
    // Sessions of a realistic size (1 MiB, one long message): reading, planning and writing
    // them takes long enough for Pi to append several times in between.
    let first = format!(
        r#"{{"type":"message","id":"a0","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{{"role":"user","content":"{}","timestamp":1733234401000}}}}"#,
        "long text ".repeat(100_000)
    );
    let files: Vec<PathBuf> = (0..files_n)
        .map(|k| {
            let p = d.path().join(format!("s{k:02}.jsonl"));
            std::fs::write(&p, format!("{}\n{first}\n", header(3, &format!("s{k}")))).unwrap();
            p
        })
        .collect();
    // Even files are migrated, odd ones repaired.
    let migrated = |k: usize| k.is_multiple_of(2);

    let mut child = Command::new("node")
        .current_dir(interop_dir())
        .arg("appender.mjs")
        .arg(burst.to_string())
        .arg(env_or("SESSIONTREE_RACE_PAUSE_MS", 1).to_string())
        .args(&files)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs");
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(30)).unwrap(),
        "ready",
        "the reference opened the files"
    );
    // Pi has the files open (as version 3 in memory); on disk the even ones become
    // version 2, so that opening them for writing migrates them. Pi waits meanwhile.
    for (k, p) in files.iter().enumerate() {
        if migrated(k) {
            std::fs::write(p, format!("{}\n{first}\n", header(2, &format!("s{k}")))).unwrap();
        }
    }
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();

    let opts = WriteOptions {
        durability: Durability::Entry,
        creation: Creation::Eager,
        lock_wait: Some(Duration::from_secs(10)),
        lock: true,
    };
    let mut acked: Vec<Vec<String>> = vec![Vec::new(); files_n];
    let (mut migrations, mut repairs, mut carried_runs, mut carried_bytes) = (0, 0, 0u64, 0u64);
    let mut pending: Option<String> = None;
    let mut current: Option<usize> = None;
    loop {
        let line = match pending.take() {
            Some(l) => l,
            None => rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the reference keeps appending"),
        };
        if line == "done" {
            break;
        }
        let (k, id) = line.split_once(' ').expect("<file> <id>");
        let k: usize = k.parse().unwrap();
        acked[k].push(id.to_string());
        if current == Some(k) {
            continue;
        }
        // A burst on file k started: rewrite it while Pi keeps appending to it.
        current = Some(k);
        if migrated(k) {
            drop(Session::open(&files[k], opts).unwrap());
            migrations += 1;
        } else {
            loop {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&files[k])
                    .unwrap();
                f.write_all(b"garbage that repair drops\n").unwrap();
                drop(f);
                let r = repair::apply(
                    &files[k],
                    &Default::default(),
                    Some(Duration::from_secs(10)),
                )
                .unwrap();
                repairs += 1;
                if r.carried > 0 {
                    carried_runs += 1;
                    carried_bytes += r.carried;
                }
                // Take every acknowledgement that arrived meanwhile; stop once Pi has
                // moved on to another file.
                let mut moved_on = false;
                loop {
                    match rx.try_recv() {
                        Ok(l) => match l.split_once(' ') {
                            Some((f, id)) if f == k.to_string() => acked[k].push(id.to_string()),
                            _ => {
                                pending = Some(l);
                                moved_on = true;
                                break;
                            }
                        },
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => {
                            moved_on = true;
                            break;
                        }
                    }
                }
                if moved_on {
                    break;
                }
            }
        }
    }
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();

    let total: usize = acked.iter().map(Vec::len).sum();
    assert_eq!(total, files_n * burst);
    eprintln!(
        "{total} acknowledged appends by Pi 1.6.0 over {files_n} files; {migrations} migrations, \
         {repairs} repairs, {carried_runs} rewrites carried over {carried_bytes} bytes appended meanwhile"
    );
    for (k, p) in files.iter().enumerate() {
        let l = load(p).unwrap();
        assert_eq!(
            l.tree.header().version(),
            Some(3.0),
            "{} migrated",
            p.display()
        );
        assert!(!l.migrated);
        assert!(
            l.tree.diagnostics().is_empty(),
            "{}: {:?}",
            p.display(),
            l.tree.diagnostics()
        );
        let text = std::fs::read_to_string(p).unwrap();
        for id in &acked[k] {
            assert!(
                l.tree.contains(id),
                "{}: entry {id} that Pi acknowledged is lost",
                p.display()
            );
            let n = text.matches(&format!("\"id\":\"{id}\"")).count();
            assert_eq!(n, 1, "{}: entry {id} appears {n} times", p.display());
        }
        assert_eq!(
            l.tree.entries().len(),
            1 + acked[k].len(),
            "{}",
            p.display()
        );
    }
}
