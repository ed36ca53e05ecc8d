//! Deterministic fuzzing of the two converters (cargo-fuzz needs nightly; this runs on
//! stable in CI): transcripts made from the fixtures' own lines, shuffled, rewired (uuids
//! and parents swapped, so cycles, orphans and duplicates appear), cut and flipped byte by
//! byte, plus pure noise. Whatever goes in, the converter must not panic, and what comes out
//! must be a session Pi opens as is: canonical lines (what `JSON.stringify` writes), each
//! entry's id and parent as the conversion says, unique ids, every parent written before
//! its child, no line-level problem when loaded, and the same bytes on a second run.
//! `SESSIONTREE_FUZZ_N` sets how many inputs each agent gets (default 1,500).

use sessiontree_testkit::env;
use sessiontree_testkit::rng as xorshift;

use sessiontree::parse::{backing, parse};
use sessiontree::{build_context, LeafArg, SessionTree};
use sessiontree_import::{claude, codex, copilot, gemini, opencode, Conversion};
use std::collections::HashSet;
use std::path::Path;
use xorshift::Rng;

fn fixture_lines(dirs: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut stack: Vec<_> = dirs.iter().map(|d| root.join(d)).collect();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            let mut kids: Vec<_> = std::fs::read_dir(&p)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            kids.sort();
            stack.extend(kids);
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            out.extend(
                text.lines()
                    .filter(|l| l.len() < 20_000)
                    .map(str::to_string),
            );
        }
    }
    assert!(out.len() > 20, "fixtures found: {}", out.len());
    out
}

/// Quoted values that look like ids (uuids, call ids) in `lines`, to rewire with.
fn id_values(lines: &[String]) -> Vec<String> {
    let mut ids = HashSet::new();
    for l in lines {
        for key in [
            "\"uuid\":\"",
            "\"parentUuid\":\"",
            "\"call_id\":\"",
            "\"id\":\"",
        ] {
            let mut rest = l.as_str();
            while let Some(at) = rest.find(key) {
                rest = &rest[at + key.len()..];
                if let Some(end) = rest.find('"') {
                    ids.insert(rest[..end].to_string());
                }
            }
        }
    }
    let mut v: Vec<String> = ids.into_iter().collect();
    v.sort();
    v
}

fn generate(r: &mut Rng, lines: &[String], ids: &[String]) -> Vec<u8> {
    if r.pick(12) == 0 {
        let alphabet = b"{}[]\":,\n \\0123456789abcdefnulltruefalsetypeuuid\xff\xc3\x28";
        return (0..r.pick(600))
            .map(|_| alphabet[r.pick(alphabet.len())])
            .collect();
    }
    let mut out: Vec<String> = Vec::new();
    let start = r.pick(lines.len());
    // A run of consecutive lines (real order), then some from anywhere.
    for k in 0..r.pick(40) {
        out.push(lines[(start + k) % lines.len()].clone());
    }
    for _ in 0..r.pick(8) {
        let at = r.pick(out.len() + 1);
        out.insert(at, lines[r.pick(lines.len())].clone());
    }
    for l in out.iter_mut() {
        if r.pick(4) == 0 && !ids.is_empty() {
            let from = &ids[r.pick(ids.len())];
            let to = &ids[r.pick(ids.len())];
            *l = l.replacen(from.as_str(), to, 1);
        }
        if r.pick(20) == 0 {
            *l = l.replacen("\"type\":\"", "\"type\":\"x", 1);
        }
    }
    let mut buf = out.join("\n").into_bytes();
    if r.pick(2) == 0 {
        buf.push(b'\n');
    }
    let times = r.pick(5);
    r.damage(&mut buf, times);
    buf
}

fn check(c: &Conversion, input: &[u8]) {
    let mut seen: HashSet<&str> = HashSet::new();
    for (n, l) in c.lines.iter().enumerate() {
        let json = c.json(l);
        let canon = sessiontree::json::canonicalize(json.as_bytes())
            .unwrap_or_else(|e| panic!("line {n} is not JSON ({e:?}): {json}"));
        assert_eq!(canon, json, "line {n} is not what JSON.stringify writes");
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["id"].as_str(), Some(l.id.as_str()), "line {n}: id");
        assert_eq!(
            v["parentId"].as_str(),
            l.parent.as_deref(),
            "line {n}: parentId"
        );
        if let Some(p) = &l.parent {
            assert!(
                seen.contains(p.as_str()),
                "line {n}: parent {p} not written before"
            );
        }
        assert!(seen.insert(&l.id), "line {n}: id {} twice", l.id);
    }
    let bytes = c.to_bytes(None);
    let parsed = parse(backing(bytes.clone())).expect("the import is a session");
    assert!(
        parsed.diagnostics.is_empty(),
        "diagnostics {:?} for input {:?}",
        parsed
            .diagnostics
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(input)
    );
    let tree = SessionTree::from_parsed(parsed);
    let leaf = tree.leaf_id().map(str::to_string);
    assert_eq!(leaf.as_deref(), c.lines.last().map(|l| l.id.as_str()));
    let _ = build_context(&tree, LeafArg::Default).to_json();
}

fn run(agent: &str, lines: &[String], seed: u64, convert: &dyn Fn(&[u8]) -> Vec<Conversion>) {
    let n: usize = env::env_or("SESSIONTREE_FUZZ_N", 1_500);
    let ids = id_values(lines);
    let mut r = Rng(seed);
    let mut produced = 0;
    for i in 0..n {
        let input = generate(&mut r, lines, &ids);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let first = convert(&input);
            for c in &first {
                check(c, &input);
            }
            let again = convert(&input);
            assert_eq!(first.len(), again.len());
            for (a, b) in first.iter().zip(&again) {
                assert_eq!(a.to_bytes(None), b.to_bytes(None), "not deterministic");
            }
            first.iter().map(|c| c.lines.len()).sum::<usize>()
        }));
        match res {
            Ok(k) => produced += k,
            Err(_) => panic!(
                "{agent} input #{i} failed: {:?}",
                String::from_utf8_lossy(&input)
            ),
        }
    }
    // The generator must reach the converters' real work, not only their error paths.
    assert!(
        produced > n,
        "{agent}: only {produced} entries from {n} inputs"
    );
}

#[test]
fn claude_converter_survives_generated_transcripts() {
    let lines = fixture_lines(&["claude", "claude-recorded", "claude-attachments"]);
    run("claude", &lines, 0x5EED_C1A0_0000_0001, &|b| {
        claude::convert(b, "fuzz")
    });
}

#[test]
fn codex_converter_survives_generated_rollouts() {
    let lines = fixture_lines(&["codex", "codex-recorded"]);
    run("codex", &lines, 0x5EED_C0DE_0000_0002, &|b| {
        let mut v = vec![codex::convert(b, "fuzz")];
        v.push(codex::convert_fork(b, "fuzz-fork", Some(b)));
        v
    });
}

#[test]
fn gemini_converter_survives_generated_chats() {
    let lines = fixture_lines(&["gemini", "gemini-recorded"]);
    run("gemini", &lines, 0x5EED_6E31_0000_0003, &|b| {
        vec![
            gemini::convert(b, "fuzz", Some("/home/dev/demo"), None),
            gemini::convert(b, "fuzz-sub", None, Some("parent")),
        ]
    });
}

#[test]
fn copilot_converter_survives_generated_event_logs() {
    let lines = fixture_lines(&["copilot", "copilot-recorded"]);
    run("copilot", &lines, 0x5EED_C0B1_0000_0005, &|b| {
        copilot::convert_all(b, "fuzz")
    });
}

/// The messages and parts of the recorded OpenCode sessions (the JSON tree fixture), one
/// compact JSON text a line.
fn opencode_lines() -> Vec<String> {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode-storage/storage");
    let mut out = Vec::new();
    for kind in ["message", "part"] {
        let mut stack = vec![root.join(kind)];
        let mut files = Vec::new();
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                files.push(p);
            }
        }
        files.sort();
        for f in files {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
            out.push(v.to_string());
        }
    }
    assert!(out.len() > 20, "fixtures found: {}", out.len());
    out
}

/// A session from generated lines: a line with a role starts a message (every seventh one
/// deleted by a revert, as recovered from the event log), the others are its parts; some
/// sessions have a revert pending at one of their messages, some a title.
fn opencode_session(b: &[u8]) -> opencode::SessionData {
    let text = String::from_utf8_lossy(b);
    let mut s = opencode::SessionData {
        id: "ses_fuzz".into(),
        directory: "/home/dev/demo".into(),
        title: if b.len().is_multiple_of(3) {
            "A title".into()
        } else {
            String::new()
        },
        time_created: (b.len() as i64) * 1000,
        ..Default::default()
    };
    for (k, line) in text.split('\n').enumerate() {
        if line.contains("\"role\"") || s.messages.is_empty() {
            s.messages.push(opencode::MessageData {
                id: format!("msg_{k:04}"),
                time_created: k as i64,
                data: line.to_string(),
                parts: Vec::new(),
                removed: k % 7 == 3,
            });
        } else if let Some(m) = s.messages.last_mut() {
            m.parts.push(line.to_string());
        }
    }
    if b.len().is_multiple_of(5) && !s.messages.is_empty() {
        let at = &s.messages[b.len() % s.messages.len()].id;
        s.revert = Some(format!("{{\"messageID\":\"{at}\"}}"));
    }
    s
}

#[test]
fn opencode_converter_survives_generated_sessions() {
    let lines = opencode_lines();
    run("opencode", &lines, 0x5EED_0C0D_0000_0003, &|b| {
        vec![opencode::convert(&opencode_session(b))]
    });
}

/// A damaged database is an error or fewer sessions, never a panic.
#[test]
fn opencode_reader_survives_damaged_databases() {
    let db = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode-recorded/opencode.db"),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut r = Rng(0x5EED_0C0D_0000_0004);
    let n: usize = env::env_or("SESSIONTREE_FUZZ_N", 1_500) / 10;
    let (mut read, mut refused) = (0, 0);
    for i in 0..n.max(20) {
        let mut bytes = db.clone();
        if r.pick(8) == 0 {
            // Shifted, cut: mostly not a database any more.
            let times = 1 + r.pick(8);
            r.damage(&mut bytes, times);
        } else {
            // Bytes changed in place: pages, records and JSON texts damaged.
            for _ in 0..1 + r.pick(30) {
                let at = 100 + r.pick(bytes.len() - 100);
                bytes[at] = r.next() as u8;
            }
        }
        let p = tmp.path().join(format!("opencode-{i}.db"));
        std::fs::write(&p, &bytes).unwrap();
        match std::panic::catch_unwind(|| opencode::convert_path(&p)) {
            Ok(Ok(convs)) => {
                for c in &convs {
                    check(c, b"(database)");
                }
                read += 1;
            }
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("damaged database #{i} panicked"),
        }
        std::fs::remove_file(&p).unwrap();
    }
    assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
}
