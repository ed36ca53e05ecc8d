//! Times as JavaScript's `Date` reads and writes them: `toISOString()` and
//! `new Date(x).getTime()` for the ISO forms session files hold.
//!
//! Date-times without an offset are read as UTC (JavaScript reads them as local time; the
//! reference writes only `Z` times, and this keeps results independent of `TZ`).

use crate::json::{Kind, Raw};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `new Date().toISOString()`.
pub fn now_iso() -> String {
    iso_from_ms(now_ms())
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `new Date(ms).toISOString()` (years 0..=9999 as four digits, others expanded).
pub fn iso_from_ms(ms: i64) -> String {
    let mut out = String::with_capacity(27);
    write_iso_from_ms(ms, &mut out);
    out
}

/// [`iso_from_ms`], appended to `out` (a timestamp is made for every written entry).
pub fn write_iso_from_ms(ms: i64, out: &mut String) {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    // Into a buffer: a sign, at most 6 year digits and 20 more bytes.
    let mut buf = [0u8; 28];
    let mut n = 0;
    fn push(buf: &mut [u8; 28], n: &mut usize, mut v: i64, width: usize) {
        for k in (0..width).rev() {
            buf[*n + k] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        *n += width;
    }
    if (0..=9999).contains(&y) {
        push(&mut buf, &mut n, y, 4);
    } else {
        buf[0] = if y < 0 { b'-' } else { b'+' };
        n = 1;
        push(&mut buf, &mut n, y.abs(), 6);
    }
    for (c, v, w) in [
        (b'-', m, 2),
        (b'-', d, 2),
        (b'T', rem / 3_600_000, 2),
        (b':', rem / 60_000 % 60, 2),
        (b':', rem / 1000 % 60, 2),
        (b'.', rem % 1000, 3),
    ] {
        buf[n] = c;
        n += 1;
        push(&mut buf, &mut n, v, w);
    }
    buf[n] = b'Z';
    n += 1;
    // ASCII digits and separators only.
    out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
}

fn digits(s: &[u8], i: &mut usize, n: usize) -> Option<i64> {
    let part = s.get(*i..*i + n)?;
    // At most 6 digits: no overflow.
    let mut v = 0i64;
    for &c in part {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as i64;
    }
    *i += n;
    Some(v)
}

const MAX_MS: f64 = 8.64e15;

/// `Date.parse(s)` for the ECMAScript date-time string format; `None` is NaN.
pub fn parse_iso(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    // The form `toISOString` writes (nearly every timestamp of a transcript): each field
    // at its place.
    if b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
    {
        let field = |at: usize, n: usize| digits(b, &mut { at }, n);
        return iso_ms(
            field(0, 4)?,
            field(5, 2)?,
            field(8, 2)?,
            (field(11, 2)?, field(14, 2)?, field(17, 2)?, field(20, 3)?),
            0,
        );
    }
    parse_iso_any(s)
}

/// [`parse_iso`] for every form of the format.
fn parse_iso_any(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let year = match b.first()? {
        b'+' | b'-' => {
            let neg = b[0] == b'-';
            i = 1;
            let y = digits(b, &mut i, 6)?;
            if neg && y == 0 {
                return None;
            }
            if neg {
                -y
            } else {
                y
            }
        }
        _ => digits(b, &mut i, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    if b.get(i) == Some(&b'-') {
        i += 1;
        month = digits(b, &mut i, 2)?;
        if b.get(i) == Some(&b'-') {
            i += 1;
            day = digits(b, &mut i, 2)?;
        }
    }
    let (mut h, mut min, mut sec, mut ms) = (0, 0, 0, 0);
    let mut offset_min = 0;
    if matches!(b.get(i), Some(b'T' | b't')) {
        i += 1;
        h = digits(b, &mut i, 2)?;
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        min = digits(b, &mut i, 2)?;
        if b.get(i) == Some(&b':') {
            i += 1;
            sec = digits(b, &mut i, 2)?;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while matches!(b.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                // Milliseconds: the first three digits, the others ignored.
                let mut at = start;
                ms = digits(b, &mut at, (i - start).min(3))?
                    * 10_i64.pow(3 - (i - start).min(3) as u32);
            }
        }
        match b.get(i) {
            Some(b'Z' | b'z') => i += 1,
            Some(b'+' | b'-') => {
                let sign = if b[i] == b'-' { -1 } else { 1 };
                i += 1;
                let oh = digits(b, &mut i, 2)?;
                if b.get(i) != Some(&b':') {
                    return None;
                }
                i += 1;
                let om = digits(b, &mut i, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = sign * (oh * 60 + om);
            }
            _ => {}
        }
    }
    if i != b.len() {
        return None;
    }
    iso_ms(year, month, day, (h, min, sec, ms), offset_min)
}

/// The time a date-time's fields stand for, `None` when a field is out of its range.
fn iso_ms(
    year: i64,
    month: i64,
    day: i64,
    (h, min, sec, ms): (i64, i64, i64, i64),
    offset_min: i64,
) -> Option<f64> {
    let dim = [
        31,
        if is_leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month) || day < 1 || day > dim[(month - 1) as usize] {
        return None;
    }
    if h > 24 || min > 59 || sec > 59 || (h == 24 && (min, sec, ms) != (0, 0, 0)) {
        return None;
    }
    let t = days_from_civil(year, month, day) * 86_400_000
        + h * 3_600_000
        + min * 60_000
        + sec * 1000
        + ms
        - offset_min * 60_000;
    let t = t as f64;
    (t.abs() <= MAX_MS).then_some(t)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// `new Date(x).getTime()` for a JSON value; `None` is NaN (JSON prints it as `null`).
pub fn js_date_ms(x: Option<Raw<'_>>) -> Option<f64> {
    let x = x?;
    match x.kind() {
        Kind::String => parse_iso(&x.as_str()?),
        Kind::Number => {
            let n = x.as_f64()?;
            (n.is_finite() && n.abs() <= MAX_MS).then(|| n.trunc() + 0.0)
        }
        Kind::Null | Kind::False => Some(0.0),
        Kind::True => Some(1.0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trips() {
        for ms in [
            0,
            1_733_234_400_000,
            1_763_681_581_544,
            -1,
            253_402_300_799_999,
            253_402_300_800_000,
        ] {
            let s = iso_from_ms(ms);
            assert_eq!(parse_iso(&s), Some(ms as f64), "{s}");
        }
        assert_eq!(iso_from_ms(1_733_234_400_000), "2024-12-03T14:00:00.000Z");
        assert_eq!(
            iso_from_ms(253_402_300_800_000),
            "+010000-01-01T00:00:00.000Z"
        );
        // As `new Date(ms).toISOString()` prints years before 0 and year 0.
        assert_eq!(
            iso_from_ms(-62_198_755_200_000),
            "-000001-01-01T00:00:00.000Z"
        );
        assert_eq!(
            iso_from_ms(-62_167_219_200_001),
            "-000001-12-31T23:59:59.999Z"
        );
        assert_eq!(iso_from_ms(-62_167_219_200_000), "0000-01-01T00:00:00.000Z");
    }

    #[test]
    fn the_iso_string_form_reads_as_every_form_does() {
        let mut ms = -62_198_755_200_000i64;
        while ms < 253_402_300_800_000 {
            let s = iso_from_ms(ms);
            assert_eq!(parse_iso(&s), parse_iso_any(&s), "{s}");
            assert_eq!(parse_iso(&s), Some(ms as f64), "{s}");
            ms += 7_777_777_777;
        }
        for bad in [
            "2023-02-29T00:00:00.000Z",
            "2024-13-01T00:00:00.000Z",
            "2024-12-03T25:00:00.000Z",
            "2024-12-03T24:00:00.001Z",
            "2024-12-03T24:00:00.000Z",
            "2024-12-03T12:60:00.000Z",
            "2024-12-03T12:00:60.000Z",
            "2024-12-00T12:00:00.000Z",
            "2024-1a-03T12:00:00.000Z",
            "+02024-12-03T12:00:00.00",
        ] {
            assert_eq!(parse_iso(bad), parse_iso_any(bad), "{bad}");
        }
    }

    #[test]
    fn parses_the_ecmascript_forms() {
        assert_eq!(parse_iso("2024"), Some(1_704_067_200_000.0));
        assert_eq!(parse_iso("2024-02-29"), Some(1_709_164_800_000.0));
        assert_eq!(parse_iso("2024-12-03T14:00Z"), Some(1_733_234_400_000.0));
        assert_eq!(
            parse_iso("2024-12-03T15:00:00.5+01:00"),
            Some(1_733_234_400_500.0)
        );
        assert_eq!(
            parse_iso("2024-12-03T14:00:00.123456Z"),
            Some(1_733_234_400_123.0)
        );
        for bad in [
            "",
            "2023-02-29",
            "2024-13-01",
            "2024-12-03T25:00Z",
            "x",
            "2024-12-03 14:00Z",
            "-000000",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }
}
