//! `JSON.stringify(JSON.parse(text))`, byte for byte, without building a tree.
//!
//! What JavaScript does and this reproduces:
//! * whitespace goes; numbers print as `Number.prototype.toString` prints them (`1e+21`,
//!   `1e-7`, `-0` -> `0`) and literals out of range (`1e400`) become `null`;
//! * strings are re-escaped: only `"`, `\` and control characters are escaped (`\b \f \n
//!   \r \t`, else `\u00xx`), `\/` and `\u00e9` become plain characters, lone surrogates stay
//!   escaped (`\ud800`, lowercase);
//! * an object keeps one member per key, at the first key's position with the last value,
//!   and keys that are array indices (`"0"`..`"4294967294"`) come first, in numeric order.

use super::scan::{scan, ScanError};
use super::{format_number, parse_number};
use std::collections::HashMap;

/// Decodes the inside of a validated string literal (without its quotes) into UTF-16 code
/// units, as JavaScript holds it: lone surrogates survive, which a Rust `String` cannot hold.
pub fn decode_units(inner: &[u8]) -> Vec<u16> {
    let mut units = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        if b == b'\\' {
            let e = inner[i + 1];
            let u = match e {
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => 0x0a,
                b'r' => 0x0d,
                b't' => 0x09,
                b'u' => {
                    let h = std::str::from_utf8(&inner[i + 2..i + 6]).unwrap_or("0");
                    i += 4;
                    u16::from_str_radix(h, 16).unwrap_or(0xfffd)
                }
                other => other as u16,
            };
            units.push(u);
            i += 2;
        } else {
            // Copy a run of plain UTF-8 up to the next backslash.
            let end = memchr::memchr(b'\\', &inner[i..]).map_or(inner.len(), |p| i + p);
            let s = String::from_utf8_lossy(&inner[i..end]);
            units.extend(s.encode_utf16());
            i = end;
        }
    }
    units
}

/// Writes UTF-16 code units as a JSON string literal, escaped as `JSON.stringify` does.
fn write_units(out: &mut String, units: &[u16]) {
    out.push('"');
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        match u {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0..=0x1f => out.push_str(&format!("\\u{u:04x}")),
            0xd800..=0xdbff if matches!(units.get(i + 1), Some(0xdc00..=0xdfff)) => {
                let c = 0x10000 + (((u as u32) - 0xd800) << 10) + ((units[i + 1] as u32) - 0xdc00);
                out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                i += 1;
            }
            0xd800..=0xdfff => out.push_str(&format!("\\u{u:04x}")),
            _ => out.push(char::from_u32(u as u32).unwrap_or('\u{fffd}')),
        }
        i += 1;
    }
    out.push('"');
}

/// Writes a Rust string as `JSON.stringify` would.
pub fn write_js_string(out: &mut String, s: &str) {
    let mut b = std::mem::take(out).into_bytes();
    write_js_string_to(&mut b, s).expect("writing to memory");
    // SAFETY: `b` was a String, and only whole UTF-8 sequences of `s` and ASCII escapes
    // were appended.
    *out = unsafe { String::from_utf8_unchecked(b) };
}

/// [`write_js_string`] to a writer: runs without escapes (found 32 bytes at a time) are
/// written whole. The same bytes as `JSON.stringify` and `serde_json` for any `&str`.
pub fn write_js_string_to<W: std::io::Write + ?Sized>(w: &mut W, s: &str) -> std::io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    w.write_all(b"\"")?;
    let mut pos = 0;
    while pos < b.len() {
        let run = super::fast::find_string_stop(&b[pos..]);
        if run > 0 {
            w.write_all(&b[pos..pos + run])?;
            pos += run;
        }
        let Some(&c) = b.get(pos) else { break };
        match c {
            b'"' => w.write_all(b"\\\"")?,
            b'\\' => w.write_all(b"\\\\")?,
            0x08 => w.write_all(b"\\b")?,
            0x0c => w.write_all(b"\\f")?,
            b'\n' => w.write_all(b"\\n")?,
            b'\r' => w.write_all(b"\\r")?,
            b'\t' => w.write_all(b"\\t")?,
            _ => w.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(c >> 4) as usize],
                HEX[(c & 15) as usize],
            ])?,
        }
        pos += 1;
    }
    w.write_all(b"\"")
}

/// Canonical text of a string literal (with quotes).
fn canon_string(out: &mut String, lit: &[u8]) {
    let inner = &lit[1..lit.len() - 1];
    if !inner.contains(&b'\\') && !inner.iter().any(|&b| b < 0x20) {
        out.push('"');
        out.push_str(&String::from_utf8_lossy(inner));
        out.push('"');
        return;
    }
    write_units(out, &decode_units(inner));
}

/// True when a key (decoded) is an array index, which JavaScript orders first.
fn array_index(key_text: &str) -> Option<u32> {
    // key_text is canonical: a quoted string; indices have only digits, so no escapes.
    let k = key_text.strip_prefix('"')?.strip_suffix('"')?;
    if k.is_empty() || k.len() > 10 || !k.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if k.len() > 1 && k.starts_with('0') {
        return None;
    }
    let n: u64 = k.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

#[derive(Default)]
struct ObjFrame {
    members: Vec<(String, String)>,
    by_key: HashMap<String, usize>,
    key: Option<String>,
}

impl ObjFrame {
    fn put(&mut self, value: String) {
        let key = self.key.take().expect("a key precedes every value");
        match self.by_key.get(&key) {
            Some(&i) => self.members[i].1 = value,
            None => {
                self.by_key.insert(key.clone(), self.members.len());
                self.members.push((key, value));
            }
        }
    }

    fn finish(mut self) -> String {
        let mut indexed: Vec<(u32, usize)> = Vec::new();
        for (i, (k, _)) in self.members.iter().enumerate() {
            if let Some(n) = array_index(k) {
                indexed.push((n, i));
            }
        }
        let mut order: Vec<usize> = Vec::with_capacity(self.members.len());
        if !indexed.is_empty() {
            indexed.sort_unstable();
            order.extend(indexed.iter().map(|&(_, i)| i));
            order.extend(
                (0..self.members.len()).filter(|i| array_index(&self.members[*i].0).is_none()),
            );
        } else {
            order.extend(0..self.members.len());
        }
        let mut out = String::from("{");
        for (n, i) in order.into_iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            let (k, v) = std::mem::take(&mut self.members[i]);
            out.push_str(&k);
            out.push(':');
            out.push_str(&v);
        }
        out.push('}');
        out
    }
}

enum Frame {
    Arr(String),
    Obj(ObjFrame),
}

/// Re-serializes one JSON text as `JSON.stringify(JSON.parse(text))` would.
pub fn canonicalize(text: &[u8]) -> Result<String, ScanError> {
    let scanned = scan(text)?;
    let b = &text[scanned.top];
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    loop {
        i = ws(b, i);
        // Parse one value (or open a container) at i.
        let mut value = String::new();
        match b[i] {
            b'{' => {
                let j = ws(b, i + 1);
                if b[j] == b'}' {
                    value.push_str("{}");
                    i = j + 1;
                } else {
                    let mut f = ObjFrame::default();
                    let (key, next) = read_key(b, j);
                    f.key = Some(key);
                    stack.push(Frame::Obj(f));
                    i = next;
                    continue;
                }
            }
            b'[' => {
                let j = ws(b, i + 1);
                if b[j] == b']' {
                    value.push_str("[]");
                    i = j + 1;
                } else {
                    stack.push(Frame::Arr(String::from("[")));
                    i = j;
                    continue;
                }
            }
            b'"' => {
                let end = super::string::skip_string(b, i)?;
                canon_string(&mut value, &b[i..end]);
                i = end;
            }
            b't' => {
                value.push_str("true");
                i += 4;
            }
            b'f' => {
                value.push_str("false");
                i += 5;
            }
            b'n' => {
                value.push_str("null");
                i += 4;
            }
            _ => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let n = parse_number(&b[start..i]);
                value.push_str(&if n.is_finite() {
                    format_number(n)
                } else {
                    "null".into()
                });
            }
        }
        // Hand the finished value to its container, closing containers that end here.
        loop {
            let Some(top) = stack.last_mut() else {
                return Ok(value);
            };
            i = ws(b, i);
            match top {
                Frame::Arr(s) => {
                    if s.len() > 1 {
                        s.push(',');
                    }
                    s.push_str(&value);
                }
                Frame::Obj(f) => f.put(value),
            }
            match b[i] {
                b',' => {
                    i = ws(b, i + 1);
                    if let Some(Frame::Obj(f)) = stack.last_mut() {
                        let (key, next) = read_key(b, i);
                        f.key = Some(key);
                        i = next;
                    }
                    break;
                }
                _ => {
                    // '}' or ']'
                    i += 1;
                    value = match stack.pop().expect("non-empty") {
                        Frame::Arr(mut s) => {
                            s.push(']');
                            s
                        }
                        Frame::Obj(f) => f.finish(),
                    };
                }
            }
        }
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Reads `"key" :` at i (validated input); returns the canonical key and the value start.
fn read_key(b: &[u8], i: usize) -> (String, usize) {
    let end = super::string::skip_string(b, i).expect("validated");
    let mut key = String::new();
    canon_string(&mut key, &b[i..end]);
    let colon = ws(b, end);
    (key, ws(b, colon + 1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn string_writer_matches_serde_json() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet: Vec<char> =
            "ab \"\\/\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}\u{7f}é中😀\u{2028}"
                .chars()
                .collect();
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 90) as usize;
            let s: String = (0..len)
                .map(|k| alphabet[((seed >> (k % 50)) as usize + k * 7) % alphabet.len()])
                .collect();
            let mut mine = String::new();
            write_js_string(&mut mine, &s);
            assert_eq!(mine, serde_json::to_string(&s).unwrap(), "{s:?}");
            let mut v = Vec::new();
            write_js_string_to(&mut v, &s).unwrap();
            assert_eq!(v, mine.as_bytes());
        }
    }

    use super::*;

    fn c(s: &str) -> String {
        canonicalize(s.as_bytes()).unwrap()
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        assert_eq!(c("[1.0, 1e21, 1E+20, 0.1, 1e-7, 0.000001, -0, 123456789012345678901, 1e400, -1e400, 5e-324]"),
            "[1,1e+21,100000000000000000000,0.1,1e-7,0.000001,0,123456789012345680000,null,null,5e-324]");
    }

    #[test]
    fn strings_are_reescaped() {
        assert_eq!(
            c(r#""\/\u00e9\u0041\b\f\n\r\t\u0001\u001F\u007f\u2028\"\\""#),
            "\"/éA\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\u{2028}\\\"\\\\\""
        );
        assert_eq!(
            c(r#""\ud83d\ude00 \uD800 \udc00x""#),
            "\"😀 \\ud800 \\udc00x\""
        );
    }

    #[test]
    fn objects_dedupe_and_order_index_keys_first() {
        assert_eq!(c(r#"{"b":1,"a":2,"b":3}"#), r#"{"b":3,"a":2}"#);
        assert_eq!(
            c(r#"{"z":0,"10":1,"2":2,"01":3,"4294967295":4,"4294967294":5,"-1":6}"#),
            r#"{"2":2,"10":1,"4294967294":5,"z":0,"01":3,"4294967295":4,"-1":6}"#
        );
        assert_eq!(
            c(r#" { "a" : [ 1 , { } , [ ] , { "x" : null } ] } "#),
            r#"{"a":[1,{},[],{"x":null}]}"#
        );
    }

    #[test]
    fn write_js_string_matches_canon() {
        let s = "a\"\\\u{1}\u{1f}\n\té😀\u{2028}";
        let mut out = String::new();
        write_js_string(&mut out, s);
        assert_eq!(out, c(&out));
        assert_eq!(out, "\"a\\\"\\\\\\u0001\\u001f\\n\\té😀\u{2028}\"");
    }

    #[test]
    fn deep_nesting_is_fine() {
        let depth = 200_000;
        let s = "[".repeat(depth) + &"]".repeat(depth);
        assert_eq!(c(&s), s);
    }
}
