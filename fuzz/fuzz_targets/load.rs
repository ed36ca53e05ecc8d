//! Arbitrary bytes through the loader and every pure projection: no panic, no hang;
//! every input either loads or gives a typed `NotSession`. Splitting the scan over
//! several threads must not change the result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiontree::parse::{backing, entries_at, parse, parse_with_threads, LineAt, Parsed};
use sessiontree::{build_context, to_llm, LeafArg, SessionTree};

fn summary(p: &Parsed) -> (Vec<(u64, u64, String)>, Vec<String>, String, u64, u64) {
    (
        p.entries
            .iter()
            .map(|e| (e.line, e.offset, e.text().to_string()))
            .collect(),
        p.diagnostics.iter().map(|d| format!("{d:?}")).collect(),
        format!("{:?}", p.tail),
        p.len,
        p.lines,
    )
}

fuzz_target!(|data: &[u8]| {
    let one = parse(backing(data.to_vec()));
    let three = parse_with_threads(backing(data.to_vec()), 3);
    match (&one, &three) {
        (Ok(a), Ok(b)) => {
            assert_eq!(summary(a), summary(b), "3-thread parse differs");
            assert_eq!(a.header.text(), b.header.text());
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "3-thread parse gives another error"),
        _ => panic!("1-thread and 3-thread parse disagree: {one:?} vs {three:?}"),
    }
    // Entries read where the parse found them are the entries it gave.
    if let Ok(whole) = &one {
        let at: Vec<LineAt> = whole.entries.iter().filter_map(LineAt::of).collect();
        let buf = backing(data.to_vec());
        let got = entries_at(&buf, &at).expect("the lines a parse found are there");
        assert_eq!(got.len(), at.len());
        for (g, a) in got.iter().zip(&at) {
            assert_eq!((g.offset, g.line, g.text().len() as u64), (a.offset, a.line, a.len));
        }
    }
    let Ok(mut parsed) = one else { return };
    sessiontree::migrate::migrate(&mut parsed);
    let mut tree = SessionTree::from_parsed(parsed);
    let ids: Vec<String> = tree
        .entries()
        .iter()
        .filter_map(|e| e.id().map(str::to_string))
        .collect();
    for leaf in [LeafArg::Default, LeafArg::Null, LeafArg::Id("no-such-id")] {
        let ctx = build_context(&tree, leaf);
        let _ = ctx.to_json();
        let _ = to_llm(&ctx.messages);
    }
    for id in ids.iter().take(3).chain(ids.iter().rev().take(2)) {
        let ctx = build_context(&tree, LeafArg::Id(id));
        let _ = ctx.to_json();
        let _ = to_llm(&ctx.messages);
        let _ = tree.get_branch(Some(id));
        let _ = tree.get_children(id);
    }
    let _ = tree.get_branch(None);
    let _ = tree.get_tree();
    let _ = tree.tree_json();
    let _ = tree.name();
    let _ = tree.labels();
});
