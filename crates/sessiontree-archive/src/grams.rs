//! The archive's search index (schema version 7): per *range* of a version (the whole lines
//! that start in one of its chunks), the 16-bit buckets of the trigram codes of its entries'
//! texts ([`crate::trigram::bucket`]) and the times of its newest and oldest entry.
//!
//! A search asks the server for the ranges whose codes hold every trigram of the query,
//! newest first, reads those ranges' bytes from the chunks (the archive's only copy of the
//! text) and checks each entry there, with the same rows as a local search. So the archive
//! keeps no second copy of the sessions' text, and a hit's text is always its session's
//! bytes: a row of this table can make a range a candidate, never put words in it.

use sessiontree::list::{Acc, EntryText};

/// One range of whole lines of a version, as stored in `sessiontree.grams`.
#[derive(Debug, Clone, PartialEq)]
pub struct Gram {
    /// Offset of its first line in the version.
    pub off: i64,
    /// Its bytes (whole lines).
    pub len: i64,
    /// The newest and oldest time (ms) of its entries that have one.
    pub newest: Option<f64>,
    pub oldest: Option<f64>,
    /// The sorted, distinct buckets of the trigram codes of its entries' texts.
    pub tri: Vec<i16>,
}

/// The search rows of a line (an entry's text, role, id and time), read as an entry line of
/// a session; rows of no role (the links every entry gives) are left out. NUL becomes a
/// space, as PostgreSQL's text cannot hold it.
pub fn rows_of_line(acc: &mut Acc, line: &[u8], rows: &mut Vec<EntryText>) {
    let start = rows.len();
    acc.feed(line, Some(rows));
    clean(rows, start);
}

/// Leaves out the rows from `start` on that have no role, and makes NUL a space.
fn clean(rows: &mut Vec<EntryText>, start: usize) {
    let mut i = start;
    while i < rows.len() {
        if rows[i].role.is_empty() {
            rows.swap_remove(i);
        } else {
            if rows[i].text.contains('\0') {
                rows[i].text = rows[i].text.replace('\0', " ");
            }
            i += 1;
        }
    }
}

/// [`build`] with lines read as entry lines (the ranges of bytes already stored).
pub fn of(content: &[u8], from: usize, starts: &[i64]) -> Vec<Gram> {
    let mut acc = Acc::past_header();
    build(content, from, starts, |line, rows| {
        acc.feed(line, Some(rows))
    })
}

/// The ranges of `content[from..]` for pieces that start at the given offsets (sorted, the
/// first at `from`): each range holds the lines that start inside its piece. Ranges without
/// a search row are left out (nothing in them can be found). `feed` gives a line's rows (a
/// push feeds the pass that also makes the listing).
pub fn build(
    content: &[u8],
    from: usize,
    starts: &[i64],
    mut feed: impl FnMut(&[u8], &mut Vec<EntryText>),
) -> Vec<Gram> {
    let mut out = Vec::new();
    let mut rows = Vec::new();
    // (index of its piece, the range so far, whether it has a search row)
    let mut cur: Option<(usize, Gram, bool)> = None;
    // The range's buckets, one bit each.
    let mut bits = vec![0u64; 1 << 10];
    let mut pos = from;
    for line in content[from.min(content.len())..].split_inclusive(|&b| b == b'\n') {
        // The piece this line starts in.
        let piece = starts
            .partition_point(|&s| s <= pos as i64)
            .saturating_sub(1);
        if cur.as_ref().is_some_and(|(p, _, _)| *p != piece) {
            finish(&mut out, cur.take(), &mut bits);
        }
        let (_, g, found) = cur.get_or_insert_with(|| {
            (
                piece,
                Gram {
                    off: pos as i64,
                    len: 0,
                    newest: None,
                    oldest: None,
                    tri: Vec::new(),
                },
                false,
            )
        });
        g.len += line.len() as i64;
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        rows.clear();
        feed(body, &mut rows);
        clean(&mut rows, 0);
        *found |= !rows.is_empty();
        for r in &rows {
            // Straight into the bits: no list of codes to sort per entry.
            crate::trigram::each_code(&crate::trigram::fold(&r.text), |code| {
                let b = crate::trigram::bucket(code) as u16 as usize;
                bits[b >> 6] |= 1 << (b & 63);
            });
            if let Some(t) = r.ts_ms.filter(|t| t.is_finite()) {
                g.newest = Some(g.newest.map_or(t, |n| n.max(t)));
                g.oldest = Some(g.oldest.map_or(t, |o| o.min(t)));
            }
        }
        pos += line.len();
    }
    finish(&mut out, cur, &mut bits);
    out
}

/// Keeps the range (when it has a search row) with the buckets of `bits`, and clears them.
fn finish(out: &mut Vec<Gram>, cur: Option<(usize, Gram, bool)>, bits: &mut [u64]) {
    let mut tri = Vec::new();
    for (i, w) in bits.iter_mut().enumerate() {
        let mut v = std::mem::take(w);
        while v != 0 {
            tri.push(((i << 6) | v.trailing_zeros() as usize) as u16 as i16);
            v &= v - 1;
        }
    }
    if let Some((_, mut g, true)) = cur {
        tri.sort_unstable();
        g.tri = tri;
        out.push(g);
    }
}

/// Search ranges as columns for an `unnest` (`version, session, off, len, newest, oldest,
/// buckets`; the buckets in PostgreSQL's text form, as one array of arrays cannot be
/// ragged): what a push and the migration's data step insert.
pub(crate) struct Columns {
    pub(crate) v: Vec<i64>,
    pub(crate) s: Vec<i64>,
    pub(crate) off: Vec<i64>,
    pub(crate) len: Vec<i64>,
    pub(crate) newest: Vec<Option<f64>>,
    pub(crate) oldest: Vec<Option<f64>>,
    pub(crate) tri: Vec<String>,
}

impl Columns {
    pub(crate) fn of<'a>(rows: impl Iterator<Item = (i64, i64, &'a Gram)>) -> Self {
        let mut c = Columns {
            v: Vec::new(),
            s: Vec::new(),
            off: Vec::new(),
            len: Vec::new(),
            newest: Vec::new(),
            oldest: Vec::new(),
            tri: Vec::new(),
        };
        for (v, s, g) in rows {
            c.v.push(v);
            c.s.push(s);
            c.off.push(g.off);
            c.len.push(g.len);
            c.newest.push(g.newest);
            c.oldest.push(g.oldest);
            c.tri.push(crate::trigram::to_pg_array(&g.tri));
        }
        c
    }

    pub(crate) fn params(
        &self,
    ) -> [(&(dyn postgres::types::ToSql + Sync), postgres::types::Type); 7] {
        [
            (&self.v, postgres::types::Type::INT8_ARRAY),
            (&self.s, postgres::types::Type::INT8_ARRAY),
            (&self.off, postgres::types::Type::INT8_ARRAY),
            (&self.len, postgres::types::Type::INT8_ARRAY),
            (&self.newest, postgres::types::Type::FLOAT8_ARRAY),
            (&self.oldest, postgres::types::Type::FLOAT8_ARRAY),
            (&self.tri, postgres::types::Type::TEXT_ARRAY),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, role: &str, text: &str, ts: u64) -> String {
        format!(
            "{}\n",
            serde_json::json!({"type": "message", "id": id, "parentId": null,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": role, "content": text, "timestamp": ts}})
        )
    }

    #[test]
    fn ranges_follow_the_pieces_and_hold_their_lines_codes_and_times() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n";
        let a = line("a", "user", "the wombat", 1000);
        let b = line("b", "assistant", "a numbat", 3000);
        let c = line("c", "user", "quokka", 2000);
        let content = format!("{header}{a}{b}{c}");
        let h = header.len() as i64;
        let second = h + (a.len() + b.len()) as i64;
        // A piece boundary inside `c`: `c` starts in the first piece, so it is in its range.
        let g = of(content.as_bytes(), 0, &[0, second + 5]);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!((g[0].off, g[0].len), (0, content.len() as i64));
        // At `c`'s start: two ranges; the header's line (no text) goes with the first.
        let g = of(content.as_bytes(), 0, &[0, second]);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!((g[0].off, g[0].len), (0, second));
        assert_eq!((g[0].newest, g[0].oldest), (Some(3000.0), Some(1000.0)));
        assert_eq!((g[1].off, g[1].len), (second, c.len() as i64));
        let words = |g: &Gram, w: &str| {
            crate::trigram::buckets_of_folded(&crate::trigram::fold(w))
                .iter()
                .all(|t| g.tri.contains(t))
        };
        assert!(words(&g[0], "WOMBAT") && words(&g[0], "numbat") && !words(&g[0], "quokka"));
        assert!(words(&g[1], "quokka") && !words(&g[1], "wombat"));
        // From an offset (an append): only the lines after it.
        let g = of(content.as_bytes(), second as usize, &[second]);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].off, second);
        // Codes are sorted and distinct.
        assert!(g[0].tri.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn link_rows_are_not_search_rows_and_nul_is_a_space() {
        let mut acc = Acc::past_header();
        let mut rows = Vec::new();
        rows_of_line(
            &mut acc,
            line("a", "user", "x\u{0}y", 5).trim_end().as_bytes(),
            &mut rows,
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].role.as_str(), rows[0].text.as_str()),
            ("user", "x y")
        );
        rows.clear();
        rows_of_line(
            &mut acc,
            br#"{"type":"label","id":"l","parentId":"a","targetId":"a","label":"x"}"#,
            &mut rows,
        );
        assert!(rows.is_empty(), "{rows:?}");
    }

    #[test]
    fn arbitrary_bytes_and_cuts_never_panic_and_ranges_stay_inside() {
        const PIECES: &[&str] = &[
            "{\"type\":\"message\",\"id\":\"",
            "\",\"message\":{\"role\":\"user\",\"content\":\"",
            "\",\"timestamp\":",
            "1e308",
            "-0",
            "NaN",
            "{\"type\":\"compaction\",\"id\":\"c\",\"summary\":\"",
            "[{\"type\":\"text\",\"text\":\"",
            "\\u0000",
            "\\ud83d",
            "\r",
            "\n",
            "\"}}",
            "é",
            "💥",
            "\\",
        ];
        let cases: usize = std::env::var("SESSIONTREE_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        let mut r = sessiontree_testkit::Rng(0x6a7e_5eed_0000_0007);
        for _ in 0..cases {
            let mut b: Vec<u8> = Vec::new();
            for _ in 0..r.pick(30) {
                if r.pick(3) == 0 {
                    b.push(r.next() as u8);
                } else {
                    b.extend_from_slice(PIECES[r.pick(PIECES.len())].as_bytes());
                }
            }
            let from = r.pick(b.len() + 1);
            let mut starts = vec![from as i64];
            for _ in 0..r.pick(4) {
                starts.push((from + r.pick(b.len() + 1 - from)) as i64);
            }
            starts.sort_unstable();
            for g in of(&b, from, &starts) {
                assert!(g.off >= from as i64 && g.len > 0, "{g:?}");
                assert!(g.off + g.len <= b.len() as i64, "{g:?}");
                assert!(g.tri.windows(2).all(|w| w[0] < w[1]));
                assert!(g.newest.is_none_or(f64::is_finite) && g.oldest <= g.newest);
            }
        }
    }
}
