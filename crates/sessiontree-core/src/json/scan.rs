//! A validating JSON scanner that accepts exactly what `JSON.parse` accepts and records
//! where the members of the top-level object (and of objects directly inside it) are.
//!
//! It never builds a tree and never recurses, so a line nested a million levels deep costs
//! memory proportional to its depth and cannot overflow the stack. Values are described by
//! byte spans into the scanned line; decoding is left to [`super::Raw`].

use std::ops::Range;

use super::error::err;
pub use super::error::ScanError;
use super::string::skip_string_checking;
pub use super::string::{skip_string_inside, Escapes};

/// A byte range inside the scanned text.
pub type Span = Range<usize>;

/// One `"key": value` pair of an object, as spans of the scanned text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The key, including its quotes.
    pub key: Span,
    /// The value, without surrounding whitespace.
    pub value: Span,
}

/// The kind of a JSON value, from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A number.
    Number,
    /// `true`.
    True,
    /// `false`.
    False,
    /// `null`.
    Null,
}

impl Kind {
    /// The kind of the value starting with byte `b` (the text must be valid JSON).
    pub(crate) fn of_first_byte(b: u8) -> Kind {
        match b {
            b'{' => Kind::Object,
            b'[' => Kind::Array,
            b'"' => Kind::String,
            b't' => Kind::True,
            b'f' => Kind::False,
            b'n' => Kind::Null,
            _ => Kind::Number,
        }
    }
}

/// What a scan found.
#[derive(Clone, Debug, Default)]
pub struct Scanned {
    /// The top-level value's span (empty when the text is blank).
    pub top: Span,
    /// Members of the top-level object, in text order (duplicates included).
    pub members: Vec<Member>,
    /// Members of objects that are values of top-level members: `(index into members, member)`.
    pub inner: Vec<(u32, Member)>,
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// Whitespace inside one line of a buffer of lines: a `\n` ends the line, so it is not
/// skipped.
#[inline]
fn skip_ws_in_line(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    i
}

#[inline]
fn ws<const LINE: bool>(b: &[u8], i: usize) -> usize {
    if LINE {
        skip_ws_in_line(b, i)
    } else {
        skip_ws(b, i)
    }
}

/// True when the text holds only JSON whitespace.
#[doc(hidden)] // plumbing between the core and the store
pub fn is_blank(b: &[u8]) -> bool {
    skip_ws(b, 0) == b.len()
}

fn skip_number(b: &[u8], mut i: usize) -> Result<usize, ScanError> {
    let start = i;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
        }
        _ => return Err(err(start, "bad number")),
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return Err(err(i, "bad number"));
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !matches!(b.get(i), Some(b'0'..=b'9')) {
            return Err(err(i, "bad number"));
        }
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
    }
    Ok(i)
}

fn expect_lit(b: &[u8], i: usize, lit: &'static [u8]) -> Result<usize, ScanError> {
    if b.get(i..i + lit.len()) == Some(lit) {
        Ok(i + lit.len())
    } else {
        Err(err(i, "unexpected token"))
    }
}

/// Validates `b` as one JSON text (surrounding whitespace allowed) and records members.
///
/// A blank text is an error ("empty"); callers check [`is_blank`] first when blank is fine.
pub fn scan(b: &[u8]) -> Result<Scanned, ScanError> {
    let mut out = Scanned::default();
    scan_impl::<false>(b, &mut out)?;
    Ok(out)
}

/// Scans the line that starts `b` without finding its end first: `Some((scanned, end))`
/// when the line (up to the `\n` at `end`, or the end of `b`) is a valid JSON value in
/// UTF-8, with spans as [`scan`] gives them for `&b[..end]`. `None` for anything else
/// (blank, invalid, not UTF-8): the caller then takes the careful path, which finds the
/// line's end and reports what is wrong. (A `\n` can only end a line: inside a string it
/// is a control character, which JSON does not allow.)
///
/// UTF-8 is checked inside the strings as they are skipped, not in a pass of its own:
/// outside its strings a valid line is ASCII (structure, numbers, literals, whitespace), so
/// the line is UTF-8 exactly when each string's inside is.
///
/// The spans go into `out` (cleared first), so that a loop over lines reuses its lists.
pub(crate) fn scan_line(b: &[u8], out: &mut Scanned) -> Option<usize> {
    let end = scan_impl::<true>(b, out).ok()?;
    debug_assert!(std::str::from_utf8(&b[..end]).is_ok());
    Some(end)
}

/// [`scan_line`], for the fuzz targets (not a stable API).
#[doc(hidden)]
pub fn scan_line_for_fuzzing(b: &[u8]) -> Option<(Scanned, usize)> {
    let mut out = Scanned::default();
    scan_line(b, &mut out).map(|end| (out, end))
}

fn scan_impl<const LINE: bool>(b: &[u8], out: &mut Scanned) -> Result<usize, ScanError> {
    out.top = 0..0;
    out.members.clear();
    out.inner.clear();
    let mut i = ws::<LINE>(b, 0);
    if i == b.len() {
        return Err(err(i, "empty"));
    }
    let top_start = i;
    // Container stack: true = object, false = array.
    let mut stack: Vec<bool> = Vec::new();
    // Open member at depth 1 / depth 2: (key span, value start).
    let mut open1: Option<(Span, usize)> = None;
    let mut open2: Option<(Span, usize)> = None;
    let top_is_object = b[i] == b'{';

    'value: loop {
        // A value starts at i (whitespace already skipped).
        let Some(&c) = b.get(i) else {
            return Err(err(i, "unexpected end"));
        };
        match c {
            b'{' | b'[' => {
                let is_obj = c == b'{';
                i = ws::<LINE>(b, i + 1);
                let close = if is_obj { b'}' } else { b']' };
                if b.get(i) == Some(&close) {
                    i += 1;
                } else {
                    stack.push(is_obj);
                    if is_obj {
                        i = member_key::<LINE>(
                            b,
                            i,
                            &stack,
                            top_is_object,
                            &mut open1,
                            &mut open2,
                        )?;
                    }
                    continue 'value;
                }
            }
            // In a line, strings are checked as UTF-8 too (see `scan_line`).
            b'"' => i = skip_string_checking::<LINE>(b, i)?,
            b't' => i = expect_lit(b, i, b"true")?,
            b'f' => i = expect_lit(b, i, b"false")?,
            b'n' => i = expect_lit(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = skip_number(b, i)?,
            _ => return Err(err(i, "unexpected token")),
        }
        // A value ended at i; close containers as far as they end here.
        loop {
            close_member(&stack, top_is_object, i, &mut open1, &mut open2, out);
            let Some(&is_obj) = stack.last() else {
                break 'value;
            };
            i = ws::<LINE>(b, i);
            match b.get(i) {
                Some(b',') => {
                    i = ws::<LINE>(b, i + 1);
                    if is_obj {
                        i = member_key::<LINE>(
                            b,
                            i,
                            &stack,
                            top_is_object,
                            &mut open1,
                            &mut open2,
                        )?;
                    }
                    continue 'value;
                }
                Some(b'}') if is_obj => {
                    stack.pop();
                    i += 1;
                }
                Some(b']') if !is_obj => {
                    stack.pop();
                    i += 1;
                }
                Some(_) => {
                    return Err(err(
                        i,
                        if is_obj {
                            "expected ',' or '}'"
                        } else {
                            "expected ',' or ']'"
                        },
                    ))
                }
                None => return Err(err(i, "unexpected end")),
            }
        }
    }
    out.top = top_start..i;
    let end = ws::<LINE>(b, i);
    if end != b.len() && !(LINE && b[end] == b'\n') {
        return Err(err(end, "unexpected text after the value"));
    }
    Ok(end)
}

/// Parses `"key" :` at `i` inside an object and opens a member record where one is kept.
fn member_key<const LINE: bool>(
    b: &[u8],
    i: usize,
    stack: &[bool],
    top_is_object: bool,
    open1: &mut Option<(Span, usize)>,
    open2: &mut Option<(Span, usize)>,
) -> Result<usize, ScanError> {
    if b.get(i) != Some(&b'"') {
        return Err(err(i, "expected a key"));
    }
    let key_end = skip_string_checking::<LINE>(b, i)?;
    let j = ws::<LINE>(b, key_end);
    if b.get(j) != Some(&b':') {
        return Err(err(j, "expected ':'"));
    }
    let value_start = ws::<LINE>(b, j + 1);
    if top_is_object {
        if stack.len() == 1 {
            *open1 = Some((i..key_end, value_start));
        } else if stack.len() == 2 && stack[1] {
            *open2 = Some((i..key_end, value_start));
        }
    }
    Ok(value_start)
}

/// Records the member whose value just ended at `end`, if it is one we keep.
fn close_member(
    stack: &[bool],
    top_is_object: bool,
    end: usize,
    open1: &mut Option<(Span, usize)>,
    open2: &mut Option<(Span, usize)>,
    out: &mut Scanned,
) {
    if !top_is_object {
        return;
    }
    if stack.len() == 1 {
        if let Some((key, start)) = open1.take() {
            out.members.push(Member {
                key,
                value: start..end,
            });
        }
    } else if stack.len() == 2 && stack[1] {
        if let Some((key, start)) = open2.take() {
            // The depth-1 member that holds this object is still open: it is the next pushed.
            let parent = out.members.len() as u32;
            out.inner.push((
                parent,
                Member {
                    key,
                    value: start..end,
                },
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Scanned {
        scan(s.as_bytes()).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }
    fn bad(s: &str) -> ScanError {
        scan(s.as_bytes()).expect_err(s)
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for s in [
            "null",
            "0",
            "-0",
            "1.5e+3",
            "-12.25E-2",
            "\"a\\u00e9\\n\"",
            "[]",
            "{}",
            " [1, [2, [3]]] ",
            "{\"a\":{\"b\":[{\"c\":null}]}}",
            "\"\\ud800\"",
            "\t{\"x\" : true}\r",
        ] {
            ok(s);
        }
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for s in [
            "",
            "  ",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "\"\t\"",
            "\"\\x\"",
            "\"\\u12g4\"",
            "{a:1}",
            "[1] 2",
            "tru",
            "nul",
            "{\"a\" 1}",
            "'a'",
            "\u{a0}1",
            "NaN",
        ] {
            bad(s);
        }
    }

    #[test]
    fn records_top_and_inner_members() {
        let s = r#"{"type":"message","id":"a1","message":{"role":"user","content":[{"x":1}]},"n":[{"k":2}]}"#;
        let r = ok(s);
        let keys: Vec<&str> = r.members.iter().map(|m| &s[m.key.clone()]).collect();
        assert_eq!(keys, ["\"type\"", "\"id\"", "\"message\"", "\"n\""]);
        assert_eq!(
            &s[r.members[2].value.clone()],
            r#"{"role":"user","content":[{"x":1}]}"#
        );
        let inner: Vec<(u32, &str, &str)> = r
            .inner
            .iter()
            .map(|(p, m)| (*p, &s[m.key.clone()], &s[m.value.clone()]))
            .collect();
        assert_eq!(
            inner,
            [
                (2, "\"role\"", "\"user\""),
                (2, "\"content\"", "[{\"x\":1}]")
            ]
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let depth = 1_000_000;
        let s = "[".repeat(depth) + &"]".repeat(depth);
        ok(&s);
        let s = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
        ok(&s);
    }

    /// The one-pass line scan agrees with finding the newline first and scanning the line:
    /// same spans and end for every valid UTF-8 line, `None` for every other line.
    #[test]
    fn line_scan_agrees_with_splitting_first() {
        let pieces: &[&[u8]] = &[
            b"{\"type\":\"message\",\"id\":\"a\"}",
            b"{\"message\":{\"role\":\"user\",\"content\":\"x\\n\\\"y\"}}",
            b"  {\"a\" : [1, 2.5e3, true, null] }\r",
            b"\"just a string\"",
            b"-0",
            b"12",
            b"[]",
            b"",
            b"   ",
            b"\r",
            b"{\"a\":\"line\nbreak\"}",
            b"{\"a\":1",
            b"{\"a\":1}}",
            b"{\"\xc3\xa9\":\"\xe6\x97\xa5\xf0\x9f\x98\x80\"}",
            b"{\"bad\":\"\xc3\"}",
            b"{\"bad\":\"\xff\"}",
            b"\xef\xbb\xbf{\"bom\":1}",
            b"{\"x\":\"\\\\\"}",
            b"{\"x\":\"\\u00e9\\ud800\"}",
            b"{\"x\":\"\\q\"}",
            b"nul",
            b"{\"k\":1} x",
            b"{\"n\":1e}",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..4000 {
            let mut buf = Vec::new();
            let lines = 1 + next() as usize % 4;
            for _ in 0..lines {
                let p = pieces[next() as usize % pieces.len()];
                buf.extend_from_slice(p);
                // Long strings so the 64-byte blocks of the string skipper cross lines.
                if next() % 3 == 0 {
                    buf.extend_from_slice(b"{\"long\":\"");
                    buf.extend(std::iter::repeat_n(b'a', next() as usize % 150));
                    buf.extend_from_slice(b"\"}");
                }
                buf.push(b'\n');
            }
            if round % 2 == 1 {
                buf.pop();
            }
            let mut pos = 0;
            while pos < buf.len() {
                let rest = &buf[pos..];
                let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
                let line = &rest[..end];
                let careful = (std::str::from_utf8(line).is_ok())
                    .then(|| scan(line).ok())
                    .flatten();
                let fast = scan_line_for_fuzzing(rest);
                match (careful, fast) {
                    (None, None) => {}
                    (Some(c), Some((f, fend))) => {
                        assert_eq!(fend, end, "{:?}", String::from_utf8_lossy(line));
                        assert_eq!((c.top, c.members, c.inner), (f.top, f.members, f.inner));
                    }
                    (c, f) => panic!(
                        "disagree on {:?}: careful {:?}, one pass {:?}",
                        String::from_utf8_lossy(line),
                        c.is_some(),
                        f.is_some()
                    ),
                }
                pos += end + 1;
            }
        }
    }
}
