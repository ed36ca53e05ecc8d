//! Building pages: markup is only ever a `&'static str` written by this crate; everything
//! else goes in through [`Html::text`] (redacted, then escaped) or [`Html::path_part`]
//! (percent-encoded for a URL, then escaped).

use crate::Redactor;

/// Escapes `s` for HTML text and quoted attribute values.
pub fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            // NUL becomes U+FFFD in a browser anyway; say so ourselves.
            0 => "\u{fffd}",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// Percent-encodes every byte outside `A-Z a-z 0-9 - _ . ~` (one URL path segment or
/// query value).
pub fn url_part_into(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A page being written.
pub struct Html<'r> {
    out: String,
    redact: &'r Redactor,
}

impl<'r> Html<'r> {
    /// An empty page that redacts with `redact`.
    pub fn new(redact: &'r Redactor) -> Html<'r> {
        Html {
            out: String::with_capacity(16 * 1024),
            redact,
        }
    }

    /// Markup written by this crate.
    pub fn raw(&mut self, s: &'static str) -> &mut Self {
        self.out.push_str(s);
        self
    }

    /// Text from a session (or a request): redacted, then escaped.
    pub fn text(&mut self, s: &str) -> &mut Self {
        let r = (self.redact)(s);
        escape_into(&mut self.out, &r);
        self
    }

    /// Text that is not from a session (numbers, dates, our own words): escaped only.
    pub fn plain(&mut self, s: &str) -> &mut Self {
        escape_into(&mut self.out, s);
        self
    }

    /// A number.
    pub fn num(&mut self, n: u64) -> &mut Self {
        self.out.push_str(&n.to_string());
        self
    }

    /// One URL path segment or query value (an id, a query), percent-encoded (and so safe
    /// inside a quoted attribute).
    pub fn path_part(&mut self, s: &str) -> &mut Self {
        url_part_into(&mut self.out, s);
        self
    }

    /// The redactor (for text that must be redacted as a whole before it is cut up).
    pub fn redactor(&self) -> &'r Redactor {
        self.redact
    }

    /// The page written so far.
    pub fn finish(self) -> String {
        self.out
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Nothing written yet.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::sync::Arc;

    #[test]
    fn text_is_redacted_then_escaped() {
        let r: Redactor = Arc::new(|s: &str| {
            if s.contains("sk-live") {
                Cow::Owned(s.replace("sk-live", "[redacted]"))
            } else {
                Cow::Borrowed(s)
            }
        });
        let mut h = Html::new(&r);
        h.raw("<p>")
            .text("<script>alert('x')</script> & \"sk-live\"\0")
            .raw("</p><a href=\"/s/")
            .path_part("a\"b/../c d")
            .raw("\">");
        assert_eq!(
            h.finish(),
            "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;[redacted]&quot;\u{fffd}</p><a href=\"/s/a%22b%2F..%2Fc%20d\">"
        );
    }
}
