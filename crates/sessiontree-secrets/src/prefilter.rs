//! The byte prefilter of a session file: one pass over the raw bytes that finds where a
//! rule's anchor (or an escape that could hide one) may start, then a check of the
//! literals there.
//!
//! The literals are grouped in at most 16 families; a family allows, at each of the first
//! four bytes from a start, the set of bytes its literals have there (both cases of a
//! letter for a case-insensitive literal, any byte past a literal's end). A table per
//! offset maps a byte to the families that allow it, so a position is a candidate when
//! the four tables agree on a family: on AVX-512 (VBMI) 64 positions take four loads and
//! eight table lookups; elsewhere the same tables are read a byte at a time. A candidate
//! counts only when one of its families' literals is really there.

use std::sync::OnceLock;

/// A literal of the prefilter, checked where a family's four bytes match.
#[derive(Clone, Copy)]
enum Lit {
    /// These bytes, exactly (anchors of rules whose pattern is case-sensitive).
    Exact(&'static str),
    /// These bytes in any ASCII case (anchors of case-insensitive rules).
    Fold(&'static str),
    /// `token` in any case, as the assignment rule anchors it: after `_` or `-`, or before
    /// `=`, `:`, a quote (also `\"`) or ` =`.
    Token,
    /// A `\u` escape other than a control character's or a lone surrogate's, or `\/`:
    /// escapes `JSON.stringify` never writes, which could hide an anchor from this search.
    Escape,
}

/// The families. Every anchor of [`crate::rules::RULES`] occurs in the raw bytes of a line
/// whose decoded text holds it (anchors hold no byte JSON escapes but the quote of
/// `token"`, written `token\"`, and the `/` of `://`, which an odd `\/` could hide), and
/// each contains one of these literals; casings only for the rules that ignore case.
const FAMILIES: &[&[Lit]] = &[
    &[
        Lit::Exact("PRIVATE KEY"),
        Lit::Exact("private_key"),
        Lit::Exact("GR1348941"),
        Lit::Exact("T3BlbkFJ"),
    ],
    &[
        Lit::Exact("AKIA"),
        Lit::Exact("ASIA"),
        Lit::Exact("ABIA"),
        Lit::Exact("ACCA"),
        Lit::Exact("AIza"),
    ],
    &[
        Lit::Exact("ghp_"),
        Lit::Exact("gho_"),
        Lit::Exact("ghu_"),
        Lit::Exact("ghs_"),
        Lit::Exact("ghr_"),
    ],
    &[
        Lit::Exact("glpat-"),
        Lit::Exact("gldt-"),
        Lit::Exact("glrt-"),
        Lit::Exact("glptt-"),
        Lit::Exact("glcbt-"),
        Lit::Exact("gloas-"),
        Lit::Exact("glsoat-"),
        Lit::Exact("glffct-"),
        Lit::Exact("glimt-"),
        Lit::Exact("glagent-"),
        Lit::Exact("glft-"),
    ],
    &[
        Lit::Exact("xoxb-"),
        Lit::Exact("xoxp-"),
        Lit::Exact("xoxa-"),
        Lit::Exact("xoxe-"),
        Lit::Exact("xoxr-"),
        Lit::Exact("xoxs-"),
        Lit::Exact("xoxc-"),
        Lit::Exact("xoxo-"),
        Lit::Exact("xapp-"),
    ],
    &[
        // `github_pat_` holds `_pat_`.
        Lit::Exact("_pat_"),
        Lit::Exact("_live_"),
        Lit::Exact("hooks.slack.com"),
    ],
    &[
        Lit::Exact("sk-ant-"),
        Lit::Exact("sk-proj-"),
        Lit::Exact("sk-svcacct-"),
        Lit::Exact("sk-admin-"),
    ],
    &[
        Lit::Exact("npm_"),
        Lit::Exact("pypi-AgE"),
        Lit::Exact("hf_"),
    ],
    &[Lit::Exact("eyJ"), Lit::Exact("://")],
    &[Lit::Fold("secret"), Lit::Fold("sig=")],
    &[Lit::Fold("passw"), Lit::Fold("passphrase")],
    &[
        Lit::Fold("api_key"),
        Lit::Fold("api-key"),
        Lit::Fold("apikey"),
        Lit::Exact("api_org_"),
    ],
    &[
        // `sharedaccesskey` holds `accesskey`.
        Lit::Fold("access_key"),
        Lit::Fold("access-key"),
        Lit::Fold("accesskey"),
        Lit::Fold("accountkey"),
    ],
    &[Lit::Token],
    &[Lit::Escape],
];

/// How many bytes from a start the tables look at.
const WIDTH: usize = 4;

impl Lit {
    /// The bytes a start must have at `offset`; `None`: any byte.
    fn allows(&self, offset: usize) -> Option<Vec<u8>> {
        let (text, fold): (&[u8], bool) = match *self {
            Lit::Exact(s) => (s.as_bytes(), false),
            Lit::Fold(s) => (s.as_bytes(), true),
            Lit::Token => (b"token", true),
            Lit::Escape => {
                return match offset {
                    0 => Some(vec![b'\\']),
                    1 => Some(vec![b'u', b'/']),
                    _ => None,
                }
            }
        };
        let &c = text.get(offset)?;
        Some(if fold && c.is_ascii_alphabetic() {
            vec![c.to_ascii_lowercase(), c.to_ascii_uppercase()]
        } else {
            vec![c]
        })
    }

    /// True when the literal is at `b[at..]`.
    fn at(&self, b: &[u8], at: usize) -> bool {
        let rest = &b[at..];
        match *self {
            Lit::Exact(s) => rest.starts_with(s.as_bytes()),
            Lit::Fold(s) => rest
                .get(..s.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(s.as_bytes())),
            Lit::Token => {
                if !rest
                    .get(..5)
                    .is_some_and(|p| p.eq_ignore_ascii_case(b"token"))
                {
                    return false;
                }
                let before = at.checked_sub(1).map(|i| b[i]);
                let after = &rest[5..];
                matches!(before, Some(b'_' | b'-'))
                    || matches!(after.first(), Some(b'=' | b':' | b'"' | b'\''))
                    || after.starts_with(b" =")
                    || after.starts_with(b"\\\"")
            }
            Lit::Escape => {
                if !escape_starts(b, at) {
                    return false;
                }
                match rest.get(1) {
                    Some(b'/') => true,
                    Some(b'u') => {
                        let hex = rest.get(2..6).unwrap_or(&[]);
                        let canonical = hex.len() == 4
                            && ((hex[0] == b'0'
                                && hex[1] == b'0'
                                && matches!(hex[2], b'0' | b'1'))
                                || (matches!(hex[0], b'd' | b'D')
                                    && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f')));
                        !canonical
                    }
                    _ => false,
                }
            }
        }
    }
}

/// True when the backslash at `b[at]` starts an escape (an even number of backslashes
/// before it).
fn escape_starts(b: &[u8], at: usize) -> bool {
    let before = b[..at].iter().rev().take_while(|&&c| c == b'\\').count();
    before % 2 == 0
}

/// Per offset, per byte: the families (bit i: `FAMILIES[i]`) that allow the byte there;
/// `any[o]`: the families that allow every byte at `o` (used past the end of the bytes).
struct Tables {
    by_byte: [[u16; 256]; WIDTH],
    any: [u16; WIDTH],
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        assert!(FAMILIES.len() <= 16, "the tables hold 16 families");
        let mut t = Tables {
            by_byte: [[0; 256]; WIDTH],
            any: [0; WIDTH],
        };
        for (f, lits) in FAMILIES.iter().enumerate() {
            let bit = 1u16 << f;
            for lit in *lits {
                for o in 0..WIDTH {
                    match lit.allows(o) {
                        None => {
                            t.any[o] |= bit;
                            for v in t.by_byte[o].iter_mut() {
                                *v |= bit;
                            }
                        }
                        Some(bytes) => {
                            for c in bytes {
                                t.by_byte[o][c as usize] |= bit;
                            }
                        }
                    }
                }
            }
        }
        t
    })
}

/// The families whose four bytes match at `b[i..]` (past the end: only `any`).
fn families_at(t: &Tables, b: &[u8], i: usize) -> u16 {
    let mut m = u16::MAX;
    for o in 0..WIDTH {
        m &= match b.get(i + o) {
            Some(&c) => t.by_byte[o][c as usize],
            None => t.any[o],
        };
        if m == 0 {
            break;
        }
    }
    m
}

/// True when a literal of one of `families` is at `b[i..]`.
fn confirmed(b: &[u8], i: usize, mut families: u16) -> bool {
    while families != 0 {
        let f = families.trailing_zeros() as usize;
        families &= families - 1;
        if FAMILIES[f].iter().any(|l| l.at(b, i)) {
            return true;
        }
    }
    false
}

/// The first position at or after `from` where a literal of the prefilter starts.
pub(crate) fn next_hit(b: &[u8], from: usize) -> Option<usize> {
    let t = tables();
    #[cfg(target_arch = "x86_64")]
    {
        if simd_available() {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { avx512::next_hit(t, b, from) };
        }
    }
    next_hit_bytewise(t, b, from)
}

/// [`next_hit`] a byte at a time (CPUs without AVX-512 VBMI; the tail of the vector path).
fn next_hit_bytewise(t: &Tables, b: &[u8], from: usize) -> Option<usize> {
    let at = |i: usize| {
        // In bounds for i + 3 < b.len().
        t.by_byte[0][b[i] as usize]
            & t.by_byte[1][b[i + 1] as usize]
            & t.by_byte[2][b[i + 2] as usize]
            & t.by_byte[3][b[i + 3] as usize]
    };
    let end = b.len().saturating_sub(WIDTH - 1);
    let mut i = from;
    // Eight starts at a time without a branch each (most match no family), then the eight
    // one by one when one may.
    const STEP: usize = 8;
    while i + STEP <= end {
        let mut any = 0u16;
        for k in 0..STEP {
            any |= at(i + k);
        }
        if any != 0 {
            for k in 0..STEP {
                let m = at(i + k);
                if m != 0 && confirmed(b, i + k, m) {
                    return Some(i + k);
                }
            }
        }
        i += STEP;
    }
    while i < b.len() {
        let m = families_at(t, b, i);
        if m != 0 && confirmed(b, i, m) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(target_arch = "x86_64")]
fn simd_available() -> bool {
    static S: OnceLock<bool> = OnceLock::new();
    *S.get_or_init(|| {
        std::env::var_os("SESSIONTREE_SECRETS_NO_SIMD").is_none()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    })
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{confirmed, families_at, next_hit_bytewise, Tables, WIDTH};
    use std::arch::x86_64::*;

    /// [`super::next_hit`] 64 positions at a time: per offset, the low and the high eight
    /// families' table of the bytes below 0x80, read by a two-register byte permutation. A
    /// byte from 0x80 reads the entry of its low seven bits: more families than its own
    /// (no literal holds such a byte, and every entry holds the families that allow any
    /// byte there), so nothing is missed, and every candidate is confirmed on the bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn next_hit(t: &Tables, b: &[u8], from: usize) -> Option<usize> {
        const BLOCK: usize = 64;
        let mut lo = [[0u8; 128]; WIDTH];
        let mut hi = [[0u8; 128]; WIDTH];
        for o in 0..WIDTH {
            for c in 0..128 {
                lo[o][c] = t.by_byte[o][c] as u8;
                hi[o][c] = (t.by_byte[o][c] >> 8) as u8;
            }
        }
        let load = |p: &[u8; 128], half: usize| {
            // SAFETY: 64 bytes from p[half * 64], inside the 128-byte array.
            unsafe { _mm512_loadu_epi8(p.as_ptr().add(half * 64) as *const i8) }
        };
        let tlo: [[__m512i; 2]; WIDTH] =
            std::array::from_fn(|o| [load(&lo[o], 0), load(&lo[o], 1)]);
        let thi: [[__m512i; 2]; WIDTH] =
            std::array::from_fn(|o| [load(&hi[o], 0), load(&hi[o], 1)]);
        let mut i = from;
        // Each block reads 64 + WIDTH - 1 bytes.
        while i + BLOCK + WIDTH - 1 <= b.len() {
            let mut acc_lo = _mm512_set1_epi8(-1);
            let mut acc_hi = _mm512_set1_epi8(-1);
            for o in 0..WIDTH {
                // SAFETY: i + o + 64 <= b.len().
                let x = unsafe { _mm512_loadu_epi8(b.as_ptr().add(i + o) as *const i8) };
                let l = _mm512_permutex2var_epi8(tlo[o][0], x, tlo[o][1]);
                let h = _mm512_permutex2var_epi8(thi[o][0], x, thi[o][1]);
                acc_lo = _mm512_and_si512(acc_lo, l);
                acc_hi = _mm512_and_si512(acc_hi, h);
            }
            let mut k =
                _mm512_test_epi8_mask(acc_lo, acc_lo) | _mm512_test_epi8_mask(acc_hi, acc_hi);
            while k != 0 {
                let j = i + k.trailing_zeros() as usize;
                k &= k - 1;
                if confirmed(b, j, families_at(t, b, j)) {
                    return Some(j);
                }
            }
            i += BLOCK;
        }
        next_hit_bytewise(t, b, i)
    }
}

/// [`next_hit`] without the vector path, for tests that compare the two.
#[doc(hidden)]
pub fn next_hit_portable(b: &[u8], from: usize) -> Option<usize> {
    next_hit_bytewise(tables(), b, from)
}

/// [`next_hit`], public for tests that compare it with [`next_hit_portable`].
#[doc(hidden)]
pub fn next_hit_fast(b: &[u8], from: usize) -> Option<usize> {
    next_hit(b, from)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Both paths, from every start.
    fn hits(b: &[u8]) -> Vec<Option<usize>> {
        (0..=b.len())
            .map(|from| {
                let fast = next_hit(b, from);
                assert_eq!(fast, next_hit_portable(b, from), "from {from} in {b:?}");
                fast
            })
            .collect()
    }

    #[test]
    fn every_rule_anchor_is_found_in_its_casings_as_json_writes_it() {
        let mut r = Rng(99);
        for rule in crate::rules::RULES {
            let folds = rule.pattern.starts_with("(?i)");
            for anchor in rule.anchors {
                for _ in 0..24 {
                    let cased: String = anchor
                        .chars()
                        .map(|c| match (folds, r.below(2)) {
                            (true, 0) => c.to_ascii_uppercase(),
                            (true, _) => c.to_ascii_lowercase(),
                            _ => c,
                        })
                        .collect();
                    // Filler that holds no literal, so the anchor is the first hit; where
                    // it lands moves across the 64-byte blocks and the end of the bytes.
                    let pad = "na ".repeat(r.below(60)) + &"x".repeat(r.below(3));
                    let tail = " q".repeat(r.below(40));
                    let text = format!("{pad}{cased}{tail}");
                    let json = serde_json::to_string(&text).unwrap();
                    let b = json.as_bytes();
                    let found = next_hit(b, 0);
                    assert_eq!(found, next_hit_portable(b, 0));
                    let at = found.unwrap_or_else(|| panic!("{cased:?} not found in {json}"));
                    assert!(
                        at <= 1 + pad.len() + cased.len(),
                        "{cased:?} in {json}: {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_vector_path_agrees_with_the_bytewise_one() {
        // Literal pieces, near misses and bytes from 0x80, at random places.
        const PIECES: &[&str] = &[
            "token",
            "Token=",
            "_tok",
            "passw",
            "PaSs",
            "secre",
            "SeCrEt",
            "sig=",
            "ApI_KeY",
            "access",
            "ghp_",
            "gh_",
            "glpat-",
            "glob",
            "xoxb-",
            "xox",
            "eyJ",
            "ey",
            "://",
            ":/",
            "hf_",
            "AKIA",
            "AKI",
            "\\u0041",
            "\\u001b",
            "\\\\u0041",
            "\\/",
            "\\\\/",
            "\\",
            "é",
            "\u{80}",
            "\"",
            "\n",
            "aaaa",
            " ",
        ];
        let mut r = Rng(7);
        for _ in 0..400 {
            let mut s = String::new();
            while s.len() < 20 + r.below(300) {
                s.push_str(PIECES[r.below(PIECES.len())]);
            }
            hits(s.as_bytes());
            let mut raw = s.into_bytes();
            for _ in 0..r.below(4) {
                let i = r.below(raw.len());
                raw[i] = (r.next() >> 8) as u8;
            }
            hits(&raw);
        }
    }

    #[test]
    fn escapes_that_json_stringify_never_writes_are_hits() {
        assert_eq!(next_hit(br#""a\u001fb\n\\u0041\\/ \ud83d""#, 0), None);
        assert_eq!(next_hit(br#""ab\u0041""#, 0), Some(3));
        assert_eq!(next_hit(br#""ab\/""#, 0), Some(3));
        assert_eq!(next_hit(br"\\\u0041", 0), Some(2));
        assert_eq!(next_hit(br"\u00", 0), Some(0));
        assert_eq!(next_hit(b"plain text, totalTokens: 3", 0), None);
    }
}
