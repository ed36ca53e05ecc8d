//! The testkit depends on no workspace crate, so its generator writes JSON strings and
//! timestamps itself: they must be the library's bytes, or the benchmark corpora and the
//! sessions tests write would drift from what sessiontree (and Pi) writes.

use sessiontree_testkit::{agent, gen, Rng};

#[test]
fn the_testkits_json_strings_are_the_librarys() {
    let mut rng = Rng(0x5eed);
    let alphabet: Vec<char> = "ab \"\\/\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}é中😀\u{2028}"
        .chars()
        .collect();
    for _ in 0..5000 {
        let n = rng.pick(12);
        let s: String = (0..n).map(|_| alphabet[rng.pick(alphabet.len())]).collect();
        let mut lib = String::new();
        sessiontree::json::write_js_string(&mut lib, &s);
        assert_eq!(agent::json_string(&s), lib, "{s:?}");
    }
}

#[test]
fn the_testkits_timestamps_are_the_librarys() {
    let mut rng = Rng(0x7157);
    // Every day of years 0 to 9999 would be slow: the ends, the leap days and random times.
    let mut times = vec![
        0,
        -1,
        1,
        951_782_400_000,
        253_402_300_799_999,
        -62_167_219_200_000,
    ];
    for _ in 0..20_000 {
        times.push(rng.below(253_402_300_799_999 + 62_167_219_200_000) as i64 - 62_167_219_200_000);
    }
    for ms in times {
        assert_eq!(gen::iso(ms), sessiontree::date::iso_from_ms(ms), "{ms}");
    }
}
