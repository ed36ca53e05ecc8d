//! The small xorshift generator that deterministic tests and generators share (the same
//! seed gives the same sequence everywhere, so a failing seed can be replayed).

#[derive(Clone, Debug)]
pub struct Rng(pub u64);

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

    /// `n` characters drawn from `alphabet` (ASCII bytes).
    pub fn text(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[self.pick(alphabet.len())] as char)
            .collect()
    }

    /// Eight hex digits (the low 32 bits of the next number), as an entry id.
    pub fn hex8(&mut self) -> String {
        format!("{:08x}", self.next() as u32)
    }

    /// Damages `buf` `times` times at random places: a random byte, a cut, an inserted
    /// newline, a removed byte or a flipped bit (the fuzz tests' mutations).
    pub fn damage(&mut self, buf: &mut Vec<u8>, times: usize) {
        for _ in 0..times {
            if buf.is_empty() {
                break;
            }
            let i = self.pick(buf.len());
            match self.pick(5) {
                0 => buf[i] = self.next() as u8,
                1 => buf.truncate(i),
                2 => buf.insert(i, b'\n'),
                3 => {
                    buf.remove(i);
                }
                _ => buf[i] ^= 1 << self.pick(8),
            }
        }
    }
}
