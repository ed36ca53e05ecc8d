//! The tree's rows: every entry once, in display order, indented only where the tree forks
//! (a chain of single children stays in one column, as Pi's `/tree` draws it), with the
//! indentation bounded so that deep branches keep room for their text.
//!
//! Used by `sessiontree browse`, by `sessiontree tree` and (the text fitting) by `ls`.
//! The layout itself (rows, levels, prefixes) is `sessiontree_export::layout`, shared with `sessiontree serve`; what is
//! terminal-specific (display widths, cutting to columns) is here.

pub use sessiontree_export::layout::{index_of, on_path, Layout, NONE, STEP};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The indentation budget for a line of `width` columns: a quarter of it, at least two
/// levels.
pub fn indent_budget(width: usize) -> usize {
    (width / 4).max(2 * STEP)
}

/// A time (ms since the epoch) to the minute, `YYYY-MM-DD HH:MM`, appended to `out`; `-`
/// when it is no date.
pub fn push_minute(out: &mut String, ms: f64) {
    if ms.is_finite() && ms.abs() <= 8.64e15 {
        let start = out.len();
        sessiontree::date::write_iso_from_ms(ms as i64, out);
        // `...THH:MM:SS.mmmZ`: the `T` a space, the seconds off (the text is ASCII).
        out.replace_range(start + 10..start + 11, " ");
        out.truncate(start + 16);
    } else {
        out.push('-');
    }
}

/// [`push_minute`] as a string of its own.
pub fn minute(ms: f64) -> String {
    let mut s = String::with_capacity(16);
    push_minute(&mut s, ms);
    s
}

/// Display width of a string (East Asian wide characters count 2).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Whitespace folded to single spaces, control characters and bidi overrides shown as
/// visible escapes ([`crate::safe`]), cut to `cols` display columns (an ellipsis marks a
/// cut).
pub fn fit(s: &str, cols: usize) -> String {
    let mut out = String::with_capacity(s.len().min(cols.saturating_add(8)));
    fit_into(&mut out, s, cols);
    out
}

/// [`fit`] into `out` (cleared first), a buffer the caller reuses row after row; gives
/// the columns the text takes (its [`width`]).
pub fn fit_into(out: &mut String, s: &str, cols: usize) -> usize {
    fit_chars_into(out, s, cols);
    settle(out, cols)
}

/// Cuts `out` again when it is wider as a string than its characters counted one by one
/// (`1` and U+FE0F are a column each, `1\u{fe0f}` two; terminals and the table's padding
/// measure the string): the longest head that fits with an ellipsis, which marks the cut.
/// Gives the columns `out` takes then. Printable ASCII, with or without the ellipsis, is a
/// column a character, so it is not measured.
fn settle(out: &mut String, cols: usize) -> usize {
    let body = out.strip_suffix('…').unwrap_or(out);
    if body.is_ascii() {
        return body.len() + usize::from(body.len() < out.len());
    }
    let w = width(out);
    if w <= cols {
        return w;
    }
    let body = out.strip_suffix('…').unwrap_or(out);
    let ends: Vec<usize> = body.char_indices().map(|(i, _)| i).collect();
    // A head's width grows with its length (a character never narrows what is before it),
    // so the longest that fits beside the ellipsis is found by halving.
    let fits = |k: usize| width(&body[..ends[k]]) < cols;
    let (mut lo, mut hi) = (0, ends.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    out.truncate(ends.get(lo).copied().unwrap_or(0));
    if width(out) >= cols {
        // (Should a head ever narrow, nothing is shown rather than too much.)
        out.clear();
    }
    if cols > 0 {
        out.push('…');
    }
    width(out)
}

/// [`fit_into`] with each character measured alone.
fn fit_chars_into(out: &mut String, s: &str, cols: usize) {
    out.clear();
    let mut f = Fit {
        out,
        w: 0,
        space: false,
        cols,
    };
    let b = s.as_bytes();
    // The head that is printable ASCII with single spaces inside (most of any title) is
    // what it shows, one column a byte: copied at once, as far as it fits.
    // (Checked 16 bytes at a time without a branch per byte: a byte at a time, the branch
    // on every space was a fifth of a warm `ls`. A leading space counts as doubled.)
    let lim = b.len().min(cols);
    let stops = |c: u8, after_space: bool| !(0x20..0x7f).contains(&c) || (c == b' ' && after_space);
    let mut i = 0;
    let mut after_space = true;
    'head: for chunk in b[..lim].chunks(16) {
        let (mut bad, mut p) = (false, after_space);
        for &c in chunk {
            bad |= stops(c, p);
            p = c == b' ';
        }
        if bad {
            for &c in chunk {
                if stops(c, after_space) {
                    break 'head;
                }
                after_space = c == b' ';
                i += 1;
            }
            // (Not reached: the same test found a stop in this chunk.)
            break 'head;
        }
        after_space = p;
        i += chunk.len();
    }
    if i > 0 {
        // (A space it ends with is written only before what follows it.)
        f.space = b[i - 1] == b' ';
        let head = i - f.space as usize;
        f.out.push_str(&s[..head]);
        f.w = head;
    }
    // Then each character is escaped as it is reached (whitespace controls, newline and
    // tab, fold into spaces below; the others are escaped), so a long text costs only as
    // much as the part that is shown. Printable ASCII is one column each and never
    // escaped: a run of it without spaces is copied at once, as far as it fits.
    let mut shown = String::new();
    while i < b.len() {
        let c = b[i];
        if (0x21..0x7f).contains(&c) {
            let room = f.cols.saturating_sub(f.w + f.space as usize);
            let run = b[i..]
                .iter()
                .take(room.saturating_add(1))
                .take_while(|c| (0x21..0x7f).contains(*c))
                .count();
            let take = run.min(room);
            if take > 0 {
                if f.space {
                    f.out.push(' ');
                    f.w += 1;
                }
                f.out.push_str(&s[i..i + take]);
                f.w += take;
                f.space = false;
                i += take;
            }
            if take < run {
                // The next one does not fit: cut here.
                f.push(b[i] as char, 1);
                return;
            }
            continue;
        }
        if c == b' ' {
            i += 1;
            if !f.push(' ', 1) {
                return;
            }
            continue;
        }
        let orig = s[i..].chars().next().expect("a char starts here");
        i += orig.len_utf8();
        if !f.push_any(orig, &mut shown) {
            return;
        }
    }
}

/// [`fit`]'s output as it grows.
struct Fit<'a> {
    out: &'a mut String,
    /// Columns used.
    w: usize,
    /// A (folded) space was pushed last: it is written before the next character, and
    /// never at the end, so a text that ends with spaces is not cut for them.
    space: bool,
    cols: usize,
}

impl Fit<'_> {
    /// Adds any character: escaped when unsafe, whitespace folded; false once cut.
    /// (`shown`: scratch for the escaped form.)
    fn push_any(&mut self, orig: char, shown: &mut String) -> bool {
        shown.clear();
        if crate::safe::is_unsafe(orig) && !orig.is_whitespace() {
            crate::safe::push_escaped(shown, orig);
        } else {
            shown.push(orig);
        }
        for c in shown.chars() {
            let c = if c.is_whitespace() { ' ' } else { c };
            if !self.push(c, UnicodeWidthChar::width(c).unwrap_or(0)) {
                return false;
            }
        }
        true
    }

    /// Adds `c` (`cw` columns wide; whitespace already folded to ' '); false once the text
    /// is cut (the ellipsis written).
    #[inline]
    fn push(&mut self, c: char, cw: usize) -> bool {
        if c == ' ' {
            self.space |= !self.out.is_empty();
            return true;
        }
        if self.w + self.space as usize + cw > self.cols {
            // Make room for the ellipsis.
            while self.w + 1 > self.cols {
                match self.out.pop() {
                    Some(p) => self.w -= UnicodeWidthChar::width(p).unwrap_or(0),
                    None => return false,
                }
            }
            self.out.push('…');
            return false;
        }
        if std::mem::take(&mut self.space) {
            self.out.push(' ');
            self.w += 1;
        }
        self.out.push(c);
        self.w += cw;
        true
    }
}

/// One line of code or output: tabs as four spaces, indentation kept, other control
/// characters and bidi overrides shown as visible escapes ([`crate::safe`]), cut to `cols`
/// display columns (an ellipsis marks a cut).
pub fn cut(s: &str, cols: usize) -> String {
    let expanded: String = s.trim_end().replace('\t', "    ");
    let expanded = crate::safe::line(&expanded).into_owned();
    if width(&expanded) <= cols {
        return expanded;
    }
    let mut out = String::new();
    let mut w = 0;
    for c in expanded.chars() {
        let cw = UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > cols {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    settle(&mut out, cols);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `fit` did before its printable-ASCII path: every character through the
    /// escaping and the width table.
    fn fit_by_chars(s: &str, cols: usize) -> String {
        let mut out = String::new();
        let mut f = Fit {
            out: &mut out,
            w: 0,
            space: false,
            cols,
        };
        let mut shown = String::new();
        for orig in s.chars() {
            if !f.push_any(orig, &mut shown) {
                settle(&mut out, cols);
                return out;
            }
        }
        if f.out.ends_with(' ') {
            f.out.pop();
        }
        settle(&mut out, cols);
        out
    }

    #[test]
    fn the_ascii_path_fits_as_every_character_did() {
        let pieces = [
            "a",
            "Z",
            "~",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\x1b[31m",
            "\x7f",
            "\u{85}",
            "\u{a0}",
            "\u{2003}",
            "\u{202e}",
            "\u{2067}",
            "é",
            "e\u{301}",
            "日本",
            "😀",
            "\u{200b}",
            "\u{fe0f}",
            "…",
            "\\",
            "\"",
            "abcdefghij",
            "x.y/z-q",
            "日",
            // Sequences wider or narrower than their characters.
            "1",
            "#",
            "\u{2764}",
            "\u{200d}",
            "\u{1f468}",
            "\u{644}",
            "\u{627}",
        ];
        let mut rng = sessiontree_testkit::rng::Rng(0x05ee_df17);
        for _ in 0..20_000 {
            let n = rng.pick(12);
            let s: String = (0..n).map(|_| pieces[rng.pick(pieces.len())]).collect();
            // (Narrow, and past the 16 bytes the head is checked in.)
            let widest = if rng.pick(2) == 0 { 14 } else { 70 };
            let cols = rng.pick(widest);
            assert_eq!(fit(&s, cols), fit_by_chars(&s, cols), "{s:?} in {cols}");
            assert!(width(&fit(&s, cols)) <= cols, "{s:?} in {cols}");
            // Into a reused buffer: the same text, and the columns it takes.
            let mut reused = String::from("left over");
            let w = fit_into(&mut reused, &s, cols);
            assert_eq!(w, width(&reused), "{s:?} in {cols}");
            assert_eq!(reused, fit(&s, cols), "{s:?} in {cols}");
        }
        assert_eq!(fit("  lead and  trail  ", 40), "lead and trail");
        assert_eq!(fit("abc\x1bdef", 40), "abc\\x1bdef");
        assert_eq!(fit("abcdef", 0), "");
        // Spaces at the end are dropped, never a reason to cut.
        assert_eq!(fit("abc ", 3), "abc");
        assert_eq!(fit("fix bug \n\t", 7), "fix bug");
        assert_eq!(fit("日本 ", 4), "日本");
    }

    /// A string is as wide as a terminal draws it and the table pads it: `1` and U+FE0F
    /// are two columns together, a family joined by U+200D two in all.
    #[test]
    fn sequences_are_fitted_by_the_width_of_the_string() {
        assert_eq!(width("1\u{fe0f}"), 2);
        assert_eq!(fit("1\u{fe0f}", 2), "1\u{fe0f}");
        assert_eq!(fit("1\u{fe0f}", 1), "…");
        assert_eq!(fit("ab1\u{fe0f}", 3), "ab…");
        assert_eq!(fit("ab1\u{fe0f}c", 4), "ab1…");
        assert_eq!(cut("ab1\u{fe0f}cd", 4), "ab1…");
        assert_eq!(
            fit("\u{2764}\u{fe0f}\u{2764}\u{fe0f}", 3),
            "\u{2764}\u{fe0f}…"
        );
        // (Narrower sequences are measured a character at a time while fitting: a family
        // of three needs the six columns of its three faces, and is then two wide.)
        let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
        assert_eq!(fit(family, 6), family);
        assert_eq!(width(&fit(family, 6)), 2);
        let mut rng = sessiontree_testkit::rng::Rng(0xfe0f);
        let pieces = [
            "1",
            "\u{fe0f}",
            "a",
            "\u{200d}",
            "\u{1f468}",
            "日",
            " ",
            "\u{301}",
        ];
        for _ in 0..20_000 {
            let s: String = (0..rng.pick(20))
                .map(|_| pieces[rng.pick(pieces.len())])
                .collect();
            let cols = rng.pick(16);
            let f = fit(&s, cols);
            assert!(width(&f) <= cols, "{s:?} in {cols}: {f:?}");
            assert_eq!(
                fit_into(&mut String::new(), &s, cols),
                width(&f),
                "{s:?} in {cols}"
            );
            assert!(width(&cut(&s, cols)) <= cols.max(1), "{s:?} in {cols}");
            let t = s.trim();
            let by_chars: usize = t.chars().map(|c| c.width().unwrap_or(0)).sum();
            if by_chars.max(width(t)) <= cols && !s.contains("  ") {
                assert_eq!(f, t, "{s:?} in {cols}");
            }
        }
    }
}
