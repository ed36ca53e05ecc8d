//! Credentials inside JSON: a walk over every string value of a validated JSON text with
//! its path (explicit stack, any depth), and the redaction that replaces each credential
//! inside the string it was in.

use sessiontree_core::json::{self, Raw};
use std::ops::Range;

/// Values under these keys are never scanned or redacted: the format's structure (ids,
/// types, times) and the ids and signatures that providers and agents write, which look
/// like tokens and must reach the provider unchanged.
const NEVER: &[&str] = &[
    "type",
    "id",
    "parentId",
    "timestamp",
    "role",
    "version",
    "targetId",
    "fromId",
    "firstKeptEntryId",
    "toolCallId",
    "responseId",
    "thinkingSignature",
    "textSignature",
    "signature",
    "encrypted_content",
    "encryptedContent",
    "mimeType",
    "media_type",
    "api",
    "provider",
    "model",
    "modelId",
    "stopReason",
    "customType",
    "uuid",
    "parentUuid",
    "leafUuid",
    "sessionId",
    "requestId",
    "messageId",
    "message_id",
    "tool_use_id",
    "toolUseId",
    "call_id",
    "callId",
    "itemId",
    "item_id",
];

/// One level of the path to a value.
pub(crate) struct Frame {
    obj: bool,
    /// Arrays: the current element's index.
    index: usize,
    /// Objects: the current member's key (decoded) and whether a key comes next.
    key: String,
    expect_key: bool,
}

/// The path of the value at the top of `frames`: `message.content[2].text`.
pub(crate) fn path(frames: &[Frame]) -> String {
    let mut out = String::new();
    for f in frames {
        if f.obj {
            let plain = !f.key.is_empty()
                && f.key
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$');
            if plain {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&f.key);
            } else {
                out.push('[');
                json::write_js_string(&mut out, &f.key);
                out.push(']');
            }
        } else {
            out.push_str(&format!("[{}]", f.index));
        }
    }
    out
}

/// The end (after the closing quote) of the string literal starting at `b[i]`; the text's
/// end for an unterminated one (never for validated text).
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match memchr::memchr2(b'"', b'\\', &b[i..]) {
            None => return b.len(),
            Some(p) => {
                i += p;
                if b[i] == b'"' {
                    return i + 1;
                }
                i += 2;
            }
        }
    }
    b.len()
}

/// Calls `f(frames, literal)` for every string value (not keys) of the JSON text `text`,
/// with the literal's range (quotes included). Text that is not valid JSON is walked as
/// far as it goes, never out of bounds.
pub(crate) fn walk_strings(text: &str, mut f: impl FnMut(&[Frame], Range<usize>)) {
    let b = text.as_bytes();
    let mut frames: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i).max(i + 1);
                match frames.last_mut() {
                    Some(top) if top.obj && top.expect_key => {
                        top.expect_key = false;
                        let lit = &b[i..end];
                        top.key = if lit.len() >= 2 && lit.ends_with(b"\"") {
                            json::decode_string(lit).into_owned()
                        } else {
                            String::new()
                        };
                    }
                    _ => f(&frames, i..end),
                }
                i = end;
            }
            b'{' | b'[' => {
                frames.push(Frame {
                    obj: b[i] == b'{',
                    index: 0,
                    key: String::new(),
                    expect_key: b[i] == b'{',
                });
                i += 1;
            }
            b'}' | b']' => {
                frames.pop();
                i += 1;
            }
            b',' => {
                if let Some(top) = frames.last_mut() {
                    if top.obj {
                        top.expect_key = true;
                    } else {
                        top.index += 1;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// True when the value at the top of `frames` is never scanned: a `NEVER` key, or image
/// data (a long base64 `data` string).
fn skipped(frames: &[Frame], lit: &[u8]) -> bool {
    let Some(top) = frames.last().filter(|t| t.obj) else {
        return false;
    };
    if NEVER.contains(&top.key.as_str()) {
        return true;
    }
    (top.key == "data" || top.key == "image_url" || top.key == "url")
        && lit.len() > 66
        && lit[1..lit.len() - 1]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
}

/// A string literal's text, with the byte offsets (in it) of lone surrogates, which are
/// decoded as U+FFFD and written back as the escape they were.
pub(crate) struct Decoded {
    pub text: String,
    lone: Vec<(usize, u16)>,
}

/// Decodes a string literal (quotes included) as `JSON.parse` does.
pub(crate) fn decode(lit: &[u8]) -> Decoded {
    let inner = if lit.len() >= 2 {
        &lit[1..lit.len() - 1]
    } else {
        &[][..]
    };
    if memchr::memchr(b'\\', inner).is_none() {
        return Decoded {
            text: String::from_utf8_lossy(inner).into_owned(),
            lone: Vec::new(),
        };
    }
    let units = json::decode_units(inner);
    let mut text = String::with_capacity(inner.len());
    let mut lone = Vec::new();
    for r in char::decode_utf16(units.iter().copied()) {
        match r {
            Ok(c) => text.push(c),
            Err(e) => {
                lone.push((text.len(), e.unpaired_surrogate()));
                text.push('\u{fffd}');
            }
        }
    }
    Decoded { text, lone }
}

/// Appends `s` (a piece of a decoded string starting at byte `from` of it) escaped as
/// `JSON.stringify` escapes it, lone surrogates written back as escapes.
fn push_escaped(out: &mut String, s: &str, from: usize, lone: &[(usize, u16)]) {
    let mut at = 0;
    let piece = |out: &mut String, t: &str| {
        let mut lit = String::with_capacity(t.len() + 2);
        json::write_js_string(&mut lit, t);
        out.push_str(&lit[1..lit.len() - 1]);
    };
    for &(pos, unit) in lone {
        if pos < from || pos >= from + s.len() {
            continue;
        }
        let p = pos - from;
        piece(out, &s[at..p]);
        out.push_str(&format!("\\u{unit:04x}"));
        at = p + '\u{fffd}'.len_utf8();
    }
    piece(out, &s[at..]);
}

/// The credentials of one string value: the literal is decoded; under a key that itself
/// names a credential (`"AWS_SECRET_ACCESS_KEY": "..."`, `"password": "..."`), the key is
/// read with it as `key=value`, so assignment rules see both.
pub(crate) fn find_in_value(frames: &[Frame], d: &Decoded) -> Vec<crate::Found> {
    let key = frames
        .last()
        .filter(|t| t.obj && t.key.len() <= 64 && crate::has_anchor(&t.key))
        .map(|t| t.key.as_str());
    match key {
        None => crate::find(&d.text),
        Some(k) => {
            let joined = format!("{k}={}", d.text);
            let off = k.len() + 1;
            crate::find(&joined)
                .into_iter()
                .filter(|f| f.range.start >= off)
                .map(|f| crate::Found {
                    kind: f.kind,
                    range: f.range.start - off..f.range.end - off,
                })
                .collect()
        }
    }
}

/// Calls `f(frames, literal range, decoded, findings)` for every string value of `text`
/// that holds a credential.
pub(crate) fn each_finding(
    text: &str,
    mut f: impl FnMut(&[Frame], Range<usize>, &Decoded, Vec<crate::Found>),
) {
    walk_strings(text, |frames, lit| {
        let bytes = &text.as_bytes()[lit.clone()];
        if skipped(frames, bytes) {
            return;
        }
        // Most strings hold no anchor: no decoding for them (an escape could hide or
        // split one, so strings with escapes are decoded).
        let raw = &text[lit.clone()];
        if !crate::has_anchor(raw)
            && memchr::memchr(b'\\', bytes).is_none()
            && !frames
                .last()
                .is_some_and(|t| t.obj && t.key.len() <= 64 && crate::has_anchor(&t.key))
        {
            return;
        }
        let d = decode(bytes);
        let found = find_in_value(frames, &d);
        if !found.is_empty() {
            f(frames, lit, &d, found);
        }
    });
}

/// The JSON text `text` (one value) with every credential in its string values replaced
/// by `[REDACTED:<kind>]` inside the same string; `None` when there is none. Everything
/// else is kept byte for byte (canonicalize the result for a line `JSON.stringify` writes).
/// Text that is not one JSON value is redacted as plain text.
pub fn redact_json(text: &str) -> Option<String> {
    if !crate::may_contain(text.as_bytes()) {
        return None;
    }
    if Raw::parse(text.as_bytes()).is_err() {
        return match crate::redact_text(text) {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(s) => Some(s),
        };
    }
    redact_valid(text)
}

/// [`redact_json`] for text already validated as one JSON value.
fn redact_valid(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    each_finding(text, |_, lit, d, found| {
        out.push_str(&text[copied..lit.start]);
        out.push('"');
        let mut at = 0;
        for f in &found {
            push_escaped(&mut out, &d.text[at..f.range.start], at, &d.lone);
            out.push_str(&crate::placeholder(f.kind));
            at = f.range.end;
        }
        push_escaped(&mut out, &d.text[at..], at, &d.lone);
        out.push('"');
        copied = lit.end;
    });
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// One session line with its credentials redacted, as `JSON.stringify` writes it; `None`
/// when it holds none. A line that is not JSON has its credentials replaced in place.
pub fn redact_line(line: &str) -> Option<String> {
    let trimmed = line.trim_matches([' ', '\t', '\r', '\n']);
    if Raw::parse(trimmed.as_bytes()).is_ok() {
        if !crate::may_contain(trimmed.as_bytes()) {
            return None;
        }
        let r = redact_valid(trimmed)?;
        json::canonicalize(r.as_bytes()).ok()
    } else {
        match crate::redact_text(line) {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(s) => Some(s),
        }
    }
}

/// [`redact_line`] for bytes that may not be UTF-8 (a broken line): each valid UTF-8 run
/// is redacted as text.
pub fn redact_line_bytes(line: &[u8]) -> Option<Vec<u8>> {
    if !crate::may_contain(line) {
        return None;
    }
    if let Ok(s) = std::str::from_utf8(line) {
        return redact_line(s).map(String::into_bytes);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut changed = false;
    for chunk in line.utf8_chunks() {
        match crate::redact_text(chunk.valid()) {
            std::borrow::Cow::Borrowed(s) => out.extend_from_slice(s.as_bytes()),
            std::borrow::Cow::Owned(s) => {
                changed = true;
                out.extend_from_slice(s.as_bytes());
            }
        }
        out.extend_from_slice(chunk.invalid());
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_keys_and_indexes() {
        let t = r#"{"message":{"content":[{"type":"text","text":"a"},{"x y":["b"]}]}}"#;
        let mut seen = Vec::new();
        walk_strings(t, |frames, lit| {
            seen.push((path(frames), t[lit].to_string()))
        });
        assert_eq!(
            seen,
            vec![
                (
                    "message.content[0].type".to_string(),
                    "\"text\"".to_string()
                ),
                ("message.content[0].text".to_string(), "\"a\"".to_string()),
                (
                    "message.content[1][\"x y\"][0]".to_string(),
                    "\"b\"".to_string()
                ),
            ]
        );
    }

    #[test]
    fn lone_surrogates_survive_redaction() {
        let t = r#"{"text":"\ud83d key AKIAQYLPMN5HHHFPZAM2 \u0007"}"#;
        let r = redact_json(t).unwrap();
        assert_eq!(
            r,
            r#"{"text":"\ud83d key [REDACTED:aws-access-key] \u0007"}"#
        );
    }
}
