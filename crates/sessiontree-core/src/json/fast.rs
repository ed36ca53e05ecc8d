//! Word-at-a-time search for the bytes that end a run of plain string characters: the
//! bottom of the JSON layer (it imports nothing of it).
//!
//! Session lines are mostly long strings (tool output, file contents), so the scanner
//! spends its time here. Eight bytes are tested at once (16 or 32 with SSE2 or AVX2); the
//! exact position is then found with the lookup table.

/// Bytes that end the fast run inside a string: quote, backslash, control characters.
static STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

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
    simd() >= Simd::Avx2
}

/// The widest vector instructions this processor has that the string skip uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Simd {
    /// Eight bytes at a time in a word, plus the baseline SSE2 search.
    Portable,
    /// 64 bytes at a time in two 32-byte vectors.
    Avx2,
    /// 64 bytes at a time in one vector, compared into mask registers (AVX-512 F and BW).
    Avx512,
}

/// The [`Simd`] level of this processor, found once.
#[inline]
pub(crate) fn simd() -> Simd {
    use std::sync::atomic::{AtomicU8, Ordering};
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        1 => Simd::Portable,
        2 => Simd::Avx2,
        3 => Simd::Avx512,
        _ => {
            let level = detect();
            STATE.store(1 + level as u8, Ordering::Relaxed);
            level
        }
    }
}

fn detect() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") {
            return Simd::Avx512;
        }
        if std::is_x86_feature_detected!("avx2") {
            return Simd::Avx2;
        }
    }
    Simd::Portable
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
    let table = &STRING_STOP;
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
