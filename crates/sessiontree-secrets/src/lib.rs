//! Finds credentials in coding-agent sessions and redacts them.
//!
//! * [`find`] and [`redact_text`] work on plain text: every rule whose literal anchor
//!   occurs in it runs, and each match is checked (entropy, checksum, header, context)
//!   before it counts.
//! * [`redact_json`] and [`redact_line`] replace each credential inside the JSON string it
//!   was in with `[REDACTED:<kind>]`: the text stays valid JSON, ids, types, times and the
//!   providers' signatures are never touched.
//! * [`scan_session`] reports every credential of a session file (every line, so every
//!   branch) with its entry id, field path and a masked preview; only lines in which a
//!   rule's anchor occurs in the raw bytes (or that hold escapes that could hide one) are
//!   decoded.
//!
//! Nothing here allocates by a size read from the input, recurses, or panics on any bytes.

#![warn(missing_docs)]

mod check;
mod json;
mod prefilter;
mod rules;
mod session;

pub use json::{redact_json, redact_line, redact_line_bytes};
#[doc(hidden)]
pub use prefilter::{next_hit_fast, next_hit_portable};
pub use session::{may_contain, scan_session, Finding, SessionScan};

use aho_corasick::AhoCorasick;
use regex::Regex;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

/// Every kind of credential detected, as reported and as written in `[REDACTED:<kind>]`.
pub const KINDS: &[&str] = &[
    "private-key",
    "gcp-service-account",
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "gitlab-token",
    "slack-token",
    "slack-bot-token",
    "slack-user-token",
    "slack-webhook",
    "stripe-live-key",
    "anthropic-key",
    "openai-key",
    "gcp-api-key",
    "google-ai-key",
    "huggingface-token",
    "npm-token",
    "pypi-token",
    "azure-connection-string",
    "azure-sas-token",
    "jwt",
    "url-password",
    "secret-assignment",
];

/// One credential in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its kind (one of [`KINDS`]).
    pub kind: &'static str,
    /// Where the secret is, in bytes of the text (what a redaction replaces).
    pub range: Range<usize>,
}

struct Matcher {
    /// Every rule's anchors; which rules each pattern belongs to.
    anchors: AhoCorasick,
    anchor_rules: Vec<u64>,
    regexes: Vec<Regex>,
}

fn matcher() -> &'static Matcher {
    static M: OnceLock<Matcher> = OnceLock::new();
    M.get_or_init(|| {
        let mut pats: Vec<&str> = Vec::new();
        let mut anchor_rules = Vec::new();
        for (i, r) in rules::RULES.iter().enumerate() {
            for a in r.anchors {
                pats.push(a);
                anchor_rules.push(1u64 << i);
            }
        }
        Matcher {
            anchors: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&pats)
                .expect("literal anchors"),
            anchor_rules,
            regexes: rules::RULES
                .iter()
                .map(|r| Regex::new(r.pattern).expect("the rules' patterns compile"))
                .collect(),
        }
    })
}

/// The rules whose anchors occur in `text` (bit i: rule i).
fn triggered(text: &str) -> u64 {
    let m = matcher();
    let mut mask = 0;
    for hit in m.anchors.find_overlapping_iter(text) {
        mask |= m.anchor_rules[hit.pattern().as_usize()];
    }
    mask
}

/// True when some rule's anchor occurs in `text` (ASCII case-insensitive).
pub(crate) fn has_anchor(text: &str) -> bool {
    matcher().anchors.is_match(text)
}

/// Every credential in `text`, in text order, none overlapping (where two rules match the
/// same bytes, the more specific rule's finding is kept).
pub fn find(text: &str) -> Vec<Found> {
    let mask = triggered(text);
    if mask == 0 {
        return Vec::new();
    }
    let m = matcher();
    let mut accepted: Vec<Found> = Vec::new();
    for (i, rule) in rules::RULES.iter().enumerate() {
        if mask & (1 << i) == 0 {
            continue;
        }
        for caps in m.regexes[i].captures_iter(text) {
            let (Some(whole), Some(secret)) = (caps.get(0), caps.get(rule.group)) else {
                continue;
            };
            let Some((kind, range)) =
                rules::accept(rule, text, whole.range(), secret.range(), &caps)
            else {
                continue;
            };
            // Earlier rules are more specific: a later finding that overlaps one is dropped.
            let at = accepted.partition_point(|f| f.range.start < range.start);
            let clash = (at > 0 && accepted[at - 1].range.end > range.start)
                || accepted.get(at).is_some_and(|f| f.range.start < range.end);
            if !clash {
                accepted.insert(at, Found { kind, range });
            }
        }
    }
    accepted
}

/// What a credential is replaced with.
pub fn placeholder(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// `text` with every credential replaced by `[REDACTED:<kind>]`; borrowed when none.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.range.start]);
        out.push_str(&placeholder(f.kind));
        at = f.range.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// A preview that never shows the secret: its first characters (at most 4, and at most a
/// quarter of it; for a private key, its BEGIN line), `…`, and its length in characters.
pub fn mask(kind: &str, secret: &str) -> String {
    let n = secret.chars().count();
    let shown: String = if kind == "private-key" {
        secret
            .split(['\n', '\\'])
            .next()
            .unwrap_or("")
            .chars()
            .take(40)
            .collect()
    } else {
        secret.chars().take((n / 4).min(4)).collect()
    };
    format!("{shown}…({n} chars)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_never_show_more_than_a_quarter() {
        assert_eq!(mask("jwt", "abcdefghijklmnopqrstu"), "abcd…(21 chars)");
        assert_eq!(mask("url-password", "hunter2!"), "hu…(8 chars)");
        assert_eq!(mask("url-password", "abc"), "…(3 chars)");
        assert_eq!(
            mask("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE"),
            "-----BEGIN RSA PRIVATE KEY-----…(36 chars)"
        );
    }

    #[test]
    fn overlapping_findings_keep_the_specific_rule() {
        let t = "GITHUB_TOKEN=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";
        let f = find(t);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, "github-token");
        assert_eq!(&t[f[0].range.clone()], &t[13..]);
    }
}
