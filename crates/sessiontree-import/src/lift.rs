//! Long strings carried through a conversion as spans of the source bytes.
//!
//! Most of a transcript's bytes are a few long strings (tool output, file contents, images)
//! that the converters move from one place to another without looking inside. Parsing them
//! into Rust strings and escaping them again costs more than everything else. So before a
//! line is parsed, every long string value whose source text is already exactly what
//! `JSON.stringify` writes for it (Claude Code writes with `JSON.stringify`; Codex's
//! writer escapes the same way) is replaced by a short marker naming its span; the marker
//! travels through the conversion like any string, and when an entry is written the
//! marker's text is replaced by the span's bytes.
//!
//! Why the output stays byte-identical: for such a span `S`, `stringify(parse(S)) == S`,
//! and the escaping of a string is the concatenation of the escapings of its characters, so
//! a marker can even end up in the middle of a longer string (texts joined) and still be
//! replaced correctly. Converters that look inside a string (prefix checks, nested JSON,
//! names) call [`Lifted::restore`] first. A marker is `U+0000 U+0001 <index> U+0002`; a
//! source that holds the escapes `\u0000\u0001` itself is not lifted at all, so a marker can
//! never be confused with the source's own text.

use serde_json::Value;
use std::borrow::Cow;

/// Strings shorter than this (their source text, in bytes) are parsed as usual.
const MIN_LEN: usize = 64;
/// A marker as it appears in JSON text (serde_json and `JSON.stringify` both write these
/// control characters this way).
const MARK: &[u8] = b"\\u0000\\u0001";
const MARK_END: &[u8] = b"\\u0002";
/// Members whose string values are payload (text, tool output, file contents, images):
/// the converters move them around and, where they look inside, restore them first.
/// Anything else (ids, paths, names, types, nested JSON such as Codex's `arguments`) is
/// parsed as usual, so it can be compared and used as it is.
const PAYLOAD_KEYS: &[&[u8]] = &[
    b"text",
    b"thinking",
    b"content",
    b"output",
    b"data",
    b"signature",
    b"encrypted_content",
    b"stdout",
    b"stderr",
    b"originalFile",
    b"oldString",
    b"newString",
    b"old_string",
    b"new_string",
    b"file_text",
    b"prompt",
    b"message",
    b"input",
    b"result",
    b"lines",
    b"patch",
];

/// The spans lifted out of one source's bytes.
pub(crate) struct Lifted<'a> {
    /// The source, when it is UTF-8 throughout (else nothing is lifted).
    text: &'a str,
    /// `(start, end)` of each lifted string's inside (without quotes) in `src`.
    spans: Vec<(usize, usize)>,
    enabled: bool,
}

impl<'a> Lifted<'a> {
    /// A lifter over `src` (disabled when `src` holds the marker's escapes itself; lines
    /// from the first byte that is not UTF-8 on are parsed as they are).
    pub fn new(src: &'a [u8]) -> Lifted<'a> {
        #[cfg(test)]
        if tests::OFF.with(std::cell::Cell::get) {
            return Lifted::off();
        }
        let valid = match std::str::from_utf8(src) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&src[..e.valid_up_to()]).unwrap_or_default(),
        };
        Lifted {
            text: valid,
            spans: Vec::new(),
            enabled: memchr::memmem::find(src, MARK).is_none(),
        }
    }

    /// One that lifts nothing (lines of another source).
    pub fn off() -> Lifted<'a> {
        Lifted {
            text: "",
            spans: Vec::new(),
            enabled: false,
        }
    }

    /// `line`, which starts at `base` in the source, with its long canonical string values
    /// replaced by markers, written to `out`. Returns false (and leaves `out` alone) when
    /// nothing was lifted: parse `line` itself then.
    pub fn lift_line(&mut self, base: usize, line: &[u8], out: &mut Vec<u8>) -> bool {
        #[cfg(not(test))]
        let min_len = MIN_LEN;
        #[cfg(test)]
        let min_len = tests::MIN.with(std::cell::Cell::get);
        if !self.enabled || line.len() < min_len || base + line.len() > self.text.len() {
            return false;
        }
        out.clear();
        let first_span = self.spans.len();
        let mut copied = 0;
        // Per nesting level: may a string value here be lifted? (Array elements take the
        // array's member name, object members their own.)
        let mut liftable: Vec<bool> = Vec::with_capacity(8);
        let mut i = 0;
        while i < line.len() {
            match line[i] {
                b'{' => liftable.push(false),
                b'[' => liftable.push(liftable.last().copied().unwrap_or(false)),
                b'}' | b']' => {
                    liftable.pop();
                }
                b'"' => {
                    let start = i + 1;
                    let Some((end, canonical)) = string_end(line, start) else {
                        break;
                    };
                    i = end + 1;
                    let after = line[i..].iter().find(|b| !b.is_ascii_whitespace());
                    if after == Some(&b':') {
                        if let Some(top) = liftable.last_mut() {
                            *top = canonical && PAYLOAD_KEYS.contains(&&line[start..end]);
                        }
                        continue;
                    }
                    if !canonical || end - start < min_len || liftable.last() != Some(&true) {
                        continue;
                    }
                    out.extend_from_slice(&line[copied..start]);
                    out.extend_from_slice(MARK);
                    push_decimal(out, self.spans.len());
                    out.extend_from_slice(MARK_END);
                    self.spans.push((base + start, base + end));
                    #[cfg(test)]
                    tests::LIFTED.with(|n| n.set(n.get() + 1));
                    copied = end;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        if self.spans.len() == first_span {
            return false;
        }
        out.extend_from_slice(&line[copied..]);
        true
    }

    /// Forgets the spans lifted from a line that is parsed from its own text after all.
    pub fn unlift_from(&mut self, n: usize) {
        self.spans.truncate(n);
    }

    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// The JSON text `json` with every marker replaced by its span.
    #[cfg(test)]
    pub fn expand(&self, json: String) -> String {
        let mut out = String::new();
        self.expand_into(&json, &mut out);
        out
    }

    /// [`Lifted::expand`], appended to `out`.
    pub fn expand_into(&self, json: &str, out: &mut String) {
        let b = json.as_bytes();
        let first = match self.spans.is_empty() {
            true => None,
            false => memchr::memmem::find(b, MARK),
        };
        let Some(first) = first else {
            out.push_str(json);
            return;
        };
        let finder = memchr::memmem::Finder::new(MARK);
        let mut copied = 0;
        let mut at = Some(first);
        while let Some(m) = at {
            let digits_start = m + MARK.len();
            let digits = b[digits_start..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            let idx: Option<usize> = std::str::from_utf8(&b[digits_start..digits_start + digits])
                .ok()
                .and_then(|d| d.parse().ok());
            let close = digits_start + digits;
            match idx.and_then(|k| self.spans.get(k)) {
                Some(&(s, e)) if b[close..].starts_with(MARK_END) => {
                    // Cut at ASCII bytes (quotes, a marker's backslash): whole characters.
                    out.push_str(&json[copied..m]);
                    out.push_str(&self.text[s..e]);
                    copied = close + MARK_END.len();
                }
                // Not one of ours (cannot happen: the source holds no marker escapes).
                _ => {}
            }
            at = finder.find(&b[digits_start..]).map(|p| p + digits_start);
        }
        out.push_str(&json[copied..]);
    }

    /// The text a string stood for, markers replaced by the strings they hold.
    pub fn restore<'s>(&self, s: &'s str) -> Cow<'s, str> {
        if self.spans.is_empty() || !s.contains('\u{0}') {
            return Cow::Borrowed(s);
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(p) = rest.find("\u{0}\u{1}") {
            let after = &rest[p + 2..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let idx: Option<usize> = after[..digits].parse().ok();
            match (
                idx.and_then(|k| self.spans.get(k)),
                after[digits..].starts_with('\u{2}'),
            ) {
                (Some(&(a, e)), true) => {
                    out.push_str(&rest[..p]);
                    let lit = &self.text.as_bytes()[a - 1..e + 1];
                    out.push_str(&sessiontree::json::decode_string(lit));
                    rest = &after[digits + 1..];
                }
                _ => {
                    out.push_str(&rest[..p + 2]);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Cow::Owned(out)
    }

    /// A copy of `v` with every marker restored (for values written into a string).
    pub fn restore_value(&self, v: &Value) -> Value {
        if self.spans.is_empty() {
            return v.clone();
        }
        match v {
            Value::String(s) => Value::String(self.restore(s).into_owned()),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.restore_value(x)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.restore_value(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn push_decimal(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(n.to_string().as_bytes());
}

/// The end (index of the closing quote) of the string whose inside starts at `i`, and
/// whether its text is exactly what `JSON.stringify` writes for it: no escape but `\"`,
/// `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and lower-case `\u00XX` for the other control
/// characters. `None` when the line ends inside the string.
fn string_end(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut canonical = true;
    loop {
        i += sessiontree::json::find_string_stop(&b[i..]);
        match *b.get(i)? {
            b'"' => return Some((i, canonical)),
            b'\\' => match *b.get(i + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = b.get(i + 2..i + 6)?;
                    let short = matches!(hex, b"0008" | b"0009" | b"000a" | b"000c" | b"000d");
                    let control = hex[0] == b'0'
                        && hex[1] == b'0'
                        && matches!(hex[2], b'0' | b'1')
                        && matches!(hex[3], b'0'..=b'9' | b'a'..=b'f');
                    canonical &= control && !short;
                    i += 2;
                }
                _ => {
                    canonical = false;
                    i += 2;
                }
            },
            // A raw control character: not valid JSON; left to the parser to report.
            _ => {
                canonical = false;
                i += 1;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Switches lifting off (to compare with the plain conversion).
        pub(crate) static OFF: Cell<bool> = const { Cell::new(false) };
        /// The shortest string lifted (tests lift every payload string).
        pub(crate) static MIN: Cell<usize> = const { Cell::new(MIN_LEN) };
        /// Strings lifted so far on this thread.
        pub(crate) static LIFTED: Cell<usize> = const { Cell::new(0) };
    }

    /// Every fixture converted with and without lifting (of every payload string, however
    /// short): the same bytes, problems and counts, and lifting did happen.
    #[test]
    fn every_fixture_converts_to_the_same_bytes_with_and_without_lifting() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let convert = |p: &std::path::Path| -> Vec<String> {
            let bytes = std::fs::read(p).unwrap();
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let convs = if p.to_string_lossy().contains("codex") {
                vec![crate::codex::convert(&bytes, &stem)]
            } else {
                crate::claude::convert(&bytes, &stem)
            };
            convs
                .iter()
                .map(|c| {
                    format!(
                        "{}\n{:?}\n{:?}\n{:?}",
                        String::from_utf8(c.to_bytes(None)).unwrap(),
                        c.problems,
                        c.skipped,
                        c.name
                    )
                })
                .collect()
        };
        LIFTED.with(|n| n.set(0));
        MIN.with(|m| m.set(1));
        for f in &files {
            OFF.with(|o| o.set(true));
            let plain = convert(f);
            OFF.with(|o| o.set(false));
            let lifted = convert(f);
            assert_eq!(lifted, plain, "{}", f.display());
        }
        MIN.with(|m| m.set(MIN_LEN));
        assert!(LIFTED.with(Cell::get) > 150, "{}", LIFTED.with(Cell::get));
    }

    fn long(s: &str) -> String {
        format!("{s}{}", "x".repeat(MIN_LEN))
    }

    #[test]
    fn canonical_long_values_are_lifted_and_come_back_byte_for_byte() {
        let a = long(r#"tab\there \"q\" back\\slash \u001b esc é 😀"#);
        let line = format!(
            r#"{{"{k}":1,"text":"{a}","short":"s","content":["{a}" , {{"id":"{a}","text":"{a}"}}],"id":"{a}"}}"#,
            k = long("text")
        );
        let mut l = Lifted::new(line.as_bytes());
        let mut out = Vec::new();
        assert!(l.lift_line(0, line.as_bytes(), &mut out));
        // Payload members only: not the key, not the ids.
        assert_eq!(l.span_count(), 3);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert!(v.get(long("text")).is_some());
        let want: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["id"], want["id"]);
        assert_eq!(v["content"][1]["id"], want["id"]);
        assert_ne!(v["content"][1]["text"], want["id"]);
        let back = l.expand(serde_json::to_string(&v).unwrap());
        assert_eq!(back, serde_json::to_string(&want).unwrap());
        // Joined inside a longer string, a marker still expands to the right text.
        let joined = format!(
            "{}|{}",
            v["text"].as_str().unwrap(),
            v["content"][0].as_str().unwrap()
        );
        let expanded = l.expand(serde_json::to_string(&Value::String(joined.clone())).unwrap());
        let decoded: String = serde_json::from_str(&expanded).unwrap();
        let a_text = want["text"].as_str().unwrap();
        assert_eq!(decoded, format!("{a_text}|{a_text}"));
        assert_eq!(l.restore(&joined), decoded);
    }

    #[test]
    fn other_escapes_are_left_to_the_parser() {
        for s in [
            r"\u00e9",
            r"\/",
            r"\u000A",
            r"\u000a",
            r"\ud83d\ude00",
            r"\u001B",
        ] {
            let line = format!(r#"{{"text":"{}"}}"#, long(s));
            let mut l = Lifted::new(line.as_bytes());
            let mut out = Vec::new();
            assert!(!l.lift_line(0, line.as_bytes(), &mut out), "{s}");
        }
        // The source's own marker escapes switch lifting off for the whole source.
        let line = format!(r#"{{"text":"\u0000\u0001","data":"{}"}}"#, long(""));
        let mut l = Lifted::new(line.as_bytes());
        assert!(!l.lift_line(0, line.as_bytes(), &mut Vec::new()));
        // A line torn inside a string lifts what came before and keeps the rest.
        let line = format!(r#"{{"text":"{}","data":"{}"#, long(""), long(""));
        let mut l = Lifted::new(line.as_bytes());
        let mut out = Vec::new();
        assert!(l.lift_line(0, line.as_bytes(), &mut out));
        assert_eq!(l.span_count(), 1);
        assert!(out.ends_with(format!(r#","data":"{}"#, long("")).as_bytes()));
    }
}
