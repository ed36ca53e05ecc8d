//! Arbitrary bytes through the JSON layer: whatever `scan` accepts, `canonicalize` must
//! accept, and canonical text must be a fixed point; `Raw::parse` must agree with `scan`;
//! the loader's one-pass line scan must agree with split-then-scan.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiontree::json::{self, scan, Raw};

fuzz_target!(|data: &[u8]| {
    // The loader's one-pass line scan agrees with splitting at the newline, checking UTF-8
    // and scanning the line.
    let end = data.iter().position(|&c| c == b'\n').unwrap_or(data.len());
    let line = &data[..end];
    let careful = std::str::from_utf8(line)
        .ok()
        .and_then(|_| scan::scan(line).ok());
    match (careful, scan::scan_line_for_fuzzing(data)) {
        (None, None) => {}
        (Some(c), Some((f, fend))) => {
            assert_eq!(fend, end, "one-pass scan ends elsewhere");
            assert_eq!(
                (c.top, c.members, c.inner),
                (f.top, f.members, f.inner),
                "one-pass scan found other members"
            );
        }
        (c, f) => panic!(
            "one-pass scan disagrees: careful {}, one pass {}",
            c.is_some(),
            f.is_some()
        ),
    }
    let scanned = scan::scan(data);
    let utf8 = std::str::from_utf8(data).is_ok();
    match Raw::parse(data) {
        Ok(raw) => {
            let s = scanned
                .as_ref()
                .expect("Raw::parse accepted what scan rejects");
            assert_eq!(
                raw.bytes(),
                &data[s.top.clone()],
                "Raw::parse top differs from scan"
            );
        }
        Err(_) => assert!(
            scanned.is_err() || !utf8,
            "Raw::parse rejected valid UTF-8 that scan accepts"
        ),
    }
    if scanned.is_ok() {
        let once = json::canonicalize(data).expect("scan accepts, canonicalize must too");
        let twice = json::canonicalize(once.as_bytes()).expect("canonical text must scan");
        assert_eq!(once, twice, "canonicalize is not idempotent");
        if utf8 {
            let raw = Raw::parse(data).expect("checked above");
            let _ = raw.js_string();
            let _ = raw.truthy();
            let _ = raw.members();
            let _ = raw.elements();
        }
    }
});
