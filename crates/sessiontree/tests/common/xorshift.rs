//! The small xorshift generator that deterministic tests and generators share (the same
//! seed gives the same sequence everywhere, so a failing seed can be replayed).

#[derive(Clone, Debug)]
pub struct Rng(pub u64);

#[allow(dead_code)] // not every user draws every way
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (as `u64`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index below `n`.
    pub fn pick(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
