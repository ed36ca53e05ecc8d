//! Arbitrary bytes through the JSON layer: whatever `scan` accepts, `canonicalize` must
//! accept, and canonical text must be a fixed point; `Raw::parse` must agree with `scan`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiontree::json::{self, scan, Raw};

fuzz_target!(|data: &[u8]| {
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
