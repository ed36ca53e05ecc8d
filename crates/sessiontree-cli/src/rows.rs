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

/// Display width of a string (East Asian wide characters count 2).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Whitespace folded to single spaces, control characters and bidi overrides shown as
/// visible escapes ([`crate::safe`]), cut to `cols` display columns (an ellipsis marks a
/// cut).
pub fn fit(s: &str, cols: usize) -> String {
    let mut out = String::new();
    let mut w = 0usize;
    let mut space = false;
    // Each character is escaped as it is reached (whitespace controls, newline and tab,
    // fold into spaces below; the others are escaped), so a long text costs only as much
    // as the part that is shown.
    let mut shown = String::new();
    for orig in s.chars() {
        shown.clear();
        if crate::safe::is_unsafe(orig) && !orig.is_whitespace() {
            crate::safe::push_escaped(&mut shown, orig);
        } else {
            shown.push(orig);
        }
        for c in shown.chars() {
            let c = if c.is_whitespace() { ' ' } else { c };
            if c == ' ' {
                if out.is_empty() || space {
                    continue;
                }
                space = true;
            } else {
                space = false;
            }
            let cw = UnicodeWidthChar::width(c).unwrap_or(0);
            if w + cw > cols {
                // Make room for the ellipsis.
                while w + 1 > cols {
                    match out.pop() {
                        Some(p) => w -= UnicodeWidthChar::width(p).unwrap_or(0),
                        None => return out,
                    }
                }
                out.push('…');
                return out;
            }
            out.push(c);
            w += cw;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
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
    out
}
