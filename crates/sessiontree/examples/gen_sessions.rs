//! Writes a large synthetic agent dir for benchmarks: `gen_sessions OUT COUNT TOTAL_MB
//! [PROJECTS]`. Sessions are spread over PROJECTS working directories (default 20); each is a chain of user, assistant
//! (with usage), tool-result and bash messages with occasional branches, sized so the
//! whole set is about TOTAL_MB. Deterministic. Every other session has the common word
//! `compaction` in a third of its tool results (a word a user searches for that is in many
//! lines), one user message in fifty has the rare `quokka_marker`. Each file's mtime is
//! its last entry's time, as a file Pi appends to has it.

use sessiontree_testkit::rng as xorshift;
use std::io::Write;
use xorshift::Rng;

fn words(r: &mut Rng, vocab: &[String], lo: usize, spread: u64) -> String {
    let n = lo + r.below(spread) as usize;
    let mut s = String::with_capacity(n * 8);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&vocab[r.below(vocab.len() as u64) as usize]);
    }
    s
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let out = std::path::PathBuf::from(&a[1]);
    let count: usize = a[2].parse().unwrap();
    let total_mb: usize = a[3].parse().unwrap();
    let per_file = total_mb * 1024 * 1024 / count;
    let projects: usize = a.get(4).map_or(20, |p| p.parse().unwrap());
    let syll = [
        "ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ven", "dor", "ix", "qua",
    ];
    let mut r = Rng(0x9e3779b97f4a7c15);
    let vocab: Vec<String> = (0..3000)
        .map(|_| {
            (0..2 + r.below(3))
                .map(|_| syll[r.below(12) as usize])
                .collect()
        })
        .collect();
    let t0: u64 = 1_735_689_600_000; // 2025-01-01
    for i in 0..count {
        let cwd = format!("/home/u/proj{}", i % projects);
        let dir = out
            .join("sessions")
            .join(format!("--home-u-proj{}--", i % projects));
        std::fs::create_dir_all(&dir).unwrap();
        let start = t0 + i as u64 * 3_600_000;
        let iso = |ms: u64| sessiontree::date::iso_from_ms(ms as i64);
        let id = format!("0194{:04x}-0000-7000-8000-{:012x}", i % 65536, i);
        let path = dir.join(sessiontree::dirs::session_file_name(&iso(start), &id));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut written = 0usize;
        let header = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"{}\",\"cwd\":\"{cwd}\"}}\n",
            iso(start)
        );
        written += header.len();
        f.write_all(header.as_bytes()).unwrap();
        let mut parent = String::from("null");
        let mut ids: Vec<String> = Vec::new();
        let mut n = 0u64;
        while written < per_file {
            n += 1;
            let ts = start + n * 1000;
            let eid = format!("{:08x}", r.next() as u32);
            if n.is_multiple_of(40) && ids.len() > 4 {
                parent = format!("\"{}\"", ids[ids.len() - 4]); // a branch
            }
            let kind = n % 4;
            let body = match kind {
                1 => {
                    let mut t = words(&mut r, &vocab, 20, 60);
                    if r.below(50) < 1 {
                        t.push_str(" quokka_marker::Needle");
                    }
                    format!("{{\"role\":\"user\",\"content\":\"{t}\",\"timestamp\":{ts}}}")
                }
                2 => format!(
                    "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}},{{\"type\":\"toolCall\",\"id\":\"c{n}\",\"name\":\"bash\",\"arguments\":{{\"command\":\"ls\"}}}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{},\"output\":{},\"cacheRead\":{},\"cacheWrite\":0,\"totalTokens\":0,\"cost\":{{\"input\":0.001,\"output\":0.002,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0.003}}}},\"stopReason\":\"toolUse\",\"timestamp\":{ts}}}",
                    words(&mut r, &vocab, 30, 120),
                    1000 + r.below(5000),
                    50 + r.below(500),
                    r.below(20000)
                ),
                3 => {
                    let mut t = words(&mut r, &vocab, 200, 900);
                    if i % 2 == 0 && n % 12 == 3 {
                        t.push_str(" compaction");
                    }
                    format!(
                        "{{\"role\":\"toolResult\",\"toolCallId\":\"c{}\",\"toolName\":\"bash\",\"content\":[{{\"type\":\"text\",\"text\":\"{t}\"}}],\"isError\":false,\"timestamp\":{ts}}}",
                        n - 1,
                    )
                }
                _ => format!(
                    "{{\"role\":\"bashExecution\",\"command\":\"make test\",\"output\":\"{}\",\"exitCode\":0,\"cancelled\":false,\"truncated\":false,\"timestamp\":{ts}}}",
                    words(&mut r, &vocab, 100, 400)
                ),
            };
            let line = format!(
                "{{\"type\":\"message\",\"id\":\"{eid}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"message\":{body}}}\n",
                iso(ts)
            );
            written += line.len();
            f.write_all(line.as_bytes()).unwrap();
            parent = format!("\"{eid}\"");
            ids.push(eid);
        }
        if i % 7 == 0 {
            let line = format!(
                "{{\"type\":\"session_info\",\"id\":\"{:08x}\",\"parentId\":{parent},\"timestamp\":\"{}\",\"name\":\"session {i}\"}}\n",
                r.next() as u32,
                iso(start + (n + 1) * 1000)
            );
            f.write_all(line.as_bytes()).unwrap();
            n += 1;
        }
        // The file's mtime is its last entry's time (searches read newest files first).
        let f = f.into_inner().unwrap();
        let last = std::time::UNIX_EPOCH + std::time::Duration::from_millis(start + n * 1000);
        f.set_modified(last).unwrap();
    }
}
