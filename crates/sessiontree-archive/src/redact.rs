//! Redaction before anything leaves the machine: one list of redactors, applied by push to
//! every value it sends (the bytes, and the session id, cwd, header time, path under
//! `sessions/`, listing info and machine name that go with them).
//!
//! A redactor replaces what it hides with `[REDACTED]`. `push --redact REGEX` adds one per
//! pattern; other kinds (a secrets scanner) implement [`Redactor`] and are added with
//! [`Redaction::with`]. The archive records only *that* a version is redacted, never what
//! was looked for: a digest of the patterns would let anyone who reads the version confirm
//! a guessed secret offline.

use std::sync::Arc;

/// The text put where something was hidden.
pub const MARK: &[u8] = b"[REDACTED]";

/// One way of finding what must not leave the machine.
pub trait Redactor: Send + Sync {
    /// `text` with what this redactor hides replaced by [`MARK`], or `None` when it hides
    /// nothing there.
    fn apply(&self, text: &[u8]) -> Option<Vec<u8>>;
    /// Names this redactor in the local push state (never sent): when the redactors
    /// change, every file is compared with the archive again.
    fn key(&self) -> String;
}

impl Redactor for regex::bytes::Regex {
    fn apply(&self, text: &[u8]) -> Option<Vec<u8>> {
        self.is_match(text)
            .then(|| self.replace_all(text, MARK).into_owned())
    }

    fn key(&self) -> String {
        format!("regex:{}", self.as_str())
    }
}

/// The redactors of a push, in order (empty: the archive gets the exact bytes).
#[derive(Clone, Default)]
pub struct Redaction {
    list: Vec<Arc<dyn Redactor>>,
}

impl std::fmt::Debug for Redaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|r| r.key()))
            .finish()
    }
}

impl From<Vec<regex::bytes::Regex>> for Redaction {
    fn from(patterns: Vec<regex::bytes::Regex>) -> Redaction {
        let mut r = Redaction::default();
        for p in patterns {
            r.list.push(Arc::new(p));
        }
        r
    }
}

impl Redaction {
    /// Adds a redactor (applied after the ones before it).
    pub fn with(mut self, r: Arc<dyn Redactor>) -> Redaction {
        self.list.push(r);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// What the local state records for these redactors ("" when none). Local only.
    pub fn local_key(&self) -> String {
        if self.list.is_empty() {
            return String::new();
        }
        let keys: Vec<String> = self.list.iter().map(|r| r.key()).collect();
        format!(
            "sha256:{}",
            crate::hex(&crate::sha256(keys.join("\0").as_bytes()))
        )
    }

    /// Every redactor over raw bytes; whether one of them changed something.
    fn raw(&self, b: &[u8]) -> (Vec<u8>, bool) {
        let mut out = b.to_vec();
        let mut changed = false;
        for r in &self.list {
            if let Some(x) = r.apply(&out) {
                out = x;
                changed = true;
            }
        }
        (out, changed)
    }

    /// A value that goes with the bytes (id, cwd, path, name), redacted.
    pub fn text(&self, s: &str) -> String {
        if self.list.is_empty() {
            return s.to_string();
        }
        match self.raw(s.as_bytes()) {
            (b, true) => String::from_utf8_lossy(&b).into_owned(),
            _ => s.to_string(),
        }
    }

    /// Complete lines (`bytes` ends with `\n` or is empty), redacted line by line. A line
    /// that no longer parses after a raw replacement (the match crossed JSON syntax) is
    /// redacted inside its string values instead; one that did not parse before stays
    /// raw-redacted.
    pub fn lines(&self, bytes: &[u8]) -> Vec<u8> {
        if self.list.is_empty() {
            return bytes.to_vec();
        }
        let mut out = Vec::with_capacity(bytes.len());
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let (mut l, changed) = self.raw(line);
            if changed && serde_json::from_slice::<serde_json::Value>(l.trim_ascii_end()).is_err() {
                if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(line) {
                    self.value(&mut v);
                    l = serde_json::to_vec(&v).unwrap_or_default();
                    l.push(b'\n');
                }
            }
            out.extend_from_slice(&l);
        }
        out
    }

    fn value(&self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => *s = self.text(s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| self.value(x)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(p: &str) -> Redaction {
        vec![regex::bytes::Regex::new(p).unwrap()].into()
    }

    #[test]
    fn lines_stay_json_and_values_are_redacted_alike() {
        let red = r("sk-[0-9]+");
        let out = red.lines(b"{\"a\":\"x sk-123 y\"}\n{\"b\":1}\n");
        assert_eq!(out, b"{\"a\":\"x [REDACTED] y\"}\n{\"b\":1}\n");
        // A match across JSON syntax is redacted inside the strings instead.
        let red = r("1\",\"b");
        let out = red.lines(b"{\"a\":\"1\",\"b\":\"1\\\",\\\"b\"}\n");
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["b"], "[REDACTED]");
        assert_eq!(r("secret").text("/home/secret/p"), "/home/[REDACTED]/p");
        assert_eq!(Redaction::default().text("secret"), "secret");
    }

    #[test]
    fn the_local_key_changes_with_the_redactors_and_is_empty_without() {
        assert_eq!(Redaction::default().local_key(), "");
        assert_ne!(r("a").local_key(), r("b").local_key());
        assert!(r("a").local_key().starts_with("sha256:"));
    }
}
