//! A JSON string's inside, validated as `JSON.parse` does: skipped to its closing quote
//! (64 bytes at a time with AVX2, else with [`super::fast`]'s search for stop bytes) and
//! told which escapes it holds. The scanner, the canonicalizer and [`super::Raw`] use it.

use super::error::{err, ScanError};
use super::fast;

/// Skips the string starting at `b[i] == '"'`; returns the index after its closing quote.
#[inline]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<usize, ScanError> {
    debug_assert_eq!(b[i], b'"');
    // Most strings are short (keys, ids, times): when the first stop byte among the next
    // 16 is the closing quote, the string ends there (SSE2, inlined, no AVX2 call).
    if let Some(window) = b.get(i + 1..i + 17) {
        let stop = fast::find_string_stop(window);
        if stop < 16 && window[stop] == b'"' {
            return Ok(i + 2 + stop);
        }
    }
    skip_inside::<false>(b, i + 1, &mut Escapes::default())
}

/// A string's inside from `i` to after its closing quote, 64 bytes at a time where the CPU
/// can (with `NOTE`, noting in `esc` which escapes it holds).
#[inline]
fn skip_inside<const NOTE: bool>(
    b: &[u8],
    i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    #[cfg(target_arch = "x86_64")]
    {
        if fast::has_avx2() {
            // SAFETY: AVX2 is available (checked at run time).
            return unsafe { skip_string_avx2::<NOTE>(b, i, esc) };
        }
    }
    skip_string_noting::<NOTE>(b, i, esc)
}

/// Which escapes a string holds (see [`skip_string_inside`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Escapes {
    /// Any escape at all: the string's text differs from its source text.
    pub any: bool,
    /// A `\u` escape.
    pub unicode: bool,
    /// A `\/` escape.
    pub slash: bool,
}

/// Skips a string's inside from `i` (just after its opening quote) to after its closing
/// quote, validating it as `JSON.parse` does, and tells which escapes it holds. Long strings
/// with many escapes (file contents, with a `\n` on every line) are skipped 64 bytes at a
/// time instead of stopping at each escape.
pub fn skip_string_inside(b: &[u8], i: usize) -> Result<(usize, Escapes), ScanError> {
    let mut esc = Escapes::default();
    let end = skip_inside::<true>(b, i, &mut esc)?;
    Ok((end, esc))
}

/// Validates one escape at `b[i] == '\\'`; returns the index after it.
#[inline]
fn escape_end(b: &[u8], i: usize) -> Result<usize, ScanError> {
    let Some(&e) = b.get(i + 1) else {
        return Err(err(i, "unterminated string"));
    };
    match e {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(i + 2),
        b'u' => {
            let hex = b
                .get(i + 2..i + 6)
                .ok_or_else(|| err(i, "bad \\u escape"))?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(err(i, "bad \\u escape"));
            }
            Ok(i + 6)
        }
        _ => Err(err(i, "bad escape")),
    }
}

/// The portable loop: from inside a string at `i` to after its closing quote (the
/// reference the 64-byte scan is tested against).
#[cfg(test)]
fn skip_string_from(b: &[u8], i: usize) -> Result<usize, ScanError> {
    skip_string_noting::<false>(b, i, &mut Escapes::default())
}

/// The portable loop: from inside a string at `i` to after its closing quote; with `NOTE`,
/// noting in `esc` which escapes the string holds.
fn skip_string_noting<const NOTE: bool>(
    b: &[u8],
    mut i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    loop {
        i += fast::find_string_stop(&b[i..]);
        if i >= b.len() {
            return Err(err(b.len(), "unterminated string"));
        }
        match b[i] {
            b'"' => return Ok(i + 1),
            b'\\' => {
                if NOTE {
                    esc.any = true;
                    esc.unicode |= b.get(i + 1) == Some(&b'u');
                    esc.slash |= b.get(i + 1) == Some(&b'/');
                }
                i = escape_end(b, i)?
            }
            _ => return Err(err(i, "control character in string")),
        }
    }
}

fn string_error(offset: usize, control: bool) -> ScanError {
    if control {
        err(offset, "control character in string")
    } else {
        err(offset, "unterminated string")
    }
}

/// Skips a string's inside from `i` (after the opening quote) to after the closing quote,
/// 64 bytes at a time without a branch per escape: which bytes are escaped is computed with
/// carries over runs of backslashes (the technique of simdjson), escaped bytes are checked
/// against the nine allowed ones, and `\u` escapes get their four hex digits checked.
/// Gives exactly the result (and error) of the portable loop; with `NOTE`, also notes in
/// `esc` which escapes the string holds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn skip_string_avx2<const NOTE: bool>(
    b: &[u8],
    mut i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    use std::arch::x86_64::*;
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let splat = |c: u8| _mm256_set1_epi8(c as i8);
    let (quote, backslash, limit) = (splat(b'"'), splat(b'\\'), splat(0x1f));
    let u = splat(b'u');
    // The nine bytes allowed after a backslash, as a nibble lookup: a byte is allowed when
    // the bits of its low and high nibbles meet (bit 0: high nibble 2, 1: 5, 2: 6, 3: 7).
    #[rustfmt::skip]
    let lo_tbl = _mm256_setr_epi8(
        0, 0, 0b1101, 0, 0b1000, 0b1000, 0b0100, 0, 0, 0, 0, 0, 0b0010, 0, 0b0100, 0b0001,
        0, 0, 0b1101, 0, 0b1000, 0b1000, 0b0100, 0, 0, 0, 0, 0, 0b0010, 0, 0b0100, 0b0001,
    );
    #[rustfmt::skip]
    let hi_tbl = _mm256_setr_epi8(
        0, 0, 0b0001, 0, 0, 0b0010, 0b0100, 0b1000, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0b0001, 0, 0, 0b0010, 0b0100, 0b1000, 0, 0, 0, 0, 0, 0, 0, 0,
    );
    let nibble = splat(0x0f);
    let zero = _mm256_setzero_si256();
    let mask_of = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
    // Whether the first byte of the next block is escaped by a backslash run before it.
    let mut carry: u64 = 0;
    while i + 64 <= b.len() {
        let lo = _mm256_loadu_si256(b.as_ptr().add(i) as *const __m256i);
        let hi = _mm256_loadu_si256(b.as_ptr().add(i + 32) as *const __m256i);
        let both = |f: &dyn Fn(__m256i) -> __m256i| mask_of(f(lo)) | (mask_of(f(hi)) << 32);
        let q = both(&|v| _mm256_cmpeq_epi8(v, quote));
        let mut bs = both(&|v| _mm256_cmpeq_epi8(v, backslash));
        let ctrl = both(&|v| _mm256_cmpeq_epi8(_mm256_max_epu8(v, limit), limit));
        // Escaped bytes (simdjson's find_escaped_branchless).
        bs &= !carry;
        let follows = (bs << 1) | carry;
        let odd_starts = bs & !EVEN & !follows;
        let (even_runs, overflow) = odd_starts.overflowing_add(bs);
        let escaped = (EVEN ^ (even_runs << 1)) & follows;
        let real_quotes = q & !escaped;
        let before_end = if real_quotes == 0 {
            u64::MAX
        } else {
            (1u64 << real_quotes.trailing_zeros()) - 1
        };
        let escaped_here = escaped & before_end;
        let (bad_escape, mut u_escapes) = if escaped_here == 0 {
            (0, 0)
        } else {
            let not_allowed = both(&|v| {
                let l = _mm256_shuffle_epi8(lo_tbl, _mm256_and_si256(v, nibble));
                let h = _mm256_shuffle_epi8(
                    hi_tbl,
                    _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble),
                );
                _mm256_cmpeq_epi8(_mm256_and_si256(l, h), zero)
            });
            (
                escaped_here & not_allowed,
                escaped_here & both(&|v| _mm256_cmpeq_epi8(v, u)),
            )
        };
        if NOTE && escaped_here != 0 {
            esc.any = true;
            esc.unicode |= u_escapes != 0;
            esc.slash |= escaped_here & both(&|v| _mm256_cmpeq_epi8(v, splat(b'/'))) != 0;
        }
        let bad_ctrl = ctrl & !escaped & before_end;
        if bad_escape | bad_ctrl | u_escapes != 0 {
            // The first problem in text order, as the portable loop reports it.
            let mut first_err: Option<(usize, ScanError)> = None;
            let mut note = |pos: usize, e: ScanError| {
                if first_err.as_ref().is_none_or(|(p, _)| pos < *p) {
                    first_err = Some((pos, e));
                }
            };
            if bad_escape != 0 {
                let p = i + bad_escape.trailing_zeros() as usize - 1;
                note(p, escape_end(b, p).expect_err("not an allowed escape"));
            }
            if bad_ctrl != 0 {
                let p = i + bad_ctrl.trailing_zeros() as usize;
                note(p, string_error(p, true));
            }
            while u_escapes != 0 {
                let p = i + u_escapes.trailing_zeros() as usize - 1;
                if let Err(e) = escape_end(b, p) {
                    note(p, e);
                    break;
                }
                u_escapes &= u_escapes - 1;
            }
            if let Some((_, e)) = first_err {
                return Err(e);
            }
        }
        if real_quotes != 0 {
            return Ok(i + real_quotes.trailing_zeros() as usize + 1);
        }
        carry = overflow as u64;
        i += 64;
    }
    // The rest with the portable loop; an odd backslash run ending the last block is
    // handed over whole by starting at its last backslash.
    skip_string_noting::<NOTE>(b, if carry != 0 { i - 1 } else { i }, esc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_and_portable_string_skipping_agree() {
        // Every mix of plain bytes, escapes (some crossing 32-byte blocks), quotes and
        // control characters, at many lengths and offsets.
        let pieces: [&[u8]; 9] = [
            b"a",
            b"\\n",
            b"\\u00e9",
            b"\\\"",
            "é".as_bytes(),
            b"\\",
            b"\x01",
            b"\\x",
            b"\\u12",
        ];
        let mut seed = 7u64;
        for _ in 0..60_000 {
            let mut s = vec![b'"'];
            let n = (seed % 90) as usize;
            for _ in 0..n {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let p = pieces[((seed >> 33) % 9) as usize];
                if (p == b"\\" || p == b"\x01" || p == b"\\x" || p == b"\\u12")
                    && !(seed >> 40).is_multiple_of(8)
                {
                    continue;
                }
                s.extend_from_slice(p);
            }
            if !(seed >> 20).is_multiple_of(5) {
                s.push(b'"');
            }
            s.extend_from_slice(b"                                  tail");
            assert_eq!(
                skip_string(&s, 0),
                skip_string_from(&s, 1),
                "{:?}",
                String::from_utf8_lossy(&s)
            );
        }
    }

    #[test]
    fn backslash_runs_across_block_boundaries() {
        for k in 0..140 {
            for run in 1..72 {
                for next in [b'"', b'n', b'u', b'x', 0x01] {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'a', k));
                    s.extend(std::iter::repeat_n(b'\\', run));
                    s.push(next);
                    s.extend_from_slice(b"00e9 and more text to fill a block or two \" end");
                    s.extend(std::iter::repeat_n(b' ', 70));
                    assert_eq!(
                        skip_string(&s, 0),
                        skip_string_from(&s, 1),
                        "k {k} run {run} next {next}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_byte_after_a_backslash_is_judged_as_the_portable_loop_does() {
        for esc in 0..=255u8 {
            for k in [0usize, 5, 31, 62, 63, 64, 100] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'a', k));
                s.push(b'\\');
                s.push(esc);
                s.extend_from_slice(b"0041 tail text\" after");
                s.extend(std::iter::repeat_n(b' ', 80));
                assert_eq!(
                    skip_string(&s, 0),
                    skip_string_from(&s, 1),
                    "escape byte {esc:#x} at {k}"
                );
            }
        }
    }
}
