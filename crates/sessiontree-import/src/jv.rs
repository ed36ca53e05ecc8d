//! A JSON tree over a source line's bytes, for the converters.
//!
//! Most of a transcript's bytes are a few long strings (tool output, file contents, images)
//! that the converters move from one place to another without looking inside. Here a
//! string keeps its source text: it is decoded only when a converter asks for its text,
//! and written back as the source's bytes when they are already what `JSON.stringify`
//! writes for it (Claude Code writes with `JSON.stringify`; Codex's writer escapes the same
//! way). Numbers keep their source text the same way. So a conversion parses no payload,
//! allocates a little per object and array, and copies payload bytes once, into the output.
//!
//! [`parse`] accepts exactly what `serde_json` accepts (a test compares them on mutated
//! lines), and [`V::write`] writes what `JSON.stringify` writes for the value: strings
//! escaped as JavaScript does, numbers as `Number.prototype.toString` prints them, objects
//! with array-index keys first. Objects keep one member per key (the first key's place, the
//! last value), as `JSON.parse` does.

use std::borrow::Cow;
use std::cell::OnceCell;

/// Nesting deeper than this is refused (as `serde_json` refuses it).
const MAX_DEPTH: usize = 128;

#[derive(Clone, Debug, Default)]
pub(crate) enum V<'a> {
    #[default]
    Null,
    Bool(bool),
    Num(Num<'a>),
    Str(S<'a>),
    Arr(Vec<V<'a>>),
    Obj(Obj<'a>),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Num<'a> {
    /// A valid JSON number literal from the source.
    Raw(&'a str),
    /// A number the converter computed.
    F(f64),
}

#[derive(Clone, Debug)]
pub(crate) enum S<'a> {
    /// Source text without escapes: the string's text itself.
    Plain(&'a str),
    /// Source text with (valid) escapes; `canonical` when the text is exactly what
    /// `JSON.stringify` writes for the string; decoded on first use.
    Esc {
        raw: &'a str,
        canonical: bool,
        // Behind a thin pointer (not `Box<str>`, two words): it keeps a string, and so
        // every value, 32 bytes, and the trees a fifth smaller.
        #[allow(clippy::box_collection)]
        text: OnceCell<Box<String>>,
    },
    /// A string the converter made.
    Text(Cow<'a, str>),
}

impl<'a> S<'a> {
    /// The string as its source wrote it (escapes and all; the text itself for a string
    /// the converter made): for comparing strings of one writer without decoding them.
    pub(crate) fn source_text(&self) -> &str {
        match self {
            S::Plain(s) => s,
            S::Esc { raw, .. } => raw,
            S::Text(t) => t,
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            S::Plain(s) => s,
            S::Esc { raw, text, .. } => text.get_or_init(|| Box::new(decode(raw))),
            S::Text(t) => t,
        }
    }

    pub(crate) fn write(&self, out: &mut String) {
        match self {
            S::Plain(raw)
            | S::Esc {
                raw,
                canonical: true,
                ..
            } => {
                out.reserve(raw.len() + 2);
                out.push('"');
                out.push_str(raw);
                out.push('"');
            }
            // Short made-up strings (keys, ids, times) rarely need an escape.
            S::Text(t)
                if t.len() < 64 && sessiontree::json::find_string_stop(t.as_bytes()) == t.len() =>
            {
                out.reserve(t.len() + 2);
                out.push('"');
                out.push_str(t);
                out.push('"');
            }
            _ => sessiontree::json::canon::write_js_string(out, self.as_str()),
        }
    }

    fn into_owned(self) -> S<'static> {
        match self {
            S::Text(Cow::Owned(t)) => S::Text(Cow::Owned(t)),
            // The decoded text: for a canonical source text, written back the same.
            other => S::Text(Cow::Owned(other.as_str().to_string())),
        }
    }
}

impl<'a> From<&'a str> for S<'a> {
    fn from(s: &'a str) -> S<'a> {
        S::Text(Cow::Borrowed(s))
    }
}

impl<'a> From<Cow<'a, str>> for S<'a> {
    fn from(s: Cow<'a, str>) -> S<'a> {
        S::Text(s)
    }
}

impl From<String> for S<'_> {
    fn from(s: String) -> Self {
        S::Text(Cow::Owned(s))
    }
}

/// An object: members in order, one per key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Obj<'a>(Vec<(S<'a>, V<'a>)>);

impl<'a> Obj<'a> {
    pub fn new() -> Self {
        Obj(Vec::new())
    }

    pub fn with_capacity(n: usize) -> Self {
        Obj(Vec::with_capacity(n))
    }

    fn position(&self, k: &str) -> Option<usize> {
        self.0.iter().position(|(key, _)| key.as_str() == k)
    }

    pub fn get(&self, k: &str) -> Option<&V<'a>> {
        self.0
            .iter()
            .find(|(key, _)| key.as_str() == k)
            .map(|m| &m.1)
    }

    pub fn get_mut(&mut self, k: &str) -> Option<&mut V<'a>> {
        self.0
            .iter_mut()
            .find(|(key, _)| key.as_str() == k)
            .map(|m| &mut m.1)
    }

    /// Sets a member: in its place when the key is there, else at the end.
    pub fn insert(&mut self, k: impl Into<S<'a>>, v: V<'a>) {
        let k = k.into();
        match self.position(k.as_str()) {
            Some(p) => self.0[p].1 = v,
            None => self.0.push((k, v)),
        }
    }

    /// Appends a member whose key (a name written in the code, needing no escape) is known
    /// not to be there.
    pub fn push_new(&mut self, k: &'static str, v: V<'a>) {
        debug_assert_eq!(sessiontree::json::find_string_stop(k.as_bytes()), k.len());
        self.0.push((S::Plain(k), v));
    }

    /// Takes a member out, the others keeping their order.
    pub fn remove(&mut self, k: &str) -> Option<V<'a>> {
        self.position(k).map(|p| self.0.remove(p).1)
    }

    /// The member `k`, set to `f()` first when missing.
    pub fn entry_or_insert_with(&mut self, k: &'a str, f: impl FnOnce() -> V<'a>) -> &mut V<'a> {
        let p = match self.position(k) {
            Some(p) => p,
            None => {
                self.0.push((S::from(k), f()));
                self.0.len() - 1
            }
        };
        &mut self.0[p].1
    }

    fn into_owned(self) -> Obj<'static> {
        Obj(self
            .0
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect())
    }
}

impl<'a> V<'a> {
    pub fn get(&self, k: &str) -> Option<&V<'a>> {
        match self {
            V::Obj(o) => o.get(k),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, k: &str) -> Option<&mut V<'a>> {
        match self {
            V::Obj(o) => o.get_mut(k),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The string's text, borrowed from the source when it holds no escape (a copy
    /// otherwise): for text kept while the value it came from changes.
    pub fn src_str(&self) -> Option<Cow<'a, str>> {
        match self {
            V::Str(S::Plain(s)) => Some(Cow::Borrowed(s)),
            V::Str(S::Text(Cow::Borrowed(s))) => Some(Cow::Borrowed(s)),
            V::Str(s) => Some(Cow::Owned(s.as_str().to_string())),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            V::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            V::Num(Num::Raw(r)) => r.parse().ok(),
            V::Num(Num::F(f)) => Some(*f),
            _ => None,
        }
    }

    /// A non-negative integer literal that fits 64 bits (as `serde_json`'s `as_u64`).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            V::Num(Num::Raw(r)) => r.parse().ok(),
            V::Num(Num::F(f)) if f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19 => Some(*f as u64),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<V<'a>>> {
        match self {
            V::Arr(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Obj<'a>> {
        match self {
            V::Obj(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Obj<'a>> {
        match self {
            V::Obj(o) => Some(o),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, V::Obj(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, V::Str(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, V::Null)
    }

    /// A copy that does not borrow the source (for values parsed from a string the
    /// converter decoded).
    pub fn into_owned(self) -> V<'static> {
        match self {
            V::Null => V::Null,
            V::Bool(b) => V::Bool(b),
            V::Num(Num::Raw(r)) => V::Num(Num::F(r.parse().unwrap_or(f64::NAN))),
            V::Num(Num::F(f)) => V::Num(Num::F(f)),
            V::Str(s) => V::Str(s.into_owned()),
            V::Arr(a) => V::Arr(a.into_iter().map(V::into_owned).collect()),
            V::Obj(o) => V::Obj(o.into_owned()),
        }
    }

    /// The value as `JSON.stringify` writes it.
    pub fn to_json(&self) -> String {
        // Grown from a few hundred bytes, not from nothing.
        let mut s = String::with_capacity(256);
        self.write(&mut s);
        s
    }

    /// [`V::to_json`], appended to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            V::Null => out.push_str("null"),
            V::Bool(true) => out.push_str("true"),
            V::Bool(false) => out.push_str("false"),
            V::Num(Num::Raw(r)) if js_exact(r) => out.push_str(r),
            V::Num(Num::Raw(r)) => write_f64(out, r.parse().unwrap_or(f64::NAN)),
            V::Num(Num::F(f)) => write_f64(out, *f),
            V::Str(s) => s.write(out),
            V::Arr(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    x.write(out);
                }
                out.push(']');
            }
            V::Obj(o) => {
                out.push('{');
                let mut first = true;
                let mut member = |out: &mut String, k: &S<'_>, v: &V<'_>| {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    k.write(out);
                    out.push(':');
                    v.write(out);
                };
                if o.0.iter().any(|(k, _)| array_index(k.as_str()).is_some()) {
                    // JavaScript orders array-index keys first, ascending.
                    let mut idx: Vec<(u32, usize)> =
                        o.0.iter()
                            .enumerate()
                            .filter_map(|(i, (k, _))| array_index(k.as_str()).map(|n| (n, i)))
                            .collect();
                    idx.sort_unstable();
                    for &(_, i) in &idx {
                        member(out, &o.0[i].0, &o.0[i].1);
                    }
                    for (k, v) in &o.0 {
                        if array_index(k.as_str()).is_none() {
                            member(out, k, v);
                        }
                    }
                } else {
                    for (k, v) in &o.0 {
                        member(out, k, v);
                    }
                }
                out.push('}');
            }
        }
    }
}

impl<'a> From<&'a str> for V<'a> {
    fn from(s: &'a str) -> V<'a> {
        V::Str(S::from(s))
    }
}

impl<'a> From<Cow<'a, str>> for V<'a> {
    fn from(s: Cow<'a, str>) -> V<'a> {
        V::Str(S::from(s))
    }
}

impl From<String> for V<'_> {
    fn from(s: String) -> Self {
        V::Str(S::from(s))
    }
}

impl<'a> From<S<'a>> for V<'a> {
    fn from(s: S<'a>) -> V<'a> {
        V::Str(s)
    }
}

impl From<bool> for V<'_> {
    fn from(b: bool) -> Self {
        V::Bool(b)
    }
}

impl From<f64> for V<'_> {
    fn from(f: f64) -> Self {
        V::Num(Num::F(f))
    }
}

impl From<i64> for V<'_> {
    fn from(n: i64) -> Self {
        V::Num(Num::F(n as f64))
    }
}

impl<'a> From<Vec<V<'a>>> for V<'a> {
    fn from(a: Vec<V<'a>>) -> V<'a> {
        V::Arr(a)
    }
}

impl<'a> From<Obj<'a>> for V<'a> {
    fn from(o: Obj<'a>) -> V<'a> {
        V::Obj(o)
    }
}

/// An object value from `"key": value` pairs (distinct keys), values converted with
/// `V::from`.
macro_rules! obj {
    ($($k:literal : $v:expr),* $(,)?) => {{
        let mut o = $crate::jv::Obj::with_capacity([$($k),*].len());
        $( o.push_new($k, $crate::jv::V::from($v)); )*
        $crate::jv::V::Obj(o)
    }};
}
pub(crate) use obj;

/// `n` as JavaScript's `String(n)` prints it.
fn write_f64(out: &mut String, f: f64) {
    if f.fract() == 0.0 && f.abs() <= (1u64 << 53) as f64 {
        // Integral: digits, no fraction ("-0" prints as "0").
        let n = f.abs() as u64;
        if f < 0.0 && n != 0 {
            out.push('-');
        }
        out.extend(
            crate::decimal_bytes(n, &mut [0u8; 20])
                .iter()
                .map(|&b| char::from(b)),
        );
    } else {
        out.push_str(&sessiontree::json::format_number(f));
    }
}

/// Does JavaScript print the number this literal stands for as the literal itself? True for
/// plain decimals of at most 15 significant digits, without exponent, leading zeros or
/// trailing fraction zeros, at least 1e-6 in size, and not `-0`: such a decimal is the only
/// one of 15 digits or fewer that parses to its double, so it is what the shortest
/// round-trip printing gives.
fn js_exact(r: &str) -> bool {
    let b = r.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int = &b[int_start..i];
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return false;
    }
    let zero_int = int == b"0";
    if i == b.len() {
        // An integer: "-0" prints as "0".
        return int.len() <= 15 && !(zero_int && int_start == 1);
    }
    if b[i] != b'.' {
        return false; // an exponent
    }
    let frac = &b[i + 1..];
    if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) || frac.last() == Some(&b'0') {
        return false;
    }
    if zero_int {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        zeros <= 5 && frac.len() - zeros <= 15
    } else {
        int.len() + frac.len() <= 15
    }
}

/// The array index a key stands for in JavaScript ("0" to "4294967294").
fn array_index(k: &str) -> Option<u32> {
    let b = k.as_bytes();
    if b.is_empty() || b.len() > 10 || !b[0].is_ascii_digit() || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = k.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

/// Decodes the inside of a validated string literal.
fn decode(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < b.len() {
        let run = memchr::memchr(b'\\', &b[i..]).unwrap_or(b.len() - i);
        out.push_str(&raw[i..i + run]);
        i += run;
        if i >= b.len() {
            break;
        }
        let c = match b[i + 1] {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(&b[i + 2..i + 6]);
                if (0xd800..0xdc00).contains(&hi) {
                    let lo = hex4(&b[i + 8..i + 12]);
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00))
                        .unwrap_or('\u{fffd}')
                } else {
                    char::from_u32(hi).unwrap_or('\u{fffd}')
                }
            }
            other => other as char,
        };
        out.push(c);
        i += if b[i + 1] == b'u' { 6 } else { 2 };
    }
    out
}

fn hex4(h: &[u8]) -> u32 {
    h.iter().fold(0, |n, &c| {
        n * 16
            + match c {
                b'0'..=b'9' => (c - b'0') as u32,
                b'a'..=b'f' => (c - b'a' + 10) as u32,
                _ => (c - b'A' + 10) as u32,
            }
    })
}

/// Parses one JSON value (the whole of `text`, whitespace around it allowed).
pub(crate) fn parse(text: &str) -> Option<V<'_>> {
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        i: 0,
        depth: 0,
        line: false,
    };
    p.ws();
    let v = p.value()?;
    p.ws();
    (p.i == p.b.len()).then_some(v)
}

/// Parses the value of the line starting at `start` of `text`, without reading past the
/// line's end (a newline is not whitespace here, and no string holds one): the value, and
/// where parsing stopped (after the value and the whitespace behind it; on an error,
/// somewhere in the line before the error). The line holds exactly one valid value when
/// the value is there and the stop is the line's end.
pub(crate) fn parse_line(text: &str, start: usize) -> (Option<V<'_>>, usize) {
    let mut p = Parser {
        s: text,
        b: text.as_bytes(),
        i: start,
        depth: 0,
        line: true,
    };
    p.ws();
    let v = p.value();
    if v.is_some() {
        p.ws();
    }
    (v, p.i)
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: usize,
    /// One line of a larger text: a newline ends it.
    line: bool,
}

impl<'a> Parser<'a> {
    #[inline]
    fn ws(&mut self) {
        loop {
            match self.b.get(self.i) {
                Some(b' ' | b'\t' | b'\r') => self.i += 1,
                Some(b'\n') if !self.line => self.i += 1,
                _ => return,
            }
        }
    }

    fn value(&mut self) -> Option<V<'a>> {
        match *self.b.get(self.i)? {
            b'"' => {
                self.i += 1;
                self.string().map(V::Str)
            }
            b'{' => self.object(),
            b'[' => self.array(),
            b't' => self.literal(b"true", V::Bool(true)),
            b'f' => self.literal(b"false", V::Bool(false)),
            b'n' => self.literal(b"null", V::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], v: V<'a>) -> Option<V<'a>> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(v)
        } else {
            None
        }
    }

    fn number(&mut self) -> Option<V<'a>> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        if b[i] == b'-' {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            *i - s
        };
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                digits(&mut i);
            }
            _ => return None,
        }
        let mut plain = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            plain = false;
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                return None;
            }
        }
        let raw = &self.s[start..i];
        // Out of the double range: refused, as serde_json refuses it.
        if (!plain || raw.len() > 300) && !raw.parse::<f64>().ok()?.is_finite() {
            return None;
        }
        self.i = i;
        Some(V::Num(Num::Raw(raw)))
    }

    /// A string's inside from `self.i` (after its opening quote) to its closing quote.
    #[inline(always)]
    fn string(&mut self) -> Option<S<'a>> {
        let b = self.b;
        let start = self.i;
        // Most strings (keys, ids, times) are short: when the first stop byte of the next
        // 16 is the closing quote, the string ends there.
        if let Some(window) = b.get(start..start + 16) {
            let stop = sessiontree::json::find_string_stop(window);
            if stop < 16 && window[stop] == b'"' {
                self.i = start + stop + 1;
                return Some(S::Plain(&self.s[start..start + stop]));
            }
        }
        self.long_string()
    }

    /// [`Parser::string`] beyond its first 16 bytes, or near the end of the text: skipped
    /// and validated 64 bytes at a time; the escapes looked at one by one only when there
    /// is a `\u` among them (lone surrogates are refused here, and whether the text is the
    /// one `JSON.stringify` writes depends on each).
    #[inline(never)]
    fn long_string(&mut self) -> Option<S<'a>> {
        let start = self.i;
        let (end, esc) = sessiontree::json::skip_string_inside(self.b, start).ok()?;
        if esc.unicode {
            return self.string_by_escapes();
        }
        self.i = end;
        let raw = &self.s[start..end - 1];
        Some(if esc.any {
            S::Esc {
                raw,
                // `\/` is the one other escape `JSON.stringify` does not write.
                canonical: !esc.slash,
                text: OnceCell::new(),
            }
        } else {
            S::Plain(raw)
        })
    }

    /// A string's inside, escape by escape.
    fn string_by_escapes(&mut self) -> Option<S<'a>> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let mut escaped = false;
        let mut canonical = true;
        loop {
            i += sessiontree::json::find_string_stop(&b[i..]);
            match *b.get(i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'/' => {
                            canonical = false;
                            i += 2;
                        }
                        b'u' => {
                            let hex = b.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            let n = hex4(hex);
                            match n {
                                0xdc00..=0xdfff => return None,
                                0xd800..=0xdbff => {
                                    // Only a pair is a character.
                                    let lo = b.get(i + 6..i + 12)?;
                                    if lo[0] != b'\\'
                                        || lo[1] != b'u'
                                        || !lo[2..].iter().all(u8::is_ascii_hexdigit)
                                        || !(0xdc00..=0xdfff).contains(&hex4(&lo[2..]))
                                    {
                                        return None;
                                    }
                                    canonical = false;
                                    i += 12;
                                }
                                _ => {
                                    canonical &= n < 0x20
                                        && !matches!(n, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                                        && !hex.iter().any(u8::is_ascii_uppercase);
                                    i += 6;
                                }
                            }
                        }
                        _ => return None,
                    }
                }
                // A control character.
                _ => return None,
            }
        }
        self.i = i + 1;
        let raw = &self.s[start..i];
        Some(if escaped {
            S::Esc {
                raw,
                canonical,
                text: OnceCell::new(),
            }
        } else {
            S::Plain(raw)
        })
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth < MAX_DEPTH).then_some(())
    }

    fn array(&mut self) -> Option<V<'a>> {
        self.enter()?;
        self.i += 1;
        let mut a = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            self.depth -= 1;
            return Some(V::Arr(a));
        }
        loop {
            self.ws();
            a.push(self.value()?);
            self.ws();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(V::Arr(a));
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self) -> Option<V<'a>> {
        self.enter()?;
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            self.depth -= 1;
            return Some(V::Obj(Obj::new()));
        }
        // Room for the members of most objects in transcripts at once (grown for others).
        let mut o = Obj::with_capacity(8);
        // Keys seen, for objects too large to search member by member; below that, a bit
        // per key (of its length and last byte) tells which keys cannot be there yet.
        let mut seen: Option<std::collections::HashMap<Box<str>, usize>> = None;
        let mut bits = 0u64;
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            self.i += 1;
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            self.ws();
            // Most members are strings: parsed here, not through a call of `value` (which
            // returns its value through memory, read back at once).
            let v = if self.b.get(self.i) == Some(&b'"') {
                self.i += 1;
                V::Str(self.string()?)
            } else {
                self.value()?
            };
            // A repeated key keeps its first place and takes the last value.
            let at = match &mut seen {
                Some(map) => map.get(k.as_str()).copied(),
                None => {
                    let key = k.as_str();
                    let bit = 1u64
                        << ((key.len() as u64 * 7
                            + key.as_bytes().last().map_or(0, |&c| c as u64))
                            & 63);
                    let maybe = bits & bit != 0;
                    bits |= bit;
                    if maybe {
                        o.position(key)
                    } else {
                        None
                    }
                }
            };
            match at {
                Some(p) => o.0[p].1 = v,
                None => {
                    if let Some(map) = &mut seen {
                        map.insert(k.as_str().into(), o.0.len());
                    }
                    o.0.push((k, v));
                    if seen.is_none() && o.0.len() > 32 {
                        seen = Some(
                            o.0.iter()
                                .enumerate()
                                .map(|(i, (k, _))| (k.as_str().into(), i))
                                .collect(),
                        );
                    }
                }
            }
            self.ws();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(V::Obj(o));
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
pub(crate) use sessiontree_testkit::rng as xorshift;

#[cfg(test)]
use sessiontree_testkit::env;

#[cfg(test)]
mod tests {
    use super::*;

    /// serde_json's verdict and JSON.stringify(JSON.parse(x)) as the previous converters
    /// computed it (serde_json, then the core's canonical writer).
    fn reference(text: &str) -> Option<String> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let s = serde_json::to_string(&v).unwrap();
        Some(sessiontree::json::canonicalize(s.as_bytes()).unwrap())
    }

    fn ours(text: &str) -> Option<String> {
        parse(text).map(|v| v.to_json())
    }

    #[test]
    fn accepts_and_writes_what_serde_and_javascript_do() {
        for t in [
            r#"{"a":1,"b":"x\u0001\n\"é😀","c":[0.5,-3,1e-7,1e21,1.5e300,12345678901234567890]}"#,
            r#"{"b":1,"10":2,"2":3,"a":{"01":1,"1":2}}"#,
            r#"{"n":9007199254740993,"m":-0.0,"f":0.1,"z":-0,"k":0.000001,"j":0.0000001}"#,
            r#"{"m":3.0,"k":[0.000001,0.00001234,123456789012345.5,1234567890123456]}"#,
            r#"[1e16,2.5e-6,1E2,1e+2,-1.5e-3,100,0.1,0.30000000000000004]"#,
            r#"{"a":1,"a":2,"b":{"c":1,"c":[3]}}"#,
            r#"{"s":"\/\u0041\u00e9\uD83D\uDE00\u001B\u001b\u000a\t"}"#,
            r#" [ true , false , null , "" , {} , [] ] "#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#"1e400"#,
            r#"-1e400"#,
            r#"1e-400"#,
            r#"01"#,
            r#"1."#,
            r#".5"#,
            r#"-"#,
            r#"[1,]"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"[1 2]"#,
            r#"tru"#,
            "\"a\u{1}b\"",
            r#""\x""#,
            r#""\u12G4""#,
            r#"{"a":1} x"#,
            "",
            " ",
        ] {
            assert_eq!(ours(t), reference(t), "{t}");
        }
        let many: String = format!(
            "{{{}}}",
            (0..100)
                .map(|i| format!(r#""k{}":{i}"#, i % 40))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(ours(&many), reference(&many));
    }

    /// Every line of every fixture, and thousands of damaged copies: the same verdict as
    /// serde_json and the same text as JSON.stringify (through the previous converters'
    /// serde_json + canonical writer path).
    #[test]
    fn agrees_with_serde_on_fixture_lines_and_damaged_copies() {
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for p in crate::fixture_files() {
            let bytes = std::fs::read(&p).unwrap();
            lines.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
        }
        assert!(lines.len() > 300, "{}", lines.len());
        let check = |l: &[u8]| {
            let ours = std::str::from_utf8(l).ok().and_then(ours);
            let theirs = serde_json::from_slice::<serde_json::Value>(l)
                .ok()
                .map(|v| {
                    let s = serde_json::to_string(&v).unwrap();
                    sessiontree::json::canonicalize(s.as_bytes()).unwrap()
                });
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(l));
        };
        let mut accepted = 0;
        for l in &lines {
            check(l);
            accepted += usize::from(serde_json::from_slice::<serde_json::Value>(l).is_ok());
        }
        assert!(accepted > 300);
        let n: usize = env::env_or("SESSIONTREE_FUZZ_N", 3000);
        let mut rng = xorshift::Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..n {
            let mut l = lines[rng.pick(lines.len())].clone();
            let times = 1 + rng.pick(3);
            rng.damage(&mut l, times);
            check(&l);
        }
    }

    #[test]
    fn nesting_deeper_than_serde_jsons_default_limit_is_refused() {
        // serde_json's default: 127 levels (the tests build it without the limit).
        for depth in [1, 100, 127, 128, 129, 10_000, 1_000_000] {
            let t = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(ours(&t).is_some(), depth <= 127, "{depth}");
            let t = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
            assert_eq!(ours(&t).is_some(), depth <= 127, "{depth}");
        }
    }

    #[test]
    fn strings_decode_and_source_text_is_kept_only_when_canonical() {
        let v = parse(r#"{"a":"x\ny","b":"\u0041","c":"plain"}"#).unwrap();
        assert_eq!(v.get("a").unwrap().as_str(), Some("x\ny"));
        assert_eq!(v.get("b").unwrap().as_str(), Some("A"));
        assert!(matches!(
            v.get("a"),
            Some(V::Str(S::Esc {
                canonical: true,
                ..
            }))
        ));
        assert!(matches!(
            v.get("b"),
            Some(V::Str(S::Esc {
                canonical: false,
                ..
            }))
        ));
        assert!(matches!(v.get("c"), Some(V::Str(S::Plain("plain")))));
        assert_eq!(v.to_json(), r#"{"a":"x\ny","b":"A","c":"plain"}"#);
        let owned = v.clone().into_owned();
        assert_eq!(owned.to_json(), v.to_json());
    }

    /// Long strings with escapes anywhere (across the 64-byte blocks the scan takes at a
    /// time, runs of backslashes included): accepted and refused as `serde_json` does, the
    /// same text, and the source text kept exactly when it is what `JSON.stringify` writes.
    #[test]
    fn long_strings_with_escapes_anywhere() {
        let good = [
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\u0041",
            "\\u001f",
            "\\u001F",
            "\\ud83d\\ude00",
            "\\t",
            "é",
            "\\\\\\\\",
        ];
        let bad = ["\\ud83d", "\\x", "\u{1}", "\\udc00"];
        let mut rng = xorshift::Rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..4000 {
            let mut inner = String::new();
            for _ in 0..rng.below(40) {
                let r = rng.next();
                // Mostly plain text, sometimes an escape, rarely a bad one.
                inner.push_str(match r % 60 {
                    0 => bad[(r >> 8) as usize % bad.len()],
                    1..=20 => good[(r >> 8) as usize % good.len()],
                    _ => &"abcdefgh"[..1 + (r >> 8) as usize % 8],
                });
            }
            let text = format!("{{\"k\":\"{inner}\"}}");
            let ours = parse(&text);
            let theirs = serde_json::from_str::<serde_json::Value>(&text);
            assert_eq!(ours.is_some(), theirs.is_ok(), "{text}");
            let (Some(ours), Ok(theirs)) = (ours, theirs) else {
                continue;
            };
            let decoded = theirs["k"].as_str().unwrap();
            assert_eq!(ours.get("k").unwrap().as_str(), Some(decoded), "{text}");
            let mut js = String::new();
            sessiontree::json::write_js_string(&mut js, decoded);
            assert_eq!(ours.to_json(), format!("{{\"k\":{js}}}"), "{text}");
            let kept = match ours.get("k") {
                Some(V::Str(S::Plain(_))) => true,
                Some(V::Str(S::Esc { canonical, .. })) => *canonical,
                other => panic!("{other:?}"),
            };
            assert_eq!(kept, js == format!("\"{inner}\""), "{text}");
        }
    }

    #[test]
    fn a_value_is_four_words() {
        assert_eq!(std::mem::size_of::<V<'_>>(), 32);
        assert_eq!(std::mem::size_of::<(S<'_>, V<'_>)>(), 64);
    }

    #[test]
    fn js_exact_numbers() {
        for (s, yes) in [
            ("0", true),
            ("-0", false),
            ("10", true),
            ("010", false),
            ("123456789012345", true),
            ("1234567890123456", false),
            ("0.5", true),
            ("0.50", false),
            ("0.000001", true),
            ("0.0000001", false),
            ("-2.25", true),
            ("1e5", false),
        ] {
            assert_eq!(js_exact(s), yes, "{s}");
        }
    }
}
