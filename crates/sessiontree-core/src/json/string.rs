//! A JSON string's inside, validated as `JSON.parse` does: skipped to its closing quote
//! (64 bytes at a time with AVX2, else with [`super::fast`]'s search for stop bytes) and
//! told which escapes it holds. The scanner, the canonicalizer and [`super::Raw`] use it.

use super::error::{err, ScanError};
use super::fast::{self, Simd};

/// Skips the string starting at `b[i] == '"'`; returns the index after its closing quote.
#[inline]
pub(crate) fn skip_string(b: &[u8], i: usize) -> Result<usize, ScanError> {
    skip_string_checking::<false>(b, i)
}

/// [`skip_string`]; with `UTF8`, the string's inside must also be UTF-8 (an error if not):
/// for the line scan, which then needs no separate UTF-8 pass over the line (everything
/// outside a string is ASCII in valid JSON, so a line is UTF-8 when all its strings are).
/// Bytes of 0x80 and up are rare in most strings, so a block of them costs one more test;
/// a block that holds some is checked with the lookup tables of Keiser and Lemire's
/// validator.
#[inline]
pub(crate) fn skip_string_checking<const UTF8: bool>(
    b: &[u8],
    i: usize,
) -> Result<usize, ScanError> {
    skip_string_checking_on::<UTF8>(fast::simd(), b, i)
}

/// [`skip_string_checking`] with the vector instructions of `level` (at most the
/// processor's: the tests run every level this machine has).
#[inline]
fn skip_string_checking_on<const UTF8: bool>(
    level: Simd,
    b: &[u8],
    i: usize,
) -> Result<usize, ScanError> {
    debug_assert_eq!(b[i], b'"');
    // Most strings are short (keys, ids, times): when the first stop byte among the next
    // 16 is the closing quote, the string ends there (SSE2, inlined, no AVX2 call).
    if let Some(window) = b.get(i + 1..i + 17) {
        let stop = fast::find_string_stop(window);
        if stop < 16 && window[stop] == b'"' {
            if UTF8 {
                let w = u128::from_le_bytes(window.try_into().expect("16 bytes"));
                let high =
                    w & 0x8080_8080_8080_8080_8080_8080_8080_8080 & ((1u128 << (8 * stop)) - 1);
                if high != 0 && std::str::from_utf8(&window[..stop]).is_err() {
                    return Err(not_utf8(b, i + 1, i + 1 + stop));
                }
            }
            return Ok(i + 2 + stop);
        }
    }
    skip_inside::<false, UTF8>(level, b, i + 1, &mut Escapes::default())
}

/// The error for a string inside `b[from..to]` that is not UTF-8, at its first bad byte.
#[cold]
fn not_utf8(b: &[u8], from: usize, to: usize) -> ScanError {
    let good = std::str::from_utf8(&b[from..to])
        .err()
        .map_or(0, |e| e.valid_up_to());
    err(from + good, "invalid UTF-8")
}

/// With `UTF8`, the inside must also be UTF-8.
/// `level` is at most the processor's.
#[inline]
fn skip_inside<const NOTE: bool, const UTF8: bool>(
    level: Simd,
    b: &[u8],
    i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    debug_assert!(level <= fast::simd());
    #[cfg(target_arch = "x86_64")]
    match level {
        // SAFETY: AVX-512 F and BW are available (the level is at most the processor's).
        Simd::Avx512 => return unsafe { skip_string_avx512::<NOTE, UTF8>(b, i, esc) },
        // SAFETY: AVX2 is available (likewise).
        Simd::Avx2 => return unsafe { skip_string_avx2::<NOTE, UTF8>(b, i, esc) },
        Simd::Portable => {}
    }
    let end = skip_string_noting::<NOTE>(b, i, esc)?;
    if UTF8 && std::str::from_utf8(&b[i..end - 1]).is_err() {
        return Err(not_utf8(b, i, end - 1));
    }
    Ok(end)
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
    let end = skip_inside::<true, false>(fast::simd(), b, i, &mut esc)?;
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
unsafe fn skip_string_avx2<const NOTE: bool, const UTF8: bool>(
    b: &[u8],
    mut i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    use std::arch::x86_64::*;
    // UTF-8: the previous block's second half (the bytes before the string are a quote:
    // ASCII), and whether its last three bytes may start a sequence this block ends.
    let mut prev = _mm256_setzero_si256();
    let mut prev_open = false;
    let splat = |c: u8| _mm256_set1_epi8(c as i8);
    let (quote, backslash, limit) = (splat(b'"'), splat(b'\\'), splat(0x1f));
    let u = splat(b'u');
    let table =
        |t: [i8; 16]| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
    let (lo_tbl, hi_tbl) = (table(ESCAPE_LOW), table(ESCAPE_HIGH));
    let nibble = splat(0x0f);
    let zero = _mm256_setzero_si256();
    let mask_of = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
    // Whether the first byte of the next block is escaped by a backslash run before it.
    let mut carry: u64 = 0;
    while i + 64 <= b.len() {
        prefetch(b, i);
        let lo = _mm256_loadu_si256(b.as_ptr().add(i) as *const __m256i);
        let hi = _mm256_loadu_si256(b.as_ptr().add(i + 32) as *const __m256i);
        let both = |f: &dyn Fn(__m256i) -> __m256i| mask_of(f(lo)) | (mask_of(f(hi)) << 32);
        let q = both(&|v| _mm256_cmpeq_epi8(v, quote));
        let bs = both(&|v| _mm256_cmpeq_epi8(v, backslash));
        let ctrl = both(&|v| _mm256_cmpeq_epi8(_mm256_max_epu8(v, limit), limit));
        let k = block(q, bs, carry);
        let escaped_here = k.escaped & k.before_end;
        let (bad_escape, u_escapes) = if escaped_here == 0 {
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
        let mut bad_utf8 = 0;
        if UTF8 {
            let high = mask_of(lo) | (mask_of(hi) << 32);
            if high != 0 || prev_open {
                // Through the closing quote: a sequence the quote cuts short is an error there.
                bad_utf8 = (utf8_errors(prev, lo) | (utf8_errors(lo, hi) << 32)) & k.through_end;
            }
            prev = hi;
            prev_open = high >> 61 != 0;
        }
        if let Some(end) = k.judge(b, i, bad_escape, ctrl, u_escapes, bad_utf8)? {
            return Ok(end);
        }
        carry = k.carry as u64;
        i += 64;
    }
    finish::<NOTE, UTF8>(b, i, carry != 0, prev_open, esc, |last| {
        let lo = _mm256_loadu_si256(last.as_ptr() as *const __m256i);
        let hi = _mm256_loadu_si256(last.as_ptr().add(32) as *const __m256i);
        utf8_errors(prev, lo) | (utf8_errors(lo, hi) << 32)
    })
}

/// Asks for the cache line a page ahead of `b[i]`. The processor's own prefetcher stops at
/// page ends, so each new page of a long string (a mapped session's pages are touched for
/// the first time here) would otherwise wait for memory: this cut the scan of a 286 MB
/// session by a tenth. A prefetch never faults, past the buffer's end included.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch(b: &[u8], i: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: a prefetch reads nothing; the address is only a hint (wrapping: never used).
    unsafe { _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_add(i + 4096) as *const i8) };
}

/// The string structure of one 64-byte block, from its quote and backslash masks (bit `k`
/// for byte `k`) and whether its first byte is escaped by a backslash run before it.
struct Block {
    /// Bytes that follow an odd run of backslashes (simdjson's find_escaped_branchless).
    escaped: u64,
    /// Quotes that end the string (not escaped).
    real_quotes: u64,
    /// The bytes before the first real quote (all of the block when it has none).
    before_end: u64,
    /// The same, through that quote.
    through_end: u64,
    /// Whether the next block's first byte is escaped.
    carry: bool,
}

impl Block {
    /// The block's verdict, once its problem masks are known (bit `k` for byte `k` at
    /// `b[i + k]`): the first problem before the closing quote, else the offset just past
    /// that quote, else `None` when the string goes on into the next block. `ctrl` marks
    /// every control byte; only the ones before the end and not escaped are problems.
    #[inline(always)]
    fn judge(
        &self,
        b: &[u8],
        i: usize,
        bad_escape: u64,
        ctrl: u64,
        u_escapes: u64,
        bad_utf8: u64,
    ) -> Result<Option<usize>, ScanError> {
        let bad_ctrl = ctrl & !self.escaped & self.before_end;
        if bad_escape | bad_ctrl | u_escapes | bad_utf8 != 0 {
            if let Some(e) = block_problem(b, i, bad_escape, bad_ctrl, u_escapes, bad_utf8) {
                return Err(e);
            }
        }
        if self.real_quotes != 0 {
            return Ok(Some(i + self.real_quotes.trailing_zeros() as usize + 1));
        }
        Ok(None)
    }
}

#[inline(always)]
fn block(q: u64, bs: u64, carry: u64) -> Block {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let bs = bs & !carry;
    let follows = (bs << 1) | carry;
    let odd_starts = bs & !EVEN & !follows;
    let (even_runs, overflow) = odd_starts.overflowing_add(bs);
    let escaped = (EVEN ^ (even_runs << 1)) & follows;
    let real_quotes = q & !escaped;
    let through_end = real_quotes ^ real_quotes.wrapping_sub(1);
    Block {
        escaped,
        real_quotes,
        before_end: through_end & !real_quotes,
        through_end,
        carry: overflow,
    }
}

/// The nine bytes allowed after a backslash, as a nibble lookup: a byte is allowed when the
/// bits its low and high nibbles have here meet (bit 0: high nibble 2, 1: 5, 2: 6, 3: 7).
#[rustfmt::skip]
const ESCAPE_LOW: [i8; 16] =
    [0, 0, 0b1101, 0, 0b1000, 0b1000, 0b0100, 0, 0, 0, 0, 0, 0b0010, 0, 0b0100, 0b0001];
#[rustfmt::skip]
const ESCAPE_HIGH: [i8; 16] = [0, 0, 0b0001, 0, 0, 0b0010, 0b0100, 0b1000, 0, 0, 0, 0, 0, 0, 0, 0];

/// The first problem in text order among a 64-byte block's flagged bytes, as the portable
/// loop reports it: `i` is the block's start; a bit of `bad_escape` or `u_escapes` marks
/// the byte after a backslash, one of `bad_ctrl` or `bad_utf8` the byte itself. `\u`
/// escapes are problems only when their four hex digits are not.
#[inline(never)]
fn block_problem(
    b: &[u8],
    i: usize,
    bad_escape: u64,
    bad_ctrl: u64,
    mut u_escapes: u64,
    bad_utf8: u64,
) -> Option<ScanError> {
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
    if bad_utf8 != 0 {
        let p = i + bad_utf8.trailing_zeros() as usize;
        note(p, err(p, "invalid UTF-8"));
    }
    first_err.map(|(_, e)| e)
}

/// The end of a 64-byte scan: under 64 bytes are left at `i` (the string ends the buffer's
/// last block). They are skipped with the portable loop (an odd backslash run ending the
/// last block, `escaped_next`, is handed over whole by starting at its last backslash);
/// with `UTF8` they are checked as one block padded with ASCII, after the block before
/// them (`utf8_errors` of the padded block, given that block, in the scan's terms).
#[inline]
fn finish<const NOTE: bool, const UTF8: bool>(
    b: &[u8],
    i: usize,
    escaped_next: bool,
    prev_open: bool,
    esc: &mut Escapes,
    utf8_errors: impl FnOnce(&[u8; 64]) -> u64,
) -> Result<usize, ScanError> {
    let end = skip_string_noting::<NOTE>(b, if escaped_next { i - 1 } else { i }, esc)?;
    if UTF8 && (prev_open || !b[i..end].is_ascii()) {
        let mut last = [0u8; 64];
        last[..end - i].copy_from_slice(&b[i..end]);
        let bad = utf8_errors(&last);
        if bad != 0 {
            let p = i + bad.trailing_zeros() as usize;
            // A sequence the quote cuts short is an error at the quote at the latest.
            debug_assert!(p < end, "the padding is ASCII after a quote");
            return Err(err(p.min(end - 1), "invalid UTF-8"));
        }
    }
    Ok(end)
}

// The tables of Keiser and Lemire's UTF-8 lookup (see [`utf8_errors`]).
const TOO_SHORT: i8 = 1 << 0;
const TOO_LONG: i8 = 1 << 1;
const OVERLONG_3: i8 = 1 << 2;
const TOO_LARGE: i8 = 1 << 3;
const SURROGATE: i8 = 1 << 4;
const OVERLONG_2: i8 = 1 << 5;
const TOO_LARGE_1000: i8 = 1 << 6;
const OVERLONG_4: i8 = 1 << 6;
const TWO_CONTS: i8 = 1 << 7;
const CARRY: i8 = TOO_SHORT | TOO_LONG | TWO_CONTS;
// By the high nibble of the first byte of a pair.
#[rustfmt::skip]
const BYTE_1_HIGH: [i8; 16] = [
    TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
    TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS,
    TOO_SHORT | OVERLONG_2,
    TOO_SHORT,
    TOO_SHORT | OVERLONG_3 | SURROGATE,
    TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
];
// By the low nibble of the first byte.
const LARGE: i8 = CARRY | TOO_LARGE | TOO_LARGE_1000;
#[rustfmt::skip]
const BYTE_1_LOW: [i8; 16] = [
    CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
    CARRY | OVERLONG_2,
    CARRY,
    CARRY,
    CARRY | TOO_LARGE,
    LARGE, LARGE, LARGE, LARGE, LARGE, LARGE, LARGE, LARGE,
    LARGE | SURROGATE,
    LARGE, LARGE,
];
// By the high nibble of the second byte.
const CONT_8: i8 = TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4;
const CONT_9: i8 = TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE;
const CONT_AB: i8 = TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE;
#[rustfmt::skip]
const BYTE_2_HIGH: [i8; 16] = [
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
    CONT_8, CONT_9, CONT_AB, CONT_AB,
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
];

/// Where the 32 bytes of `input` break UTF-8, given the 32 bytes before them (`prev`): bit
/// `k` is set when byte `k` ends a bad sequence (a lead without its continuations, a stray
/// continuation, an overlong form, a surrogate, above U+10FFFF). The lookup algorithm of
/// Keiser and Lemire, "Validating UTF-8 in less than one instruction per byte" (2021):
/// three nibble lookups classify each pair of bytes, and the bytes two and three after a
/// three- and four-byte lead must be continuations.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn utf8_errors(prev: std::arch::x86_64::__m256i, input: std::arch::x86_64::__m256i) -> u64 {
    use std::arch::x86_64::*;
    let table = |t: [i8; 16]| {
        let v = _mm_loadu_si128(t.as_ptr() as *const __m128i);
        _mm256_broadcastsi128_si256(v)
    };
    let nibble = _mm256_set1_epi8(0x0f);
    let high_nibble = |v: __m256i| _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble);
    // The input shifted by N bytes, with the last N bytes of `prev` in front.
    let across = _mm256_permute2x128_si256::<0x21>(prev, input);
    let prev1 = _mm256_alignr_epi8::<15>(input, across);
    let prev2 = _mm256_alignr_epi8::<14>(input, across);
    let prev3 = _mm256_alignr_epi8::<13>(input, across);
    let special = _mm256_and_si256(
        _mm256_and_si256(
            _mm256_shuffle_epi8(table(BYTE_1_HIGH), high_nibble(prev1)),
            _mm256_shuffle_epi8(table(BYTE_1_LOW), _mm256_and_si256(prev1, nibble)),
        ),
        _mm256_shuffle_epi8(table(BYTE_2_HIGH), high_nibble(input)),
    );
    // Two bytes after a lead of 0xe0 and up, three after one of 0xf0 and up: continuations.
    let third = _mm256_subs_epu8(prev2, _mm256_set1_epi8(0xdfu8 as i8));
    let fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8(0xefu8 as i8));
    let must23 = _mm256_cmpgt_epi8(_mm256_or_si256(third, fourth), _mm256_setzero_si256());
    let must23_80 = _mm256_and_si256(must23, _mm256_set1_epi8(0x80u8 as i8));
    let error = _mm256_xor_si256(must23_80, special);
    let ok = _mm256_cmpeq_epi8(error, _mm256_setzero_si256());
    !(_mm256_movemask_epi8(ok) as u32) as u64
}

/// [`skip_string_avx2`] with AVX-512: each 64-byte block is one vector, compared straight
/// into masks, and a block's escapes are judged without a branch. The same results and
/// errors, byte for byte (the tests run both against the portable loop).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn skip_string_avx512<const NOTE: bool, const UTF8: bool>(
    b: &[u8],
    mut i: usize,
    esc: &mut Escapes,
) -> Result<usize, ScanError> {
    use std::arch::x86_64::*;
    let mut prev = _mm512_setzero_si512();
    let mut prev_open = false;
    let splat = |c: u8| _mm512_set1_epi8(c as i8);
    let (quote, backslash, limit, u) = (splat(b'"'), splat(b'\\'), splat(0x1f), splat(b'u'));
    let table = |t: [i8; 16]| _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr() as *const __m128i));
    let (lo_tbl, hi_tbl) = (table(ESCAPE_LOW), table(ESCAPE_HIGH));
    let nibble = splat(0x0f);
    let mut carry: u64 = 0;
    while i + 64 <= b.len() {
        prefetch(b, i);
        let v = _mm512_loadu_si512(b.as_ptr().add(i) as *const _);
        let q = _mm512_cmpeq_epi8_mask(v, quote);
        let bs = _mm512_cmpeq_epi8_mask(v, backslash);
        let ctrl = _mm512_cmple_epu8_mask(v, limit);
        let k = block(q, bs, carry);
        let escaped_here = k.escaped & k.before_end;
        let allowed = _mm512_test_epi8_mask(
            _mm512_shuffle_epi8(lo_tbl, _mm512_and_si512(v, nibble)),
            _mm512_shuffle_epi8(hi_tbl, _mm512_and_si512(_mm512_srli_epi16::<4>(v), nibble)),
        );
        let bad_escape = escaped_here & !allowed;
        let u_escapes = escaped_here & _mm512_cmpeq_epi8_mask(v, u);
        if NOTE && escaped_here != 0 {
            esc.any = true;
            esc.unicode |= u_escapes != 0;
            esc.slash |= escaped_here & _mm512_cmpeq_epi8_mask(v, splat(b'/')) != 0;
        }
        let mut bad_utf8 = 0;
        if UTF8 {
            let high = _mm512_movepi8_mask(v);
            if high != 0 || prev_open {
                bad_utf8 = utf8_errors_512(prev, v) & k.through_end;
            }
            prev = v;
            prev_open = high >> 61 != 0;
        }
        if let Some(end) = k.judge(b, i, bad_escape, ctrl, u_escapes, bad_utf8)? {
            return Ok(end);
        }
        carry = k.carry as u64;
        i += 64;
    }
    finish::<NOTE, UTF8>(b, i, carry != 0, prev_open, esc, |last| {
        utf8_errors_512(prev, _mm512_loadu_si512(last.as_ptr() as *const _))
    })
}

/// [`utf8_errors`] for 64 bytes at once: bit `k` is set when byte `k` of `input` ends a bad
/// sequence, given the 64 bytes before them (`prev`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn utf8_errors_512(
    prev: std::arch::x86_64::__m512i,
    input: std::arch::x86_64::__m512i,
) -> u64 {
    use std::arch::x86_64::*;
    let table = |t: [i8; 16]| _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr() as *const __m128i));
    let nibble = _mm512_set1_epi8(0x0f);
    let high_nibble = |v: __m512i| _mm512_and_si512(_mm512_srli_epi16::<4>(v), nibble);
    // The input 16 bytes later: the last 16 bytes of `prev`, then the input's first 48;
    // each 16-byte lane of it then holds the lane before the input's same lane.
    let across = _mm512_alignr_epi64::<6>(input, prev);
    let prev1 = _mm512_alignr_epi8::<15>(input, across);
    let prev2 = _mm512_alignr_epi8::<14>(input, across);
    let prev3 = _mm512_alignr_epi8::<13>(input, across);
    let special = _mm512_and_si512(
        _mm512_and_si512(
            _mm512_shuffle_epi8(table(BYTE_1_HIGH), high_nibble(prev1)),
            _mm512_shuffle_epi8(table(BYTE_1_LOW), _mm512_and_si512(prev1, nibble)),
        ),
        _mm512_shuffle_epi8(table(BYTE_2_HIGH), high_nibble(input)),
    );
    // Two bytes after a lead of 0xe0 and up, three after one of 0xf0 and up: continuations.
    let third = _mm512_subs_epu8(prev2, _mm512_set1_epi8(0xdfu8 as i8));
    let fourth = _mm512_subs_epu8(prev3, _mm512_set1_epi8(0xefu8 as i8));
    let later = _mm512_or_si512(third, fourth);
    let must23 = _mm512_test_epi8_mask(later, later);
    let must23_80 = _mm512_maskz_mov_epi8(must23, _mm512_set1_epi8(0x80u8 as i8));
    let error = _mm512_xor_si512(must23_80, special);
    _mm512_test_epi8_mask(error, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every level of vector instructions this machine has, the portable loop first.
    fn levels() -> Vec<Simd> {
        [Simd::Portable, Simd::Avx2, Simd::Avx512]
            .into_iter()
            .filter(|&l| l <= fast::simd())
            .collect()
    }

    /// The skip of the string at `s[0]` at every level: the vector levels give the same
    /// result and error as each other, and (without `UTF8`) as the portable loop; with
    /// `UTF8` the same success, or an error, as the portable loop (which finds the bad
    /// byte another way). Also the escapes each notes. Returns the widest level's answer.
    fn at_every_level<const UTF8: bool>(s: &[u8]) -> Result<usize, ScanError> {
        let portable = skip_string_checking_on::<UTF8>(Simd::Portable, s, 0);
        let mut portable_esc = Escapes::default();
        let portable_noted = skip_string_noting::<true>(s, 1, &mut portable_esc);
        let mut answer = portable.clone();
        for level in levels().into_iter().skip(1) {
            let got = skip_string_checking_on::<UTF8>(level, s, 0);
            let shown = String::from_utf8_lossy(s);
            if UTF8 {
                assert_eq!(
                    got.as_ref().ok(),
                    portable.as_ref().ok(),
                    "{level:?}: {shown:?}"
                );
            } else {
                assert_eq!(got, portable, "{level:?}: {shown:?}");
            }
            if level > Simd::Avx2 {
                assert_eq!(got, answer, "{level:?} and the level below: {shown:?}");
            }
            let mut esc = Escapes::default();
            let noted = skip_inside::<true, false>(level, s, 1, &mut esc);
            assert_eq!(noted, portable_noted, "{level:?} noting: {shown:?}");
            if noted.is_ok() {
                assert_eq!(esc, portable_esc, "{level:?} escapes: {shown:?}");
            }
            answer = got;
        }
        answer
    }

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
        let mut rng = sessiontree_testkit::Rng(7);
        for _ in 0..60_000 {
            let mut s = vec![b'"'];
            for _ in 0..rng.pick(90) {
                let p = pieces[rng.pick(9)];
                if (p == b"\\" || p == b"\x01" || p == b"\\x" || p == b"\\u12") && rng.pick(8) != 0
                {
                    continue;
                }
                s.extend_from_slice(p);
            }
            if rng.pick(5) != 0 {
                s.push(b'"');
            }
            s.extend_from_slice(b"                                  tail");
            assert_eq!(
                at_every_level::<false>(&s),
                skip_string_from(&s, 1),
                "{:?}",
                String::from_utf8_lossy(&s)
            );
        }
    }

    /// The UTF-8 checking skip is the plain skip followed by a UTF-8 check of the inside:
    /// for valid and broken sequences of every length, at every offset in and across the
    /// 64-byte blocks, ending in a block or in the buffer's short last part.
    #[test]
    fn utf8_skipping_is_skipping_then_checking() {
        // What the plain skip and a UTF-8 check of the inside give.
        let plain = |s: &[u8]| {
            skip_string(s, 0)
                .ok()
                .filter(|&e| std::str::from_utf8(&s[1..e - 1]).is_ok())
        };
        let pieces: [&[u8]; 22] = [
            b"a",
            b"abcdefghijklmnopqrstuvwxyz",
            "é".as_bytes(),
            "日".as_bytes(),
            "😀".as_bytes(),
            "\u{10ffff}".as_bytes(),
            b"\\n",
            b"\\u00e9",
            b"\\\"",
            b"\x80",
            b"\xc3",
            b"\xe6\x97",
            b"\xf0\x9f\x98",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xe0\x80\x80",
            b"\xed\xa0\x80",
            b"\xf0\x80\x80\x80",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xff",
            b"\xef\xbf\xbf",
        ];
        let mut rng = sessiontree_testkit::Rng(11);
        for round in 0..80_000 {
            let mut s = vec![b'"'];
            // Mostly valid pieces, so that long valid runs cross blocks too.
            let broken = round % 3 == 0;
            for _ in 0..rng.pick(60) {
                let k = rng.pick(pieces.len());
                if !broken && k >= 9 && k != 21 {
                    continue;
                }
                s.extend_from_slice(pieces[k]);
            }
            s.push(b'"');
            // From nothing after the quote (the string ends the buffer) to over a block.
            let pad = rng.pick(80);
            s.extend(std::iter::repeat_n(b' ', pad));
            assert_eq!(
                at_every_level::<true>(&s).ok(),
                plain(&s),
                "{:?}",
                String::from_utf8_lossy(&s)
            );
        }
        // Every two-byte and three-byte sequence (plus a few around it), in a long string.
        for a in 0x80..=0xffu8 {
            for b2 in 0..=0xffu8 {
                for c in [0x41u8, 0x80, 0xbf, 0xa0, 0x90] {
                    for at in [3usize, 30, 31, 62, 63, 64] {
                        let mut s = vec![b'"'];
                        s.extend(std::iter::repeat_n(b'x', at));
                        s.extend_from_slice(&[a, b2, c]);
                        s.extend_from_slice(b"yyyyyy\"");
                        s.extend(std::iter::repeat_n(b' ', 70));
                        if b2 == b'"' || b2 == b'\\' || b2 < 0x20 || c == b'"' {
                            continue;
                        }
                        assert_eq!(
                            at_every_level::<true>(&s).ok(),
                            plain(&s),
                            "{a:#x} {b2:#x} {c:#x} at {at}"
                        );
                    }
                }
            }
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
                        at_every_level::<false>(&s),
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
                    at_every_level::<false>(&s),
                    skip_string_from(&s, 1),
                    "escape byte {esc:#x} at {k}"
                );
            }
        }
    }

    #[test]
    fn every_byte_inside_a_string_is_judged_as_the_portable_loop_does() {
        for byte in 0..=255u8 {
            for k in [0usize, 5, 31, 32, 62, 63, 64, 100] {
                let mut s = vec![b'"'];
                s.extend(std::iter::repeat_n(b'a', k));
                s.push(byte);
                s.extend_from_slice(b" tail text\" after");
                s.extend(std::iter::repeat_n(b' ', 80));
                let plain = at_every_level::<false>(&s);
                let expected = match byte {
                    b'"' => Some(k + 2),
                    0..0x20 | b'\\' => None,
                    _ => Some(k + 13),
                };
                assert_eq!(plain.ok(), expected, "byte {byte:#x} at {k}");
                let checked = at_every_level::<true>(&s);
                // Alone, a byte of 0x80 and up is never UTF-8.
                assert_eq!(checked.ok(), expected.filter(|_| byte < 0x80), "{byte:#x}");
            }
        }
    }
}
