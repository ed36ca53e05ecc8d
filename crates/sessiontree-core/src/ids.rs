//! Random entry ids without a system call each: a per-thread generator seeded once from
//! the operating system's randomness.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    // One random UUID from the OS gives the seed; mix in the thread so threads differ.
    let u = uuid::Uuid::new_v4().as_u128();
    let t = std::thread::current().id();
    let h = format!("{t:?}")
        .bytes()
        .fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
    ((u >> 64) as u64 ^ u as u64 ^ h) | 1
}

/// The next 64 random bits (wyrand).
pub(crate) fn random_u64() -> u64 {
    STATE.with(|s| {
        let x = s.get().wrapping_add(0xa076_1d64_78bd_642f);
        s.set(x);
        let t = (x as u128).wrapping_mul((x ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// Eight lowercase hex characters, as the reference's `randomUUID().slice(0, 8)` gives.
pub(crate) fn random_hex8() -> String {
    format!("{:08x}", random_u64() as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_eight_hex_and_vary() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| super::random_hex8()).collect();
        assert!(ids.len() > 9_980);
        assert!(ids.iter().all(|i| i.len() == 8
            && i.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())));
    }
}
