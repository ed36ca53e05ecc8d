//! JSON as the reference's JavaScript sees it.
//!
//! * [`scan`] validates a line exactly as `JSON.parse` would and finds its members;
//! * [`Raw`] is a borrowed, already validated JSON value with JavaScript's conversions
//!   (truthiness, `String(x)`, numbers, dates);
//! * [`canon`] re-serializes JSON text as `JSON.stringify(JSON.parse(text))` does, byte for
//!   byte (key order, escaping, number printing), which is how new lines are written.

pub mod canon;
mod error;
pub(crate) mod fast;
pub mod scan;
mod string;

use std::borrow::Cow;

mod owned;
pub use canon::decode_units;
pub use canon::{canonicalize, write_js_string, write_js_string_to};
pub use fast::find_string_stop;
pub use owned::Json;
pub use scan::{skip_string_inside, Escapes, Kind, Member, ScanError, Scanned, Span};

/// A validated JSON value, borrowed from the text it was scanned in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(&'a [u8]);

impl std::fmt::Debug for Raw<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Raw({})", String::from_utf8_lossy(self.0))
    }
}

impl<'a> Raw<'a> {
    /// Wraps JSON text this library produced (a label, a field value): valid JSON without
    /// surrounding whitespace. Invalid JSON makes later accessors panic, never misbehave.
    pub fn trusted(text: &'a str) -> Self {
        Raw(text.as_bytes())
    }

    /// Wraps text that is known to be one valid JSON value, UTF-8, without surrounding
    /// whitespace.
    /// Wraps text already validated as one JSON value (by the scanner); nothing is checked.
    pub fn new_unchecked(text: &'a [u8]) -> Self {
        Raw(text)
    }

    /// Validates `text` as one JSON value.
    pub fn parse(text: &'a [u8]) -> Result<Self, ScanError> {
        if let Err(e) = std::str::from_utf8(text) {
            return Err(ScanError {
                offset: e.valid_up_to(),
                reason: "bytes that are not UTF-8",
            });
        }
        let s = scan::scan(text)?;
        Ok(Raw(&text[s.top]))
    }

    /// The value's text as bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The value's text. Every `Raw` is UTF-8: lines are validated (or repaired) on load,
    /// [`Raw::parse`] checks, and `new_unchecked`'s callers pass text from `&str`.
    pub fn text(&self) -> &'a str {
        debug_assert!(std::str::from_utf8(self.0).is_ok());
        // SAFETY: see above; a `Raw` is only made from UTF-8 text.
        unsafe { std::str::from_utf8_unchecked(self.0) }
    }

    /// The kind of value (from its first byte).
    pub fn kind(&self) -> Kind {
        Kind::of_first_byte(self.0[0])
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    /// The decoded string, if this is a string. Lone surrogates become U+FFFD.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        (self.kind() == Kind::String).then(|| decode_string(self.0))
    }

    /// The number's value as JavaScript reads it (out-of-range literals become infinities).
    pub fn as_f64(&self) -> Option<f64> {
        (self.kind() == Kind::Number).then(|| parse_number(self.0))
    }

    /// JavaScript truthiness: `null`, `false`, `0`, `-0` and `""` are falsy.
    pub fn truthy(&self) -> bool {
        match self.kind() {
            Kind::Null | Kind::False => false,
            Kind::Number => parse_number(self.0) != 0.0,
            Kind::String => self.0.len() > 2,
            _ => true,
        }
    }

    /// Members of an object value (text order, duplicates included); empty for non-objects.
    pub fn members(&self) -> Vec<(Cow<'a, str>, Raw<'a>)> {
        if self.kind() != Kind::Object {
            return Vec::new();
        }
        let s = scan::scan(self.0).expect("validated");
        s.members
            .into_iter()
            .map(|m| (decode_string(&self.0[m.key]), Raw(&self.0[m.value])))
            .collect()
    }

    /// The value of `key` in an object (the last one wins, as in JavaScript).
    pub fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.members()
            .into_iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Elements of an array value; empty for non-arrays.
    pub fn elements(&self) -> Vec<Raw<'a>> {
        if self.kind() != Kind::Array {
            return Vec::new();
        }
        // Wrap the array in an object to reuse the member scanner one level down.
        let mut out = Vec::new();
        let b = self.0;
        let mut i = 1;
        loop {
            i = skip_ws(b, i);
            if b[i] == b']' {
                break;
            }
            let end = value_end(b, i);
            out.push(Raw(&b[i..end]));
            i = skip_ws(b, end);
            if b[i] == b',' {
                i += 1;
            }
        }
        out
    }

    /// `String(value)` in JavaScript, for the primitive values templates meet.
    pub fn js_string(&self) -> String {
        match self.kind() {
            Kind::String => decode_string(self.0).into_owned(),
            Kind::Number => format_number(parse_number(self.0)),
            Kind::True => "true".into(),
            Kind::False => "false".into(),
            Kind::Null => "null".into(),
            Kind::Object => "[object Object]".into(),
            Kind::Array => self
                .elements()
                .iter()
                .map(|e| {
                    if e.is_null() {
                        String::new()
                    } else {
                        e.js_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End of the (valid) value starting at `i`.
fn value_end(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'"' => string::skip_string(b, i).expect("validated"),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b[j] {
                    b'"' => {
                        j = string::skip_string(b, j).expect("validated");
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// JavaScript's `Number(text)` for a valid JSON number literal.
pub(crate) fn parse_number(text: &[u8]) -> f64 {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// JavaScript's `String(n)`.
pub fn format_number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if n == 0.0 {
        return "0".into();
    }
    ryu_js::Buffer::new().format(n).to_owned()
}

/// Decodes a valid JSON string literal (with quotes). Lone surrogates become U+FFFD.
pub fn decode_string(lit: &[u8]) -> Cow<'_, str> {
    let inner = &lit[1..lit.len() - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        return Cow::Borrowed(simdutf8::basic::from_utf8(inner).unwrap_or(""));
    }
    Cow::Owned(decode_escaped(inner))
}

/// The inside of a string literal that holds escapes, decoded straight to UTF-8: runs
/// without a backslash are copied whole, an escaped surrogate pair becomes its character
/// and a lone surrogate U+FFFD (what `String::from_utf16_lossy` of [`decode_units`] gives,
/// without the detour through UTF-16). A cut-off escape ends the text.
fn decode_escaped(inner: &[u8]) -> String {
    fn hex4(b: &[u8]) -> Option<u32> {
        let h = b.get(..4)?;
        h.iter()
            .try_fold(0u32, |acc, &c| Some(acc * 16 + (c as char).to_digit(16)?))
    }
    let mut out = String::with_capacity(inner.len());
    // Checked once: runs end at a backslash, which never cuts a character, so the runs of a
    // valid text are valid (a text from a load always is; others are read lossily).
    let text = simdutf8::basic::from_utf8(inner).ok();
    let mut i = 0;
    while i < inner.len() {
        let run_end = memchr::memchr(b'\\', &inner[i..]).map_or(inner.len(), |p| i + p);
        match text {
            Some(t) => out.push_str(&t[i..run_end]),
            None => out.push_str(&String::from_utf8_lossy(&inner[i..run_end])),
        }
        i = run_end;
        let Some(&e) = inner.get(i + 1) else { break };
        i += 2;
        let c = match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let u = hex4(&inner[i..]).unwrap_or(0xfffd);
                i += 4;
                // A high surrogate pairs with a `\u` low surrogate right after it.
                let low = if (0xd800..0xdc00).contains(&u) && inner.get(i..i + 2) == Some(b"\\u") {
                    hex4(&inner[i + 2..]).filter(|l| (0xdc00..0xe000).contains(l))
                } else {
                    None
                };
                match low {
                    Some(l) => {
                        i += 6;
                        char::from_u32(0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00))
                            .unwrap_or('\u{fffd}')
                    }
                    None => char::from_u32(u).unwrap_or('\u{fffd}'),
                }
            }
            other => other as char,
        };
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Raw<'_> {
        Raw::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn truthiness_is_javascripts() {
        for s in ["null", "false", "0", "-0", "0.0", "0e9", "\"\"", "1e-400"] {
            assert!(!raw(s).truthy(), "{s}");
        }
        for s in ["true", "1", "\" \"", "\"0\"", "[]", "{}", "-1e-300"] {
            assert!(raw(s).truthy(), "{s}");
        }
    }

    #[test]
    fn strings_decode_escapes_and_surrogate_pairs() {
        assert_eq!(
            raw(r#""a\n\u00e9\ud83d\ude00\/""#).as_str().unwrap(),
            "a\né😀/"
        );
        assert_eq!(raw(r#""\ud800x""#).as_str().unwrap(), "\u{fffd}x");
    }

    /// The direct decoder gives what decoding to UTF-16 and then to a string gives, for
    /// every mix of plain text, escapes, surrogate pairs and lone or misordered surrogates.
    #[test]
    fn direct_decoding_is_decoding_through_utf16() {
        let pieces = [
            "a",
            "é",
            "日本",
            "😀",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\r",
            "\\t",
            "\\u00e9",
            "\\u0000",
            "\\uFFFF",
            "\\ud83d\\ude00",
            "\\ud83d",
            "\\ude00",
            "\\ud800\\u0041",
            "\\udbff\\udfff",
            "\\ud800\\ud800\\udc00",
            "\\uDC00\\uD800",
        ];
        let mut rng = sessiontree_testkit::Rng(3);
        let mut pairs = 0;
        for _ in 0..20_000 {
            let mut inner = String::new();
            for _ in 0..rng.pick(12) {
                inner.push_str(pieces[rng.pick(pieces.len())]);
            }
            if !inner.contains('\\') {
                continue;
            }
            pairs += inner.contains("\\ud83d\\ude00") as u32;
            let through = String::from_utf16_lossy(&decode_units(inner.as_bytes()));
            assert_eq!(decode_escaped(inner.as_bytes()), through, "{inner:?}");
        }
        assert!(pairs > 1000, "the mixes hold surrogate pairs");
        // Cut-off escapes (not valid JSON) end the text without a panic.
        for cut in ["a\\", "\\u12", "\\ud83d\\u", "\\ud83d\\ude"] {
            let _ = decode_escaped(cut.as_bytes());
        }
    }

    #[test]
    fn members_and_elements() {
        let r = raw(r#"{"a":1,"b":[1,"x,]",{"c":[]}],"a":2}"#);
        assert_eq!(r.get("a").unwrap().text(), "2");
        let els = r.get("b").unwrap().elements();
        assert_eq!(
            els.iter().map(|e| e.text()).collect::<Vec<_>>(),
            ["1", "\"x,]\"", "{\"c\":[]}"]
        );
        assert!(raw("[ ]").elements().is_empty());
    }

    #[test]
    fn js_string_matches_javascript() {
        assert_eq!(raw("1e21").js_string(), "1e+21");
        assert_eq!(raw("-0").js_string(), "0");
        assert_eq!(raw("[1,null,\"a\",[2,3]]").js_string(), "1,,a,2,3");
        assert_eq!(raw("{}").js_string(), "[object Object]");
        assert_eq!(raw("0.000001").js_string(), "0.000001");
        assert_eq!(raw("1e-7").js_string(), "1e-7");
    }
}
