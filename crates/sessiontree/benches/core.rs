//! Criterion benchmarks of the pure core (no disk): parse, index, branch, context, tree
//! and append, on generated sessions of 200, 5,000 and 50,000 entries with realistic
//! shapes (tool results of 1-200 KB, thinking, branches, labels, compactions).
//!
//! `cargo bench -p sessiontree --bench core`; `SESSIONTREE_BENCH_SIZES=200,5000` to choose.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sessiontree::parse::{backing, parse};
use sessiontree::{build_context, Json, LeafArg, Session, SessionTree};
use sessiontree_testkit::gen;

fn sizes() -> Vec<usize> {
    std::env::var("SESSIONTREE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![200, 5_000, 50_000])
}

fn session_bytes(entries: usize) -> Vec<u8> {
    let mut out = Vec::new();
    gen::generate(
        &gen::Shape {
            entries,
            target_bytes: 5_000,
            seed: 1,
        },
        &mut out,
    )
    .unwrap();
    out
}

fn bench(c: &mut Criterion) {
    for n in sizes() {
        let bytes = session_bytes(n);
        let mut g = c.benchmark_group(format!("{n}-entries"));
        g.sample_size(if n >= 50_000 { 10 } else { 30 });
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function("parse", |b| {
            b.iter_batched(
                || backing(bytes.clone()),
                |buf| parse(buf).unwrap(),
                BatchSize::LargeInput,
            )
        });
        g.bench_function("parse+index", |b| {
            b.iter_batched(
                || backing(bytes.clone()),
                |buf| SessionTree::from_parsed(parse(buf).unwrap()),
                BatchSize::LargeInput,
            )
        });
        let tree = SessionTree::from_parsed(parse(backing(bytes.clone())).unwrap());
        g.throughput(Throughput::Elements(tree.get_branch(None).len() as u64));
        g.bench_function("get_branch", |b| b.iter(|| tree.get_branch(None).len()));
        g.bench_function("context", |b| {
            b.iter(|| build_context(&tree, LeafArg::Default).messages.len())
        });
        g.bench_function("context-json", |b| {
            let mut sink = Vec::with_capacity(bytes.len());
            b.iter(|| {
                sink.clear();
                build_context(&tree, LeafArg::Default)
                    .write_json(&mut sink)
                    .unwrap();
                sink.len()
            })
        });
        g.throughput(Throughput::Elements(tree.entries().len() as u64));
        g.bench_function("tree", |b| b.iter(|| tree.get_tree().roots.len()));
        g.finish();
    }
    let mut g = c.benchmark_group("append");
    let msg = Json::parse(r#"{"role":"user","content":[{"type":"text","text":"a message of ordinary size, with some words in it"}],"timestamp":1733234400000}"#).unwrap();
    g.throughput(Throughput::Elements(1));
    g.bench_function("in-memory", |b| {
        let mut s = Session::in_memory("/p");
        b.iter(|| s.append_message(&msg).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
