//! The checks that turn a pattern match into a finding: entropy, GitHub's checksum, a JWT's
//! header, a PEM block's extent, and the tests that tell a placeholder or a piece of code
//! from a value.

use std::ops::Range;

/// The largest char boundary of `text` at or below `i`.
pub(crate) fn floor(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Shannon entropy of the bytes, in bits per byte.
pub(crate) fn entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Text that documentation and examples put where a credential goes.
pub(crate) fn placeholder(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "xxxx",
        "****",
        "....",
        "example",
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "your_",
        "your-",
        "yourkey",
        "redacted",
        "dummy",
        "sample",
        "<",
        ">",
        "${",
        "{{",
        "%(",
        "$(",
        "fake",
        "notreal",
        "not_real",
        "0000000000",
        "1234567890",
        "abcdefgh",
    ];
    WORDS.iter().any(|w| l.contains(w))
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// `n` in base 62 (digits, upper, lower), left-padded with `0` to `width`.
pub(crate) fn base62(mut n: u32, width: usize) -> String {
    let mut digits = Vec::new();
    while n > 0 {
        digits.push(BASE62[(n % 62) as usize]);
        n /= 62;
    }
    while digits.len() < width {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// A `ghX_` token (4 + 36 characters) whose last six characters are the base62 CRC32 of
/// the 30 before them: real tokens always are; made-up ones almost never.
pub(crate) fn github_checksum(token: &str) -> bool {
    let b = token.as_bytes();
    if b.len() != 40 {
        return false;
    }
    base62(crc32(&b[4..34]), 6).as_bytes() == &b[34..]
}

/// Base64url (or standard base64) without padding, decoded; `None` on a bad character.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// A JWT: its header is a JSON object naming a signing algorithm other than `none`.
pub(crate) fn jwt(token: &str) -> bool {
    let Some(header) = token.split('.').next() else {
        return false;
    };
    if header.len() > 2048 {
        return false;
    }
    let Some(h) = base64_decode(header) else {
        return false;
    };
    let Ok(h) = std::str::from_utf8(&h) else {
        return false;
    };
    let h = h.trim();
    h.starts_with('{') && h.contains("\"alg\"") && !h.replace(' ', "").contains("\"alg\":\"none\"")
}

/// The extent of a private key block whose BEGIN line is `begin`: up to its END line, or,
/// when the text was cut before it, over the base64 lines that follow. The body must hold
/// at least 64 base64 characters (a key), so code that only names the marker is not one.
pub(crate) fn pem_block(text: &str, begin: Range<usize>) -> Option<Range<usize>> {
    let rest = &text[begin.end..];
    // The block ends before the next BEGIN line and within 64 KiB: each search is bounded
    // by the next marker, so many markers cost linear time.
    let mut limit = floor(rest, 64 * 1024);
    if let Some(next) = memchr::memmem::find(&rest.as_bytes()[..limit], b"-----BEGIN") {
        limit = next;
    }
    let rest = &rest[..limit];
    let window = rest;
    let (body, end) = match window.find("-----END") {
        Some(e) => {
            let after = &window[e + 8..];
            let close = after.find("-----").filter(|&c| c <= 40)?;
            (&window[..e], begin.end + e + 8 + close + 5)
        }
        None => {
            // Cut off: base64, whitespace and `\n` escapes (a key inside a JSON string).
            let b = rest.as_bytes();
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    b'\\' if matches!(b.get(i + 1), Some(b'n' | b'r')) => i += 2,
                    c if c.is_ascii_alphanumeric() || b"+/= \t\r\n".contains(&c) => i += 1,
                    _ => break,
                }
            }
            (&rest[..i], begin.end + i)
        }
    };
    let b64 = body
        .bytes()
        .filter(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
        .count();
    let other = body
        .bytes()
        .filter(|c| !(c.is_ascii_alphanumeric() || b"+/=\\ \t\r\n".contains(c)))
        .count();
    (b64 >= 64 && other * 10 <= b64).then_some(begin.start..end)
}

/// A URL's password that is a credential, not a placeholder or a variable.
pub(crate) fn url_password(user: &str, pw: &str) -> bool {
    const WORDS: &[&str] = &[
        "password", "pass", "passwd", "pwd", "pw", "secret", "user", "username", "token",
    ];
    let l = pw.to_ascii_lowercase();
    !(pw.len() < 3
        || pw == user
        || WORDS.contains(&l.as_str())
        || pw.starts_with(['$', '%', '{', '<', ':', '*'])
        || placeholder(pw)
        || pw.bytes().all(|c| c == b'x' || c == b'X' || c == b'*'))
}

/// The value of a `password=` / `secret:` assignment: high entropy, and neither a
/// placeholder, a reference to somewhere else (a variable, a path, a URL, a call, a
/// dotted name) nor a word.
pub(crate) fn assigned_value(v: &str, after: Option<char>) -> bool {
    if v.len() < 8 || after == Some('(') || after == Some('.') || placeholder(v) {
        return false;
    }
    let l = v.to_ascii_lowercase();
    if v.starts_with([
        '/', '~', '.', '$', '%', '@', '&', '*', '#', '-', '=', '+', ':',
    ]) || l.starts_with("arn:")
        || l.contains("://")
        || l.contains("env")
        || l.starts_with("get")
        || l.starts_with("true")
        || l.starts_with("false")
        || l.starts_with("null")
        || l.starts_with("none")
        || l.starts_with("undefined")
    {
        return false;
    }
    // A dotted or namespaced name (`settings.SECRET_KEY`, `config::Secret`).
    let ident = |p: &str| {
        !p.is_empty()
            && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && !p.as_bytes()[0].is_ascii_digit()
    };
    if (v.contains('.') && v.split('.').all(ident))
        || (v.contains("::") && v.split("::").all(ident))
    {
        return false;
    }
    // A uuid is an id.
    if v.len() == 36
        && v.bytes().enumerate().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
    {
        return false;
    }
    let lower = v.bytes().any(|c| c.is_ascii_lowercase());
    let upper = v.bytes().any(|c| c.is_ascii_uppercase());
    let digit = v.bytes().any(|c| c.is_ascii_digit());
    let symbol = v.bytes().any(|c| !c.is_ascii_alphanumeric());
    let classes = [lower, upper, digit, symbol].iter().filter(|&&x| x).count();
    // An identifier (`my_secret_name`, `SECRET_KEY_BASE`, `getSecret`) has no digits.
    if !digit {
        return false;
    }
    if classes < 2 {
        return false;
    }
    let e = entropy(v);
    if classes >= 3 {
        e >= 3.0
    } else {
        v.len() >= 16 && e >= 3.3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_and_base62_are_the_standard_ones() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(base62(0, 6), "000000");
        assert_eq!(base62(61, 2), "0z");
        assert_eq!(base62(62, 1), "10");
    }

    #[test]
    fn entropy_of_uniform_text() {
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("abcd") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn assignment_values() {
        assert!(assigned_value("hX9#kq2LmP0zR", None));
        assert!(assigned_value("a8f3c91d04be7e6f5a2c", None));
        assert!(!assigned_value("my_secret_name", None));
        assert!(!assigned_value("settings.SECRET_KEY", None));
        assert!(!assigned_value("process.env.API_KEY", None));
        assert!(!assigned_value("${DB_PASSWORD}", None));
        assert!(!assigned_value("get_secret", Some('(')));
        assert!(!assigned_value(
            "3f2b8c4e-1d2a-4b3c-9e8f-0a1b2c3d4e5f",
            None
        ));
        assert!(!assigned_value("/home/user/.ssh", None));
    }
}
