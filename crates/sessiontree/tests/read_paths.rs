//! Every read path gives the same session: read or mapped, scanned by one thread or split
//! across many (with bad lines, invalid UTF-8 and a torn tail near the split points).

use sessiontree_testkit::gen;

use sessiontree::parse::{backing, parse_with_threads};
use sessiontree::{build_context, LeafArg, SessionTree};

fn fingerprint(t: &SessionTree) -> String {
    let mut s = String::new();
    for e in t.entries() {
        s.push_str(&format!("{}:{}:{}\n", e.line, e.offset, e.text()));
    }
    for d in t.diagnostics() {
        s.push_str(&format!("{d}\n"));
    }
    s.push_str(&format!(
        "leaf {:?} name {:?} count {}\n",
        t.leaf_id(),
        t.name(),
        t.entry_count()
    ));
    s.push_str(&t.tree_json());
    s.push_str(&build_context(t, LeafArg::Default).to_json());
    s
}

fn damaged_session() -> Vec<u8> {
    let mut out = Vec::new();
    gen::generate(
        &gen::Shape {
            entries: 3_000,
            target_bytes: 3_000,
            seed: 11,
        },
        &mut out,
    )
    .unwrap();
    // Damage lines at many places, so that some land near any split point.
    let mut lines: Vec<Vec<u8>> = out.split(|&b| b == b'\n').map(|l| l.to_vec()).collect();
    lines.pop();
    let n = lines.len();
    for (k, i) in (5..n).step_by(n / 37).enumerate() {
        let bad: Vec<u8> = match k % 5 {
            0 => b"{not json".to_vec(),
            1 => b"   ".to_vec(),
            2 => b"42".to_vec(),
            3 => vec![b'"', 0xff, 0xfe, b'"'],
            _ => {
                let mut l = lines[i].clone();
                l.insert(l.len() / 2, 0xc3);
                l
            }
        };
        lines.insert(i, bad);
    }
    let mut bytes = lines.join(&b'\n');
    bytes.extend_from_slice(b"\n{\"type\":\"message\",\"id\":\"torn");
    bytes
}

#[test]
fn one_thread_or_many_give_the_same_session() {
    let bytes = damaged_session();
    let serial = SessionTree::from_parsed(parse_with_threads(backing(bytes.clone()), 1).unwrap());
    let expect = fingerprint(&serial);
    assert!(serial.diagnostics().len() > 30);
    for threads in [2, 3, 7, 64] {
        let t =
            SessionTree::from_parsed(parse_with_threads(backing(bytes.clone()), threads).unwrap());
        assert!(fingerprint(&t) == expect, "{threads} threads differ");
    }
}

#[test]
fn mapped_and_read_files_give_the_same_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.jsonl");
    let bytes = damaged_session();
    assert!(bytes.len() > 2 << 20, "large enough to be mapped");
    std::fs::write(&p, &bytes).unwrap();
    let mapped = sessiontree::load(&p).unwrap();
    let read = sessiontree::session::load_bytes(&p, bytes).unwrap();
    assert!(fingerprint(&mapped.tree) == fingerprint(&read.tree));
    assert_eq!(mapped.tail, read.tail);
}
