//! A session file's credentials: a prefilter on the rules' anchors in the raw bytes (as
//! `JSON.stringify` writes them), then only the candidate lines are decoded and walked.

use crate::json;
use sessiontree_core::json::Raw;
use std::sync::OnceLock;

/// One credential in a session file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The line (1-based).
    pub line: usize,
    /// The entry's id (`None` for the header and for lines without a string id).
    pub entry_id: Option<String>,
    /// True when the line is the session header.
    pub header: bool,
    /// The kind (one of [`crate::KINDS`]).
    pub kind: &'static str,
    /// Where in the line: a JSON path such as `message.content[2].text`; `(not JSON)` for
    /// a line that does not parse.
    pub field: String,
    /// The masked secret ([`crate::mask`]): never the secret itself.
    pub preview: String,
}

/// What a scan of one file found.
#[derive(Clone, Debug, Default)]
pub struct SessionScan {
    /// True when the first line is a session header.
    pub session: bool,
    /// Every credential, in file order.
    pub findings: Vec<Finding>,
    /// How many lines were decoded (the prefilter's candidates).
    pub candidates: usize,
}

/// What the byte prefilter looks for: a literal of every rule's anchors in the casings
/// people and programs write (`secret`, `SECRET`; `api_key`, `apiKey`, `API_KEY`), and
/// shorter where one literal covers several anchors (`xox` for every Slack prefix,
/// `ecret` for `secret_access_key` and `client_secret`). Case-sensitive literals let the
/// search run on SIMD (Teddy) at memory speed; the decoded text is then matched
/// case-insensitively, so this list only decides which lines are decoded.
const RAW_ANCHORS: &[&str] = &[
    "PRIVATE KEY",
    "private_key",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "ecret",
    "ECRET",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "gldt-",
    "glrt-",
    "glptt-",
    "glcbt-",
    "gloas-",
    "glsoat-",
    "glffct-",
    "glimt-",
    "glagent-",
    "glft-",
    "GR1348941",
    "xox",
    "xapp-",
    "hooks.slack.com",
    "_live_",
    "sk-ant-",
    "T3BlbkFJ",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "AIza",
    "hf_",
    "api_org_",
    "npm_",
    "pypi-AgE",
    "ccountKey",
    "ccountkey",
    "CCOUNTKEY",
    "haredAccessKey",
    "sig=",
    "eyJ",
    "://",
    "assw",
    "ASSW",
    "assphrase",
    "ASSPHRASE",
    "pi_key",
    "PI_KEY",
    "pi-key",
    "pikey",
    "piKey",
    "PIKEY",
    "ccess_key",
    "CCESS_KEY",
    "ccessKey",
    "ccess-key",
    "_token",
    "_TOKEN",
    "-token",
    "Token=",
    "token=",
    "TOKEN=",
    "token:",
    "Token:",
    "token\\\"",
    "token\"",
    "token'",
    "token =",
];

/// One group of the byte prefilter: the SIMD literal search (slim Teddy) where the CPU has
/// it, else an automaton.
enum Group {
    Simd(aho_corasick::packed::Searcher),
    Automaton(aho_corasick::AhoCorasick),
}

impl Group {
    fn find(&self, buf: &[u8], from: usize) -> Option<usize> {
        match self {
            Group::Simd(s) => s
                .find_in(buf, aho_corasick::Span::from(from..buf.len()))
                .map(|m| m.start()),
            Group::Automaton(a) => a
                .find(aho_corasick::Input::new(buf).range(from..))
                .map(|m| m.start()),
        }
    }
}

/// Patterns per group: slim Teddy (8 buckets) stays near memory speed with a few per
/// bucket; one search over all of them would run at a tenth of it.
const RAW_GROUP: usize = 16;

/// The byte prefilter over [`RAW_ANCHORS`], in groups.
fn raw_prefilter() -> &'static [Group] {
    static R: OnceLock<Vec<Group>> = OnceLock::new();
    R.get_or_init(|| {
        RAW_ANCHORS
            .chunks(RAW_GROUP)
            .map(|g| {
                let simd = aho_corasick::packed::Config::new()
                    .only_teddy(true)
                    .only_teddy_fat(Some(false))
                    .builder()
                    .extend(g)
                    .build();
                match simd {
                    Some(s) => Group::Simd(s),
                    None => Group::Automaton(
                        aho_corasick::AhoCorasick::builder()
                            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                            .build(g)
                            .expect("literal anchors"),
                    ),
                }
            })
            .collect()
    })
}

/// True when the backslash at `b[at]` starts an escape (an even number of backslashes
/// before it).
fn escape_starts(b: &[u8], at: usize) -> bool {
    let before = b[..at].iter().rev().take_while(|&&c| c == b'\\').count();
    before % 2 == 0
}

/// Escapes `JSON.stringify` never writes (`\u0041`, `\/`), which could hide an anchor
/// from the byte search: the lines holding them are candidates too.
fn odd_escapes(b: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(b, b"\\u") {
        if !escape_starts(b, at) {
            continue;
        }
        let hex = b.get(at + 2..at + 6).unwrap_or(&[]);
        let canonical = hex.len() == 4
            && ((hex[0] == b'0' && hex[1] == b'0' && matches!(hex[2], b'0' | b'1'))
                || (matches!(hex[0], b'd' | b'D') && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f')));
        if !canonical {
            out.push(at);
        }
    }
    for at in memchr::memmem::find_iter(b, b"\\/") {
        if escape_starts(b, at) {
            out.push(at);
        }
    }
    out.sort_unstable();
    out
}

/// True when `bytes` may hold a credential: a rule's anchor occurs (as written in JSON) or
/// an unusual escape could hide one. False means certainly none.
pub fn may_contain(bytes: &[u8]) -> bool {
    raw_prefilter().iter().any(|g| g.find(bytes, 0).is_some()) || !odd_escapes(bytes).is_empty()
}

/// The candidate lines of `buf` as `[start, end)` ranges (`\n` excluded), in order, once.
fn candidate_lines(buf: &[u8]) -> Vec<(usize, usize)> {
    let line_at = |i: usize| {
        let a = memchr::memrchr(b'\n', &buf[..i]).map_or(0, |p| p + 1);
        let b = memchr::memchr(b'\n', &buf[i..]).map_or(buf.len(), |p| i + p);
        (a, b)
    };
    let mut lines = Vec::new();
    for g in raw_prefilter() {
        let mut pos = 0;
        while pos < buf.len() {
            let Some(at) = g.find(buf, pos) else { break };
            let (a, b) = line_at(at);
            lines.push((a, b));
            pos = b + 1;
        }
    }
    lines.extend(odd_escapes(buf).into_iter().map(line_at));
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// Every credential in a session file's bytes: every line (so every branch), every string
/// value but ids, types, times and signatures (see the crate docs).
pub fn scan_session(buf: &[u8]) -> SessionScan {
    let first_end = memchr::memchr(b'\n', buf).unwrap_or(buf.len());
    let first = trim(&buf[..first_end]);
    let session = Raw::parse(first).is_ok_and(|r| {
        r.get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t == "session")
    });
    let mut scan = SessionScan {
        session,
        ..Default::default()
    };
    let mut line_no = 1;
    let mut counted_to = 0;
    for (a, b) in candidate_lines(buf) {
        line_no += buf[counted_to..a].iter().filter(|&&c| c == b'\n').count();
        counted_to = a;
        scan.candidates += 1;
        scan_line(&buf[a..b], line_no, a == 0 && session, &mut scan.findings);
    }
    scan
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b
        .iter()
        .position(|c| !b" \t\r".contains(c))
        .unwrap_or(b.len());
    let e = b
        .iter()
        .rposition(|c| !b" \t\r".contains(c))
        .map_or(s, |p| p + 1);
    &b[s..e.max(s)]
}

fn scan_line(line: &[u8], line_no: usize, header: bool, out: &mut Vec<Finding>) {
    let line = trim(line);
    if let (Ok(text), Ok(raw)) = (std::str::from_utf8(line), Raw::parse(line)) {
        let entry_id = if header {
            None
        } else {
            raw.get("id")
                .and_then(|v| v.as_str())
                .map(|s| s.into_owned())
        };
        json::each_finding(text, |frames, _, d, found| {
            let field = json::path(frames);
            for f in found {
                out.push(Finding {
                    line: line_no,
                    entry_id: entry_id.clone(),
                    header,
                    kind: f.kind,
                    field: field.clone(),
                    preview: crate::mask(f.kind, &d.text[f.range.clone()]),
                });
            }
        });
        return;
    }
    // Not JSON (a torn or broken line): its text is still searched.
    for chunk in line.utf8_chunks() {
        for f in crate::find(chunk.valid()) {
            out.push(Finding {
                line: line_no,
                entry_id: None,
                header,
                kind: f.kind,
                field: "(not JSON)".into(),
                preview: crate::mask(f.kind, &chunk.valid()[f.range.clone()]),
            });
        }
    }
}
