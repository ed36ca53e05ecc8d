//! A large session's context kept between reads: the next read of the unchanged file gives
//! the context a whole load gives, and any change to the file, however it is made, sends
//! the read back to the whole file.

use sessiontree::context::{plan, Plan};
use sessiontree::session::kept::{self, FileKey};
use sessiontree::{LeafArg, Loaded};
use sessiontree_testkit::{files, gen};
use std::path::{Path, PathBuf};

/// The context JSON and the messages as `context --llm` makes them.
fn shown(p: Plan<'_>) -> (String, String) {
    let mut json = Vec::new();
    p.write_json_releasing(&mut json).unwrap();
    let ctx = p.into_context();
    let llm: Vec<String> = sessiontree::to_llm(&ctx.messages)
        .iter()
        .map(|m| m.json().to_string())
        .collect();
    (String::from_utf8(json).unwrap(), llm.join("\n"))
}

/// Asserts that two contexts are the same, naming `what` and where they first differ
/// (a context is megabytes: it is not printed whole).
fn same(got: &(String, String), want: &(String, String), what: &str) {
    for (g, w, part) in [(&got.0, &want.0, "JSON"), (&got.1, &want.1, "LLM messages")] {
        if g != w {
            let at = g
                .bytes()
                .zip(w.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(g.len().min(w.len()));
            let around = |s: &str| {
                s.get(at.saturating_sub(80)..(at + 80).min(s.len()))
                    .unwrap_or("")
                    .to_string()
            };
            panic!(
                "{what}: {part} differs at byte {at} ({} and {} bytes):\n got  …{}…\n want …{}…",
                g.len(),
                w.len(),
                around(g),
                around(w)
            );
        }
    }
}

/// The plan of the whole file at its last entry, as `context` asks for it.
fn whole_plan(l: &Loaded) -> Plan<'_> {
    let arg = match l.tree.leaf_id() {
        Some(id) => LeafArg::Id(id),
        None => LeafArg::Null,
    };
    plan(&l.tree, arg)
}

fn json(s: &str) -> String {
    sessiontree_testkit::agent::json_string(s)
}

/// A generated session of about 9 MB (branches, compactions, labels, tool calls) and a
/// tail chosen by `seed` from what can change a context: settings before and after a
/// compaction, a compaction keeping entries from before them, context edits, a system
/// message, an id written twice, malformed and blank lines, bytes that are not UTF-8, no
/// newline at the end, a last entry without an id. Says whether it put in bytes that are
/// not UTF-8 (seeds below 100 that are 3 mod 4 may).
fn session(seed: u64) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    gen::generate(
        &gen::Shape {
            entries: 1_800,
            target_bytes: 5_200,
            seed,
        },
        &mut out,
    )
    .unwrap();
    let last = out[..out.len() - 1]
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap()
        .to_vec();
    let v: serde_json::Value = serde_json::from_slice(&last).unwrap();
    let mut parent = v["id"].as_str().unwrap().to_string();
    let first_kept = parent.clone();
    let mut rng = sessiontree_testkit::Rng(seed * 7 + 3);
    let mut not_utf8 = false;
    let mut n = 0;
    let mut push = |out: &mut Vec<u8>, parent: &mut String, body: String| {
        n += 1;
        let id = format!("t{seed}x{n}");
        let line = format!(
            r#"{{"type":{body},"id":"{id}","parentId":"{parent}","timestamp":"2025-01-0{}T00:00:00.000Z"}}"#,
            1 + n % 9
        );
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        *parent = id;
    };
    for _ in 0..6 + rng.pick(10) {
        match rng.pick(11) {
            0 => push(
                &mut out,
                &mut parent,
                r#""thinking_level_change","thinkingLevel":"high""#.into(),
            ),
            1 => push(
                &mut out,
                &mut parent,
                format!(r#""model_change","provider":"p{seed}","modelId":"m{}""#, rng.pick(9)),
            ),
            2 => push(
                &mut out,
                &mut parent,
                format!(
                    r#""compaction","summary":{},"firstKeptEntryId":"{}","tokensBefore":12"#,
                    json("kept from before"),
                    if rng.pick(2) == 0 { &first_kept } else { "nowhere" }
                ),
            ),
            3 => {
                let target = parent.clone();
                push(
                    &mut out,
                    &mut parent,
                    format!(
                        r#""context_edit","targetId":"{target}","replacement":{{"content":"edited"}}"#
                    ),
                )
            }
            4 => push(
                &mut out,
                &mut parent,
                r#""message","message":{"role":"system","content":"be brief"}"#.into(),
            ),
            5 => push(
                &mut out,
                &mut parent,
                r#""message","message":{"role":"assistant","provider":"q","model":"r","content":[{"type":"text","text":"ok"}]}"#.into(),
            ),
            6 => out.extend_from_slice(b"{not json\n\n   \n42\n"),
            7 => {
                // The last entry's id again, on a line of its own: the later one counts.
                out.extend_from_slice(
                    format!(
                        r#"{{"type":"message","id":"{parent}","parentId":"{first_kept}","message":{{"role":"user","content":"twice"}}}}"#
                    )
                    .as_bytes(),
                );
                out.push(b'\n');
            }
            // Bytes that are not UTF-8 in a few sessions only (their contexts are not kept).
            8 if seed < 100 && seed % 4 == 3 => {
                not_utf8 = true;
                push(
                    &mut out,
                    &mut parent,
                    r#""message","message":{"role":"user","content":"caf@@"}"#.into(),
                );
                // A byte that is not UTF-8 inside a string.
                let at = out.windows(2).rposition(|w| w == b"@@").unwrap();
                out.splice(at..at + 2, [0xff]);
            }
            9 => push(
                &mut out,
                &mut parent,
                r#""custom_message","customType":"note","content":"hello","display":true"#.into(),
            ),
            _ => push(
                &mut out,
                &mut parent,
                format!(
                    r#""message","message":{{"role":"user","content":{}}}"#,
                    json(&"tail ".repeat(rng.pick(50)))
                ),
            ),
        }
    }
    match rng.pick(4) {
        0 => {
            out.pop();
        }
        1 => out.extend_from_slice(b"{\"type\":\"label\",\"label\":\"no id\"}\n"),
        _ => {}
    }
    (out, not_utf8)
}

/// Writes the sessions, waits until they count as settled, and returns their paths.
fn settled_sessions(dir: &Path, seeds: std::ops::Range<u64>) -> Vec<(PathBuf, bool)> {
    let written: Vec<(PathBuf, bool)> = seeds
        .map(|seed| {
            let (bytes, not_utf8) = session(seed);
            assert!(
                bytes.len() as u64 >= kept::KEEP_MIN,
                "{} bytes",
                bytes.len()
            );
            let p = dir.join(format!("s{seed}.jsonl"));
            std::fs::write(&p, bytes).unwrap();
            (p, not_utf8)
        })
        .collect();
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    written
}

/// Loads `file` whole and keeps its context in `keep`, as `context` does.
fn load_and_keep(file: &Path, keep: &Path) -> (String, String) {
    let before = FileKey::now(file).unwrap();
    let l = sessiontree::load(file).unwrap();
    let p = whole_plan(&l);
    kept::keep_context(file, keep, before, &l, &p);
    shown(p)
}

#[test]
fn an_unchanged_session_gives_the_kept_context_a_whole_load_gives() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let mut warm = 0;
    for (file, not_utf8) in settled_sessions(dir.path(), 0..8) {
        assert!(
            kept::kept_context(&file, &keep).is_none(),
            "nothing kept yet"
        );
        let whole = load_and_keep(&file, &keep);
        match kept::kept_context(&file, &keep) {
            Some(k) => {
                warm += 1;
                same(&shown(k.plan()), &whole, &file.display().to_string());
            }
            // A context with a line that is not UTF-8 is not kept (its text is not the
            // file's bytes); every other one is.
            None => assert!(not_utf8, "{} was not kept", file.display()),
        }
    }
    assert!(warm >= 5, "only {warm} of 8 kept");
    // The folder is the owner's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&keep).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn any_change_to_the_file_sends_the_read_back_to_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let sessions = settled_sessions(dir.path(), 100..104);
    type Change = fn(&Path);
    let changes: [(&str, Change); 4] = [
        ("an appended entry", |p| {
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            std::io::Write::write_all(
                &mut f,
                b"{\"type\":\"label\",\"id\":\"zz\",\"parentId\":null}\n",
            )
            .unwrap();
        }),
        ("bytes changed in place, the time set back", |p| {
            let bytes = std::fs::read(p).unwrap();
            let at = bytes.len() - 200;
            let mut head = bytes[..at].to_vec();
            let i = head.iter().rposition(|&b| b == b'a').unwrap();
            head[i] = b'b';
            files::overwrite_unseen(p, &head);
        }),
        (
            "the file replaced by another of the same size and time",
            |p| {
                let mut bytes = std::fs::read(p).unwrap();
                let i = bytes.iter().rposition(|&b| b == b'a').unwrap();
                bytes[i] = b'b';
                files::replace_unseen(p, &bytes);
            },
        ),
        ("the file removed", |p| std::fs::remove_file(p).unwrap()),
    ];
    let mut changed = Vec::new();
    for ((file, _), (what, change)) in sessions.iter().zip(changes) {
        load_and_keep(file, &keep);
        assert!(kept::kept_context(file, &keep).is_some(), "{what}: kept");
        change(file);
        assert!(
            kept::kept_context(file, &keep).is_none(),
            "{what}: still read from what was kept"
        );
        changed.push((file, what));
    }
    // Read whole and kept again, each changed file gives its new context.
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    for (file, what) in changed.into_iter().filter(|(f, _)| f.exists()) {
        let l = sessiontree::load(file).unwrap();
        let whole = shown(whole_plan(&l));
        same(&load_and_keep(file, &keep), &whole, what);
        let k = kept::kept_context(file, &keep).expect("kept again");
        same(&shown(k.plan()), &whole, what);
    }
}

#[test]
fn a_file_changed_just_now_or_read_while_it_changed_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let (bytes, _) = session(7);
    let file = dir.path().join("fresh.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    // Written just now: a second write within the clock's tick could leave the key as is.
    load_and_keep(&file, &keep);
    assert!(kept::kept_context(&file, &keep).is_none());
    assert!(!keep.exists() || std::fs::read_dir(&keep).unwrap().next().is_none());
    // Settled, but changed between the stat and the load.
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    let before = FileKey::now(&file).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    std::io::Write::write_all(&mut f, b"\n").unwrap();
    let l = sessiontree::load(&file).unwrap();
    kept::keep_context(&file, &keep, before, &l, &whole_plan(&l));
    assert!(kept::kept_context(&file, &keep).is_none());
}

#[test]
fn small_and_older_sessions_are_read_whole_and_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let small = dir.path().join("small.jsonl");
    let mut bytes = Vec::new();
    gen::generate(
        &gen::Shape {
            entries: 100,
            target_bytes: 1_000,
            seed: 3,
        },
        &mut bytes,
    )
    .unwrap();
    std::fs::write(&small, &bytes).unwrap();
    // A version 1 session (no ids: migrated in memory), made large.
    let old = dir.path().join("old.jsonl");
    let mut v1 = String::from(
        "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
    );
    let pad = "x".repeat(4000);
    while (v1.len() as u64) < kept::KEEP_MIN {
        v1.push_str(&format!(
            "{{\"type\":\"message\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{pad}\"}}}}\n"
        ));
    }
    std::fs::write(&old, v1).unwrap();
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    for f in [&small, &old] {
        load_and_keep(f, &keep);
        assert!(kept::kept_context(f, &keep).is_none(), "{}", f.display());
    }
    assert!(!keep.exists());
}

/// One entry line (with its newline) of type and fields `body`, id `id`, parent `parent`.
fn line(id: &str, parent: &str, body: &str) -> String {
    format!(
        r#"{{"type":{body},"id":"{id}","parentId":"{parent}","timestamp":"2025-02-01T00:00:00.000Z"}}"#
    ) + "\n"
}

fn append(file: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
}

/// The leaf a later entry can continue, when the file ends with a newline and its last
/// entry, which has an id, is the leaf (otherwise appends are read whole).
fn continuable(file: &Path) -> Option<String> {
    let l = sessiontree::load(file).unwrap();
    let last = l.tree.entries().last()?;
    (l.tail == sessiontree::parse::Tail::Clean && std::ptr::eq(last, l.tree.leaf_entry()?))
        .then(|| last.id().map(str::to_string))
        .flatten()
}

/// Entries appended to a kept session, each continuing the one before, are read after what
/// was kept (the file is not read whole), in rounds: the context is the one a whole load
/// gives, with settings, context edits of kept entries, bad lines, a second header, bytes
/// that are not UTF-8 and a torn last line among them.
#[test]
fn entries_appended_after_what_was_kept_give_the_context_of_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let mut rng = sessiontree_testkit::Rng(77);
    let mut read_after = 0;
    for (file, _) in settled_sessions(dir.path(), 200..206) {
        load_and_keep(&file, &keep);
        assert!(kept::kept_context(&file, &keep).is_some());
        let Some(mut leaf) = continuable(&file) else {
            append(&file, line("x1", "nowhere", r#""custom""#).as_bytes());
            assert!(
                kept::kept_context(&file, &keep).is_none(),
                "no base to append to"
            );
            continue;
        };
        let loaded = sessiontree::load(&file).unwrap();
        let old_ids: Vec<&str> = loaded
            .tree
            .entries()
            .iter()
            .filter_map(|e| e.id())
            .collect();
        let mut n = 0;
        for round in 0..4 {
            let mut tail = Vec::new();
            for _ in 0..rng.pick(6) {
                n += 1;
                let id = format!("a{n}");
                let body = match rng.pick(9) {
                    0 => r#""thinking_level_change","thinkingLevel":"low""#.to_string(),
                    1 => format!(r#""model_change","provider":"p","modelId":"m{n}""#),
                    2 => format!(
                        r#""message","message":{{"role":"assistant","provider":"q","model":"r{n}","content":[{{"type":"text","text":"ok"}}]}}"#
                    ),
                    3 => format!(
                        r#""context_edit","targetId":"{}","replacement":{{"content":"cut"}}"#,
                        old_ids[rng.pick(old_ids.len())]
                    ),
                    4 => {
                        tail.extend_from_slice(b"{not json\n\n42\n");
                        tail.extend_from_slice(
                            br#"{"type":"session","version":3,"id":"again","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
                        );
                        tail.push(b'\n');
                        r#""custom_message","customType":"n","content":"c","display":false"#
                            .to_string()
                    }
                    5 => r#""message","message":{"role":"user","content":"caf@@"}"#.to_string(),
                    _ => format!(
                        r#""message","message":{{"role":"user","content":{}}}"#,
                        json(&"more ".repeat(rng.pick(400)))
                    ),
                };
                let mut l = line(&id, &leaf, &body).into_bytes();
                if let Some(at) = l.windows(2).position(|w| w == b"@@") {
                    l.splice(at..at + 2, [0xfe]);
                }
                tail.extend_from_slice(&l);
                leaf = id;
            }
            if round == 3 && rng.pick(2) == 0 {
                tail.extend_from_slice(br#"{"type":"message","id":"torn","parentId":"#);
            }
            append(&file, &tail);
            let l = sessiontree::load(&file).unwrap();
            let whole = shown(whole_plan(&l));
            let k = kept::kept_context(&file, &keep)
                .unwrap_or_else(|| panic!("{} round {round}: read whole", file.display()));
            same(
                &shown(k.plan()),
                &whole,
                &format!("{} round {round}", file.display()),
            );
            read_after += 1;
        }
    }
    assert!(read_after >= 8, "only {read_after} reads after appends");
}

/// Appends that change the kept part's meaning, or bytes changed in it, are read whole.
#[test]
fn appends_that_do_not_just_continue_the_last_entry_are_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let sessions: Vec<PathBuf> = settled_sessions(dir.path(), 300..316)
        .into_iter()
        .map(|(f, _)| f)
        .filter(|f| continuable(f).is_some())
        .collect();
    type Tail = fn(&Path, &str, &str) -> Vec<u8>;
    let cases: [(&str, Tail); 6] = [
        ("a branch from an earlier entry", |_, _, first| {
            line("b1", first, r#""custom""#).into_bytes()
        }),
        ("a compaction", |_, leaf, first| {
            line(
                "c1",
                leaf,
                &format!(
                    r#""compaction","summary":"s","firstKeptEntryId":"{first}","tokensBefore":1"#
                ),
            )
            .into_bytes()
        }),
        ("an id the file had", |_, leaf, first| {
            line(first, leaf, r#""custom""#).into_bytes()
        }),
        ("an id twice in what was appended", |_, leaf, _| {
            (line("d1", leaf, r#""custom""#) + &line("d1", "d1", r#""custom""#)).into_bytes()
        }),
        ("bytes changed in the kept part", |file, leaf, _| {
            let bytes = std::fs::read(file).unwrap();
            let mut head = bytes[..bytes.len() / 2].to_vec();
            let i = head.iter().rposition(|&b| b == b'a').unwrap();
            head[i] = b'b';
            files::overwrite_unseen(file, &head);
            line("e1", leaf, r#""custom""#).into_bytes()
        }),
        ("more than a quarter of the file", |file, leaf, _| {
            let size = std::fs::metadata(file).unwrap().len() as usize;
            let body = format!(
                r#""message","message":{{"role":"user","content":"{}"}}"#,
                "x".repeat(size / 4 + 10)
            );
            line("f1", leaf, &body).into_bytes()
        }),
    ];
    assert!(sessions.len() >= cases.len(), "{} sessions", sessions.len());
    for (file, (what, tail)) in sessions.iter().zip(cases) {
        load_and_keep(file, &keep);
        let leaf = continuable(file).unwrap();
        let first = sessiontree::load(file).unwrap().tree.entries()[0]
            .id()
            .unwrap()
            .to_string();
        let bytes = tail(file, &leaf, &first);
        append(file, &bytes);
        assert!(kept::kept_context(file, &keep).is_none(), "{what}");
    }
}

/// A settled session in `dir` whose last entry a later one can continue.
fn a_continuable_session(dir: &Path) -> PathBuf {
    settled_sessions(dir, 400..404)
        .into_iter()
        .map(|(f, _)| f)
        .find(|f| continuable(f).is_some())
        .expect("a session to continue")
}

/// Read after appends once the file has settled, the context is kept again as the file is
/// now: later appends are read on from there (its checksums, last entry and ids are those of
/// the file now), and until it settles nothing is kept anew.
#[test]
fn a_settled_file_read_after_appends_is_kept_as_it_is_now() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let file = a_continuable_session(dir.path());
    load_and_keep(&file, &keep);
    let kept_file = std::fs::read_dir(&keep)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let first = std::fs::read(&kept_file).unwrap();
    let leaf = continuable(&file).unwrap();
    let long = format!(
        r#""message","message":{{"role":"user","content":"{}"}}"#,
        "y".repeat(1 << 20)
    );
    let tail = line("r1", &leaf, &long)
        + &line("r2", "r1", r#""custom""#)
        + &line(
            "r3",
            "r2",
            r#""thinking_level_change","thinkingLevel":"medium""#,
        );
    append(&file, tail.as_bytes());
    let whole = |f: &Path| shown(whole_plan(&sessiontree::load(f).unwrap()));
    let read = |what: &str| {
        let k = kept::kept_context(&file, &keep).unwrap_or_else(|| panic!("{what}: read whole"));
        same(&shown(k.plan()), &whole(&file), what);
    };
    read("just appended");
    assert_eq!(
        std::fs::read(&kept_file).unwrap(),
        first,
        "kept anew before it settled"
    );
    std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    read("settled");
    assert_ne!(std::fs::read(&kept_file).unwrap(), first, "not kept anew");
    read("kept anew, unchanged");
    append(&file, line("r4", "r3", r#""custom""#).as_bytes());
    read("appended after what was kept anew");
    append(&file, line("r1", "r4", r#""custom""#).as_bytes());
    assert!(
        kept::kept_context(&file, &keep).is_none(),
        "an id appended before is an id the file had"
    );
}

/// Keeping ahead of a read (what the watch does once a large session it follows has
/// settled) keeps what `context` would: a settled session is read whole and kept, and is
/// then current; entries that continue it are read on and kept again once it settles; a
/// branch is read whole. A link, a small file and an unsettled one are left alone.
#[test]
fn keeping_ahead_keeps_the_context_a_read_would_keep() {
    use kept::Ahead;
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join(kept::DIR_NAME);
    let file = a_continuable_session(dir.path());
    let whole = |f: &Path| shown(whole_plan(&sessiontree::load(f).unwrap()));
    let kept_is_whole = |what: &str| {
        assert!(kept::is_current(&file, &keep), "{what}: not current");
        let k = kept::kept_context(&file, &keep).unwrap_or_else(|| panic!("{what}: none"));
        same(&shown(k.plan()), &whole(&file), what);
    };
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert_eq!(kept::keep_ahead(&link, &keep), Ahead::No, "a link");
    let (_small_dir, small) = files::temp_file("small.jsonl", "{\"type\":\"session\"}\n");
    assert_eq!(kept::keep_ahead(&small, &keep), Ahead::No, "a small file");
    assert!(!keep.exists(), "kept for a link or a small file");
    assert!(!kept::is_current(&file, &keep));

    assert_eq!(kept::keep_ahead(&file, &keep), Ahead::Whole);
    kept_is_whole("kept ahead");
    assert_eq!(kept::keep_ahead(&file, &keep), Ahead::Current);

    let leaf = continuable(&file).unwrap();
    append(&file, line("k1", &leaf, r#""custom""#).as_bytes());
    assert_eq!(kept::keep_ahead(&file, &keep), Ahead::No, "not settled");
    assert!(!kept::is_current(&file, &keep), "current after an append");
    let settle = || std::thread::sleep(kept::SETTLE + std::time::Duration::from_millis(1100));
    settle();
    assert_eq!(kept::keep_ahead(&file, &keep), Ahead::ReadOn);
    kept_is_whole("read on");

    append(&file, line("k2", &leaf, r#""custom""#).as_bytes());
    settle();
    assert_eq!(kept::keep_ahead(&file, &keep), Ahead::Whole, "a branch");
    kept_is_whole("a branch");
}
