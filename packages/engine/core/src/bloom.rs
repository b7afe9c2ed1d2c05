//! A Bloom filter per run file, so a point read skips the runs that cannot hold its key.
//!
//! 10 bits per key and 7 probes give about 1% false positives (the usual LevelDB choice).
//! Probes are derived from one 64-bit xxh3 hash by double hashing (Kirsch–Mitzenmacher).
//! xxh3 is fixed by its specification, so a filter written today reads the same tomorrow.

use xxhash_rust::xxh3::xxh3_64;

const BITS_PER_KEY: u64 = 10;
const PROBES: u32 = 7;

pub(crate) struct BloomBuilder {
    hashes: Vec<u64>,
}

impl BloomBuilder {
    pub fn new() -> Self {
        BloomBuilder { hashes: Vec::new() }
    }

    /// For about `keys` keys: the vector is allocated once, not grown by copying (see
    /// `RunWriter::create`).
    pub fn with_capacity(keys: usize) -> Self {
        BloomBuilder { hashes: Vec::with_capacity(keys) }
    }

    /// Adds a key, as its encoded bytes.
    pub fn add(&mut self, key: &[u8]) {
        self.hashes.push(xxh3_64(key));
    }

    /// The filter's bytes: probes u32 LE, then the bit array.
    pub fn finish(self) -> Vec<u8> {
        let bits = (self.hashes.len() as u64 * BITS_PER_KEY).max(64).next_multiple_of(8);
        let mut out = vec![0u8; 4 + (bits / 8) as usize];
        out[..4].copy_from_slice(&PROBES.to_le_bytes());
        let array = &mut out[4..];
        for h in self.hashes {
            for bit in probes(h, bits, PROBES) {
                array[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out
    }
}

fn probes(hash: u64, bits: u64, k: u32) -> impl Iterator<Item = u64> {
    let (mut h, delta) = (hash, hash.rotate_left(21) | 1);
    (0..k).map(move |_| {
        let bit = h % bits;
        h = h.wrapping_add(delta);
        bit
    })
}

/// A filter read back from a run file.
pub(crate) struct Bloom {
    probes: u32,
    array: Box<[u8]>,
}

impl Bloom {
    pub fn decode(bytes: &[u8]) -> Option<Bloom> {
        let probes = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
        let array: Box<[u8]> = bytes[4..].into();
        (probes > 0 && probes < 32 && !array.is_empty()).then_some(Bloom { probes, array })
    }

    /// False means the key is certainly absent.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        let bits = self.array.len() as u64 * 8;
        probes(xxh3_64(key), bits, self.probes).all(|bit| self.array[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
    }

    pub fn memory(&self) -> usize {
        self.array.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let mut b = BloomBuilder::new();
        for i in 0..10_000u32 {
            b.add(&i.to_le_bytes());
        }
        let bloom = Bloom::decode(&b.finish()).unwrap();
        assert!((0..10_000u32).all(|i| bloom.may_contain(&i.to_le_bytes())));
        let false_positives = (10_000..110_000u32).filter(|i| bloom.may_contain(&i.to_le_bytes())).count();
        assert!(false_positives < 2_000, "{false_positives} false positives in 100000");
    }
}
