//! Word-at-a-time search for the bytes that end a run of plain string characters.
//!
//! Session lines are mostly long strings (tool output, file contents), so the scanner
//! spends its time here. Eight bytes are tested at once; the exact position is then found
//! with the lookup table.

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

#[inline(always)]
fn has_zero(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// Index of the first `"`, `\` or control byte in `b`, or `b.len()`.
#[inline]
pub fn find_string_stop(b: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if b.len() >= 32 && has_avx2() {
            // SAFETY: AVX2 is available (checked at run time).
            return unsafe { find_avx2(b) };
        }
        if b.len() >= 16 {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            return unsafe { find_sse2(b) };
        }
    }
    find_swar(b, 0)
}

#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = std::is_x86_feature_detected!("avx2");
            STATE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn find_avx2(b: &[u8]) -> usize {
    use std::arch::x86_64::*;
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let limit = _mm256_set1_epi8(0x1f);
    let mut i = 0;
    while i + 32 <= b.len() {
        let v = _mm256_loadu_si256(b.as_ptr().add(i) as *const __m256i);
        let ctrl = _mm256_cmpeq_epi8(_mm256_max_epu8(v, limit), limit);
        let hit = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
            ctrl,
        );
        let mask = _mm256_movemask_epi8(hit) as u32;
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 32;
    }
    find_swar(b, i)
}

/// Skips a string's inside from `i` (after the opening quote) to after the closing quote,
/// 64 bytes at a time without a branch per escape: which bytes are escaped is computed with
/// carries over runs of backslashes (the technique of simdjson), escaped bytes are checked
/// against the nine allowed ones, and `\u` escapes get their four hex digits checked.
/// Gives exactly the result (and error) of the portable loop; with `NOTE`, also notes in
/// `esc` which escapes the string holds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn skip_string_avx2<const NOTE: bool>(
    b: &[u8],
    mut i: usize,
    esc: &mut super::scan::Escapes,
) -> Result<usize, super::ScanError> {
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
            let mut first_err: Option<(usize, super::ScanError)> = None;
            let mut note = |pos: usize, e: super::ScanError| {
                if first_err.as_ref().is_none_or(|(p, _)| pos < *p) {
                    first_err = Some((pos, e));
                }
            };
            if bad_escape != 0 {
                let p = i + bad_escape.trailing_zeros() as usize - 1;
                note(
                    p,
                    super::scan::escape_end(b, p).expect_err("not an allowed escape"),
                );
            }
            if bad_ctrl != 0 {
                let p = i + bad_ctrl.trailing_zeros() as usize;
                note(p, super::scan::string_error(p, true));
            }
            while u_escapes != 0 {
                let p = i + u_escapes.trailing_zeros() as usize - 1;
                if let Err(e) = super::scan::escape_end(b, p) {
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
    super::scan::skip_string_noting::<NOTE>(b, if carry != 0 { i - 1 } else { i }, esc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn find_sse2(b: &[u8]) -> usize {
    use std::arch::x86_64::*;
    let quote = _mm_set1_epi8(b'"' as i8);
    let backslash = _mm_set1_epi8(b'\\' as i8);
    let limit = _mm_set1_epi8(0x1f);
    let mut i = 0;
    while i + 16 <= b.len() {
        let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
        let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
        let hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
            ctrl,
        );
        let mask = _mm_movemask_epi8(hit) as u32;
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    find_swar(b, i)
}

/// Eight bytes at a time, from `start`.
fn find_swar(b: &[u8], start: usize) -> usize {
    let table = super::scan::stop_table();
    let mut i = start;
    while i + 8 <= b.len() {
        let w = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let control = w.wrapping_sub(LO * 0x20) & !w & HI;
        let quote = has_zero(w ^ (LO * b'"' as u64));
        let backslash = has_zero(w ^ (LO * b'\\' as u64));
        if control | quote | backslash != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() {
        if table[b[i] as usize] {
            return i;
        }
        i += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_stop_byte_anywhere() {
        for len in (0..40).chain([63, 64, 65, 100, 130]) {
            for pos in 0..=len {
                for stop in [b'"', b'\\', 0u8, 0x1f, b'\n'] {
                    let mut v = vec![b'a'; len];
                    v.extend_from_slice("é中".as_bytes());
                    if pos < len {
                        v[pos] = stop;
                    }
                    let expect = if pos < len { pos } else { v.len() };
                    assert_eq!(
                        find_string_stop(&v),
                        expect,
                        "len {len} pos {pos} stop {stop}"
                    );
                }
            }
        }
        // Bytes at or above 0x80 and just above 0x20 are not stops.
        assert_eq!(find_string_stop(&[0x20, 0x7f, 0x80, 0xff, 0x21, b'!']), 6);
        let long = [0x20u8, 0x7f, 0x80, 0xff, 0x21, b'!', 0xe0, 0x9f].repeat(20);
        assert_eq!(find_string_stop(&long), long.len());
        assert_eq!(find_swar(&long, 0), long.len());
    }
}
