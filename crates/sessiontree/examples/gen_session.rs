//! Writes a generated benchmark session: `gen_session ENTRIES AVG_BYTES SEED > file.jsonl`.
//! Deterministic: the same arguments give the same bytes.

use sessiontree_testkit::gen;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let shape = gen::Shape {
        entries: num(1, 5_000),
        target_bytes: num(2, 5_000),
        seed: num(3, 1) as u64,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    gen::generate(&shape, &mut out)
}
