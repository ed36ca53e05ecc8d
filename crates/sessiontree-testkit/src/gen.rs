//! A seeded, deterministic generator of realistic sessions for benchmarks: user prompts,
//! assistant turns with thinking and tool calls, tool results of 1-200 KB, bash runs,
//! branches, labels and compactions. The same seed and size give the same bytes. (Its own
//! xorshift64* generator, not [`crate::Rng`]: the benchmarks' corpora stay as they were.)

/// xorshift64*: small, fast, good enough for shapes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 1.0 < p
    }
    /// A log-uniform size between lo and hi.
    pub fn size(&mut self, lo: u64, hi: u64) -> usize {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let t = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (a + (b - a) * t).exp() as usize
    }
}

const WORDS: &[&str] = &[
    "the",
    "session",
    "file",
    "tree",
    "leaf",
    "branch",
    "parse",
    "index",
    "context",
    "compaction",
    "tool",
    "result",
    "fn",
    "let",
    "mut",
    "impl",
    "struct",
    "error",
    "return",
    "match",
    "Some(x)",
    "None",
    "=>",
    "{",
    "}",
    "//",
    "TODO",
    "cargo",
    "build",
    "test",
    "src/lib.rs",
    "println!",
    "0x1f",
    "42",
    "über",
    "日本語",
    "テスト",
    "😀",
    "\\n",
    "\"quoted\"",
];

fn sized(rng: &mut Rng, lo: u64, hi: u64) -> String {
    let n = rng.size(lo, hi);
    text(rng, n)
}

fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.chance(0.08) { '\n' } else { ' ' });
    }
    s
}

fn js(s: &str) -> String {
    crate::agent::json_string(s)
}

/// `ms` since the epoch as `Date.prototype.toISOString` writes it, for years 0 to 9999
/// (the library's own conversion is not used: the testkit depends on no workspace crate;
/// `crates/sessiontree/tests/testkit.rs` checks that the two agree).
pub fn iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // Days to a civil date (proleptic Gregorian), through 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// What to generate.
pub struct Shape {
    pub entries: usize,
    /// Average bytes per entry (tool results dominate).
    pub target_bytes: usize,
    pub seed: u64,
}

/// Writes a whole session file (header included) to `out`.
pub fn generate(shape: &Shape, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut rng = Rng::new(shape.seed);
    let mut t: i64 = 1_733_234_400_000;
    writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"0193aaaa-0000-7000-8000-{:012x}","timestamp":"{}","cwd":"/home/dev/project"}}"#,
        shape.seed,
        iso(t)
    )?;
    let mut ids: Vec<String> = Vec::with_capacity(shape.entries);
    let mut leaf: Option<usize> = None;
    let max_result = (shape.target_bytes as u64 * 6).clamp(2_000, 200_000);
    let mut pending_calls: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < shape.entries {
        t += rng.below(4000) as i64 + 1;
        // Now and then the user goes back and continues from an earlier entry: a branch.
        if i > 10 && pending_calls.is_empty() && rng.chance(0.002) {
            leaf = Some(i - 1 - rng.below(10) as usize);
        }
        let id = format!(
            "{:08x}",
            ((i as u32).wrapping_mul(2_654_435_761)) ^ (shape.seed as u32)
        );
        let parent = leaf.map_or("null".to_string(), |l| format!("\"{}\"", ids[l]));
        let head = format!(
            r#""id":"{id}","parentId":{parent},"timestamp":"{}""#,
            iso(t)
        );
        let line = if let Some((call, name)) = pending_calls.pop() {
            let body = sized(&mut rng, 1_000, max_result);
            format!(
                r#"{{"type":"message",{head},"message":{{"role":"toolResult","toolCallId":"{call}","toolName":"{name}","content":[{{"type":"text","text":{}}}],"isError":false,"timestamp":{t}}}}}"#,
                js(&body)
            )
        } else if i > 50 && rng.chance(0.0004) {
            let kept = &ids[i - rng.below(40) as usize - 1];
            format!(
                r#"{{"type":"compaction",{head},"summary":{},"firstKeptEntryId":"{kept}","tokensBefore":{}}}"#,
                js(&text(&mut rng, 2_000)),
                100_000 + rng.below(50_000)
            )
        } else if i > 10 && rng.chance(0.002) {
            let target = &ids[rng.below(i as u64) as usize];
            format!(r#"{{"type":"label",{head},"targetId":"{target}","label":"checkpoint {i}"}}"#)
        } else if rng.chance(0.2) {
            format!(
                r#"{{"type":"message",{head},"message":{{"role":"user","content":{},"timestamp":{t}}}}}"#,
                js(&sized(&mut rng, 20, 2_000))
            )
        } else if rng.chance(0.1) {
            let out_text = sized(&mut rng, 10, 20_000);
            format!(
                r#"{{"type":"message",{head},"message":{{"role":"bashExecution","command":"cargo test","output":{},"exitCode":{},"cancelled":false,"truncated":false,"timestamp":{t}}}}}"#,
                js(&out_text),
                rng.below(2)
            )
        } else {
            let mut blocks = vec![format!(
                r#"{{"type":"thinking","thinking":{}}}"#,
                js(&sized(&mut rng, 100, 4_000))
            )];
            blocks.push(format!(
                r#"{{"type":"text","text":{}}}"#,
                js(&sized(&mut rng, 20, 1_500))
            ));
            let calls = if rng.chance(0.7) { 1 + rng.below(3) } else { 0 };
            for c in 0..calls {
                let call = format!("toolu_{id}_{c}");
                let name = ["read", "bash", "edit", "grep"][rng.below(4) as usize];
                blocks.push(format!(r#"{{"type":"toolCall","id":"{call}","name":"{name}","arguments":{{"path":"src/lib.rs","command":{}}}}}"#, js(&text(&mut rng, 60))));
                pending_calls.push((call, name.to_string()));
            }
            let stop = if calls > 0 { "toolUse" } else { "stop" };
            let (inp, outp) = (1_000 + rng.below(100_000), 50 + rng.below(4_000));
            format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{inp},"output":{outp},"cacheRead":0,"cacheWrite":0,"totalTokens":{},"cost":{{"input":{},"output":{},"cacheRead":0,"cacheWrite":0,"total":{}}}}},"stopReason":"{stop}","timestamp":{t}}}}}"#,
                blocks.join(","),
                inp + outp,
                inp as f64 * 3e-6,
                outp as f64 * 15e-6,
                inp as f64 * 3e-6 + outp as f64 * 15e-6
            )
        };
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        ids.push(id);
        leaf = Some(i);
        i += 1;
    }
    Ok(())
}
