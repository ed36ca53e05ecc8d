//! What a tool gives back: compact text for the model plus the same facts as structured
//! JSON, both redacted, both bounded.

use serde_json::Value;
use std::borrow::Cow;

/// Removes credentials from text before it leaves the server. The server applies it to
/// every piece of text it sends (see [`Answer::finish`]); it must be idempotent (applying
/// it to its own output changes nothing), which any rule that replaces a secret by a
/// marker the rule does not match is.
pub trait Redact: Send + Sync {
    /// `text` without its credentials (borrowed when there were none).
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
}

/// A closure as a redactor: `Some(new text)` when something was removed.
impl<F> Redact for F
where
    F: Fn(&str) -> Option<String> + Send + Sync,
{
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self(text) {
            Some(s) => Cow::Owned(s),
            None => Cow::Borrowed(text),
        }
    }
}

/// Regular expressions whose matches become `[redacted]`.
pub struct Patterns(Vec<regex::Regex>);

impl Patterns {
    /// Compiles `patterns` (Rust `regex` syntax); the error names the one that fails.
    pub fn new(patterns: &[String]) -> Result<Patterns, String> {
        patterns
            .iter()
            .map(|p| {
                regex::Regex::new(p)
                    .map_err(|e| format!("--redact {p:?} is not a regular expression: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Patterns)
    }
}

/// What every redaction leaves where a secret was.
pub const REDACTED: &str = "[redacted]";

impl Redact for Patterns {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for re in &self.0 {
            if let Cow::Owned(s) = re.replace_all(&out, REDACTED) {
                out = Cow::Owned(s);
            }
        }
        out
    }
}

/// Several redactors, one after the other.
pub struct Chain(pub Vec<Box<dyn Redact>>);

impl Redact for Chain {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for r in &self.0 {
            if let Cow::Owned(s) = r.redact(&out) {
                out = Cow::Owned(s);
            }
        }
        out
    }
}

/// One tool's answer before it is sent.
pub struct Answer {
    /// What the model reads first: the answer, then the details, compact.
    pub text: String,
    /// The same facts as JSON (`structuredContent`).
    pub structured: Value,
}

impl Answer {
    /// Runs every string of the answer (the text, every string value and key of the JSON)
    /// through `r`. Pieces that were cut to fit the budget were redacted whole before the
    /// cut (so that a cut never splits a secret into parts a rule no longer recognises);
    /// this pass covers everything else.
    pub fn finish(mut self, r: &dyn Redact) -> Answer {
        if let Cow::Owned(s) = r.redact(&self.text) {
            self.text = s;
        }
        redact_value(&mut self.structured, r);
        self
    }
}

/// Every string inside `v` (keys included) through `r`, iteratively.
pub fn redact_value(v: &mut Value, r: &dyn Redact) {
    let mut stack: Vec<&mut Value> = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Cow::Owned(n) = r.redact(s) {
                    *s = n;
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(m) => {
                if m.keys().any(|k| matches!(r.redact(k), Cow::Owned(_))) {
                    let old = std::mem::take(m);
                    for (k, val) in old {
                        m.insert(r.redact(&k).into_owned(), val);
                    }
                }
                stack.extend(m.values_mut());
            }
            _ => {}
        }
    }
}

/// `s` on one line: newlines, tabs and other control characters as spaces, runs of
/// spaces as one, at most `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut space = false;
    let mut n = 0;
    for c in s.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' {
            if space || out.is_empty() {
                continue;
            }
            space = true;
        } else {
            space = false;
        }
        if n == max {
            out.push('…');
            return out.trim_end().to_string();
        }
        out.push(c);
        n += 1;
    }
    out.trim_end().to_string()
}

/// The part of `s` from character `from` on that fits in `room` characters: the piece, and
/// the character offset where the next piece starts (`None` when `s` ended). Cuts after a
/// newline or a space near the end of the room when there is one, so that words stay whole.
pub fn piece(s: &str, from: usize, room: usize) -> (&str, Option<usize>) {
    let start = byte_at(s, from);
    let rest = &s[start..];
    let Some((end, _)) = rest.char_indices().nth(room) else {
        return (rest, None);
    };
    // Prefer a line break, then a space, in the last fifth of the room.
    let window = &rest[..end];
    let min = byte_at(window, room - room / 5);
    let cut = window[min..]
        .rfind('\n')
        .or_else(|| window[min..].rfind(' '))
        .map(|i| min + i + 1)
        .unwrap_or(end);
    let taken = &rest[..cut];
    (taken, Some(from + taken.chars().count()))
}

/// The byte offset of character `n` of `s` (its length when `s` is shorter).
fn byte_at(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map(|(i, _)| i).unwrap_or(s.len())
}

/// Characters in `s`.
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text_once() {
        let s = "alpha beta\ngamma délta epsilon zeta eta theta iota kappa lambda mu";
        let mut at = 0;
        let mut joined = String::new();
        loop {
            let (p, next) = piece(s, at, 12);
            assert!(chars(p) <= 12, "{p:?}");
            joined.push_str(p);
            match next {
                Some(n) => {
                    assert!(n > at);
                    at = n
                }
                None => break,
            }
        }
        assert_eq!(joined, s);
        // Past the end: nothing, and done.
        assert_eq!(piece(s, 10_000, 5), ("", None));
    }

    #[test]
    fn redaction_reaches_every_string() {
        let p = Patterns::new(&["S3CRET-[a-z]+".into()]).unwrap();
        let mut v =
            serde_json::json!({"a": ["x S3CRET-abc y", {"S3CRET-key": 1, "n": "S3CRET-q"}]});
        redact_value(&mut v, &p);
        let s = v.to_string();
        assert!(!s.contains("S3CRET"), "{s}");
        assert_eq!(s.matches(REDACTED).count(), 3);
        assert!(Patterns::new(&["(".into()]).is_err());
    }

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a\n\tb   c\u{1b}[31m", 100), "a b c [31m");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
