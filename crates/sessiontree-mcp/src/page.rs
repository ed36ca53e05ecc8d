//! The cursor of `search_sessions` and `list_sessions`: where the next page starts in an
//! order of newest first (items without a time last), kept without state on the server.
//!
//! A cursor holds the time of the last item shown and the keys (short hashes) of the
//! items shown at exactly that time, so that the next page starts after them whatever
//! order items of the same time come in and however many sessions were written since
//! (newer items are above the cursor and are not shown again). It also holds a hash of
//! the call's other arguments: a cursor passed with another query is refused.

use crate::answer::one_line;
use crate::args::{fail, ToolError};
use std::collections::HashSet;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Cursor {
    /// Items at or before this time (ms) come next; `None`: only items without a time.
    pub bound: Option<f64>,
    /// The items at exactly `bound` (or without a time) already shown.
    pub seen: HashSet<String>,
}

/// FNV-1a of the parts, as 12 hex digits: stable across runs and builds.
pub fn key(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0u8)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{:012x}", h >> 16)
}

/// A time usable for ordering (`None` for a missing or NaN one).
pub fn time(t: Option<f64>) -> Option<f64> {
    t.filter(|t| !t.is_nan())
}

/// The order of items: newest first, no time last, then by key.
pub fn order(a: (Option<f64>, &str), b: (Option<f64>, &str)) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (time(a.0), time(b.0)) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => Less,
        (None, Some(_)) => Greater,
        (None, None) => Equal,
    }
    .then_with(|| a.1.cmp(b.1))
}

impl Cursor {
    /// Whether an item of time `t` and key `k` comes after the cursor (is on a later page).
    pub fn admits(&self, t: Option<f64>, k: &str) -> bool {
        match (self.bound, time(t)) {
            (Some(b), Some(t)) => t < b || (t == b && !self.seen.contains(k)),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => !self.seen.contains(k),
        }
    }

    /// The cursor after a page that ended with the items `shown` (time, key), newest
    /// first; `prev` is the cursor the page started from.
    pub fn after(prev: Option<&Cursor>, shown: &[(Option<f64>, String)]) -> Option<Cursor> {
        let (last_t, _) = shown.last()?;
        let bound = time(*last_t);
        let mut seen: HashSet<String> = shown
            .iter()
            .filter(|(t, _)| time(*t) == bound)
            .map(|(_, k)| k.clone())
            .collect();
        if let Some(p) = prev.filter(|p| p.bound == bound) {
            seen.extend(p.seen.iter().cloned());
        }
        Some(Cursor { bound, seen })
    }

    /// As text: `TAG.ARGS.BOUND.KEY,KEY`.
    pub fn encode(&self, tag: &str, args: &str) -> String {
        let bound = match self.bound {
            Some(b) => format!("{b}"),
            None => "none".into(),
        };
        let mut seen: Vec<&str> = self.seen.iter().map(|s| s.as_str()).collect();
        seen.sort_unstable();
        format!("{tag}.{args}.{bound}.{}", seen.join(","))
    }

    /// Reads a cursor of `tool` (tag `tag`) made for the arguments hashed as `args`.
    pub fn decode(tool: &str, tag: &str, args: &str, s: &str) -> Result<Cursor, ToolError> {
        let shown = one_line(s, 60);
        let mut p = s.trim().splitn(4, '.');
        let (t, a, b, seen) = (p.next(), p.next(), p.next(), p.next());
        if t != Some(tag) || seen.is_none() {
            fail!("{tool}: cursor {shown:?} is not a cursor of {tool} (pass nextCursor back unchanged).");
        }
        if a != Some(args) {
            fail!("{tool}: cursor {shown:?} belongs to a call with other arguments (pass it with the same arguments as the call that gave it, limit aside).");
        }
        let bound = match b {
            Some("none") => None,
            Some(x) => match x.parse::<f64>() {
                Ok(v) if v.is_finite() => Some(v),
                _ => fail!("{tool}: cursor {shown:?} is damaged (pass nextCursor back unchanged)."),
            },
            None => unreachable!("checked above"),
        };
        let seen = seen
            .unwrap_or_default()
            .split(',')
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect();
        Ok(Cursor { bound, seen })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paging a list with ties (several items at one time) and items without a time, at
    /// any page size: every item once, in order.
    #[test]
    fn pages_cover_every_item_once() {
        let mut items: Vec<(Option<f64>, String)> = Vec::new();
        for i in 0..40u32 {
            let t = match i % 7 {
                0 => None,
                _ => Some(f64::from(i / 5)),
            };
            items.push((t, key(&[&i.to_string()])));
        }
        items.sort_by(|a, b| order((a.0, &a.1), (b.0, &b.1)));
        for size in 1..=9 {
            let mut cursor: Option<Cursor> = None;
            let mut got = Vec::new();
            let mut flip = false;
            loop {
                // Every other page sees the items of one time in the other order: the
                // cursor must not depend on it.
                let mut rest: Vec<&(Option<f64>, String)> = items
                    .iter()
                    .filter(|(t, k)| cursor.as_ref().is_none_or(|c| c.admits(*t, k)))
                    .collect();
                flip = !flip;
                rest.sort_by(|a, b| {
                    let o = order((a.0, &a.1), (b.0, &b.1));
                    if flip && order((a.0, ""), (b.0, "")).is_eq() {
                        o.reverse()
                    } else {
                        o
                    }
                });
                if rest.is_empty() {
                    break;
                }
                let page: Vec<(Option<f64>, String)> =
                    rest.iter().take(size).map(|x| (*x).clone()).collect();
                got.extend(page.iter().cloned());
                got.sort_by(|a, b| order((a.0, &a.1), (b.0, &b.1)));
                let next = Cursor::after(cursor.as_ref(), &page).unwrap();
                let text = next.encode("t", "h");
                cursor = Some(Cursor::decode("tool", "t", "h", &text).unwrap());
            }
            assert_eq!(got, items, "page size {size}");
        }
    }

    #[test]
    fn a_cursor_of_other_arguments_is_refused() {
        let c = Cursor {
            bound: Some(5.0),
            seen: HashSet::new(),
        };
        let s = c.encode("l1", "aaaa");
        assert_eq!(Cursor::decode("x", "l1", "aaaa", &s).unwrap(), c);
        assert!(Cursor::decode("x", "l1", "bbbb", &s)
            .unwrap_err()
            .0
            .contains("other arguments"));
        assert!(Cursor::decode("x", "s1", "aaaa", &s).is_err());
        assert!(Cursor::decode("x", "l1", "aaaa", "l1.aaaa.NaN.").is_err());
        assert!(Cursor::decode("x", "l1", "aaaa", "garbage").is_err());
    }
}
