//! Escapes that `JSON.stringify` would not write (`\u0041`, `\/`): the text behind them
//! does not stand in the file as it reads, so a literal search of the raw bytes can miss
//! it. [`crate::search`] treats their lines as candidates; [`crate::summary`] marks files
//! that hold any.

/// Where `buf` holds an escape `JSON.stringify` would not write: a `\u` escape other than
/// a control character's, or `\/` (neither preceded by an escaping backslash). The `\u`
/// ones come first, then the `\/` ones, each in order.
pub(crate) fn unusual(buf: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let u = memchr::memmem::find_iter(buf, b"\\u")
        .filter(|&at| !canonical_u(&buf[at..]) && !escaped_backslash(buf, at));
    let slash = memchr::memmem::find_iter(buf, b"\\/").filter(|&at| !escaped_backslash(buf, at));
    u.chain(slash)
}

/// `\u00XX` with XX < 0x20: how JSON.stringify writes a control character.
fn canonical_u(b: &[u8]) -> bool {
    b.len() >= 6 && &b[2..4] == b"00" && matches!(b[4], b'0' | b'1') && b[5].is_ascii_hexdigit()
}

/// Whether the backslash at `at` is itself escaped (preceded by an odd run of `\`).
fn escaped_backslash(buf: &[u8], at: usize) -> bool {
    let run = buf[..at].iter().rev().take_while(|&&c| c == b'\\').count();
    run % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::unusual;

    #[test]
    fn finds_the_escapes_json_stringify_would_not_write() {
        let at = |s: &str| unusual(s.as_bytes()).collect::<Vec<_>>();
        // Control characters as JSON.stringify writes them, and escaped backslashes: none.
        assert_eq!(at(r#""a\u001fb\n\\u0041\\/""#), Vec::<usize>::new());
        // `\u0041`, `\u00e9`, `\/`: each found, `\u` ones first.
        assert_eq!(at(r#""\/x\u0041\u00e9""#), vec![4, 10, 1]);
        // A backslash run of three escapes the third: `\\` then `\u0041`.
        assert_eq!(at(r#"\\\u0041"#), vec![2]);
        // Cut short at the end of the buffer: not the canonical form, so unusual.
        assert_eq!(at(r"\u00"), vec![0]);
    }
}
