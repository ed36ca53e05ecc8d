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
                assert_eq!(shown(k.plan()), whole, "{}", file.display());
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
        assert_eq!(load_and_keep(file, &keep), whole, "{what}");
        let k = kept::kept_context(file, &keep).expect("kept again");
        assert_eq!(shown(k.plan()), whole, "{what}");
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
