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
    let table = super::scan::stop_table();
    let mut i = 0;
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
        for len in 0..40 {
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
    }
}
