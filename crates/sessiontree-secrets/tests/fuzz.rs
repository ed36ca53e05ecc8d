//! The scanner and the redaction on arbitrary bytes: never a panic, never a hang, and a
//! redacted JSON line is still JSON. Deterministic (seeded), as CI runs it;
//! `SECRETS_FUZZ_CASES` runs more.

use sessiontree_secrets::{find, redact_json, redact_line, redact_line_bytes, scan_session};
use sessiontree_testkit::Rng;

/// Pieces that steer random text into the rules' paths.
const PIECES: &[&str] = &[
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "\\n",
    "\\\"",
    "\\u0041",
    "\\ud83d",
    "\\/",
    "AKIA",
    "ghp_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "hooks.slack.com/services/",
    "sk_live_",
    "sk-ant-api03-",
    "sk-proj-",
    "T3BlbkFJ",
    "AIza",
    "hf_",
    "npm_",
    "pypi-AgEIcHlwaS5vcmc",
    "AccountKey=",
    "?sv=2020-01-01&se=x&sig=",
    "eyJhbGciOiJIUzI1NiJ9.eyJ",
    "://u:",
    "@h",
    "password=",
    "secret: ",
    "\"private_key_id\": \"",
    "aws_secret_access_key=",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\n",
    "\u{fffd}",
    "é",
    "💥",
    "\\",
];

fn random_text(r: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..r.pick(40) {
        match r.pick(4) {
            0 => out.extend_from_slice(PIECES[r.pick(PIECES.len())].as_bytes()),
            1 => out.push(r.next() as u8),
            _ => {
                for _ in 0..r.pick(50) {
                    out.push(
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-."
                            [r.pick(67)],
                    );
                }
            }
        }
    }
    out
}

fn cases() -> usize {
    std::env::var("SECRETS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut r = Rng(0x00f0_0d5e_c2e7_5001);
    for _ in 0..cases() {
        let bytes = random_text(&mut r);
        let scan = scan_session(&bytes);
        for f in &scan.findings {
            assert!(f.preview.contains('…'));
        }
        let _ = redact_line_bytes(&bytes);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = find(s);
            let _ = redact_line(s);
            let _ = redact_json(s);
        }
    }
}

#[test]
fn redacted_json_stays_json() {
    let mut r = Rng(0x0bad_cafe_0000_0007);
    let mut redacted = 0;
    for _ in 0..cases() {
        // A JSON string value made of random pieces, inside a session line.
        let mut s = String::new();
        for _ in 0..r.pick(30) {
            s.push_str(PIECES[r.pick(PIECES.len())]);
            for _ in 0..r.pick(45) {
                s.push(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[r.pick(62)]
                        as char,
                );
            }
        }
        let lit = serde_json::to_string(&s).unwrap();
        let line = format!(
            r#"{{"type":"message","id":"i","parentId":null,"timestamp":"t","message":{{"role":"user","content":[{{"type":"text","text":{lit}}}],"k":{{{lit}:[{lit},1e400]}}}}}}"#
        );
        if let Some(red) = redact_line(&line) {
            redacted += 1;
            serde_json::from_str::<serde_json::Value>(&red)
                .unwrap_or_else(|e| panic!("{e}: {red}"));
            assert!(red.contains("[REDACTED:"));
            assert!(red.starts_with(r#"{"type":"message","id":"i","parentId":null"#));
        }
    }
    assert!(redacted > 0, "no case reached a redaction");
}

#[test]
fn many_markers_cost_linear_time() {
    let mut s = String::new();
    for _ in 0..50_000 {
        s.push_str("-----BEGIN PRIVATE KEY----- x ");
    }
    let t = std::time::Instant::now();
    assert!(find(&s).is_empty());
    let lit = serde_json::to_string(&s).unwrap();
    let line = format!(
        r#"{{"type":"message","id":"i","parentId":null,"timestamp":"t","message":{{"role":"user","content":{lit}}}}}"#
    );
    assert!(scan_session(line.as_bytes()).findings.is_empty());
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
}
