//! Deterministic fuzzing of the loader (cargo-fuzz needs nightly; this runs on stable in
//! CI): 20,000 generated inputs (random bytes and mutated real lines) go through parse,
//! the tree index, every projection and the repair planner. Nothing may panic or hang,
//! and a repaired file must load without line-level problems. Entries read where a parse
//! found them, or parsed on from one of its lines, are the entries it gave; lines named at
//! random are read or refused, never a panic.

use sessiontree_core::parse::{backing, entries_at, parse, parse_from, LineAt};
use sessiontree_core::{build_context, to_llm, DiagnosticKind, LeafArg, SessionTree};
use sessiontree_testkit::env;
use sessiontree_testkit::rng as xorshift;
use xorshift::Rng;

const LINES: &[&str] = &[
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}"#,
    r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#,
    r#"{"type":"session","version":2,"id":"v2","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#,
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1733234401000}}"#,
    r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"cmd":"ls"}}],"provider":"p","model":"m","usage":{"input":1,"output":2},"stopReason":"toolUse","timestamp":1733234402000}}"#,
    r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1733234403000}}"#,
    r#"{"type":"compaction","id":"a4","parentId":"a3","timestamp":"2024-12-03T14:00:04.000Z","summary":"s","firstKeptEntryId":"a2","tokensBefore":100}"#,
    r#"{"type":"compaction","timestamp":"2024-12-03T14:00:04.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":100}"#,
    r#"{"type":"branch_summary","id":"a5","parentId":"a1","timestamp":"2024-12-03T14:00:05.000Z","fromId":"a4","summary":"went elsewhere"}"#,
    r#"{"type":"label","id":"a6","parentId":"a5","timestamp":"2024-12-03T14:00:06.000Z","targetId":"a1","label":"start"}"#,
    r#"{"type":"custom_message","customType":"note","content":"c","display":true,"id":"a7","parentId":"a6","timestamp":"2024-12-03T14:00:07.000Z"}"#,
    r#"{"type":"context_edit","id":"a8","parentId":"a7","timestamp":"2024-12-03T14:00:08.000Z","targetId":"a2","replacement":{"content":"edited"}}"#,
    r#"{"type":"session_info","id":"a9","parentId":"a8","timestamp":"2024-12-03T14:00:09.000Z","name":"n"}"#,
    r#"{"type":"model_change","id":"b1","parentId":"a9","timestamp":"2024-12-03T14:00:10.000Z","provider":"p","modelId":"m"}"#,
    r#"{"type":"thinking_level_change","id":"b2","parentId":"b1","timestamp":"2024-12-03T14:00:11.000Z","thinkingLevel":"high"}"#,
    r#"{"type":"message","id":"b3","parentId":"b3","timestamp":"x","message":{"role":"hookMessage","content":"self"}}"#,
    r#"{"type":"message","id":"b4","parentId":"b5","timestamp":"x","message":{"role":"user","content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
    r#"{"type":"message","id":"b5","parentId":"b4","timestamp":"x","message":{"role":"bashExecution","command":"ls","output":"o","exitCode":0}}"#,
    r#"{"type":"message","id":"a1","parentId":7,"timestamp":"x","message":null}"#,
    "null",
    "42",
    "[1,2]",
    "false",
    "\"s\"",
    "{}",
    "",
    "   ",
];

const IDS: &[&str] = &["a1", "a2", "a3", "a4", "a5", "b3", "b4", "b5", "zz", ""];

fn generate(r: &mut Rng) -> Vec<u8> {
    if r.pick(10) == 0 {
        // pure random bytes, biased towards JSON punctuation
        let n = r.pick(400);
        let alphabet = b"{}[]\":,\n \\0123456789abcdefnulltruefalse\xff\xc3\x28";
        return (0..n)
            .map(|_| {
                if r.pick(4) == 0 {
                    r.next() as u8
                } else {
                    alphabet[r.pick(alphabet.len())]
                }
            })
            .collect();
    }
    let mut lines: Vec<Vec<u8>> = Vec::new();
    if r.pick(8) != 0 {
        lines.push(LINES[r.pick(3)].as_bytes().to_vec());
    }
    for _ in 0..r.pick(14) {
        let mut l = LINES[r.pick(LINES.len())].to_string();
        if r.pick(3) == 0 {
            // rewire a parent or id, making orphans, duplicates, cycles
            let from = IDS[r.pick(IDS.len())];
            let to = IDS[r.pick(IDS.len())];
            if !from.is_empty() {
                l = l.replacen(&format!("\"{from}\""), &format!("\"{to}\""), 1);
            }
        }
        lines.push(l.into_bytes());
    }
    let mut buf = Vec::new();
    for l in &lines {
        buf.extend_from_slice(l);
        buf.push(b'\n');
    }
    let times = r.pick(4);
    r.damage(&mut buf, times);
    buf
}

fn exercise(bytes: &[u8]) {
    if let Ok(mut parsed) = parse(backing(bytes.to_vec())) {
        sessiontree_core::migrate::migrate(&mut parsed);
        let mut tree = SessionTree::from_parsed(parsed);
        let ids: Vec<String> = tree
            .entries()
            .iter()
            .filter_map(|e| e.id().map(str::to_string))
            .collect();
        let ctx = build_context(&tree, LeafArg::Default);
        let _ = ctx.to_json();
        let _ = to_llm(&ctx.messages);
        let _ = build_context(&tree, LeafArg::Null);
        let _ = tree.get_branch(None);
        for id in ids.iter().take(4) {
            let _ = tree.get_branch(Some(id));
            let _ = build_context(&tree, LeafArg::Id(id));
            let _ = tree.get_children(id);
        }
        let _ = tree.get_tree();
        let _ = tree.tree_json();
        let _ = tree.name();
        let _ = tree.labels();
    }
    if let Ok(plan) = sessiontree_core::repair::plan(
        None,
        bytes,
        &sessiontree_core::repair::PlanOptions {
            cwd: Some("/w".into()),
            id: None,
        },
    ) {
        let again = parse(backing(plan.content.clone())).expect("a repaired file is a session");
        for d in &again.diagnostics {
            assert!(
                !matches!(
                    d.kind,
                    DiagnosticKind::MalformedLine
                        | DiagnosticKind::TornTail
                        | DiagnosticKind::MissingNewline
                        | DiagnosticKind::ExtraHeader
                        | DiagnosticKind::NotAnObject
                        | DiagnosticKind::InvalidUtf8
                ),
                "repair left {d} in {:?}",
                String::from_utf8_lossy(&plan.content)
            );
        }
        let p2 = sessiontree_core::repair::plan(None, &plan.content, &Default::default()).unwrap();
        assert!(p2.is_noop(), "repair is idempotent: {:?}", p2.actions);
    }
}

/// What an entry is, for comparing reads of it.
fn described(e: &sessiontree_core::Entry) -> (u64, u64, u32, String) {
    (e.line, e.offset, e.ordinal(), e.text().to_string())
}

/// Reads `bytes` where a whole parse found its entries, on from one of its lines, and at
/// lines chosen at random.
fn read_where(bytes: &[u8], r: &mut Rng) {
    let buf = backing(bytes.to_vec());
    let Ok(whole) = parse(buf.clone()) else {
        return;
    };
    let at: Vec<LineAt> = whole.entries.iter().filter_map(LineAt::of).collect();
    let got = entries_at(&buf, &at).expect("the lines a parse found are there");
    let want: Vec<_> = whole
        .entries
        .iter()
        .filter(|e| e.span_in_file().is_some())
        .map(described)
        .collect();
    assert_eq!(got.iter().map(described).collect::<Vec<_>>(), want);
    let n = bytes.len() as u64 + 2;
    let random: Vec<LineAt> = (0..r.pick(4))
        .map(|_| LineAt {
            offset: r.pick(n as usize) as u64,
            len: r.pick(n as usize) as u64,
            line: r.pick(50) as u64,
            ordinal: r.pick(50) as u32,
        })
        .collect();
    let _ = entries_at(&buf, &random);
    // Parsed on from the start of a line after the header: the entries after it.
    if let Some(e) = whole.entries.get(r.pick(whole.entries.len().max(1))) {
        if let Some(span) = e.span_in_file() {
            let header = Some(whole.header.clone());
            let from = parse_from(buf.clone(), span.start as usize, e.line, header)
                .expect("parsed on after a header");
            let after: Vec<_> = whole
                .entries
                .iter()
                .filter(|x| x.offset >= span.start)
                .map(|x| (x.line, x.offset, x.text().to_string()))
                .collect();
            let on: Vec<_> = from
                .entries
                .iter()
                .map(|x| (x.line, x.offset, x.text().to_string()))
                .collect();
            assert_eq!(on, after);
        }
    }
}

#[test]
fn loader_survives_20000_generated_inputs() {
    let n: usize = env::env_or("SESSIONTREE_FUZZ_N", 20_000);
    let mut r = Rng(0x5EED_1234_ABCD_0001);
    for i in 0..n {
        let input = generate(&mut r);
        let mut again = Rng(r.0 ^ i as u64);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exercise(&input);
            read_where(&input, &mut again);
        }));
        if res.is_err() {
            panic!("input #{i} panicked: {:?}", String::from_utf8_lossy(&input));
        }
    }
}
