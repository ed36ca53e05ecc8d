//! The search index's keys, computed here rather than in the server.
//!
//! Every entry text is stored with the set of its *trigrams*: each window of three
//! characters of the text lowercased character by character (spaces and punctuation
//! included, no word splitting), as a 31-bit code. A text contains a string of three or
//! more characters (any case) only if the text's set holds every trigram of the string, so
//! `tri @> query_trigrams` over a GIN index finds a superset of the hits, which the exact
//! check then narrows. PostgreSQL's `pg_trgm` would do the same in the server, but there it
//! costs about as much CPU as everything else in a push together (it examines every
//! character through the locale), while here it is a few milliseconds per megabyte.
//!
//! The codes are part of the archive's format: changing [`fold`] or `code` (the hash of a trigram) needs a
//! migration that recomputes them.

/// Lowercases character by character (no context rules such as the Greek final sigma), so
/// that a substring of a text is still a substring after folding both.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The 31-bit code of three characters (FNV-1a over their scalar values).
fn code(a: char, b: char, c: char) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for ch in [a, b, c] {
        for byte in (ch as u32).to_le_bytes() {
            h ^= byte as u32;
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    (h & 0x7fff_ffff) as i32
}

/// Calls `f` with the code of every window of three characters of an already folded text,
/// in order, repeats included (nothing below three characters).
pub fn each_code(folded: &str, mut f: impl FnMut(i32)) {
    let mut it = folded.chars();
    let (Some(mut a), Some(mut b)) = (it.next(), it.next()) else {
        return;
    };
    for c in it {
        f(code(a, b, c));
        a = b;
        b = c;
    }
}

/// The sorted, distinct trigram codes of an already folded text (empty below three
/// characters).
pub fn of_folded(folded: &str) -> Vec<i32> {
    let mut out = Vec::new();
    each_code(folded, |c| out.push(c));
    out.sort_unstable();
    out.dedup();
    out
}

/// The sorted, distinct trigram codes of a text, any case.
pub fn of(text: &str) -> Vec<i32> {
    of_folded(&fold(text))
}

/// The 16-bit bucket of a code: what the search ranges keep (schema 7). A range's set of
/// buckets is at most 8 KiB however much text it holds, and still rules out a range for a
/// word unless every one of the word's trigrams falls in a bucket the range has.
pub fn bucket(code: i32) -> i16 {
    let c = code as u32;
    ((c >> 16) ^ c) as u16 as i16
}

/// The sorted, distinct buckets of an already folded text.
pub fn buckets_of_folded(folded: &str) -> Vec<i16> {
    let mut out = Vec::new();
    each_code(folded, |c| out.push(bucket(c)));
    out.sort_unstable();
    out.dedup();
    out
}

/// PostgreSQL's text form of an `int4[]` or `int2[]`.
pub fn to_pg_array<T: std::fmt::Display>(codes: &[T]) -> String {
    let mut s = String::with_capacity(codes.len() * 11 + 2);
    s.push('{');
    for (i, c) in codes.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&c.to_string());
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains_all(hay: &[i32], needle: &[i32]) -> bool {
        needle.iter().all(|n| hay.binary_search(n).is_ok())
    }

    #[test]
    fn a_substring_in_any_case_has_its_trigrams_in_the_text() {
        let text = "Let s.velocity = ΣΟΦΊΑ; 東京都の天気 quokka_marker::Needle";
        let t = of(text);
        for q in [
            "S.VEL",
            "velocity",
            "σοφία",
            "京都の",
            "MARKER::need",
            "α; 東",
        ] {
            assert!(contains_all(&t, &of(q)), "{q}");
            assert!(fold(text).contains(&fold(q)), "{q}");
        }
        assert!(!contains_all(&t, &of("quokkas")));
        assert!(!contains_all(&t, &of("大阪府")));
    }

    #[test]
    fn short_texts_have_no_trigrams_and_codes_are_sorted_distinct() {
        assert!(of("ab").is_empty());
        assert_eq!(of("abc").len(), 1);
        let t = of("abcabcabc");
        assert_eq!(t.len(), 3);
        assert!(t.windows(2).all(|w| w[0] < w[1]));
        assert!(t.iter().all(|&c| c >= 0));
        assert_eq!(to_pg_array(&[1, 22]), "{1,22}");
        assert_eq!(to_pg_array::<i32>(&[]), "{}");
    }
}
