//! The export filters, applied to an entry's JSON text as the loader scanned it.
//!
//! The loader accepts exactly what `JSON.parse` accepts: any depth, lone surrogate escapes
//! (`"\ud83d"`, what `JSON.stringify` writes for a string cut inside an emoji), numbers out of
//! range (`1e400`). serde_json rejects all three, so nothing here goes through it: the
//! structural filters splice members and array elements by their scanned spans, and
//! redaction walks the text once without recursion, decoding each string to the UTF-16 code
//! units JavaScript holds (a lone surrogate stays a lone surrogate, and text around it is
//! still redacted).

use super::ExportOptions;
use crate::json::{self, Raw};
use std::borrow::Cow;

/// String values under these keys are structure a session file needs intact (the JSONL
/// export must open in Pi): they are never redacted there.
pub(super) const KEEP_FOR_FILE: &[&str] = &[
    "type",
    "id",
    "parentId",
    "timestamp",
    "targetId",
    "fromId",
    "firstKeptEntryId",
    "toolCallId",
    "role",
    "mimeType",
    "data",
    "stopReason",
    "api",
];

/// For pages and Markdown, which print ids and times: only what selects how a value is
/// shown (see [`KNOWN_VALUES`]) and image data (shown as an image, never as text).
pub(super) const KEEP_FOR_DISPLAY: &[&str] = &["type", "role", "stopReason", "data"];

/// Values of these keys are kept only when they are one of the format's own words (an
/// unknown entry type or role is printed as text, so it is redacted like text).
const KNOWN_VALUES: &[(&str, &[&str])] = &[
    (
        "type",
        &[
            "session",
            "message",
            "thinking_level_change",
            "model_change",
            "compaction",
            "branch_summary",
            "custom",
            "custom_message",
            "label",
            "session_info",
            "usage",
            "context_edit",
            "text",
            "thinking",
            "redactedThinking",
            "toolCall",
            "image",
        ],
    ),
    (
        "role",
        &[
            "user",
            "assistant",
            "toolResult",
            "bashExecution",
            "custom",
            "hookMessage",
            "system",
            "branchSummary",
            "compactionSummary",
        ],
    ),
    (
        "stopReason",
        &["stop", "length", "toolUse", "error", "aborted"],
    ),
];

/// True when the value of `key` keeps its text.
fn kept(keep: &[&str], key: &str, lit: &[u8]) -> bool {
    if !keep.contains(&key) {
        return false;
    }
    if key == "data" {
        // Image data: base64 only (an extension's `data` string is text like any other).
        return lit[1..lit.len() - 1]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c));
    }
    match KNOWN_VALUES.iter().find(|(k, _)| *k == key) {
        Some((_, words)) => words.contains(&json::decode_string(lit).as_ref()),
        None => true,
    }
}

/// Keys of the session format. Any other key (a tool's argument names, an extension's
/// fields) is text like any other and is redacted when it matches; these never are, so a
/// pattern cannot take an entry apart.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "version",
    "id",
    "parentId",
    "timestamp",
    "cwd",
    "parentSession",
    "message",
    "role",
    "content",
    "text",
    "thinking",
    "thinkingSignature",
    "signature",
    "redacted",
    "name",
    "arguments",
    "toolCallId",
    "toolName",
    "details",
    "isError",
    "data",
    "mimeType",
    "usage",
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "totalTokens",
    "cost",
    "total",
    "model",
    "provider",
    "api",
    "stopReason",
    "errorMessage",
    "responseId",
    "command",
    "exitCode",
    "cancelled",
    "truncated",
    "fullOutputPath",
    "excludeFromContext",
    "customType",
    "display",
    "summary",
    "firstKeptEntryId",
    "tokensBefore",
    "fromHook",
    "fromId",
    "targetId",
    "label",
    "thinkingLevel",
    "modelId",
    "sections",
    "toolsAdded",
    "toolsRemoved",
    "kind",
    "replacement",
];

/// The end (after the closing quote) of the valid string literal starting at `b[i]`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..]).expect("a valid string ends");
        match b[i] {
            b'"' => return i + 1,
            _ => i += 2,
        }
    }
}

/// The inside of a valid string literal as UTF-16 code units (what JavaScript holds).
pub(super) fn decode_units(inner: &[u8]) -> Vec<u16> {
    json::decode_units(inner)
}

/// UTF-16 code units as a JSON string literal, escaped as `JSON.stringify` does (lone
/// surrogates stay `\udxxx` escapes).
pub(super) fn push_units(out: &mut String, units: &[u16]) {
    let mut run = String::new();
    let flush = |out: &mut String, run: &mut String| {
        let mut lit = String::with_capacity(run.len() + 2);
        json::write_js_string(&mut lit, run);
        out.push_str(&lit[1..lit.len() - 1]);
        run.clear();
    };
    out.push('"');
    for r in char::decode_utf16(units.iter().copied()) {
        match r {
            Ok(c) => run.push(c),
            Err(e) => {
                flush(out, &mut run);
                out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate()));
            }
        }
    }
    flush(out, &mut run);
    out.push('"');
}

/// Applies the redactions to UTF-16 text: each run between lone surrogates is redacted as
/// text; the lone surrogates stay. `None` when nothing matched.
fn redact_units(opts: &ExportOptions, units: &[u16]) -> Option<Vec<u16>> {
    let mut out: Vec<u16> = Vec::with_capacity(units.len());
    let mut changed = false;
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut Vec<u16>, changed: &mut bool| {
        match opts.redact_regexes(run) {
            Cow::Borrowed(s) => out.extend(s.encode_utf16()),
            Cow::Owned(s) => {
                *changed = true;
                out.extend(s.encode_utf16());
            }
        }
        run.clear();
    };
    for r in char::decode_utf16(units.iter().copied()) {
        match r {
            Ok(c) => run.push(c),
            Err(e) => {
                flush(&mut run, &mut out, &mut changed);
                out.push(e.unpaired_surrogate());
            }
        }
    }
    flush(&mut run, &mut out, &mut changed);
    changed.then_some(out)
}

/// Decodes a valid JSON string literal straight to UTF-8 (runs between escapes copied
/// whole); a lone surrogate escape becomes U+FFFD, and the flag says one was there.
pub(super) fn decode_literal(lit: &str) -> (Cow<'_, str>, bool) {
    let inner = &lit[1..lit.len() - 1];
    let b = inner.as_bytes();
    let Some(first) = b.iter().position(|&c| c == b'\\') else {
        return (Cow::Borrowed(inner), false);
    };
    let hex = |i: usize| u32::from_str_radix(&inner[i..i + 4], 16).unwrap_or(0xfffd);
    let mut out = String::with_capacity(inner.len());
    let mut lone = false;
    out.push_str(&inner[..first]);
    let mut i = first;
    while i < b.len() {
        if b[i] != b'\\' {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\\')
                .map_or(b.len(), |p| i + p);
            out.push_str(&inner[i..end]);
            i = end;
            continue;
        }
        let c = match b[i + 1] {
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'u' => {
                let u = hex(i + 2);
                i += 4;
                if (0xd800..0xdc00).contains(&u)
                    && b.get(i + 2) == Some(&b'\\')
                    && b.get(i + 3) == Some(&b'u')
                    && (0xdc00..0xe000).contains(&hex(i + 4))
                {
                    let lo = hex(i + 4);
                    i += 6;
                    char::from_u32(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00))
                        .unwrap_or('\u{fffd}')
                } else {
                    char::from_u32(u).unwrap_or_else(|| {
                        lone = true;
                        '\u{fffd}'
                    })
                }
            }
            other => other as char,
        };
        out.push(c);
        i += 2;
    }
    (Cow::Owned(out), lone)
}

/// A redacted string literal (with quotes), or `None` when nothing in it matched.
pub(super) fn redact_literal(opts: &ExportOptions, lit: &str) -> Option<String> {
    let inner = &lit.as_bytes()[1..lit.len() - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        // Plain UTF-8 without escapes (control characters cannot occur unescaped).
        return match opts.redact_regexes(&lit[1..lit.len() - 1]) {
            Cow::Borrowed(_) => None,
            Cow::Owned(n) => {
                let mut o = String::with_capacity(n.len() + 2);
                json::write_js_string(&mut o, &n);
                Some(o)
            }
        };
    }
    let (text, lone) = decode_literal(lit);
    if !lone {
        return match opts.redact_regexes(&text) {
            Cow::Borrowed(_) => None,
            Cow::Owned(n) => {
                let mut o = String::with_capacity(n.len() + 2);
                json::write_js_string(&mut o, &n);
                Some(o)
            }
        };
    }
    let units = redact_units(opts, &decode_units(inner))?;
    let mut o = String::with_capacity(units.len() + 2);
    push_units(&mut o, &units);
    Some(o)
}

/// Redacts every string in a valid JSON text (values, and keys outside the session
/// format), except the values of `keep` keys. One pass, no recursion: any depth. `None`
/// when nothing matched.
pub(super) fn redact_json(opts: &ExportOptions, text: &str, keep: &[&str]) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    // Per open container: true for an object.
    let mut stack: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut keep_next = false;
    let mut key_of_next = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i);
                let lit = &text[i..end];
                let replacement = if expect_key {
                    expect_key = false;
                    let key = json::decode_string(lit.as_bytes());
                    keep_next = keep.contains(&key.as_ref());
                    key_of_next.clear();
                    key_of_next.push_str(&key);
                    if SCHEMA_KEYS.contains(&key.as_ref()) {
                        None
                    } else {
                        redact_literal(opts, lit)
                    }
                } else if std::mem::take(&mut keep_next) && kept(keep, &key_of_next, lit.as_bytes())
                {
                    None
                } else {
                    redact_literal(opts, lit)
                };
                if let Some(r) = replacement {
                    out.push_str(&text[copied..i]);
                    out.push_str(&r);
                    copied = end;
                }
                i = end;
            }
            b'{' => {
                stack.push(true);
                expect_key = true;
                keep_next = false;
                i += 1;
            }
            b'[' => {
                stack.push(false);
                keep_next = false;
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                expect_key = stack.last() == Some(&true);
                keep_next = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// An object's text with members replaced, removed (`None`) or added: a replaced key keeps
/// the position of its first occurrence (later duplicates go, as `JSON.parse` would merge
/// them), a new key goes last.
pub(super) fn with_members(obj: Raw<'_>, edits: &[(&str, Option<&str>)]) -> String {
    let text = obj.text();
    let scanned = json::scan::scan(obj.bytes()).expect("a scanned value");
    let mut done = vec![false; edits.len()];
    let mut out = String::with_capacity(text.len() + 64);
    out.push('{');
    let mut first = true;
    let mut push = |out: &mut String, key: &str, value: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(key);
        out.push(':');
        out.push_str(value);
    };
    for m in &scanned.members {
        let key_lit = &text[m.key.clone()];
        let key = json::decode_string(key_lit.as_bytes());
        match edits.iter().position(|(k, _)| *k == key) {
            Some(n) => {
                if !done[n] {
                    done[n] = true;
                    if let Some(v) = edits[n].1 {
                        push(&mut out, key_lit, v);
                    }
                }
            }
            None => push(&mut out, key_lit, &text[m.value.clone()]),
        }
    }
    for (n, (k, v)) in edits.iter().enumerate() {
        if let (false, Some(v)) = (done[n], v) {
            let mut key = String::new();
            json::write_js_string(&mut key, k);
            push(&mut out, &key, v);
        }
    }
    out.push('}');
    out
}

/// The `type` of a content block.
fn block_type(b: Raw<'_>) -> Option<Cow<'_, str>> {
    b.get("type").and_then(|t| t.as_str())
}

/// A content array with thinking left out (assistant messages) and images replaced by a
/// note; `None` when nothing changes or the content is not an array.
fn filter_blocks(opts: &ExportOptions, content: Raw<'_>, role: &str) -> Option<String> {
    if content.kind() != json::Kind::Array || !(opts.no_thinking || opts.no_images) {
        return None;
    }
    let mut changed = false;
    let mut out = String::from("[");
    let mut n = 0;
    for b in content.elements() {
        let t = block_type(b);
        let t = t.as_deref();
        if opts.no_thinking
            && role == "assistant"
            && matches!(t, Some("thinking" | "redactedThinking"))
        {
            changed = true;
            continue;
        }
        if n > 0 {
            out.push(',');
        }
        n += 1;
        if opts.no_images && t == Some("image") {
            changed = true;
            out.push_str("{\"type\":\"text\",\"text\":");
            json::write_js_string(&mut out, super::OMITTED_IMAGE);
            out.push('}');
        } else {
            out.push_str(b.text());
        }
    }
    out.push(']');
    changed.then_some(out)
}

/// The entry with thinking, tool output and images filtered (redaction is separate);
/// `None` when nothing changes.
pub(super) fn filter_structure(opts: &ExportOptions, e: &crate::entry::Entry) -> Option<String> {
    use crate::entry::EntryType;
    if !(opts.no_thinking || opts.no_tool_output || opts.no_images) {
        return None;
    }
    let entry = e.raw();
    match e.entry_type {
        EntryType::Message => {
            let m = e.message().filter(|m| m.kind() == json::Kind::Object)?;
            let role = m.get("role").and_then(|r| r.as_str()).unwrap_or_default();
            let mut omitted = String::new();
            let mut output = String::new();
            json::write_js_string(&mut output, super::OMITTED_OUTPUT);
            let mut edits: Vec<(&str, Option<&str>)> = Vec::new();
            let content = m.get("content").and_then(|c| filter_blocks(opts, c, &role));
            if opts.no_tool_output && role == "toolResult" {
                omitted.push_str("[{\"type\":\"text\",\"text\":");
                json::write_js_string(&mut omitted, super::OMITTED_OUTPUT);
                omitted.push_str("}]");
                edits.push(("content", Some(&omitted)));
                edits.push(("details", None));
            } else if let Some(c) = &content {
                edits.push(("content", Some(c)));
            }
            if opts.no_tool_output && role == "bashExecution" {
                edits.push(("output", Some(&output)));
            }
            if edits.is_empty() {
                return None;
            }
            let m = with_members(m, &edits);
            Some(with_members(entry, &[("message", Some(&m))]))
        }
        EntryType::CustomMessage => {
            let c = e.field("content")?;
            let c = filter_blocks(opts, c, "custom")?;
            Some(with_members(entry, &[("content", Some(&c))]))
        }
        _ => None,
    }
}

/// JSON text pretty-printed as `JSON.stringify(value, null, 2)` prints it, from canonical
/// text (no whitespace outside strings). Past `max_depth` levels the compact text is kept,
/// so a deeply nested value cannot blow the output up quadratically.
pub(super) fn pretty(canonical: &str, max_depth: usize) -> String {
    let b = canonical.as_bytes();
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i);
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    if deepest > max_depth {
        return canonical.to_string();
    }
    let mut out = String::with_capacity(canonical.len() * 2);
    let indent = |out: &mut String, d: usize| {
        out.push('\n');
        for _ in 0..d {
            out.push_str("  ");
        }
    };
    let mut i = 0;
    let mut d = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i);
                out.push_str(&canonical[i..end]);
                i = end;
                continue;
            }
            c @ (b'{' | b'[') => {
                out.push(c as char);
                if matches!(b.get(i + 1), Some(b'}' | b']')) {
                    out.push(b[i + 1] as char);
                    i += 2;
                    continue;
                }
                d += 1;
                indent(&mut out, d);
            }
            c @ (b'}' | b']') => {
                d -= 1;
                indent(&mut out, d);
                out.push(c as char);
            }
            b',' => {
                out.push(',');
                indent(&mut out, d);
            }
            b':' => out.push_str(": "),
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b':') {
                    i += 1;
                }
                out.push_str(&canonical[start..i]);
                continue;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(p: &str) -> ExportOptions {
        ExportOptions {
            redact: vec![regex::Regex::new(p).unwrap()],
            ..Default::default()
        }
    }

    #[test]
    fn redaction_keeps_lone_surrogates_and_reaches_any_depth() {
        let o = opts("secret");
        let deep = format!(
            r#"{{"a":"x secret \ud83d y","id":"secret","k":{}"secret",1e400{}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        let r = redact_json(&o, &deep, KEEP_FOR_FILE).unwrap();
        assert!(r.starts_with(r#"{"a":"x [REDACTED] \ud83d y","id":"secret","k":[[["#));
        assert!(r.contains(r#""[REDACTED]",1e400]"#));
        json::Raw::parse(r.as_bytes()).unwrap();
        // Image data stays; a `data` string that is not base64 is text.
        let r = redact_json(
            &o,
            r#"{"data":"c2VjcmV0","x":{"data":"a secret"}}"#,
            KEEP_FOR_FILE,
        );
        assert_eq!(
            r.unwrap(),
            r#"{"data":"c2VjcmV0","x":{"data":"a [REDACTED]"}}"#
        );
        // Unknown keys are text; the format's keys are not.
        let r = redact_json(&o, r#"{"secret":1,"content":"secret"}"#, &[]).unwrap();
        assert_eq!(r, r#"{"[REDACTED]":1,"content":"[REDACTED]"}"#);
        assert!(redact_json(&o, r#"{"a":"\u00e9"}"#, &[]).is_none());
    }

    #[test]
    fn pretty_matches_javascript() {
        assert_eq!(
            pretty(r#"{"a":[1,{}],"b":"x,\"y:"}"#, 10),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": \"x,\\\"y:\"\n}"
        );
        assert_eq!(pretty("[[[1]]]", 2), "[[[1]]]");
        assert_eq!(pretty("[]", 2), "[]");
    }

    #[test]
    fn members_are_replaced_in_place_and_duplicates_merge() {
        let raw = Raw::parse(br#"{"a":1,"b":2,"a":3,"c":"\ud800"}"#).unwrap();
        assert_eq!(
            with_members(raw, &[("a", Some("9")), ("c", None), ("d", Some("true"))]),
            r#"{"a":9,"b":2,"d":true}"#
        );
    }
}
