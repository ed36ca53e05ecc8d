//! A session file's credentials: a prefilter on the rules' anchors in the raw bytes (as
//! `JSON.stringify` writes them; [`crate::prefilter`]), then only the candidate lines are
//! decoded and walked.

use crate::{json, prefilter};
use sessiontree_core::json::Raw;

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

/// True when `bytes` may hold a credential: a rule's anchor occurs (as written in JSON, in
/// every casing for the rules that ignore case) or an unusual escape could hide one. False
/// means certainly none.
pub fn may_contain(bytes: &[u8]) -> bool {
    prefilter::next_hit(bytes, 0).is_some()
}

/// Calls `f` with the candidate lines of `buf` as `[start, end)` ranges (`\n` excluded),
/// in order, once each: one pass over the bytes, which skips the rest of a line once it is
/// a candidate.
fn candidate_lines(buf: &[u8], mut f: impl FnMut(usize, usize)) {
    let mut pos = 0;
    while pos < buf.len() {
        let Some(at) = prefilter::next_hit(buf, pos) else {
            break;
        };
        let a = memchr::memrchr(b'\n', &buf[..at]).map_or(0, |p| p + 1);
        let b = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |p| at + p);
        f(a, b);
        pos = b + 1;
    }
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
    candidate_lines(buf, |a, b| {
        line_no += memchr::memchr_iter(b'\n', &buf[counted_to..a]).count();
        counted_to = a;
        scan.candidates += 1;
        scan_line(&buf[a..b], line_no, a == 0 && session, &mut scan.findings);
    });
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
