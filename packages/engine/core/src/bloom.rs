//! A Bloom filter per run file, so a point read skips the runs that cannot hold its key.
//!
//! 10 bits per key and 7 probes give about 1% false positives (the usual LevelDB choice).
//! Probes are derived from one 64-bit xxh3 hash by double hashing (Kirsch–Mitzenmacher).
//! xxh3 is fixed by its specification, so a filter written today reads the same tomorrow.

use xxhash_rust::xxh3::xxh3_64;

const BITS_PER_KEY: u64 = 10;
const PROBES: u32 = 7;

/// Builds a filter sized up front for the keys a run will hold (at most: a merge may drop some),
/// setting bits as keys come, so its memory is the filter's alone (keeping every key's hash to
/// size it exactly would cost 8 bytes a key: gigabytes for a large merge).
pub(crate) struct BloomBuilder {
    bits: u64,
    /// The filter's bytes: probes u32 LE, then the bit array.
    out: Vec<u8>,
}

impl BloomBuilder {
    /// For at most about `keys` keys: more make false positives more frequent, never negatives.
    pub fn with_capacity(keys: usize) -> Self {
        let bits = (keys as u64 * BITS_PER_KEY).max(64).next_multiple_of(8);
        let mut out = vec![0u8; 4 + (bits / 8) as usize];
        out[..4].copy_from_slice(&PROBES.to_le_bytes());
        BloomBuilder { bits, out }
    }

    /// Adds a key, as its encoded bytes.
    pub fn add(&mut self, key: &[u8]) {
        for bit in probes(xxh3_64(key), self.bits, PROBES) {
            self.out[4 + (bit / 8) as usize] |= 1 << (bit % 8);
        }
    }

    /// The filter's bytes, taken out of the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    #[cfg(test)]
    pub fn memory(&self) -> usize {
        self.out.capacity()
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
        let mut b = BloomBuilder::with_capacity(10_000);
        for i in 0..10_000u32 {
            b.add(&i.to_le_bytes());
        }
        assert!(b.memory() <= 4 + 10_000 * 10 / 8, "a builder holds the filter, not the keys: {} bytes", b.memory());
        let bloom = Bloom::decode(&b.finish()).unwrap();
        assert!((0..10_000u32).all(|i| bloom.may_contain(&i.to_le_bytes())));
        let false_positives = (10_000..110_000u32).filter(|i| bloom.may_contain(&i.to_le_bytes())).count();
        assert!(false_positives < 2_000, "{false_positives} false positives in 100000");
    }
}
