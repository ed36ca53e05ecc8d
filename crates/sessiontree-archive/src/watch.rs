//! `sync --watch`: keeps pushing. The session folders are watched with inotify (through
//! the `notify` crate); a changed `*.jsonl` is pushed within a second. When the server goes
//! away, the changed files are remembered and the connection retried every second; once
//! it is back, everything is pushed (push compares with what the archive holds, so nothing
//! is sent twice).

use crate::push::{push, PushOptions, PushReport};
use crate::{Archive, Error, Result};
use notify::{RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// What the watcher reports to its caller.
pub enum Event {
    Pushed(PushReport),
    /// The archive could not be reached or refused a push; retrying.
    Trouble(String),
}

/// Watches `<agent dir>/sessions` and pushes changes until `stop` is set.
pub fn watch(
    url: &str,
    opts: &PushOptions,
    stop: &AtomicBool,
    mut report: impl FnMut(Event),
) -> Result<()> {
    let sessions = opts.agent_dir.join("sessions");
    std::fs::create_dir_all(&sessions).map_err(crate::io_err(&sessions))?;
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            if matches!(
                ev.kind,
                notify::EventKind::Modify(_) | notify::EventKind::Create(_)
            ) {
                for p in ev.paths {
                    if p.extension().is_some_and(|e| e == "jsonl") {
                        let _ = tx.send(p);
                    }
                }
            }
        }
    })
    .map_err(|e| Error::msg(format!("watch {}: {e}", sessions.display())))?;
    watcher
        .watch(&sessions, RecursiveMode::Recursive)
        .map_err(|e| Error::msg(format!("watch {}: {e}", sessions.display())))?;

    let mut archive: Option<Archive> = None;
    // None: everything needs pushing (start, or after the server came back).
    let mut pending: Option<BTreeSet<PathBuf>> = None;
    let mut last_trouble = String::new();
    while !stop.load(Ordering::Relaxed) {
        // Gather changes: wait up to 200 ms for the first, then take what else arrived.
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(p) => {
                if let Some(s) = pending.as_mut() {
                    s.insert(p);
                }
                while let Ok(p) = rx.try_recv() {
                    if let Some(s) = pending.as_mut() {
                        s.insert(p);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if pending.as_ref().is_some_and(|s| s.is_empty()) {
            continue;
        }
        if archive.is_none() {
            match Archive::open(url) {
                Ok(a) => archive = Some(a),
                Err(e) => {
                    let msg = e.to_string();
                    if msg != last_trouble {
                        report(Event::Trouble(msg.clone()));
                        last_trouble = msg;
                    }
                    pending = None;
                    std::thread::sleep(Duration::from_millis(800));
                    continue;
                }
            }
        }
        let a = archive.as_mut().unwrap();
        let paths: Vec<PathBuf> = match &pending {
            None => opts.paths.clone(),
            Some(s) => s.iter().filter(|p| p.exists()).cloned().collect(),
        };
        let o = PushOptions {
            agent_dir: opts.agent_dir.clone(),
            paths,
            machine_name: opts.machine_name.clone(),
            redact: opts.redact.clone(),
            redact_secrets: opts.redact_secrets,
        };
        match push(a, &o) {
            Ok(r) => {
                last_trouble.clear();
                pending = Some(BTreeSet::new());
                if r.created + r.appended + r.new_versions > 0 || !r.skipped.is_empty() {
                    report(Event::Pushed(r));
                }
            }
            Err(e) => {
                // Keep the set (or the full push) for the next round; reconnect.
                let msg = e.to_string();
                if msg != last_trouble {
                    report(Event::Trouble(msg.clone()));
                    last_trouble = msg;
                }
                if a.client.is_closed() || a.client.is_valid(Duration::from_secs(2)).is_err() {
                    archive = None;
                    pending = None;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    Ok(())
}
